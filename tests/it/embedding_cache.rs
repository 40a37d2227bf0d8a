//! The machine-wide embedding cache, through the real binary and model: a second clone and a
//! git worktree of a repository run the model on nothing; a damaged cache entry is detected and
//! recomputed; a damaged cache file is set aside; `off` turns it off.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::fixture;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/polyglot");

fn run(cwd: &Path, cache: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_raggrep"))
        .args(args)
        .current_dir(cwd)
        .env("RAGGREP_EMBEDDING_CACHE", cache)
        .env_remove("RAGGREP_EMBEDDING_CACHE_MB")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn index(root: &Path, cache: &str) -> Value {
    let out = run(root, cache, &["index", ".", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn query(root: &Path, cache: &str, text: &str) -> Vec<(String, f64)> {
    let out = run(root, cache, &["query", "--json", "-k", "5", text]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    value["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["location"].as_str().unwrap().to_string(), r["score"].as_f64().unwrap()))
        .collect()
}

fn git(cwd: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn count(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or_else(|| panic!("no {field} in {value}"))
}

#[test]
fn clones_and_worktrees_embed_nothing_and_damage_is_recomputed() {
    let dir = tempfile::tempdir().unwrap();
    let cache_path: PathBuf = dir.path().join("cache/embeddings.sqlite");
    let cache = cache_path.to_str().unwrap();
    let origin = dir.path().join("origin");
    fixture::copy_dir(Path::new(FIXTURE), &origin);
    git(&origin, &["init", "-q"]);
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "fixture"]);

    let first = dir.path().join("first");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), first.to_str().unwrap()]);
    let stats = index(&first, cache);
    assert_eq!(stats["walked"], true, "the command line always walks: {stats}");
    let chunks = count(&stats, "chunks");
    assert!(chunks > 10);
    assert_eq!((count(&stats, "embedded"), count(&stats, "from_cache")), (chunks, 0), "{stats}");

    // A second clone elsewhere: every vector comes from the cache, and search answers the same.
    let second = dir.path().join("second");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), second.to_str().unwrap()]);
    let stats = index(&second, cache);
    assert_eq!((count(&stats, "embedded"), count(&stats, "from_cache")), (chunks, chunks), "{stats}");
    let question = "check that an API token has not expired";
    let (a, b) = (query(&first, cache, question), query(&second, cache, question));
    assert_eq!(a.iter().map(|r| &r.0).collect::<Vec<_>>(), b.iter().map(|r| &r.0).collect::<Vec<_>>());
    assert!(a.iter().zip(&b).all(|(x, y)| (x.1 - y.1).abs() < 1e-3), "{a:?} / {b:?}");

    // A worktree on a branch with one file changed: only that file's chunks reach the model.
    let tree = dir.path().join("tree");
    git(&first, &["worktree", "add", "-q", "-b", "feature", tree.to_str().unwrap()]);
    std::fs::write(tree.join("src/extra.py"), "def brand_new_helper(x):\n    return x * 42\n").unwrap();
    let stats = index(&tree, cache);
    let fresh = count(&stats, "embedded") - count(&stats, "from_cache");
    assert!((1..=2).contains(&fresh), "only the new file is embedded by the model: {stats}");

    // Damage one cached vector: detected by its checksum, recomputed, never served.
    let db = rusqlite::Connection::open(&cache_path).unwrap();
    let damaged = db
        .execute(
            "UPDATE vectors SET vector = randomblob(length(vector)) WHERE key = (SELECT key FROM vectors ORDER BY key LIMIT 1)",
            [],
        )
        .unwrap();
    assert_eq!(damaged, 1);
    drop(db);
    let third = dir.path().join("third");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), third.to_str().unwrap()]);
    let stats = index(&third, cache);
    let recomputed = count(&stats, "embedded") - count(&stats, "from_cache");
    assert_eq!(count(&stats, "embedded"), chunks);
    assert!(recomputed >= 1 && recomputed < chunks / 2, "the damaged entry is recomputed, the rest served: {stats}");
    assert_eq!(
        query(&third, cache, question).iter().map(|r| &r.0).collect::<Vec<_>>(),
        a.iter().map(|r| &r.0).collect::<Vec<_>>()
    );

    // A cache file that is not a database: set aside, the index is built anyway.
    std::fs::write(&cache_path, vec![0x5Au8; 4096]).unwrap();
    let _ = std::fs::remove_file(cache_path.with_extension("sqlite-wal"));
    let _ = std::fs::remove_file(cache_path.with_extension("sqlite-shm"));
    let fourth = dir.path().join("fourth");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), fourth.to_str().unwrap()]);
    let stats = index(&fourth, cache);
    assert_eq!((count(&stats, "embedded"), count(&stats, "from_cache")), (chunks, 0), "{stats}");
    let aside = std::fs::read_dir(cache_path.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().contains(".corrupt-"));
    assert!(aside);

    // A cap of 0 MB also turns it off.
    let capped = dir.path().join("capped");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), capped.to_str().unwrap()]);
    let out = Command::new(env!("CARGO_BIN_EXE_raggrep"))
        .args(["index", ".", "--json"])
        .current_dir(&capped)
        .env("RAGGREP_EMBEDDING_CACHE", cache)
        .env("RAGGREP_EMBEDDING_CACHE_MB", "0")
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((count(&stats, "embedded"), count(&stats, "from_cache")), (chunks, 0), "{stats}");

    // Off: the model embeds everything again, the cache is not touched.
    let fifth = dir.path().join("fifth");
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), fifth.to_str().unwrap()]);
    let stats = index(&fifth, "off");
    assert_eq!((count(&stats, "embedded"), count(&stats, "from_cache")), (chunks, 0), "{stats}");
}
