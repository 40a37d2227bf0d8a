//! The static tier: a vector per token of the document model's vocabulary, trained so that the
//! sum over a chunk's tokens points where the model's own vector of the chunk does
//! (research/training/fit_static_tier.py, training packages only). A chunk's static vector costs
//! a tokenisation and a sum — ~15,000 chunks a second on one core against ~25 for the model — so
//! a fresh tree has a vector for every chunk in seconds, searched with the model's own query
//! vectors, while the model works through the chunks (BENCHMARKS.md, "A static tier trained to
//! the code model"). The table keeps the tokens the fit trained, at 4 bits (1.8 MB: small enough
//! for every package, the VS Code extension's included; "The static table at 4 bits").

use std::path::{Path, PathBuf};

use super::Vector;

/// File name of the table inside the document model's directory.
pub const STATIC_TABLE_FILE: &str = "static-table.bin";

const MAGIC: &[u8; 8] = b"RGSTAT\0\x03";

/// The rows of the tokens the table keeps, dequantised once when loaded (~9,000 tokens × 384
/// f32, ~14 MB for MiniLM), and where each token's row is.
pub struct StaticTable {
    dim: usize,
    /// Per token id of the vocabulary: its row, or [`NO_ROW`] for a token the table leaves out.
    slot: Vec<u32>,
    rows: Vec<f32>,
}

const NO_ROW: u32 = u32::MAX;

