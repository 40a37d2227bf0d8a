//! The JSON every front door speaks, typed once (as rust-analyzer's `lsp/ext.rs` does).
//!
//! The CLI's `--json`, the language server's `raggrep.*` commands and the MCP tools all answer
//! with these types, so a hit looks the same wherever it is read. Each door fills only the
//! optional fields it can know: the language server adds `uri` and `range`, the MCP server
//! adds `stale` and its token accounting. The snapshot tests below pin the JSON: a contract
//! change shows up in review as a changed `.snap` file.
//!
//! No protocol types here (only `lsp/` knows LSP, only `mcp/` knows MCP): `range` has the JSON
//! shape of an LSP range but is a plain struct.
//!
//! Long on purpose: every type of the contract in one file, so a change to what the doors answer
//! is one diff; about 420 lines are its snapshot tests.

use serde::Serialize;

use crate::chunk::{ChunkKind, Definition};
pub use crate::index::IndexStats;
use crate::lang::Language;
use crate::search;
use crate::workspace::{Context, RootHit, RootStatus};

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// `path:start-end`, the citation form (1-based, inclusive lines).
    pub location: String,
    /// `location`'s parts, for programs (CLI, editors); left out where a model reads the
    /// response (MCP), which `location` already tells, to spend its tokens on code.
    /// Relative to its root, `/`-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// The line of the definition itself, where the hit's lines start with its imports,
    /// attributes or doc comment (absent when it is `start_line`): where a jump belongs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Qualified name of the definition the hit is (part of), if any.
    pub symbol: Option<String>,
    pub kind: ChunkKind,
    pub language: Language,
    /// Higher is better; comparable within one response only. Three decimals say all a score
    /// can say (f64: an f32 would print as 0.25600001215934753 once in a JSON value).
    pub score: f64,
    pub snippet: String,
    /// The root the path is relative to; set when a door serves several roots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The repository (`remote@branch`) the path is in: a hit of the team index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// The chunk's whole text, where the reader cannot open the file (team index hits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The file changed on disk since this hit was indexed (MCP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
    /// `file://` URI (language server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// The hit's whole lines as an LSP-shaped range: 0-based, end exclusive (language server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<LineRange>,
}

impl Hit {
    /// A hit of a workspace (servers); `with_root` when the door serves several roots.
    pub fn new(hit: &RootHit, with_root: bool) -> Hit {
        Hit { root: with_root.then(|| hit.root.display().to_string()), ..Hit::from_search(&hit.hit) }
    }

    /// A hit of one index (the CLI).
    pub fn from_search(h: &search::Hit) -> Hit {
        Hit {
            location: location(&h.path, h.start_line, h.end_line),
            path: Some(h.path.clone()),
            start_line: Some(h.start_line),
            end_line: Some(h.end_line),
            line: (h.line != h.start_line && h.line != 0).then_some(h.line),
            symbol: h.symbol.clone(),
            kind: h.kind,
            language: h.language,
            score: (f64::from(h.score) * 1000.0).round() / 1000.0,
            snippet: h.snippet.clone(),
            root: None,
            repo: None,
            text: None,
            stale: None,
            uri: None,
            range: None,
        }
    }
}

impl Hit {
    /// A hit of the team index (`query --from`).
    pub fn from_team(h: &crate::team::search::TeamHit) -> Hit {
        Hit { repo: Some(h.repo.clone()), text: Some(h.content.clone()), ..Hit::from_search(&h.hit) }
    }
}

impl Hit {
    /// For a model's context: `location` without its parts repeated.
    pub fn for_model(self) -> Hit {
        Hit { path: None, start_line: None, end_line: None, ..self }
    }
}

/// A range in LSP's JSON shape (0-based lines and UTF-16 columns, end exclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LineRange {
    pub start: Position,
    pub end: Position,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl LineRange {
    /// Whole lines `start_line..=end_line` (1-based): from the start of the first to the start
    /// of the line after the last, so no column arithmetic is needed.
    pub fn whole_lines(start_line: u32, end_line: u32) -> LineRange {
        LineRange {
            start: Position { line: start_line.saturating_sub(1), character: 0 },
            end: Position { line: end_line, character: 0 },
        }
    }
}

