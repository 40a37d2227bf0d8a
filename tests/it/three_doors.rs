//! One index, three front doors at once: the CLI, the language server and the MCP server on the
//! same root, the real binary and model, edits on disk in between. One process writes at a time
//! (the writer lock); the others answer from published generations, follow the writer's progress
//! while they wait, and embed nothing the writer already embedded. The audit log
//! (`.raggrep/audit.jsonl`) counts what each door's updates embedded.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::lsp_client;
use crate::mcp_client;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lsp_client::{Client, uri};
use mcp_client::Session;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_raggrep");
const MODULES: usize = 150;

/// A project of `MODULES` Python modules, four documented functions each: enough chunks that
/// embedding them takes seconds, so the three doors overlap.
fn write_project(root: &Path) {
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    // Texts no earlier run embedded: the machine-wide embedding cache must not make the CLI's
    // pass instant, or there is no embedding for the other doors to follow.
    let run = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"three-doors\"\n").unwrap();
    let verbs = ["parse", "render", "validate", "merge"];
    let nouns = ["invoice", "shipment", "ledger", "voucher", "tariff", "manifest", "receipt", "quota"];
    for m in 0..MODULES {
        let noun = nouns[m % nouns.len()];
        let mut text = format!("\"\"\"Helpers for {noun} records, part {m}.\"\"\"\n\n");
        for (v, verb) in verbs.iter().enumerate() {
            text.push_str(&format!(
                "def {verb}_{noun}_{m}(record, limit={v}):\n    \"\"\"{verb} a {noun} record (batch {m}) and check its totals.\"\"\"\n    # run {run}\n    total = sum(line.amount for line in record.lines[:limit + {m}])\n    if total < 0:\n        raise ValueError(\"negative {noun} total in batch {m}\")\n    return {{\"{noun}\": record.id, \"total\": total, \"step\": \"{verb}\"}}\n\n\n"
            ));
        }
        std::fs::write(root.join(format!("pkg/{noun}_{m}.py")), text).unwrap();
    }
}

/// Every `index` operation in the audit log, in order.
fn index_ops(root: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(root.join(".raggrep/audit.jsonl")).unwrap_or_default();
    text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|e| e["op"] == "index").collect()
}

fn embedded(op: &Value) -> u64 {
    op["embedded"].as_u64().unwrap_or(0)
}

