//! Hostile input, end to end through the real binary and the real model: each test reproduces one
//! defect found by trying to break raggrep (issue "Hardening"), so it failed before its fix.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::fixture;

use crate::lsp_client;

use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fixture::copy_dir;
use lsp_client::{Client, uri};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/polyglot");
const BIN: &str = env!("CARGO_BIN_EXE_raggrep");
/// Far above what any of these commands needs once fixed; before the fixes some never ended.
const HANG: Duration = Duration::from_secs(240);

fn polyglot() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    copy_dir(Path::new(FIXTURE), &root);
    let root = root.canonicalize().unwrap();
    (dir, root)
}

/// Runs raggrep in `cwd`, killing it if it has not finished after [`HANG`].
fn run(cwd: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + HANG;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("raggrep {args:?} did not finish within {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output { status, stdout: out_thread.join().unwrap(), stderr: err_thread.join().unwrap() }
}

fn ok(cwd: &Path, args: &[&str]) -> Output {
    let out = run(cwd, args, None);
    assert!(
        out.status.success(),
        "raggrep {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn query(cwd: &Path, args: &[&str]) -> Value {
    let mut full = vec!["query", "--json"];
    full.extend_from_slice(args);
    serde_json::from_slice(&ok(cwd, &full).stdout).unwrap()
}

fn results(value: &Value) -> &Vec<Value> {
    value["results"].as_array().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn indexed_paths(root: &Path) -> Vec<String> {
    String::from_utf8(ok(root, &["inspect", "--json"]).stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["path"].as_str().unwrap().to_string())
        .collect()
}

/// `depth` nested object literals, wrapped at 80 columns (a one-line file is skipped as minified).
fn nested_js(depth: usize) -> String {
    let body = format!("const deep = {}1{};\n", "{a:".repeat(depth), "}".repeat(depth));
    wrap(&body, 80)
}

fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / width);
    for (i, c) in text.chars().enumerate() {
        if i > 0 && i % width == 0 {
            out.push('\n');
        }
        out.push(c);
    }
    out
}

// 1. Deep nesting overflowed the stack in `chunk`, `index` and `query`.
#[test]
fn deeply_nested_code_is_indexed_without_overflowing_the_stack() {
    let (_dir, root) = polyglot();
    fs::write(root.join("deep.js"), nested_js(20_000)).unwrap();
    let parens = 60_000;
    fs::write(root.join("deep.py"), wrap(&format!("x = {}1{}\n", "(".repeat(parens), ")".repeat(parens)), 80)).unwrap();
    fs::write(root.join("deep.rs"), wrap(&format!("fn f() {{ {}1{} }}\n", "(".repeat(parens), ")".repeat(parens)), 80))
        .unwrap();

    let out = ok(&root, &["chunk", "deep.js"]);
    assert!(!out.stdout.is_empty(), "the nested file still gets chunks");
    ok(&root, &["index", "."]);
    let paths = indexed_paths(&root);
    for file in ["deep.js", "deep.py", "deep.rs", "src/auth.py"] {
        assert!(paths.iter().any(|p| p == file), "{file} not indexed: {paths:?}");
    }
    let found = query(&root, &["-k", "3", "check whether an API token is still valid"]);
    assert_eq!(results(&found)[0]["symbol"], "validate_token");
}

// 2. A huge k sized an allocation from input.
#[test]
fn huge_and_zero_k_are_clamped() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    let chunks = String::from_utf8(ok(&root, &["inspect", "--chunks", "--json"]).stdout).unwrap().lines().count();
    for k in ["1000000000", "18446744073709551615"] {
        for mode in ["hybrid", "dense", "lexical"] {
            let found = query(&root, &["-k", k, "--mode", mode, "token"]);
            assert!(!results(&found).is_empty() && results(&found).len() <= chunks, "{k} {mode}");
        }
    }
    assert_eq!(results(&query(&root, &["-k", "0", "token"])).len(), 0);
}

