//! The team index's schema: created on the first push, migrated by version, one model per index.

use postgres::Client;

use super::{TeamError, TeamUrl};

/// The schema this build reads and writes. A newer one (written by a newer raggrep) is refused
/// rather than misread.
pub const SCHEMA_VERSION: i32 = 1;

/// What one index holds vectors of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexModel {
    pub id: String,
    pub dim: usize,
}

impl IndexModel {
    /// The model an embedder computes vectors with.
    pub fn of(info: &crate::embed::ModelInfo) -> IndexModel {
        IndexModel { id: info.id.clone(), dim: info.dim }
    }
}

/// Migration `n` takes the schema from version `n` to `n + 1`. `{dim}` is the model's dimension.
const MIGRATIONS: [&str; 1] = [r#"
CREATE TABLE raggrep.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE raggrep.repo (
    id bigserial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    remote text,
    branch text,
    commit text,
    chunks bigint NOT NULL DEFAULT 0,
    pushed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE raggrep.chunk (
    key text PRIMARY KEY,
    embedding vector({dim}) NOT NULL,
    content text NOT NULL,
    terms tsvector NOT NULL
);
CREATE INDEX chunk_embedding_hnsw ON raggrep.chunk USING hnsw (embedding vector_cosine_ops);
CREATE INDEX chunk_terms_gin ON raggrep.chunk USING gin (terms);
CREATE TABLE raggrep.file (
    repo_id bigint NOT NULL REFERENCES raggrep.repo (id) ON DELETE CASCADE,
    path text NOT NULL,
    digest text NOT NULL,
    language text NOT NULL,
    PRIMARY KEY (repo_id, path)
);
CREATE TABLE raggrep.entry (
    repo_id bigint NOT NULL,
    path text NOT NULL,
    start_line integer NOT NULL,
    end_line integer NOT NULL,
    kind text NOT NULL,
    symbol text NOT NULL,
    container text NOT NULL,
    chunk_key text NOT NULL REFERENCES raggrep.chunk (key),
    FOREIGN KEY (repo_id, path) REFERENCES raggrep.file (repo_id, path) ON DELETE CASCADE
);
CREATE INDEX entry_chunk ON raggrep.entry (chunk_key);
CREATE INDEX entry_file ON raggrep.entry (repo_id, path);
"#];

/// Creates or migrates the schema for a writer pushing vectors of `model`, and checks the index
/// holds that model's vectors. Concurrent writers wait for each other (an advisory lock), so
/// two first pushes never both create it.
pub fn migrate(client: &mut Client, url: &TeamUrl, model: &IndexModel) -> Result<(), TeamError> {
    let mut tx = client.transaction().map_err(|e| url.db_error(&e))?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('raggrep schema'))", &[]).map_err(|e| url.db_error(&e))?;
    let version = read_version(&mut tx, url)?;
    if version > SCHEMA_VERSION {
        return Err(url.schema_error(format!(
            "schema version {version} is newer than this raggrep understands ({SCHEMA_VERSION}); upgrade raggrep"
        )));
    }
    if version == 0 {
        ensure_pgvector(&mut tx, url)?;
        // An administrator may have created the schema for the writer (scripts/team_roles.sql);
        // CREATE SCHEMA IF NOT EXISTS would still demand CREATE on the database.
        let exists: bool = tx
            .query_one("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'raggrep')", &[])
            .map_err(|e| url.db_error(&e))?
            .get(0);
        if !exists {
            tx.batch_execute("CREATE SCHEMA raggrep").map_err(|e| url.db_error(&e))?;
        }
    }
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(&sql.replace("{dim}", &model.dim.to_string())).map_err(|e| url.db_error(&e))?;
        if from == 0 {
            tx.execute(
                "INSERT INTO raggrep.meta (key, value) VALUES ('model', $1), ('dim', $2)",
                &[&model.id, &model.dim.to_string()],
            )
            .map_err(|e| url.db_error(&e))?;
        }
    }
    tx.execute(
        "INSERT INTO raggrep.meta (key, value) VALUES ('schema_version', $1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&SCHEMA_VERSION.to_string()],
    )
    .map_err(|e| url.db_error(&e))?;
    let stored = read_model(&mut tx, url)?;
    tx.commit().map_err(|e| url.db_error(&e))?;
    check_model(url, &stored, model)
}

