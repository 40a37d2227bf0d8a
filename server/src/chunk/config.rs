//! Configuration and data files — YAML, TOML, JSON — split along their keys.
//!
//! People search these for where something is set ("where is the retry timeout configured"),
//! and the answer is a key in a section: `jobs.build`, `[profile.release]`,
//! `compilerOptions.paths`. Each format is read into one tree of entries (a key and the text
//! up to the next key at its level), and one emitter turns that tree into chunks:
//!
//! - an entry whose value is a structure (a mapping, a table, a list) is a section: its own
//!   chunk, named by its key with the keys above it as its container, like a definition;
//! - a section over the token budget is entered, so its members become chunks of their own
//!   (the section's first lines lead its first piece, so `jobs:` stays with `build:`); one
//!   without members to enter is cut into line windows that keep its name;
//! - scalar entries (`name: ci`, `version = "1.2"`) and unnamed list items are grouped with
//!   their neighbours up to the budget, named by the section they are in.
//!
//! The readers are small and forgiving on purpose, not validating parsers: they find where
//! keys start (indentation for YAML, `[table]` lines for TOML, a scanner that knows strings
//! and brackets for JSON). Text they cannot read — JSON that does not balance — is cut into
//! line windows as any other text.
//!
//! Long on purpose: three small hand-written readers (YAML, TOML, JSON: no parser dependency, and
//! line numbers kept exact) that share the section rules below them.

use std::ops::Range;

use super::{ChunkConfig, ChunkKind, Piece, estimate_tokens, lines};
use crate::lang::Language;

/// How deep the readers follow nesting: chunks rarely need more, and deeper structures are
/// kept whole inside their entry (so no input can exhaust the stack).
const MAX_DEPTH: usize = 12;

/// Keys whose value names a list item (`- name: build`, `{"id": "lint", …}`).
const ITEM_NAMES: [&str; 3] = ["name", "id", "key"];

/// One key of a file: its name (a TOML table's whole dotted name), the text from its first
/// line (leading comments included) to the next key at its level, and its own members.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The key's path below its parent: one key, or a TOML table's dotted name. Empty for an
    /// unnamed list item.
    pub path: Vec<String>,
    pub range: Range<usize>,
    /// A structure (mapping, table, list of named items): its own chunk.
    pub section: bool,
    pub members: Vec<Entry>,
}

/// The pieces of a configuration file, or `None` when its structure cannot be read.
pub(crate) fn split(text: &str, language: Language, config: &ChunkConfig) -> Option<Vec<Piece>> {
    let entries = entries(text, language)?;
    let mut out = Vec::new();
    emit(text, &entries, &[], None, config, &mut out);
    Some(out)
}

/// Every key of a configuration file in source order, members included: (key, container path,
/// byte range), for outlines and exact symbol lookups. Empty when the structure cannot be read.
pub(crate) fn definitions(text: &str, language: Language) -> Vec<(String, Option<String>, Range<usize>)> {
    let mut out = Vec::new();
    if let Some(entries) = entries(text, language) {
        collect(text, &entries, &[], &mut out);
    }
    out
}

fn entries(text: &str, language: Language) -> Option<Vec<Entry>> {
    match language {
        Language::Yaml => Some(yaml::entries(text)),
        Language::Toml => Some(toml::entries(text)),
        Language::Json => json::entries(text),
        _ => None,
    }
}

fn collect(text: &str, entries: &[Entry], parent: &[String], out: &mut Vec<(String, Option<String>, Range<usize>)>) {
    for entry in entries {
        let mut path = parent.to_vec();
        path.extend(entry.path.iter().cloned());
        let range = super::trim_range(text, entry.range.clone());
        // An unnamed item lists nothing of its own; its members stand under its parent.
        if !entry.path.is_empty()
            && !range.is_empty()
            && let (Some(name), container) = split_path(&path)
        {
            out.push((name, container, range));
        }
        collect(text, &entry.members, &path, out);
    }
}

