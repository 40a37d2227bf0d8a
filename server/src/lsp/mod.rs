//! The language server (`raggrep lsp`): a front door over [`crate::workspace::Workspace`].
//!
//! Only this module knows LSP types (conversions in `to_proto`). Handlers never run engine work
//! on the async executor: searches go through `spawn_blocking` (which also turns a panic into a
//! JSON-RPC error instead of a dead server), indexing runs on the workspace's own thread, and its
//! events come back through a channel to one task that talks to the client in order.

pub mod framing;
mod log;
mod to_proto;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::notification::Progress as ProgressNotification;
use tower_lsp_server::ls_types::request::WorkDoneProgressCreate;
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService, Server};

use crate::embed::{Assets, EmbedOptions, OnnxEmbedder};
use crate::index::{Progress, UpdateStats};
use crate::lang::Language;
use crate::search::{Mode, Query};
use crate::workspace::{Events, MemoryLevel, ProjectConfig, Settings, Workspace, looks_like_project};

/// Commands advertised in `executeCommandProvider`.
pub const COMMANDS: &[&str] = &[
    "raggrep.search",
    "raggrep.findSimilar",
    "raggrep.context",
    "raggrep.reindex",
    "raggrep.status",
    "raggrep.toggle",
];
/// Settings keys we understand (anything else is logged and ignored).
const SETTING_KEYS: &[&str] =
    &["enabled", "include", "exclude", "maxFileSize", "memoryBudgetMb", "modelDir", "defaultK", "logLevel"];
/// A workspace with more files than this asks before indexing.
const ASK_ABOVE_FILES: usize = 20_000;
/// How long `shutdown` waits for the indexer to publish and stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Quiet time after the last keystroke before an unsaved buffer is re-indexed.
const CHANGE_DEBOUNCE: Duration = Duration::from_millis(400);

