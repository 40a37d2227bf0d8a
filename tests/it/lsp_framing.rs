//! Defect 4 of issue 12: one wrong Content-Length must not leave the language server deaf. The
//! real binary over stdio, fed raw bytes (the shared client in `support/lsp_client.rs` always
//! frames correctly, which is exactly what this test must not do; its reader is shared).

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::lsp_client;

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Generous for a loaded machine, short enough that a deaf server fails the test instead of
/// hanging it.
const TIMEOUT: Duration = Duration::from_secs(60);

struct Server {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    /// Everything received so far, for assertion messages and parse-error counting.
    seen: Vec<Value>,
}

impl Server {
    fn start(cwd: &std::path::Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_raggrep"))
            .arg("lsp")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let incoming = lsp_client::read_messages(stdout);
        Server { child, stdin, incoming, seen: Vec::new() }
    }

    /// Writes `body` under a Content-Length that is off by `error` bytes.
    fn send_misframed(&mut self, body: &Value, error: isize) {
        let body = serde_json::to_string(body).unwrap();
        let declared = body.len().checked_add_signed(error).unwrap();
        write!(self.stdin, "Content-Length: {declared}\r\n\r\n{body}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, body: &Value) {
        self.send_misframed(body, 0);
    }

    /// Waits for the response to request `id`, answering nothing and keeping everything else.
    fn response(&mut self, id: i64) -> Value {
        let answers = |m: &Value| m.get("id") == Some(&json!(id)) && m.get("method").is_none();
        if let Some(found) = self.seen.iter().find(|m| answers(m)) {
            return found.clone();
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.incoming.recv_timeout(left).unwrap_or_else(|err| {
                panic!("no response to request {id} ({err}); the server went deaf. Received: {:#?}", self.seen)
            });
            self.handle(message.clone());
            if answers(&message) {
                return message;
            }
        }
    }

    /// Keeps a message, answering it if it is a request from the server (progress tokens,
    /// consent): the server does not exit while one of its handlers waits on the client.
    fn handle(&mut self, message: Value) {
        if let (Some(id), Some(_)) = (message.get("id"), message.get("method")) {
            self.send(&json!({"jsonrpc": "2.0", "id": id, "result": null}));
        }
        self.seen.push(message);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn wrong_content_length_does_not_make_the_server_deaf() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path());
    server.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": null, "capabilities": {}}}),
    );
    let init = server.response(1);
    assert!(init.get("result").is_some(), "{init}");
    server.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));

    // Too short: the body is cut 10 bytes early and those bytes precede the next header.
    server.send_misframed(&json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown-not-really", "params": null}), -10);
    // Too long: the body swallows the first 10 bytes of the next message's header.
    server.send_misframed(&json!({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}}), 10);
    server.send(&json!({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}}));
    // Valid requests after the damage are answered.
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/symbol", "params": {"query": "x"}}));
    server.response(3);
    server.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown", "params": null}));
    let shutdown = server.response(4);
    assert!(shutdown.get("error").is_none(), "{shutdown}");

    // The cut-short message is answered with a parse error (it cannot carry its id).
    let parse_errors = server.seen.iter().filter(|m| m["error"]["code"] == -32700).count();
    assert_eq!(parse_errors, 1, "{:#?}", server.seen);

    server.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "server did not exit; received: {:#?}", server.seen);
        while let Ok(message) = server.incoming.try_recv() {
            server.handle(message);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_too_long_request_is_still_answered_when_the_next_message_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Server::start(dir.path());
    server.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": null, "capabilities": {}}}),
    );
    server.response(1);
    // Declared 40 bytes longer than the body: the whole header of the next message, and part of
    // its body, land inside the declared length.
    server.send_misframed(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "workspace/symbol", "params": {"query": "a"}}),
        40,
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "workspace/symbol", "params": {"query": "b"}}));
    server.response(3);
    server.response(2);
}
