//! The language server (`raggrep lsp`): a front door over [`crate::engine::Workspace`].
//!
//! Only this module knows LSP types (conversions in `to_proto`). Handlers never run engine work
//! on the async executor: searches go through `spawn_blocking` (which also turns a panic into a
//! JSON-RPC error instead of a dead server), indexing runs on the workspace's own thread, and its
//! events come back through a channel to one task that talks to the client in order.
//!
//! Map: `transport.rs` (stdin re-framing, the server loop, exit), `mod.rs` (the backend: state,
//! consent, settings, lifecycle), one file per kind of handler (`documents.rs`, `requests.rs`,
//! `commands.rs`), `progress.rs` (the event pump), `to_proto.rs` (engine → LSP).

mod commands;
mod documents;
pub mod framing;
mod log;
mod progress;
mod requests;
mod team;
mod to_proto;
mod transport;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::{Client, LanguageServer};

pub use transport::run;

use crate::engine::{Assets, OnnxEmbedder};
use crate::engine::{FolderIndex, ProjectConfig, Settings, Workspace, looks_like_project};
use progress::{ChannelEvents, Event};

/// Commands advertised in `executeCommandProvider`.
pub const COMMANDS: &[&str] = &[
    "raggrep.search",
    "raggrep.findSimilar",
    "raggrep.context",
    "raggrep.reindex",
    "raggrep.status",
    "raggrep.toggle",
    "raggrep.history",
    "raggrep.pause",
    "raggrep.resume",
];
/// Settings keys we understand (anything else is logged and ignored).
const SETTING_KEYS: &[&str] = &[
    "enabled",
    "include",
    "exclude",
    "maxFileSize",
    "memoryBudgetMb",
    "modelDir",
    "defaultK",
    "logLevel",
    "team",
    "indexThreads",
    "indexPriority",
];
/// A workspace with more files than this asks before indexing.
const ASK_ABOVE_FILES: usize = 20_000;
/// How long `shutdown` waits for the indexer to publish and stop.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Quiet time after the last keystroke before an unsaved buffer is re-indexed.
const CHANGE_DEBOUNCE: Duration = Duration::from_millis(400);

