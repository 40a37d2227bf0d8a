//! A live workspace: several roots, each with its index kept fresh by a background worker,
//! plus editor buffers that differ from the disk. This is the engine API the long-running front
//! doors (the language server, the MCP server) share; it knows nothing of their protocols.
//!
//! Reads never wait for indexing: a query uses each root's latest published snapshot (an
//! `Arc`, swapped after every update). Updates run one at a time on a dedicated thread, so the
//! CPU-heavy work (tree-sitter, ONNX, HNSW) never runs on an async executor.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use dashmap::DashMap;
use serde::{Deserialize, Serialize};

use crate::audit;
use crate::embed::{EmbedOptions, Embedder, ModelInfo, Vector};
use crate::index::{
    self, IndexError, IndexLocation, IndexOptions, IndexStats, Progress, RootIndex, Snapshot, UpdateStats,
};
pub use crate::priority::IndexPriority;
use crate::search::{self, Hit, Mode, Query, SearchError};
use crate::walk::WalkOptions;

/// Bytes of memory one indexed chunk costs when searching (vector, graph links and the graph's
/// copy of the vector, manifest entry, lexical postings), for the memory budget.
const BYTES_PER_CHUNK: u64 = 384 * 4 * 2 + 24 * 2 * 8 + 400;

/// User settings of a workspace (the language server's settings map onto these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    pub enabled: bool,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub max_file_size: u64,
    /// Memory budget for the indexes, in MB: warn at 80 %, stop adding at 95 %.
    pub memory_budget_mb: u64,
    pub model_dir: Option<String>,
    pub default_k: usize,
    pub log_level: String,
    /// The team index as an extra, read-only source of searches.
    pub team: TeamSetting,
    /// Threads the model uses to embed while indexing; 0 = one per CPU. Read when the model
    /// loads (at start).
    pub index_threads: usize,
    /// CPU priority of indexing (`low`: below the editor and searches). Read at start.
    pub index_priority: IndexPriority,
}

/// `false` (the default): local results only. `true`: also the team index configured for the
/// CLI (`$RAGGREP_TEAM_URL`, `[team] url` in `.raggrep/config.toml` or the user's config). A
/// string: that team index (`postgres://USER@HOST/DB`; the password comes from `PGPASSWORD`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TeamSetting {
    Configured(bool),
    Url(String),
}

impl Default for TeamSetting {
    fn default() -> Self {
        TeamSetting::Configured(false)
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_size: WalkOptions::default().max_file_size,
            memory_budget_mb: 500,
            model_dir: None,
            default_k: 10,
            log_level: "info".into(),
            team: TeamSetting::default(),
            index_threads: 0,
            index_priority: IndexPriority::default(),
        }
    }
}

impl Settings {
    /// Whether moving from `self` to `other` changes what is indexed (the team index, the
    /// result count, the log level and the indexer's threads and priority do not: no re-scan
    /// for them).
    pub fn indexing_differs(&self, other: &Settings) -> bool {
        let searching_only = |s: &Settings| Settings {
            team: TeamSetting::default(),
            index_threads: 0,
            index_priority: IndexPriority::default(),
            default_k: 0,
            log_level: String::new(),
            ..s.clone()
        };
        searching_only(self) != searching_only(other)
    }

    /// How a long-running front door loads the model for this workspace: indexing threads and
    /// priority as set, queries at normal priority.
    pub fn embed_options(&self) -> EmbedOptions {
        EmbedOptions {
            threads: self.index_threads,
            background: self.index_priority == IndexPriority::Low,
            ..EmbedOptions::default()
        }
    }

    fn index_options(&self) -> IndexOptions {
        let budget_chunks = (self.memory_budget_mb * 1_000_000 * 95 / 100) / BYTES_PER_CHUNK;
        IndexOptions {
            walk: WalkOptions {
                max_file_size: self.max_file_size,
                exclude: self.exclude.clone(),
                include: self.include.clone(),
                ..WalkOptions::default()
            },
            max_chunks: Some(budget_chunks as usize),
            shared_cache: crate::index::SharedCacheConfig::from_env(),
            ..IndexOptions::default()
        }
    }
}

/// The user's config file: `$XDG_CONFIG_HOME/raggrep/config.toml` (`~/.config/…`).
pub fn user_config_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("raggrep").join("config.toml"))
}

/// The first `[table] key` set in the workspace's config file (when there is one), else in the
/// user's ([`user_config_file`]), with the file it is in. A file that is not TOML is an error
/// naming it; an absent file, table or key is passed over.
pub fn configured(
    workspace_config: Option<&Path>,
    table: &str,
    key: &str,
) -> Result<Option<(PathBuf, toml::Value)>, String> {
    for path in [workspace_config.map(Path::to_path_buf), user_config_file()].into_iter().flatten() {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let value: toml::Value = toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
        if let Some(found) = value.get(table).and_then(|t| t.get(key)) {
            return Ok(Some((path, found.clone())));
        }
    }
    Ok(None)
}

/// Per-project settings persisted in `.raggrep/config.toml`: the user's answer to "index this
/// workspace?" and the on/off toggle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectConfig {
    pub enabled: Option<bool>,
    /// The audit log (`audit.jsonl`); on unless set to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<bool>,
    /// How `raggrep ask` reaches an LLM ([`crate::ask::LlmSettings`] reads it): kept as it is
    /// written, so saving the toggle keeps it even when it does not parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<toml::Value>,
    /// Where the team index is (`[team] url`, [`crate::team::configured_url`] reads it): kept
    /// as written, like `llm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team: Option<toml::Value>,
    /// The command line's own settings (`[cli] bare`: what a bare question runs), kept as
    /// written like `llm`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cli: Option<toml::Value>,
}

impl ProjectConfig {
    pub fn load(location: &IndexLocation) -> ProjectConfig {
        std::fs::read_to_string(location.dir.join("config.toml"))
            .ok()
            .and_then(|text| toml::from_str(&text).ok())
            .unwrap_or_default()
    }

    pub fn save(&self, location: &IndexLocation) -> Result<(), IndexError> {
        index::create_private_dir(&location.dir).map_err(|e| IndexError::io(&location.dir, e))?;
        let ignore = location.dir.join(".gitignore");
        if !ignore.exists() {
            index::write_atomic(&ignore, b"# raggrep's index: never commit it.\n*\n")
                .map_err(|e| IndexError::io(&ignore, e))?;
        }
        let text = toml::to_string(self).map_err(|e| IndexError::Corrupt(e.to_string()))?;
        let path = location.dir.join("config.toml");
        index::write_atomic(&path, text.as_bytes()).map_err(|e| IndexError::io(&path, e))
    }
}

/// The index a workspace folder uses.
#[derive(Debug, Clone)]
pub struct FolderIndex {
    /// The folder, canonical.
    pub root: PathBuf,
    /// Its own index, or the enclosing project's.
    pub location: IndexLocation,
    /// Where the folder lies in the index's tree (`""`: the index is the folder's own).
    pub subtree: String,
}

impl FolderIndex {
    /// The index a workspace folder (an editor's folder, an agent's root) uses, found as the
    /// CLI finds it ([`index::discover`]): a folder inside a project indexed higher up uses that
    /// project's index, seeing and updating only its own files (one index, not one per folder);
    /// any other folder (a nested repository or a folder with an index of its own included)
    /// has its own. A folder in a git work tree without an index gets its own: a server never
    /// starts an index above the folder it was given.
    pub fn of(folder: &Path) -> Result<FolderIndex, IndexError> {
        let own = IndexLocation::new(folder, None)?;
        if let Ok(found) = index::discover(&own.root, &index::Ceilings::from_env())
            && found.found == index::Found::Index
            && !found.subtree.is_empty()
            && let Ok(location) = IndexLocation::new(&found.root, None)
            && location.exists()
        {
            return Ok(FolderIndex { root: own.root, location, subtree: found.subtree });
        }
        Ok(FolderIndex { root: own.root.clone(), location: own, subtree: String::new() })
    }
}

