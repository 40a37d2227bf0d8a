//! Server logging: every `tracing` event goes to stderr (the client's output panel, usually), to
//! a rotating file in the first indexed root's `.raggrep/raggrep.log`, and — at or above the
//! `logLevel` setting — to the client as `window/logMessage`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc::UnboundedSender;
use tower_lsp_server::ls_types::MessageType;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

/// The log file is rotated (to `raggrep.log.1`) past this size.
const MAX_LOG_BYTES: u64 = 1 << 20;

/// Where log lines go besides stderr.
pub struct LogSink {
    file: Mutex<Option<(PathBuf, File)>>,
    client: UnboundedSender<(MessageType, String)>,
    level: Mutex<Level>,
}

impl LogSink {
    /// Starts logging to `dir/raggrep.log` (once; later calls are ignored).
    pub fn set_file(&self, dir: &Path) {
        let Ok(mut slot) = self.file.lock() else { return };
        if slot.is_some() || crate::engine::create_private_dir(dir).is_err() {
            return;
        }
        let path = dir.join("raggrep.log");
        if let Ok(file) = OpenOptions::new().create(true).append(true).open(&path) {
            *slot = Some((path, file));
        }
    }

    /// Sets the level forwarded to the client (`error`, `warn`, `info`, `debug`, `trace`); a
    /// name that is none of them means `info`, and `false` is returned so the caller can say so.
    pub fn set_level(&self, name: &str) -> bool {
        let (level, known) = match name {
            "error" => (Level::ERROR, true),
            "warn" | "warning" => (Level::WARN, true),
            "info" => (Level::INFO, true),
            "debug" => (Level::DEBUG, true),
            "trace" => (Level::TRACE, true),
            _ => (Level::INFO, false),
        };
        if let Ok(mut current) = self.level.lock() {
            *current = level;
        }
        known
    }

    fn write_file(&self, line: &str) {
        let Ok(mut slot) = self.file.lock() else { return };
        let Some((path, file)) = slot.as_mut() else { return };
        let _ = writeln!(file, "{line}");
        if file.metadata().map(|m| m.len()).unwrap_or(0) > MAX_LOG_BYTES {
            let rotated = path.with_extension("log.1");
            let _ = std::fs::rename(&*path, rotated);
            if let Ok(fresh) = OpenOptions::new().create(true).append(true).open(&*path) {
                *file = fresh;
            }
        }
    }
}

struct MessageVisitor(String);

impl Visit for MessageVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0.insert_str(0, &format!("{value:?}"));
        } else {
            self.0.push_str(&format!(" {}={value:?}", field.name()));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.insert_str(0, value);
        } else {
            self.0.push_str(&format!(" {}={value}", field.name()));
        }
    }
}

struct SinkLayer(Arc<LogSink>);

impl<S: Subscriber> Layer<S> for SinkLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let level = *event.metadata().level();
        if level > Level::DEBUG {
            return;
        }
        let mut visitor = MessageVisitor(String::new());
        event.record(&mut visitor);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.0.write_file(&format!("{}.{:03} {level:>5} {}", now.as_secs(), now.subsec_millis(), visitor.0));
        let wanted = self.0.level.lock().map(|l| *l).unwrap_or(Level::INFO);
        if level <= wanted {
            let kind = match level {
                Level::ERROR => MessageType::ERROR,
                Level::WARN => MessageType::WARNING,
                Level::INFO => MessageType::INFO,
                _ => MessageType::LOG,
            };
            let _ = self.0.client.send((kind, visitor.0));
        }
    }
}

/// Installs the server's subscriber; returns the sink to configure later.
pub fn init(client: UnboundedSender<(MessageType, String)>) -> Arc<LogSink> {
    let sink = Arc::new(LogSink { file: Mutex::new(None), client, level: Mutex::new(Level::INFO) });
    let stderr_filter = tracing_subscriber::EnvFilter::try_from_env("RAGGREP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .with_filter(stderr_filter);
    let ours = SinkLayer(Arc::clone(&sink))
        .with_filter(tracing_subscriber::filter::filter_fn(|m| m.target().starts_with("raggrep")));
    let _ = tracing_subscriber::registry().with(stderr).with(ours).try_init();
    sink
}
