//! The `raggrep` binary end to end, on the real model: index, query (all modes, filters, JSON
//! and JSON Lines), status, incremental updates, crash safety and damaged indexes.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::fixture;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fixture::copy_dir;
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/polyglot");

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// A private copy of the polyglot fixture (the index is written inside the root).
    fn polyglot() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(Path::new(FIXTURE), dir.path());
        Workspace { dir }
    }

    fn empty() -> Workspace {
        Workspace { dir: tempfile::tempdir().unwrap() }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    /// `raggrep ARGS` in the workspace, for a caller to add environment or another cwd.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_raggrep"));
        // The upward search for an index (as git's for a repository) stops at the temporary
        // directory's parent: whatever lies above a test's workspace is not its business.
        let fence = self.dir.path().parent().unwrap_or(Path::new("/"));
        command.args(args).current_dir(self.root()).stdin(Stdio::null()).env("RAGGREP_CEILING_DIRS", fence);
        command
    }

    /// `raggrep ARGS` started in `sub` (a directory of the workspace); must succeed.
    fn ok_in(&self, sub: &str, args: &[&str]) -> Output {
        let out = self.command(args).current_dir(self.root().join(sub)).output().unwrap();
        assert!(
            out.status.success(),
            "raggrep {args:?} in {sub} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn raggrep(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        self.ok_in(".", args)
    }

    fn index(&self) -> Value {
        let out = self.ok(&["index", ".", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Chunks of one file in the index (`inspect --json`).
    fn chunk_count(&self, rel: &str) -> u64 {
        let out = self.ok(&["inspect", "--json"]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|f| f["path"] == rel)
            .and_then(|f| f["chunks"].as_u64())
            .unwrap_or_else(|| panic!("{rel} is not indexed"))
    }

    /// `query ARGS -` with `input` on stdin: one JSON answer per line.
    fn query_lines(&self, args: &[&str], input: &str) -> Vec<Value> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_raggrep"))
            .arg("query")
            .args(args)
            .arg("-")
            .current_dir(self.root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    fn query(&self, args: &[&str]) -> Value {
        let mut full = vec!["query", "--json"];
        full.extend_from_slice(args);
        let out = self.ok(&full);
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

fn hits(results: &Value) -> Vec<(String, String)> {
    results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["path"].as_str().unwrap().to_string(), h["symbol"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn has_hit(results: &Value, path: &str, symbol: &str) -> bool {
    hits(results).iter().any(|(p, s)| p == path && s == symbol)
}

/// Descriptions of the polyglot fixture's units in other words than their own, with the unit
/// each describes.
const DESCRIBED: [(&str, &str, &str); 7] = [
    ("check whether an API token is still valid", "src/auth.py", "validate_token"),
    ("read the application settings from a JSON file", "web/config.ts", "loadConfig"),
    ("compute a checksum of some bytes", "src/checksum.rs", "adler32"),
    ("start the web server listening on a port", "svc/server.go", "Serve"),
    ("multiply two matrices", "lib/matrix.c", "matmul"),
    ("least recently used cache eviction", "lib/Cache.java", "Cache"),
    ("how do I roll back a release", "docs/deploy.md", "Deployment > Rolling back a release"),
];

#[test]
fn natural_language_queries_find_the_function_in_the_top_3() {
    let ws = Workspace::polyglot();
    ws.index();
    for (query, path, symbol) in DESCRIBED {
        let results = ws.query(&["-k", "3", query]);
        assert!(has_hit(&results, path, symbol), "{query:?}: expected {path} {symbol} in {:?}", hits(&results));
    }
}

/// A default search's hit scores are probabilities that the hit is the answer: high for the
/// first hit of a described function, low for the rest and for every hit of a question the code
/// base cannot answer, so `--min-score` means the same in every query.
#[test]
fn hit_scores_are_the_probability_that_the_hit_is_the_answer() {
    let ws = Workspace::polyglot();
    ws.index();
    let scores = |response: &Value| -> Vec<f64> {
        response["results"].as_array().unwrap().iter().map(|h| h["score"].as_f64().unwrap()).collect()
    };
    let nothing = ws.query(&["render a 3d mesh with shadows"]);
    let nothing_first = scores(&nothing)[0];
    assert!(nothing_first < 0.15, "no answer here, yet the first hit scores {nothing_first}: {nothing}");
    for (query, path, symbol) in DESCRIBED {
        let found = ws.query(&[query]);
        assert_eq!(hits(&found)[0], (path.to_string(), symbol.to_string()), "{query:?}");
        let s = scores(&found);
        assert!(s[0] >= 0.3 && s[0] > nothing_first, "{query:?}: the answer scores {s:?}");
        assert!(s[1] <= 0.5 * s[0], "{query:?}: the second hit is less likely than the answer: {s:?}");
        // One answer per query: the list's probabilities add up to about one at most.
        assert!(s.iter().sum::<f64>() <= 1.2, "{query:?}: {s:?}");
        let sure = ws.query(&["--min-score", "0.25", query]);
        assert_eq!(hits(&sure), hits(&found)[..1], "{query:?}: only the likely answer clears 0.25");
    }
    assert!(hits(&ws.query(&["--min-score", "0.25", "render a 3d mesh with shadows"])).is_empty());
}

#[test]
fn identifier_query_works_in_lexical_mode() {
    let ws = Workspace::polyglot();
    ws.index();
    let results = ws.query(&["--mode", "lexical", "-k", "3", "parseHttpRequest"]);
    assert_eq!(hits(&results)[0], ("web/config.ts".to_string(), "parseHttpRequest".to_string()));
    // Sub-words of identifiers match too.
    let results = ws.query(&["--mode", "lexical", "-k", "3", "http request parse"]);
    assert_eq!(hits(&results)[0].1, "parseHttpRequest");
}

#[test]
fn dense_finds_a_paraphrase_that_lexical_misses() {
    let ws = Workspace::polyglot();
    ws.index();
    let query = "remove duplicate entries from list";
    let dense = ws.query(&["--mode", "dense", "-k", "3", query]);
    assert!(has_hit(&dense, "lib/unique.js", "dedupeItems"), "{:?}", hits(&dense));
    let lexical = ws.query(&["--mode", "lexical", "-k", "10", query]);
    assert!(!has_hit(&lexical, "lib/unique.js", "dedupeItems"), "{:?}", hits(&lexical));
}

/// Issue 54: before the model has embedded anything, a fresh tree's chunks have the static
/// tier's vectors (a token table trained to the code model), so the first answer already finds a
/// paraphrase the words miss; once the model's vectors are in, the tier's file is gone.
#[test]
fn a_first_query_ranks_with_the_static_tier_before_the_models_vectors() {
    let ws = Workspace::polyglot();
    let query = "remove duplicate entries from list";
    // Each query on a partial index with nobody embedding it starts the background indexer:
    // stopped at once here, so the model's vectors never arrive while this looks.
    let asked = |args: &[&str]| -> (Value, String) {
        let out = ws.ok(args);
        let said = String::from_utf8_lossy(&out.stderr).to_string();
        if let Some(pid) = said.split("(pid ").nth(1).and_then(|rest| rest.split(',').next()) {
            let _ = Command::new("kill").args(["-KILL", pid]).status();
        }
        (serde_json::from_slice(&out.stdout).unwrap(), said)
    };
    let (first, said) = asked(&["query", query, "--json", "-k", "3"]);
    assert!(said.contains("answering from the words and the static tier's vectors"), "{said}");
    assert_eq!(first["partial"], true, "{first}");
    assert!(has_hit(&first, "lib/unique.js", "dedupeItems"), "{first}");
    let (dense, _) = asked(&["query", query, "--json", "-k", "3", "--mode", "dense"]);
    assert_eq!(dense["partial"], true, "{dense}");
    assert!(has_hit(&dense, "lib/unique.js", "dedupeItems"), "{dense}");
    let lexical = ws.query(&["--mode", "lexical", "-k", "10", query]);
    assert!(!has_hit(&lexical, "lib/unique.js", "dedupeItems"), "{:?}", hits(&lexical));
    let tier = ws.root().join(".raggrep/static-tier.bin");
    assert!(tier.exists());
    ws.index();
    assert!(!tier.exists(), "the model's vectors replace the static tier");
    let whole = ws.query(&["--mode", "dense", "-k", "3", query]);
    assert_eq!(whole["partial"], false, "{whole}");
    assert!(has_hit(&whole, "lib/unique.js", "dedupeItems"), "{whole}");
}

/// Issue 54: the first query on a tree without an index answers from its words at once (no
/// model run), says so, and leaves a detached indexer embedding the rest at low priority; once
/// it is done, the same query is answered whole. `--wait` embeds everything first instead.
#[test]
fn a_first_query_answers_from_words_and_embeds_in_the_background() {
    let ws = Workspace::polyglot();
    let q = "check whether an API token is still valid";
    let pid_in = |said: &str| -> u32 {
        said.split("(pid ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|pid| pid.parse().ok())
            .unwrap_or_else(|| panic!("no background indexer: {said}"))
    };
    let gone = |pid: u32| {
        let deadline = Instant::now() + Duration::from_secs(300);
        while Path::new(&format!("/proc/{pid}")).exists() {
            assert!(Instant::now() < deadline, "the background indexer never finished");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let out = ws.ok(&["query", q, "--json", "-k", "3"]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    let pid = pid_in(&said);
    // It runs at nice 10 on its own. Stopped before its first vector (its model takes longer
    // to load than this takes), as by a reboot or a kill, it leaves a partial index.
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    if let Some(fields) = stat.rsplit(')').next() {
        let nice: i64 = fields.split_whitespace().nth(16).and_then(|n| n.parse().ok()).unwrap_or(10);
        assert!(nice >= 10, "the background indexer runs at nice {nice}");
    }
    gone(pid);
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(first["partial"], true, "{first}");
    assert_eq!(first["results"][0]["path"], "src/auth.py", "{first}");
    let status: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert!(status["chunks"].as_u64().unwrap() > 0 && status["pending"].as_u64() > Some(0), "{status}");
    assert!(status["code_pending"].as_u64() > Some(0), "the code waits for its vectors: {status}");

    // A search by words needs no vectors and starts nothing; the next default search starts
    // the indexer again, which embeds the rest.
    let words = ws.ok(&["query", q, "--json", "--mode", "lexical"]);
    assert!(!String::from_utf8_lossy(&words.stderr).contains("background"), "{words:?}");
    let again = ws.ok(&["query", q, "--json", "-k", "3"]);
    let said = String::from_utf8_lossy(&again.stderr).to_string();
    assert!(said.contains("nothing is embedding it; embedding in the background"), "{said}");
    gone(pid_in(&said));
    let status: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!((status["pending"].as_u64(), status["code_pending"].as_u64()), (Some(0), Some(0)), "{status}");
    let log = fs::read_to_string(ws.root().join(".raggrep/background-index.log")).unwrap();
    assert!(log.contains("indexed "), "{log}");
    let whole: Value = serde_json::from_slice(&ws.ok(&["query", q, "--json", "-k", "3"]).stdout).unwrap();
    assert_eq!(whole["partial"], false, "{whole}");
    assert_eq!(whole["results"][0]["symbol"], "validate_token", "{whole}");

    let waited = Workspace::polyglot();
    let out = waited.ok(&["query", q, "--json", "-k", "3", "--wait"]);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["partial"], false, "{answer}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("background"));
}

#[test]
fn json_contract_and_json_lines_from_stdin() {
    let ws = Workspace::polyglot();
    let results = ws.query(&["-k", "2", "--wait", "validate token"]); // no index yet: built first
    assert_eq!(results["query"], "validate token");
    assert!(results["took_ms"].as_f64().unwrap() >= 0.0);
    assert_eq!(results["partial"], false);
    let first = &results["results"][0];
    for field in ["path", "start_line", "end_line", "score", "symbol", "kind", "language", "snippet"] {
        assert!(first.get(field).is_some(), "missing {field} in {first}");
    }
    assert_eq!(first["path"], "src/auth.py");
    assert!(first["start_line"].as_u64().unwrap() >= 1);
    assert!(first["end_line"].as_u64() >= first["start_line"].as_u64());
    assert_eq!(first["language"], "python");
    assert!(first["snippet"].as_str().unwrap().contains("def validate_token"));

    let lines = ws.query_lines(&["-k", "1"], "multiply two matrices\n\nload the configuration file\n");
    // One answer per input line, the empty one included, so answers line up with questions.
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["results"][0]["symbol"], "matmul");
    assert_eq!(lines[1]["results"], serde_json::json!([]));
    assert_eq!(lines[2]["results"][0]["symbol"], "loadConfig");
}

#[test]
fn rerank_resorts_the_best_candidates_with_the_reranker() {
    let ws = Workspace::polyglot();
    ws.index();
    for (query, path, symbol) in DESCRIBED {
        let plain = ws.query(&[query]);
        let reranked = ws.query(&["--rerank", query]);
        assert_eq!(reranked["reranked_by"], "all-minilm-l6-v2-rerank-int8", "{reranked}");
        assert!(plain.get("reranked_by").is_none(), "{plain}");
        assert_eq!(hits(&reranked)[0], (path.to_string(), symbol.to_string()), "{query:?}: {:?}", hits(&reranked));
        let scores: Vec<f64> =
            reranked["results"].as_array().unwrap().iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "scores fall down the list: {scores:?}");
        // The reranker moved the scores: its own evidence was added, not a no-op.
        let plain_scores: Vec<f64> =
            plain["results"].as_array().unwrap().iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert_ne!(scores, plain_scores, "{query:?}");
    }
    // A blank query gives the reranker nothing to read: no results, and no claim of reranking.
    let blank = ws.query(&["--rerank", " "]);
    assert_eq!(blank["results"], serde_json::json!([]));
    assert!(blank.get("reranked_by").is_none(), "{blank}");
    // JSON Lines from stdin rerank each query too.
    let lines = ws.query_lines(&["--rerank", "-k", "1"], "multiply two matrices\nload the configuration file\n");
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["results"][0]["symbol"], "matmul");
    assert!(lines.iter().all(|l| l["reranked_by"] == "all-minilm-l6-v2-rerank-int8"), "{lines:?}");
    // Human output as without --rerank.
    let out = ws.ok(&["query", "--rerank", "-k", "1", "multiply two matrices"]);
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("lib/matrix.c:4  "));
}

/// A settings reader with its unit tests beside it, Rust style: the tests' names say what the
/// code does in more of a question's words than the code itself.
const CONFIG_WITH_TESTS: &str = r##"//! Reading the server's settings.

use std::collections::HashMap;

/// Where the server listens and what it calls itself.
pub struct Config {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub workers: usize,
}

pub fn parse_config(text: &str) -> Result<Config, String> {
    let mut values = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {}: expected key = value", number + 1))?;
        values.insert(key.trim().to_string(), value.trim().to_string());
    }
    let take = |key: &str| values.get(key).cloned().ok_or_else(|| format!("missing {key}"));
    Ok(Config {
        name: take("name")?,
        host: take("host").unwrap_or_else(|_| "127.0.0.1".to_string()),
        port: take("port")?.parse().map_err(|e| format!("port: {e}"))?,
        workers: take("workers").ok().and_then(|w| w.parse().ok()).unwrap_or(4),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_config_reads_the_name_host_and_port_of_the_configuration() {
        let config = parse_config("name = web\nhost = 0.0.0.0\nport = 8080").unwrap();
        assert_eq!(config.name, "web");
        assert_eq!(config.host, "0.0.0.0");
        assert_eq!(config.port, 8080);
        assert_eq!(config.workers, 4);
    }

    #[test]
    fn parse_config_rejects_a_configuration_line_without_a_value() {
        let error = parse_config("name = web\nport").unwrap_err();
        assert!(error.contains("line 2"), "{error}");
    }
    #[test]
    fn parse_config_skips_comment_lines_and_blank_lines_between_settings() {
        let text = "# the web server\n\nname = web\n# where it listens\nport = 8080\n\n";
        let config = parse_config(text).unwrap();
        assert_eq!(config.name, "web");
        assert_eq!(config.port, 8080);
        assert_eq!(config.host, "127.0.0.1");
    }

    #[test]
    fn parse_config_reports_a_port_that_is_not_a_number() {
        let error = parse_config("name = web\nport = eighty").unwrap_err();
        assert!(error.starts_with("port:"), "{error}");
        let error = parse_config("name = web\nport = 70000").unwrap_err();
        assert!(error.starts_with("port:"), "{error}");
    }

    #[test]
    fn parse_config_uses_four_workers_unless_told_otherwise() {
        let config = parse_config("name = web\nport = 1").unwrap();
        assert_eq!(config.workers, 4);
        let config = parse_config("name = web\nport = 1\nworkers = 16").unwrap();
        assert_eq!(config.workers, 16);
    }
}
"##;

#[test]
fn unit_tests_beside_the_code_rank_below_it_unless_asked_for() {
    let ws = Workspace::empty();
    ws.write("src/config.rs", CONFIG_WITH_TESTS);
    ws.index();
    let first = |query: &str| {
        let results = ws.query(&[query]);
        hits(&results).first().map(|(_, symbol)| symbol.clone()).unwrap_or_else(|| panic!("{query:?}: no results"))
    };
    // The tests' path is the code's own: only their module says they are tests. Judged by path
    // alone, a test comes first for both questions.
    assert_eq!(first("parse the configuration"), "parse_config");
    assert_eq!(first("how many workers by default"), "Config");
    // Asked for, tests may come first.
    assert!(first("tests of reading the configuration").starts_with("tests::"));
}

/// Questions about things the fixture does not have.
const NOT_HERE: [&str; 5] = [
    "train a convolutional neural network on images",
    "send an SMS text message through a gateway",
    "render a 3d mesh with shadows",
    "compute the orbital period of a satellite",
    "quantum chromodynamics lattice simulation",
];

#[test]
fn confidence_tells_an_answer_from_nothing_here() {
    let ws = Workspace::polyglot();
    ws.index();
    let confidence = |r: &Value| r["confidence"].as_f64().unwrap_or_else(|| panic!("no confidence in {r}"));
    let mut answered = Vec::new();
    for (query, _, _) in DESCRIBED {
        let r = ws.query(&[query]);
        assert_eq!(r["no_confident_match"], false, "{query:?}: {r}");
        answered.push(confidence(&r));
    }
    let mut nothing = Vec::new();
    for query in NOT_HERE {
        let r = ws.query(&[query]);
        // Results still come (the closest code), flagged as no confident match.
        assert!(!hits(&r).is_empty(), "{query:?}");
        assert_eq!(r["no_confident_match"], true, "{query:?}: {r}");
        nothing.push(confidence(&r));
    }
    // A probability, and every answered question above every question with no answer here.
    let lowest_answered = answered.iter().copied().fold(f64::INFINITY, f64::min);
    let highest_nothing = nothing.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(answered.iter().chain(&nothing).all(|c| (0.0..=1.0).contains(c)), "{answered:?} {nothing:?}");
    assert!(lowest_answered > highest_nothing, "{answered:?} vs {nothing:?}");
    // Human output says it above the results, and only then.
    let out = ws.ok(&["query", "-k", "1", NOT_HERE[0]]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("(no confident match: ") && text.lines().nth(1).is_some_and(|l| l.contains(':')),
        "{text}"
    );
    let out = ws.ok(&["query", "-k", "1", DESCRIBED[0].0]);
    assert!(String::from_utf8(out.stdout).unwrap().starts_with("src/auth.py:"));
    // JSON Lines carry it per answer; reranking keeps the fusion's confidence.
    let lines = ws.query_lines(&["-k", "1"], &format!("{}\n{}\n", DESCRIBED[4].0, NOT_HERE[1]));
    assert_eq!(
        (&lines[0]["no_confident_match"], &lines[1]["no_confident_match"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    let reranked = ws.query(&["--rerank", NOT_HERE[2]]);
    assert_eq!(reranked["no_confident_match"], true, "{reranked}");
    // Only the default ranking is calibrated: other modes and a blank query claim nothing.
    for args in [vec!["--mode", "lexical", "matrix"], vec!["--mode", "dense", "matrix"], vec![" "]] {
        let r = ws.query(&args);
        assert!(r.get("confidence").is_none() && r.get("no_confident_match").is_none(), "{args:?}: {r}");
    }
}

/// The confidence is calibrated on the rankings of the models `confidence.json` lists. An
/// index of any other network (here all-MiniLM-L6-v2 itself under an unlisted directory name)
/// gets results ordered by the same fusion, but no probability that nobody measured.
#[test]
fn confidence_is_claimed_only_over_an_index_of_a_measured_model() {
    let ws = Workspace::polyglot();
    let plain = raggrep::embed::Assets::locate(Some(raggrep::embed::PLAIN_MODEL), None).expect("bootstrap the models");
    let other = tempfile::tempdir().unwrap();
    let model = other.path().join("another-network");
    fs::create_dir(&model).unwrap();
    for file in ["model.onnx", "tokenizer.json"] {
        fs::copy(plain.model_dir.join(file), model.join(file)).unwrap();
    }
    let model = model.to_str().unwrap();
    ws.ok(&["--model", model, "index", ".", "--json"]);
    let status = String::from_utf8(ws.ok(&["--model", model, "status"]).stdout).unwrap();
    assert!(status.contains("another-network-"), "{status}");
    let (described, _, answer) = DESCRIBED[0];
    for query in [described, NOT_HERE[0]] {
        let out = ws.ok(&["--model", model, "query", "--json", query]);
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(r.get("confidence").is_none() && r.get("no_confident_match").is_none(), "{query:?}: {r}");
        // Still ranked, with scores that only order the hits.
        let scores: Vec<f64> = r["results"].as_array().unwrap().iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(!scores.is_empty() && scores.windows(2).all(|w| w[0] >= w[1]), "{query:?}: {r}");
        if query == described {
            assert!(hits(&r).iter().take(3).any(|h| h.1 == answer), "{r}");
        }
    }
    // The same tree indexed by the default model claims one.
    ws.index();
    assert!(ws.query(&[NOT_HERE[0]])["confidence"].as_f64().is_some());
}

#[test]
fn rerank_without_a_reranker_or_outside_hybrid_mode_says_why() {
    let ws = Workspace::polyglot();
    ws.index();
    for (args, says) in [
        (vec!["query", "--rerank", "--mode", "lexical", "x"], "hybrid ranking only, not lexical mode"),
        (vec!["query", "--rerank", "--mode", "dense", "x"], "hybrid ranking only, not dense mode"),
        (vec!["query", "--rerank", "--from", "postgres://nobody@127.0.0.1:1/x", "x"], "--rerank"),
    ] {
        let out = ws.raggrep(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.starts_with("raggrep: ") && stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    // A model directory without the reranker: plain search works, --rerank names the fix.
    let installed = raggrep::embed::Assets::locate(None, None).unwrap();
    let model = tempfile::tempdir().unwrap();
    for file in ["model.onnx", "tokenizer.json", "raggrep-model.json", "query-model.onnx", "query-model.json"] {
        std::os::unix::fs::symlink(installed.model_dir.join(file), model.path().join(file)).unwrap();
    }
    let model = model.path().to_str().unwrap();
    let plain = ws.raggrep(&["--model", model, "query", "--json", "multiply two matrices"]);
    assert!(plain.status.success(), "{}", String::from_utf8_lossy(&plain.stderr));
    let out = ws.raggrep(&["--model", model, "query", "--rerank", "multiply two matrices"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("no reranker is installed") && stderr.contains("bootstrap"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing half-answered on stdout");
    // The same directory through the environment.
    let by_env = ws
        .command(&["query", "--rerank", "multiply two matrices"])
        .env("RAGGREP_MODEL_DIR", model)
        .env_remove("RAGGREP_MODEL")
        .output()
        .unwrap();
    assert_eq!(by_env.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&by_env.stderr).contains("no reranker is installed"), "{by_env:?}");
}

#[test]
fn filters_and_zero_results() {
    let ws = Workspace::polyglot();
    ws.index();
    let go = ws.query(&["--lang", "go", "server"]);
    assert!(!hits(&go).is_empty());
    assert!(hits(&go).iter().all(|(p, _)| p.ends_with(".go")), "{:?}", hits(&go));
    let lib = ws.query(&["--path", "lib/**", "cache"]);
    assert!(!hits(&lib).is_empty());
    assert!(hits(&lib).iter().all(|(p, _)| p.starts_with("lib/")), "{:?}", hits(&lib));
    let none = ws.query(&["--min-score", "1000", "anything"]);
    assert!(hits(&none).is_empty());
    // Exact and graph searches agree on a small index.
    let exact = ws.query(&["--mode", "dense", "--exact", "-k", "5", "token"]);
    let approx = ws.query(&["--mode", "dense", "-k", "5", "token"]);
    assert_eq!(hits(&exact), hits(&approx));
    // Human output: path:line (the definition's), score, symbol, the lines to read.
    let out = ws.ok(&["query", "-k", "1", "multiply two matrices"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("lib/matrix.c:4  "), "{text}");
    assert!(text.lines().next().unwrap().ends_with("matmul  (lines 1-11)"), "{text}");
}

#[test]
fn errors_exit_2_with_one_line() {
    let ws = Workspace::polyglot();
    for args in [
        vec!["query", "--mode", "fuzzy", "x"],
        vec!["query", "--root", "/no/such/dir", "x"],
        vec!["status"],
        vec!["query", "--lang", "cobol", "x"],
    ] {
        let out = ws.raggrep(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("raggrep: "), "{stderr}");
    }
}

#[test]
fn status_reports_the_index() {
    let ws = Workspace::polyglot();
    ws.index();
    let out = ws.ok(&["status", "--json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["files"], 8);
    assert_eq!(status["pending"], 0);
    assert_eq!(status["embedded"], status["chunks"]);
    assert_eq!(status["model"], "all-minilm-l6-v2-code2-int8");
    assert_eq!(status["dim"], 384);
    assert!(status["bytes_on_disk"].as_u64().unwrap() > 0);
    assert!(ws.root().join(".raggrep/.gitignore").is_file());
    let text = String::from_utf8(ws.ok(&["status"]).stdout).unwrap();
    assert!(text.contains("chunks:"), "{text}");
    let inspect = String::from_utf8(ws.ok(&["inspect", "--chunks"]).stdout).unwrap();
    assert!(inspect.contains("src/auth.py:19-25  function  validate_token"), "{inspect}");
}

/// After a new default model: an index of the previous one (still installed under its id)
/// answers when `--model` names it; without it a search says to run `raggrep index`, and
/// `raggrep index` rebuilds it with the reason, never mixing the two models' vectors.
#[test]
fn an_index_of_the_previous_default_model_answers_by_name_and_index_rebuilds_it() {
    const PREVIOUS: &str = "all-minilm-l6-v2-code-int8";
    let ws = Workspace::polyglot();
    ws.ok(&["--model", PREVIOUS, "index", "."]);
    let (query, path, symbol) = DESCRIBED[0];
    let out = ws.ok(&["--model", PREVIOUS, "query", "--json", "-k", "3", query]);
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(has_hit(&results, path, symbol), "{:?}", hits(&results));

    let out = ws.raggrep(&["query", "--json", query]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(stderr.contains(PREVIOUS) && stderr.contains("raggrep index"), "{stderr}");
    assert!(stderr.contains(&format!("--model {PREVIOUS}")) && stderr.contains("--mode lexical"), "{stderr}");
    // Its words do not depend on the model: lexical mode answers from it as it is.
    let words: Value =
        serde_json::from_slice(&ws.ok(&["query", "--json", "--mode", "lexical", symbol]).stdout).unwrap();
    assert!(has_hit(&words, path, symbol), "{:?}", hits(&words));
    // Status says the same before a query is tried, and not when --model names the index's model.
    let status: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    let mismatch = status["model_mismatch"].as_str().unwrap_or_default();
    assert!(mismatch.contains("all-minilm-l6-v2-code2-int8") && mismatch.contains("raggrep index"), "{status}");
    assert!(mismatch.contains(&format!("--model {PREVIOUS}")), "{status}");
    let text = String::from_utf8(ws.ok(&["status"]).stdout).unwrap();
    assert!(text.contains(mismatch), "{text}");
    let status: Value = serde_json::from_slice(&ws.ok(&["--model", PREVIOUS, "status", "--json"]).stdout).unwrap();
    assert!(status.get("model_mismatch").is_none(), "{status}");

    let out = ws.ok(&["index", "."]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(PREVIOUS) && stderr.contains("rebuilding"), "{stderr}");
    let status: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["model"], "all-minilm-l6-v2-code2-int8");
    assert!(status.get("model_mismatch").is_none(), "{status}");
    assert_eq!(status["embedded"], status["chunks"]);
    let results = ws.query(&["-k", "3", query]);
    assert!(has_hit(&results, path, symbol), "{:?}", hits(&results));
}

#[test]
fn index_json_says_when_lexical_and_semantic_answers_came() {
    let ws = Workspace::polyglot();
    let first = ws.index();
    let (lexical, static_tier, semantic, total) = (
        first["seconds_to_lexical"].as_f64().unwrap(),
        first["seconds_to_static"].as_f64().unwrap(),
        first["seconds_to_semantic"].as_f64().unwrap(),
        first["seconds"].as_f64().unwrap(),
    );
    assert!(0.0 < lexical && lexical <= static_tier && static_tier <= semantic && semantic <= total, "{first}");
    // Nothing new to embed: no static tier, no semantic moment to report.
    let again = ws.index();
    assert_eq!(again["embedded"], 0, "{again}");
    assert!(again.get("seconds_to_semantic").is_none() && again.get("seconds_to_static").is_none(), "{again}");
    // A save's one new text is published together with its lexical change.
    ws.write("src/extra.py", "def whisper(text):\n    return text.lower()\n");
    let save = ws.index();
    assert_eq!(save["embedded"], 1, "{save}");
    assert!(save["seconds_to_semantic"].as_f64().unwrap() <= save["seconds"].as_f64().unwrap(), "{save}");
}

#[test]
fn int8_vectors_answer_the_same_queries_in_a_quarter_of_the_bytes() {
    let ws = Workspace::polyglot();
    ws.index();
    let status = |ws: &Workspace| -> Value { serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap() };
    let before = status(&ws);
    assert_eq!(before["vector_encoding"], "f32");
    let cases = [
        ("check whether an API token is still valid", "src/auth.py", "validate_token"),
        ("compute a checksum of some bytes", "src/checksum.rs", "adler32"),
        ("start the web server listening on a port", "svc/server.go", "Serve"),
        ("multiply two matrices", "lib/matrix.c", "matmul"),
    ];
    let top3 = |ws: &Workspace| -> Vec<Vec<(String, String)>> {
        cases.iter().map(|(query, _, _)| hits(&ws.query(&["-k", "3", query]))).collect()
    };
    let f32_hits = top3(&ws);

    let converted: Value =
        serde_json::from_slice(&ws.ok(&["index", ".", "--vectors", "int8", "--json"]).stdout).unwrap();
    assert_eq!(converted["embedded"], 0, "a conversion runs no model: {converted}");
    let after = status(&ws);
    assert_eq!(after["vector_encoding"], "int8");
    assert_eq!(after["vectors"], before["vectors"]);
    let vectors = after["vectors"].as_u64().unwrap();
    let saved = before["bytes_on_disk"].as_u64().unwrap() as i64 - after["bytes_on_disk"].as_u64().unwrap() as i64;
    // 1,536 bytes a vector become 388.
    assert!(saved as f64 >= 0.9 * (vectors * (1536 - 388)) as f64, "saved {saved} bytes on {vectors} vectors");
    assert!(
        fs::read_dir(ws.root().join(".raggrep"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".i8"))
    );
    let int8_hits = top3(&ws);
    for (((query, path, symbol), f32_top), int8_top) in cases.iter().zip(&f32_hits).zip(&int8_hits) {
        assert!(int8_top.iter().any(|(p, s)| p == path && s == symbol), "{query:?}: {int8_top:?}");
        assert_eq!(int8_top[0], f32_top[0], "{query:?}: the best hit moved");
    }

    // Later updates keep the encoding; the text status names it.
    ws.write("src/extra.py", "def shout(text):\n    return text.upper() + '!'\n");
    let update = ws.index();
    assert_eq!(update["embedded"], 1, "{update}");
    assert_eq!(status(&ws)["vector_encoding"], "int8");
    let text = String::from_utf8(ws.ok(&["status"]).stdout).unwrap();
    assert!(text.lines().any(|l| l.starts_with("vectors:") && l.contains("int8")), "{text}");

    // A damaged int8 file is caught by its checksums like an f32 one: the damaged block's
    // chunks are embedded again, the encoding stays.
    for path in index_files(ws.root(), "vectors-").iter().filter(|p| p.extension().is_some_and(|e| e == "i8")) {
        let mut bytes = fs::read(path).unwrap();
        bytes[5] ^= 0x40;
        fs::write(path, bytes).unwrap();
    }
    let damaged = ws.query(&["-k", "3", cases[0].0]);
    assert!(damaged["degraded"].as_str().is_some_and(|d| d.contains("damaged block")), "{damaged}");
    let repaired = ws.index();
    assert!(repaired["embedded"].as_u64().unwrap() >= 1, "{repaired}");
    let healed = ws.query(&["-k", "3", cases[0].0]);
    assert!(healed["degraded"].is_null(), "{healed}");
    assert!(has_hit(&healed, cases[0].1, cases[0].2), "{:?}", hits(&healed));
    assert_eq!(status(&ws)["vector_encoding"], "int8");

    let bad = ws.raggrep(&["index", ".", "--vectors", "f16"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("use f32 or int8"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );

    ws.ok(&["index", ".", "--vectors", "f32"]);
    assert_eq!(status(&ws)["vector_encoding"], "f32");
    assert!(has_hit(&ws.query(&["-k", "3", cases[0].0]), cases[0].1, cases[0].2));
}

#[test]
fn incremental_updates_follow_edits_adds_renames_and_deletes() {
    let ws = Workspace::polyglot();
    let first = ws.index();
    assert_eq!(first["changed_files"], 8);
    let total_chunks = first["chunks"].as_u64().unwrap();
    assert_eq!(first["embedded"].as_u64().unwrap(), total_chunks);

    // Nothing changed: nothing embedded.
    let again = ws.index();
    assert_eq!(again["changed_files"], 0);
    assert_eq!(again["embedded"], 0);

    // Add a file: only its chunks are embedded, and it is found.
    ws.write("src/mail.py", "def send_welcome_email(address):\n    \"\"\"Send a greeting message to a new user.\"\"\"\n    return smtp.send(address, 'Welcome!')\n");
    let added = ws.index();
    assert_eq!(added["changed_files"], 1);
    assert_eq!(added["embedded"], 1);
    let results = ws.query(&["-k", "3", "email a new user a greeting"]);
    assert!(has_hit(&results, "src/mail.py", "send_welcome_email"), "{:?}", hits(&results));

    // Edit one function: one file re-chunked, its changed chunk embedded.
    let auth = fs::read_to_string(ws.root().join("src/auth.py")).unwrap();
    let edited = auth.replace("return expires_at > time.time()", "return expires_at > time.time() + 5");
    ws.write("src/auth.py", &edited);
    let edit = ws.index();
    assert_eq!(edit["changed_files"], 1);
    assert_eq!(edit["embedded"], 1, "{edit}");

    // Revert the edit: the old embedding is still cached.
    ws.write("src/auth.py", &auth);
    let revert = ws.index();
    assert_eq!(revert["changed_files"], 1);
    assert_eq!(revert["embedded"], 0, "{revert}");

    // Rename: only the moved file's chunks are embedded again (the path is part of what the
    // model reads), and results follow the new path.
    let matrix_chunks = ws.chunk_count("lib/matrix.c");
    fs::rename(ws.root().join("lib/matrix.c"), ws.root().join("lib/linear_algebra.c")).unwrap();
    let renamed = ws.index();
    assert_eq!(renamed["embedded"].as_u64(), Some(matrix_chunks), "{renamed}");
    assert_eq!(renamed["removed_files"], 1);
    let results = ws.query(&["-k", "3", "multiply two matrices"]);
    assert!(has_hit(&results, "lib/linear_algebra.c", "matmul"), "{:?}", hits(&results));
    assert!(!hits(&results).iter().any(|(p, _)| p == "lib/matrix.c"));

    // Delete: gone from every mode.
    fs::remove_file(ws.root().join("svc/server.go")).unwrap();
    ws.index();
    for mode in ["hybrid", "dense", "lexical"] {
        let results = ws.query(&["--mode", mode, "-k", "20", "web server listening on a port Serve"]);
        assert!(!hits(&results).iter().any(|(p, _)| p == "svc/server.go"), "{mode}: {:?}", hits(&results));
    }
}

/// A tree big enough that indexing takes a few seconds.
fn synthetic_tree(ws: &Workspace, files: usize) {
    let verbs = ["parse", "render", "validate", "encode", "merge", "compress", "schedule", "index"];
    let nouns = ["invoice", "token", "image", "packet", "ledger", "profile", "matrix", "session"];
    for f in 0..files {
        let mut text = String::new();
        for g in 0..4 {
            let verb = verbs[(f + g) % verbs.len()];
            let noun = nouns[(f * 3 + g) % nouns.len()];
            text.push_str(&format!(
                "/// {verb} the {noun} number {f}-{g}.\npub fn {verb}_{noun}_{f}_{g}(input: &[u8]) -> usize {{\n    let mut total = {f};\n    for byte in input {{\n        total += (*byte as usize) * {g};\n    }}\n    total\n}}\n\n"
            ));
        }
        ws.write(&format!("src/m{f:03}.rs"), &text);
    }
}

#[test]
fn killing_the_indexer_at_random_points_never_breaks_the_index() {
    let ws = Workspace::empty();
    synthetic_tree(&ws, 150);
    // Replay a failure with RAGGREP_CRASH_SEED=<the seed in its message>.
    let seed = std::env::var("RAGGREP_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos() as u64
    });
    println!("crash seed {seed}");
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..6 {
        // Vary the tree a little so every round has work to do.
        ws.write(&format!("src/extra{round}.rs"), &format!("pub fn extra_{round}() -> u32 {{ {round} }}\n"));
        let delay = Duration::from_millis(200 + next() % 3000);
        let mut child = Command::new(env!("CARGO_BIN_EXE_raggrep"))
            .args(["index", ".", "--commit-every", "0.2"])
            .current_dir(ws.root())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while started.elapsed() < delay {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // Whatever state the kill left, the index opens and answers (or is built first).
        let out = ws.raggrep(&["query", "--mode", "lexical", "--json", "--wait", "validate token"]);
        assert!(
            out.status.success(),
            "round {round} (seed {seed}, kill after {delay:?}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let status = ws.raggrep(&["status", "--json"]);
        assert!(status.status.success(), "round {round} (seed {seed}): {}", String::from_utf8_lossy(&status.stderr));
    }
    // A full run afterwards completes the interrupted work.
    let done = ws.index();
    assert_eq!(done["files"], 156);
    let status: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(status["pending"], 0);
    assert_eq!(status["chunks"], status["embedded"]);
    let results = ws.query(&["--mode", "dense", "-k", "1", "validate the ledger number 12-1"]);
    assert_eq!(results["results"].as_array().unwrap().len(), 1);
}

fn index_files(root: &Path, prefix: &str) -> Vec<PathBuf> {
    fs::read_dir(root.join(".raggrep"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect()
}

#[test]
fn damaged_index_files_are_rebuilt_not_fatal() {
    type Damage = fn(&Path);
    let damages: [(&str, Damage); 5] = [
        ("truncated manifest", |root| {
            for path in index_files(root, "manifest-") {
                let bytes = fs::read(&path).unwrap();
                fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            }
        }),
        ("flipped manifest byte", |root| {
            for path in index_files(root, "manifest-") {
                let mut bytes = fs::read(&path).unwrap();
                bytes[10] ^= 0xff;
                fs::write(&path, bytes).unwrap();
            }
        }),
        ("garbage CURRENT", |root| fs::write(root.join(".raggrep/CURRENT"), "../../etc/passwd").unwrap()),
        ("truncated vectors", |root| {
            for path in index_files(root, "vectors-") {
                fs::write(&path, b"short").unwrap();
            }
        }),
        ("lexical index destroyed", |root| {
            let dir = root.join(".raggrep/lexical");
            for entry in fs::read_dir(&dir).unwrap().flatten() {
                fs::write(entry.path(), b"not tantivy").unwrap();
            }
        }),
    ];
    for (name, damage) in damages {
        let ws = Workspace::polyglot();
        ws.index();
        damage(ws.root());
        let out = ws.raggrep(&["query", "--json", "-k", "3", "check whether an API token is still valid"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
        let results: Value = serde_json::from_slice(&out.stdout).unwrap();
        // The lexical index alone may be missing until the next update; the answer still comes.
        assert!(has_hit(&results, "src/auth.py", "validate_token"), "{name}: {:?}", hits(&results));
        // And the next update repairs everything.
        ws.index();
        let lexical = ws.query(&["--mode", "lexical", "-k", "1", "validate_token"]);
        assert_eq!(hits(&lexical)[0].1, "validate_token", "{name}");
    }
}

#[test]
fn embed_shows_which_network_embeds_queries() {
    let ws = Workspace::empty();
    let query = String::from_utf8(ws.ok(&["embed", "where do we validate API tokens"]).stdout).unwrap();
    assert!(query.contains("model: all-minilm-l6-v2-code2-int8\n"), "{query}");
    assert!(query.contains("query model: all-minilm-l6-v2-code-query-soup-int8\n"), "{query}");
    assert!(query.contains("dim: 384\n") && query.contains("norm: 1.000000"), "{query}");
    let document = String::from_utf8(ws.ok(&["embed", "--document", "fn check_token() {}"]).stdout).unwrap();
    assert!(!document.contains("query model"), "documents use the document model: {document}");
    let first = |text: &str| text.lines().find(|l| l.starts_with("first:")).map(str::to_string);
    let as_document =
        String::from_utf8(ws.ok(&["embed", "--document", "where do we validate API tokens"]).stdout).unwrap();
    assert_ne!(first(&query), first(&as_document), "the query and document networks differ");
    // Another installed model by name: the plain fp32 MiniLM.
    let fp32 =
        String::from_utf8(ws.ok(&["--model", "all-minilm-l6-v2-fp32", "embed", "--document", "x"]).stdout).unwrap();
    assert!(fp32.contains("model: all-minilm-l6-v2-fp32") && fp32.contains("dim: 384\n"), "{fp32}");
    assert_ne!(first(&fp32), first(&as_document), "{fp32}");
}

#[test]
fn an_identifier_query_finds_its_definition_first() {
    // The callers mention `load_settings` more often than its definition does, so BM25 and the
    // embedding alone can prefer them; a query that is an identifier names a definition.
    let ws = Workspace::empty();
    ws.write(
        "src/settings.rs",
        "use std::path::Path;\n\npub struct Settings {\n    pub verbose: bool,\n}\n\npub fn load_settings(path: &Path) -> Settings {\n    let verbose = path.exists();\n    Settings { verbose }\n}\n\nimpl Settings {\n    pub fn reload_from(&mut self, path: &Path) {\n        *self = load_settings(path);\n    }\n}\n",
    );
    let callers: String = (0..6)
        .map(|i| {
            format!(
                "pub fn start_{i}() {{\n    let a = load_settings(Path::new(\"a\"));\n    let b = load_settings(Path::new(\"b\"));\n    let c = load_settings(Path::new(\"c\"));\n    run(a, b, c);\n}}\n\n"
            )
        })
        .collect();
    ws.write("src/app.rs", &format!("use std::path::Path;\nuse crate::settings::load_settings;\n\n{callers}"));
    ws.index();
    for (query, mode) in
        [("load_settings", "hybrid"), ("load_settings", "lexical"), ("settings::load_settings", "hybrid")]
    {
        let out = ws.ok(&["query", query, "--mode", mode, "--json"]);
        let response: Value = serde_json::from_slice(&out.stdout).unwrap();
        let first = &response["results"][0];
        assert_eq!(first["path"], "src/settings.rs", "{query} ({mode}): {response:#}");
        assert_eq!(first["start_line"], 7, "{query} ({mode}): {response:#}");
        let scores: Vec<f64> =
            response["results"].as_array().unwrap().iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "scores never rise down the list: {scores:?}");
    }
    // A description is not routed: it is ranked like any other query (and still answered).
    let out = ws.ok(&["query", "read the settings from a file", "--json"]);
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!response["results"].as_array().unwrap().is_empty());
}

/// Paths of a response's hits, in order.
fn hit_paths(response: &Value) -> Vec<String> {
    response["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_symbol_lookup_finds_its_definition_in_a_language_without_a_grammar() {
    // Dart has no grammar here: its files are line windows without symbol names, so the
    // definition is found by its `class` line and its file's name. The client mentions the
    // name far more often than the definition does.
    let ws = Workspace::empty();
    ws.write(
        "lib/src/cookies/http_cookies.dart",
        "import 'package:example/client.dart';\n\n/// Keeps cookies between calls.\nclass HttpCookies {\n  HttpCookies(this.storage);\n\n  final CookiesStorage storage;\n\n  Future<List<Cookie>> get(String url) => storage.get(url);\n}\n",
    );
    let uses: String = (0..12)
        .map(|i| format!("  void install{i}(HttpClient client) {{\n    client.plugin(HttpCookies).get('/{i}'); // HttpCookies {i}\n    log('HttpCookies installed');\n  }}\n\n"))
        .collect();
    ws.write("lib/src/client.dart", &format!("class Client {{\n{uses}}}\n"));
    ws.index();
    let response = ws.query(&["HttpCookies"]);
    let first = &response["results"][0];
    assert_eq!(first["path"], "lib/src/cookies/http_cookies.dart", "{response:#}");
    assert!(first["start_line"].as_u64().unwrap() <= 4 && first["end_line"].as_u64().unwrap() >= 4, "{response:#}");
}

#[test]
fn one_file_does_not_take_every_place() {
    // Eight good chunks in one file and one in another: past the first two of a file, each
    // further hit of it costs a little, so the other file's chunk is shown among the first
    // five instead of after all eight.
    let ws = Workspace::empty();
    let retries: String = (0..8)
        .map(|i| format!("def retry_with_backoff_{i}(call, attempts=5):\n    \"\"\"Retry the call with exponential backoff, variant {i}.\"\"\"\n    delay = 0.1 * {i}\n    for _ in range(attempts):\n        delay *= 2\n    return call()\n\n"))
        .collect();
    ws.write("net/retry.py", &retries);
    ws.write(
        "net/policy.py",
        "def backoff_delays(base, attempts):\n    \"\"\"Exponential backoff delays for retrying a failed call.\"\"\"\n    return [base * 2 ** n for n in range(attempts)]\n",
    );
    ws.index();
    let response = ws.query(&["retry with exponential backoff"]);
    let paths = hit_paths(&response);
    assert_eq!(paths[..2], ["net/retry.py", "net/retry.py"], "{response:#}");
    assert!(paths.iter().take(5).any(|p| p == "net/policy.py"), "{response:#}");
    let scores: Vec<f64> =
        response["results"].as_array().unwrap().iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "scores never rise down the list: {scores:?}");
}

#[test]
fn prose_comes_after_the_code_unless_the_question_asks_for_docs() {
    let ws = Workspace::empty();
    ws.write(
        "docs/rate-limiting.md",
        "# Rate limiting\n\nThe rate limiting middleware counts requests per client and rejects a client\nthat sends too many requests with 429. Configure the rate limit per route.\n",
    );
    ws.write(
        "src/limiter.py",
        "class RateLimiter:\n    \"\"\"Counts requests per client in a sliding window.\"\"\"\n\n    def __init__(self, limit):\n        self.limit = limit\n        self.counts = {}\n\n    def allow(self, client):\n        self.counts[client] = self.counts.get(client, 0) + 1\n        return self.counts[client] <= self.limit\n",
    );
    ws.index();
    let code = hit_paths(&ws.query(&["rate limiting middleware for requests per client"]));
    assert_eq!(code[0], "src/limiter.py", "{code:?}");
    let docs = hit_paths(&ws.query(&["documentation of rate limiting per client"]));
    assert_eq!(docs[0], "docs/rate-limiting.md", "{docs:?}");
}

fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn hook_actions(out: &Output) -> Vec<(String, String)> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["hook"].as_str().unwrap().to_string(), v["action"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn hooks_are_added_beside_the_users_own_and_removed_exactly() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::polyglot();
    git(ws.root(), &["init", "-q", "-b", "main"]);
    let hooks = ws.root().join(".git/hooks");
    let mine = "#!/bin/sh\n# the team's own hook\necho merged >/dev/null";
    fs::write(hooks.join("post-merge"), mine).unwrap();
    fs::set_permissions(hooks.join("post-merge"), fs::Permissions::from_mode(0o700)).unwrap();
    let python = "#!/usr/bin/env python3\nprint('checked out')\n";
    fs::write(hooks.join("post-checkout"), python).unwrap();

    let installed = hook_actions(&ws.ok(&["hook", "install", "--json"]));
    assert_eq!(installed[0], ("post-commit".into(), "created".into()));
    assert!(installed[1].1.starts_with("skipped: not a shell script"), "{installed:?}");
    assert_eq!(installed[2], ("post-merge".into(), "added".into()));
    let created = fs::read_to_string(hooks.join("post-commit")).unwrap();
    assert!(created.starts_with("#!/bin/sh\n") && created.contains(" index . "), "{created}");
    assert_ne!(fs::metadata(hooks.join("post-commit")).unwrap().permissions().mode() & 0o111, 0);
    let merged = fs::read_to_string(hooks.join("post-merge")).unwrap();
    assert!(merged.starts_with(mine) && merged.contains("raggrep"), "{merged}");
    assert_eq!(fs::read_to_string(hooks.join("post-checkout")).unwrap(), python);

    // Twice is once.
    let again = hook_actions(&ws.ok(&["hook", "install", "--json"]));
    assert_eq!(again.iter().filter(|(_, a)| a == "kept").count(), 2, "{again:?}");
    assert_eq!(fs::read_to_string(hooks.join("post-merge")).unwrap(), merged);

    let text = String::from_utf8(ws.ok(&["hook", "uninstall"]).stdout).unwrap();
    assert!(text.contains("post-commit: deleted") && text.contains("post-merge: removed"), "{text}");
    assert!(!hooks.join("post-commit").exists());
    assert_eq!(fs::read_to_string(hooks.join("post-merge")).unwrap(), mine, "the user's hook, byte for byte");
    assert_eq!(fs::metadata(hooks.join("post-merge")).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(fs::read_to_string(hooks.join("post-checkout")).unwrap(), python);

    let outside = Workspace::empty();
    let out = outside.raggrep(&["hook", "install"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not in a git repository"));
}

#[test]
fn index_reads_only_the_paths_it_is_handed() {
    let ws = Workspace::polyglot();
    ws.index();
    let auth = fs::read_to_string(ws.root().join("src/auth.py")).unwrap();
    ws.write(
        "src/auth.py",
        &format!("{auth}\ndef revoke_token_of_the_pangolin(store, token):\n    store.pop(token)\n"),
    );
    // From stdin, one per line: the tree is not walked.
    let mut child = ws
        .command(&["index", ".", "--paths-from", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(b"src/auth.py\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (stats["walked"].clone(), stats["changed_files"].clone()),
        (serde_json::json!(false), serde_json::json!(1)),
        "{stats}"
    );
    let hit = ws.ok(&["query", "pangolin", "--mode", "lexical", "--json", "-k", "1"]);
    assert!(String::from_utf8_lossy(&hit.stdout).contains("revoke_token_of_the_pangolin"));

    // From a file, NUL-separated as `git diff -z` writes them, from a subdirectory; a path
    // outside the root is left out; a deleted file leaves the index.
    fs::remove_file(ws.root().join("src/auth.py")).unwrap();
    let list = ws.root().join("changed.list");
    fs::write(&list, b"auth.py\0../../elsewhere.py\0").unwrap();
    let out = ws.ok_in("src", &["index", "--paths-from", list.to_str().unwrap(), "--json"]);
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (stats["walked"].clone(), stats["removed_files"].clone()),
        (serde_json::json!(false), serde_json::json!(1)),
        "{stats}"
    );
    fs::remove_file(&list).unwrap();
    let missing = ws.raggrep(&["index", ".", "--paths-from", "no-such-list"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("reading the changed paths from no-such-list"),
        "{missing:?}"
    );
}

#[test]
fn a_commit_updates_the_index_in_the_background() {
    let ws = Workspace::polyglot();
    git(ws.root(), &["init", "-q", "-b", "main"]);
    ws.ok(&["hook", "install"]);
    git(ws.root(), &["add", "-A"]);
    git(ws.root(), &["commit", "-qm", "first"]);
    ws.write("src/ledger.py", "def settle_invoice_with_quokka_discount(invoice):\n    return invoice.total * 0.9\n");
    git(ws.root(), &["add", "-A"]);
    git(ws.root(), &["commit", "-qm", "second"]);
    // The hook returns at once; the index catches up in the background. (`inspect` only reads:
    // a query would build a missing index itself.)
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = ws.raggrep(&["inspect", "--json"]);
        if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("\"src/ledger.py\"") {
            break;
        }
        assert!(Instant::now() < deadline, "the post-commit hook never indexed src/ledger.py");
        std::thread::sleep(Duration::from_millis(250));
    }
    let out = ws.ok(&["query", "quokka", "--mode", "lexical", "--json", "-k", "1"]);
    let response: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(response["results"][0]["path"], "src/ledger.py", "{response:#}");

    // A commit that changes a file the index has: the hook hands over its path, and the update
    // reads that file without walking the tree (the audit log keeps each update's counts).
    let updates = |ws: &Workspace| {
        let log = fs::read_to_string(ws.root().join(".raggrep/audit.jsonl")).unwrap_or_default();
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["op"] == "index")
            .collect::<Vec<_>>()
    };
    let before = updates(&ws).len();
    ws.write("src/ledger.py", "def settle_invoice_with_wombat_discount(invoice):\n    return invoice.total * 0.8\n");
    git(ws.root(), &["commit", "-qam", "third"]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let scoped = loop {
        if let Some(update) = updates(&ws).into_iter().skip(before).find(|e| e["changed_files"] == 1) {
            break update;
        }
        assert!(Instant::now() < deadline, "the post-commit hook never updated src/ledger.py: {:?}", updates(&ws));
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(scoped["walked"], false, "{scoped}");
}

/// `raggrep watch` with its stdout read line by line as it comes.
struct Watching {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Watching {
    fn start(ws: &Workspace, args: &[&str]) -> Watching {
        let mut child = Command::new(env!("CARGO_BIN_EXE_raggrep"))
            .arg("watch")
            .args(args)
            .current_dir(ws.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Watching { child, lines }
    }

    /// The next stdout line (panics after two minutes: the model runs in a debug build).
    fn next(&self) -> String {
        self.lines.recv_timeout(Duration::from_secs(120)).expect("raggrep watch printed nothing for two minutes")
    }

    /// The next JSON event, skipping updates that found nothing to do: one save can reach the
    /// watcher as events further apart than its quiet period on a loaded machine, and the
    /// second batch then updates nothing.
    fn next_event(&self) -> Value {
        loop {
            let line = self.next();
            let event: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            let idle = event["event"] == "updated" && event["changed_files"] == 0 && event["removed_files"] == 0;
            if !idle {
                return event;
            }
        }
    }

    fn signal(&mut self, name: &str) -> std::process::ExitStatus {
        let killed = Command::new("kill").args(["-s", name, &self.child.id().to_string()]).status().unwrap();
        assert!(killed.success());
        self.child.wait().unwrap()
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_indexes_files_changed_on_disk_until_stopped() {
    let ws = Workspace::polyglot();
    let mut watch = Watching::start(&ws, &["--json", "."]);
    let event = |line: String| -> Value { serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")) };
    let watching = event(watch.next());
    assert_eq!(watching["event"], "watching", "{watching}");
    let first = event(watch.next());
    assert_eq!(first["event"], "updated", "{first}");
    assert!(first["files"].as_u64().unwrap() >= 8 && first["chunks"] == first["embedded"], "{first}");

    // An edit on disk, no editor: one update naming the one changed file, and a query finds it.
    ws.write("src/ledger.py", "def settle_invoice_with_quokka_discount(invoice):\n    return invoice.total * 0.9\n");
    let update = watch.next_event();
    assert_eq!(update["event"], "updated", "{update}");
    assert_eq!(update["changed_files"], 1, "{update}");
    assert_eq!(update["embedded"], 1, "{update}");
    let response = ws.query(&["quokka discount on an invoice", "-k", "1"]);
    assert_eq!(response["results"][0]["path"], "src/ledger.py", "{response:#}");

    // A removed file leaves the index.
    fs::remove_file(ws.root().join("src/ledger.py")).unwrap();
    let removal = watch.next_event();
    assert_eq!(removal["removed_files"], 1, "{removal}");

    let status = watch.signal("TERM");
    assert!(status.success(), "raggrep watch exited with {status}");
    assert_eq!(watch.next_event(), serde_json::json!({"event": "stopped", "signal": "SIGTERM"}));
    let response = ws.query(&["quokka", "--mode", "lexical"]);
    assert!(response["results"].as_array().unwrap().is_empty(), "{response:#}");
}

#[test]
fn watch_in_text_mode_and_its_errors() {
    let ws = Workspace::polyglot();
    let mut watch = Watching::start(&ws, &[]);
    let watching = watch.next();
    assert!(watching.starts_with("watching ") && watching.ends_with("(Ctrl-C to stop)"), "{watching}");
    let updated = watch.next();
    assert!(updated.contains(": 8 changed, 0 removed of 8 files;") && updated.contains("embedded) in"), "{updated}");
    // A file created and deleted at once changes nothing: no line for it.
    fs::write(ws.root().join("scratch.py"), "x = 1\n").unwrap();
    fs::remove_file(ws.root().join("scratch.py")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    fs::write(ws.root().join("src/added.py"), "def wombat_tally():\n    return 3\n").unwrap();
    let added = watch.next();
    assert!(added.contains(": 1 changed, 0 removed of 9 files;"), "{added}");
    let status = watch.signal("INT");
    assert!(status.success(), "raggrep watch exited with {status}");
    assert_eq!(watch.next(), "stopped (SIGINT); the index is up to date");

    let out = ws.raggrep(&["watch", "no-such-dir"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no-such-dir: not a directory"), "{stderr}");
}

#[test]
fn watch_pauses_on_sigusr1_and_catches_up_on_sigusr2() {
    let ws = Workspace::polyglot();
    let mut watch = Watching::start(&ws, &["--json"]);
    let event = |line: String| -> Value { serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")) };
    assert_eq!(event(watch.next())["event"], "watching");
    assert_eq!(event(watch.next())["event"], "updated");

    let signal = |name: &str, pid: u32| {
        assert!(Command::new("kill").args(["-s", name, &pid.to_string()]).status().unwrap().success());
    };
    signal("USR1", watch.child.id());
    assert_eq!(watch.next_event(), serde_json::json!({"event": "paused"}));
    ws.write("src/ledger.py", "def settle_invoice_with_quokka_discount(invoice):\n    return invoice.total * 0.9\n");
    // Paused: the change is queued, not indexed (an update takes well under a second here).
    std::thread::sleep(Duration::from_secs(3));
    assert!(watch.lines.try_recv().is_err(), "an update ran while paused");
    let response = ws.query(&["quokka", "--mode", "lexical"]);
    assert!(response["results"].as_array().unwrap().is_empty(), "indexed while paused: {response:#}");

    signal("USR2", watch.child.id());
    assert_eq!(watch.next_event(), serde_json::json!({"event": "resumed"}));
    let update = watch.next_event();
    assert_eq!((update["event"].as_str(), update["changed_files"].as_u64()), (Some("updated"), Some(1)), "{update}");
    let response = ws.query(&["quokka", "--mode", "lexical", "-k", "1"]);
    assert_eq!(response["results"][0]["path"], "src/ledger.py", "{response:#}");

    // Paused again, then stopped: the exit is not held up by the pause.
    signal("USR1", watch.child.id());
    assert_eq!(watch.next_event()["event"], "paused");
    let status = watch.signal("TERM");
    assert!(status.success(), "raggrep watch exited with {status}");
}

#[test]
fn watch_counts_a_close_after_writing_only_for_files_it_indexes() {
    let ws = Workspace::polyglot();
    let watch = Watching::start(&ws, &["--json"]);
    assert_eq!(watch.next_event()["event"], "watching");
    assert_eq!(watch.next_event()["event"], "updated");
    // Updates that change nothing print nothing; the audit log records every one.
    let updates = || {
        let log = fs::read_to_string(ws.root().join(".raggrep/audit.jsonl")).unwrap_or_default();
        log.lines().filter(|line| line.contains(r#""op":"index""#)).count()
    };
    let settled = || {
        let mut count = updates();
        loop {
            std::thread::sleep(Duration::from_secs(2));
            let now = updates();
            if now == count {
                return count;
            }
            count = now;
        }
    };
    // Waits up to a minute for an update after the `before`th.
    let after = |before: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while updates() == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let open_and_close_for_writing = |rel: &str| {
        drop(fs::OpenOptions::new().read(true).write(true).open(ws.root().join(rel)).unwrap());
    };

    // A database the application beside the code queries: binary, so never indexed.
    let before = settled();
    fs::write(ws.root().join("app.sqlite"), b"SQLite format 3\0\x10\0\x01\x01").unwrap();
    after(before);
    let before = settled();
    assert!(before > 1, "writing app.sqlite ran no update");
    // Opened read-write and closed unwritten, as a database client does after every query: no
    // update (each one would walk the root).
    open_and_close_for_writing("app.sqlite");
    assert_eq!(settled(), before, "closing app.sqlite ran an update");
    // The same close on an indexed file is an update: it is all a write through mmap sends.
    open_and_close_for_writing("src/auth.py");
    after(before);
    assert_eq!(updates(), before + 1, "closing src/auth.py after opening it for writing ran no update");
}

/// Python source of `n` small, different functions (`tag` keeps files apart).
fn many_functions(tag: &str, n: usize) -> String {
    let verbs = ["parse", "render", "merge", "split", "count", "rotate", "encode", "score", "clamp", "pack"];
    let nouns = ["invoice", "matrix", "cookie", "tile", "ledger", "sample", "route", "glyph", "bucket", "vertex"];
    (0..n)
        .map(|i| {
            let (verb, noun) = (verbs[i % verbs.len()], nouns[(i / verbs.len()) % nouns.len()]);
            format!(
                "def {verb}_{noun}_{tag}_{i}(items, limit={i}):\n    \"\"\"{verb} each {noun} of the {tag} batch, at most {i}.\"\"\"\n    out = [x for x in items if x is not None][:limit]\n    return sorted(out, key=lambda x: (x, {i}))\n\n\n"
            )
        })
        .collect()
}

#[test]
fn the_vector_graph_grows_by_insertion() {
    let ws = Workspace::empty();
    for f in 0..3 {
        ws.write(&format!("pkg/first_{f}.py"), &many_functions(&format!("first{f}"), 20));
    }
    let index = |ws: &Workspace| {
        let out = ws.ok(&["index", ".", "--json", "--ann-min-slots", "32"]);
        let stderr = String::from_utf8(out.stderr).unwrap();
        let status: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
        (stderr, status)
    };
    let (stderr, status) = index(&ws);
    assert!(stderr.contains("building the HNSW graph over"), "{stderr}");
    let first = status["vectors"].as_u64().unwrap();
    assert!(first >= 60, "{status:#}");
    assert_eq!(status["ann_slots"], first, "{status:#}");

    // Enough new vectors (≥ the threshold, here 32): inserted into the graph, not rebuilt.
    ws.write("pkg/second.py", &many_functions("second", 40));
    ws.write(
        "pkg/geo.py",
        "def haversine_km(lat1, lon1, lat2, lon2):\n    \"\"\"Great-circle distance between two points on Earth.\"\"\"\n    from math import radians, sin, cos, asin, sqrt\n    a = sin(radians(lat2 - lat1) / 2) ** 2 + cos(radians(lat1)) * cos(radians(lat2)) * sin(radians(lon2 - lon1) / 2) ** 2\n    return 12742 * asin(sqrt(a))\n",
    );
    let (stderr, status) = index(&ws);
    let second = status["vectors"].as_u64().unwrap();
    assert!(second >= first + 41, "{status:#}");
    assert!(stderr.contains(&format!("adding {} vectors to the HNSW graph", second - first)), "{stderr}");
    assert!(!stderr.contains("building the HNSW graph"), "{stderr}");
    assert_eq!(status["ann_slots"], second, "{status:#}");
    let query = ["--mode", "dense", "-k", "5", "distance between two coordinates on the globe"];
    let approx = ws.query(&query);
    assert_eq!(hits(&approx).first(), Some(&("pkg/geo.py".to_string(), "haversine_km".to_string())), "{approx:#}");
    let mut exact_args = query.to_vec();
    exact_args.push("--exact");
    assert_eq!(hits(&approx), hits(&ws.query(&exact_args)), "the grown graph answers like the exact scan");

    // A few new vectors (below the threshold): the graph is left as it is and they are scanned.
    ws.write(
        "pkg/third.py",
        "def fahrenheit_to_celsius(degrees):\n    \"\"\"Convert a temperature in Fahrenheit to Celsius.\"\"\"\n    return (degrees - 32) * 5 / 9\n",
    );
    let (stderr, status) = index(&ws);
    assert!(!stderr.contains("HNSW graph"), "{stderr}");
    assert_eq!(status["ann_slots"], second, "{status:#}");
    assert!(status["vectors"].as_u64().unwrap() > second);
    let found = ws.query(&["--mode", "dense", "-k", "3", "turn a temperature into degrees celsius"]);
    assert_eq!(hits(&found).first().map(|h| h.0.as_str()), Some("pkg/third.py"), "{found:#}");
}

#[test]
fn files_lists_exactly_what_index_indexes_and_says_why_the_rest_is_left_out() {
    let ws = Workspace::empty();
    ws.write(
        "src/auth.rs",
        "/// Checks a token.\npub fn validate_token(token: &str) -> bool {\n    !token.is_empty()\n}\n",
    );
    ws.write("notes.md", "# Notes\n\nTokens are checked in `validate_token`.\n");
    ws.write("gen.go", "// Code generated by stringer. DO NOT EDIT.\n\npackage main\n");
    ws.write("app.js", &format!("var a={};\n", "b(1),".repeat(400)));
    ws.write("node_modules/dep/index.js", "module.exports = 1;\n");
    fs::write(ws.root().join("blob.dat"), [b"header\0".as_slice(), &[0xffu8; 64]].concat()).unwrap();
    let out = ws.ok(&["files", "."]);
    let listed: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(listed, ["notes.md", "src/auth.rs"], "{stderr}");
    for (file, reason) in [("blob.dat", "binary file"), ("gen.go", "generated"), ("app.js", "minified file")] {
        assert!(
            stderr.lines().any(|l| l.starts_with("skipped ") && l.contains(file) && l.contains(reason)),
            "{file}: {stderr}"
        );
    }
    assert!(stderr.lines().any(|l| l == "2 files, 3 skipped"), "{stderr}");

    // The list is the index's: every listed file is indexed, and nothing else.
    ws.index();
    assert_eq!(indexed_paths(&ws), listed);
}

/// `inspect --json` paths of the workspace's index, sorted.
fn indexed_paths(ws: &Workspace) -> Vec<String> {
    let out = ws.ok(&["inspect", "--json"]);
    let mut paths: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|f| f["path"].as_str().map(str::to_string))
        .collect();
    paths.sort();
    paths
}

#[test]
fn index_flags_choose_the_files_and_inspect_says_why() {
    let ws = Workspace::polyglot();
    let done: Value = serde_json::from_slice(&ws.ok(&["index", ".", "--exclude", "lib/**", "--json"]).stdout).unwrap();
    assert_eq!(done["files"], 5, "{done}");
    let paths = indexed_paths(&ws);
    assert!(paths.iter().all(|p| !p.starts_with("lib/")) && paths.len() == 5, "{paths:?}");

    // Only what --include names (repeatable); the rest leaves the index.
    ws.ok(&["index", ".", "--include", "*.rs", "--include", "src/*.py", "--json"]);
    assert_eq!(indexed_paths(&ws), ["src/auth.py", "src/checksum.rs"]);

    // A size limit: bigger files are skipped with the reason, in JSON and in text.
    let limit = 600;
    let big: Vec<String> = ["src/auth.py", "src/checksum.rs"]
        .into_iter()
        .filter(|p| fs::metadata(ws.root().join(p)).unwrap().len() > limit)
        .map(str::to_string)
        .collect();
    assert!(!big.is_empty(), "the fixture needs a file over {limit} bytes");
    let limit = limit.to_string();
    ws.ok(&["index", ".", "--include", "*.rs", "--include", "src/*.py", "--max-file-size", &limit]);
    let skipped: Vec<Value> = String::from_utf8_lossy(&ws.ok(&["inspect", "--skipped", "--json"]).stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for path in &big {
        let entry =
            skipped.iter().find(|s| s["path"] == path.as_str()).unwrap_or_else(|| panic!("{path}: {skipped:?}"));
        assert!(entry["reason"].as_str().unwrap().starts_with("too large"), "{entry}");
        assert!(!indexed_paths(&ws).contains(path), "{path} is over the limit");
    }
    let text = String::from_utf8(ws.ok(&["inspect", "--skipped"]).stdout).unwrap();
    assert!(text.lines().any(|l| l.starts_with(&format!("{}  too large", big[0]))), "{text}");
    let files = String::from_utf8(ws.ok(&["inspect"]).stdout).unwrap();
    for line in files.lines() {
        let parts: Vec<&str> = line.split("  ").collect();
        assert!(parts.len() == 3 && parts[2].ends_with(" chunks"), "path  language  N chunks: {line}");
    }
}

#[test]
fn index_dir_keeps_the_index_outside_the_tree() {
    let ws = Workspace::polyglot();
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().join("idx");
    let dir_arg = dir.to_str().unwrap();
    let out = ws.ok(&["index", ".", "--index-dir", dir_arg]);
    let summary = String::from_utf8_lossy(&out.stderr);
    let last = summary.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("indexed ") && last.contains(": 8 files (8 changed, 0 removed, 0 skipped), "),
        "{summary}"
    );
    assert!(last.contains(" embedded (") && last.contains(" reused from the index, "), "{last}");
    assert!(!ws.root().join(".raggrep").exists(), "nothing written into the tree");
    assert!(dir.join("CURRENT").is_file());

    // Queries, status and inspect use the index dir, by flag or by environment (and write
    // nothing into the tree, checked at the end: tests run as root, so a read-only mode would
    // not stop a write).
    let found = ws.query(&["--index-dir", dir_arg, "-k", "3", "check whether an API token is still valid"]);
    let status: Value = serde_json::from_slice(&ws.ok(&["status", "--index-dir", dir_arg, "--json"]).stdout).unwrap();
    let root_arg = ws.root().to_str().unwrap();
    let from_env = ws
        .command(&["status", "--json", "--root", root_arg])
        .env("RAGGREP_INDEX_DIR", &dir)
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    let inspect = ws
        .command(&["inspect", "--json", "--index-dir", dir_arg, "--root", root_arg])
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    assert!(has_hit(&found, "src/auth.py", "validate_token"), "{:?}", hits(&found));
    assert_eq!(status["files"], 8, "{status}");
    assert!(from_env.status.success(), "{}", String::from_utf8_lossy(&from_env.stderr));
    let from_env: Value = serde_json::from_slice(&from_env.stdout).unwrap();
    assert_eq!(from_env["files"], 8, "{from_env}");
    assert_eq!(String::from_utf8_lossy(&inspect.stdout).lines().count(), 8, "{inspect:?}");
    assert!(!ws.root().join(".raggrep").exists());
}

#[test]
fn status_reports_a_damaged_index_and_index_repairs_it() {
    let ws = Workspace::polyglot();
    ws.index();
    for path in index_files(ws.root(), "manifest-") {
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    }
    let json: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert!(json["damaged"].as_str().is_some_and(|d| !d.is_empty()), "{json}");
    assert!(json["fix"].as_str().unwrap().contains("raggrep index"), "{json}");
    let text = String::from_utf8(ws.ok(&["status"]).stdout).unwrap();
    assert!(text.contains("is damaged: ") && text.contains("`raggrep index` rebuilds it"), "{text}");
    ws.index();
    let json: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(json["files"], 8, "{json}");
}

#[test]
fn log_levels_and_runtime_settings_are_checked() {
    let ws = Workspace::polyglot();
    fs::write(ws.root().join("blob.dat"), b"\0\x01binary").unwrap();
    let quiet = ws.ok(&["index", "."]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("binary file"), "warn is the default level");
    fs::remove_dir_all(ws.root().join(".raggrep")).unwrap();
    let verbose = ws.ok(&["--log", "info", "index", "."]);
    let stderr = String::from_utf8_lossy(&verbose.stderr);
    assert!(
        stderr.lines().any(|l| l.contains("INFO") && l.contains("blob.dat") && l.contains("binary file")),
        "{stderr}"
    );
    // RAGGREP_LOG, the environment's way (how MCP hosts set it), says the same.
    fs::remove_dir_all(ws.root().join(".raggrep")).unwrap();
    let by_env = ws.command(&["index", "."]).env("RAGGREP_LOG", "info").output().unwrap();
    assert!(String::from_utf8_lossy(&by_env.stderr).contains("binary file"), "{by_env:?}");

    let bad_log = ws.raggrep(&["--log", "verbose", "status"]);
    let stderr = String::from_utf8_lossy(&bad_log.stderr);
    assert_eq!(bad_log.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("verbose") && stderr.contains("error, warn, info"), "{stderr}");

    let missing = ws.raggrep(&["--ort-dylib", "/no/such/libonnxruntime.so", "embed", "x"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/no/such/libonnxruntime.so") && stderr.contains("ORT_DYLIB_PATH"), "{stderr}");

    let empty = tempfile::tempdir().unwrap();
    let no_models = ws
        .command(&["embed", "x"])
        .env("RAGGREP_HOME", empty.path())
        .env_remove("RAGGREP_MODEL_DIR")
        .env_remove("RAGGREP_MODEL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&no_models.stderr);
    assert_eq!(no_models.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&empty.path().display().to_string()) && stderr.contains("not found"), "{stderr}");
}

#[test]
fn hooks_for_a_repository_named_by_path_in_json() {
    let repo = Workspace::polyglot();
    git(repo.root(), &["init", "-q", "-b", "main"]);
    let elsewhere = Workspace::empty();
    let path = repo.root().to_str().unwrap();
    let installed = hook_actions(&elsewhere.ok(&["hook", "install", path, "--json"]));
    assert_eq!(installed.len(), 3, "{installed:?}");
    assert!(installed.iter().all(|(_, a)| a == "created"), "{installed:?}");
    assert!(repo.root().join(".git/hooks/post-commit").is_file());
    let removed = elsewhere.ok(&["hook", "uninstall", path, "--json"]);
    for line in String::from_utf8_lossy(&removed.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["action"], "deleted", "{v}");
        assert!(v["path"].as_str().unwrap().starts_with(path), "{v}");
    }
    assert_eq!(hook_actions(&removed).len(), 3);
    assert!(!repo.root().join(".git/hooks/post-commit").exists());
}

#[test]
fn the_team_index_refuses_local_only_options() {
    let ws = Workspace::empty();
    let both = ws.raggrep(&["query", "--team", "--from", "postgres://127.0.0.1:9/x", "q"]);
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("--team"), "{both:?}");
    let no_team = ws.raggrep(&["query", "--repo", "acme/*", "q"]);
    assert_eq!(no_team.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_team.stderr).contains("--repo filters the team index"), "{no_team:?}");
    for flag in [&["--lang", "rust"][..], &["--path", "src/**"], &["--min-score", "0.5"], &["--exact"]] {
        let mut args = vec!["query", "--from", "postgres://127.0.0.1:9/x"];
        args.extend_from_slice(flag);
        args.push("q");
        let out = ws.raggrep(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {stderr}");
        assert!(stderr.contains("local-only"), "{flag:?}: {stderr}");
    }
}

#[test]
fn watch_keeps_several_roots_fresh() {
    let first = Workspace::polyglot();
    let second = Workspace::empty();
    second.write("ledger.py", "def settle_invoice(invoice):\n    return invoice.total\n");
    let second_path = second.root().to_str().unwrap();
    let watch = Watching::start(&first, &["--json", ".", second_path]);
    let watching = watch.next_event();
    assert_eq!(watching["event"], "watching", "{watching}");
    assert_eq!(watching["roots"].as_array().map(Vec::len), Some(2), "{watching}");
    let mut first_updates: Vec<String> = Vec::new();
    while first_updates.len() < 2 {
        let update = watch.next_event();
        assert_eq!(update["event"], "updated", "{update}");
        first_updates.push(update["root"].as_str().unwrap().to_string());
    }
    first_updates.sort();
    assert!(first_updates.iter().any(|r| r == second_path), "{first_updates:?}");

    second.write("refunds.py", "def refund_quokka_order(order):\n    return -order.total\n");
    let update = watch.next_event();
    assert_eq!(update["root"], second_path, "{update}");
    assert_eq!(update["changed_files"], 1, "{update}");
    let found = second.query(&["--mode", "lexical", "-k", "1", "refund_quokka_order"]);
    assert!(has_hit(&found, "refunds.py", "refund_quokka_order"), "{:?}", hits(&found));
}

#[test]
fn an_index_in_another_format_is_rebuilt_and_not_called_damaged() {
    let ws = Workspace::polyglot();
    ws.index();
    // The footer's format version, as an index written by another raggrep version has it.
    for path in index_files(ws.root(), "manifest-") {
        let mut bytes = fs::read(&path).unwrap();
        let at = bytes.len() - 24;
        assert_eq!(&bytes[at..at + 4], b"RGMF");
        let older = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) - 1;
        bytes[at + 4..at + 8].copy_from_slice(&older.to_le_bytes());
        fs::write(&path, bytes).unwrap();
    }
    let text = String::from_utf8(ws.ok(&["status"]).stdout).unwrap();
    assert!(text.contains("needs a rebuild: ") && text.contains("from another version of raggrep"), "{text}");
    let json: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert!(json["damaged"].as_str().is_some_and(|d| d.contains("the index is in format")), "{json}");
    let out = ws.raggrep(&["query", "--json", "-k", "3", "check whether an API token is still valid"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("from another version of raggrep") && stderr.contains("rebuilding"), "{stderr}");
    assert!(!stderr.contains("damaged"), "an older format is not damage: {stderr}");
    let results: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(has_hit(&results, "src/auth.py", "validate_token"), "{:?}", hits(&results));
    let json: Value = serde_json::from_slice(&ws.ok(&["status", "--json"]).stdout).unwrap();
    assert_eq!(json["files"], 8, "{json}");
}

/// Issue 59: a command started in a subdirectory uses the index of the project it is in, as
/// git finds its repository, instead of building a second index of the subdirectory alone.
#[test]
fn a_query_from_a_subdirectory_uses_the_projects_index() {
    let ws = Workspace::polyglot();
    ws.index();
    let root = ws.root().canonicalize().unwrap();
    let json = |out: Output| -> Value { serde_json::from_slice(&out.stdout).unwrap() };
    let question = "check whether an API token is still valid";
    let from_root = json(ws.ok(&["query", question, "--json", "-k", "8"]));
    let everywhere = json(ws.ok_in("lib", &["query", question, "--json", "-k", "8", "--everywhere"]));
    assert_eq!(hit_paths(&everywhere), hit_paths(&from_root), "--everywhere is the project's ranking");
    assert_eq!(everywhere["root"], root.display().to_string());
    assert!(!ws.root().join("lib/.raggrep").exists(), "a nested index was built");

    // By default the subdirectory's hits come first, then the rest of the project's, in rank order.
    let first = hit_paths(&json(ws.ok_in("lib", &["query", question, "--json", "-k", "8"])));
    let mut expected: Vec<String> = hit_paths(&from_root).into_iter().filter(|p| p.starts_with("lib/")).collect();
    assert!(!expected.is_empty() && expected.len() < 8, "the fixture should give both kinds: {expected:?}");
    expected.extend(hit_paths(&from_root).into_iter().filter(|p| !p.starts_with("lib/")));
    assert_eq!(first, expected);
    assert_eq!(first[0].split('/').next(), Some("lib"));

    // --here: only the subdirectory's.
    let here = hit_paths(&json(ws.ok_in("lib", &["query", question, "--json", "--here"])));
    assert!(!here.is_empty() && here.iter().all(|p| p.starts_with("lib/")), "{here:?}");
    let both = ws
        .command(&["query", question, "--here", "--path", "src/**"])
        .current_dir(ws.root().join("lib"))
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "--here with --path must be refused");

    // The human output says which index answered and shows paths from where the user is.
    let text = String::from_utf8(ws.ok_in("lib", &["query", question]).stdout).unwrap();
    let first_line = text.lines().next().unwrap();
    assert!(
        first_line.contains(&format!("index of {}", root.display())) && first_line.contains("lib/ first"),
        "{text}"
    );
    assert!(text.contains("../src/auth.py:"), "paths are not shown from lib/: {text}");
    assert!(!text.contains("lib/Cache.java") && !text.contains("lib/unique.js"), "{text}");

    // status names the index it uses, from any subdirectory.
    let status = json(ws.ok_in("lib", &["status", "--json"]));
    assert_eq!(status["root"], root.display().to_string());
    // --root still wins: the subdirectory on its own (built first, then searched).
    let own = ws.ok_in("lib", &["query", question, "--json", "--root", ".", "--wait"]);
    assert_eq!(json(own)["root"], root.join("lib").display().to_string());
    assert!(ws.root().join("lib/.raggrep").is_dir());
}

/// Without an index, the top of the git work tree is the root; a nested repository (a vendored
/// checkout) inside an indexed project searches the project's index; a ceiling stops the search.
#[test]
fn the_root_is_the_git_work_tree_then_the_directory_unless_a_ceiling_says_otherwise() {
    let ws = Workspace::polyglot();
    fs::create_dir_all(ws.root().join(".git")).unwrap();
    let root = ws.root().canonicalize().unwrap();
    let out = ws.ok_in("docs", &["query", "deploy the service", "--json", "-k", "3"]);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["root"], root.display().to_string(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(ws.root().join(".raggrep/CURRENT").is_file() && !ws.root().join("docs/.raggrep").exists());

    // A vendored repository inside the indexed project: the project's index answers.
    ws.write("vendor/tool/.git/HEAD", "ref: refs/heads/main\n");
    ws.write("vendor/tool/run.py", "def run_tool():\n    return 1\n");
    let out = ws.ok_in("vendor/tool", &["status", "--json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["root"], root.display().to_string());

    // A ceiling at the project: from docs/, the search does not enter it, so docs/ is its own root.
    let out = ws
        .command(&["status"])
        .current_dir(ws.root().join("docs"))
        .env("RAGGREP_CEILING_DIRS", ws.root())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&root.join("docs").display().to_string()), "{stderr}");
}

/// `raggrep index` in a subdirectory of an indexed project updates the project's index and says
/// so; `--new` makes a separate index on purpose.
#[test]
fn index_in_a_subdirectory_updates_the_projects_index_unless_new() {
    let ws = Workspace::polyglot();
    ws.index();
    let root = ws.root().canonicalize().unwrap();
    ws.write(
        "svc/health.go",
        "package svc\n\n// Healthy reports whether the service answers.\nfunc Healthy() bool { return true }\n",
    );
    let out = ws.ok_in("svc", &["index", ".", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("inside the index of {}", root.display())), "{stderr}");
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["files"], 9, "the project's index, with the new file");
    assert!(!ws.root().join("svc/.raggrep").exists());
    // Without PATH, from the subdirectory: the same index, announced.
    let out = ws.ok_in("svc", &["index"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("updating the index of {}", root.display())));
    // The vector store and ask find the same root: a key stored from svc/ is in the project's
    // database, and ask's exact answer cites the project's file from there.
    let key = String::from_utf8(ws.ok_in("svc", &["db", "store", "retry budget", "three tries"]).stdout).unwrap();
    let got = ws.ok(&["db", "retrieve", key.trim()]);
    assert_eq!(String::from_utf8_lossy(&got.stdout), "three tries\n");
    let answer =
        String::from_utf8(ws.ok_in("svc", &["ask", "--prompt", "where is validate_token defined?"]).stdout).unwrap();
    assert!(answer.contains("src/auth.py"), "{answer}");
    // --new: a separate index of the subdirectory.
    let out = ws.ok_in("svc", &["index", "--new", ".", "--json"]);
    let stats: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["files"], 2);
    assert!(ws.root().join("svc/.raggrep/CURRENT").is_file());
}

/// Issue 56: `query`'s output in grep's and ripgrep's terms, through the real binary.
#[test]
fn query_prints_as_grep_and_ripgrep_do() {
    let ws = Workspace::polyglot();
    ws.index();
    let q = "check whether an API token is still valid";
    let stdout = |args: &[&str]| String::from_utf8(ws.ok(args).stdout).unwrap();
    let json: Value = serde_json::from_str(&stdout(&["query", q, "-k", "6", "--json"])).unwrap();
    let paths = hit_paths(&json);
    let mut files: Vec<String> = Vec::new();
    for p in &paths {
        if !files.contains(p) {
            files.push(p.clone());
        }
    }
    // -l: the files, ranked by their best hit; -c: hits per file, in the same order.
    assert_eq!(stdout(&["query", q, "-k", "6", "-l"]), files.iter().map(|f| format!("{f}\n")).collect::<String>());
    let counts: String = files.iter().map(|f| format!("{f}:{}\n", paths.iter().filter(|p| *p == f).count())).collect();
    assert_eq!(stdout(&["query", q, "-k", "6", "-c"]), counts);
    // --vimgrep: path:line:column:text at the definition line, the column at the name.
    let vimgrep = stdout(&["query", q, "-k", "3", "--vimgrep"]);
    assert_eq!(vimgrep.lines().next(), Some("src/auth.py:19:5:def validate_token(store, token):"), "{vimgrep}");
    assert_eq!(vimgrep.lines().count(), 3);
    // --no-heading with line numbers and context: grep's `path:N:` in the hit, `path-N-` around it.
    assert_eq!(
        stdout(&["query", q, "-k", "1", "--no-heading", "-n", "-C", "1"]),
        "src/auth.py-18-\nsrc/auth.py:19:def validate_token(store, token):\nsrc/auth.py:20:    \"\"\"Check that an API token exists and has not expired.\"\"\"\n"
    );
    // Headings (the default): -A lines after the definition line, -n numbered, -N not.
    let after = stdout(&["query", q, "-k", "1", "-A", "2", "-n"]);
    let lines: Vec<&str> = after.lines().collect();
    assert!(lines[0].starts_with("src/auth.py:19  ") && lines[0].ends_with("  (lines 19-25)"), "{after}");
    assert_eq!(
        &lines[1..4],
        [
            "    19:def validate_token(store, token):",
            "    20:    \"\"\"Check that an API token exists and has not expired.\"\"\"",
            "    21:    entry = store._tokens.get(token)"
        ]
    );
    let before = stdout(&["query", q, "-k", "1", "-B", "1", "-N"]);
    assert_eq!(before.lines().nth(2), Some("    def validate_token(store, token):"), "{before}");
    // Colour only when asked (stdout here is a pipe).
    assert!(stdout(&["query", q, "-k", "1", "-l", "--color", "always"]).contains("\x1b[35m"));
    assert!(!stdout(&["query", q, "-k", "1", "--color", "auto"]).contains('\x1b'));
    // -m: at most N hits per file.
    let capped: Value = serde_json::from_str(&stdout(&["query", q, "-k", "10", "-m", "1", "--json"])).unwrap();
    let capped = hit_paths(&capped);
    assert!(capped.iter().all(|p| capped.iter().filter(|x| *x == p).count() == 1), "{capped:?}");
    // PATH arguments narrow the search as ripgrep's do: directories, several, a file.
    assert!(stdout(&["query", "function", "lib", "-l"]).lines().all(|l| l.starts_with("lib/")));
    let two = stdout(&["query", "function", "lib", "web", "-l", "-k", "20"]);
    assert!(two.lines().all(|l| l.starts_with("lib/") || l.starts_with("web/")) && two.contains("web/"), "{two}");
    assert_eq!(stdout(&["query", "function", "src/auth.py", "-l"]), "src/auth.py\n");
    let outside = ws.raggrep(&["query", "function", "/"]);
    assert_eq!(outside.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&outside.stderr).contains("outside the index's root"));
    // Exit status 1 when nothing matches, as grep; --json keeps 0 and its shape.
    let none = ws.raggrep(&["query", q, "--min-score", "0.9999"]);
    assert_eq!(
        (none.status.code(), none.stdout.is_empty()),
        (Some(1), true),
        "{}",
        String::from_utf8_lossy(&none.stdout)
    );
    assert!(ws.raggrep(&["query", q, "--min-score", "0.9999", "--json"]).status.success());
}

/// Issue 56: `raggrep QUESTION…` is `raggrep query` (words up to the first option or existing
/// path), `--answer` or `[cli] bare = "ask"` makes it `raggrep ask`, and `--` lets a question be
/// a subcommand's name.
#[test]
fn a_bare_question_is_a_query() {
    let ws = Workspace::polyglot();
    ws.index();
    let q = "check whether an API token is still valid";
    let stdout = |args: &[&str]| String::from_utf8(ws.ok(args).stdout).unwrap();
    assert_eq!(stdout(&[q, "-k", "3", "-l"]), stdout(&["query", q, "-k", "3", "-l"]));
    // Unquoted words, then a directory: the words are the question, the directory a PATH.
    let words: Vec<&str> = q.split(' ').chain(["lib", "-l"]).collect();
    let listed = stdout(&words);
    assert!(!listed.is_empty() && listed.lines().all(|l| l.starts_with("lib/")), "{listed}");
    // Global options before the question stay.
    assert_eq!(stdout(&["--log", "error", q, "-k", "1", "-l"]), "src/auth.py\n");
    // `--` before a question that is a subcommand's name.
    let answer: Value = serde_json::from_str(&stdout(&["--", "index", "-k", "1", "--json"])).unwrap();
    assert_eq!(answer["query"], "index");
    // --answer: through `ask` (here its prompt, which needs no LLM).
    let asked = ws.ok(&[q, "--answer", "--prompt"]);
    assert!(String::from_utf8_lossy(&asked.stderr).contains("route:"));
    assert!(String::from_utf8_lossy(&asked.stdout).contains("src/auth.py"));
    // A subcommand still wins.
    assert!(stdout(&["status"]).contains("chunks:"));
    // `[cli] bare = "ask"` in the project's config: a bare question goes to `ask`, `query`
    // still searches; a value that is neither is an error naming the file.
    ws.write(".raggrep/config.toml", "[cli]\nbare = \"ask\"\n");
    let asked = ws.ok_in("lib", &[q, "--prompt"]);
    assert!(String::from_utf8_lossy(&asked.stderr).contains("route:"), "{asked:?}");
    assert_eq!(stdout(&["query", q, "-k", "1", "-l"]), "src/auth.py\n");
    ws.write(".raggrep/config.toml", "[cli]\nbare = \"answer\"\n");
    let wrong = ws.raggrep(&[q]);
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(2), "{said}");
    assert!(said.contains("config.toml: [cli] bare must be \"query\" or \"ask\""), "{said}");
}

/// Issue 56: the human output of every print option, as ripgrep's tests pin theirs. Lexical
/// search keeps the scores exact across machines; colour escapes are shown as `␛`, the
/// temporary root as `[ROOT]`.
#[test]
fn human_output_as_grep_and_ripgrep_print_it() {
    let ws = Workspace::polyglot();
    ws.index();
    let q = "validate token";
    let runs: &[(&str, &[&str])] = &[
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--color", "never"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--heading", "--line-number"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--no-heading", "-C", "1"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--no-heading", "-n", "-A", "2", "-B", "1"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--files-with-matches"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "-l"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--count"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--vimgrep"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "--max-count", "1", "--no-line-number"]),
        (".", &["query", q, "--mode", "lexical", "-k", "3", "-m", "1", "-n", "--color", "always"]),
        ("lib", &["query", q, "--mode", "lexical", "-k", "3"]),
        ("lib", &["query", q, "--mode", "lexical", "-k", "3", "--here"]),
        ("lib", &[q, "--mode", "lexical", "-k", "3", "--vimgrep"]),
        ("lib", &[q, "--mode", "lexical", "-k", "1", "--color", "always"]),
    ];
    let root = ws.root().canonicalize().unwrap().display().to_string();
    let mut shown = String::new();
    for (sub, args) in runs {
        let out = ws.command(args).current_dir(ws.root().join(sub)).output().unwrap();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace('\u{1b}', "␛").replace(&root, "[ROOT]");
        shown.push_str(&format!(
            "$ cd {sub} && raggrep {}  # exit {}\n",
            args.join(" "),
            out.status.code().unwrap_or(-1)
        ));
        shown.push_str(&text(&out.stdout));
        let notes = text(&out.stderr);
        if !notes.is_empty() {
            shown.push_str(&format!("[stderr]\n{notes}"));
        }
        shown.push('\n');
    }
    insta::assert_snapshot!(shown);
}

/// Issue 56: a chunk that starts with imports keeps its range for reading, but where a jump
/// goes (`--json`'s `line`, `--vimgrep`, context lines) is the definition's own line.
#[test]
fn a_hit_points_at_its_definition_line_not_its_imports() {
    let ws = Workspace::empty();
    ws.write("settings.py", "import json\nimport os\n\n\ndef load_settings(path):\n    \"\"\"Read the settings file.\"\"\"\n    with open(path) as f:\n        return json.load(f)\n");
    ws.index();
    let chunks = String::from_utf8(ws.ok(&["chunk", "settings.py"]).stdout).unwrap();
    assert!(chunks.contains("settings.py:1-8  function  load_settings"), "the imports share the chunk: {chunks}");
    let answer: Value =
        serde_json::from_slice(&ws.ok(&["query", "load_settings", "--json", "-k", "1"]).stdout).unwrap();
    let hit = &answer["results"][0];
    assert_eq!((hit["start_line"].as_u64(), hit["line"].as_u64()), (Some(1), Some(5)), "{hit}");
    let vimgrep = String::from_utf8(ws.ok(&["query", "load_settings", "--vimgrep", "-k", "1"]).stdout).unwrap();
    assert_eq!(vimgrep, "settings.py:5:5:def load_settings(path):\n");
    let human = String::from_utf8(ws.ok(&["query", "load_settings", "-k", "1"]).stdout).unwrap();
    let heading = human.lines().next().unwrap_or_default();
    assert!(heading.starts_with("settings.py:5  ") && heading.ends_with("load_settings  (lines 1-8)"), "{human}");
}

/// Issue 56: shell completions and the manual page come from the CLI's own definition.
#[test]
fn completions_and_the_manual_page_are_generated() {
    let ws = Workspace::empty();
    let bash = ws.ok(&["completions", "bash"]);
    let script = ws.root().join("raggrep.bash");
    fs::write(&script, &bash.stdout).unwrap();
    // Sourced by a real bash, it completes raggrep's subcommands.
    let out = Command::new("bash")
        .arg("-c")
        .arg("source \"$1\" && COMP_WORDS=(raggrep qu) COMP_CWORD=1 && _raggrep raggrep qu raggrep && printf '%s\\n' \"${COMPREPLY[@]}\"")
        .arg("bash")
        .arg(&script)
        .output()
        .unwrap();
    let replies = String::from_utf8_lossy(&out.stdout);
    assert!(
        replies.lines().any(|l| l == "query"),
        "bash completion of `raggrep qu`: {replies:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let zsh = String::from_utf8(ws.ok(&["completions", "zsh"]).stdout).unwrap();
    assert!(zsh.starts_with("#compdef raggrep"), "{}", &zsh[..zsh.len().min(200)]);
    let fish = String::from_utf8(ws.ok(&["completions", "fish"]).stdout).unwrap();
    assert!(fish.contains("complete -c raggrep") && fish.contains("-l vimgrep"), "{}", &fish[..fish.len().min(200)]);
    let elvish = String::from_utf8(ws.ok(&["completions", "elvish"]).stdout).unwrap();
    assert!(elvish.contains("edit:completion:arg-completer[raggrep]") && elvish.contains("--vimgrep"), "{elvish:.200}");
    let powershell = String::from_utf8(ws.ok(&["completions", "powershell"]).stdout).unwrap();
    assert!(powershell.contains("-CommandName 'raggrep'") && powershell.contains("--vimgrep"), "{powershell:.200}");
    let man = String::from_utf8(ws.ok(&["man"]).stdout).unwrap();
    assert!(
        man.contains(".TH raggrep 1") && man.contains("query") && man.contains("completions"),
        "{}",
        &man[..man.len().min(300)]
    );
    let bad = ws.raggrep(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}
