//! Bringing an index up to date with the files on disk.
//!
//! Incremental by construction: a file whose (mtime, size) or, failing that, content hash is
//! unchanged keeps its chunks and vectors; changed files are re-chunked, and each chunk's
//! embedding is looked up by the hash of the text the model would see before any inference
//! runs, so renames, reverted edits and branch switches re-embed nothing. Vectors of chunks that
//! disappear stay in the vector file as dead slots (still serving as cache) until they pass a
//! threshold and the file is compacted.
//!
//! An update with much to embed publishes twice or more: once right after chunking (lexical
//! search and all previously embedded chunks answer at once; the snapshot says it is partial),
//! then while and after embedding. One with nothing for the model, or a save with a few texts,
//! publishes once.
//!
//! Long on purpose: the writer's steps (walk, reuse, chunk, embed in batches, publish
//! generations, compact) share one locked state and its crash invariants, kept in one place; about
//! 240 lines are its tests.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::fsutil::{WriterLock, write_atomic};
use super::lexical::{LexicalDoc, LexicalIndex, LexicalWriter};
use super::manifest::{
    self, AnnEntry, ChunkEntry, FileEntry, Manifest, MappedManifest, NO_SLOT, SkippedEntry, join_hash, split_hash,
};
use super::shared_cache::{SharedCache, SharedCacheConfig};
use super::static_tier;
use super::vectors::{BLOCK_SLOTS, Encoding, VectorAppender, VectorFile};
use super::{ANN_MIN_SLOTS, Ann, CURRENT, IndexError, IndexLocation, LEXICAL_DIR, read_current};
use crate::chunk::{Chunk, ChunkConfig, ChunkKind, ContentHash, EmbedHeader, chunk_file, embedding_text};
use crate::embed::{Embedder, ModelInfo, Vector};
use crate::lang::{ChunkRole, Language};
use crate::walk::{self, WalkOptions};

/// How to index.
#[derive(Debug, Clone)]
pub struct IndexOptions {
    pub walk: WalkOptions,
    pub chunk: ChunkConfig,
    /// Distinct texts embedded between two vector appends and progress reports.
    pub embed_batch: usize,
    /// While embedding, publish at least this often so readers see progress.
    pub commit_interval: Duration,
    /// The first vectors of an update are published after this long of embedding (at the end
    /// of the batch that passes it): zero publishes the first batch, so the first semantic
    /// answer of a cold start comes as early as the model allows.
    pub first_publish: Duration,
    /// Editor buffers that differ from the disk, by root-relative path: indexed instead of the
    /// file's content.
    pub overlays: HashMap<String, String>,
    /// Stop adding chunks past this many (the memory budget); the files left out are listed as
    /// skipped with the reason.
    pub max_chunks: Option<usize>,
    /// When set, embedding stops at the next batch; what is done is published (the rest stays
    /// pending for the next update).
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Build the HNSW graph only from this many vectors on ([`ANN_MIN_SLOTS`]; smaller in tests
    /// and crash loops, so they reach graph builds on small trees).
    pub ann_min_slots: usize,
    /// Compact the vector file once this many slots are dead (and at least 30 % are).
    pub compact_min_dead: usize,
    /// False: walk, chunk and publish, but compute no embeddings (new chunks wait for the next
    /// update). For a quick publish of what the disk says, as at shutdown.
    pub embed: bool,
    /// With `embed` false, a fresh index gets its static tier ([`static_tier`]) only when it has
    /// at most this many chunks: the one-shot first query waits for it (~0.35 s per 10,000 chunks
    /// on two cores) and sets a bound; 0 (the default) never, as for a quick publish at shutdown.
    /// An update that embeds writes it for a fresh index, before the model starts; neither above
    /// [`STATIC_TIER_MAX_CHUNKS`].
    pub static_tier_max_chunks: usize,
    /// The machine-wide embedding cache to read before running the model and to fill after
    /// (front doors pass [`SharedCacheConfig::from_env`]; `None`: the model embeds everything
    /// this index lacks).
    pub shared_cache: Option<SharedCacheConfig>,
    /// How the vector file stores vectors. `None` keeps the index's encoding (f32 for a new
    /// index); a different one converts the file at this update (as a compaction does).
    pub vectors: Option<Encoding>,
    /// Only these root-relative paths may have changed (an editor's save, a watcher's event):
    /// the update reads them and takes every other file from the previous index without
    /// walking the tree. Falls back to a full walk when that cannot be trusted (a path new to
    /// the index, a symlink, a first index, new chunking settings). `None`: walk everything.
    pub only_paths: Option<Vec<String>>,
    /// The update's own part of the tree, a root-relative directory (a workspace folder inside
    /// an indexed project): only it is walked and read; every other file keeps its entries from
    /// the previous index as they are, unread. When the previous index cannot be kept (a first
    /// index, new chunking settings, a lexical rebuild), files outside it are left out for an
    /// update of the whole root. `None`: the whole root.
    pub subtree: Option<String>,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            walk: WalkOptions::default(),
            chunk: ChunkConfig::default(),
            embed_batch: 32,
            commit_interval: Duration::from_secs(10),
            first_publish: Duration::ZERO,
            overlays: HashMap::new(),
            max_chunks: None,
            cancel: None,
            ann_min_slots: ANN_MIN_SLOTS,
            compact_min_dead: COMPACT_MIN_DEAD,
            embed: true,
            static_tier_max_chunks: 0,
            shared_cache: None,
            vectors: None,
            only_paths: None,
            subtree: None,
        }
    }
}

/// What an update is doing, for progress displays.
#[derive(Debug, Clone)]
pub enum Progress {
    /// Another process holds the writer lock; waiting for it.
    Waiting,
    /// The existing index cannot be used; starting over (the reason is one line).
    Rebuilding {
        reason: String,
    },
    /// Files read and chunked, and published: lexical search (and every chunk embedded before)
    /// answers from the new content now.
    Chunked {
        files: usize,
        changed_files: usize,
        chunks: usize,
        to_embed: usize,
    },
    Embedding {
        done: usize,
        total: usize,
    },
    BuildingAnn {
        vectors: usize,
    },
    /// Inserting vectors the graph does not cover yet into it.
    ExtendingAnn {
        vectors: usize,
        new: usize,
    },
    /// While waiting: the other writer published a generation; readers may reopen.
    Followed,
    /// An intermediate generation with more embedded chunks was published (every
    /// `commit_interval` while embedding); readers may reopen.
    Published {
        generation: u64,
        embedded: usize,
    },
}

/// What an update did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct UpdateStats {
    pub files: usize,
    pub changed_files: usize,
    pub removed_files: usize,
    pub skipped_files: usize,
    pub chunks: usize,
    /// Chunks whose embedding was computed by this update.
    pub embedded: usize,
    /// Of `embedded`, the chunks whose vector came from the machine-wide embedding cache: the
    /// model did not run for them.
    pub from_cache: usize,
    /// Changed chunks whose embedding came from the cache.
    pub reused: usize,
    pub seconds: f64,
    /// Seconds until lexical search answered with the new content.
    pub seconds_to_lexical: f64,
    /// Seconds until the first vectors this update added (from the model or the cache) were
    /// published, i.e. until dense search answered from them; absent when none were added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_to_semantic: Option<f64>,
    /// Seconds until every chunk had a static vector (the first tier, see
    /// [`super::static_tier`]): written for a fresh index whose model has a static table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds_to_static: Option<f64>,
    /// Set when the old index could not be used.
    pub rebuilt: Option<String>,
    /// Whether the tree was walked (false: an update scoped to the paths an editor or a
    /// watcher named).
    pub walked: bool,
}

