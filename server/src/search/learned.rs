//! Learned fusion: one linear score over signals the engine already has, instead of a fixed
//! 0.5/0.5 sum of min-max normalised dense and lexical scores.
//!
//! The weights (`learned_fusion.json`) are fitted by `research/training/fit_fusion.py` on
//! candidates this very module computed (`cargo bench --bench retrieval -- --dump-features`)
//! for queries from the training packages only (`../shared/training-packages.md`); the benchmark
//! is never trained on. What each feature is for:
//!
//! * the min-max scores and reciprocal ranks are the fixed fusion's inputs;
//! * the raw cosine keeps what min-max throws away: how good the best dense match is at all
//!   (a query whose best cosine is weak should lean on the lexical side);
//! * symbol and path overlap: a query naming a function's words is about that function;
//! * the chunk's length and kind: containers and long chunks match many queries a little;
//! * the file's best cosine and lexical score: evidence about the file, which is usually right,
//!   shared by its chunks;
//! * a prior against tests, examples, benchmarks, mocks and fixtures, unless the query asks for
//!   them: they repeat the names and words of the code they exercise.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::sort_best_first;
use crate::chunk::ChunkKind;
use crate::embed::Vector;
use crate::index::{Snapshot, code_tokens};

/// Feature names, in the order of [`Candidate::features`] and of the weights file.
pub const FEATURES: [&str; 13] = [
    "dense_mm",
    "lex_mm",
    "dense_rr",
    "lex_rr",
    "cosine",
    "symbol_overlap",
    "path_overlap",
    "log_code_lines",
    "is_container",
    "is_plain_code",
    "file_cosine",
    "file_lex",
    // Code beside the implementation the query did not ask for: tests, examples, benchmarks,
    // mocks, fixtures, and declaration files (`.d.ts`, `.pyi`).
    "unasked_secondary_code",
];

// Positions in FEATURES that the file-level pass reads and fills.
const LEX_MM: usize = 1;
const COSINE: usize = 4;
const FILE_COSINE: usize = 10;
const FILE_LEX: usize = 11;
#[cfg(test)]
const SECONDARY: usize = 12;

/// One candidate chunk of a query with its features.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub chunk: usize,
    pub features: [f32; FEATURES.len()],
}

/// Words too common in queries to say anything about a symbol or a path.
pub(crate) const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "to",
    "for",
    "from",
    "in",
    "on",
    "at",
    "by",
    "with",
    "and",
    "or",
    "is",
    "are",
    "be",
    "this",
    "that",
    "it",
    "its",
    "as",
    "if",
    "into",
    "given",
    "specified",
    "not",
    "no",
    "all",
    "any",
    "each",
];

/// The query's words that can say something about code: its code tokens without stop words.
pub fn content_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = code_tokens(text)
        .into_iter()
        .map(|(_, _, t)| t)
        .filter(|t| t.len() > 1 && !STOPWORDS.contains(&t.as_str()))
        .collect();
    words.sort();
    words.dedup();
    words
}

/// The query asks for declarations (typings, stubs) itself.
fn asks_for_declarations(words: &[String]) -> bool {
    words
        .iter()
        .any(|w| ["typings", "declaration", "declarations", "stub", "stubs", "dts", "pyi"].contains(&w.as_str()))
}

/// The query asks for tests or examples itself.
pub fn asks_for_tests(words: &[String]) -> bool {
    words.iter().any(|w| {
        crate::lang::TEST_MARKERS.contains(&w.as_str())
            || ["tested", "mocked", "mocking", "unittest", "pytest", "demo", "usage"].contains(&w.as_str())
    })
}

fn overlap(words: &[String], text: &str) -> f32 {
    if words.is_empty() || text.is_empty() {
        return 0.0;
    }
    let parts = content_words(text);
    let shared = words.iter().filter(|w| parts.binary_search(w).is_ok()).count();
    shared as f32 / words.len() as f32
}

