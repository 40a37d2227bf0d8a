//! The MCP server end to end at the wire level: the real binary and model, newline-delimited
//! JSON-RPC over stdio (initialize, tools/list, tools/call). The official Python SDK drives it
//! more thoroughly in `tests/mcp/run.sh`; this keeps `cargo test` covering the basics.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::fixture;
use crate::mcp_client;

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_client::Session;
use serde_json::json;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/polyglot");

/// A copy of the polyglot fixture in a temporary directory (kept while the guard lives).
fn polyglot() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("polyglot");
    fixture::copy_dir(Path::new(FIXTURE), &root);
    (dir, root)
}

#[test]
fn mcp_over_stdio() {
    let (_dir, root) = polyglot();
    let mut session = Session::start(env!("CARGO_BIN_EXE_raggrep"), &root);

    let init = session.initialize();
    assert_eq!(init["serverInfo"]["name"], "raggrep", "{init}");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");

    let tools = session.request("tools/list", json!({}));
    let tools = tools["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "context",
            "find_similar",
            "find_symbol",
            "outline",
            "reindex",
            "search",
            "search_history",
            "status",
            "vector_db"
        ]
    );
    for tool in tools {
        assert!(!tool["description"].as_str().unwrap_or_default().is_empty(), "{tool}");
        for (name, property) in tool["inputSchema"]["properties"].as_object().into_iter().flatten() {
            assert!(property["description"].is_string(), "{}.{name} is not documented", tool["name"]);
        }
    }

    // Indexing runs in the background: lexical search answers as soon as the files are chunked.
    let (result, _) = wait_for_hit(&mut session, "validate_token", "src/auth.py:");
    let first = &result["results"][0];
    assert_eq!(first["symbol"], "validate_token", "{result}");
    assert_eq!(first["stale"], false, "{result}");

    // A path escaping the root is a tool error, not a protocol error and not an empty answer.
    let refused = session.call("outline", json!({ "path": "../outside.py" }));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused["content"][0]["text"].as_str().unwrap().contains(".."), "{refused}");

    // Closing stdin ends the session cleanly.
    session.close();
}

/// Searches (lexical, so the answer comes as soon as the files are chunked) until `path` is
/// among the hits; returns the answer and that hit. A tool error fails the test.
fn wait_for_hit(session: &mut Session, query: &str, path: &str) -> (serde_json::Value, serde_json::Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let result = session.structured("search", json!({ "query": query, "mode": "lexical", "k": 5 }));
        let hits = result["results"].as_array().cloned().unwrap_or_default();
        if let Some(hit) = hits.into_iter().find(|h| h["location"].as_str().unwrap_or_default().starts_with(path)) {
            return (result, hit);
        }
        assert!(Instant::now() < deadline, "{query}: {path} never found: {result}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn mcp_serves_several_roots_or_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("polyglot");
    fixture::copy_dir(Path::new(FIXTURE), &first);
    let second = dir.path().join("billing");
    std::fs::create_dir_all(&second).unwrap();
    std::fs::write(second.join("ledger.py"), "def settle_quokka_invoice(invoice):\n    return invoice.total\n")
        .unwrap();

    // A third root whose config turns indexing off.
    let off = dir.path().join("archive");
    std::fs::create_dir_all(off.join(".raggrep")).unwrap();
    std::fs::write(off.join(".raggrep/config.toml"), "enabled = false\n").unwrap();
    std::fs::write(off.join("old.py"), "def settle_quokka_invoice_the_old_way(invoice):\n    return 0\n").unwrap();

    let mut both = Session::start_in(env!("CARGO_BIN_EXE_raggrep"), &[&first, &second, &off], None);
    both.initialize();
    let (_, theirs) = wait_for_hit(&mut both, "settle_quokka_invoice", "ledger.py:");
    let (_, ours) = wait_for_hit(&mut both, "validate_token", "src/auth.py:");
    // With several roots every hit names its root.
    assert!(theirs["root"].as_str().unwrap().ends_with("billing"), "{theirs}");
    assert!(ours["root"].as_str().unwrap().ends_with("polyglot"), "{ours}");
    let status = both.structured("status", json!({}));
    assert_eq!(status["roots"].as_array().map(Vec::len), Some(3), "{status}");
    let archive = &status["roots"][2];
    assert!(archive["reason"].as_str().is_some_and(|r| r.contains("turned off")), "{status}");
    let lexical = both.structured("search", json!({ "query": "settle_quokka_invoice_the_old_way", "mode": "lexical" }));
    let paths: Vec<&str> =
        lexical["results"].as_array().unwrap().iter().filter_map(|h| h["location"].as_str()).collect();
    assert!(!paths.iter().any(|p| p.starts_with("old.py")), "a root turned off is not searched: {paths:?}");

    // Dense mode once the vectors are in; every answer says how long it took.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let dense =
            both.structured("search", json!({ "query": "how are API tokens validated", "mode": "dense", "k": 3 }));
        assert!(dense["took_ms"].as_f64().is_some_and(|t| t >= 0.0), "{dense}");
        let first = dense["results"][0]["location"].as_str().unwrap_or_default().to_string();
        if first.starts_with("src/auth.py:") {
            break;
        }
        assert!(Instant::now() < deadline, "dense search never found validate_token: {dense}");
        std::thread::sleep(Duration::from_millis(300));
    }
    // find_similar keeps to its token budget and says what it left out.
    let similar = both.structured(
        "find_similar",
        json!({ "code": "def check(token):\n    return token in TOKENS\n", "k": 10, "max_tokens": 60 }),
    );
    assert!(similar["tokens"].as_u64().is_some_and(|t| t <= 60), "{similar}");
    assert!(similar["omitted"].as_u64().is_some_and(|o| o > 0), "{similar}");
    assert_eq!(similar["source"]["location"], "snippet", "{similar}");
    both.close();

    // No roots: the current directory, and hits carry no root field.
    let mut here = Session::start_in(env!("CARGO_BIN_EXE_raggrep"), &[], Some(&second));
    here.initialize();
    let (_, hit) = wait_for_hit(&mut here, "settle_quokka_invoice", "ledger.py:");
    assert!(hit.get("root").is_none_or(|r| r.is_null()), "{hit}");
    here.close();
}