/// Runs the server on stdin/stdout until `exit`. Returns the process exit code.
pub fn run() -> i32 {
    let protocol_out = match crate::stdio::protect_stdout() {
        Ok(out) => out,
        Err(err) => {
            tracing::error!("cannot set up stdout: {err}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(err) => {
            tracing::error!("cannot start the async runtime: {err}");
            return 2;
        }
    };
    let orderly = runtime.block_on(async move {
        let (log_tx, mut log_rx) = unbounded_channel::<(MessageType, String)>();
        let sink = log::init(log_tx);
        let (events_tx, events_rx) = unbounded_channel();
        let (service, socket) = LspService::build(|client| Backend::new(client, events_tx, Arc::clone(&sink)))
            .custom_method("raggrep/malformedMessage", Backend::malformed)
            .finish();
        let server_state = Arc::clone(&service.inner().state);
        let events_client = service.inner().client.clone();
        let events_state = Arc::clone(&server_state);
        tokio::spawn(async move {
            let mut events_rx = events_rx;
            // A panic while forwarding one event must not silence every later one.
            while std::panic::AssertUnwindSafe(forward_events(
                events_client.clone(),
                &mut events_rx,
                Arc::clone(&events_state),
            ))
            .catch_unwind()
            .await
            .is_err()
            {
                tracing::error!("forwarding indexing events panicked; continuing with the next event");
            }
        });
        let log_client = service.inner().client.clone();
        tokio::spawn(async move {
            while let Some((kind, message)) = log_rx.recv().await {
                log_client.log_message(kind, message).await;
            }
        });
        let (input, clean) = tokio::io::duplex(1 << 20);
        tokio::spawn(sanitize_input(tokio::io::stdin(), input));
        Server::new(clean, protocol_out, socket).serve(service).await;
        server_state.shutdown_requested.load(Ordering::Acquire)
    });
    // Reading stdin occupies a blocking thread that never returns on its own; waiting for it
    // would hang the exit.
    runtime.shutdown_background();
    // The specification: `exit` without a `shutdown` before it ends the process with code 1.
    let code = if orderly { 0 } else { 1 };
    leave_now(code)
}

/// Ends the process without running exit-time destructors. The indexer may still be finishing
/// its last publish on another thread (`shutdown` stops waiting after a grace period), and
/// tearing down ONNX Runtime's globals under it made the process hang or crash at exit (seen
/// once in a dozen quick shutdown/exit runs). Nothing is lost: every protocol message was
/// written and flushed by the server loop, and the index is durable after each publish.
fn leave_now(code: i32) -> i32 {
    use std::io::Write;
    let _ = std::io::stderr().flush();
    #[allow(unsafe_code)]
    // SAFETY: `_exit` takes no pointers and does not return; it only skips atexit handlers.
    unsafe {
        libc::_exit(code)
    }
}

/// Forwards stdin to the framework as well-formed frames only: it stops reading after a body it
/// cannot decode, and one bad message, or one wrong Content-Length, must not end the session.
/// The rules are in [`framing`].
async fn sanitize_input(mut input: tokio::io::Stdin, mut output: tokio::io::DuplexStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut framer = framing::Framer::default();
    let mut buf = vec![0; 64 << 10];
    loop {
        let read = match input.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        for frame in framer.push(&buf[..read]) {
            if output.write_all(&frame).await.is_err() {
                return;
            }
        }
    }
}

/// Messages from the indexing thread to the client-facing task.
enum Event {
    Progress(PathBuf, Progress),
    Updated(PathBuf, UpdateStats),
    Failed(PathBuf, String),
    Memory(MemoryLevel, u64, u64),
}

struct ChannelEvents(UnboundedSender<Event>);

impl Events for ChannelEvents {
    fn progress(&self, root: &Path, progress: &Progress) {
        let _ = self.0.send(Event::Progress(root.to_path_buf(), progress.clone()));
    }
    fn updated(&self, root: &Path, stats: &UpdateStats) {
        let _ = self.0.send(Event::Updated(root.to_path_buf(), stats.clone()));
    }
    fn failed(&self, root: &Path, message: &str) {
        let _ = self.0.send(Event::Failed(root.to_path_buf(), message.to_string()));
    }
    fn memory(&self, level: MemoryLevel, used_mb: u64, budget_mb: u64) {
        let _ = self.0.send(Event::Memory(level, used_mb, budget_mb));
    }
}

/// State shared by the handlers and the event task.
#[derive(Default)]
pub struct State {
    workspace: OnceLock<Arc<Workspace>>,
    settings: Mutex<Settings>,
    supports_progress: std::sync::atomic::AtomicBool,
    shutdown_requested: std::sync::atomic::AtomicBool,
}

pub struct Backend {
    pub client: Client,
    pub state: Arc<State>,
    log: Arc<log::LogSink>,
    events: UnboundedSender<Event>,
    roots: Mutex<Vec<PathBuf>>,
    change_generation: Arc<Mutex<HashMap<PathBuf, u64>>>,
    next_generation: AtomicU64,
    /// Set once `initialized` has added the workspace folders: commands sent right after
    /// attaching wait for it instead of seeing an empty workspace.
    roots_ready: std::sync::atomic::AtomicBool,
    roots_ready_notify: tokio::sync::Notify,
}

impl Backend {
    fn new(client: Client, events: UnboundedSender<Event>, log: Arc<log::LogSink>) -> Backend {
        Backend {
            client,
            state: Arc::new(State::default()),
            log,
            events,
            roots: Mutex::new(Vec::new()),
            change_generation: Arc::new(Mutex::new(HashMap::new())),
            next_generation: AtomicU64::new(1),
            roots_ready: std::sync::atomic::AtomicBool::new(false),
            roots_ready_notify: tokio::sync::Notify::new(),
        }
    }

    /// Waits (up to 10 s: a consent prompt may be open) until the workspace folders are added.
    async fn wait_for_roots(&self) {
        let notified = self.roots_ready_notify.notified();
        if self.roots_ready.load(Ordering::Acquire) {
            return;
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), notified).await;
    }

    /// A saved or closed buffer: forget its editor text and re-index the file from disk.
    fn disk_is_truth(&self, uri: &Uri) {
        let Ok(workspace) = self.workspace() else { return };
        if let Some(path) = uri.to_file_path() {
            workspace.clear_overlay(&path);
            workspace.schedule(&path);
        }
    }

    async fn malformed(&self) -> Result<Value> {
        Err(Error::parse_error())
    }

    fn workspace(&self) -> Result<Arc<Workspace>> {
        self.state.workspace.get().cloned().ok_or_else(|| Error {
            code: ErrorCode::ServerError(-32002),
            message: "raggrep is not ready: the embedding model is not loaded (see the log)".into(),
            data: None,
        })
    }

    /// Decides whether to index a root: remembered answer, project markers and size, or ask.
    async fn consent(&self, root: &Path) -> bool {
        let Ok(location) = crate::index::IndexLocation::new(root, None) else { return false };
        if let Some(enabled) = ProjectConfig::load(&location).enabled {
            return enabled;
        }
        let root_owned = root.to_path_buf();
        let files =
            tokio::task::spawn_blocking(move || count_files(&root_owned, ASK_ABOVE_FILES + 1)).await.unwrap_or(0);
        let project = looks_like_project(root);
        if project && files <= ASK_ABOVE_FILES {
            return true;
        }
        let why = if !project {
            "does not look like a project (no version control or build file)".to_string()
        } else {
            format!("has more than {ASK_ABOVE_FILES} files")
        };
        let actions = vec![
            MessageActionItem { title: "Index".into(), properties: HashMap::new() },
            MessageActionItem { title: "Not now".into(), properties: HashMap::new() },
            MessageActionItem { title: "Never".into(), properties: HashMap::new() },
        ];
        let asked = self
            .client
            .show_message_request(
                MessageType::INFO,
                format!("raggrep: {} {why}. Index it for semantic search?", root.display()),
                Some(actions),
            )
            .await;
        let answer = match asked {
            Ok(answer) => answer.map(|a| a.title),
            Err(err) => {
                // Some clients (Helix 25.01) cannot ask; say how to turn indexing on instead of
                // staying silent.
                tracing::info!("cannot ask whether to index {}: {err}", root.display());
                self.client
                    .show_message(
                        MessageType::INFO,
                        format!(
                            "raggrep: not indexing {}: it {why}. Run the command raggrep.toggle to index it.",
                            root.display()
                        ),
                    )
                    .await;
                None
            }
        };
        match answer.as_deref() {
            Some("Index") => {
                let _ = ProjectConfig { enabled: Some(true), ..ProjectConfig::load(&location) }.save(&location);
                true
            }
            Some("Never") => {
                let _ = ProjectConfig { enabled: Some(false), ..ProjectConfig::load(&location) }.save(&location);
                false
            }
            _ => false,
        }
    }

    async fn add_roots(&self, paths: Vec<PathBuf>) {
        let Ok(workspace) = self.workspace() else { return };
        let globally_enabled = self.state.settings.lock().map(|s| s.enabled).unwrap_or(true);
        for root in paths {
            let index = globally_enabled && self.consent(&root).await;
            if let Err(err) = workspace.add_root(&root, index) {
                tracing::error!("cannot open workspace folder {}: {err}", root.display());
                continue;
            }
            if index {
                self.log.set_file(&root.join(crate::index::INDEX_DIR_NAME));
            } else {
                tracing::info!("{} is not indexed (turn it on with raggrep.toggle)", root.display());
            }
        }
    }

    /// Runs engine work off the executor; a panic becomes an error reply.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(Arc<Workspace>) -> anyhow::Result<T> + Send + 'static,
    ) -> Result<T> {
        let workspace = self.workspace()?;
        match tokio::task::spawn_blocking(move || work(workspace)).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(err)) => Err(Error { code: ErrorCode::InternalError, message: err.to_string().into(), data: None }),
            Err(join) => {
                tracing::error!("request handler panicked: {join}");
                Err(Error {
                    code: ErrorCode::InternalError,
                    message: "internal error (handler panicked; see the log)".into(),
                    data: None,
                })
            }
        }
    }

    fn apply_settings(&self, value: &Value) -> Vec<String> {
        let object = match value.get("raggrep") {
            Some(inner) if inner.is_object() => inner,
            _ => value,
        };
        let Some(map) = object.as_object() else { return Vec::new() };
        let unknown: Vec<String> = map.keys().filter(|k| !SETTING_KEYS.contains(&k.as_str())).cloned().collect();
        let mut settings = self.state.settings.lock().map(|s| s.clone()).unwrap_or_default();
        let mut merged = serde_json::to_value(&settings).unwrap_or_default();
        if let Some(target) = merged.as_object_mut() {
            for (k, v) in map {
                if SETTING_KEYS.contains(&k.as_str()) {
                    target.insert(k.clone(), v.clone());
                }
            }
        }
        match serde_json::from_value::<Settings>(merged) {
            Ok(parsed) => settings = parsed,
            Err(err) => tracing::warn!("ignoring invalid settings: {err}"),
        }
        self.log.set_level(&settings.log_level);
        if let Some(workspace) = self.state.workspace.get() {
            workspace.set_settings(settings.clone());
        }
        if let Ok(mut current) = self.state.settings.lock() {
            *current = settings;
        }
        unknown
    }
}

