//! Chunking: a pure function from (path, text, language) to ordered chunks.
//!
//! Code is split along its syntax (tree-sitter): functions, methods, classes, structs, enums,
//! traits, interfaces and impls become chunks of their own, with their leading doc comments and
//! attributes/decorators. Oversized units are split at statement boundaries; tiny neighbours
//! (imports, constants, loose statements) are merged. Markdown is split by headings, YAML, TOML
//! and JSON by their keys, and every other text file into overlapping line windows.
//!
//! Invariant: chunks are ordered by start offset and every non-blank line of the input is covered
//! by at least one chunk. Nothing is silently dropped.

mod config;
mod lines;
mod markdown;
mod syntax;
mod tokens;

use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::lang::Language;

pub use tokens::estimate_tokens;

/// What a chunk is, as far as a reader is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkKind {
    Function,
    Method,
    Class,
    Struct,
    Enum,
    Interface,
    Trait,
    Impl,
    Module,
    Type,
    Macro,
    /// Code that is not a definition: imports, constants, top-level statements, merged together.
    Code,
    /// A Markdown section, headed by its heading; a key of a YAML, TOML or JSON file.
    Section,
    /// A window of lines from a file without a grammar.
    Text,
}

impl ChunkKind {
    /// Every kind, in a fixed order (the index stores a kind as its position here).
    pub const ALL: [ChunkKind; 14] = [
        ChunkKind::Function,
        ChunkKind::Method,
        ChunkKind::Class,
        ChunkKind::Struct,
        ChunkKind::Enum,
        ChunkKind::Interface,
        ChunkKind::Trait,
        ChunkKind::Impl,
        ChunkKind::Module,
        ChunkKind::Type,
        ChunkKind::Macro,
        ChunkKind::Code,
        ChunkKind::Section,
        ChunkKind::Text,
    ];

    pub fn to_u8(self) -> u8 {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0) as u8
    }

    pub fn from_u8(value: u8) -> ChunkKind {
        Self::ALL.get(value as usize).copied().unwrap_or(ChunkKind::Code)
    }

    /// A kind that holds other definitions (a class, a module, an `impl` …): its chunk is the
    /// header — doc comment and signature —, its members are chunks of their own.
    pub fn is_container(self) -> bool {
        matches!(
            self,
            ChunkKind::Class
                | ChunkKind::Struct
                | ChunkKind::Enum
                | ChunkKind::Interface
                | ChunkKind::Trait
                | ChunkKind::Impl
                | ChunkKind::Module
        )
    }

    /// The lowercase name used in output.
    pub fn name(self) -> &'static str {
        match self {
            ChunkKind::Function => "function",
            ChunkKind::Method => "method",
            ChunkKind::Class => "class",
            ChunkKind::Struct => "struct",
            ChunkKind::Enum => "enum",
            ChunkKind::Interface => "interface",
            ChunkKind::Trait => "trait",
            ChunkKind::Impl => "impl",
            ChunkKind::Module => "module",
            ChunkKind::Type => "type",
            ChunkKind::Macro => "macro",
            ChunkKind::Code => "code",
            ChunkKind::Section => "section",
            ChunkKind::Text => "text",
        }
    }
}

/// A chunk's content hash (xxh3-128 of its text). Embeddings are cached by it.
///
/// Serialised as 32 hex digits: JSON numbers cannot hold 128 bits (serde_json refuses them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash(pub u128);

impl Serialize for ContentHash {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContentHash {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        u128::from_str_radix(&text, 16).map(ContentHash).map_err(serde::de::Error::custom)
    }
}

impl ContentHash {
    pub fn of(text: &str) -> ContentHash {
        ContentHash(crate::content_hash(text.as_bytes()))
    }
}

impl std::fmt::Display for ContentHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

/// One retrievable unit of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Path of the file, relative to its workspace root, `/`-separated.
    pub path: Arc<str>,
    /// Byte range in the file's (UTF-8) text.
    pub byte_range: Range<usize>,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
    pub language: Language,
    pub kind: ChunkKind,
    /// The defined name (`open`), if the chunk is a definition or a Markdown section.
    pub symbol: Option<String>,
    /// The enclosing definitions (`Shard`, `outer::Shard`), if any.
    pub container: Option<String>,
    pub hash: ContentHash,
}

impl Chunk {
    /// The chunk's text, sliced out of the file it came from.
    pub fn text<'a>(&self, file_text: &'a str) -> &'a str {
        file_text.get(self.byte_range.clone()).unwrap_or("")
    }

    /// `container::symbol` (or `container.symbol`, by language), or just the symbol.
    pub fn symbol_path(&self) -> Option<String> {
        let symbol = self.symbol.as_deref()?;
        Some(match self.container.as_deref() {
            Some(container) => format!("{container}{}{symbol}", member_separator(self.language, self.kind)),
            None => symbol.to_string(),
        })
    }
}

