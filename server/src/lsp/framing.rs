//! Re-framing of the LSP input stream (internal; public only for the fuzz target).
//!
//! tower-lsp-server stops reading after a body it cannot decode, and a Content-Length that is off
//! by a few bytes shifts every later message, so one client bug would leave the server deaf for
//! the rest of the session. [`Framer`] sits in front of it: it takes stdin bytes as they come and
//! returns only well-formed frames, each a `Content-Length` header and a JSON-RPC 2.0 body.
//!
//! - A body that is not JSON-RPC becomes a `raggrep/malformedMessage` request, which the server
//!   answers with a parse error.
//! - Declared length too short: the truncated body is malformed; the bytes left over are skipped
//!   up to the next `Content-Length:` header.
//! - Declared length too long: the body swallows the start of the next message. A complete JSON
//!   value followed by (the start of) a `Content-Length:` header inside the declared body gives it
//!   away; the value is forwarded and reading resumes at that header. Until the next message
//!   arrives nothing can tell a too-long body from a slow one, so the damaged message is handled
//!   when its successor comes.
//! - A declared length above [`MAX_BODY`] is answered as malformed and its bytes are skipped like
//!   any garbage, so a corrupt header cannot make the server wait for 64 MiB that never come.
//!
//! Pure and synchronous (apart from warnings logged through `tracing`), so it can be unit-tested
//! and fuzzed without a runtime.

use serde_json::Value;

/// Largest body accepted.
pub const MAX_BODY: usize = 64 << 20;
/// A header block longer than this without its blank line is not a header.
const MAX_HEADER: usize = 8 << 10;
/// What every frame starts with (matched without regard to case).
const NEEDLE: &[u8] = b"content-length:";
/// Stands in for a body that is not JSON-RPC.
pub const MALFORMED: &[u8] = br#"{"jsonrpc":"2.0","id":null,"method":"raggrep/malformedMessage"}"#;

/// Turns a byte stream into well-formed frames; see the module documentation.
#[derive(Debug, Default)]
pub struct Framer {
    /// Bytes received and not yet consumed.
    buf: Vec<u8>,
    state: State,
    /// Bytes skipped since the last header, reported once when the next header is found (an
    /// oversized body is skipped over many reads).
    skipped: usize,
}

#[derive(Debug, Default)]
enum State {
    /// Looking for the next `Content-Length:` header.
    #[default]
    Seek,
    /// Headers read; waiting for `length` bytes of body. `scanned` bytes of it have already
    /// been searched for a swallowed header.
    Body { length: usize, scanned: usize },
}

/// Outcome of reading a header block that starts at a `Content-Length:` header.
enum Header {
    /// The blank line has not arrived yet.
    Incomplete,
    /// Not a usable header block (no blank line within [`MAX_HEADER`], or no valid length).
    Bad,
    /// A valid block of `consumed` bytes declaring `length`.
    Done { length: usize, consumed: usize },
}

impl Framer {
    /// Feeds the next bytes of input and returns the frames completed by them, in order, each
    /// ready to forward (header and body).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(bytes);
        let mut frames = Vec::new();
        let mut pos = 0;
        loop {
            let rest = &self.buf[pos..];
            match self.state {
                State::Seek => {
                    let Some(at) = find_ignore_case(rest, NEEDLE) else {
                        // Keep a tail that may be the start of a header cut by the read.
                        let keep = rest.len().min(NEEDLE.len() - 1);
                        self.skipped += skipped(&rest[..rest.len() - keep]);
                        pos = self.buf.len() - keep;
                        break;
                    };
                    self.skipped += skipped(&rest[..at]);
                    if self.skipped > 0 {
                        tracing::warn!("{} bytes of input outside any message skipped", self.skipped);
                        self.skipped = 0;
                    }
                    pos += at;
                    match read_header(&self.buf[pos..]) {
                        Header::Incomplete => break,
                        Header::Bad => {
                            tracing::warn!("unusable Content-Length header skipped");
                            pos += NEEDLE.len();
                        }
                        Header::Done { length, consumed } if length > MAX_BODY => {
                            tracing::warn!("message of {length} bytes (limit {MAX_BODY}) answered with a parse error");
                            frames.push(frame(MALFORMED));
                            pos += consumed;
                        }
                        Header::Done { length, consumed } => {
                            pos += consumed;
                            self.state = State::Body { length, scanned: 0 };
                        }
                    }
                }
                State::Body { length, scanned } => {
                    let available = rest.len().min(length);
                    if let Some(end) = swallowed_header(&rest[..available], scanned) {
                        tracing::warn!(
                            "Content-Length {length} overruns the next message; the first {end} bytes are taken as the body"
                        );
                        frames.push(checked_frame(&rest[..end]));
                        pos += end;
                        self.state = State::Seek;
                        continue;
                    }
                    if rest.len() < length {
                        self.state = State::Body { length, scanned: available };
                        break;
                    }
                    let body = &rest[..length];
                    if is_json_rpc(body) {
                        frames.push(frame(body));
                        pos += length;
                    } else if let Some(end) = value_before_header_start(body) {
                        tracing::warn!(
                            "Content-Length {length} overruns the next message's header; the first {end} bytes are taken as the body"
                        );
                        frames.push(checked_frame(&body[..end]));
                        pos += end;
                    } else {
                        tracing::warn!("malformed JSON-RPC message ({length} bytes) answered with a parse error");
                        frames.push(frame(MALFORMED));
                        pos += length;
                    }
                    self.state = State::Seek;
                }
            }
        }
        self.buf.drain(..pos);
        frames
    }
}