/// Files whose presence says "this directory is a project".
const PROJECT_MARKERS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "CMakeLists.txt",
    "Makefile",
    "meson.build",
    "Gemfile",
    "composer.json",
    "deno.json",
    "tsconfig.json",
    ".raggrep",
];

/// Whether `root` is clearly a project (a VCS or build marker at its top).
pub fn looks_like_project(root: &Path) -> bool {
    PROJECT_MARKERS.iter().any(|m| root.join(m).exists())
}

/// Memory use against the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryLevel {
    Ok,
    Warning,
    Full,
}

/// What the workspace tells its front door.
pub trait Events: Send + Sync + 'static {
    fn progress(&self, root: &Path, progress: &Progress);
    fn updated(&self, root: &Path, stats: &UpdateStats);
    fn failed(&self, root: &Path, message: &str);
    fn memory(&self, level: MemoryLevel, used_mb: u64, budget_mb: u64);
}

/// The status of one root, for `raggrep.status`.
#[derive(Debug, Clone, Serialize)]
pub struct RootStatus {
    #[serde(flatten)]
    pub index: Option<IndexStats>,
    pub root: String,
    /// The project whose index the root uses, when the root is a folder inside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_root: Option<String>,
    pub enabled: bool,
    pub indexing: bool,
    pub partial: bool,
    pub last_error: Option<String>,
    pub memory_level: MemoryLevel,
    /// Why indexing is off or limited, or why the index on disk is searched by words only, in
    /// words.
    pub reason: Option<String>,
}

/// The hits of a workspace search and how confident the ranking is that they hold the answer.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub hits: Vec<RootHit>,
    pub confidence: Option<search::Confidence>,
    /// The reranker that re-sorted some root's candidates (a root searched by words only is
    /// not reranked).
    pub reranked_by: Option<String>,
}

/// A hit with the root it comes from.
#[derive(Debug, Clone, Serialize)]
pub struct RootHit {
    #[serde(skip)]
    pub root: PathBuf,
    #[serde(flatten)]
    pub hit: Hit,
}

/// Prompt-ready context for a question.
#[derive(Debug, Clone, Serialize)]
pub struct Context {
    pub text: String,
    pub tokens: usize,
    pub sources: Vec<String>,
    /// How likely the retrieved code holds the answer.
    pub confidence: Option<search::Confidence>,
}

struct Root {
    /// The folder as the doors know it: every path in and out is relative to it.
    root: PathBuf,
    /// Its index: its own, or the enclosing project's (see [`FolderIndex`]).
    location: IndexLocation,
    /// Where `root` lies in the index's tree (`""`: its own index).
    subtree: String,
    snapshot: RwLock<Option<Arc<Snapshot>>>,
    state: Mutex<RootState>,
    /// The published index holds text from editor buffers (restored from disk at shutdown).
    indexed_buffers: AtomicBool,
}

impl Root {
    /// Why this root's published index is searched by words only (another model built its
    /// vectors), with what happens next; `None` when its vectors answer `model`'s queries.
    /// Read from the index being searched, so it cannot disagree with what a search did.
    fn other_model(&self, model: &ModelInfo) -> Option<String> {
        let snapshot = self.snapshot.read().ok()?.clone()?;
        let why = other_model(&snapshot, model)?;
        let next = self.state.lock().ok()?.rebuild_outlook();
        Some(format!("{why}; {next}"))
    }

    /// How to update this root's index: the settings' options, kept to the root's files.
    fn index_options(&self, settings: &Settings) -> IndexOptions {
        IndexOptions { subtree: (!self.subtree.is_empty()).then(|| self.subtree.clone()), ..settings.index_options() }
    }

    fn view(&self) -> Option<RootIndex> {
        let snapshot = self.snapshot.read().ok()?.clone()?;
        Some(RootIndex { root: self.root.clone(), snapshot, subtree: self.subtree.clone() })
    }

    fn is_partial(&self) -> bool {
        let (enabled, indexing) = self.state.lock().map(|s| (s.enabled, s.indexing)).unwrap_or((false, false));
        let published = self.snapshot.read().ok().and_then(|s| s.as_deref().map(|s| self.waits_for_vectors(s)));
        answers_are_partial(enabled, indexing, published)
    }

    /// Whether chunks of this root's files in `snapshot` have no vector yet (a folder inside a
    /// project does not wait for the rest of the project's).
    fn waits_for_vectors(&self, snapshot: &Snapshot) -> bool {
        snapshot.pending_under(&self.subtree) > 0
    }
}

/// Answers leave part of a root out: its index is being built or updated, holds chunks not
/// embedded yet (`published`: the published snapshot's own `is_partial`), or has never been
/// published (the first update has not run: paused, queued or failed). A root turned off is not
/// partial: it is not meant to be searched.
fn answers_are_partial(enabled: bool, indexing: bool, published: Option<bool>) -> bool {
    indexing || published.unwrap_or(enabled)
}

#[derive(Default)]
struct RootState {
    enabled: bool,
    indexing: bool,
    last_error: Option<String>,
    reason: Option<String>,
}

impl RootState {
    /// Whether an index another model built will be replaced: read when asked, not when the
    /// index was opened (a rebuild can fail, indexing can be turned off).
    fn rebuild_outlook(&self) -> &'static str {
        match (self.enabled, self.indexing, &self.last_error) {
            (false, _, _) => "indexing is off here, so it is not rebuilt",
            (true, true, _) => "it is being rebuilt",
            (true, false, Some(_)) => "its rebuild failed (see last_error)",
            (true, false, None) => "it is rebuilt next",
        }
    }
}

/// Why `snapshot`'s vectors cannot answer `model`'s query vectors (another model built them:
/// a new default model has the same dimension, so they would answer by noise); `None` if they
/// can. Its lexical index and symbols do not depend on the model and still answer.
fn other_model(snapshot: &Snapshot, model: &ModelInfo) -> Option<String> {
    (!snapshot.built_by(model)).then(|| {
        format!(
            "its index was built with model {} ({}-d) and this server embeds with {} ({}-d)",
            snapshot.model_id(),
            snapshot.dim(),
            model.id,
            model.dim,
        )
    })
}

/// How a search says it used only the lexical half of a root's index (hybrid queries), or
/// none of it (dense queries and find-similar), because another model built its vectors.
const BY_WORDS_ONLY: &str = "searched by words only";
const NOT_SEARCHED: &str = "not searched";

enum Job {
    Update(PathBuf, Scope),
    Shutdown,
}

/// What an update of a root must look at.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    /// Walk the whole root (start-up, reindex, a directory or the root itself named).
    All,
    /// Only these root-relative paths changed (saves, edits, watcher events).
    Paths(Vec<String>),
}

impl Scope {
    /// One update covering both.
    fn merge(&mut self, other: Scope) {
        match (&mut *self, other) {
            (Scope::Paths(mine), Scope::Paths(theirs)) => {
                for path in theirs {
                    if !mine.contains(&path) {
                        mine.push(path);
                    }
                }
            }
            (_, _) => *self = Scope::All,
        }
    }
}

/// Status `reason` of a root that is not indexed (a setting, the consent answer, its config or
/// `raggrep.toggle`).
const TURNED_OFF: &str = "indexing is turned off for this workspace";