/// Updates the index at `location` from the files under its root.
///
/// A change flows through four stages, each a function below: the files to look at
/// ([`list_files`]: a walk, or the previous index with the named paths looked at afresh), their
/// chunks ([`chunk_files`]: unchanged files keep theirs, changed ones are chunked and go to the
/// lexical index, and every chunk without a vector queues its text), the model
/// ([`embed_pending`]: the machine-wide cache first, then inference, with intermediate
/// publishes), and the vectors' upkeep ([`maintain_vectors`]: compaction, the graph). Every
/// publish writes the lexical index before the manifest that matches it.
pub fn update(
    location: &IndexLocation,
    embedder: &dyn Embedder,
    options: &IndexOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<UpdateStats, IndexError> {
    let start = Instant::now();
    prepare_dir(location)?;
    let Some(_lock) = lock_writer(location, options, progress)? else {
        // Cancelled while another process wrote: nothing was read, nothing to publish.
        return Ok(UpdateStats { seconds: start.elapsed().as_secs_f64(), ..UpdateStats::default() });
    };
    let info = embedder.info().clone();
    let mut base = Base::open(location, &info, options, progress)?;
    let mut stats = UpdateStats { rebuilt: base.rebuilt.take(), ..UpdateStats::default() };

    let Some(listed) = list_files(location, &base, options, &mut stats)? else {
        // A cut-short walk would read as deleted files: publish nothing, the next update redoes it.
        stats.seconds = start.elapsed().as_secs_f64();
        return Ok(stats);
    };
    let mut chunked = chunk_files(location, &mut base, &listed, options, &mut stats)?;
    let chunked_progress = Progress::Chunked {
        files: chunked.files.len(),
        changed_files: stats.changed_files,
        chunks: chunked.chunks.len(),
        to_embed: chunked.to_embed.chunks(),
    };
    order_embedding(location, options, &mut chunked);

    let Chunked { files, chunks, skipped, to_embed } = chunked;
    let Base { prev, previous_name, mut lex, recipe, .. } = base;
    let mut manifest = Manifest {
        generation: prev.generation + 1,
        model_id: info.id.clone(),
        dim: info.dim as u32,
        recipe,
        updated_unix_ms: now_ms(),
        vectors_file: prev.vectors_file,
        vector_slots: prev.vector_slots,
        vector_checksums: prev.vector_checksums,
        slot_keys: prev.slot_keys,
        ann: prev.ann,
        lexical_generation: prev.generation + 1,
        files,
        chunks,
        skipped,
    };
    // A save's few texts take the model milliseconds, about what a publish of a big manifest
    // costs: they go out with the lexical changes in one publish (and one reopen by readers),
    // instead of a lexical publish followed at once by a vector publish.
    let embedding = !to_embed.texts.is_empty() && options.embed;
    let publish_once = embedding && to_embed.texts.len() <= PUBLISH_ONCE_MAX_TEXTS;
    let mut chunked_progress = Some(chunked_progress);
    // Whether `manifest.generation` is on disk (a later publish takes the next one).
    let mut published = false;
    if !publish_once {
        lex.commit(manifest.generation)?;
        publish(&location.dir, &mut manifest)?;
        published = true;
        stats.seconds_to_lexical = start.elapsed().as_secs_f64();
        // Only now: a reader reacting to this event must find the published generation.
        progress(chunked_progress.take().expect("taken once"));
        // Every chunk waits for the model (a fresh index, a new model): the static tier gives
        // them vectors in seconds, for the answers until the model's are in.
        if to_embed.chunks() == manifest.chunks.len()
            && !manifest.chunks.is_empty()
            && writes_static_tier(manifest.chunks.len(), options)
            && write_static_tier(location, embedder, &to_embed, &manifest)
        {
            stats.seconds_to_static = Some(start.elapsed().as_secs_f64());
        }
    }
    if embedding {
        let publishes = if publish_once { Publishes::AtTheEnd } else { Publishes::Periodic };
        let first =
            embed_pending(location, embedder, options, &to_embed, publishes, &mut manifest, &mut stats, progress)?;
        if let Some(first) = first {
            stats.seconds_to_semantic = Some(first.duration_since(start).as_secs_f64());
            published = true;
        }
    }

    let vectors_before = vector_state(&manifest);
    maintain_vectors(&location.dir, &mut manifest, options, progress)?;
    // A save that needed no model and no graph work is done with the publish above: on a 100k-
    // file tree a second one costs ~25 ms of the save's latency (rkyv, fsync) for nothing.
    if !published || embedding || vector_state(&manifest) != vectors_before {
        if published {
            manifest.generation += 1;
        } else {
            // Right before the manifest that matches it, as above: a crash between the two
            // costs the next update a lexical rebuild.
            lex.commit(manifest.lexical_generation)?;
        }
        manifest.updated_unix_ms = now_ms();
        publish(&location.dir, &mut manifest)?;
        if stats.embedded > 0 && stats.seconds_to_semantic.is_none() {
            stats.seconds_to_semantic = Some(start.elapsed().as_secs_f64());
        }
    }
    if let Some(chunked_progress) = chunked_progress {
        stats.seconds_to_lexical = start.elapsed().as_secs_f64();
        progress(chunked_progress);
    }
    collect_garbage(&location.dir, &manifest, previous_name.as_deref());
    if manifest.chunks.iter().all(|c| c.slot != NO_SLOT) {
        // Every chunk has the model's vector: the first tier has served its turn.
        static_tier::remove(&location.dir);
    }
    stats.seconds = start.elapsed().as_secs_f64();
    Ok(stats)
}

/// The most chunks a fresh index gets a static tier for. Over a few tens of thousands of chunks
/// the tier answers better than the words (abseil-cpp's 22,875: 0.842 NDCG@10 on semble's
/// questions against 0.819); over a 1M-line monorepo's 82,918 it answered worse (0.701 against
/// 0.801 on the same tree, same questions: other packages' near misses crowd in), so a tree that
/// big answers from the words until the model's vectors of its code are in (BENCHMARKS.md, "A
/// long doc comment's windows…"). Also the first query's bound: it waits for the tier, ~30,000
/// chunks a second on two cores with the word memo.
pub const STATIC_TIER_MAX_CHUNKS: usize = 65_536;

/// Whether an update of a fresh index of `chunks` chunks writes its static tier: within
/// [`STATIC_TIER_MAX_CHUNKS`], always when it embeds (the tier serves until the model's vectors of
/// the code are in), within `static_tier_max_chunks` when it does not.
fn writes_static_tier(chunks: usize, options: &IndexOptions) -> bool {
    chunks <= STATIC_TIER_MAX_CHUNKS && (options.embed || chunks <= options.static_tier_max_chunks)
}

/// Writes the static tier for `manifest`, whose chunks all wait in `to_embed`; whether it is
/// there now (the words-only first query's, found by the background indexer after it, is not
/// made twice). A model without a static table, or a failure, only costs the first answers
/// their vectors.
fn write_static_tier(
    location: &IndexLocation,
    embedder: &dyn Embedder,
    to_embed: &ToEmbed,
    manifest: &Manifest,
) -> bool {
    let dim = embedder.info().dim;
    let print = static_tier::fingerprint_of(manifest);
    if static_tier::StaticTier::open(&location.dir, dim, manifest.chunks.len(), print).is_some() {
        return true;
    }
    let texts: Vec<&str> = to_embed.texts.iter().map(|(_, text)| text.as_str()).collect();
    // Tokenising is most of the cost (~15,000 chunks a second on one core): every core takes a
    // share, so a first query on a cold tree waits for it as little as it can.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let share = texts.len().div_ceil(threads).max(1);
    let parts: Vec<Option<Result<Vec<Vector>, _>>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            texts.chunks(share).map(|part| scope.spawn(move || embedder.embed_static(part))).collect();
        handles.into_iter().map(|h| h.join().unwrap_or(None)).collect()
    });
    let mut vectors = Vec::with_capacity(texts.len());
    for part in parts {
        match part {
            None => {
                // No table: a tier left by another model must not stand for this one's vectors
                // (the fingerprint names the model too; this keeps the directory clean).
                static_tier::remove(&location.dir);
                return false;
            }
            Some(Ok(part)) => vectors.extend(part),
            Some(Err(err)) => {
                tracing::warn!("the static tier could not be made ({err}); the words answer until the model's vectors");
                return false;
            }
        }
    }
    let mut flat = vec![0.0f32; manifest.chunks.len() * dim];
    for ((key, _), vector) in to_embed.texts.iter().zip(&vectors) {
        for &chunk in to_embed.waiting(key) {
            if let Some(slot) = flat.get_mut(chunk * dim..(chunk + 1) * dim) {
                slot.copy_from_slice(vector.as_slice());
            }
        }
    }
    match static_tier::write(&location.dir, dim, print, &flat) {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!("{err}; the words answer until the model's vectors");
            false
        }
    }
}

/// Creates the index directory, with a `.gitignore` that keeps it out of commits.
pub fn prepare_dir(location: &IndexLocation) -> Result<(), IndexError> {
    super::fsutil::create_private_dir(&location.dir).map_err(|e| IndexError::io(&location.dir, e))?;
    let ignore_file = location.dir.join(".gitignore");
    if !ignore_file.exists() {
        write_atomic(&ignore_file, b"# raggrep's index: never commit it.\n*\n")
            .map_err(|e| IndexError::io(&ignore_file, e))?;
    }
    Ok(())
}

