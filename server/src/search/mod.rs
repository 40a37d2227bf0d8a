//! Search: a query against a snapshot, in one of three modes, with filters.
//!
//! * `dense` — cosine similarity of the query embedding to chunk embeddings (HNSW, or an
//!   exact scan for small indexes, filtered queries, and `--exact`);
//! * `lexical` — BM25 over code-aware tokens;
//! * `hybrid` (default) — both rankings fused (see [`Fusion`]).
//!
//! With `rerank`, a cross-encoder re-sorts the hybrid ranking's best [`RERANK_DEPTH`]
//! candidates ([`rerank`]): better, and slower by one model run per candidate.
//!
//! Results are chunks in editor terms (path, 1-based inclusive lines, symbol, score), with
//! overlapping chunks of one file collapsed to the best one.
//!
//! A default (learned hybrid) search also says how likely its first results hold the answer
//! ([`confidence`]), and each hit's score is the probability that it is the answer, so both
//! compare across queries (other modes' scores order one query's hits only).
//!
//! Long on purpose: the three modes share the candidates, filters and tail around `search_with`;
//! about 70 lines are its tests. The learned parts live in `learned.rs`, `evidence.rs`, `intent.rs`.

pub mod confidence;
pub mod evidence;
pub mod intent;
pub mod learned;

use std::time::Instant;

use globset::{Glob, GlobMatcher};
use serde::Serialize;

use crate::chunk::ChunkKind;
use crate::embed::{Embedder, Reranker, Vector};
use crate::index::{ChunkRef, IndexError, Snapshot};
use crate::lang::Language;
pub use confidence::Confidence;

/// How to rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Hybrid,
    Dense,
    Lexical,
}

impl Mode {
    pub fn parse(name: &str) -> Option<Mode> {
        match name {
            "hybrid" => Some(Mode::Hybrid),
            "dense" | "semantic" => Some(Mode::Dense),
            "lexical" | "keyword" | "bm25" => Some(Mode::Lexical),
            _ => None,
        }
    }
}

/// How hybrid mode combines the dense and lexical rankings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal-rank fusion: Σ w / (k + rank). Uses ranks only, so the two score scales never
    /// need calibrating.
    Rrf { k: f32, dense_weight: f32 },
    /// Scores min-max normalised per list, then `dense_weight · d + (1 − dense_weight) · l`.
    Weighted { dense_weight: f32 },
    /// A linear score over more signals of each candidate, fitted on training packages
    /// ([`learned`]). Needs the snapshot, so [`fuse`] (lists only) treats it as `Weighted 0.5`.
    Learned,
}

impl Default for Fusion {
    /// Chosen on the TUNE half of the retrieval benchmark (issue 16, BENCHMARKS.md), with
    /// weights fitted only on training packages: against the normalised 0.5/0.5 sum (itself
    /// 2.6 points of chunk MRR@10 ahead of reciprocal-rank fusion) the learned fusion lifts
    /// chunk MRR@10 from 0.487 to 0.527 and file R@1 from 66.5 to 70.1 %.
    fn default() -> Self {
        Fusion::Learned
    }
}

/// A search request.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub text: String,
    pub k: usize,
    pub mode: Mode,
    /// Only files whose root-relative path matches this glob.
    pub path_glob: Option<String>,
    pub language: Option<Language>,
    /// Drop hits scoring below this (the scale depends on the mode).
    pub min_score: Option<f32>,
    /// Exact scan instead of the HNSW graph.
    pub exact: bool,
    pub fusion: Fusion,
    /// Re-sort the best candidates with the reranker (hybrid mode with the learned fusion only).
    pub rerank: bool,
}

impl Query {
    pub fn new(text: impl Into<String>) -> Query {
        Query {
            text: text.into(),
            k: 10,
            mode: Mode::Hybrid,
            path_glob: None,
            language: None,
            min_score: None,
            exact: false,
            fusion: Fusion::default(),
            rerank: false,
        }
    }
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// Relative to the root, `/`-separated.
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// The line of the definition itself ([`crate::chunk::definition_line`]): where a jump to
    /// the hit lands, while `start_line..=end_line` is what to read.
    pub line: u32,
    pub score: f32,
    pub symbol: Option<String>,
    pub kind: ChunkKind,
    pub language: Language,
    pub snippet: String,
    #[serde(skip)]
    pub chunk: usize,
}

/// Results of one query.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResults {
    pub query: String,
    pub took_ms: f64,
    /// Some chunks were not embedded yet: dense ranking saw only part of the index.
    pub partial: bool,
    /// Why the ranking is worse than it should be (part of the index damaged or unavailable),
    /// in words; absent when all is well.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    /// The reranker that re-sorted the best candidates (a `rerank` query), by model id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranked_by: Option<String>,
    /// How likely the first results hold the answer (the default hybrid ranking only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    pub results: Vec<Hit>,
}