fn cli_top(root: &Path, query: &str) -> String {
    let out =
        Command::new(BIN).args(["query", "--root"]).arg(root).args(["--json", "-k", "3", query]).output().unwrap();
    assert!(out.status.success(), "query failed: {}", String::from_utf8_lossy(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    answer["results"][0]["location"].as_str().unwrap_or_default().to_string()
}

fn mcp_top(mcp: &mut Session, query: &str) -> String {
    let answer = mcp.structured("search", json!({ "query": query, "k": 3 }));
    answer["results"][0]["location"].as_str().unwrap_or_default().to_string()
}

fn lsp_top(lsp: &mut Client, query: &str) -> String {
    let answer = lsp.command("raggrep.search", json!({ "query": query, "k": 3 }));
    answer["results"][0]["location"].as_str().unwrap_or_default().to_string()
}

/// Waits until the MCP server's index of its root is complete and idle.
fn mcp_settled(mcp: &mut Session) -> Value {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let status = mcp.structured("status", json!({}));
        let root = &status["roots"][0];
        if root["indexing"] == false && root["pending"] == 0 && root["chunks"].as_u64().unwrap_or(0) > 0 {
            return status;
        }
        assert!(Instant::now() < deadline, "the MCP server never settled: {status}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn cli_lsp_and_mcp_share_one_index() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    write_project(&root);
    let root = root.canonicalize().unwrap();

    // The CLI starts the first index and publishes every second while it embeds.
    let mut cli = Command::new(BIN)
        .args(["index", "--commit-every", "1"])
        .arg(&root)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !root.join(".raggrep/CURRENT").exists() {
        assert!(Instant::now() < deadline, "the CLI never published its first generation");
        std::thread::sleep(Duration::from_millis(50));
    }

    // The servers start while the CLI writes: each finds the writer at work.
    let mut mcp = Session::start(BIN, &root);
    mcp.initialize();
    let mut lsp = Client::start(BIN, &root);
    lsp.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": uri(&root),
            "workspaceFolders": [{ "uri": uri(&root), "name": "project" }],
            "capabilities": {},
        }),
    );
    lsp.notify("initialized", json!({}));

    // While the CLI embeds, the MCP server answers from what is published (lexical first,
    // marked partial) and follows the writer: its count of embedded chunks grows before the
    // writer is done, without a pass of its own.
    let mut seen_embedded = Vec::new();
    let mut partial_answer = None;
    while cli.try_wait().unwrap().is_none() {
        let status = mcp.structured("status", json!({}));
        seen_embedded.push(status["roots"][0]["embedded"].as_u64().unwrap_or(0));
        if partial_answer.is_none() {
            let answer = mcp.structured("search", json!({ "query": "validate_ledger_2", "mode": "lexical", "k": 1 }));
            if answer["partial"] == true && answer["results"][0]["location"].is_string() {
                partial_answer = Some(answer);
            }
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(cli.wait().unwrap().success(), "raggrep index failed");
    let final_status = mcp_settled(&mut mcp);
    let chunks = final_status["roots"][0]["chunks"].as_u64().unwrap();
    let total = final_status["roots"][0]["embedded"].as_u64().unwrap();
    assert_eq!(total, chunks, "every chunk embedded: {final_status}");
    let answer = partial_answer.expect("no partial answer while the CLI was indexing");
    assert!(
        answer["results"][0]["location"].as_str().unwrap().starts_with("pkg/ledger_2.py:"),
        "lexical answer during indexing: {answer}"
    );
    let following: Vec<u64> = seen_embedded.iter().copied().filter(|&e| e > 0 && e < total).collect();
    assert!(
        !following.is_empty(),
        "the MCP server never showed the writer's intermediate progress (embedded seen: {seen_embedded:?})"
    );
    assert!(seen_embedded.windows(2).all(|w| w[0] <= w[1]), "progress went backwards: {seen_embedded:?}");
    lsp.wait_for("the language server's first update", |m| m["method"] == "raggrep/indexUpdated");

    // One pass: the chunks were embedded once in total, by whichever door wrote first.
    let ops = index_ops(&root);
    let doors: Vec<&str> = ops.iter().filter_map(|o| o["door"].as_str()).collect();
    for door in ["cli", "lsp", "mcp"] {
        assert!(doors.contains(&door), "no index operation by {door}: {ops:?}");
    }
    let sum: u64 = ops.iter().map(embedded).sum();
    println!(
        "first index: {chunks} chunks; embedded per operation: {:?}",
        ops.iter().map(|o| (o["door"].clone(), embedded(o))).collect::<Vec<_>>()
    );
    assert_eq!(sum, chunks, "three doors embedded {sum} chunks for an index of {chunks}: {ops:?}");

    // Every door gives the same answer.
    let query = "merge a voucher record and check its totals, batch 11";
    let (by_cli, by_mcp, by_lsp) = (cli_top(&root, query), mcp_top(&mut mcp, query), lsp_top(&mut lsp, query));
    assert!(!by_cli.is_empty(), "no CLI answer");
    assert_eq!((&by_mcp, &by_lsp), (&by_cli, &by_cli), "the doors disagree");

    // An edit on disk: the MCP server sees it (watcher), the editor reports it, the CLI reindexes.
    let before = ops.len();
    let edited = root.join("pkg/quota_7.py");
    let text = std::fs::read_to_string(&edited).unwrap().replace(
        "def render_quota_7(",
        "def reconcile_quota_against_forecast(record):\n    \"\"\"Compare a quota with the forecast and report the gap.\"\"\"\n    return record.forecast - record.quota\n\n\ndef render_quota_7(",
    );
    std::fs::write(&edited, text).unwrap();
    lsp.notify("workspace/didChangeWatchedFiles", json!({ "changes": [{ "uri": uri(&edited), "type": 2 }] }));
    let status = Command::new(BIN).arg("index").arg(&root).stdout(Stdio::null()).status().unwrap();
    assert!(status.success());
    lsp.wait_index_updated(&root);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = mcp.structured("find_symbol", json!({ "name": "reconcile_quota_against_forecast" }));
        if found["definitions"].as_array().is_some_and(|d| d.len() == 1) {
            break;
        }
        assert!(Instant::now() < deadline, "the MCP server never saw the edit: {found}");
        std::thread::sleep(Duration::from_millis(200));
    }
    mcp_settled(&mut mcp);
    let after = index_ops(&root);
    let new_ops = &after[before..];
    let embedded_after_edit: u64 = new_ops.iter().map(embedded).sum();
    let embedders = new_ops.iter().filter(|o| embedded(o) > 0).count();
    println!(
        "after the edit, embedded per operation: {:?}",
        new_ops.iter().map(|o| (o["door"].clone(), embedded(o))).collect::<Vec<_>>()
    );
    assert!(embedded_after_edit >= 1, "the edit was never embedded: {new_ops:?}");
    assert_eq!(embedders, 1, "more than one door embedded the same edit: {new_ops:?}");
    // Only the changed file's new chunks, not a pass over the project.
    assert!(embedded_after_edit <= 6, "an edit of one file embedded {embedded_after_edit} chunks");

    let query = "compare a quota with the forecast";
    let expected = "pkg/quota_7.py:";
    for (door, top) in
        [("cli", cli_top(&root, query)), ("mcp", mcp_top(&mut mcp, query)), ("lsp", lsp_top(&mut lsp, query))]
    {
        assert!(top.starts_with(expected), "{door} answered {top}");
    }

    assert_eq!(lsp.shutdown_and_exit(), 0);
    mcp.close();
}
