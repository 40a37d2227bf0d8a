//! The ONNX Runtime embedder.
//!
//! ONNX Runtime is loaded at run time from the shared library the bootstrap installed (`ort`'s
//! `load-dynamic`); nothing is downloaded. Documents are tokenised, sorted by length and run in
//! small batches padded only to the longest member (dynamic padding): on a 2-core CPU small
//! batches of similar length beat large padded ones (see ARCHITECTURE.md for the measurements).
//! Documents run in *lanes*: several single-threaded sessions side by side, each taking its
//! share of a length-sorted batch, rather than one session splitting each small inference over
//! every CPU (on two cores one chunk's matrices are too small for two threads to pay: lanes embed
//! 1.2-1.7x more chunks a second, most for short chunks; `benches/embed_throughput.rs`).
//! Queries use a session of their own, so a query never waits behind a long indexing
//! batch; it is created on first use. That session runs the query model when one is installed
//! beside the document model (see [`QueryEncoder`]).

use std::sync::{Mutex, OnceLock, mpsc};

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::TensorRef;
use tokenizers::{Tokenizer, TruncationParams};

use super::rerank::OnnxReranker;
use super::{Assets, EmbedError, Embedder, ModelInfo, QueryModel, Reranker, Vector};

/// Tuning knobs for [`OnnxEmbedder`]. Defaults come from measurements on a 2-core CPU.
#[derive(Debug, Clone)]
pub struct EmbedOptions {
    /// Inputs are truncated to this many tokens (the model's own limit is higher, but longer
    /// inputs cost quadratically in attention and chunks are sized below this).
    pub max_tokens: usize,
    /// Documents per inference call.
    pub batch_size: usize,
    /// CPUs document inference (indexing) may use; 0 = every CPU. Queries always use every
    /// CPU: one query is short and its latency is what a user waits for.
    pub threads: usize,
    /// How document inference spreads over its CPUs: independent single-threaded lanes (the
    /// default) or one session whose every call uses them all (kept to measure the difference).
    pub layout: Layout,
    /// Run document inference (the indexing side) at background priority: its session's
    /// worker threads are created lowered (`priority`). Queries have their own session and
    /// keep normal priority; the thread that calls `embed_documents` lowers itself.
    pub background: bool,
    /// Sort documents by token length before batching, so a batch pads little. Off only to
    /// measure what sorting buys.
    pub sort_by_length: bool,
    /// Pad every batch to `max_tokens` (fixed padding, as many pipelines do). Off by default:
    /// only for measuring what dynamic padding buys.
    pub fixed_padding: bool,
    /// Which network embeds queries.
    pub query_encoder: QueryEncoder,
}

/// How document inference uses its CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Up to [`MAX_LANES`] sessions, each with its share of the CPUs (one each on small
    /// machines), embedding different texts at the same time.
    #[default]
    Lanes,
    /// One session; each inference is split over every thread (ONNX Runtime's intra-op pool).
    Shared,
}

/// Each lane holds its own copy of the network's weights and buffers (~30 MB for the int8
/// MiniLM), so many-core machines get a few lanes with several threads each.
pub const MAX_LANES: usize = 4;

impl Layout {
    /// (lanes, threads per lane) for `cpus` CPUs.
    pub fn split(self, cpus: usize) -> (usize, usize) {
        let cpus = cpus.max(1);
        match self {
            Layout::Lanes => {
                let lanes = cpus.min(MAX_LANES);
                (lanes, cpus / lanes)
            }
            Layout::Shared => (1, cpus),
        }
    }
}

