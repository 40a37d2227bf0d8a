//! `vector_db`: the vector store of design seed 002 (`crate::vectordb`), one action per call.

use super::*;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct VectorDbArgs {
    /// What to do: store (embedding_text + value; returns a new UUID key, or the existing key when the same embedding_text is stored again), retrieve (key), delete (key), list (limit?, offset?), search (query, topK?), import_file (filepath) or set_database (filename).
    pub action: String,
    /// store: the text to embed and store.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub embedding_text: Option<String>,
    /// store: the value to keep with it.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub value: Option<String>,
    /// retrieve, delete: the row's UUID key.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub key: Option<String>,
    /// list: rows at most (default 50).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub limit: Option<u64>,
    /// list: rows to skip (default 0).
    #[serde(default)]
    #[schemars(with = "u64", transform = optional_argument)]
    pub offset: Option<u64>,
    /// search: the text to find similar rows for.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub query: Option<String>,
    /// search: number of results (default 5).
    #[serde(default, rename = "topK")]
    #[schemars(with = "u64", transform = optional_argument)]
    pub top_k: Option<u64>,
    /// import_file: a text file inside the workspace (relative to a root, or absolute inside one); its contents are embedded, its path is the value.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub filepath: Option<String>,
    /// set_database: the SQLite file to use from now on, inside the workspace (relative paths are relative to the first root); created if missing.
    #[serde(default)]
    #[schemars(with = "String", transform = optional_argument)]
    pub filename: Option<String>,
}

/// A required argument of a `vector_db` action.
fn required<T>(value: Option<T>, name: &str, action: &str) -> Result<T, String> {
    value.ok_or_else(|| format!("{action} needs {name}"))
}

/// A `vector_db` failure: `isError`, the one line as text (what a model reads) and the wire
/// contract's error body as structured content (what a program reads).
fn vector_db_failure(message: String) -> CallToolResult {
    let body = wire::ErrorBody { query: None, error: message.clone(), fix: None };
    match serde_json::to_value(body) {
        Ok(value) => {
            let mut result = CallToolResult::structured_error(value);
            result.content = vec![ContentBlock::text(message)];
            result
        }
        Err(_) => failure(message),
    }
}

impl VectorDbArgs {
    /// The action the arguments ask for; paths relative to the first root that has them, and a
    /// new database file confined to the roots, as every path an agent sends.
    fn action(self, roots: &[PathBuf]) -> Result<crate::vectordb::Action, String> {
        use crate::vectordb::{Action, VectorDbError};
        let action = self.action.trim().to_string();
        Ok(match action.as_str() {
            "store" => Action::Store {
                embedding_text: required(self.embedding_text, "embedding_text", &action)?,
                value: required(self.value, "value", &action)?,
            },
            "retrieve" => Action::Retrieve { key: required(self.key, "key", &action)? },
            "delete" => Action::Delete { key: required(self.key, "key", &action)? },
            "list" => Action::List {
                limit: self.limit.unwrap_or(crate::vectordb::DEFAULT_LIMIT),
                offset: self.offset.unwrap_or(0),
            },
            "search" => Action::Search {
                query: required(self.query, "query", &action)?,
                top_k: self.top_k.unwrap_or(crate::vectordb::DEFAULT_TOP_K),
            },
            "import_file" => {
                let given = required(self.filepath, "filepath", &action)?;
                Action::ImportFile {
                    path: Action::path(&given, |given| -> Result<PathBuf, String> {
                        Ok(if given.is_absolute() {
                            given.to_path_buf()
                        } else {
                            let first = roots.first().map(|root| root.join(given)).unwrap_or_default();
                            roots.iter().map(|r| r.join(given)).find(|p| p.exists()).unwrap_or(first)
                        })
                    })?,
                }
            }
            "set_database" => {
                let given = required(self.filename, "filename", &action)?;
                // The agent chooses a file to write: it stays inside the roots.
                Action::SetDatabase {
                    path: Action::path(&given, |given| confine::resolve_new_file(roots, &given.to_string_lossy()))?,
                }
            }
            other => return Err(VectorDbError::UnknownAction(other.to_string()).to_string()),
        })
    }
}

/// The `vector_db` tool: the arguments as an action run by the engine (`crate::vectordb::run`)
/// on the database of the first root's index directory (as `raggrep db` finds it).
fn vector_db(
    ws: &Workspace,
    store_model: &crate::vectordb::StoreModel,
    args: VectorDbArgs,
) -> Result<CallToolResult, String> {
    use crate::vectordb::Answer;
    let roots = ws.roots();
    let Some(first) = roots.first() else { return Err("no workspace root".into()) };
    let dir = crate::engine::FolderIndex::of(first).map_err(|e| e.to_string())?.location.dir;
    let action = args.action(&roots)?;
    let target = crate::vectordb::Target { index_dir: &dir, database: None, roots: &roots };
    let outcome =
        crate::vectordb::run(action, &target, store_model, crate::audit::Door::Mcp).map_err(|e| e.to_string())?;
    let encode = |e: serde_json::Error| format!("cannot encode the answer: {e}");
    // `list` and `search` as seed 002 answers them: the text (what a model reads) is the JSON
    // array itself; the structured content, which must be an object, holds it with the rest
    // (total, paging, query, time).
    let seed_array = |array: serde_json::Result<String>, structured: serde_json::Result<serde_json::Value>| {
        let mut result = CallToolResult::structured(structured.map_err(encode)?);
        result.content = vec![ContentBlock::text(array.map_err(encode)?)];
        Ok(result)
    };
    match outcome.answer {
        Answer::Rows(rows) => seed_array(serde_json::to_string(&rows.rows), serde_json::to_value(rows)),
        Answer::Hits(hits) => seed_array(serde_json::to_string(&hits.results), serde_json::to_value(hits)),
        answer => serde_json::to_value(answer).map(CallToolResult::structured).map_err(encode),
    }
}

#[tool_router(router = vector_db_router, vis = "pub(super)")]
impl RaggrepMcp {
    #[tool(
        description = "A persistent vector store (key/value rows with an embedding of their text, in SQLite; one database per workspace, in .raggrep/ unless set_database chose another). One tool, {\"action\": ..., ...}: store (embedding_text, value) -> {key, updated}; retrieve (key) -> {key, found, value, embedding_text}; delete (key) -> {key, deleted, warning?}; list (limit? default 50, offset? default 0) -> the array [{key, embedding_text, value, embedding}] (structured content: {rows, total, limit, offset}); search (query, topK? default 5) -> the array [{key, embedding_text, value, score}] with score the cosine distance, lower is closer, sorted (structured content: {query, results, took_ms}); import_file (filepath, inside the workspace) stores the file's text with its path as value; set_database (filename) switches the database file and remembers it."
    )]
    async fn vector_db(&self, Parameters(args): Parameters<VectorDbArgs>) -> Result<CallToolResult, ErrorData> {
        let store_model = Arc::clone(&self.store_model);
        Ok(self.blocking(move |ws| vector_db(ws, &store_model, args)).await.unwrap_or_else(vector_db_failure))
    }
}