/// An error and its causes on one line, as every door says a failure: `context: cause: cause`.
/// A cause whose text its parent already shows (errors that print their source) is not repeated.
pub fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !parts.last().is_some_and(|previous| previous.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// `path:start-end`.
pub fn location(path: &str, start_line: u32, end_line: u32) -> String {
    format!("{path}:{start_line}-{end_line}")
}

/// Answer to a search (CLI `query --json`, `raggrep.search`, MCP `search`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResponse {
    pub query: String,
    pub took_ms: f64,
    /// Indexing is still running: dense ranking saw only part of the code.
    pub partial: bool,
    /// Why ranking is worse than usual (part of the index damaged or unavailable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    pub results: Vec<Hit>,
    #[serde(flatten)]
    pub budget: Option<Budget>,
    /// `k` was larger than a door allows and was lowered, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k_capped: Option<String>,
    /// The reranker that re-sorted the best results (a `rerank` search), by model id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranked_by: Option<String>,
    /// How likely the results hold the answer (default hybrid search only).
    #[serde(flatten)]
    pub confidence: Option<Confidence>,
    /// The team index's answer, when a door adds it as an extra source (the language server's
    /// `team` setting): ranked apart from `results`, whose scores it does not share.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<TeamSection>,
    /// The root whose index answered, absolute (the CLI's `query --json`: found from the
    /// directory it was started in, as git finds its repository; hit paths are relative to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// Results of the team index beside a local search: hits of other repositories (each with its
/// `repo`, and no `uri`: the file is not on this machine), or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeamSection {
    /// The database, password hidden.
    pub source: String,
    pub took_ms: f64,
    pub results: Vec<Hit>,
    /// The team index could not answer (down, misconfigured); the local results stand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SearchResponse {
    /// The engine's results as every door sends them (doors then add what they know).
    pub fn new(results: &search::SearchResults, hits: Vec<Hit>) -> SearchResponse {
        SearchResponse {
            query: results.query.clone(),
            took_ms: results.took_ms,
            partial: results.partial,
            degraded: results.degraded.clone(),
            results: hits,
            budget: None,
            k_capped: None,
            reranked_by: results.reranked_by.clone(),
            confidence: results.confidence.map(Confidence::from),
            team: None,
            root: None,
        }
    }
}

/// How likely a search's first results hold what was asked about: a probability calibrated on
/// training packages (`server/src/search/confidence.rs`), for the default hybrid ranking.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Confidence {
    /// Probability (0–1, three decimals) that the first 5 results hold the answer.
    pub confidence: f32,
    /// `confidence` is below the threshold fitted with it (`confidence.json`, 0.3): likely
    /// nothing here is what was asked about, and the results are only the least bad matches.
    pub no_confident_match: bool,
}

impl From<search::Confidence> for Confidence {
    fn from(c: search::Confidence) -> Confidence {
        Confidence { confidence: (c.value * 1000.0).round() / 1000.0, no_confident_match: !c.confident }
    }
}

/// Token accounting of a response sized for a model's context (MCP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// Estimated tokens of the response.
    pub tokens: usize,
    /// Results left out to stay within the budget.
    pub omitted: usize,
}

/// Answer to find-similar (`raggrep.findSimilar`, MCP `find_similar`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimilarResponse {
    /// What the results are similar to, widened to whole indexed units.
    pub source: Source,
    pub partial: bool,
    /// Why the ranking is worse than usual (as in a search response).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    pub results: Vec<Hit>,
    #[serde(flatten)]
    pub budget: Option<Budget>,
}

/// The code find-similar started from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// `path:start-end`, or `snippet` for pasted code.
    pub location: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<LineRange>,
}

impl Source {
    pub fn lines(path: &str, start_line: u32, end_line: u32) -> Source {
        Source {
            location: location(path, start_line, end_line),
            path: Some(path.to_string()),
            start_line: Some(start_line),
            end_line: Some(end_line),
            uri: None,
            range: None,
        }
    }

