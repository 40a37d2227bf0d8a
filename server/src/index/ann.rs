//! Approximate nearest neighbours: an HNSW graph (hnsw_rs) over vector slots, persisted next to
//! the manifest and reloaded without rebuilding.
//!
//! The graph covers the slots that existed when it was built; slots added later are searched
//! exactly (there are few of them) until the next rebuild, and dead slots are filtered out, so
//! an update never has to touch the graph.

use std::path::Path;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::{Distance, Hnsw};

use super::IndexError;
use super::vectors::VectorFile;

/// Graph degree and build/search effort; measured on 100k vectors for recall@10 ≥ 0.97 (see
/// BENCHMARKS.md).
const MAX_CONNECTIONS: usize = 24;
const EF_CONSTRUCTION: usize = 200;
const MAX_LAYERS: usize = 16;
pub const EF_SEARCH: usize = 96;

/// Cosine distance between unit vectors, `1 − a·b`, clamped at 0.
///
/// anndists' `DistDot` asserts `1 − a·b ≥ 0`, which rounding breaks for near-duplicate vectors
/// (a real 11k-chunk tree hit it); this one clamps instead.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnitCosine;

impl Distance<f32> for UnitCosine {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - crate::embed::dot(a, b)).max(0.0)
    }
}

pub struct Ann {
    hnsw: Hnsw<'static, f32, UnitCosine>,
    slots: usize,
}

impl Ann {
    /// Builds a graph over every slot for which `live` is true.
    pub fn build(vectors: &VectorFile, live: &dyn Fn(usize) -> bool) -> Ann {
        Self::build_from(vectors.as_slice(), vectors.dim(), live)
    }

    /// Builds a graph over `vectors` (slots × `dim` floats, unit length), ids = slot numbers.
    pub fn build_from(vectors: &[f32], dim: usize, live: &dyn Fn(usize) -> bool) -> Ann {
        let slots = vectors.len() / dim.max(1);
        let ids: Vec<usize> = (0..slots).filter(|&s| live(s)).collect();
        let hnsw =
            Hnsw::<f32, UnitCosine>::new(MAX_CONNECTIONS, ids.len().max(1), MAX_LAYERS, EF_CONSTRUCTION, UnitCosine);
        let data: Vec<(&[f32], usize)> =
            ids.iter().map(|&slot| (&vectors[slot * dim..(slot + 1) * dim], slot)).collect();
        hnsw.parallel_insert_slice(&data);
        let mut hnsw = hnsw;
        hnsw.set_searching_mode(true);
        Ann { hnsw, slots }
    }

    /// How many slots the graph covers (slots at or past this are searched exactly).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Writes the graph as `<dir>/<basename>.hnsw.{graph,data}`; returns the basename used.
    pub fn dump(&self, dir: &Path, basename: &str) -> Result<String, IndexError> {
        self.hnsw.file_dump(dir, basename).map_err(|e| IndexError::Corrupt(format!("cannot write HNSW graph: {e}")))
    }

    /// Loads a dumped graph. A damaged file is an error (the caller rebuilds), never a panic.
    pub fn load(dir: &Path, basename: &str, slots: usize) -> Result<Ann, IndexError> {
        for ext in ["hnsw.graph", "hnsw.data"] {
            let path = dir.join(format!("{basename}.{ext}"));
            if !path.is_file() {
                return Err(IndexError::Corrupt(format!("{} is missing", path.display())));
            }
        }
        let dir = dir.to_path_buf();
        let basename = basename.to_string();
        let loaded = std::panic::catch_unwind(move || {
            // hnsw_rs ties the graph's lifetime to its loader. The loader holds only paths and
            // options (the data is copied into the graph), so leaking it costs a few bytes per
            // load and gives a graph we can own.
            let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(&dir, &basename)));
            io.load_hnsw::<f32, UnitCosine>().map_err(|e| e.to_string())
        });
        match loaded {
            Ok(Ok(mut hnsw)) => {
                hnsw.set_searching_mode(true);
                Ok(Ann { hnsw, slots })
            }
            Ok(Err(e)) => Err(IndexError::Corrupt(format!("cannot load HNSW graph: {e}"))),
            Err(_) => Err(IndexError::Corrupt("HNSW graph is damaged".into())),
        }
    }

    /// The `k` nearest slots accepted by `filter` (all slots without one), as (slot, cosine
    /// similarity).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        filter: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<(usize, f32)> {
        let filter = filter.map(|f| move |id: &usize| f(*id));
        let filter_ref = filter.as_ref().map(|f| f as &dyn hnsw_rs::prelude::FilterT);
        self.hnsw
            .search_filter(query, k, ef.max(k), filter_ref)
            .into_iter()
            .map(|n| (n.d_id, 1.0 - n.distance))
            .collect()
    }
}
