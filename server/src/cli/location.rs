//! Which index a command uses: `--root` / `--index-dir` when given, else the one the current
//! directory is in ([`index::discover`]: the nearest enclosing index, the top of the git work
//! tree, or the directory itself), and where in it the command was started.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::engine::{self, Ceilings, FoundIndex as Found, IndexLocation, SearchResults};

#[derive(clap::Args, Clone)]
pub(super) struct LocationArgs {
    /// Workspace root (default: the nearest directory at or above the current one that has a
    /// .raggrep/, as git finds its repository; else the top of the git work tree; else the
    /// current directory). RAGGREP_CEILING_DIRS lists directories the search does not enter.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Keep the index here instead of ROOT/.raggrep (for read-only trees).
    #[arg(long, env = "RAGGREP_INDEX_DIR")]
    pub index_dir: Option<PathBuf>,
}

/// A command's index, and where in its tree the command was started.
pub(super) struct Resolved {
    pub location: IndexLocation,
    /// The starting directory relative to the root, `/`-separated (`""`: the root, or a root
    /// given with `--root`).
    pub subtree: String,
    /// How the root was found (`None`: given).
    pub found: Option<Found>,
}

impl LocationArgs {
    pub fn resolve(&self) -> Result<Resolved> {
        if self.root.is_some() || self.index_dir.is_some() {
            let root = self.root.clone().unwrap_or_else(|| PathBuf::from("."));
            let location = IndexLocation::new(&root, self.index_dir.as_deref())?;
            return Ok(Resolved { location, subtree: String::new(), found: None });
        }
        resolve_from(Path::new("."))
    }
}

/// The root for a command started in `start`.
pub(super) fn resolve_from(start: &Path) -> Result<Resolved> {
    let discovery = engine::discover(start, &Ceilings::from_env())
        .with_context(|| format!("finding the index for {}", start.display()))?;
    let location = IndexLocation::new(&discovery.root, None)?;
    Ok(Resolved { location, subtree: discovery.subtree, found: Some(discovery.found) })
}

impl Resolved {
    /// One line on stderr when the root is not where the command was started, so nobody
    /// wonders which index answered (`doing`: "searching", "updating", …).
    pub fn announce(&self, doing: &str) {
        if self.subtree.is_empty() {
            return;
        }
        let how = match self.found {
            Some(Found::GitWorkTree) => "the git work tree ",
            _ => "",
        };
        let _ = writeln!(
            io::stderr(),
            "raggrep: {doing} the index of {how}{} (from {}/)",
            self.location.root.display(),
            self.subtree
        );
    }
}

/// Where the hits of a search started in a subdirectory go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Scope {
    /// The subtree's hits first, then the rest of the project's, each in rank order.
    #[default]
    SubtreeFirst,
    /// Only the subtree's.
    Here,
    /// The project's ranking as it is.
    Everywhere,
}

/// The `--path` glob a `--here` search adds (`None`: none needed).
pub(super) fn here_glob(subtree: &str, scope: Scope, path_glob: Option<&str>) -> Result<Option<String>> {
    if scope != Scope::Here || subtree.is_empty() {
        return Ok(path_glob.map(str::to_string));
    }
    if path_glob.is_some() {
        anyhow::bail!("--here searches {subtree}/ only: give --path OR --here (--path is relative to the root)");
    }
    Ok(Some(engine::glob_under(subtree, None)))
}

/// The glob that PATH arguments (relative to the current directory, as ripgrep takes them)
/// make, relative to `root`: a directory's files, a file itself; several, any of them. `None`
/// without PATHs, or when one of them is the root itself.
pub(super) fn paths_glob(root: &Path, paths: &[PathBuf]) -> Result<Option<String>> {
    let mut globs = Vec::with_capacity(paths.len());
    for path in paths {
        let full = std::fs::canonicalize(path).with_context(|| format!("{}", path.display()))?;
        let rel = full
            .strip_prefix(root)
            .map_err(|_| anyhow::anyhow!("{} is outside the index's root {}", path.display(), root.display()))?;
        let rel: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        if rel.is_empty() {
            return Ok(None);
        }
        let rel = globset::escape(&rel.join("/"));
        globs.push(if full.is_dir() { format!("{rel}/**") } else { rel });
    }
    Ok(match globs.len() {
        0 => None,
        1 => globs.pop(),
        _ => Some(format!("{{{}}}", globs.join(","))),
    })
}

/// Puts the subtree's hits first (stable: each part keeps its rank order).
pub(super) fn subtree_first(results: &mut SearchResults, subtree: &str) {
    if subtree.is_empty() {
        return;
    }
    let prefix = format!("{subtree}/");
    let (mut inside, outside): (Vec<_>, Vec<_>) =
        std::mem::take(&mut results.results).into_iter().partition(|hit| hit.path.starts_with(&prefix));
    inside.extend(outside);
    results.results = inside;
}

/// A root-relative path as seen from the subtree the command was started in (`../lib/x.py`),
/// so the paths a terminal prints open from where the user is.
pub(super) fn from_subtree(path: &str, subtree: &str) -> String {
    if subtree.is_empty() {
        return path.to_string();
    }
    let here: Vec<&str> = subtree.split('/').collect();
    let there: Vec<&str> = path.split('/').collect();
    let common = here.iter().zip(&there).take_while(|(a, b)| a == b).count();
    // The file name itself is never a shared directory.
    let common = common.min(there.len().saturating_sub(1));
    let mut parts: Vec<&str> = vec![".."; here.len() - common];
    parts.extend(&there[common..]);
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_shown_from_the_subtree() {
        assert_eq!(from_subtree("src/net/retry.py", ""), "src/net/retry.py");
        assert_eq!(from_subtree("src/net/retry.py", "src/net"), "retry.py");
        assert_eq!(from_subtree("src/net/tls/cert.py", "src/net"), "tls/cert.py");
        assert_eq!(from_subtree("src/auth.py", "src/net"), "../auth.py");
        assert_eq!(from_subtree("lib/x.py", "src/net"), "../../lib/x.py");
        assert_eq!(from_subtree("README.md", "doc"), "../README.md");
        // A file named like the subtree's directory is not inside it.
        assert_eq!(from_subtree("doc", "doc"), "../doc");
    }

    #[test]
    fn here_narrows_by_a_glob_of_the_subtree() {
        assert_eq!(here_glob("src/net", Scope::Here, None).unwrap().as_deref(), Some("src/net/**"));
        assert_eq!(here_glob("a[1]", Scope::Here, None).unwrap().as_deref(), Some("a[[]1[]]/**"));
        assert_eq!(here_glob("", Scope::Here, Some("x/**")).unwrap().as_deref(), Some("x/**"));
        assert_eq!(here_glob("src", Scope::SubtreeFirst, Some("x/**")).unwrap().as_deref(), Some("x/**"));
        assert!(here_glob("src", Scope::Here, Some("x/**")).is_err());
    }
}
