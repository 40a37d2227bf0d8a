//! The vector store (`raggrep db`, design seed 002) beside the seed's own stack, in one run:
//! store throughput and search latency at several sizes, raggrep's engine (rusqlite + sqlite-vec
//! linked in) against Debian's python3 + the PyPI sqlite-vec package running the seed's SQL on
//! the same vectors. Ratios within one run are what to compare; no timing is asserted.
//!
//!   cargo bench --bench vectordb -- [--sizes 1000,10000,100000] [--queries 50] [--single 300]
//!
//! Vectors are synthetic (normalised, seeded random, 384-d): the cost of SQLite and sqlite-vec
//! does not depend on what they mean. Embedding, which dominates a real `store` or `search`,
//! is measured separately with the real model. The Python side needs the sqlite-vec wheel that
//! `tests/vectordb/interop.sh` installs; without it only raggrep's numbers are printed.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use raggrep::vectordb::VectorDb;

const DIM: usize = 384;

struct Args {
    sizes: Vec<usize>,
    queries: usize,
    single: usize,
}

fn parse_args() -> Args {
    let mut args = Args { sizes: vec![1_000, 10_000, 100_000], queries: 50, single: 300 };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--sizes" => {
                args.sizes = it.next().unwrap().split(',').map(|s| s.trim().parse().unwrap()).collect();
            }
            "--queries" => args.queries = it.next().unwrap().parse().unwrap(),
            "--single" => args.single = it.next().unwrap().parse().unwrap(),
            _ => {} // cargo bench passes --bench
        }
    }
    args
}

/// xorshift64*: the same vectors on every run.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }

    fn unit_vector(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIM).map(|_| self.next_f32()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        v
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn write_f32(path: &Path, vectors: &[Vec<f32>]) {
    let bytes: Vec<u8> = vectors.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

#[derive(Debug, Default, Clone, Copy)]
struct Numbers {
    bulk_rows_per_s: f64,
    single_rows_per_s: f64,
    p50_ms: f64,
    p95_ms: f64,
}

fn raggrep_side(dir: &Path, rows: &[Vec<f32>], queries: &[Vec<f32>], single: usize) -> Numbers {
    let path = dir.join("raggrep.sqlite");
    let mut db = VectorDb::open(&path).unwrap();
    let texts: Vec<String> = (0..rows.len()).map(|i| format!("row {i}")).collect();
    let started = Instant::now();
    for (start, batch) in rows.chunks(1_000).enumerate() {
        let base = start * 1_000;
        db.insert_many(batch.iter().enumerate().map(|(i, v)| (texts[base + i].as_str(), "value", v.as_slice())))
            .unwrap();
    }
    let bulk = rows.len() as f64 / started.elapsed().as_secs_f64();
    // One transaction per row: what each `store` call does.
    let extra: Vec<Vec<f32>> = queries.iter().cycle().take(single).cloned().collect();
    let started = Instant::now();
    for (i, v) in extra.iter().enumerate() {
        db.insert(&format!("single {i}"), "value", v).unwrap();
    }
    let single_rate = single as f64 / started.elapsed().as_secs_f64();
    let mut times = Vec::new();
    for q in queries {
        let t = Instant::now();
        let hits = db.search_vector(q, 5).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(hits.len(), 5);
    }
    times.sort_by(f64::total_cmp);
    Numbers {
        bulk_rows_per_s: bulk,
        single_rows_per_s: single_rate,
        p50_ms: percentile(&times, 0.5),
        p95_ms: percentile(&times, 0.95),
    }
}

/// The seed's SQL in Debian's python3 with the PyPI sqlite-vec package, on the same vectors.
const PYTHON: &str = r#"
import json, sqlite3, struct, sys, time
import sqlite_vec
dim, rows_path, queries_path, db_path, single = 384, sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def load(path):
    data = open(path, "rb").read()
    n = len(data) // (4 * dim)
    return [list(struct.unpack_from(f"<{dim}f", data, i * 4 * dim)) for i in range(n)]
rows, queries = load(rows_path), load(queries_path)
db = sqlite3.connect(db_path)
db.enable_load_extension(True); sqlite_vec.load(db); db.enable_load_extension(False)
db.execute("CREATE TABLE IF NOT EXISTS vector_store (key TEXT PRIMARY KEY, embedding_text TEXT UNIQUE, value TEXT, embedding VECTOR(384))")
INSERT = """INSERT INTO vector_store (embedding_text, value, embedding) VALUES (?1, ?2, vec_f32(?3))
   ON CONFLICT(embedding_text) DO UPDATE SET value=excluded.value, embedding=excluded.embedding"""
t = time.perf_counter()
for s in range(0, len(rows), 1000):
    with db:
        db.executemany(INSERT, ((f"row {s + i}", "value", json.dumps(v)) for i, v in enumerate(rows[s:s + 1000])))
bulk = len(rows) / (time.perf_counter() - t)
extra = [queries[i % len(queries)] for i in range(single)]
t = time.perf_counter()
for i, v in enumerate(extra):
    with db:
        db.execute(INSERT, (f"single {i}", "value", json.dumps(v)))
single_rate = single / (time.perf_counter() - t)
SEARCH = """SELECT embedding_text, value, vec_distance_cosine(embedding, vec_f32(?1)) AS score
  FROM vector_store ORDER BY score ASC LIMIT ?2"""
times = []
for q in queries:
    t = time.perf_counter()
    got = db.execute(SEARCH, (json.dumps(q), 5)).fetchall()
    times.append((time.perf_counter() - t) * 1000)
    assert len(got) == 5
times.sort()
pick = lambda p: times[min(len(times) - 1, round((len(times) - 1) * p))]
print(json.dumps({"bulk": bulk, "single": single_rate, "p50": pick(0.5), "p95": pick(0.95)}))
"#;

fn sqlite_vec_py() -> Option<PathBuf> {
    let home = std::env::var_os("RAGGREP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/raggrep")))?;
    let dir = home.join("tools/sqlite-vec-py/0.1.6");
    dir.join("sqlite_vec/__init__.py").is_file().then_some(dir)
}