/// A live multi-root workspace.
pub struct Workspace {
    embedder: Arc<dyn Embedder>,
    events: Arc<dyn Events>,
    roots: RwLock<Vec<Arc<Root>>>,
    settings: RwLock<Settings>,
    /// Editor buffers by absolute path.
    overlays: DashMap<PathBuf, String>,
    jobs: Mutex<Sender<Job>>,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
    memory_level: Mutex<MemoryLevel>,
    /// Set on shutdown: a running update publishes what it has and stops.
    cancel: Arc<AtomicBool>,
    /// Indexing paused by the user: updates wait before they start and between embedding
    /// batches (searches go on over what is published).
    paused: Pause,
    /// The front door serving this workspace, for the audit log.
    door: audit::DoorCell,
}

/// A switch the indexer thread waits on.
#[derive(Default)]
struct Pause {
    paused: Mutex<bool>,
    changed: std::sync::Condvar,
}

impl Pause {
    fn set(&self, paused: bool) {
        if let Ok(mut flag) = self.paused.lock() {
            *flag = paused;
        }
        self.changed.notify_all();
    }

    fn is_set(&self) -> bool {
        self.paused.lock().map(|p| *p).unwrap_or(false)
    }

    /// Blocks while paused, unless `cancel` is (or becomes) set: shutdown never waits on a pause.
    fn wait(&self, cancel: &AtomicBool) {
        let Ok(mut paused) = self.paused.lock() else { return };
        while *paused && !cancel.load(Ordering::Relaxed) {
            paused = match self.changed.wait(paused) {
                Ok(guard) => guard,
                Err(_) => return,
            };
        }
    }
}

impl Workspace {
    /// The model this workspace embeds with (other engine parts, e.g. the vector store, share it).
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    pub fn new(embedder: Arc<dyn Embedder>, settings: Settings, events: Arc<dyn Events>) -> Arc<Workspace> {
        let (tx, rx) = mpsc::channel();
        let workspace = Arc::new(Workspace {
            embedder,
            events,
            roots: RwLock::new(Vec::new()),
            settings: RwLock::new(settings),
            overlays: DashMap::new(),
            jobs: Mutex::new(tx),
            worker: Mutex::new(None),
            memory_level: Mutex::new(MemoryLevel::Ok),
            cancel: Arc::new(AtomicBool::new(false)),
            paused: Pause::default(),
            door: audit::DoorCell::default(),
        });
        let weak = Arc::downgrade(&workspace);
        let lowered = workspace.settings().index_priority == IndexPriority::Low;
        // A roomy stack: tree-sitter walks recurse (bounded by the chunker's depth cap).
        let handle = std::thread::Builder::new()
            .name("raggrep-indexer".into())
            .stack_size(16 << 20)
            .spawn(move || {
                if lowered && let Err(err) = crate::priority::lower_current_thread() {
                    tracing::warn!("cannot lower the indexer's priority: {err}");
                }
                worker(weak, rx)
            })
            .ok();
        if let Ok(mut slot) = workspace.worker.lock() {
            *slot = handle;
        }
        workspace
    }

    /// Pauses indexing: an update under way stops after its current embedding batch (what it
    /// published stays searchable), queued ones wait. Changes keep being queued meanwhile.
    pub fn pause(&self) {
        self.paused.set(true);
    }

    /// Lets indexing go on where it stopped.
    pub fn resume(&self) {
        self.paused.set(false);
    }

    pub fn is_paused(&self) -> bool {
        self.paused.is_set()
    }

    /// Names the front door serving this workspace (recorded in the audit log).
    pub fn set_door(&self, door: audit::Door) {
        self.door.set(door);
    }

    /// Records an operation in the audit log of every root (`detail`: counts, never code).
    fn audit(&self, op: &str, started: Instant, detail: serde_json::Value) {
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let Ok(roots) = self.roots.read() else { return };
        // Once per index: several folders of one project share theirs.
        let mut dirs: Vec<&Path> = roots.iter().map(|r| r.location.dir.as_path()).collect();
        dirs.sort_unstable();
        dirs.dedup();
        for dir in dirs {
            audit::record(dir, self.door.get(), op, ms, detail.clone());
        }
    }

    /// Logs a root whose published index another model built: until it is rebuilt, searches
    /// use its words only. Said as status says it ([`Root::other_model`]).
    fn log_other_model(&self, root: &Root) {
        if let Some(why) = root.other_model(self.embedder.info()) {
            tracing::warn!(root = %root.root.display(), "{BY_WORDS_ONLY}: {why}");
        }
    }

    /// Lets queries of `root` see what its update published (another process may publish an
    /// index of another model while this one waits for the lock: it is searched by words only).
    fn publish(&self, root: &Root, snapshot: Snapshot) {
        if let Ok(mut slot) = root.snapshot.write() {
            *slot = Some(Arc::new(snapshot));
        }
        self.log_other_model(root);
    }

    /// Queues a full update of every root (the user asked for it).
    pub fn reindex(&self) {
        self.audit("reindex", Instant::now(), serde_json::json!({ "roots": self.roots().len() }));
        self.schedule_all();
    }

    pub fn settings(&self) -> Settings {
        self.settings.read().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn set_settings(&self, settings: Settings) {
        if let Ok(mut current) = self.settings.write() {
            *current = settings;
        }
    }

    /// Adds a root: opens its existing index at once (memory-mapped) and, if `index` is true,
    /// queues a background update to reconcile it with the disk (or build it).
    ///
    /// A folder inside a project indexed higher up uses the project's index ([`FolderIndex`]):
    /// it is searched and updated for the folder's files only. It is not rebuilt from here: if
    /// another model built it, the folder is searched by words and not indexed.
    pub fn add_root(&self, path: &Path, index: bool) -> Result<(), IndexError> {
        self.add_folder(FolderIndex::of(path)?, index)
    }

    /// [`Workspace::add_root`] for a folder whose index the caller has found already (a door
    /// that read the index's config first to decide `index`).
    pub fn add_folder(&self, folder: FolderIndex, index: bool) -> Result<(), IndexError> {
        let FolderIndex { root: folder, location, subtree } = folder;
        if self.roots.read().map(|r| r.iter().any(|x| x.root == folder)).unwrap_or(false) {
            return Ok(());
        }
        let snapshot = match Snapshot::open(&location) {
            Ok(snapshot) => Some(Arc::new(snapshot)),
            Err(IndexError::Missing(_)) => None,
            Err(err) => {
                tracing::warn!(root = %location.root.display(), "{err}; it will be rebuilt");
                None
            }
        };
        // Rebuilding a project's index for another model from one of its folders would drop the
        // rest of the project from it.
        let not_ours = (!subtree.is_empty())
            .then(|| snapshot.as_deref().and_then(|s| other_model(s, self.embedder.info())))
            .flatten()
            .map(|why| {
                format!(
                    "it uses the index of {} and {why}: rebuild it there (`raggrep index` in {0})",
                    location.root.display()
                )
            });
        let index = index && not_ours.is_none();
        if !subtree.is_empty() {
            tracing::info!(folder = %folder.display(), "uses the index of {}", location.root.display());
        }
        let root = Arc::new(Root {
            root: folder.clone(),
            location,
            subtree,
            snapshot: RwLock::new(snapshot),
            state: Mutex::new(RootState {
                enabled: index,
                // From now, not from when the queued update starts: until it has compared the
                // index opened above with the disk, answers may miss what changed meanwhile.
                indexing: index,
                reason: not_ours.or_else(|| (!index).then(|| TURNED_OFF.to_string())),
                ..RootState::default()
            }),
            indexed_buffers: AtomicBool::new(false),
        });
        self.log_other_model(&root);
        if let Ok(mut roots) = self.roots.write() {
            roots.push(root);
        }
        if index {
            self.schedule(&folder);
        }
        Ok(())
    }

    pub fn remove_root(&self, path: &Path) {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if let Ok(mut roots) = self.roots.write() {
            roots.retain(|r| r.root != path);
        }
    }

    /// Root directories, in order.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.read().map(|r| r.iter().map(|x| x.root.clone()).collect()).unwrap_or_default()
    }

