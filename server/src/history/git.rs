//! Reading a repository's history with the `git` binary: per commit its id, parents, author
//! date, author, message, the paths it changed (renames with their old path) and the
//! definitions its hunks touched, as git's hunk headers name them. One `git log -p -U0`
//! streamed and parsed line by line: nothing is held but the commits themselves.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::HistoryError;

/// One commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    pub id: String,
    pub parents: Vec<String>,
    /// Author date, seconds since the epoch.
    pub time: i64,
    pub author: String,
    pub subject: String,
    pub body: String,
    pub files: Vec<FileChange>,
    /// Definitions whose lines the commit changed (git's hunk headers), first seen first.
    pub symbols: Vec<String>,
}

/// A path a commit changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    pub path: String,
    pub status: Status,
    /// A renamed file's path before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Added,
    Modified,
    Deleted,
    Renamed,
}

impl Commit {
    pub fn is_merge(&self) -> bool {
        self.parents.len() > 1
    }
}

/// Which of git's built-in diff drivers reads which files: written beside the history index and
/// named as the attributes file of every `git log` it runs.
pub const ATTRIBUTES: &str = "\
*.py diff=python
*.pyi diff=python
*.rs diff=rust
*.go diff=golang
*.java diff=java
*.kt diff=kotlin
*.kts diff=kotlin
*.c diff=cpp
*.h diff=cpp
*.cc diff=cpp
*.cpp diff=cpp
*.cxx diff=cpp
*.hpp diff=cpp
*.hh diff=cpp
*.cs diff=csharp
*.rb diff=ruby
*.php diff=php
*.ex diff=elixir
*.exs diff=elixir
*.m diff=objc
*.mm diff=objc
*.sh diff=bash
*.bash diff=bash
*.pl diff=perl
*.pm diff=perl
*.md diff=markdown
*.css diff=css
*.html diff=html
";

/// Most definitions kept per commit: a sweeping change names hundreds, and they say little.
const MAX_SYMBOLS: usize = 40;
/// Most paths kept per commit (the count beyond is kept as "and N more" by the reader).
const MAX_FILES: usize = 200;

/// Separators of `--format`: a record per commit, fields inside it.
const RECORD: char = '\u{1e}';
const FIELD: char = '\u{1f}';

/// The commits of `range` (`HEAD`, or `OLD..HEAD`), newest first as `git log` lists them.
/// `inside`: the root is a directory inside its repository: only commits that changed it, with
/// paths relative to it, as the index has them.
pub fn log(root: &Path, range: &str, inside: bool, attributes: &Path) -> Result<Vec<Commit>, HistoryError> {
    let mut command = git(root);
    // git's own function-header patterns per language (its built-in diff drivers), so a hunk
    // header names the method it is in, not the file's first unindented line; the repository's
    // own .gitattributes still win.
    command.arg("-c").arg(format!("core.attributesFile={}", attributes.display()));
    command
        .args(["log", "-p", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "-M"])
        // A merge's change is what it brought to its first parent: a merged pull request's work.
        .arg("--diff-merges=first-parent")
        .arg(format!("--format={RECORD}%H{FIELD}%P{FIELD}%at{FIELD}%an{FIELD}%B{FIELD}"));
    if inside {
        // Every commit that touched the directory, merges kept (no history simplification).
        command.args(["--relative", "--full-history"]);
    }
    command.arg(range).arg("--");
    if inside {
        command.arg(".");
    }
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(HistoryError::NoGit)?;
    let stdout = child.stdout.take().ok_or_else(|| HistoryError::Git("no output from git log".into()))?;
    let commits = parse(BufReader::new(stdout))?;
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    let status = child.wait().map_err(HistoryError::NoGit)?;
    if !status.success() {
        return Err(HistoryError::Git(first_line(&stderr)));
    }
    Ok(commits)
}

/// `git -C root` with settings that keep its output plain: paths unquoted, no pager, no
/// replacement objects.
pub fn git(root: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(root)
        .args(["-c", "core.quotePath=false", "-c", "log.showSignature=false"])
        .env("GIT_PAGER", "cat")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .stdin(Stdio::null());
    command
}

/// One line of `git`'s own words for an error.
pub fn first_line(stderr: &str) -> String {
    stderr.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("git failed").to_string()
}

/// Parses `git log -p -U0` output in the format [`log`] asks for. Bytes that are not UTF-8 (a
/// message in another encoding, a binary line) are read lossily, never refused.
pub fn parse(mut input: impl BufRead) -> Result<Vec<Commit>, HistoryError> {
    let mut commits: Vec<Commit> = Vec::new();
    let mut header = String::new();
    let mut in_header = false;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        if input.read_until(b'\n', &mut raw).map_err(|e| HistoryError::Git(format!("reading git log: {e}")))? == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&raw);
        let line = line.strip_suffix('\n').unwrap_or(&line);
        if let Some(rest) = line.strip_prefix(RECORD) {
            header.clear();
            header.push_str(rest);
            in_header = true;
        } else if in_header {
            header.push('\n');
            header.push_str(line);
        } else if let Some(commit) = commits.last_mut() {
            patch_line(commit, line);
            continue;
        }
        // The header ends at its fifth field separator (the message may hold newlines).
        if in_header && header.matches(FIELD).count() >= 5 {
            in_header = false;
            commits.push(commit_of(&header));
        }
    }
    Ok(commits)
}

