//! The document model's token ids for many texts at once, for the static tier: the same ids as
//! the tokenizer's own pipeline, several times faster on code. Code repeats its words — the
//! same identifiers, keywords and punctuation in every chunk — so each distinct word goes
//! through WordPiece once per batch and is looked up after that, and a text stops being read
//! once the model's token limit is reached (the tokenizer reads all of it, then truncates).
//!
//! The shortcut covers exactly what it can reproduce: a BERT normaliser and pre-tokeniser with
//! a WordPiece model (every model raggrep ships), over text of printable ASCII, tabs and line
//! breaks that holds none of the tokenizer's added tokens. Anything else — another tokenizer,
//! a non-ASCII character, a control character, `[CLS]` written in a comment — goes through the
//! tokenizer itself, so the ids never differ (tests/it/embed.rs compares both on real code).

use std::collections::HashMap;

use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{Model, ModelWrapper, Tokenizer};

use super::EmbedError;

/// How one tokenizer's pipeline is replayed for ASCII text, when it can be.
pub(super) struct WordIds<'t> {
    tokenizer: &'t Tokenizer,
    shortcut: Option<Shortcut<'t>>,
}

struct Shortcut<'t> {
    model: &'t tokenizers::models::wordpiece::WordPiece,
    lowercase: bool,
    /// Content tokens a text keeps: the truncation length less the specials put around it.
    limit: usize,
    /// The added tokens' text, lowercased: a text holding one goes through the tokenizer.
    added: Vec<String>,
    words: HashMap<Box<str>, Box<[u32]>>,
}

impl<'t> WordIds<'t> {
    pub(super) fn new(tokenizer: &'t Tokenizer) -> WordIds<'t> {
        WordIds { tokenizer, shortcut: Shortcut::of(tokenizer) }
    }

    /// The token ids of `text` without the specials, truncated as the model reads it: what
    /// [`super::OnnxEmbedder::content_ids`] returns.
    pub(super) fn content_ids(&mut self, text: &str) -> Result<Vec<u32>, EmbedError> {
        if let Some(shortcut) = &mut self.shortcut
            && let Some(ids) = shortcut.ids(text)
        {
            return Ok(ids);
        }
        tokenizer_content_ids(self.tokenizer, text)
    }
}

/// The tokenizer's own answer (the path every text could take).
pub(super) fn tokenizer_content_ids(tokenizer: &Tokenizer, text: &str) -> Result<Vec<u32>, EmbedError> {
    let encoding = tokenizer.encode_fast(text, true).map_err(|e| EmbedError::Tokenize(e.to_string()))?;
    Ok(encoding
        .get_ids()
        .iter()
        .zip(encoding.get_special_tokens_mask())
        .filter(|&(_, &s)| s == 0)
        .map(|(&id, _)| id)
        .collect())
}

impl<'t> Shortcut<'t> {
    fn of(tokenizer: &'t Tokenizer) -> Option<Shortcut<'t>> {
        let ModelWrapper::WordPiece(model) = tokenizer.get_model() else { return None };
        let Some(NormalizerWrapper::BertNormalizer(normalizer)) = tokenizer.get_normalizer() else { return None };
        let Some(PreTokenizerWrapper::BertPreTokenizer(_)) = tokenizer.get_pre_tokenizer() else { return None };
        // Without the cleaning, control characters would stay in words; the shortcut refuses
        // them anyway, but the tab and line breaks it accepts must become spaces.
        if !normalizer.clean_text {
            return None;
        }
        let specials = tokenizer.encode_fast("", true).ok()?.get_ids().len();
        // The shortcut stops reading at the limit: it keeps a text's beginning, as truncation
        // from the right does.
        let limit = match tokenizer.get_truncation() {
            Some(truncation) if truncation.direction == tokenizers::TruncationDirection::Right => {
                truncation.max_length.checked_sub(specials)?
            }
            Some(_) => return None,
            None => usize::MAX,
        };
        let added = tokenizer.get_added_tokens_decoder().values().map(|t| t.content.to_ascii_lowercase()).collect();
        Some(Shortcut { model, lowercase: normalizer.lowercase, limit, added, words: HashMap::new() })
    }

    /// The ids, or `None` when the text needs the tokenizer's whole pipeline.
    fn ids(&mut self, text: &str) -> Option<Vec<u32>> {
        // Printable ASCII and the three whitespace controls BERT's cleaning turns into spaces;
        // every other character (accents to strip, CJK to split, controls to drop) is the
        // tokenizer's business.
        if !text.bytes().all(|b| matches!(b, b' '..=b'~' | b'\t' | b'\n' | b'\r')) {
            return None;
        }
        let lowered;
        let text = if self.lowercase {
            lowered = text.to_ascii_lowercase();
            lowered.as_str()
        } else {
            text
        };
        // Added tokens are cut out of the raw text before normalising; a lowercased match
        // catches both a raw and a normalised one.
        let folded;
        let haystack = if self.lowercase {
            text
        } else {
            folded = text.to_ascii_lowercase();
            folded.as_str()
        };
        if self.added.iter().any(|token| !token.is_empty() && haystack.contains(token.as_str())) {
            return None;
        }
        let mut ids = Vec::new();
        // BERT's pre-tokeniser: whitespace separates words, each punctuation character is a
        // word of its own.
        for word in text.split(|c: char| c.is_ascii_whitespace()) {
            let mut rest = word;
            while !rest.is_empty() && ids.len() < self.limit {
                let cut = rest.find(|c: char| c.is_ascii_punctuation()).unwrap_or(rest.len());
                let (piece, after) = if cut == 0 { rest.split_at(1) } else { rest.split_at(cut) };
                let room = self.limit - ids.len();
                let known = self.word(piece)?;
                ids.extend_from_slice(&known[..known.len().min(room)]);
                rest = after;
            }
            if ids.len() >= self.limit {
                break;
            }
        }
        Some(ids)
    }

    fn word(&mut self, word: &str) -> Option<&[u32]> {
        if !self.words.contains_key(word) {
            let ids: Box<[u32]> = self.model.tokenize(word).ok()?.iter().map(|t| t.id).collect();
            self.words.insert(word.into(), ids);
        }
        self.words.get(word).map(|ids| &ids[..])
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    /// A BERT-style tokenizer with a handful of words, as the models' tokenizer.json spell it.
    fn bert(max_length: usize) -> Tokenizer {
        let vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "fn", "parse", "##r", "##s", "(", ")", "-", ">", "x", "."];
        let vocab: serde_json::Map<String, serde_json::Value> =
            vocab.iter().enumerate().map(|(i, w)| (w.to_string(), serde_json::json!(i))).collect();
        let added = |id: u32, content: &str| {
            serde_json::json!({"id": id, "content": content, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true})
        };
        let json = serde_json::json!({
            "version": "1.0",
            "truncation": {"direction": "Right", "max_length": max_length, "strategy": "LongestFirst", "stride": 0},
            "padding": null,
            "added_tokens": [added(0, "[PAD]"), added(1, "[UNK]"), added(2, "[CLS]"), added(3, "[SEP]")],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
            "decoder": null,
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                "max_input_chars_per_word": 100, "vocab": vocab}
        });
        Tokenizer::from_str(&json.to_string()).unwrap()
    }