/// An agent started in a folder of a project indexed at its top (issue 59) gets the project's
/// index kept to that folder: hits, symbols and outlines of the folder's files only, paths
/// relative to the folder, no index of its own.
#[test]
fn mcp_in_a_folder_of_an_indexed_project_uses_the_project_index() {
    let (dir, root) = polyglot();
    let indexed = std::process::Command::new(env!("CARGO_BIN_EXE_raggrep"))
        .arg("index")
        .current_dir(&root)
        .env("RAGGREP_CEILING_DIRS", dir.path())
        .output()
        .unwrap();
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let src = root.join("src").canonicalize().unwrap();
    let mut session = Session::start_in(env!("CARGO_BIN_EXE_raggrep"), &[], Some(&src));
    session.initialize();
    let (_, hit) = wait_for_hit(&mut session, "validate_token", "auth.py:");
    assert!(hit.get("root").is_none_or(|r| r.is_null()), "{hit}");
    let status = session.structured("status", json!({}));
    assert_eq!(status["index_root"], root.canonicalize().unwrap().display().to_string(), "{status}");
    assert!(!src.join(".raggrep").exists(), "the folder got an index of its own");

    // The rest of the project is not the agent's: not searched, not found, not outlined.
    let elsewhere = session.structured("search", json!({ "query": "dedupeItems", "mode": "lexical", "k": 10 }));
    let locations: Vec<&str> =
        elsewhere["results"].as_array().unwrap().iter().filter_map(|h| h["location"].as_str()).collect();
    assert!(locations.iter().all(|l| !l.contains("unique.js")), "{elsewhere}");
    let symbol = session.structured("find_symbol", json!({ "name": "dedupeItems" }));
    assert_eq!(symbol["definitions"].as_array().map(Vec::len), Some(0), "{symbol}");
    let ours = session.structured("find_symbol", json!({ "name": "adler32" }));
    assert!(ours["definitions"][0]["location"].as_str().is_some_and(|l| l.starts_with("checksum.rs:")), "{ours}");
    let outside = root.join("lib/unique.js").canonicalize().unwrap();
    let refused = session.call("outline", json!({ "path": outside.display().to_string() }));
    assert_eq!(refused["isError"], true, "{refused}");
    session.close();
}

