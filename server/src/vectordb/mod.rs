//! The vector store of design seed 002: a persistent key/value store whose rows carry an
//! embedding of their text, searched by cosine distance. Engine only: `cli/` (`raggrep db`) and
//! `mcp/` (the `vector_db` tool) are peers over it.
//!
//! Storage is a SQLite file with the seed's schema, read and written with the seed's SQL
//! (`vec_f32(?)` blobs, `vec_distance_cosine` ordered ascending), so a database written by the
//! seed's own recipe (Python's sqlite3 + the `sqlite-vec` package) opens here and the other way
//! round (`tests/vectordb/interop.sh`). SQLite is compiled into the binary (rusqlite `bundled`)
//! and sqlite-vec is linked statically and registered as an auto extension: there is no
//! extension file to find at run time, so "extension missing" cannot happen.
//!
//! Every failure is a [`VectorDbError`] with one line of text, found before anything is
//! written: arguments and files are checked first, and writes run in one transaction each.
//!
//! Long on purpose: the store's SQL and its checks stay beside the seed's schema; about 60 lines
//! are its tests, requests are typed in `action.rs`.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};

use crate::embed::{Assets, EmbedError, EmbedOptions, Embedder, OnnxEmbedder, PLAIN_MODEL};

mod action;
pub use action::{Action, Answer, Outcome, Target, run};

/// The default database, inside the workspace's index directory (`ROOT/.raggrep/`).
pub const FILE_NAME: &str = "vectordb.sqlite";
/// The remembered choice of `set_database`, in the index directory: one absolute path.
pub const CHOICE_FILE: &str = "vectordb.path";
/// Rows `list` returns when no limit is given (the seed's default).
pub const DEFAULT_LIMIT: u64 = 50;
/// Results `search` returns when no `topK` is given (the seed's default).
pub const DEFAULT_TOP_K: u64 = 5;
/// Largest file `import_file` reads, as the index's own size limit: nothing is sized from input.
pub const MAX_IMPORT_BYTES: u64 = 1024 * 1024;
/// The actions, as the seed names them.
pub const ACTIONS: &str = "store, retrieve, delete, list, search, import_file or set_database";

/// The seed's schema. `VECTOR(384)` is only a declared type to SQLite; the vectors are
/// sqlite-vec `float32` blobs.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS vector_store (
  key TEXT PRIMARY KEY,
  embedding_text TEXT UNIQUE,
  value TEXT,
  embedding VECTOR(384)
)";

/// A failure, as one line. Nothing was written when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum VectorDbError {
    #[error("{0}: no such file")]
    MissingFile(String),
    #[error("{0}: the file is empty: nothing to embed")]
    EmptyFile(String),
    #[error("{0}: a binary file (not UTF-8 text): only text can be embedded")]
    BinaryFile(String),
    #[error("{0}: a directory, not a file")]
    Directory(String),
    #[error("{path}: cannot read it: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path}: {size} bytes, larger than the {limit}-byte limit for import_file")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path} is outside the workspace ({roots}): refused")]
    OutsideWorkspace { path: String, roots: String },
    #[error("{0}")]
    InvalidArgument(String),
    #[error("unknown action {0:?}: use {ACTIONS}")]
    UnknownAction(String),
    #[error("key {0:?} is not a UUID (keys look like 1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b)")]
    NotUuid(String),
    #[error("database {path}: directory {dir} does not exist")]
    MissingDirectory { path: String, dir: String },
    #[error("database {path} cannot be written here: {reason}")]
    ReadOnly { path: String, reason: String },
    #[error("{path} is not a vector database: {reason}")]
    Corrupt { path: String, reason: String },
    #[error("database {path} holds {found}-dimensional vectors; the model makes {expected}-dimensional ones")]
    Dimension { path: String, found: usize, expected: usize },
    #[error("database {path}: {reason}")]
    Sqlite { path: String, reason: String },
    #[error("cannot remember the database choice in {path}: {reason}")]
    Remember { path: String, reason: String },
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("cannot load the vector store's model: {0}")]
    Model(String),
}

