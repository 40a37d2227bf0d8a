//! The machine-wide embedding cache: vectors keyed by model id + the hash of the text the model
//! saw, shared by every workspace on the machine. A second clone, a git worktree or a branch
//! checkout of a repository then runs the model on (nearly) nothing.
//!
//! One SQLite file (WAL, so several processes read and write it at once; crash-safe by
//! SQLite's own journal). Each row carries a checksum of its vector: a damaged row is dropped
//! and recomputed, never served. Size-capped: past the cap the least recently used rows go.
//! The cache is an accelerator, never a dependency: any failure to open, read or write it is
//! logged once and the update carries on as if it were empty.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};

use crate::embed::Vector;

/// Default cap: ~1.3 million 384-d vectors.
pub const DEFAULT_CAP_MB: u64 = 2048;
/// Bytes a row costs beyond its vector (key, model id, checksum, b-tree overhead), for the cap.
const ROW_OVERHEAD: u64 = 96;

/// Where the cache lives and how big it may grow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedCacheConfig {
    pub path: PathBuf,
    pub cap_bytes: u64,
}

impl SharedCacheConfig {
    /// `RAGGREP_EMBEDDING_CACHE` (a file path, or `off`) and `RAGGREP_EMBEDDING_CACHE_MB` (the cap;
    /// 0 turns it off); default `<cache dir>/embeddings.sqlite`, 2 GiB.
    pub fn from_env() -> Option<SharedCacheConfig> {
        let cap_mb = std::env::var("RAGGREP_EMBEDDING_CACHE_MB")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_CAP_MB);
        if cap_mb == 0 {
            return None;
        }
        let path = match std::env::var_os("RAGGREP_EMBEDDING_CACHE").filter(|v| !v.is_empty()) {
            Some(value) if value == "off" => return None,
            Some(value) => PathBuf::from(value),
            None => crate::embed::cache_dir().ok()?.join("embeddings.sqlite"),
        };
        Some(SharedCacheConfig { path, cap_bytes: cap_mb.saturating_mul(1 << 20) })
    }
}

/// An open cache for one model.
pub struct SharedCache {
    connection: Connection,
    model: String,
    dim: usize,
    max_rows: u64,
    path: PathBuf,
}

