//! A JSON-RPC client for `raggrep lsp` over stdio, shared by the LSP tests and benchmarks: it
//! frames messages properly (headers, then exactly Content-Length bytes), answers the server's
//! own requests, and lets callers wait on notifications instead of sleeping.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const TIMEOUT: Duration = Duration::from_secs(120);

pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Reads the server's stdout on a thread: framed JSON-RPC messages, one per channel item, in
/// order. The channel closes when the server closes its output.
pub fn read_messages(stdout: std::process::ChildStdout) -> Receiver<Value> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut length = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("Content-Length: ") {
                    length = v.parse::<usize>().ok();
                }
            }
            let mut body = vec![0; length.expect("Content-Length header")];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            let value: Value = serde_json::from_slice(&body).expect("valid JSON from the server");
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    rx
}

pub struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
    /// Notifications seen so far, in order.
    pub notifications: Vec<Value>,
    /// How to answer `window/showMessageRequest`.
    pub consent: &'static str,
    exited: bool,
}

impl Client {
    /// The server's process id (benchmarks read its memory use from /proc).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn start(binary: &str, cwd: &Path) -> Client {
        Client::start_with_env(binary, cwd, &[])
    }

    /// [`Client::start`] with these environment variables set for the server.
    pub fn start_with_env(binary: &str, cwd: &Path, env: &[(&str, &str)]) -> Client {
        let mut child = Command::new(binary)
            .args(["lsp"])
            .envs(env.iter().copied())
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let rx = read_messages(stdout);
        Client { child, stdin, incoming: rx, next_id: 1, notifications: Vec::new(), consent: "Index", exited: false }
    }

    pub fn send(&mut self, message: &Value) {
        let body = serde_json::to_string(message).unwrap();
        self.send_raw(&body);
    }

    pub fn send_raw(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body).unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Handles one incoming message that is not the response we wait for.
    pub fn handle(&mut self, message: Value) {
        if let (Some(id), Some(method)) = (message.get("id"), message.get("method").and_then(|m| m.as_str())) {
            // A request from the server.
            let result = match method {
                "window/showMessageRequest" => json!({"title": self.consent}),
                _ => Value::Null,
            };
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
            self.notifications.push(message.clone());
            self.send(&reply);
        } else if message.get("method").is_some() {
            self.notifications.push(message);
        }
    }

    pub fn recv(&mut self, deadline: Instant) -> Value {
        match self.incoming.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("timed out; notifications so far: {:#?}", self.notifications),
            Err(RecvTimeoutError::Disconnected) => panic!("server closed its output"),
        }
    }

    /// Sends a request and returns the whole response (`result` or `error`).
    pub fn request_full(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let message = self.recv(deadline);
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            self.handle(message);
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let response = self.request_full(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    pub fn command(&mut self, command: &str, arguments: Value) -> Value {
        self.request("workspace/executeCommand", json!({"command": command, "arguments": [arguments]}))
    }

    /// Waits until a notification matching `pred` has arrived (already or from now on).
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self.notifications.iter().find(|n| pred(n)) {
            return found.clone();
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let message = self.recv(deadline);
            let matched = pred(&message);
            self.handle(message.clone());
            if matched {
                return message;
            }
            assert!(Instant::now() < deadline, "waiting for {what}");
        }
    }

    /// Waits for the next `raggrep/indexUpdated` of `root` after the ones already seen.
    pub fn wait_index_updated(&mut self, root: &Path) -> Value {
        let root = root.canonicalize().unwrap().display().to_string();
        let seen = self.notifications.len();
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(found) = self.notifications[seen..]
                .iter()
                .find(|n| n["method"] == "raggrep/indexUpdated" && n["params"]["root"] == root.as_str())
            {
                return found.clone();
            }
            let message = self.recv(deadline);
            self.handle(message);
        }
    }

    pub fn shutdown_and_exit(&mut self) -> i32 {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        self.exited = true;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "server did not exit");
            // Keep answering the server's own requests, as an editor does: a handler still
            // waiting on one (a consent question sent just before shutdown) holds up `exit`.
            while let Ok(message) = self.incoming.try_recv() {
                self.handle(message);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // Also after a failed shutdown_and_exit: a server left running would hold the test
        // harness's output pipes open (and its memory) after the test.
        if !self.exited || matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