// 3. A symlink to / hung the walk; one to .. walked thousands of outside files.
#[test]
fn symlinks_leaving_the_root_are_not_walked() {
    let (dir, root) = polyglot();
    fs::create_dir_all(dir.path().join("outside")).unwrap();
    for i in 0..50 {
        fs::write(dir.path().join(format!("outside/secret{i}.py")), "def secret():\n    return 42\n").unwrap();
    }
    std::os::unix::fs::symlink("/", root.join("slash")).unwrap();
    std::os::unix::fs::symlink("..", root.join("up")).unwrap();
    std::os::unix::fs::symlink(root.join("src"), root.join("src_again")).unwrap();
    ok(&root, &["index", "."]);
    let skipped = String::from_utf8(ok(&root, &["inspect", "--skipped", "--json"]).stdout).unwrap();
    let skipped: Vec<Value> = skipped.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let skipped_paths: Vec<&str> = skipped.iter().map(|s| s["path"].as_str().unwrap()).collect();
    assert!(skipped_paths.contains(&"slash") && skipped_paths.contains(&"up"), "{skipped_paths:?}");
    assert!(skipped.len() <= 3, "one entry per link, no walk beyond it: {skipped_paths:?}");
    let paths = indexed_paths(&root);
    assert!(paths.iter().all(|p| !p.contains("secret")), "{paths:?}");
    // A link that stays inside the root is still followed.
    assert!(paths.iter().any(|p| p == "src_again/auth.py"), "{paths:?}");
}

// 5. Names that differ only in invalid UTF-8 bytes collided.
#[test]
fn non_utf8_file_names_are_kept_apart() {
    let (_dir, root) = polyglot();
    let name = |last: u8| std::ffi::OsStr::from_bytes(&[b'n', b'a', b'm', b'e', last, b'.', b'p', b'y']).to_owned();
    fs::write(root.join(name(0x80)), "def frobnicate_alpha():\n    return 'alpha'\n").unwrap();
    fs::write(root.join(name(0x81)), "def frobnicate_beta():\n    return 'beta'\n").unwrap();
    ok(&root, &["index", "."]);
    let paths: Vec<String> = indexed_paths(&root).into_iter().filter(|p| p.starts_with("name")).collect();
    assert_eq!(paths.len(), 2, "{paths:?}");
    assert_ne!(paths[0], paths[1]);
    for symbol in ["frobnicate_alpha", "frobnicate_beta"] {
        let found = query(&root, &["--mode", "lexical", "-k", "1", symbol]);
        let hit = &results(&found)[0];
        assert_eq!(hit["symbol"], symbol);
        assert!(hit["snippet"].as_str().unwrap().contains(symbol), "snippet read from the real file: {hit}");
    }
}

