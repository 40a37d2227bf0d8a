//! The workspace's indexer: one worker thread, jobs coalesced per root, pauses, one update at a
//! time on the worker, and the memory budget checked after each.

use super::*;

pub(super) enum Job {
    Update(PathBuf, Scope),
    Shutdown,
}

/// What an update of a root must look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Scope {
    /// Walk the whole root (start-up, reindex, a directory or the root itself named).
    All,
    /// Only these root-relative paths changed (saves, edits, watcher events).
    Paths(Vec<String>),
}

impl Scope {
    /// One update covering both.
    pub(super) fn merge(&mut self, other: Scope) {
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

pub(super) fn worker(workspace: std::sync::Weak<Workspace>, jobs: Receiver<Job>) {
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

impl Workspace {
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