/// Checks a reader can use the index: the schema exists, is not newer than this build, and holds
/// vectors of `model` (queries must be embedded by the model that embedded the chunks).
pub fn check_readable(client: &mut Client, url: &TeamUrl, model: &IndexModel) -> Result<(), TeamError> {
    let mut tx = client.build_transaction().read_only(true).start().map_err(|e| url.db_error(&e))?;
    let version = read_version(&mut tx, url)?;
    if version == 0 {
        return Err(url.schema_error("no raggrep index in this database yet; `raggrep push` creates it"));
    }
    if version > SCHEMA_VERSION {
        return Err(url.schema_error(format!(
            "schema version {version} is newer than this raggrep understands ({SCHEMA_VERSION}); upgrade raggrep"
        )));
    }
    let stored = read_model(&mut tx, url)?;
    tx.commit().map_err(|e| url.db_error(&e))?;
    check_model(url, &stored, model)
}

fn check_model(url: &TeamUrl, stored: &IndexModel, model: &IndexModel) -> Result<(), TeamError> {
    if stored != model {
        return Err(url.schema_error(format!(
            "it holds vectors of model {} ({}-d) but this raggrep uses {} ({}-d); use the same model (--model) or another database",
            stored.id, stored.dim, model.id, model.dim
        )));
    }
    Ok(())
}

/// 0 when there is no raggrep schema yet.
fn read_version(tx: &mut postgres::Transaction<'_>, url: &TeamUrl) -> Result<i32, TeamError> {
    let exists: bool =
        tx.query_one("SELECT to_regclass('raggrep.meta') IS NOT NULL", &[]).map_err(|e| url.db_error(&e))?.get(0);
    if !exists {
        return Ok(0);
    }
    let row = tx
        .query_opt("SELECT value FROM raggrep.meta WHERE key = 'schema_version'", &[])
        .map_err(|e| url.db_error(&e))?;
    match row {
        Some(row) => {
            let value: String = row.get(0);
            value.parse().map_err(|_| url.schema_error(format!("unreadable schema version {value:?}")))
        }
        None => Err(url.schema_error("raggrep.meta has no schema_version: the schema is damaged")),
    }
}

fn read_model(tx: &mut postgres::Transaction<'_>, url: &TeamUrl) -> Result<IndexModel, TeamError> {
    let rows = tx
        .query("SELECT key, value FROM raggrep.meta WHERE key IN ('model', 'dim')", &[])
        .map_err(|e| url.db_error(&e))?;
    let get = |name: &str| rows.iter().find(|r| r.get::<_, &str>(0) == name).map(|r| r.get::<_, String>(1));
    match (get("model"), get("dim").and_then(|d| d.parse().ok())) {
        (Some(id), Some(dim)) => Ok(IndexModel { id, dim }),
        _ => Err(url.schema_error("raggrep.meta has no model: the schema is damaged")),
    }
}

/// pgvector must be enabled in the database; enabling it needs a privileged role, so a role that
/// cannot is told exactly what to ask for.
fn ensure_pgvector(tx: &mut postgres::Transaction<'_>, url: &TeamUrl) -> Result<(), TeamError> {
    let enabled: bool = tx
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')", &[])
        .map_err(|e| url.db_error(&e))?
        .get(0);
    if enabled {
        return Ok(());
    }
    let available: bool = tx
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')", &[])
        .map_err(|e| url.db_error(&e))?
        .get(0);
    if !available {
        return Err(url.schema_error(
            "the pgvector extension is not installed on the server; install it (e.g. Debian's postgresql-17-pgvector) and run CREATE EXTENSION vector",
        ));
    }
    tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector").map_err(|e| {
        let denied = e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE);
        if denied {
            url.schema_error(
                "the pgvector extension is not enabled in this database and this role may not enable it; ask an administrator to run CREATE EXTENSION vector",
            )
        } else {
            url.db_error(&e)
        }
    })
}
