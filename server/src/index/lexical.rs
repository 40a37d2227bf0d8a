//! Lexical search: BM25 over code-aware tokens, with tantivy.
//!
//! Why tantivy rather than a home-made inverted index: it gives BM25 with proper statistics,
//! memory-mapped immutable segments, incremental add/delete with background merges, and atomic
//! commits — all things this index needs and would otherwise have to get right itself.
//!
//! A question's inflected words also ask for their stems (`logging` for `log`), so its wording
//! need not be the code's.
//!
//! Each chunk is one document with three searched fields — the code, the symbol path, and the
//! file path — searched with boosts (a query word in a symbol name or a path counts more than
//! one in a body), and stored keys (path, chunk hash) that map a hit back to the manifest.

use std::path::Path;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::IndexError;

const TOKENIZER: &str = "code";
/// Weights of a term match in each field, relative to the body.
const SYMBOL_BOOST: f32 = 3.0;
const PATH_BOOST: f32 = 1.5;

#[derive(Clone, Copy)]
struct Fields {
    body: Field,
    symbol: Field,
    path_text: Field,
    path: Field,
    hash: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(TOKENIZER).set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        body: builder.add_text_field("body", text.clone()),
        symbol: builder.add_text_field("symbol", text.clone()),
        path_text: builder.add_text_field("path_text", text),
        path: builder.add_text_field("path", STRING | STORED),
        hash: builder.add_text_field("hash", STORED),
    };
    (builder.build(), fields)
}

/// One chunk as the lexical index sees it.
pub struct LexicalDoc<'a> {
    pub path: &'a str,
    pub symbol: &'a str,
    pub body: &'a str,
    pub hash: u128,
}

/// A lexical hit: which chunk (by path and hash) and its BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalHit {
    pub path: String,
    pub hash: u128,
    pub score: f32,
}

pub struct LexicalIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

fn tantivy_error(e: tantivy::TantivyError) -> IndexError {
    IndexError::Lexical(e.to_string())
}

impl LexicalIndex {
    /// Opens the index in `dir`, creating it if absent.
    pub fn open_or_create(dir: &Path) -> Result<LexicalIndex, IndexError> {
        std::fs::create_dir_all(dir).map_err(|e| IndexError::io(dir, e))?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(|e| IndexError::Lexical(e.to_string()))?;
        let index = Index::open_or_create(directory, schema).map_err(tantivy_error)?;
        Self::finish_open(index, fields)
    }

    /// Opens an existing index read-only; an absent one is an error.
    pub fn open(dir: &Path) -> Result<LexicalIndex, IndexError> {
        let (_, fields) = schema();
        let index = Index::open_in_dir(dir).map_err(tantivy_error)?;
        Self::finish_open(index, fields)
    }

    fn finish_open(index: Index, fields: Fields) -> Result<LexicalIndex, IndexError> {
        index.tokenizers().register(TOKENIZER, CodeTokenizer);
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(tantivy_error)?;
        Ok(LexicalIndex { index, reader, fields })
    }

    /// Why the committed files cannot be trusted (a checksum mismatch, a missing or unreadable
    /// file), or `None` when they all check out. Reads every live file once: ~100 bytes per chunk.
    pub fn damage(&self) -> Option<String> {
        match self.index.validate_checksum() {
            Ok(damaged) if damaged.is_empty() => None,
            Ok(damaged) => {
                let mut names: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
                names.sort();
                Some(format!("checksum mismatch in {}", names.join(", ")))
            }
            Err(err) => Some(err.to_string()),
        }
    }

    /// The generation of the manifest this index was last committed for.
    pub fn committed_generation(&self) -> Option<u64> {
        let metas = self.index.load_metas().ok()?;
        metas.payload?.parse().ok()
    }

    pub fn writer(&self) -> Result<LexicalWriter, IndexError> {
        // One thread: indexing is I/O- and embedding-bound, and tantivy's minimum heap per thread
        // is what we pay in memory.
        let writer = self.index.writer_with_num_threads(1, 32 * 1024 * 1024).map_err(tantivy_error)?;
        Ok(LexicalWriter { writer, fields: self.fields })
    }

