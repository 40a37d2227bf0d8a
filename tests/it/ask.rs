//! `raggrep ask` end to end on the real model: the router's exact answers, the fallback to
//! retrieval, the prompt and its budget, where the LLM settings come from, and what happens when
//! no LLM answers. The answer from a real LLM server (llama.cpp's) is tested by
//! `tests/ask/run.sh`.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use crate::fixture;

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/polyglot");

struct Workspace {
    dir: tempfile::TempDir,
    /// The user's config directory (`XDG_CONFIG_HOME`), private to the test.
    config: tempfile::TempDir,
}

impl Workspace {
    fn polyglot() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        fixture::copy_dir(Path::new(FIXTURE), dir.path());
        let workspace = Workspace { dir, config: tempfile::tempdir().unwrap() };
        workspace.run(&[], &["index", "."]);
        workspace
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `raggrep ARGS` with `env` set; the developer's own LLM settings never leak in.
    fn run(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_raggrep"));
        command
            .args(args)
            .current_dir(self.root())
            .stdin(Stdio::null())
            .env("XDG_CONFIG_HOME", self.config.path())
            .env_remove("RAGGREP_LLM_URL")
            .env_remove("RAGGREP_LLM_MODEL")
            .env_remove("RAGGREP_LLM_API_KEY");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().unwrap()
    }