/// Errors from searching.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("invalid --path glob {glob:?}: {message}")]
    Glob { glob: String, message: String },
    #[error("{0} mode needs the embedding model, which is not loaded")]
    NoEmbedder(&'static str),
    #[error("reranking works on the hybrid ranking only, not {0}")]
    RerankMode(&'static str),
    #[error("{0} is not inside an indexed workspace folder")]
    OutsideWorkspace(std::path::PathBuf),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
}

/// How many candidates each ranking contributes before fusion and de-duplication (a local
/// search and a team search alike).
pub fn candidates(k: usize) -> usize {
    k.saturating_mul(5).max(FUSION_DEPTH)
}

/// How deep into each ranking the learned fusion reads its list features (min-max scores and
/// reciprocal ranks), whatever `k` is: the depth it was fitted at. Read over a longer list, the
/// same chunk got other features, so `-k 40` put other hits in its first ten than `-k 10` did
/// (semble's benchmark: NDCG@10 0.802 at `-k 10`, 0.792 at 40, 0.781 at 100). Deeper hits still
/// take part, as candidates with only their cosine, below the fused ones.
const FUSION_DEPTH: usize = 50;

/// How many of BM25's best chunks the ranking without vectors weighs ([`words_with_evidence`]):
/// the file a question names is often far down BM25's list, behind chunks that repeat its
/// commonest words. semble's tune questions: 0.780 NDCG@10 at 50, 0.788 at 100, 0.795 at 200,
/// 0.800 at 400, 0.797 at 1,000 (query time 1–6 ms at 50, 3–10 ms at 400).
const WORDS_DEPTH: usize = 400;

/// Runs a query. `embedder` may be `None` for lexical mode.
pub fn search(
    snapshot: &Snapshot,
    embedder: Option<&dyn Embedder>,
    query: &Query,
) -> Result<SearchResults, SearchError> {
    let start = Instant::now();
    let reranker = reranker_for(query, embedder)?;
    let needs_dense = query.mode != Mode::Lexical;
    let vector = if needs_dense && !query.text.trim().is_empty() {
        let embedder =
            embedder.ok_or(SearchError::NoEmbedder(if query.mode == Mode::Dense { "dense" } else { "hybrid" }))?;
        Some(embedder.embed_query(&query.text)?)
    } else {
        None
    };
    search_with(snapshot, vector.as_ref(), reranker, query, None, start)
}

/// The reranker `query` asks for (`None` when it asks for none), or why it cannot have one.
/// Asked before any other work, so a wrong mode or a missing reranker fails fast.
pub fn reranker_for<'a>(
    query: &Query,
    embedder: Option<&'a dyn Embedder>,
) -> Result<Option<&'a dyn Reranker>, SearchError> {
    if !query.rerank {
        return Ok(None);
    }
    rerank_applies(query)?;
    let embedder = embedder.ok_or(SearchError::NoEmbedder("reranking"))?;
    Ok(Some(embedder.reranker()?))
}

/// Reranking adds to the learned fusion's linear score, so it needs that ranking.
pub fn rerank_applies(query: &Query) -> Result<(), SearchError> {
    match (query.mode, query.fusion) {
        (Mode::Hybrid, Fusion::Learned) if learned::weights().is_some() => Ok(()),
        (Mode::Dense, _) => Err(SearchError::RerankMode("dense mode")),
        (Mode::Lexical, _) => Err(SearchError::RerankMode("lexical mode")),
        _ => Err(SearchError::RerankMode("a fixed fusion")),
    }
}

/// A glob for the files under root-relative directory `dir` (`dir/**`), or for those of them
/// that `glob`, relative to `dir`, matches.
pub fn glob_under(dir: &str, glob: Option<&str>) -> String {
    let dir = globset::escape(dir);
    match glob {
        Some(glob) => format!("{dir}/{}", glob.trim_start_matches('/')),
        None => format!("{dir}/**"),
    }
}

/// The query's `--path` glob, compiled (paths are root-relative, `/`-separated).
pub fn path_matcher(query: &Query) -> Result<Option<GlobMatcher>, SearchError> {
    query
        .path_glob
        .as_ref()
        .map(|pattern| {
            Glob::new(pattern)
                .map(|glob| glob.compile_matcher())
                .map_err(|e| SearchError::Glob { glob: pattern.clone(), message: e.to_string() })
        })
        .transpose()
}

