//! A 100k-chunk index: bytes on disk per chunk (by part), warm start (open an existing index to
//! the first dense and lexical answers, in a fresh process) and that process's peak RSS; then
//! the same index converted to int8 vectors, measured the same way, with the dense top 10 of
//! both against an exact f32 scan.
//!
//! `cargo bench --bench scale_index -- [--chunks 100000] [--keep DIR]`
//!
//! The tree is generated (files of small documented Rust functions over a shared vocabulary,
//! ~one chunk each) and embedded with the deterministic trigram embedder at 384 dimensions: the
//! model is not what is measured here, and embedding 100k chunks with it takes hours on two
//! cores. Everything else — walk, chunking, manifest, vector file, HNSW graph, tantivy — is
//! the real indexer.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/support/fixture.rs"]
mod fixture;

use std::path::{Path, PathBuf};
use std::time::Instant;

use raggrep::embed::Vector;
use raggrep::embed::{Embedder, FakeEmbedder};
use raggrep::index::{IndexLocation, IndexOptions, Progress, Snapshot, VectorEncoding, update};
use raggrep::search::{Mode, Query, search};

const DIM: usize = 384;
const FUNCTIONS_PER_FILE: usize = 40;
const WORDS: &[&str] = &[
    "token", "parse", "index", "buffer", "segment", "client", "request", "header", "cache", "score", "merge", "query",
    "writer", "reader", "socket", "frame", "config", "schema", "record", "batch", "stream", "error", "retry", "limit",
    "queue", "worker", "thread", "lock", "channel", "timer", "window", "layout", "widget", "event", "handler", "route",
    "session", "user", "account", "payment", "invoice", "order", "item", "price", "tax", "report", "export", "import",
    "graph", "node", "edge", "path", "tree", "leaf", "hash", "digest", "cipher", "key", "secret", "vault", "policy",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 33) as usize
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.next() % WORDS.len()]
    }
}