fn checksum(model: &str, key: &[u8], vector: &[u8]) -> i64 {
    let mut bytes = Vec::with_capacity(model.len() + key.len() + vector.len());
    bytes.extend_from_slice(model.as_bytes());
    bytes.extend_from_slice(key);
    bytes.extend_from_slice(vector);
    xxhash_rust::xxh3::xxh3_64(&bytes) as i64
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl SharedCache {
    /// Opens (creating) the cache for `model` vectors of `dim` values. A file that is not a
    /// usable SQLite database is set aside (`.corrupt-<ms>`) and started afresh.
    pub fn open(config: &SharedCacheConfig, model: &str, dim: usize) -> Result<SharedCache, String> {
        match Self::try_open(config, model, dim) {
            Ok(cache) => Ok(cache),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt) =>
            {
                let aside = config.path.with_extension(format!("sqlite.corrupt-{}", now_ms()));
                tracing::warn!(path = %config.path.display(), "the embedding cache is damaged; set aside as {}", aside.display());
                std::fs::rename(&config.path, &aside).map_err(|e| format!("{}: {e}", config.path.display()))?;
                Self::try_open(config, model, dim).map_err(|e| format!("{}: {e}", config.path.display()))
            }
            Err(e) => Err(format!("{}: {e}", config.path.display())),
        }
    }

    fn try_open(config: &SharedCacheConfig, model: &str, dim: usize) -> Result<SharedCache, rusqlite::Error> {
        if let Some(parent) = config.path.parent() {
            let _ = crate::index::create_private_dir(parent);
        }
        let connection = Connection::open(&config.path)?;
        connection.busy_timeout(std::time::Duration::from_secs(10))?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.execute_batch(
            "CREATE TABLE IF NOT EXISTS vectors (
                model TEXT NOT NULL,
                key BLOB NOT NULL,
                vector BLOB NOT NULL,
                checksum INTEGER NOT NULL,
                used INTEGER NOT NULL,
                PRIMARY KEY (model, key)
            ) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS vectors_used ON vectors (used);
            -- The row count, kept by triggers: counting a table of vectors reads all of it, and
            -- the cap is checked after every batch.
            CREATE TABLE IF NOT EXISTS stats (id INTEGER PRIMARY KEY CHECK (id = 0), rows INTEGER NOT NULL);
            INSERT OR IGNORE INTO stats VALUES (0, (SELECT count(*) FROM vectors));
            CREATE TRIGGER IF NOT EXISTS vectors_added AFTER INSERT ON vectors
                BEGIN UPDATE stats SET rows = rows + 1 WHERE id = 0; END;
            CREATE TRIGGER IF NOT EXISTS vectors_removed AFTER DELETE ON vectors
                BEGIN UPDATE stats SET rows = rows - 1 WHERE id = 0; END;",
        )?;
        let row_bytes = (dim as u64) * 4 + ROW_OVERHEAD;
        Ok(SharedCache {
            connection,
            model: model.to_string(),
            dim,
            max_rows: (config.cap_bytes / row_bytes).max(1),
            path: config.path.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The cached vectors of `keys` (text hashes), `None` where there is none or the row is
    /// damaged (damaged rows are deleted). Marks the hits as used.
    pub fn get(&mut self, keys: &[u128]) -> Result<Vec<Option<Vector>>, rusqlite::Error> {
        let now = now_ms();
        let transaction = self.connection.transaction()?;
        let mut found = Vec::with_capacity(keys.len());
        {
            let mut select =
                transaction.prepare_cached("SELECT vector, checksum FROM vectors WHERE model = ?1 AND key = ?2")?;
            let mut touch = transaction.prepare_cached("UPDATE vectors SET used = ?3 WHERE model = ?1 AND key = ?2")?;
            let mut drop = transaction.prepare_cached("DELETE FROM vectors WHERE model = ?1 AND key = ?2")?;
            for key in keys {
                let key_bytes = key.to_le_bytes();
                let row: Option<(Vec<u8>, i64)> = select
                    .query_row(params![self.model, key_bytes.as_slice()], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                let vector = row.and_then(|(bytes, sum)| {
                    let sound = bytes.len() == self.dim * 4 && sum == checksum(&self.model, &key_bytes, &bytes);
                    if !sound {
                        tracing::warn!(cache = %self.path.display(), "a damaged embedding cache entry was dropped; recomputing it");
                        return None;
                    }
                    let values: Vec<f32> =
                        bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
                    values.iter().all(|v| v.is_finite()).then(|| Vector::normalized(values))
                });
                match &vector {
                    Some(_) => {
                        touch.execute(params![self.model, key_bytes.as_slice(), now])?;
                    }
                    None => {
                        drop.execute(params![self.model, key_bytes.as_slice()])?;
                    }
                }
                found.push(vector);
            }
        }
        transaction.commit()?;
        Ok(found)
    }

    /// Stores vectors, then evicts the least recently used rows past the cap.
    pub fn put(&mut self, entries: &[(u128, &Vector)]) -> Result<(), rusqlite::Error> {
        if entries.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        let transaction = self.connection.transaction()?;
        {
            let mut insert = transaction.prepare_cached(
                // An upsert, not INSERT OR REPLACE: a replace deletes without firing the delete
                // trigger, and the row count would drift.
                "INSERT INTO vectors (model, key, vector, checksum, used) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (model, key) DO UPDATE SET vector = excluded.vector, checksum = excluded.checksum, used = excluded.used",
            )?;
            for (key, vector) in entries {
                if vector.dim() != self.dim {
                    continue;
                }
                let key_bytes = key.to_le_bytes();
                let bytes: Vec<u8> = vector.as_slice().iter().flat_map(|v| v.to_le_bytes()).collect();
                let sum = checksum(&self.model, &key_bytes, &bytes);
                insert.execute(params![self.model, key_bytes.as_slice(), bytes, sum, now])?;
            }
            let rows: i64 = transaction.query_row("SELECT rows FROM stats WHERE id = 0", [], |r| r.get(0))?;
            let excess = rows.saturating_sub(self.max_rows as i64);
            if excess > 0 {
                // Evict a tenth more than needed, so the next batches do not evict row by row.
                let evict = excess + (self.max_rows as i64 / 10);
                transaction.execute(
                    "DELETE FROM vectors WHERE (model, key) IN (SELECT model, key FROM vectors ORDER BY used LIMIT ?1)",
                    params![evict],
                )?;
            }
        }
        transaction.commit()
    }

    /// Rows for this model (for tests and status).
    pub fn len(&self) -> Result<u64, rusqlite::Error> {
        self.connection.query_row("SELECT count(*) FROM vectors WHERE model = ?1", params![self.model], |r| {
            r.get::<_, i64>(0).map(|n| n as u64)
        })
    }

    pub fn is_empty(&self) -> Result<bool, rusqlite::Error> {
        self.len().map(|n| n == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, cap_bytes: u64) -> SharedCacheConfig {
        SharedCacheConfig { path: dir.join("embeddings.sqlite"), cap_bytes }
    }

    fn vector(seed: f32) -> Vector {
        Vector::normalized(vec![seed, 1.0, 2.0, 3.0])
    }

    /// Each found vector equals the expected one (up to re-normalisation's last bit).
    fn same(found: &[Option<Vector>], expected: &[Option<&Vector>]) -> bool {
        found.len() == expected.len()
            && found.iter().zip(expected).all(|(f, e)| match (f, e) {
                (Some(f), Some(e)) => f.dot(e) > 0.999_999,
                (None, None) => true,
                _ => false,
            })
    }

    #[test]
    fn vectors_come_back_per_model_and_damage_is_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = config(dir.path(), 1 << 20);
        let mut cache = SharedCache::open(&config, "model-a", 4).unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (vector(1.0), vector(2.0));
        cache.put(&[(1, &a), (2, &b)]).unwrap_or_else(|e| panic!("{e}"));
        let got = cache.get(&[1, 2, 3]).unwrap_or_else(|e| panic!("{e}"));
        assert!(same(&got, &[Some(&a), Some(&b), None]), "{got:?}");
        let mut other = SharedCache::open(&config, "model-b", 4).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            other.get(&[1]).unwrap_or_else(|e| panic!("{e}")),
            vec![None],
            "another model's rows are not served"
        );

        // Flip a byte of one stored vector: detected, dropped, reported as a miss.
        let connection = Connection::open(&config.path).unwrap_or_else(|e| panic!("{e}"));
        connection
            .execute("UPDATE vectors SET vector = zeroblob(16) WHERE key = ?1", params![1u128.to_le_bytes().as_slice()])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cache.get(&[1]).unwrap_or_else(|e| panic!("{e}")), vec![None]);
        assert_eq!(cache.len().unwrap_or_else(|e| panic!("{e}")), 1, "the damaged row is gone");
    }

    #[test]
    fn the_cap_evicts_the_least_recently_used() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // Room for 10 rows of 4-d vectors.
        let config = config(dir.path(), 10 * (16 + ROW_OVERHEAD));
        let mut cache = SharedCache::open(&config, "m", 4).unwrap_or_else(|e| panic!("{e}"));
        let vectors: Vec<Vector> = (0..10).map(|i| vector(i as f32)).collect();
        let entries: Vec<(u128, &Vector)> = vectors.iter().enumerate().map(|(i, v)| (i as u128, v)).collect();
        cache.put(&entries).unwrap_or_else(|e| panic!("{e}"));
        std::thread::sleep(std::time::Duration::from_millis(5));
        // Key 0 is used again: it must outlive the others.
        assert!(cache.get(&[0]).unwrap_or_else(|e| panic!("{e}"))[0].is_some());
        std::thread::sleep(std::time::Duration::from_millis(5));
        let new = vector(42.0);
        cache.put(&[(100, &new)]).unwrap_or_else(|e| panic!("{e}"));
        let left = cache.len().unwrap_or_else(|e| panic!("{e}"));
        assert!(left <= 10, "{left} rows after eviction");
        let got = cache.get(&[0, 100, 1]).unwrap_or_else(|e| panic!("{e}"));
        assert!(got[0].is_some() && got[1].is_some(), "recently used and new rows stay");
        assert!(got[2].is_none(), "the least recently used went first");
        // Stored again (an update, not a new row) and evicted rows: the kept count is exact.
        cache.put(&[(100, &new)]).unwrap_or_else(|e| panic!("{e}"));
        let counted: (i64, i64) = cache
            .connection
            .query_row("SELECT (SELECT rows FROM stats), (SELECT count(*) FROM vectors)", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counted.0, counted.1);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_set_aside() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = config(dir.path(), 1 << 20);
        std::fs::write(&config.path, vec![0xA5u8; 8192]).unwrap_or_else(|e| panic!("{e}"));
        let mut cache = SharedCache::open(&config, "m", 4).unwrap_or_else(|e| panic!("{e}"));
        let v = vector(1.0);
        cache.put(&[(7, &v)]).unwrap_or_else(|e| panic!("{e}"));
        assert!(same(&cache.get(&[7]).unwrap_or_else(|e| panic!("{e}")), &[Some(&v)]));
        let aside = std::fs::read_dir(dir.path())
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().contains(".corrupt-"));
        assert!(aside, "the damaged file is kept aside, not deleted");
    }
}
