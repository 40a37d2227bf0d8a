//! The MCP server end to end at the wire level: the real binary and model, newline-delimited
//! JSON-RPC over stdio (initialize, tools/list, tools/call). The official Python SDK drives it
//! more thoroughly in `tests/mcp/run.sh`; this keeps `cargo test` covering the basics.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "support/fixture.rs"]
mod fixture;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/polyglot");

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Session {
    fn start(root: &Path) -> Session {
        let mut child = Command::new(env!("CARGO_BIN_EXE_raggrep"))
            .arg("mcp")
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Session { child, stdin, lines, next_id: 1 }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its response (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no answer to {method}"));
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method} failed: {message}");
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({ "name": tool, "arguments": arguments }))
    }
}

#[test]
fn mcp_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("polyglot");
    fixture::copy_dir(Path::new(FIXTURE), &root);
    let mut session = Session::start(&root);

    let init = session.request(
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "raggrep-test", "version": "0" },
        }),
    );
    assert_eq!(init["serverInfo"]["name"], "raggrep", "{init}");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    session.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));

    let tools = session.request("tools/list", json!({}));
    let tools = tools["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["context", "find_similar", "find_symbol", "outline", "reindex", "search", "status"]);
    for tool in tools {
        assert!(!tool["description"].as_str().unwrap_or_default().is_empty(), "{tool}");
        for (name, property) in tool["inputSchema"]["properties"].as_object().into_iter().flatten() {
            assert!(property["description"].is_string(), "{}.{name} is not documented", tool["name"]);
        }
    }

    // Indexing runs in the background: lexical search answers as soon as the files are chunked.
    let deadline = Instant::now() + Duration::from_secs(60);
    let result = loop {
        let result = session.call("search", json!({ "query": "validate_token", "mode": "lexical", "k": 3 }));
        assert_ne!(result["isError"], true, "{result}");
        let hits = result["structuredContent"]["results"].as_array().cloned().unwrap_or_default();
        if hits.iter().any(|h| h["location"].as_str().unwrap_or_default().starts_with("src/auth.py:")) {
            break result;
        }
        assert!(Instant::now() < deadline, "validate_token never found: {result}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let first = &result["structuredContent"]["results"][0];
    assert_eq!(first["symbol"], "validate_token", "{result}");
    assert_eq!(first["stale"], false, "{result}");

    // A path escaping the root is a tool error, not a protocol error and not an empty answer.
    let refused = session.call("outline", json!({ "path": "../outside.py" }));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused["content"][0]["text"].as_str().unwrap().contains(".."), "{refused}");

    // Closing stdin ends the session cleanly.
    drop(session.stdin.take());
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = session.child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(Instant::now() < deadline, "the server did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    }
}