fn lexical_files(root: &Path, extension: &str) -> Vec<PathBuf> {
    fs::read_dir(root.join(".raggrep/lexical"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect()
}

// 7 + 8. Damaged lexical files broke every query forever and `index` did not repair them.
#[test]
fn damaged_lexical_index_is_reported_then_repaired() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    for store in lexical_files(&root, "store") {
        let mut bytes = fs::read(&store).unwrap();
        let at = bytes.len() / 2;
        for b in bytes.iter_mut().skip(at.saturating_sub(32)).take(64) {
            *b = 0xA5;
        }
        fs::write(&store, bytes).unwrap();
    }
    for pos in lexical_files(&root, "pos") {
        fs::remove_file(pos).unwrap();
    }
    let out = run(&root, &["query", "--json", "--mode", "lexical", "validate_token"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Either repaired on the spot, or said so; never a silent empty answer.
    assert!(
        found["degraded"].is_string() || results(&found).first().is_some_and(|h| h["symbol"] == "validate_token"),
        "{found}"
    );
    ok(&root, &["index", "."]);
    let found = query(&root, &["--mode", "lexical", "validate_token"]);
    assert_eq!(results(&found)[0]["symbol"], "validate_token");
    assert!(found.get("degraded").is_none_or(Value::is_null), "{found}");
}

// 8. A missing lexical index silently became dense-only / empty.
#[test]
fn unavailable_lexical_index_is_reported_not_silent() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    fs::remove_dir_all(root.join(".raggrep/lexical")).unwrap();
    fs::create_dir(root.join(".raggrep/lexical")).unwrap();
    for mode in ["lexical", "hybrid"] {
        let out = run(&root, &["query", "--json", "--mode", mode, "validate token"], None);
        assert!(out.status.success(), "{}", stderr(&out));
        let found: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(found["degraded"].as_str().is_some_and(|d| d.contains("lexical")), "{mode}: {found}");
        assert!(stderr(&out).contains("lexical"), "{mode}: said on stderr too: {}", stderr(&out));
        assert!(!stderr(&out).contains('\u{1b}'), "no colours when stderr is not a terminal: {:?}", stderr(&out));
    }
}

// A file where the lexical index's directory belongs: `raggrep index` failed ("File exists")
// instead of repairing it, so every later query stayed degraded.
#[test]
fn a_file_in_place_of_the_lexical_index_is_repaired_by_index() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    fs::remove_dir_all(root.join(".raggrep/lexical")).unwrap();
    fs::write(root.join(".raggrep/lexical"), "not a directory").unwrap();
    let found = query(&root, &["--mode", "lexical", "validate_token"]);
    assert!(found["degraded"].as_str().is_some_and(|d| d.contains("lexical")), "{found}");
    ok(&root, &["index", "."]);
    let found = query(&root, &["--mode", "lexical", "validate_token"]);
    assert_eq!(results(&found)[0]["symbol"], "validate_token", "{found}");
    assert!(found.get("degraded").is_none_or(Value::is_null), "{found}");
}

// 7. A CURRENT naming a missing manifest, or a deleted manifest or vector file, made query exit 2.
#[test]
fn missing_index_files_are_rebuilt_by_query() {
    for damage in ["current", "manifest", "vectors"] {
        let (_dir, root) = polyglot();
        ok(&root, &["index", "."]);
        let dir = root.join(".raggrep");
        let current = fs::read_to_string(dir.join("CURRENT")).unwrap().trim().to_string();
        match damage {
            "current" => fs::write(dir.join("CURRENT"), "manifest-99999999.rkyv\n").unwrap(),
            "manifest" => fs::remove_file(dir.join(&current)).unwrap(),
            _ => {
                for entry in fs::read_dir(&dir).unwrap() {
                    let path = entry.unwrap().path();
                    if path.file_name().unwrap().to_string_lossy().starts_with("vectors-") {
                        fs::remove_file(path).unwrap();
                    }
                }
            }
        }
        let status = run(&root, &["status", "--json"], None);
        assert!(status.status.success(), "{damage}: status {}", stderr(&status));
        let reported: Value = serde_json::from_slice(&status.stdout).unwrap();
        assert!(reported["damaged"].as_str().is_some_and(|d| d.contains("missing")), "{damage}: {reported}");
        let found = query(&root, &["-k", "1", "check whether an API token is still valid"]);
        assert_eq!(results(&found)[0]["symbol"], "validate_token", "{damage}");
    }
}

// 7. Flipped bytes in the vector file ranked garbage first (`"score": null`).
#[test]
fn flipped_vector_bytes_are_detected_and_repaired() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    let dir = root.join(".raggrep");
    let vectors = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("vectors-"))
        .unwrap();
    let mut bytes = fs::read(&vectors).unwrap();
    for i in (0..bytes.len()).step_by(97) {
        bytes[i] ^= 0xFF;
    }
    fs::write(&vectors, bytes).unwrap();
    let found = query(&root, &["--mode", "dense", "-k", "5", "check whether an API token is still valid"]);
    for hit in results(&found) {
        assert!(hit["score"].as_f64().is_some_and(f64::is_finite), "garbage ranked: {found}");
    }
    assert!(found["degraded"].is_string() || results(&found)[0]["symbol"] == "validate_token", "{found}");
    // The default search says what it is missing and makes no calibrated claim without it:
    // no confidence, and scores that only order the hits (not a 1 % "probability" for the
    // right lexical answer).
    let hybrid = query(&root, &["-k", "5", "check whether an API token is still valid"]);
    if hybrid["degraded"].is_string() {
        assert!(hybrid.get("confidence").is_none_or(Value::is_null), "{hybrid}");
        assert!(hybrid.get("no_confident_match").is_none_or(Value::is_null), "{hybrid}");
    }
    assert!(results(&hybrid).iter().all(|h| h["score"].as_f64().is_some_and(f64::is_finite)), "{hybrid}");
    let stats: Value = serde_json::from_slice(&ok(&root, &["index", ".", "--json"]).stdout).unwrap();
    assert!(stats["embedded"].as_u64().unwrap() > 0, "damaged vectors are embedded again: {stats}");
    let found = query(&root, &["--mode", "dense", "-k", "1", "check whether an API token is still valid"]);
    assert_eq!(results(&found)[0]["symbol"], "validate_token");
    assert!(found.get("degraded").is_none_or(Value::is_null), "{found}");
}

// 9. Empty lines gave no output line and one bad line ended the batch.
#[test]
fn batch_mode_answers_every_input_line() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    let input = b"multiply two matrices\n\n   \n\xff\xfe not utf-8\nload the configuration file\n";
    let out = run(&root, &["query", "-k", "1", "-"], Some(input));
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(lines[0]["results"][0]["symbol"], "matmul");
    assert_eq!(results(&lines[1]).len(), 0);
    assert_eq!(results(&lines[2]).len(), 0);
    assert!(lines[3]["error"].as_str().is_some_and(|e| e.contains("UTF-8")), "{}", lines[3]);
    assert_eq!(lines[4]["results"][0]["symbol"], "loadConfig");
}

