//! The language server end to end: the real binary over stdio, the real model, a JSON-RPC
//! client that frames messages properly (headers, then exactly Content-Length bytes) and answers
//! the server's own requests. Synchronises on notifications (`$/progress`,
//! `raggrep/indexUpdated`), never on sleeps.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::fixture;

use crate::lsp_client;

use std::fs;
use std::path::{Path, PathBuf};

use fixture::copy_dir;
use lsp_client::{Client, uri};
use serde_json::{Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/polyglot");

fn symbols(result: &Value) -> Vec<(String, String)> {
    result
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s["location"]["uri"].as_str().unwrap().to_string()))
        .collect()
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("alpha");
    copy_dir(Path::new(FIXTURE), &a);
    let b = dir.path().join("beta");
    fs::create_dir_all(b.join("pkg")).unwrap();
    fs::write(b.join("go.mod"), "module beta\n").unwrap();
    fs::write(
        b.join("pkg/geo.go"),
        "package pkg\n\nimport \"math\"\n\n// Haversine returns the great-circle distance between two points on Earth in km.\nfunc Haversine(lat1, lon1, lat2, lon2 float64) float64 {\n\tdlat := (lat2 - lat1) * math.Pi / 180\n\tdlon := (lon2 - lon1) * math.Pi / 180\n\ta := math.Sin(dlat/2)*math.Sin(dlat/2) + math.Cos(lat1*math.Pi/180)*math.Cos(lat2*math.Pi/180)*math.Sin(dlon/2)*math.Sin(dlon/2)\n\treturn 6371 * 2 * math.Atan2(math.Sqrt(a), math.Sqrt(1-a))\n}\n",
    )
    .unwrap();
    let a = a.canonicalize().unwrap();
    let b = b.canonicalize().unwrap();
    (dir, a, b)
}

