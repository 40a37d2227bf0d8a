//! `raggrep db …`: the vector store (design seed 002) on the command line, over
//! [`crate::vectordb`]. Human output by default (a key, a value, aligned rows), the wire types
//! with `--json`. Not finding a key is an answer (a warning on stderr, exit 0), like a search
//! with zero results; failures are errors (one line, exit 2) and leave the database unchanged.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::audit::{self, Door};
use crate::index::IndexLocation;
use crate::vectordb::{self, VectorDb, VectorDbError};
use crate::wire;

#[derive(clap::Args)]
pub struct DbArgs {
    /// Workspace root: its `.raggrep/` holds the default database and the remembered choice,
    /// and import-file reads only files inside it (default: found as every command finds it:
    /// the nearest .raggrep/ at or above the current directory, else the git work tree's top,
    /// else the current directory).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Keep the default database and the remembered choice here instead of ROOT/.raggrep.
    #[arg(long, global = true, env = "RAGGREP_INDEX_DIR")]
    index_dir: Option<PathBuf>,
    /// Use this database file for this command only (set-database remembers one).
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Answer with one JSON object on stdout.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    action: DbAction,
}

#[derive(Subcommand)]
enum DbAction {
    /// Embed EMBEDDING_TEXT and store it with VALUE; prints the row's UUID key (the same text
    /// again replaces the value and keeps the key).
    Store { embedding_text: String, value: String },
    /// Print the value stored under KEY (exact match).
    Retrieve { key: String },
    /// Delete the row with KEY; prints the key (a warning if there was none).
    Delete { key: String },
    /// List rows in insertion order (--json: with their embeddings).
    List {
        /// Rows at most.
        #[arg(long, default_value_t = vectordb::DEFAULT_LIMIT)]
        limit: u64,
        /// Rows to skip.
        #[arg(long, default_value_t = 0)]
        offset: u64,
    },
    /// The rows closest in meaning to QUERY, by cosine distance (lower is closer).
    Search {
        query: String,
        /// Number of results.
        #[arg(short = 'k', long = "top-k", visible_alias = "topK", default_value_t = vectordb::DEFAULT_TOP_K)]
        top_k: u64,
    },
    /// Store a text file's contents (embedded) with its path as the value.
    #[command(name = "import-file", visible_alias = "import_file")]
    ImportFile { filepath: PathBuf },
    /// Use FILENAME as this workspace's database from now on (created if missing).
    #[command(name = "set-database", visible_alias = "set_database")]
    SetDatabase { filename: PathBuf },
}

