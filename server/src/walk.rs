//! Walking workspace roots: which files get indexed, and reading them safely.
//!
//! Respects `.gitignore`, `.ignore`, `.raggrepignore` and git's global excludes (through the
//! `ignore` crate, as ripgrep does), plus built-in excludes for dependency trees, build output,
//! lock files and minified or generated files. Files that are too big, binary or not UTF-8 are
//! skipped or decoded lossily with a recorded reason. Symlinks are followed only while they stay
//! inside a root; loops end the walk of that branch.

use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;

/// Name of the per-project ignore file, in `.gitignore` syntax.
pub const IGNORE_FILE: &str = ".raggrepignore";

/// Directories and files never indexed, whatever the ignore files say.
const DEFAULT_EXCLUDES: &[&str] = &[
    ".git/",
    ".hg/",
    ".svn/",
    ".raggrep/",
    "node_modules/",
    "target/",
    "vendor/",
    "dist/",
    "build/",
    "__pycache__/",
    ".venv/",
    "venv/",
    ".tox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".next/",
    "*.lock",
    "package-lock.json",
    "pnpm-lock.yaml",
    "npm-shrinkwrap.json",
    "go.sum",
    "*.min.js",
    "*.min.css",
    "*.map",
    "*.pyc",
    "*.class",
    "*.o",
    "*.so",
    "*.a",
    "*.dylib",
    "*.dll",
    "*.exe",
    "*.wasm",
];

/// Dot-entries walked although hidden files are not: where CI and repository automation are
/// configured (`.github/workflows/*.yml`), which people search like any other configuration.
const VISIBLE_DOT_ENTRIES: &[&str] = &[".github", ".gitlab", ".gitlab-ci.yml", ".circleci", ".buildkite"];

/// Whether a file or directory of this name is left out as hidden (a dot-file that is not one
/// of [`VISIBLE_DOT_ENTRIES`]).
fn is_hidden_name(name: &std::ffi::OsStr) -> bool {
    name.as_encoded_bytes().first() == Some(&b'.') && !name.to_str().is_some_and(|n| VISIBLE_DOT_ENTRIES.contains(&n))
}

/// Whether the walk never enters a directory of this name (a built-in exclude such as
/// `target` or `node_modules`): changes under it never matter to the index.
pub fn is_excluded_dir_name(name: &str) -> bool {
    DEFAULT_EXCLUDES.iter().any(|e| e.strip_suffix('/') == Some(name))
}

/// What to walk and how.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// Files larger than this are skipped.
    pub max_file_size: u64,
    /// Extra gitignore-style globs to exclude (relative to each root).
    pub exclude: Vec<String>,
    /// If non-empty, only files matching one of these globs are indexed.
    pub include: Vec<String>,
    /// Whether hidden files and directories (dot-files) are indexed.
    pub hidden: bool,
    /// When set, the walk stops early (what it found so far is returned).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Only this root-relative directory (`/`-separated) is walked: its ancestors are listed on
    /// the way down, nothing else is entered (a workspace folder inside an indexed project
    /// reads its own files only, with the project's ignore rules and globs).
    pub within: Option<String>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            max_file_size: 1024 * 1024,
            exclude: Vec::new(),
            include: Vec::new(),
            hidden: false,
            cancel: None,
            within: None,
        }
    }
}

/// A file found under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedFile {
    /// Index of the root in the list given to [`walk`].
    pub root: usize,
    /// Path relative to its root, `/`-separated.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub size: u64,
    pub mtime: Option<SystemTime>,
}

