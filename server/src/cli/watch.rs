//! `raggrep watch [PATH…]`: keeps indexes fresh from the command line, without an editor.
//!
//! The roots are indexed, then watched ([`crate::watch`]); each change updates only the paths
//! it names. Every update is reported on stdout (a line, or a JSON object with `--json`), progress
//! of long updates on stderr. SIGUSR1 pauses indexing, SIGUSR2 resumes it. Ctrl-C or SIGTERM
//! stops watching, lets the update under way finish and publish (as the language server's
//! shutdown does; a paused one too), and exits 0.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result, bail};

use super::progress::Display;
use crate::engine::{Events, MemoryLevel, Settings, Workspace};
use crate::engine::{Progress, UpdateStats};

#[derive(clap::Args)]
pub struct WatchArgs {
    /// Folders to index and watch (default: the root the current directory is in: the
    /// nearest .raggrep/ at or above it, else the git work tree's top, else itself).
    paths: Vec<PathBuf>,
    /// One JSON object per line on stdout: `watching`, then `updated` / `failed` per update,
    /// `paused` / `resumed`, `stopped` at the end.
    #[arg(long)]
    json: bool,
}

pub fn run(args: WatchArgs, model: Option<&str>, ort: Option<&Path>) -> Result<()> {
    // No folder named: the root the current directory is in (its project's index), as for
    // every other command.
    let roots = if args.paths.is_empty() {
        vec![super::location::resolve_from(std::path::Path::new("."))?.location.root]
    } else {
        args.paths
    };
    if let Some(root) = roots.iter().find(|r| !r.is_dir()) {
        bail!("{}: not a directory", root.display());
    }
    // Watching is background work: indexing yields the CPU to whatever the user is doing.
    let settings = Settings::default();
    let embedder = crate::engine::ModelChoice::new(model, ort).load_with(settings.embed_options())?;
    let report = Arc::new(Report { json: args.json, progress: Mutex::new(None), reported: Mutex::new(Vec::new()) });
    let workspace = Workspace::new(Arc::new(embedder), settings, report.clone());
    workspace.set_door(crate::audit::Door::Cli);
    for root in &roots {
        workspace.add_root(root, true).with_context(|| format!("cannot open {}", root.display()))?;
    }
    let watcher = match crate::watch::start(&workspace, &workspace.roots()) {
        Ok(watcher) => watcher,
        Err(err) => {
            workspace.shutdown();
            bail!(
                "cannot watch {}: {err}",
                roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
            );
        }
    };
    let signals = match Signals::register() {
        Ok(signals) => signals,
        Err(err) => {
            drop(watcher);
            workspace.shutdown();
            return Err(err);
        }
    };
    report.say(&Message::Watching { roots: workspace.roots() });
    let signal = signals.wait(&|pause| {
        if pause {
            workspace.pause();
            report.say(&Message::Paused);
        } else {
            workspace.resume();
            report.say(&Message::Resumed);
        }
    });
    drop(watcher);
    // Finishes (and publishes) the update under way; a second Ctrl-C is the shell's to handle.
    workspace.shutdown();
    report.say(&Message::Stopped { signal: signal.as_deref().unwrap_or("error") });
    signal.map(|_| ())
}

/// SIGINT and SIGTERM stop watching; SIGUSR1 pauses indexing and SIGUSR2 resumes it, for scripts
/// that need the CPU for a while. Registered before `watching` is said: a script that signals as
/// soon as it reads that line must not meet the default action, which ends the process (for
/// SIGUSR1 too).
struct Signals {
    runtime: tokio::runtime::Runtime,
    interrupt: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    pause: tokio::signal::unix::Signal,
    resume: tokio::signal::unix::Signal,
}