pub fn run(args: DbArgs, model: Option<&str>, ort: Option<&Path>) -> Result<()> {
    let started = std::time::Instant::now();
    let store_model = vectordb::StoreModel::new(model, ort);
    let location =
        super::LocationArgs { root: args.root.clone(), index_dir: args.index_dir.clone() }.resolve()?.location;
    let cwd = std::env::current_dir().context("the current directory")?;
    let mut out = io::stdout().lock();
    let json = args.json;
    let emit = |out: &mut io::StdoutLock<'_>, value: &dyn erased::Json, human: &str| -> Result<()> {
        if json {
            writeln!(out, "{}", value.to_json()?)?;
        } else if !human.is_empty() {
            writeln!(out, "{human}")?;
        }
        Ok(())
    };
    if let DbAction::SetDatabase { filename } = &args.action {
        if args.db.is_some() {
            return Err(VectorDbError::InvalidArgument(
                "set-database takes the database as its argument; leave out --db".into(),
            )
            .into());
        }
        let db = vectordb::set_database(&location.dir, &cwd.join(filename))?;
        let answer = wire::DbDatabase {
            database: db.path().display().to_string(),
            rows: db.count()?,
            migrated: (db.migrated() > 0).then_some(db.migrated()),
        };
        let human =
            format!("vector database for {}: {} ({} rows)", location.root.display(), answer.database, answer.rows);
        emit(&mut out, &answer, &human)?;
        record(&location, "set_database", started, 0);
        return Ok(());
    }
    let mut db = match &args.db {
        Some(path) => VectorDb::open(&cwd.join(path))?,
        None => vectordb::open_for_workspace(&location.dir)?,
    };
    if db.migrated() > 0 {
        let _ = writeln!(io::stderr(), "raggrep: gave {} key-less rows a UUID key", db.migrated());
    }
    match args.action {
        DbAction::Store { embedding_text, value } => {
            // Arguments first: a wrong one is reported before the model loads.
            if embedding_text.trim().is_empty() {
                return Err(
                    VectorDbError::InvalidArgument("embedding_text is empty: give the text to embed".into()).into()
                );
            }
            let embedder = store_model.embedder()?;
            let stored = db.store(embedder.as_ref(), &embedding_text, &value)?;
            let answer = wire::DbStored { key: stored.key.clone(), updated: stored.updated, path: None };
            emit(&mut out, &answer, &stored.key)?;
            if stored.updated && !json {
                let _ = writeln!(
                    io::stderr(),
                    "raggrep: that embedding_text was stored before: value and embedding replaced"
                );
            }
            record(&location, "store", started, 1);
        }
        DbAction::Retrieve { key } => {
            let found = db.retrieve(&key)?;
            let answer = wire::DbRetrieved::new(key, found);
            warn(json, answer.warning.as_deref());
            emit(&mut out, &answer, answer.value.as_deref().unwrap_or_default())?;
            record(&location, "retrieve", started, usize::from(answer.found));
        }
        DbAction::Delete { key } => {
            let deleted = db.delete(&key)?;
            let answer =
                wire::DbDeleted { warning: (!deleted).then(|| format!("no row with key {key}")), key, deleted };
            warn(json, answer.warning.as_deref());
            emit(&mut out, &answer, if deleted { &answer.key } else { "" })?;
            record(&location, "delete", started, usize::from(deleted));
        }
        DbAction::List { limit, offset } => {
            let rows = db.list(limit, offset)?;
            let total = db.count()?;
            let mut human = String::new();
            for row in &rows {
                human.push_str(&format!(
                    "{}  {}  {}  [{}-d]\n",
                    row.key,
                    shorten(row.embedding_text.as_deref().unwrap_or("(null)")),
                    shorten(row.value.as_deref().unwrap_or("(null)")),
                    row.embedding.len()
                ));
            }
            // The count is no part of the seed's answer: stderr, in both forms.
            let _ = writeln!(io::stderr(), "{} of {} rows (offset {offset})", rows.len(), total);
            let count = rows.len();
            // Seed 002: `list` answers with the array of rows itself.
            let rows: Vec<wire::DbRow> = rows.into_iter().map(wire::DbRow::from).collect();
            emit(&mut out, &rows, human.trim_end())?;
            record(&location, "list", started, count);
        }
        DbAction::Search { query, top_k } => {
            if query.trim().is_empty() {
                return Err(VectorDbError::InvalidArgument("query is empty: say what to look for".into()).into());
            }
            if top_k == 0 {
                return Err(VectorDbError::InvalidArgument("--top-k must be at least 1".into()).into());
            }
            let embedder = store_model.embedder()?;
            let searched = std::time::Instant::now();
            let hits = db.search(embedder.as_ref(), &query, top_k)?;
            let took_ms = (searched.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
            let mut human = String::new();
            for hit in &hits {
                human.push_str(&format!(
                    "{:.4}  {}  {}  {}\n",
                    hit.score,
                    hit.key,
                    shorten(hit.embedding_text.as_deref().unwrap_or("(null)")),
                    shorten(hit.value.as_deref().unwrap_or("(null)"))
                ));
            }
            let count = hits.len();
            // Seed 002: `search` answers with the array of hits, closest (lowest score) first; the
            // time is no part of it.
            let _ = writeln!(io::stderr(), "{count} results for {query:?} in {took_ms} ms");
            let hits: Vec<wire::DbHit> = hits.into_iter().map(wire::DbHit::from).collect();
            emit(&mut out, &hits, human.trim_end())?;
            record(&location, "search", started, count);
        }
        DbAction::ImportFile { filepath } => {
            // Checked before the model loads: a wrong file is the likelier mistake.
            let path = cwd.join(&filepath);
            vectordb::read_import_file(std::slice::from_ref(&location.root), &path)?;
            let embedder = store_model.embedder()?;
            let (stored, canonical) = db.import_file(embedder.as_ref(), std::slice::from_ref(&location.root), &path)?;
            let answer = wire::DbStored {
                key: stored.key.clone(),
                updated: stored.updated,
                path: Some(canonical.display().to_string()),
            };
            emit(&mut out, &answer, &stored.key)?;
            record(&location, "import_file", started, 1);
        }
        DbAction::SetDatabase { .. } => unreachable!("handled above"),
    }
    Ok(())
}

fn warn(json: bool, warning: Option<&str>) {
    if let (false, Some(warning)) = (json, warning) {
        let _ = writeln!(io::stderr(), "raggrep: warning: {warning}");
    }
}

/// First line, at most 60 characters: a row per line in human output.
fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut short: String = line.chars().take(60).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// The audit log: the action and a count, never texts or values.
fn record(location: &IndexLocation, action: &str, started: std::time::Instant, rows: usize) {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    audit::record(&location.dir, Door::Cli, "vector_db", ms, serde_json::json!({"action": action, "rows": rows}));
}

/// Serialising answers of different wire types through one output helper.
mod erased {
    pub trait Json {
        fn to_json(&self) -> serde_json::Result<String>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> serde_json::Result<String> {
            serde_json::to_string(self)
        }
    }
}
