//! The chunker on arbitrary text: the first byte picks the language, the rest is the file.
//! Checks the invariants that are cheap to state (ordered, in bounds, on character boundaries,
//! lines 1-based and consistent with the byte range); `chunk::tests::check_invariants` holds the
//! full set.

#![no_main]

use libfuzzer_sys::fuzz_target;
use raggrep::chunk::{ChunkConfig, chunk_file};
use raggrep::lang::Language;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let language = Language::ALL[pick as usize % Language::ALL.len()];
    // The walker only ever hands valid UTF-8 to the chunker.
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let chunks = chunk_file("fuzz/input", text, language, &ChunkConfig::default());
    let line_count = text.matches('\n').count() as u32 + 1;
    let mut previous_start = 0;
    for chunk in &chunks {
        let range = &chunk.byte_range;
        assert!(range.start >= previous_start, "chunks out of order: {chunk:?}");
        previous_start = range.start;
        assert!(range.start <= range.end && range.end <= text.len(), "out of bounds: {chunk:?}");
        assert!(text.is_char_boundary(range.start) && text.is_char_boundary(range.end), "{chunk:?}");
        assert!(chunk.start_line >= 1 && chunk.start_line <= chunk.end_line, "bad lines: {chunk:?}");
        assert!(chunk.end_line <= line_count, "past the last line ({line_count}): {chunk:?}");
        let start_line = text[..range.start].matches('\n').count() as u32 + 1;
        assert_eq!(chunk.start_line, start_line, "start line does not match the byte range: {chunk:?}");
    }
});