    /// Turns indexing of a root on or off (and remembers it in `.raggrep/config.toml`, unless the
    /// root is a folder inside an indexed project).
    pub fn set_enabled(&self, root: &Path, enabled: bool) -> Result<(), IndexError> {
        let Some(root) = self.root(root) else { return Ok(()) };
        // A folder inside an indexed project shares the project's config: turning the folder
        // off must not turn the project off for every other door, so it is not remembered.
        if root.subtree.is_empty() {
            ProjectConfig { enabled: Some(enabled), ..ProjectConfig::load(&root.location) }.save(&root.location)?;
        }
        audit::record(&root.location.dir, self.door.get(), "toggle", 0.0, serde_json::json!({ "enabled": enabled }));
        if let Ok(mut state) = root.state.lock() {
            state.enabled = enabled;
            state.reason = (!enabled).then(|| TURNED_OFF.to_string());
        }
        if enabled {
            self.schedule(&root.root);
        }
        Ok(())
    }

    pub fn is_enabled(&self, root: &Path) -> bool {
        self.root(root).and_then(|r| r.state.lock().ok().map(|s| s.enabled)).unwrap_or(false)
    }

    fn root(&self, path: &Path) -> Option<Arc<Root>> {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.roots.read().ok()?.iter().find(|r| r.root == path).cloned()
    }

    /// The root containing `path` and the path relative to it (deepest root wins).
    pub fn locate(&self, path: &Path) -> Option<(PathBuf, String)> {
        let path = canonical_or_parent(path);
        let roots = self.roots.read().ok()?;
        let root = roots.iter().filter(|r| path.starts_with(&r.root)).max_by_key(|r| r.root.as_os_str().len())?;
        let rel = crate::walk::relative_path(&path, &root.root)?;
        Some((root.root.clone(), rel))
    }

    /// Queues an update of the root containing `path` (or of `path` if it is a root).
    pub fn schedule(&self, path: &Path) {
        if let Some((root, rel)) = self.locate(path)
            && let Ok(jobs) = self.jobs.lock()
        {
            // A file named: only it can have changed, no walk needed (the update falls back to
            // one when the path is new to the index). The root itself: walk it.
            let scope = if rel.is_empty() { Scope::All } else { Scope::Paths(vec![rel]) };
            let _ = jobs.send(Job::Update(root, scope));
        }
    }

    /// Queues an update of every enabled root.
    pub fn schedule_all(&self) {
        for root in self.roots() {
            self.schedule(&root);
        }
    }

    /// Records an editor buffer's text for `path` (indexed instead of the disk at the next
    /// update). A buffer over the size limit is not kept: the file on disk stands for it.
    pub fn set_overlay(&self, path: &Path, text: String) {
        let limit = self.settings().max_file_size;
        if text.len() as u64 > limit {
            tracing::info!(path = %path.display(), bytes = text.len(), limit, "editor buffer over the size limit: not indexed");
            self.overlays.remove(&canonical_or_parent(path));
            return;
        }
        self.overlays.insert(canonical_or_parent(path), text);
    }

    /// Forgets an editor buffer (closed or saved): the disk is the truth again.
    pub fn clear_overlay(&self, path: &Path) {
        self.overlays.remove(&canonical_or_parent(path));
    }

    /// Searches every root; hits are merged by score.
    pub fn find(&self, query: &Query) -> Result<Found, SearchError> {
        let started = Instant::now();
        let reranker = search::reranker_for(query, Some(self.embedder.as_ref()))?;
        let vector = if query.mode != Mode::Lexical && !query.text.trim().is_empty() {
            Some(self.embedder.embed_query(&query.text)?)
        } else {
            None
        };
        let found = self.search_roots(query, vector.as_ref(), reranker, None)?;
        let mut detail = query_detail(query, found.hits.len());
        if let Some(confidence) = found.confidence {
            detail["confidence"] = serde_json::json!(confidence.value);
        }
        self.audit("search", started, detail);
        Ok(found)
    }

    /// [`Workspace::find`]'s hits alone, for doors that report no confidence.
    pub fn search(&self, query: &Query) -> Result<Vec<RootHit>, SearchError> {
        Ok(self.find(query)?.hits)
    }