impl Signals {
    fn register() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let _context = runtime.enter();
        let listen = |kind| signal(kind).context("cannot listen for signals");
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            term: listen(SignalKind::terminate())?,
            pause: listen(SignalKind::user_defined1())?,
            resume: listen(SignalKind::user_defined2())?,
            runtime,
        })
    }

    /// Blocks until SIGINT or SIGTERM (returns which), calling `on_pause(true / false)` on
    /// SIGUSR1 / SIGUSR2 meanwhile.
    fn wait(mut self, on_pause: &dyn Fn(bool)) -> Result<String> {
        self.runtime.block_on(async {
            loop {
                tokio::select! {
                    _ = self.interrupt.recv() => return Ok("SIGINT".to_string()),
                    _ = self.term.recv() => return Ok("SIGTERM".to_string()),
                    _ = self.pause.recv() => on_pause(true),
                    _ = self.resume.recv() => on_pause(false),
                }
            }
        })
    }
}

#[derive(serde::Serialize)]
#[serde(tag = "event", rename_all = "lowercase")]
enum Message<'a> {
    Watching {
        roots: Vec<PathBuf>,
    },
    Updated {
        root: &'a Path,
        #[serde(flatten)]
        stats: &'a UpdateStats,
    },
    Failed {
        root: &'a Path,
        error: &'a str,
    },
    Paused,
    Resumed,
    Stopped {
        signal: &'a str,
    },
}

struct Report {
    json: bool,
    /// Progress of the update under way (stderr), started by its first event.
    progress: Mutex<Option<Display>>,
    /// Roots whose first update was reported (that one always is: it says the index is ready).
    reported: Mutex<Vec<PathBuf>>,
}

impl Report {
    fn say(&self, message: &Message<'_>) {
        let line = if self.json {
            serde_json::to_string(message).unwrap_or_default()
        } else {
            match message {
                Message::Watching { roots } => format!(
                    "watching {} (Ctrl-C to stop)",
                    roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
                ),
                Message::Updated { root, stats } => format!(
                    "{}: {} changed, {} removed of {} files; {} chunks ({} embedded) in {}",
                    root.display(),
                    stats.changed_files,
                    stats.removed_files,
                    stats.files,
                    stats.chunks,
                    stats.embedded,
                    crate::wire::human_duration(stats.seconds)
                ),
                Message::Failed { root, error } => format!("{}: update failed: {error}", root.display()),
                Message::Paused => "indexing paused (SIGUSR2 resumes); changes are queued".to_string(),
                Message::Resumed => "indexing resumed".to_string(),
                Message::Stopped { signal } => format!("stopped ({signal}); the index is up to date"),
            }
        };
        // A closed stdout (`raggrep watch | head -1`) must not stop the indexing.
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

impl Events for Report {
    fn progress(&self, _root: &Path, progress: &Progress) {
        let mut display = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        display.get_or_insert_with(Display::new).event(progress.clone());
    }
    fn updated(&self, root: &Path, stats: &UpdateStats) {
        if let Some(mut display) = self.progress.lock().unwrap_or_else(PoisonError::into_inner).take() {
            display.finish();
        }
        // Events that change nothing (a file created and deleted at once, an editor's swap
        // file) still run an update; saying so would only be noise.
        let first = {
            let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
            let first = !reported.iter().any(|r| r == root);
            if first {
                reported.push(root.to_path_buf());
            }
            first
        };
        let changed = stats.changed_files + stats.removed_files + stats.embedded > 0 || stats.rebuilt.is_some();
        if first || changed {
            self.say(&Message::Updated { root, stats });
        }
    }
    fn failed(&self, root: &Path, message: &str) {
        if let Some(mut display) = self.progress.lock().unwrap_or_else(PoisonError::into_inner).take() {
            display.finish();
        }
        self.say(&Message::Failed { root, error: message });
    }
    fn memory(&self, level: MemoryLevel, used_mb: u64, budget_mb: u64) {
        tracing::warn!("memory {level:?}: {used_mb} of {budget_mb} MB");
    }
}
