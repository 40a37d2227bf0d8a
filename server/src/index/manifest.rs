//! The manifest: every file and chunk of the index, the model, and which vector slot holds each
//! chunk's embedding. Serialised with rkyv, memory-mapped and validated on open (bytecheck plus a
//! checksum footer), never deserialised as a whole.
//!
//! File layout: `rkyv payload | footer`; footer = magic `RGMF`, format version (u32 LE), payload
//! length (u64 LE), xxh3-64 of the payload (u64 LE).

use std::fs::File;
use std::path::Path;

use memmap2::Mmap;
use rkyv::rancor;

use super::IndexError;

/// Bumped whenever the on-disk format changes; older indexes are rebuilt. 5: files store the
/// languages of issue 53 (Ruby … Haskell, codes 11-21), which an older raggrep would read as text.
/// 6: YAML, TOML and JSON (codes 22-24); Dart, Objective-C, OCaml, R and Julia (25-29).
pub const FORMAT_VERSION: u32 = 6;
const MAGIC: &[u8; 4] = b"RGMF";
const FOOTER_LEN: usize = 4 + 4 + 8 + 8;
/// A chunk whose embedding is not computed yet.
pub const NO_SLOT: u32 = u32::MAX;

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone, Default)]
pub struct Manifest {
    pub generation: u64,
    pub model_id: String,
    pub dim: u32,
    /// How chunks and their embedded texts were made ([`crate::chunk::recipe`]); when it
    /// changes every file is chunked again (embeddings are still reused where the text is).
    pub recipe: String,
    pub updated_unix_ms: u64,
    /// File holding the vectors (`vectors-<n>.f32`), and how many slots of it are valid.
    pub vectors_file: String,
    pub vector_slots: u64,
    /// xxh3-64 of each block of [`super::vectors::BLOCK_SLOTS`] vectors (the last one may be
    /// partial): flipped bytes in the vector file are found instead of ranking garbage.
    pub vector_checksums: Vec<u64>,
    /// Embedding-cache key of each slot (xxh3-128 of the embedded text, as two u64 halves).
    pub slot_keys: Vec<[u64; 2]>,
    /// The persisted HNSW graph, if one was built, and how many slots it covers.
    pub ann: Option<AnnEntry>,
    /// The lexical index commit this manifest matches (its tantivy payload).
    pub lexical_generation: u64,
    /// Files sorted by path.
    pub files: Vec<FileEntry>,
    /// Chunks grouped by file, in file order.
    pub chunks: Vec<ChunkEntry>,
    pub skipped: Vec<SkippedEntry>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone)]
pub struct AnnEntry {
    pub basename: String,
    pub slots: u64,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone)]
pub struct FileEntry {
    pub path: String,
    pub mtime_ns: u64,
    pub size: u64,
    pub hash: [u64; 2],
    pub language: u8,
    pub lossy: bool,
    pub first_chunk: u32,
    pub chunk_count: u32,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone)]
pub struct ChunkEntry {
    pub file: u32,
    pub start_byte: u32,
    pub end_byte: u32,
    pub start_line: u32,
    pub end_line: u32,
    pub kind: u8,
    pub symbol: String,
    pub container: String,
    /// [`crate::chunk::code_lines`] of the chunk's text.
    pub code_lines: u32,
    /// xxh3-128 of the chunk's text.
    pub hash: [u64; 2],
    /// Vector slot, or [`NO_SLOT`] while not embedded.
    pub slot: u32,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Clone)]
pub struct SkippedEntry {
    pub path: String,
    pub reason: String,
}

pub fn split_hash(hash: u128) -> [u64; 2] {
    [(hash >> 64) as u64, hash as u64]
}

pub fn join_hash(parts: [u64; 2]) -> u128 {
    (u128::from(parts[0]) << 64) | u128::from(parts[1])
}

/// Serialises a manifest with its footer.
pub fn encode(manifest: &Manifest) -> Result<Vec<u8>, IndexError> {
    let payload = rkyv::to_bytes::<rancor::Error>(manifest)
        .map_err(|e| IndexError::Corrupt(format!("cannot serialise manifest: {e}")))?;
    let mut bytes = payload.to_vec();
    let checksum = xxhash_rust::xxh3::xxh3_64(&bytes);
    let len = bytes.len() as u64;
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&checksum.to_le_bytes());
    Ok(bytes)
}

