//! The team index (PostgreSQL + pgvector) beside the local engine, on the same corpus.
//!
//! `bash benches/team_backend.sh [--quick] [ROOT] [--synthetic N]` starts a PostgreSQL 17 +
//! pgvector on loopback and runs
//! `cargo bench --bench team_backend -- --url URL ROOT [--synthetic N] [--rounds R]`:
//!
//! 1. push ROOT's index (it must exist: `raggrep index ROOT`) into an empty team index: seconds
//!    and chunks/s; then push again unchanged;
//! 2. hybrid query latency, p50/p95, local search against the team index (same questions, same
//!    query model, embedding included in both);
//! 3. recall@10 of pgvector's HNSW against an exact scan, on ROOT's real embeddings;
//! 4. N synthetic unit vectors added as another repository, then dense and hybrid latency at that
//!    size (latency only: random vectors say nothing about quality).

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Instant;

use raggrep::embed::{Assets, EmbedOptions, Embedder, OnnxEmbedder};
use raggrep::index::{IndexLocation, Snapshot};
use raggrep::search::{Mode, Query, search};
use raggrep::team::TeamUrl;
use raggrep::team::push::{RepoIdentity, push, vector_text};
use raggrep::team::schema::{IndexModel, migrate};
use raggrep::team::search::{TeamQuery, search as team_search};

#[path = "support/latency.rs"]
mod latency;
use latency::{QUESTIONS, percentile};