    /// Picks up the latest commit.
    #[cfg(test)]
    pub fn reload(&self) -> Result<(), IndexError> {
        self.reader.reload().map_err(tantivy_error)
    }

    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// BM25 search; `limit` best chunks.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<LexicalHit>, IndexError> {
        let terms = query_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in &terms {
            for (field, boost) in
                [(self.fields.body, 1.0), (self.fields.symbol, SYMBOL_BOOST), (self.fields.path_text, PATH_BOOST)]
            {
                let query = TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::WithFreqs);
                clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(query), boost))));
            }
        }
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score()).map_err(tantivy_error)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(tantivy_error)?;
            let path = doc.get_first(self.fields.path).and_then(|v| v.as_str()).unwrap_or_default();
            let hash =
                doc.get_first(self.fields.hash).and_then(|v| v.as_str()).and_then(|h| u128::from_str_radix(h, 16).ok());
            if let Some(hash) = hash {
                hits.push(LexicalHit { path: path.to_string(), hash, score });
            }
        }
        Ok(hits)
    }
}

/// Buffers changes; nothing is visible until [`LexicalWriter::commit`].
pub struct LexicalWriter {
    writer: IndexWriter,
    fields: Fields,
}

impl LexicalWriter {
    /// Removes every chunk of `path`.
    pub fn delete_file(&mut self, path: &str) {
        self.writer.delete_term(Term::from_field_text(self.fields.path, path));
    }

    pub fn delete_all(&mut self) -> Result<(), IndexError> {
        self.writer.delete_all_documents().map(|_| ()).map_err(tantivy_error)
    }

    pub fn add(&mut self, doc: &LexicalDoc<'_>) -> Result<(), IndexError> {
        let mut document = TantivyDocument::default();
        document.add_text(self.fields.body, doc.body);
        document.add_text(self.fields.symbol, doc.symbol);
        document.add_text(self.fields.path_text, doc.path);
        document.add_text(self.fields.path, doc.path);
        document.add_text(self.fields.hash, format!("{:032x}", doc.hash));
        self.writer.add_document(document).map(|_| ()).map_err(tantivy_error)
    }

    /// Commits atomically, recording the manifest generation this commit belongs to.
    pub fn commit(&mut self, generation: u64) -> Result<(), IndexError> {
        let mut prepared = self.writer.prepare_commit().map_err(tantivy_error)?;
        prepared.set_payload(&generation.to_string());
        prepared.commit().map(|_| ()).map_err(tantivy_error)
    }
}

/// `tokens` and, after each word that is an inflected form, its stem (same place): a question's
/// `logging` also asks for `log`, `utility` for `util`, `validation` for `valid` — words code
/// is written with. Only questions get them: stems indexed beside every word of the code as
/// well ranked worse on semble's questions (tune NDCG@10 0.764 against 0.782 with questions
/// alone), the documents' length and term statistics moving with them.
fn with_stems(tokens: Vec<(usize, usize, String)>) -> Vec<(usize, usize, String)> {
    let mut out = Vec::with_capacity(tokens.len() * 2);
    for (start, end, token) in tokens {
        let stem = stem(&token);
        out.push((start, end, token));
        if let Some(stem) = stem {
            out.push((start, end, stem));
        }
    }
    out
}

/// The stem of an inflected or derived word (`parsing`, `parser` → `pars`), `None` when it has
/// none (short words, words with digits).
fn stem(word: &str) -> Option<String> {
    const SUFFIXES: [&str; 25] = [
        "ations", "ation", "ating", "ities", "ments", "ings", "ions", "ated", "ates", "ness", "ment", "ity", "ing",
        "ion", "ers", "ors", "ies", "ate", "er", "or", "es", "ed", "s", "e", "y",
    ];
    if word.len() < 5 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    for suffix in SUFFIXES {
        if suffix == "s" && word.ends_with("ss") {
            continue;
        }
        let Some(stem) = word.strip_suffix(suffix) else { continue };
        if stem.len() < 3 {
            continue;
        }
        let bytes = stem.as_bytes();
        let doubled = bytes.len() >= 4
            && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
            && !b"aeiouls".contains(&bytes[bytes.len() - 1]);
        let stem = if doubled { &stem[..stem.len() - 1] } else { stem };
        return Some(stem.to_string());
    }
    None
}

