//! A static first tier, measured and not shipped (BENCHMARKS.md, "A static first tier"): a
//! vector for every token of the vocabulary, distilled once from the document model (each token
//! alone through the model, model2vec-style), so a chunk gets a vector in microseconds as the
//! weighted mean of its tokens' vectors. The rows live in the model's own output space, so the
//! model's query vectors search them directly. `cargo bench --bench retrieval -- --static-tier`
//! indexes with it.

use std::path::{Path, PathBuf};

use raggrep::embed::{EmbedError, Embedder, ModelInfo, OnnxEmbedder, Vector};

const MAGIC: &[u8; 8] = b"RGSTAT\0\x01";
/// Tokens per inference call while distilling.
const DISTILL_BATCH: usize = 256;

/// One unit vector per token id of the document model's vocabulary.
pub struct StaticTable {
    dim: usize,
    rows: Vec<f32>,
}

impl StaticTable {
    /// Runs every token of the vocabulary through the document model (`progress(done, total)`).
    pub fn distill(model: &OnnxEmbedder, progress: &mut dyn FnMut(usize, usize)) -> Result<StaticTable, EmbedError> {
        let (vocab, dim) = (model.vocab_size(), model.info().dim);
        let mut rows = Vec::with_capacity(vocab * dim);
        let ids: Vec<u32> = (0..vocab as u32).collect();
        for batch in ids.chunks(DISTILL_BATCH) {
            for vector in model.token_vectors(batch)? {
                rows.extend_from_slice(vector.as_slice());
            }
            progress(rows.len() / dim, vocab);
        }
        Ok(StaticTable { dim, rows })
    }

    /// Where the table of `model` is kept.
    pub fn path(cache_dir: &Path, model: &ModelInfo) -> PathBuf {
        cache_dir.join("static").join(format!("{}.table", model.id))
    }

    /// The table from `path`, or distilled and written there (atomically) when it is missing
    /// or damaged.
    pub fn load_or_distill(
        path: &Path,
        model: &OnnxEmbedder,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<StaticTable, EmbedError> {
        let (vocab, dim) = (model.vocab_size(), model.info().dim);
        match std::fs::read(path) {
            Ok(bytes) => match Self::decode(&bytes, vocab, dim) {
                Ok(table) => return Ok(table),
                Err(why) => tracing::warn!("{}: {why}; distilling the static table again", path.display()),
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => tracing::warn!("{}: {err}; distilling the static table again", path.display()),
        }
        let table = Self::distill(model, progress)?;
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| raggrep::index::write_atomic(path, &table.encode()));
        if let Err(err) = written {
            // A cache only: the table in memory still serves this process.
            tracing::warn!("cannot keep the static table at {}: {err}", path.display());
        }
        Ok(table)
    }

    fn encode(&self) -> Vec<u8> {
        let body: &[u8] = bytemuck::cast_slice(&self.rows);
        let mut out = Vec::with_capacity(body.len() + 32);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        out.extend_from_slice(&((self.rows.len() / self.dim.max(1)) as u32).to_le_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&out).to_le_bytes());
        out
    }

    fn decode(bytes: &[u8], vocab: usize, dim: usize) -> Result<StaticTable, String> {
        let body_len = vocab * dim * 4;
        if bytes.len() != 16 + body_len + 8 || &bytes[..8] != MAGIC {
            return Err("not a static table of this model".into());
        }
        let (payload, sum) = bytes.split_at(bytes.len() - 8);
        if xxhash_rust::xxh3::xxh3_64(payload).to_le_bytes() != sum {
            return Err("checksum mismatch".into());
        }
        let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        if word(8) != dim || word(12) != vocab {
            return Err(format!("table is {}×{}, the model {vocab}×{dim}", word(12), word(8)));
        }
        let rows = payload[16..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        Ok(StaticTable { dim, rows })
    }

    /// The mean of the tokens' rows, normalised (ids outside the table are ignored).
    pub fn embed(&self, ids: &[u32]) -> Vector {
        let mut sum = vec![0.0f32; self.dim];
        for &id in ids {
            // BERT's word pieces are numbered roughly by frequency, so the log of the id is a
            // Zipf weight (model2vec's idea): rare tokens count more. On TUNE it beat the plain
            // mean, and the mean over distinct tokens, on chunk R@5 and MRR@10.
            let weight = (id as f32 + 1.0).ln();
            if let Some(row) = self.rows.get(id as usize * self.dim..(id as usize + 1) * self.dim) {
                sum.iter_mut().zip(row).for_each(|(s, r)| *s += weight * r);
            }
        }
        Vector::normalized(sum)
    }
}

/// Which table a [`StaticEmbedder`] sums: the distilled one above, or a trained one as the engine
/// ships and reads it (`--static-table PATH`: fit_static_tier.sh's export).
pub enum Table {
    Distilled(StaticTable),
    Shipped(raggrep::embed::StaticTable),
}

impl Table {
    fn embed(&self, ids: &[u32]) -> Vector {
        match self {
            Table::Distilled(table) => table.embed(ids),
            Table::Shipped(table) => table.embed(ids),
        }
    }
}

/// Documents from the static table, queries from the model: the first tier's embedder.
pub struct StaticEmbedder<'a> {
    pub model: &'a OnnxEmbedder,
    pub table: &'a Table,
}

impl Embedder for StaticEmbedder<'_> {
    fn info(&self) -> &ModelInfo {
        self.model.info()
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vector>, EmbedError> {
        Ok(self.model.content_ids_of(texts)?.iter().map(|ids| self.table.embed(ids)).collect())
    }

    fn embed_query(&self, text: &str) -> Result<Vector, EmbedError> {
        self.model.embed_query(text)
    }
}