/// Why a file was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    TooLarge {
        size: u64,
        limit: u64,
    },
    Binary,
    Generated,
    Minified,
    /// A symlink (or a path through one) that resolves outside every root.
    OutsideRoot {
        target: PathBuf,
    },
    SymlinkLoop,
    Unreadable(String),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::TooLarge { size, limit } => write!(f, "too large ({size} bytes > {limit})"),
            SkipReason::Binary => f.write_str("binary file"),
            SkipReason::Generated => f.write_str("generated file (marked @generated / DO NOT EDIT)"),
            SkipReason::Minified => f.write_str("minified file (very long lines)"),
            SkipReason::OutsideRoot { target } => {
                write!(f, "symlink leads outside the workspace ({})", target.display())
            }
            SkipReason::SymlinkLoop => f.write_str("symlink loop"),
            SkipReason::Unreadable(err) => write!(f, "unreadable: {err}"),
        }
    }
}

/// A path that was not indexed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: SkipReason,
}

/// The result of a walk: files to index, and what was skipped.
#[derive(Debug, Default)]
pub struct WalkReport {
    pub files: Vec<WalkedFile>,
    pub skipped: Vec<Skipped>,
}

/// Errors that stop a walk before it starts.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("workspace root {path} cannot be opened: {source}")]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid glob {glob:?}: {source}")]
    Glob {
        glob: String,
        #[source]
        source: ignore::Error,
    },
}

/// Walks every root; files come out sorted by (root, path) so runs are reproducible.
pub fn walk(roots: &[PathBuf], options: &WalkOptions) -> Result<WalkReport, WalkError> {
    let canonical_roots = roots
        .iter()
        .map(|root| fs::canonicalize(root).map_err(|source| WalkError::Root { path: root.clone(), source }))
        .collect::<Result<Vec<_>, _>>()?;
    let mut report = WalkReport::default();
    for (root_index, root) in canonical_roots.iter().enumerate() {
        walk_root(root_index, root, &canonical_roots, options, &mut report)?;
    }
    report.files.sort_by(|a, b| (a.root, &a.rel_path).cmp(&(b.root, &b.rel_path)));
    report.files.dedup_by(|a, b| a.root == b.root && a.rel_path == b.rel_path);
    Ok(report)
}

