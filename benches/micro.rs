//! criterion micro-benchmarks of the hot paths:
//!
//! * `embed/tokenise+embed 8 chunks` — the real model on eight real chunks of this repository
//!   (batch 1, length-sorted: the indexer's default);
//! * `vector/graph search` and `vector/exact scan` — top-10 over 20k synthetic 384-d vectors;
//! * `lexical/bm25 search` — a tantivy query over an index of this repository's sources;
//! * `index/snapshot open` — opening that index (manifest map, slot table, graph, tantivy).
//!
//! `cargo bench --bench micro [-- FILTER]`. Needs `scripts/bootstrap.sh` for the model.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/support/fixture.rs"]
mod fixture;

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use raggrep::chunk::{ChunkConfig, chunk_file};
use raggrep::embed::{Assets, EmbedOptions, Embedder, FakeEmbedder, OnnxEmbedder, Vector};
use raggrep::index::{Ann, EF_SEARCH, IndexLocation, IndexOptions, Snapshot, update};
use raggrep::lang::Language;
use raggrep::walk::{WalkOptions, read_source, walk};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sample_chunks(n: usize) -> Vec<String> {
    let src = repo().join("server").join("src");
    let report = walk(&[src], &WalkOptions::default()).unwrap();
    let mut all = Vec::new();
    for file in &report.files {
        let language = Language::from_path(&file.abs_path);
        let Ok(source) = read_source(&file.abs_path, 1 << 20) else { continue };
        for chunk in chunk_file(&file.rel_path, &source.text, language, &ChunkConfig::default()) {
            all.push(chunk.text(&source.text).to_string());
        }
    }
    let step = (all.len() / n).max(1);
    all.into_iter().step_by(step).take(n).collect()
}

fn embed(c: &mut Criterion) {
    let Ok(assets) = Assets::locate(None, None) else {
        eprintln!("skipping embed: no model (run scripts/bootstrap.sh)");
        return;
    };
    let embedder = OnnxEmbedder::load(assets, EmbedOptions::default()).unwrap();
    let texts = sample_chunks(8);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut group = c.benchmark_group("embed");
    group.sample_size(20);
    group.bench_function("tokenise+embed 8 chunks", |b| b.iter(|| embedder.embed_documents(black_box(&refs)).unwrap()));
    group.bench_function("query (tokenise+embed 1 sentence)", |b| {
        b.iter(|| embedder.embed_query(black_box("where do we validate API tokens")).unwrap())
    });
    group.finish();
}

/// Clustered unit vectors (as in benches/ann_scale.rs).
fn synthetic(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut state = seed;
    let mut gauss = move || {
        (0..4)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32
            })
            .sum::<f32>()
            - 2.0
    };
    let centres: Vec<f32> = (0..500 * dim).map(|_| gauss()).collect();
    let mut out = Vec::with_capacity(n * dim);
    for i in 0..n {
        let c = &centres[(i * 7919 % 500) * dim..][..dim];
        let v: Vec<f32> = c.iter().map(|x| x / (dim as f32).sqrt() + 0.05 * gauss()).collect();
        out.extend_from_slice(Vector::normalized(v).as_slice());
    }
    out
}

fn vector(c: &mut Criterion) {
    let (n, dim) = (20_000, 384);
    let data = synthetic(n, dim, 0x9E37_79B9_7F4A_7C15);
    let queries = synthetic(64, dim, 0x1234_5678_9ABC_DEF1);
    let ann = Ann::build_from(&data, dim, &|_| true);
    let mut group = c.benchmark_group("vector");
    let mut i = 0;
    group.bench_function("graph search top-10 of 20k", |b| {
        b.iter(|| {
            i = (i + 1) % 64;
            ann.search(&data, black_box(&queries[i * dim..][..dim]), 10, EF_SEARCH, None)
        })
    });
    group.bench_function("exact scan top-10 of 20k", |b| {
        b.iter(|| {
            i = (i + 1) % 64;
            let q = &queries[i * dim..][..dim];
            let mut best: Vec<(usize, f32)> =
                data.chunks_exact(dim).map(|v| raggrep::embed::dot(q, v)).enumerate().collect();
            best.select_nth_unstable_by(9, |a, b| b.1.total_cmp(&a.1));
            best.truncate(10);
            best
        })
    });
    group.finish();
}

/// An index of this repository's sources (fake embeddings: the lexical side and the file
/// formats are what these benchmarks measure).
fn small_index() -> (tempfile::TempDir, IndexLocation) {
    let dir = tempfile::tempdir().unwrap();
    fixture::copy_dir(&repo().join("server").join("src"), &dir.path().join("src"));
    let location = IndexLocation::new(dir.path(), None).unwrap();
    update(&location, &FakeEmbedder::new(384), &IndexOptions::default(), &mut |_| {}).unwrap();
    (dir, location)
}

fn index(c: &mut Criterion) {
    let (_dir, location) = small_index();
    let snapshot = Snapshot::open(&location).unwrap();
    let mut group = c.benchmark_group("index");
    let questions = ["parse the query string", "atomic rename fsync", "HNSW graph search", "chunk markdown headings"];
    let mut i = 0;
    group.bench_function(format!("bm25 search ({} chunks)", snapshot.chunk_count()), |b| {
        b.iter(|| {
            i = (i + 1) % questions.len();
            snapshot.lexical_search(black_box(questions[i]), 50).unwrap()
        })
    });
    group.bench_function(format!("snapshot open ({} chunks)", snapshot.chunk_count()), |b| {
        b.iter(|| Snapshot::open(black_box(&location)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, embed, vector, index);
criterion_main!(benches);