    pub fn snippet() -> Source {
        Source { location: "snippet".into(), path: None, start_line: None, end_line: None, uri: None, range: None }
    }
}

/// Answer to a context request (`raggrep.context`, MCP `context`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextResponse {
    /// The chunks, each headed by its citation, in fenced blocks.
    pub text: String,
    /// Estimated tokens of `text`.
    pub tokens: usize,
    /// The citations, in order.
    pub sources: Vec<String>,
    pub partial: bool,
    /// Why the retrieval was worse than usual (as in a search response).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    /// How likely the code holds the answer (as in a search response).
    #[serde(flatten)]
    pub confidence: Option<Confidence>,
}

impl ContextResponse {
    pub fn new(context: Context, partial: bool, degraded: Option<String>) -> ContextResponse {
        ContextResponse {
            text: context.text,
            tokens: context.tokens,
            sources: context.sources,
            partial,
            degraded,
            confidence: context.confidence.map(Confidence::from),
        }
    }
}

/// Status of every root a server serves (`raggrep.status`, MCP `status`).
#[derive(Debug, Clone, Serialize)]
pub struct StatusResponse {
    /// The first root's status, also at the top level for clients that show one root.
    #[serde(flatten)]
    pub primary: Option<RootStatus>,
    pub roots: Vec<RootStatus>,
}

impl StatusResponse {
    pub fn new(roots: Vec<RootStatus>) -> StatusResponse {
        StatusResponse { primary: roots.first().cloned(), roots }
    }
}

/// CLI `status --json` of an index that opens.
#[derive(Debug, Clone, Serialize)]
pub struct IndexStatus {
    #[serde(flatten)]
    pub index: IndexStats,
    /// The index was built with another model than queries now embed with (an upgrade changed
    /// the default, or `--model` named another): `raggrep query` refuses it until it is rebuilt.
    /// What to do, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_mismatch: Option<String>,
}

/// An index that failed its checks (CLI `status --json`); the next update rebuilds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Damaged {
    pub root: String,
    /// What is wrong, in words.
    pub damaged: String,
    pub fix: String,
}

/// A full update was queued for this many roots (`raggrep.reindex`, MCP `reindex`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Queued {
    pub queued: usize,
}

/// Whether indexing is paused (`raggrep.pause`, `raggrep.resume`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Paused {
    pub paused: bool,
}

/// Whether indexing is on for each root (`raggrep.toggle`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toggled {
    pub roots: Vec<RootEnabled>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootEnabled {
    pub root: String,
    pub enabled: bool,
}

/// The definitions of one file (MCP `outline`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outline {
    pub path: String,
    pub language: Language,
    pub definitions: Vec<OutlineEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutlineEntry {
    pub symbol: String,
    pub kind: ChunkKind,
    /// `start-end`, 1-based inclusive.
    pub lines: String,
}

impl From<Definition> for OutlineEntry {
    fn from(d: Definition) -> OutlineEntry {
        OutlineEntry { symbol: d.symbol, kind: d.kind, lines: format!("{}-{}", d.start_line, d.end_line) }
    }
}

/// Where a name is defined (MCP `find_symbol`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SymbolDefinitions {
    pub name: String,
    pub definitions: Vec<SymbolDefinition>,
    pub partial: bool,
    /// Definitions beyond the listed ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub omitted: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SymbolDefinition {
    pub location: String,
    /// The line of the definition itself, where `location`'s lines start with its imports,
    /// attributes or doc comment (absent when it is the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub symbol: String,
    pub kind: ChunkKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
}

/// A failure as one line, with what to do about it when there is something to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorBody {
    /// The question that failed, in batch answers (one answer per input line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Answer to the vector store's `store` and `import_file` (`raggrep db`, MCP `vector_db`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbStored {
    /// The row's UUID key.
    pub key: String,
    /// The embedding_text was stored before: value and embedding were replaced, the key kept.
    pub updated: bool,
    /// `import_file`: the file's canonical path (stored as the value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Answer to `raggrep ask --json`: the route taken, the answer (exact, or the LLM's), and the