/// A folder of a project whose index another model built: searched by its words, never
/// rebuilt from the folder (that would drop the rest of the project from the index); status
/// says where to rebuild it.
#[test]
fn mcp_in_a_folder_of_another_models_index_does_not_rebuild_it() {
    let (dir, root) = polyglot();
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_raggrep"))
            .args(args)
            .current_dir(&root)
            .env("RAGGREP_CEILING_DIRS", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    cli(&["index", "--model", "all-minilm-l6-v2-int8"]);
    let before = cli(&["status", "--json"]);
    let src = root.join("src").canonicalize().unwrap();
    let mut session = Session::start_in(env!("CARGO_BIN_EXE_raggrep"), &[], Some(&src));
    session.initialize();
    let status = session.structured("status", json!({}));
    let reason = status["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("rebuild it there"), "{status}");
    assert_eq!(status["enabled"], false, "{status}");
    let (_, hit) = wait_for_hit(&mut session, "validate_token", "auth.py:");
    assert!(hit["location"].as_str().is_some_and(|l| l.starts_with("auth.py:")), "{hit}");
    session.close();
    let after = cli(&["status", "--json"]);
    assert_eq!((&after["model"], &after["generation"]), (&before["model"], &before["generation"]), "{after}");
}

/// `degraded` over MCP: a damaged lexical index is said in the answer until the server's own
/// update has rebuilt it. The test holds the index's writer lock so that update waits (as it
/// would behind a `raggrep index` in a terminal), which keeps the damaged state in place long
/// enough to look at.
#[test]
fn mcp_says_degraded_until_its_update_repairs_the_index() {
    let (_dir, root) = polyglot();
    let indexed = std::process::Command::new(env!("CARGO_BIN_EXE_raggrep")).arg("index").arg(&root).output().unwrap();
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let lexical = root.join(".raggrep/lexical");
    std::fs::remove_dir_all(&lexical).unwrap();
    std::fs::create_dir(&lexical).unwrap();
    let lock = std::fs::OpenOptions::new().write(true).open(root.join(".raggrep/LOCK")).unwrap();
    lock.lock().unwrap();

    let mut session = Session::start(env!("CARGO_BIN_EXE_raggrep"), &root);
    session.initialize();
    let damaged = session.structured("search", json!({ "query": "check whether an API token is valid", "k": 5 }));
    assert!(damaged["degraded"].as_str().is_some_and(|d| d.contains("lexical")), "{damaged}");
    assert_eq!(damaged["partial"], true, "the update that repairs it has not run: {damaged}");
    assert!(damaged["results"].as_array().is_some_and(|r| !r.is_empty()), "dense results still come: {damaged}");
    let status = session.structured("status", json!({}));
    assert_eq!(status["roots"][0]["indexing"], true, "{status}");

    lock.unlock().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let repaired = loop {
        let result = session.structured("search", json!({ "query": "validate_token", "mode": "lexical", "k": 5 }));
        if result.get("degraded").is_none_or(serde_json::Value::is_null) && result["partial"] == false {
            break result;
        }
        assert!(Instant::now() < deadline, "still degraded a minute after the lock was released: {result}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(repaired["results"][0]["symbol"], "validate_token", "{repaired}");
    session.close();
}

/// An index another model built (the default changed in an upgrade) is searched by its words
/// until the server's rebuild publishes: its lexical index and symbols do not depend on the
/// model, its vectors would meet this model's query vectors by noise. Every answer says so
/// (`degraded`, status `reason`); meaning and similarity answer nothing, and say why, rather
/// than read as "no such code". The writer lock held by the test keeps the rebuild waiting, as
/// in the test above.
#[test]
fn mcp_searches_an_index_of_another_model_by_words_until_it_is_rebuilt() {
    let (_dir, root) = polyglot();
    let indexed = std::process::Command::new(env!("CARGO_BIN_EXE_raggrep"))
        .args(["index", "--model", "all-minilm-l6-v2-int8"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let lock = std::fs::OpenOptions::new().write(true).open(root.join(".raggrep/LOCK")).unwrap();
    lock.lock().unwrap();

    let mut session = Session::start(env!("CARGO_BIN_EXE_raggrep"), &root);
    session.initialize();
    let by_words = session.structured("search", json!({ "query": "validate_token", "k": 5 }));
    assert_eq!(by_words["results"][0]["symbol"], "validate_token", "{by_words}");
    let degraded = by_words["degraded"].as_str().unwrap_or_default();
    assert!(degraded.contains("searched by words only") && degraded.contains("all-minilm-l6-v2-int8"), "{by_words}");
    assert_eq!(by_words["partial"], true, "{by_words}");
    // Words-only candidates are not reranked, and the answer does not claim they were.
    let asked = session.structured("search", json!({ "query": "validate_token", "k": 5, "rerank": true }));
    assert_eq!(asked["results"][0]["symbol"], "validate_token", "{asked}");
    assert!(asked.get("reranked_by").is_none_or(serde_json::Value::is_null), "{asked}");
    let context = session.structured("context", json!({ "question": "validate_token" }));
    assert!(context["sources"][0].as_str().is_some_and(|s| s.starts_with("src/auth.py:")), "{context}");
    assert_eq!(context["degraded"], by_words["degraded"], "{context}");
    let dense = session
        .structured("search", json!({ "query": "check whether an API token is valid", "k": 5, "mode": "dense" }));
    assert_eq!(dense["results"], json!([]), "{dense}");
    let not_searched = dense["degraded"].as_str().unwrap_or_default();
    assert!(not_searched.contains("not searched") && not_searched.contains("all-minilm-l6-v2-int8"), "{dense}");
    let similar = session
        .structured("find_similar", json!({ "code": "def validate_token(store, token):\n    return token in store" }));
    assert_eq!(similar["results"], json!([]), "{similar}");
    assert_eq!(similar["degraded"], dense["degraded"], "{similar}");
    let symbols = session.structured("find_symbol", json!({ "name": "validate_token" }));
    assert!(symbols["definitions"][0]["location"].as_str().is_some_and(|l| l.starts_with("src/auth.py:")), "{symbols}");
    let status = session.structured("status", json!({}));
    let reason = status["roots"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("searched by words only")
            && reason.contains("built with model all-minilm-l6-v2-int8")
            && reason.ends_with("it is being rebuilt"),
        "{status}"
    );

    lock.unlock().unwrap();
    let query = json!({ "query": "check whether an API token is valid", "k": 5 });
    let deadline = Instant::now() + Duration::from_secs(120);
    let rebuilt = loop {
        let result = session.structured("search", query.clone());
        if result.get("degraded").is_none_or(serde_json::Value::is_null) && result["partial"] == false {
            break result;
        }
        assert!(Instant::now() < deadline, "still by words only two minutes after the lock was released: {result}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(rebuilt["results"][0]["symbol"], "validate_token", "{rebuilt}");
    let reranked = session.structured("search", json!({ "query": "validate_token", "k": 5, "rerank": true }));
    assert_eq!(reranked["reranked_by"], "all-minilm-l6-v2-rerank-int8", "{reranked}");
    let similar = session
        .structured("find_similar", json!({ "code": "def validate_token(store, token):\n    return token in store" }));
    assert!(similar["degraded"].is_null() && similar["results"].as_array().is_some_and(|r| !r.is_empty()), "{similar}");
    let status = session.structured("status", json!({}));
    assert!(status["roots"][0]["reason"].is_null(), "{status}");
    session.close();
}

/// A small object literal is one chunk of code, so its methods have no chunk of their own;
/// `find_symbol` still finds them (qualified by the object's name) and `outline` lists them.
#[test]
fn find_symbol_finds_the_methods_of_a_small_object() {
    let (_dir, root) = polyglot();
    std::fs::write(
        root.join("lib/retry.js"),
        "const retryPolicy = {\n  backoffDelay(attempt) {\n    return Math.min(30000, 2 ** attempt * 100);\n  },\n};\n\nmodule.exports = retryPolicy;\n",
    )
    .unwrap();
    let mut session = Session::start(env!("CARGO_BIN_EXE_raggrep"), &root);
    session.initialize();
    wait_for_hit(&mut session, "backoffDelay", "lib/retry.js:");
    let found = session.structured("find_symbol", json!({ "name": "backoffDelay" }));
    let definitions = found["definitions"].as_array().cloned().unwrap_or_default();
    assert_eq!(definitions.len(), 1, "{found}");
    assert_eq!(definitions[0]["symbol"], "retryPolicy.backoffDelay", "{found}");
    assert!(definitions[0]["location"].as_str().is_some_and(|l| l.starts_with("lib/retry.js:2-")), "{found}");
    let qualified = session.structured("find_symbol", json!({ "name": "retryPolicy.backoffDelay" }));
    assert_eq!(qualified["definitions"].as_array().map(Vec::len), Some(1), "{qualified}");
    let outline = session.structured("outline", json!({ "path": "lib/retry.js" }));
    assert!(outline.to_string().contains("retryPolicy.backoffDelay"), "{outline}");
    session.close();
}

/// A language added with issue 53 answers as the first nine do: Ruby's qualified names in
/// `find_symbol` (`Rack::Builder.call`, with `::` throughout, or Ruby's own
/// `Rack::Builder#call`), `outline`, the `lang` filter; a script without an extension is read
/// as shell from its `#!` line; Julia's `put!` is found in its module.
#[test]
fn ruby_and_shell_scripts_have_symbols_outlines_and_a_language_filter() {
    let (_dir, root) = polyglot();
    std::fs::create_dir_all(root.join("lib/rack")).unwrap();
    std::fs::write(
        root.join("lib/rack/builder.rb"),
        "module Rack\n  # Assembles middleware into one app.\n  class Builder\n    def initialize(app)\n      @app = app\n    end\n\n    # Runs the quokka middleware chain.\n    def call(env)\n      @app.call(env)\n    end\n  end\nend\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("src/caches.jl"),
        "module Caches\n\n\"\"\"\n    put!(c, k, v)\n\nStores a quokka value.\n\"\"\"\nfunction put!(c, k, v)\n    c[k] = v\nend\n\nend\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join("bin/deploy"), "#!/usr/bin/env bash\n# Ships the quokka release.\nship_release() {\n  rsync -a dist/ host:/srv\n}\nship_release\n")
        .unwrap();
    let mut session = Session::start(env!("CARGO_BIN_EXE_raggrep"), &root);
    session.initialize();
    wait_for_hit(&mut session, "quokka middleware", "lib/rack/builder.rb:");
    wait_for_hit(&mut session, "quokka release", "bin/deploy:");
    for name in ["Rack::Builder.call", "Rack::Builder::call", "Rack::Builder#call", "call"] {
        let found = session.structured("find_symbol", json!({ "name": name }));
        let definitions = found["definitions"].as_array().cloned().unwrap_or_default();
        let in_ruby =
            |d: &&serde_json::Value| d["location"].as_str().is_some_and(|l| l.starts_with("lib/rack/builder.rb:"));
        let ruby: Vec<_> = definitions.iter().filter(in_ruby).collect();
        assert_eq!(ruby.len(), 1, "{name}: {found}");
        assert_eq!(ruby[0]["symbol"], "Rack::Builder.call", "{found}");
        assert_eq!(ruby[0]["kind"], "method", "{found}");
    }
    // Searched as Ruby writes it, the file that defines it comes first (the module is small
    // enough to be one chunk).
    let found = session.structured("search", json!({ "query": "Rack::Builder#call" }));
    let first = found["results"][0]["location"].as_str().unwrap_or_default();
    assert!(first.starts_with("lib/rack/builder.rb:1-"), "{found}");
    let outline = session.structured("outline", json!({ "path": "lib/rack/builder.rb" }));
    for symbol in ["\"Rack\"", "\"Rack::Builder\"", "\"Rack::Builder.initialize\"", "\"Rack::Builder.call\""] {
        assert!(outline.to_string().contains(symbol), "{symbol}: {outline}");
    }
    let outline = session.structured("outline", json!({ "path": "bin/deploy" }));
    assert_eq!(outline["language"], "bash", "{outline}");
    assert!(outline.to_string().contains("\"ship_release\""), "{outline}");
    // One of the languages the issue adds last: Julia's `put!` by its name, in its module.
    wait_for_hit(&mut session, "stores a quokka value", "src/caches.jl:");
    let found = session.structured("find_symbol", json!({ "name": "put!" }));
    assert_eq!(found["definitions"][0]["symbol"], "Caches.put!", "{found}");
    let outline = session.structured("outline", json!({ "path": "src/caches.jl" }));
    assert_eq!(outline["language"], "julia", "{outline}");
    let found = session.structured("search", json!({ "query": "quokka", "mode": "lexical", "lang": "ruby" }));
    let hits = found["results"].as_array().cloned().unwrap_or_default();
    assert!(!hits.is_empty() && hits.iter().all(|h| h["language"] == "ruby"), "{found}");
    session.close();
}

/// YAML, TOML and JSON answer by their keys (issue 53): a chunk is a section named by its key
/// path, `find_symbol` finds a section by its short or dotted name and a plain key through the
/// file's outline, `outline` lists every key, and the `lang` filter knows the three formats.
#[test]
fn configuration_files_answer_by_their_keys() {
    let (_dir, root) = polyglot();
    std::fs::create_dir_all(root.join("ci")).unwrap();
    std::fs::write(
        root.join("ci/build.yml"),
        "name: CI\non: [push]\njobs:\n  build:\n    runs-on: ubuntu-latest\n    env:\n      QUOKKA_RETRY_TIMEOUT: 30\n    steps:\n      - uses: actions/checkout@v4\n      - name: Test the quokka parser\n        run: cargo test\n",
    )
    .unwrap();
    std::fs::write(
        root.join("settings.toml"),
        "title = \"quokka\"\n\n# How long a quokka request may wait.\n[network.retry]\ntimeout_ms = 1500\nattempts = 3\n",
    )
    .unwrap();
    std::fs::write(
        root.join("tsconfig.json"),
        "{\n  // Strict, for the quokka client.\n  \"compilerOptions\": {\n    \"strict\": true,\n    \"paths\": { \"@quokka/*\": [\"src/*\"] }\n  }\n}\n",
    )
    .unwrap();
    let mut session = Session::start(env!("CARGO_BIN_EXE_raggrep"), &root);
    session.initialize();
    wait_for_hit(&mut session, "quokka retry timeout attempts", "settings.toml:");
    let found =
        session.structured("search", json!({ "query": "quokka retry timeout", "mode": "lexical", "lang": "toml" }));
    let hits = found["results"].as_array().cloned().unwrap_or_default();
    assert!(!hits.is_empty() && hits.iter().all(|h| h["language"] == "toml"), "{found}");
    assert_eq!(hits[0]["symbol"], "network.retry", "{found}");
    assert_eq!(hits[0]["kind"], "section", "{found}");
    for (name, symbol, location) in [
        ("retry", "network.retry", "settings.toml:3-"),
        ("network.retry", "network.retry", "settings.toml:3-"),
        ("jobs", "jobs", "ci/build.yml:3-"),
        // A plain key has no chunk of its own: found through the file's outline.
        ("QUOKKA_RETRY_TIMEOUT", "jobs.build.env.QUOKKA_RETRY_TIMEOUT", "ci/build.yml:7-"),
        ("compilerOptions.paths", "compilerOptions.paths", "tsconfig.json:5-"),
    ] {
        let found = session.structured("find_symbol", json!({ "name": name }));
        let definitions = found["definitions"].as_array().cloned().unwrap_or_default();
        assert!(
            definitions
                .iter()
                .any(|d| d["symbol"] == symbol && d["location"].as_str().is_some_and(|l| l.starts_with(location))),
            "{name}: {found}"
        );
    }
    let outline = session.structured("outline", json!({ "path": "ci/build.yml" }));
    assert_eq!(outline["language"], "yaml", "{outline}");
    for symbol in ["\"jobs.build\"", "\"jobs.build.runs-on\"", "\"jobs.build.steps.Test the quokka parser\""] {
        assert!(outline.to_string().contains(symbol), "{symbol}: {outline}");
    }
    for lang in ["yaml", "json"] {
        let found = session.structured("search", json!({ "query": "quokka", "mode": "lexical", "lang": lang }));
        let hits = found["results"].as_array().cloned().unwrap_or_default();
        assert!(!hits.is_empty() && hits.iter().all(|h| h["language"] == lang), "{lang}: {found}");
    }
    session.close();
}