/// The terms a query searches for: the same code-aware tokens documents get.
/// The terms of a text as a document holds them: code-aware tokens and their stems, repeated as
/// often as they occur (for a BM25 outside tantivy: the history's commits).
pub fn code_terms(text: &str) -> Vec<String> {
    with_stems(code_tokens(text)).into_iter().map(|(_, _, term)| term).collect()
}

pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = with_stems(code_tokens(query)).into_iter().map(|(_, _, t)| t).collect();
    terms.sort();
    terms.dedup();
    terms
}

/// Splits text into code-aware tokens, lowercased: each identifier whole (`parsehttprequest`)
/// and its parts split at camelCase, snake_case and digit boundaries (`parse`, `http`,
/// `request`). Returns (start, end, token).
pub fn code_tokens(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut word_start: Option<usize> = None;
    let flush = |start: usize, end: usize, out: &mut Vec<(usize, usize, String)>| {
        let word = &text[start..end];
        let parts = split_identifier(word);
        let whole = word.to_lowercase();
        let is_compound = parts.len() > 1;
        if whole.len() <= 64 {
            out.push((start, end, whole));
        }
        if is_compound {
            for (s, e) in parts {
                let part = word[s..e].to_lowercase();
                if !part.is_empty() && part.len() <= 64 {
                    out.push((start + s, start + e, part));
                }
            }
        }
    };
    for (i, ch) in text.char_indices() {
        let is_word = ch.is_alphanumeric() || ch == '_';
        match (is_word, word_start) {
            (true, None) => word_start = Some(i),
            (false, Some(start)) => {
                flush(start, i, &mut out);
                word_start = None;
            }
            _ => {}
        }
    }
    if let Some(start) = word_start {
        flush(start, text.len(), &mut out);
    }
    out
}