fn python_side(dir: &Path, rows: &[Vec<f32>], queries: &[Vec<f32>], single: usize) -> Option<Numbers> {
    let lib = sqlite_vec_py()?;
    let (rows_path, queries_path) = (dir.join("rows.f32"), dir.join("queries.f32"));
    write_f32(&rows_path, rows);
    write_f32(&queries_path, queries);
    let out = Command::new("/usr/bin/python3")
        .args(["-c", PYTHON])
        .arg(&rows_path)
        .arg(&queries_path)
        .arg(dir.join("python.sqlite"))
        .arg(single.to_string())
        .env("PYTHONPATH", lib)
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("python side failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(Numbers {
        bulk_rows_per_s: v["bulk"].as_f64()?,
        single_rows_per_s: v["single"].as_f64()?,
        p50_ms: v["p50"].as_f64()?,
        p95_ms: v["p95"].as_f64()?,
    })
}

/// Milliseconds per text for the real model's document call (what store and search add).
fn embedding_ms() -> Option<f64> {
    use raggrep::embed::{Assets, EmbedOptions, Embedder, OnnxEmbedder};
    let embedder = OnnxEmbedder::load(Assets::locate(None, None).ok()?, EmbedOptions::default()).ok()?;
    let texts: Vec<String> =
        (0..40).map(|i| format!("note {i}: how to renew a passport, bake bread or fix a flaky test #{i}")).collect();
    embedder.embed_documents(&[texts[0].as_str()]).ok()?; // warm-up
    let started = Instant::now();
    for t in &texts {
        embedder.embed_documents(&[t.as_str()]).ok()?;
    }
    Some(started.elapsed().as_secs_f64() * 1000.0 / texts.len() as f64)
}

fn main() {
    let args = parse_args();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    println!(
        "| rows | store, bulk (rows/s) raggrep / Python | ratio | store, 1 tx per row (rows/s) raggrep / Python | ratio | search p50 (ms) raggrep / Python | p95 (ms) raggrep / Python | p50 ratio |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut python_missing = false;
    for &size in &args.sizes {
        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<Vec<f32>> = (0..size).map(|_| rng.unit_vector()).collect();
        let queries: Vec<Vec<f32>> = (0..args.queries).map(|_| rng.unit_vector()).collect();
        let ours = raggrep_side(dir.path(), &rows, &queries, args.single);
        let theirs = python_side(dir.path(), &rows, &queries, args.single);
        python_missing |= theirs.is_none();
        let p = theirs.unwrap_or_default();
        let ratio = |a: f64, b: f64| if b > 0.0 { format!("{:.2}×", a / b) } else { "–".into() };
        println!(
            "| {size} | {:.0} / {:.0} | {} | {:.0} / {:.0} | {} | {:.2} / {:.2} | {:.2} / {:.2} | {} |",
            ours.bulk_rows_per_s,
            p.bulk_rows_per_s,
            ratio(ours.bulk_rows_per_s, p.bulk_rows_per_s),
            ours.single_rows_per_s,
            p.single_rows_per_s,
            ratio(ours.single_rows_per_s, p.single_rows_per_s),
            ours.p50_ms,
            p.p50_ms,
            ours.p95_ms,
            p.p95_ms,
            ratio(p.p50_ms, ours.p50_ms),
        );
    }
    println!();
    println!(
        "Synthetic normalised 384-d vectors, {} queries (top 5) per size; bulk store in transactions of 1,000 rows, \
         then {} stores of one transaction each; search is the seed's exact scan (`vec_distance_cosine … ORDER BY \
         score`). Ratios: raggrep's throughput over Python's, Python's latency over raggrep's (above 1 = raggrep faster).",
        args.queries, args.single
    );
    if python_missing {
        println!("(Python side not run: install the sqlite-vec wheel with `bash tests/vectordb/interop.sh`.)");
    }
    match embedding_ms() {
        Some(ms) => println!(
            "Embedding one text with the real model (document call, what each store and search adds): {ms:.1} ms."
        ),
        None => println!("Embedding not measured: model not installed (scripts/bootstrap.sh)."),
    }
}
