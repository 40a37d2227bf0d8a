//! Incremental re-index from the command line: `raggrep index ROOT` after touching one file,
//! and after editing one function, p50/p95 over several rounds. Reports the wall time of the
//! whole command (process start, model load, walk, publish) and the update time the command
//! itself reports (`--json`).
//!
//! `cargo bench --bench cli_incremental -- ROOT [--rounds 10]`   (ROOT must be indexed already;
//! it is modified and restored; uses target/release/raggrep)

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Runs `raggrep index ROOT --json`; returns (wall ms, reported update ms, chunks embedded).
fn index(bin: &Path, root: &Path) -> (f64, f64, u64) {
    let t = Instant::now();
    let out = Command::new(bin).arg("index").arg(root).arg("--json").output().unwrap();
    let wall = t.elapsed().as_secs_f64() * 1000.0;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
    let summary: serde_json::Value = serde_json::from_str(&last).unwrap();
    (wall, summary["seconds"].as_f64().unwrap_or(0.0) * 1000.0, summary["embedded"].as_u64().unwrap_or(0))
}

/// The largest Rust/Python/… source file under `root` (outside the index and VCS dirs).
fn pick_file(root: &Path) -> PathBuf {
    let mut best: Option<(u64, PathBuf)> = None;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "py" | "go" | "ts" | "js")) {
                let len = entry.metadata().map_or(0, |m| m.len());
                if len < 200_000 && best.as_ref().is_none_or(|(l, _)| len > *l) {
                    best = Some((len, path));
                }
            }
        }
    }
    best.expect("a source file").1
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let get = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let rounds: usize = get("--rounds").and_then(|v| v.parse().ok()).unwrap_or(10);
    let root =
        PathBuf::from(args.iter().find(|a| !a.starts_with("--") && Some(*a) != get("--rounds").as_ref()).unwrap());
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/raggrep");
    assert!(bin.exists(), "build the release binary first (cargo build --release)");
    let file = pick_file(&root);
    let original = std::fs::read_to_string(&file).unwrap();
    let _ = index(&bin, &root); // settle: the tree must be fully indexed before measuring

    println!(
        "| re-index after … ({}, {rounds} rounds) | wall p50 ms | wall p95 ms | update p50 ms | update p95 ms | chunks embedded |",
        file.strip_prefix(&root).unwrap_or(&file).display()
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let run = |name: &str, change: &dyn Fn(usize)| {
        let (mut wall, mut update, mut embedded) = (Vec::new(), Vec::new(), 0);
        for round in 0..rounds {
            change(round);
            let (w, u, e) = index(&bin, &root);
            wall.push(w);
            update.push(u);
            embedded += e;
        }
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} per run |",
            percentile(&mut wall, 0.5),
            percentile(&mut wall, 0.95),
            percentile(&mut update, 0.5),
            percentile(&mut update, 0.95),
            embedded as f64 / rounds as f64
        );
    };
    run("nothing changed", &|_| {});
    run("touch of one file", &|_| {
        let f = std::fs::File::options().append(true).open(&file).unwrap();
        f.set_modified(std::time::SystemTime::now()).unwrap();
    });
    run("editing one function", &|round| {
        // A new line inside the file's last function-sized block: one chunk changes.
        let marker = format!("\n// edit {round}: recompute the checksum before writing\n");
        std::fs::write(&file, format!("{original}{marker}")).unwrap();
    });
    std::fs::write(&file, &original).unwrap();
    let _ = index(&bin, &root);
}
