//! Approximate nearest neighbours: an HNSW graph over vector slots.
//!
//! hnsw_rs builds the graph; we then flatten its links into plain `u32` arrays (one CSR table
//! per layer), persist those as `ann-<gen>.graph`, and search them ourselves against the
//! memory-mapped vector file. Why not search with hnsw_rs: its points are `Arc`s scattered on
//! the heap, every visit clones one into a hash map, and its dump stores a second copy of every
//! vector that loading copies into RAM again. Measured on 100k 384-d vectors
//! (benches/ann_scale.rs), the flat search is several times faster, the file half the size,
//! and a load is a memory map plus a checksum.
//!
//! The graph covers the slots that existed when it was last built or grown; slots added later
//! are searched exactly (there are few of them) until an update grows the graph by inserting
//! them ([`Ann::extend`], the standard HNSW insertion over our own tables), and dead slots are
//! filtered out, so a small update never has to touch the graph.
//!
//! File layout (little-endian `u32` words; the file is memory-mapped, so every section stays
//! 4-byte aligned):
//!
//! ```text
//! magic (2 words) · version · slots · entry slot · layers L · L × (nodes, edges)
//! layer 0:  offsets[slots + 1] · edges[e0]                  (indexed by slot)
//! layer l:  nodes[n_l] (sorted slots) · offsets[n_l + 1] · edges[e_l]
//! xxh3-64 of everything before (2 words)
//! ```
//!
//! Long on purpose: the graph's build, persistence and search share its CSR layout; about 140
//! lines are its tests.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::ops::Range;
use std::path::Path;

use hnsw_rs::prelude::{Distance, Hnsw};
use memmap2::Mmap;

use super::IndexError;
use super::fsutil::write_atomic;
use super::vectors::VectorFile;

/// Graph degree and build/search effort; measured on 10k/100k vectors (benches/ann_scale.rs,
/// BENCHMARKS.md). `ef_construction` 100 builds 2.4× faster than 200 (107 vs 257 s at 100k) for
/// recall@10 1.000 vs 1.000 at 100k and 0.953 vs 0.959 at 10k.
const MAX_CONNECTIONS: usize = 24;
const EF_CONSTRUCTION: usize = 100;
const MAX_LAYERS: usize = 16;
pub const EF_SEARCH: usize = 96;

const MAGIC: [u8; 8] = *b"RGANN\0\0\x01";
const VERSION: u32 = 1;
const HEADER_WORDS: usize = 6;

/// Cosine distance between unit vectors, `1 − a·b`, clamped at 0 (used while hnsw_rs builds).
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

/// The words of a graph file: built in memory, or mapped from disk.
enum Words {
    Owned(Vec<u32>),
    Mapped(Mmap),
}

impl Words {
    fn as_slice(&self) -> &[u32] {
        match self {
            Words::Owned(words) => words,
            // Length and alignment were checked when the map was made (`Ann::load`).
            Words::Mapped(map) => bytemuck::cast_slice(&map[..map.len() / 4 * 4]),
        }
    }
}

/// Where one layer's tables sit in the word array.
#[derive(Debug, Clone)]
struct Layer {
    /// Sorted slots present in this layer; `None` for layer 0, which holds every slot.
    nodes: Option<Range<usize>>,
    offsets: Range<usize>,
    edges: Range<usize>,
}

/// An HNSW graph over vector slots `0..slots()`.
pub struct Ann {
    words: Words,
    slots: usize,
    entry: u32,
    layers: Vec<Layer>,
}

impl Ann {
    /// Builds a graph over every slot for which `live` is true.
    pub fn build(vectors: &VectorFile, live: &dyn Fn(usize) -> bool) -> Ann {
        Self::build_from(&vectors.decoded(), vectors.dim(), live)
    }

    /// Builds a graph over `vectors` (slots × `dim` floats, unit length), ids = slot numbers.
    pub fn build_from(vectors: &[f32], dim: usize, live: &dyn Fn(usize) -> bool) -> Ann {
        let slots = vectors.len() / dim.max(1);
        if !(0..slots).any(live) {
            // hnsw_rs cannot walk a graph without points.
            return Self::from_lists(slots, 0, Vec::new());
        }
        Self::from_hnsw(&Self::build_hnsw(vectors, dim, live), slots)
    }