#[test]
fn language_server_end_to_end() {
    let (_dir, alpha, beta) = setup();
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);

    // initialize: settings (one unknown, which must not be fatal), progress support.
    let init = client.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(&alpha),
            "workspaceFolders": [{"uri": uri(&alpha), "name": "alpha"}],
            "capabilities": {"window": {"workDoneProgress": true}, "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}}},
            "initializationOptions": {"defaultK": 5, "noSuchSetting": true},
        }),
    );
    let commands = init["capabilities"]["executeCommandProvider"]["commands"].as_array().unwrap();
    for c in ["raggrep.search", "raggrep.findSimilar", "raggrep.context", "raggrep.reindex", "raggrep.status"] {
        assert!(commands.contains(&json!(c)), "{c} not advertised");
    }
    assert_eq!(init["capabilities"]["workspaceSymbolProvider"], true);
    client.notify("initialized", json!({}));

    // The fixture has no VCS or build file: the server asks first; we say "Index".
    let asked = client.wait_for("consent request", |m| m["method"] == "window/showMessageRequest");
    assert!(asked["params"]["message"].as_str().unwrap().contains("does not look like a project"));
    // Progress: create, begin, report, end.
    client.wait_for("progress create", |m| m["method"] == "window/workDoneProgress/create");
    client.wait_for("progress begin", |m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "begin");
    let report = client.wait_for("progress report", |m| {
        m["method"] == "$/progress"
            && m["params"]["value"]["kind"] == "report"
            && m["params"]["value"]["message"].as_str().is_some_and(|s| s.starts_with("embedding"))
    });
    assert!(report["params"]["value"]["percentage"].as_u64().unwrap() <= 100);
    client.wait_for("progress end", |m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "end");
    client.wait_for("index updated", |m| m["method"] == "raggrep/indexUpdated");
    let config = fs::read_to_string(alpha.join(".raggrep/config.toml")).unwrap();
    assert!(config.contains("enabled = true"), "{config}");

    // workspace/symbol answers semantically; an empty query answers empty.
    let found = client.request("workspace/symbol", json!({"query": "check whether an API token is still valid"}));
    let names = symbols(&found);
    assert!(names.iter().take(3).any(|(n, u)| n == "validate_token" && u.ends_with("src/auth.py")), "{names:?}");
    assert_eq!(client.request("workspace/symbol", json!({"query": ""})), json!([]));
    // A symbol's location starts at its definition line, not at the imports its chunk starts with.
    let found = client.request("workspace/symbol", json!({"query": "start the web server and listen on a port"}));
    let serve =
        found.as_array().unwrap().iter().find(|s| s["name"] == "Serve").unwrap_or_else(|| panic!("no Serve: {found}"));
    assert_eq!(serve["location"]["range"]["start"]["line"], 8, "func Serve is line 9 (0-based 8): {serve}");

    // didOpen + edit + didSave of a new function → found by the next query.
    let mail = alpha.join("src/mail.py");
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri(&mail), "languageId": "python", "version": 1, "text": ""}}),
    );
    let text = "def send_welcome_email(address):\n    \"\"\"Send a greeting message to a new user.\"\"\"\n    return smtp.send(address, 'Welcome!')\n";
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri(&mail), "version": 2}, "contentChanges": [{"text": text}]}),
    );
    fs::write(&mail, text).unwrap();
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": uri(&mail)}}));
    loop {
        client.wait_index_updated(&alpha);
        let found = client.request("workspace/symbol", json!({"query": "email a new user a greeting"}));
        if symbols(&found).iter().any(|(n, _)| n == "send_welcome_email") {
            break;
        }
    }

    // findSimilar from a range: results, none of them the source itself.
    let unique = alpha.join("lib/unique.js");
    let similar = client.command(
        "raggrep.findSimilar",
        json!({"uri": uri(&unique), "range": {"start": {"line": 3, "character": 0}, "end": {"line": 13, "character": 0}}}),
    );
    let results = similar["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for hit in results {
        let overlaps_source = hit["path"] == "lib/unique.js"
            && hit["start_line"].as_u64().unwrap() <= 14
            && hit["end_line"].as_u64().unwrap() >= 4;
        assert!(!overlaps_source, "source returned as similar: {hit}");
    }
    let two = client.command(
        "raggrep.findSimilar",
        json!({"uri": uri(&unique), "range": {"start": {"line": 3, "character": 0}, "end": {"line": 13, "character": 0}}, "k": 2}),
    );
    assert!(!two["results"].as_array().unwrap().is_empty() && two["results"].as_array().unwrap().len() <= 2, "{two}");
    let source = &similar["source"]["range"];
    assert!(
        source["start"]["line"].as_u64().unwrap() <= 3 && source["end"]["line"].as_u64().unwrap() >= 12,
        "source range covers the selection: {similar}"
    );

    // Outside every indexed folder: no code action, and findSimilar says why.
    let elsewhere = tempfile::tempdir().unwrap();
    let stray = elsewhere.path().join("settings.json");
    std::fs::write(&stray, "{\n  \"a\": 1\n}\n").unwrap();
    let stray_range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}});
    let none = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri(&stray)}, "range": stray_range, "context": {"diagnostics": []}}),
    );
    assert!(none.is_null() || none.as_array().is_some_and(|a| a.is_empty()), "{none}");
    let refused = client.request_full(
        "workspace/executeCommand",
        json!({"command": "raggrep.findSimilar", "arguments": [{"uri": uri(&stray), "range": stray_range}]}),
    );
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not inside an indexed workspace folder"), "{refused}");

    // codeAction: "Find similar code" for the function under the cursor.
    let auth = alpha.join("src/auth.py");
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri(&auth)}, "range": {"start": {"line": 21, "character": 4}, "end": {"line": 21, "character": 4}}, "context": {"diagnostics": []}}),
    );
    let action = &actions[0];
    assert_eq!(action["title"], "Find similar code");
    assert_eq!(action["command"]["command"], "raggrep.findSimilar");
    // Second: the history of the code there (the line asked about, for the definition around it).
    assert_eq!(actions[1]["title"], "Show history of this code", "{actions}");
    assert_eq!(actions[1]["command"]["command"], "raggrep.history");
    assert_eq!(actions[1]["command"]["arguments"][0], json!({"uri": uri(&auth), "line": 21}));
    let range = &action["command"]["arguments"][0]["range"];
    assert_eq!(range["start"]["line"], 18, "expanded to validate_token: {range}");
    assert_eq!(range["end"]["line"], 25);
    // Helix sends its cursor as a one-character selection: same expansion.
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri(&auth)}, "range": {"start": {"line": 21, "character": 4}, "end": {"line": 21, "character": 5}}, "context": {"diagnostics": []}}),
    );
    assert_eq!(actions[0]["command"]["arguments"][0]["range"]["start"]["line"], 18, "{actions}");

    // context respects maxTokens and cites its sources.
    let small = client.command("raggrep.context", json!({"query": "how are API tokens validated", "maxTokens": 150}));
    assert!(small["tokens"].as_u64().unwrap() <= 150, "{small}");
    assert!(!small["sources"].as_array().unwrap().is_empty(), "{small}");
    assert_eq!(small["no_confident_match"], false, "{small}");
    let first_source = small["sources"][0].as_str().unwrap().to_string();
    assert!(small["text"].as_str().unwrap().starts_with(&first_source), "{small}");
    assert!(small["confidence"].as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)), "{small}");
    let large = client.command("raggrep.context", json!({"query": "how are API tokens validated", "maxTokens": 3000}));
    assert!(large["sources"].as_array().unwrap().len() > small["sources"].as_array().unwrap().len());

    // raggrep.search returns the CLI's hit objects (plus uri/range).
    let search = client.command("raggrep.search", json!({"query": "multiply two matrices", "k": 3, "mode": "hybrid"}));
    assert!(search["results"].as_array().unwrap().len() <= 3, "{search}");
    assert_eq!(search["results"][0]["symbol"], "matmul");
    assert_eq!(search["results"][0]["path"], "lib/matrix.c");
    assert!(search["results"][0]["uri"].as_str().unwrap().starts_with("file://"));
    assert!(search.get("reranked_by").is_none(), "{search}");
    // The default ranking says how likely its first hits hold the answer, and when nothing does.
    assert_eq!(search["no_confident_match"], false, "{search}");
    assert!(search["confidence"].as_f64().is_some_and(|c| c > 0.3 && c <= 1.0), "{search}");
    let nothing = client.command("raggrep.search", json!({"query": "render a 3d mesh with shadows", "k": 3}));
    assert_eq!(nothing["no_confident_match"], true, "{nothing}");
    assert!(!nothing["results"].as_array().unwrap().is_empty(), "{nothing}");
    // `rerank`: the reranker re-sorts the best candidates and says so.
    let reranked = client.command("raggrep.search", json!({"query": "multiply two matrices", "k": 3, "rerank": true}));
    assert_eq!(reranked["results"][0]["symbol"], "matmul", "{reranked}");
    assert_eq!(reranked["reranked_by"], "all-minilm-l6-v2-rerank-int8", "{reranked}");
    assert_ne!(reranked["results"][0]["score"], search["results"][0]["score"], "the reranker's score counts");
    let refused = client.request_full(
        "workspace/executeCommand",
        json!({"command": "raggrep.search", "arguments": [{"query": "x", "mode": "lexical", "rerank": true}]}),
    );
    assert!(refused["error"]["message"].as_str().unwrap().contains("hybrid ranking only"), "{refused}");

    // Multi-root: a second folder (a Go module: no consent needed) is indexed and searched.
    client.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": [{"uri": uri(&beta), "name": "beta"}], "removed": []}}),
    );
    client.wait_index_updated(&beta);
    let search = client.command("raggrep.search", json!({"query": "distance between two points on the globe", "k": 3}));
    assert_eq!(search["results"][0]["symbol"], "Haversine", "{search}");
    assert!(search["results"][0]["uri"].as_str().unwrap().contains("/beta/"));
    let status = client.command("raggrep.status", json!({}));
    assert_eq!(status["roots"].as_array().unwrap().len(), 2);
    assert!(status["chunks"].as_u64().unwrap() > 0);
    assert_eq!(status["model"], "all-minilm-l6-v2-code2-int8");

    // Settings change at run time; unknown keys are logged to the client and the log file.
    client.notify("workspace/didChangeConfiguration", json!({"settings": {"raggrep": {"defaultK": 7, "bogusKey": 1}}}));
    let logged = client.wait_for("log message", |m| {
        m["method"] == "window/logMessage" && m["params"]["message"].as_str().is_some_and(|s| s.contains("bogusKey"))
    });
    assert_eq!(logged["params"]["type"], 2, "a warning: {logged}");
    let log = fs::read_to_string(alpha.join(".raggrep/raggrep.log")).unwrap();
    assert!(log.contains("bogusKey"), "{log}");

    // Malformed requests get errors; the server keeps answering.
    let bad = client.request_full("workspace/executeCommand", json!({"command": "raggrep.search", "arguments": [42]}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let unknown = client.request_full("workspace/executeCommand", json!({"command": "raggrep.nope", "arguments": []}));
    assert!(unknown["error"]["message"].as_str().unwrap().contains("unknown command"));
    let bad_params = client.request_full("workspace/symbol", json!({"query": 7}));
    assert!(bad_params.get("error").is_some(), "{bad_params}");
    client.send_raw("{this is not json");
    let still = client.request("workspace/symbol", json!({"query": "least recently used cache"}));
    assert!(!symbols(&still).is_empty());

    assert_eq!(client.shutdown_and_exit(), 0);
}

#[test]
fn indexing_pauses_and_resumes_on_command() {
    let (_dir, alpha, _beta) = setup();
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    let init = client.request(
        "initialize",
        json!({"processId": null, "rootUri": uri(&alpha), "workspaceFolders": [{"uri": uri(&alpha), "name": "alpha"}], "capabilities": {}}),
    );
    let commands = init["capabilities"]["executeCommandProvider"]["commands"].as_array().unwrap();
    assert!(commands.contains(&json!("raggrep.pause")) && commands.contains(&json!("raggrep.resume")));
    // Paused before the folder is even added: its first index waits.
    assert_eq!(client.command("raggrep.pause", json!({})), json!({"paused": true}));
    client.notify("initialized", json!({}));
    // A few seconds of requests (the fixture indexes in well under one when not paused).
    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut status = Value::Null;
    while std::time::Instant::now() < until {
        status = client.command("raggrep.status", json!({}));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(
        !client.notifications.iter().any(|n| n["method"] == "raggrep/indexUpdated"),
        "indexed while paused: {:?}",
        client.notifications
    );
    assert!(status["reason"].as_str().is_some_and(|r| r.contains("paused")), "{status:#}");
    let early = client.command("raggrep.search", json!({"query": "check whether an API token is valid", "k": 3}));
    assert_eq!(early["partial"], true, "nothing is indexed yet: {early:#}");

    assert_eq!(client.command("raggrep.resume", json!({})), json!({"paused": false}));
    let updated = client.wait_index_updated(&alpha);
    assert!(updated["params"]["stats"]["chunks"].as_u64().unwrap() > 0, "{updated:#}");
    let status = client.command("raggrep.status", json!({}));
    assert!(status["reason"].is_null(), "{status:#}");
    let results = client.command("raggrep.search", json!({"query": "check whether an API token is valid", "k": 3}));
    assert!(!results["results"].as_array().unwrap().is_empty(), "{results:#}");
    assert!(results["results"].as_array().unwrap().len() <= 3, "{results:#}");
    assert_eq!(results["partial"], false, "{results:#}");
    assert_eq!(client.shutdown_and_exit(), 0);
}

/// (thread name, nice) of every thread of a process, from /proc.
fn thread_priorities(pid: u32) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for task in fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let (Ok(comm), Ok(stat)) =
            (fs::read_to_string(task.path().join("comm")), fs::read_to_string(task.path().join("stat")))
        else {
            continue; // the thread ended meanwhile
        };
        // Fields after the parenthesised name; nice is field 19 of stat(5), the 17th after it.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let nice: i64 = after.split(' ').nth(16).unwrap().parse().unwrap();
        out.push((comm.trim().to_string(), nice));
    }
    out
}