/// Min-max scores and reciprocal ranks of one ranking (best first).
fn list_features(list: &[(usize, f32)]) -> HashMap<usize, (f32, f32)> {
    let max = list.iter().map(|x| x.1).fold(f32::NEG_INFINITY, f32::max);
    let min = list.iter().map(|x| x.1).fold(f32::INFINITY, f32::min);
    let span = max - min;
    list.iter()
        .enumerate()
        .map(|(rank, &(chunk, score))| {
            let normalized = if span > 1e-6 { (score - min) / span } else { 1.0 };
            (chunk, (normalized, 1.0 / (1.0 + rank as f32)))
        })
        .collect()
}

/// Test code by its file, or by the test module or class it sits in ([`crate::lang::is_test_chunk`]).
fn is_test_code(chunk: &ChunkFacts) -> bool {
    crate::lang::is_test_like(chunk.path)
        || crate::lang::is_test_chunk(chunk.container, chunk.symbol, chunk.kind == ChunkKind::Module)
}

/// What the features read of one candidate chunk, wherever it is stored (a local snapshot, a
/// team index in PostgreSQL).
pub struct ChunkFacts<'a> {
    pub path: &'a str,
    /// Which file the chunk is in, for file-level evidence: its path, or repository and path
    /// where several repositories share one store.
    pub file: &'a str,
    pub kind: ChunkKind,
    pub symbol: &'a str,
    pub container: &'a str,
    /// Lines of code, not comments or blanks ([`crate::chunk::code_lines`]).
    pub code_lines: u32,
}

/// The candidates of a hybrid query (the union of both rankings, and `extra` chunks that other
/// evidence brought in) with their features.
pub fn candidates(
    snapshot: &Snapshot,
    vector: Option<&Vector>,
    query: &str,
    dense: &[(usize, f32)],
    lexical: &[(usize, f32)],
    extra: &[usize],
) -> Vec<Candidate> {
    let facts = |index: usize| {
        snapshot.chunk(index).map(|c| ChunkFacts {
            path: c.path,
            file: c.path,
            kind: c.kind,
            symbol: c.symbol,
            container: c.container,
            code_lines: c.code_lines,
        })
    };
    // A lexical-only candidate still has a cosine: its stored vector says how close it is.
    let stored_cosine = |index: usize| match vector {
        Some(v) => snapshot.chunk_vector(index).map_or(0.0, |c| c.dot(v)),
        None => 0.0,
    };
    candidates_from(query, dense, lexical, extra, facts, stored_cosine)
}