impl std::fmt::Debug for StaticTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StaticTable({} of {} tokens × {})", self.rows.len() / self.dim.max(1), self.slot.len(), self.dim)
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
    /// Reads the table at `path`: magic; dimension, vocabulary and the number of rows kept (u32
    /// each); the kept token ids (u32, ascending); a f32 scale per row; the rows as 4-bit codes,
    /// two a byte, low nibble first, each stored plus 8 (research/training/fit_static_tier.py,
    /// `export`). It must match the model's `dim` and `vocab` exactly.
    pub fn load(path: &Path, dim: usize, vocab: usize) -> Result<StaticTable, StaticTableError> {
        let error = |message: String| StaticTableError { path: path.to_path_buf(), message };
        let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
        Self::decode(&bytes, dim, vocab).map_err(error)
    }

    fn decode(bytes: &[u8], dim: usize, vocab: usize) -> Result<StaticTable, String> {
        if bytes.len() < 20 || &bytes[..6] != b"RGSTAT" {
            return Err("not a static table".into());
        }
        if bytes[..8] != MAGIC[..] {
            return Err("a table of another format version; run `bash scripts/bootstrap.sh` from a raggrep checkout to install this build's".into());
        }
        let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
        if (word(8), word(12)) != (dim, vocab) || !dim.is_multiple_of(2) {
            return Err(format!("a {}×{} table; the model has {vocab} tokens of {dim} dimensions", word(12), word(8)));
        }
        let kept = word(16);
        let expected = kept.checked_mul(8 + dim / 2).and_then(|b| b.checked_add(20));
        if kept > vocab || expected != Some(bytes.len()) {
            return Err(format!("{} bytes for {kept} rows of {dim}", bytes.len()));
        }
        let (ids, rest) = bytes[20..].split_at(kept * 4);
        let (scales, codes) = rest.split_at(kept * 4);
        let mut slot = vec![NO_ROW; vocab];
        let mut rows = Vec::with_capacity(kept * dim);
        let mut previous = None;
        for (row, ((id, scale), packed)) in
            ids.chunks_exact(4).zip(scales.chunks_exact(4)).zip(codes.chunks_exact(dim / 2)).enumerate()
        {
            let id = u32::from_le_bytes([id[0], id[1], id[2], id[3]]);
            if id as usize >= vocab || previous.is_some_and(|p| p >= id) {
                return Err(format!("token ids not ascending below {vocab} (row {row}: {id})"));
            }
            previous = Some(id);
            let scale = f32::from_le_bytes([scale[0], scale[1], scale[2], scale[3]]);
            if !scale.is_finite() {
                return Err("a row's scale is not a number".into());
            }
            slot[id as usize] = row as u32;
            for byte in packed {
                rows.push((f32::from(byte & 0x0f) - 8.0) * scale);
                rows.push((f32::from(byte >> 4) - 8.0) * scale);
            }
        }
        Ok(StaticTable { dim, slot, rows })
    }

    /// The static vector of a text given its token ids (special tokens left out): the sum of
    /// their rows, normalised. Ids the table leaves out, or outside it, add nothing; no known
    /// token gives zeros.
    pub fn embed(&self, ids: &[u32]) -> Vector {
        let mut sum = vec![0.0f32; self.dim];
        for &id in ids {
            let Some(&slot) = self.slot.get(id as usize) else { continue };
            if slot == NO_ROW {
                continue;
            }
            let at = slot as usize * self.dim;
            sum.iter_mut().zip(&self.rows[at..at + self.dim]).for_each(|(s, r)| *s += r);
        }
        Vector::normalized(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 3 table of `vocab` tokens keeping `rows` (id, values), each value a multiple of
    /// its row's scale so the codes are exact.
    fn encode(dim: usize, vocab: usize, rows: &[(u32, Vec<f32>)]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for n in [dim, vocab, rows.len()] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        let scales: Vec<f32> = rows.iter().map(|(_, r)| r.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 7.0).collect();
        for (id, _) in rows {
            out.extend_from_slice(&id.to_le_bytes());
        }
        for s in &scales {
            out.extend_from_slice(&s.to_le_bytes());
        }
        for ((_, row), s) in rows.iter().zip(&scales) {
            for pair in row.chunks(2) {
                let code = |v: f32| ((v / s).round() as i32 + 8) as u8;
                out.push(code(pair[0]) | (code(pair[1]) << 4));
            }
        }
        out
    }

    #[test]
    fn a_text_is_the_normalised_sum_of_its_tokens_rows() {
        let bytes = encode(2, 4, &[(0, vec![7.0, 0.0]), (1, vec![0.0, 14.0]), (3, vec![-7.0, 7.0])]);
        let table = StaticTable::decode(&bytes, 2, 4).unwrap();
        let v = table.embed(&[0, 1]);
        assert!((v.as_slice()[0] - 1.0 / 5f32.sqrt()).abs() < 0.01, "{v:?}");
        assert!((v.as_slice()[1] - 2.0 / 5f32.sqrt()).abs() < 0.01, "{v:?}");
        let w = table.embed(&[3]);
        assert!((w.as_slice()[0] + 0.5f32.sqrt()).abs() < 0.01 && (w.as_slice()[1] - 0.5f32.sqrt()).abs() < 0.01);
        // A token the table leaves out (2) and an id past the vocabulary add nothing.
        assert_eq!(table.embed(&[0, 2, 99]).as_slice(), table.embed(&[0]).as_slice());
    }

    #[test]
    fn a_table_of_another_shape_or_version_or_a_cut_file_is_refused() {
        let bytes = encode(2, 3, &[(0, vec![7.0, 0.0]), (2, vec![0.0, 7.0])]);
        assert!(StaticTable::decode(&bytes, 2, 3).is_ok());
        assert!(StaticTable::decode(&bytes, 4, 3).unwrap_err().contains("3×2 table"));
        assert!(StaticTable::decode(&bytes[..bytes.len() - 1], 2, 3).unwrap_err().contains("bytes"));
        let mut older = bytes.clone();
        older[7] = 2;
        assert!(StaticTable::decode(&older, 2, 3).unwrap_err().contains("bootstrap"));
        assert!(StaticTable::decode(b"RGTIER\0\x01................", 2, 3).unwrap_err().contains("not a static table"));
        let unordered = encode(2, 3, &[(2, vec![7.0, 0.0]), (0, vec![0.0, 7.0])]);
        assert!(StaticTable::decode(&unordered, 2, 3).unwrap_err().contains("ascending"));
        let outside = encode(2, 3, &[(5, vec![7.0, 0.0])]);
        assert!(StaticTable::decode(&outside, 2, 3).unwrap_err().contains("ascending"));
    }
}