#[test]
fn indexing_runs_below_the_editor_with_the_threads_it_is_given() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let (_dir, alpha, _beta) = setup();
    let ours: i64 = {
        let stat = fs::read_to_string("/proc/thread-self/stat").unwrap();
        stat[stat.rfind(')').unwrap() + 2..].split(' ').nth(16).unwrap().parse().unwrap()
    };
    if ours >= 10 {
        eprintln!("skipped: this test already runs at nice {ours}, so lowered threads cannot be told apart");
        return;
    }
    let start = |options: Value| {
        // The machine-wide cache off, so the model embeds (its lanes start with the first batch).
        let mut client =
            Client::start_with_env(env!("CARGO_BIN_EXE_raggrep"), &alpha, &[("RAGGREP_EMBEDDING_CACHE", "off")]);
        initialize(&mut client, &alpha, options);
        client.wait_index_updated(&alpha);
        // A search loads the query model on a request thread.
        let results = client.command("raggrep.search", json!({"query": "check whether an API token is valid", "k": 3}));
        assert!(!results["results"].as_array().unwrap().is_empty(), "{results:#}");
        let threads = thread_priorities(client.pid());
        (client, threads)
    };

    // Default priority, two CPUs for inference: the indexer (which runs the first lane of the
    // document model) and the second lane's thread run lowered; everything else (the
    // protocol, searches, the query model's pool) does not.
    let (mut client, threads) = start(json!({"indexThreads": 2}));
    let lowered: Vec<&(String, i64)> = threads.iter().filter(|(_, nice)| *nice == 10).collect();
    assert!(threads.iter().any(|(name, nice)| name == "raggrep-indexer" && *nice == 10), "{threads:?}");
    assert_eq!(lowered.len(), 2, "the indexer and the document model's second lane: {threads:?}");
    assert!(lowered.iter().any(|(name, _)| name == "raggrep-lane-1"), "{threads:?}");
    assert!(threads.iter().filter(|(_, nice)| *nice == ours).count() >= 2, "{threads:?}");
    assert_eq!(client.shutdown_and_exit(), 0);

    // Normal priority, one inference thread: nothing is lowered.
    let (mut client, threads) = start(json!({"indexThreads": 1, "indexPriority": "normal"}));
    assert!(threads.iter().all(|(_, nice)| *nice == ours), "{threads:?}");
    assert!(threads.iter().any(|(name, _)| name == "raggrep-indexer"), "{threads:?}");
    assert_eq!(client.shutdown_and_exit(), 0);
}

