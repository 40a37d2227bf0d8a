//! A cheap estimate of how many model tokens a text costs.
//!
//! Chunking must not depend on the model (it is a pure function of the text), yet chunk sizes are
//! about the model's input limit. BERT-style WordPiece turns every punctuation character into a
//! token and splits words and identifiers into sub-words of a few characters; this estimate counts
//! the same way. `tests/` checks it against the real tokenizer on real code.

/// Estimated WordPiece tokens in `text`.
pub fn estimate_tokens(text: &str) -> usize {
    let mut tokens = 0;
    let mut word_len = 0;
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            word_len += 1;
            continue;
        }
        if word_len > 0 {
            tokens += word_tokens(word_len);
            word_len = 0;
        }
        if !ch.is_whitespace() {
            tokens += 1;
        }
    }
    if word_len > 0 {
        tokens += word_tokens(word_len);
    }
    tokens
}

fn word_tokens(len: usize) -> usize {
    // Common words are one piece; long identifiers split into pieces of ~5 characters.
    1 + len.saturating_sub(3) / 5
}
