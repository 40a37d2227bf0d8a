//! Path confinement: every path or glob an agent sends must stay inside the workspace roots.
//! A path outside them, a `..` escape or a symlink that resolves outside is refused with a
//! message saying so, never answered with an empty result (which a model would read as "no
//! such code").

use std::path::{Component, Path, PathBuf};

/// A file inside one of the roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Canonical absolute path.
    pub absolute: PathBuf,
    /// `/`-separated path relative to `root`.
    pub relative: String,
    pub root: PathBuf,
}

fn roots_list(roots: &[PathBuf]) -> String {
    roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
}

fn has_parent_component(path: &Path) -> bool {
    path.components().any(|c| matches!(c, Component::ParentDir))
}

/// The deepest root containing `path` (canonical).
fn root_of<'a>(roots: &'a [PathBuf], path: &Path) -> Option<&'a PathBuf> {
    roots.iter().filter(|r| path.starts_with(r)).max_by_key(|r| r.as_os_str().len())
}

/// Resolves a file argument (relative to a root, or absolute inside one) to a file inside the
/// roots. `roots` must be canonical.
pub fn resolve_file(roots: &[PathBuf], arg: &str) -> Result<Located, String> {
    let arg = arg.trim();
    if arg.is_empty() {
        return Err("path is empty: give a file path relative to a workspace root".into());
    }
    let given = Path::new(arg);
    if has_parent_component(given) {
        return Err(format!("path {arg:?} is refused: `..` may not appear in a path (roots: {})", roots_list(roots)));
    }
    let candidate = if given.is_absolute() {
        given.to_path_buf()
    } else {
        // Relative paths are relative to a root; the first root holding the path wins.
        roots
            .iter()
            .map(|r| r.join(given))
            .find(|p| p.symlink_metadata().is_ok())
            .unwrap_or_else(|| roots.first().map_or_else(|| given.to_path_buf(), |r| r.join(given)))
    };
    // Canonicalising follows symlinks: a link inside a root pointing outside ends up outside.
    let absolute = match std::fs::canonicalize(&candidate) {
        Ok(path) => path,
        Err(_) if given.is_absolute() && root_of(roots, &candidate).is_none() => {
            return Err(format!("path {arg:?} is outside the workspace roots ({}): refused", roots_list(roots)));
        }
        Err(err) => return Err(format!("no such file in the workspace: {arg:?} ({err})")),
    };
    let Some(root) = root_of(roots, &absolute) else {
        return Err(if absolute == candidate {
            format!("path {arg:?} is outside the workspace roots ({}): refused", roots_list(roots))
        } else {
            format!(
                "path {arg:?} resolves to {} (a symlink), outside the workspace roots ({}): refused",
                absolute.display(),
                roots_list(roots)
            )
        });
    };
    if !absolute.is_file() {
        return Err(format!("{arg:?} is not a file"));
    }
    let relative = crate::walk::relative_path(&absolute, root).unwrap_or_default();
    Ok(Located { relative, root: root.clone(), absolute })
}

/// Resolves a file an agent wants written (it may not exist yet): relative paths are relative
/// to the first root; the file, or its directory when the file does not exist, must resolve
/// inside a root. A directory that does not exist is left for the caller to report.
pub fn resolve_new_file(roots: &[PathBuf], arg: &str) -> Result<PathBuf, String> {
    let arg = arg.trim();
    let given = Path::new(arg);
    if has_parent_component(given) {
        return Err(format!("path {arg:?} is refused: `..` may not appear in a path (roots: {})", roots_list(roots)));
    }
    let Some(first) = roots.first() else { return Err("no workspace root".into()) };
    let candidate = if given.is_absolute() { given.to_path_buf() } else { first.join(given) };
    let outside = || format!("path {arg:?} is outside the workspace roots ({}): refused", roots_list(roots));
    // An existing file (or symlink) must resolve inside; otherwise its directory must.
    let resolved = match std::fs::canonicalize(&candidate) {
        Ok(path) => Some(path),
        Err(_) => candidate
            .parent()
            .and_then(|parent| std::fs::canonicalize(parent).ok())
            .map(|parent| parent.join(candidate.file_name().unwrap_or_default())),
    };
    match resolved {
        Some(path) if root_of(roots, &path).is_some() => Ok(path),
        Some(_) => Err(outside()),
        // The directory does not exist: fine to report as such if it would be inside a root.
        None if root_of(roots, &candidate).is_some() => Ok(candidate),
        None => Err(outside()),
    }
}

