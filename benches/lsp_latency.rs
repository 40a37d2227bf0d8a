//! Language-server latencies, measured through the real binary over stdio:
//! start-up with an existing index (spawn → first `workspace/symbol` answer), `workspace/symbol`
//! latency, and didSave → searchable (save of an edited file until a query finds the new code).
//!
//! `cargo bench --bench lsp_latency -- [TREE] [--rounds N] [--in-place]` (default TREE: this
//! repo's `server/`, copied to a temp dir)

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/support/fixture.rs"]
mod fixture;
#[path = "../tests/support/lsp_client.rs"]
mod lsp_client;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use lsp_client::{Client, uri};
use serde_json::json;

const BIN: &str = env!("CARGO_BIN_EXE_raggrep");

fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.95))
}

fn largest_file(root: &Path, ext: &str) -> PathBuf {
    let mut best = (0, PathBuf::new());
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == ext) {
                let len = entry.metadata().unwrap().len();
                if len > best.0 && len < 40_000 {
                    best = (len, path);
                }
            }
        }
    }
    best.1
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut tree = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/server"));
    let mut rounds = 20usize;
    let mut in_place = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--rounds" => rounds = it.next().and_then(|v| v.parse().ok()).unwrap_or(rounds),
            // Use TREE itself (and its existing index) instead of a copy; edits are reverted.
            "--in-place" => in_place = true,
            other => tree = PathBuf::from(other),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let root = if in_place { tree.clone() } else { dir.path().join("ws") };
    if !in_place {
        fixture::copy_dir_except(&tree, &root, &[".raggrep", "target", ".git"]);
    }
    fs::create_dir_all(root.join(".git")).unwrap(); // a project: no consent prompt
    let root = root.canonicalize().unwrap();
    let status = Command::new(BIN).args(["index", "."]).current_dir(&root).output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));

    // Start-up with an existing index: spawn → first workspace/symbol answer with results.
    let started = Instant::now();
    let mut client = Client::start(BIN, &root);
    client.request(
        "initialize",
        json!({"processId": null, "rootUri": uri(&root), "workspaceFolders": [{"uri": uri(&root), "name": "ws"}],
               "capabilities": {"window": {"workDoneProgress": true}}}),
    );
    client.notify("initialized", json!({}));
    loop {
        let found = client.request("workspace/symbol", json!({"query": "read a file from disk"}));
        if !found.as_array().unwrap().is_empty() {
            break;
        }
    }
    let startup_ms = started.elapsed().as_secs_f64() * 1000.0;
    client.wait_for("the start-up reconcile", |m| m["method"] == "raggrep/indexUpdated");

    let queries = [
        "read a file from disk",
        "parse the command line",
        "write the index atomically",
        "split identifiers",
        "search for similar code",
    ];
    let mut symbol_ms = Vec::new();
    for i in 0..rounds {
        let q = queries[i % queries.len()];
        let t = Instant::now();
        client.request("workspace/symbol", json!({"query": q}));
        symbol_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }

    // didSave → searchable: append a new function to a typical file, save, and time until a
    // query finds it.
    let file = largest_file(&root, "rs");
    let original = fs::read_to_string(&file).unwrap();
    let mut save_ms = Vec::new();
    for i in 0..rounds {
        let name = format!("bench_probe_{i}_{}", std::process::id());
        let text = format!(
            "{original}\n/// Returns the probe number for round {i}.\npub fn {name}() -> u32 {{\n    {i}\n}}\n"
        );
        fs::write(&file, &text).unwrap();
        let t = Instant::now();
        client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri(&file)}}));
        loop {
            let found = client.command("raggrep.search", json!({"query": name, "k": 1, "mode": "lexical"}));
            if found["results"][0]["symbol"].as_str() == Some(name.as_str()) {
                break;
            }
            client.wait_index_updated(&root);
        }
        save_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    fs::write(&file, &original).unwrap();
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri(&file)}}));
    client.wait_index_updated(&root);
    // Idle: the last update is published and nothing is queued; give the allocator a moment.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let status = fs::read_to_string(format!("/proc/{}/status", client.pid())).unwrap_or_default();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    let (idle_rss_mb, peak_rss_mb) = (field("VmRSS:"), field("VmHWM:"));
    assert_eq!(client.shutdown_and_exit(), 0);

    let chunks =
        String::from_utf8(Command::new(BIN).args(["status", "--json"]).current_dir(&root).output().unwrap().stdout)
            .unwrap();
    let chunks: serde_json::Value = serde_json::from_str(&chunks).unwrap();
    eprintln!(
        "tree: {} ({} files, {} chunks); edited file: {}",
        tree.display(),
        chunks["files"],
        chunks["chunks"],
        file.display()
    );
    let (sym50, sym95) = percentiles(symbol_ms);
    let (save50, save95) = percentiles(save_ms);
    println!("| measure | p50 ms | p95 ms |");
    println!("|---|---:|---:|");
    println!("| start-up with an existing index (spawn → first workspace/symbol answer) | {startup_ms:.0} | — |");
    println!("| workspace/symbol ({rounds} queries) | {sym50:.1} | {sym95:.1} |");
    println!("| didSave → searchable ({rounds} saves) | {save50:.1} | {save95:.1} |");
    println!();
    println!("| server memory ({} chunks, model loaded) | MB |", chunks["chunks"]);
    println!("|---|---:|");
    println!("| RSS at idle (after the saves) | {idle_rss_mb:.0} |");
    println!("| peak RSS of the session | {peak_rss_mb:.0} |");
}