/// Lines of code in a chunk's text: lines that are not blank, not comments (a line starting
/// with `//`, `/*`, `*`, `*/` or `#`, in any language; `--` in Lua and Haskell) and not inside a
/// Python docstring.
///
/// The learned fusion's length feature. A chunk's line span counts its doc comment, so a
/// documented function looked longer than the same code undocumented; the retrieval
/// benchmark blanks the doc comment of each answer, so the span's length partly told the
/// fusion which chunk had lost its comment (research/training/README.md, "Length in lines of
/// code"). Counting code only measures what the chunk does, documented or not.
pub fn code_lines(text: &str, language: Language) -> u32 {
    let mut count = 0;
    let mut open_string: Option<&str> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(quote) = open_string {
            if line.contains(quote) {
                open_string = None;
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if language == Language::Python {
            let unprefixed = line.trim_start_matches(['r', 'R', 'u', 'U', 'b', 'B', 'f', 'F']);
            let prefix_len = line.len() - unprefixed.len();
            if let Some(quote) = ["\"\"\"", "'''"].into_iter().find(|q| prefix_len <= 2 && unprefixed.starts_with(q)) {
                if !unprefixed[quote.len()..].contains(quote) {
                    open_string = Some(quote);
                }
                continue;
            }
        }
        if ["//", "#", "*", "/*", "*/"].iter().any(|marker| line.starts_with(marker)) {
            continue;
        }
        if matches!(language, Language::Lua | Language::Haskell) && line.starts_with("--") {
            continue;
        }
        count += 1;
    }
    count
}

/// How container paths are joined in each language (`Shard::open`, `Shard.open`,
/// `Rack::Builder`, `Parser::parse` in PHP).
pub(crate) fn path_separator(language: Language) -> &'static str {
    match language {
        Language::Rust | Language::Cpp | Language::Ruby | Language::Php => "::",
        Language::Markdown => " > ",
        _ => ".",
    }
}

/// How a definition of `kind` joins its container path: the path separator, except for Ruby's
/// methods, written `Rack::Builder.call` (Ruby's own `#call` for instance methods is not one
/// of the separators identifier queries and `find_symbol` read, `::` and `.`).
pub(crate) fn member_separator(language: Language, kind: ChunkKind) -> &'static str {
    match (language, kind) {
        (Language::Ruby, ChunkKind::Function | ChunkKind::Method) => ".",
        _ => path_separator(language),
    }
}

/// `container::symbol` (in the language's own separator for a `kind` of definition), `symbol`
/// alone at top level, `None` for an anonymous chunk.
pub(crate) fn qualified_name(container: &str, symbol: &str, kind: ChunkKind, language: Language) -> Option<String> {
    match (container.is_empty(), symbol.is_empty()) {
        (_, true) => None,
        (true, false) => Some(symbol.to_string()),
        (false, false) => Some(format!("{container}{}{symbol}", member_separator(language, kind))),
    }
}

/// Size limits for chunks, in estimated model tokens.
#[derive(Debug, Clone, Copy)]
pub struct ChunkConfig {
    /// Largest chunk, in estimated tokens. Units above it are split.
    pub max_tokens: usize,
    /// Lines repeated at the start of the next piece when a unit or window is split.
    pub overlap_lines: usize,
    /// What precedes the code in the text the embedder sees.
    pub header: EmbedHeader,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        // The embedder reads 256 tokens; the header (path + symbol) takes ~10-30 of them, and
        // the estimate errs low on dense code, so leave some room.
        ChunkConfig { max_tokens: 224, overlap_lines: 2, header: EmbedHeader::PathAndSymbol }
    }
}

/// Bumped when the chunker's output changes for the same input and settings. 7: Ruby, PHP, C#,
/// Kotlin, Swift, Scala, Elixir, Lua, shell, Zig and Haskell by syntax; scripts by their `#!`.
/// 8: Kotlin by top-level segments when its grammar gives up; a long uncovered gap in windows.
/// 9: YAML, TOML and JSON by their keys. 10: Dart, Objective-C, OCaml, R and Julia by syntax.
/// 11: comments beside a container's body that lead its first member are that member's.
/// 12: OCaml interfaces (`.mli`) by syntax; an odoc comment right below an item is its.
const CHUNKER_VERSION: u32 = 12;

