//! Exact symbol lookups over published snapshots: where a name is defined, and what a
//! definition contains. No embedding: the index's symbols first, then the files' syntax trees
//! for members too small to have a chunk of their own. Shared by every front door (MCP's
//! `find_symbol`, the `ask` router).

use std::path::{Path, PathBuf};

use crate::chunk::{ChunkConfig, ChunkKind, Definition, outline};
use crate::index::RootIndex;

/// One definition found for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundDefinition {
    pub root: PathBuf,
    /// Relative to the root, `/`-separated.
    pub path: String,
    /// Qualified (`container::name` or `container.name`, by language).
    pub symbol: String,
    pub kind: ChunkKind,
    pub start_line: u32,
    pub end_line: u32,
    /// The line of the definition itself ([`crate::chunk::definition_line`]).
    pub line: u32,
}

/// The first `max` definitions of a name, and how many there are in all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub definitions: Vec<FoundDefinition>,
    pub total: usize,
}

/// How many chunks mentioning a name lead to their files' outlines when the index has no
/// definition of that name (each file is parsed again, so this bounds the cost of a miss).
const MENTIONS: usize = 32;

/// Qualified names match whatever separator the language uses, or the user writes.
fn normal(symbol: &str) -> String {
    crate::search::intent::normal_qualified(symbol)
}

/// The definitions named `name` (case-sensitive; the short name or the qualified one, `::`,
/// `#`, `->`, `\` and `.` alike), in root and index order, pieces of one split definition merged into one.
pub fn find_definitions(snapshots: &[RootIndex], name: &str, max: usize) -> Found {
    let wanted = normal(name);
    let mut found = Found::default();
    for view in snapshots {
        let (root, snapshot) = (&view.root, &view.snapshot);
        // The entry the previous chunk went into, to merge pieces of one definition.
        let mut previous: Option<usize> = None;
        for index in 0..snapshot.chunk_count() {
            let Some(chunk) = snapshot.chunk(index) else { continue };
            if chunk.symbol.is_empty() {
                continue;
            }
            let Some(path) = view.visible(chunk.path) else { continue };
            let symbol_path = chunk.symbol_path().unwrap_or_default();
            if chunk.symbol != name && normal(&symbol_path) != wanted {
                continue;
            }
            if let Some(entry) = previous.and_then(|slot| found.definitions.get_mut(slot))
                && entry.root == *root
                && entry.path == path
                && entry.symbol == symbol_path
                && chunk.start_line <= entry.end_line + 1
            {
                entry.end_line = entry.end_line.max(chunk.end_line);
                continue;
            }
            found.total += 1;
            previous = None;
            if found.definitions.len() >= max {
                continue;
            }
            previous = Some(found.definitions.len());
            found.definitions.push(FoundDefinition {
                root: root.clone(),
                path: path.to_string(),
                symbol: symbol_path,
                kind: chunk.kind,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                line: chunk.start_line,
            });
        }
    }
    if found.definitions.is_empty() {
        // A small class or impl is indexed whole, as one chunk: its members have no chunk of
        // their own. Look inside the files holding such containers.
        found = members_named(snapshots, name, &wanted, max);
    }
    with_definition_lines(&mut found.definitions);
    found
}

/// Each definition's own line, read from its file as it is now (a file read once however many
/// definitions it holds; the first line when it cannot be read).
fn with_definition_lines(definitions: &mut [FoundDefinition]) {
    let mut files: std::collections::HashMap<PathBuf, Option<String>> = std::collections::HashMap::new();
    for definition in definitions {
        let path = crate::walk::resolve(&definition.root, &definition.path);
        let text = files.entry(path.clone()).or_insert_with(|| std::fs::read_to_string(&path).ok());
        if let Some(text) = text {
            let lines: Vec<&str> = text.lines().collect();
            definition.line = crate::chunk::definition_line(
                &lines,
                definition.start_line,
                definition.end_line,
                Some(&definition.symbol),
            );
        }
    }
}

/// Members (methods of classes, impls, traits …) named `name` (or qualified `wanted`) inside
/// the indexed files that hold container chunks or mention the name, from the files' syntax
/// trees.
fn members_named(snapshots: &[RootIndex], name: &str, wanted: &str, max: usize) -> Found {
    let mut found = Found::default();
    let short = wanted.rsplit('.').next().unwrap_or_default();
    for view in snapshots {
        let (root, snapshot) = (&view.root, &view.snapshot);
        let mut files: Vec<&str> = Vec::new();
        for index in 0..snapshot.chunk_count() {
            let Some(chunk) = snapshot.chunk(index) else { continue };
            let container = matches!(
                chunk.kind,
                ChunkKind::Class | ChunkKind::Impl | ChunkKind::Trait | ChunkKind::Interface | ChunkKind::Module
            );
            if container && files.last().is_none_or(|path| *path != chunk.path) {
                files.push(chunk.path);
            }
        }
        // Members outside class-like chunks (a small object literal's methods are in a chunk of
        // code): the files whose indexed text mentions the name, best first.
        for (index, _) in snapshot.lexical_search(short, MENTIONS).unwrap_or_default() {
            if let Some(chunk) = snapshot.chunk(index) {
                files.push(chunk.path);
            }
        }
        let mut seen = std::collections::HashSet::new();
        files.retain(|path| seen.insert(*path));
        // Files outside the root (a folder inside an indexed project) are never read.
        for path in files.into_iter().filter_map(|path| view.visible(path)) {
            // A configuration file groups small sections, top-level ones too, into one chunk.
            let config = crate::lang::Language::from_path(Path::new(path)).is_config();
            for definition in file_outline(root, path) {
                let qualified = normal(&definition.symbol);
                let short = qualified.rsplit('.').next().unwrap_or_default();
                if qualified == short && !config {
                    // Top-level definitions have chunks of their own: the index answered them.
                    continue;
                }
                if short != name && qualified != wanted {
                    continue;
                }
                found.total += 1;
                if found.definitions.len() < max {
                    found.definitions.push(FoundDefinition {
                        root: root.clone(),
                        path: path.to_string(),
                        symbol: definition.symbol,
                        kind: definition.kind,
                        start_line: definition.start_line,
                        end_line: definition.end_line,
                        line: definition.start_line,
                    });
                }
            }
        }
    }
    found
}

/// The definitions of an indexed file, from its syntax tree as it is on disk now (none when it
/// cannot be read).
pub fn file_outline(root: &Path, path: &str) -> Vec<Definition> {
    let absolute = crate::walk::resolve(root, path);
    let Ok(text) = std::fs::read_to_string(&absolute) else { return Vec::new() };
    outline(&text, crate::lang::Language::detect(&absolute, &text), &ChunkConfig::default())
}

/// The definitions nested in `container` (its members: methods, fields of languages that
/// outline them, nested types …) anywhere in the container's file (a Rust `impl Foo` block
/// included), from the file's syntax tree, in source order.
pub fn members_of(container: &FoundDefinition) -> Vec<Definition> {
    let prefix = format!("{}.", normal(&container.symbol));
    file_outline(&container.root, &container.path)
        .into_iter()
        .filter(|d| normal(&d.symbol).starts_with(&prefix))
        .collect()
}
