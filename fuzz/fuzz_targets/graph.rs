//! The HNSW graph decoder on arbitrary bytes, then a search over the graph it accepts: a damaged
//! graph file must be an error, and an accepted one must be searchable without panicking (the
//! search trusts what parsing checked). The first byte chooses whether the checksum is repaired
//! first, so mutations reach the structural checks.

#![no_main]

use libfuzzer_sys::fuzz_target;
use raggrep::index::Ann;

/// Graphs covering more slots than this are parsed but not searched (the vectors would cost
/// more than the search tells).
const MAX_SEARCHED_SLOTS: usize = 1 << 16;
const DIM: usize = 4;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let Ok(ann) = Ann::parse_bytes(rest, mode % 2 == 1) else { return };
    let slots = ann.slots();
    if slots > MAX_SEARCHED_SLOTS {
        return;
    }
    // Deterministic unit-ish vectors; values do not matter for memory safety, only the shape.
    let vectors: Vec<f32> = (0..slots * DIM).map(|i| ((i * 7919 % 101) as f32 / 101.0) - 0.5).collect();
    let query = [0.5f32, -0.5, 0.5, -0.5];
    let k = usize::from(mode >> 1) % 16 + 1;
    let hits = ann.search(&vectors, &query, k, 32, None);
    assert!(hits.len() <= k);
    assert!(hits.iter().all(|&(slot, _)| slot < slots), "hit outside the graph: {hits:?}");
    let even = |slot: usize| slot % 2 == 0;
    let filtered = ann.search(&vectors, &query, k, 32, Some(&even));
    assert!(filtered.iter().all(|&(slot, _)| slot % 2 == 0), "filter ignored: {filtered:?}");
});