/// Everything that decides which chunks a file becomes and what text each embeds, as one string
/// stored in the manifest: an index made with another recipe is chunked again.
pub fn recipe(config: &ChunkConfig) -> String {
    format!(
        "chunker {CHUNKER_VERSION}; max_tokens {}; overlap_lines {}; header {:?}",
        config.max_tokens, config.overlap_lines, config.header
    )
}

/// The one-line header put before a chunk's code for embedding (chosen on the retrieval
/// benchmark; see ARCHITECTURE.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedHeader {
    /// The code alone.
    None,
    /// The symbol path (`Shard::open`), when the chunk has one.
    Symbol,
    /// The file path, then the symbol path.
    PathAndSymbol,
}

/// A piece of a file before line numbers and hashes are attached.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub range: Range<usize>,
    pub kind: ChunkKind,
    pub symbol: Option<String>,
    pub container: Option<String>,
}

/// The text the embedder sees for a chunk: a one-line header (by default the file path and the
/// symbol path), then the code.
///
/// Embeddings are cached by this text, so with the path in the header a renamed file's chunks
/// are embedded again; the retrieval benchmark pays for that (ARCHITECTURE.md: header).
pub fn embedding_text(chunk: &Chunk, file_text: &str, header: EmbedHeader) -> String {
    let code = chunk.text(file_text);
    match (header, chunk.symbol_path()) {
        (EmbedHeader::None, _) | (EmbedHeader::Symbol, None) => code.to_string(),
        (EmbedHeader::Symbol, Some(symbol)) => format!("{symbol}\n{code}"),
        (EmbedHeader::PathAndSymbol, Some(symbol)) => format!("{} {symbol}\n{code}", chunk.path),
        (EmbedHeader::PathAndSymbol, None) => format!("{}\n{code}", chunk.path),
    }
}

/// A named definition of a file, from its syntax tree: what an outline lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Definition {
    pub kind: ChunkKind,
    /// `container::name` (or `container.name`, by language), or just the name.
    pub symbol: String,
    /// First line, 1-based.
    pub start_line: u32,
    /// Last line, 1-based, inclusive.
    pub end_line: u32,
}

/// The named definitions of a file in source order, nested members included whatever their
/// size. Markdown gives its sections, YAML, TOML and JSON their keys (`jobs.build`); other
/// files without a grammar, or files too slow or too deep to parse, give none.
pub fn outline(text: &str, language: Language, config: &ChunkConfig) -> Vec<Definition> {
    if language.is_config() {
        let lines = LineIndex::new(text);
        return config::definitions(text, language)
            .into_iter()
            .map(|(name, container, range)| Definition {
                kind: ChunkKind::Section,
                symbol: match container {
                    Some(container) => format!("{container}.{name}"),
                    None => name,
                },
                start_line: lines.line_of(range.start),
                end_line: lines.line_of(range.end.saturating_sub(1).max(range.start)),
            })
            .collect();
    }
    if language == Language::Markdown {
        let mut sections: Vec<Definition> = Vec::new();
        for chunk in chunk_file("", text, language, config) {
            let Some(symbol) = chunk.symbol_path() else { continue };
            // A long section is split into pieces: list it once, whole.
            if let Some(last) = sections.last_mut()
                && last.symbol == symbol
                && chunk.start_line <= last.end_line + 1
            {
                last.end_line = last.end_line.max(chunk.end_line);
                continue;
            }
            sections.push(Definition {
                kind: chunk.kind,
                symbol,
                start_line: chunk.start_line,
                end_line: chunk.end_line,
            });
        }
        return sections;
    }
    let Some(grammar) = language.grammar() else { return Vec::new() };
    let lines = LineIndex::new(text);
    syntax::definitions(text, language, grammar)
        .unwrap_or_default()
        .into_iter()
        .map(|(kind, name, container, range)| Definition {
            kind,
            symbol: match container {
                Some(container) => format!("{container}{}{name}", member_separator(language, kind)),
                None => name,
            },
            start_line: lines.line_of(range.start),
            end_line: lines.line_of(range.end.saturating_sub(1).max(range.start)),
        })
        .collect()
}

/// The line a chunk's definition is on, 1-based: a chunk may start with the imports, attributes
/// or doc comment that lead its definition, and a jump to the definition (an editor's symbol
/// list, `find_symbol`, `--vimgrep`) belongs on the line that names it. That is the first line
/// of the chunk, outside comments, where `symbol`'s last segment stands as a whole word; without
/// one, the chunk's first non-blank line. `lines` are the file's.
pub fn definition_line(lines: &[&str], start_line: u32, end_line: u32, symbol: Option<&str>) -> u32 {
    let last = end_line.min(lines.len() as u32);
    let text = |n: u32| lines.get(n as usize - 1).copied().unwrap_or("");
    let comment = |t: &str| {
        let t = t.trim_start();
        ["//", "#", "/*", "*", "--", "\"\"\"", "'''", ";"].iter().any(|m| t.starts_with(m))
    };
    if let Some(name) = symbol.map(last_segment).filter(|n| !n.is_empty())
        && let Some(n) = (start_line..=last).find(|&n| !comment(text(n)) && word_at(text(n), name).is_some())
    {
        return n;
    }
    (start_line..=last).find(|&n| !text(n).trim().is_empty()).unwrap_or(start_line)
}

