//! The static tier: a vector per token of the document model's vocabulary, trained so that the
//! sum over a chunk's tokens points where the model's own vector of the chunk does
//! (research/training/fit_static_tier.py, training packages only). A chunk's static vector costs
//! a tokenisation and a sum — ~15,000 chunks a second on one core against ~25 for the model — so
//! a fresh tree has a vector for every chunk in seconds, searched with the model's own query
//! vectors, while the model works through the chunks (BENCHMARKS.md, "A static tier trained to
//! the code model").

use std::path::{Path, PathBuf};

use super::Vector;

/// File name of the table inside the document model's directory.
pub const STATIC_TABLE_FILE: &str = "static-table.bin";

const MAGIC: &[u8; 8] = b"RGSTAT\0\x02";

/// Token rows, dequantised once when loaded (vocabulary × dimension f32, ~47 MB for MiniLM).
pub struct StaticTable {
    dim: usize,
    rows: Vec<f32>,
}

impl std::fmt::Debug for StaticTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StaticTable({} tokens × {})", self.rows.len() / self.dim.max(1), self.dim)
    }
}

/// Why a table cannot be used (the model still works; the tier is skipped).
#[derive(Debug, thiserror::Error)]
#[error("static tier {path}: {message}")]
pub struct StaticTableError {
    path: PathBuf,
    message: String,
}

impl StaticTable {
    /// Reads the table at `path`: magic, dimension and vocabulary (u32 each), a f32 scale per row,
    /// then the rows as int8 codes. It must match the model's `dim` and `vocab` exactly.
    pub fn load(path: &Path, dim: usize, vocab: usize) -> Result<StaticTable, StaticTableError> {
        let error = |message: String| StaticTableError { path: path.to_path_buf(), message };
        let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
        Self::decode(&bytes, dim, vocab).map_err(error)
    }

    fn decode(bytes: &[u8], dim: usize, vocab: usize) -> Result<StaticTable, String> {
        let expected = 16 + vocab * 4 + vocab * dim;
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            return Err("not a static table".into());
        }
        let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        if (word(8), word(12)) != (dim, vocab) {
            return Err(format!("a {}×{} table; the model has {vocab} tokens of {dim} dimensions", word(12), word(8)));
        }
        if bytes.len() != expected {
            return Err(format!("{} bytes where {expected} were expected", bytes.len()));
        }
        let (scales, codes) = bytes[16..].split_at(vocab * 4);
        let mut rows = Vec::with_capacity(vocab * dim);
        for (scale, row) in scales.chunks_exact(4).zip(codes.chunks_exact(dim)) {
            let scale = f32::from_le_bytes([scale[0], scale[1], scale[2], scale[3]]);
            if !scale.is_finite() {
                return Err("a row's scale is not a number".into());
            }
            rows.extend(row.iter().map(|&c| f32::from(c as i8) * scale));
        }
        Ok(StaticTable { dim, rows })
    }

    /// The static vector of a text given its token ids (special tokens left out): the sum of
    /// their rows, normalised. Ids outside the table are ignored; no known token gives zeros.
    pub fn embed(&self, ids: &[u32]) -> Vector {
        let mut sum = vec![0.0f32; self.dim];
        for &id in ids {
            if let Some(row) = self.rows.get(id as usize * self.dim..(id as usize + 1) * self.dim) {
                sum.iter_mut().zip(row).for_each(|(s, r)| *s += r);
            }
        }
        Vector::normalized(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(dim: usize, rows: &[Vec<f32>]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&(dim as u32).to_le_bytes());
        out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        let scales: Vec<f32> = rows.iter().map(|r| r.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 127.0).collect();
        for s in &scales {
            out.extend_from_slice(&s.to_le_bytes());
        }
        for (row, s) in rows.iter().zip(&scales) {
            out.extend(row.iter().map(|v| ((v / s).round() as i8) as u8));
        }
        out
    }

    #[test]
    fn a_text_is_the_normalised_sum_of_its_tokens_rows() {
        let table = StaticTable::decode(&encode(2, &[vec![1.0, 0.0], vec![0.0, 2.0], vec![-1.0, 1.0]]), 2, 3).unwrap();
        let v = table.embed(&[0, 1]);
        assert!((v.as_slice()[0] - 1.0 / 5f32.sqrt()).abs() < 0.01, "{v:?}");
        assert!((v.as_slice()[1] - 2.0 / 5f32.sqrt()).abs() < 0.01, "{v:?}");
        // An id past the vocabulary is ignored, not a panic.
        assert_eq!(table.embed(&[0, 99]).as_slice(), table.embed(&[0]).as_slice());
    }

    #[test]
    fn a_table_of_another_shape_or_a_cut_file_is_refused() {
        let bytes = encode(2, &[vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert!(StaticTable::decode(&bytes, 2, 2).is_ok());
        assert!(StaticTable::decode(&bytes, 3, 2).unwrap_err().contains("2×2 table"));
        assert!(StaticTable::decode(&bytes[..bytes.len() - 1], 2, 2).unwrap_err().contains("bytes"));
        assert!(StaticTable::decode(b"RGSTAT\0\x01........", 2, 2).unwrap_err().contains("not a static table"));
    }
}