/// Takes the writer lock. Another process (an editor's server, an agent's, a CLI run) may be
/// writing: this waits for it, and meanwhile passes on every generation it publishes, so this
/// process's readers follow its progress instead of waiting for a pass of their own (which then
/// finds little to do). `None`: cancelled while waiting.
fn lock_writer(
    location: &IndexLocation,
    options: &IndexOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<WriterLock>, IndexError> {
    let mut waiting = false;
    let mut seen = read_current(&location.dir).ok().flatten();
    WriterLock::acquire(&location.dir, || {
        if !waiting {
            waiting = true;
            progress(Progress::Waiting);
        }
        let now = read_current(&location.dir).ok().flatten();
        if now.is_some() && now != seen {
            seen = now;
            progress(Progress::Followed);
        }
        !cancelled(options)
    })
    .map_err(|e| IndexError::io(&location.dir.join("LOCK"), e))
}

/// The index as the last update left it, opened for writing, and what this update must redo.
struct Base {
    /// The previous manifest (an empty one for a first index).
    prev: Manifest,
    /// Its file name, kept until the new generation is published.
    previous_name: Option<String>,
    /// Why the previous index could not be used, if it could not.
    rebuilt: Option<String>,
    /// No usable previous index.
    fresh: bool,
    lex: LexicalWriter,
    /// The lexical index starts empty: every file goes to it again.
    lexical_rebuild: bool,
    /// Every file is chunked again (the lexical index is rebuilt, or the chunking settings
    /// changed); vectors are still reused wherever the embedded text is unchanged.
    rechunk_all: bool,
    /// The chunking recipe of this update.
    recipe: String,
    /// Previous vector slots by embedding key.
    key_to_slot: HashMap<u128, u32>,
}

impl Base {
    fn open(
        location: &IndexLocation,
        info: &ModelInfo,
        options: &IndexOptions,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Base, IndexError> {
        let (previous, rebuilt) = load_previous(location, info);
        if let Some(reason) = &rebuilt {
            progress(Progress::Rebuilding { reason: reason.clone() });
        }
        let lexical_dir = location.dir.join(LEXICAL_DIR);
        let opened = LexicalIndex::open_or_create(&lexical_dir).and_then(|lexical| match lexical.damage() {
            None => Ok(lexical),
            Some(why) => Err(IndexError::Lexical(why)),
        });
        let (lexical, lexical_damaged) = match opened {
            Ok(lexical) => (lexical, false),
            Err(err) => {
                tracing::warn!("{err}; rebuilding the lexical index");
                // Whatever stands there: a file where the directory belongs would fail the
                // rebuild too, and `raggrep index` is what repairs a damaged index.
                let _ = match fs::symlink_metadata(&lexical_dir) {
                    Ok(meta) if meta.is_dir() => fs::remove_dir_all(&lexical_dir),
                    _ => fs::remove_file(&lexical_dir),
                };
                (LexicalIndex::open_or_create(&lexical_dir)?, true)
            }
        };
        let (prev, previous_name, fresh) = match previous {
            Some((manifest, name)) => (manifest, Some(name), false),
            None => (
                Manifest {
                    model_id: info.id.clone(),
                    dim: info.dim as u32,
                    vectors_file: options
                        .vectors
                        .or_else(|| encoding_left_on_disk(&location.dir))
                        .unwrap_or(Encoding::F32)
                        .file_name(0),
                    ..Manifest::default()
                },
                None,
                true,
            ),
        };
        if fresh {
            // A stale vector file from a discarded index must not be appended to.
            let _ = fs::remove_file(location.dir.join(&prev.vectors_file));
        }
        // Other chunking settings (or a newer chunker) than the index was made with: chunk every
        // file again.
        let recipe = crate::chunk::recipe(&options.chunk);
        let recipe_changed = prev.recipe != recipe;
        if recipe_changed && !fresh {
            tracing::info!(from = %prev.recipe, to = %recipe, "chunking settings changed; chunking every file again");
        }
        // The lexical index is in step with the manifest unless a crash fell between their
        // commits. Every chunk going in again starts it afresh: BM25 would otherwise count the
        // deleted documents in its statistics until tantivy merges them away.
        let lexical_rebuild = fresh
            || lexical_damaged
            || recipe_changed
            || lexical.committed_generation() != Some(prev.lexical_generation);
        let mut lex = lexical.writer()?;
        if lexical_rebuild {
            lex.delete_all()?;
        }
        let key_to_slot = prev.slot_keys.iter().enumerate().map(|(slot, key)| (join_hash(*key), slot as u32)).collect();
        Ok(Base {
            prev,
            previous_name,
            rebuilt,
            fresh,
            lex,
            lexical_rebuild,
            rechunk_all: lexical_rebuild || recipe_changed,
            recipe,
            key_to_slot,
        })
    }
}

/// The encoding of the newest vector file in `dir`: a rebuild from scratch (another model, a
/// damaged manifest) keeps the encoding the user chose for this index.
fn encoding_left_on_disk(dir: &Path) -> Option<Encoding> {
    let names = fs::read_dir(dir).ok()?.flatten().map(|e| e.file_name().to_string_lossy().into_owned());
    // Generations are zero-padded, so the newest file sorts last.
    let newest = names.filter(|n| Encoding::of_file(n).is_some()).max()?;
    Encoding::of_file(&newest)
}

/// Stage 1: the files to look at. The previous index with the named paths looked at afresh when
/// only they can have changed, else a walk. `None`: the walk was cancelled.
fn list_files(
    location: &IndexLocation,
    base: &Base,
    options: &IndexOptions,
    stats: &mut UpdateStats,
) -> Result<Option<walk::WalkReport>, IndexError> {
    let scoped = options
        .only_paths
        .as_deref()
        .filter(|_| !base.fresh && !base.rechunk_all)
        .and_then(|paths| scoped_walk(&base.prev, &location.root, paths));
    stats.walked = scoped.is_none();
    let report = match scoped {
        Some(files) => walk::WalkReport { files, skipped: Vec::new() },
        None => {
            let walk_options =
                WalkOptions { cancel: options.cancel.clone(), within: options.subtree.clone(), ..options.walk.clone() };
            let mut report = walk::walk(std::slice::from_ref(&location.root), &walk_options)?;
            if let Some(subtree) = &options.subtree {
                keep_outside(base, subtree, &location.root, &mut report);
            }
            report
        }
    };
    Ok((!cancelled(options)).then_some(report))
}

/// Adds the previous index's files outside `subtree` to a walk of it, as they were (unread:
/// [`chunk_files`] reuses their entries), or none of them when the previous index is not
/// reused (see [`IndexOptions::subtree`]).
fn keep_outside(base: &Base, subtree: &str, root: &Path, report: &mut walk::WalkReport) {
    let outside = base.prev.files.iter().filter(|f| !walk::is_inside(subtree, &f.path));
    if base.rechunk_all || base.lexical_rebuild {
        let left = outside.count();
        if left > 0 {
            tracing::info!(
                files = left,
                "the index is rebuilt from {subtree}/ only: files outside it are indexed again by an update of the whole project"
            );
        }
        return;
    }
    report.files.extend(outside.map(|file| as_indexed(file, walk::resolve(root, &file.path))));
    report.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
}

/// The texts the model has to embed, by embedding key, with the chunks waiting for each.
#[derive(Default)]
struct ToEmbed {
    /// Distinct texts, in the order the model takes them.
    texts: Vec<(u128, String)>,
    /// Indices into the new manifest's chunks, by key.
    waiting: HashMap<u128, Vec<usize>>,
    /// How many of `texts` come first in the embedding order: the open files' and the code's
    /// (`embedding_order`). The update publishes when they are done: from then on the default
    /// search ranks by the model's vectors (`Snapshot::code_embedded`).
    code_texts: usize,
}

impl ToEmbed {
    /// Queues a chunk for `text`; the text itself once.
    fn queue(&mut self, key: u128, text: String, chunk: usize) {
        let waiters = self.waiting.entry(key).or_default();
        if waiters.is_empty() {
            self.texts.push((key, text));
        }
        waiters.push(chunk);
    }

    fn chunks(&self) -> usize {
        self.waiting.values().map(Vec::len).sum()
    }

    fn waiting(&self, key: &u128) -> &[usize] {
        self.waiting.get(key).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// What the update does with one walked file, decided in walk order before any file is read.
struct Plan<'a> {
    walked: &'a walk::WalkedFile,
    /// Its entry in the previous manifest.
    prev: Option<usize>,
    mtime_ns: u64,
    action: Action<'a>,
}

enum Action<'a> {
    /// Outside the subtree this update covers: the previous entry (its index) stands, unread.
    Keep(usize),
    /// Same size and mtime as before: the previous entry (its index) is reused, unread.
    Reuse(usize),
    /// Read (from disk, or the editor's buffer), then compared by content.
    Read { overlay: Option<&'a String> },
}

/// What a file's plan came to, made ready off the recording loop.
enum Prepared {
    /// The previous entry stands as it is (outside the subtree).
    Keep(usize),
    /// The previous entry is reused: same size and mtime, or read and found the same content.
    Same(usize),
    Skipped(walk::SkipReason),
    Chunked(Box<ChunkedFile>),
}

struct ChunkedFile {
    source: walk::SourceText,
    hash: u128,
    language: Language,
    chunks: Vec<Chunk>,
    /// Each chunk's embedding text and its key.
    texts: Vec<(u128, String)>,
}

/// The new generation's files and chunks, and what the model still has to do for them.
struct Chunked {
    files: Vec<FileEntry>,
    chunks: Vec<ChunkEntry>,
    skipped: Vec<SkippedEntry>,
    to_embed: ToEmbed,
}

/// Stage 2: every listed file's chunks. A file whose (mtime, size) or content hash is unchanged
/// keeps its entries; a changed one is chunked again and goes to the lexical index; a chunk
/// whose embedded text has a vector already takes it, the others queue their text. Files the
/// previous index had and the list has not are removed from the lexical index.
fn chunk_files(
    location: &IndexLocation,
    base: &mut Base,
    listed: &walk::WalkReport,
    options: &IndexOptions,
    stats: &mut UpdateStats,
) -> Result<Chunked, IndexError> {
    let prev = &base.prev;
    let (lexical_rebuild, rechunk_all) = (base.lexical_rebuild, base.rechunk_all);
    let lex = &mut base.lex;
    let mut files: Vec<FileEntry> = Vec::with_capacity(listed.files.len());
    let mut chunks: Vec<ChunkEntry> = Vec::new();
    let mut skipped: Vec<SkippedEntry> = if stats.walked {
        listed
            .skipped
            .iter()
            .map(|s| SkippedEntry {
                path: walk::relative_path(&s.path, &location.root).unwrap_or_else(|| s.path.display().to_string()),
                reason: s.reason.to_string(),
            })
            .collect()
    } else {
        // What the last walk left out still stands; embedding failures are found again below.
        prev.skipped.iter().filter(|s| !s.reason.starts_with(NOT_EMBEDDED)).cloned().collect()
    };
    let outside = |path: &str| options.subtree.as_deref().is_some_and(|subtree| !walk::is_inside(subtree, path));
    if stats.walked && options.subtree.is_some() && !base.rechunk_all {
        // The walk saw the subtree only: what it said of the rest still stands.
        skipped.extend(prev.skipped.iter().filter(|s| outside(&s.path)).cloned());
    }
    let mut to_embed = ToEmbed::default();

    // Which previous files were listed (the rest were removed), and where the last one was:
    // walks list files in the manifest's order, so the next one is usually right after it, and
    // a save on a 100k-file tree skips 100k binary searches.
    let mut listed_before = vec![false; prev.files.len()];
    let mut prev_cursor = 0;
    let mut plans: Vec<Plan> = Vec::with_capacity(listed.files.len());
    for walked in &listed.files {
        let prev_index = match prev.files.get(prev_cursor) {
            Some(f) if f.path == walked.rel_path => Some(prev_cursor),
            _ => prev.files.binary_search_by(|f| f.path.as_str().cmp(&walked.rel_path)).ok(),
        };
        if let Some(i) = prev_index {
            listed_before[i] = true;
            prev_cursor = i + 1;
        }
        let prev_file = prev_index.map(|i| &prev.files[i]);
        let mtime_ns = walked.mtime.and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64);
        // An editor buffer obeys the same size limit as the file it stands for.
        let overlay = options.overlays.get(&walked.rel_path).filter(|text| {
            let fits = text.len() as u64 <= options.walk.max_file_size;
            if !fits {
                tracing::info!(path = %walked.rel_path, bytes = text.len(), "editor buffer over the size limit; indexing the file on disk");
            }
            fits
        });
        // Content from an editor buffer has no mtime of its own: recorded as 0, it is compared
        // by hash next time.
        let mtime_ns = if overlay.is_some() { 0 } else { mtime_ns };
        let stat_unchanged =
            prev_file.is_some_and(|f| f.mtime_ns == mtime_ns && f.size == walked.size && mtime_ns != 0);
        let action = match prev_index {
            // Not this update's part of the tree: kept as it is, never read (a change there,
            // or a chunk still waiting for its vector, is for an update that covers it).
            Some(i) if outside(&prev.files[i].path) => Action::Keep(i),
            Some(i) if stat_unchanged && !rechunk_all => Action::Reuse(i),
            _ => Action::Read { overlay },
        };
        plans.push(Plan { walked, prev: prev_index, mtime_ns, action });
    }
    // Reading, hashing and chunking run on every CPU ahead of the loop that records the files.
    let read = |plan: &Plan| -> Prepared {
        let overlay = match plan.action {
            Action::Keep(i) => return Prepared::Keep(i),
            Action::Reuse(i) => return Prepared::Same(i),
            Action::Read { overlay } => overlay,
        };
        let source = match overlay {
            Some(text) => walk::classify_bytes(text.clone().into_bytes()),
            None => walk::read_source(&plan.walked.abs_path, options.walk.max_file_size),
        };
        let source = match source {
            Ok(source) => source,
            Err(reason) => return Prepared::Skipped(reason),
        };
        let hash = crate::content_hash(source.text.as_bytes());
        if let Some(i) = plan.prev.filter(|&i| join_hash(prev.files[i].hash) == hash && !rechunk_all) {
            return Prepared::Same(i);
        }
        let language = Language::detect(&plan.walked.abs_path, &source.text);
        let file_chunks = chunk_file(&plan.walked.rel_path, &source.text, language, &options.chunk);
        let texts = file_chunks
            .iter()
            .map(|chunk| {
                let text = embedding_text(chunk, &source.text, options.chunk.header);
                (crate::content_hash(text.as_bytes()), text)
            })
            .collect();
        Prepared::Chunked(Box::new(ChunkedFile { source, hash, language, chunks: file_chunks, texts }))
    };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    super::ahead::for_each_in_order(&plans, workers, read, |i, prepared| -> Result<(), IndexError> {
        let Plan { walked, prev: prev_index, mtime_ns, .. } = &plans[i];
        let (prev_file, mtime_ns) = (prev_index.map(|i| &prev.files[i]), *mtime_ns);
        let file_index = files.len() as u32;
        if options.max_chunks.is_some_and(|max| chunks.len() >= max) {
            skipped.push(SkippedEntry {
                path: walked.rel_path.clone(),
                reason: "memory budget reached: not indexed".into(),
            });
            if prev_file.is_some() && !lexical_rebuild {
                lex.delete_file(&walked.rel_path);
            }
            return Ok(());
        }
        let chunked = match prepared {
            Prepared::Keep(i) => {
                let prev_file = &prev.files[i];
                reuse_file(prev, prev_file, file_index, &mut files, &mut chunks, prev_file.mtime_ns, prev_file.size);
                return Ok(());
            }
            Prepared::Same(i) => {
                reuse_file(prev, &prev.files[i], file_index, &mut files, &mut chunks, mtime_ns, walked.size);
                queue_unembedded(location, &files, &chunks, &mut to_embed, options.chunk.header);
                return Ok(());
            }
            Prepared::Skipped(reason) => {
                tracing::info!(path = %walked.rel_path, %reason, "skipped");
                skipped.push(SkippedEntry { path: walked.rel_path.clone(), reason: reason.to_string() });
                if prev_file.is_some() {
                    lex.delete_file(&walked.rel_path);
                }
                return Ok(());
            }
            Prepared::Chunked(chunked) => chunked,
        };
        let ChunkedFile { source, hash, language, chunks: file_chunks, texts } = *chunked;
        if source.lossy {
            tracing::info!(path = %walked.rel_path, "not valid UTF-8; decoded lossily");
        }
        stats.changed_files += 1;
        if prev_file.is_some() && !lexical_rebuild {
            lex.delete_file(&walked.rel_path);
        }
        let first_chunk = chunks.len() as u32;
        for (chunk, (key, text)) in file_chunks.iter().zip(texts) {
            let symbol_path = chunk.symbol_path().unwrap_or_default();
            lex.add(&LexicalDoc {
                path: &walked.rel_path,
                symbol: &symbol_path,
                body: chunk.text(&source.text),
                hash: chunk.hash.0,
            })?;
            let slot = match base.key_to_slot.get(&key) {
                Some(&slot) => {
                    stats.reused += 1;
                    slot
                }
                None => {
                    to_embed.queue(key, text, chunks.len());
                    NO_SLOT
                }
            };
            chunks.push(chunk_entry(chunk, &source.text, file_index, slot));
        }
        files.push(FileEntry {
            path: walked.rel_path.clone(),
            mtime_ns,
            size: walked.size,
            hash: split_hash(hash),
            language: language.to_u8(),
            lossy: source.lossy,
            first_chunk,
            chunk_count: file_chunks.len() as u32,
        });
        Ok(())
    })?;
    for (old, _) in prev.files.iter().zip(&listed_before).filter(|(_, listed)| !**listed) {
        stats.removed_files += 1;
        if !lexical_rebuild {
            lex.delete_file(&old.path);
        }
    }
    stats.files = files.len();
    stats.chunks = chunks.len();
    stats.skipped_files = skipped.len();
    Ok(Chunked { files, chunks, skipped, to_embed })
}

/// The model's time goes where answers are wanted first (issue 13): see `embedding_order`.
fn order_embedding(location: &IndexLocation, options: &IndexOptions, chunked: &mut Chunked) {
    let urgent: std::collections::HashSet<&str> = options
        .overlays
        .keys()
        .map(String::as_str)
        .chain(options.only_paths.iter().flatten().map(String::as_str))
        .collect();
    // Git history is worth reading when the model has much to do (a first index, a checkout).
    let recent = if chunked.to_embed.texts.len() >= RECENCY_MIN_TEXTS && options.embed {
        super::recency::recently_changed(&location.root)
    } else {
        HashMap::new()
    };
    let ToEmbed { texts, waiting, code_texts } = &mut chunked.to_embed;
    *code_texts = embedding_order(texts, waiting, &chunked.chunks, &chunked.files, &urgent, &recent);
}

/// When the embedding stage publishes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Publishes {
    /// The first vectors early, so the first semantic answer comes within seconds of a cold
    /// start; then every `commit_interval`.
    Periodic,
    /// Not at all: the caller publishes once at the end.
    AtTheEnd,
}

/// Stage 3: vectors for the queued texts, from the machine-wide cache or the model, appended to
/// the vector file in batches. Returns when it first published a generation, if it did.
#[allow(clippy::too_many_arguments)]
fn embed_pending(
    location: &IndexLocation,
    embedder: &dyn Embedder,
    options: &IndexOptions,
    to_embed: &ToEmbed,
    publishes: Publishes,
    manifest: &mut Manifest,
    stats: &mut UpdateStats,
    progress: &mut dyn FnMut(Progress),
) -> Result<Option<Instant>, IndexError> {
    let info = embedder.info();
    let total = to_embed.chunks();
    let vectors_path = location.dir.join(&manifest.vectors_file);
    let mut appender = VectorAppender::open(&vectors_path, info.dim, manifest.vector_slots as usize)?;
    let mut last_publish = Instant::now();
    let mut publish_after = match publishes {
        Publishes::Periodic => options.commit_interval.min(options.first_publish),
        Publishes::AtTheEnd => Duration::MAX,
    };
    let mut first_publish = None;
    let mut done = 0;
    let mut shared = options.shared_cache.as_ref().and_then(|config| {
        SharedCache::open(config, &info.id, info.dim)
            .map_err(|why| tracing::warn!("the embedding cache is not used: {why}"))
            .ok()
    });
    progress(Progress::Embedding { done, total });
    let batches = to_embed.texts.len().div_ceil(options.embed_batch.max(1));
    let mut texts_done = 0;
    for (number, batch) in to_embed.texts.chunks(options.embed_batch.max(1)).enumerate() {
        if cancelled(options) {
            break;
        }
        let batch_texts = batch.len();
        let (cached, batch) = look_up(&mut shared, batch);
        let (mut embedded, failed) = embed_isolating_failures(embedder, &batch);
        store(&mut shared, &embedded);
        for (key, _) in &cached {
            stats.from_cache += to_embed.waiting(key).len();
        }
        embedded.extend(cached);
        for (key, why) in &failed {
            // One text the model cannot take must not stop the repository's update: its
            // chunks stay lexical-only, retried at the next update, and the file says why.
            let chunks = to_embed.waiting(key);
            for path in failed_paths(manifest, chunks) {
                tracing::warn!(%path, "not embedded: {why}");
                manifest.skipped.push(SkippedEntry { path, reason: format!("{NOT_EMBEDDED}{why}") });
            }
            done += chunks.len();
        }
        let vectors: Vec<Vector> = embedded.iter().map(|(_, v)| v.clone()).collect();
        let first = appender.append(&vectors)?;
        for (offset, (key, _)) in embedded.iter().enumerate() {
            let slot = (first + offset) as u32;
            manifest.slot_keys.push(split_hash(*key));
            let chunks = to_embed.waiting(key);
            for &chunk in chunks {
                manifest.chunks[chunk].slot = slot;
            }
            done += chunks.len();
            stats.embedded += chunks.len();
        }
        manifest.vector_slots = appender.slots() as u64;
        progress(Progress::Embedding { done, total });
        // The code's last vector is worth publishing at once: the answers change most then.
        let code_done = texts_done < to_embed.code_texts && texts_done + batch_texts >= to_embed.code_texts;
        texts_done += batch_texts;
        let due = last_publish.elapsed() >= publish_after || (code_done && publishes == Publishes::Periodic);
        // After the last batch the caller publishes anyway.
        if due && number + 1 < batches {
            publish_after = options.commit_interval;
            appender.sync()?;
            manifest.generation += 1;
            manifest.updated_unix_ms = now_ms();
            publish(&location.dir, manifest)?;
            progress(Progress::Published { generation: manifest.generation, embedded: done });
            last_publish = Instant::now();
            first_publish.get_or_insert(last_publish);
        }
    }
    appender.sync()?;
    Ok(first_publish)
}

/// What `maintain_vectors` may change: the vector file and the graph.
fn vector_state(manifest: &Manifest) -> (String, u64, Option<(String, u64)>) {
    let ann = manifest.ann.as_ref().map(|a| (a.basename.clone(), a.slots));
    (manifest.vectors_file.clone(), manifest.vector_slots, ann)
}

/// Texts to embed from which the order consults git's history.
const RECENCY_MIN_TEXTS: usize = 64;

/// Updates with at most this many texts to embed publish once, vectors included.
const PUBLISH_ONCE_MAX_TEXTS: usize = 4;

/// Orders the texts to embed so the model's time goes where answers are wanted first: files
/// the editor has open or just named; then code; then the code's comments split off as windows
/// of their own (a long doc comment); then tests (their files' and those kept in a test module
/// of a source file), examples, benchmarks and declaration files (`.d.ts`, `.pyi`: the ranking
/// puts them after the code they declare too); then prose and plain text (Markdown, files
/// without a grammar). Within a class, files of the latest commits first (`recent`: git's
/// history; after a clone every mtime is the same), then the most recently modified, then file
/// order. Chunks of one text share an order (its first chunk's). Returns how many texts come
/// before the tests: the open files' and the code's.
fn embedding_order(
    pending: &mut [(u128, String)],
    waiting: &HashMap<u128, Vec<usize>>,
    chunks: &[ChunkEntry],
    files: &[FileEntry],
    urgent: &std::collections::HashSet<&str>,
    recent: &HashMap<String, u32>,
) -> usize {
    let rank = |key: &u128| {
        let chunk = waiting.get(key).and_then(|w| w.first()).and_then(|&c| chunks.get(c));
        let Some((chunk, file)) = chunk.and_then(|c| Some((c, files.get(c.file as usize)?))) else {
            return (5u8, 0u32, 0u64);
        };
        let language = Language::from_u8(file.language);
        let class = if urgent.contains(file.path.as_str()) {
            0
        } else {
            match role(chunk, file) {
                ChunkRole::Code => 1,
                ChunkRole::CodeComment => 2,
                ChunkRole::Other if language.grammar().is_some() => 3,
                ChunkRole::Other => 4,
            }
        };
        // Within a class: files of the latest commits first, then the newest files.
        (class, recent.get(&file.path).copied().unwrap_or(u32::MAX), u64::MAX - file.mtime_ns)
    };
    pending.sort_by_cached_key(|(key, _)| rank(key));
    pending.iter().take_while(|(key, _)| rank(key).0 <= 1).count()
}

/// [`crate::lang::chunk_role`] of a chunk being written.
fn role(chunk: &ChunkEntry, file: &FileEntry) -> ChunkRole {
    crate::lang::chunk_role(
        &file.path,
        Language::from_u8(file.language),
        &chunk.container,
        &chunk.symbol,
        ChunkKind::from_u8(chunk.kind) == ChunkKind::Module,
        chunk.code_lines,
    )
}

/// How a file whose chunks the model could not take is listed as skipped.
const NOT_EMBEDDED: &str = "not embedded: ";

/// The previous index's files as a walk would report them, the named `paths` looked at afresh
/// (stat'ed; gone ones left out): an update that only these paths can have changed needs no
/// walk. `None` when a walk is needed after all: a named path exists but is new to the index
/// or was left out by the last walk (only the walk knows the ignore rules), is a symlink or no
/// longer a file (only the walk knows where it may lead), or is a deleted directory that held
/// indexed files.
fn scoped_walk(prev: &Manifest, root: &Path, paths: &[String]) -> Option<Vec<walk::WalkedFile>> {
    let mut named: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for path in paths {
        let known = prev.files.binary_search_by(|f| f.path.as_str().cmp(path)).is_ok();
        let on_disk = walk::resolve(root, path).symlink_metadata();
        if !known {
            // A new file, or a deleted directory with indexed files under it: walk.
            let prefix = format!("{path}/");
            let first_under = prev.files.partition_point(|f| f.path.as_str() < prefix.as_str());
            let holds_indexed = prev.files.get(first_under).is_some_and(|f| f.path.starts_with(&prefix));
            if on_disk.is_ok() || holds_indexed {
                return None;
            }
            // Gone and never indexed (a temporary file): nothing to do.
            continue;
        }
        if on_disk.is_ok_and(|m| !m.is_file()) {
            return None;
        }
        named.insert(path);
    }
    let mut files = Vec::with_capacity(prev.files.len());
    for file in &prev.files {
        let abs_path = walk::resolve(root, &file.path);
        if named.contains(file.path.as_str()) {
            // Deleted: left out, so the update removes it.
            if let Ok(meta) = fs::symlink_metadata(&abs_path) {
                files.push(walk::WalkedFile {
                    root: 0,
                    rel_path: file.path.clone(),
                    abs_path,
                    size: meta.len(),
                    mtime: meta.modified().ok(),
                });
            }
        } else {
            files.push(as_indexed(file, abs_path));
        }
    }
    Some(files)
}

/// A file of the previous index as a walk would report it unchanged: its recorded size and
/// modification time (not looked at afresh).
fn as_indexed(file: &FileEntry, abs_path: PathBuf) -> walk::WalkedFile {
    walk::WalkedFile {
        root: 0,
        rel_path: file.path.clone(),
        abs_path,
        size: file.size,
        mtime: Some(UNIX_EPOCH + Duration::from_nanos(file.mtime_ns)),
    }
}

/// Vectors, or texts to embed, by embedding key.
type KeyedVectors = Vec<(u128, Vector)>;
type KeyedTexts = Vec<(u128, String)>;

/// Splits a batch into the vectors the machine-wide cache has and the texts still to embed.
/// A cache that fails is dropped for the rest of the update (logged once).
fn look_up(shared: &mut Option<SharedCache>, batch: &[(u128, String)]) -> (KeyedVectors, KeyedTexts) {
    let Some(cache) = shared else { return (Vec::new(), batch.to_vec()) };
    let keys: Vec<u128> = batch.iter().map(|(key, _)| *key).collect();
    match cache.get(&keys) {
        Ok(found) => {
            let mut hits = Vec::new();
            let mut misses = Vec::new();
            for ((key, text), vector) in batch.iter().zip(found) {
                match vector {
                    Some(vector) => hits.push((*key, vector)),
                    None => misses.push((*key, text.clone())),
                }
            }
            (hits, misses)
        }
        Err(why) => {
            tracing::warn!(cache = %cache.path().display(), "the embedding cache is not used any more: {why}");
            *shared = None;
            (Vec::new(), batch.to_vec())
        }
    }
}

/// Adds fresh vectors to the machine-wide cache.
fn store(shared: &mut Option<SharedCache>, embedded: &[(u128, Vector)]) {
    let Some(cache) = shared else { return };
    let entries: Vec<(u128, &Vector)> = embedded.iter().map(|(key, vector)| (*key, vector)).collect();
    if let Err(why) = cache.put(&entries) {
        tracing::warn!(cache = %cache.path().display(), "the embedding cache is not used any more: {why}");
        *shared = None;
    }
}

fn cancelled(options: &IndexOptions) -> bool {
    options.cancel.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
}

/// Vectors of a batch by embedding key, and the keys that failed with the reason.
type EmbedOutcome = (Vec<(u128, Vector)>, Vec<(u128, String)>);

/// Embeds a batch; if the model fails on it, embeds the texts one by one so a single bad text
/// only loses itself.
fn embed_isolating_failures(embedder: &dyn Embedder, batch: &[(u128, String)]) -> EmbedOutcome {
    if batch.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
    match embedder.embed_documents(&texts) {
        Ok(vectors) if vectors.len() == batch.len() => {
            return (batch.iter().map(|(k, _)| *k).zip(vectors).collect(), Vec::new());
        }
        Ok(vectors) => tracing::warn!("the model returned {} vectors for {} texts", vectors.len(), batch.len()),
        Err(err) if batch.len() == 1 => return (Vec::new(), vec![(batch[0].0, err.to_string())]),
        Err(err) => tracing::debug!("embedding a batch failed ({err}); embedding its texts one by one"),
    }
    let mut embedded = Vec::with_capacity(batch.len());
    let mut failed = Vec::new();
    for (key, text) in batch {
        match embedder.embed_documents(&[text.as_str()]).map(|mut v| v.pop()) {
            Ok(Some(vector)) => embedded.push((*key, vector)),
            Ok(None) => failed.push((*key, "the model returned no vector".to_string())),
            Err(err) => failed.push((*key, err.to_string())),
        }
    }
    (embedded, failed)
}

/// The distinct file paths of `chunks` (indices into the manifest's chunks).
fn failed_paths(manifest: &Manifest, chunks: &[usize]) -> Vec<String> {
    let mut paths: Vec<String> = chunks
        .iter()
        .filter_map(|&c| manifest.chunks.get(c))
        .filter_map(|c| manifest.files.get(c.file as usize))
        .map(|f| f.path.clone())
        .collect();
    paths.sort();
    paths.dedup();
    paths.retain(|p| !manifest.skipped.iter().any(|s| &s.path == p && s.reason.starts_with("not embedded")));
    paths
}

/// Copies a file's entries from the previous manifest.
fn reuse_file(
    prev: &Manifest,
    prev_file: &FileEntry,
    file_index: u32,
    files: &mut Vec<FileEntry>,
    chunks: &mut Vec<ChunkEntry>,
    mtime_ns: u64,
    size: u64,
) {
    let first = prev_file.first_chunk as usize;
    let count = prev_file.chunk_count as usize;
    let first_chunk = chunks.len() as u32;
    for old in prev.chunks.get(first..first + count).unwrap_or(&[]) {
        let mut entry = old.clone();
        entry.file = file_index;
        chunks.push(entry);
    }
    files.push(FileEntry { mtime_ns, size, first_chunk, ..prev_file.clone() });
}

/// Queues the not-yet-embedded chunks of the file just reused (an earlier update was
/// interrupted while embedding).
fn queue_unembedded(
    location: &IndexLocation,
    files: &[FileEntry],
    chunks: &[ChunkEntry],
    to_embed: &mut ToEmbed,
    header: EmbedHeader,
) {
    let Some(file) = files.last() else { return };
    let range = file.first_chunk as usize..(file.first_chunk + file.chunk_count) as usize;
    if chunks[range.clone()].iter().all(|c| c.slot != NO_SLOT) {
        return;
    }
    let Ok(source) = walk::read_source(&walk::resolve(&location.root, &file.path), u64::MAX) else {
        return;
    };
    let language = Language::from_u8(file.language);
    for index in range {
        let entry = &chunks[index];
        if entry.slot != NO_SLOT {
            continue;
        }
        let chunk = chunk_from_entry(entry, &file.path, language);
        if source.text.get(chunk.byte_range.clone()).is_none() {
            continue;
        }
        let text = embedding_text(&chunk, &source.text, header);
        to_embed.queue(crate::content_hash(text.as_bytes()), text, index);
    }
}

fn chunk_entry(chunk: &Chunk, file_text: &str, file: u32, slot: u32) -> ChunkEntry {
    ChunkEntry {
        file,
        start_byte: chunk.byte_range.start as u32,
        end_byte: chunk.byte_range.end as u32,
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        kind: chunk.kind.to_u8(),
        symbol: chunk.symbol.clone().unwrap_or_default(),
        container: chunk.container.clone().unwrap_or_default(),
        code_lines: crate::chunk::code_lines(chunk.text(file_text), chunk.language),
        hash: split_hash(chunk.hash.0),
        slot,
    }
}

fn chunk_from_entry(entry: &ChunkEntry, path: &str, language: Language) -> Chunk {
    Chunk {
        path: path.into(),
        byte_range: entry.start_byte as usize..entry.end_byte as usize,
        start_line: entry.start_line,
        end_line: entry.end_line,
        language,
        kind: ChunkKind::from_u8(entry.kind),
        symbol: (!entry.symbol.is_empty()).then(|| entry.symbol.clone()),
        container: (!entry.container.is_empty()).then(|| entry.container.clone()),
        hash: ContentHash(join_hash(entry.hash)),
    }
}

/// The previous manifest and its file name, or why it cannot be used (`None, None`: there is
/// none yet).
fn load_previous(location: &IndexLocation, info: &ModelInfo) -> (Option<(Manifest, String)>, Option<String>) {
    let name = match read_current(&location.dir) {
        Ok(Some(name)) => name,
        Ok(None) => return (None, None),
        Err(err) => return (None, Some(format!("{err}; rebuilding the index"))),
    };
    let mapped = match MappedManifest::open(&location.dir.join(&name)) {
        Ok(mapped) => mapped,
        Err(err) => return (None, Some(format!("{err}; rebuilding the index"))),
    };
    let archived = mapped.get();
    let (model, dim) = (archived.model_id.as_str(), archived.dim.to_native() as usize);
    if model != info.id || dim != info.dim {
        return (
            None,
            Some(format!(
                "the index was built with model {model} ({dim}-d), now using {} ({}-d); rebuilding",
                info.id, info.dim
            )),
        );
    }
    let manifest: Manifest = match rkyv::deserialize::<Manifest, rkyv::rancor::Error>(archived) {
        Ok(manifest) => manifest,
        Err(err) => {
            return (None, Some(format!("index is damaged ({err}); rebuilding the index")));
        }
    };
    let mut manifest = manifest;
    if manifest.vector_slots > 0 {
        let path = location.dir.join(&manifest.vectors_file);
        let vectors = match VectorFile::open(&path, dim, manifest.vector_slots as usize) {
            Ok(vectors) => vectors,
            Err(err) => return (None, Some(format!("{err}; rebuilding the index"))),
        };
        let damaged = vectors.damaged_blocks(&manifest.vector_checksums);
        if !damaged.is_empty() {
            tracing::warn!(
                "{}: {} of {} blocks of vectors are damaged; their chunks are embedded again",
                path.display(),
                damaged.len(),
                vectors.blocks()
            );
            forget_vector_blocks(&mut manifest, &damaged);
        }
    }
    (Some((manifest, name)), None)
}

/// Treats the vectors of `blocks` as never computed: their chunks wait for embedding again and
/// their cache keys are forgotten. The slots stay in the file as dead space until compaction.
fn forget_vector_blocks(manifest: &mut Manifest, blocks: &[usize]) {
    let damaged = |slot: u32| slot != NO_SLOT && blocks.contains(&(slot as usize / BLOCK_SLOTS));
    for chunk in &mut manifest.chunks {
        if damaged(chunk.slot) {
            chunk.slot = NO_SLOT;
        }
    }
    for (slot, key) in manifest.slot_keys.iter_mut().enumerate() {
        if damaged(slot as u32) {
            // No text hashes to this (xxh3-128 of anything is never all ones in practice).
            *key = [u64::MAX; 2];
        }
    }
    // Re-record the damaged blocks' checksums as they are now, so the damage is reported once.
    let first = blocks.iter().copied().min().unwrap_or(0);
    manifest.vector_checksums.truncate(first);
}

fn manifest_name(generation: u64) -> String {
    format!("manifest-{generation:08}.rkyv")
}

/// Writes the manifest and points `CURRENT` at it, both atomically. First brings the vector
/// checksums up to date: blocks before the last recorded one never change (the file is
/// append-only), so only the tail is hashed.
fn publish(dir: &Path, manifest: &mut Manifest) -> Result<(), IndexError> {
    let slots = manifest.vector_slots as usize;
    let vectors = VectorFile::open(&dir.join(&manifest.vectors_file), manifest.dim as usize, slots)?;
    let keep = manifest.vector_checksums.len().saturating_sub(1).min(vectors.blocks());
    manifest.vector_checksums.truncate(keep);
    for block in keep..vectors.blocks() {
        manifest.vector_checksums.push(vectors.block_checksum(block));
    }
    let name = manifest_name(manifest.generation);
    let path = dir.join(&name);
    write_atomic(&path, &manifest::encode(manifest)?).map_err(|e| IndexError::io(&path, e))?;
    let current = dir.join(CURRENT);
    write_atomic(&current, format!("{name}\n").as_bytes()).map_err(|e| IndexError::io(&current, e))
}

/// Dead vector slots that trigger a compaction (with at least 30 % of the file dead).
pub const COMPACT_MIN_DEAD: usize = 1024;
/// New vectors outside the graph that trigger an insertion. Below it they are scanned exactly
/// (1,024 × 384 floats take well under a millisecond), and a save does not rewrite the graph.
const ANN_EXTEND_MIN_UNCOVERED: usize = 1024;

/// Stage 4: compacts the vector file when dead slots pile up, builds the HNSW graph when there
/// is none, and grows it by insertion when enough vectors are not in it.
fn maintain_vectors(
    dir: &Path,
    manifest: &mut Manifest,
    options: &IndexOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), IndexError> {
    let dim = manifest.dim as usize;
    let slots = manifest.vector_slots as usize;
    let mut live = vec![false; slots];
    for chunk in &manifest.chunks {
        if let Some(flag) = live.get_mut(chunk.slot as usize) {
            *flag = true;
        }
    }
    let live_count = live.iter().filter(|&&l| l).count();
    let dead = slots - live_count;
    let encoding = Encoding::of_file(&manifest.vectors_file).unwrap_or(Encoding::F32);
    let wanted = options.vectors.unwrap_or(encoding);
    if wanted != encoding || (dead >= options.compact_min_dead.max(1) && dead * 10 >= slots * 3) {
        // Compaction (or a change of encoding): copy the live vectors into a new file,
        // renumber the slots.
        if wanted != encoding {
            tracing::info!(
                from = encoding.name(),
                to = wanted.name(),
                vectors = live_count,
                "converting the vector file"
            );
        }
        let old = VectorFile::open(&dir.join(&manifest.vectors_file), dim, slots)?;
        let name = wanted.file_name(manifest.generation + 1);
        let path = dir.join(&name);
        let _ = fs::remove_file(&path);
        let mut appender = VectorAppender::open(&path, dim, 0)?;
        let mut remap = vec![NO_SLOT; slots];
        let mut keys = Vec::with_capacity(live_count);
        let mut batch = Vec::new();
        for slot in (0..slots).filter(|&s| live[s]) {
            remap[slot] = keys.len() as u32;
            keys.push(manifest.slot_keys[slot]);
            if let Some(v) = old.get(slot) {
                batch.push(crate::embed::Vector::normalized(v.into_owned()));
            }
            if batch.len() >= 4096 {
                appender.append(&batch)?;
                batch.clear();
            }
        }
        appender.append(&batch)?;
        appender.sync()?;
        for chunk in &mut manifest.chunks {
            if chunk.slot != NO_SLOT {
                chunk.slot = remap[chunk.slot as usize];
            }
        }
        manifest.slot_keys = keys;
        manifest.vectors_file = name;
        manifest.vector_slots = live_count as u64;
        manifest.vector_checksums.clear();
        // Without dead slots the numbering is unchanged (a pure change of encoding), so the
        // graph still fits: it was built from the same vectors, at most rounded.
        if dead > 0 {
            manifest.ann = None;
        }
        live = vec![true; live_count];
    }
    let slots = manifest.vector_slots as usize;
    if slots < options.ann_min_slots.max(1) {
        manifest.ann = None;
        return Ok(());
    }
    let vectors_path = dir.join(&manifest.vectors_file);
    let is_live = |s: usize| live.get(s).copied().unwrap_or(false);
    // A graph that is missing or unreadable is built from scratch (searches scan exactly
    // meanwhile); one that lags behind is grown.
    let current = match &manifest.ann {
        None => None,
        Some(entry) => match Ann::load(dir, &entry.basename, entry.slots as usize) {
            Ok(ann) => Some(ann),
            Err(err) => {
                tracing::warn!("{err}; rebuilding the HNSW graph");
                None
            }
        },
    };
    let grown = match current {
        Some(ann) => {
            let uncovered = slots.saturating_sub(ann.slots());
            if uncovered < ANN_EXTEND_MIN_UNCOVERED.min(options.ann_min_slots).max(1) {
                return Ok(());
            }
            progress(Progress::ExtendingAnn { vectors: slots, new: uncovered });
            let vectors = VectorFile::open(&vectors_path, dim, slots)?;
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ann.extend(&vectors.decoded(), dim, &is_live)))
        }
        None => {
            progress(Progress::BuildingAnn { vectors: slots });
            let vectors = VectorFile::open(&vectors_path, dim, slots)?;
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Ann::build(&vectors, &is_live)))
        }
    };
    let Ok(ann) = grown else {
        // Exact search still answers; the graph is retried at the next update.
        tracing::error!("building the HNSW graph failed; searching exactly for now");
        manifest.ann = None;
        return Ok(());
    };
    let basename = ann.dump(dir, &format!("ann-{:08}", manifest.generation + 1))?;
    manifest.ann = Some(AnnEntry { basename, slots: slots as u64 });
    Ok(())
}

