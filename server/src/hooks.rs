//! Git hooks that keep an index fresh outside the editor (issue 13, design seed 001):
//! post-commit, post-checkout and post-merge start `raggrep index` in the background, detached
//! and at low priority, so git never waits for it.
//!
//! A hook raggrep touches gets one marked block. Install appends it to a shell hook that is
//! already there (or creates the hook), uninstall removes exactly that block and deletes only a
//! file raggrep created and nobody changed since. A hook in another language is left alone.

use std::path::{Path, PathBuf};

/// The hooks after which the working tree may hold different code.
pub const HOOKS: [&str; 3] = ["post-commit", "post-checkout", "post-merge"];

const BEGIN: &str = "# >>> raggrep: keep the index fresh (`raggrep hook uninstall` removes this block) >>>";
const BEGIN_CREATED: &str =
    "# >>> raggrep: keep the index fresh (`raggrep hook uninstall` removes this block and this file) >>>";
const END: &str = "# <<< raggrep <<<";
/// The end line when install had to end the hook's last line first (uninstall takes that newline
/// back too, so the hook is restored byte for byte).
const END_JOINED: &str = "# <<< raggrep (a newline was added before this block) <<<";
const END_PREFIX: &str = "# <<< raggrep";
const SHEBANG: &str = "#!/bin/sh";

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("{0} is not in a git repository (`git rev-parse --git-path hooks` failed): {1}")]
    NotGit(PathBuf, String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What happened to one hook.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HookChange {
    pub hook: String,
    pub path: PathBuf,
    /// `created`, `added` (to an existing hook), `kept` (already there), `updated` (an older block
    /// brought up to date), `removed` (the block),
    /// `deleted` (the file raggrep had created), `absent`, or `skipped: <why>`.
    pub action: String,
}

/// The directory git runs hooks from for `root` (honours `core.hooksPath` and worktrees).
pub fn hooks_dir(root: &Path) -> Result<PathBuf, HookError> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .output()
        .map_err(|e| HookError::NotGit(root.to_path_buf(), e.to_string()))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(HookError::NotGit(root.to_path_buf(), why));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// The block a hook runs: the index update of the repository's top level, in the background
/// with output discarded (git waits for nothing), at low priority, skipped when the binary it
/// names is gone. It hands over the paths the hook's change touched ([`changes`]), so a big tree
/// is not walked; when git cannot say, the whole tree is updated.
fn block(hook: &str, binary: &Path, created: bool, joined: bool) -> String {
    let bin = shell_quote(&binary.to_string_lossy());
    let changes = changes(hook);
    format!(
        "{begin}\nif [ -x {bin} ]; then\n  ( top=\"$(git rev-parse --show-toplevel 2>/dev/null)\" && cd \"$top\" || exit 0\n    changed=\"$(mktemp 2>/dev/null)\" || changed=\"\"\n    if [ -n \"$changed\" ] && {changes} >\"$changed\" 2>/dev/null; then\n      nice -n 10 {bin} index . --paths-from \"$changed\"\n    else\n      nice -n 10 {bin} index .\n    fi\n    rm -f \"$changed\" ) </dev/null >/dev/null 2>&1 &\nfi\n{end}\n",
        begin = if created { BEGIN_CREATED } else { BEGIN },
        end = if joined { END_JOINED } else { END },
    )
}

/// The git command that lists, NUL-separated, the paths a hook's change touched: the commit's,
/// what a merge brought (`ORIG_HEAD..HEAD`), what a branch checkout changed (`$1..$2`; a file
/// checkout or a clone's first checkout has no such pair and fails, so the whole tree is read).
fn changes(hook: &str) -> &'static str {
    match hook {
        "post-commit" => "git diff-tree -r --root --no-commit-id --name-only -z HEAD",
        "post-merge" => "git diff --name-only -z ORIG_HEAD HEAD",
        _ => {
            "[ \"$3\" = 1 ] && case \"$1\" in *[!0]*) true ;; *) false ;; esac && git diff --name-only -z \"$1\" \"$2\""
        }
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Adds the block to each hook of [`HOOKS`] under `root`'s hooks directory.
pub fn install(root: &Path, binary: &Path) -> Result<Vec<HookChange>, HookError> {
    let dir = hooks_dir(root)?;
    std::fs::create_dir_all(&dir).map_err(|e| HookError::Io { path: dir.clone(), source: e })?;
    let mut changes = Vec::new();
    for hook in HOOKS {
        let path = dir.join(hook);
        let change = |action: &str| HookChange { hook: hook.into(), path: path.clone(), action: action.into() };
        let existing = match std::fs::read(&path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(HookError::Io { path, source: e }),
        };
        let Some(bytes) = existing else {
            write_hook(&path, format!("{SHEBANG}\n{}", block(hook, binary, true, false)).as_bytes(), None)?;
            changes.push(change("created"));
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            changes.push(change("skipped: not a text file"));
            continue;
        };
        if let Some((start, end, created)) = find_block(&text) {
            // An older raggrep's block (or another binary's) is brought up to date in place.
            let joined = text[start..end].contains(END_JOINED);
            let current = block(hook, binary, created, joined);
            let body =
                if joined && text[start..].starts_with('\n') { &text[start + 1..end] } else { &text[start..end] };
            if body == current {
                changes.push(change("kept"));
            } else {
                let prefix = if joined && text[start..].starts_with('\n') { "\n" } else { "" };
                let updated = format!("{}{prefix}{current}{}", &text[..start], &text[end..]);
                write_hook(&path, updated.as_bytes(), Some(&path))?;
                changes.push(change("updated"));
            }
            continue;
        }
        if !is_shell(&text) {
            let first = text.lines().next().unwrap_or("").to_string();
            changes.push(change(&format!("skipped: not a shell script ({first}); add `raggrep index` to it yourself")));
            continue;
        }
        let mut updated = text.clone();
        let joined = !updated.is_empty() && !updated.ends_with('\n');
        if joined {
            updated.push('\n');
        }
        updated.push_str(&block(hook, binary, false, joined));
        write_hook(&path, updated.as_bytes(), Some(&path))?;
        changes.push(change("added"));
    }
    Ok(changes)
}

/// Removes exactly what [`install`] added.
pub fn uninstall(root: &Path) -> Result<Vec<HookChange>, HookError> {
    let dir = hooks_dir(root)?;
    let mut changes = Vec::new();
    for hook in HOOKS {
        let path = dir.join(hook);
        let change = |action: &str| HookChange { hook: hook.into(), path: path.clone(), action: action.into() };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                changes.push(change("absent"));
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                changes.push(change("absent"));
                continue;
            }
            Err(e) => return Err(HookError::Io { path, source: e }),
        };
        let Some((start, end, created)) = find_block(&text) else {
            changes.push(change("absent"));
            continue;
        };
        let rest = format!("{}{}", &text[..start], &text[end..]);
        if created && rest.trim() == SHEBANG {
            std::fs::remove_file(&path).map_err(|e| HookError::Io { path: path.clone(), source: e })?;
            changes.push(change("deleted"));
        } else {
            write_hook(&path, rest.as_bytes(), Some(&path))?;
            changes.push(change("removed"));
        }
    }
    Ok(changes)
}