/// sources it rests on. With `--prompt`, `prompt` instead of `answer`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AskAnswer {
    pub question: String,
    /// `outline`, `definition`, `members` (exact) or `retrieval` (snippets and an LLM).
    pub route: String,
    /// The file or name a structural route looked at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Why a structural route fell back to retrieval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Estimated tokens of the prompt (retrieval only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<usize>,
    pub sources: Vec<AskSource>,
    /// The model that answered, as its server names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `stop`, `length` …, as the server said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    pub took_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<f64>,
    /// Retrieval only: how likely the retrieved code holds the answer (as `query --json`).
    #[serde(flatten)]
    pub confidence: Option<Confidence>,
}

/// A source of an `ask` answer: `path:start-end`, and whether the LLM's answer cites it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AskSource {
    pub location: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ChunkKind>,
    /// Retrieval answers only: the answer mentions this source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cited: Option<bool>,
}

/// Answer to `retrieve`: the row's value, or `found: false` and a warning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbRetrieved {
    pub key: String,
    pub found: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl DbRetrieved {
    /// The answer to looking `key` up, found or not (every door words "not found" the same).
    pub fn new(key: String, found: Option<crate::vectordb::Found>) -> DbRetrieved {
        match found {
            Some(row) => DbRetrieved {
                key: row.key,
                found: true,
                value: row.value,
                embedding_text: row.embedding_text,
                warning: None,
            },
            None => DbRetrieved {
                warning: Some(format!("no row with key {key}")),
                key,
                found: false,
                value: None,
                embedding_text: None,
            },
        }
    }
}

/// Answer to `delete`: the key, and a warning when no row had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbDeleted {
    pub key: String,
    pub deleted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// One row of `list`, all fields as the seed lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbRow {
    pub key: String,
    pub embedding_text: Option<String>,
    pub value: Option<String>,
    pub embedding: Vec<f32>,
}

impl From<crate::vectordb::Row> for DbRow {
    fn from(r: crate::vectordb::Row) -> DbRow {
        DbRow { key: r.key, embedding_text: r.embedding_text, value: r.value, embedding: r.embedding }
    }
}

/// Answer to `list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbRows {
    pub rows: Vec<DbRow>,
    /// Rows in the database.
    pub total: u64,
    pub limit: u64,
    pub offset: u64,
}

/// One result of `search`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbHit {
    pub key: String,
    pub embedding_text: Option<String>,
    pub value: Option<String>,
    /// Cosine distance: 0 is the same direction, lower is closer (the seed's scale), rounded to
    /// four decimals as the seed's example shows it.
    pub score: f64,
}

impl From<crate::vectordb::Hit> for DbHit {
    fn from(h: crate::vectordb::Hit) -> DbHit {
        DbHit {
            key: h.key,
            embedding_text: h.embedding_text,
            value: h.value,
            score: (f64::from(h.score) * 10_000.0).round() / 10_000.0,
        }
    }
}

/// Answer to `search`: results closest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DbSearchResponse {
    pub query: String,
    pub results: Vec<DbHit>,
    pub took_ms: f64,
}

/// Answer to `set_database`: the database now in use for the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbDatabase {
    pub database: String,
    pub rows: u64,
    /// Rows given a key when it was opened (the seed's migration note), when there were any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migrated: Option<usize>,
}

/// `90` → `1m30s`: durations as people read them (progress messages of every door).
pub fn human_duration(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Answer to `raggrep log --json` and MCP `search_history`: the commits that answer, best first
/// (newest first without a question).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryResponse {
    /// The question; absent when the commits are listed by date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub took_ms: f64,
    /// Commits in the history index.
    pub commits: usize,
    /// A shallow clone: commits before its boundary are missing.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shallow: bool,
    /// Why the answer is worse than usual (no model: words only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
    pub results: Vec<HistoryHit>,
}

