//! Which index a command run in some directory means, found the way git finds its repository:
//! the nearest enclosing index, else the top of the enclosing git work tree, else the
//! directory itself. Without it, `cd doc && raggrep query …` built a second index of `doc/`
//! alone and searched only that.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::INDEX_DIR_NAME;

/// How the root was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The directory itself or an ancestor holds raggrep's state: `.raggrep/` (an index, one
    /// being built, a vector database or a config).
    Index,
    /// No index: the top of the git work tree the directory is in (`.git`, a directory or a
    /// worktree's file).
    GitWorkTree,
    /// Neither: the directory itself.
    Here,
}

/// The root a directory resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The root, canonical.
    pub root: PathBuf,
    pub found: Found,
    /// Where the search started, relative to `root` with `/` separators (`""`: the root itself).
    pub subtree: String,
}

/// Directories the upward search never enters (it may start in one): the user's home and the
/// `RAGGREP_CEILING_DIRS` list (separated like `PATH`), as git's `GIT_CEILING_DIRECTORIES`.
/// The filesystem root is never entered either: an index or a `.git` there is nobody's project.
#[derive(Debug, Clone, Default)]
pub struct Ceilings {
    dirs: Vec<PathBuf>,
}

/// The variable that lists ceiling directories.
pub const CEILING_ENV: &str = "RAGGREP_CEILING_DIRS";

impl Ceilings {
    /// `$HOME` and `$RAGGREP_CEILING_DIRS` (entries that do not exist are ignored).
    pub fn from_env() -> Ceilings {
        Ceilings::new(std::env::var_os("HOME"), std::env::var_os(CEILING_ENV))
    }

    pub fn new(home: Option<OsString>, list: Option<OsString>) -> Ceilings {
        let mut dirs: Vec<PathBuf> = home.into_iter().map(PathBuf::from).collect();
        if let Some(list) = list {
            dirs.extend(std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()));
        }
        let dirs = dirs.iter().filter_map(|d| std::fs::canonicalize(d).ok()).collect();
        Ceilings { dirs }
    }

    fn stops_at(&self, dir: &Path) -> bool {
        dir.parent().is_none() || self.dirs.iter().any(|c| c == dir)
    }
}

/// The root for a command started in `start` (a directory; canonicalised here).
pub fn discover(start: &Path, ceilings: &Ceilings) -> std::io::Result<Discovery> {
    let start = std::fs::canonicalize(start)?;
    // The start, then each parent up to (not into) a ceiling.
    let mut dirs = vec![start.as_path()];
    let mut dir = start.as_path();
    while let Some(parent) = dir.parent() {
        if ceilings.stops_at(parent) {
            break;
        }
        dirs.push(parent);
        dir = parent;
    }
    let found =
        |root: &Path, found: Found| Discovery { root: root.to_path_buf(), found, subtree: subtree(&start, root) };
    if let Some(root) = dirs.iter().find(|d| d.join(INDEX_DIR_NAME).is_dir()) {
        return Ok(found(root, Found::Index));
    }
    if let Some(root) = dirs.iter().find(|d| d.join(".git").exists()) {
        return Ok(found(root, Found::GitWorkTree));
    }
    Ok(found(&start, Found::Here))
}

fn subtree(start: &Path, root: &Path) -> String {
    let rel = start.strip_prefix(root).unwrap_or(Path::new(""));
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_at(dir: &Path) {
        std::fs::create_dir_all(dir.join(INDEX_DIR_NAME)).unwrap();
        std::fs::write(dir.join(INDEX_DIR_NAME).join(super::super::CURRENT), "manifest-1.rkyv").unwrap();
    }

    /// No ceilings but the temporary directory itself, so nothing above it can answer.
    fn fenced(tmp: &tempfile::TempDir) -> Ceilings {
        Ceilings::new(None, Some(tmp.path().as_os_str().to_owned()))
    }

    #[test]
    fn the_nearest_enclosing_index_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(project.join("src/net")).unwrap();
        index_at(&project);
        let found = discover(&project.join("src/net"), &fenced(&tmp)).unwrap();
        assert_eq!(found.root, project.canonicalize().unwrap());
        assert_eq!(found.found, Found::Index);
        assert_eq!(found.subtree, "src/net");
        // An index in the subdirectory itself is nearer.
        index_at(&project.join("src"));
        let found = discover(&project.join("src/net"), &fenced(&tmp)).unwrap();
        assert_eq!(found.root, project.join("src").canonicalize().unwrap());
        assert_eq!(found.subtree, "net");
    }

    #[test]
    fn without_an_index_the_git_work_tree_top_is_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("doc/man")).unwrap();
        let found = discover(&repo.join("doc/man"), &fenced(&tmp)).unwrap();
        assert_eq!(
            (found.root, found.found, found.subtree.as_str()),
            (repo.canonicalize().unwrap(), Found::GitWorkTree, "doc/man")
        );
        // A worktree's `.git` is a file.
        let worktree = tmp.path().join("worktree");
        std::fs::create_dir_all(worktree.join("lib")).unwrap();
        std::fs::write(worktree.join(".git"), "gitdir: ../repo/.git/worktrees/w\n").unwrap();
        assert_eq!(discover(&worktree.join("lib"), &fenced(&tmp)).unwrap().root, worktree.canonicalize().unwrap());
    }

    #[test]
    fn an_enclosing_index_wins_over_a_nested_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        let vendored = project.join("vendor/lib");
        std::fs::create_dir_all(vendored.join(".git")).unwrap();
        index_at(&project);
        let found = discover(&vendored, &fenced(&tmp)).unwrap();
        assert_eq!((found.root, found.subtree.as_str()), (project.canonicalize().unwrap(), "vendor/lib"));
    }

    #[test]
    fn neither_index_nor_repository_is_the_directory_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("notes");
        std::fs::create_dir_all(&dir).unwrap();
        let found = discover(&dir, &fenced(&tmp)).unwrap();
        assert_eq!((found.root, found.found, found.subtree.as_str()), (dir.canonicalize().unwrap(), Found::Here, ""));
    }

    #[test]
    fn the_search_does_not_enter_a_ceiling_or_home() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let project = home.join("code/project");
        std::fs::create_dir_all(&project).unwrap();
        index_at(&home);
        index_at(&home.join("code"));
        // Home itself is never entered from below: `code/` is as far as the search goes.
        let ceilings = Ceilings::new(Some(home.clone().into()), None);
        assert_eq!(discover(&project, &ceilings).unwrap().root, home.join("code").canonicalize().unwrap());
        // A ceiling at `code/` stops it before that index: the project is its own root.
        let list = std::env::join_paths([home.join("code")]).unwrap();
        let ceilings = Ceilings::new(Some(home.clone().into()), Some(list));
        let found = discover(&project, &ceilings).unwrap();
        assert_eq!((found.root, found.found), (project.canonicalize().unwrap(), Found::Here));
        // Started in home itself, its own index is found.
        assert_eq!(discover(&home, &ceilings).unwrap().root, home.canonicalize().unwrap());
    }
}