type Result<T, E = VectorDbError> = std::result::Result<T, E>;

/// One row as `list` returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    /// `None` only in databases written by other programs (the schema allows NULL).
    pub embedding_text: Option<String>,
    pub value: Option<String>,
    pub embedding: Vec<f32>,
}

/// One search result: `score` is the cosine distance (0 = same direction; lower is closer).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub key: String,
    pub embedding_text: Option<String>,
    pub value: Option<String>,
    pub score: f32,
}

/// What `store` and `import_file` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub key: String,
    /// The embedding_text was there already: its value and embedding were replaced, the key kept.
    pub updated: bool,
}

/// A row found by `retrieve`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub key: String,
    pub embedding_text: Option<String>,
    pub value: Option<String>,
}

/// An open vector database.
pub struct VectorDb {
    conn: Connection,
    path: PathBuf,
    /// Rows that got a key when the database was opened (the seed's migration note).
    migrated: usize,
}

/// Registers sqlite-vec with every SQLite connection this process opens, once.
#[allow(unsafe_code)]
fn register_sqlite_vec() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        type EntryPoint = unsafe extern "C" fn(
            *mut rusqlite::ffi::sqlite3,
            *mut *mut std::os::raw::c_char,
            *const rusqlite::ffi::sqlite3_api_routines,
        ) -> std::os::raw::c_int;
        // SAFETY: `sqlite3_vec_init` is the C extension entry point
        // `int (sqlite3*, char**, const sqlite3_api_routines*)`; the crate declares it as `fn()`
        // only to export the symbol, so reinterpreting the pointer as that signature is what
        // SQLite's auto-extension API expects. It is compiled with SQLITE_CORE and calls the
        // bundled SQLite directly, and `Once` registers it a single time.
        let status = unsafe {
            let entry = std::mem::transmute::<*const (), EntryPoint>(sqlite_vec::sqlite3_vec_init as *const ());
            rusqlite::ffi::sqlite3_auto_extension(Some(entry))
        };
        if status != rusqlite::ffi::SQLITE_OK {
            tracing::error!("cannot register sqlite-vec (SQLite status {status}): vector functions will be missing");
        }
    });
}

/// The database a workspace uses: the one `set_database` remembered in `index_dir`, or
/// `index_dir/vectordb.sqlite`.
pub fn database_path(index_dir: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    match std::fs::read(index_dir.join(CHOICE_FILE)) {
        Ok(bytes) => {
            let trimmed = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            if trimmed.is_empty() {
                index_dir.join(FILE_NAME)
            } else {
                PathBuf::from(std::ffi::OsStr::from_bytes(trimmed))
            }
        }
        Err(_) => index_dir.join(FILE_NAME),
    }
}

/// `set_database`: opens (creating if needed) the database at `path`, which must be absolute,
/// and remembers it for the workspace whose index directory is `index_dir`. The choice is
/// written atomically, so a crash leaves the old choice or the new one.
pub fn set_database(index_dir: &Path, path: &Path) -> Result<VectorDb> {
    use std::os::unix::ffi::OsStrExt;
    if !path.is_absolute() {
        return Err(VectorDbError::InvalidArgument(format!(
            "database path {} must be absolute (resolve it against the current directory first)",
            path.display()
        )));
    }
    let db = VectorDb::open(path)?;
    let remember = |e: io::Error| VectorDbError::Remember {
        path: index_dir.join(CHOICE_FILE).display().to_string(),
        reason: e.to_string(),
    };
    crate::index::create_private_dir(index_dir).map_err(remember)?;
    let mut line = path.as_os_str().as_bytes().to_vec();
    line.push(b'\n');
    crate::index::write_atomic(&index_dir.join(CHOICE_FILE), &line).map_err(remember)?;
    Ok(db)
}

/// Opens the workspace's database (see [`database_path`]), creating the index directory for the
/// default one.
pub fn open_for_workspace(index_dir: &Path) -> Result<VectorDb> {
    let path = database_path(index_dir);
    if path == index_dir.join(FILE_NAME) {
        crate::index::create_private_dir(index_dir).map_err(|e| VectorDbError::ReadOnly {
            path: path.display().to_string(),
            reason: format!("cannot create {}: {e}", index_dir.display()),
        })?;
    }
    VectorDb::open(&path)
}

