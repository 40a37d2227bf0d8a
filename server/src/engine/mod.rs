//! The engine API: what the front doors (`cli/`, `lsp/`, `mcp/`) call, and the types they
//! name. Two engines keep the same rules — when an index is built or rebuilt and why, which
//! model may read its vectors, what the audit log records:
//!
//! - [`Local`]: one index for one command, no worker thread (the CLI);
//! - [`Workspace`]: live roots, a background indexer, editor overlays (the language and MCP
//!   servers, `raggrep watch`).
//!
//! Doors reach the pipeline's stages (`walk`, `chunk`, `embed`, `index`, `search`) only through
//! here; the types re-exported below are what a door reads or fills in, never a stage to drive.

pub mod history;
pub mod local;
pub mod request;

pub use crate::history::{HistoryProgress, HistoryQuery};
pub use local::{BACKGROUND_LOG, Local, ModelChoice, Need, Report, Retrieval, Status};
pub use request::{RequestError, SearchRequest, mode};

pub use crate::workspace::{
    Context, Events, FolderIndex, Found, HistoryScope, MemoryLevel, ProjectConfig, RootHit, RootStatus, Settings,
    TeamSetting, Workspace, configured, looks_like_project, query_detail, user_config_file,
};

// What a door names of the pipeline: its requests, answers and settings.
pub use crate::chunk::{Chunk, ChunkConfig, ChunkKind, estimate_tokens, last_segment, outline, word_at};
pub use crate::embed::{Assets, EmbedOptions, Embedder, OnnxEmbedder};
pub use crate::index::{
    ANN_MIN_SLOTS, COMPACT_MIN_DEAD, Ceilings, Discovery, Found as FoundIndex, INDEX_DIR_NAME, IndexError,
    IndexLocation, IndexOptions, IndexStats, Progress, RootIndex, SharedCacheConfig, Snapshot, UpdateStats,
    VectorEncoding, create_private_dir, discover, in_index,
};
pub use crate::lang::Language;
pub use crate::search::{Hit, Mode, Query, SearchError, SearchResults, glob_under, rerank_applies};

/// A file's chunks as the index would cut them (`raggrep chunk`): read with the index's own
/// checks (size, binary, UTF-8), its language detected from its name and first line. Returns
/// the text the chunks' lines refer to.
pub fn chunk_one_file(path: &std::path::Path) -> anyhow::Result<(String, Vec<Chunk>)> {
    let source =
        crate::walk::read_source(path, u64::MAX).map_err(|reason| anyhow::anyhow!("{}: {reason}", path.display()))?;
    let language = Language::detect(path, &source.text);
    let chunks = crate::chunk::chunk_file(&path.to_string_lossy(), &source.text, language, &ChunkConfig::default());
    Ok((source.text, chunks))
}