    fn search_roots(
        &self,
        query: &Query,
        vector: Option<&Vector>,
        reranker: Option<&dyn crate::embed::Reranker>,
        exclude: Option<(&Path, &str, u32, u32)>,
    ) -> Result<Found, SearchError> {
        let snapshots = self.snapshots();
        // `k` comes from the client: no more than every chunk there is.
        let total: usize = snapshots.iter().map(|v| v.snapshot.chunk_count()).sum();
        let query = &Query { k: query.k.min(total), ..query.clone() };
        if query.k == 0 {
            return Ok(Found::default());
        }
        // Learned scores are absolute (not normalised within one list), so they merge across
        // roots by score like single-mode hits do, below.
        if query.mode == Mode::Hybrid && snapshots.len() > 1 && query.fusion != search::Fusion::Learned {
            // Fused scores are normalised within one candidate list, so they do not compare
            // across roots: rank each signal across all roots first, then fuse once.
            if query.rerank {
                return Err(SearchError::RerankMode("a fixed fusion"));
            }
            let sub = |mode| Query { mode, k: query.k.saturating_mul(3).max(20), ..query.clone() };
            let dense = self.search_roots(&sub(Mode::Dense), vector, None, exclude)?.hits;
            let lexical = self.search_roots(&sub(Mode::Lexical), vector, None, exclude)?.hits;
            type Key = (PathBuf, String, u32, u32);
            let key = |h: &RootHit| -> Key { (h.root.clone(), h.hit.path.clone(), h.hit.start_line, h.hit.end_line) };
            let mut ids: Vec<RootHit> = Vec::new();
            let mut known: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
            let mut id_of = |h: &RootHit| {
                *known.entry(key(h)).or_insert_with(|| {
                    ids.push(h.clone());
                    ids.len() - 1
                })
            };
            let dense_ids: Vec<(usize, f32)> = dense.iter().map(|h| (id_of(h), h.hit.score)).collect();
            let lexical_ids: Vec<(usize, f32)> = lexical.iter().map(|h| (id_of(h), h.hit.score)).collect();
            let hits = search::fuse(&dense_ids, &lexical_ids, query.fusion)
                .into_iter()
                .take(query.k)
                .map(|(i, score)| {
                    let mut hit = ids[i].clone();
                    hit.hit.score = score;
                    hit
                })
                .collect();
            return Ok(Found { hits, confidence: None, reranked_by: None });
        }
        let mut all: Vec<RootHit> = Vec::new();
        // Roots searched by words only, each list in its own order: BM25 scores do not compare
        // with the others' (probabilities), so they are merged by rank below.
        let mut by_words: Vec<Vec<RootHit>> = Vec::new();
        let mut confidence: Option<search::Confidence> = None;
        let mut reranked = false;
        for view in &snapshots {
            let RootIndex { root, snapshot, subtree } = view;
            let scoped = within(query, subtree);
            let query: &Query = &scoped;
            let words_only = Query { mode: Mode::Lexical, rerank: false, ..query.clone() };
            let excluded = |c: &index::ChunkRef<'_>| match exclude {
                Some((r, path, start, end)) => {
                    r == root && view.visible(c.path) == Some(path) && c.start_line <= end && start <= c.end_line
                }
                None => false,
            };
            let exclude_fn: &dyn Fn(&index::ChunkRef<'_>) -> bool = &excluded;
            // Another model's vectors would answer this query vector by noise; its words (BM25,
            // symbols) do not depend on the model. Learned fusion without a query vector ranks
            // far worse than BM25 alone (TUNE chunk R@5 25.9 against 50.3), so such a root
            // answers a hybrid query as a lexical one, and a dense one not at all.
            let other_model = !snapshot.built_by(self.embedder.info());
            if other_model && query.mode == Mode::Dense {
                continue;
            }
            let ranked_apart = other_model && query.mode == Mode::Hybrid;
            let (query, vector, reranker) =
                if other_model { (&words_only, None, None) } else { (query, vector, reranker) };
            reranked |= reranker.is_some();
            // Each root reranks its own best candidates: reranked scores are learned scores
            // too, absolute, so they merge by score below.
            let results = search::search_with(
                snapshot,
                vector,
                reranker,
                query,
                exclude.is_some().then_some(exclude_fn),
                Instant::now(),
            )?;
            // The query's glob kept hits inside the root; their paths are the root's.
            let hits = results.results.into_iter().filter_map(|mut hit| {
                hit.path = view.visible(&hit.path)?.to_string();
                Some(RootHit { root: root.clone(), hit })
            });
            if ranked_apart {
                by_words.push(hits.collect());
                continue;
            }
            all.extend(hits);
            // The answer lives in one root: the workspace is as confident as its surest root.
            confidence = match (confidence, results.confidence) {
                (Some(a), Some(b)) => Some(if b.value > a.value { b } else { a }),
                (a, b) => a.or(b),
            };
        }
        all.sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score));
        // The calibration knows rankings of one kind: a list mixed with words-only hits is not
        // one it was fitted on, so no claim is made about it.
        if !by_words.is_empty() {
            confidence = None;
        }
        let mut hits = interleave(all, by_words);
        hits.truncate(query.k);
        Ok(Found { hits, confidence, reranked_by: reranker.filter(|_| reranked).map(|r| r.id().to_string()) })
    }

    /// Why results in `mode` are worse than they should be (a root's lexical index unavailable,
    /// damaged vectors, another model's vectors so that only its words are searched, or none of
    /// it), root by root; `None` when all is well.
    pub fn degraded(&self, mode: Mode) -> Option<String> {
        let model = self.embedder.info();
        self.root_by_root(|root| {
            let other_model = match mode {
                Mode::Lexical => None,
                Mode::Hybrid => root.other_model(model).map(|why| format!("{BY_WORDS_ONLY}: {why}")),
                Mode::Dense => root.other_model(model).map(|why| format!("{NOT_SEARCHED}: {why}")),
            };
            other_model.or_else(|| {
                let snapshot = root.snapshot.read().ok()?.clone()?;
                snapshot.degraded(mode != Mode::Lexical, mode != Mode::Dense)
            })
        })
    }

    /// `why` of each root that has something to say, as `<root>: <why>`, joined; `None` if none.
    fn root_by_root(&self, why: impl Fn(&Root) -> Option<String>) -> Option<String> {
        let Ok(roots) = self.roots.read() else { return None };
        let reasons: Vec<String> =
            roots.iter().filter_map(|root| Some(format!("{}: {}", root.root.display(), why(root)?))).collect();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }

    /// True while an answer leaves part of some root out (see [`answers_are_partial`]).
    pub fn is_partial(&self) -> bool {
        self.roots.read().is_ok_and(|roots| roots.iter().any(|root| root.is_partial()))
    }

    /// Chunks similar to the code at `path` lines `start..=end` (1-based), excluding that code.
    /// Uses the indexed chunks under the range when there are any, else embeds the range's text.
    ///
    /// Also returns the lines actually used as the source: the range widened to the indexed
    /// chunks it touches (those are excluded from the results).
    pub fn find_similar(
        &self,
        path: &Path,
        start: u32,
        end: u32,
        k: usize,
    ) -> Result<(Vec<RootHit>, (u32, u32)), SearchError> {
        let started = Instant::now();
        let Some((root, rel)) = self.locate(path) else {
            return Err(SearchError::OutsideWorkspace(path.to_path_buf()));
        };
        let mut vectors: Vec<Vector> = Vec::new();
        let mut span = (start, end);
        if let Some(view) = self.view(&root) {
            let snapshot = &view.snapshot;
            let overlapping: Vec<_> = snapshot
                .chunks_of(&view.in_index(&rel))
                .into_iter()
                .filter(|c| c.start_line <= end && start <= c.end_line)
                .collect();
            // Exclude everything the source chunks cover, not just the selected lines.
            if let (Some(first), Some(last)) = (overlapping.first(), overlapping.last()) {
                span = (span.0.min(first.start_line), span.1.max(last.end_line));
            }
            // Another model's vectors are not this model's: the source is embedded anew below.
            if snapshot.built_by(self.embedder.info()) {
                vectors.extend(overlapping.iter().filter_map(|c| snapshot.chunk_vector(c.index)));
            }
        }
        let text = self.read_lines(path, start, end);
        let buffer_differs = self.overlays.contains_key(&canonical_or_parent(path));
        if vectors.is_empty() || buffer_differs {
            if text.trim().is_empty() {
                return Ok((Vec::new(), span));
            }
            vectors = self.embedder.embed_documents(&[text.as_str()])?;
        }
        let dim = vectors.first().map_or(0, Vector::dim);
        let mut mean = vec![0.0f32; dim];
        for v in &vectors {
            mean.iter_mut().zip(v.as_slice()).for_each(|(m, x)| *m += x);
        }
        let vector = Vector::normalized(mean);
        let query = Query { k, mode: Mode::Dense, ..Query::new(text) };
        let hits = self.search_roots(&query, Some(&vector), None, Some((&root, &rel, span.0, span.1)))?.hits;
        self.audit("find_similar", started, serde_json::json!({ "k": k, "results": hits.len() }));
        Ok((hits, span))
    }

    /// Lines (1-based, inclusive) of the smallest indexed unit containing `line` of `path`.
    pub fn enclosing_chunk(&self, path: &Path, rel: &str, line: u32) -> Option<(u32, u32)> {
        let (root, _) = self.locate(path)?;
        let view = self.view(&root)?;
        view.snapshot
            .chunks_of(&view.in_index(rel))
            .into_iter()
            .filter(|c| c.start_line <= line && line <= c.end_line)
            .min_by_key(|c| c.end_line - c.start_line)
            .map(|c| (c.start_line, c.end_line))
    }

    /// The best chunks for `question` that fit in `max_tokens`, each headed by its citation.
    pub fn context(&self, question: &str, max_tokens: usize) -> Result<Context, SearchError> {
        let started = Instant::now();
        let query = Query { k: 30, ..Query::new(question) };
        let Found { hits, confidence, .. } = self.find(&query)?;
        let snippets = hits.into_iter().map(|RootHit { root, hit }| {
            let body = self.read_lines(&crate::walk::resolve(&root, &hit.path), hit.start_line, hit.end_line);
            crate::ask::Snippet::from_hit(hit, body)
        });
        let fitted = crate::ask::fit_snippets(snippets, max_tokens);
        let tokens = fitted.tokens;
        let sources: Vec<String> = fitted.sources.iter().map(crate::ask::Source::citation).collect();
        self.audit(
            "context",
            started,
            serde_json::json!({ "max_tokens": max_tokens, "tokens": tokens, "sources": sources.len() }),
        );
        Ok(Context { text: fitted.text, tokens, sources, confidence })
    }

    /// Lines `start..=end` (1-based) of a file, from the editor buffer if there is one.
    fn read_lines(&self, path: &Path, start: u32, end: u32) -> String {
        let overlay = self.overlays.get(&canonical_or_parent(path)).map(|o| o.value().clone());
        let text = overlay.or_else(|| std::fs::read_to_string(path).ok()).unwrap_or_default();
        crate::ask::line_range(&text, start, end)
    }

    /// Whether the published index of the root holding `path` has it as an indexed file.
    pub fn indexes(&self, path: &Path) -> bool {
        let Some((root, rel)) = self.locate(path) else { return false };
        self.view(&root).is_some_and(|v| v.snapshot.has_file(&v.in_index(&rel)))
    }

    /// Whether the file behind a hit changed since it was indexed: the chunk's bytes on disk no
    /// longer hash to what the index holds (or the file is gone).
    pub fn is_stale(&self, hit: &RootHit) -> bool {
        let Some(view) = self.view(&hit.root) else { return false };
        let chunks = view.snapshot.chunks_of(&view.in_index(&hit.hit.path));
        // Look the chunk up by position, not index: a newer snapshot may have been swapped in.
        let Some(chunk) = chunks.iter().find(|c| c.start_line == hit.hit.start_line && c.end_line == hit.hit.end_line)
        else {
            return true;
        };
        let Ok(bytes) = std::fs::read(crate::walk::resolve(&hit.root, &hit.hit.path)) else { return true };
        match bytes.get(chunk.start_byte..chunk.end_byte) {
            Some(body) => crate::content_hash(body) != chunk.hash,
            None => true,
        }
    }

    /// The latest published index of a root, as the root sees it.
    fn view(&self, root: &Path) -> Option<RootIndex> {
        self.root(root)?.view()
    }

    /// The latest published index of every root that has one, in root order.
    pub fn snapshots(&self) -> Vec<RootIndex> {
        let Ok(roots) = self.roots.read() else { return Vec::new() };
        roots.iter().filter_map(|r| r.view()).collect()
    }

    pub fn status(&self) -> Vec<RootStatus> {
        let Ok(roots) = self.roots.read() else { return Vec::new() };
        let level = self.memory_level.lock().map(|l| *l).unwrap_or(MemoryLevel::Ok);
        roots
            .iter()
            .map(|root| {
                let snapshot = root.snapshot.read().ok().and_then(|s| s.clone());
                let by_words = root.other_model(self.embedder.info()).map(|why| format!("{BY_WORDS_ONLY}: {why}"));
                let state = root.state.lock();
                let (enabled, indexing, last_error, reason) = match &state {
                    Ok(s) => (s.enabled, s.indexing, s.last_error.clone(), s.reason.clone()),
                    Err(_) => (false, false, None, None),
                };
                let paused = self.is_paused().then(|| {
                    "indexing is paused (resume with raggrep.resume, or SIGUSR2 to raggrep watch)".to_string()
                });
                let reasons: Vec<String> = [paused.or(reason), by_words].into_iter().flatten().collect();
                RootStatus {
                    // The root is said once, by the status itself.
                    index: snapshot.as_ref().map(|s| IndexStats { root: String::new(), ..s.stats() }),
                    root: root.root.display().to_string(),
                    index_root: (!root.subtree.is_empty()).then(|| root.location.root.display().to_string()),
                    enabled,
                    indexing,
                    partial: answers_are_partial(
                        enabled,
                        indexing,
                        snapshot.as_deref().map(|s| root.waits_for_vectors(s)),
                    ),
                    last_error,
                    memory_level: level,
                    reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
                }
            })
            .collect()
    }

    /// Stops the worker after the update in progress (if any) has published. Roots last
    /// indexed with editor buffers are published once more from the disk (chunks only, no
    /// embedding): the buffers die with the editor, and other readers (the CLI) must not keep
    /// finding code that exists nowhere.
    pub fn shutdown(&self) {
        self.cancel.store(true, Ordering::Relaxed);
        // Wakes an update waiting on a pause; it sees `cancel` and finishes.
        self.paused.changed.notify_all();
        if let Ok(jobs) = self.jobs.lock() {
            let _ = jobs.send(Job::Shutdown);
        }
        if let Some(handle) = self.worker.lock().ok().and_then(|mut w| w.take()) {
            let _ = handle.join();
        }
        self.overlays.clear();
        let roots = self.roots.read().map(|r| r.clone()).unwrap_or_default();
        for root in roots.iter().filter(|r| r.indexed_buffers.load(Ordering::Relaxed)) {
            let options = IndexOptions { embed: false, ..root.index_options(&self.settings()) };
            match index::update(&root.location, self.embedder.as_ref(), &options, &mut |_| {}) {
                Ok(_) => root.indexed_buffers.store(false, Ordering::Relaxed),
                Err(err) => tracing::warn!(root = %root.root.display(), "restoring the disk version: {err}"),
            }
        }
    }

    /// Runs one update of `root` on the calling (worker) thread.
    fn run_update(&self, root: &Arc<Root>, scope: Scope) {
        let enabled = root.state.lock().map(|s| s.enabled).unwrap_or(false);
        if !enabled {
            // Turned off while its first update was queued.
            if let Ok(mut state) = root.state.lock() {
                state.indexing = false;
            }
            return;
        }
        self.paused.wait(&self.cancel);
        let started = Instant::now();
        let settings = self.settings();
        let mut options = root.index_options(&settings);
        options.cancel = Some(Arc::clone(&self.cancel));
        if let Scope::Paths(paths) = scope {
            options.only_paths = Some(paths.iter().map(|path| index::in_index(&root.subtree, path)).collect());
        }
        for overlay in self.overlays.iter() {
            if let Some(rel) = crate::walk::relative_path(overlay.key(), &root.root) {
                options.overlays.insert(index::in_index(&root.subtree, &rel), overlay.value().clone());
            }
        }
        if let Ok(mut state) = root.state.lock() {
            state.indexing = true;
        }
        if !options.overlays.is_empty() {
            root.indexed_buffers.store(true, Ordering::Relaxed);
        }
        let events = Arc::clone(&self.events);
        let root_path = root.root.clone();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            index::update(&root.location, self.embedder.as_ref(), &options, &mut |p| {
                if let Progress::Chunked { .. } | Progress::Published { .. } | Progress::Followed = p {
                    // A new generation is published (lexical search and the chunk list first,
                    // then more embeddings every few seconds; or by another process while this
                    // one waits for the lock): let queries see it.
                    let current = root.snapshot.read().ok().and_then(|s| s.clone());
                    if let Ok(snapshot) = Snapshot::open_reusing(&root.location, current.as_deref()) {
                        self.publish(root, snapshot);
                    }
                }
                events.progress(&root_path, &p);
                if let Progress::Embedding { .. } = p {
                    // Between batches: a pause takes effect within one batch.
                    self.paused.wait(&self.cancel);
                }
            })
        }));
        if options.overlays.is_empty() && matches!(result, Ok(Ok(_))) {
            root.indexed_buffers.store(false, Ordering::Relaxed);
        }
        let outcome = match result {
            Ok(Ok(stats)) => Ok(stats),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err("the indexer panicked; see the log".to_string()),
        };
        let current = root.snapshot.read().ok().and_then(|s| s.clone());
        match Snapshot::open_reusing(&root.location, current.as_deref()) {
            Ok(snapshot) => self.publish(root, snapshot),
            Err(err) => tracing::warn!(root = %root_path.display(), "cannot open the index after updating: {err}"),
        }
        let budget_full = matches!(&outcome, Ok(stats) if stats.skipped_files > 0)
            && self
                .view(&root_path)
                .is_some_and(|v| v.snapshot.skipped().iter().any(|(_, r)| r.starts_with("memory budget")));
        if let Ok(mut state) = root.state.lock() {
            state.indexing = false;
            state.last_error = outcome.as_ref().err().cloned();
            state.reason = budget_full.then(|| {
                format!("memory budget of {} MB reached: some files are not indexed", settings.memory_budget_mb)
            });
        }
        let detail = match &outcome {
            Ok(stats) => serde_json::to_value(stats).unwrap_or_default(),
            Err(message) => serde_json::json!({ "error": message }),
        };
        audit::record(&root.location.dir, self.door.get(), "index", started.elapsed().as_secs_f64() * 1000.0, detail);
        match outcome {
            Ok(stats) => self.events.updated(&root_path, &stats),
            Err(message) => self.events.failed(&root_path, &message),
        }
        self.check_memory(settings.memory_budget_mb);
    }

    fn check_memory(&self, budget_mb: u64) {
        let chunks: u64 = self.snapshots().iter().map(|v| v.snapshot.chunk_count() as u64).sum();
        let used = chunks * BYTES_PER_CHUNK;
        let budget = budget_mb * 1_000_000;
        let used_mb = used.div_ceil(1_000_000);
        let level = if used * 100 >= budget * 95 {
            MemoryLevel::Full
        } else if used * 100 >= budget * 80 {
            MemoryLevel::Warning
        } else {
            MemoryLevel::Ok
        };
        let changed = self.memory_level.lock().map(|mut l| std::mem::replace(&mut *l, level) != level).unwrap_or(false);
        if changed && level != MemoryLevel::Ok {
            self.events.memory(level, used_mb, budget_mb);
        }
    }
}

