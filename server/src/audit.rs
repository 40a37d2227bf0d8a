//! The audit log (design seed 003: "all RAG operations logged for traceability"):
//! `.raggrep/audit.jsonl`, one JSON object per operation — when, through which front door, what,
//! how much and how long. Never the code, and never the query text (only its length): the log
//! says what was done, not what was read.
//!
//! Rotated at [`MAX_BYTES`] (one older file, `audit.1.jsonl`, is kept). Off with `audit = false`
//! in `.raggrep/config.toml`. Writing it never fails an operation: an error is logged once at
//! debug level and the operation goes on.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

pub const FILE_NAME: &str = "audit.jsonl";
const ROTATED_NAME: &str = "audit.1.jsonl";
/// Size at which the log is rotated.
pub const MAX_BYTES: u64 = 1 << 20;

/// Which front door an operation came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Door {
    Cli,
    Lsp,
    Mcp,
    /// The engine used as a library (tests, benchmarks, other programs).
    Library,
}

impl Door {
    fn from_u8(value: u8) -> Door {
        match value {
            0 => Door::Cli,
            1 => Door::Lsp,
            2 => Door::Mcp,
            _ => Door::Library,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            Door::Cli => 0,
            Door::Lsp => 1,
            Door::Mcp => 2,
            Door::Library => 3,
        }
    }
}

/// The door of a long-running engine object, settable once the front door is known.
#[derive(Debug)]
pub struct DoorCell(AtomicU8);

impl Default for DoorCell {
    fn default() -> Self {
        DoorCell(AtomicU8::new(Door::Library.to_u8()))
    }
}

impl DoorCell {
    pub fn get(&self) -> Door {
        Door::from_u8(self.0.load(Ordering::Relaxed))
    }

    pub fn set(&self, door: Door) {
        self.0.store(door.to_u8(), Ordering::Relaxed);
    }
}

#[derive(Serialize)]
struct Entry<'a> {
    /// Milliseconds since the Unix epoch.
    ts_ms: u64,
    door: Door,
    op: &'a str,
    ms: f64,
    #[serde(flatten)]
    detail: Value,
}

/// Whether the audit log of the index in `index_dir` is on (`audit = false` in its
/// `config.toml` turns it off).
pub fn enabled(index_dir: &Path) -> bool {
    #[derive(serde::Deserialize, Default)]
    struct Config {
        audit: Option<bool>,
    }
    let config: Config = std::fs::read_to_string(index_dir.join("config.toml"))
        .ok()
        .and_then(|text| toml::from_str(&text).ok())
        .unwrap_or_default();
    config.audit.unwrap_or(true)
}

/// Appends one operation to `index_dir/audit.jsonl`. `detail` is an object of counts and
/// settings (merged into the entry); `ms` the operation's duration. Only writes into an index
/// directory that exists: auditing never creates one.
pub fn record(index_dir: &Path, door: Door, op: &str, ms: f64, detail: Value) {
    if !index_dir.is_dir() || !enabled(index_dir) {
        return;
    }
    let ts_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let detail = if detail.is_object() { detail } else { Value::Object(Default::default()) };
    let entry = Entry { ts_ms, door, op, ms: (ms * 1000.0).round() / 1000.0, detail };
    let Ok(mut line) = serde_json::to_vec(&entry) else { return };
    line.push(b'\n');
    let path = index_dir.join(FILE_NAME);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() + line.len() as u64 > MAX_BYTES) {
        let _ = std::fs::rename(&path, index_dir.join(ROTATED_NAME));
    }
    // One write of a whole line with O_APPEND: concurrent writers (CLI, LSP and MCP on one
    // root) never interleave within a line.
    let written = OpenOptions::new().create(true).append(true).open(&path).and_then(|mut file| file.write_all(&line));
    if let Err(err) = written {
        tracing::debug!("audit log {}: {err}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_rotate_and_can_be_turned_off() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let big = serde_json::json!({ "filler": "x".repeat(4096) });
        for _ in 0..300 {
            record(dir.path(), Door::Cli, "search", 1.5, big.clone());
        }
        let current = std::fs::metadata(dir.path().join(FILE_NAME)).map(|m| m.len()).unwrap_or(0);
        assert!(current > 0 && current <= MAX_BYTES, "{current}");
        assert!(dir.path().join(ROTATED_NAME).is_file());
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap_or_default();
        let first: Value = serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or_default();
        assert_eq!(first["door"], "cli");
        assert_eq!(first["op"], "search");

        std::fs::write(dir.path().join("config.toml"), "audit = false\n").unwrap_or_else(|e| panic!("{e}"));
        let before = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap_or_default();
        record(dir.path(), Door::Lsp, "search", 1.0, Value::Null);
        assert_eq!(before, std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap_or_default());
    }
}
