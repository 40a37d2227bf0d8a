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

mod config;
mod queries;
mod root;
mod scheduler;

pub use crate::config::{configured, user_config_file};
pub use config::{FolderIndex, ProjectConfig, Settings, TeamSetting, looks_like_project};
pub use queries::query_detail;
use root::{BY_WORDS_ONLY, NOT_SEARCHED, Root, RootState, answers_are_partial, other_model};
use scheduler::{Job, Scope, worker};

/// Bytes of memory one indexed chunk costs when searching (vector, graph links and the graph's
/// copy of the vector, manifest entry, lexical postings), for the memory budget.
const BYTES_PER_CHUNK: u64 = 384 * 4 * 2 + 24 * 2 * 8 + 400;

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

/// What a history question about a place in the workspace covers ([`Workspace::history_scope`]).
#[derive(Debug, Clone)]
pub struct HistoryScope {
    /// The index whose repository's history answers.
    pub location: IndexLocation,
    /// A path in that index's terms (a file, or a folder's directory).
    pub path: Option<String>,
    /// The definition around the line asked about.
    pub symbol: Option<String>,
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
    use super::queries::interleave;
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
