//! A 100k-chunk index: bytes on disk per chunk (by part), warm start (open an existing index to
//! the first dense and lexical answers, in a fresh process) and that process's peak RSS.
//!
//! `cargo bench --bench scale_index -- [--chunks 100000] [--keep DIR]`
//!
//! The tree is generated (files of small documented Rust functions over a shared vocabulary,
//! ~one chunk each) and embedded with the deterministic trigram embedder at 384 dimensions: the
//! model is not what is measured here, and embedding 100k chunks with it takes hours on two
//! cores. Everything else — walk, chunking, manifest, vector file, HNSW graph, tantivy — is
//! the real indexer.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use raggrep::embed::{Embedder, FakeEmbedder};
use raggrep::index::{IndexLocation, IndexOptions, Progress, Snapshot, update};
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
fn open_and_answer(root: &Path) {
    let embedder = FakeEmbedder::new(DIM);
    let query = embedder.embed_query("check the token against the limit").unwrap();
    let location = IndexLocation::new(root, None).unwrap();
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
    if let Some(root) = get("--open") {
        open_and_answer(Path::new(&root));
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
    // Warm start in fresh processes (the page cache is warm after the first, as for an editor
    // reopening a workspace); keep the median of three.
    let mut runs: Vec<serde_json::Value> = (0..3)
        .map(|_| {
            let out =
                std::process::Command::new(std::env::current_exe().unwrap()).arg("--open").arg(&root).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    runs.sort_by(|a, b| a["open_ms"].as_f64().unwrap().total_cmp(&b["open_ms"].as_f64().unwrap()));
    let run = &runs[1];
    let n = run["chunks"].as_u64().unwrap() as f64;
    let parts = [
        ("manifest (rkyv)", dir_bytes(&index_dir, "manifest-")),
        ("vectors (f32)", dir_bytes(&index_dir, "vectors-")),
        ("HNSW graph", dir_bytes(&index_dir, "ann-")),
        ("lexical (tantivy)", dir_bytes(&index_dir, "lexical")),
    ];
    let total: u64 = parts.iter().map(|p| p.1).sum();
    println!("| {} chunks ({} in the graph) | value |", run["chunks"], run["ann_slots"]);
    println!("|---|---:|");
    println!("| open snapshot | {:.1} ms |", run["open_ms"].as_f64().unwrap());
    println!("| first dense answer | {:.2} ms |", run["dense_ms"].as_f64().unwrap());
    println!("| first lexical answer | {:.2} ms |", run["lexical_ms"].as_f64().unwrap());
    println!(
        "| **warm start to first answers** | **{:.1} ms** |",
        run["open_ms"].as_f64().unwrap() + run["dense_ms"].as_f64().unwrap() + run["lexical_ms"].as_f64().unwrap()
    );
    println!("| peak RSS of that process | {:.0} MB |", run["peak_rss_kb"].as_f64().unwrap() / 1024.0);
    println!();
    println!("| query at {} chunks (60 queries, trigram query embedding) | p50 ms | p95 ms |", run["chunks"]);
    println!("|---|---:|---:|");
    for (mode, times) in run["modes"].as_object().unwrap() {
        println!("| {mode} | {:.2} | {:.2} |", times[0].as_f64().unwrap(), times[1].as_f64().unwrap());
    }
    println!();
    println!("| on disk | MB | bytes/chunk |");
    println!("|---|---:|---:|");
    for (name, bytes) in parts.iter().chain([("**total**", total)].iter()) {
        println!("| {name} | {:.1} | {:.0} |", *bytes as f64 / 1e6, *bytes as f64 / n);
    }
}