/// Turns entries into pieces (see the module comment). `lead`, when set, is where the first
/// piece must start: the first lines of a section that was entered.
fn emit(
    text: &str,
    entries: &[Entry],
    parent: &[String],
    mut lead: Option<usize>,
    config: &ChunkConfig,
    out: &mut Vec<Piece>,
) {
    let mut group: Option<Group> = None;
    let crowd = entries.len() > CROWD;
    for entry in entries {
        let range = lead.take().map_or(entry.range.clone(), |start| start.min(entry.range.start)..entry.range.end);
        let mut path = parent.to_vec();
        path.extend(entry.path.iter().cloned());
        let tokens = estimate_tokens(&text[range.clone()]);
        // A section of a few lines (one of a thousand MIME types, a `[dependencies.serde]`
        // table) goes with its neighbours: chunks that small cost an embedding each and tell
        // no more than their group does; an outline still lists every key.
        let small = tokens < config.max_tokens / SMALL_SECTION;
        let named_section = entry.section && !entry.path.is_empty();
        // A small section joins its neighbours when there are many of them (a thousand MIME
        // types) or when they share a name below this level (`[dependencies.serde]`,
        // `[dependencies.tokio]`): chunks that small would cost an embedding each and tell
        // no more than their group does. An outline still lists every key.
        let joins =
            |open: &Group| crowd || open.prefix.as_ref().is_some_and(|prefix| shared(prefix, &path) > parent.len());
        if !named_section || small {
            let fits = |open: &Group| estimate_tokens(&text[open.range.start..range.end]) <= config.max_tokens;
            let name = if entry.path.is_empty() { parent.to_vec() } else { path.clone() };
            group = match group {
                Some(mut open) if fits(&open) && (!named_section || joins(&open)) => {
                    open.range.end = range.end;
                    open.add(name, named_section);
                    Some(open)
                }
                open => {
                    if let Some(open) = open {
                        open.push(text, parent, config, out);
                    }
                    Some(Group { range, prefix: Some(name), sections: named_section })
                }
            };
            continue;
        }
        if let Some(open) = group.take() {
            open.push(text, parent, config, out);
        }
        let (symbol, container) = split_path(&path);
        if tokens <= config.max_tokens {
            out.push(Piece { range, kind: ChunkKind::Section, symbol, container });
        } else if !entry.members.is_empty() {
            emit(text, &entry.members, &path, Some(range.start), config, out);
            // Text after the last member (a closing bracket) belongs to the section too.
            let covered = entry.members.last().map_or(range.start, |m| m.range.end);
            let rest = &text[covered.min(range.end)..range.end];
            if rest.chars().any(char::is_alphanumeric) {
                push_windows(text, covered..range.end, symbol, container, config, out);
            } else if let Some(last) = out.last_mut().filter(|p| p.range.end <= range.end) {
                // Closing brackets and commas: part of the last piece, not a chunk of their own.
                last.range.end = range.end;
            }
        } else {
            push_windows(text, range, symbol, container, config, out);
        }
    }
    if let Some(open) = group {
        open.push(text, parent, config, out);
    }
}

/// A section below `max_tokens / SMALL_SECTION` tokens may be grouped with its neighbours.
const SMALL_SECTION: usize = 4;

/// More entries than this at one level are a collection (data more than configuration): its
/// small sections are grouped whatever their names.
const CROWD: usize = 32;

