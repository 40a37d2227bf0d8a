//! History search (issue 57) through the real binary: `raggrep log` and the MCP tool
//! `search_history` on repositories made by scripted commits — a question answered by meaning,
//! paths and definitions, renames, a merged pull request, a message that is not UTF-8, new
//! commits read incrementally, a rewritten history, an empty repository, a shallow clone, a
//! directory that is no repository.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::mcp_client::Session;

const BIN: &str = env!("CARGO_BIN_EXE_raggrep");

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=Tess", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .env("GIT_AUTHOR_DATE", "2024-03-01T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-03-01T12:00:00Z")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn commit(root: &Path, message: &str) -> String {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
    git(root, &["rev-parse", "HEAD"])
}

const SESSION: &str = "class Session:\n    def send(self, request):\n        return self.adapter.send(request)\n\n    def rebuild_proxies(self, request, proxies):\n        headers = request.headers\n        return proxies\n";

/// A small project's history: a session module, a fix in one of its methods, a rename, a merged
/// pull request, and a message in Latin-1. Returns the repository and the ids by name.
fn project() -> (tempfile::TempDir, std::collections::HashMap<&'static str, String>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    let mut ids = std::collections::HashMap::new();
    write(root, "src/session.py", SESSION);
    write(root, "src/util.py", "def quote(text):\n    return text\n");
    ids.insert("add", commit(root, "Add the session module"));
    write(
        root,
        "src/session.py",
        &SESSION.replace(
            "        headers = request.headers\n",
            "        headers = request.headers\n        headers.pop('Proxy-Authorization', None)\n",
        ),
    );
    ids.insert("proxy", commit(root, "Drop the proxy credentials when a request is redirected to another host"));
    git(root, &["mv", "src/util.py", "src/helpers.py"]);
    ids.insert("rename", commit(root, "Rename util to helpers"));
    git(root, &["checkout", "-q", "-b", "retry"]);
    write(
        root,
        "src/adapters.py",
        "class HTTPAdapter:\n    def send(self, request, retries=3):\n        for attempt in range(retries):\n            pass\n",
    );
    ids.insert("retry", commit(root, "Try a request again after a ConnectionError"));
    git(root, &["checkout", "-q", "main"]);
    git(
        root,
        &[
            "merge",
            "-q",
            "--no-ff",
            "retry",
            "-m",
            "Merge pull request #12 from tess/retry\n\nRetry idempotent requests on connection errors",
        ],
    );
    ids.insert("merge", git(root, &["rev-parse", "HEAD"]));
    write(root, "README.md", "# project\n");
    let message = root.join(".git/MSG");
    std::fs::write(&message, b"Caf\xe9 README for the project\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-F", message.to_str().unwrap()]);
    ids.insert("latin1", git(root, &["rev-parse", "HEAD"]));
    (dir, ids)
}

fn log(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN).arg("log").arg("--root").arg(root).args(args).output().unwrap()
}