    /// The hnsw_rs graph `build_from` flattens (public for the benchmark that compares the two
    /// searches).
    pub fn build_hnsw<'a>(vectors: &'a [f32], dim: usize, live: &dyn Fn(usize) -> bool) -> Hnsw<'a, f32, UnitCosine> {
        let slots = vectors.len() / dim.max(1);
        let ids: Vec<usize> = (0..slots).filter(|&s| live(s)).collect();
        let hnsw =
            Hnsw::<f32, UnitCosine>::new(MAX_CONNECTIONS, ids.len().max(1), MAX_LAYERS, EF_CONSTRUCTION, UnitCosine);
        let data: Vec<(&[f32], usize)> =
            ids.iter().map(|&slot| (&vectors[slot * dim..(slot + 1) * dim], slot)).collect();
        hnsw.parallel_insert_slice(&data);
        hnsw
    }

    /// Copies hnsw_rs's links (ids = slots below `slots`) into the flat layout.
    pub fn from_hnsw(hnsw: &Hnsw<'_, f32, UnitCosine>, slots: usize) -> Ann {
        // Per layer: (slot, neighbour slots), from every point present in that layer.
        let mut per_layer: Vec<Vec<(u32, Vec<u32>)>> = Vec::new();
        let mut entry: Option<(u8, u32)> = None;
        for point in hnsw.get_point_indexation() {
            let slot = point.get_origin_id() as u32;
            let level = point.get_point_id().0;
            if entry.is_none_or(|(l, s)| level > l || (level == l && slot < s)) {
                entry = Some((level, slot));
            }
            for (layer, neighbours) in point.get_neighborhood_id().into_iter().enumerate().take(level as usize + 1) {
                if per_layer.len() <= layer {
                    per_layer.resize_with(layer + 1, Vec::new);
                }
                let links = neighbours.iter().map(|n| n.get_origin_id() as u32).filter(|&s| (s as usize) < slots);
                per_layer[layer].push((slot, links.collect()));
            }
        }
        Self::from_lists(slots, entry.map_or(0, |(_, s)| s), per_layer)
    }

    /// Lays out per-layer adjacency lists (slot, neighbour slots) as the flat file format.
    fn from_lists(slots: usize, entry: u32, mut per_layer: Vec<Vec<(u32, Vec<u32>)>>) -> Ann {
        if per_layer.is_empty() {
            per_layer.push(Vec::new());
        }
        let mut words: Vec<u32> = MAGIC.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        words.extend([VERSION, slots as u32, entry, per_layer.len() as u32]);
        for (layer, nodes) in per_layer.iter().enumerate() {
            let listed = if layer == 0 { slots } else { nodes.len() };
            let edges: usize = nodes.iter().map(|(_, links)| links.len()).sum();
            words.extend([listed as u32, edges as u32]);
        }
        for (layer, nodes) in per_layer.iter_mut().enumerate() {
            nodes.sort_unstable_by_key(|(slot, _)| *slot);
            if layer == 0 {
                // Dense: one (possibly empty) list per slot.
                let mut lists: Vec<&[u32]> = vec![&[]; slots];
                for (slot, links) in nodes.iter() {
                    lists[*slot as usize] = links;
                }
                push_csr(&mut words, &lists);
            } else {
                words.extend(nodes.iter().map(|(slot, _)| *slot));
                let lists: Vec<&[u32]> = nodes.iter().map(|(_, links)| links.as_slice()).collect();
                push_csr(&mut words, &lists);
            }
        }
        let checksum = xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(&words));
        words.extend([checksum as u32, (checksum >> 32) as u32]);
        Self::parse(Words::Owned(words)).unwrap_or_else(|e| unreachable!("a freshly built graph is valid: {e}"))
    }

    /// This graph grown to cover `vectors` (slots × `dim` floats, unit length, the first
    /// `slots()` of them the ones the graph was built over): each new slot for which `live` is
    /// true is inserted the way HNSW builds a graph (a random level, a beam search per layer,
    /// neighbours chosen by the same heuristic and links made both ways, a full list keeping its
    /// closest), so the result is a graph as if built by insertion from the start, without
    /// revisiting the old slots. Cost is proportional to the new slots (plus one copy of the
    /// links), where a rebuild is proportional to all of them.
    pub fn extend(&self, vectors: &[f32], dim: usize, live: &dyn Fn(usize) -> bool) -> Ann {
        let slots = vectors.len() / dim.max(1);
        if slots <= self.slots || dim == 0 {
            return self.thawed(self.slots, live).frozen(self.slots);
        }
        let mut graph = self.thawed(slots, live);
        let mut growing = Growing { lists: &mut graph, vectors, dim, live, visited: vec![0; slots], stamp: 0 };
        for slot in (self.slots..slots).filter(|&s| live(s)) {
            growing.insert(slot as u32);
        }
        growing.adopt_orphans();
        graph.frozen(slots)
    }

    /// The graph as editable lists over `slots` slots (at least `self.slots`).
    fn thawed(&self, slots: usize, live: &dyn Fn(usize) -> bool) -> Lists {
        let w = self.words.as_slice();
        let mut layers: Vec<BTreeMap<u32, Vec<u32>>> = Vec::with_capacity(self.layers.len());
        let mut layer0: Vec<Vec<u32>> = vec![Vec::new(); slots];
        for (slot, list) in layer0.iter_mut().enumerate().take(self.slots) {
            list.extend_from_slice(self.neighbours(0, slot as u32));
        }
        for (layer, l) in self.layers.iter().enumerate().skip(1) {
            let nodes = l.nodes.clone().map(|r| &w[r]).unwrap_or(&[]);
            layers.push(nodes.iter().map(|&slot| (slot, self.neighbours(layer, slot).to_vec())).collect());
        }
        // A graph over no live slot has no entry yet: the first insertion becomes it. A dead
        // entry with links still leads the way.
        let linked = layer0.get(self.entry as usize).is_some_and(|l| !l.is_empty());
        let entry = (self.slots > 0 && (linked || live(self.entry as usize))).then_some(self.entry);
        Lists { layer0, upper: layers, entry }
    }
}

