//! The persistent index in `ROOT/.raggrep/`: a manifest (rkyv, memory-mapped), a vector file
//! (contiguous little-endian f32, memory-mapped), an HNSW graph, and a lexical (BM25) index.
//!
//! ```text
//! .raggrep/
//!   .gitignore             `*`: the index is never committed by accident
//!   CURRENT                name of the live manifest; replaced atomically to publish
//!   manifest-<gen>.rkyv    files, chunks, model, slots (immutable once written)
//!   vectors-<n>.f32        slots × dim f32, append-only until compaction
//!   ann-<gen>.graph        HNSW graph (flat u32 link tables) over the slots that existed when it was built
//!   lexical/               tantivy index (one document per chunk)
//!   LOCK                   held by the one writer
//! ```
//!
//! Readers open a [`Snapshot`]: whatever `CURRENT` named when they looked. Writers
//! ([`update`]) never modify a published file; they write new ones, fsync, then replace
//! `CURRENT`. A crash at any point leaves the old or the new generation readable.
//!
//! Long on purpose: the on-disk layout and `Snapshot`, the reader every door uses, are documented
//! and kept together.

mod ahead;
mod ann;
mod discover;
mod fsutil;
mod lexical;
mod manifest;
mod recency;
mod shared_cache;
mod static_tier;
mod update;
mod vectors;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::chunk::ChunkKind;
use crate::embed::{EmbedError, Vector};
use crate::lang::{ChunkRole, Language};

pub use ann::{Ann, EF_SEARCH, UnitCosine};
pub use discover::{CEILING_ENV, Ceilings, Discovery, Found, discover};
pub use fsutil::{create_private_dir, write_atomic};

pub use lexical::{LexicalHit, code_terms, code_tokens, query_terms};
pub use manifest::FORMAT_VERSION;
pub use shared_cache::{SharedCache, SharedCacheConfig};
pub use update::{COMPACT_MIN_DEAD, IndexOptions, Progress, STATIC_TIER_MAX_CHUNKS, UpdateStats, prepare_dir, update};
pub use vectors::Encoding as VectorEncoding;

use lexical::LexicalIndex;
use manifest::{MappedManifest, NO_SLOT, join_hash};
use vectors::VectorFile;

/// Name of the index directory inside a workspace root.
pub const INDEX_DIR_NAME: &str = ".raggrep";
const CURRENT: &str = "CURRENT";
const LEXICAL_DIR: &str = "lexical";
/// Below this many vectors no graph is built: the exact scan is fast enough there and always
/// exact. Measured (benches/ann_scale.rs, 384-d): exact 0.45 ms at 10k and 6.7 ms at 100k; the
/// graph 0.31 ms at 10k (recall@10 0.953) and 0.87 ms at 100k (recall 1.000) — at 32k the scan
/// costs ~1.5 ms against ~0.6 ms for the graph.
pub const ANN_MIN_SLOTS: usize = 32_768;

/// Errors of the index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("index is damaged: {0}")]
    Corrupt(String),
    /// Written in another on-disk format (by an older or newer raggrep): not damage, but
    /// rebuilt all the same.
    #[error(
        "{path}: the index is in format {found}, from another version of raggrep (this one reads format {expected})"
    )]
    OtherFormat { path: PathBuf, found: u32, expected: u32 },
    #[error("no index at {0} yet; run `raggrep index`")]
    Missing(PathBuf),
    #[error("lexical index: {0}")]
    Lexical(String),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Walk(#[from] crate::walk::WalkError),
    #[error(
        "the index was built with model {index} ({index_dim}-d) but the embedder is {embedder} ({embedder_dim}-d); run `raggrep index` to rebuild it, or search its words alone with `--mode lexical`, or embed with its model with `--model {index}`"
    )]
    ModelMismatch { index: String, index_dim: usize, embedder: String, embedder_dim: usize },
}

impl IndexError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> IndexError {
        IndexError::Io { path: path.to_path_buf(), source }
    }
}

/// Where a workspace root keeps its index.
#[derive(Debug, Clone)]
pub struct IndexLocation {
    /// The workspace root (paths in the index are relative to it).
    pub root: PathBuf,
    /// The index directory (default `ROOT/.raggrep`).
    pub dir: PathBuf,
}

