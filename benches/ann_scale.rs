//! HNSW at scale on synthetic unit vectors (384-d): build time, graph size and load time, search
//! latency p50/p95 and recall@10 against the exact scan at several `ef`, and hnsw_rs's own
//! search over the same graph, at 10k and 100k vectors.
//!
//! Then it grows each graph by insertion (`Ann::extend`, what an update does when new vectors
//! arrive) with `--insert` fresh vectors, and reports the time against the full build above
//! and recall@10 over all vectors afterwards.
//!
//! `cargo bench --bench ann_scale -- [--sizes 10000,100000] [--queries 200] [--ef 32,64,96,160] [--insert 1000]`
//!
//! The vectors are a mixture of 2,000 clusters (centre + noise, normalised), which is closer to
//! real embeddings than uniform noise (on which every ANN index degrades); queries are fresh
//! draws from the same mixture.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::time::Instant;

use raggrep::index::{Ann, EF_SEARCH};

const DIM: usize = 384;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Roughly normal (sum of uniforms).
    fn gauss(&mut self) -> f32 {
        (0..4).map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32).sum::<f32>() - 2.0
    }
}

fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
}

fn draw(rng: &mut Rng, centres: &[f32], noise: f32) -> Vec<f32> {
    let c = (rng.next() as usize) % (centres.len() / DIM);
    let mut v: Vec<f32> = (0..DIM).map(|i| centres[c * DIM + i] + noise * rng.gauss()).collect();
    normalize(&mut v);
    v
}

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[(v.len() - 1) / 2], v[((v.len() - 1) as f64 * 0.95) as usize])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let get = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let sizes: Vec<usize> = get("--sizes")
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000]);
    let n_queries: usize = get("--queries").and_then(|s| s.parse().ok()).unwrap_or(200);
    let n_insert: usize = get("--insert").and_then(|s| s.parse().ok()).unwrap_or(1000);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut centres: Vec<f32> = (0..2000 * DIM).map(|_| rng.gauss()).collect();
    for c in centres.chunks_mut(DIM) {
        normalize(c);
    }
    let efs: Vec<usize> = get("--ef")
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![32, 64, EF_SEARCH, 160]);
    let mut table = vec![
        "| vectors | search | ef | p50 ms | p95 ms | recall@10 |".to_string(),
        "|---:|---|---:|---:|---:|---:|".to_string(),
    ];
    let mut build_table = vec![
        "| vectors | hnsw_rs build s | flatten s | graph file MB | bytes/vector | load ms |".to_string(),
        "|---:|---:|---:|---:|---:|---:|".to_string(),
    ];
    let mut insert_table = vec![
        "| vectors | inserted | insert s | full build s | insert / build | recall@10 after |".to_string(),
        "|---:|---:|---:|---:|---:|---:|".to_string(),
    ];
    for &n in &sizes {
        let mut data = Vec::with_capacity(n * DIM);
        for _ in 0..n {
            data.extend(draw(&mut rng, &centres, 0.08));
        }
        let t = Instant::now();
        let hnsw = Ann::build_hnsw(&data, DIM, &|_| true);
        let build = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let built = Ann::from_hnsw(&hnsw, n);
        let flatten = t.elapsed().as_secs_f64();
        let dir = tempfile::tempdir().unwrap();
        built.dump(dir.path(), "ann").unwrap();
        drop(built);
        let t = Instant::now();
        let ann = Ann::load(dir.path(), "ann", n).unwrap();
        let load_ms = t.elapsed().as_secs_f64() * 1000.0;
        build_table.push(format!(
            "| {n} | {build:.1} | {flatten:.2} | {:.1} | {:.0} | {load_ms:.1} |",
            ann.size_bytes() as f64 / 1e6,
            ann.size_bytes() as f64 / n as f64
        ));

        let queries: Vec<Vec<f32>> = (0..n_queries).map(|_| draw(&mut rng, &centres, 0.08)).collect();
        let mut exact_ms = Vec::new();
        let mut truth = Vec::new();
        for q in &queries {
            let t = Instant::now();
            let mut exact: Vec<(usize, f32)> =
                data.chunks(DIM).map(|v| raggrep::embed::dot(v, q)).enumerate().collect();
            exact.select_nth_unstable_by(9, |a, b| b.1.total_cmp(&a.1));
            exact.truncate(10);
            exact_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            truth.push(exact.into_iter().map(|(s, _)| s).collect::<Vec<_>>());
        }
        let recall_of = |found: &[usize], truth: &[usize]| {
            truth.iter().filter(|s| found.contains(s)).count() as f64 / truth.len() as f64
        };
        let (e50, e95) = percentiles(exact_ms);
        table.push(format!("| {n} | exact scan | — | {e50:.3} | {e95:.3} | 1.000 |"));
        for &ef in &efs {
            let (mut times, mut recall) = (Vec::new(), 0.0);
            for (q, truth) in queries.iter().zip(&truth) {
                let t = Instant::now();
                let found = ann.search(&data, q, 10, ef, None);
                times.push(t.elapsed().as_secs_f64() * 1000.0);
                recall += recall_of(&found.iter().map(|f| f.0).collect::<Vec<_>>(), truth);
            }
            let (p50, p95) = percentiles(times);
            let chosen = if ef == EF_SEARCH { " (default)" } else { "" };
            table.push(format!(
                "| {n} | raggrep flat graph | {ef}{chosen} | {p50:.3} | {p95:.3} | {:.3} |",
                recall / n_queries as f64
            ));
        }
        // The same graph searched by hnsw_rs itself (what raggrep used before).
        let (mut times, mut recall) = (Vec::new(), 0.0);
        for (q, truth) in queries.iter().zip(&truth) {
            let t = Instant::now();
            let found = hnsw.search(q, 10, EF_SEARCH);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            recall += recall_of(&found.iter().map(|f| f.d_id).collect::<Vec<_>>(), truth);
        }
        let (p50, p95) = percentiles(times);
        table.push(format!(
            "| {n} | hnsw_rs search, same graph | {EF_SEARCH} | {p50:.3} | {p95:.3} | {:.3} |",
            recall / n_queries as f64
        ));
        drop(hnsw);

        let mut grown_data = data.clone();
        for _ in 0..n_insert {
            grown_data.extend(draw(&mut rng, &centres, 0.08));
        }
        let t = Instant::now();
        let grown = ann.extend(&grown_data, DIM, &|_| true);
        let insert = t.elapsed().as_secs_f64();
        let mut recall = 0.0;
        for q in &queries {
            let mut exact: Vec<(usize, f32)> =
                grown_data.chunks(DIM).map(|v| raggrep::embed::dot(v, q)).enumerate().collect();
            exact.select_nth_unstable_by(9, |a, b| b.1.total_cmp(&a.1));
            let truth: Vec<usize> = exact[..10].iter().map(|(s, _)| *s).collect();
            let found: Vec<usize> = grown.search(&grown_data, q, 10, EF_SEARCH, None).iter().map(|f| f.0).collect();
            recall += recall_of(&found, &truth);
        }
        insert_table.push(format!(
            "| {n} | {n_insert} | {insert:.2} | {build:.1} | {:.3} | {:.3} |",
            insert / build,
            recall / n_queries as f64
        ));
    }
    for line in build_table {
        println!("{line}");
    }
    println!();
    for line in table {
        println!("{line}");
    }
    println!();
    for line in insert_table {
        println!("{line}");
    }
}