/// Which network embeds queries. Documents are always embedded by the document model, so the
/// index never depends on this choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryEncoder {
    /// The query model installed beside the document model (`query-model.onnx`: the same
    /// architecture fine-tuned on the query side against the frozen document vectors), or the
    /// document model when none is installed.
    #[default]
    Tuned,
    /// The document model, as symmetric sentence-embedding models are used.
    Document,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions {
            max_tokens: 256,
            // Measured (benches/embed_throughput.rs, 500 real chunks, 2 cores): length-sorted
            // batches of 1, 2 and 8 all run ~75 chunks/s; 32 is slower, unsorted batches half as
            // fast. Batch 1 also makes a text's vector independent of its batch neighbours
            // (dynamic int8 quantises activations per batch), so cached vectors are exact.
            batch_size: 1,
            threads: 0,
            layout: Layout::Lanes,
            background: false,
            sort_by_length: true,
            fixed_padding: false,
            query_encoder: QueryEncoder::Tuned,
        }
    }
}

/// A BERT-style sentence-embedding model run by ONNX Runtime: mean pooling over the attention
/// mask, then L2 normalisation.
pub struct OnnxEmbedder {
    info: ModelInfo,
    tokenizer: Tokenizer,
    assets: Assets,
    options: EmbedOptions,
    environment: ort::environment::Environment,
    /// How every session here runs a batch (the caller's lane, the other lanes, queries).
    spec: LaneSpec,
    query_model: Option<QueryModel>,
    /// The first lane's document session: runs on the thread that calls `embed_documents`.
    documents: Mutex<Session>,
    /// The other lanes: threads of their own, each owning a session (started lowered when
    /// indexing runs in the background), fed a share of every batch. Started by the first
    /// batch of more than one text, so a process that only asks questions never pays for them.
    lanes: OnceLock<Vec<Lane>>,
    /// How many lanes, and threads in each.
    lane_plan: (usize, usize),
    /// The static tier's table beside the model, read on first use (a process that only asks
    /// questions never pays for it); `None` inside when there is none or it cannot be used.
    static_table: OnceLock<Option<super::StaticTable>>,
    queries: OnceLock<Mutex<Session>>,
    /// The last query and its vector: a search that asks two sources (the local index, then
    /// the team index) runs the query model once.
    last_query: Mutex<Option<(String, Vector)>>,
    query_inferences: std::sync::atomic::AtomicU64,
    /// The reranker beside the model, or why there is none (said when one is asked for).
    reranker: Result<OnnxReranker, String>,
}

/// ONNX Runtime can be loaded once per process; later calls reuse it.
static ENVIRONMENT: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

fn environment(assets: &Assets) -> Result<ort::environment::Environment, EmbedError> {
    let runtime_error = |message: String| EmbedError::Runtime { path: assets.ort_dylib.display().to_string(), message };
    ENVIRONMENT
        .get_or_init(|| {
            let builder = ort::init_from(&assets.ort_dylib).map_err(|e| e.to_string())?;
            builder.with_name("raggrep").build().map_err(|e| e.to_string())
        })
        .clone()
        .map_err(runtime_error)
}