/// Deletes files no longer referenced by the current or the previous generation (a reader may
/// still be opening the previous one).
fn collect_garbage(dir: &Path, current: &Manifest, previous_name: Option<&str>) {
    let mut keep: Vec<String> = vec![manifest_name(current.generation), current.vectors_file.clone()];
    if let Some(ann) = &current.ann {
        keep.push(ann.basename.clone());
    }
    if let Some(name) = previous_name {
        keep.push(name.to_string());
        if let Ok(prev) = MappedManifest::open(&dir.join(name)) {
            let prev = prev.get();
            keep.push(prev.vectors_file.as_str().to_string());
            if let Some(ann) = prev.ann.as_ref() {
                keep.push(ann.basename.as_str().to_string());
            }
        }
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only the index's own file names: other files may share the directory (a vector store
        // the user placed there, `config.toml`).
        let ours = (name.starts_with("manifest-") && name.ends_with(".rkyv"))
            || Encoding::of_file(&name).is_some()
            || (name.starts_with("ann-") && name.ends_with(".graph"));
        let stale_temp = name.starts_with('.') && name.contains(".tmp-") && abandoned_temp(&name, &entry.path());
        let kept = keep.iter().any(|k| name == *k || *name == Ann::file_name(k));
        if (ours && !kept) || stale_temp {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether a `.NAME.tmp-<pid>` file is left over rather than being written right now: another
/// process's temp file is abandoned once that process is gone (Linux `/proc`); ours, or one we
/// cannot judge, once it is an hour old (a thread of this process may be writing it now).
fn abandoned_temp(name: &str, path: &Path) -> bool {
    let old = || {
        fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600))
    };
    let pid = name.rsplit(".tmp-").next().and_then(|p| p.parse::<u32>().ok());
    match pid {
        Some(pid) if pid != std::process::id() && Path::new("/proc/self").exists() => {
            !Path::new("/proc").join(pid.to_string()).exists() || old()
        }
        _ => old(),
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` to `rel` under `root`, making its directories.
    fn write_file(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// The generation the index's CURRENT file names.
    fn generation(location: &IndexLocation) -> u64 {
        let name = fs::read_to_string(location.dir.join(CURRENT)).unwrap();
        name.trim().trim_start_matches("manifest-").trim_end_matches(".rkyv").parse().unwrap()
    }

    /// A workspace folder inside an indexed project updates its own part of the project's
    /// index: only the folder is walked (with the project's ignore rules) and read; every other
    /// file keeps its entries as they were, changed or deleted on disk, until an update of the
    /// whole project.
    #[test]
    fn an_update_of_a_subtree_reads_only_it_and_keeps_the_rest() {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| write_file(root.path(), rel, text);
        write(".gitignore", "app/gen/\n");
        write("app/a.py", "def alpha():\n    return 1\n");
        write("app/deep/c.py", "def gamma():\n    return 3\n");
        write("lib/b.py", "def beta():\n    return 2\n");
        write("top.py", "def top():\n    return 0\n");
        let location = IndexLocation::new(root.path(), None).unwrap();
        let embedder = crate::embed::FakeEmbedder::new(16);
        let options = IndexOptions { shared_cache: None, ..IndexOptions::default() };
        let run = |options: &IndexOptions| update(&location, &embedder, options, &mut |_| {}).unwrap();
        run(&options);

        write("app/a.py", "def platypus():\n    return 11\n");
        write("app/new.py", "def fresh():\n    return 5\n");
        write("app/gen/g.py", "def generated():\n    return 6\n");
        write("lib/b.py", "def wombat():\n    return 22\n");
        fs::remove_file(root.path().join("top.py")).unwrap();
        let app = IndexOptions { subtree: Some("app".into()), ..options.clone() };
        let stats = run(&app);
        assert_eq!((stats.changed_files, stats.removed_files, stats.files), (2, 0, 5), "{stats:?}");
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        assert!(snapshot.has_file("app/new.py") && !snapshot.has_file("app/gen/g.py"));
        assert!(snapshot.has_file("top.py"), "a file outside the folder is kept, deleted or not");
        let words = |word: &str| snapshot.lexical_search(word, 5).unwrap().len();
        assert_eq!((words("platypus"), words("wombat"), words("beta")), (1, 0, 1));
        // A save inside the folder is as quick as ever, and still leaves the rest alone.
        write("app/deep/c.py", "def gamma_saved():\n    return 33\n");
        let saved = run(&IndexOptions { only_paths: Some(vec!["app/deep/c.py".into()]), ..app.clone() });
        assert_eq!((saved.changed_files, saved.walked, saved.files), (1, false, 5), "{saved:?}");

        // The whole project's update sees everything again.
        let stats = run(&options);
        assert_eq!((stats.changed_files, stats.removed_files, stats.files), (1, 1, 4), "{stats:?}");
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        assert!(!snapshot.has_file("top.py"));
        assert_eq!(snapshot.lexical_search("wombat", 5).unwrap().len(), 1);
    }

    /// A folder inside a project waits for its own files' vectors, not for the rest's.
    #[test]
    fn pending_vectors_are_counted_per_directory() {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| write_file(root.path(), rel, text);
        write("app/a.py", "def alpha():\n    return 1\n");
        write("lib/b.py", "def beta():\n    return 2\n");
        let location = IndexLocation::new(root.path(), None).unwrap();
        let embedder = crate::embed::FakeEmbedder::new(16);
        let options = IndexOptions { shared_cache: None, ..IndexOptions::default() };
        update(&location, &embedder, &options, &mut |_| {}).unwrap();
        write("lib/b.py", "def beta_changed():\n    return 22\n");
        update(&location, &embedder, &IndexOptions { embed: false, ..options }, &mut |_| {}).unwrap();
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        assert_eq!(
            (snapshot.pending_under("app"), snapshot.pending_under("lib"), snapshot.pending_under("")),
            (0, 1, 1)
        );
        assert_eq!(snapshot.pending_under("li"), 0, "a directory is a whole path segment");
    }

    #[test]
    fn a_tree_too_big_gets_no_static_tier_from_either_kind_of_update() {
        let embeds = IndexOptions::default();
        let words_only = IndexOptions { embed: false, static_tier_max_chunks: 1_000, ..IndexOptions::default() };
        assert!(writes_static_tier(10, &embeds) && writes_static_tier(STATIC_TIER_MAX_CHUNKS, &embeds));
        assert!(!writes_static_tier(STATIC_TIER_MAX_CHUNKS + 1, &embeds));
        assert!(writes_static_tier(1_000, &words_only) && !writes_static_tier(1_001, &words_only));
        let unbounded = IndexOptions { static_tier_max_chunks: usize::MAX, ..words_only };
        assert!(!writes_static_tier(STATIC_TIER_MAX_CHUNKS + 1, &unbounded));
        assert!(!writes_static_tier(10, &IndexOptions { embed: false, ..IndexOptions::default() }));
    }

    /// The default search ranks by the words until the implementation code has its vectors
    /// (`Snapshot::code_embedded`): pending tests, docs and doc comments' windows do not hold it
    /// back, a cold tree's pending code does, an edit's few pending chunks do not.
    #[test]
    fn code_embedded_counts_implementation_chunks_only() {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| write_file(root.path(), rel, text);
        let location = IndexLocation::new(root.path(), None).unwrap();
        let embedder = crate::embed::FakeEmbedder::new(16);
        let options = IndexOptions { shared_cache: None, ..IndexOptions::default() };
        let words_only = IndexOptions { embed: false, ..options.clone() };
        let functions = |prefix: &str| -> String {
            (0..100).map(|i| format!("def {prefix}_{i}(x):\n    return x + {i}\n\n\n")).collect()
        };
        let run = |options: &IndexOptions| {
            update(&location, &embedder, options, &mut |_| {}).unwrap();
            crate::index::Snapshot::open(&location).unwrap()
        };
        write("app/core.py", &functions("core"));
        assert!(!run(&words_only).code_embedded(), "a cold tree's code has no vector");
        assert!(run(&options).code_embedded());
        // Tests, docs and text waiting for vectors do not count.
        write("tests/test_core.py", &functions("test"));
        write("docs/guide.md", &"# Guide\n\nWords about the core.\n\n".repeat(100));
        let snapshot = run(&words_only);
        assert!(snapshot.is_partial() && snapshot.code_embedded());
        // So do unit tests kept in a source file's test module.
        let unit_tests: String = (0..100)
            .map(|i| format!("    #[test]\n    fn checks_{i}() {{\n        assert_eq!({i}, {i});\n    }}\n\n"))
            .collect();
        write("app/engine.rs", &format!("#[cfg(test)]\nmod tests {{\n{unit_tests}}}\n"));
        let snapshot = run(&words_only);
        assert!(snapshot.stats().pending >= 100 && snapshot.stats().code_pending == 0, "{:?}", snapshot.stats());
        assert!(snapshot.code_embedded());
        // So does a long doc comment, split off its function as windows of comments alone; the
        // function's own code counts.
        let before = snapshot.stats().pending;
        let doc: String =
            (0..1_000).map(|i| format!("/// Line {i} of a doc comment on what the engine does.\n")).collect();
        write("app/documented.rs", &format!("{doc}pub fn documented() -> u32 {{\n    1\n}}\n"));
        let snapshot = run(&words_only);
        let stats = snapshot.stats();
        assert!(stats.pending >= before + 65 && (1..=2).contains(&stats.code_pending), "{stats:?}");
        assert!(snapshot.code_embedded());
        // An edit's pending chunks do not; a new body of code without vectors does.
        write("app/core.py", &functions("core").replace("return x + 1\n", "return x + 1001\n"));
        assert!(run(&words_only).code_embedded());
        write("app/more.py", &functions("more"));
        write("app/most.py", &functions("most"));
        assert!(!run(&words_only).code_embedded());
    }

    /// The update publishes as soon as the code has its vectors, whatever the interval: from
    /// then on the default search ranks by them, while the tests still wait.
    #[test]
    fn the_codes_last_vector_is_published_at_once() {
        let root = tempfile::tempdir().unwrap();
        let functions = |prefix: &str| -> String {
            (0..40).map(|i| format!("def {prefix}_{i}(x):\n    return x + {i}\n\n\n")).collect()
        };
        write_file(root.path(), "app/core.py", &functions("core"));
        write_file(root.path(), "tests/test_core.py", &functions("test"));
        let location = IndexLocation::new(root.path(), None).unwrap();
        let embedder = crate::embed::FakeEmbedder::new(16);
        let options = IndexOptions {
            shared_cache: None,
            embed_batch: 4,
            commit_interval: Duration::MAX,
            first_publish: Duration::MAX,
            ..IndexOptions::default()
        };
        let mut published = Vec::new();
        update(&location, &embedder, &options, &mut |p| {
            if let Progress::Published { embedded, .. } = p {
                published.push(embedded);
            }
        })
        .unwrap();
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        let code = snapshot.chunks_of("app/core.py").len();
        assert!(code > 4 && code < snapshot.chunk_count(), "{code} of {}", snapshot.chunk_count());
        assert_eq!(published.first(), Some(&code), "{published:?}");
    }

    /// The fake embedder with a static tier: its static vectors are its own vectors; counts the
    /// texts it made static vectors for.
    struct WithStaticTier(crate::embed::FakeEmbedder, std::sync::atomic::AtomicUsize);

    impl Embedder for WithStaticTier {
        fn info(&self) -> &ModelInfo {
            self.0.info()
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vector>, crate::embed::EmbedError> {
            self.0.embed_documents(texts)
        }
        fn embed_query(&self, text: &str) -> Result<Vector, crate::embed::EmbedError> {
            self.0.embed_query(text)
        }
        fn embed_static(&self, texts: &[&str]) -> Option<Result<Vec<Vector>, crate::embed::EmbedError>> {
            self.1.fetch_add(texts.len(), std::sync::atomic::Ordering::Relaxed);
            Some(self.0.embed_documents(texts))
        }
    }

    /// A fresh tree's words-only pass leaves every chunk a static vector that dense search
    /// reads until the model's vectors are in; then the tier is deleted. A damaged or stale
    /// tier is ignored, and a model without a table writes none.
    #[test]
    fn a_fresh_index_has_a_static_tier_until_the_models_vectors() {
        let root = tempfile::tempdir().unwrap();
        let location = IndexLocation::new(root.path(), None).unwrap();
        let functions = |prefix: &str| -> String {
            (0..100).map(|i| format!("def {prefix}_{i}(x):\n    return x + {i}\n\n\n")).collect()
        };
        write_file(root.path(), "app/core.py", &functions("core"));
        let embedder = WithStaticTier(crate::embed::FakeEmbedder::new(16), Default::default());
        let made = || embedder.1.load(std::sync::atomic::Ordering::Relaxed);
        let options = IndexOptions { shared_cache: None, ..IndexOptions::default() };
        let words_only = IndexOptions { embed: false, static_tier_max_chunks: 1_000, ..options.clone() };
        let tier = root.path().join(".raggrep").join(static_tier::STATIC_TIER_FILE);

        // Over the bound a words-only update does not wait for it, nor does a quick publish.
        let capped = IndexOptions { static_tier_max_chunks: 10, ..words_only.clone() };
        for no_tier in [&capped, &IndexOptions { embed: false, ..options.clone() }] {
            assert!(update(&location, &embedder, no_tier, &mut |_| {}).unwrap().seconds_to_static.is_none());
            assert!(!crate::index::Snapshot::open(&location).unwrap().static_tier() && made() == 0);
        }
        let stats = update(&location, &embedder, &words_only, &mut |_| {}).unwrap();
        assert!(stats.seconds_to_static.is_some());
        let chunks = made();
        assert!(chunks > 10);
        // Found again, not made again (the background indexer after a one-shot first query).
        update(&location, &embedder, &words_only, &mut |_| {}).unwrap();
        assert_eq!(made(), chunks);
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        assert!(snapshot.static_tier() && snapshot.ranks_by_vectors() && snapshot.embedded() == 0);
        assert!((0..snapshot.chunk_count()).all(|i| snapshot.chunk_vector(i).is_some()));
        let query = embedder.embed_query("def core_7(x):\n    return x + 7").unwrap();
        let found = snapshot.dense_search(&query, 3, None, false);
        assert_eq!(found.len(), 3);
        assert_eq!(snapshot.chunk(found[0].0).unwrap().symbol, "core_7", "{found:?}");

        // Flipped bytes: ignored, the words answer.
        let mut bytes = fs::read(&tier).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        fs::write(&tier, &bytes).unwrap();
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        assert!(!snapshot.static_tier() && !snapshot.ranks_by_vectors());

        // Made again when damaged; then the model's vectors replace it.
        update(&location, &embedder, &words_only, &mut |_| {}).unwrap();
        assert!(crate::index::Snapshot::open(&location).unwrap().static_tier());
        assert_eq!(made(), 2 * chunks);
        update(&location, &embedder, &options, &mut |_| {}).unwrap();
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        assert!(!snapshot.static_tier() && snapshot.ranks_by_vectors() && !tier.exists());

        // A tier made for another chunk list is not used; a model without a table writes none.
        let other = tempfile::tempdir().unwrap();
        let location = IndexLocation::new(other.path(), None).unwrap();
        write_file(other.path(), "app/core.py", &functions("core"));
        update(&location, &embedder, &words_only, &mut |_| {}).unwrap();
        let kept = fs::read(other.path().join(".raggrep").join(static_tier::STATIC_TIER_FILE)).unwrap();
        write_file(other.path(), "app/more.py", &functions("more"));
        let plain = crate::embed::FakeEmbedder::new(16);
        let stats = update(&location, &plain, &words_only, &mut |_| {}).unwrap();
        assert!(stats.seconds_to_static.is_none());
        fs::write(other.path().join(".raggrep").join(static_tier::STATIC_TIER_FILE), kept).unwrap();
        assert!(!crate::index::Snapshot::open(&location).unwrap().static_tier());
    }

    #[test]
    fn saves_publish_once() {
        let root = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| fs::write(root.path().join(rel), text).unwrap();
        write("a.py", "def alpha():\n    return 1\n");
        write("b.py", "def beta():\n    return 2\n");
        let location = IndexLocation::new(root.path(), None).unwrap();
        let embedder = crate::embed::FakeEmbedder::new(16);
        let options = IndexOptions { shared_cache: None, ..IndexOptions::default() };
        let run = |options: &IndexOptions| update(&location, &embedder, options, &mut |_| {}).unwrap();
        run(&options);
        let first = generation(&location);
        // Removing a file needs no model: one publish (lexical and manifest together).
        fs::remove_file(root.path().join("b.py")).unwrap();
        let stats = run(&IndexOptions { only_paths: Some(vec!["b.py".into()]), ..options.clone() });
        assert_eq!((stats.removed_files, stats.walked), (1, false), "{stats:?}");
        assert_eq!(generation(&location), first + 1);
        // A changed function needs its vector: a save's few texts are embedded before the one
        // publish.
        write("a.py", "def alpha():\n    return 10\n");
        let stats = run(&options);
        assert_eq!((stats.changed_files, stats.embedded), (1, 1), "{stats:?}");
        assert_eq!(generation(&location), first + 2);
        // Many texts: lexical results first, then the vectors.
        let many: String = (0..6).map(|i| format!("def f{i}():\n    return {i} * 7\n\n\n")).collect();
        write("c.py", &many);
        let stats = run(&options);
        assert_eq!(stats.embedded, 6, "{stats:?}");
        assert_eq!(generation(&location), first + 4);
        let snapshot = crate::index::Snapshot::open(&location).unwrap();
        assert_eq!(snapshot.stats().embedded, snapshot.stats().chunks);
        assert_eq!(snapshot.stats().files, 2);
    }

    #[test]
    fn the_vector_encoding_converts_once_and_then_sticks() {
        let root = tempfile::tempdir().unwrap();
        for i in 0..6 {
            fs::write(root.path().join(format!("m{i}.py")), format!("def f{i}(x):\n    return x * {i}\n")).unwrap();
        }
        let location = IndexLocation::new(root.path(), None).unwrap();
        let embedder = crate::embed::FakeEmbedder::new(16);
        let options = IndexOptions { shared_cache: None, ann_min_slots: 2, ..IndexOptions::default() };
        let run = |options: &IndexOptions| update(&location, &embedder, options, &mut |_| {}).unwrap();
        let vector_files = || {
            let mut names: Vec<String> = fs::read_dir(&location.dir)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("vectors-"))
                .collect();
            names.sort();
            names
        };
        run(&options);
        use crate::index::Snapshot;
        let f32_snapshot = Snapshot::open(&location).unwrap();
        let f32_stats = f32_snapshot.stats();
        assert_eq!(f32_stats.vector_encoding, Encoding::F32);
        let query = f32_snapshot.chunk_vector(0).unwrap();
        let f32_top: Vec<usize> = f32_snapshot.dense_search(&query, 3, None, true).into_iter().map(|h| h.0).collect();

        let stats = run(&IndexOptions { vectors: Some(Encoding::Int8), ..options.clone() });
        assert_eq!(stats.embedded, 0, "a conversion embeds nothing: {stats:?}");
        let int8 = Snapshot::open(&location).unwrap();
        let int8_stats = int8.stats();
        assert_eq!((int8_stats.vector_encoding, int8_stats.vectors), (Encoding::Int8, f32_stats.vectors));
        assert_eq!(vector_files().iter().filter(|n| n.ends_with(".i8")).count(), 1, "{:?}", vector_files());
        let int8_top: Vec<usize> = int8.dense_search(&query, 3, None, true).into_iter().map(|h| h.0).collect();
        assert_eq!(int8_top[0], f32_top[0], "the chunk itself stays its own best match");
        // The graph survives a pure conversion and searches the int8 vectors.
        assert_eq!(int8_stats.ann_slots, f32_stats.ann_slots);
        assert!(int8_stats.ann_slots > 0, "{int8_stats:?}");
        let graph_top = int8.dense_search(&query, 3, None, false);
        assert_eq!(graph_top[0].0, f32_top[0]);
        assert!((graph_top[0].1 - 1.0).abs() < 0.01, "{graph_top:?}");
        drop((f32_snapshot, int8));

        // An update that does not ask keeps int8, and new vectors are appended as int8.
        fs::write(root.path().join("m0.py"), "def f0(x):\n    return x - 100\n").unwrap();
        let stats = run(&options);
        assert_eq!(stats.embedded, 1, "{stats:?}");
        let kept = Snapshot::open(&location).unwrap();
        assert_eq!(kept.stats().vector_encoding, Encoding::Int8);
        assert!(kept.chunk_vector(0).is_some());
        drop(kept);

        // A rebuild from scratch (CURRENT names no usable manifest) keeps the encoding it finds.
        fs::write(location.dir.join(CURRENT), "manifest-99999999.rkyv\n").unwrap();
        let stats = run(&options);
        assert!(stats.rebuilt.is_some(), "{stats:?}");
        assert_eq!(Snapshot::open(&location).unwrap().stats().vector_encoding, Encoding::Int8);

        // And back: the f32 file holds the int8 values, so nothing is embedded either.
        let stats = run(&IndexOptions { vectors: Some(Encoding::F32), ..options.clone() });
        assert_eq!(stats.embedded, 0, "{stats:?}");
        let back = Snapshot::open(&location).unwrap();
        assert_eq!(back.stats().vector_encoding, Encoding::F32);
        assert!(back.stats().bytes_on_disk > 0);
        assert!(vector_files().iter().all(|n| n.ends_with(".f32") || n.ends_with(".i8")), "{:?}", vector_files());
    }

    #[test]
    fn only_abandoned_temp_files_are_stale() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str| {
            let path = dir.path().join(name);
            fs::write(&path, b"x").unwrap();
            path
        };
        // Being written by this process (another thread), or by a live process: kept.
        let ours = format!(".config.toml.tmp-{}", std::process::id());
        assert!(!abandoned_temp(&ours, &write(&ours)));
        let parent = format!(".vectordb.path.tmp-{}", std::os::unix::process::parent_id());
        assert!(!abandoned_temp(&parent, &write(&parent)));
        // Its writer is gone (no such pid on Linux: pid_max is at most 2^22).
        let gone = ".manifest-00000001.rkyv.tmp-4294967";
        assert!(abandoned_temp(gone, &write(gone)));
    }
}