/// How many leading keys two paths share.
fn shared(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Neighbouring scalars, unnamed list items and small sections, chunked together.
struct Group {
    range: Range<usize>,
    /// The longest key path every entry of the group starts with.
    prefix: Option<Vec<String>>,
    /// Whether every entry is a named section.
    sections: bool,
}

impl Group {
    /// An entry's key path (an unnamed item's is the section it is in).
    fn add(&mut self, path: Vec<String>, section: bool) {
        self.sections &= section;
        self.prefix = Some(match self.prefix.take() {
            None => path,
            Some(prefix) => {
                let keep = shared(&prefix, &path);
                prefix.into_iter().take(keep).collect()
            }
        });
    }

    /// Sections are named by what they share (`dependencies` for `[dependencies.serde]` and
    /// `[dependencies.tokio]`, a section's own name when alone); anything else by the section
    /// it is in, or as loose code at the top of the file.
    fn push(self, text: &str, parent: &[String], config: &ChunkConfig, out: &mut Vec<Piece>) {
        let path = match self.prefix {
            Some(prefix) if self.sections && prefix.len() > parent.len() => prefix,
            _ => parent.to_vec(),
        };
        let (symbol, container) = split_path(&path);
        push_windows(text, self.range, symbol, container, config, out);
    }
}

/// A key path as (its last key, the keys above it joined by dots).
fn split_path(path: &[String]) -> (Option<String>, Option<String>) {
    match path.split_last() {
        Some((last, above)) => (Some(last.clone()), (!above.is_empty()).then(|| above.join("."))),
        None => (None, None),
    }
}

fn push_windows(
    text: &str,
    range: Range<usize>,
    symbol: Option<String>,
    container: Option<String>,
    config: &ChunkConfig,
    out: &mut Vec<Piece>,
) {
    if text[range.clone()].trim().is_empty() {
        return;
    }
    let kind = if symbol.is_some() { ChunkKind::Section } else { ChunkKind::Code };
    out.extend(lines::unit(text, range, kind, symbol, container, config));
}

/// A file's lines as (start, end) byte offsets, each end past its newline.
fn line_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        spans.push(start..start + line.len());
        start += line.len();
    }
    spans
}

/// Removes one level of matching quotes around a key.
fn unquote(key: &str) -> &str {
    let key = key.trim();
    for quote in ['"', '\''] {
        if key.len() >= 2 && key.starts_with(quote) && key.ends_with(quote) {
            return &key[1..key.len() - 1];
        }
    }
    key
}

mod yaml {
    //! YAML by indentation: a key is `key:` (plain or quoted) at the indentation of its
    //! siblings; its value is what follows on its line or the more indented lines below it.
    //! Documents (`---`) are read one after another.

    use super::{Entry, ITEM_NAMES, MAX_DEPTH, line_spans, unquote};

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Value {
        /// Nothing after the colon: a structure follows on the next lines (or nothing).
        Nested,
        /// `|` or `>`: a block of text follows.
        Block,
        /// A value on the key's own line.
        Inline,
    }

    #[derive(Debug, Clone)]
    enum Line {
        Blank,
        Comment,
        Document,
        Key {
            key: String,
            value: Value,
        },
        /// `- …`: a list item, with the name its first key gives it (`- name: build`).
        Item {
            name: Option<String>,
        },
        Other,
    }

    struct Scanned {
        span: std::ops::Range<usize>,
        indent: usize,
        line: Line,
    }

    pub(super) fn entries(text: &str) -> Vec<Entry> {
        let lines: Vec<Scanned> = line_spans(text)
            .into_iter()
            .map(|span| {
                let raw = &text[span.clone()];
                let indent = raw.len() - raw.trim_start_matches(' ').len();
                Scanned { line: classify(raw), span, indent }
            })
            .collect();
        let mut out = Vec::new();
        let mut start = 0;
        // Each document on its own; the separator line leads the next document's first entry.
        for (i, line) in lines.iter().enumerate() {
            if matches!(line.line, Line::Document) {
                out.extend(block(&lines, start, i, None, 0));
                start = i;
            }
        }
        out.extend(block(&lines, start, lines.len(), None, 0));
        out
    }