/// Checks a key the caller gave: keys are UUIDs, matched exactly as stored.
pub fn check_key(key: &str) -> Result<&str> {
    if key.trim().is_empty() {
        return Err(VectorDbError::InvalidArgument("key is empty: give the UUID key of a row".into()));
    }
    uuid::Uuid::try_parse(key).map_err(|_| VectorDbError::NotUuid(key.to_string()))?;
    Ok(key)
}

/// The text of a file to import: checked to be inside one of `roots` (canonical), a regular,
/// readable, non-empty UTF-8 text file no larger than [`MAX_IMPORT_BYTES`]. Returns the text and
/// the file's canonical path.
pub fn read_import_file(roots: &[PathBuf], path: &Path) -> Result<(String, PathBuf)> {
    let shown = path.display().to_string();
    let roots_list = || roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ");
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let canonical = match std::fs::canonicalize(path) {
        Ok(canonical) => canonical,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            // A missing path outside the workspace is refused as outside: no probing of what
            // exists elsewhere.
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            let escapes = absolute.components().any(|c| matches!(c, Component::ParentDir));
            if escapes || !inside(&absolute) {
                return Err(VectorDbError::OutsideWorkspace { path: shown, roots: roots_list() });
            }
            return Err(VectorDbError::MissingFile(shown));
        }
        Err(err) => return Err(VectorDbError::Unreadable { path: shown, reason: err.to_string() }),
    };
    // Canonicalising followed symlinks: a link inside pointing outside ends up outside.
    if !inside(&canonical) {
        return Err(VectorDbError::OutsideWorkspace { path: shown, roots: roots_list() });
    }
    let meta = std::fs::metadata(&canonical)
        .map_err(|e| VectorDbError::Unreadable { path: shown.clone(), reason: e.to_string() })?;
    if meta.is_dir() {
        return Err(VectorDbError::Directory(shown));
    }
    if !meta.is_file() {
        // A FIFO would block the read forever; a device is not a document.
        return Err(VectorDbError::Unreadable { path: shown, reason: "not a regular file".into() });
    }
    if meta.len() > MAX_IMPORT_BYTES {
        return Err(VectorDbError::TooLarge { path: shown, size: meta.len(), limit: MAX_IMPORT_BYTES });
    }
    let bytes = std::fs::read(&canonical)
        .map_err(|e| VectorDbError::Unreadable { path: shown.clone(), reason: e.to_string() })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(VectorDbError::EmptyFile(shown));
    }
    if bytes.contains(&0) {
        return Err(VectorDbError::BinaryFile(shown));
    }
    let text = String::from_utf8(bytes).map_err(|_| VectorDbError::BinaryFile(shown))?;
    Ok((text, canonical))
}

/// The vector store's model, loaded on first use: the one the user named (`--model`,
/// `RAGGREP_MODEL_DIR`) or else all-MiniLM-L6-v2 itself ([`PLAIN_MODEL`]), not the code index's
/// default. Seed 002's stack stores all-MiniLM-L6-v2 vectors, and raggrep's code model is that
/// network fine-tuned for code chunks: a database searched with another network than the one
/// that wrote it ranks by noise. A server that never touches the store never loads it.
pub struct StoreModel {
    model: Option<String>,
    ort_dylib: Option<PathBuf>,
    loaded: OnceLock<std::result::Result<Arc<OnnxEmbedder>, String>>,
}

impl StoreModel {
    pub fn new(model: Option<&str>, ort_dylib: Option<&Path>) -> StoreModel {
        StoreModel {
            model: model.map(str::to_string),
            ort_dylib: ort_dylib.map(Path::to_path_buf),
            loaded: OnceLock::new(),
        }
    }

