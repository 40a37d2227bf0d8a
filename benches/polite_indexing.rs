//! What background indexing costs the editor: `raggrep.search` round trips through the real
//! language server while it embeds a tree from scratch, with `indexPriority` `normal` and `low`
//! (the default), against the same searches once indexing is done (the baseline, same run).
//! Also how long the index took each way.
//!
//! `cargo bench --bench polite_indexing -- [TREE] [--threads N] [--searches N]` (default TREE:
//! this repo's `server/src`, copied; the machine-wide embedding cache is off so the model runs)

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/support/fixture.rs"]
mod fixture;
#[path = "../tests/support/lsp_client.rs"]
mod lsp_client;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lsp_client::{Client, uri};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_raggrep");
const QUERIES: [&str; 4] =
    ["read a file from disk", "parse the command line", "write the index atomically", "split identifiers"];

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.95))
}

struct Run {
    during: Vec<f64>,
    idle: Vec<f64>,
    index_s: f64,
}

fn run(root: &Path, priority: &str, threads: usize, searches: usize) -> Run {
    let _ = fs::remove_dir_all(root.join(".raggrep"));
    let mut client = Client::start(BIN, root);
    client.request(
        "initialize",
        json!({"processId": null, "rootUri": uri(root), "workspaceFolders": [{"uri": uri(root), "name": "ws"}],
               "capabilities": {}, "initializationOptions": {"indexPriority": priority, "indexThreads": threads}}),
    );
    let started = Instant::now();
    client.notify("initialized", json!({}));
    let root_name = root.display().to_string();
    let done = |client: &Client| {
        client
            .notifications
            .iter()
            .any(|n| n["method"] == "raggrep/indexUpdated" && n["params"]["root"] == root_name.as_str())
    };
    let search = |client: &mut Client, i: usize| {
        let t = Instant::now();
        let answer: Value = client.command("raggrep.search", json!({"query": QUERIES[i % QUERIES.len()], "k": 10}));
        assert!(answer["results"].is_array(), "{answer}");
        t.elapsed().as_secs_f64() * 1000.0
    };
    // The first search loads the query model: not a latency of interest.
    search(&mut client, 0);
    let mut during = Vec::new();
    let mut i = 1;
    while !done(&client) {
        let ms = search(&mut client, i);
        // Only searches that ran while the indexer was still at work.
        if !done(&client) {
            during.push(ms);
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let index_s = started.elapsed().as_secs_f64();
    let idle: Vec<f64> = (0..searches).map(|j| search(&mut client, j)).collect();
    assert_eq!(client.shutdown_and_exit(), 0);
    Run { during, idle, index_s }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut tree = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/server/src"));
    let (mut threads, mut searches) = (0usize, 30usize);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--threads" => threads = it.next().and_then(|v| v.parse().ok()).unwrap_or(threads),
            "--searches" => searches = it.next().and_then(|v| v.parse().ok()).unwrap_or(searches),
            other => tree = PathBuf::from(other),
        }
    }
    // SAFETY: set before any thread of this process starts; the servers inherit it.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var("RAGGREP_EMBEDDING_CACHE", "off");
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    fixture::copy_dir_except(&tree, &root, &[".raggrep", "target", ".git"]);
    fs::create_dir_all(root.join(".git")).unwrap(); // a project: no consent prompt
    let root = root.canonicalize().unwrap();

    println!(
        "| indexPriority | searches while indexing | p50 ms | p95 ms | idle p50 ms | idle p95 ms | p50 / idle p50 | index s |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for priority in ["normal", "low"] {
        let r = run(&root, priority, threads, searches);
        let (p50, p95) = percentiles(r.during.clone());
        let (i50, i95) = percentiles(r.idle);
        println!(
            "| {priority} | {} | {p50:.1} | {p95:.1} | {i50:.1} | {i95:.1} | {:.2} | {:.1} |",
            r.during.len(),
            p50 / i50,
            r.index_s
        );
    }
}
