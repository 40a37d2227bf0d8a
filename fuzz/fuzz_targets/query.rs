//! Query-side text handling: code-aware tokens and query terms of arbitrary text, the CLI
//! parser on an arbitrary argument vector (NUL-separated), the `ask` router and LLM URL parser
//! on arbitrary questions, and the LLM answer stream (server-sent events) cut anywhere.

#![no_main]

use libfuzzer_sys::fuzz_target;
use raggrep::index::{code_tokens, query_terms};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 4 == 2 {
        let text = String::from_utf8_lossy(rest);
        let _ = raggrep::ask::route(&text);
        let _ = raggrep::ask::llm::Endpoint::parse(&text);
        return;
    }
    if mode % 4 == 3 {
        // Whatever a server sends, read whole or in pieces, gives the same events.
        let Some((&cut, stream)) = rest.split_first() else { return };
        let whole = raggrep::ask::llm::SseParser::default().push(stream);
        let mut parser = raggrep::ask::llm::SseParser::default();
        let pieces: Vec<_> = stream.chunks(usize::from(cut % 16) + 1).flat_map(|piece| parser.push(piece)).collect();
        assert_eq!(whole, pieces);
        return;
    }
    if mode % 2 == 0 {
        let text = String::from_utf8_lossy(rest);
        for (start, end, token) in code_tokens(&text) {
            assert!(start <= end && end <= text.len(), "token {token:?} at {start}..{end} out of bounds");
            assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
        }
        let terms = query_terms(&text);
        assert!(terms.windows(2).all(|p| p[0] < p[1]), "terms not sorted and unique: {terms:?}");
    } else {
        let args = std::iter::once("raggrep".to_string())
            .chain(rest.split(|&b| b == 0).map(|arg| String::from_utf8_lossy(arg).into_owned()));
        let _ = raggrep::cli::parse_args(args);
    }
});