/// A qualified name's own part (`Builder` of `Rack::Builder`, `call` of `Rack::Builder#call`).
pub fn last_segment(symbol: &str) -> &str {
    symbol.rsplit(['.', ':', '#', '\\', '/']).next().unwrap_or(symbol)
}

/// Byte offset of `word` in `text` where it stands as a whole identifier.
pub fn word_at(text: &str, word: &str) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// Splits one file into chunks.
///
/// Pure: the same input gives the same chunks. `path` is only carried into the chunks.
pub fn chunk_file(path: &str, text: &str, language: Language, config: &ChunkConfig) -> Vec<Chunk> {
    let pieces = match language {
        Language::Markdown => markdown::split(text, config),
        Language::Yaml | Language::Toml | Language::Json => {
            config::split(text, language, config).unwrap_or_else(|| lines::windows(text, 0..text.len(), config))
        }
        Language::Text => lines::windows(text, 0..text.len(), config),
        _ => match language.grammar() {
            Some(grammar) => syntax::split(text, language, grammar, config)
                .unwrap_or_else(|| lines::windows(text, 0..text.len(), config)),
            None => lines::windows(text, 0..text.len(), config),
        },
    };
    let pieces = cover_gaps(text, pieces, config);
    let line_starts = LineIndex::new(text);
    let path: Arc<str> = Arc::from(path);
    pieces
        .into_iter()
        .filter_map(|piece| {
            let range = trim_range(text, piece.range);
            if range.is_empty() {
                return None;
            }
            let body = &text[range.clone()];
            Some(Chunk {
                path: Arc::clone(&path),
                start_line: line_starts.line_of(range.start),
                end_line: line_starts.line_of(range.end - 1),
                hash: ContentHash::of(body),
                byte_range: range,
                language,
                kind: piece.kind,
                symbol: piece.symbol,
                container: piece.container,
            })
        })
        .collect()
}

/// Inserts `Code` pieces for any non-blank text no piece covers, so nothing is dropped even if a
/// language rule misses a node, and sorts pieces by start.
///
/// A gap can be long: tree-sitter's error recovery may end a file in one ERROR node whose
/// children stop early (a Kotlin `value class` whose constructor sits on the next line made
/// the last 440 lines of a real file one such tail). A gap over the token budget is cut into
/// line windows, as text without a grammar is, so the budget holds there too.
fn cover_gaps(text: &str, mut pieces: Vec<Piece>, config: &ChunkConfig) -> Vec<Piece> {
    pieces.sort_by_key(|p| (p.range.start, p.range.end));
    let mut out = Vec::with_capacity(pieces.len());
    let gap = |range: Range<usize>, out: &mut Vec<Piece>| {
        if text[range.clone()].trim().is_empty() {
            return;
        }
        out.extend(lines::unit(text, range, ChunkKind::Code, None, None, config));
    };
    // A byte-order mark (C# files often start with one) is no code of its own: the first piece
    // covers its line.
    let mut covered = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    for piece in pieces {
        if piece.range.start > covered {
            gap(covered..piece.range.start, &mut out);
        }
        covered = covered.max(piece.range.end);
        out.push(piece);
    }
    if covered < text.len() {
        gap(covered..text.len(), &mut out);
    }
    out
}

/// Shrinks a range so it starts and ends on non-whitespace.
fn trim_range(text: &str, range: Range<usize>) -> Range<usize> {
    let slice = &text[range.clone()];
    let start = range.start + (slice.len() - slice.trim_start().len());
    let end = range.end - (slice.len() - slice.trim_end().len());
    if start >= end { start..start } else { start..end }
}

/// Maps byte offsets to 1-based line numbers.
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// 1-based line containing `offset`.
    pub fn line_of(&self, offset: usize) -> u32 {
        let idx = self.starts.partition_point(|&s| s <= offset);
        idx as u32
    }

    /// Number of lines (a text ending in a newline has an empty last line).
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// Byte offset where 0-based line `line` starts (clamped to the last line).
    pub fn start_of(&self, line: usize) -> usize {
        self.starts[line.min(self.starts.len() - 1)]
    }
}

#[cfg(test)]
mod tests;