    /// The entries of lines `from..to`, which are more indented than `parent` (the parent's
    /// indentation; `None` at the top).
    fn block(lines: &[Scanned], from: usize, to: usize, parent: Option<usize>, depth: usize) -> Vec<Entry> {
        let Some(indent) = lines[from..to].iter().find(|l| inside(l, parent)).map(|l| l.indent) else {
            return Vec::new();
        };
        // Where each entry starts: its key line, moved up over the comments right above it.
        // List items written at their key's own indentation (`steps:` then `- run: make`) are
        // that key's value, not its siblings.
        let mut starts: Vec<usize> = Vec::new();
        let mut items_of_key = false;
        for i in from..to {
            if lines[i].indent != indent {
                continue;
            }
            match &lines[i].line {
                Line::Key { value, .. } => items_of_key = *value == Value::Nested,
                Line::Item { .. } if items_of_key => continue,
                Line::Item { .. } => {}
                _ => continue,
            }
            let mut start = i;
            while start > from && matches!(lines[start - 1].line, Line::Comment) && lines[start - 1].indent == indent {
                start -= 1;
            }
            starts.push(start);
        }
        let mut out = Vec::with_capacity(starts.len());
        for (n, &start) in starts.iter().enumerate() {
            let end = starts.get(n + 1).copied().unwrap_or(to);
            // The first entry also takes what comes before it in the block (a document
            // separator, loose comments), so the entries tile the block.
            let begin = if n == 0 { from } else { start };
            let key_line = (start..end).find(|&i| lines[i].indent == indent && structural(&lines[i])).unwrap_or(start);
            let range = lines[begin].span.start..lines[end - 1].span.end;
            let (path, section, members) = match &lines[key_line].line {
                Line::Key { key, value } => {
                    let deeper = (key_line + 1..end).any(|i| inside(&lines[i], Some(indent)));
                    let nested = *value == Value::Nested && deeper;
                    let members = if nested && depth < MAX_DEPTH {
                        block(lines, key_line + 1, end, Some(indent), depth + 1)
                    } else {
                        Vec::new()
                    };
                    (vec![key.clone()], nested, members)
                }
                Line::Item { name: Some(name) } => (vec![name.clone()], true, Vec::new()),
                _ => (Vec::new(), false, Vec::new()),
            };
            out.push(Entry { path, range, section, members });
        }
        out
    }

    fn structural(line: &Scanned) -> bool {
        matches!(line.line, Line::Key { .. } | Line::Item { .. })
    }

    /// A key or item below a parent at indentation `parent` (`None`: the top): more indented,
    /// or a list item at the parent's own indentation.
    fn inside(line: &Scanned, parent: Option<usize>) -> bool {
        structural(line)
            && parent.is_none_or(|p| line.indent > p || (line.indent == p && matches!(line.line, Line::Item { .. })))
    }

    fn classify(raw: &str) -> Line {
        let line = raw.trim();
        if line.is_empty() {
            return Line::Blank;
        }
        if line.starts_with('#') {
            return Line::Comment;
        }
        if raw.starts_with("---") || raw.starts_with("...") {
            let rest = &raw[3..];
            if rest.trim().is_empty() || rest.starts_with([' ', '\t']) {
                return Line::Document;
            }
        }
        if let Some(item) = line.strip_prefix("- ").or_else(|| (line == "-").then_some("")) {
            let name = match key_value(item.trim_start()) {
                Some((key, value)) if ITEM_NAMES.contains(&key.as_str()) && !value.is_empty() => {
                    Some(unquote(strip_comment(value)).to_string()).filter(|n| !n.is_empty())
                }
                _ => None,
            };
            return Line::Item { name };
        }
        match key_value(line) {
            Some((key, value)) => {
                let value = strip_comment(value).trim();
                let value = value.strip_prefix('&').map_or(value, |anchored| {
                    // `key: &anchor` holds a structure below; `key: &anchor value` a scalar.
                    anchored.split_once(' ').map_or("", |(_, rest)| rest.trim())
                });
                let kind = if value.is_empty() {
                    Value::Nested
                } else if value.starts_with(['|', '>']) {
                    Value::Block
                } else {
                    Value::Inline
                };
                Line::Key { key, value: kind }
            }
            None => Line::Other,
        }
    }

    /// `key: value` → (key, value), for a plain or quoted key.
    fn key_value(line: &str) -> Option<(String, &str)> {
        let (key, rest) = if line.starts_with(['"', '\'']) {
            let quote = line.chars().next()?;
            let close = line[1..].find(quote)? + 1;
            (&line[..=close], &line[close + 1..])
        } else {
            if line.starts_with(['-', '[', '{', '|', '>', '!', '&', '*', '%', '@', '`', '?', ':', ',']) {
                return None;
            }
            let colon = line
                .match_indices(':')
                .map(|(i, _)| i)
                .find(|&i| line[i + 1..].is_empty() || line[i + 1..].starts_with([' ', '\t', '\r', '\n']))?;
            (&line[..colon], &line[colon..])
        };
        let rest = rest.strip_prefix(':')?;
        if !(rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n'])) {
            return None;
        }
        let key = unquote(key).trim();
        if key.is_empty() || key.contains(" #") {
            return None;
        }
        Some((key.to_string(), rest.trim()))
    }

