//! The LSP input re-framer on arbitrary bytes, fed in arbitrary pieces: every frame it emits has
//! a correct Content-Length and a JSON-RPC body, and how the input is split never changes the
//! frames.

#![no_main]

use libfuzzer_sys::fuzz_target;
use raggrep::lsp::framing::{Framer, is_json_rpc};

fuzz_target!(|data: &[u8]| {
    // The first byte seeds the split points, so the fuzzer controls how reads are cut.
    let Some((&seed, input)) = data.split_first() else { return };
    let mut whole = Framer::default();
    let expected = whole.push(input);
    let mut split = Framer::default();
    let mut frames = Vec::new();
    let mut at = 0;
    let mut step = usize::from(seed % 17) + 1;
    while at < input.len() {
        let end = (at + step).min(input.len());
        frames.extend(split.push(&input[at..end]));
        at = end;
        step = step * 7 % 31 + 1;
    }
    assert_eq!(frames, expected, "frames depend on how the input was split");
    for frame in &frames {
        let separator = frame.windows(4).position(|w| w == b"\r\n\r\n").expect("header ends with a blank line");
        let header = std::str::from_utf8(&frame[..separator]).expect("ASCII header");
        let body = &frame[separator + 4..];
        assert_eq!(header, format!("Content-Length: {}", body.len()));
        assert!(is_json_rpc(body), "not JSON-RPC: {:?}", String::from_utf8_lossy(body));
    }
});