/// State shared by the handlers and the event task.
#[derive(Default)]
pub struct State {
    workspace: OnceLock<Arc<Workspace>>,
    /// Why there is no workspace (the model could not be loaded), with what to do about it:
    /// every request that needs one answers with it.
    not_ready: OnceLock<String>,
    settings: Mutex<Settings>,
    supports_progress: std::sync::atomic::AtomicBool,
    shutdown_requested: std::sync::atomic::AtomicBool,
    /// Wakes handlers waiting for the client (a consent question) when `shutdown` arrives.
    shutting_down: tokio::sync::Notify,
    /// The team index source the `team` setting asks for.
    team: Mutex<team::TeamCache>,
    /// The history's model (all-MiniLM-L6-v2 itself), loaded on the first `raggrep.history`.
    history_model: OnceLock<crate::vectordb::StoreModel>,
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
        self.state.workspace.get().cloned().ok_or_else(|| {
            // The cause and its fix, as the command line would say them: the editor shows this
            // line, and a log the user may never open is not where the fix should be.
            let why = self.state.not_ready.get().map_or("the embedding model is not loaded yet", String::as_str);
            Error {
                code: ErrorCode::ServerError(-32002),
                message: format!("raggrep is not ready: {why}").into(),
                data: None,
            }
        })
    }

    /// Decides whether to index a root: remembered answer, project markers and size, or ask.
    async fn consent(&self, folder: &FolderIndex) -> bool {
        let FolderIndex { root, location, subtree } = folder;
        if let Some(enabled) = ProjectConfig::load(location).enabled {
            return enabled;
        }
        if !subtree.is_empty() {
            // A folder of a project someone indexed: its index is there to be used.
            return true;
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
        // A question still open at shutdown is dropped: the server loop stops reading at
        // `exit` and would wait for this handler for ever.
        let shutting_down = self.state.shutting_down.notified();
        if self.state.shutdown_requested.load(Ordering::Acquire) {
            return false;
        }
        let question = self.client.show_message_request(
            MessageType::INFO,
            format!("raggrep: {} {why}. Index it for semantic search?", root.display()),
            Some(actions),
        );
        let asked = tokio::select! {
            asked = question => asked,
            () = shutting_down => return false,
        };
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
                let _ = ProjectConfig { enabled: Some(true), ..ProjectConfig::load(location) }.save(location);
                true
            }
            Some("Never") => {
                let _ = ProjectConfig { enabled: Some(false), ..ProjectConfig::load(location) }.save(location);
                false
            }
            _ => false,
        }
    }

    async fn add_roots(&self, paths: Vec<PathBuf>) {
        let Ok(workspace) = self.workspace() else { return };
        let globally_enabled = self.state.settings.lock().map(|s| s.enabled).unwrap_or(true);
        for root in paths {
            let folder = match FolderIndex::of(&root) {
                Ok(folder) => folder,
                Err(err) => {
                    tracing::error!("cannot open workspace folder {}: {err}", root.display());
                    continue;
                }
            };
            let index = globally_enabled && self.consent(&folder).await;
            // Beside the index the folder uses (a folder inside an indexed project gets no
            // `.raggrep/` of its own: that would make it a project of its own).
            let log_dir = folder.location.dir.clone();
            if let Err(err) = workspace.add_folder(folder, index) {
                tracing::error!("cannot open workspace folder {}: {err}", root.display());
                continue;
            }
            if index {
                self.log.set_file(&log_dir);
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
        // Key by key: a value of the wrong type costs that key, not the valid ones beside it.
        let mut merged = serde_json::to_value(&settings).unwrap_or_default();
        for (key, value) in map.iter().filter(|(k, _)| SETTING_KEYS.contains(&k.as_str())) {
            let mut candidate = merged.clone();
            if let Some(target) = candidate.as_object_mut() {
                target.insert(key.clone(), value.clone());
            }
            match <Settings as serde::Deserialize>::deserialize(&candidate) {
                Ok(_) => merged = candidate,
                Err(err) => tracing::warn!("ignoring the setting {key}: {err}"),
            }
        }
        match serde_json::from_value::<Settings>(merged) {
            Ok(mut parsed) => {
                keep_positive(&mut parsed, &settings);
                settings = parsed;
            }
            Err(err) => tracing::warn!("ignoring invalid settings: {err}"),
        }
        if !self.log.set_level(&settings.log_level) {
            tracing::warn!(
                "logLevel {:?} is not a level (error, warn, info, debug, trace); using info",
                settings.log_level
            );
        }
        if let Some(workspace) = self.state.workspace.get() {
            workspace.set_settings(settings.clone());
        }
        if let Ok(mut current) = self.state.settings.lock() {
            *current = settings;
        }
        unknown
    }
}

/// Sizes of 0 would index nothing (`memoryBudgetMb`, `maxFileSize`) or answer nothing
/// (`defaultK`) while looking configured: said, and the value before is kept.
fn keep_positive(settings: &mut Settings, before: &Settings) {
    fn check<T: PartialEq + Default + Copy + std::fmt::Display>(key: &str, value: &mut T, before: T) {
        if *value == T::default() {
            tracing::warn!("{key} must be at least 1; keeping {before}");
            *value = before;
        }
    }
    check("memoryBudgetMb", &mut settings.memory_budget_mb, before.memory_budget_mb);
    check("maxFileSize", &mut settings.max_file_size, before.max_file_size);
    check("defaultK", &mut settings.default_k, before.default_k);
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
        let embed_options = settings.embed_options();
        let loaded = tokio::task::spawn_blocking(move || {
            let assets = Assets::locate(model.as_deref(), None)?;
            anyhow::Ok(OnnxEmbedder::load(assets, embed_options)?)
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
                let why = format!("cannot load the embedding model: {}", crate::wire::one_line(&err));
                let _ = self.state.not_ready.set(why.clone());
                let message = format!("raggrep {why}");
                tracing::error!("{message}");
                self.client.show_message(MessageType::ERROR, message).await;
            }
            Err(err) => {
                let _ = self.state.not_ready.set(format!("loading the embedding model failed ({err}); see the log"));
                tracing::error!("model loading panicked: {err}");
            }
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
        self.state.shutting_down.notify_waiters();
        tokio::spawn(async {
            tokio::time::sleep(SHUTDOWN_GRACE + transport::EXIT_DEADLINE).await;
            tracing::warn!(
                "no exit {:?} after shutdown (a handler is waiting for the client); exiting",
                transport::EXIT_DEADLINE
            );
            transport::leave_now(0);
        });
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
        documents::did_open(self, params).await;
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        documents::did_change(self, params).await;
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        documents::did_save(self, params).await;
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        documents::did_close(self, params).await;
    }

    async fn did_change_watched_files(&self, params: DidChangeWatchedFilesParams) {
        documents::did_change_watched_files(self, params).await;
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        documents::did_change_workspace_folders(self, params).await;
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        documents::did_change_configuration(self, params).await;
    }

    async fn symbol(&self, params: WorkspaceSymbolParams) -> Result<Option<WorkspaceSymbolResponse>> {
        guard_request("workspace/symbol", requests::symbol(self, params)).await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        guard_request("textDocument/codeAction", requests::code_action(self, params)).await
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<LSPAny>> {
        guard_request("workspace/executeCommand", commands::execute_command(self, params)).await
    }
}

/// Runs a notification handler's work; a panic there is logged and the session goes on (a
/// request's panic becomes a JSON-RPC error, a notification has no one to answer).
async fn guard(name: &str, work: impl std::future::Future<Output = ()>) {
    if std::panic::AssertUnwindSafe(work).catch_unwind().await.is_err() {
        tracing::error!("{name} panicked; the notification is dropped and the session goes on");
    }
}

/// Runs a request handler; a panic in its async part (engine work in `blocking` is guarded
/// there) becomes an internal error reply, and the session goes on.
async fn guard_request<T>(name: &str, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    match std::panic::AssertUnwindSafe(work).catch_unwind().await {
        Ok(result) => result,
        Err(_) => {
            tracing::error!("{name} panicked; answering with an error");
            Err(Error {
                code: ErrorCode::InternalError,
                message: format!("{name}: internal error (the handler panicked; see the log)").into(),
                data: None,
            })
        }
    }
}
