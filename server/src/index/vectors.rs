//! Vector storage: one contiguous file of fixed-size slots, memory-mapped, in one of two
//! encodings named by the file's extension ([`Encoding`]): `.f32` (dim little-endian f32s, the
//! default) or `.i8` (a little-endian f32 scale, then dim signed bytes: 388 bytes a slot at
//! 384 dimensions instead of 1,536).
//!
//! The file is append-only between compactions: new embeddings go after the last valid slot and
//! the manifest records how many slots are valid, so a reader mapping the old length is never
//! disturbed and a crash mid-append leaves only ignored bytes past the recorded length.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapOptions};

use super::IndexError;
use crate::embed::Vector;

#[cfg(not(target_endian = "little"))]
compile_error!("raggrep's vector files are little-endian f32; big-endian targets are not supported");

/// How a vector file stores each vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// The model's floats as they are.
    F32,
    /// Symmetric per-vector quantisation: `x ≈ scale · code`, `scale = max |x| / 127`. About a
    /// quarter of the bytes (BENCHMARKS.md has the recall against f32).
    Int8,
}

impl Encoding {
    pub fn parse(name: &str) -> Option<Encoding> {
        match name {
            "f32" => Some(Encoding::F32),
            "int8" | "i8" => Some(Encoding::Int8),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Encoding::F32 => "f32",
            Encoding::Int8 => "int8",
        }
    }

    /// The file name extension that records the encoding in the manifest's vector file name.
    pub fn extension(self) -> &'static str {
        match self {
            Encoding::F32 => "f32",
            Encoding::Int8 => "i8",
        }
    }

    /// The encoding of a vector file, from its name (`None`: not a vector file name, i.e. not
    /// `vectors-…` with a known extension).
    pub fn of_file(name: &str) -> Option<Encoding> {
        if !name.starts_with("vectors-") {
            return None;
        }
        match name.rsplit_once('.')?.1 {
            "f32" => Some(Encoding::F32),
            "i8" => Some(Encoding::Int8),
            _ => None,
        }
    }

    /// [`Encoding::of_file`] of a path's file name (ours, so ASCII even where the directory's
    /// name is not UTF-8); f32 for any other name.
    fn of_path(path: &Path) -> Encoding {
        path.file_name().and_then(|n| n.to_str()).and_then(Encoding::of_file).unwrap_or(Encoding::F32)
    }

    /// The name of generation `generation`'s vector file in this encoding.
    pub fn file_name(self, generation: u64) -> String {
        format!("vectors-{generation:08}.{}", self.extension())
    }

    /// Bytes one vector of `dim` dimensions takes.
    pub fn slot_bytes(self, dim: usize) -> usize {
        match self {
            Encoding::F32 => dim * 4,
            Encoding::Int8 => 4 + dim,
        }
    }

    fn encode(self, vector: &[f32], out: &mut Vec<u8>) {
        match self {
            Encoding::F32 => out.extend_from_slice(bytemuck::cast_slice(vector)),
            Encoding::Int8 => {
                let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
                let scale = if max > 0.0 && max.is_finite() { max / 127.0 } else { 0.0 };
                out.extend_from_slice(&scale.to_le_bytes());
                let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
                out.extend(vector.iter().map(|x| (x * inverse).round().clamp(-127.0, 127.0) as i8 as u8));
            }
        }
    }
}

/// A read-only view of the first `slots` vectors of a vector file.
pub struct VectorFile {
    map: Option<Mmap>,
    dim: usize,
    slots: usize,
    encoding: Encoding,
}