    fn strip_comment(value: &str) -> &str {
        match value.find(" #") {
            Some(at) if !value.starts_with(['"', '\'']) => &value[..at],
            _ => value,
        }
    }
}

mod toml {
    //! TOML by its `[table]` and `[[array.table]]` lines; keys inside a table are its members.

    use super::{Entry, line_spans, unquote};

    pub(super) fn entries(text: &str) -> Vec<Entry> {
        let spans = line_spans(text);
        // (line, table name) of every header, and the key lines, outside multi-line strings
        // and multi-line arrays or inline tables.
        let mut headers: Vec<(usize, Vec<String>)> = Vec::new();
        let mut keys: Vec<(usize, String)> = Vec::new();
        let mut open_string: Option<&str> = None;
        let mut depth: i32 = 0;
        for (i, span) in spans.iter().enumerate() {
            let line = text[span.clone()].trim();
            if let Some(quote) = open_string {
                if line.matches(quote).count() % 2 == 1 {
                    open_string = None;
                }
                continue;
            }
            if depth == 0 {
                if let Some(name) = header(line) {
                    headers.push((i, name));
                    continue;
                }
                if let Some(key) = key_of(line) {
                    keys.push((i, key));
                }
            }
            let code = strip_comment(line);
            for quote in ["\"\"\"", "'''"] {
                if code.matches(quote).count() % 2 == 1 {
                    open_string = Some(quote);
                }
            }
            if open_string.is_none() {
                depth = (depth + brackets(code)).max(0);
            }
        }
        // Each header moves up over the comments right above it.
        let starts: Vec<usize> = headers
            .iter()
            .map(|&(line, _)| {
                let mut start = line;
                while start > 0 && text[spans[start - 1].clone()].trim_start().starts_with('#') {
                    start -= 1;
                }
                start
            })
            .collect();
        let offset = |line: usize| spans.get(line).map_or(text.len(), |s| s.start);
        let members = |from: usize, to: usize| -> Vec<Entry> {
            // Keys are in line order: the ones of lines `from..to` are one run of them.
            let inside = &keys[keys.partition_point(|(l, _)| *l < from)..keys.partition_point(|(l, _)| *l < to)];
            inside
                .iter()
                .enumerate()
                .map(|(n, (line, key))| {
                    let begin = if n == 0 { from } else { *line };
                    let end = inside.get(n + 1).map_or(to, |(next, _)| *next);
                    Entry {
                        path: vec![key.clone()],
                        range: offset(begin)..offset(end),
                        section: false,
                        members: Vec::new(),
                    }
                })
                .collect()
        };
        let mut out = Vec::new();
        let first = starts.first().copied().unwrap_or(spans.len());
        // Keys above the first table: loose entries at the top.
        out.extend(members(0, first));
        for (n, (_, name)) in headers.iter().enumerate() {
            let end = starts.get(n + 1).copied().unwrap_or(spans.len());
            let body = headers[n].0 + 1;
            let mut table = members(body, end);
            if let Some(first_member) = table.first_mut() {
                first_member.range.start = offset(body);
            }
            out.push(Entry {
                path: name.clone(),
                range: offset(starts[n])..offset(end),
                section: true,
                members: table,
            });
        }
        out
    }

    /// `[a.b]` or `[[a.b]]` → ["a", "b"] (quoted parts unquoted).
    fn header(line: &str) -> Option<Vec<String>> {
        let line = strip_comment(line).trim();
        let inner = line
            .strip_prefix("[[")
            .and_then(|l| l.strip_suffix("]]"))
            .or_else(|| line.strip_prefix('[').and_then(|l| l.strip_suffix(']')).filter(|l| !l.starts_with('[')))?;
        let parts = dotted(inner);
        (!parts.is_empty() && parts.iter().all(|p| !p.is_empty())).then_some(parts)
    }

