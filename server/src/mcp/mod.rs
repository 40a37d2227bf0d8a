//! The MCP server (`raggrep mcp`): a front door for coding agents over
//! [`crate::engine::Workspace`], speaking the Model Context Protocol on stdio (rmcp).
//!
//! Only this module knows MCP types. Like the language server it runs engine work off the async
//! executor (`spawn_blocking`, so a panic becomes a tool error, not a dead server) and indexes
//! on the workspace's own thread; unlike an editor, an agent sends no didSave, so the roots are
//! watched ([`crate::watch`]). Every path an agent sends is confined to the roots (`confine.rs`).
//! Every failure is a tool result with `isError` and one line saying why: a model can read it
//! and retry, where a protocol error often ends its turn.

mod confine;
mod http;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::engine::Language;
use crate::engine::{Assets, OnnxEmbedder};
use crate::engine::{ChunkConfig, estimate_tokens, outline};
use crate::engine::{Events, Found, MemoryLevel, ProjectConfig, RootHit, Settings, Workspace};
use crate::engine::{Mode, Query};
use crate::engine::{Progress, UpdateStats};
use crate::{symbols, wire};

/// Results per call when `k` is not given.
const DEFAULT_K: u64 = 10;
/// Most results per call: more than a model can use, and `k` comes from the model.
const MAX_K: u64 = 100;
/// Default response budget in estimated tokens (peers' users hit 25k-token answers).
const DEFAULT_MAX_TOKENS: u64 = 2_000;
/// Largest response budget a call may ask for.
const MAX_MAX_TOKENS: u64 = 50_000;
/// Most definitions `find_symbol` lists.
const MAX_SYMBOLS: usize = 50;

/// What `raggrep mcp` needs from the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Workspace roots (the current directory when empty).
    pub roots: Vec<PathBuf>,
    pub model: Option<String>,
    pub ort_dylib: Option<PathBuf>,
    /// Serve Streamable HTTP on this loopback address instead of stdio.
    pub http: Option<std::net::SocketAddr>,
}

/// Runs the MCP server on stdin/stdout until the client closes stdin, or with `--http` on a
/// loopback address until SIGINT/SIGTERM. Returns the exit code.
pub fn run(options: Options) -> i32 {
    if let Some(Err(message)) = options.http.as_ref().map(http::check_loopback) {
        tracing::error!("{message}");
        return 2;
    }
    let protocol_out = match crate::stdio::protect_stdout() {
        Ok(out) => out,
        Err(err) => {
            tracing::error!("cannot set up stdout: {err}");
            return 2;
        }
    };
    let roots = if options.roots.is_empty() { vec![PathBuf::from(".")] } else { options.roots.clone() };
    // Said before the model loads: a wrong root is the likelier mistake in a host's config.
    if let Some(root) = roots.iter().find(|r| !r.is_dir()) {
        tracing::error!("{}: not a directory", root.display());
        return 2;
    }
    let loaded = Assets::locate(options.model.as_deref(), options.ort_dylib.as_deref())
        .map_err(anyhow::Error::from)
        .and_then(|assets| Ok(OnnxEmbedder::load(assets, Settings::default().embed_options())?));
    // Without its model the server still starts: an agent's host often shows nothing of a server
    // that exits, while every tool answering with the cause and its fix reaches the agent.
    let workspace: Result<Arc<Workspace>, Arc<str>> = match loaded {
        Ok(embedder) => {
            let workspace = Workspace::new(Arc::new(embedder), Settings::default(), Arc::new(LogEvents));
            workspace.set_door(crate::audit::Door::Mcp);
            for root in &roots {
                // The agent's host named these roots: index them unless the project said "never".
                let added = crate::engine::FolderIndex::of(root).and_then(|folder| {
                    let index = ProjectConfig::load(&folder.location).enabled != Some(false);
                    workspace.add_folder(folder, index).map(|()| index)
                });
                let index = match added {
                    Ok(index) => index,
                    Err(err) => {
                        tracing::error!("cannot open {}: {err}", root.display());
                        workspace.shutdown();
                        return 2;
                    }
                };
                if !index {
                    tracing::warn!("{}: indexing is turned off in .raggrep/config.toml", root.display());
                }
            }
            Ok(workspace)
        }
        Err(err) => {
            let why = format!("cannot load the embedding model: {}", wire::one_line(&err));
            tracing::error!("{why} (every tool answers with this until the server is restarted)");
            Err(why.into())
        }
    };
    let watcher =
        workspace.as_ref().ok().and_then(|workspace| match crate::watch::start(workspace, &workspace.roots()) {
            Ok(watcher) => Some(watcher),
            Err(err) => {
                tracing::warn!("cannot watch the roots ({err}): files changed on disk are picked up only by reindex");
                None
            }
        });
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!("cannot start the async runtime: {err}");
            return 2;
        }
    };
    let store_model =
        Arc::new(crate::vectordb::StoreModel::new(options.model.as_deref(), options.ort_dylib.as_deref()));
    let server = RaggrepMcp::new(workspace.clone(), store_model);
    let served = match options.http {
        None => runtime.block_on(async move {
            let service = server.serve((tokio::io::stdin(), protocol_out)).await?;
            service.waiting().await?;
            anyhow::Ok(())
        }),
        Some(addr) => runtime.block_on(async move {
            let stop = tokio_util::sync::CancellationToken::new();
            tokio::spawn(stop_on_signal(stop.clone()));
            http::serve(server, addr, stop, |bound| {
                // The one line a user (or a test with port 0) needs; stdout stays quiet.
                use std::io::Write;
                let _ = writeln!(std::io::stderr(), "raggrep mcp: serving http://{bound}{}", http::ENDPOINT);
            })
            .await
            .map_err(|err| anyhow::anyhow!("cannot serve on {addr}: {err}"))
        }),
    };
    drop(watcher);
    if let Ok(workspace) = &workspace {
        workspace.shutdown();
    }
    // Reading stdin occupies a blocking thread that never returns on its own.
    runtime.shutdown_background();
    match served {
        Ok(()) => 0,
        Err(err) => {
            tracing::error!("MCP session ended with an error: {err:#}");
            1
        }
    }
}

