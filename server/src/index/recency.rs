//! Which files a repository changed most recently, from git's history: after a fresh clone
//! every file has the same mtime, but the code people work on now is what they search first,
//! so the model embeds it first.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Commits looked at.
const COMMITS: &str = "300";
/// A history that takes longer than this is not worth waiting for: file age orders instead.
const DEADLINE: Duration = Duration::from_secs(2);

/// Files of `root` changed in its last commits, by the rank of the latest commit that changed
/// them (0 = the most recent commit; files of one commit share it), as paths
/// relative to `root`. Empty when `root` is not the top of a git repository of its own (its
/// `.git` a directory inside it: nothing outside the root is read), when the clone is partial
/// (reading history could fetch from its remote), or when git is missing, fails or is slow.
pub fn recently_changed(root: &Path) -> HashMap<String, u32> {
    let git_dir = root.join(".git");
    if !git_dir.is_dir() {
        return HashMap::new();
    }
    let config = std::fs::read_to_string(git_dir.join("config")).unwrap_or_default().to_lowercase();
    if config.contains("partialclone") || config.contains("promisor") {
        return HashMap::new();
    }
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(root)
        .args([
            "log",
            "-n",
            COMMITS,
            "--name-only",
            "--format=%x01",
            "--relative",
            "--no-renames",
            "--no-show-signature",
            "-z",
        ])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_NO_LAZY_FETCH", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    // Waited for on another thread, so a slow history only costs the deadline.
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("raggrep-git-log".into()).spawn(move || {
        let _ = tx.send(command.output());
    });
    if spawned.is_err() {
        return HashMap::new();
    }
    let output = match rx.recv_timeout(DEADLINE) {
        Ok(Ok(output)) if output.status.success() => output.stdout,
        Ok(Ok(_)) | Ok(Err(_)) => return HashMap::new(),
        Err(_) => {
            tracing::info!("git history of {} took over {DEADLINE:?}; ordering by file age", root.display());
            return HashMap::new();
        }
    };
    // `\x01` starts each commit (NUL-terminated, as every name is); names after it may begin
    // with a newline.
    let mut ranks = HashMap::new();
    let mut commit = 0u32;
    for item in output.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        if item == b"\x01" {
            commit += 1;
            continue;
        }
        // Names git cannot give as UTF-8 are not in the index under that name either.
        if let Ok(name) = std::str::from_utf8(item.strip_prefix(b"\n").unwrap_or(item)) {
            ranks.entry(name.to_string()).or_insert(commit.saturating_sub(1));
        }
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn the_latest_commit_ranks_first_and_nothing_outside_the_root_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/old.py"), "a = 1\n").unwrap();
        std::fs::write(root.join("src/été.py"), "b = 1\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "first"]);
        std::fs::write(root.join("new.py"), "c = 1\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "second"]);
        let ranks = recently_changed(root);
        assert_eq!(ranks.get("new.py"), Some(&0), "{ranks:?}");
        assert_eq!((ranks["src/old.py"], ranks["src/été.py"]), (1, 1), "{ranks:?}");
        // A subdirectory of a repository is not the top of one: its history is not read.
        assert!(recently_changed(&root.join("src")).is_empty());
        // Nor is a partial clone's (reading it could fetch).
        let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
        std::fs::write(root.join(".git/config"), config + "[extensions]\n\tpartialClone = origin\n").unwrap();
        assert!(recently_changed(root).is_empty());
    }
}
