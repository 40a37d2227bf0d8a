//! Vector storage: one contiguous little-endian f32 file (slots × dim), memory-mapped.
//!
//! The file is append-only between compactions: new embeddings go after the last valid slot and
//! the manifest records how many slots are valid, so a reader mapping the old length is never
//! disturbed and a crash mid-append leaves only ignored bytes past the recorded length.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapOptions};

use super::IndexError;
use crate::embed::Vector;

#[cfg(not(target_endian = "little"))]
compile_error!("raggrep's vector files are little-endian f32; big-endian targets are not supported");

/// A read-only view of the first `slots` vectors of a vector file.
pub struct VectorFile {
    map: Option<Mmap>,
    dim: usize,
    slots: usize,
}

impl VectorFile {
    pub fn open(path: &Path, dim: usize, slots: usize) -> Result<VectorFile, IndexError> {
        if slots == 0 {
            return Ok(VectorFile { map: None, dim, slots });
        }
        let file = File::open(path).map_err(|e| IndexError::io(path, e))?;
        let needed = slots * dim * 4;
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
        Ok(VectorFile { map: Some(map), dim, slots })
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

    /// All vectors as one slice of `slots × dim` floats.
    pub fn as_slice(&self) -> &[f32] {
        match &self.map {
            // Page-aligned mapping of whole f32s: the cast cannot fail.
            Some(map) => bytemuck::cast_slice(&map[..]),
            None => &[],
        }
    }

    pub fn get(&self, slot: usize) -> Option<&[f32]> {
        (slot < self.slots).then(|| &self.as_slice()[slot * self.dim..(slot + 1) * self.dim])
    }

    pub fn size_on_disk(&self) -> u64 {
        (self.slots * self.dim * 4) as u64
    }

    /// Number of checksum blocks the valid slots span.
    pub fn blocks(&self) -> usize {
        self.slots.div_ceil(BLOCK_SLOTS)
    }

    /// xxh3-64 of one block (the last one may be partial).
    pub fn block_checksum(&self, block: usize) -> u64 {
        let start = (block * BLOCK_SLOTS).min(self.slots) * self.dim;
        let end = ((block + 1) * BLOCK_SLOTS).min(self.slots) * self.dim;
        xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(&self.as_slice()[start..end]))
    }

    /// The blocks whose content does not match `expected` (one checksum per block; a missing
    /// checksum counts as a mismatch).
    pub fn damaged_blocks(&self, expected: &[u64]) -> Vec<usize> {
        (0..self.blocks()).filter(|&b| expected.get(b) != Some(&self.block_checksum(b))).collect()
    }
}

/// Vectors per checksum block: 1.5 MB at 384 dimensions, so checking one costs ~0.1 ms and a
/// damaged block costs at most this many re-embeddings.
pub const BLOCK_SLOTS: usize = 1024;

/// Appends vectors to a vector file.
pub struct VectorAppender {
    file: File,
    path: PathBuf,
    dim: usize,
    slots: usize,
}

impl VectorAppender {
    /// Opens `path` for appending after `slots` valid vectors, dropping any bytes past them
    /// (left by a crash).
    pub fn open(path: &Path, dim: usize, slots: usize) -> Result<VectorAppender, IndexError> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| IndexError::io(path, e))?;
        let valid = (slots * dim * 4) as u64;
        let len = file.metadata().map_err(|e| IndexError::io(path, e))?.len();
        if len < valid {
            return Err(IndexError::Corrupt(format!("{}: shorter than the manifest says", path.display())));
        }
        file.set_len(valid).map_err(|e| IndexError::io(path, e))?;
        let mut appender = VectorAppender { file, path: path.to_path_buf(), dim, slots };
        use std::io::Seek;
        appender.file.seek(std::io::SeekFrom::Start(valid)).map_err(|e| IndexError::io(path, e))?;
        Ok(appender)
    }

    /// Appends vectors; returns the slot of the first one.
    pub fn append(&mut self, vectors: &[Vector]) -> Result<usize, IndexError> {
        let first = self.slots;
        let mut bytes = Vec::with_capacity(vectors.len() * self.dim * 4);
        for vector in vectors {
            if vector.dim() != self.dim {
                return Err(IndexError::Corrupt(format!(
                    "vector of dimension {} in an index of dimension {}",
                    vector.dim(),
                    self.dim
                )));
            }
            bytes.extend_from_slice(bytemuck::cast_slice(vector.as_slice()));
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