/// `initialize` with `root` as the one workspace folder and `options` as the settings, then
/// `initialized`.
fn initialize(client: &mut Client, root: &Path, options: Value) {
    client.request(
        "initialize",
        json!({"processId": null, "rootUri": uri(root), "workspaceFolders": [{"uri": uri(root), "name": "root"}],
               "capabilities": {}, "initializationOptions": options}),
    );
    client.notify("initialized", json!({}));
}

fn hit_paths(search: &Value) -> Vec<String> {
    search["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
}

/// The settings and arguments the end-to-end test leaves alone: `include`/`exclude`,
/// `defaultK`, search filters, a folder removed, `toggle {enabled}` and `logLevel`.
#[test]
fn settings_filters_folders_and_log_levels() {
    let (_dir, alpha, beta) = setup();
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    initialize(&mut client, &alpha, json!({"exclude": ["lib/**"], "defaultK": 2}));
    client.wait_index_updated(&alpha);
    let status = client.command("raggrep.status", json!({}));
    assert_eq!(status["files"], 5, "lib/ holds 3 of the 8 files: {status}");
    let search = client.command("raggrep.search", json!({"query": "multiply two matrices"}));
    let paths = hit_paths(&search);
    assert!(!paths.is_empty() && paths.len() <= 2, "defaultK 2: {paths:?}");
    assert!(paths.iter().all(|p| !p.starts_with("lib/")), "{paths:?}");

    let python = client.command("raggrep.search", json!({"query": "check a token", "k": 5, "lang": "python"}));
    let paths = hit_paths(&python);
    assert!(!paths.is_empty() && paths.iter().all(|p| p.ends_with(".py")), "{paths:?}");
    let web = client.command("raggrep.search", json!({"query": "check a token", "k": 5, "path": "web/**"}));
    let paths = hit_paths(&web);
    assert!(!paths.is_empty() && paths.iter().all(|p| p.starts_with("web/")), "{paths:?}");

    // A file written by another program (a git checkout, a formatter) reaches the index through
    // the client's watched-file event alone; the server has no watcher of its own.
    let refund = alpha.join("src/refund.py");
    fs::write(&refund, "def refund_quokka_order(order):\n    return -order.total\n").unwrap();
    client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": uri(&refund), "type": 1}]}));
    client.wait_index_updated(&alpha);
    let found = client.command("raggrep.search", json!({"query": "refund_quokka_order", "mode": "lexical", "k": 1}));
    assert_eq!(found["results"][0]["symbol"], "refund_quokka_order", "{found}");

    // A folder added and removed again: its hits name their root, then are gone.
    let folder = json!([{"uri": uri(&beta), "name": "beta"}]);
    client.notify("workspace/didChangeWorkspaceFolders", json!({"event": {"added": folder, "removed": []}}));
    client.wait_index_updated(&beta);
    let globe = json!({"query": "distance between two points on the globe", "k": 3});
    let found = client.command("raggrep.search", globe.clone());
    assert_eq!(found["results"][0]["symbol"], "Haversine", "{found}");
    assert!(found["results"][0]["root"].as_str().unwrap().ends_with("/beta"), "{found}");
    client.notify("workspace/didChangeWorkspaceFolders", json!({"event": {"added": [], "removed": folder}}));
    let mut status = client.command("raggrep.status", json!({}));
    for _ in 0..50 {
        if status["roots"].as_array().unwrap().len() == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        status = client.command("raggrep.status", json!({}));
    }
    assert_eq!(status["roots"].as_array().unwrap().len(), 1, "{status}");
    let gone = client.command("raggrep.search", globe);
    assert!(gone["results"].as_array().unwrap().iter().all(|h| h["symbol"] != "Haversine"), "{gone}");

    // toggle with an explicit state is idempotent (without one it flips).
    for _ in 0..2 {
        let off = client.command("raggrep.toggle", json!({"enabled": false}));
        assert_eq!(off["roots"][0]["enabled"], false, "{off}");
    }
    let status = client.command("raggrep.status", json!({}));
    assert!(status["reason"].as_str().is_some_and(|r| r.contains("turned off")), "{status}");
    let on = client.command("raggrep.toggle", json!({"enabled": true}));
    assert_eq!(on["roots"][0]["enabled"], true, "{on}");

    // logLevel: at `error` a warning is not sent to the client; at `info` it is; a level that
    // does not exist is said so.
    let settings = |level: &str, key: &str| json!({"settings": {"raggrep": {"logLevel": level, key: 1}}});
    let logged = |m: &Value, text: &str| {
        m["method"] == "window/logMessage" && m["params"]["message"].as_str().is_some_and(|s| s.contains(text))
    };
    client.notify("workspace/didChangeConfiguration", settings("error", "quietKey"));
    client.notify("workspace/didChangeConfiguration", settings("info", "loudKey"));
    client.wait_for("the loud warning", |m| logged(m, "loudKey"));
    assert!(!client.notifications.iter().any(|m| logged(m, "quietKey")), "sent at logLevel error");
    client.notify("workspace/didChangeConfiguration", json!({"settings": {"logLevel": "verbose"}}));
    let said = client.wait_for("the unknown level", |m| logged(m, "logLevel \"verbose\""));
    assert_eq!(said["params"]["type"], 2, "{said}");

    // Sizes of 0 would index or answer nothing: refused with a warning, the value before kept.
    client.notify("workspace/didChangeConfiguration", json!({"settings": {"memoryBudgetMb": 0, "defaultK": 0}}));
    client.wait_for("the refused budget", |m| logged(m, "memoryBudgetMb must be at least 1; keeping 500"));
    client.wait_for("the refused k", |m| logged(m, "defaultK must be at least 1; keeping 2"));
    let search = client.command("raggrep.search", json!({"query": "validate token"}));
    assert_eq!(search["results"].as_array().map(Vec::len), Some(2), "defaultK stays 2: {search}");

    // A value of the wrong type is refused alone: the valid key beside it applies.
    client.notify("workspace/didChangeConfiguration", json!({"settings": {"maxFileSize": "big", "defaultK": 3}}));
    client.wait_for("the refused size", |m| logged(m, "ignoring the setting maxFileSize"));
    let search = client.command("raggrep.search", json!({"query": "validate token"}));
    assert_eq!(search["results"].as_array().map(Vec::len), Some(3), "defaultK is 3: {search}");
    assert_eq!(client.shutdown_and_exit(), 0);
}

/// A workspace folder inside a project indexed at its top uses the project's index (issue 59):
/// no index of its own, only its own files in every answer (paths relative to the folder), and
/// its changes go into the project's index.
#[test]
fn a_folder_inside_an_indexed_project_uses_the_project_index() {
    let (dir, alpha, _beta) = setup();
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_raggrep"))
            .args(args)
            .current_dir(&alpha)
            .env("RAGGREP_CEILING_DIRS", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null)
    };
    cli(&["index"]);
    let lib = alpha.join("lib");
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &lib);
    initialize(&mut client, &lib, json!({}));
    client.wait_index_updated(&lib);
    let status = client.command("raggrep.status", json!({}));
    assert_eq!(status["root"], lib.display().to_string(), "{status}");
    assert_eq!(status["index_root"], alpha.display().to_string(), "{status}");
    assert_eq!(status["index_dir"], alpha.join(".raggrep").display().to_string(), "{status}");
    assert_eq!(status["files"], 8, "the project's index, all of it kept: {status}");
    assert!(!lib.join(".raggrep").exists(), "the folder got an index of its own");

    let search = client.command("raggrep.search", json!({"query": "multiply two matrices", "k": 10}));
    let paths = hit_paths(&search);
    assert_eq!(paths.first().map(String::as_str), Some("matrix.c"), "{search}");
    assert!(paths.iter().all(|p| lib.join(p).is_file()), "a hit outside the folder: {paths:?}");
    let token = client.command("raggrep.search", json!({"query": "validate_token", "mode": "lexical", "k": 10}));
    assert!(hit_paths(&token).iter().all(|p| lib.join(p).is_file()), "{token}");
    let symbols_found = client.request("workspace/symbol", json!({"query": "check whether an API token is valid"}));
    assert!(symbols(&symbols_found).iter().all(|(_, u)| u.starts_with(&uri(&lib))), "{symbols_found}");

    // A file the folder gains goes into the project's index, under the folder's path there.
    let refund = lib.join("refund.py");
    fs::write(&refund, "def refund_quokka_order(order):\n    return -order.total\n").unwrap();
    client.notify("workspace/didChangeWatchedFiles", json!({"changes": [{"uri": uri(&refund), "type": 1}]}));
    client.wait_index_updated(&lib);
    let found = client.command("raggrep.search", json!({"query": "refund_quokka_order", "mode": "lexical", "k": 1}));
    assert_eq!(hit_paths(&found), ["refund.py"], "{found}");
    // Turning the folder off is not written into the project's config (it would turn the
    // project off for every other door).
    let off = client.command("raggrep.toggle", json!({"enabled": false}));
    assert_eq!(off["roots"][0]["enabled"], false, "{off}");
    let config = fs::read_to_string(alpha.join(".raggrep/config.toml")).unwrap_or_default();
    assert!(!config.contains("enabled"), "{config}");
    assert_eq!(client.shutdown_and_exit(), 0);
    assert!(!lib.join(".raggrep").exists(), "the folder got a log or config of its own");
    let project = cli(&["status", "--json"]);
    assert_eq!(project["files"], 9, "{project}");
    let listed = cli(&["query", "refund_quokka_order", "--mode", "lexical", "--json", "-k", "1"]);
    assert_eq!(listed["results"][0]["path"], "lib/refund.py", "{listed}");
}