/// An HNSW graph being edited: layer 0 indexed by slot, the upper layers by their nodes.
struct Lists {
    layer0: Vec<Vec<u32>>,
    /// `upper[i]` is layer `i + 1`.
    upper: Vec<BTreeMap<u32, Vec<u32>>>,
    entry: Option<u32>,
}

impl Lists {
    fn list(&self, layer: usize, slot: u32) -> &[u32] {
        if layer == 0 {
            self.layer0.get(slot as usize).map_or(&[], Vec::as_slice)
        } else {
            self.upper.get(layer - 1).and_then(|l| l.get(&slot)).map_or(&[], Vec::as_slice)
        }
    }

    fn list_mut(&mut self, layer: usize, slot: u32) -> &mut Vec<u32> {
        if layer == 0 { &mut self.layer0[slot as usize] } else { self.upper[layer - 1].entry(slot).or_default() }
    }

    fn top(&self) -> usize {
        self.upper.len()
    }

    fn frozen(self, slots: usize) -> Ann {
        let Lists { layer0, upper, entry } = self;
        let mut per_layer: Vec<Vec<(u32, Vec<u32>)>> = Vec::with_capacity(upper.len() + 1);
        per_layer.push(layer0.into_iter().enumerate().map(|(slot, links)| (slot as u32, links)).collect());
        per_layer.extend(upper.into_iter().map(|layer| layer.into_iter().collect()));
        Ann::from_lists(slots, entry.unwrap_or(0), per_layer)
    }
}

/// Inserts slots into [`Lists`] with hnsw_rs's parameters and rules.
struct Growing<'a> {
    lists: &'a mut Lists,
    vectors: &'a [f32],
    dim: usize,
    /// Slots a new one may link to (dead slots still lead searches through the graph).
    live: &'a dyn Fn(usize) -> bool,
    /// Visit marks: `visited[slot] == stamp` means seen in the current search.
    visited: Vec<u32>,
    stamp: u32,
}

