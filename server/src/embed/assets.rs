//! Finding the model and ONNX Runtime on disk.
//!
//! Nothing is downloaded at run time: `scripts/bootstrap.sh` puts pinned, checksummed assets in
//! the cache dir. Lookup order: explicit path (CLI flag or config) → environment
//! (`RAGGREP_MODEL_DIR`, `ORT_DYLIB_PATH`) → a release bundle's `share/raggrep` beside the
//! binary's `bin/` → cache dir (`$RAGGREP_HOME`, default `~/.cache/raggrep`).

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Name of the default model directory under `<cache>/models/`: all-MiniLM-L6-v2 fine-tuned on
/// the document side for code (issue 16), int8. "code2": the second training turn (chunk-pool
/// negatives) under a new id, so indexes and caches of the first are rebuilt, not mixed.
pub const DEFAULT_MODEL: &str = "all-minilm-l6-v2-code2-int8";
/// all-MiniLM-L6-v2 itself, int8: the vector store's model, because design seed 002's stack
/// writes and searches its databases with it, and a database only answers queries embedded by
/// the network that wrote it.
pub const PLAIN_MODEL: &str = "all-minilm-l6-v2-int8";
/// ONNX Runtime version the bootstrap installs and `ort` is built against.
const ORT_VERSION: &str = "1.31.1";
/// File name of ONNX Runtime's shared library in the cache.
pub const ORT_LIB_NAME: &str = "libonnxruntime.so.1.31.1";

const FIX: &str = "run `bash scripts/bootstrap.sh` from a raggrep checkout, or unpack a release bundle (its share/raggrep sits beside bin/)";

/// Errors locating assets. Each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum AssetError {
    #[error("model directory {0} not found; {FIX} or set RAGGREP_MODEL_DIR")]
    ModelDirMissing(PathBuf),
    #[error("model directory {dir} has no {file}; a model dir needs model.onnx and tokenizer.json ({FIX})")]
    ModelFileMissing { dir: PathBuf, file: &'static str },
    #[error("ONNX Runtime library {0} not found; {FIX} or set ORT_DYLIB_PATH")]
    RuntimeMissing(PathBuf),
    #[error("cannot read {path}: {message}")]
    BadMetadata { path: PathBuf, message: String },
    #[error("cannot find a home directory for the cache; set RAGGREP_HOME")]
    NoHome,
}

/// Identity of an embedding model, stored with every index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// Stable id: the bootstrap's `raggrep-model.json` id, or `<dir name>-<hash of model.onnx>`.
    pub id: String,
    pub dim: usize,
    /// Longest input the model reads, in tokens; longer input is truncated.
    pub max_tokens: usize,
}

/// Where the model and the runtime are.
#[derive(Debug, Clone)]
pub struct Assets {
    pub model_dir: PathBuf,
    pub ort_dylib: PathBuf,
}

/// Optional metadata the bootstrap writes next to a model (`raggrep-model.json`).
#[derive(Debug, Deserialize)]
pub(crate) struct ModelMetadata {
    pub id: String,
    pub dim: Option<usize>,
    pub max_tokens: Option<usize>,
    /// Of `model.onnx`, as the bootstrap verified it.
    pub sha256: Option<String>,
}

/// File names of the optional query model inside a model directory.
const QUERY_MODEL_FILE: &str = "query-model.onnx";
const QUERY_METADATA_FILE: &str = "query-model.json";

/// Metadata of a query model (`query-model.json`): a copy of the document model fine-tuned on
/// the query side only, so it must only ever meet vectors of the exact document model it was
/// trained against.
#[derive(Debug, Deserialize)]
struct QueryModelMetadata {
    id: String,
    /// sha256 of the document model the query model is paired with: the one whose frozen vectors
    /// it was trained against, or one trained on against this query model (frozen), as the
    /// shipped code model was. Either way the two were trained as a pair; any other document
    /// model gets the plain query side.
    document_model_sha256: String,
}

/// A query model found next to a document model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryModel {
    pub id: String,
    pub path: PathBuf,
}

/// File names of the optional reranker inside a model directory.
const RERANK_MODEL_FILE: &str = "rerank-model.onnx";
const RERANK_METADATA_FILE: &str = "rerank-model.json";