/// Cancels `stop` on SIGINT or SIGTERM: how an HTTP server is told to finish. The handlers are
/// registered when this is called, not when the returned future first runs: the server prints
/// its address right after, and a signal sent the moment that line appears must not meet the
/// default action (the process dies at once, nothing shut down).
fn stop_on_signal(stop: tokio_util::sync::CancellationToken) -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let interrupt = signal(SignalKind::interrupt());
    let terminate = signal(SignalKind::terminate());
    async move {
        tokio::select! {
            () = received(interrupt, "SIGINT") => {}
            () = received(terminate, "SIGTERM") => {}
        }
        stop.cancel();
    }
}

/// Resolves when the signal arrives; never, if it cannot be listened for (said in the log).
async fn received(signal: std::io::Result<tokio::signal::unix::Signal>, name: &str) {
    match signal {
        Ok(mut signal) => {
            signal.recv().await;
        }
        Err(err) => {
            tracing::warn!("cannot listen for {name} ({err}): it will not stop the server");
            std::future::pending::<()>().await;
        }
    }
}

/// Indexing events go to the log (stderr): MCP has no progress channel without a request.
struct LogEvents;

impl Events for LogEvents {
    fn progress(&self, root: &Path, progress: &Progress) {
        tracing::debug!(root = %root.display(), "{progress:?}");
    }
    fn updated(&self, root: &Path, stats: &UpdateStats) {
        tracing::info!(
            root = %root.display(),
            "indexed: {} files, {} chunks ({} embedded, {} reused) in {:.1}s",
            stats.files,
            stats.chunks,
            stats.embedded,
            stats.reused,
            stats.seconds
        );
    }
    fn failed(&self, root: &Path, message: &str) {
        tracing::warn!(root = %root.display(), "indexing failed: {message}");
    }
    fn memory(&self, level: MemoryLevel, used_mb: u64, budget_mb: u64) {
        tracing::warn!("memory {level:?}: {used_mb} of {budget_mb} MB");
    }
}

/// An optional argument's schema: its plain type (no `null` union, which some hosts reject) and
/// no `"default": null` (the description says what leaving it out means).
fn optional_argument(schema: &mut schemars::Schema) {
    schema.remove("default");
}