/// `query` kept to a root's part of its index ([`RootIndex`]): the root's files, and inside
/// them the query's own glob (relative to the root).
fn within<'q>(query: &'q Query, subtree: &str) -> std::borrow::Cow<'q, Query> {
    if subtree.is_empty() {
        return std::borrow::Cow::Borrowed(query);
    }
    let path_glob = search::glob_under(subtree, query.path_glob.as_deref());
    std::borrow::Cow::Owned(Query { path_glob: Some(path_glob), ..query.clone() })
}

/// `lists` merged by rank: the first of each, then the second of each, and so on (lists whose
/// scores do not compare).
fn interleave(first: Vec<RootHit>, rest: Vec<Vec<RootHit>>) -> Vec<RootHit> {
    if rest.is_empty() {
        return first;
    }
    let mut lists: Vec<std::vec::IntoIter<RootHit>> = std::iter::once(first).chain(rest).map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(lists.iter_mut().filter_map(Iterator::next));
        if out.len() == before {
            return out;
        }
    }
}

/// What the audit log keeps of a query: its settings and counts, not its text.
pub fn query_detail(query: &Query, results: usize) -> serde_json::Value {
    serde_json::json!({
        "mode": query.mode,
        "k": query.k,
        "query_chars": query.text.chars().count(),
        "filtered": query.path_glob.is_some() || query.language.is_some(),
        "rerank": query.rerank,
        "results": results,
    })
}