/// A validated, memory-mapped manifest.
pub struct MappedManifest {
    map: Mmap,
    payload_len: usize,
}

impl MappedManifest {
    pub fn open(path: &Path) -> Result<MappedManifest, IndexError> {
        let file = File::open(path).map_err(|e| IndexError::io(path, e))?;
        // SAFETY: manifests are never modified in place (a new generation is a new file), so the
        // mapping cannot change under us unless someone edits the index by hand — which the
        // checksum below then catches on the next open.
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file) }.map_err(|e| IndexError::io(path, e))?;
        let payload_len = validate(&map).map_err(|invalid| match invalid {
            Invalid::OtherFormat(found) => {
                IndexError::OtherFormat { path: path.to_path_buf(), found, expected: FORMAT_VERSION }
            }
            Invalid::Damaged(why) => IndexError::Corrupt(format!("{}: {why}", path.display())),
        })?;
        let manifest = MappedManifest { map, payload_len };
        // Structural validation once; `get` then only re-derives the root pointer.
        rkyv::access::<ArchivedManifest, rancor::Error>(manifest.payload())
            .map_err(|e| IndexError::Corrupt(format!("{}: invalid manifest: {e}", path.display())))?;
        Ok(manifest)
    }

    fn payload(&self) -> &[u8] {
        &self.map[..self.payload_len]
    }

    pub fn get(&self) -> &ArchivedManifest {
        // SAFETY: the same bytes passed `rkyv::access` (full bytecheck validation) in `open`, and
        // the mapping is read-only and never modified.
        #[allow(unsafe_code)]
        unsafe {
            rkyv::access_unchecked::<ArchivedManifest>(self.payload())
        }
    }

    pub fn size_on_disk(&self) -> u64 {
        self.map.len() as u64
    }
}

/// Why a manifest file cannot be used.
enum Invalid {
    /// An intact footer naming another format version: another raggrep wrote it.
    OtherFormat(u32),
    Damaged(String),
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::OtherFormat(found) => write!(f, "format version {found}, this raggrep reads {FORMAT_VERSION}"),
            Invalid::Damaged(why) => f.write_str(why),
        }
    }
}

/// Checks the footer; returns the payload length.
fn validate(bytes: &[u8]) -> Result<usize, Invalid> {
    let damaged = |why: &str| Err(Invalid::Damaged(why.to_string()));
    if bytes.len() < FOOTER_LEN {
        return damaged("truncated (no footer)");
    }
    let footer = &bytes[bytes.len() - FOOTER_LEN..];
    if &footer[..4] != MAGIC {
        return damaged("not a raggrep manifest (bad magic)");
    }
    let le_u32 = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or_default());
    let le_u64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
    let version = le_u32(&footer[4..8]);
    if version != FORMAT_VERSION {
        return Err(Invalid::OtherFormat(version));
    }
    let len = le_u64(&footer[8..16]) as usize;
    if len != bytes.len() - FOOTER_LEN {
        return damaged("truncated (length mismatch)");
    }
    let checksum = le_u64(&footer[16..24]);
    if xxhash_rust::xxh3::xxh3_64(&bytes[..len]) != checksum {
        return damaged("checksum mismatch");
    }
    Ok(len)
}

/// Fuzzing entry point (internal): the checks [`MappedManifest::open`] makes, on bytes in
/// memory (copied to an aligned buffer, as a memory map is).
pub fn check_bytes(bytes: &[u8]) -> Result<(), String> {
    let len = validate(bytes).map_err(|invalid| invalid.to_string())?;
    let mut payload = rkyv::util::AlignedVec::<16>::with_capacity(len);
    payload.extend_from_slice(&bytes[..len]);
    rkyv::access::<ArchivedManifest, rancor::Error>(&payload).map_err(|e| format!("invalid manifest: {e}"))?;
    Ok(())
}

/// Fuzzing helper (internal): `payload` with a valid footer, so mutated payloads get past the
/// checksum to the structural validation.
pub fn with_footer(payload: &[u8]) -> Vec<u8> {
    let mut bytes = payload.to_vec();
    let checksum = xxhash_rust::xxh3::xxh3_64(&bytes);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&checksum.to_le_bytes());
    bytes
}
