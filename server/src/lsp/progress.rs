//! The progress pump: workspace events (from the indexing thread) become `$/progress`,
//! `window/showMessage`, log messages and `raggrep/indexUpdated`, in order, on one task.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::Progress as ProgressNotification;
use tower_lsp_server::ls_types::request::WorkDoneProgressCreate;
use tower_lsp_server::ls_types::*;

use super::State;
use crate::engine::{Events, MemoryLevel};
use crate::engine::{Progress, UpdateStats};

/// Messages from the indexing thread to the client-facing task.
pub(super) enum Event {
    Progress(PathBuf, Progress),
    Updated(PathBuf, UpdateStats),
    Failed(PathBuf, String),
    Memory(MemoryLevel, u64, u64),
}

pub(super) struct ChannelEvents(pub(super) UnboundedSender<Event>);

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

/// Turns workspace events into `$/progress`, `window/showMessage` and log messages, in order.
pub(super) async fn forward_events(client: Client, events: &mut UnboundedReceiver<Event>, state: Arc<State>) {
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
                            format!("embedding {done}/{total} chunks, ~{} left", crate::wire::human_duration(eta)),
                            Some(pct),
                        )
                    }
                    Progress::BuildingAnn { vectors } => {
                        (false, format!("building the vector graph ({vectors})"), None)
                    }
                    Progress::ExtendingAnn { vectors, new } => {
                        (false, format!("adding {new} vectors to the vector graph ({vectors})"), None)
                    }
                    Progress::Rebuilding { reason } => (false, reason.clone(), None),
                    Progress::Waiting => (false, "waiting for another raggrep process".into(), None),
                    // Embedding reports already carry the progress; another process's
                    // generations only matter to queries.
                    Progress::Published { .. } | Progress::Followed => continue,
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