/// Byte range of the block (through its end line's newline) and whether raggrep created the file.
fn find_block(text: &str) -> Option<(usize, usize, bool)> {
    let (start, created) = match (text.find(BEGIN_CREATED), text.find(BEGIN)) {
        (Some(i), _) => (i, true),
        (None, Some(i)) => (i, false),
        (None, None) => return None,
    };
    let end_at = start + text[start..].find(END_PREFIX)?;
    let line_end = text[end_at..].find('\n').map_or(text.len(), |i| end_at + i);
    let joined = &text[end_at..line_end] == END_JOINED;
    let end = if line_end < text.len() { line_end + 1 } else { line_end };
    let start = if joined && text[..start].ends_with('\n') { start - 1 } else { start };
    Some((start, end, created))
}

/// A hook raggrep may append shell lines to: `sh`/`bash`/`dash`/`zsh`, or no interpreter line
/// (git runs those with the shell).
fn is_shell(text: &str) -> bool {
    let Some(first) = text.lines().next() else { return true };
    let Some(interpreter) = first.strip_prefix("#!") else { return true };
    let words: Vec<&str> = interpreter.split_whitespace().collect();
    let program = match words.as_slice() {
        [env, program, ..] if env.ends_with("/env") => program,
        [program, ..] => program,
        [] => return false,
    };
    matches!(program.rsplit('/').next(), Some("sh" | "bash" | "dash" | "zsh"))
}

/// Writes a hook atomically: a new one executable, an existing one with its own permissions
/// (a hook its owner made non-executable stays off).
fn write_hook(path: &Path, bytes: &[u8], previous: Option<&Path>) -> Result<(), HookError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |e| HookError::Io { path: path.to_path_buf(), source: e };
    let mode = match previous {
        Some(p) => std::fs::metadata(p).map_err(io)?.permissions().mode(),
        None => 0o755,
    };
    crate::index::write_atomic(path, bytes).map_err(io)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_hooks_are_told_from_others() {
        for text in ["#!/bin/sh\n", "#!/usr/bin/env bash\nx", "echo hi\n", "", "#!/bin/zsh -e\n"] {
            assert!(is_shell(text), "{text:?}");
        }
        for text in ["#!/usr/bin/env python3\n", "#!/usr/bin/perl -w\n", "#!/usr/bin/env node\n"] {
            assert!(!is_shell(text), "{text:?}");
        }
    }

    #[test]
    fn the_block_is_found_exactly() {
        let text = format!(
            "#!/bin/sh\necho mine\n{}echo after\n",
            block("post-commit", Path::new("/opt/r a'b/raggrep"), false, false)
        );
        let (start, end, created) = find_block(&text).unwrap();
        assert!(!created);
        assert_eq!(format!("{}{}", &text[..start], &text[end..]), "#!/bin/sh\necho mine\necho after\n");
        assert!(text.contains(r"'/opt/r a'\''b/raggrep'"), "{text}");
    }
}
