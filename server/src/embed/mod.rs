//! Embedding: text in, unit-length vectors out.
//!
//! [`Embedder`] is the seam between the engine and the model. The real implementation,
//! [`OnnxEmbedder`], runs a BERT-style ONNX model (all-MiniLM-L6-v2 by default) with ONNX Runtime
//! on the CPU; [`FakeEmbedder`] is a deterministic stand-in for unit tests of index logic only.

mod assets;
mod onnx;
mod rerank;
mod static_table;
mod word_ids;

use std::fmt;

pub use assets::{
    AssetError, Assets, DEFAULT_MODEL, ModelInfo, ORT_LIB_NAME, PLAIN_MODEL, QueryModel, RerankHead, RerankModel,
    cache_dir,
};
pub use onnx::QueryEncoder;
pub use onnx::{EmbedOptions, Layout, OnnxEmbedder};
pub use static_table::{STATIC_TABLE_FILE, StaticTable, StaticTableError};

/// A unit-length embedding vector. Normalised on construction, so cosine similarity is a dot
/// product.
#[derive(Clone, PartialEq)]
pub struct Vector(Box<[f32]>);

impl Vector {
    /// Normalises `values` to unit length. An all-zero input stays zero (it matches nothing).
    pub fn normalized(mut values: Vec<f32>) -> Vector {
        let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm > 0.0 {
            values.iter_mut().for_each(|v| *v /= norm);
        }
        Vector(values.into_boxed_slice())
    }

    pub fn as_slice(&self) -> &[f32] {
        &self.0
    }

    pub fn dim(&self) -> usize {
        self.0.len()
    }

    /// Cosine similarity (both vectors are unit length).
    pub fn dot(&self, other: &Vector) -> f32 {
        dot(&self.0, &other.0)
    }

    pub fn norm(&self) -> f32 {
        self.0.iter().map(|v| v * v).sum::<f32>().sqrt()
    }
}

impl fmt::Debug for Vector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Vector(dim={}, {:?}…)", self.0.len(), &self.0[..self.0.len().min(4)])
    }
}

/// Dot product of two equal-length slices.
///
/// The hot loop of exact search and of every HNSW step. On x86-64 CPUs with AVX2 and FMA (checked
/// once, at run time, so the binary still runs anywhere) it uses 256-bit fused multiply-adds;
/// elsewhere a portable loop with eight independent accumulators, which the compiler can
/// vectorise (a single running sum cannot be reordered under IEEE rules).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::atomic::{AtomicU8, Ordering};
        // 0 = not checked yet, 1 = AVX2 + FMA, 2 = portable.
        static LEVEL: AtomicU8 = AtomicU8::new(0);
        let mut level = LEVEL.load(Ordering::Relaxed);
        if level == 0 {
            level = if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") { 1 } else { 2 };
            LEVEL.store(level, Ordering::Relaxed);
        }
        if level == 1 {
            // SAFETY: the CPU supports AVX2 and FMA (checked above); the slices have equal length.
            #[allow(unsafe_code)]
            return unsafe { dot_avx2_fma(a, b) };
        }
    }
    dot_portable(a, b)
}

fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let mut chunks_a = a.chunks_exact(8);
    let mut chunks_b = b.chunks_exact(8);
    for (x, y) in (&mut chunks_a).zip(&mut chunks_b) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = chunks_a.remainder().iter().zip(chunks_b.remainder()).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(unsafe_code)]
unsafe fn dot_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let blocks = n / 32;
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    // SAFETY: every load reads 8 floats at an offset below `blocks * 32 <= n`.
    unsafe {
        let mut acc = [_mm256_setzero_ps(); 4];
        for i in 0..blocks {
            let at = i * 32;
            for (j, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_ps(pa.add(at + 8 * j));
                let y = _mm256_loadu_ps(pb.add(at + 8 * j));
                *acc = _mm256_fmadd_ps(x, y, *acc);
            }
        }
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut lanes = [0.0f32; 8];
        _mm256_storeu_ps(lanes.as_mut_ptr(), sum);
        lanes.iter().sum::<f32>() + dot_portable(&a[blocks * 32..n], &b[blocks * 32..n])
    }
}