fn commit_of(header: &str) -> Commit {
    let mut fields = header.splitn(6, FIELD);
    let mut next = || fields.next().unwrap_or_default();
    let (id, parents, time, author, message) = (next(), next(), next(), next(), next());
    let message = message.trim();
    let (subject, body) = match message.split_once('\n') {
        Some((subject, body)) => (subject.trim(), body.trim()),
        None => (message, ""),
    };
    Commit {
        id: id.trim().to_string(),
        parents: parents.split_whitespace().map(str::to_string).collect(),
        time: time.trim().parse().unwrap_or(0),
        author: author.trim().to_string(),
        subject: subject.to_string(),
        body: body.to_string(),
        files: Vec::new(),
        symbols: Vec::new(),
    }
}

/// One line of a commit's patch: a file header, a rename, a hunk header; the changed lines
/// themselves are passed over.
fn patch_line(commit: &mut Commit, line: &str) {
    if let Some(paths) = line.strip_prefix("diff --git ") {
        if commit.files.len() < MAX_FILES {
            let path = diff_path(paths);
            commit.files.push(FileChange { path, status: Status::Modified, from: None });
        }
    } else if line.starts_with("new file mode") {
        set_status(commit, Status::Added);
    } else if line.starts_with("deleted file mode") {
        set_status(commit, Status::Deleted);
    } else if let Some(from) = line.strip_prefix("rename from ") {
        if let Some(file) = commit.files.last_mut() {
            file.status = Status::Renamed;
            file.from = Some(unquote(from));
        }
    } else if let Some(to) = line.strip_prefix("rename to ") {
        if let Some(file) = commit.files.last_mut() {
            file.path = unquote(to);
        }
    } else if let Some(rest) = line.strip_prefix("@@ ") {
        // `@@ -a,b +c,d @@ context`: the context is the definition git found above the hunk.
        let context = rest.split_once(" @@").map(|(_, context)| context.trim()).unwrap_or_default();
        if let Some(symbol) = symbol_of(context)
            && commit.symbols.len() < MAX_SYMBOLS
            && !commit.symbols.contains(&symbol)
        {
            commit.symbols.push(symbol);
        }
    }
}

fn set_status(commit: &mut Commit, status: Status) {
    if let Some(file) = commit.files.last_mut() {
        file.status = status;
    }
}

/// The path of `a/P b/P` (the same path twice unless renamed; a rename's new path comes with
/// its own line).
fn diff_path(paths: &str) -> String {
    if paths.starts_with('"') {
        // Quoted (control characters): the second quoted path.
        return paths.rsplit_once(" \"").map(|(_, b)| unquote(&format!("\"{b}"))).unwrap_or_default();
    }
    // "a/" + P + " b/" + P: P is half of what remains.
    let body = paths.strip_prefix("a/").unwrap_or(paths);
    let half = body.len().saturating_sub(3) / 2;
    match body.get(..half) {
        Some(path) if body.get(half..half + 3) == Some(" b/") => path.to_string(),
        _ => body.rsplit_once(" b/").map(|(_, b)| b.to_string()).unwrap_or_else(|| body.to_string()),
    }
}

/// A path git quoted (`"a\tb"`), as far as it matters for reading it; plain ones as they are.
fn unquote(text: &str) -> String {
    let text = text.trim();
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else { return text.to_string() };
    let inner = inner.strip_prefix("b/").or_else(|| inner.strip_prefix("a/")).unwrap_or(inner);
    inner.replace("\\t", "\t").replace("\\n", "\n").replace("\\\"", "\"").replace("\\\\", "\\")
}

/// Keywords after which a definition's name follows, across common languages.
const DEFINING: &[&str] = &[
    "def",
    "fn",
    "func",
    "function",
    "class",
    "struct",
    "enum",
    "trait",
    "impl",
    "interface",
    "module",
    "defmodule",
    "defp",
    "type",
    "sub",
    "object",
    "protocol",
    "extension",
    "record",
    "namespace",
    "macro_rules",
];