fn worker(workspace: std::sync::Weak<Workspace>, jobs: Receiver<Job>) {
    while let Ok(job) = jobs.recv() {
        let mut roots: Vec<(PathBuf, Scope)> = Vec::new();
        let mut stop = false;
        let push = |job: Job, roots: &mut Vec<(PathBuf, Scope)>| match job {
            Job::Update(root, scope) => {
                match roots.iter_mut().find(|(queued, _)| *queued == root) {
                    Some((_, queued)) => queued.merge(scope),
                    None => roots.push((root, scope)),
                }
                false
            }
            Job::Shutdown => true,
        };
        stop |= push(job, &mut roots);
        // Coalesce what queued up meanwhile: one update per root covers them all.
        while let Ok(job) = jobs.try_recv() {
            stop |= push(job, &mut roots);
        }
        let Some(workspace) = workspace.upgrade() else { return };
        for (root, scope) in roots {
            if stop {
                break;
            }
            if let Some(root) = workspace.root(&root) {
                // A panic outside the guarded update itself marks this root failed and keeps
                // the thread serving the others.
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| workspace.run_update(&root, scope)));
                if run.is_err() {
                    let message = "the indexer panicked; see the log".to_string();
                    if let Ok(mut state) = root.state.lock() {
                        state.indexing = false;
                        state.last_error = Some(message.clone());
                    }
                    workspace.events.failed(&root.root, &message);
                }
            }
        }
        if stop {
            return;
        }
    }
}

