//! One request to the vector store, typed once: `raggrep db` and MCP's `vector_db` each turn
//! their arguments into an [`Action`] and [`run`] it, so the checks, the order of work (arguments,
//! then files, then the database, then the model), the audit line and the answer cannot drift
//! between the doors. Paths arrive resolved by the door's own rule (the current directory for
//! the CLI, the roots for an agent); everything after that is here.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Result, StoreModel, VectorDb, VectorDbError};
use crate::audit::{self, Door};
use crate::wire;

/// What to do, with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Embed `embedding_text` and keep `value` with it.
    Store {
        embedding_text: String,
        value: String,
    },
    Retrieve {
        key: String,
    },
    Delete {
        key: String,
    },
    List {
        limit: u64,
        offset: u64,
    },
    Search {
        query: String,
        top_k: u64,
    },
    /// Store a file's text, its canonical path as the value (`None`: the caller gave no path).
    ImportFile {
        path: Option<PathBuf>,
    },
    /// Use this database for the workspace from now on (`None`: the caller gave no path).
    SetDatabase {
        path: Option<PathBuf>,
    },
}

impl Action {
    /// The action's name as the seed writes it (and the audit log records it).
    pub fn name(&self) -> &'static str {
        match self {
            Action::Store { .. } => "store",
            Action::Retrieve { .. } => "retrieve",
            Action::Delete { .. } => "delete",
            Action::List { .. } => "list",
            Action::Search { .. } => "search",
            Action::ImportFile { .. } => "import_file",
            Action::SetDatabase { .. } => "set_database",
        }
    }

    /// A path argument as the caller gave it: blank is no path, anything else resolved by the
    /// door's rule.
    pub fn path<E>(
        given: &str,
        resolve: impl FnOnce(&Path) -> std::result::Result<PathBuf, E>,
    ) -> std::result::Result<Option<PathBuf>, E> {
        let given = given.trim();
        if given.is_empty() { Ok(None) } else { resolve(Path::new(given)).map(Some) }
    }

    /// What can be refused without a database or a model: a wrong call changes nothing and
    /// loads nothing.
    pub fn check(&self) -> Result<()> {
        let refuse = |why: &str| Err(VectorDbError::InvalidArgument(why.to_string()));
        match self {
            Action::Store { embedding_text, .. } if embedding_text.trim().is_empty() => {
                refuse("embedding_text is empty: give the text to embed")
            }
            Action::Retrieve { key } | Action::Delete { key } => super::check_key(key).map(drop),
            Action::Search { query, .. } if query.trim().is_empty() => refuse("query is empty: say what to look for"),
            Action::Search { top_k: 0, .. } => refuse("topK must be at least 1"),
            Action::ImportFile { path: None } => refuse("filepath is empty: give a file inside the workspace"),
            Action::SetDatabase { path: None } => refuse("filename is empty: give the SQLite file to use"),
            _ => Ok(()),
        }
    }
}

/// Where an action runs.
pub struct Target<'a> {
    /// The index directory that keeps the workspace's database (and the remembered choice).
    pub index_dir: &'a Path,
    /// A database for this call only, instead of the workspace's.
    pub database: Option<&'a Path>,
    /// The workspace roots: `import_file` reads only inside them.
    pub roots: &'a [PathBuf],
}

/// An action's answer, in the wire types every door prints (serialised as the one it holds).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Answer {
    Stored(wire::DbStored),
    Retrieved(wire::DbRetrieved),
    Deleted(wire::DbDeleted),
    Rows(wire::DbRows),
    Hits(wire::DbSearchResponse),
    Database(wire::DbDatabase),
}

/// The answer, and how many key-less rows the database's opening gave a key (a door may say so).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub answer: Answer,
    pub migrated: usize,
}

/// Runs `action` on `target`'s database and records it in the audit log as `door`'s (the action
/// and a count, never texts or values). Nothing is written when it fails.
pub fn run(action: Action, target: &Target<'_>, model: &StoreModel, door: Door) -> Result<Outcome> {
    let started = Instant::now();
    action.check()?;
    let name = action.name();
    // A file to import is read (and so checked) before the database opens and the model loads:
    // a wrong file is the likelier mistake. Read once: its text is what is stored.
    let imported = match &action {
        Action::ImportFile { path: Some(path) } => Some(super::read_import_file(target.roots, path)?),
        _ => None,
    };
    let outcome = match action {
        Action::SetDatabase { path } => {
            let db = super::set_database(target.index_dir, &path.unwrap_or_default())?;
            let answer = wire::DbDatabase {
                database: db.path().display().to_string(),
                rows: db.count()?,
                migrated: (db.migrated() > 0).then_some(db.migrated()),
            };
            // The answer itself says what the opening migrated.
            Outcome { answer: Answer::Database(answer), migrated: 0 }
        }
        action => {
            let mut db = match target.database {
                Some(path) => VectorDb::open(path)?,
                None => super::open_for_workspace(target.index_dir)?,
            };
            Outcome { answer: on(&mut db, action, imported, model)?, migrated: db.migrated() }
        }
    };
    record(target, door, name, started, outcome.answer.rows());
    Ok(outcome)
}