impl IndexLocation {
    /// `root/.raggrep`, or `dir` when the tree is read-only or the index should live elsewhere.
    pub fn new(root: &Path, dir: Option<&Path>) -> Result<IndexLocation, IndexError> {
        let root = std::fs::canonicalize(root).map_err(|e| IndexError::io(root, e))?;
        let dir = match dir {
            Some(dir) => dir.to_path_buf(),
            None => root.join(INDEX_DIR_NAME),
        };
        Ok(IndexLocation { root, dir })
    }

    pub fn exists(&self) -> bool {
        self.dir.join(CURRENT).is_file()
    }
}

/// A chunk of a snapshot, in engine terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkRef<'a> {
    pub index: usize,
    pub path: &'a str,
    pub start_byte: usize,
    pub end_byte: usize,
    pub start_line: u32,
    pub end_line: u32,
    pub kind: ChunkKind,
    pub language: Language,
    pub symbol: &'a str,
    pub container: &'a str,
    /// Lines of code, not comments or blanks ([`crate::chunk::code_lines`]).
    pub code_lines: u32,
    pub hash: u128,
    pub embedded: bool,
}

impl ChunkRef<'_> {
    /// `container::symbol` for display, or `None` for anonymous chunks.
    pub fn symbol_path(&self) -> Option<String> {
        crate::chunk::qualified_name(self.container, self.symbol, self.kind, self.language)
    }
}

/// Counts for `status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IndexStats {
    /// Empty (and left out) inside a workspace status, which names its root itself.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub root: String,
    pub index_dir: String,
    pub generation: u64,
    pub files: usize,
    pub chunks: usize,
    pub embedded: usize,
    pub pending: usize,
    /// Of `pending`, chunks of implementation code (not tests, docs or text): while more than a
    /// few wait, the default search ranks by the words and the static tier, not yet by the
    /// model's vectors ([`Snapshot::code_embedded`]).
    pub code_pending: usize,
    pub skipped: usize,
    pub model: String,
    pub dim: usize,
    pub vectors: usize,
    /// How the vector file stores them: `f32` or `int8` (`raggrep index --vectors`).
    pub vector_encoding: vectors::Encoding,
    pub dead_vectors: usize,
    pub ann_slots: usize,
    pub lexical_docs: u64,
    pub bytes_on_disk: u64,
    pub memory_estimate_bytes: u64,
    pub updated_unix_ms: u64,
}

/// Whether a writer (an update in this or another process) is at work on the index in `dir`.
pub fn writer_busy(dir: &Path) -> bool {
    fsutil::WriterLock::is_held(dir)
}

/// A root's published index as the root sees it. A workspace folder inside an indexed project
/// uses the project's index, which holds the folder's files under `subtree` (and others the
/// folder must not show); a root with an index of its own has an empty `subtree`.
#[derive(Clone)]
pub struct RootIndex {
    /// The root, canonical: paths given to and returned by its users are relative to it.
    pub root: PathBuf,
    pub snapshot: std::sync::Arc<Snapshot>,
    /// Where the root lies in the index's tree (`/`-separated; `""`: the index's own root).
    pub subtree: String,
}

impl RootIndex {
    /// A root with an index of its own.
    pub fn whole(root: PathBuf, snapshot: std::sync::Arc<Snapshot>) -> RootIndex {
        RootIndex { root, snapshot, subtree: String::new() }
    }

    /// An index path as the root sees it; `None` outside the root.
    pub fn visible<'a>(&self, path: &'a str) -> Option<&'a str> {
        visible_in(&self.subtree, path)
    }

    /// A root-relative path as the index holds it.
    pub fn in_index(&self, path: &str) -> String {
        in_index(&self.subtree, path)
    }
}

/// Index path `path` relative to `subtree` (see [`RootIndex`]); `None` outside it.
pub fn visible_in<'a>(subtree: &str, path: &'a str) -> Option<&'a str> {
    if subtree.is_empty() {
        return Some(path);
    }
    path.strip_prefix(subtree)?.strip_prefix('/')
}

/// `subtree`-relative `path` as the index holds it.
pub fn in_index(subtree: &str, path: &str) -> String {
    match (subtree.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (false, true) => subtree.to_string(),
        (false, false) => format!("{subtree}/{path}"),
    }
}