/// Byte ranges of the parts of an identifier: `parseHTTPRequest2` → parse, HTTP, Request, 2.
fn split_identifier(word: &str) -> Vec<(usize, usize)> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Other,
    }
    let class = |c: char| {
        if c.is_lowercase() {
            Class::Lower
        } else if c.is_uppercase() {
            Class::Upper
        } else if c.is_numeric() {
            Class::Digit
        } else if c == '_' {
            Class::Other
        } else {
            Class::Lower
        }
    };
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start: Option<usize> = None;
    for (n, &(i, c)) in chars.iter().enumerate() {
        let cls = class(c);
        if cls == Class::Other {
            if let Some(s) = start.take() {
                parts.push((s, i));
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let prev = class(chars[n - 1].1);
        let next = chars.get(n + 1).map(|&(_, c)| class(c));
        let boundary = match (prev, cls) {
            (Class::Lower, Class::Upper) => true,
            (Class::Digit, Class::Upper | Class::Lower) | (Class::Upper | Class::Lower, Class::Digit) => true,
            // `HTTPRequest`: the last capital of a run starts the next word.
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            _ => false,
        };
        if boundary {
            parts.push((s, i));
            start = Some(i);
        }
    }
    if let Some(s) = start {
        parts.push((s, word.len()));
    }
    parts
}

/// tantivy adapter for [`code_tokens`].
#[derive(Clone, Default)]
struct CodeTokenizer;

struct CodeTokenStream {
    tokens: Vec<Token>,
    index: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream {
        let tokens = code_tokens(text)
            .into_iter()
            .enumerate()
            .map(|(position, (offset_from, offset_to, text))| Token {
                offset_from,
                offset_to,
                position,
                text,
                position_length: 1,
            })
            .collect();
        CodeTokenStream { tokens, index: 0 }
    }
}

impl TokenStream for CodeTokenStream {
    fn advance(&mut self) -> bool {
        self.index += 1;
        self.index <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.index - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.index - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        code_tokens(text).into_iter().map(|(_, _, t)| t).collect()
    }

    #[test]
    fn identifiers_are_kept_whole_and_split() {
        assert_eq!(words("parseHTTPRequest"), ["parsehttprequest", "parse", "http", "request"]);
        assert_eq!(words("read_file_v2"), ["read_file_v2", "read", "file", "v", "2"]);
        assert_eq!(words("Shard::open"), ["shard", "open"]);
        assert_eq!(words("XMLHttpRequest"), ["xmlhttprequest", "xml", "http", "request"]);
        assert_eq!(words("utf8"), ["utf8", "utf", "8"]);
        assert_eq!(words("größe Ärger"), ["größe", "ärger"]);
    }

    #[test]
    fn offsets_point_at_the_token() {
        let text = "fn readFile()";
        for (s, e, t) in code_tokens(text) {
            assert_eq!(text[s..e].to_lowercase(), t);
        }
    }

    /// Inflections of one word meet at a stem; words that only look alike do not.
    #[test]
    fn inflected_words_share_a_stem() {
        let groups: [&[&str]; 6] = [
            &["throttle", "throttling", "throttled"],
            &["logger", "logging", "logged"],
            &["utility", "utils", "utilities"],
            &["validate", "validation", "validating"],
            &["dependency", "dependencies"],
            &["route", "router", "routing", "routes"],
        ];
        for group in groups {
            let stems: Vec<Option<String>> = group.iter().map(|w| stem(w)).collect();
            assert!(stems[0].is_some() && stems.iter().all(|s| *s == stems[0]), "{group:?}: {stems:?}");
        }
        assert_eq!(stem("class"), None, "a double s is no plural");
        assert_eq!((stem("format"), stem("form"), stem("http2")), (None, None, None));
        assert_eq!(stem("logger").as_deref(), Some("log"), "the doubled consonant undone");
    }

    #[test]
    fn a_question_finds_the_stems_of_its_words() {
        let dir = tempfile::tempdir().unwrap();
        let index = LexicalIndex::open_or_create(dir.path()).unwrap();
        let mut writer = index.writer().unwrap();
        let docs = [
            ("mw/logger.go", "func Logger() Middleware"),
            ("mw/log.go", "func log(line string)"),
            ("mw/util.go", "package util"),
        ];
        for (n, (path, body)) in docs.iter().enumerate() {
            writer.add(&LexicalDoc { path, symbol: "", body, hash: n as u128 + 1 }).unwrap();
        }
        writer.commit(1).unwrap();
        index.reload().unwrap();
        let found = |q: &str| index.search(q, 5).unwrap().into_iter().map(|h| h.path).collect::<Vec<_>>();
        assert_eq!(found("logging"), ["mw/log.go"], "`logging` asks for `log`, not for `logger`'s own word");
        assert_eq!(found("utility"), ["mw/util.go"]);
    }

    #[test]
    fn index_search_delete_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let index = LexicalIndex::open_or_create(dir.path()).unwrap();
        let mut writer = index.writer().unwrap();
        writer
            .add(&LexicalDoc {
                path: "src/auth.rs",
                symbol: "validate_token",
                body: "fn validate_token(t: &str) -> bool { t.len() > 3 }",
                hash: 1,
            })
            .unwrap();
        writer
            .add(&LexicalDoc {
                path: "src/io.rs",
                symbol: "readFile",
                body: "fn readFile(p: &Path) -> String { todo!() }",
                hash: 2,
            })
            .unwrap();
        writer.commit(7).unwrap();
        index.reload().unwrap();
        assert_eq!(index.committed_generation(), Some(7));
        let hits = index.search("validate token", 10).unwrap();
        assert_eq!(hits[0].path, "src/auth.rs");
        assert_eq!(hits[0].hash, 1);
        let hits = index.search("read file", 10).unwrap();
        assert_eq!(hits[0].hash, 2);
        // Identifier search works with the whole identifier too.
        assert_eq!(index.search("readFile", 10).unwrap()[0].hash, 2);
        writer.delete_file("src/io.rs");
        writer.commit(8).unwrap();
        index.reload().unwrap();
        assert!(index.search("readFile", 10).unwrap().is_empty());
    }
}