/// Some clients send `null` for an argument they leave out.
fn null_as_default<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Ranking of `search`.
#[derive(Debug, Clone, Copy, Default, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum SearchMode {
    /// Meaning and keywords fused (best for most queries).
    #[default]
    Hybrid,
    /// Meaning only (embeddings): descriptions in words.
    Dense,
    /// Keywords only (BM25 over code-aware tokens): exact identifiers.
    Lexical,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// What to look for: a description in words ("check whether an API token is still valid") or identifiers ("validate_token").
    pub query: String,
    /// How many results at most (1-100, default 10; larger values are capped at 100).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub k: Option<u64>,
    /// Ranking: "hybrid" (default: meaning + keywords), "dense" (meaning only) or "lexical" (keywords only).
    #[serde(default, deserialize_with = "null_as_default")]
    pub mode: SearchMode,
    /// Only files whose path relative to a workspace root matches this glob, e.g. "src/**/*.py".
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub path: Option<String>,
    /// Only this language: rust, python, javascript, typescript, tsx, go, java, c, cpp, ruby, php, csharp, kotlin, swift, scala, elixir, lua, bash, zig, haskell, dart, objc, ocaml, r, julia, yaml, toml, json, markdown or text.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub lang: Option<String>,
    /// Budget for the whole response in estimated tokens (default 2000, at most 50000): hits past it are left out and counted in "omitted".
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub max_tokens: Option<u64>,
    /// Re-sort the best 10 candidates with the reranker, which reads the query and each candidate together (hybrid mode only; default false): finds the right function more often, ~0.2 s slower.
    #[serde(default, deserialize_with = "null_as_default")]
    pub rerank: bool,
    /// Leave out hits scoring below this. In hybrid mode a hit's score is the probability that it is what was asked about: 0.01 leaves out about a third of the hits (two thirds when nothing here matches) and about 1 in 20 answers; dense: cosine; lexical: BM25.
    #[serde(default)]
    #[schemars(with = "f64", transform = optional_argument)]
    pub min_score: Option<f64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindSimilarArgs {
    /// File holding the code to compare with, relative to a workspace root (or absolute inside one). Give start_line and end_line with it; leave it out when giving code.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub path: Option<String>,
    /// First line of the code in path (1-based).
    #[serde(default)]
    #[schemars(with = "u32", transform = optional_argument)]
    pub start_line: Option<u32>,
    /// Last line of the code in path (1-based, inclusive).
    #[serde(default)]
    #[schemars(with = "u32", transform = optional_argument)]
    pub end_line: Option<u32>,
    /// A code snippet to find similar code for, instead of path and lines.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub code: Option<String>,
    /// How many results at most (1-100, default 10; larger values are capped at 100).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub k: Option<u64>,
    /// Budget for the whole response in estimated tokens (default 2000, at most 50000).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// The question the code should answer, in words.
    pub question: String,
    /// Budget for the returned code in estimated tokens (default 2000, at most 50000).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub max_tokens: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutlineArgs {
    /// File to outline, relative to a workspace root (or absolute inside one).
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindSymbolArgs {
    /// Name of a function, method, class, struct, … ("validate_token"), or its qualified name ("TokenStore.issue", "Shard::open"). Exact, case-sensitive.
    pub name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct VectorDbArgs {
    /// What to do: store (embedding_text + value; returns a new UUID key, or the existing key when the same embedding_text is stored again), retrieve (key), delete (key), list (limit?, offset?), search (query, topK?), import_file (filepath) or set_database (filename).
    pub action: String,
    /// store: the text to embed and store.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub embedding_text: Option<String>,
    /// store: the value to keep with it.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub value: Option<String>,
    /// retrieve, delete: the row's UUID key.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub key: Option<String>,
    /// list: rows at most (default 50).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub limit: Option<u64>,
    /// list: rows to skip (default 0).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub offset: Option<u64>,
    /// search: the text to find similar rows for.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub query: Option<String>,
    /// search: number of results (default 5).
    #[serde(default, rename = "topK")]
    #[schemars(with = "u64", transform = optional_argument)]
    pub top_k: Option<u64>,
    /// import_file: a text file inside the workspace (relative to a root, or absolute inside one); its contents are embedded, its path is the value.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub filepath: Option<String>,
    /// set_database: the SQLite file to use from now on, inside the workspace (relative paths are relative to the first root); created if missing.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub filename: Option<String>,
}

/// A required argument of a `vector_db` action.
fn required<T>(value: Option<T>, name: &str, action: &str) -> Result<T, String> {
    value.ok_or_else(|| format!("{action} needs {name}"))
}

/// A `vector_db` failure: `isError`, the one line as text (what a model reads) and the wire
/// contract's error body as structured content (what a program reads).
fn vector_db_failure(message: String) -> CallToolResult {
    let body = wire::ErrorBody { query: None, error: message.clone(), fix: None };
    match serde_json::to_value(body) {
        Ok(value) => {
            let mut result = CallToolResult::structured_error(value);
            result.content = vec![ContentBlock::text(message)];
            result
        }
        Err(_) => failure(message),
    }
}

impl VectorDbArgs {
    /// The action the arguments ask for; paths relative to the first root that has them, and a
    /// new database file confined to the roots, as every path an agent sends.
    fn action(self, roots: &[PathBuf]) -> Result<crate::vectordb::Action, String> {
        use crate::vectordb::{Action, VectorDbError};
        let action = self.action.trim().to_string();
        Ok(match action.as_str() {
            "store" => Action::Store {
                embedding_text: required(self.embedding_text, "embedding_text", &action)?,
                value: required(self.value, "value", &action)?,
            },
            "retrieve" => Action::Retrieve { key: required(self.key, "key", &action)? },
            "delete" => Action::Delete { key: required(self.key, "key", &action)? },
            "list" => Action::List {
                limit: self.limit.unwrap_or(crate::vectordb::DEFAULT_LIMIT),
                offset: self.offset.unwrap_or(0),
            },
            "search" => Action::Search {
                query: required(self.query, "query", &action)?,
                top_k: self.top_k.unwrap_or(crate::vectordb::DEFAULT_TOP_K),
            },
            "import_file" => {
                let given = required(self.filepath, "filepath", &action)?;
                Action::ImportFile {
                    path: Action::path(&given, |given| -> Result<PathBuf, String> {
                        Ok(if given.is_absolute() {
                            given.to_path_buf()
                        } else {
                            let first = roots.first().map(|root| root.join(given)).unwrap_or_default();
                            roots.iter().map(|r| r.join(given)).find(|p| p.exists()).unwrap_or(first)
                        })
                    })?,
                }
            }
            "set_database" => {
                let given = required(self.filename, "filename", &action)?;
                // The agent chooses a file to write: it stays inside the roots.
                Action::SetDatabase {
                    path: Action::path(&given, |given| confine::resolve_new_file(roots, &given.to_string_lossy()))?,
                }
            }
            other => return Err(VectorDbError::UnknownAction(other.to_string()).to_string()),
        })
    }
}

/// The `vector_db` tool: the arguments as an action run by the engine (`crate::vectordb::run`)
/// on the database of the first root's index directory (as `raggrep db` finds it).
fn vector_db(
    ws: &Workspace,
    store_model: &crate::vectordb::StoreModel,
    args: VectorDbArgs,
) -> Result<CallToolResult, String> {
    use crate::vectordb::Answer;
    let roots = ws.roots();
    let Some(first) = roots.first() else { return Err("no workspace root".into()) };
    let dir = crate::engine::FolderIndex::of(first).map_err(|e| e.to_string())?.location.dir;
    let action = args.action(&roots)?;
    let target = crate::vectordb::Target { index_dir: &dir, database: None, roots: &roots };
    let outcome =
        crate::vectordb::run(action, &target, store_model, crate::audit::Door::Mcp).map_err(|e| e.to_string())?;
    let encode = |e: serde_json::Error| format!("cannot encode the answer: {e}");
    // `list` and `search` as seed 002 answers them: the text (what a model reads) is the JSON
    // array itself; the structured content, which must be an object, holds it with the rest
    // (total, paging, query, time).
    let seed_array = |array: serde_json::Result<String>, structured: serde_json::Result<serde_json::Value>| {
        let mut result = CallToolResult::structured(structured.map_err(encode)?);
        result.content = vec![ContentBlock::text(array.map_err(encode)?)];
        Ok(result)
    };
    match outcome.answer {
        Answer::Rows(rows) => seed_array(serde_json::to_string(&rows.rows), serde_json::to_value(rows)),
        Answer::Hits(hits) => seed_array(serde_json::to_string(&hits.results), serde_json::to_value(hits)),
        answer => serde_json::to_value(answer).map(CallToolResult::structured).map_err(encode),
    }
}

/// The MCP server: tools over one live workspace.
#[derive(Clone)]
pub struct RaggrepMcp {
    /// The workspace, or why there is none (the model could not be loaded), with its fix.
    workspace: Result<Arc<Workspace>, Arc<str>>,
    /// The `vector_db` tool's model (all-MiniLM-L6-v2 itself unless one was named), shared by
    /// every session and loaded on the tool's first use.
    store_model: Arc<crate::vectordb::StoreModel>,
    tool_router: ToolRouter<RaggrepMcp>,
}

/// A tool failure: an `isError` result with one line of text.
fn failure(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// A tool's answer: one of the wire types, as structured content.
fn success(value: impl serde::Serialize) -> CallToolResult {
    match serde_json::to_value(value) {
        Ok(value) => CallToolResult::structured(value),
        Err(err) => failure(format!("cannot encode the answer: {err}")),
    }
}

/// `k` from the model: 0 is refused, anything above [`MAX_K`] is capped (and said so).
fn check_k(k: Option<u64>) -> Result<(usize, Option<u64>), String> {
    match k {
        Some(0) => Err("k must be at least 1".into()),
        Some(k) if k > MAX_K => Ok((MAX_K as usize, Some(k))),
        Some(k) => Ok((k as usize, None)),
        None => Ok((DEFAULT_K as usize, None)),
    }
}

fn check_budget(max_tokens: Option<u64>) -> Result<usize, String> {
    match max_tokens {
        Some(0) => Err("max_tokens must be at least 1".into()),
        Some(t) => Ok(t.min(MAX_MAX_TOKENS) as usize),
        None => Ok(DEFAULT_MAX_TOKENS as usize),
    }
}

/// Hits as the model sees them, added while the response stays within `budget` tokens
/// (`overhead`: the tokens of the rest of the response).
fn budgeted_hits(
    workspace: &Workspace,
    hits: &[RootHit],
    budget: usize,
    overhead: usize,
) -> (Vec<wire::Hit>, wire::Budget) {
    let several_roots = workspace.roots().len() > 1;
    let mut out = Vec::new();
    let mut tokens = overhead;
    for hit in hits {
        let mut value = wire::Hit::new(hit, several_roots).for_model();
        value.stale = Some(workspace.is_stale(hit));
        let cost = estimate_tokens(&serde_json::to_string(&value).unwrap_or_default());
        if tokens + cost > budget {
            break;
        }
        tokens += cost;
        out.push(value);
    }
    let omitted = hits.len() - out.len();
    (out, wire::Budget { tokens, omitted })
}

#[tool_router]
impl RaggrepMcp {
    pub fn new(
        workspace: Result<Arc<Workspace>, Arc<str>>,
        store_model: Arc<crate::vectordb::StoreModel>,
    ) -> RaggrepMcp {
        RaggrepMcp { workspace, store_model, tool_router: Self::tool_router() }
    }

    /// The workspace, or the tool error every call gets without one.
    fn ready(&self) -> Result<&Arc<Workspace>, String> {
        self.workspace.as_ref().map_err(|why| format!("raggrep is not ready: {why}"))
    }

    /// Runs engine work off the executor; a panic becomes a tool error.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Workspace) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let workspace = Arc::clone(self.ready()?);
        match tokio::task::spawn_blocking(move || work(workspace.as_ref())).await {
            Ok(result) => result,
            Err(join) => {
                tracing::error!("tool handler panicked: {join}");
                Err("internal error (the handler panicked; see the server log)".into())
            }
        }
    }

    fn roots(&self) -> Result<Vec<PathBuf>, String> {
        Ok(self.ready()?.roots())
    }

    #[tool(
        description = "Search the codebase by meaning and keywords. Returns ranked hits: location (path:start-end, 1-based inclusive lines), symbol, kind, language, score, a short snippet, and stale (the file changed since it was indexed); tokens (estimated size of the response). Also partial (indexing still running: results cover what is indexed so far), omitted (hits left out to stay within max_tokens) and degraded (why ranking is worse than usual) when set. In hybrid mode, each hit's score is the probability (0-1) that it is what was asked about, confidence (0-1: how likely the first 5 hits hold it) and no_confident_match (true: probably nothing here matches; the hits are only the closest code)."
    )]
    async fn search(&self, Parameters(args): Parameters<SearchArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.search_inner(args).await.unwrap_or_else(failure))
    }

    async fn search_inner(&self, args: SearchArgs) -> Result<CallToolResult, String> {
        let text = args.query.trim().to_string();
        if text.is_empty() {
            return Err("query is empty: say what to look for".into());
        }
        let (k, capped) = check_k(args.k)?;
        let budget = check_budget(args.max_tokens)?;
        let language = match args.lang.as_deref() {
            None => None,
            Some(l) => Some(Language::from_name(l).ok_or_else(|| {
                format!("unknown language {l:?}: use rust, python, javascript, typescript, tsx, go, java, c, cpp, ruby, php, csharp, kotlin, swift, scala, elixir, lua, bash, zig, haskell, dart, objc, ocaml, r, julia, yaml, toml, json, markdown or text")
            })?),
        };
        let path_glob = args.path.as_deref().map(|g| confine::check_glob(&self.roots()?, g)).transpose()?;
        let mode = match args.mode {
            SearchMode::Hybrid => Mode::Hybrid,
            SearchMode::Dense => Mode::Dense,
            SearchMode::Lexical => Mode::Lexical,
        };
        let min_score = match args.min_score {
            Some(score) if !score.is_finite() => return Err(format!("min_score {score} is not a finite number")),
            // Scores are f32; a bound past its range becomes ±infinity and keeps (or drops) every hit.
            Some(score) => Some(score as f32),
            None => None,
        };
        let query = Query { k, mode, path_glob, language, rerank: args.rerank, min_score, ..Query::new(text) };
        let started = std::time::Instant::now();
        self.blocking(move |ws| {
            let Found { hits, confidence, reranked_by } = ws.find(&query).map_err(|e| e.to_string())?;
            let mut response = wire::SearchResponse {
                query: query.text.clone(),
                took_ms: 0.0,
                partial: ws.is_partial(),
                degraded: ws.degraded(query.mode),
                results: Vec::new(),
                budget: Some(wire::Budget { tokens: 0, omitted: 0 }),
                k_capped: capped.map(|asked| format!("k {asked} was capped at {MAX_K}")),
                reranked_by,
                confidence: confidence.map(wire::Confidence::from),
                team: None,
                root: None,
            };
            let overhead = estimate_tokens(&serde_json::to_string(&response).unwrap_or_default());
            let (results, budget) = budgeted_hits(ws, &hits, budget, overhead);
            response.results = results;
            response.budget = Some(budget);
            response.took_ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
            Ok(success(response))
        })
        .await
    }

    #[tool(
        description = "Find code similar to a piece of code: either path + start_line + end_line (a range of a file in the workspace; the source itself is excluded from the results) or code (a pasted snippet). Returns hits like search: location, symbol, kind, score, snippet, stale; source.location is the range actually used (widened to whole indexed units), or snippet; partial and degraded as for search."
    )]
    async fn find_similar(&self, Parameters(args): Parameters<FindSimilarArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.find_similar_inner(args).await.unwrap_or_else(failure))
    }

    async fn find_similar_inner(&self, args: FindSimilarArgs) -> Result<CallToolResult, String> {
        let (k, _) = check_k(args.k)?;
        let budget = check_budget(args.max_tokens)?;
        match (args.path, args.code) {
            (Some(_), Some(_)) => Err("give either path (with start_line and end_line) or code, not both".into()),
            (None, None) => Err("give path with start_line and end_line, or code (a snippet)".into()),
            (None, Some(code)) => {
                if code.trim().is_empty() {
                    return Err("code is empty".into());
                }
                // The same model embeds queries and documents: a snippet is searched densely.
                let query = Query { k, mode: Mode::Dense, ..Query::new(code) };
                self.blocking(move |ws| {
                    let hits = ws.search(&query).map_err(|e| e.to_string())?;
                    let (results, budget) = budgeted_hits(ws, &hits, budget, 20);
                    Ok(success(wire::SimilarResponse {
                        source: wire::Source::snippet(),
                        partial: ws.is_partial(),
                        degraded: ws.degraded(Mode::Dense),
                        results,
                        budget: Some(budget),
                    }))
                })
                .await
            }
            (Some(path), None) => {
                let (Some(start), Some(end)) = (args.start_line, args.end_line) else {
                    return Err("give start_line and end_line (1-based, inclusive) with path".into());
                };
                if start == 0 || end < start {
                    return Err(format!(
                        "invalid line range {start}-{end}: lines are 1-based and end_line >= start_line"
                    ));
                }
                let file = confine::resolve_file(&self.roots()?, &path)?;
                self.blocking(move |ws| {
                    let (hits, (from, to)) =
                        ws.find_similar(&file.absolute, start, end, k).map_err(|e| e.to_string())?;
                    let (results, budget) = budgeted_hits(ws, &hits, budget, 40);
                    Ok(success(wire::SimilarResponse {
                        source: wire::Source::lines(&file.relative, from, to),
                        partial: ws.is_partial(),
                        degraded: ws.degraded(Mode::Dense),
                        results,
                        budget: Some(budget),
                    }))
                })
                .await
            }
        }
    }

    #[tool(
        description = "The best code for a question, ready to read: deduplicated chunks within max_tokens, each headed by its citation (path:start-end) in a fenced block. Returns text, tokens (estimated), sources (the citations) and partial; degraded (why retrieval is worse than usual) when set; confidence and no_confident_match as for search (true: the text is only the closest code, probably not about the question)."
    )]
    async fn context(&self, Parameters(args): Parameters<ContextArgs>) -> Result<CallToolResult, ErrorData> {
        let result = async {
            let question = args.question.trim().to_string();
            if question.is_empty() {
                return Err("question is empty: ask what the code should answer".to_string());
            }
            let budget = check_budget(args.max_tokens)?;
            self.blocking(move |ws| {
                let context = ws.context(&question, budget).map_err(|e| e.to_string())?;
                Ok(success(wire::ContextResponse::new(context, ws.is_partial(), ws.degraded(Mode::Hybrid))))
            })
            .await
        };
        Ok(result.await.unwrap_or_else(failure))
    }

    #[tool(
        description = "The definitions in one file (functions, methods, classes, structs, …; Markdown: its sections; YAML, TOML, JSON: its keys as dotted paths) with kind, qualified symbol and 1-based line range, from its syntax tree: exact, no embedding, works on files not yet indexed."
    )]
    async fn outline(&self, Parameters(args): Parameters<OutlineArgs>) -> Result<CallToolResult, ErrorData> {
        let result = async {
            let file = confine::resolve_file(&self.roots()?, &args.path)?;
            self.blocking(move |ws| {
                // The index's size limit holds here too: nothing is sized from input.
                let limit = ws.settings().max_file_size;
                let size = std::fs::metadata(&file.absolute).map(|m| m.len()).unwrap_or(0);
                if size > limit {
                    return Err(format!(
                        "{} is too large to outline ({size} bytes; the limit is {limit})",
                        file.relative
                    ));
                }
                let text = std::fs::read_to_string(&file.absolute)
                    .map_err(|e| format!("cannot read {}: {e}", file.relative))?;
                let language = Language::detect(&file.absolute, &text);
                let definitions = outline(&text, language, &ChunkConfig::default());
                Ok(success(wire::Outline {
                    path: file.relative,
                    language,
                    definitions: definitions.into_iter().map(wire::OutlineEntry::from).collect(),
                }))
            })
            .await
        };
        Ok(result.await.unwrap_or_else(failure))
    }

    #[tool(
        description = "Where a named symbol is defined: exact, case-sensitive match on the name or qualified name over the index (no embedding). Returns definitions with location (path:start-end), kind and qualified symbol, and partial (indexing still running). Symbols do not depend on the model: an index another model built answers too."
    )]
    async fn find_symbol(&self, Parameters(args): Parameters<FindSymbolArgs>) -> Result<CallToolResult, ErrorData> {
        let result = async {
            let name = args.name.trim().to_string();
            if name.is_empty() {
                return Err("name is empty: give a function, class or other symbol name".to_string());
            }
            self.blocking(move |ws| {
                let several_roots = ws.roots().len() > 1;
                let found = symbols::find_definitions(&ws.snapshots(), &name, MAX_SYMBOLS);
                let definitions = found
                    .definitions
                    .into_iter()
                    .map(|d| wire::SymbolDefinition {
                        location: wire::location(&d.path, d.start_line, d.end_line),
                        line: (d.line != d.start_line).then_some(d.line),
                        symbol: d.symbol,
                        kind: d.kind,
                        root: several_roots.then(|| d.root.display().to_string()),
                    })
                    .collect();
                let total = found.total;
                let response = wire::SymbolDefinitions {
                    name,
                    definitions,
                    partial: ws.is_partial(),
                    omitted: (total > MAX_SYMBOLS).then(|| total - MAX_SYMBOLS),
                };
                Ok(success(response))
            })
            .await
        };
        Ok(result.await.unwrap_or_else(failure))
    }

    #[tool(
        description = "Index status per workspace root (roots; the first root's fields are repeated at the top level): files, chunks, embedded and pending chunks, whether indexing is running (partial), the model, the last error, and reason: why indexing is off or limited, or why the index on disk is searched by words only (another model built its vectors: lexical search and symbols answer, meaning and similarity do not, until it is rebuilt)."
    )]
    async fn status(&self) -> Result<CallToolResult, ErrorData> {
        let result = self.blocking(|ws| Ok(success(wire::StatusResponse::new(ws.status())))).await;
        Ok(result.unwrap_or_else(failure))
    }

    #[tool(
        description = "A persistent vector store (key/value rows with an embedding of their text, in SQLite; one database per workspace, in .raggrep/ unless set_database chose another). One tool, {\"action\": ..., ...}: store (embedding_text, value) -> {key, updated}; retrieve (key) -> {key, found, value, embedding_text}; delete (key) -> {key, deleted, warning?}; list (limit? default 50, offset? default 0) -> the array [{key, embedding_text, value, embedding}] (structured content: {rows, total, limit, offset}); search (query, topK? default 5) -> the array [{key, embedding_text, value, score}] with score the cosine distance, lower is closer, sorted (structured content: {query, results, took_ms}); import_file (filepath, inside the workspace) stores the file's text with its path as value; set_database (filename) switches the database file and remembers it."
    )]
    async fn vector_db(&self, Parameters(args): Parameters<VectorDbArgs>) -> Result<CallToolResult, ErrorData> {
        let store_model = Arc::clone(&self.store_model);
        Ok(self.blocking(move |ws| vector_db(ws, &store_model, args)).await.unwrap_or_else(vector_db_failure))
    }

    #[tool(
        description = "Queue a full update of the index of every root (files changed on disk are picked up automatically; use this after changing ignore files or if status shows an error). Returns at once; status shows progress."
    )]
    async fn reindex(&self) -> Result<CallToolResult, ErrorData> {
        let workspace = match self.ready() {
            Ok(workspace) => workspace,
            Err(why) => return Ok(failure(why)),
        };
        workspace.reindex();
        Ok(success(wire::Queued { queued: workspace.roots().len() }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RaggrepMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("raggrep", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "raggrep searches this codebase locally. Use search for 'where is X done' questions (words or identifiers), \
                 find_symbol for where a name is defined, outline for the definitions of a file, context for code to read \
                 about a question, find_similar for code like a given range or snippet, vector_db to keep and find notes by meaning \
                 (a key/value store with embeddings). Locations are path:start-end with 1-based lines, relative to \
                 the workspace root.",
            )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Mutex;
    use std::sync::mpsc::{Sender, channel};
    use std::time::Duration;

    use super::*;
    use crate::embed::FakeEmbedder;

    struct Finished(Mutex<Sender<Result<(), String>>>);

    impl Events for Finished {
        fn progress(&self, _: &Path, _: &Progress) {}
        fn updated(&self, _: &Path, _: &UpdateStats) {
            let _ = self.0.lock().unwrap().send(Ok(()));
        }
        fn failed(&self, _: &Path, message: &str) {
            let _ = self.0.lock().unwrap().send(Err(message.to_string()));
        }
        fn memory(&self, _: MemoryLevel, _: u64, _: u64) {}
    }

    #[test]
    fn hits_say_when_their_file_changed_and_respect_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.py");
        std::fs::write(&file, "def alpha():\n    return 1\n\n\ndef beta():\n    return 2\n").unwrap();
        let (tx, rx) = channel();
        let ws =
            Workspace::new(Arc::new(FakeEmbedder::new(64)), Settings::default(), Arc::new(Finished(Mutex::new(tx))));
        ws.add_root(dir.path(), true).unwrap();
        rx.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();

        let hits = ws.search(&Query { k: 5, mode: Mode::Lexical, ..Query::new("beta") }).unwrap();
        let beta = hits.iter().find(|h| h.hit.symbol.as_deref() == Some("beta")).unwrap();
        assert!(!ws.is_stale(beta));
        std::fs::write(&file, "def alpha():\n    return 1\n\n\ndef beta():\n    return 3\n").unwrap();
        assert!(ws.is_stale(beta), "an edited chunk is stale");
        std::fs::remove_file(&file).unwrap();
        assert!(ws.is_stale(beta), "a deleted file is stale");

        let (all, budget) = budgeted_hits(&ws, &hits, usize::MAX, 0);
        assert_eq!((all.len(), budget.omitted), (hits.len(), 0));
        assert!(budget.tokens > 0);
        let (none, tight) = budgeted_hits(&ws, &hits, budget.tokens - 1, 0);
        assert_eq!(none.len() + tight.omitted, hits.len());
        assert!(tight.omitted > 0);
        ws.shutdown();
    }

    #[test]
    fn k_and_budget_are_checked() {
        assert!(check_k(Some(0)).is_err());
        assert_eq!(check_k(Some(5_000)).unwrap(), (MAX_K as usize, Some(5_000)));
        assert_eq!(check_k(None).unwrap(), (DEFAULT_K as usize, None));
        assert!(check_budget(Some(0)).is_err());
        assert_eq!(check_budget(Some(u64::MAX)).unwrap(), MAX_MAX_TOKENS as usize);
    }
}