    #[test]
    fn the_memo_replays_a_bert_tokenizer_and_hands_back_what_it_cannot() {
        let tokenizer = bert(8);
        let mut words = WordIds::new(&tokenizer);
        let texts = [
            "fn parse(x) -> parser.parses",
            "FN  Parse\t(\r\nX)",
            "fn unknown parsers",
            "fn x x x x x x x x x x",
            "fnx",
            "fn é",
            "fn [CLS] x",
            "fn\x0cx",
            "",
        ];
        for text in texts {
            assert_eq!(words.content_ids(text).unwrap(), tokenizer_content_ids(&tokenizer, text).unwrap(), "{text:?}");
        }
        let shortcut = words.shortcut.as_ref().expect("a BERT pipeline takes the shortcut");
        assert_eq!(shortcut.limit, 6, "max_length less [CLS] and [SEP]");
        // Each distinct word was tokenised once; the texts it cannot replay left no word behind.
        assert!(shortcut.words.contains_key("parse") && shortcut.words.contains_key("("));
        assert!(!shortcut.words.contains_key("é") && !shortcut.words.contains_key("cls"));

        // Truncation stops reading: the words past the limit are never looked up.
        let mut fresh = WordIds::new(&tokenizer);
        assert_eq!(fresh.content_ids("x x x x x x parse fn").unwrap().len(), 6);
        let fresh = fresh.shortcut.unwrap();
        assert!(fresh.words.contains_key("x") && !fresh.words.contains_key("parse"));
    }

    #[test]
    fn another_pipeline_goes_through_the_tokenizer() {
        let mut tokenizer = bert(8);
        tokenizer.with_pre_tokenizer(Some(tokenizers::pre_tokenizers::whitespace::Whitespace {}));
        let mut words = WordIds::new(&tokenizer);
        assert!(words.shortcut.is_none());
        assert_eq!(
            words.content_ids("fn parse(x)").unwrap(),
            tokenizer_content_ids(&tokenizer, "fn parse(x)").unwrap()
        );
        // Truncation that keeps a text's end: the shortcut, which stops reading, cannot.
        let mut from_left = bert(4);
        let truncation = tokenizers::TruncationParams {
            max_length: 4,
            direction: tokenizers::TruncationDirection::Left,
            ..Default::default()
        };
        from_left.with_truncation(Some(truncation)).unwrap();
        let mut words = WordIds::new(&from_left);
        assert!(words.shortcut.is_none());
        assert_eq!(words.content_ids("fn x parse").unwrap(), tokenizer_content_ids(&from_left, "fn x parse").unwrap());
    }
}