    /// The embedder, loading it the first time; a failure is kept and repeated (the files will
    /// not appear by themselves while the process runs).
    pub fn embedder(&self) -> Result<Arc<OnnxEmbedder>> {
        self.loaded
            .get_or_init(|| {
                Assets::locate_or(self.model.as_deref(), self.ort_dylib.as_deref(), PLAIN_MODEL)
                    .map_err(EmbedError::from)
                    .and_then(|assets| OnnxEmbedder::load(assets, EmbedOptions::default()))
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(VectorDbError::Model)
    }
}

/// Embeds stored texts and queries alike with the document model's plain call (mean pooled,
/// normalised, no prefix), as seed 002 does: `embed_query` may run raggrep's query tower
/// (`query-model.onnx`), tuned against code chunks and absent from the seed's stack, which would
/// make a search of a database written by another program with the same model (the interop
/// test) compare vectors from two different networks.
fn embed(embedder: &dyn Embedder, text: &str) -> Result<Vec<f32>> {
    let vector =
        embedder.embed_documents(&[text])?.pop().ok_or_else(|| EmbedError::Inference("no vector returned".into()))?;
    Ok(vector.as_slice().to_vec())
}

fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

impl VectorDb {
    /// Opens the database at `path`, creating it (and the table) if needed, and gives key-less
    /// rows a UUID. A path in a missing directory, a read-only location and a file that is not
    /// SQLite are refused with nothing written.
    pub fn open(path: &Path) -> Result<VectorDb> {
        register_sqlite_vec();
        let shown = path.display().to_string();
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(VectorDbError::MissingDirectory { path: shown, dir: parent.display().to_string() });
        }
        if path.is_dir() {
            return Err(VectorDbError::Directory(shown));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| sql_error(&shown, e))?;
        // Another process writing (the MCP server and the CLI on one database): wait, don't fail.
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| sql_error(&shown, e))?;
        let mut db = VectorDb { conn, path: path.to_path_buf(), migrated: 0 };
        db.prepare_schema()?;
        Ok(db)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rows that were given a key when this database was opened.
    pub fn migrated(&self) -> usize {
        self.migrated
    }

    fn error(&self, err: rusqlite::Error) -> VectorDbError {
        sql_error(&self.path.display().to_string(), err)
    }

    /// Creates the table if missing, checks an existing one has the seed's columns, and gives
    /// every key-less row a UUID, all in one transaction. Reading `sqlite_master` first makes a
    /// file that is not SQLite fail before anything is written.
    fn prepare_schema(&mut self) -> Result<()> {
        let shown = self.path.display().to_string();
        let columns: Vec<String> = {
            let mut statement = self
                .conn
                .prepare("SELECT name FROM pragma_table_info('vector_store')")
                .map_err(|e| sql_error(&shown, e))?;
            statement
                .query_map([], |row| row.get::<_, String>(0))
                .and_then(|rows| rows.collect())
                .map_err(|e| sql_error(&shown, e))?
        };
        if columns.is_empty() {
            self.conn.execute_batch(SCHEMA).map_err(|e| sql_error(&shown, e))?;
            return Ok(());
        }
        for needed in ["embedding_text", "value", "embedding"] {
            if !columns.iter().any(|c| c == needed) {
                return Err(VectorDbError::Corrupt {
                    path: shown,
                    reason: format!("its vector_store table has no {needed} column"),
                });
            }
        }
        let has_key = columns.iter().any(|c| c == "key");
        let missing: i64 = if has_key {
            self.conn
                .query_row("SELECT count(*) FROM vector_store WHERE key IS NULL OR key = ''", [], |r| r.get(0))
                .map_err(|e| sql_error(&shown, e))?
        } else {
            1
        };
        if missing == 0 {
            return Ok(());
        }
        // The migration note: rows from before keys existed get one. A table without the column
        // gets it (SQLite cannot add a PRIMARY KEY column, so uniqueness comes from an index).
        let tx = self.conn.transaction().map_err(|e| sql_error(&shown, e))?;
        if !has_key {
            tx.execute_batch(
                "ALTER TABLE vector_store ADD COLUMN key TEXT;
                 CREATE UNIQUE INDEX IF NOT EXISTS vector_store_key ON vector_store(key);",
            )
            .map_err(|e| sql_error(&shown, e))?;
        }
        let rowids: Vec<i64> = {
            let mut statement = tx
                .prepare("SELECT rowid FROM vector_store WHERE key IS NULL OR key = ''")
                .map_err(|e| sql_error(&shown, e))?;
            statement.query_map([], |r| r.get(0)).and_then(|rows| rows.collect()).map_err(|e| sql_error(&shown, e))?
        };
        for rowid in &rowids {
            tx.execute("UPDATE vector_store SET key = ?1 WHERE rowid = ?2", params![new_key(), rowid])
                .map_err(|e| sql_error(&shown, e))?;
        }
        tx.commit().map_err(|e| sql_error(&shown, e))?;
        self.migrated = rowids.len();
        Ok(())
    }

    /// The dimension of the vectors already stored, if any.
    pub fn dimension(&self) -> Result<Option<usize>> {
        let found: Option<i64> = self
            .conn
            .query_row("SELECT vec_length(embedding) FROM vector_store WHERE embedding IS NOT NULL LIMIT 1", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.error(e))?;
        Ok(found.map(|d| usize::try_from(d).unwrap_or(0)))
    }

    /// Refuses to mix vectors of another model's dimension into this database.
    fn check_dimension(&self, embedder: &dyn Embedder) -> Result<()> {
        let expected = embedder.info().dim;
        match self.dimension()? {
            Some(found) if found != expected => {
                Err(VectorDbError::Dimension { path: self.path.display().to_string(), found, expected })
            }
            _ => Ok(()),
        }
    }

    /// `store`: embeds `embedding_text` and stores it with `value` under a new UUID key; the same
    /// embedding_text again replaces value and embedding and keeps its key.
    pub fn store(&mut self, embedder: &dyn Embedder, embedding_text: &str, value: &str) -> Result<Stored> {
        if embedding_text.trim().is_empty() {
            return Err(VectorDbError::InvalidArgument("embedding_text is empty: give the text to embed".into()));
        }
        self.check_dimension(embedder)?;
        let vector = embed(embedder, embedding_text)?;
        self.insert(embedding_text, value, &vector)
    }

    /// Stores a row with a vector computed elsewhere (benchmarks, bulk loads). `vector` must be
    /// normalised the way the model's are for scores to be comparable.
    pub fn insert(&mut self, embedding_text: &str, value: &str, vector: &[f32]) -> Result<Stored> {
        let tx = self.conn.transaction().map_err(|e| sql_error(&self.path.display().to_string(), e))?;
        let result = insert_in(&tx, embedding_text, value, vector);
        let stored = result.map_err(|e| sql_error(&self.path.display().to_string(), e))?;
        tx.commit().map_err(|e| sql_error(&self.path.display().to_string(), e))?;
        Ok(stored)
    }

    /// Inserts many rows in one transaction (benchmarks, bulk loads).
    pub fn insert_many<'a>(&mut self, rows: impl IntoIterator<Item = (&'a str, &'a str, &'a [f32])>) -> Result<usize> {
        let shown = self.path.display().to_string();
        let tx = self.conn.transaction().map_err(|e| sql_error(&shown, e))?;
        let mut count = 0;
        for (text, value, vector) in rows {
            insert_in(&tx, text, value, vector).map_err(|e| sql_error(&shown, e))?;
            count += 1;
        }
        tx.commit().map_err(|e| sql_error(&shown, e))?;
        Ok(count)
    }

    /// `retrieve`: the row with exactly this key, if any.
    pub fn retrieve(&self, key: &str) -> Result<Option<Found>> {
        let key = check_key(key)?;
        self.conn
            .query_row("SELECT key, embedding_text, value FROM vector_store WHERE key = ?1", [key], |r| {
                Ok(Found { key: r.get(0)?, embedding_text: r.get(1)?, value: r.get(2)? })
            })
            .optional()
            .map_err(|e| self.error(e))
    }

    /// `delete`: removes the row with this key; `false` when there was none.
    pub fn delete(&mut self, key: &str) -> Result<bool> {
        let key = check_key(key)?;
        let shown = self.path.display().to_string();
        let tx = self.conn.transaction().map_err(|e| sql_error(&shown, e))?;
        let deleted = tx.execute("DELETE FROM vector_store WHERE key = ?1", [key]).map_err(|e| sql_error(&shown, e))?;
        tx.commit().map_err(|e| sql_error(&shown, e))?;
        Ok(deleted > 0)
    }

    /// Number of rows.
    pub fn count(&self) -> Result<u64> {
        let n: i64 =
            self.conn.query_row("SELECT count(*) FROM vector_store", [], |r| r.get(0)).map_err(|e| self.error(e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// `list`: rows in insertion order, `limit` from `offset`.
    pub fn list(&self, limit: u64, offset: u64) -> Result<Vec<Row>> {
        let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let mut statement = self
            .conn
            .prepare("SELECT key, embedding_text, value, embedding FROM vector_store ORDER BY rowid LIMIT ?1 OFFSET ?2")
            .map_err(|e| self.error(e))?;
        let rows = statement
            .query_map(params![clamp(limit), clamp(offset)], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get(1)?, r.get(2)?, r.get::<_, rusqlite::types::Value>(3)?))
            })
            .and_then(|rows| rows.collect::<std::result::Result<Vec<_>, _>>())
            .map_err(|e| self.error(e))?;
        rows.into_iter()
            .map(|(key, embedding_text, value, embedding)| {
                Ok(Row { key: key.unwrap_or_default(), embedding_text, value, embedding: self.decode(embedding)? })
            })
            .collect()
    }

    /// A stored vector: sqlite-vec's float32 blob, or JSON text (what `vec_f32` also accepts).
    fn decode(&self, value: rusqlite::types::Value) -> Result<Vec<f32>> {
        use rusqlite::types::Value;
        let corrupt = |reason: String| VectorDbError::Corrupt { path: self.path.display().to_string(), reason };
        match value {
            Value::Null => Ok(Vec::new()),
            Value::Blob(bytes) if bytes.len() % 4 == 0 => {
                Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
            }
            Value::Blob(bytes) => {
                Err(corrupt(format!("a stored vector has {} bytes, not a float32 vector", bytes.len())))
            }
            Value::Text(text) => {
                serde_json::from_str(&text).map_err(|e| corrupt(format!("a stored vector is not a JSON array: {e}")))
            }
            Value::Integer(_) | Value::Real(_) => Err(corrupt("a stored vector is a number".into())),
        }
    }

    /// `search`: the `top_k` rows closest to `query` by cosine distance, closest first, with the
    /// seed's SQL (rows without a vector are left out: NULL would sort first).
    pub fn search(&self, embedder: &dyn Embedder, query: &str, top_k: u64) -> Result<Vec<Hit>> {
        if query.trim().is_empty() {
            return Err(VectorDbError::InvalidArgument("query is empty: say what to look for".into()));
        }
        if top_k == 0 {
            return Err(VectorDbError::InvalidArgument("topK must be at least 1".into()));
        }
        self.check_dimension(embedder)?;
        let vector = embed(embedder, query)?;
        self.search_vector(&vector, top_k)
    }

    /// `search` with a vector computed elsewhere.
    pub fn search_vector(&self, vector: &[f32], top_k: u64) -> Result<Vec<Hit>> {
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT key, embedding_text, value, vec_distance_cosine(embedding, vec_f32(?1)) AS score
                 FROM vector_store
                 WHERE embedding IS NOT NULL
                 ORDER BY score ASC
                 LIMIT ?2",
            )
            .map_err(|e| self.error(e))?;
        statement
            .query_map(params![to_blob(vector), i64::try_from(top_k).unwrap_or(i64::MAX)], |r| {
                Ok(Hit {
                    key: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    embedding_text: r.get(1)?,
                    value: r.get(2)?,
                    score: r.get::<_, f64>(3)? as f32,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.error(e))
    }
}

fn insert_in(
    tx: &rusqlite::Transaction<'_>,
    embedding_text: &str,
    value: &str,
    vector: &[f32],
) -> rusqlite::Result<Stored> {
    let existing: Option<Option<String>> = tx
        .query_row("SELECT key FROM vector_store WHERE embedding_text = ?1", [embedding_text], |r| r.get(0))
        .optional()?;
    let (key, updated) = match existing {
        Some(Some(key)) if !key.is_empty() => (key, true),
        Some(_) => (new_key(), true),
        None => (new_key(), false),
    };
    // The seed's upsert, with the key: a second store of the same text keeps the row's key.
    tx.execute(
        "INSERT INTO vector_store (key, embedding_text, value, embedding) VALUES (?1, ?2, ?3, vec_f32(?4))
         ON CONFLICT(embedding_text) DO UPDATE SET value = excluded.value, embedding = excluded.embedding,
           key = coalesce(nullif(vector_store.key, ''), excluded.key)",
        params![key, embedding_text, value, to_blob(vector)],
    )?;
    Ok(Stored { key, updated })
}

fn new_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// SQLite's failures in the words of this module.
fn sql_error(path: &str, err: rusqlite::Error) -> VectorDbError {
    let path = path.to_string();
    match &err {
        rusqlite::Error::SqliteFailure(failure, message) => {
            let reason = message.clone().unwrap_or_else(|| failure.to_string());
            match failure.code {
                ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt => VectorDbError::Corrupt { path, reason },
                ErrorCode::ReadOnly | ErrorCode::PermissionDenied | ErrorCode::CannotOpen => {
                    VectorDbError::ReadOnly { path, reason }
                }
                _ => VectorDbError::Sqlite { path, reason },
            }
        }
        _ => VectorDbError::Sqlite { path, reason: err.to_string() },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::embed::FakeEmbedder;

    fn fresh() -> (tempfile::TempDir, VectorDb) {
        let dir = tempfile::tempdir().unwrap();
        let db = VectorDb::open(&dir.path().join("v.sqlite")).unwrap();
        (dir, db)
    }

    #[test]
    fn store_search_update_delete() {
        let (_dir, mut db) = fresh();
        let e = FakeEmbedder::new(384);
        let a = db.store(&e, "read the file from disk", "io").unwrap();
        let b = db.store(&e, "parse command line flags", "cli").unwrap();
        assert!(!a.updated && !b.updated);
        assert_ne!(a.key, b.key);
        let hits = db.search(&e, "read a file from the disk", 5).unwrap();
        assert_eq!(hits[0].key, a.key);
        assert!(hits[0].score < hits[1].score, "ascending distance");
        let again = db.store(&e, "read the file from disk", "io v2").unwrap();
        assert_eq!(again, Stored { key: a.key.clone(), updated: true });
        assert_eq!(db.retrieve(&a.key).unwrap().unwrap().value.as_deref(), Some("io v2"));
        assert_eq!(db.count().unwrap(), 2);
        assert!(db.delete(&a.key).unwrap());
        assert!(!db.delete(&a.key).unwrap());
        assert!(db.retrieve(&a.key).unwrap().is_none());
        assert!(matches!(db.retrieve("nope"), Err(VectorDbError::NotUuid(_))));
        let rows = db.list(DEFAULT_LIMIT, 0).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].embedding.len(), 384);
    }

    #[test]
    fn wrong_dimension_is_refused() {
        let (_dir, mut db) = fresh();
        db.store(&FakeEmbedder::new(16), "sixteen", "x").unwrap();
        let err = db.store(&FakeEmbedder::new(384), "other", "y").unwrap_err();
        assert!(matches!(err, VectorDbError::Dimension { found: 16, expected: 384, .. }), "{err}");
        assert_eq!(db.count().unwrap(), 1);
    }

    #[test]
    fn remembered_choice_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let index = dir.path().join(".raggrep");
        assert_eq!(database_path(&index), index.join(FILE_NAME));
        let chosen = dir.path().join("elsewhere.sqlite");
        set_database(&index, &chosen).unwrap();
        assert_eq!(database_path(&index), chosen);
        assert!(chosen.is_file());
        assert!(set_database(&index, Path::new("relative.sqlite")).is_err());
    }
}
