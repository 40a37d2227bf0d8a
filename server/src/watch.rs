//! Keeps the index fresh without an editor: an agent (the MCP server) or a user running
//! `raggrep watch` edits files on disk and no editor sends didSave, so the roots are watched and
//! the changed paths are queued for an update after a short quiet period.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::time::Duration;

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};

use crate::workspace::Workspace;

/// Quiet time after the last change before updating: a save often arrives as several events
/// (truncate, write, rename), and an agent often writes several files in a row.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Changes that never matter to the index: under directories the walk never enters — our own
/// `.raggrep` (the indexer writes there, so reacting would loop), version control, dependency and
/// build output (a build would otherwise queue an update every few hundred milliseconds).
fn ignored(path: &Path) -> bool {
    let Some(parent) = path.parent() else { return false };
    parent.components().any(|c| match c {
        Component::Normal(name) => name.to_str().is_some_and(crate::walk::is_excluded_dir_name),
        _ => false,
    })
}

/// What an event says about a file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Created, written, renamed or removed.
    Content,
    /// Closed after being opened for writing, and nothing else: a write through `mmap` sends no
    /// modify event at all (inotify(7)), only this close. But so does every program that opens a
    /// file read-write and only reads it (a database its application queries, a log), so it
    /// counts only for a file the index holds; any other would cost a walk of the root.
    Closed,
}

/// What `kind` says about the content, if anything. Reads are not changes (the indexer reads
/// every file it updates, so reacting would loop).
fn change(kind: &EventKind) -> Option<Change> {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => Some(Change::Closed),
        EventKind::Access(_) => None,
        _ => Some(Change::Content),
    }
}

/// Watches `roots` recursively; changed paths are scheduled on `workspace` after [`DEBOUNCE`].
/// The watch lasts as long as the returned watcher lives.
pub fn start(workspace: &Arc<Workspace>, roots: &[PathBuf]) -> notify::Result<notify::RecommendedWatcher> {
    let (tx, rx) = mpsc::channel::<(PathBuf, Change)>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
        Ok(event) => {
            let Some(change) = change(&event.kind) else { return };
            for path in event.paths.into_iter().filter(|p| !ignored(p)) {
                let _ = tx.send((path, change));
            }
        }
        Err(err) => tracing::warn!("file watcher: {err}"),
    })?;
    for root in roots {
        watcher.watch(root, RecursiveMode::Recursive)?;
    }
    let weak: Weak<Workspace> = Arc::downgrade(workspace);
    std::thread::Builder::new()
        .name("raggrep-watch".into())
        .spawn(move || debounce(&rx, &weak))
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    Ok(watcher)
}

fn debounce(rx: &mpsc::Receiver<(PathBuf, Change)>, workspace: &Weak<Workspace>) {
    // Ends when the watcher (the sender) is dropped.
    while let Ok((path, change)) = rx.recv() {
        let mut changed: HashMap<PathBuf, Change> = HashMap::from([(path, change)]);
        loop {
            match rx.recv_timeout(DEBOUNCE) {
                Ok((path, change)) => {
                    let seen = changed.entry(path).or_insert(change);
                    if change == Change::Content {
                        *seen = Change::Content;
                    }
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        let Some(workspace) = workspace.upgrade() else { return };
        changed.retain(|path, change| *change == Change::Content || workspace.indexes(path));
        if changed.is_empty() {
            continue;
        }
        tracing::debug!(files = changed.len(), "files changed on disk: updating");
        // The workspace coalesces these into one update per root.
        for path in changed.keys() {
            workspace.schedule(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_vcs_directories_are_ignored() {
        assert!(ignored(Path::new("/w/.raggrep/manifest-3.rkyv")));
        assert!(ignored(Path::new("/w/.git/index")));
        assert!(ignored(Path::new("/w/target/debug/deps/x.rlib")));
        assert!(ignored(Path::new("/w/web/node_modules/a/index.js")));
        assert!(!ignored(Path::new("/w/src/git.rs")));
        assert!(!ignored(Path::new("/w/src/target.rs")));
    }

    #[test]
    fn reads_are_not_changes_and_a_close_after_writing_is_one_of_its_own() {
        use notify::event::{CreateKind, ModifyKind};
        assert_eq!(change(&EventKind::Access(AccessKind::Open(AccessMode::Any))), None);
        assert_eq!(change(&EventKind::Access(AccessKind::Close(AccessMode::Read))), None);
        assert_eq!(change(&EventKind::Access(AccessKind::Close(AccessMode::Write))), Some(Change::Closed));
        assert_eq!(change(&EventKind::Modify(ModifyKind::Any)), Some(Change::Content));
        assert_eq!(change(&EventKind::Create(CreateKind::File)), Some(Change::Content));
    }
}