impl Growing<'_> {
    fn vector(&self, slot: u32) -> &[f32] {
        &self.vectors[slot as usize * self.dim..(slot as usize + 1) * self.dim]
    }

    fn sim(&self, a: u32, b: u32) -> f32 {
        crate::embed::dot(self.vector(a), self.vector(b))
    }

    /// hnsw_rs's level law: P(level ≥ l) = M^−l, from a uniform draw fixed by the slot, so
    /// the same vectors always grow the same graph.
    fn level(slot: u32) -> usize {
        let bits = xxhash_rust::xxh3::xxh3_64_with_seed(&slot.to_le_bytes(), 0x05EE_DA11);
        let uniform = ((bits >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let level = -uniform.ln() / (MAX_CONNECTIONS as f64).ln();
        (level as usize).min(MAX_LAYERS - 1)
    }

    fn capacity(layer: usize) -> usize {
        if layer == 0 { 2 * MAX_CONNECTIONS } else { MAX_CONNECTIONS }
    }

    fn insert(&mut self, slot: u32) {
        let level = Self::level(slot);
        let Some(entry) = self.lists.entry else {
            if self.lists.upper.len() < level {
                self.lists.upper.resize_with(level, BTreeMap::new);
            }
            for layer in 1..=level {
                self.lists.list_mut(layer, slot);
            }
            self.lists.entry = Some(slot);
            return;
        };
        let query = slot;
        let mut nearest = vec![Scored(self.sim(query, entry), entry)];
        let top = self.lists.top();
        for layer in (level + 1..=top).rev() {
            nearest = self.search_layer(query, &nearest, 1, layer);
        }
        for layer in (0..=level.min(top)).rev() {
            nearest = self.search_layer(query, &nearest, EF_CONSTRUCTION, layer);
            let chosen = self.select(&nearest, Self::capacity(layer));
            *self.lists.list_mut(layer, slot) = chosen.clone();
            for n in chosen {
                self.link_back(layer, n, slot);
            }
        }
        if level > top {
            self.lists.upper.resize_with(level, BTreeMap::new);
            for layer in top + 1..=level {
                self.lists.list_mut(layer, slot);
            }
            self.lists.entry = Some(slot);
        }
    }

    /// Beam search of one layer from `start`, keeping the `ef` most similar slots (best first).
    fn search_layer(&mut self, query: u32, start: &[Scored], ef: usize, layer: usize) -> Vec<Scored> {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.visited.fill(0);
            self.stamp = 1;
        }
        let (stamp, lists, visited, dim) = (self.stamp, &*self.lists, &mut self.visited, self.dim);
        let vector = |slot: u32| &self.vectors[slot as usize * dim..(slot as usize + 1) * dim];
        let query = vector(query);
        let fresh = |slot: u32| std::mem::replace(&mut visited[slot as usize], stamp) != stamp;
        beam_search(
            start,
            ef,
            |slot| lists.list(layer, slot),
            |slot| crate::embed::dot(query, vector(slot)),
            fresh,
            |_| true,
        )
    }

    /// The HNSW neighbour heuristic: a candidate is kept when it is closer to the new point than
    /// to every neighbour kept so far, which spreads links across directions.
    fn select(&self, candidates: &[Scored], m: usize) -> Vec<u32> {
        let mut kept: Vec<u32> = Vec::with_capacity(m);
        for &Scored(s, c) in candidates {
            if kept.len() >= m {
                break;
            }
            if (self.live)(c as usize) && kept.iter().all(|&r| self.sim(c, r) < s) {
                kept.push(c);
            }
        }
        kept
    }

    /// Links every live slot that no list in layer 0 points to from its most similar
    /// neighbour. A full list drops its least similar link when a closer slot arrives, so an
    /// outlier among many near-duplicates (one function beside forty generated ones) can lose
    /// every link to it and become unreachable; one extra link over capacity keeps it found.
    fn adopt_orphans(&mut self) {
        let slots = self.lists.layer0.len();
        let mut linked = vec![false; slots];
        for list in &self.lists.layer0 {
            for &n in list {
                linked[n as usize] = true;
            }
        }
        if let Some(entry) = self.lists.entry {
            linked[entry as usize] = true;
        }
        for slot in 0..slots as u32 {
            if linked[slot as usize] || !(self.live)(slot as usize) {
                continue;
            }
            let nearest = self.lists.layer0[slot as usize].iter().map(|&n| Scored(self.sim(slot, n), n)).max();
            if let Some(Scored(_, n)) = nearest {
                self.lists.layer0[n as usize].push(slot);
            }
        }
    }

    /// Adds `slot` to `n`'s list in `layer`; a list over capacity drops its least similar link.
    fn link_back(&mut self, layer: usize, n: u32, slot: u32) {
        if self.lists.list(layer, n).contains(&slot) || n == slot {
            return;
        }
        let mut list = std::mem::take(self.lists.list_mut(layer, n));
        list.push(slot);
        if list.len() > Self::capacity(layer) {
            let mut scored: Vec<Scored> = list.iter().map(|&m| Scored(self.sim(n, m), m)).collect();
            scored.sort_by(|a, b| b.cmp(a));
            scored.truncate(Self::capacity(layer));
            list = scored.into_iter().map(|s| s.1).collect();
        }
        *self.lists.list_mut(layer, n) = list;
    }
}

