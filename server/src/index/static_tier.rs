//! The static tier on disk: a vector for every chunk of a fresh index, from the model's static
//! table ([`crate::embed::StaticTable`]), written once right after the words are published so the
//! first answers of a cold tree rank with vectors while the model works (BENCHMARKS.md, "A static
//! tier trained to the code model"). One file, `static-tier.bin`, beside the manifests: magic,
//! dimension, chunk count, the fingerprint of the model and chunk list it was made for, the xxh3 of the
//! vectors, then the vectors as f32 in chunk order. A reader uses it only while the model's
//! vectors of the code are missing and only when its fingerprint is the current manifest's;
//! the writer deletes it once every chunk has the model's vector.

use std::path::Path;

use memmap2::Mmap;

use super::IndexError;
use super::manifest::Manifest;

pub const STATIC_TIER_FILE: &str = "static-tier.bin";

const MAGIC: &[u8; 8] = b"RGTIER\0\x01";
const HEADER: usize = 8 + 4 + 4 + 8 + 8;

/// The model and chunk list a file of vectors belongs to: the model's id (another model's
/// queries must never search this one's table), then each chunk's content hash, in order, with
/// the file it is in (a rename moves a chunk, and its embedding text names the path).
pub fn fingerprint<'a>(model_id: &str, chunks: impl Iterator<Item = (u128, &'a str)>) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(model_id.as_bytes());
    hasher.update(&[0]);
    for (hash, path) in chunks {
        hasher.update(&hash.to_le_bytes());
        hasher.update(path.as_bytes());
        hasher.update(&[0]);
    }
    hasher.digest()
}

/// The fingerprint of a manifest being written.
pub fn fingerprint_of(manifest: &Manifest) -> u64 {
    fingerprint(
        &manifest.model_id,
        manifest.chunks.iter().map(|c| {
            let path = manifest.files.get(c.file as usize).map_or("", |f| f.path.as_str());
            (super::manifest::join_hash(c.hash), path)
        }),
    )
}

/// Writes the vectors (`dim` each, in chunk order) for the chunk list with `print` (atomic).
pub fn write(dir: &Path, dim: usize, print: u64, vectors: &[f32]) -> Result<(), IndexError> {
    let count = vectors.len() / dim.max(1);
    let body: &[u8] = bytemuck::cast_slice(vectors);
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    out.extend_from_slice(&(count as u32).to_le_bytes());
    out.extend_from_slice(&print.to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(body).to_le_bytes());
    out.extend_from_slice(body);
    let path = dir.join(STATIC_TIER_FILE);
    super::write_atomic(&path, &out).map_err(|e| IndexError::io(&path, e))
}

/// Deletes the file (the model's vectors are all there); a missing one is fine.
pub fn remove(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(STATIC_TIER_FILE));
}

/// A static tier opened for reading: the vectors of every chunk of one manifest.
pub struct StaticTier {
    map: Mmap,
    dim: usize,
    count: usize,
}

impl StaticTier {
    /// The tier in `dir` if it was made for this chunk list (`dim`, `count`, `print`) and its
    /// bytes are whole; `None` otherwise (a stale or damaged file is only logged: the words
    /// still answer, and the model's vectors replace it).
    pub fn open(dir: &Path, dim: usize, count: usize, print: u64) -> Option<StaticTier> {
        let path = dir.join(STATIC_TIER_FILE);
        let file = std::fs::File::open(&path).ok()?;
        // SAFETY: the file is only ever replaced by an atomic rename, never written in place, so
        // the mapped bytes cannot change while the map lives.
        #[allow(unsafe_code)]
        let map = match unsafe { Mmap::map(&file) } {
            Ok(map) => map,
            Err(err) => {
                tracing::warn!("{}: {err}; answering without the static tier", path.display());
                return None;
            }
        };
        let word = |at: usize| u32::from_le_bytes([map[at], map[at + 1], map[at + 2], map[at + 3]]) as usize;
        let long = |at: usize| u64::from_le_bytes(map[at..at + 8].try_into().unwrap_or([0; 8]));
        let fits = map.len() >= HEADER
            && &map[..8] == MAGIC
            && word(8) == dim
            && word(12) == count
            && map.len() == HEADER + count * dim * 4;
        if !fits || long(16) != print {
            // Made for another chunk list (an older generation's): not an error.
            return None;
        }
        if xxhash_rust::xxh3::xxh3_64(&map[HEADER..]) != long(24) {
            tracing::warn!("{}: checksum mismatch; answering without the static tier", path.display());
            return None;
        }
        Some(StaticTier { map, dim, count })
    }

    fn vectors(&self) -> &[f32] {
        bytemuck::cast_slice(&self.map[HEADER..])
    }

    /// The static vector of chunk `index`.
    pub fn get(&self, index: usize) -> Option<&[f32]> {
        (index < self.count).then(|| &self.vectors()[index * self.dim..(index + 1) * self.dim])
    }

    pub fn len(&self) -> usize {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_names_the_model_the_chunks_and_their_files() {
        let chunks = [(1u128, "a.rs"), (2, "a.rs"), (3, "b.rs")];
        let print = |model: &str, chunks: &[(u128, &'static str)]| fingerprint(model, chunks.iter().copied());
        let base = print("m1", &chunks);
        assert_eq!(base, print("m1", &chunks));
        assert_ne!(base, print("m2", &chunks), "another model's table");
        assert_ne!(base, print("m1", &[(1, "a.rs"), (2, "b.rs"), (3, "b.rs")]), "a chunk moved to another file");
        assert_ne!(base, print("m1", &chunks[..2]), "a chunk fewer");
    }

    #[test]
    fn a_tier_is_read_back_only_for_its_own_fingerprint_and_size() {
        let dir = tempfile::tempdir().unwrap();
        let vectors: Vec<f32> = (0..6).map(|i| i as f32).collect();
        write(dir.path(), 3, 42, &vectors).unwrap();
        let tier = StaticTier::open(dir.path(), 3, 2, 42).unwrap();
        assert_eq!((tier.len(), tier.get(1)), (2, Some(&[3.0, 4.0, 5.0][..])));
        assert!(tier.get(2).is_none());
        assert!(StaticTier::open(dir.path(), 3, 2, 43).is_none());
        assert!(StaticTier::open(dir.path(), 3, 3, 42).is_none());
        assert!(StaticTier::open(dir.path(), 2, 3, 42).is_none());
        remove(dir.path());
        assert!(StaticTier::open(dir.path(), 3, 2, 42).is_none());
    }
}
