//! Crash loop: `raggrep index` killed with SIGKILL at random points, over and over, on a tree that
//! changes between rounds; after every kill the index must open and answer, and at the end a
//! completed update must answer exactly like an index built from scratch.
//!
//! Small thresholds (`--ann-min-slots`, `--compact-min-dead`) make the rounds reach HNSW graph
//! builds and vector-file compactions on a small tree, so kills land in those too. The seed is
//! printed and can be replayed.
//!
//! `cargo bench --bench crash_loop -- [--iterations 100] [--seed N] [--files 60]`
//! Exit code 1 if any round left an unusable index or the final answers differ.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_raggrep");
const THRESHOLDS: [&str; 6] = ["--commit-every", "0.2", "--ann-min-slots", "64", "--compact-min-dead", "32"];
const QUERIES: [&str; 5] =
    ["validate the ledger number 12-1", "compress an image", "schedule the session", "parse invoice", "merge packet"];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn file_text(f: u64, variant: u64) -> String {
    let verbs = ["parse", "render", "validate", "encode", "merge", "compress", "schedule", "index"];
    let nouns = ["invoice", "token", "image", "packet", "ledger", "profile", "matrix", "session"];
    let mut text = String::new();
    for g in 0..4u64 {
        let verb = verbs[((f + g + variant) % 8) as usize];
        let noun = nouns[((f * 3 + g) % 8) as usize];
        text.push_str(&format!(
            "/// {verb} the {noun} number {f}-{g}.\npub fn {verb}_{noun}_{f}_{g}(input: &[u8]) -> usize {{\n    let mut total = {f} + {variant};\n    for byte in input {{\n        total += (*byte as usize) * {g};\n    }}\n    total\n}}\n\n"
        ));
    }
    text
}

/// Changes the tree: edits (new text → new vectors, old ones dead), deletions and additions.
fn mutate(root: &Path, rng: &mut Rng, files: u64) {
    for _ in 0..1 + rng.below(12) {
        let f = rng.below(files);
        let path = root.join(format!("src/m{f:03}.rs"));
        match rng.below(5) {
            0 => {
                let _ = fs::remove_file(&path);
            }
            _ => fs::write(&path, file_text(f, rng.below(1000))).unwrap(),
        }
    }
}

fn raggrep(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).current_dir(root).stdin(Stdio::null()).output().unwrap()
}

