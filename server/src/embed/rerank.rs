//! The cross-encoder reranker: reads a query and one candidate together and scores the pair.
//!
//! It is the document model's architecture fine-tuned on (doc comment, documented function)
//! pairs of the training packages (`research/training/train_reranker.py`), with a linear head
//! over the mean-pooled, normalised output. Unlike the embedding models it sees query and code
//! at once, which is what tells a function from its sibling in the same file; it costs one
//! model run per candidate, so search only asks it about its best few (`search::rerank`).

use std::sync::{Mutex, OnceLock};

use ort::session::Session;
use tokenizers::{Tokenizer, TruncationParams, TruncationStrategy};

use super::assets::RerankModel;
use super::onnx::{every_cpu, mean_pooled, new_session};
use super::{EmbedError, Reranker};

/// The reranker installed beside an [`super::OnnxEmbedder`]'s model. Its session and its pair
/// tokenizer are made on first use, so searches that never rerank never load it.
pub(super) struct OnnxReranker {
    model: RerankModel,
    /// The document model's tokenizer (the reranker was trained with it), unconfigured.
    base: Tokenizer,
    environment: ort::environment::Environment,
    needs_token_type_ids: bool,
    pairs: OnceLock<Tokenizer>,
    session: OnceLock<Mutex<Session>>,
}

impl OnnxReranker {
    pub(super) fn new(
        model: RerankModel,
        base: Tokenizer,
        environment: ort::environment::Environment,
        needs_token_type_ids: bool,
    ) -> OnnxReranker {
        OnnxReranker {
            model,
            base,
            environment,
            needs_token_type_ids,
            pairs: OnceLock::new(),
            session: OnceLock::new(),
        }
    }

    /// A tokenizer for pairs truncated to the reranker's length by `strategy`.
    fn pair_tokenizer(&self, strategy: TruncationStrategy) -> Result<Tokenizer, EmbedError> {
        let mut tokenizer = self.base.clone();
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: self.model.max_tokens,
                strategy,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::Tokenize(e.to_string()))?;
        tokenizer.with_padding(None);
        Ok(tokenizer)
    }

    /// `[CLS] query [SEP] passage [SEP]` as trained: the passage is cut to fit. A query too
    /// long to leave room for any passage is cut too, rather than failing the search.
    fn encode(&self, query: &str, passage: &str) -> Result<Vec<u32>, EmbedError> {
        let pairs = match self.pairs.get() {
            Some(tokenizer) => tokenizer,
            None => {
                let tokenizer = self.pair_tokenizer(TruncationStrategy::OnlySecond)?;
                self.pairs.get_or_init(|| tokenizer)
            }
        };
        let encoding = match pairs.encode_fast((query, passage), true) {
            Ok(encoding) => encoding,
            Err(_) => self
                .pair_tokenizer(TruncationStrategy::LongestFirst)?
                .encode_fast((query, passage), true)
                .map_err(|e| EmbedError::Tokenize(e.to_string()))?,
        };
        Ok(encoding.get_ids().to_vec())
    }

    fn session(&self) -> Result<&Mutex<Session>, EmbedError> {
        if let Some(session) = self.session.get() {
            return Ok(session);
        }
        let session = new_session(&self.environment, &self.model.path, every_cpu())?;
        Ok(self.session.get_or_init(|| Mutex::new(session)))
    }
}

impl Reranker for OnnxReranker {
    fn id(&self) -> &str {
        &self.model.id
    }

    fn weight(&self) -> f32 {
        self.model.weight
    }

    fn score(&self, query: &str, passages: &[&str]) -> Result<Vec<f32>, EmbedError> {
        let session = self.session()?;
        let head = &self.model.head;
        passages
            .iter()
            .map(|passage| {
                let ids = self.encode(query, passage)?;
                // One pair a run, as measured: dynamic int8 quantises activations per run, so a
                // pair's score does not depend on its neighbours, and a padded batch of ten
                // was no faster on two cores (research/training/README.md).
                let pooled = mean_pooled(session, &[ids.as_slice()], ids.len(), self.needs_token_type_ids)?;
                let vector = pooled.first().ok_or_else(|| EmbedError::Inference("no output for the pair".into()))?;
                if vector.dim() != head.w.len() {
                    return Err(EmbedError::Model {
                        path: self.model.path.display().to_string(),
                        message: format!(
                            "the reranker's head has {} weights for a {}-dimensional output",
                            head.w.len(),
                            vector.dim()
                        ),
                    });
                }
                Ok(super::dot(vector.as_slice(), &head.w) + head.b)
            })
            .collect()
    }
}