// 10. `chunk --json` failed on every file (a 128-bit hash through serde_json).
#[test]
fn chunk_json_works() {
    let (_dir, root) = polyglot();
    let out = ok(&root, &["chunk", "src/auth.py", "--json"]);
    let chunks: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(chunks.iter().any(|c| c["symbol"] == "validate_token"), "{chunks:?}");
    for chunk in &chunks {
        assert_eq!(chunk["hash"].as_str().unwrap().len(), 32, "{chunk}");
        assert!(chunk["start_line"].as_u64().unwrap() >= 1);
    }
}

// 12. The smaller ones.
#[test]
fn small_cli_defects() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    // The index is private to its owner.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(root.join(".raggrep")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    // NaN is not a score.
    let out = run(&root, &["query", "--min-score", "NaN", "token"], None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    // An OS error is said once.
    let out = run(&root, &["status", "--root", "/no/such/dir"], None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out).matches("No such file or directory").count(), 1, "{}", stderr(&out));
    // A reader that goes away (`| head`) ends the output quietly.
    let mut child = Command::new(BIN)
        .args(["query", "-k", "50", "-"])
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || {
        for _ in 0..400 {
            if writeln!(stdin, "load the configuration file").is_err() {
                break;
            }
        }
    });
    let mut first = [0u8; 16];
    child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).to_lowercase().contains("broken pipe"), "{}", stderr(&out));
}

// ---- the language server ------------------------------------------------------------------------

fn initialize(client: &mut Client, root: &Path, options: Value) {
    client.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(root),
            "workspaceFolders": [{"uri": uri(root), "name": "ws"}],
            "capabilities": {"window": {"workDoneProgress": true}},
            "initializationOptions": options,
        }),
    );
    client.notify("initialized", json!({}));
}

// 1 + 2 + 3 in the server: a nested file killed the indexer thread (smaller stack), a huge k killed
// the server, and a symlink to / kept it busy forever with `shutdown` unanswered.
#[test]
fn server_survives_nesting_huge_k_and_a_symlink_to_root() {
    let (_dir, root) = polyglot();
    fs::write(root.join("deep.js"), nested_js(5_000)).unwrap();
    std::os::unix::fs::symlink("/", root.join("slash")).unwrap();
    let mut client = Client::start(BIN, &root);
    initialize(&mut client, &root, json!({"defaultK": 1_000_000_000u64}));
    client.wait_index_updated(&root);
    let found = client.command("raggrep.search", json!({"query": "validate token", "k": 1_000_000_000u64}));
    assert!(!results(&found).is_empty());
    let similar = client.command(
        "raggrep.findSimilar",
        json!({"uri": uri(&root.join("src/auth.py")), "range": {"start": {"line": 18, "character": 0}, "end": {"line": 20, "character": 0}}, "k": 1_000_000_000u64}),
    );
    assert!(similar["results"].is_array());
    let symbols = client.request("workspace/symbol", json!({"query": "token"}));
    assert!(!symbols.as_array().unwrap().is_empty());
    assert_eq!(client.shutdown_and_exit(), 0);
}

// 3. `shutdown` waits for no walk.
#[test]
fn shutdown_answers_while_indexing() {
    let (_dir, root) = polyglot();
    for i in 0..300 {
        fs::write(root.join(format!("src/gen{i}.py")), format!("def generated_{i}(x):\n    return x * {i}\n")).unwrap();
    }
    let mut client = Client::start(BIN, &root);
    initialize(&mut client, &root, json!({}));
    // No waiting for the index: shut down in the middle of the first pass.
    let started = Instant::now();
    assert_eq!(client.shutdown_and_exit(), 0);
    assert!(started.elapsed() < HANG);
}