/// Metadata of a reranker (`rerank-model.json`): a cross-encoder on the document model's
/// architecture and tokenizer that reads `[CLS] query [SEP] path\ncode [SEP]` and scores the
/// pair with a linear head over its mean-pooled, normalised output.
#[derive(Debug, Deserialize)]
struct RerankMetadata {
    id: String,
    max_tokens: usize,
    /// Weight of its score added to the learned fusion's linear score.
    weight: f32,
    head: RerankHead,
}

/// The reranker's head: score = w · normalize(meanpool(h)) + b.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RerankHead {
    pub w: Vec<f32>,
    pub b: f32,
}

/// A reranker found next to a document model.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankModel {
    pub id: String,
    pub path: PathBuf,
    pub max_tokens: usize,
    pub weight: f32,
    pub head: RerankHead,
}

/// `share/raggrep` of a release bundle: beside the directory holding the running binary
/// (`<bundle>/bin/raggrep` → `<bundle>/share/raggrep`), so an unpacked bundle works wherever it
/// is put. `None` outside a bundle (a cargo build's `target/…/raggrep` has no `share/` beside it).
pub fn bundle_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = fs::canonicalize(&exe).unwrap_or(exe);
    let share = exe.parent()?.parent()?.join("share").join("raggrep");
    share.is_dir().then_some(share)
}

/// `parts` under the bundle's `share/raggrep` when it is there, else under the cache directory.
fn shipped_or_cached(parts: &[&str]) -> Result<PathBuf, AssetError> {
    let under = |base: PathBuf| parts.iter().fold(base, |path, part| path.join(part));
    if let Some(shipped) = bundle_dir().map(under).filter(|p| p.exists()) {
        return Ok(shipped);
    }
    Ok(under(cache_dir()?))
}

/// The cache directory: `$RAGGREP_HOME`, else `~/.cache/raggrep`.
pub fn cache_dir() -> Result<PathBuf, AssetError> {
    if let Some(home) = std::env::var_os("RAGGREP_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg).join("raggrep"));
    }
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty()).ok_or(AssetError::NoHome)?;
    Ok(PathBuf::from(home).join(".cache").join("raggrep"))
}

impl Assets {
    /// Locates assets. `model` is a model directory, or the name of one under
    /// `<cache>/models/` (e.g. `all-minilm-l6-v2-fp32`); `ort_dylib` the runtime library.
    pub fn locate(model: Option<&str>, ort_dylib: Option<&Path>) -> Result<Assets, AssetError> {
        Self::locate_or(model, ort_dylib, DEFAULT_MODEL)
    }