fn count_files(root: &Path, limit: usize) -> usize {
    ignore::WalkBuilder::new(root)
        .build()
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .take(limit)
        .count()
}

fn invalid(message: impl Into<String>) -> Error {
    Error { code: ErrorCode::InvalidParams, message: message.into().into(), data: None }
}

fn file_path(uri: &Uri) -> Result<PathBuf> {
    uri.to_file_path().map(|p| p.into_owned()).ok_or_else(|| invalid(format!("not a file URI: {}", uri.as_str())))
}

/// 1-based inclusive lines of an LSP range (an end at column 0 does not include that line).
fn lines_of(range: &Range) -> (u32, u32) {
    let start = range.start.line + 1;
    let end =
        if range.end.character == 0 && range.end.line > range.start.line { range.end.line } else { range.end.line + 1 };
    (start, end.max(start))
}

#[derive(serde::Deserialize)]
struct SearchArgs {
    query: String,
    k: Option<usize>,
    mode: Option<String>,
    path: Option<String>,
    lang: Option<String>,
}

#[derive(serde::Deserialize)]
struct SimilarArgs {
    uri: Uri,
    range: Range,
    k: Option<usize>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContextArgs {
    query: String,
    max_tokens: Option<usize>,
}

#[derive(serde::Deserialize, Default)]
struct ToggleArgs {
    enabled: Option<bool>,
    uri: Option<Uri>,
}

fn parse_args<T: serde::de::DeserializeOwned>(command: &str, arguments: &[Value]) -> Result<T> {
    let first = arguments.first().cloned().unwrap_or(Value::Null);
    serde_json::from_value(first).map_err(|e| invalid(format!("{command}: invalid arguments: {e}")))
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let unknown = params.initialization_options.as_ref().map(|o| self.apply_settings(o)).unwrap_or_default();
        if !unknown.is_empty() {
            tracing::warn!("unknown settings ignored: {}", unknown.join(", "));
        }
        let supports_progress = params.capabilities.window.as_ref().and_then(|w| w.work_done_progress).unwrap_or(false);
        self.state.supports_progress.store(supports_progress, Ordering::Relaxed);
        let mut roots: Vec<PathBuf> = params
            .workspace_folders
            .unwrap_or_default()
            .iter()
            .filter_map(|f| f.uri.to_file_path().map(|p| p.into_owned()))
            .collect();
        // No folders: the deprecated `rootUri`, then `rootPath` (Helix sends only this outside a
        // project).
        #[allow(deprecated)]
        if roots.is_empty() {
            let root = params.root_uri.as_ref().and_then(|u| u.to_file_path()).map(|p| p.into_owned());
            roots.extend(root.or_else(|| params.root_path.as_deref().filter(|p| !p.is_empty()).map(PathBuf::from)));
        }
        if let Ok(mut slot) = self.roots.lock() {
            *slot = roots;
        }
        let settings = self.state.settings.lock().map(|s| s.clone()).unwrap_or_default();
        // Loading the model takes a fraction of a second; a failure is reported, and the server
        // stays up so the editor gets clear errors instead of a crash loop.
        let model = settings.model_dir.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            let assets = Assets::locate(model.as_deref(), None)?;
            anyhow::Ok(OnnxEmbedder::load(assets, EmbedOptions::default())?)
        })
        .await;
        match loaded {
            Ok(Ok(embedder)) => {
                let workspace =
                    Workspace::new(Arc::new(embedder), settings, Arc::new(ChannelEvents(self.events.clone())));
                workspace.set_door(crate::audit::Door::Lsp);
                let _ = self.state.workspace.set(workspace);
            }
            Ok(Err(err)) => {
                let message = format!("raggrep cannot load its embedding model: {err}");
                tracing::error!("{message}");
                self.client.show_message(MessageType::ERROR, message).await;
            }
            Err(err) => tracing::error!("model loading panicked: {err}"),
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(TextDocumentSyncKind::FULL),
                    save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(false) })),
                    ..TextDocumentSyncOptions::default()
                })),
                workspace_symbol_provider: Some(OneOf::Left(true)),
                code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
                    work_done_progress_options: WorkDoneProgressOptions::default(),
                }),
                workspace: Some(WorkspaceServerCapabilities {
                    workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                        supported: Some(true),
                        change_notifications: Some(OneOf::Left(true)),
                    }),
                    file_operations: None,
                }),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo { name: "raggrep".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        guard("initialized", async {
            // Edits outside the editor (git checkout, formatters, generators) arrive as watched-file
            // events; clients that cannot register dynamically simply do not send them.
            let registration = Registration {
                id: "raggrep-watch".into(),
                method: "workspace/didChangeWatchedFiles".into(),
                register_options: serde_json::to_value(DidChangeWatchedFilesRegistrationOptions {
                    watchers: vec![FileSystemWatcher { glob_pattern: GlobPattern::String("**/*".into()), kind: None }],
                })
                .ok(),
            };
            if let Err(err) = self.client.register_capability(vec![registration]).await {
                tracing::info!("file watching not available: {err}");
            }
            let roots = self.roots.lock().map(|r| r.clone()).unwrap_or_default();
            self.add_roots(roots).await;
            self.roots_ready.store(true, Ordering::Release);
            self.roots_ready_notify.notify_waiters();
        })
        .await;
    }

    async fn shutdown(&self) -> Result<()> {
        self.state.shutdown_requested.store(true, Ordering::Release);
        if let Some(workspace) = self.state.workspace.get().cloned() {
            // Publishes what the running update has done, then stops. The client gets its
            // answer in bounded time even if that takes long (a huge walk, a slow disk): what
            // is not published then is redone at the next start.
            let stopping = tokio::task::spawn_blocking(move || workspace.shutdown());
            if tokio::time::timeout(SHUTDOWN_GRACE, stopping).await.is_err() {
                tracing::warn!("the indexer did not stop within {SHUTDOWN_GRACE:?}; shutting down without it");
            }
        }
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        guard("textDocument/didOpen", async {
            let Ok(workspace) = self.workspace() else { return };
            if let Some(path) = params.text_document.uri.to_file_path() {
                let path = path.into_owned();
                let on_disk = std::fs::read_to_string(&path).ok();
                if on_disk.as_deref() != Some(params.text_document.text.as_str()) {
                    workspace.set_overlay(&path, params.text_document.text);
                }
                workspace.schedule(&path);
            }
        })
        .await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        guard("textDocument/didChange", async {
            let Ok(workspace) = self.workspace() else { return };
            let Some(path) = params.text_document.uri.to_file_path().map(|p| p.into_owned()) else { return };
            // Full sync: the last change holds the whole text. Applied here, synchronously, so
            // edits stay in order; indexing waits for a pause in typing.
            let Some(change) = params.content_changes.into_iter().last() else { return };
            workspace.set_overlay(&path, change.text);
            let generation = self.next_generation.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut map) = self.change_generation.lock() {
                map.insert(path.clone(), generation);
            }
            let generations = Arc::clone(&self.change_generation);
            tokio::spawn(async move {
                tokio::time::sleep(CHANGE_DEBOUNCE).await;
                let latest = generations.lock().ok().and_then(|m| m.get(&path).copied());
                if latest == Some(generation) {
                    workspace.schedule(&path);
                }
            });
        })
        .await;
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        guard("textDocument/didSave", async {
            self.disk_is_truth(&params.text_document.uri);
        })
        .await;
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        guard("textDocument/didClose", async {
            self.disk_is_truth(&params.text_document.uri);
        })
        .await;
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        guard("workspace/didChangeWatchedFiles", async {
            let Ok(workspace) = self.workspace() else { return };
            for change in params.changes {
                if let Some(path) = change.uri.to_file_path() {
                    if path.components().any(|c| c.as_os_str() == crate::index::INDEX_DIR_NAME) {
                        continue; // our own writes
                    }
                    workspace.schedule(&path);
                }
            }
        })
        .await;
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        guard("workspace/didChangeWorkspaceFolders", async {
            let Ok(workspace) = self.workspace() else { return };
            for removed in params.event.removed {
                if let Some(path) = removed.uri.to_file_path() {
                    workspace.remove_root(&path);
                }
            }
            let added =
                params.event.added.iter().filter_map(|f| f.uri.to_file_path().map(|p| p.into_owned())).collect();
            self.add_roots(added).await;
        })
        .await;
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        guard("workspace/didChangeConfiguration", async {
            let before = self.state.settings.lock().map(|s| s.clone()).ok();
            let unknown = self.apply_settings(&params.settings);
            if !unknown.is_empty() {
                tracing::warn!("unknown settings ignored: {}", unknown.join(", "));
            }
            let after = self.state.settings.lock().map(|s| s.clone()).ok();
            // Clients often resend the initial settings right after start-up: nothing to redo then.
            if before != after
                && let Ok(workspace) = self.workspace()
            {
                workspace.schedule_all();
            }
        })
        .await;
    }

    async fn symbol(&self, params: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        if params.query.trim().is_empty() {
            return Ok(Some(WorkspaceSymbolResponse::Flat(Vec::new())));
        }
        let k = self.state.settings.lock().map(|s| s.default_k).unwrap_or(10).max(20);
        let hits = self.blocking(move |ws| Ok(ws.search(&Query { k, ..Query::new(params.query) })?)).await?;
        Ok(Some(WorkspaceSymbolResponse::Flat(hits.iter().filter_map(to_proto::symbol_information).collect())))
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let path = file_path(&params.text_document.uri)?;
        let mut range = params.range;
        // No selection, or part of one line (Helix's cursor is a one-character selection): the
        // enclosing indexed unit (function, method, …) under the cursor.
        let cursor_line = (range.start.line == range.end.line).then_some(range.start.line + 1);
        let located = self
            .blocking(move |ws| {
                let Some((_, rel)) = ws.locate(&path) else { return Ok(None) };
                Ok(Some(cursor_line.and_then(|line| ws.enclosing_chunk(&path, &rel, line))))
            })
            .await?;
        // Files outside every indexed root (the editor's own settings, say) get no action.
        let Some(unit) = located else { return Ok(None) };
        if let Some((start, end)) = unit {
            range = to_proto::line_range(start, end);
        }
        let args = json!({ "uri": params.text_document.uri, "range": range });
        let action = CodeAction {
            title: "Find similar code".into(),
            kind: Some(CodeActionKind::new("refactor.raggrep.findSimilar")),
            command: Some(Command {
                title: "Find similar code".into(),
                command: "raggrep.findSimilar".into(),
                arguments: Some(vec![args]),
            }),
            ..CodeAction::default()
        };
        Ok(Some(vec![CodeActionOrCommand::CodeAction(action)]))
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        self.wait_for_roots().await;
        let command = params.command.as_str();
        let args = params.arguments;
        let default_k = self.state.settings.lock().map(|s| s.default_k).unwrap_or(10);
        match command {
            "raggrep.search" => {
                let a: SearchArgs = parse_args(command, &args)?;
                let mode = match a.mode.as_deref() {
                    None => Mode::Hybrid,
                    Some(m) => Mode::parse(m).ok_or_else(|| invalid(format!("unknown mode {m:?}")))?,
                };
                let language = match a.lang.as_deref() {
                    None => None,
                    Some(l) => Some(Language::from_name(l).ok_or_else(|| invalid(format!("unknown language {l:?}")))?),
                };
                let query = Query {
                    k: a.k.unwrap_or(default_k),
                    mode,
                    path_glob: a.path,
                    language,
                    ..Query::new(a.query.clone())
                };
                let started = std::time::Instant::now();
                let (hits, partial, degraded) =
                    self.blocking(move |ws| Ok((ws.search(&query)?, ws.is_partial(), ws.degraded(query.mode)))).await?;
                let mut result = json!({
                    "query": a.query,
                    "took_ms": started.elapsed().as_secs_f64() * 1000.0,
                    "partial": partial,
                    "results": hits.iter().map(to_proto::hit_json).collect::<Vec<_>>(),
                });
                if let Some(degraded) = degraded {
                    result["degraded"] = json!(degraded);
                }
                Ok(Some(result))
            }
            "raggrep.findSimilar" => {
                let a: SimilarArgs = parse_args(command, &args)?;
                let path = file_path(&a.uri)?;
                let (start, end) = lines_of(&a.range);
                let k = a.k.unwrap_or(default_k);
                let (hits, (from, to)) = self.blocking(move |ws| Ok(ws.find_similar(&path, start, end, k)?)).await?;
                Ok(Some(json!({
                    "results": hits.iter().map(to_proto::hit_json).collect::<Vec<_>>(),
                    "source": { "uri": a.uri, "range": to_proto::line_range(from, to) },
                })))
            }
            "raggrep.context" => {
                let a: ContextArgs = parse_args(command, &args)?;
                let max_tokens = a.max_tokens.unwrap_or(2000);
                let context = self.blocking(move |ws| Ok(ws.context(&a.query, max_tokens)?)).await?;
                Ok(Some(serde_json::to_value(context).unwrap_or_default()))
            }
            "raggrep.reindex" => {
                let workspace = self.workspace()?;
                workspace.reindex();
                Ok(Some(json!({ "queued": workspace.roots().len() })))
            }
            "raggrep.status" => {
                let statuses = self.blocking(|ws| Ok(ws.status())).await?;
                let mut value =
                    statuses.first().map(|s| serde_json::to_value(s).unwrap_or_default()).unwrap_or(json!({}));
                if let Some(object) = value.as_object_mut() {
                    object.insert("roots".into(), serde_json::to_value(&statuses).unwrap_or_default());
                }
                Ok(Some(value))
            }
            "raggrep.toggle" => {
                let a: ToggleArgs = if args.is_empty() { ToggleArgs::default() } else { parse_args(command, &args)? };
                let workspace = self.workspace()?;
                let roots = match &a.uri {
                    Some(uri) => {
                        let path = file_path(uri)?;
                        workspace.locate(&path).map(|(root, _)| vec![root]).unwrap_or_default()
                    }
                    None => workspace.roots(),
                };
                let mut result = Vec::new();
                for root in roots {
                    let enabled = a.enabled.unwrap_or(!workspace.is_enabled(&root));
                    workspace.set_enabled(&root, enabled).map_err(|e| invalid(e.to_string()))?;
                    result.push(json!({ "root": root.display().to_string(), "enabled": enabled }));
                }
                Ok(Some(json!({ "roots": result })))
            }
            other => Err(invalid(format!("unknown command {other:?}; raggrep knows {}", COMMANDS.join(", ")))),
        }
    }
}