/// Errors from embedding.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(transparent)]
    Assets(#[from] AssetError),
    #[error("cannot load ONNX Runtime from {path}: {message}")]
    Runtime { path: String, message: String },
    #[error("cannot load model {path}: {message}")]
    Model { path: String, message: String },
    #[error("tokenizer failed: {0}")]
    Tokenize(String),
    #[error("inference failed: {0}")]
    Inference(String),
    #[error("{0}")]
    NoReranker(String),
}

/// Turns texts into vectors. Implementations are thread-safe; calls may block for a while (run
/// them off async executors).
pub trait Embedder: Send + Sync {
    /// Model id and vector dimension: both go into the index so a model change is noticed.
    fn info(&self) -> &ModelInfo;

    /// Embeds documents (chunks), optimised for throughput. Output order matches input order.
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vector>, EmbedError>;

    /// Embeds one query, optimised for latency.
    fn embed_query(&self, text: &str) -> Result<Vector, EmbedError>;

    /// Static vectors of documents (the first tier, see [`StaticTable`]): `None` when this model
    /// has no trained table. Approximations of [`Self::embed_documents`]'s vectors, searched
    /// with the same query vectors, for a fresh tree before the model has run.
    fn embed_static(&self, _texts: &[&str]) -> Option<Result<Vec<Vector>, EmbedError>> {
        None
    }

    /// The reranker that comes with this model; the error says why there is none.
    fn reranker(&self) -> Result<&dyn Reranker, EmbedError> {
        Err(EmbedError::NoReranker(format!("the model {} has no reranker", self.info().id)))
    }
}

/// Scores (query, passage) pairs by reading both at once: higher is more relevant. Slow (one
/// model run a pair), so it re-sorts a few candidates, never a whole index.
pub trait Reranker: Send + Sync {
    fn id(&self) -> &str;
    /// Weight of a score added to the learned fusion's linear score (chosen with the model).
    fn weight(&self) -> f32;
    /// One score per passage, in order.
    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError>;
}

/// A deterministic embedder for unit tests of index logic: hashes character trigrams into a
/// fixed number of buckets. Similar strings get similar vectors; meaning plays no part.
pub struct FakeEmbedder {
    info: ModelInfo,
}

impl FakeEmbedder {
    pub fn new(dim: usize) -> FakeEmbedder {
        FakeEmbedder { info: ModelInfo { id: format!("fake-trigram-{dim}"), dim, max_tokens: 256 } }
    }

    fn embed(&self, text: &str) -> Vector {
        let mut values = vec![0.0f32; self.info.dim];
        let chars: Vec<char> = text.to_lowercase().chars().collect();
        for window in chars.windows(3) {
            let mut buf = [0u8; 12];
            let mut len = 0;
            for c in window {
                len += c.encode_utf8(&mut buf[len..]).len();
            }
            let h = crate::content_hash(&buf[..len]);
            values[(h % self.info.dim as u128) as usize] += 1.0;
        }
        Vector::normalized(values)
    }
}

impl Embedder for FakeEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vector>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed(t)).collect())
    }

    fn embed_query(&self, text: &str) -> Result<Vector, EmbedError> {
        Ok(self.embed(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_length() {
        let v = Vector::normalized(vec![3.0, 4.0]);
        assert!((v.norm() - 1.0).abs() < 1e-6);
        assert_eq!(v.as_slice(), &[0.6, 0.8]);
        let zero = Vector::normalized(vec![0.0, 0.0]);
        assert_eq!(zero.norm(), 0.0);
    }

    #[test]
    fn dot_matches_the_naive_sum() {
        // Lengths around the 8- and 32-float blocks of both implementations.
        for n in [0, 1, 7, 8, 9, 31, 32, 33, 63, 384, 389] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-4, "n = {n}");
            assert!((dot_portable(&a, &b) - naive).abs() < 1e-4, "n = {n}");
        }
        assert_eq!(dot(&[1.0, 2.0], &[3.0]), 3.0, "unequal lengths use the common prefix");
    }

    #[test]
    fn fake_embedder_is_deterministic_and_graded() {
        let e = FakeEmbedder::new(64);
        let a = e.embed_query("read the file from disk").unwrap();
        let b = e.embed_query("read a file from disk").unwrap();
        let c = e.embed_query("zzzz qqqq").unwrap();
        assert_eq!(a, e.embed_query("read the file from disk").unwrap());
        assert!(a.dot(&b) > a.dot(&c));
    }
}
