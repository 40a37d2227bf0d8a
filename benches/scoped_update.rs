//! A save on a big monorepo: one edited file's update when the tree is walked (the baseline)
//! against the update scoped to the path the editor named (what the language server and the
//! MCP watcher do), p50/p95 over several rounds on the same tree, same process, real model.
//!
//! The tree: `--files N` files (default 100,000) in 1,000 directories, all but `--code 200` of
//! them empty (the shape of a large monorepo's many small files, cheap to create), built under
//! `target/bench-scoped/` and indexed once.
//!
//! With `--cli BIN` it also times the command line as the git hooks run it: `raggrep index`
//! walking the tree against `raggrep index --paths-from FILE` with the one path a post-commit
//! hook hands over, the whole process each (start, model load, update, publish).
//!
//! `cargo bench --bench scoped_update -- [--files N] [--code N] [--rounds N] [--cli target/release/raggrep]`

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use raggrep::embed::{Assets, EmbedOptions, OnnxEmbedder};
use raggrep::index::{IndexLocation, IndexOptions, update};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn build_tree(root: &Path, files: usize, code: usize) {
    let marker = root.join(format!(".built-{files}-{code}"));
    if marker.exists() {
        return;
    }
    let _ = std::fs::remove_dir_all(root);
    for i in 0..files {
        let dir = root.join(format!("pkg{:03}", i % 1000));
        if i < 1000 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let text = if i < code {
            format!("pub fn handler_{i}(request: &str) -> usize {{\n    request.len() + {i}\n}}\n")
        } else {
            String::new()
        };
        std::fs::write(dir.join(format!("f{i:06}.rs")), text).unwrap();
    }
    std::fs::write(marker, b"").unwrap();
}

fn main() {
    let files = arg("--files", 100_000);
    let code = arg("--code", 200).min(files);
    let rounds = arg("--rounds", 10).max(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-scoped");
    let t = Instant::now();
    build_tree(&root, files, code);
    println!("tree: {files} files ({code} with code) in {:.1} s", t.elapsed().as_secs_f64());
    let assets = Assets::locate(None, None).expect("assets: run scripts/bootstrap.sh");
    let embedder = OnnxEmbedder::load(assets, EmbedOptions::default()).expect("model");
    let location = IndexLocation::new(&root, None).unwrap();
    let t = Instant::now();
    let stats = update(&location, &embedder, &IndexOptions::default(), &mut |_| {}).unwrap();
    println!("first index: {} files, {} chunks, {:.1} s", stats.files, stats.chunks, t.elapsed().as_secs_f64());

    let edited = "pkg000/f000000.rs";
    let mut walked = Vec::new();
    let mut scoped = Vec::new();
    for round in 0..rounds {
        for scope in [None, Some(vec![edited.to_string()])] {
            let text = format!("pub fn handler_0(request: &str) -> usize {{\n    request.len() * {round} + 7\n}}\n");
            let text = if scope.is_some() { text.replace("handler_0", "handler_zero") } else { text };
            std::fs::write(root.join(edited), text).unwrap();
            let options = IndexOptions { only_paths: scope.clone(), ..IndexOptions::default() };
            let t = Instant::now();
            let stats = update(&location, &embedder, &options, &mut |_| {}).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(stats.changed_files, 1, "{stats:?}");
            assert_eq!(stats.walked, scope.is_none(), "{stats:?}");
            if scope.is_some() { scoped.push(ms) } else { walked.push(ms) }
        }
    }
    println!();
    println!("| update after saving one file ({files} files) | p50 ms | p95 ms |");
    println!("|---|---:|---:|");
    println!("| walk the tree (baseline) | {:.1} | {:.1} |", percentile(&walked, 0.5), percentile(&walked, 0.95));
    println!("| scoped to the saved path | {:.1} | {:.1} |", percentile(&scoped, 0.5), percentile(&scoped, 0.95));
    println!("| **ratio walk / scoped (p50)** | **{:.1}×** | |", percentile(&walked, 0.5) / percentile(&scoped, 0.5));

    let args: Vec<String> = std::env::args().collect();
    let Some(bin) = args.iter().position(|a| a == "--cli").and_then(|i| args.get(i + 1)) else { return };
    let list = root.join(".raggrep/changed.list");
    std::fs::write(&list, format!("{edited}\0")).unwrap();
    let (mut walked, mut scoped) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for hooked in [false, true] {
            let text = format!(
                "pub fn handler_0(request: &str) -> usize {{\n    request.len() * {round} + {}\n}}\n",
                11 + usize::from(hooked)
            );
            std::fs::write(root.join(edited), text).unwrap();
            let mut command = std::process::Command::new(bin);
            command.arg("index").arg(&root).arg("--json");
            if hooked {
                command.arg("--paths-from").arg(&list);
            }
            let t = Instant::now();
            let out = command.output().unwrap();
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(stats["walked"], !hooked, "{stats}");
            if hooked { scoped.push(ms) } else { walked.push(ms) }
        }
    }
    println!();
    println!("| `raggrep index` after committing one file ({files} files), the whole process | p50 ms | p95 ms |");
    println!("|---|---:|---:|");
    println!(
        "| walking the tree (`raggrep index`) | {:.1} | {:.1} |",
        percentile(&walked, 0.5),
        percentile(&walked, 0.95)
    );
    println!(
        "| the hook's paths (`--paths-from`) | {:.1} | {:.1} |",
        percentile(&scoped, 0.5),
        percentile(&scoped, 0.95)
    );
}