/// Every chunk (path, lines, hash, embedded), then the top hits of the fixed queries by exact
/// dense search (BM25 statistics legitimately differ between an updated and a fresh lexical
/// index, vectors must not), as comparable text.
fn answers(root: &Path) -> Vec<String> {
    let chunks = raggrep(root, &["inspect", "--chunks", "--json"]);
    assert!(chunks.status.success(), "{}", String::from_utf8_lossy(&chunks.stderr));
    let mut out = vec![String::from_utf8_lossy(&chunks.stdout).into_owned()];
    out.extend(QUERIES.iter().map(|q| {
        let out = raggrep(root, &["query", "--json", "--mode", "dense", "--exact", "-k", "5", q]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        value["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| format!("{}:{}-{}", h["path"].as_str().unwrap(), h["start_line"], h["end_line"]))
            .collect::<Vec<_>>()
            .join(" ")
    }));
    out
}

/// What the indexer was doing when killed, from its last progress line (off a terminal it
/// prints: "chunked … N chunks to embed", "embedding d/t" every 2 s, "building the HNSW graph",
/// and "indexed …" at the end).
fn phase(stderr: &str) -> &'static str {
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    if last.contains("graph") {
        "graph build"
    } else if last.starts_with("embedding") || (last.starts_with("chunked") && !last.contains("; 0 chunks to embed")) {
        "embedding"
    } else if last.starts_with("chunked") {
        "publish/compaction"
    } else if last.starts_with("indexed ") {
        "finished"
    } else {
        "start-up/walk/chunk"
    }
}

fn main() {
    let iterations: u64 = arg("--iterations").and_then(|v| v.parse().ok()).unwrap_or(100);
    let files: u64 = arg("--files").and_then(|v| v.parse().ok()).unwrap_or(60);
    let seed: u64 = arg("--seed").and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    println!("crash loop: seed {seed} (replay with --seed {seed}), {iterations} iterations, {files} files");
    let mut rng = Rng(seed | 1);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    fs::create_dir_all(root.join("src")).unwrap();
    for f in 0..files {
        fs::write(root.join(format!("src/m{f:03}.rs")), file_text(f, 0)).unwrap();
    }
    let started = Instant::now();
    let mut phases: BTreeMap<&str, u64> = BTreeMap::new();
    let mut unusable = Vec::new();
    let mut compactions = 0;
    let mut graphs = 0;
    for round in 0..iterations {
        mutate(&root, &mut rng, files);
        // Mostly within the first second (an update of a few edited files takes about that:
        // model load, walk, chunk, embed, graph, compaction), sometimes later so that rounds
        // also finish and leave more work (graphs, dead slots) for the next ones.
        let span = if rng.below(4) == 0 { 4000 } else { 900 };
        let delay = Duration::from_millis(30 + rng.below(span));
        let log = dir.path().join("stderr.log");
        let mut args = vec!["index", "."];
        args.extend_from_slice(&THRESHOLDS);
        let mut child = Command::new(BIN)
            .args(&args)
            .current_dir(&root)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while t.elapsed() < delay {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
        let text = fs::read_to_string(&log).unwrap_or_default();
        *phases.entry(phase(&text)).or_default() += 1;
        let names: Vec<String> = fs::read_dir(root.join(".raggrep"))
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        graphs = graphs.max(names.iter().filter(|n| n.starts_with("ann-")).count());
        compactions =
            compactions.max(names.iter().filter(|n| n.starts_with("vectors-") && *n != "vectors-00000000.f32").count());
        // Killed before the first index was ever published: "no index yet" is the state before.
        let never_published = !root.join(".raggrep").join("CURRENT").exists();
        let status = raggrep(&root, &["status", "--json"]);
        let query = raggrep(&root, &["query", "--json", "--mode", "lexical", "-k", "3", "ledger"]);
        let damaged = String::from_utf8_lossy(&status.stdout).contains("\"damaged\"");
        let no_index_yet = never_published && String::from_utf8_lossy(&status.stderr).contains("no index at");
        if !(status.status.success() || no_index_yet) || !query.status.success() || damaged {
            unusable.push(format!(
                "round {round} (killed after {delay:?}): status {} query {}: {}",
                status.status,
                query.status,
                String::from_utf8_lossy(&query.stderr).trim()
            ));
        }
    }
    // Finish the interrupted work, then compare with an index built from scratch.
    let mut args = vec!["index", "."];
    args.extend_from_slice(&THRESHOLDS);
    let done = raggrep(&root, &args);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let resumed = answers(&root);
    let fresh_root = dir.path().join("fresh");
    fs::create_dir_all(fresh_root.join("src")).unwrap();
    for entry in fs::read_dir(root.join("src")).unwrap().flatten() {
        fs::copy(entry.path(), fresh_root.join("src").join(entry.file_name())).unwrap();
    }
    let built = raggrep(&fresh_root, &args);
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let fresh = answers(&fresh_root);
    let equal = resumed == fresh;

    println!("| figure | value |");
    println!("|---|---|");
    println!("| seed | {seed} |");
    println!("| kills | {iterations} in {:.0} s |", started.elapsed().as_secs_f64());
    let by_phase: Vec<String> = phases.iter().map(|(p, n)| format!("{p} {n}")).collect();
    println!("| killed during | {} |", by_phase.join(", "));
    println!("| graph files seen at once (max) | {graphs} |");
    println!("| compacted vector files seen (max) | {compactions} |");
    println!("| unusable indexes after a kill | **{}** |", unusable.len());
    println!(
        "| final answers equal to a fresh index ({} queries, top 5) | **{}** |",
        QUERIES.len(),
        if equal { "yes" } else { "no" }
    );
    for line in &unusable {
        println!("unusable: {line}");
    }
    if !equal {
        println!("resumed: {resumed:?}\nfresh:   {fresh:?}");
    }
    if !unusable.is_empty() || !equal {
        std::process::exit(1);
    }
}
