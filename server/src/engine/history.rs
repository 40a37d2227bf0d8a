//! The history as every door asks it (`raggrep log`, MCP `search_history`): bring the history
//! index up to date, search it, answer in the wire type, record it in the audit log. The model
//! is all-MiniLM-L6-v2 itself (the vector store's): a question and a commit message are both
//! prose, read by one network; without it the history is searched by its words and the answer
//! says so.

use std::time::Instant;

use crate::audit::{self, Door};
use crate::embed::Embedder;
use crate::history::{History, HistoryError, HistoryProgress, HistoryQuery, Updated};
use crate::index::IndexLocation;
use crate::vectordb::StoreModel;
use crate::wire;

/// Paths listed per commit in an answer (the rest are counted).
const FILES_SHOWN: usize = 10;

/// An answer, and what the update before it did.
pub struct HistoryAnswer {
    pub response: wire::HistoryResponse,
    pub updated: Updated,
}

/// Updates `location`'s history index and answers `query` from it.
pub fn search_history(
    location: &IndexLocation,
    model: &StoreModel,
    query: &HistoryQuery,
    door: Door,
    progress: &mut dyn FnMut(HistoryProgress),
) -> Result<HistoryAnswer, HistoryError> {
    let started = Instant::now();
    let (embedder, degraded) = match model.embedder() {
        Ok(embedder) => (Some(embedder), None),
        Err(err) => (None, Some(format!("searched by words only: {err}"))),
    };
    let embedder_ref = embedder.as_deref().map(|e| e as &dyn Embedder);
    let (history, updated) = History::update(location, embedder_ref, progress)?;
    let hits = history.search(query, embedder_ref)?;
    let path = query.path.as_deref().map(crate::history::PathFilter::new);
    let results: Vec<wire::HistoryHit> = hits
        .iter()
        .map(|hit| {
            let commit = hit.commit;
            // The paths a `--path` asked about first: they are why the commit is listed.
            let mut changed: Vec<&crate::history::FileChange> = commit.files.iter().collect();
            if let Some(path) = &path {
                changed.sort_by_key(|f| !path.matches(f));
            }
            let files: Vec<String> = changed.iter().take(FILES_SHOWN).map(|f| f.path.clone()).collect();
            wire::HistoryHit {
                commit: commit.id.clone(),
                date: crate::history::date(commit.time),
                author: commit.author.clone(),
                subject: commit.subject.clone(),
                more_files: commit.files.len().saturating_sub(files.len()),
                files,
                symbols: commit.symbols.clone(),
                merge: commit.is_merge(),
                score: hit.score.map(|s| (f64::from(s) * 1000.0).round() / 1000.0),
            }
        })
        .collect();
    let response = wire::HistoryResponse {
        query: query.text.clone().filter(|t| !t.trim().is_empty()),
        took_ms: started.elapsed().as_secs_f64() * 1000.0,
        commits: history.commits.len(),
        shallow: history.shallow,
        degraded,
        results,
    };
    let detail = serde_json::json!({
        "question": response.query.is_some(),
        "path": query.path.is_some(),
        "symbol": query.symbol.is_some(),
        "k": query.k,
        "results": response.results.len(),
        "new_commits": updated.new,
    });
    audit::record(&location.dir, door, "history", response.took_ms, detail);
    Ok(HistoryAnswer { response, updated })
}

/// Brings `location`'s history index up to date when there is one (after `raggrep index`, which
/// the git hooks run): the next question reads nothing new. A failure is logged, not raised —
/// the code index was updated all the same.
pub fn refresh_history(location: &IndexLocation, model: &StoreModel) {
    if !History::dir(location).is_dir() {
        return;
    }
    let embedder = model.embedder().ok();
    let embedder = embedder.as_deref().map(|e| e as &dyn Embedder);
    match History::update(location, embedder, &mut |_| {}) {
        Ok((_, updated)) if updated.new > 0 => tracing::info!("history: {} new commits", updated.new),
        Ok(_) => {}
        Err(err) => tracing::warn!("history of {} not updated: {err}", location.root.display()),
    }
}