/// Checks a path glob (matched against root-relative paths) and returns the glob to use: an
/// absolute glob inside a root is made relative to it; anything reaching outside is refused.
pub fn check_glob(roots: &[PathBuf], glob: &str) -> Result<String, String> {
    let glob = glob.trim();
    if glob.is_empty() {
        return Err("path glob is empty: leave it out to search everywhere".into());
    }
    if glob.split(['/', '\\']).any(|part| part == "..") {
        return Err(format!(
            "path glob {glob:?} is refused: `..` may not appear in a glob (roots: {})",
            roots_list(roots)
        ));
    }
    if glob.starts_with('~') {
        return Err(format!("path glob {glob:?} is outside the workspace roots ({}): refused", roots_list(roots)));
    }
    if Path::new(glob).is_absolute() {
        // `/work/repo/src/**` inside root `/work/repo` means `src/**`.
        for root in roots {
            let prefix = format!("{}/", root.display());
            if let Some(rest) = glob.strip_prefix(&prefix) {
                return Ok(rest.to_string());
            }
        }
        return Err(format!(
            "path glob {glob:?} is outside the workspace roots ({}): refused; globs match paths relative to a root, e.g. \"src/**/*.py\"",
            roots_list(roots)
        ));
    }
    Ok(glob.trim_start_matches("./").to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn files_to_write_stay_inside_the_roots() {
        let (dir, root) = tree();
        let roots = vec![root.clone()];
        assert_eq!(resolve_new_file(&roots, "v.sqlite").unwrap(), root.join("v.sqlite"));
        assert_eq!(resolve_new_file(&roots, "no/such/v.sqlite").unwrap(), root.join("no/such/v.sqlite"));
        assert!(resolve_new_file(&roots, "/tmp/v.sqlite").unwrap_err().contains("outside the workspace roots"));
        assert!(resolve_new_file(&roots, "../v.sqlite").unwrap_err().contains("`..`"));
        assert!(resolve_new_file(&roots, "link.txt").unwrap_err().contains("outside"));
        std::os::unix::fs::symlink(dir.path(), root.join("out")).unwrap();
        assert!(resolve_new_file(&roots, "out/v.sqlite").unwrap_err().contains("outside"));
    }

    #[test]
    fn files_inside_are_resolved_and_escapes_refused() {
        let (_dir, root) = tree();
        let roots = vec![root.clone()];
        let found = resolve_file(&roots, "src/a.py").unwrap();
        assert_eq!(found.relative, "src/a.py");
        assert_eq!(resolve_file(&roots, root.join("src/a.py").to_str().unwrap()).unwrap(), found);
        assert!(resolve_file(&roots, "/etc/passwd").unwrap_err().contains("outside the workspace roots"));
        assert!(resolve_file(&roots, "../secret.txt").unwrap_err().contains("`..`"));
        assert!(resolve_file(&roots, "src/../src/a.py").unwrap_err().contains("`..`"));
        assert!(resolve_file(&roots, "link.txt").unwrap_err().contains("symlink"));
        assert!(resolve_file(&roots, "src/missing.py").unwrap_err().contains("no such file"));
        assert!(resolve_file(&roots, "src").unwrap_err().contains("not a file"));
    }

    #[test]
    fn globs_stay_relative_to_the_roots() {
        let (_dir, root) = tree();
        let roots = vec![root.clone()];
        assert_eq!(check_glob(&roots, "src/**/*.py").unwrap(), "src/**/*.py");
        assert_eq!(check_glob(&roots, &format!("{}/src/*.py", root.display())).unwrap(), "src/*.py");
        assert!(check_glob(&roots, "/etc/*").is_err());
        assert!(check_glob(&roots, "../**").is_err());
        assert!(check_glob(&roots, "src/../../x").is_err());
        assert!(check_glob(&roots, "~/x").is_err());
    }
}