/// A JSON object shaped like a JSON-RPC 2.0 request, notification or response.
pub fn is_json_rpc(body: &[u8]) -> bool {
    let Ok(Value::Object(message)) = serde_json::from_slice::<Value>(body) else { return false };
    let is_request = message.get("method").is_some_and(Value::is_string);
    let is_response = message.contains_key("id") && (message.contains_key("result") || message.contains_key("error"));
    message.get("jsonrpc").and_then(Value::as_str) == Some("2.0") && (is_request || is_response)
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The body itself if it is JSON-RPC, else the stand-in answered with a parse error.
fn checked_frame(body: &[u8]) -> Vec<u8> {
    if is_json_rpc(body) {
        frame(body)
    } else {
        tracing::warn!("malformed JSON-RPC message ({} bytes) answered with a parse error", body.len());
        frame(MALFORMED)
    }
}

/// Reads the header block at the start of `block` (which starts with `Content-Length:`), up to
/// and including its blank line. Other headers (Content-Type) are ignored.
fn read_header(block: &[u8]) -> Header {
    let mut at = 0;
    let mut length = None;
    loop {
        let Some(newline) = block[at..].iter().position(|&b| b == b'\n') else {
            return if block.len() > MAX_HEADER { Header::Bad } else { Header::Incomplete };
        };
        let line = block[at..at + newline].trim_ascii();
        at += newline + 1;
        if at > MAX_HEADER {
            return Header::Bad;
        }
        if line.is_empty() {
            return match length {
                Some(length) => Header::Done { length, consumed: at },
                None => Header::Bad,
            };
        }
        if let Some(colon) = line.iter().position(|&b| b == b':')
            && line[..colon].trim_ascii().eq_ignore_ascii_case(b"content-length")
        {
            length = std::str::from_utf8(line[colon + 1..].trim_ascii()).ok().and_then(|v| v.parse().ok());
        }
    }
}

/// Where a body that overruns into the next message really ends: the first `Content-Length:`
/// inside `body` (searching from about `scanned`, what was searched before) that follows one
/// complete JSON value and whitespace. A header inside a JSON string does not count, since the
/// bytes before it are not a complete value.
fn swallowed_header(body: &[u8], scanned: usize) -> Option<usize> {
    let mut from = scanned.saturating_sub(NEEDLE.len() - 1);
    while let Some(found) = find_ignore_case(&body[from..], NEEDLE) {
        let at = from + found;
        // JSON-RPC bodies are objects: a cheap test before parsing.
        let ends_object = body[..at].trim_ascii_end().last() == Some(&b'}');
        if ends_object && serde_json::from_slice::<serde::de::IgnoredAny>(&body[..at]).is_ok() {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// For a complete body that is not JSON on its own: the end of a leading JSON value followed
/// only by the beginning of a `Content-Length:` header, i.e. a length too long by fewer bytes
/// than the header name (longer overruns are caught by [`swallowed_header`]).
fn value_before_header_start(body: &[u8]) -> Option<usize> {
    let mut values = serde_json::Deserializer::from_slice(body).into_iter::<serde::de::IgnoredAny>();
    values.next()?.ok()?;
    let end = values.byte_offset();
    let tail = body[end..].trim_ascii_start();
    let starts_header =
        !tail.is_empty() && tail.len() < NEEDLE.len() && NEEDLE[..tail.len()].eq_ignore_ascii_case(tail);
    starts_header.then_some(end)
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window.eq_ignore_ascii_case(needle))
}

/// How many of these bytes, skipped before a header, count as garbage: none for whitespace and
/// for a Content-Type header sent before Content-Length (legal, merely unused).
fn skipped(bytes: &[u8]) -> usize {
    let text = bytes.trim_ascii();
    let content_type = text.len() >= 13 && text[..13].eq_ignore_ascii_case(b"content-type:") && !text.contains(&b'{');
    if text.is_empty() || content_type { 0 } else { bytes.len() }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn body(id: u32) -> String {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"shutdown"}}"#)
    }

    fn framed(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    /// The bodies of `frames`, after checking each frame's header.
    fn bodies(frames: &[Vec<u8>]) -> Vec<String> {
        frames
            .iter()
            .map(|frame| {
                let text = std::str::from_utf8(frame).unwrap();
                let (header, body) = text.split_once("\r\n\r\n").unwrap();
                assert_eq!(header, format!("Content-Length: {}", body.len()));
                assert!(is_json_rpc(body.as_bytes()), "{body}");
                body.to_string()
            })
            .collect()
    }

    fn all_at_once(input: &str) -> Vec<String> {
        bodies(&Framer::default().push(input.as_bytes()))
    }

    const MALFORMED_TEXT: &str = r#"{"jsonrpc":"2.0","id":null,"method":"raggrep/malformedMessage"}"#;

    #[test]
    fn exact_frames_pass_through() {
        let input = format!("{}{}", framed(&body(1)), framed(&body(2)));
        assert_eq!(all_at_once(&input), [body(1), body(2)]);
    }

    #[test]
    fn frames_split_anywhere_come_out_whole() {
        // The second frame as VS Code sends it, with a Content-Type header.
        let second = body(2);
        let input = format!(
            "{}Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{second}",
            framed(&body(1)),
            second.len()
        );
        let expected = all_at_once(&input);
        assert_eq!(expected, [body(1), body(2)]);
        for split in 0..input.len() {
            let mut framer = Framer::default();
            let mut frames = framer.push(&input.as_bytes()[..split]);
            frames.extend(framer.push(&input.as_bytes()[split..]));
            assert_eq!(bodies(&frames), expected, "split at {split}");
        }
        let mut framer = Framer::default();
        let frames: Vec<Vec<u8>> = input.bytes().flat_map(|b| framer.push(&[b])).collect();
        assert_eq!(bodies(&frames), expected, "byte by byte");
    }

    #[test]
    fn too_short_is_malformed_then_resynchronises() {
        let first = body(1);
        let input = format!("Content-Length: {}\r\n\r\n{first}{}", first.len() - 10, framed(&body(2)));
        assert_eq!(all_at_once(&input), [MALFORMED_TEXT.to_string(), body(2)]);
    }

    #[test]
    fn too_long_recovers_the_next_messages() {
        for excess in [1, 5, 10, 14, 15, 16, 30, 60, 200] {
            let first = body(1);
            let input = format!(
                "Content-Length: {}\r\n\r\n{first}{}{}",
                first.len() + excess,
                framed(&body(2)),
                framed(&body(3))
            );
            assert_eq!(all_at_once(&input), [body(1), body(2), body(3)], "{excess} bytes too long");
            // The same, with the bytes arriving one at a time.
            let mut framer = Framer::default();
            let frames: Vec<Vec<u8>> = input.bytes().flat_map(|b| framer.push(&[b])).collect();
            assert_eq!(bodies(&frames), [body(1), body(2), body(3)], "{excess} bytes too long, byte by byte");
        }
    }

    #[test]
    fn header_inside_a_json_string_is_not_a_frame_boundary() {
        let text =
            format!(r#"{{"jsonrpc":"2.0","method":"x","params":{{"text":"{}"}}}}"#, "Content-Length: 3\\r\\n\\r\\n{}");
        assert_eq!(all_at_once(&framed(&text)), [text]);
    }

    #[test]
    fn garbage_between_frames_is_skipped() {
        let input = format!("{}garbage\r\n\r\n}}}}{{\r\n{}", framed(&body(1)), framed(&body(2)));
        assert_eq!(all_at_once(&input), [body(1), body(2)]);
    }

    #[test]
    fn huge_declared_length_is_malformed_and_the_stream_continues() {
        let input = format!("Content-Length: {}\r\n\r\n{}{}", MAX_BODY + 1, body(1), framed(&body(2)));
        assert_eq!(all_at_once(&input), [MALFORMED_TEXT.to_string(), body(2)]);
        let overflow = format!("Content-Length: 99999999999999999999999\r\n\r\n{}", framed(&body(2)));
        assert_eq!(all_at_once(&overflow), [body(2)]);
    }

    #[test]
    fn header_name_is_case_insensitive() {
        let input = format!("content-LENGTH:{}\n\n{}", body(1).len(), body(1));
        assert_eq!(all_at_once(&input), [body(1)]);
    }

    #[test]
    fn missing_header_skips_to_the_next_frame() {
        let input = format!("Content-Type: x\r\n\r\n{}{}", body(1), framed(&body(2)));
        assert_eq!(all_at_once(&input), [body(2)]);
    }

    #[test]
    fn body_that_is_not_json_rpc_is_malformed() {
        for bad in ["{this is not json", r#"{"id":1,"method":"x"}"#, "[1,2]", r#"{"jsonrpc":"2.0","id":1}"#] {
            assert_eq!(all_at_once(&framed(bad)), [MALFORMED_TEXT.to_string()], "{bad}");
        }
    }

    #[test]
    fn waits_for_the_rest_of_a_body() {
        let input = framed(&body(1));
        let mut framer = Framer::default();
        assert!(framer.push(&input.as_bytes()[..input.len() - 1]).is_empty());
        assert_eq!(bodies(&framer.push(&input.as_bytes()[input.len() - 1..])), [body(1)]);
    }
}