// 6. Editor buffers ignored maxFileSize and outlived didClose.
#[test]
fn editor_buffers_obey_limits_and_closing_restores_the_disk() {
    let (_dir, root) = polyglot();
    let mut client = Client::start(BIN, &root);
    initialize(&mut client, &root, json!({"maxFileSize": 200_000}));
    client.wait_index_updated(&root);
    let file = root.join("src/auth.py");
    let file_uri = uri(&file);
    let disk = fs::read_to_string(&file).unwrap();
    // A buffer over the limit is not indexed.
    let huge: String =
        (0..20_000).map(|i| format!("def buffer_only_function_{i}(value):\n    return value + {i}\n\n")).collect();
    assert!(huge.len() > 200_000);
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": file_uri, "languageId": "python", "version": 1, "text": huge}}),
    );
    client.command("raggrep.reindex", json!({}));
    client.wait_index_updated(&root);
    let status = client.command("raggrep.status", json!({}));
    assert!(status["chunks"].as_u64().unwrap() < 200, "{status}");
    // A buffer under the limit is, and closing it brings the disk version back.
    let edited = format!("{disk}\ndef buffer_only_marker_function():\n    return 'only in the editor'\n");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": file_uri, "version": 2}, "contentChanges": [{"text": edited}]}),
    );
    client.command("raggrep.reindex", json!({}));
    assert!(eventually(&mut client, true), "the buffer's function is indexed");
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": file_uri}}));
    assert!(eventually(&mut client, false), "closing the buffer brings the disk version back");
    // Edit the buffer again and shut down before any save: the CLI sees the disk, not the buffer.
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": file_uri, "languageId": "python", "version": 3, "text": edited}}),
    );
    client.command("raggrep.reindex", json!({}));
    assert!(eventually(&mut client, true));
    assert_eq!(client.shutdown_and_exit(), 0);
    let found = query(&root, &["--mode", "lexical", "-k", "5", "buffer_only_marker_function"]);
    assert!(results(&found).iter().all(|h| h["symbol"] != "buffer_only_marker_function"), "{found}");
}

/// Polls (updates are asynchronous and coalesced) until the buffer-only function is found, or
/// not found, by a lexical search; false if that never happens within a minute.
fn eventually(client: &mut Client, found: bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let answer = client
            .command("raggrep.search", json!({"query": "buffer_only_marker_function", "mode": "lexical", "k": 5}));
        if results(&answer).iter().any(|h| h["symbol"] == "buffer_only_marker_function") == found {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

// 12. `exit` without `shutdown` must exit with 1 (LSP specification).
#[test]
fn exit_without_shutdown_is_code_1() {
    let (_dir, root) = polyglot();
    let mut child = Command::new(BIN)
        .arg("lsp")
        .current_dir(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for body in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": null, "rootUri": null, "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "exit"}),
    ] {
        let body = body.to_string();
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    }
    stdin.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1));
}

// Design seed 003 / hardening: the audit log records operations through each door, never code or
// query text, and is off with one setting.
#[test]
fn audit_log_records_operations_not_code() {
    let (_dir, root) = polyglot();
    ok(&root, &["index", "."]);
    query(&root, &["-k", "2", "secret question about tokens"]);
    let log = fs::read_to_string(root.join(".raggrep/audit.jsonl")).unwrap();
    let entries: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(entries.iter().any(|e| e["door"] == "cli" && e["op"] == "index" && e["chunks"].as_u64() > Some(0)));
    let search = entries.iter().find(|e| e["op"] == "search").unwrap();
    assert_eq!(search["door"], "cli");
    assert_eq!(search["results"], 2);
    assert_eq!(search["query_chars"], "secret question about tokens".len());
    assert!(search["ms"].as_f64().is_some() && search["ts_ms"].as_u64().is_some());
    assert!(search["confidence"].as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)), "{search}");
    assert!(!log.contains("secret question") && !log.contains("validate_token"), "{log}");

    // Through the language server: door "lsp".
    let mut client = Client::start(BIN, &root);
    initialize(&mut client, &root, json!({}));
    client.wait_index_updated(&root);
    client.command("raggrep.search", json!({"query": "validate token", "k": 1}));
    client.command("raggrep.context", json!({"query": "validate token", "maxTokens": 300}));
    assert_eq!(client.shutdown_and_exit(), 0);
    let log = fs::read_to_string(root.join(".raggrep/audit.jsonl")).unwrap();
    let lsp_ops: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["door"] == "lsp")
        .map(|e| e["op"].as_str().unwrap().to_string())
        .collect();
    for op in ["index", "search", "context"] {
        assert!(lsp_ops.iter().any(|o| o == op), "{op} in {lsp_ops:?}");
    }

    // Off with one setting.
    fs::write(root.join(".raggrep/config.toml"), "audit = false\n").unwrap();
    let before = fs::read_to_string(root.join(".raggrep/audit.jsonl")).unwrap();
    query(&root, &["-k", "1", "anything"]);
    assert_eq!(before, fs::read_to_string(root.join(".raggrep/audit.jsonl")).unwrap());
}