fn timed(rounds: usize, mut f: impl FnMut(&str)) -> (f64, f64) {
    let mut ms = Vec::new();
    for _ in 0..rounds {
        for q in QUESTIONS {
            let t = Instant::now();
            f(q);
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    ms.sort_by(f64::total_cmp);
    (percentile(&ms, 0.5), percentile(&ms, 0.95))
}

/// xorshift: reproducible synthetic vectors without a dependency.
fn synthetic_vector(seed: &mut u64, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            (*seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut root = PathBuf::from(".");
    let mut url = None;
    let mut rounds = 3usize;
    let mut synthetic = 0usize;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--url" => url = it.next().cloned(),
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            "--synthetic" => synthetic = it.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            other => root = PathBuf::from(other),
        }
    }
    let url = TeamUrl::parse(&url.expect("--url URL (benches/team_backend.sh starts a server)")).unwrap();
    let location = IndexLocation::new(&root, None).unwrap();
    let snapshot = Snapshot::open(&location).expect("ROOT has no index: run `raggrep index ROOT` first");
    let embedder = OnnxEmbedder::load(Assets::locate(None, None).unwrap(), EmbedOptions::default()).unwrap();
    let _ = embedder.embed_query("warm up").unwrap();
    let info = embedder.info();
    let model = IndexModel { id: info.id.clone(), dim: info.dim };
    let mut client = url.connect().unwrap();
    migrate(&mut client, &url, &model).unwrap();
    let name = root.canonicalize().unwrap().file_name().unwrap().to_string_lossy().to_string();
    let identity = RepoIdentity { name: format!("bench/{name}@main"), remote: None, branch: None, commit: None };

    println!("## Team index (PostgreSQL 17 + pgvector 0.8.0, loopback) beside the local engine\n");
    println!("Corpus `{}`: {} chunks, model `{}`.\n", root.display(), snapshot.chunk_count(), model.id);
    let cold = push(&mut client, &url, &snapshot, &identity, 256, &mut |_| {}).unwrap();
    let warm = push(&mut client, &url, &snapshot, &identity, 256, &mut |_| {}).unwrap();
    println!("| push | seconds | chunks sent | chunks/s |");
    println!("|---|---:|---:|---:|");
    println!(
        "| first push (empty team index) | {:.2} | {} | {:.0} |",
        cold.seconds,
        cold.chunks_sent,
        cold.chunks_sent as f64 / cold.seconds.max(1e-9)
    );
    println!("| push again, nothing changed | {:.3} | {} | — |\n", warm.seconds, warm.chunks_sent);

    let team = |client: &mut postgres::Client, q: &str, mode: Mode| {
        let query = TeamQuery { text: q.to_string(), k: 10, mode, repo_glob: None };
        team_search(client, &url, Some(&embedder as &dyn Embedder), &model, &query).unwrap()
    };
    let (local_p50, local_p95) = timed(rounds, |q| {
        let _ = search(&snapshot, Some(&embedder), &Query::new(q)).unwrap();
    });
    let (team_p50, team_p95) = timed(rounds, |q| {
        let _ = team(&mut client, q, Mode::Hybrid);
    });
    let (dense_p50, dense_p95) = timed(rounds, |q| {
        let _ = team(&mut client, q, Mode::Dense);
    });
    println!("| query ({} questions × {rounds}, k = 10, embedding included) | p50 ms | p95 ms |", QUESTIONS.len());
    println!("|---|---:|---:|");
    println!("| local engine, hybrid | {local_p50:.1} | {local_p95:.1} |");
    println!("| team index, hybrid | {team_p50:.1} | {team_p95:.1} |");
    println!("| team index, dense | {dense_p50:.1} | {dense_p95:.1} |\n");

    // Recall of the HNSW scan against an exact one, on the corpus's real vectors.
    let mut hits = 0usize;
    let mut total = 0usize;
    for q in QUESTIONS {
        let v = vector_text(embedder.embed_query(q).unwrap().as_slice());
        let top = |client: &mut postgres::Client, exact: bool| -> Vec<String> {
            let mut tx = client.transaction().unwrap();
            tx.batch_execute(if exact { "SET LOCAL enable_indexscan = off" } else { "SET LOCAL hnsw.ef_search = 40" })
                .unwrap();
            let rows = tx
                .query("SELECT key FROM raggrep.chunk ORDER BY embedding <=> $1::text::vector LIMIT 10", &[&v])
                .unwrap();
            tx.commit().unwrap();
            rows.iter().map(|r| r.get(0)).collect()
        };
        let exact = top(&mut client, true);
        let approx = top(&mut client, false);
        total += exact.len();
        hits += exact.iter().filter(|k| approx.contains(k)).count();
    }
    println!(
        "HNSW recall@10 against an exact scan (ef_search 40, the default): {:.3} over {} questions.\n",
        hits as f64 / total.max(1) as f64,
        QUESTIONS.len()
    );

    if synthetic > 0 {
        let t = Instant::now();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut tx = client.transaction().unwrap();
        let repo_id: i64 = tx
            .query_one(
                "INSERT INTO raggrep.repo (name) VALUES ('synthetic@main')
                 ON CONFLICT (name) DO UPDATE SET pushed_at = now() RETURNING id",
                &[],
            )
            .unwrap()
            .get(0);
        tx.execute("DELETE FROM raggrep.file WHERE repo_id = $1", &[&repo_id]).unwrap();
        tx.execute(
            "INSERT INTO raggrep.file (repo_id, path, digest, language) VALUES ($1, 'synthetic.txt', '-', 'text')",
            &[&repo_id],
        )
        .unwrap();
        tx.commit().unwrap();
        for start in (0..synthetic).step_by(1000) {
            let n = 1000.min(synthetic - start);
            let keys: Vec<String> = (start..start + n).map(|i| format!("synthetic:{i}")).collect();
            let vectors: Vec<String> = (0..n).map(|_| vector_text(&synthetic_vector(&mut seed, model.dim))).collect();
            let lines: Vec<i32> = (start..start + n).map(|i| i as i32 + 1).collect();
            client
                .execute(
                    "INSERT INTO raggrep.chunk (key, embedding, content, terms)
                     SELECT k, v::vector, 'synthetic', to_tsvector('simple', 'synthetic')
                     FROM unnest($1::text[], $2::text[]) AS u(k, v) ON CONFLICT (key) DO NOTHING",
                    &[&keys, &vectors],
                )
                .unwrap();
            client
                .execute(
                    "INSERT INTO raggrep.entry (repo_id, path, start_line, end_line, kind, symbol, container, chunk_key)
                     SELECT $1, 'synthetic.txt', l, l, 'text', '', '', k FROM unnest($2::text[], $3::int[]) AS u(k, l)",
                    &[&repo_id, &keys, &lines],
                )
                .unwrap();
        }
        let loaded = t.elapsed().as_secs_f64();
        let (s_dense_p50, s_dense_p95) = timed(rounds, |q| {
            let _ = team(&mut client, q, Mode::Dense);
        });
        let (s_hybrid_p50, s_hybrid_p95) = timed(rounds, |q| {
            let _ = team(&mut client, q, Mode::Hybrid);
        });
        let count: i64 = client.query_one("SELECT count(*) FROM raggrep.chunk", &[]).unwrap().get(0);
        println!(
            "With {synthetic} synthetic vectors added ({count} chunks in all; inserted with HNSW upkeep in {loaded:.0} s, {:.0}/s):\n",
            synthetic as f64 / loaded.max(1e-9)
        );
        println!("| query at {count} chunks | p50 ms | p95 ms |");
        println!("|---|---:|---:|");
        println!("| team index, dense | {s_dense_p50:.1} | {s_dense_p95:.1} |");
        println!("| team index, hybrid | {s_hybrid_p50:.1} | {s_hybrid_p95:.1} |");
    }
}