/// The definition a hunk header names (`def resolve_redirects(self, resp)` → `resolve_redirects`,
/// `impl Shard {` → `Shard`, `int parse(char *s)` → `parse`), if any.
pub fn symbol_of(context: &str) -> Option<String> {
    let words = identifiers(context);
    for (i, &(word, paren)) in words.iter().enumerate() {
        if DEFINING.contains(&word) && paren {
            // `func (s *Server) ServeHTTP(…)`: past the receiver, the name a `(` follows.
            return words[i + 1..].iter().find(|&&(_, paren)| paren).map(|&(name, _)| name.to_string());
        }
        if DEFINING.contains(&word) {
            let name = words.get(i + 1).map(|&(name, _)| name)?;
            // `impl Trait for Type`: the type.
            if word == "impl" && words.get(i + 2).is_some_and(|&(w, _)| w == "for") {
                return words.get(i + 3).map(|&(name, _)| name.to_string());
            }
            return Some(name.to_string());
        }
    }
    // C-like: the identifier right before the first `(`.
    words.iter().find(|&&(_, followed_by_paren)| followed_by_paren).map(|&(name, _)| name.to_string())
}

/// The identifiers of `text` (letters, digits, `_`, `$`; `::`/`.` paths kept whole), each with
/// whether a `(` follows it.
fn identifiers(text: &str) -> Vec<(&str, bool)> {
    let is_part = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut out = Vec::new();
    let mut start = None;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (n, &(i, c)) in chars.iter().enumerate() {
        // `a::b` and `a.b` join into one name.
        let joins = (c == ':' || c == '.')
            && start.is_some()
            && chars.get(n + 1).is_some_and(|&(_, next)| is_part(next) || next == ':');
        if is_part(c) || joins {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            let word = text[s..i].trim_end_matches([':', '.']);
            if word.starts_with(|ch: char| ch.is_alphabetic() || ch == '_' || ch == '$') {
                out.push((word, text[i..].trim_start().starts_with('(')));
            }
        }
    }
    if let Some(s) = start {
        let word = text[s..].trim_end_matches([':', '.']);
        if word.starts_with(|ch: char| ch.is_alphabetic() || ch == '_' || ch == '$') {
            out.push((word, false));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers_name_definitions() {
        assert_eq!(symbol_of("def resolve_redirects(self, resp, req):").as_deref(), Some("resolve_redirects"));
        assert_eq!(symbol_of("class Session(SessionRedirectMixin):").as_deref(), Some("Session"));
        assert_eq!(symbol_of("impl Display for Shard {").as_deref(), Some("Shard"));
        assert_eq!(symbol_of("pub(crate) fn open(path: &Path) -> Result<Shard> {").as_deref(), Some("open"));
        assert_eq!(symbol_of("static int parse_header(char *s, size_t n)").as_deref(), Some("parse_header"));
        assert_eq!(symbol_of("func (s *Server) ServeHTTP(w http.ResponseWriter) {").as_deref(), Some("ServeHTTP"));
        assert_eq!(symbol_of("module Rack::Builder").as_deref(), Some("Rack::Builder"));
        assert_eq!(symbol_of(""), None);
        assert_eq!(symbol_of("    x = 1"), None);
    }

    #[test]
    fn a_log_with_renames_merges_and_other_encodings_parses() {
        let log = format!(
            "{RECORD}aaa{FIELD}p1 p2{FIELD}1700000000{FIELD}Ann{FIELD}Merge pull request #7 from x/y\n\nFix proxy auth on redirect\n{FIELD}\n\
             diff --git a/src/sessions.py b/src/sessions.py\n\
             --- a/src/sessions.py\n+++ b/src/sessions.py\n\
             @@ -10 +10 @@ def rebuild_proxies(self, prepared_request, proxies):\n-    x\n+    y\n\
             diff --git a/old name.py b/new name.py\nsimilarity index 90%\nrename from old name.py\nrename to new name.py\n\
             {RECORD}bbb{FIELD}p0{FIELD}1600000000{FIELD}Bo{FIELD}Add it\n{FIELD}\n\
             diff --git a/a.rs b/a.rs\nnew file mode 100644\n--- /dev/null\n+++ b/a.rs\n@@ -0,0 +1,2 @@\n+fn a() {{}}\n"
        );
        let mut bytes = log.into_bytes();
        bytes.extend_from_slice(b"+caf\xe9\n");
        let commits = parse(std::io::Cursor::new(bytes)).map_err(|e| e.to_string());
        let commits = commits.unwrap_or_default();
        assert_eq!(commits.len(), 2);
        let merge = &commits[0];
        assert!(merge.is_merge());
        assert_eq!(merge.subject, "Merge pull request #7 from x/y");
        assert_eq!(merge.body, "Fix proxy auth on redirect");
        assert_eq!(merge.symbols, ["rebuild_proxies"]);
        assert_eq!(merge.files[0], FileChange { path: "src/sessions.py".into(), status: Status::Modified, from: None });
        assert_eq!(
            merge.files[1],
            FileChange { path: "new name.py".into(), status: Status::Renamed, from: Some("old name.py".into()) }
        );
        assert_eq!(commits[1].files[0].status, Status::Added);
        assert_eq!(commits[1].time, 1_600_000_000);
    }
}