impl Ann {
    /// Checks a word array and locates its tables. Every link is checked to be in range here, so
    /// searching never needs to.
    fn parse(words: Words) -> Result<Ann, String> {
        let w = words.as_slice();
        if w.len() < HEADER_WORDS + 2 || bytemuck::cast_slice::<u32, u8>(&w[..2]) != MAGIC {
            return Err("not a raggrep graph file".into());
        }
        let (body, tail) = w.split_at(w.len() - 2);
        let stored = u64::from(tail[0]) | (u64::from(tail[1]) << 32);
        if xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(body)) != stored {
            return Err("checksum mismatch".into());
        }
        if w[2] != VERSION {
            return Err(format!("graph format {} (this build reads {VERSION})", w[2]));
        }
        let (slots, entry, layer_count) = (w[3] as usize, w[4], w[5] as usize);
        if layer_count == 0 || layer_count > 64 || HEADER_WORDS + 2 * layer_count > body.len() {
            return Err(format!("bad layer count {layer_count}"));
        }
        let mut at = HEADER_WORDS + 2 * layer_count;
        let mut take = |len: usize| -> Result<Range<usize>, String> {
            let range = at..at.checked_add(len).filter(|&end| end <= body.len()).ok_or("truncated tables")?;
            at = range.end;
            Ok(range)
        };
        let mut layers = Vec::with_capacity(layer_count);
        for layer in 0..layer_count {
            let (listed, edge_count) = (w[HEADER_WORDS + 2 * layer] as usize, w[HEADER_WORDS + 2 * layer + 1] as usize);
            let nodes = if layer == 0 {
                if listed != slots {
                    return Err("layer 0 does not list every slot".into());
                }
                None
            } else {
                let nodes = take(listed)?;
                if body[nodes.clone()].windows(2).any(|p| p[0] >= p[1]) {
                    return Err(format!("layer {layer}: nodes not sorted"));
                }
                Some(nodes)
            };
            let offsets = take(listed + 1)?;
            let edges = take(edge_count)?;
            let o = &body[offsets.clone()];
            if o[0] != 0 || o[listed] as usize != edge_count || o.windows(2).any(|p| p[0] > p[1]) {
                return Err(format!("layer {layer}: bad offsets"));
            }
            if body[edges.clone()].iter().any(|&e| e as usize >= slots) {
                return Err(format!("layer {layer}: link out of range"));
            }
            layers.push(Layer { nodes, offsets, edges });
        }
        if at != body.len() {
            return Err("trailing bytes".into());
        }
        if slots > 0 && entry as usize >= slots {
            return Err("entry point out of range".into());
        }
        Ok(Ann { words, slots, entry, layers })
    }

    /// How many slots the graph covers (slots at or past this are searched exactly).
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Size of the graph file in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.words.as_slice().len() as u64 * 4
    }

    /// File name of the graph with this basename.
    pub fn file_name(basename: &str) -> String {
        format!("{basename}.graph")
    }

    /// Writes the graph atomically as `<dir>/<basename>.graph`; returns the basename.
    pub fn dump(&self, dir: &Path, basename: &str) -> Result<String, IndexError> {
        let path = dir.join(Self::file_name(basename));
        write_atomic(&path, bytemuck::cast_slice(self.words.as_slice())).map_err(|e| IndexError::io(&path, e))?;
        Ok(basename.to_string())
    }

    /// Maps a dumped graph. A damaged or foreign file is an error (the caller searches exactly
    /// and the next update rebuilds), never a panic.
    pub fn load(dir: &Path, basename: &str, slots: usize) -> Result<Ann, IndexError> {
        let path = dir.join(Self::file_name(basename));
        let file = File::open(&path).map_err(|e| IndexError::io(&path, e))?;
        let len = file.metadata().map_err(|e| IndexError::io(&path, e))?.len();
        if len < (HEADER_WORDS as u64 + 2) * 4 {
            return Err(IndexError::Corrupt(format!("{}: truncated", path.display())));
        }
        // SAFETY: graph files are immutable once published (a rebuild writes a new name).
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file) }.map_err(|e| IndexError::io(&path, e))?;
        if map.len() % 4 != 0 || map.as_ptr().align_offset(4) != 0 {
            return Err(IndexError::Corrupt(format!("{}: truncated", path.display())));
        }
        let ann =
            Self::parse(Words::Mapped(map)).map_err(|e| IndexError::Corrupt(format!("{}: {e}", path.display())))?;
        if ann.slots != slots {
            return Err(IndexError::Corrupt(format!(
                "{}: covers {} vectors, the manifest says {slots}",
                path.display(),
                ann.slots
            )));
        }
        Ok(ann)
    }

    fn neighbours(&self, layer: usize, slot: u32) -> &[u32] {
        let w = self.words.as_slice();
        let Some(l) = self.layers.get(layer) else { return &[] };
        let index = match &l.nodes {
            None => slot as usize,
            Some(nodes) => match w[nodes.clone()].binary_search(&slot) {
                Ok(i) => i,
                Err(_) => return &[],
            },
        };
        let offsets = &w[l.offsets.clone()];
        let edges = &w[l.edges.clone()];
        match (offsets.get(index), offsets.get(index + 1)) {
            (Some(&start), Some(&end)) => &edges[start as usize..end as usize],
            _ => &[],
        }
    }

    /// The `k` slots most similar to `query` among those accepted by `filter` (all slots without
    /// one), as (slot, cosine similarity), best first. `vectors` holds at least `slots()`
    /// vectors of `query.len()` floats.
    pub fn search(
        &self,
        vectors: &[f32],
        query: &[f32],
        k: usize,
        ef: usize,
        filter: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<(usize, f32)> {
        let dim = query.len();
        if dim == 0 || vectors.len() < self.slots * dim {
            return Vec::new();
        }
        self.search_by(&|slot| crate::embed::dot(query, &vectors[slot * dim..(slot + 1) * dim]), k, ef, filter)
    }

    /// [`Ann::search`] with the similarity of the query to a slot given by `similarity` (for
    /// vectors stored in another encoding than f32). Every slot below `slots()` must have one.
    pub fn search_by(
        &self,
        similarity: &dyn Fn(usize) -> f32,
        k: usize,
        ef: usize,
        filter: Option<&dyn Fn(usize) -> bool>,
    ) -> Vec<(usize, f32)> {
        if self.slots == 0 || k == 0 {
            return Vec::new();
        }
        let sim = |slot: u32| similarity(slot as usize);
        // Greedy descent through the upper layers.
        let (mut best, mut best_sim) = (self.entry, sim(self.entry));
        for layer in (1..self.layers.len()).rev() {
            loop {
                let mut moved = false;
                for &n in self.neighbours(layer, best) {
                    let s = sim(n);
                    if s > best_sim {
                        (best, best_sim) = (n, s);
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
        }
        // Beam search in layer 0.
        let ef = ef.max(k);
        let mut visited = vec![0u64; self.slots.div_ceil(64)];
        let fresh = |slot: u32| {
            let (word, bit) = (slot as usize / 64, 1u64 << (slot % 64));
            let fresh = visited[word] & bit == 0;
            visited[word] |= bit;
            fresh
        };
        let accept = |slot: u32| filter.is_none_or(|f| f(slot as usize));
        let found = beam_search(&[Scored(best_sim, best)], ef, |slot| self.neighbours(0, slot), sim, fresh, accept);
        found.into_iter().take(k).map(|Scored(s, slot)| (slot as usize, s)).collect()
    }

    /// Fuzzing entry point (internal): the checks [`Ann::load`] makes, on a graph file's bytes
    /// in memory. With `fix_checksum`, the trailing checksum is first recomputed, so mutated
    /// tables get past it to the structural checks.
    pub fn parse_bytes(bytes: &[u8], fix_checksum: bool) -> Result<Ann, String> {
        if !bytes.len().is_multiple_of(4) {
            return Err("truncated".into());
        }
        let mut words: Vec<u32> = bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        if fix_checksum && words.len() >= 2 {
            let body = words.len() - 2;
            let checksum = xxhash_rust::xxh3::xxh3_64(bytemuck::cast_slice(&words[..body]));
            words[body..].copy_from_slice(&[checksum as u32, (checksum >> 32) as u32]);
        }
        Self::parse(Words::Owned(words))
    }
}

/// HNSW's beam search in one layer, shared by searches and by insertion: from `start`, follows
/// `neighbours` and keeps the `ef` most similar slots that `accept` admits, best first (the
/// frontier goes through every slot; `fresh` marks a slot visited and says whether it was new).
fn beam_search<'n>(
    start: &[Scored],
    ef: usize,
    neighbours: impl Fn(u32) -> &'n [u32],
    sim: impl Fn(u32) -> f32,
    mut fresh: impl FnMut(u32) -> bool,
    accept: impl Fn(u32) -> bool,
) -> Vec<Scored> {
    // `candidates`: the frontier, best on top; `results`: the `ef` best accepted, worst on top.
    let mut candidates: BinaryHeap<Scored> = BinaryHeap::new();
    let mut results: BinaryHeap<std::cmp::Reverse<Scored>> = BinaryHeap::with_capacity(ef + 1);
    for &scored in start {
        if fresh(scored.1) {
            candidates.push(scored);
            if accept(scored.1) {
                results.push(std::cmp::Reverse(scored));
            }
        }
    }
    while results.len() > ef {
        results.pop();
    }
    while let Some(Scored(s, slot)) = candidates.pop() {
        let floor = results.peek().map_or(f32::NEG_INFINITY, |r| r.0.0);
        if results.len() >= ef && s < floor {
            break;
        }
        for &n in neighbours(slot) {
            if !fresh(n) {
                continue;
            }
            let s = sim(n);
            let floor = results.peek().map_or(f32::NEG_INFINITY, |r| r.0.0);
            if results.len() < ef || s > floor {
                candidates.push(Scored(s, n));
                if accept(n) {
                    results.push(std::cmp::Reverse(Scored(s, n)));
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
    }
    let mut out: Vec<Scored> = results.into_iter().map(|r| r.0).collect();
    out.sort_by(|a, b| b.cmp(a));
    out
}

/// Appends a CSR table (offsets, then the concatenated lists).
fn push_csr(words: &mut Vec<u32>, lists: &[&[u32]]) {
    let mut offset = 0u32;
    words.push(0);
    for list in lists {
        offset += list.len() as u32;
        words.push(offset);
    }
    for list in lists {
        words.extend_from_slice(list);
    }
}

/// A slot with its similarity, ordered by similarity.
#[derive(Debug, Clone, Copy)]
struct Scored(f32, u32);

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit vectors around a few centres, so neighbourhoods are meaningful.
    fn vectors(n: usize, dim: usize) -> Vec<f32> {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let centres: Vec<f32> = (0..8 * dim).map(|_| next()).collect();
        let mut out = Vec::with_capacity(n * dim);
        for i in 0..n {
            let c = &centres[(i % 8) * dim..(i % 8 + 1) * dim];
            let mut v: Vec<f32> = c.iter().map(|x| x + 0.3 * next()).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            out.extend(v);
        }
        out
    }

    fn exact(data: &[f32], dim: usize, q: &[f32], k: usize, ok: &dyn Fn(usize) -> bool) -> Vec<usize> {
        let mut all: Vec<(usize, f32)> =
            data.chunks(dim).enumerate().filter(|(s, _)| ok(*s)).map(|(s, v)| (s, crate::embed::dot(q, v))).collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        all.into_iter().take(k).map(|(s, _)| s).collect()
    }

    #[test]
    fn finds_the_exact_neighbours_and_survives_a_round_trip() {
        let (n, dim) = (2000, 32);
        let data = vectors(n, dim);
        let dead = |s: usize| s % 7 == 3;
        let ann = Ann::build_from(&data, dim, &|s| !dead(s));
        let dir = tempfile::tempdir().unwrap();
        ann.dump(dir.path(), "ann-00000001").unwrap();
        let loaded = Ann::load(dir.path(), "ann-00000001", n).unwrap();
        let (mut hits, mut total) = (0, 0);
        for q in 0..50 {
            let query = &data[q * 13 * dim..(q * 13 + 1) * dim];
            let truth = exact(&data, dim, query, 10, &|s| !dead(s));
            let built = ann.search(&data, query, 10, EF_SEARCH, None);
            let mapped = loaded.search(&data, query, 10, EF_SEARCH, None);
            assert_eq!(built, mapped, "the mapped graph answers like the built one");
            assert!(built.iter().all(|(s, _)| !dead(*s)), "slots outside the graph never come back");
            hits += built.iter().filter(|(s, _)| truth.contains(s)).count();
            total += truth.len();
        }
        let recall = hits as f64 / total as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
    }

    #[test]
    fn a_grown_graph_finds_what_a_rebuilt_one_finds() {
        let (n, old, dim) = (3000, 1800, 32);
        let data = vectors(n, dim);
        let dead = |s: usize| s % 11 == 5;
        let built = Ann::build_from(&data[..old * dim], dim, &|s| !dead(s));
        let grown = built.extend(&data, dim, &|s| !dead(s));
        assert_eq!(grown.slots(), n);
        assert_eq!(
            grown.extend(&data, dim, &|s| !dead(s)).words.as_slice(),
            grown.words.as_slice(),
            "nothing new, nothing changed"
        );
        let again = built.extend(&data, dim, &|s| !dead(s));
        assert_eq!(again.words.as_slice(), grown.words.as_slice(), "the same vectors grow the same graph");
        let rebuilt = Ann::build_from(&data, dim, &|s| !dead(s));
        let dir = tempfile::tempdir().unwrap();
        grown.dump(dir.path(), "ann-00000002").unwrap();
        let loaded = Ann::load(dir.path(), "ann-00000002", n).unwrap();
        let (mut grown_hits, mut rebuilt_hits, mut total) = (0, 0, 0);
        for q in 0..60 {
            // Half the queries sit among the new vectors.
            let at = if q % 2 == 0 { q * 29 % old } else { old + q * 17 % (n - old) };
            let query = &data[at * dim..(at + 1) * dim];
            let truth = exact(&data, dim, query, 10, &|s| !dead(s));
            let found = loaded.search(&data, query, 10, EF_SEARCH, None);
            assert!(found.iter().all(|(s, _)| !dead(*s)), "dead slots are never linked in");
            grown_hits += found.iter().filter(|(s, _)| truth.contains(s)).count();
            rebuilt_hits +=
                rebuilt.search(&data, query, 10, EF_SEARCH, None).iter().filter(|(s, _)| truth.contains(s)).count();
            total += truth.len();
        }
        let (grown_recall, rebuilt_recall) = (grown_hits as f64 / total as f64, rebuilt_hits as f64 / total as f64);
        assert!(
            grown_recall >= 0.95 && grown_recall >= rebuilt_recall - 0.02,
            "recall@10 grown {grown_recall}, rebuilt {rebuilt_recall}"
        );
        let new_alone = |s: usize| s >= old && !dead(s);
        let query = &data[(n - 1) * dim..n * dim];
        let found = grown.search(&data, query, 10, EF_SEARCH, Some(&new_alone));
        assert_eq!(found.first().map(|f| f.0), Some(n - 1), "a new vector is reachable and finds itself");
    }

    #[test]
    fn a_graph_over_nothing_grows_from_its_first_insertion() {
        let (n, dim) = (1500, 16);
        let data = vectors(n, dim);
        let empty = Ann::build_from(&data[..10 * dim], dim, &|_| false);
        let grown = empty.extend(&data, dim, &|s| s >= 10);
        let query = &data[700 * dim..701 * dim];
        let truth = exact(&data, dim, query, 10, &|s| s >= 10);
        let found: Vec<usize> = grown.search(&data, query, 10, EF_SEARCH, None).into_iter().map(|f| f.0).collect();
        assert!(found.iter().filter(|s| truth.contains(s)).count() >= 9, "found {found:?}, truth {truth:?}");
        assert!(found.iter().all(|&s| s >= 10));
    }

    #[test]
    fn filter_restricts_results() {
        let (n, dim) = (1000, 16);
        let data = vectors(n, dim);
        let ann = Ann::build_from(&data, dim, &|_| true);
        let only_even = |s: usize| s.is_multiple_of(2);
        let found = ann.search(&data, &data[..dim], 10, EF_SEARCH, Some(&only_even));
        assert_eq!(found.len(), 10);
        assert!(found.iter().all(|(s, _)| s.is_multiple_of(2)));
        assert!(found.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
    }

    #[test]
    fn damaged_files_are_errors() {
        let (n, dim) = (300, 8);
        let data = vectors(n, dim);
        let ann = Ann::build_from(&data, dim, &|_| true);
        let dir = tempfile::tempdir().unwrap();
        ann.dump(dir.path(), "g").unwrap();
        let path = dir.path().join("g.graph");
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 0x40;
        for bad in [good[..good.len() - 6].to_vec(), flipped, b"garbage".to_vec(), Vec::new()] {
            std::fs::write(&path, &bad).unwrap();
            assert!(matches!(Ann::load(dir.path(), "g", n), Err(IndexError::Corrupt(_))));
        }
        std::fs::write(&path, &good).unwrap();
        assert!(Ann::load(dir.path(), "g", n + 1).is_err(), "slot count must match the manifest");
        assert!(Ann::load(dir.path(), "g", n).is_ok());
    }
}