/// Runs a notification handler's work; a panic there is logged and the session goes on (a
/// request's panic becomes a JSON-RPC error, a notification has no one to answer).
async fn guard(name: &str, work: impl std::future::Future<Output = ()>) {
    if std::panic::AssertUnwindSafe(work).catch_unwind().await.is_err() {
        tracing::error!("{name} panicked; the notification is dropped and the session goes on");
    }
}

/// Turns workspace events into `$/progress`, `window/showMessage` and log messages, in order.
async fn forward_events(client: Client, events: &mut UnboundedReceiver<Event>, state: Arc<State>) {
    let mut tokens: HashMap<PathBuf, (ProgressToken, std::time::Instant)> = HashMap::new();
    let mut counter = 0u64;
    while let Some(event) = events.recv().await {
        let supports_progress = state.supports_progress.load(Ordering::Relaxed);
        match event {
            Event::Progress(root, progress) => {
                if !supports_progress {
                    continue;
                }
                let name =
                    root.file_name().map_or_else(|| root.display().to_string(), |n| n.to_string_lossy().into_owned());
                let (begin, message, percentage) = match &progress {
                    // Only work worth a progress bar gets one: an update with nothing to embed is
                    // over in milliseconds.
                    Progress::Chunked { files, chunks, to_embed, .. } => {
                        (*to_embed > 0, format!("{files} files, {chunks} chunks; {to_embed} to embed"), Some(0))
                    }
                    Progress::Embedding { done, total } => {
                        let elapsed = tokens.get(&root).map_or(0.0, |(_, t)| t.elapsed().as_secs_f64());
                        let eta = if *done > 0 { elapsed / *done as f64 * (total - done) as f64 } else { 0.0 };
                        let pct = if *total == 0 { 100 } else { (done * 100 / total) as u32 };
                        (
                            false,
                            format!("embedding {done}/{total} chunks, ~{} left", crate::cli::human_duration(eta)),
                            Some(pct),
                        )
                    }
                    Progress::BuildingAnn { vectors } => {
                        (false, format!("building the vector graph ({vectors})"), None)
                    }
                    Progress::Rebuilding { reason } => (false, reason.clone(), None),
                    Progress::Waiting => (false, "waiting for another raggrep process".into(), None),
                    // Embedding reports already carry the progress.
                    Progress::Published { .. } => continue,
                };
                if begin && !tokens.contains_key(&root) {
                    counter += 1;
                    let token = ProgressToken::String(format!("raggrep-index-{counter}"));
                    if client
                        .send_request::<WorkDoneProgressCreate>(WorkDoneProgressCreateParams { token: token.clone() })
                        .await
                        .is_err()
                    {
                        continue;
                    }
                    client
                        .send_notification::<ProgressNotification>(ProgressParams {
                            token: token.clone(),
                            value: ProgressParamsValue::WorkDone(WorkDoneProgress::Begin(WorkDoneProgressBegin {
                                title: format!("raggrep: indexing {name}"),
                                cancellable: Some(false),
                                message: Some(message),
                                percentage: Some(0),
                            })),
                        })
                        .await;
                    tokens.insert(root, (token, std::time::Instant::now()));
                    continue;
                }
                if let Some((token, _)) = tokens.get(&root) {
                    client
                        .send_notification::<ProgressNotification>(ProgressParams {
                            token: token.clone(),
                            value: ProgressParamsValue::WorkDone(WorkDoneProgress::Report(WorkDoneProgressReport {
                                cancellable: Some(false),
                                message: Some(message),
                                percentage,
                            })),
                        })
                        .await;
                }
            }
            Event::Updated(root, stats) => {
                if let Some((token, _)) = tokens.remove(&root) {
                    let message = format!(
                        "{} files, {} chunks ({} embedded, {} reused) in {:.1}s",
                        stats.files, stats.chunks, stats.embedded, stats.reused, stats.seconds
                    );
                    end_progress(&client, token, message).await;
                }
                if let Some(reason) = &stats.rebuilt {
                    client.log_message(MessageType::INFO, format!("raggrep: {reason}")).await;
                }
                // A notification clients (and tests) can synchronise on.
                client
                    .send_notification::<IndexUpdated>(json!({
                        "root": root.display().to_string(),
                        "stats": stats,
                    }))
                    .await;
            }
            Event::Failed(root, message) => {
                if let Some((token, _)) = tokens.remove(&root) {
                    end_progress(&client, token, format!("failed: {message}")).await;
                }
                client
                    .show_message(MessageType::ERROR, format!("raggrep: indexing {} failed: {message}", root.display()))
                    .await;
            }
            Event::Memory(level, used, budget) => {
                let (kind, text) = match level {
                    MemoryLevel::Full => (
                        MessageType::WARNING,
                        format!(
                            "raggrep: memory budget nearly used ({used} of {budget} MB): no more files are being added. Raise raggrep.memoryBudgetMb or exclude files."
                        ),
                    ),
                    _ => (
                        MessageType::INFO,
                        format!("raggrep: the index uses {used} of {budget} MB of its memory budget"),
                    ),
                };
                client.show_message(kind, text).await;
            }
        }
    }
}

async fn end_progress(client: &Client, token: ProgressToken, message: String) {
    client
        .send_notification::<ProgressNotification>(ProgressParams {
            token,
            value: ProgressParamsValue::WorkDone(WorkDoneProgress::End(WorkDoneProgressEnd { message: Some(message) })),
        })
        .await;
}

/// `raggrep/indexUpdated`: sent after every update of a root is published.
enum IndexUpdated {}

impl tower_lsp_server::ls_types::notification::Notification for IndexUpdated {
    type Params = Value;
    const METHOD: &'static str = "raggrep/indexUpdated";
}
