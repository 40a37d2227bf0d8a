//! `raggrep db …`: the vector store (design seed 002) on the command line, over
//! [`crate::vectordb`]. Human output by default (a key, a value, aligned rows), the wire types
//! with `--json`. Not finding a key is an answer (a warning on stderr, exit 0), like a search
//! with zero results; failures are errors (one line, exit 2) and leave the database unchanged.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::audit::Door;
use crate::vectordb::{self, Action, Answer, VectorDbError};

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
    let store_model = vectordb::StoreModel::new(model, ort);
    let location =
        super::LocationArgs { root: args.root.clone(), index_dir: args.index_dir.clone() }.resolve()?.location;
    let cwd = std::env::current_dir().context("the current directory")?;
    // Paths are the user's, relative to where they typed them.
    let from_cwd = |given: &Path| -> Result<PathBuf, VectorDbError> { Ok(cwd.join(given)) };
    let action = match args.action {
        DbAction::SetDatabase { .. } if args.db.is_some() => {
            return Err(VectorDbError::InvalidArgument(
                "set-database takes the database as its argument; leave out --db".into(),
            )
            .into());
        }
        DbAction::Store { embedding_text, value } => Action::Store { embedding_text, value },
        DbAction::Retrieve { key } => Action::Retrieve { key },
        DbAction::Delete { key } => Action::Delete { key },
        DbAction::List { limit, offset } => Action::List { limit, offset },
        DbAction::Search { query, top_k } => Action::Search { query, top_k },
        DbAction::ImportFile { filepath } => {
            Action::ImportFile { path: Action::path(&filepath.to_string_lossy(), from_cwd)? }
        }
        DbAction::SetDatabase { filename } => {
            Action::SetDatabase { path: Action::path(&filename.to_string_lossy(), from_cwd)? }
        }
    };
    let database = args.db.as_ref().map(|path| cwd.join(path));
    let target = vectordb::Target {
        index_dir: &location.dir,
        database: database.as_deref(),
        roots: std::slice::from_ref(&location.root),
    };
    let outcome = vectordb::run(action, &target, &store_model, Door::Cli)?;
    if outcome.migrated > 0 {
        let _ = writeln!(io::stderr(), "raggrep: gave {} key-less rows a UUID key", outcome.migrated);
    }
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
    match &outcome.answer {
        Answer::Database(answer) => {
            let human =
                format!("vector database for {}: {} ({} rows)", location.root.display(), answer.database, answer.rows);
            emit(&mut out, answer, &human)?;
        }
        Answer::Stored(answer) => {
            emit(&mut out, answer, &answer.key)?;
            if answer.updated && answer.path.is_none() && !json {
                let _ = writeln!(
                    io::stderr(),
                    "raggrep: that embedding_text was stored before: value and embedding replaced"
                );
            }
        }
        Answer::Retrieved(answer) => {
            warn(json, answer.warning.as_deref());
            emit(&mut out, answer, answer.value.as_deref().unwrap_or_default())?;
        }
        Answer::Deleted(answer) => {
            warn(json, answer.warning.as_deref());
            emit(&mut out, answer, if answer.deleted { &answer.key } else { "" })?;
        }
        Answer::Rows(answer) => {
            let mut human = String::new();
            for row in &answer.rows {
                human.push_str(&format!(
                    "{}  {}  {}  [{}-d]\n",
                    row.key,
                    shorten(row.embedding_text.as_deref().unwrap_or("(null)")),
                    shorten(row.value.as_deref().unwrap_or("(null)")),
                    row.embedding.len()
                ));
            }
            // The count is no part of the seed's answer: stderr, in both forms.
            let _ = writeln!(io::stderr(), "{} of {} rows (offset {})", answer.rows.len(), answer.total, answer.offset);
            // Seed 002: `list` answers with the array of rows itself.
            emit(&mut out, &answer.rows, human.trim_end())?;
        }
        Answer::Hits(answer) => {
            let mut human = String::new();
            for hit in &answer.results {
                human.push_str(&format!(
                    "{:.4}  {}  {}  {}\n",
                    hit.score,
                    hit.key,
                    shorten(hit.embedding_text.as_deref().unwrap_or("(null)")),
                    shorten(hit.value.as_deref().unwrap_or("(null)"))
                ));
            }
            // Seed 002: `search` answers with the array of hits, closest (lowest score) first; the
            // time is no part of it.
            let _ = writeln!(
                io::stderr(),
                "{} results for {:?} in {} ms",
                answer.results.len(),
                answer.query,
                answer.took_ms
            );
            emit(&mut out, &answer.results, human.trim_end())?;
        }
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