/// [`candidates`] over any store: `facts` describes a candidate (`None`: gone, skipped) and
/// `stored_cosine` gives the cosine of one the dense ranking did not return. An `extra` chunk is
/// in neither ranking: it gets their zero features, as a chunk missing from one of them does.
pub fn candidates_from<'a>(
    query: &str,
    dense: &[(usize, f32)],
    lexical: &[(usize, f32)],
    extra: &[usize],
    facts: impl Fn(usize) -> Option<ChunkFacts<'a>>,
    stored_cosine: impl Fn(usize) -> f32,
) -> Vec<Candidate> {
    let dense_features = list_features(dense);
    let lexical_features = list_features(lexical);
    let cosines: HashMap<usize, f32> = dense.iter().copied().collect();
    let words = content_words(query);
    let wants_tests = asks_for_tests(&words);
    let wants_declarations = asks_for_declarations(&words);
    let mut ids: Vec<usize> = dense.iter().chain(lexical).map(|x| x.0).chain(extra.iter().copied()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut out: Vec<(Candidate, &str)> = Vec::with_capacity(ids.len());
    for chunk_index in ids {
        let Some(chunk) = facts(chunk_index) else { continue };
        let (dense_mm, dense_rr) = dense_features.get(&chunk_index).copied().unwrap_or((0.0, 0.0));
        let (lex_mm, lex_rr) = lexical_features.get(&chunk_index).copied().unwrap_or((0.0, 0.0));
        let cosine = cosines.get(&chunk_index).copied().unwrap_or_else(|| stored_cosine(chunk_index));
        let symbol = format!("{} {}", chunk.container, chunk.symbol);
        let is_container = chunk.kind.is_container();
        let is_plain_code = matches!(chunk.kind, ChunkKind::Code | ChunkKind::Text | ChunkKind::Section);
        out.push((
            Candidate {
                chunk: chunk_index,
                features: [
                    dense_mm,
                    lex_mm,
                    dense_rr,
                    lex_rr,
                    cosine,
                    overlap(&words, &symbol),
                    overlap(&words, chunk.path),
                    (chunk.code_lines as f32).ln_1p(),
                    f32::from(u8::from(is_container)),
                    f32::from(u8::from(is_plain_code)),
                    0.0,
                    0.0,
                    f32::from(u8::from(
                        (!wants_tests && is_test_code(&chunk))
                            || (!wants_declarations && crate::lang::is_declaration_file(chunk.path)),
                    )),
                ],
            },
            chunk.file,
        ));
    }
    // File-level evidence: the best cosine and lexical score among the file's candidates.
    let mut best: HashMap<&str, (f32, f32)> = HashMap::new();
    for (candidate, path) in &out {
        let entry = best.entry(path).or_insert((f32::NEG_INFINITY, 0.0));
        entry.0 = entry.0.max(candidate.features[COSINE]);
        entry.1 = entry.1.max(candidate.features[LEX_MM]);
    }
    out.into_iter()
        .map(|(mut candidate, path)| {
            if let Some(&(cosine, lex)) = best.get(path) {
                candidate.features[FILE_COSINE] = cosine;
                candidate.features[FILE_LEX] = lex;
            }
            candidate
        })
        .collect()
}

/// A linear model over standardised inputs, as the training scripts write them: one mean,
/// deviation and weight per named input. The fusion, the confidence and its hit calibration
/// are all this.
#[derive(Debug, Deserialize)]
pub struct Standardized {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
    pub weights: Vec<f32>,
}

impl Standardized {
    /// `names` are exactly `expected`, in order, with one mean, deviation and weight each.
    pub fn fits(&self, names: &[String], expected: &[&str]) -> bool {
        let n = expected.len();
        names.iter().map(String::as_str).eq(expected.iter().copied())
            && self.mean.len() == n
            && self.std.len() == n
            && self.weights.len() == n
    }

    /// `Σ weight · (x − mean) / std`.
    pub fn linear(&self, inputs: &[f32]) -> f32 {
        inputs
            .iter()
            .zip(&self.mean)
            .zip(&self.std)
            .zip(&self.weights)
            .map(|(((x, mean), std), w)| w * (x - mean) / std.max(1e-6))
            .sum()
    }
}

/// Fitted weights over standardised features (`learned_fusion.json`).
#[derive(Debug, Deserialize)]
pub struct Weights {
    pub features: Vec<String>,
    #[serde(flatten)]
    pub model: Standardized,
}

const WEIGHTS_JSON: &str = include_str!("learned_fusion.json");

/// The shipped weights. A file that does not match [`FEATURES`] is a build defect, caught by
/// the unit test below; at run time it falls back to `None` (and the caller to fixed fusion).
pub fn weights() -> Option<&'static Weights> {
    static WEIGHTS: OnceLock<Option<Weights>> = OnceLock::new();
    WEIGHTS
        .get_or_init(|| {
            let weights: Weights = serde_json::from_str(WEIGHTS_JSON).ok()?;
            weights.model.fits(&weights.features, &FEATURES).then_some(weights)
        })
        .as_ref()
}

impl Weights {
    /// The fused score before squashing: what a reranker's score is added to.
    pub fn linear(&self, features: &[f32; FEATURES.len()]) -> f32 {
        self.model.linear(features)
    }

    /// The fused score, squashed into (0, 1) so scores stay comparable in size with the other
    /// modes' (the order is the linear score's).
    pub fn score(&self, features: &[f32; FEATURES.len()]) -> f32 {
        squash(self.linear(features))
    }
}

/// A linear score squashed into (0, 1), order kept.
pub fn squash(linear: f32) -> f32 {
    1.0 / (1.0 + (-linear).exp())
}

/// Ranks the candidates by the learned score, best first.
pub fn rank(candidates: &[Candidate], weights: &Weights) -> Vec<(usize, f32)> {
    rank_linear(candidates, weights).into_iter().map(|(chunk, linear)| (chunk, squash(linear))).collect()
}