/// `enabled: false` indexes nothing (and says why); `modelDir` chooses the model by name;
/// `memoryBudgetMb` stops adding files and says so.
#[test]
fn enabled_model_dir_and_memory_budget_settings() {
    let (dir, alpha, _beta) = setup();
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    initialize(&mut client, &alpha, json!({"enabled": false}));
    let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut status = Value::Null;
    while std::time::Instant::now() < until {
        status = client.command("raggrep.status", json!({}));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(!client.notifications.iter().any(|n| n["method"] == "raggrep/indexUpdated"), "indexed while disabled");
    assert!(status["reason"].as_str().is_some_and(|r| r.contains("turned off")), "{status}");
    assert!(!alpha.join(".raggrep/CURRENT").exists());
    assert_eq!(client.shutdown_and_exit(), 0);

    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    initialize(&mut client, &alpha, json!({"modelDir": "all-minilm-l6-v2-int8"}));
    client.wait_index_updated(&alpha);
    let status = client.command("raggrep.status", json!({}));
    assert_eq!(status["model"], "all-minilm-l6-v2-int8", "{status}");
    let search = client.command("raggrep.search", json!({"query": "multiply two matrices", "k": 3}));
    assert_eq!(search["results"][0]["symbol"], "matmul", "{search}");
    assert_eq!(client.shutdown_and_exit(), 0);

    // That index belongs to the plain model: a server of the default model searches only its
    // words (its vectors would meet this model's query vectors by noise). With indexing off it
    // is never rebuilt, so it stays that way, and every answer says so.
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    initialize(&mut client, &alpha, json!({"enabled": false}));
    let search = client.command("raggrep.search", json!({"query": "matmul", "k": 3}));
    assert_eq!(search["results"][0]["symbol"], "matmul", "{search}");
    let degraded = search["degraded"].as_str().unwrap_or_default();
    assert!(degraded.contains("searched by words only") && degraded.contains("all-minilm-l6-v2-int8"), "{search}");
    let context = client.command("raggrep.context", json!({"query": "matmul"}));
    assert!(context["sources"][0].as_str().is_some_and(|s| s.starts_with("lib/matrix.c:")), "{context}");
    assert_eq!(context["degraded"], search["degraded"], "{context}");
    // By meaning it is not searched at all: an empty answer that says why.
    let dense = client.command("raggrep.search", json!({"query": "multiply two matrices", "k": 3, "mode": "dense"}));
    assert_eq!(dense["results"], json!([]), "{dense}");
    let degraded = dense["degraded"].as_str().unwrap_or_default();
    assert!(degraded.contains("not searched") && degraded.contains("all-minilm-l6-v2-int8"), "{dense}");
    let lexical = client.command("raggrep.search", json!({"query": "matmul", "k": 3, "mode": "lexical"}));
    assert!(lexical["degraded"].is_null() && lexical["results"][0]["symbol"] == "matmul", "{lexical}");
    let status = client.command("raggrep.status", json!({}));
    assert_eq!(status["model"], "all-minilm-l6-v2-int8", "the index it searches: {status}");
    let reason = status["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("turned off")
            && reason.contains("searched by words only")
            && reason.contains("built with model all-minilm-l6-v2-int8")
            && reason.ends_with("indexing is off here, so it is not rebuilt"),
        "{status}"
    );
    assert_eq!(client.shutdown_and_exit(), 0);

    // With indexing on, the server rebuilds it with its own model; then it answers, and neither
    // the status nor the search carries the refusal any more.
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    initialize(&mut client, &alpha, json!({}));
    client.wait_index_updated(&alpha);
    let status = client.command("raggrep.status", json!({}));
    assert!(status["reason"].is_null() && status["model"] != "all-minilm-l6-v2-int8", "{status}");
    let search = client.command("raggrep.search", json!({"query": "multiply two matrices", "k": 3}));
    assert!(search["degraded"].is_null(), "{search}");
    assert_eq!(search["results"][0]["symbol"], "matmul", "{search}");
    assert_eq!(client.shutdown_and_exit(), 0);

    // A memory budget too small for the workspace (1 MB holds ~246 chunks; this has 400): the
    // editor is told, and status says why.
    let big = dir.path().join("big");
    fs::create_dir_all(big.join("src")).unwrap();
    fs::write(big.join("Cargo.toml"), "[package]\nname = \"big\"\n").unwrap();
    for f in 0..100 {
        let text: String =
            (0..4).map(|g| format!("pub fn item_{f}_{g}(x: u32) -> u32 {{\n    x * {g} + {f}\n}}\n\n")).collect();
        fs::write(big.join(format!("src/m{f:03}.rs")), text).unwrap();
    }
    let big = big.canonicalize().unwrap();
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &big);
    initialize(&mut client, &big, json!({"memoryBudgetMb": 1}));
    let shown = client.wait_for("the budget message", |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"].as_str().is_some_and(|s| s.contains("memory budget"))
    });
    assert!(shown["params"]["type"].as_u64().is_some_and(|t| t <= 2), "an error or a warning: {shown}");
    // (The message follows the update it is about.)
    client.wait_for("the update", |m| m["method"] == "raggrep/indexUpdated");
    let status = client.command("raggrep.status", json!({}));
    assert!(status["reason"].as_str().is_some_and(|r| r.contains("memory budget")), "{status}");
    assert!(status["chunks"].as_u64().is_some_and(|c| c > 100 && c < 400), "{status}");
    assert_eq!(client.shutdown_and_exit(), 0);
}