    /// The key of a `key = value` line (a dotted key's whole text, `a.b`).
    fn key_of(line: &str) -> Option<String> {
        if line.starts_with(['#', '[']) {
            return None;
        }
        let eq = equals_outside_quotes(line)?;
        let key = dotted(&line[..eq]).join(".");
        (!key.is_empty()).then_some(key)
    }

    /// The characters of a line outside its quoted strings (the quotes left out too), with
    /// their byte offsets: where a TOML key, comment, dot or bracket can be.
    fn unquoted(line: &str) -> impl Iterator<Item = (usize, char)> + '_ {
        let mut quote: Option<char> = None;
        line.char_indices().filter(move |&(_, c)| match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                false
            }
            None if matches!(c, '"' | '\'') => {
                quote = Some(c);
                false
            }
            None => true,
        })
    }

    fn equals_outside_quotes(line: &str) -> Option<usize> {
        for (i, c) in unquoted(line) {
            if c == '=' {
                return Some(i);
            }
            if !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ' ' | '\t')) {
                return None;
            }
        }
        None
    }

    /// Splits a dotted key at dots outside quotes, each part trimmed and unquoted.
    fn dotted(key: &str) -> Vec<String> {
        let mut parts = Vec::new();
        let mut start = 0;
        for (i, _) in unquoted(key).filter(|&(_, c)| c == '.') {
            parts.push(unquote(&key[start..i]).to_string());
            start = i + 1;
        }
        parts.push(unquote(&key[start..]).to_string());
        parts
    }

    fn strip_comment(line: &str) -> &str {
        unquoted(line).find(|&(_, c)| c == '#').map_or(line, |(i, _)| &line[..i])
    }

    /// Net brackets opened on a line of code, outside strings: an array or inline table that
    /// goes on below it hides its lines from the key search.
    fn brackets(code: &str) -> i32 {
        unquoted(code)
            .map(|(_, c)| match c {
                '[' | '{' => 1,
                ']' | '}' => -1,
                _ => 0,
            })
            .sum()
    }
}

mod json {
    //! JSON (and JSON with comments) by a scanner that knows strings, comments and brackets:
    //! an object's members are its keys, a list's items its entries.

    use super::{Entry, ITEM_NAMES, MAX_DEPTH};

    pub(super) fn entries(text: &str) -> Option<Vec<Entry>> {
        let mut scanner = Scanner { bytes: text.as_bytes(), text, at: 0 };
        scanner.skip_space();
        let value = scanner.value(0)?;
        scanner.skip_space();
        if scanner.at < text.len() {
            return None;
        }
        Some(tile(value.entries, 0, text.len()))
    }

    /// Stretches entries so they tile `start..end`: each runs to where the next begins, the
    /// first from `start` (the opening bracket), the last to `end` (the closing one).
    fn tile(mut entries: Vec<Entry>, start: usize, end: usize) -> Vec<Entry> {
        let starts: Vec<usize> = entries.iter().map(|e| e.range.start).collect();
        let count = entries.len();
        for (n, entry) in entries.iter_mut().enumerate() {
            let begin = if n == 0 { start } else { entry.range.start };
            let finish = if n + 1 == count { end } else { starts[n + 1] };
            entry.range = begin..finish;
        }
        entries
    }

    struct Value {
        range: std::ops::Range<usize>,
        /// An object's members or a list's items (empty for a scalar).
        entries: Vec<Entry>,
        structure: bool,
        /// For an object: the string value of its `name`/`id`/`key` member.
        name: Option<String>,
    }