/// Ranks the candidates by the learned linear score (not squashed), best first.
pub fn rank_linear(candidates: &[Candidate], weights: &Weights) -> Vec<(usize, f32)> {
    let mut ranked: Vec<(usize, f32)> = candidates.iter().map(|c| (c.chunk, weights.linear(&c.features))).collect();
    sort_best_first(&mut ranked);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_weights_match_the_features() {
        let weights = weights().expect("learned_fusion.json parses and names exactly FEATURES");
        let named = [(LEX_MM, "lex_mm"), (COSINE, "cosine"), (FILE_COSINE, "file_cosine"), (FILE_LEX, "file_lex")];
        assert!(named.iter().all(|&(i, name)| FEATURES[i] == name));
        assert!(weights.model.std.iter().all(|s| *s > 0.0));
    }

    #[test]
    fn test_code_is_recognised_by_path_or_container_and_asked_for_by_words() {
        for path in ["tests/parse.rs", "src/foo_test.go", "pkg/test_util.py", "web/app.spec.ts", "examples/demo.rs"] {
            assert!(crate::lang::is_test_like(path), "{path}");
        }
        for path in ["src/parser.rs", "src/attestation.py", "lib/contest/mod.rs", "latest/x.go"] {
            assert!(!crate::lang::is_test_like(path), "{path}");
        }
        for container in ["tests", "parser::tests", "test", "test_utils.Helpers", "mocks::Server"] {
            assert!(crate::lang::is_test_container(container), "{container}");
        }
        for container in
            ["", "Parser", "impl Display for Contest", "latest::Attestation", "impl<T> Iterator for Iter<T>"]
        {
            assert!(!crate::lang::is_test_container(container), "{container}");
        }
        let facts = |kind, symbol, container| ChunkFacts {
            path: "src/config.rs",
            file: "src/config.rs",
            kind,
            symbol,
            container,
            code_lines: 3,
        };
        assert!(is_test_code(&facts(ChunkKind::Function, "reads_port", "tests")));
        assert!(is_test_code(&facts(ChunkKind::Module, "tests", "")));
        assert!(!is_test_code(&facts(ChunkKind::Function, "create_test_db", "")));
        assert!(!is_test_code(&facts(ChunkKind::Module, "config", "")));
        assert!(asks_for_tests(&content_words("tests for the parser")));
        assert!(asks_for_tests(&content_words("example of building a Command")));
        assert!(!asks_for_tests(&content_words("parse the attestation")));
    }

    #[test]
    fn declaration_files_are_secondary_unless_the_query_asks_for_them() {
        for path in ["typings/index.d.ts", "src/types.d.mts", "lib/x.D.CTS", "stubs/requests/api.pyi", "lib/glob.mli"] {
            assert!(crate::lang::is_declaration_file(path), "{path}");
        }
        for path in ["src/index.ts", "src/d.ts/reader.ts", "lib/pyi.py", "src/mod.dts.rs", "lib/glob.ml"] {
            assert!(!crate::lang::is_declaration_file(path), "{path}");
        }
        let secondary = |query: &str, path: &str| {
            let facts = |_| {
                Some(ChunkFacts {
                    path,
                    file: path,
                    kind: ChunkKind::Function,
                    symbol: "parse",
                    container: "",
                    code_lines: 1,
                })
            };
            let found = candidates_from(query, &[(0, 0.5)], &[], &[], facts, |_| 0.0);
            found[0].features[SECONDARY]
        };
        assert_eq!(secondary("parse the options", "typings/index.d.ts"), 1.0);
        assert_eq!(secondary("parse the options", "lib/command.js"), 0.0);
        assert_eq!(secondary("typings of parse", "typings/index.d.ts"), 0.0);
        assert_eq!(secondary("tests of parse", "test/parse.test.js"), 0.0);
        assert_eq!(secondary("parse the options", "test/parse.test.js"), 1.0);
    }

    #[test]
    fn overlap_counts_query_words_found_in_identifiers() {
        let words = content_words("validate the API token");
        assert_eq!(words, ["api", "token", "validate"]);
        assert!((overlap(&words, "auth validateApiToken") - 1.0).abs() < 1e-6);
        assert!((overlap(&words, "TokenStore") - 1.0 / 3.0).abs() < 1e-6);
        assert_eq!(overlap(&words, ""), 0.0);
        assert_eq!(overlap(&[], "anything"), 0.0);
    }
}