    fn ask_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["ask", "--json"];
        all.extend_from_slice(args);
        let out = self.run(&[], &all);
        assert!(out.status.success(), "raggrep {all:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

/// A loopback URL where nothing listens.
fn closed_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

fn locations(answer: &Value) -> Vec<String> {
    answer["sources"].as_array().unwrap().iter().map(|s| s["location"].as_str().unwrap().to_string()).collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn structural_questions_are_answered_exactly_without_an_llm() {
    let ws = Workspace::polyglot();
    // No server anywhere: exact answers never need one.
    let dead = closed_url();

    let outline = ws.ask_json(&["list the functions in src/auth.py", "--llm-url", &dead]);
    assert_eq!(outline["route"], "outline");
    assert_eq!(outline["target"], "src/auth.py");
    assert_eq!(locations(&outline), ["src/auth.py:10-11", "src/auth.py:13-16", "src/auth.py:19-25"]);
    assert!(outline["answer"].as_str().unwrap().contains("function validate_token"), "{outline}");
    assert!(outline.get("model").is_none() && outline.get("prompt").is_none());

    let classes = ws.ask_json(&["what classes are in lib/Cache.java?"]);
    assert_eq!(locations(&classes), ["lib/Cache.java:7-19"]);

    let out = ws.run(&[], &["ask", "where is `validate_token` defined?", "--llm-url", &dead]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("`validate_token` is defined in 1 place"), "{text}");
    assert!(text.contains("src/auth.py:19-25  function validate_token"), "{text}");
    assert!(stderr(&out).contains("route: definition of validate_token (exact"), "{}", stderr(&out));

    let members = ws.ask_json(&["what does `TokenStore` contain?"]);
    assert_eq!(members["route"], "members");
    assert_eq!(locations(&members), ["src/auth.py:7-16", "src/auth.py:10-11", "src/auth.py:13-16"]);
    assert!(members["answer"].as_str().unwrap().contains("TokenStore.issue"), "{members}");

    // Members too small to outline (fields): the definition itself is the answer.
    ws.write("src/point.rs", "pub struct Point {\n    pub x: f64,\n    pub y: f64,\n}\n");
    ws.run(&[], &["index", "."]);
    let point = ws.ask_json(&["what fields does Point have"]);
    assert_eq!(point["route"], "members");
    assert!(point["answer"].as_str().unwrap().contains("pub y: f64"), "{point}");

    // A file without definitions of that kind is an exact "none", not a guess.
    let none = ws.ask_json(&["list the classes in svc/server.go"]);
    assert_eq!(none["route"], "outline");
    assert!(none["answer"].as_str().unwrap().starts_with("svc/server.go has no classes"), "{none}");
}

#[test]
fn a_structural_question_that_finds_nothing_falls_back_to_retrieval() {
    let ws = Workspace::polyglot();
    let cases = [
        ("where is `no_such_function` defined?", "no definition named `no_such_function`"),
        ("list the functions in src/missing.py", "no file src/missing.py in the workspace"),
        // Paths that leave the workspace are not found, never read.
        ("list the functions in ../../etc/passwd.py", "no file"),
        ("list the functions in /etc/os-release", "no file"),
        ("list the functions in docs/notes.txt", "no file"),
    ];
    for (question, why) in cases {
        let answer = ws.ask_json(&[question, "--prompt"]);
        assert_eq!(answer["route"], "retrieval", "{question}");
        assert!(answer["fallback"].as_str().unwrap().contains(why), "{question}: {answer}");
        let prompt = answer["prompt"].as_str().unwrap();
        assert!(prompt.contains(&format!("Question: {question:?}")), "{prompt}");
        assert!(!prompt.contains("root:") && !prompt.contains("ID="), "nothing from outside the root: {prompt}");
    }
    // The route is shown.
    let out = ws.run(&[], &["ask", "--prompt", "where is `no_such_function` defined?"]);
    assert!(
        stderr(&out).contains("route: definition → retrieval (no definition named `no_such_function`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_prompt_holds_the_retrieved_snippets_cited_and_within_the_budget() {
    let ws = Workspace::polyglot();
    let out = ws.run(&[], &["ask", "--prompt", "where do we check that an API token has not expired?"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let prompt = String::from_utf8_lossy(&out.stdout);
    assert!(prompt.starts_with("You are analyzing the following codebase.\n\nRelevant code snippets"), "{prompt}");
    assert!(
        prompt.contains("\nQuestion: \"where do we check that an API token has not expired?\"\nAnswer the question"),
        "{prompt}"
    );
    assert!(prompt.contains("src/auth.py:19-25\n```python\ndef validate_token(store, token):"), "{prompt}");
    assert!(prompt.contains("Answer the question based only on these snippets."), "{prompt}");
    assert_eq!(stderr(&out).trim(), "route: retrieval");

    let wide = ws.ask_json(&["--prompt", "where do we check that an API token has not expired?"]);
    let narrow = ws.ask_json(&["--prompt", "--budget", "100", "where do we check that an API token has not expired?"]);
    assert_eq!(locations(&wide)[0], "src/auth.py:19-25");
    assert!(locations(&narrow).len() < locations(&wide).len(), "{narrow}");
    assert!(!locations(&narrow).is_empty());
    for source in locations(&wide) {
        assert!(wide["prompt"].as_str().unwrap().contains(&format!("{source}\n```")), "{source} is in the prompt");
    }
    let tokens = |v: &Value| v["prompt_tokens"].as_u64().unwrap();
    assert!(tokens(&narrow) < tokens(&wide));
    // The budget bounds the code; the instructions around it are ~80 tokens.
    assert!(tokens(&narrow) <= 100 + 120, "{narrow}");

    // The retrieval's confidence comes along; a question about nothing here says so.
    assert_eq!(wide["no_confident_match"], false, "{wide}");
    let nothing = ws.ask_json(&["--prompt", "how do we render a 3d mesh with shadows?"]);
    assert_eq!(nothing["no_confident_match"], true, "{nothing}");
    assert!(nothing["confidence"].as_f64().is_some_and(|c| c < 0.3), "{nothing}");
    let out = ws.run(&[], &["ask", "--prompt", "how do we render a 3d mesh with shadows?"]);
    assert!(stderr(&out).contains("\nno confident match: "), "{}", stderr(&out));

    let out = ws.run(&[], &["ask", "--prompt", "--budget", "10", "anything"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--budget 10 is too small"), "{}", stderr(&out));
}

#[test]
fn root_and_index_dir_work_as_for_query() {
    let ws = Workspace::polyglot();
    let elsewhere = tempfile::tempdir().unwrap();
    let index_dir = elsewhere.path().join("index");
    let root = ws.root().to_str().unwrap().to_string();
    let mut command = Command::new(env!("CARGO_BIN_EXE_raggrep"));
    let out = command
        .args(["ask", "--json", "--root", &root, "--index-dir", index_dir.to_str().unwrap()])
        .arg("where is `validate_token` defined?")
        .current_dir(elsewhere.path())
        .env("XDG_CONFIG_HOME", ws.config.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(locations(&answer), ["src/auth.py:19-25"], "{answer}");
    assert!(index_dir.join("CURRENT").is_file(), "the index was built in --index-dir");
}

#[test]
fn without_a_reachable_llm_one_line_points_to_the_prompt() {
    let ws = Workspace::polyglot();
    let dead = closed_url();
    let out = ws.run(&[], &["ask", "how are tokens validated?", "--llm-url", &dead]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let last = err.lines().last().unwrap();
    assert!(last.starts_with("raggrep: no LLM server answers at http://127.0.0.1:"), "{err}");
    assert!(last.contains("connection refused") && last.contains("--prompt"), "{err}");
    assert!(out.stdout.is_empty());

    // A server that accepts and never answers: the timeout says so.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", silent.local_addr().unwrap());
    let out =
        ws.run(&[], &["ask", "how are tokens validated?", "--llm-url", &url, "--llm-model", "m", "--llm-timeout", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sent nothing for 1 s (--llm-timeout)"), "{}", stderr(&out));
    drop(silent);

    for (bad, why) in [
        ("https://api.example.com/v1", "https is not supported"),
        ("localhost:8080", "give an http:// URL"),
        ("http://user:secret@127.0.0.1:1/v1", "credentials in the URL are refused"),
    ] {
        let out = ws.run(&[], &["ask", "how?", "--llm-url", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(stderr(&out).contains(why), "{bad}: {}", stderr(&out));
        assert!(!stderr(&out).contains("secret") || bad.contains("secret") && stderr(&out).contains(bad));
    }
    for (flag, value, why) in
        [("--max-tokens", "0", "--max-tokens must be at least 1"), ("--llm-timeout", "0", "at least 1 second")]
    {
        let out = ws.run(&[], &["ask", "how?", flag, value]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
    }
}

#[test]
fn llm_settings_come_from_flags_then_environment_then_workspace_then_user_config() {
    let ws = Workspace::polyglot();
    let [user, workspace, env, flag] = [closed_url(), closed_url(), closed_url(), closed_url()];
    let failing_url = |env_vars: &[(&str, &str)], extra: &[&str]| {
        let mut args = vec!["ask", "how are tokens validated?"];
        args.extend_from_slice(extra);
        let out = ws.run(env_vars, &args);
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        let at = err.find("answers at ").unwrap_or_else(|| panic!("{err}")) + "answers at ".len();
        err[at..].split_whitespace().next().unwrap().to_string()
    };
    assert!(failing_url(&[], &[]).starts_with("http://127.0.0.1:8080/v1/"), "the default stays on this machine");

    let user_file = ws.config.path().join("raggrep/config.toml");
    fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    fs::write(&user_file, format!("[llm]\nurl = \"{user}\"\nmodel = \"m\"\n")).unwrap();
    assert!(failing_url(&[], &[]).starts_with(&user), "user config");

    ws.write(".raggrep/config.toml", &format!("enabled = true\n\n[llm]\nurl = \"{workspace}\"\n"));
    assert!(failing_url(&[], &[]).starts_with(&workspace), "workspace config wins over the user's");
    assert!(failing_url(&[("RAGGREP_LLM_URL", &env)], &[]).starts_with(&env), "environment wins over config");
    assert!(failing_url(&[("RAGGREP_LLM_URL", &env)], &["--llm-url", &flag]).starts_with(&flag), "the flag wins");

    // A mistyped setting is an error naming the file, not a question sent elsewhere.
    ws.write(".raggrep/config.toml", "[llm]\nulr = \"http://10.0.0.1/v1\"\n");
    let out = ws.run(&[], &["ask", "how?"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(".raggrep/config.toml: [llm]: unknown field `ulr`"), "{err}");
    // --prompt needs no LLM, so no LLM settings either.
    assert!(ws.run(&[], &["ask", "--prompt", "how?"]).status.success());
}

/// A loopback endpoint that records the body of each request and answers 500: what raggrep
/// sends, without an LLM.
fn recording_url() -> (String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, bodies) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = tx.send(String::from_utf8_lossy(&body).into_owned());
            let mut stream = reader.into_inner();
            let _ = stream
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno");
        }
    });
    (url, bodies)
}

#[test]
fn the_model_to_ask_for_comes_from_the_flag_then_the_environment() {
    let ws = Workspace::polyglot();
    let (url, bodies) = recording_url();
    let asked_for = |env: &[(&str, &str)], extra: &[&str]| -> String {
        let mut args = vec!["ask", "how are tokens validated?", "--llm-url", &url, "--llm-timeout", "5"];
        args.extend_from_slice(extra);
        let out = ws.run(env, &args);
        assert_eq!(out.status.code(), Some(2), "the endpoint answers 500: {}", stderr(&out));
        let body = bodies.recv_timeout(std::time::Duration::from_secs(60)).expect("no request reached the endpoint");
        let request: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        request["model"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(asked_for(&[("RAGGREP_LLM_MODEL", "from-env")], &[]), "from-env");
    assert_eq!(asked_for(&[("RAGGREP_LLM_MODEL", "from-env")], &["--llm-model", "from-flag"]), "from-flag");
}