fn walk_root(
    root_index: usize,
    root: &Path,
    all_roots: &[PathBuf],
    options: &WalkOptions,
    report: &mut WalkReport,
) -> Result<(), WalkError> {
    let mut overrides = OverrideBuilder::new(root);
    let glob_error = |glob: &str, source| WalkError::Glob { glob: glob.to_string(), source };
    for glob in &options.include {
        overrides.add(glob).map_err(|e| glob_error(glob, e))?;
    }
    for glob in DEFAULT_EXCLUDES.iter().copied().map(String::from).chain(options.exclude.iter().cloned()) {
        let negated = format!("!{glob}");
        overrides.add(&negated).map_err(|e| glob_error(&glob, e))?;
    }
    let overrides = overrides.build().map_err(|e| glob_error("<overrides>", e))?;

    // A symlinked directory is entered only if it resolves inside a root: a link to `/` or `..`
    // would otherwise walk the whole machine (and never end on a link cycle through `/proc`).
    // The link itself is recorded once as skipped.
    let links_out: Arc<Mutex<Vec<Skipped>>> = Arc::default();
    let links_out_filter = Arc::clone(&links_out);
    let roots_for_filter = all_roots.to_vec();
    let within = options.within.clone().filter(|w| !w.is_empty());
    let root_for_filter = root.to_path_buf();
    let hidden = options.hidden;
    let walker = WalkBuilder::new(root)
        // Hidden entries are filtered below, so a few well-known ones can be kept.
        .hidden(false)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .add_custom_ignore_filename(IGNORE_FILE)
        .follow_links(true)
        .overrides(overrides)
        .filter_entry(move |entry| {
            if !hidden && entry.depth() > 0 && is_hidden_name(entry.file_name()) {
                return false;
            }
            if let Some(within) = &within
                && entry.depth() > 0
                && !relative_path(entry.path(), &root_for_filter).is_some_and(|rel| on_the_way(within, &rel))
            {
                return false;
            }
            if !entry.path_is_symlink() || entry.depth() == 0 {
                return true;
            }
            let reason = match fs::canonicalize(entry.path()) {
                Ok(target) if roots_for_filter.iter().any(|r| target.starts_with(r)) => return true,
                // A file link is checked (and recorded) with the files below.
                Ok(target) if !target.is_dir() => return true,
                Ok(target) => SkipReason::OutsideRoot { target },
                Err(err) => SkipReason::Unreadable(err.to_string()),
            };
            if let Ok(mut skipped) = links_out_filter.lock() {
                skipped.push(Skipped { path: entry.path().to_path_buf(), reason });
            }
            false
        })
        .build();

    for entry in walker {
        if options.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            break;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                let (path, reason) = classify_walk_error(&err);
                tracing::debug!(path = %path.display(), %reason, "skipped");
                report.skipped.push(Skipped { path, reason });
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        // Following symlinks must never take us out of the workspace.
        if entry.path_is_symlink() || path_has_symlink_parent(path, root) {
            match fs::canonicalize(path) {
                Ok(target) if all_roots.iter().any(|r| target.starts_with(r)) => {}
                Ok(target) => {
                    report
                        .skipped
                        .push(Skipped { path: path.to_path_buf(), reason: SkipReason::OutsideRoot { target } });
                    continue;
                }
                Err(err) => {
                    report
                        .skipped
                        .push(Skipped { path: path.to_path_buf(), reason: SkipReason::Unreadable(err.to_string()) });
                    continue;
                }
            }
        }
        let metadata = match entry.metadata() {
            Ok(m) => m,
            Err(err) => {
                report
                    .skipped
                    .push(Skipped { path: path.to_path_buf(), reason: SkipReason::Unreadable(err.to_string()) });
                continue;
            }
        };
        if metadata.len() > options.max_file_size {
            report.skipped.push(Skipped {
                path: path.to_path_buf(),
                reason: SkipReason::TooLarge { size: metadata.len(), limit: options.max_file_size },
            });
            continue;
        }
        let Some(rel_path) = relative_path(path, root) else {
            continue;
        };
        report.files.push(WalkedFile {
            root: root_index,
            rel_path,
            abs_path: path.to_path_buf(),
            size: metadata.len(),
            mtime: metadata.modified().ok(),
        });
    }
    if let Ok(mut links) = links_out.lock() {
        report.skipped.append(&mut links);
    }
    Ok(())
}

fn classify_walk_error(err: &ignore::Error) -> (PathBuf, SkipReason) {
    match err {
        ignore::Error::WithPath { path, err } => (path.clone(), classify_walk_error(err).1),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => classify_walk_error(err),
        ignore::Error::Loop { child, .. } => (child.clone(), SkipReason::SymlinkLoop),
        other => (PathBuf::new(), SkipReason::Unreadable(other.to_string())),
    }
}

fn path_has_symlink_parent(path: &Path, root: &Path) -> bool {
    let mut current = path.parent();
    while let Some(dir) = current {
        if dir == root || !dir.starts_with(root) {
            return false;
        }
        if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return true;
        }
        current = dir.parent();
    }
    false
}

/// Whether root-relative `path` is `within` (a root-relative directory), inside it, or one of
/// its ancestors (which a walk down to it passes through).
fn on_the_way(within: &str, path: &str) -> bool {
    is_inside(within, path) || within.strip_prefix(path).is_some_and(|rest| rest.starts_with('/'))
}

/// Whether root-relative `path` is directory `dir` itself or lies under it (`""`: the root,
/// which holds everything).
pub fn is_inside(dir: &str, path: &str) -> bool {
    dir.is_empty() || path.strip_prefix(dir).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `root/a/b.rs` → `a/b.rs`, always with `/`. A name that is not UTF-8 keeps every byte:
/// the invalid ones are written `\xNN` (lossy decoding would give two such files one name,
/// and a name that opens nothing); [`resolve`] turns it back into the real path.
pub fn relative_path(path: &Path, root: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = rel.components().map(|c| display_name(c.as_os_str())).collect();
    Some(parts.join("/"))
}

fn display_name(name: &std::ffi::OsStr) -> String {
    use std::fmt::Write;
    use std::os::unix::ffi::OsStrExt;
    if let Some(text) = name.to_str() {
        return text.to_string();
    }
    let mut out = String::new();
    for chunk in name.as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02X}");
        }
    }
    out
}