    /// [`Assets::locate`] with `default` as the model directory's name when no model is named
    /// (flag, config or `RAGGREP_MODEL_DIR`).
    pub fn locate_or(model: Option<&str>, ort_dylib: Option<&Path>, default: &str) -> Result<Assets, AssetError> {
        let model_dir = match model
            .map(str::to_string)
            .or_else(|| std::env::var("RAGGREP_MODEL_DIR").ok().filter(|v| !v.is_empty()))
        {
            Some(spec) => {
                let as_path = PathBuf::from(&spec);
                if as_path.is_dir() || spec.contains('/') { as_path } else { shipped_or_cached(&["models", &spec])? }
            }
            None => shipped_or_cached(&["models", default])?,
        };
        let ort_dylib = match ort_dylib
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("ORT_DYLIB_PATH").filter(|v| !v.is_empty()).map(PathBuf::from))
        {
            Some(path) => path,
            None => shipped_or_cached(&["runtime", &format!("onnxruntime-{ORT_VERSION}"), ORT_LIB_NAME])?,
        };
        let assets = Assets { model_dir, ort_dylib };
        assets.check()?;
        Ok(assets)
    }

    fn check(&self) -> Result<(), AssetError> {
        if !self.model_dir.is_dir() {
            return Err(AssetError::ModelDirMissing(self.model_dir.clone()));
        }
        for file in ["model.onnx", "tokenizer.json"] {
            if !self.model_dir.join(file).is_file() {
                return Err(AssetError::ModelFileMissing { dir: self.model_dir.clone(), file });
            }
        }
        if !self.ort_dylib.is_file() {
            return Err(AssetError::RuntimeMissing(self.ort_dylib.clone()));
        }
        Ok(())
    }

    pub fn model_path(&self) -> PathBuf {
        self.model_dir.join("model.onnx")
    }

    pub fn tokenizer_path(&self) -> PathBuf {
        self.model_dir.join("tokenizer.json")
    }

    /// Reads `raggrep-model.json` if present.
    pub(crate) fn metadata(&self) -> Result<Option<ModelMetadata>, AssetError> {
        let path = self.model_dir.join("raggrep-model.json");
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(AssetError::BadMetadata { path, message: e.to_string() });
            }
        };
        serde_json::from_str(&text).map(Some).map_err(|e| AssetError::BadMetadata { path, message: e.to_string() })
    }

    /// The query model installed beside the document model, if there is one and it was trained
    /// against exactly this document model. A query model paired with other document vectors
    /// would rank worse than no query model at all, so a mismatch is logged and ignored.
    pub fn query_model(&self) -> Option<QueryModel> {
        let path = self.model_dir.join(QUERY_MODEL_FILE);
        if !path.is_file() {
            return None;
        }
        let meta_path = self.model_dir.join(QUERY_METADATA_FILE);
        let meta: QueryModelMetadata = match fs::read_to_string(&meta_path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
        {
            Ok(meta) => meta,
            Err(message) => {
                tracing::warn!("ignoring the query model: cannot read {}: {message}", meta_path.display());
                return None;
            }
        };
        let document_sha = self.metadata().ok().flatten().and_then(|m| m.sha256);
        if document_sha.as_deref() != Some(meta.document_model_sha256.as_str()) {
            tracing::warn!(
                "ignoring the query model {}: it was trained for document model {}, this one is {}",
                path.display(),
                meta.document_model_sha256,
                document_sha.as_deref().unwrap_or("unknown")
            );
            return None;
        }
        Some(QueryModel { id: meta.id, path })
    }

    /// The reranker installed beside the document model, if there is one and its metadata is
    /// whole. Its head must have one weight per model output dimension; that is checked when
    /// it first runs (the output is not known before).
    pub fn rerank_model(&self) -> Result<Option<RerankModel>, AssetError> {
        let path = self.model_dir.join(RERANK_MODEL_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let meta_path = self.model_dir.join(RERANK_METADATA_FILE);
        let bad = |message: String| AssetError::BadMetadata { path: meta_path.clone(), message };
        let text = fs::read_to_string(&meta_path).map_err(|e| bad(e.to_string()))?;
        let meta: RerankMetadata = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if meta.head.w.is_empty() || !meta.weight.is_finite() || meta.max_tokens < 8 {
            return Err(bad("needs a non-empty head, a finite weight and max_tokens of at least 8".into()));
        }
        Ok(Some(RerankModel { id: meta.id, path, max_tokens: meta.max_tokens, weight: meta.weight, head: meta.head }))
    }

    /// The model's id, as its embedder reports it (without loading the network, unless it has
    /// no metadata and its weights must be hashed).
    pub fn model_id(&self) -> Result<String, AssetError> {
        self.model_id_from(self.metadata()?.as_ref())
    }

    /// [`Assets::model_id`] from metadata already read.
    pub(crate) fn model_id_from(&self, metadata: Option<&ModelMetadata>) -> Result<String, AssetError> {
        match metadata {
            Some(metadata) => Ok(metadata.id.clone()),
            None => self.derived_model_id(),
        }
    }

    /// A stable id for a model without metadata: its directory name and a hash of its weights,
    /// so two different models never share cached embeddings.
    fn derived_model_id(&self) -> Result<String, AssetError> {
        let path = self.model_path();
        let bytes =
            fs::read(&path).map_err(|e| AssetError::BadMetadata { path: path.clone(), message: e.to_string() })?;
        let name = self.model_dir.file_name().map_or_else(|| "model".to_string(), |n| n.to_string_lossy().into_owned());
        Ok(format!("{name}-{:012x}", crate::content_hash(&bytes) as u64 & 0xffff_ffff_ffff))
    }
}