impl Answer {
    /// Rows the action stored, found, deleted, listed or returned (the audit log's count).
    fn rows(&self) -> usize {
        match self {
            Answer::Stored(_) => 1,
            Answer::Retrieved(found) => usize::from(found.found),
            Answer::Deleted(deleted) => usize::from(deleted.deleted),
            Answer::Rows(rows) => rows.rows.len(),
            Answer::Hits(hits) => hits.results.len(),
            Answer::Database(_) => 0,
        }
    }
}

/// The action on an open database (`imported`: the text and canonical path of an `import_file`).
fn on(db: &mut VectorDb, action: Action, imported: Option<(String, PathBuf)>, model: &StoreModel) -> Result<Answer> {
    Ok(match action {
        Action::Store { embedding_text, value } => {
            let stored = db.store(model.embedder()?.as_ref(), &embedding_text, &value)?;
            Answer::Stored(wire::DbStored { key: stored.key, updated: stored.updated, path: None })
        }
        Action::Retrieve { key } => {
            let found = db.retrieve(&key)?;
            Answer::Retrieved(wire::DbRetrieved::new(key, found))
        }
        Action::Delete { key } => {
            let deleted = db.delete(&key)?;
            Answer::Deleted(wire::DbDeleted {
                warning: (!deleted).then(|| format!("no row with key {key}")),
                key,
                deleted,
            })
        }
        Action::List { limit, offset } => {
            let rows = db.list(limit, offset)?;
            Answer::Rows(wire::DbRows {
                rows: rows.into_iter().map(wire::DbRow::from).collect(),
                total: db.count()?,
                limit,
                offset,
            })
        }
        Action::Search { query, top_k } => {
            let embedder = model.embedder()?;
            let searched = Instant::now();
            let hits = db.search(embedder.as_ref(), &query, top_k)?;
            let took_ms = (searched.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
            Answer::Hits(wire::DbSearchResponse {
                query,
                results: hits.into_iter().map(wire::DbHit::from).collect(),
                took_ms,
            })
        }
        Action::ImportFile { .. } => {
            // `run` read it (an empty text is refused by `store`, as a blank one would be).
            let (text, canonical) = imported.unwrap_or_default();
            let stored = db.store(model.embedder()?.as_ref(), &text, &canonical.to_string_lossy())?;
            Answer::Stored(wire::DbStored {
                key: stored.key,
                updated: stored.updated,
                path: Some(canonical.display().to_string()),
            })
        }
        Action::SetDatabase { .. } => unreachable!("run handles set_database before opening a database"),
    })
}

fn record(target: &Target<'_>, door: Door, action: &str, started: Instant, rows: usize) {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    audit::record(target.index_dir, door, "vector_db", ms, serde_json::json!({"action": action, "rows": rows}));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_refused_before_any_database_or_model() {
        let refused = |action: Action| action.check().map_err(|e| e.to_string()).err().unwrap_or_default();
        assert!(
            refused(Action::Store { embedding_text: "  ".into(), value: "v".into() })
                .contains("embedding_text is empty")
        );
        assert!(refused(Action::Retrieve { key: "".into() }).contains("key is empty"));
        assert!(refused(Action::Delete { key: "not-a-uuid".into() }).contains("not-a-uuid"));
        assert!(refused(Action::Search { query: " ".into(), top_k: 5 }).contains("query is empty"));
        assert!(refused(Action::Search { query: "x".into(), top_k: 0 }).contains("at least 1"));
        assert!(refused(Action::ImportFile { path: None }).contains("filepath is empty"));
        assert!(refused(Action::SetDatabase { path: None }).contains("filename is empty"));
        assert_eq!(Action::List { limit: 1, offset: 0 }.check().ok(), Some(()));
    }

    #[test]
    fn a_blank_path_is_no_path_and_is_not_resolved() {
        let resolved = Action::path("  ", |_| -> std::result::Result<PathBuf, String> { Err("resolved".into()) });
        assert_eq!(resolved, Ok(None));
        let resolved =
            Action::path(" notes.md ", |p| -> std::result::Result<PathBuf, String> { Ok(Path::new("/w").join(p)) });
        assert_eq!(resolved, Ok(Some(PathBuf::from("/w/notes.md"))));
    }
}