    struct Scanner<'a> {
        bytes: &'a [u8],
        text: &'a str,
        at: usize,
    }

    impl Scanner<'_> {
        fn peek(&self) -> Option<u8> {
            self.bytes.get(self.at).copied()
        }

        fn skip_space(&mut self) {
            loop {
                match self.peek() {
                    Some(b' ' | b'\t' | b'\n' | b'\r') => self.at += 1,
                    Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'/') => {
                        while self.peek().is_some_and(|b| b != b'\n') {
                            self.at += 1;
                        }
                    }
                    Some(b'/') if self.bytes.get(self.at + 1) == Some(&b'*') => {
                        self.at += 2;
                        while self.at < self.bytes.len() && !self.bytes[self.at..].starts_with(b"*/") {
                            self.at += 1;
                        }
                        self.at = (self.at + 2).min(self.bytes.len());
                    }
                    _ => return,
                }
            }
        }

        /// A string starting at the current `"`; returns its contents (escapes kept).
        fn string(&mut self) -> Option<&str> {
            let start = self.at + 1;
            let mut i = start;
            while i < self.bytes.len() {
                match self.bytes[i] {
                    b'\\' => i += 2,
                    b'"' => {
                        self.at = i + 1;
                        return self.text.get(start..i);
                    }
                    b'\n' => return None,
                    _ => i += 1,
                }
            }
            None
        }

        fn value(&mut self, depth: usize) -> Option<Value> {
            let start = self.at;
            match self.peek()? {
                b'{' if depth < MAX_DEPTH => self.object(depth),
                b'[' if depth < MAX_DEPTH => self.list(depth),
                b'{' | b'[' => {
                    self.skip_balanced()?;
                    Some(Value { range: start..self.at, entries: Vec::new(), structure: true, name: None })
                }
                b'"' => {
                    self.string()?;
                    Some(Value { range: start..self.at, entries: Vec::new(), structure: false, name: None })
                }
                _ => {
                    while self
                        .peek()
                        .is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b'/'))
                    {
                        self.at += 1;
                    }
                    (self.at > start).then(|| Value {
                        range: start..self.at,
                        entries: Vec::new(),
                        structure: false,
                        name: None,
                    })
                }
            }
        }

        fn object(&mut self, depth: usize) -> Option<Value> {
            let start = self.at;
            self.at += 1;
            let mut members = Vec::new();
            let mut name = None;
            loop {
                self.skip_space();
                match self.peek()? {
                    b'}' => break,
                    b',' => {
                        self.at += 1;
                        continue;
                    }
                    b'"' => {}
                    _ => return None,
                }
                let key_start = self.at;
                let key = self.string()?.to_string();
                self.skip_space();
                if self.peek()? != b':' {
                    return None;
                }
                self.at += 1;
                self.skip_space();
                let value = self.value(depth + 1)?;
                if ITEM_NAMES.contains(&key.as_str()) && !value.structure && name.is_none() {
                    name = self.text.get(value.range.clone()).map(|v| v.trim_matches('"').to_string());
                }
                let section = value.structure && !value.entries.is_empty();
                let end = value.range.end;
                members.push(Entry {
                    path: vec![key],
                    range: key_start..end,
                    section,
                    members: tile(value.entries, value.range.start, end),
                });
            }
            self.at += 1;
            Some(Value { range: start..self.at, entries: members, structure: true, name })
        }

        fn list(&mut self, depth: usize) -> Option<Value> {
            let start = self.at;
            self.at += 1;
            let mut items = Vec::new();
            loop {
                self.skip_space();
                match self.peek()? {
                    b']' => break,
                    b',' => {
                        self.at += 1;
                        continue;
                    }
                    _ => {}
                }
                let value = self.value(depth + 1)?;
                let end = value.range.end;
                let begin = value.range.start;
                let (path, section) = match value.name.filter(|n| !n.is_empty()) {
                    Some(name) => (vec![name], true),
                    None => (Vec::new(), false),
                };
                // A named item is a section of its own; its members are not entered (it is
                // cut into windows when too big), so they need no tiling here.
                items.push(Entry { path, range: begin..end, section, members: Vec::new() });
            }
            self.at += 1;
            Some(Value { range: start..self.at, entries: items, structure: true, name: None })
        }

        /// Skips a bracketed value without reading its structure (past the depth limit).
        fn skip_balanced(&mut self) -> Option<()> {
            let mut depth = 0usize;
            while let Some(b) = self.peek() {
                match b {
                    b'"' => {
                        self.string()?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            self.at += 1;
                            return Some(());
                        }
                    }
                    _ => {}
                }
                self.at += 1;
            }
            None
        }
    }
}