/// Canonical path; for a path that does not exist (a deleted file), its canonical parent joined
/// with its name.
fn canonical_or_parent(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => {
            std::fs::canonicalize(parent).map_or_else(|_| path.to_path_buf(), |p| p.join(name))
        }
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_settings_of_what_is_indexed_trigger_a_rescan() {
        let base = Settings::default();
        let team = Settings { team: TeamSetting::Url("postgres://dev@db/code".into()), ..base.clone() };
        let k = Settings { default_k: 20, log_level: "debug".into(), ..base.clone() };
        let exclude = Settings { exclude: vec!["vendor/".into()], ..base.clone() };
        assert!(!base.indexing_differs(&team));
        assert!(!base.indexing_differs(&k));
        assert!(base.indexing_differs(&exclude));
    }

    struct Quiet;

    impl Events for Quiet {
        fn progress(&self, _: &Path, _: &Progress) {}
        fn updated(&self, _: &Path, _: &UpdateStats) {}
        fn failed(&self, _: &Path, _: &str) {}
        fn memory(&self, _: MemoryLevel, _: u64, _: u64) {}
    }

    /// The same vectors under another id: what a new default model of the same size looks like
    /// to an index.
    struct Renamed(crate::embed::FakeEmbedder, crate::embed::ModelInfo);

    impl Embedder for Renamed {
        fn info(&self) -> &crate::embed::ModelInfo {
            &self.1
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vector>, crate::embed::EmbedError> {
            self.0.embed_documents(texts)
        }
        fn embed_query(&self, text: &str) -> Result<Vector, crate::embed::EmbedError> {
            self.0.embed_query(text)
        }
    }

    #[test]
    fn an_index_of_another_model_answers_by_words_only() {
        let built_with = crate::embed::FakeEmbedder::new(16);
        let options = IndexOptions { shared_cache: None, ..IndexOptions::default() };
        let indexed = |embedder: &dyn Embedder| {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("a.py"), "def alpha():\n    return 1\n").unwrap();
            let location = IndexLocation::new(dir.path(), None).unwrap();
            index::update(&location, embedder, &options, &mut |_| {}).unwrap();
            dir
        };
        // "Ours" stands in for the default model: fake vectors under an id the confidence's
        // calibration lists, so the search of its root alone claims a confidence.
        let calibrated = || -> Arc<dyn Embedder> {
            let fake = crate::embed::FakeEmbedder::new(32);
            let info = crate::embed::ModelInfo { id: crate::embed::DEFAULT_MODEL.into(), ..fake.info().clone() };
            Arc::new(Renamed(fake, info))
        };
        let theirs = indexed(&built_with);
        let ours = indexed(calibrated().as_ref());
        let open_with = |embedder: Arc<dyn Embedder>, dirs: &[&Path]| {
            let workspace = Workspace::new(embedder, Settings::default(), Arc::new(Quiet));
            for dir in dirs {
                workspace.add_root(dir, false).unwrap();
            }
            workspace
        };
        let roots_found = |workspace: &Workspace, mode| {
            let query = Query { mode, k: 5, ..Query::new("alpha") };
            workspace.find(&query).unwrap().hits.into_iter().map(|h| h.root).collect::<Vec<_>>()
        };
        let reason = |workspace: &Workspace| workspace.status().first().and_then(|s| s.reason.clone());
        let same = open_with(Arc::new(crate::embed::FakeEmbedder::new(16)), &[theirs.path()]);
        assert_eq!((reason(&same).as_deref(), same.degraded(Mode::Hybrid)), (Some(TURNED_OFF), None));
        assert_eq!(roots_found(&same, Mode::Dense).len(), 1);

        let another = crate::embed::ModelInfo { id: "another-model".into(), ..built_with.info().clone() };
        let others = [
            (
                Arc::new(Renamed(crate::embed::FakeEmbedder::new(16), another)) as Arc<dyn Embedder>,
                "another-model (16-d)",
            ),
            (Arc::new(crate::embed::FakeEmbedder::new(32)), "(32-d)"),
        ];
        let root = theirs.path().canonicalize().unwrap();
        for (embedder, named) in others {
            let workspace = open_with(embedder, &[theirs.path()]);
            // Its words do not depend on the model; its vectors would answer by noise.
            assert_eq!(roots_found(&workspace, Mode::Hybrid), std::slice::from_ref(&root));
            assert_eq!(roots_found(&workspace, Mode::Lexical), std::slice::from_ref(&root));
            assert_eq!(roots_found(&workspace, Mode::Dense), Vec::<PathBuf>::new());
            assert_eq!(workspace.degraded(Mode::Lexical), None);
            let reason = reason(&workspace).unwrap_or_default();
            let hybrid = workspace.degraded(Mode::Hybrid).unwrap_or_default();
            let dense = workspace.degraded(Mode::Dense).unwrap_or_default();
            for said in [&reason, &hybrid, &dense] {
                assert!(said.contains(named), "{said}");
                assert!(said.contains(&format!("built with model {} (16-d)", built_with.info().id)), "{said}");
                assert!(said.ends_with("indexing is off here, so it is not rebuilt"), "{said}");
            }
            assert!(reason.starts_with(&format!("{TURNED_OFF}; {BY_WORDS_ONLY}: ")), "{reason}");
            assert!(hybrid.starts_with(&format!("{}: {BY_WORDS_ONLY}: ", root.display())), "{hybrid}");
            assert!(dense.starts_with(&format!("{}: {NOT_SEARCHED}: ", root.display())), "{dense}");
        }

        // Beside a root of this model, the one searched by words only takes every other place
        // (its BM25 scores do not compare with probabilities), and is the only one named.
        let ours_root = ours.path().canonicalize().unwrap();
        let twice = open_with(calibrated(), &[ours.path(), theirs.path()]);
        assert_eq!(roots_found(&twice, Mode::Hybrid), [ours_root.clone(), root.clone()]);
        assert_eq!(roots_found(&twice, Mode::Dense), [ours_root]);
        // The calibration never saw such a mixed list: no confidence is claimed for it.
        let confident =
            |workspace: &Workspace| workspace.find(&Query { k: 5, ..Query::new("alpha") }).unwrap().confidence;
        assert!(confident(&open_with(calibrated(), &[ours.path()])).is_some());
        assert!(confident(&twice).is_none());
        let hybrid = twice.degraded(Mode::Hybrid).unwrap_or_default();
        assert!(
            hybrid.starts_with(&format!("{}: {BY_WORDS_ONLY}", root.display())) && !hybrid.contains("; /"),
            "{hybrid}"
        );
    }

    #[test]
    fn the_outlook_of_an_index_of_another_model_follows_the_rebuild() {
        let outlook = |enabled, indexing, last_error: Option<&str>| {
            RootState { enabled, indexing, last_error: last_error.map(str::to_string), ..RootState::default() }
                .rebuild_outlook()
        };
        assert_eq!(outlook(true, true, None), "it is being rebuilt");
        assert_eq!(outlook(true, false, None), "it is rebuilt next");
        assert_eq!(outlook(true, true, Some("disk full")), "it is being rebuilt");
        assert_eq!(outlook(true, false, Some("disk full")), "its rebuild failed (see last_error)");
        assert_eq!(outlook(false, false, None), "indexing is off here, so it is not rebuilt");
    }

    #[test]
    fn rank_interleaving_takes_each_list_in_turn() {
        let hit = |root: &str| RootHit {
            root: PathBuf::from(root),
            hit: Hit {
                path: "a.py".into(),
                start_line: 1,
                end_line: 2,
                line: 1,
                score: 0.5,
                symbol: None,
                kind: crate::chunk::ChunkKind::Function,
                language: crate::lang::Language::Python,
                snippet: String::new(),
                chunk: 0,
            },
        };
        let roots = |hits: Vec<RootHit>| hits.into_iter().map(|h| h.root.display().to_string()).collect::<Vec<_>>();
        let merged = interleave(vec![hit("a"), hit("a"), hit("a")], vec![vec![hit("b")], vec![hit("c"), hit("c")]]);
        assert_eq!(roots(merged), ["a", "b", "c", "a", "c", "a"]);
        assert_eq!(roots(interleave(vec![hit("a")], Vec::new())), ["a"]);
        assert_eq!(roots(interleave(Vec::new(), vec![vec![hit("b")]])), ["b"]);
    }

    #[test]
    fn the_team_setting_is_a_switch_or_a_url() {
        let parse = |json: &str| serde_json::from_str::<Settings>(json).map(|s| s.team);
        assert_eq!(parse("{}").ok(), Some(TeamSetting::Configured(false)));
        assert_eq!(parse(r#"{"team": true}"#).ok(), Some(TeamSetting::Configured(true)));
        assert_eq!(
            parse(r#"{"team": "postgres://dev@db/code"}"#).ok(),
            Some(TeamSetting::Url("postgres://dev@db/code".into()))
        );
        assert!(parse(r#"{"team": 3}"#).is_err());
    }

    /// Which index a workspace folder uses: the enclosing project's when it has one (a nested
    /// repository included), its own when it asked for one, and never one above it that does
    /// not exist yet (a git work tree without an index).
    #[test]
    fn a_folder_uses_the_index_of_the_project_it_lies_in() {
        let dir = tempfile::tempdir().unwrap();
        let make = |rel: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(&path).unwrap();
            path.canonicalize().unwrap()
        };
        let project = make("project");
        std::fs::write(project.join("main.py"), "def main():\n    return 0\n").unwrap();
        for sub in ["project/src/net", "project/vendor/lib/.git", "project/own/.raggrep", "repo/.git", "repo/sub"] {
            make(sub);
        }
        let location = IndexLocation::new(&project, None).unwrap();
        let embedder = crate::embed::FakeEmbedder::new(16);
        index::update(
            &location,
            &embedder,
            &IndexOptions { shared_cache: None, ..IndexOptions::default() },
            &mut |_| {},
        )
        .unwrap();
        let of = |rel: &str| {
            let found = FolderIndex::of(&dir.path().join(rel)).unwrap();
            (found.location.root, found.subtree)
        };
        assert_eq!(of("project"), (project.clone(), String::new()));
        assert_eq!(of("project/src/net"), (project.clone(), "src/net".to_string()));
        assert_eq!(of("project/vendor/lib"), (project.clone(), "vendor/lib".to_string()));
        assert_eq!(of("project/own"), (project.join("own"), String::new()));
        let repo = dir.path().join("repo").canonicalize().unwrap();
        assert_eq!(of("repo/sub"), (repo.join("sub"), String::new()));
    }
}