fn generate_tree(root: &Path, chunks: usize) {
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let files = chunks.div_ceil(FUNCTIONS_PER_FILE);
    for f in 0..files {
        let dir = root.join(format!("src/{}_{}", rng.word(), f / 100));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for i in 0..FUNCTIONS_PER_FILE {
            let (a, b, c, d) = (rng.word(), rng.word(), rng.word(), rng.word());
            text.push_str(&format!(
                "/// Returns the {a} of the {b} after checking its {c} against the {d} limit.\n\
                 pub fn {a}_{b}_{i}(input: &{C}{B}, {c}: usize) -> Result<{A}, Error> {{\n\
                 \x20   let {d} = input.{c}_{d}()?;\n\
                 \x20   if {d}.len() > {c} {{\n\
                 \x20       return Err(Error::{C}Limit {{ {c}, got: {d}.len() }});\n\
                 \x20   }}\n\
                 \x20   let {a} = {d}.iter().map(|x| x.{a}()).fold({A}::default(), |acc, v| acc.merge(v));\n\
                 \x20   tracing::debug!(\"{a} {b} {{}}\", {f});\n\
                 \x20   Ok({a})\n\
                 }}\n\n",
                A = capitalise(a),
                B = capitalise(b),
                C = capitalise(c),
            ));
        }
        std::fs::write(dir.join(format!("{}_{f}.rs", rng.word())), text).unwrap();
    }
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

fn dir_bytes(dir: &Path, prefix: &str) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() {
            if name.starts_with(prefix) {
                total += dir_bytes(&path, "");
            }
        } else if name.starts_with(prefix) {
            total += entry.metadata().map_or(0, |m| m.len());
        }
    }
    total
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// Child mode: open the index and answer one dense and one lexical query; print JSON.
fn open_and_answer(root: &Path, index_dir: &Path) {
    let embedder = FakeEmbedder::new(DIM);
    let query = embedder.embed_query("check the token against the limit").unwrap();
    let location = IndexLocation::new(root, Some(index_dir)).unwrap();
    let t = Instant::now();
    let snapshot = Snapshot::open(&location).unwrap();
    let open_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let dense = snapshot.dense_search(&query, 10, None, false);
    let dense_ms = t.elapsed().as_secs_f64() * 1000.0;
    let t = Instant::now();
    let lexical = snapshot.lexical_search("token limit", 10).unwrap();
    let lexical_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(!dense.is_empty() && !lexical.is_empty(), "the index answers");
    // Steady state per mode (the trigram query embedding costs microseconds; the real model
    // adds ~1.5 ms to dense and hybrid, see the query-latency section).
    let mut modes = serde_json::Map::new();
    for mode in [Mode::Hybrid, Mode::Dense, Mode::Lexical] {
        let mut times = Vec::new();
        for round in 0..60 {
            let text = format!("{} the {} {}", WORDS[round % WORDS.len()], WORDS[(round * 7) % WORDS.len()], "limit");
            let t = Instant::now();
            let found = search(&snapshot, Some(&embedder), &Query { mode, ..Query::new(text) }).unwrap();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert!(!found.results.is_empty());
        }
        times.sort_by(f64::total_cmp);
        modes.insert(format!("{mode:?}"), serde_json::json!([times[times.len() / 2], times[times.len() * 95 / 100]]));
    }
    let stats = snapshot.stats();
    println!(
        "{}",
        serde_json::json!({
            "open_ms": open_ms, "dense_ms": dense_ms, "lexical_ms": lexical_ms,
            "peak_rss_kb": peak_rss_kb(), "chunks": stats.chunks, "ann_slots": stats.ann_slots, "modes": modes,
            "memory_estimate_bytes": stats.memory_estimate_bytes,
        })
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let get = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    if let (Some(root), Some(index_dir)) = (get("--open"), get("--index-dir")) {
        open_and_answer(Path::new(&root), Path::new(&index_dir));
        return;
    }
    let chunks: usize = get("--chunks").and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let temp = tempfile::tempdir().unwrap();
    let root: PathBuf = get("--keep").map(PathBuf::from).unwrap_or_else(|| temp.path().join("tree"));
    std::fs::create_dir_all(&root).unwrap();
    let location = IndexLocation::new(&root, None).unwrap();
    if Snapshot::open(&location).map(|s| s.chunk_count()).unwrap_or(0) == 0 {
        generate_tree(&root, chunks);
        let t = Instant::now();
        let mut lexical_at = None;
        let stats = update(&location, &FakeEmbedder::new(DIM), &IndexOptions::default(), &mut |p| {
            if let Progress::Chunked { .. } = p {
                lexical_at.get_or_insert(t.elapsed().as_secs_f64());
            }
            if let Progress::BuildingAnn { vectors } = p {
                eprintln!("building the HNSW graph over {vectors} vectors ({:.0} s in)", t.elapsed().as_secs_f64());
            }
        })
        .unwrap();
        eprintln!(
            "indexed {} files, {} chunks in {:.0} s (lexical search live after {:.1} s; trigram embedder)",
            stats.files,
            stats.chunks,
            stats.seconds,
            lexical_at.unwrap_or(0.0)
        );
    }
    let index_dir = location.dir.clone();
    let f32_run = warm_start(&root, &index_dir);
    let f32_parts = parts(&index_dir);
    // The same index with its vector file in int8 (`raggrep index --vectors int8`), measured the
    // same way, and the dense top 10 of both against an exact f32 scan.
    let probes: Vec<Vector> = (0..50)
        .map(|i| {
            let text = format!(
                "{} the {} {}",
                WORDS[i % WORDS.len()],
                WORDS[(i * 11 + 3) % WORDS.len()],
                WORDS[(i * 5) % WORDS.len()]
            );
            FakeEmbedder::new(DIM).embed_query(&text).unwrap()
        })
        .collect();
    let top10 = |location: &IndexLocation, exact: bool| -> Vec<Vec<usize>> {
        let snapshot = Snapshot::open(location).unwrap();
        probes.iter().map(|q| snapshot.dense_search(q, 10, None, exact).into_iter().map(|h| h.0).collect()).collect()
    };
    let truth = top10(&location, true);
    let f32_graph = top10(&location, false);
    // A copy of the index is converted, so a kept tree stays f32 for the next run.
    let int8_dir = root.with_extension("int8-index");
    let _ = std::fs::remove_dir_all(&int8_dir);
    fixture::copy_dir(&index_dir, &int8_dir);
    let int8_location = IndexLocation::new(&root, Some(&int8_dir)).unwrap();
    let t = Instant::now();
    let options = IndexOptions { vectors: Some(VectorEncoding::Int8), ..IndexOptions::default() };
    update(&int8_location, &FakeEmbedder::new(DIM), &options, &mut |_| {}).unwrap();
    let convert_s = t.elapsed().as_secs_f64();
    // Once more, so the f32 file the previous generation kept for its readers is collected.
    update(&int8_location, &FakeEmbedder::new(DIM), &IndexOptions::default(), &mut |_| {}).unwrap();
    let int8_exact = top10(&int8_location, true);
    let int8_graph = top10(&int8_location, false);
    let recall = |found: &[Vec<usize>]| -> f64 {
        let hits: usize = found.iter().zip(&truth).map(|(f, t)| f.iter().filter(|c| t.contains(c)).count()).sum();
        hits as f64 / (truth.len() * 10) as f64
    };
    let int8_run = warm_start(&root, &int8_dir);
    let int8_parts = parts(&int8_dir);

    let n = f32_run["chunks"].as_u64().unwrap() as f64;
    let ms = |run: &serde_json::Value, key: &str| run[key].as_f64().unwrap();
    println!("| {} chunks ({} in the graph) | f32 vectors | int8 vectors |", f32_run["chunks"], f32_run["ann_slots"]);
    println!("|---|---:|---:|");
    for (name, key) in
        [("open snapshot", "open_ms"), ("first dense answer", "dense_ms"), ("first lexical answer", "lexical_ms")]
    {
        println!("| {name} | {:.2} ms | {:.2} ms |", ms(&f32_run, key), ms(&int8_run, key));
    }
    let first = |run: &serde_json::Value| ms(run, "open_ms") + ms(run, "dense_ms") + ms(run, "lexical_ms");
    println!("| **warm start to first answers** | **{:.1} ms** | **{:.1} ms** |", first(&f32_run), first(&int8_run));
    println!(
        "| peak RSS of that process | {:.0} MB | {:.0} MB |",
        ms(&f32_run, "peak_rss_kb") / 1024.0,
        ms(&int8_run, "peak_rss_kb") / 1024.0
    );
    println!(
        "| dense top 10 vs exact f32 scan (50 queries), graph | {:.3} | {:.3} |",
        recall(&f32_graph),
        recall(&int8_graph)
    );
    println!("| dense top 10 vs exact f32 scan, exact scan | 1.000 | {:.3} |", recall(&int8_exact));
    println!();
    println!("Converting to int8 (one update, the graph kept): {convert_s:.1} s.");
    println!();
    println!(
        "| query at {} chunks (60 queries, trigram query embedding) | f32 p50 / p95 ms | int8 p50 / p95 ms |",
        f32_run["chunks"]
    );
    println!("|---|---:|---:|");
    for (mode, times) in f32_run["modes"].as_object().unwrap() {
        let other = &int8_run["modes"][mode];
        println!(
            "| {mode} | {:.2} / {:.2} | {:.2} / {:.2} |",
            times[0].as_f64().unwrap(),
            times[1].as_f64().unwrap(),
            other[0].as_f64().unwrap(),
            other[1].as_f64().unwrap()
        );
    }
    println!();
    println!("| on disk | f32: MB | bytes/chunk | int8: MB | bytes/chunk |");
    println!("|---|---:|---:|---:|---:|");
    for ((name, a), (_, b)) in f32_parts.iter().zip(&int8_parts) {
        println!(
            "| {name} | {:.1} | {:.0} | {:.1} | {:.0} |",
            *a as f64 / 1e6,
            *a as f64 / n,
            *b as f64 / 1e6,
            *b as f64 / n
        );
    }
}

/// Warm start in fresh processes (the page cache is warm after the first, as for an editor
/// reopening a workspace); the median of three.
fn warm_start(root: &Path, index_dir: &Path) -> serde_json::Value {
    let mut runs: Vec<serde_json::Value> = (0..3)
        .map(|_| {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .arg("--open")
                .arg(root)
                .arg("--index-dir")
                .arg(index_dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    runs.sort_by(|a, b| a["open_ms"].as_f64().unwrap().total_cmp(&b["open_ms"].as_f64().unwrap()));
    runs.swap_remove(1)
}

/// Bytes on disk by part, and the total.
fn parts(index_dir: &Path) -> Vec<(&'static str, u64)> {
    let mut parts = vec![
        // The current generation's manifest (the previous one stays until the next update).
        (
            "manifest (rkyv)",
            std::fs::read_to_string(index_dir.join("CURRENT")).map_or(0, |name| dir_bytes(index_dir, name.trim())),
        ),
        ("vectors", dir_bytes(index_dir, "vectors-")),
        ("HNSW graph", dir_bytes(index_dir, "ann-")),
        ("lexical (tantivy)", dir_bytes(index_dir, "lexical")),
    ];
    let total = parts.iter().map(|p| p.1).sum();
    parts.push(("**total**", total));
    parts
}