/// A read-only, consistent view of one index.
pub struct Snapshot {
    pub location: IndexLocation,
    manifest: MappedManifest,
    vectors: VectorFile,
    /// Shared between snapshots of the same graph: reloading it is the slow part of an open.
    ann: Option<(String, std::sync::Arc<Ann>)>,
    lexical: Option<LexicalIndex>,
    /// Chunks of each slot (CSR): `slot_members[slot_offsets[s]..slot_offsets[s + 1]]`.
    slot_offsets: Vec<u32>,
    slot_members: Vec<u32>,
    pending: usize,
    /// Chunks of implementation code ([`crate::lang::is_implementation`]) without a vector yet.
    code_pending: usize,
    /// Slots inside the graph that no chunk uses any more.
    dead_in_graph: usize,
    /// Why the lexical index could not be opened.
    lexical_error: Option<String>,
    /// Per checksum block of the vector file: [`BLOCK_UNCHECKED`], [`BLOCK_OK`] or
    /// [`BLOCK_DAMAGED`]. Checked on the first dense search, not on open: lexical-only readers
    /// and the warm start pay nothing, and a reopened snapshot inherits what was checked.
    block_state: Vec<std::sync::atomic::AtomicU8>,
    /// Every chunk's static vector, while the model's vectors of the code are missing and the
    /// writer left a tier for this chunk list ([`static_tier`]): dense search reads these then.
    static_tier: Option<static_tier::StaticTier>,
}

/// [`Snapshot::code_embedded`]: implementation chunks that may still wait for a vector (an
/// edit's or a small checkout's).
const CODE_PENDING_MAX: usize = 64;

const BLOCK_UNCHECKED: u8 = 0;
const BLOCK_OK: u8 = 1;
const BLOCK_DAMAGED: u8 = 2;

impl Snapshot {
    /// Opens the current generation. Fails with [`IndexError::Missing`] if there is none.
    pub fn open(location: &IndexLocation) -> Result<Snapshot, IndexError> {
        Self::open_reusing(location, None)
    }