/// One commit of a history answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistoryHit {
    /// The full commit id.
    pub commit: String,
    /// Author date, `YYYY-MM-DD` (UTC).
    pub date: String,
    pub author: String,
    pub subject: String,
    /// Paths it changed (the first ten; `more_files` counts the rest).
    pub files: Vec<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub more_files: usize,
    /// Definitions whose lines it changed.
    pub symbols: Vec<String>,
    /// A merge (its change is what it brought to its first parent).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub merge: bool,
    /// How well it answers the question (0-1, comparable within one answer); absent when listed
    /// by date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn root_hit() -> RootHit {
        RootHit {
            root: PathBuf::from("/work/app"),
            hit: search::Hit {
                path: "src/auth/token.rs".into(),
                start_line: 12,
                end_line: 30,
                line: 12,
                score: 0.734_56,
                symbol: Some("TokenValidator::validate".into()),
                kind: ChunkKind::Method,
                language: Language::Rust,
                snippet: "pub fn validate(&self, token: &str) -> Result<Claims> {".into(),
                chunk: 7,
            },
        }
    }

    #[test]
    fn search_response_as_the_cli_sends_it() {
        let response = SearchResponse {
            query: "where are API tokens validated".into(),
            took_ms: 4.2,
            partial: false,
            degraded: None,
            results: vec![Hit::new(&root_hit(), false)],
            budget: None,
            k_capped: None,
            reranked_by: None,
            confidence: Some(Confidence { confidence: 0.874, no_confident_match: false }),
            team: None,
            root: Some("/home/dev/project".into()),
        };
        insta::assert_json_snapshot!(response);
    }

    #[test]
    fn search_response_reranked() {
        let response = SearchResponse {
            query: "where are API tokens validated".into(),
            took_ms: 181.5,
            partial: false,
            degraded: None,
            results: vec![Hit::new(&root_hit(), false)],
            budget: None,
            k_capped: None,
            reranked_by: Some("all-minilm-l6-v2-rerank-int8".into()),
            confidence: Some(Confidence { confidence: 0.874, no_confident_match: false }),
            team: None,
            root: None,
        };
        insta::assert_json_snapshot!(response);
    }

    #[test]
    fn search_response_from_the_team_index() {
        let hit = crate::team::search::TeamHit {
            repo: "github.com/acme/api@main".into(),
            hit: root_hit().hit,
            content: "pub fn validate(&self, token: &str) -> Result<Claims> {\n    self.check(token)\n}\n".into(),
        };
        let response = SearchResponse {
            query: "where are API tokens validated".into(),
            took_ms: 4.2,
            partial: false,
            degraded: None,
            results: vec![Hit::from_team(&hit)],
            budget: None,
            k_capped: None,
            reranked_by: None,
            confidence: None,
            team: None,
            root: None,
        };
        insta::assert_json_snapshot!(response);
    }

    #[test]
    fn search_response_as_the_language_server_sends_it() {
        let mut hit = Hit::new(&root_hit(), true);
        hit.uri = Some("file:///work/app/src/auth/token.rs".into());
        hit.range = Some(LineRange::whole_lines(12, 30));
        let response = SearchResponse {
            query: "validate token".into(),
            took_ms: 3.0,
            partial: true,
            degraded: Some("the vector file failed its checksum: lexical results only".into()),
            results: vec![hit],
            budget: None,
            k_capped: None,
            reranked_by: None,
            confidence: Some(Confidence { confidence: 0.213, no_confident_match: true }),
            team: None,
            root: None,
        };
        insta::assert_json_snapshot!(response);
    }

    #[test]
    fn search_response_with_the_team_index_as_an_extra_source() {
        let mut local = Hit::new(&root_hit(), true);
        local.uri = Some("file:///work/app/src/auth/token.rs".into());
        local.range = Some(LineRange::whole_lines(12, 30));
        let team_hit = crate::team::search::TeamHit {
            repo: "github.com/acme/billing@main".into(),
            hit: root_hit().hit,
            content: "pub fn validate(&self, token: &str) -> Result<Claims> {\n    self.check(token)\n}\n".into(),
        };
        let response = SearchResponse {
            query: "validate token".into(),
            took_ms: 3.0,
            partial: false,
            degraded: None,
            results: vec![local],
            budget: None,
            k_capped: None,
            reranked_by: None,
            confidence: Some(Confidence { confidence: 0.874, no_confident_match: false }),
            team: Some(TeamSection {
                source: "postgres://dev:***@db.internal/code".into(),
                took_ms: 18.5,
                results: vec![Hit::from_team(&team_hit)],
                error: None,
            }),
            root: None,
        };
        insta::assert_json_snapshot!(response);
        let down = TeamSection {
            source: "postgres://dev@db.internal/code".into(),
            took_ms: 0.1,
            results: Vec::new(),
            error: Some("cannot connect to the team index at postgres://dev@db.internal/code: connection refused (trying again in 29 s)".into()),
        };
        insta::assert_json_snapshot!("team_section_unavailable", down);
    }

    #[test]
    fn search_response_as_the_mcp_server_sends_it() {
        let mut hit = Hit::new(&root_hit(), false).for_model();
        hit.stale = Some(false);
        let response = SearchResponse {
            query: "validate token".into(),
            took_ms: 2.5,
            partial: false,
            degraded: None,
            results: vec![hit],
            budget: Some(Budget { tokens: 61, omitted: 3 }),
            k_capped: Some("k 500 was capped at 100".into()),
            reranked_by: None,
            confidence: Some(Confidence { confidence: 0.612, no_confident_match: false }),
            team: None,
            root: None,
        };
        insta::assert_json_snapshot!(response);
    }

    #[test]
    fn similar_responses() {
        let mut from_range = SimilarResponse {
            source: Source::lines("src/auth/token.rs", 10, 31),
            partial: false,
            degraded: None,
            results: vec![Hit::new(&root_hit(), false)],
            budget: None,
        };
        from_range.source.uri = Some("file:///work/app/src/auth/token.rs".into());
        from_range.source.range = Some(LineRange::whole_lines(10, 31));
        insta::assert_json_snapshot!("similar_from_range", from_range);
        let from_snippet = SimilarResponse {
            source: Source::snippet(),
            partial: true,
            degraded: None,
            results: Vec::new(),
            budget: Some(Budget { tokens: 20, omitted: 0 }),
        };
        insta::assert_json_snapshot!("similar_from_snippet", from_snippet);
    }

    #[test]
    fn context_response() {
        let context = Context {
            text: "```rust\n// src/auth/token.rs:12-30\npub fn validate() {}\n```\n".into(),
            tokens: 17,
            sources: vec!["src/auth/token.rs:12-30".into()],
            confidence: Some(search::Confidence { value: 0.87364, confident: true, logit: 1.93 }),
        };
        insta::assert_json_snapshot!(ContextResponse::new(context, false, None));
    }

    #[test]
    fn small_answers() {
        insta::assert_json_snapshot!("queued", Queued { queued: 2 });
        insta::assert_json_snapshot!("paused", Paused { paused: true });
        insta::assert_json_snapshot!(
            "toggled",
            Toggled { roots: vec![RootEnabled { root: "/work/app".into(), enabled: false }] }
        );
        insta::assert_json_snapshot!(
            "error",
            ErrorBody {
                query: None,
                error: "index at /work/app/.raggrep is damaged: manifest checksum mismatch".into(),
                fix: Some("run `raggrep index /work/app` to rebuild it".into()),
            }
        );
    }

    #[test]
    fn history_answers() {
        let hit = HistoryHit {
            commit: "3a4d330a94dc13387ead85a82af3659df6a7d2cc".into(),
            date: "2024-03-01".into(),
            author: "Tess".into(),
            subject: "Drop the proxy credentials when a request is redirected to another host".into(),
            files: vec!["src/sessions.py".into()],
            more_files: 0,
            symbols: vec!["rebuild_proxies".into()],
            merge: false,
            score: Some(0.912),
        };
        let merge = HistoryHit {
            commit: "9f1c2e7b5d3a4c6e8f0a1b2c3d4e5f6a7b8c9d0e".into(),
            subject: "Merge pull request #12 from tess/retry".into(),
            files: (0..10).map(|i| format!("src/part{i}.py")).collect(),
            more_files: 3,
            symbols: Vec::new(),
            merge: true,
            score: Some(0.5),
            ..hit.clone()
        };
        insta::assert_json_snapshot!(
            "history",
            HistoryResponse {
                query: Some("proxy authorization leaks on redirect".into()),
                took_ms: 12.5,
                commits: 6489,
                shallow: false,
                degraded: None,
                results: vec![hit.clone(), merge],
            }
        );
        insta::assert_json_snapshot!(
            "history_by_date_in_a_shallow_clone_without_a_model",
            HistoryResponse {
                query: None,
                took_ms: 3.0,
                commits: 1,
                shallow: true,
                degraded: Some("searched by words only: no model".into()),
                results: vec![HistoryHit { score: None, ..hit }],
            }
        );
    }

    #[test]
    fn vector_store_answers() {
        let key = "1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b".to_string();
        insta::assert_json_snapshot!("db_stored", DbStored { key: key.clone(), updated: false, path: None });
        insta::assert_json_snapshot!(
            "db_imported",
            DbStored { key: key.clone(), updated: true, path: Some("/work/app/notes/a.md".into()) }
        );
        insta::assert_json_snapshot!(
            "db_retrieved",
            DbRetrieved {
                key: key.clone(),
                found: true,
                value: Some("fruit company / hardware vendor".into()),
                embedding_text: Some("apple computer".into()),
                warning: None,
            }
        );
        insta::assert_json_snapshot!(
            "db_not_found",
            DbRetrieved {
                key: key.clone(),
                found: false,
                value: None,
                embedding_text: None,
                warning: Some(format!("no row with key {key}")),
            }
        );
        insta::assert_json_snapshot!(
            "db_deleted",
            DbDeleted { key: key.clone(), deleted: false, warning: Some(format!("no row with key {key}")) }
        );
        let row = crate::vectordb::Row {
            key: key.clone(),
            embedding_text: Some("apple computer".into()),
            value: Some("fruit company / hardware vendor".into()),
            embedding: vec![0.6, -0.8],
        };
        insta::assert_json_snapshot!("db_rows", DbRows { rows: vec![row.into()], total: 3, limit: 1, offset: 0 });
        let hit = crate::vectordb::Hit {
            key,
            embedding_text: Some("apple computer".into()),
            value: Some("fruit company / hardware vendor".into()),
            score: 0.123_456_7,
        };
        insta::assert_json_snapshot!(
            "db_search",
            DbSearchResponse { query: "fruit drink".into(), results: vec![hit.into()], took_ms: 12.5 }
        );
        insta::assert_json_snapshot!(
            "db_database",
            DbDatabase { database: "/work/app/.raggrep/vectordb.sqlite".into(), rows: 3, migrated: Some(2) }
        );
    }

    fn stats() -> IndexStats {
        IndexStats {
            root: "/work/app".into(),
            index_dir: "/work/app/.raggrep".into(),
            generation: 7,
            files: 120,
            chunks: 900,
            embedded: 850,
            pending: 50,
            code_pending: 20,
            skipped: 3,
            model: "all-minilm-l6-v2-int8".into(),
            dim: 384,
            vectors: 860,
            vector_encoding: crate::index::VectorEncoding::F32,
            dead_vectors: 10,
            ann_slots: 850,
            lexical_docs: 900,
            bytes_on_disk: 2_400_000,
            memory_estimate_bytes: 1_900_000,
            updated_unix_ms: 1_795_000_000_000,
        }
    }

    #[test]
    fn status_answers() {
        insta::assert_json_snapshot!("index_stats", stats());
        let status = StatusResponse::new(vec![RootStatus {
            index: Some(IndexStats { root: String::new(), ..stats() }),
            root: "/work/app".into(),
            index_root: None,
            enabled: true,
            indexing: true,
            partial: true,
            last_error: None,
            memory_level: crate::workspace::MemoryLevel::Ok,
            reason: None,
        }]);
        insta::assert_json_snapshot!("status", status);
        // A workspace folder inside an indexed project: the project's index, named.
        let folder = StatusResponse::new(vec![RootStatus {
            index: Some(IndexStats { root: String::new(), ..stats() }),
            root: "/work/app/docs".into(),
            index_root: Some("/work/app".into()),
            enabled: true,
            indexing: false,
            partial: false,
            last_error: None,
            memory_level: crate::workspace::MemoryLevel::Ok,
            reason: None,
        }]);
        insta::assert_json_snapshot!("status_of_a_folder_inside_a_project", folder.roots);
        insta::assert_json_snapshot!(
            "index_status_of_another_model",
            IndexStatus {
                index: stats(),
                model_mismatch: Some(
                    "queries embed with all-minilm-l6-v2-code2-int8: `raggrep query` refuses this index until \
                     `raggrep index` rebuilds it (or pass --model all-minilm-l6-v2-int8; `--mode lexical` searches its words meanwhile)"
                        .into()
                ),
            }
        );
        insta::assert_json_snapshot!(
            "damaged",
            Damaged {
                root: "/work/app".into(),
                damaged: "manifest checksum mismatch".into(),
                fix: "`raggrep index` rebuilds it".into(),
            }
        );
    }

    #[test]
    fn structure_answers() {
        let outline = Outline {
            path: "src/auth/token.rs".into(),
            language: Language::Rust,
            definitions: vec![
                Definition { kind: ChunkKind::Struct, symbol: "TokenValidator".into(), start_line: 3, end_line: 8 }
                    .into(),
            ],
        };
        insta::assert_json_snapshot!("outline", outline);
        let symbols = SymbolDefinitions {
            name: "validate".into(),
            definitions: vec![SymbolDefinition {
                location: "src/auth/token.rs:12-30".into(),
                line: Some(14),
                symbol: "TokenValidator::validate".into(),
                kind: ChunkKind::Method,
                root: None,
            }],
            partial: false,
            omitted: Some(4),
        };
        insta::assert_json_snapshot!("symbols", symbols);
    }

    #[test]
    fn ask_answers_keep_their_shape() {
        let exact = AskAnswer {
            question: "where is `parse_config` defined?".into(),
            route: "definition".into(),
            target: Some("parse_config".into()),
            fallback: None,
            answer: Some(
                "`parse_config` is defined in 1 place:\n  function parse_config  src/config.rs:12-40\n".into(),
            ),
            prompt: None,
            prompt_tokens: None,
            sources: vec![AskSource {
                location: "src/config.rs:12-40".into(),
                symbol: Some("parse_config".into()),
                kind: Some(ChunkKind::Function),
                cited: None,
            }],
            model: None,
            finish_reason: None,
            took_ms: 3.5,
            first_token_ms: None,
            confidence: None,
        };
        insta::assert_json_snapshot!("ask_exact", exact);
        let retrieved = AskAnswer {
            question: "what does `Nope` contain?".into(),
            route: "retrieval".into(),
            target: None,
            fallback: Some("no definition named `Nope` in the index".into()),
            answer: Some("Tokens are checked in src/auth.rs:3-9.".into()),
            prompt_tokens: Some(412),
            sources: vec![AskSource {
                location: "src/auth.rs:3-9".into(),
                symbol: Some("validate".into()),
                kind: Some(ChunkKind::Function),
                cited: Some(true),
            }],
            model: Some("SmolLM2-135M-Instruct".into()),
            finish_reason: Some("stop".into()),
            first_token_ms: Some(120.0),
            confidence: Some(Confidence { confidence: 0.874, no_confident_match: false }),
            ..exact
        };
        insta::assert_json_snapshot!("ask_retrieval", retrieved);
    }

    #[test]
    fn durations_read_like_people_say_them() {
        assert_eq!(human_duration(0.4), "0s");
        assert_eq!(human_duration(59.4), "59s");
        assert_eq!(human_duration(90.0), "1m30s");
        assert_eq!(human_duration(f64::from(3 * 3600 + 120)), "3h02m");
    }
}