/// `degraded` over LSP: an index whose lexical part cannot be opened answers dense-only and says
/// so, until the server's first update (held back here by `raggrep.pause`) rebuilds it.
#[test]
fn search_says_degraded_until_the_first_update_repairs_the_index() {
    let (_dir, alpha, _beta) = setup();
    let indexed = std::process::Command::new(env!("CARGO_BIN_EXE_raggrep")).arg("index").arg(&alpha).output().unwrap();
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    fs::remove_dir_all(alpha.join(".raggrep/lexical")).unwrap();
    fs::create_dir(alpha.join(".raggrep/lexical")).unwrap();

    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    client.request(
        "initialize",
        json!({"processId": null, "rootUri": uri(&alpha), "workspaceFolders": [{"uri": uri(&alpha), "name": "alpha"}], "capabilities": {}}),
    );
    assert_eq!(client.command("raggrep.pause", json!({})), json!({"paused": true}));
    client.notify("initialized", json!({}));
    let query = json!({"query": "check whether an API token is valid", "k": 3});
    let damaged = client.command("raggrep.search", query.clone());
    assert!(damaged["degraded"].as_str().is_some_and(|d| d.contains("lexical")), "{damaged:#}");
    assert_eq!(damaged["partial"], true, "{damaged:#}");
    assert_eq!(damaged["results"][0]["symbol"], "validate_token", "dense results still come: {damaged:#}");

    assert_eq!(client.command("raggrep.resume", json!({})), json!({"paused": false}));
    client.wait_index_updated(&alpha);
    let repaired = client.command("raggrep.search", query);
    assert!(repaired.get("degraded").is_none_or(Value::is_null), "{repaired:#}");
    assert_eq!(repaired["partial"], false, "{repaired:#}");
    assert_eq!(client.shutdown_and_exit(), 0);
}

