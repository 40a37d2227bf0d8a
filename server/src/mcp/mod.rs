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
mod tools;

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
use crate::engine::{Mode, Query, SearchRequest};
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

impl RaggrepMcp {
    pub fn new(
        workspace: Result<Arc<Workspace>, Arc<str>>,
        store_model: Arc<crate::vectordb::StoreModel>,
    ) -> RaggrepMcp {
        RaggrepMcp { workspace, store_model, tool_router: Self::tools() }
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

    use super::tools::{budgeted_hits, check_budget, check_k};
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