/// The file a root-relative path from the index stands for: `root/rel` if it exists, else the
/// name with its `\xNN` escapes (see [`relative_path`]) turned back into bytes.
pub fn resolve(root: &Path, rel: &str) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let plain = root.join(rel);
    if !rel.contains("\\x") || plain.symlink_metadata().is_ok() {
        return plain;
    }
    let bytes = rel.as_bytes();
    let mut raw = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = bytes
            .get(i..i + 4)
            .filter(|e| e.starts_with(b"\\x"))
            .and_then(|e| std::str::from_utf8(&e[2..]).ok().and_then(|hex| u8::from_str_radix(hex, 16).ok()));
        match escaped {
            Some(byte) => {
                raw.push(byte);
                i += 4;
            }
            None => {
                raw.push(bytes[i]);
                i += 1;
            }
        }
    }
    root.join(std::ffi::OsStr::from_bytes(&raw))
}

/// A file's text, ready to chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceText {
    pub text: String,
    /// The file was not valid UTF-8 and was decoded lossily (offsets refer to `text`).
    pub lossy: bool,
}

/// Reads a file for indexing, or says why it should be skipped.
pub fn read_source(path: &Path, max_file_size: u64) -> Result<SourceText, SkipReason> {
    let file = fs::File::open(path).map_err(|e| SkipReason::Unreadable(e.to_string()))?;
    let mut bytes = Vec::new();
    // Read one byte past the limit so a file that grew since the walk is still caught.
    file.take(max_file_size.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| SkipReason::Unreadable(e.to_string()))?;
    if bytes.len() as u64 > max_file_size {
        return Err(SkipReason::TooLarge {
            size: fs::metadata(path).map_or(bytes.len() as u64, |m| m.len()),
            limit: max_file_size,
        });
    }
    classify_bytes(bytes)
}

/// Decides whether bytes are indexable text (the part of [`read_source`] that needs no disk).
pub fn classify_bytes(bytes: Vec<u8>) -> Result<SourceText, SkipReason> {
    // Anywhere, not just in the head: text parsers are not made for NUL bytes (a TSX file with
    // one after its first 8 KiB sent tree-sitter's error recovery into a seconds-long loop,
    // found by fuzzing), and scanning a 1 MiB file for one costs microseconds.
    if bytes.contains(&0) {
        return Err(SkipReason::Binary);
    }
    let (text, lossy) = match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => {
            let bytes = err.into_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            // Mostly undecodable: it is binary in some encoding we do not read.
            let replaced = text.matches('\u{FFFD}').count();
            if replaced * 10 > text.chars().count().max(1) {
                return Err(SkipReason::Binary);
            }
            (text, true)
        }
    };
    if is_generated(&text) {
        return Err(SkipReason::Generated);
    }
    if is_minified(&text) {
        return Err(SkipReason::Minified);
    }
    Ok(SourceText { text, lossy })
}

/// Go's `Code generated … DO NOT EDIT.` convention and `@generated` markers, in the first lines.
fn is_generated(text: &str) -> bool {
    text.lines().take(5).any(|line| {
        line.contains("@generated")
            || (line.contains("DO NOT EDIT") && (line.contains("generated") || line.contains("Generated")))
    })
}

/// Minified code: long lines with little whitespace, in the first few KiB.
fn is_minified(text: &str) -> bool {
    let mut end = text.len().min(16 * 1024);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = &text[..end];
    let lines: Vec<&str> = head.lines().collect();
    if lines.is_empty() {
        return false;
    }
    let long = lines.iter().filter(|l| l.len() > 500).count();
    long > 0 && (long * 4 >= lines.len() || head.len() / lines.len() > 300)
}
