//! One root of a workspace: the folder as the doors know it, its index, the snapshot queries
//! read, and its indexing state.

use super::*;

pub(super) struct Root {
    /// The folder as the doors know it: every path in and out is relative to it.
    pub(super) root: PathBuf,
    /// Its index: its own, or the enclosing project's (see [`FolderIndex`]).
    pub(super) location: IndexLocation,
    /// Where `root` lies in the index's tree (`""`: its own index).
    pub(super) subtree: String,
    pub(super) snapshot: RwLock<Option<Arc<Snapshot>>>,
    pub(super) state: Mutex<RootState>,
    /// The published index holds text from editor buffers (restored from disk at shutdown).
    pub(super) indexed_buffers: AtomicBool,
}

impl Root {
    /// Why this root's published index is searched by words only (another model built its
    /// vectors), with what happens next; `None` when its vectors answer `model`'s queries.
    /// Read from the index being searched, so it cannot disagree with what a search did.
    pub(super) fn other_model(&self, model: &ModelInfo) -> Option<String> {
        let snapshot = self.snapshot.read().ok()?.clone()?;
        let why = other_model(&snapshot, model)?;
        let next = self.state.lock().ok()?.rebuild_outlook();
        Some(format!("{why}; {next}"))
    }

    /// How to update this root's index: the settings' options, kept to the root's files.
    pub(super) fn index_options(&self, settings: &Settings) -> IndexOptions {
        IndexOptions { subtree: (!self.subtree.is_empty()).then(|| self.subtree.clone()), ..settings.index_options() }
    }

    pub(super) fn view(&self) -> Option<RootIndex> {
        let snapshot = self.snapshot.read().ok()?.clone()?;
        Some(RootIndex { root: self.root.clone(), snapshot, subtree: self.subtree.clone() })
    }

    pub(super) fn is_partial(&self) -> bool {
        let (enabled, indexing) = self.state.lock().map(|s| (s.enabled, s.indexing)).unwrap_or((false, false));
        let published = self.snapshot.read().ok().and_then(|s| s.as_deref().map(|s| self.waits_for_vectors(s)));
        answers_are_partial(enabled, indexing, published)
    }

    /// Whether chunks of this root's files in `snapshot` have no vector yet (a folder inside a
    /// project does not wait for the rest of the project's).
    pub(super) fn waits_for_vectors(&self, snapshot: &Snapshot) -> bool {
        snapshot.pending_under(&self.subtree) > 0
    }
}

/// Answers leave part of a root out: its index is being built or updated, holds chunks not
/// embedded yet (`published`: the published snapshot's own `is_partial`), or has never been
/// published (the first update has not run: paused, queued or failed). A root turned off is not
/// partial: it is not meant to be searched.
pub(super) fn answers_are_partial(enabled: bool, indexing: bool, published: Option<bool>) -> bool {
    indexing || published.unwrap_or(enabled)
}

#[derive(Default)]
pub(super) struct RootState {
    pub(super) enabled: bool,
    pub(super) indexing: bool,
    pub(super) last_error: Option<String>,
    pub(super) reason: Option<String>,
}

impl RootState {
    /// Whether an index another model built will be replaced: read when asked, not when the
    /// index was opened (a rebuild can fail, indexing can be turned off).
    pub(super) fn rebuild_outlook(&self) -> &'static str {
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
pub(super) fn other_model(snapshot: &Snapshot, model: &ModelInfo) -> Option<String> {
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
pub(super) const BY_WORDS_ONLY: &str = "searched by words only";
pub(super) const NOT_SEARCHED: &str = "not searched";