impl VectorFile {
    /// Opens the first `slots` vectors of `path`, in the encoding its name says (a name
    /// without a known extension is read as f32).
    pub fn open(path: &Path, dim: usize, slots: usize) -> Result<VectorFile, IndexError> {
        let encoding = Encoding::of_path(path);
        if slots == 0 {
            return Ok(VectorFile { map: None, dim, slots, encoding });
        }
        let file = File::open(path).map_err(|e| IndexError::io(path, e))?;
        let needed = slots * encoding.slot_bytes(dim);
        let len = file.metadata().map_err(|e| IndexError::io(path, e))?.len() as usize;
        if len < needed {
            return Err(IndexError::Corrupt(format!(
                "{}: {len} bytes, the manifest needs {needed} ({slots} vectors × {dim})",
                path.display()
            )));
        }
        // SAFETY: the mapped prefix is never written again: appends go past it and compaction
        // writes a new file.
        #[allow(unsafe_code)]
        let map = unsafe { MmapOptions::new().len(needed).map(&file) }.map_err(|e| IndexError::io(path, e))?;
        Ok(VectorFile { map: Some(map), dim, slots, encoding })
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn len(&self) -> usize {
        self.slots
    }

    pub fn is_empty(&self) -> bool {
        self.slots == 0
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    fn slot_bytes(&self, slot: usize) -> &[u8] {
        let size = self.encoding.slot_bytes(self.dim);
        &self.bytes()[slot * size..(slot + 1) * size]
    }

    /// All vectors as one slice of `slots × dim` floats: borrowed from the mapping for f32,
    /// decoded (a copy) for int8. For graph builds; searches use [`VectorFile::dot`].
    pub fn decoded(&self) -> Cow<'_, [f32]> {
        match self.encoding {
            // Page-aligned mapping of whole f32s: the cast cannot fail.
            Encoding::F32 => Cow::Borrowed(bytemuck::cast_slice(self.bytes())),
            Encoding::Int8 => {
                let mut all = Vec::with_capacity(self.slots * self.dim);
                for slot in 0..self.slots {
                    let (scale, codes) = self.int8(slot);
                    all.extend(codes.iter().map(|&c| f32::from(c as i8) * scale));
                }
                Cow::Owned(all)
            }
        }
    }

    fn int8(&self, slot: usize) -> (f32, &[u8]) {
        let bytes = self.slot_bytes(slot);
        let (scale, codes) = bytes.split_at(4);
        (f32::from_le_bytes([scale[0], scale[1], scale[2], scale[3]]), codes)
    }

    /// One vector, as floats.
    pub fn get(&self, slot: usize) -> Option<Cow<'_, [f32]>> {
        if slot >= self.slots {
            return None;
        }
        Some(match self.encoding {
            Encoding::F32 => Cow::Borrowed(bytemuck::cast_slice(self.slot_bytes(slot))),
            Encoding::Int8 => {
                let (scale, codes) = self.int8(slot);
                Cow::Owned(codes.iter().map(|&c| f32::from(c as i8) * scale).collect())
            }
        })
    }

    /// The dot product of vector `slot` with `query` (`dim` floats), without decoding it.
    pub fn dot(&self, slot: usize, query: &[f32]) -> f32 {
        match self.encoding {
            Encoding::F32 => crate::embed::dot(query, bytemuck::cast_slice(self.slot_bytes(slot))),
            Encoding::Int8 => {
                let (scale, codes) = self.int8(slot);
                dot_int8(codes, query) * scale
            }
        }
    }

    pub fn size_on_disk(&self) -> u64 {
        (self.slots * self.encoding.slot_bytes(self.dim)) as u64
    }

    /// Number of checksum blocks the valid slots span.
    pub fn blocks(&self) -> usize {
        self.slots.div_ceil(BLOCK_SLOTS)
    }

    /// xxh3-64 of one block (the last one may be partial).
    pub fn block_checksum(&self, block: usize) -> u64 {
        let size = self.encoding.slot_bytes(self.dim);
        let start = (block * BLOCK_SLOTS).min(self.slots) * size;
        let end = ((block + 1) * BLOCK_SLOTS).min(self.slots) * size;
        xxhash_rust::xxh3::xxh3_64(&self.bytes()[start..end])
    }

    /// The blocks whose content does not match `expected` (one checksum per block; a missing
    /// checksum counts as a mismatch).
    pub fn damaged_blocks(&self, expected: &[u64]) -> Vec<usize> {
        (0..self.blocks()).filter(|&b| expected.get(b) != Some(&self.block_checksum(b))).collect()
    }
}

/// Σ code·q over signed bytes: decoded a piece at a time into a stack buffer, so the products
/// run in [`crate::embed::dot`] (its AVX2/FMA path where the CPU has one).
fn dot_int8(codes: &[u8], query: &[f32]) -> f32 {
    const PIECE: usize = 64;
    let mut decoded = [0.0f32; PIECE];
    codes
        .chunks(PIECE)
        .zip(query.chunks(PIECE))
        .map(|(codes, query)| {
            for (d, &c) in decoded.iter_mut().zip(codes) {
                *d = f32::from(c as i8);
            }
            crate::embed::dot(&decoded[..codes.len()], query)
        })
        .sum()
}

/// Vectors per checksum block: 1.5 MB at 384 dimensions in f32, so checking one costs ~0.1 ms and a
/// damaged block costs at most this many re-embeddings.
pub const BLOCK_SLOTS: usize = 1024;

/// Appends vectors to a vector file.
pub struct VectorAppender {
    file: File,
    path: PathBuf,
    dim: usize,
    slots: usize,
    encoding: Encoding,
}