/// Runs a query with a precomputed query vector (for "find similar"), optionally excluding
/// chunks (the source of a similarity search).
pub fn search_with_vector(
    snapshot: &Snapshot,
    vector: Option<&Vector>,
    query: &Query,
    exclude: Option<&dyn Fn(&ChunkRef<'_>) -> bool>,
    start: Instant,
) -> Result<SearchResults, SearchError> {
    search_with(snapshot, vector, None, query, exclude, start)
}

/// [`search_with_vector`] with the reranker a `rerank` query needs.
pub fn search_with(
    snapshot: &Snapshot,
    vector: Option<&Vector>,
    reranker: Option<&dyn Reranker>,
    query: &Query,
    exclude: Option<&dyn Fn(&ChunkRef<'_>) -> bool>,
    start: Instant,
) -> Result<SearchResults, SearchError> {
    let reranker = if query.rerank {
        rerank_applies(query)?;
        let reranker = reranker.ok_or(SearchError::NoEmbedder("reranking"))?;
        // An empty query has nothing for the reranker to read: nothing is re-sorted or claimed.
        (!query.text.trim().is_empty()).then_some(reranker)
    } else {
        None
    };
    let glob = path_matcher(query)?;
    let filtered = glob.is_some() || query.language.is_some() || exclude.is_some();
    let accept = |chunk: &ChunkRef<'_>| -> bool {
        glob.as_ref().is_none_or(|g| g.is_match(chunk.path))
            && query.language.is_none_or(|l| l == chunk.language)
            && exclude.is_none_or(|ex| !ex(chunk))
    };
    // `k` comes from the user: never size anything from it beyond what the index holds.
    let k = query.k.min(snapshot.chunk_count());
    if k == 0 {
        return Ok(SearchResults {
            query: query.text.clone(),
            took_ms: start.elapsed().as_secs_f64() * 1000.0,
            partial: snapshot.is_partial(),
            degraded: None,
            reranked_by: None,
            confidence: None,
            results: Vec::new(),
        });
    }
    let (dense, lexical, mut degraded) = rankings(snapshot, vector, query, k, filtered, &accept);
    let mut confidence = None;
    let ranked = match query.mode {
        Mode::Dense => dense,
        Mode::Lexical => words_with_evidence(snapshot, &query.text, lexical, &accept),
        Mode::Hybrid if by_words(snapshot, query.mode) => words_with_evidence(snapshot, &query.text, lexical, &accept),
        Mode::Hybrid => match (query.fusion, learned::weights()) {
            (Fusion::Learned, Some(weights)) => {
                let intent = intent::Intent::of(&query.text);
                let mut evidence = evidence::Evidence::new(snapshot, &intent);
                let words_weight = words_weight(&intent);
                let words = if words_weight > 0.0 {
                    let (words, failed) = words_alone(snapshot, &mut evidence, query, filtered, &accept);
                    degraded = degraded.or(failed);
                    Some(words)
                } else {
                    None
                };
                let (dense, deeper_dense) = dense.split_at(dense.len().min(FUSION_DEPTH));
                let (lexical, deeper_lexical) = lexical.split_at(lexical.len().min(FUSION_DEPTH));
                let have: std::collections::HashSet<usize> = dense.iter().chain(lexical).map(|x| x.0).collect();
                let mut extra = evidence.extra_candidates(snapshot, vector, &have, &accept);
                extra.extend(deeper_dense.iter().chain(deeper_lexical).map(|x| x.0).filter(|c| !have.contains(c)));
                extra.sort_unstable();
                extra.dedup();
                let candidates = learned::candidates(snapshot, vector, &query.text, dense, lexical, &extra);
                let mut ranked = learned::rank_linear(&candidates, weights);
                // Calibrated on whole rankings: without a query vector's cosines, or with part of
                // the index ignored as damaged, it would not be. No evidence, no claim.
                if vector.is_some() && degraded.is_none() && !snapshot.static_tier() {
                    confidence = confidence::of(snapshot, &candidates, &ranked);
                }
                // The hit calibration was fitted on the fusion's scores (plus the reranker's,
                // which add to them), not on the evidence's: each hit's probability comes from
                // those, in the evidence's order, never above an earlier hit's.
                let fused: std::collections::HashMap<usize, f32> = ranked.iter().copied().collect();
                evidence.adjust(snapshot, &mut ranked, vector);
                let adjusted: std::collections::HashMap<usize, f32> = ranked.iter().copied().collect();
                if let Some(reranker) = reranker {
                    rerank(snapshot, reranker, &query.text, &mut ranked)?;
                }
                let calibrated: std::collections::HashMap<usize, f32> = ranked
                    .iter()
                    .map(|&(chunk, score)| {
                        let reranked_by = score - adjusted.get(&chunk).copied().unwrap_or(score);
                        (chunk, fused.get(&chunk).copied().unwrap_or(score) + reranked_by)
                    })
                    .collect();
                if let Some(words) = &words {
                    add_words(&mut ranked, words, words_weight);
                }
                let (penalty, free) = evidence.same_file_penalty(evidence::RankedBy::Fusion);
                diversify(snapshot, &mut ranked, penalty, free);
                let in_order: Ranking = ranked
                    .iter()
                    .map(|&(chunk, score)| (chunk, calibrated.get(&chunk).copied().unwrap_or(score)))
                    .collect();
                match confidence.as_ref().and_then(|c| confidence::hit_probabilities(c, &in_order)) {
                    Some(probabilities) => probabilities,
                    // No query vector (or no calibration): the fused score keeps ordering the hits.
                    None => ranked.into_iter().map(|(chunk, linear)| (chunk, learned::squash(linear))).collect(),
                }
            }
            (fusion, _) => fuse(&dense, &lexical, fusion),
        },
    };
    let ranked = match identifier(&query.text) {
        Some(name) if query.mode != Mode::Dense => definitions_first(snapshot, name, ranked, &accept),
        _ => ranked,
    };
    let mut hits = distinct_hits(ranked, k, |chunk_index, score| {
        if query.min_score.is_some_and(|min| score < min) {
            return None;
        }
        let chunk = snapshot.chunk(chunk_index)?;
        let hit = Hit {
            path: chunk.path.to_string(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            line: chunk.start_line,
            score,
            symbol: chunk.symbol_path(),
            kind: chunk.kind,
            language: chunk.language,
            snippet: String::new(),
            chunk: chunk_index,
        };
        Some((chunk.path, chunk.start_line, chunk.end_line, hit))
    });
    for hit in &mut hits {
        (hit.snippet, hit.line) = snippet(snapshot, hit.chunk, hit.symbol.as_deref());
    }
    Ok(SearchResults {
        query: query.text.clone(),
        took_ms: start.elapsed().as_secs_f64() * 1000.0,
        partial: snapshot.is_partial(),
        degraded,
        reranked_by: reranker.map(|r| r.id().to_string()),
        confidence,
        results: hits,
    })
}

/// Whether a query in `mode` is ranked by [`words_with_evidence`]: lexical mode, and the default
/// search of an index whose implementation code is not embedded yet (a first query on a fresh
/// tree, while the model works) unless the static tier stands in for its vectors: the learned
/// fusion over a partial set of vectors ranks below the words' own ranking, whatever has a
/// vector ahead of whatever has none ([`Snapshot::code_embedded`]), where over every chunk's
/// static vector it ranks above them (semble's test half 0.813 against 0.785, the project's
/// TEST chunk R@5 65.2 against 47.5: BENCHMARKS.md, "A static tier trained to the code model").
fn by_words(snapshot: &Snapshot, mode: Mode) -> bool {
    mode == Mode::Lexical || (mode == Mode::Hybrid && !snapshot.ranks_by_vectors())
}

/// The ranking without vectors (`--mode lexical`, a root whose vectors another model built):
/// BM25's, scaled by where each file is ([`path_prior`]), with the evidence a question carries
/// (file names, definitions of named symbols, prose, coherence, one file not taking every
/// place). On semble's tune repositories: BM25 alone 0.656 NDCG@10, this 0.800 (BENCHMARKS.md).
fn words_with_evidence(
    snapshot: &Snapshot,
    text: &str,
    lexical: Ranking,
    accept: &dyn Fn(&ChunkRef<'_>) -> bool,
) -> Ranking {
    let intent = intent::Intent::of(text);
    let mut evidence = evidence::Evidence::new(snapshot, &intent);
    words_with(snapshot, &mut evidence, text, lexical, accept)
}

/// [`words_with_evidence`] with the query's evidence already made (its file names, the texts it
/// read and the definitions it found serve the fused ranking after it).
fn words_with(
    snapshot: &Snapshot,
    evidence: &mut evidence::Evidence<'_>,
    text: &str,
    lexical: Ranking,
    accept: &dyn Fn(&ChunkRef<'_>) -> bool,
) -> Ranking {
    let have: std::collections::HashSet<usize> = lexical.iter().map(|x| x.0).collect();
    let extra = evidence.extra_candidates(snapshot, None, &have, &accept);
    let floor = lexical.last().map_or(0.0, |x| x.1);
    let mut ranked = lexical;
    // BM25 scores are positive: the priors scale them. (The learned fusion has features of its
    // own for tests and declarations.)
    let tests_ok = learned::asks_for_tests(&learned::content_words(text));
    for (index, score) in ranked.iter_mut() {
        if let Some(chunk) = snapshot.chunk(*index) {
            *score *= path_prior(chunk.path, tests_ok);
        }
    }
    sort_best_first(&mut ranked);
    ranked.extend(extra.into_iter().map(|c| (c, floor)));
    evidence.adjust(snapshot, &mut ranked, None);
    let (penalty, free) = evidence.same_file_penalty(evidence::RankedBy::Words);
    diversify(snapshot, &mut ranked, penalty, free);
    ranked
}

/// How much a file's place says it is not the code a question is about: tests and examples
/// (unless asked for), compatibility shims, package re-export files, declaration stubs.
fn path_prior(path: &str, tests_ok: bool) -> f32 {
    let mut prior = 1.0;
    if !tests_ok && crate::lang::is_test_like(path) {
        prior *= 0.3;
    }
    let dirs: Vec<&str> = path.split('/').collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    if dirs.iter().any(|d| matches!(*d, "compat" | "_compat" | "legacy" | "single_include" | "docs_src")) {
        prior *= 0.3;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    if matches!(name, "__init__.py" | "package-info.java") {
        prior *= 0.5;
    }
    if crate::lang::is_declaration_file(path) {
        prior *= 0.7;
    }
    prior
}

/// The ranking's tail, for a local and a team search alike: `ranked` best first, at most `k`
/// hits, and overlapping pieces of one file (a unit and its container) counted once: the two
/// are one hit to a reader. `place` gives a ranked id's file (any key naming it: a path, or a
/// repository and a path), its lines and its hit; `None` leaves the id out.
pub fn distinct_hits<F: PartialEq, T>(
    ranked: impl IntoIterator<Item = (usize, f32)>,
    k: usize,
    mut place: impl FnMut(usize, f32) -> Option<(F, u32, u32, T)>,
) -> Vec<T> {
    let mut kept: Vec<(F, u32, u32)> = Vec::new();
    let mut hits = Vec::with_capacity(k);
    for (id, score) in ranked {
        if hits.len() >= k {
            break;
        }
        let Some((file, start, end, hit)) = place(id, score) else { continue };
        if kept.iter().any(|(f, s, e)| *f == file && *s <= end && start <= *e) {
            continue;
        }
        kept.push((file, start, end));
        hits.push(hit);
    }
    hits
}

/// How many of the best candidates the reranker re-sorts. Measured over the best 10 and 5 on
/// the validation packages: 10 gains the most (research/training/README.md); each costs one
/// model run (~17 ms on two cores).
pub const RERANK_DEPTH: usize = 10;

/// Re-sorts the best [`RERANK_DEPTH`] of `ranked` (learned linear scores, best first) by
/// linear score + weight × reranker score, as the reranker was evaluated. The rest move below
/// them with their differences kept, so scores still fall down the list.
fn rerank(snapshot: &Snapshot, reranker: &dyn Reranker, query: &str, ranked: &mut Ranking) -> Result<(), SearchError> {
    let n = ranked.len().min(RERANK_DEPTH);
    if n == 0 {
        return Ok(());
    }
    let mut files: std::collections::HashMap<&str, Option<Vec<String>>> = std::collections::HashMap::new();
    let texts: Vec<String> = ranked[..n]
        .iter()
        .map(|&(index, _)| {
            let Some(chunk) = snapshot.chunk(index) else { return String::new() };
            let lines = files.entry(chunk.path).or_insert_with(|| {
                let path = crate::walk::resolve(&snapshot.location.root, chunk.path);
                std::fs::read_to_string(path).ok().map(|text| text.lines().map(str::to_string).collect())
            });
            // What the reranker was trained on: the path, then the chunk's lines as they are now
            // (a file gone since indexing leaves the path alone).
            let code = lines.as_ref().map_or_else(String::new, |lines| {
                let start = chunk.start_line.saturating_sub(1) as usize;
                let end = (chunk.end_line as usize).min(lines.len());
                lines.get(start..end).map_or_else(String::new, |l| l.join("\n"))
            });
            format!("{}\n{code}", chunk.path)
        })
        .collect();
    let passages: Vec<&str> = texts.iter().map(String::as_str).collect();
    let scores = reranker.score(query, &passages)?;
    let weight = reranker.weight();
    for ((_, score), extra) in ranked[..n].iter_mut().zip(scores) {
        *score += weight * extra;
    }
    sort_best_first(&mut ranked[..n]);
    if let (Some(&(_, floor)), Some(&(_, next))) = (ranked.get(n - 1), ranked.get(n)) {
        let shift = (next - floor).max(0.0) + 1e-3;
        ranked[n..].iter_mut().for_each(|r| r.1 -= shift);
    }
    Ok(())
}

/// The query, if it is one identifier written as code (`parse_config`, `parseConfig`,
/// `Config::load`, `cfg.load`): then the user names a definition rather than describing one.
/// Plain words (`parse`, `Config`) are not: they may as well be a description.
fn identifier(text: &str) -> Option<&str> {
    let text = text.trim();
    let segments = intent::segments(text);
    if text.is_empty() || !segments.iter().all(|s| intent::is_word(s)) {
        return None;
    }
    let qualified = segments.len() > 1;
    let snake = text.trim_matches('_').contains('_');
    let camel = text.chars().zip(text.chars().skip(1)).any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    // Ruby's predicates and bang methods (`empty?`, `save!`), PHP's and shell's `$variables`.
    let marked = text.len() > 1 && (text.ends_with(['?', '!']) || text.starts_with('$'));
    (qualified || snake || camel || marked).then_some(text)
}

/// Puts the definitions named exactly `name` (symbol or qualified symbol, any separator) first,
/// in their existing order, scored level with the best hit so scores never rise down the list.
fn definitions_first(
    snapshot: &Snapshot,
    name: &str,
    ranked: Ranking,
    accept: &dyn Fn(&ChunkRef<'_>) -> bool,
) -> Ranking {
    let normal = intent::normal_qualified;
    let wanted = normal(name);
    let is_definition = |index: usize| {
        snapshot.chunk(index).is_some_and(|c| {
            !c.symbol.is_empty()
                && (c.symbol == name || c.symbol_path().is_some_and(|p| normal(&p) == wanted))
                && accept(&c)
        })
    };
    let mut definitions: Vec<usize> = (0..snapshot.chunk_count()).filter(|&i| is_definition(i)).collect();
    if definitions.is_empty() {
        return ranked;
    }
    // Definitions the ranking found keep its order; the others follow in index order.
    let position = |i: usize| ranked.iter().position(|r| r.0 == i).unwrap_or(usize::MAX);
    definitions.sort_by_key(|&i| (position(i), i));
    let top = ranked.first().map_or(1.0, |r| r.1);
    let mut out: Ranking = definitions.iter().map(|&i| (i, top)).collect();
    out.extend(ranked.into_iter().filter(|r| !definitions.contains(&r.0)));
    out
}

/// Chunk indexes with scores, best first.
type Ranking = Vec<(usize, f32)>;

/// How much the ranking without vectors ([`words_with_evidence`]) counts beside the learned
/// fusion's, by what the query asks for. A name lookup (`APIRouter`, `FromRequest`, `Query`):
/// the words find the name itself, and their evidence puts the chunk that defines it (or the
/// file that re-exports it) first, where the fusion's dense half also brings the chunks that
/// use the name and the methods of the definition. semble's tune questions, symbol lookups:
/// 0.908 NDCG@10 fused alone, 0.947 with the words at weight 1 (0.915 at 0.5, 0.947 at 2, 0.949
/// with the words alone). Questions and descriptions keep the fusion alone: the words added
/// to a question at 0.5, 1 or 2 gave 0.810, 0.806, 0.802 against 0.811.
fn words_weight(intent: &intent::Intent) -> f32 {
    match intent.shape {
        intent::Shape::Symbol => 1.0,
        intent::Shape::Question | intent::Shape::Description => 0.0,
    }
}

/// How many of BM25's best chunks the words' ranking beside the fusion weighs: a name lookup's
/// definitions are brought in by the evidence whatever BM25's rank, so it needs less depth than
/// a question without vectors ([`WORDS_DEPTH`]). semble's tune symbol lookups: 0.947 at 100 and
/// at 400; 40 lookups on abseil's 22,875 chunks, median: fused alone 25 ms, with the words 400
/// deep 43–44 ms, 100 deep 37–40 ms, and 25–28 ms once both rankings share the query's evidence
/// (its file names, texts read and definitions found).
const NAME_WORDS_DEPTH: usize = 100;

/// The ranking without vectors beside a fused one, over the query's `evidence` (then used by
/// the fused ranking too): BM25 read [`NAME_WORDS_DEPTH`] deep, and why it is missing when BM25
/// failed.
fn words_alone(
    snapshot: &Snapshot,
    evidence: &mut evidence::Evidence<'_>,
    query: &Query,
    filtered: bool,
    accept: &dyn Fn(&ChunkRef<'_>) -> bool,
) -> (Ranking, Option<String>) {
    match bm25(snapshot, &query.text, NAME_WORDS_DEPTH.min(snapshot.chunk_count()), filtered, accept) {
        Ok(found) => (words_with(snapshot, evidence, &query.text, found, accept), None),
        Err(why) => (Vec::new(), Some(why)),
    }
}

/// Where a chunk the fused ranking did not hold starts when the words bring it: this many of the
/// fused ranking's first-page spreads below its tenth hit.
const WORDS_ONLY_FLOOR: f32 = 1.0;

/// Adds the words' ranking to the fused one (`ranked`, linear scores, best first), each measured
/// in its own first page (the first score minus the tenth): a chunk's fused score keeps its
/// place, and gains `weight` fused spreads per words spread it stands above the words' tenth
/// hit. A chunk only the words found starts [`WORDS_ONLY_FLOOR`] spreads below the fused
/// tenth. The result is re-sorted, still on the fused scale.
fn add_words(ranked: &mut Ranking, words: &[(usize, f32)], weight: f32) {
    // The fusion's spread is counted as the evidence counts it (at least 2).
    let (fused_tenth, fused_spread) = evidence::first_page(ranked, evidence::Weights::default().min_unit);
    let (words_tenth, words_spread) = evidence::first_page(words, f32::EPSILON);
    let floor = fused_tenth - WORDS_ONLY_FLOOR * fused_spread;
    let mut scores: std::collections::HashMap<usize, f32> =
        ranked.iter().map(|&(chunk, score)| (chunk, score.max(floor))).collect();
    for &(chunk, score) in words {
        let above = ((score - words_tenth) / words_spread).max(0.0);
        *scores.entry(chunk).or_insert(floor) += weight * fused_spread * above;
    }
    *ranked = scores.into_iter().collect();
    sort_best_first(ranked);
}

/// The dense and lexical rankings a query fuses (candidates for `k` results), and why the
/// answer is degraded, if it is.
fn rankings(
    snapshot: &Snapshot,
    vector: Option<&Vector>,
    query: &Query,
    k: usize,
    filtered: bool,
    accept: &dyn Fn(&ChunkRef<'_>) -> bool,
) -> (Ranking, Ranking, Option<String>) {
    let limit = candidates(k).min(snapshot.chunk_count());
    // The ranking without vectors reads deeper into BM25's list than the fusion does.
    let lexical_limit =
        if by_words(snapshot, query.mode) { limit.max(WORDS_DEPTH).min(snapshot.chunk_count()) } else { limit };
    let dense: Vec<(usize, f32)> = match (query.mode, vector) {
        (Mode::Lexical, _) | (_, None) => Vec::new(),
        (_, Some(vector)) => snapshot.dense_search(vector, limit, filtered.then_some(accept), query.exact),
    };
    let mut degraded = snapshot.degraded(query.mode != Mode::Lexical, query.mode != Mode::Dense);
    let lexical: Vec<(usize, f32)> = if query.mode == Mode::Dense {
        Vec::new()
    } else {
        match bm25(snapshot, &query.text, lexical_limit, filtered, accept) {
            Ok(found) => found,
            // A damaged lexical index loses its half of the ranking, not the whole answer.
            Err(why) => {
                degraded = Some(why);
                Vec::new()
            }
        }
    };
    (dense, lexical, degraded)
}

/// BM25's best `depth` chunks that `accept` keeps (filters apply after BM25, so it asks for more
/// when filtering), or why the answer is degraded without them.
fn bm25(
    snapshot: &Snapshot,
    text: &str,
    depth: usize,
    filtered: bool,
    accept: &dyn Fn(&ChunkRef<'_>) -> bool,
) -> Result<Ranking, String> {
    let ask = if filtered { depth.saturating_mul(4) } else { depth };
    match snapshot.lexical_search(text, ask) {
        Ok(found) => Ok(found.into_iter().filter(|&(c, _)| snapshot.chunk(c).is_some_and(|c| accept(&c))).collect()),
        Err(err) => {
            tracing::warn!("{err}; lexical ranking skipped");
            Err(format!("lexical search failed ({err}); `raggrep index` repairs it"))
        }
    }
}

/// The candidates of a hybrid query with the learned fusion's features, unfiltered: what
/// `research/training/fit_fusion.py` learns from (via the retrieval benchmark's
/// `--dump-features`).
pub fn hybrid_candidates(snapshot: &Snapshot, vector: Option<&Vector>, query: &Query) -> Vec<learned::Candidate> {
    let k = query.k.min(snapshot.chunk_count());
    let hybrid = Query { mode: Mode::Hybrid, ..query.clone() };
    let (dense, lexical, _) = rankings(snapshot, vector, &hybrid, k, false, &|_| true);
    learned::candidates(snapshot, vector, &query.text, &dense, &lexical, &[])
}

/// Re-orders `ranked` (linear scores, best first) so that each hit of a file already shown
/// costs `penalty` per earlier hit of that file: the first places go to the best chunks of
/// different files before a file's second-best chunk. The scores become the penalised ones, so
/// they still fall down the list.
fn diversify(snapshot: &Snapshot, ranked: &mut Ranking, penalty: f32, free: f32) {
    if penalty <= 0.0 || ranked.len() < 2 {
        return;
    }
    let files: Vec<&str> = ranked.iter().map(|&(i, _)| snapshot.chunk(i).map_or("", |c| c.path)).collect();
    let mut shown: std::collections::HashMap<&str, f32> = std::collections::HashMap::new();
    let mut left: Vec<usize> = (0..ranked.len()).collect();
    let mut out: Ranking = Vec::with_capacity(ranked.len());
    while !left.is_empty() {
        let effective = |slot: usize| {
            ranked[slot].1 - penalty * (shown.get(files[slot]).copied().unwrap_or(0.0) - free + 1.0).max(0.0)
        };
        let (pos, best) = left
            .iter()
            .enumerate()
            .map(|(pos, &slot)| (pos, effective(slot)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .expect("left is not empty");
        let slot = left.remove(pos);
        *shown.entry(files[slot]).or_default() += 1.0;
        out.push((ranked[slot].0, best));
    }
    *ranked = out;
}

/// Sorts scored items best first, equal scores in the order of their ids (chunk or commit
/// indices): the same query over the same index ranks the same way every time.
pub fn sort_best_first<T: Ord>(ranked: &mut [(T, f32)]) {
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

/// Fuses two rankings (best first) into one.
pub fn fuse(dense: &[(usize, f32)], lexical: &[(usize, f32)], fusion: Fusion) -> Vec<(usize, f32)> {
    let mut scores: std::collections::HashMap<usize, f32> = std::collections::HashMap::new();
    match fusion {
        Fusion::Rrf { k, dense_weight } => {
            for (rank, &(chunk, _)) in dense.iter().enumerate() {
                *scores.entry(chunk).or_default() += dense_weight / (k + rank as f32 + 1.0);
            }
            for (rank, &(chunk, _)) in lexical.iter().enumerate() {
                *scores.entry(chunk).or_default() += 1.0 / (k + rank as f32 + 1.0);
            }
        }
        Fusion::Weighted { .. } | Fusion::Learned => {
            let dense_weight = match fusion {
                Fusion::Weighted { dense_weight } => dense_weight,
                _ => 0.5,
            };
            for (list, weight) in [(dense, dense_weight), (lexical, 1.0 - dense_weight)] {
                let max = list.iter().map(|x| x.1).fold(f32::NEG_INFINITY, f32::max);
                let min = list.iter().map(|x| x.1).fold(f32::INFINITY, f32::min);
                let span = max - min;
                for &(chunk, score) in list {
                    // A list whose scores are all equal (one candidate, say) ranks them all first.
                    let normalized = if span > 1e-6 { (score - min) / span } else { 1.0 };
                    *scores.entry(chunk).or_default() += weight * normalized;
                }
            }
        }
    }
    let mut fused: Vec<(usize, f32)> = scores.into_iter().collect();
    sort_best_first(&mut fused);
    fused
}

/// The first lines of a chunk and the line of its definition, read from the file now (a
/// changed file shows its current text); the chunk's first line when the file cannot be read.
fn snippet(snapshot: &Snapshot, chunk_index: usize, symbol: Option<&str>) -> (String, u32) {
    let Some(chunk) = snapshot.chunk(chunk_index) else {
        return (String::new(), 0);
    };
    let path = crate::walk::resolve(&snapshot.location.root, chunk.path);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return (String::new(), chunk.start_line);
    };
    let lines: Vec<&str> = text.lines().collect();
    let line = crate::chunk::definition_line(&lines, chunk.start_line, chunk.end_line, symbol);
    let snippet = snippet_of(
        lines
            .iter()
            .copied()
            .skip(chunk.start_line.saturating_sub(1) as usize)
            .take((chunk.end_line + 1 - chunk.start_line) as usize),
    );
    (snippet, line)
}

/// A result's snippet: its first lines, cut at a size a list can show.
pub fn snippet_of<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    const MAX_LINES: usize = 6;
    const MAX_CHARS: usize = 480;
    let mut out = String::new();
    for line in lines.take(MAX_LINES) {
        if out.len() + line.len() > MAX_CHARS {
            let room = MAX_CHARS.saturating_sub(out.len());
            let mut cut = room.min(line.len());
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            out.push_str(&line[..cut]);
            out.push('…');
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words lift what they rank above their tenth hit, in the fused ranking's own units,
    /// and bring what the fusion missed in below its page; weight 0 leaves the fused order.
    #[test]
    fn the_words_lift_their_best_hits_on_the_fused_scale() {
        // Fused: chunks 0..12, scores 12, 11, …, 1 (first-page spread 9).
        let fused: Ranking = (0..12).map(|c| (c, 12.0 - c as f32)).collect();
        // Words: chunk 5 first by far, then chunk 99 (not fused), then ten more of the fused.
        let mut words: Ranking = vec![(5, 30.0), (99, 12.0)];
        words.extend((0..11).filter(|&c| c != 5).map(|c| (c, 10.0 - c as f32 * 0.1)));

        let mut unchanged = fused.clone();
        add_words(&mut unchanged, &words, 0.0);
        assert_eq!(unchanged.iter().map(|x| x.0).take(12).collect::<Vec<_>>(), (0..12).collect::<Vec<_>>());

        let mut ranked = fused.clone();
        add_words(&mut ranked, &words, 1.0);
        assert_eq!(ranked[0].0, 5, "the words' first hit, fused sixth, comes first: {ranked:?}");
        let place = |c: usize| ranked.iter().position(|x| x.0 == c).unwrap();
        assert!(place(0) < place(1), "the fused order holds where the words barely differ");
        // Chunk 99: 1 fused spread below the fused tenth (3 − 9 = −6), plus its lift (≈ 0.2 · 9).
        let score_99 = ranked[place(99)].1;
        assert!((-6.0..0.0).contains(&score_99), "{score_99}");
        assert!(place(99) > place(11), "a chunk only the words found starts below the fused page");
        // Scores still fall down the list.
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    /// Tests, examples, shims, re-export files and stubs rank below the code itself, unless the
    /// question asks for tests.
    #[test]
    fn a_files_place_scales_its_words() {
        assert_eq!(path_prior("src/router.rs", false), 1.0);
        assert_eq!(path_prior("tests/router.rs", false), 0.3);
        assert_eq!(path_prior("tests/router.rs", true), 1.0);
        assert_eq!(path_prior("src/compat/router.py", false), 0.3);
        assert_eq!(path_prior("pkg/__init__.py", false), 0.5);
        assert_eq!(path_prior("types/index.d.ts", false), 0.7);
        // Only directories count as places: a file named `legacy.rs` is code like any other.
        assert_eq!(path_prior("src/legacy.rs", false), 1.0);
    }

    #[test]
    fn identifiers_are_told_from_descriptions() {
        for name in [
            "parse_config",
            "parseConfig",
            "Config::load",
            "cfg.load",
            "HTTPServer_v2",
            "__init__x_y",
            "Rack::Builder#call",
            "App\\Cache",
            "self->field",
            "empty?",
            "save!",
            "$request",
        ] {
            assert_eq!(identifier(name), Some(name), "{name}");
        }
        assert_eq!(identifier("  parse_config "), Some("parse_config"));
        for text in
            ["parse", "Config", "parse the config", "where is parse_config", "a::", "1abc_d", "", "__init__", "?", "a#"]
        {
            assert_eq!(identifier(text), None, "{text:?}");
        }
    }

    #[test]
    fn rrf_rewards_agreement() {
        let dense = [(1, 0.9), (2, 0.8), (3, 0.7)];
        let lexical = [(3, 12.0), (4, 11.0), (1, 10.0)];
        let fused = fuse(&dense, &lexical, Fusion::Rrf { k: 60.0, dense_weight: 1.0 });
        // 1 is first in dense and third in lexical; 3 is third and first: a tie, broken by id.
        assert_eq!(fused[0].0, 1);
        assert_eq!(fused[1].0, 3);
        assert!(fused.iter().position(|x| x.0 == 2) < fused.iter().position(|x| x.0 == 4).map(|p| p + 1));
    }

    #[test]
    fn a_single_candidate_is_not_normalised_to_zero() {
        let fused = fuse(&[(7, 0.4)], &[], Fusion::Weighted { dense_weight: 0.5 });
        assert_eq!(fused, vec![(7, 0.5)]);
    }

    #[test]
    fn weighted_fusion_normalises_each_list() {
        let dense = [(1, 0.9), (2, 0.1)];
        let lexical = [(2, 100.0), (1, 0.0)];
        let fused = fuse(&dense, &lexical, Fusion::Weighted { dense_weight: 0.7 });
        assert_eq!(fused[0].0, 1);
        assert!((fused[0].1 - 0.7).abs() < 1e-5);
        assert!((fused[1].1 - 0.3).abs() < 1e-5);
    }
}