    /// Opens the current generation, reusing the HNSW graph of `previous` when the new
    /// generation still uses it (the common case after a small update).
    pub fn open_reusing(location: &IndexLocation, previous: Option<&Snapshot>) -> Result<Snapshot, IndexError> {
        let name = read_current(&location.dir)?.ok_or_else(|| IndexError::Missing(location.root.clone()))?;
        // A file the index needs and cannot find is damage (rebuilt), not an I/O error to stop at.
        let missing_is_damage = |err: IndexError| match err {
            IndexError::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
                IndexError::Corrupt(format!("{} is missing", path.display()))
            }
            other => other,
        };
        let manifest = MappedManifest::open(&location.dir.join(&name)).map_err(missing_is_damage)?;
        let m = manifest.get();
        let dim = m.dim.to_native() as usize;
        let slots = m.vector_slots.to_native() as usize;
        let vectors = if slots == 0 {
            VectorFile::open(Path::new(""), dim, 0)?
        } else {
            VectorFile::open(&location.dir.join(m.vectors_file.as_str()), dim, slots).map_err(missing_is_damage)?
        };
        let block_state = (0..vectors.blocks())
            .map(|block| {
                let inherited = previous
                    .filter(|p| p.manifest.get().vectors_file == m.vectors_file)
                    .filter(|p| p.manifest.get().vector_checksums.get(block) == m.vector_checksums.get(block))
                    .and_then(|p| p.block_state.get(block))
                    .map_or(BLOCK_UNCHECKED, |s| s.load(std::sync::atomic::Ordering::Relaxed));
                std::sync::atomic::AtomicU8::new(inherited)
            })
            .collect();
        // Chunk → slot references, inverted.
        let mut counts = vec![0u32; slots + 1];
        let mut pending = 0;
        for chunk in m.chunks.iter() {
            let slot = chunk.slot.to_native();
            if slot == NO_SLOT {
                pending += 1;
            } else if (slot as usize) < slots {
                counts[slot as usize + 1] += 1;
            } else {
                return Err(IndexError::Corrupt(format!("chunk refers to vector {slot} of {slots}")));
            }
        }
        // Only a partly embedded index has code to wait for: a complete one (most opens) reads
        // no path here.
        let mut code_pending = 0;
        for file in m.files.iter().filter(|_| pending > 0) {
            if !crate::lang::is_implementation(file.path.as_str(), Language::from_u8(file.language)) {
                continue;
            }
            let start = file.first_chunk.to_native() as usize;
            let end = start + file.chunk_count.to_native() as usize;
            if let Some(chunks) = m.chunks.get(start..end) {
                // The file is code; its unit tests and comment-only windows are not.
                let code = |c: &&manifest::ArchivedChunkEntry| {
                    let module = ChunkKind::from_u8(c.kind) == ChunkKind::Module;
                    let (container, symbol, code_lines) =
                        (c.container.as_str(), c.symbol.as_str(), c.code_lines.to_native());
                    crate::lang::implementation_chunk_role(container, symbol, module, code_lines) == ChunkRole::Code
                };
                code_pending += chunks.iter().filter(|c| c.slot.to_native() == NO_SLOT && code(c)).count();
            }
        }
        // Only while the default search would otherwise rank by the words alone (no vector yet,
        // or the code's still missing): once the model's vectors of the code are in, they rank.
        // Not over a tree too big for one (an index an earlier version left one in).
        let static_tier = if pending > 0
            && m.chunks.len() <= STATIC_TIER_MAX_CHUNKS
            && (pending == m.chunks.len() || code_pending > CODE_PENDING_MAX)
        {
            let print = static_tier::fingerprint(
                m.model_id.as_str(),
                m.chunks.iter().map(|c| {
                    let path = m.files.get(c.file.to_native() as usize).map_or("", |f| f.path.as_str());
                    (join_hash([c.hash[0].to_native(), c.hash[1].to_native()]), path)
                }),
            );
            static_tier::StaticTier::open(&location.dir, dim, m.chunks.len(), print)
        } else {
            None
        };
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let slot_offsets = counts.clone();
        let mut fill = counts;
        let mut slot_members = vec![0u32; slot_offsets[slots] as usize];
        for (i, chunk) in m.chunks.iter().enumerate() {
            let slot = chunk.slot.to_native();
            if slot != NO_SLOT {
                let at = &mut fill[slot as usize];
                slot_members[*at as usize] = i as u32;
                *at += 1;
            }
        }
        let ann = match m.ann.as_ref() {
            Some(entry) => {
                let basename = entry.basename.as_str();
                let reused = previous
                    .and_then(|p| p.ann.as_ref())
                    .filter(|(name, _)| name == basename)
                    .map(|(name, ann)| (name.clone(), std::sync::Arc::clone(ann)));
                match reused {
                    Some(ann) => Some(ann),
                    None => match Ann::load(&location.dir, basename, entry.slots.to_native() as usize) {
                        Ok(ann) => Some((basename.to_string(), std::sync::Arc::new(ann))),
                        Err(err) => {
                            // Exact search still answers correctly; the next update rebuilds it.
                            tracing::warn!("{err}; searching exactly until the next update");
                            None
                        }
                    },
                }
            }
            None => None,
        };
        let (lexical, lexical_error) = match LexicalIndex::open(&location.dir.join(LEXICAL_DIR)) {
            Ok(lexical) => (Some(lexical), None),
            Err(err) => {
                tracing::warn!("{err}; lexical search unavailable until the next `raggrep index`");
                (None, Some(err.to_string()))
            }
        };
        let graph_slots = ann.as_ref().map_or(0, |(_, a)| a.slots());
        let dead_in_graph = (0..graph_slots.min(slots)).filter(|&s| slot_offsets[s] == slot_offsets[s + 1]).count();
        Ok(Snapshot {
            dead_in_graph,
            location: location.clone(),
            manifest,
            vectors,
            ann,
            lexical,
            slot_offsets,
            slot_members,
            pending,
            code_pending,
            lexical_error,
            block_state,
            static_tier,
        })
    }

    /// The checksum blocks of the vector file whose content does not match the manifest,
    /// checking any not checked yet (~0.1 ms per 1,024 vectors).
    fn damaged_blocks(&self) -> Vec<usize> {
        use std::sync::atomic::Ordering;
        let expected = &self.manifest.get().vector_checksums;
        let mut damaged = Vec::new();
        for (block, state) in self.block_state.iter().enumerate() {
            let mut current = state.load(Ordering::Relaxed);
            if current == BLOCK_UNCHECKED {
                let ok = expected.get(block).map(|c| c.to_native()) == Some(self.vectors.block_checksum(block));
                current = if ok { BLOCK_OK } else { BLOCK_DAMAGED };
                state.store(current, Ordering::Relaxed);
            }
            if current == BLOCK_DAMAGED {
                damaged.push(block);
            }
        }
        damaged
    }

    /// Why results from this snapshot are worse than they should be, for `mode`, in words: a
    /// lexical index that cannot be opened, damaged vectors. `None` when all is well.
    pub fn degraded(&self, dense: bool, lexical: bool) -> Option<String> {
        let mut reasons = Vec::new();
        if lexical && let Some(err) = &self.lexical_error {
            reasons.push(format!("lexical index unavailable ({err})"));
        }
        if dense {
            let damaged = self.damaged_blocks().len();
            if damaged > 0 {
                reasons.push(format!(
                    "{damaged} damaged block(s) of vectors ignored (up to {} chunks each)",
                    vectors::BLOCK_SLOTS
                ));
            }
        }
        (!reasons.is_empty()).then(|| format!("{}; `raggrep index` repairs it", reasons.join("; ")))
    }

    pub fn model_id(&self) -> &str {
        self.manifest.get().model_id.as_str()
    }

    pub fn dim(&self) -> usize {
        self.manifest.get().dim.to_native() as usize
    }

    /// Whether `model` embedded this index: only its query vectors can be searched here.
    pub fn built_by(&self, model: &crate::embed::ModelInfo) -> bool {
        self.model_id() == model.id && self.dim() == model.dim
    }

    pub fn generation(&self) -> u64 {
        self.manifest.get().generation.to_native()
    }

    /// True while some chunks are not embedded yet (dense search sees only the rest).
    pub fn is_partial(&self) -> bool {
        self.pending > 0
    }

    /// Chunks of the files under root-relative directory `dir` (`""`: all) without a vector: what
    /// a workspace folder inside the project waits for ([`RootIndex`]).
    pub fn pending_under(&self, dir: &str) -> usize {
        if dir.is_empty() {
            return self.pending;
        }
        let m = self.manifest.get();
        let prefix = format!("{dir}/");
        // Files are sorted by path: those under `dir` are one run of them.
        let first = m.files.partition_point(|f| f.path.as_str() < prefix.as_str());
        m.files[first..]
            .iter()
            .take_while(|f| f.path.as_str().starts_with(&prefix))
            .map(|f| {
                let start = f.first_chunk.to_native() as usize;
                let end = start + f.chunk_count.to_native() as usize;
                m.chunks
                    .get(start..end)
                    .map_or(0, |chunks| chunks.iter().filter(|c| c.slot.to_native() == NO_SLOT).count())
            })
            .sum()
    }

    /// Whether the implementation code has its vectors: at most [`CODE_PENDING_MAX`] of its
    /// chunks (an edit's few) wait for one. Before that the vectors there are are a sample of
    /// whatever the indexer reached first, and a ranking that weighs cosines puts what has one
    /// ahead of what has none: on cold tune trees of semble's benchmark the default search fell
    /// from the words' 0.73-0.88 NDCG@10 to 0.49-0.71 with 1-44 % of the vectors, and abseil's
    /// from 0.807 to 0.700 with 91 % of its implementation embedded (BENCHMARKS.md, "Cold
    /// start"). Tests (unit tests inside a source file too), a long doc comment's windows of
    /// comments alone, docs and text still waiting do not hold it back.
    pub fn code_embedded(&self) -> bool {
        self.code_pending <= CODE_PENDING_MAX
    }

    /// Whether dense search answers from the static tier (a fresh index while the model works).
    pub fn static_tier(&self) -> bool {
        self.static_tier.is_some()
    }

    /// Whether a ranking may weigh cosines: the model's vectors of the code are in, or the
    /// static tier stands for all of them.
    pub fn ranks_by_vectors(&self) -> bool {
        self.static_tier.is_some() || (self.embedded() > 0 && self.code_embedded())
    }

    /// Chunks with a vector.
    pub fn embedded(&self) -> usize {
        self.chunk_count().saturating_sub(self.pending)
    }

    pub fn chunk_count(&self) -> usize {
        self.manifest.get().chunks.len()
    }

    pub fn chunk(&self, index: usize) -> Option<ChunkRef<'_>> {
        let m = self.manifest.get();
        let c = m.chunks.get(index)?;
        let file = m.files.get(c.file.to_native() as usize)?;
        Some(ChunkRef {
            index,
            path: file.path.as_str(),
            start_byte: c.start_byte.to_native() as usize,
            end_byte: c.end_byte.to_native() as usize,
            start_line: c.start_line.to_native(),
            end_line: c.end_line.to_native(),
            kind: ChunkKind::from_u8(c.kind),
            language: Language::from_u8(file.language),
            symbol: c.symbol.as_str(),
            container: c.container.as_str(),
            code_lines: c.code_lines.to_native(),
            hash: join_hash([c.hash[0].to_native(), c.hash[1].to_native()]),
            embedded: c.slot.to_native() != NO_SLOT,
        })
    }

    /// Whether the file at `path` (relative to the root) is indexed; a file the walk or the
    /// reader left out is not.
    pub fn has_file(&self, path: &str) -> bool {
        self.file_position(path).is_some()
    }

    /// Where the file at `path` is in the manifest's file list (sorted by path).
    fn file_position(&self, path: &str) -> Option<usize> {
        self.manifest.get().files.binary_search_by(|f| f.path.as_str().cmp(path)).ok()
    }

    /// Chunks of a file, by path relative to the root.
    pub fn chunks_of(&self, path: &str) -> Vec<ChunkRef<'_>> {
        let m = self.manifest.get();
        let Some(file_index) = self.file_position(path) else {
            return Vec::new();
        };
        let file = &m.files[file_index];
        let first = file.first_chunk.to_native() as usize;
        (first..first + file.chunk_count.to_native() as usize).filter_map(|i| self.chunk(i)).collect()
    }

    /// The stored vector of a chunk, if embedded (and not damaged).
    pub fn chunk_vector(&self, index: usize) -> Option<Vector> {
        if let Some(tier) = &self.static_tier {
            return tier.get(index).map(|v| Vector::normalized(v.to_vec()));
        }
        let slot = self.manifest.get().chunks.get(index)?.slot.to_native() as usize;
        if self.damaged_blocks().binary_search(&(slot / vectors::BLOCK_SLOTS)).is_ok() {
            return None;
        }
        self.vectors.get(slot).map(|v| Vector::normalized(v.into_owned()))
    }

    /// Best chunks by cosine similarity to `query`, among chunks accepted by `accept`.
    /// Uses the HNSW graph when there is one and no filter, an exact scan otherwise (or when
    /// `exact`). Returns (chunk index, similarity), best first.
    pub fn dense_search(
        &self,
        query: &Vector,
        limit: usize,
        accept: Option<&dyn Fn(&ChunkRef<'_>) -> bool>,
        exact: bool,
    ) -> Vec<(usize, f32)> {
        if query.dim() != self.dim() || limit == 0 {
            return Vec::new();
        }
        if let Some(tier) = &self.static_tier {
            return self.scan_static(tier, query, limit, accept);
        }
        let members = |slot: usize| -> &[u32] {
            &self.slot_members[self.slot_offsets[slot] as usize..self.slot_offsets[slot + 1] as usize]
        };
        let damaged = self.damaged_blocks();
        let slot_ok = |slot: usize| -> bool {
            if !damaged.is_empty() && damaged.binary_search(&(slot / vectors::BLOCK_SLOTS)).is_ok() {
                return false;
            }
            let chunks = members(slot);
            match accept {
                None => !chunks.is_empty(),
                Some(accept) => chunks.iter().any(|&c| self.chunk(c as usize).is_some_and(|c| accept(&c))),
            }
        };
        // Duplicate chunks share a slot, so ask for a few more slots than chunks wanted.
        // A graph over more slots than the file holds would be damage: scan exactly instead.
        let ann = self.ann.as_ref().map(|(_, a)| a).filter(|a| a.slots() <= self.vectors.len());
        let mut scored: Vec<(usize, f32)> = match (ann, exact || accept.is_some()) {
            (Some(ann), false) => {
                // Filtering inside the graph search costs time; skip it when every slot it
                // covers is live.
                let covered_all_live = self.dead_in_graph == 0 && damaged.is_empty();
                let filter: &dyn Fn(usize) -> bool = &slot_ok;
                let q = query.as_slice();
                let mut found = ann.search_by(
                    &|slot| self.vectors.dot(slot, q),
                    limit,
                    ann::EF_SEARCH,
                    (!covered_all_live).then_some(filter),
                );
                // Slots added since the graph was built are scanned exactly.
                found.extend(self.scan(query, ann.slots()..self.vectors.len(), limit, &slot_ok));
                found
            }
            _ => self.scan(query, 0..self.vectors.len(), limit, &slot_ok),
        };
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut out = Vec::with_capacity(limit);
        for (slot, score) in scored {
            for &chunk in members(slot) {
                let accepted = match accept {
                    None => true,
                    Some(accept) => self.chunk(chunk as usize).is_some_and(|c| accept(&c)),
                };
                if accepted {
                    out.push((chunk as usize, score));
                }
            }
            if out.len() >= limit {
                break;
            }
        }
        out.truncate(limit);
        out
    }

    /// Exact top-`limit` over every chunk's static vector (a few ms for 10k chunks).
    fn scan_static(
        &self,
        tier: &static_tier::StaticTier,
        query: &Vector,
        limit: usize,
        accept: Option<&dyn Fn(&ChunkRef<'_>) -> bool>,
    ) -> Vec<(usize, f32)> {
        let q = query.as_slice();
        let score = |chunk: usize| tier.get(chunk).map_or(f32::NAN, |v| crate::embed::dot(v, q));
        let accepted = |chunk: usize| accept.is_none_or(|accept| self.chunk(chunk).is_some_and(|c| accept(&c)));
        top_k(0..tier.len(), limit, &score, &accepted)
    }

    /// Exact top-`limit` over a range of slots.
    fn scan(
        &self,
        query: &Vector,
        slots: std::ops::Range<usize>,
        limit: usize,
        slot_ok: &dyn Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        let q = query.as_slice();
        top_k(slots, limit, &|slot| self.vectors.dot(slot, q), slot_ok)
    }

    /// BM25 hits mapped to chunk indices. Empty when the lexical index is unavailable.
    pub fn lexical_search(&self, query: &str, limit: usize) -> Result<Vec<(usize, f32)>, IndexError> {
        let Some(lexical) = &self.lexical else {
            return Ok(Vec::new());
        };
        let hits = lexical.search(query, limit)?;
        let mut by_path: HashMap<&str, Vec<ChunkRef<'_>>> = HashMap::new();
        let mut out = Vec::with_capacity(hits.len());
        for hit in &hits {
            let chunks = by_path.entry(hit.path.as_str()).or_insert_with(|| self.chunks_of(&hit.path));
            // A hit whose chunk is not in this manifest comes from a newer, unpublished commit:
            // skip it, the next snapshot will have it.
            if let Some(chunk) = chunks.iter().find(|c| c.hash == hit.hash) {
                out.push((chunk.index, hit.score));
            }
        }
        Ok(out)
    }

    pub fn has_lexical(&self) -> bool {
        self.lexical.is_some()
    }

    pub fn stats(&self) -> IndexStats {
        let m = self.manifest.get();
        let vectors = self.vectors.len();
        let live = (0..vectors).filter(|&s| self.slot_offsets[s] != self.slot_offsets[s + 1]).count();
        let lexical_bytes = dir_size(&self.location.dir.join(LEXICAL_DIR));
        let ann_bytes: u64 =
            m.ann.as_ref().map_or(0, |a| file_size(&self.location.dir.join(Ann::file_name(a.basename.as_str()))));
        let bytes_on_disk = self.manifest.size_on_disk() + self.vectors.size_on_disk() + lexical_bytes + ann_bytes;
        let ann_slots = self.ann.as_ref().map_or(0, |(_, a)| a.slots());
        // Resident when searching: mapped vectors, manifest and graph, the slot table, and
        // tantivy's mapped segments.
        let memory_estimate_bytes = self.manifest.size_on_disk()
            + self.vectors.size_on_disk()
            + self.ann.as_ref().map_or(0, |(_, a)| a.size_bytes())
            + (self.slot_members.len() * 4 + self.slot_offsets.len() * 4) as u64
            + lexical_bytes;
        IndexStats {
            root: self.location.root.display().to_string(),
            index_dir: self.location.dir.display().to_string(),
            generation: m.generation.to_native(),
            files: m.files.len(),
            chunks: m.chunks.len(),
            embedded: m.chunks.len() - self.pending,
            pending: self.pending,
            code_pending: self.code_pending,
            skipped: m.skipped.len(),
            model: m.model_id.as_str().to_string(),
            dim: self.dim(),
            vectors,
            vector_encoding: self.vectors.encoding(),
            dead_vectors: vectors - live,
            ann_slots,
            lexical_docs: self.lexical.as_ref().map_or(0, |l| l.num_docs()),
            bytes_on_disk,
            memory_estimate_bytes,
            updated_unix_ms: m.updated_unix_ms.to_native(),
        }
    }

    /// Files left out of the index, and why.
    pub fn skipped(&self) -> Vec<(String, String)> {
        self.manifest
            .get()
            .skipped
            .iter()
            .map(|s| (s.path.as_str().to_string(), s.reason.as_str().to_string()))
            .collect()
    }

    /// The key of the text the model embedded for a chunk (the machine-wide cache's key:
    /// xxh3-128 of model input); `None` while the chunk is not embedded.
    pub fn embedding_key(&self, index: usize) -> Option<u128> {
        let m = self.manifest.get();
        let slot = m.chunks.get(index)?.slot.to_native();
        if slot == NO_SLOT {
            return None;
        }
        let key = m.slot_keys.get(slot as usize)?;
        Some(join_hash([key[0].to_native(), key[1].to_native()]))
    }

    /// How the chunks were made ([`crate::chunk::recipe`]).
    pub fn recipe(&self) -> &str {
        self.manifest.get().recipe.as_str()
    }

    /// Indexed files with the content hash of the text that was chunked: (path, hash).
    pub fn file_hashes(&self) -> Vec<(String, u128)> {
        self.manifest
            .get()
            .files
            .iter()
            .map(|f| (f.path.as_str().to_string(), join_hash([f.hash[0].to_native(), f.hash[1].to_native()])))
            .collect()
    }

    /// Indexed files: (path, language, chunk count).
    pub fn files(&self) -> Vec<(String, Language, usize)> {
        self.manifest
            .get()
            .files
            .iter()
            .map(|f| (f.path.as_str().to_string(), Language::from_u8(f.language), f.chunk_count.to_native() as usize))
            .collect()
    }
}

/// The best `limit` of `items` by `score`, best first, among those `ok` accepts (asked only of
/// an item whose score would place: a filter can cost more than a dot product).
fn top_k(
    items: std::ops::Range<usize>,
    limit: usize,
    score: &dyn Fn(usize) -> f32,
    ok: &dyn Fn(usize) -> bool,
) -> Vec<(usize, f32)> {
    let mut best: Vec<(usize, f32)> = Vec::with_capacity(limit + 1);
    let mut floor = f32::NEG_INFINITY;
    for item in items {
        let score = score(item);
        // Unit vectors give scores in [-1, 1]; anything else is damage, never a best match.
        if !score.is_finite() || (best.len() >= limit && score <= floor) {
            continue;
        }
        if !ok(item) {
            continue;
        }
        let at = best.partition_point(|&(_, s)| s >= score);
        best.insert(at, (item, score));
        if best.len() > limit {
            best.pop();
        }
        if best.len() >= limit {
            floor = best[best.len() - 1].1;
        }
    }
    best
}

fn read_current(dir: &Path) -> Result<Option<String>, IndexError> {
    let path = dir.join(CURRENT);
    match std::fs::read_to_string(&path) {
        Ok(name) => {
            let name = name.trim().to_string();
            if name.is_empty() || name.contains('/') || name.contains("..") {
                return Err(IndexError::Corrupt(format!("{}: bad content", path.display())));
            }
            Ok(Some(name))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(IndexError::io(&path, e)),
    }
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.metadata().map_or(0, |m| m.len())).sum())
        .unwrap_or(0)
}

/// Fuzzing entry points (internal; see `fuzz/`).
#[doc(hidden)]
pub use manifest::{check_bytes as check_manifest_bytes, with_footer as manifest_with_footer};
