//! Document and workspace notifications: open, change (debounced re-indexing of the editor's
//! text), save and close (the disk is the truth again), watched files, folders, settings.
//! Each runs behind [`guard`]: a panic is logged and the session goes on.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tower_lsp_server::ls_types::*;

use super::{Backend, CHANGE_DEBOUNCE, guard};

pub(super) async fn did_open(backend: &Backend, params: DidOpenTextDocumentParams) {
    guard("textDocument/didOpen", async {
        let Ok(workspace) = backend.workspace() else { return };
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

pub(super) async fn did_change(backend: &Backend, params: DidChangeTextDocumentParams) {
    guard("textDocument/didChange", async {
        let Ok(workspace) = backend.workspace() else { return };
        let Some(path) = params.text_document.uri.to_file_path().map(|p| p.into_owned()) else { return };
        // Full sync: the last change holds the whole text. Applied here, synchronously, so
        // edits stay in order; indexing waits for a pause in typing.
        let Some(change) = params.content_changes.into_iter().last() else { return };
        workspace.set_overlay(&path, change.text);
        let generation = backend.next_generation.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut map) = backend.change_generation.lock() {
            map.insert(path.clone(), generation);
        }
        let generations = Arc::clone(&backend.change_generation);
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

pub(super) async fn did_save(backend: &Backend, params: DidSaveTextDocumentParams) {
    guard("textDocument/didSave", async {
        backend.disk_is_truth(&params.text_document.uri);
    })
    .await;
}

pub(super) async fn did_close(backend: &Backend, params: DidCloseTextDocumentParams) {
    guard("textDocument/didClose", async {
        backend.disk_is_truth(&params.text_document.uri);
    })
    .await;
}

pub(super) async fn did_change_watched_files(backend: &Backend, params: DidChangeWatchedFilesParams) {
    guard("workspace/didChangeWatchedFiles", async {
        let Ok(workspace) = backend.workspace() else { return };
        for change in params.changes {
            if let Some(path) = change.uri.to_file_path() {
                if path.components().any(|c| c.as_os_str() == crate::engine::INDEX_DIR_NAME) {
                    continue; // our own writes
                }
                workspace.schedule(&path);
            }
        }
    })
    .await;
}

pub(super) async fn did_change_workspace_folders(backend: &Backend, params: DidChangeWorkspaceFoldersParams) {
    guard("workspace/didChangeWorkspaceFolders", async {
        let Ok(workspace) = backend.workspace() else { return };
        for removed in params.event.removed {
            if let Some(path) = removed.uri.to_file_path() {
                workspace.remove_root(&path);
            }
        }
        let added = params.event.added.iter().filter_map(|f| f.uri.to_file_path().map(|p| p.into_owned())).collect();
        backend.add_roots(added).await;
    })
    .await;
}

pub(super) async fn did_change_configuration(backend: &Backend, params: DidChangeConfigurationParams) {
    guard("workspace/didChangeConfiguration", async {
        let before = backend.state.settings.lock().map(|s| s.clone()).ok();
        let unknown = backend.apply_settings(&params.settings);
        if !unknown.is_empty() {
            tracing::warn!("unknown settings ignored: {}", unknown.join(", "));
        }
        let after = backend.state.settings.lock().map(|s| s.clone()).ok();
        // Clients often resend the initial settings right after start-up, and some settings
        // only change searches: nothing to re-scan then.
        if before.zip(after).is_none_or(|(before, after)| before.indexing_differs(&after))
            && let Ok(workspace) = backend.workspace()
        {
            workspace.schedule_all();
        }
    })
    .await;
}