fn json_log(root: &Path, args: &[&str]) -> Value {
    let out = log(root, &[&["--json"], args].concat());
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

fn commits(answer: &Value) -> Vec<String> {
    answer["results"].as_array().unwrap().iter().map(|h| h["commit"].as_str().unwrap().to_string()).collect()
}

#[test]
fn log_finds_the_commit_a_question_describes_and_what_changed_where() {
    let (dir, ids) = project();
    let root = dir.path();
    // By meaning: none of the question's words but "proxy" is in the fix's message.
    let answer = json_log(root, &["proxy authorization header leaks on redirect"]);
    assert_eq!(commits(&answer)[0], ids["proxy"], "{answer}");
    assert_eq!(answer["commits"], 6, "{answer}");
    let hit = &answer["results"][0];
    assert_eq!(hit["date"], "2024-03-01");
    assert_eq!(hit["author"], "Tess");
    assert_eq!(hit["files"], json!(["src/session.py"]));
    assert_eq!(hit["symbols"], json!(["rebuild_proxies"]), "the definition its hunk changed");
    assert!(hit["score"].as_f64().unwrap() > 0.0);

    // A merged pull request answers with its title, and says it is a merge.
    let answer = json_log(root, &["retry requests when the connection fails"]);
    let merge = answer["results"].as_array().unwrap().iter().find(|h| h["commit"] == ids["merge"].as_str()).unwrap();
    assert_eq!(merge["merge"], true, "{answer}");
    assert!(merge["files"].as_array().unwrap().contains(&json!("src/adapters.py")), "a merge's change: {merge}");

    // Without a question: newest first, by path (a rename counts under both names), by definition.
    assert_eq!(commits(&json_log(root, &["--path", "src/util.py"])), [ids["rename"].clone(), ids["add"].clone()]);
    assert_eq!(commits(&json_log(root, &["--path", "src/helpers.py"]))[0], ids["rename"]);
    let absolute = root.canonicalize().unwrap().join("src/helpers.py");
    assert_eq!(commits(&json_log(root, &["--path", absolute.to_str().unwrap()]))[0], ids["rename"], "an absolute path");
    assert_eq!(commits(&json_log(root, &["--path", "src/"])).len(), 5, "every commit under src/, the merge too");
    assert_eq!(commits(&json_log(root, &["--symbol", "Session.rebuild_proxies"])), [ids["proxy"].clone()]);
    let by_date = json_log(root, &["--path", "src/", "-k", "2"]);
    assert!(by_date.get("query").is_none() && by_date["results"][0].get("score").is_none(), "{by_date}");

    // A revert is a commit of its own that touched the same definition.
    git(root, &["revert", "--no-edit", &ids["proxy"]]);
    let reverted = json_log(root, &["--symbol", "rebuild_proxies"]);
    assert_eq!(commits(&reverted).len(), 2, "{reverted}");
    assert!(reverted["results"][0]["subject"].as_str().unwrap().starts_with("Revert \"Drop the proxy"), "{reverted}");
    assert_eq!(commits(&reverted)[1], ids["proxy"]);
    let answer = json_log(root, &["undo the proxy credentials change"]);
    let top: Vec<String> = commits(&answer).into_iter().take(2).collect();
    assert!(
        top.contains(&ids["proxy"]) && top.iter().any(|c| c != &ids["proxy"]),
        "the change and its revert: {answer}"
    );
    assert!(
        answer["results"][1]["subject"].as_str().unwrap().starts_with("Revert")
            || answer["results"][0]["subject"].as_str().unwrap().starts_with("Revert"),
        "{answer}"
    );

    // A message that is not UTF-8 is read, not refused.
    let answer = json_log(root, &["--path", "README.md"]);
    assert_eq!(commits(&answer), [ids["latin1"].clone()]);
    assert!(answer["results"][0]["subject"].as_str().unwrap().starts_with("Caf"), "{answer}");

    // Human output: a block per commit; nothing found is exit 1, as grep.
    let out = log(root, &["--symbol", "rebuild_proxies"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.lines().next().unwrap_or_default().contains("  2024-03-01  Revert"), "newest first: {text}");
    assert!(text.contains(&format!("{}  2024-03-01  Drop the proxy credentials", &ids["proxy"][..12])), "{text}");
    assert!(text.contains("    src/session.py\n"), "{text}");
    assert!(text.contains("    changed: rebuild_proxies"), "{text}");
    assert_eq!(log(root, &["--symbol", "no_such_definition"]).status.code(), Some(1));
    assert_eq!(log(root, &["-k", "0", "x"]).status.code(), Some(2));
}

#[test]
fn new_commits_are_read_incrementally_and_a_rewritten_history_again() {
    let (dir, _) = project();
    let root = dir.path();
    assert_eq!(json_log(root, &["--path", "src/"])["commits"], 6);
    write(root, "src/session.py", &format!("{SESSION}\n    def close(self):\n        pass\n"));
    commit(root, "Close the session's adapters");
    // `raggrep index` (what the git hooks run) brings the history up to date too.
    let indexed = Command::new(BIN).arg("index").arg(root).output().unwrap();
    assert!(indexed.status.success(), "{indexed:?}");
    let out = log(root, &["--json", "close the session"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("new commits"), "the index run read it already: {stderr}");
    write(
        root,
        "src/session.py",
        &format!("{SESSION}\n    def close(self):\n        pass\n\n    def open(self):\n        pass\n"),
    );
    commit(root, "Open the session's adapters");
    let out = log(root, &["--json", "open the session"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("history: 1 new commits"), "{stderr}");
    assert!(!stderr.contains("read again"), "{stderr}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["commits"], 8);

    // The same question twice reads nothing new.
    let again = log(root, &["--json", "close the session"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("new commits"), "{again:?}");

    // Without its model a new commit answers by its words, and the stored vectors stay: the next
    // question with the model embeds only that commit, it does not read the history again.
    write(
        root,
        "src/session.py",
        &format!(
            "{SESSION}\n    def close(self):\n        pass\n\n    def open(self):\n        pass\n\n    def flush(self):\n        pass\n"
        ),
    );
    commit(root, "Flush the session's adapters");
    let out = Command::new(BIN)
        .args(["--model", "/nonexistent", "log", "--json", "--root"])
        .arg(root)
        .arg("flush the adapters")
        .output()
        .unwrap();
    let words: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(words["degraded"].as_str().is_some_and(|d| d.contains("words only")), "{words}");
    assert_eq!(words["results"][0]["subject"], "Flush the session's adapters", "{words}");
    let out = log(root, &["--json", "flush the adapters"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("history: 1 new commits") && !stderr.contains("read again"), "{stderr}");
    git(root, &["reset", "-q", "--hard", "HEAD~1"]);

    git(root, &["commit", "-q", "--amend", "-m", "Close every adapter of a session"]);
    let out = log(root, &["--json", "close the adapters"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("read again: the history was rewritten"), "{stderr}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["commits"], 8);
    let subjects: Vec<&str> =
        answer["results"].as_array().unwrap().iter().map(|h| h["subject"].as_str().unwrap()).collect();
    assert!(subjects.contains(&"Close every adapter of a session"), "the amended commit: {answer}");
    assert!(!subjects.contains(&"Open the session's adapters"), "the commit it replaced is gone: {answer}");
}

#[test]
fn empty_shallow_and_missing_repositories_say_what_is_missing() {
    // No commits yet: nothing to answer, and no error.
    let empty = tempfile::tempdir().unwrap();
    git(empty.path(), &["init", "-q"]);
    let answer = json_log(empty.path(), &["anything"]);
    assert_eq!(answer["commits"], 0);
    assert_eq!(log(empty.path(), &["anything"]).status.code(), Some(1));

    // A shallow clone: what it has, and that the rest is missing.
    let (dir, ids) = project();
    let shallow = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().display());
    let out =
        Command::new("git").args(["clone", "-q", "--depth", "1", &url]).arg(shallow.path().join("c")).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let clone = shallow.path().join("c");
    let out = log(&clone, &["--json", "README"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("shallow clone"), "{out:?}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["shallow"], true);
    assert_eq!(answer["commits"], 1);
    assert_eq!(commits(&answer), [ids["latin1"].clone()]);

    // Not a repository: one line saying so, exit 2.
    let plain = tempfile::tempdir().unwrap();
    let out = log(plain.path(), &["anything"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not in a git repository"), "{out:?}");
}

#[test]
fn mcp_search_history_answers_within_its_budget() {
    let (dir, ids) = project();
    let mut session = Session::start(BIN, dir.path());
    session.initialize();
    let answer = session.structured("search_history", json!({ "query": "proxy credentials on redirect", "k": 3 }));
    assert_eq!(answer["results"][0]["commit"], ids["proxy"].as_str(), "{answer}");
    assert!(answer["results"].as_array().unwrap().len() <= 3);
    let by_symbol = session.structured("search_history", json!({ "symbol": "rebuild_proxies" }));
    assert_eq!(by_symbol["results"].as_array().unwrap().len(), 1, "{by_symbol}");
    let tight = session.structured("search_history", json!({ "path": "src/", "max_tokens": 150 }));
    assert!(tight["results"].as_array().unwrap().len() < 5, "the budget leaves commits out: {tight}");
    let refused = session.call("search_history", json!({ "path": "../elsewhere" }));
    assert_eq!(refused["isError"], true, "{refused}");
    session.close();
}

#[test]
fn the_language_server_answers_a_functions_history() {
    use crate::lsp_client::Client;
    let (dir, ids) = project();
    let root = dir.path().canonicalize().unwrap();
    let uri = |p: &Path| format!("file://{}", p.display());
    let mut client = Client::start(BIN, &root);
    let init = client.request(
        "initialize",
        json!({"processId": null, "rootUri": uri(&root), "workspaceFolders": [{"uri": uri(&root), "name": "p"}], "capabilities": {}}),
    );
    let commands = init["capabilities"]["executeCommandProvider"]["commands"].as_array().unwrap();
    assert!(commands.contains(&json!("raggrep.history")), "{init}");
    client.notify("initialized", json!({}));
    let file = uri(&root.join("src/session.py"));
    // The line of `headers = request.headers` (0-based, as LSP counts): inside rebuild_proxies.
    let line = SESSION.lines().position(|l| l.contains("headers = request.headers")).unwrap();
    let answer = client.command("raggrep.history", json!({"uri": file, "line": line}));
    assert_eq!(commits(&answer), [ids["proxy"].clone()], "the commits that changed that method: {answer}");
    // The file without a line: every commit that changed it, newest first.
    let answer = client.command("raggrep.history", json!({"uri": file}));
    assert_eq!(commits(&answer), [ids["proxy"].clone(), ids["add"].clone()], "{answer}");
    // A path (relative to the root) and a definition, given as arguments.
    let answer = client.command("raggrep.history", json!({"path": "src/util.py"}));
    assert_eq!(commits(&answer), [ids["rename"].clone(), ids["add"].clone()], "{answer}");
    let answer = client.command("raggrep.history", json!({"symbol": "rebuild_proxies"}));
    assert_eq!(commits(&answer), [ids["proxy"].clone()], "{answer}");
    // A question over the whole workspace.
    let answer = client.command("raggrep.history", json!({"query": "retry on connection errors", "k": 2}));
    assert!(commits(&answer).contains(&ids["retry"]) || commits(&answer).contains(&ids["merge"]), "{answer}");
    assert_eq!(client.shutdown_and_exit(), 0);
}

#[test]
fn log_reads_this_repositorys_own_history() {
    // A real history: the checkout the tests run in (CI's is a fresh clone). The index goes to a
    // temporary directory, not into the checkout.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let index = tempfile::tempdir().unwrap();
    let ask = |args: &[&str]| -> Value {
        let out = Command::new(BIN)
            .args(["log", "--json", "--root"])
            .arg(repo)
            .arg("--index-dir")
            .arg(index.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let answer = ask(&["-k", "5", "move the training laboratory out of the product tree"]);
    assert!(answer["commits"].as_u64().unwrap() >= 1, "{answer}");
    if answer["shallow"] == true {
        // A shallow clone answers from the commits it has; the rest is said to be missing.
        return;
    }
    let subjects: Vec<&str> =
        answer["results"].as_array().unwrap().iter().map(|h| h["subject"].as_str().unwrap()).collect();
    assert!(
        subjects.iter().any(|s| s.starts_with("Models as release assets")),
        "the commit that moved the lab, asked in other words: {subjects:?}"
    );
    let under = ask(&["-k", "3", "--path", "server/src/history/"]);
    for hit in under["results"].as_array().unwrap() {
        // The paths asked about come first among a commit's listed paths.
        assert!(hit["files"][0].as_str().unwrap().starts_with("server/src/history/"), "{hit}");
    }
    assert!(!under["results"].as_array().unwrap().is_empty(), "{under}");
}