impl VectorAppender {
    /// Opens `path` for appending after `slots` valid vectors, dropping any bytes past them
    /// (left by a crash). The encoding is the one the file name says, as for [`VectorFile`].
    pub fn open(path: &Path, dim: usize, slots: usize) -> Result<VectorAppender, IndexError> {
        let encoding = Encoding::of_path(path);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| IndexError::io(path, e))?;
        let valid = (slots * encoding.slot_bytes(dim)) as u64;
        let len = file.metadata().map_err(|e| IndexError::io(path, e))?.len();
        if len < valid {
            return Err(IndexError::Corrupt(format!("{}: shorter than the manifest says", path.display())));
        }
        file.set_len(valid).map_err(|e| IndexError::io(path, e))?;
        let mut appender = VectorAppender { file, path: path.to_path_buf(), dim, slots, encoding };
        use std::io::Seek;
        appender.file.seek(std::io::SeekFrom::Start(valid)).map_err(|e| IndexError::io(path, e))?;
        Ok(appender)
    }

    /// Appends vectors; returns the slot of the first one.
    pub fn append(&mut self, vectors: &[Vector]) -> Result<usize, IndexError> {
        let first = self.slots;
        let mut bytes = Vec::with_capacity(vectors.len() * self.encoding.slot_bytes(self.dim));
        for vector in vectors {
            if vector.dim() != self.dim {
                return Err(IndexError::Corrupt(format!(
                    "vector of dimension {} in an index of dimension {}",
                    vector.dim(),
                    self.dim
                )));
            }
            self.encoding.encode(vector.as_slice(), &mut bytes);
        }
        self.file.write_all(&bytes).map_err(|e| IndexError::io(&self.path, e))?;
        self.slots += vectors.len();
        Ok(first)
    }

    /// Makes appended vectors durable (before a manifest that counts them is published).
    pub fn sync(&mut self) -> Result<(), IndexError> {
        self.file.sync_data().map_err(|e| IndexError::io(&self.path, e))
    }

    pub fn slots(&self) -> usize {
        self.slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32, dim: usize) -> Vector {
        // A deterministic spread of values, positive and negative.
        let raw: Vec<f32> = (0..dim).map(|i| (((i as u32 + 1) * (seed + 7)) % 23) as f32 - 11.0).collect();
        Vector::normalized(raw)
    }

    #[test]
    fn the_file_name_records_the_encoding() {
        assert_eq!(Encoding::F32.file_name(3), "vectors-00000003.f32");
        assert_eq!(Encoding::Int8.file_name(3), "vectors-00000003.i8");
        assert_eq!(Encoding::of_file("vectors-00000003.i8"), Some(Encoding::Int8));
        assert_eq!(Encoding::of_file("vectors-00000003.f32"), Some(Encoding::F32));
        assert_eq!(Encoding::of_file("vectors-00000003.tmp"), None);
        assert_eq!(Encoding::of_file("rows.f32"), None);
        assert_eq!(Encoding::parse("int8"), Some(Encoding::Int8));
        assert_eq!(Encoding::parse("f16"), None);
    }

    #[test]
    fn int8_vectors_decode_within_half_a_step_and_score_like_their_decoding() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 40;
        let path = dir.path().join(Encoding::Int8.file_name(0));
        let vectors: Vec<Vector> = (0..5).map(|s| unit(s, dim)).collect();
        let zero = Vector::normalized(vec![0.0; dim]);
        let mut appender = VectorAppender::open(&path, dim, 0).unwrap();
        assert_eq!(appender.append(&vectors).unwrap(), 0);
        assert_eq!(appender.append(std::slice::from_ref(&zero)).unwrap(), 5);
        appender.sync().unwrap();
        assert_eq!(fs_len(&path), 6 * (4 + dim) as u64);

        let file = VectorFile::open(&path, dim, 6).unwrap();
        assert_eq!((file.encoding(), file.size_on_disk()), (Encoding::Int8, 6 * (4 + dim) as u64));
        let query = unit(99, dim);
        for (slot, original) in vectors.iter().enumerate() {
            let decoded = file.get(slot).unwrap();
            let step = original.as_slice().iter().fold(0.0f32, |m, x| m.max(x.abs())) / 127.0;
            for (a, b) in original.as_slice().iter().zip(decoded.iter()) {
                assert!((a - b).abs() <= step / 2.0 + 1e-6, "slot {slot}: {a} vs {b}");
            }
            let exact = crate::embed::dot(query.as_slice(), &decoded);
            assert!((file.dot(slot, query.as_slice()) - exact).abs() < 1e-5);
            assert!((exact - original.dot(&query)).abs() < 0.01, "cosine moved too far");
        }
        assert!(file.get(5).unwrap().iter().all(|&x| x == 0.0), "a zero vector stays zero, not NaN");
        assert_eq!(file.decoded().len(), 6 * dim);
        assert!(file.get(6).is_none());
    }

    #[test]
    fn both_encodings_checksum_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 8;
        for encoding in [Encoding::F32, Encoding::Int8] {
            let path = dir.path().join(encoding.file_name(1));
            let mut appender = VectorAppender::open(&path, dim, 0).unwrap();
            appender.append(&(0..3).map(|s| unit(s, dim)).collect::<Vec<_>>()).unwrap();
            appender.sync().unwrap();
            let before = VectorFile::open(&path, dim, 3).unwrap().block_checksum(0);
            let mut bytes = std::fs::read(&path).unwrap();
            let last = bytes.len() - 1;
            bytes[last] ^= 1;
            std::fs::write(&path, &bytes).unwrap();
            let after = VectorFile::open(&path, dim, 3).unwrap();
            assert_eq!(after.damaged_blocks(&[before]), vec![0], "{encoding:?}");
        }
    }

    fn fs_len(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }
}