/// Issue 56: without its model the server stays up, and every request that needs the model
/// answers with the cause and the fix, as the command line says them (not "see the log").
#[test]
fn without_its_model_every_answer_says_why_and_what_to_do() {
    let (_dir, alpha, _beta) = setup();
    let mut client = Client::start(env!("CARGO_BIN_EXE_raggrep"), &alpha);
    initialize(&mut client, &alpha, json!({"modelDir": "no-such-model-here"}));
    let answer = client.request_full(
        "workspace/executeCommand",
        json!({"command": "raggrep.search", "arguments": [{"query": "validate a token"}]}),
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.starts_with("raggrep is not ready: cannot load the embedding model"), "{answer}");
    assert!(message.contains("no-such-model-here") && message.contains("bootstrap"), "no cause or fix: {message}");
    let status = client.request_full("workspace/executeCommand", json!({"command": "raggrep.status", "arguments": []}));
    assert_eq!(status["error"]["message"], answer["error"]["message"], "{status}");
    let shown = client
        .notifications
        .iter()
        .filter(|n| n["method"] == "window/showMessage")
        .filter_map(|n| n["params"]["message"].as_str())
        .any(|m| m.contains("no-such-model-here") && m.contains("bootstrap"));
    assert!(shown, "no window/showMessage with the cause: {:?}", client.notifications);
    assert_eq!(client.shutdown_and_exit(), 0);
}
