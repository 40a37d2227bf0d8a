//! Query latency per mode and HNSW recall@10 against the exact scan, on an existing index.
//!
//! `cargo bench --bench query_latency -- ROOT [--rounds N]`
//!
//! Queries are natural-language questions plus symbol names taken from the index itself. The
//! time includes embedding the query (dense, hybrid) and building snippets, i.e. what a user
//! waits for after the model is loaded. Warm start = opening the snapshot (manifest map, slot
//! table, HNSW load, tantivy open) until the first answer.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Instant;

use raggrep::embed::{Assets, EmbedOptions, Embedder, OnnxEmbedder};
use raggrep::index::{IndexLocation, Snapshot};
use raggrep::search::{Fusion, Mode, Query, search};

#[path = "support/latency.rs"]
mod latency;
use latency::{QUESTIONS, percentile};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut root = PathBuf::from(".");
    let mut rounds = 3usize;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            other => root = PathBuf::from(other),
        }
    }
    let location = IndexLocation::new(&root, None).unwrap();
    let embedder = OnnxEmbedder::load(Assets::locate(None, None).unwrap(), EmbedOptions::default()).unwrap();
    let _ = embedder.embed_query("warm up").unwrap();

    let started = Instant::now();
    let snapshot = Snapshot::open(&location).unwrap();
    let first = search(&snapshot, Some(&embedder), &Query::new(QUESTIONS[0])).unwrap();
    let warm_start_ms = started.elapsed().as_secs_f64() * 1000.0;
    assert!(!first.results.is_empty());
    let stats = snapshot.stats();
    eprintln!(
        "index: {} files, {} chunks, {} vectors ({} in HNSW), {:.1} MB on disk; warm start to first answer {:.0} ms",
        stats.files,
        stats.chunks,
        stats.vectors,
        stats.ann_slots,
        stats.bytes_on_disk as f64 / 1e6,
        warm_start_ms
    );

    let mut queries: Vec<String> = QUESTIONS.iter().map(|q| q.to_string()).collect();
    let step = (snapshot.chunk_count() / 16).max(1);
    for i in (0..snapshot.chunk_count()).step_by(step).take(16) {
        if let Some(symbol) = snapshot.chunk(i).and_then(|c| c.symbol_path()) {
            queries.push(symbol);
        }
    }

    println!("| mode | queries | p50 ms | p95 ms |");
    println!("|---|---:|---:|---:|");
    // The default hybrid (learned fusion) beside the fixed 0.5/0.5 sum: what the learned
    // fusion's features cost per query, in the same run.
    // `--rerank` adds one reranker run per candidate it re-sorts (the best 10).
    let runs = [
        ("Hybrid (default: learned fusion)", Mode::Hybrid, Fusion::Learned, false),
        ("Hybrid + reranker over the best 10 (--rerank)", Mode::Hybrid, Fusion::Learned, true),
        ("Hybrid (weighted 0.5/0.5)", Mode::Hybrid, Fusion::Weighted { dense_weight: 0.5 }, false),
        ("Dense", Mode::Dense, Fusion::default(), false),
        ("Lexical", Mode::Lexical, Fusion::default(), false),
    ];
    for (label, mode, fusion, rerank) in runs {
        let mut times = Vec::new();
        for _ in 0..rounds {
            for q in &queries {
                let query = Query { mode, fusion, rerank, ..Query::new(q.clone()) };
                let t = Instant::now();
                let _ = search(&snapshot, Some(&embedder), &query).unwrap();
                times.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        times.sort_by(f64::total_cmp);
        println!("| {label} | {} | {:.2} | {:.2} |", times.len(), percentile(&times, 0.5), percentile(&times, 0.95));
    }

    // Recall@10 of the graph against the exact scan, and the dense search alone (no embedding).
    let mut recall_sum = 0.0;
    let mut graph_ms = Vec::new();
    let mut exact_ms = Vec::new();
    for q in &queries {
        let vector = embedder.embed_query(q).unwrap();
        let t = Instant::now();
        let approx = snapshot.dense_search(&vector, 10, None, false);
        graph_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        let exact = snapshot.dense_search(&vector, 10, None, true);
        exact_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let found = exact.iter().filter(|(c, _)| approx.iter().any(|(a, _)| a == c)).count();
        recall_sum += found as f64 / exact.len().max(1) as f64;
    }
    graph_ms.sort_by(f64::total_cmp);
    exact_ms.sort_by(f64::total_cmp);
    println!();
    println!("| vector search | p50 ms | p95 ms |");
    println!("|---|---:|---:|");
    println!("| graph (HNSW + exact tail) | {:.3} | {:.3} |", percentile(&graph_ms, 0.5), percentile(&graph_ms, 0.95));
    println!("| exact scan | {:.3} | {:.3} |", percentile(&exact_ms, 0.5), percentile(&exact_ms, 0.95));
    println!();
    println!("HNSW recall@10 vs exact: {:.3} over {} queries", recall_sum / queries.len() as f64, queries.len());
}