impl OnnxEmbedder {
    /// Loads the tokenizer and the model. Takes ~0.1–0.3 s.
    pub fn load(assets: Assets, options: EmbedOptions) -> Result<OnnxEmbedder, EmbedError> {
        let environment = environment(&assets)?;
        let metadata = assets.metadata()?;
        // The model's own limit (its metadata) if lower than the options': the tokenizer is what
        // enforces it.
        let max_tokens =
            metadata.as_ref().and_then(|m| m.max_tokens).map_or(options.max_tokens, |m| m.min(options.max_tokens));
        let mut tokenizer = Tokenizer::from_file(assets.tokenizer_path()).map_err(|e| EmbedError::Model {
            path: assets.tokenizer_path().display().to_string(),
            message: e.to_string(),
        })?;
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: max_tokens, ..TruncationParams::default() }))
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        tokenizer.with_padding(None);

        let cpus = match options.threads {
            0 => every_cpu(),
            n => n,
        };
        let lane_plan = options.layout.split(cpus);
        let documents = if options.background {
            crate::priority::on_lowered_thread(|| new_session(&environment, &assets.model_path(), lane_plan.1))?
        } else {
            new_session(&environment, &assets.model_path(), lane_plan.1)?
        };
        let input_names: Vec<&str> = documents.inputs().iter().map(|i| i.name()).collect();
        for required in ["input_ids", "attention_mask"] {
            if !input_names.contains(&required) {
                return Err(EmbedError::Model {
                    path: assets.model_path().display().to_string(),
                    message: format!("not a BERT-style model: no `{required}` input (inputs: {input_names:?})"),
                });
            }
        }
        let needs_token_type_ids = input_names.contains(&"token_type_ids");
        let dim = match metadata.as_ref().and_then(|m| m.dim) {
            Some(dim) => dim,
            None => output_dim(&documents).ok_or_else(|| EmbedError::Model {
                path: assets.model_path().display().to_string(),
                message: "cannot tell the embedding dimension from the model's output".into(),
            })?,
        };
        let spec = LaneSpec {
            batch_size: options.batch_size.max(1),
            pad_to: options.fixed_padding.then_some(max_tokens),
            needs_token_type_ids,
        };
        let id = assets.model_id_from(metadata.as_ref())?;
        let query_model = match options.query_encoder {
            QueryEncoder::Tuned => assets.query_model(),
            QueryEncoder::Document => None,
        };
        let reranker = match assets.rerank_model() {
            Ok(Some(model)) => {
                Ok(OnnxReranker::new(model, tokenizer.clone(), environment.clone(), needs_token_type_ids))
            }
            Ok(None) => Err(format!(
                "no reranker is installed beside the model in {} (rerank-model.onnx); run `bash scripts/bootstrap.sh` from a raggrep checkout",
                assets.model_dir.display()
            )),
            Err(err) => Err(format!("the reranker cannot be used: {err}")),
        };
        Ok(OnnxEmbedder {
            static_table: OnceLock::new(),
            info: ModelInfo { id, dim, max_tokens },
            reranker,
            query_model,
            tokenizer,
            assets,
            options,
            environment,
            spec,
            documents: Mutex::new(documents),
            lanes: OnceLock::new(),
            lane_plan,
            queries: OnceLock::new(),
            last_query: Mutex::new(None),
            query_inferences: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// How many queries went through the query model (not answered by the last-query memo).
    pub fn query_inferences(&self) -> u64 {
        self.query_inferences.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Number of tokens `text` becomes (after truncation), for throughput statistics.
    pub fn count_tokens(&self, text: &str) -> Result<usize, EmbedError> {
        Ok(self.encode(text)?.len())
    }

    pub fn options(&self) -> &EmbedOptions {
        &self.options
    }

    /// The id of the network that embeds queries when it is not the document model.
    pub fn query_model(&self) -> Option<&str> {
        self.query_model.as_ref().map(|m| m.id.as_str())
    }

    /// Size of the tokenizer's vocabulary (token ids run below it).
    pub fn vocab_size(&self) -> usize {
        self.tokenizer.get_vocab_size(true)
    }

    /// The token ids the document model sees for `text` (truncated), without the special tokens
    /// the tokenizer adds around them: the tokenizer's own answer, which [`Self::content_ids_of`]
    /// (the static tier's) is tested against.
    pub fn content_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        super::word_ids::tokenizer_content_ids(&self.tokenizer, text)
    }

    /// [`Self::content_ids`] of many texts, the same ids several times faster on code: each
    /// distinct word goes through the tokenizer's WordPiece once ([`super::word_ids`]).
    pub fn content_ids_of(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, EmbedError> {
        let mut words = super::word_ids::WordIds::new(&self.tokenizer);
        texts.iter().map(|t| words.content_ids(t)).collect()
    }

    /// The document model's vector for each token alone (the tokenizer's specials around it):
    /// the rows of a static table in the model's own vector space (the retrieval benchmark's
    /// static tier, measured and not shipped).
    pub fn token_vectors(&self, ids: &[u32]) -> Result<Vec<Vector>, EmbedError> {
        // What the tokenizer puts around any text (`[CLS]`, `[SEP]` for BERT); the token goes
        // after the opening one.
        let specials = self.tokenizer.encode_fast("", true).map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        let specials = specials.get_ids();
        let open = specials.len().min(1);
        let seqs: Vec<Vec<u32>> = ids
            .iter()
            .map(|&id| specials[..open].iter().copied().chain([id]).chain(specials[open..].iter().copied()).collect())
            .collect();
        let batch: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
        self.run(&self.documents, &batch)
    }

    fn encode(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let encoding = self.tokenizer.encode_fast(text, true).map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// Runs one padded batch and returns one vector per sequence.
    fn run(&self, session: &Mutex<Session>, batch: &[&[u32]]) -> Result<Vec<Vector>, EmbedError> {
        // The width is the longest member's (`mean_pooled` takes it), or the fixed padding's.
        mean_pooled(session, batch, self.spec.pad_to.unwrap_or(0), self.spec.needs_token_type_ids)
    }

    /// The lanes beside the caller's, started on first use (none when they cannot be: the
    /// caller's lane then embeds everything, said once in the log).
    fn other_lanes(&self) -> &[Lane] {
        if let Some(lanes) = self.lanes.get() {
            return lanes;
        }
        let (count, threads) = self.lane_plan;
        let spec = self.spec;
        let path = self.assets.model_path();
        let start = || -> Result<Vec<Lane>, EmbedError> {
            (1..count)
                .map(|number| Lane::start(number, new_session(&self.environment, &path, threads)?, spec))
                .collect()
        };
        // Threads started on a lowered thread are lowered too (the lanes and their sessions'
        // pools); the calling indexer thread lowers itself.
        let started = if self.options.background { crate::priority::on_lowered_thread(start) } else { start() };
        let lanes = started.unwrap_or_else(|err| {
            tracing::warn!("embedding on one lane: {err}");
            Vec::new()
        });
        // Another thread may have won the race: its lanes are used, these dropped.
        let _ = self.lanes.set(lanes);
        self.lanes.get().map_or(&[], Vec::as_slice)
    }

    fn query_session(&self) -> Result<&Mutex<Session>, EmbedError> {
        if let Some(session) = self.queries.get() {
            return Ok(session);
        }
        let path = self.query_model.as_ref().map_or_else(|| self.assets.model_path(), |m| m.path.clone());
        let session = new_session(&self.environment, &path, every_cpu())?;
        Ok(self.queries.get_or_init(|| Mutex::new(session)))
    }
}

/// What a lane needs to run batches as the embedder does.
#[derive(Clone, Copy)]
struct LaneSpec {
    batch_size: usize,
    /// Fixed padding to this many tokens (measurement only), else each batch's longest.
    pad_to: Option<usize>,
    needs_token_type_ids: bool,
}

type LaneReply = mpsc::Receiver<Result<Vec<Vector>, EmbedError>>;

/// Token sequences for a lane, and where its vectors go.
type LaneJob = (Vec<Vec<u32>>, mpsc::Sender<Result<Vec<Vector>, EmbedError>>);

/// A document session on a thread of its own, embedding the token sequences it is sent.
struct Lane {
    jobs: Option<mpsc::Sender<LaneJob>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Lane {
    fn start(number: usize, session: Session, spec: LaneSpec) -> Result<Lane, EmbedError> {
        let (jobs, inbox) = mpsc::channel::<LaneJob>();
        let session = Mutex::new(session);
        let thread = std::thread::Builder::new()
            .name(format!("raggrep-lane-{number}"))
            .spawn(move || {
                for (texts, reply) in inbox {
                    let texts: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
                    // The caller may have given up waiting (its own share failed): nothing to do.
                    let _ = reply.send(spec.embed(&session, &texts));
                }
            })
            .map_err(|e| EmbedError::Inference(format!("cannot start an embedding lane: {e}")))?;
        Ok(Lane { jobs: Some(jobs), thread: Some(thread) })
    }

    fn submit(&self, texts: Vec<Vec<u32>>) -> Result<LaneReply, EmbedError> {
        let (reply, answer) = mpsc::channel();
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send((texts, reply)).ok())
            .ok_or_else(|| EmbedError::Inference("an embedding lane stopped".into()))?;
        Ok(answer)
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Closing the queue ends the thread after its current job.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl LaneSpec {
    /// `texts` in batches of `batch_size`, each padded to its longest member (or `pad_to`).
    fn embed(&self, session: &Mutex<Session>, texts: &[&[u32]]) -> Result<Vec<Vector>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            out.extend(mean_pooled(session, batch, self.pad_to.unwrap_or(0), self.needs_token_type_ids)?);
        }
        Ok(out)
    }
}

/// Runs one batch padded to `cols` tokens and returns one mean-pooled (over the attention mask),
/// normalised vector per sequence.
pub(super) fn mean_pooled(
    session: &Mutex<Session>,
    batch: &[&[u32]],
    cols: usize,
    needs_token_type_ids: bool,
) -> Result<Vec<Vector>, EmbedError> {
    let rows = batch.len();
    let cols = cols.max(batch.iter().map(|ids| ids.len()).max().unwrap_or(0)).max(1);
    let mut input_ids = vec![0i64; rows * cols];
    let mut attention_mask = vec![0i64; rows * cols];
    for (row, ids) in batch.iter().enumerate() {
        for (col, &id) in ids.iter().enumerate() {
            input_ids[row * cols + col] = i64::from(id);
            attention_mask[row * cols + col] = 1;
        }
    }
    let token_type_ids = vec![0i64; rows * cols];
    let shape = [rows, cols];
    let inference = |e: ort::Error| EmbedError::Inference(e.to_string());
    let ids_tensor = TensorRef::from_array_view((shape, input_ids.as_slice())).map_err(inference)?;
    let mask_tensor = TensorRef::from_array_view((shape, attention_mask.as_slice())).map_err(inference)?;
    let mut session = session.lock().map_err(|_| EmbedError::Inference("a previous inference panicked".into()))?;
    let outputs = if needs_token_type_ids {
        let types_tensor = TensorRef::from_array_view((shape, token_type_ids.as_slice())).map_err(inference)?;
        session.run(ort::inputs![
            "input_ids" => ids_tensor,
            "attention_mask" => mask_tensor,
            "token_type_ids" => types_tensor,
        ])
    } else {
        session.run(ort::inputs!["input_ids" => ids_tensor, "attention_mask" => mask_tensor])
    }
    .map_err(inference)?;
    let (out_shape, hidden) = outputs[0].try_extract_tensor::<f32>().map_err(inference)?;
    let dims: &[i64] = out_shape;
    let dim = match dims {
        [r, c, d] if *r as usize == rows && *c as usize == cols => *d as usize,
        other => {
            return Err(EmbedError::Inference(format!("unexpected output shape {other:?} for a {rows}×{cols} batch")));
        }
    };
    // Mean pooling over the attention mask.
    let mut vectors = Vec::with_capacity(rows);
    for (row, ids) in batch.iter().enumerate() {
        let mut sum = vec![0.0f32; dim];
        let len = ids.len().max(1);
        for col in 0..ids.len() {
            let token = &hidden[(row * cols + col) * dim..(row * cols + col + 1) * dim];
            sum.iter_mut().zip(token).for_each(|(s, t)| *s += t);
        }
        sum.iter_mut().for_each(|s| *s /= len as f32);
        vectors.push(Vector::normalized(sum));
    }
    Ok(vectors)
}

pub(super) fn every_cpu() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub(super) fn new_session(
    environment: &ort::environment::Environment,
    model: &std::path::Path,
    threads: usize,
) -> Result<Session, EmbedError> {
    let model_error = |message: String| EmbedError::Model { path: model.display().to_string(), message };
    Session::builder(environment)
        .map_err(|e| model_error(e.to_string()))?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(|e| model_error(e.to_string()))?
        // ONNX Runtime's fused skip layer norm (residual add + layer norm in one kernel) is
        // slower on CPU than the two kernels it replaces: the default model indexes 100k lines of
        // Java in 79 s without it against 113 s with it (BENCHMARKS.md, "The model's graph and
        // its kernels"). The int8 activations after it round a little differently (cosine 0.999
        // to the fused kernel's vectors, as another CPU's integer kernels give).
        .with_disabled_optimizers("SkipLayerNormFusion")
        .map_err(|e| model_error(e.to_string()))?
        .with_intra_threads(threads)
        .map_err(|e| model_error(e.to_string()))?
        .with_inter_threads(1)
        .map_err(|e| model_error(e.to_string()))?
        .commit_from_file(model)
        .map_err(|e| model_error(e.to_string()))
}

fn output_dim(session: &Session) -> Option<usize> {
    let output = session.outputs().first()?;
    match output.dtype() {
        ort::value::ValueType::Tensor { shape, .. } => {
            let dims: &[i64] = shape;
            dims.last().copied().filter(|d| *d > 0).map(|d| d as usize)
        }
        _ => None,
    }
}

impl Embedder for OnnxEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn embed_static(&self, texts: &[&str]) -> Option<Result<Vec<Vector>, EmbedError>> {
        let table = self
            .static_table
            .get_or_init(|| {
                let path = self.assets.model_dir.join(super::STATIC_TABLE_FILE);
                if !path.exists() {
                    return None;
                }
                super::StaticTable::load(&path, self.info.dim, self.vocab_size())
                    .inspect_err(|err| tracing::warn!("{err}; the static tier is skipped"))
                    .ok()
            })
            .as_ref()?;
        Some(self.content_ids_of(texts).map(|all| all.iter().map(|ids| table.embed(ids)).collect()))
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vector>, EmbedError> {
        let mut encoded = texts.iter().map(|t| self.encode(t)).collect::<Result<Vec<_>, _>>()?;
        let mut order: Vec<usize> = (0..encoded.len()).collect();
        if self.options.sort_by_length {
            order.sort_by_key(|&i| encoded[i].len());
        }
        // Dealt round-robin from the length-sorted order, so every lane gets about as many
        // tokens; the calling thread runs the first share.
        let others = if order.len() > 1 { self.other_lanes() } else { &[] };
        let lanes = (others.len() + 1).min(order.len()).max(1);
        let share = |lane: usize| -> Vec<usize> { order.iter().skip(lane).step_by(lanes).copied().collect() };
        let mut waiting = Vec::with_capacity(lanes - 1);
        for (lane, worker) in others.iter().take(lanes - 1).enumerate() {
            let indices = share(lane + 1);
            // Each text goes to one lane only: handed over, not copied.
            let texts: Vec<Vec<u32>> = indices.iter().map(|&i| std::mem::take(&mut encoded[i])).collect();
            waiting.push((indices, worker.submit(texts)?));
        }
        let mut out: Vec<Option<Vector>> = vec![None; encoded.len()];
        let mine = share(0);
        let my_texts: Vec<&[u32]> = mine.iter().map(|&i| encoded[i].as_slice()).collect();
        for (i, vector) in mine.iter().zip(self.spec.embed(&self.documents, &my_texts)?) {
            out[*i] = Some(vector);
        }
        for (indices, reply) in waiting {
            let vectors = reply.recv().map_err(|_| EmbedError::Inference("an embedding lane stopped".into()))??;
            for (i, vector) in indices.into_iter().zip(vectors) {
                out[i] = Some(vector);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn reranker(&self) -> Result<&dyn Reranker, EmbedError> {
        match &self.reranker {
            Ok(reranker) => Ok(reranker),
            Err(why) => Err(EmbedError::NoReranker(why.clone())),
        }
    }

    fn embed_query(&self, text: &str) -> Result<Vector, EmbedError> {
        if let Ok(last) = self.last_query.lock()
            && let Some((query, vector)) = last.as_ref()
            && query == text
        {
            return Ok(vector.clone());
        }
        let ids = self.encode(text)?;
        let mut vectors = self.run(self.query_session()?, &[ids.as_slice()])?;
        self.query_inferences.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let vector = vectors.pop().ok_or_else(|| EmbedError::Inference("no output for the query".into()))?;
        if let Ok(mut last) = self.last_query.lock() {
            *last = Some((text.to_string(), vector.clone()));
        }
        Ok(vector)
    }
}
