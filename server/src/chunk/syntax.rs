//! Syntax-aware splitting with tree-sitter.
//!
//! The file's syntax tree is walked top-down. Each node plays one of four roles (see [`Role`]):
//! a definition becomes a chunk with its leading comments and attributes; a container definition
//! that is too big (a class, impl, trait, interface, module) gives a header chunk and is entered,
//! so its members become chunks with the container's name as their container path; other nodes
//! are merged with their neighbours up to the size budget. Anything still over budget is split at
//! the boundaries of its children (statements), recursively, with a few lines of overlap.
//!
//! Long on purpose: one `classify_<language>` per grammar (25) beside the walk they feed, so a
//! language's roles are read and changed next to the others'; a grammar's rules are 20-60 lines.

use std::ops::Range;
use std::time::{Duration, Instant};

use tree_sitter::{Node, Parser};

use super::{ChunkConfig, ChunkKind, LineIndex, Piece, estimate_tokens, lines, path_separator};
use crate::lang::Language;

pub(crate) fn split(
    text: &str,
    language: Language,
    grammar: tree_sitter::Language,
    config: &ChunkConfig,
) -> Option<Vec<Piece>> {
    let trees = parse_file(text, language, grammar)?;
    let mut splitter = Splitter { text, language, config, lines: LineIndex::new(text), raw: Vec::new() };
    for tree in &trees {
        splitter.visit_children(tree.root_node(), &Scope::default());
    }
    Some(splitter.finish())
}

/// A definition found by [`definitions`]: kind, name, container path, byte range.
pub(crate) type RawDefinition = (ChunkKind, String, Option<String>, Range<usize>);

/// Every named definition of a file in source order, members of containers included whatever
/// their size (the chunker keeps a small class whole, an outline still lists its methods):
/// (kind, name, container path, byte range). `None` when the file cannot be parsed within the
/// chunker's limits.
pub(crate) fn definitions(
    text: &str,
    language: Language,
    grammar: tree_sitter::Language,
) -> Option<Vec<RawDefinition>> {
    let trees = parse_file(text, language, grammar)?;
    let mut out = Vec::new();
    for tree in &trees {
        collect_definitions(tree.root_node(), language, text, &Scope::default(), &mut out);
    }
    Some(out)
}

/// The syntax trees a file is walked in, in source order: its own tree, or one tree per
/// top-level segment when that names more definitions.
///
/// tree-sitter recovers from most syntax errors locally, but not from all: one TypeScript
/// interface whose call signatures have no `;` (`<T>(fn: T): T` on two lines, mobx's
/// `IActionFactory`) makes the whole file a single ERROR node, so every function after it would
/// be chunked as anonymous code. Each segment starts at a line that begins a top-level
/// declaration at column 0 (with the comments and attributes right above it) and is parsed on
/// its own over the same text (`included_ranges`, so byte offsets stay the file's): an error
/// then stays inside its segment.
fn parse_file(text: &str, language: Language, grammar: tree_sitter::Language) -> Option<Vec<tree_sitter::Tree>> {
    let tree = parse(text, language, grammar.clone(), None)?;
    if !tree.root_node().has_error() {
        return Some(vec![tree]);
    }
    let lines = LineIndex::new(text);
    let starts = segment_starts(text, &lines, language);
    if starts.len() < 2 {
        return Some(vec![tree]);
    }
    let mut segments = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(text.len());
        let range = tree_sitter::Range {
            start_byte: start,
            end_byte: end,
            start_point: point(&lines, start),
            end_point: point(&lines, end),
        };
        match parse(text, language, grammar.clone(), Some(range)) {
            Some(segment) => segments.push(segment),
            None => return Some(vec![tree]),
        }
    }
    let named = |trees: &[tree_sitter::Tree]| {
        trees.iter().map(|t| count_definitions(t.root_node(), language, text)).sum::<usize>()
    };
    if named(&segments) > named(std::slice::from_ref(&tree)) { Some(segments) } else { Some(vec![tree]) }
}

/// Named definitions anywhere under `node`, also inside statements the chunker looks into only
/// when they are big (the methods of `const api = { … }`): the measure of which parse of a file
/// with errors serves it better. An outline ([`collect_definitions`]) stops at such statements.
fn count_definitions(node: Node<'_>, language: Language, text: &str) -> usize {
    let mut count = 0;
    walk_preorder(node, |current, _| {
        if let Role::Definition(Def { name: Some(_), .. }) = classify(language, current, text) {
            count += 1;
        }
        true
    });
    count
}

/// tree-sitter's position of byte `offset`: 0-based row, byte column.
fn point(lines: &LineIndex, offset: usize) -> tree_sitter::Point {
    let row = (lines.line_of(offset) as usize).saturating_sub(1);
    tree_sitter::Point { row, column: offset - lines.start_of(row) }
}

/// Byte offsets where a top-level segment starts (the first is 0): a line at column 0 that
/// begins with one of the language's declaration keywords, moved up over the comment and
/// attribute lines directly above it. Languages without such a list give `[0]` (no split).
pub(crate) fn segment_starts(text: &str, lines: &LineIndex, language: Language) -> Vec<usize> {
    let keywords: &[&str] = match language {
        Language::JavaScript | Language::TypeScript | Language::Tsx => &[
            "export ",
            "function ",
            "function*",
            "async ",
            "class ",
            "abstract ",
            "interface ",
            "type ",
            "enum ",
            "const ",
            "let ",
            "var ",
            "declare ",
            "namespace ",
            "module ",
            "import ",
            "@",
        ],
        Language::Rust => &[
            "pub ",
            "pub(",
            "fn ",
            "impl ",
            "impl<",
            "struct ",
            "enum ",
            "trait ",
            "mod ",
            "use ",
            "const ",
            "static ",
            "type ",
            "unsafe ",
            "async ",
            "extern ",
            "macro_rules!",
            "#[",
        ],
        Language::Go => &["func ", "type ", "var ", "const ", "import "],
        // Kotlin's grammar gives up on the rest of a file at some valid code (a `value class`
        // whose constructor is annotated on the next line): every later definition was lost.
        Language::Kotlin => &[
            "fun ",
            "class ",
            "interface ",
            "object ",
            "val ",
            "var ",
            "typealias ",
            "public ",
            "internal ",
            "private ",
            "protected ",
            "data ",
            "sealed ",
            "enum ",
            "abstract ",
            "open ",
            "inline ",
            "value ",
            "suspend ",
            "annotation ",
            "expect ",
            "actual ",
            "import ",
            "@",
        ],
        _ => &[],
    };
    let mut starts = vec![0];
    if keywords.is_empty() {
        return starts;
    }
    let leading = |line: &str| {
        let t = line.trim_start();
        ["//", "/*", "*", "#[", "@"].iter().any(|m| t.starts_with(m))
    };
    let line = |k: usize| {
        let end = if k + 1 < lines.count() { lines.start_of(k + 1) } else { text.len() };
        &text[lines.start_of(k)..end]
    };
    for k in 1..lines.count() {
        if !keywords.iter().any(|kw| line(k).starts_with(kw)) {
            continue;
        }
        // The doc comment or attributes right above belong to the declaration.
        let mut first = k;
        while first > 0 && leading(line(first - 1)) {
            first -= 1;
        }
        let start = lines.start_of(first);
        if start > *starts.last().unwrap_or(&0) {
            starts.push(start);
        }
    }
    starts
}

/// Walks definitions the way [`Splitter::definition`] names them (same kinds, same container
/// paths), entering every container. Depth is bounded by [`parse`]'s check.
fn collect_definitions(node: Node<'_>, language: Language, text: &str, scope: &Scope, out: &mut Vec<RawDefinition>) {
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    for child in children {
        match classify(language, child, text) {
            Role::Definition(def) => {
                let kind = match def.kind {
                    ChunkKind::Function if scope.in_type || def.container.is_some() => ChunkKind::Method,
                    kind => kind,
                };
                let container = container_of(&def, scope, language);
                if let Some(name) = &def.name {
                    let range = child.start_byte()..child.end_byte();
                    match out.last_mut() {
                        // The clauses of one function are one definition (see `Def::signature`).
                        Some(last)
                            if def.signature
                                && matches!(language, Language::Elixir | Language::Haskell)
                                && (last.0, &last.1, &last.2) == (kind, name, &container) =>
                        {
                            last.3.end = range.end;
                        }
                        _ => out.push((kind, name.clone(), container.clone(), range)),
                    }
                }
                if let Some(body) = def.body {
                    let inner = Scope {
                        container: nested(container.as_deref(), def.name.as_deref(), language),
                        in_type: members_are_methods(kind, language),
                    };
                    collect_definitions(body, language, text, &inner, out);
                }
            }
            Role::Transparent => collect_definitions(child, language, text, scope, out),
            Role::Other => {
                // Whatever its size (the chunker looks in only when it must split it).
                if let Some((name, object)) = object_binding(language, child, text) {
                    collect_definitions(object, language, text, &scope.object(name.as_deref(), language), out);
                } else if child.kind() == "export_statement" {
                    collect_definitions(child, language, text, scope, out);
                }
            }
            Role::Leading => {}
        }
    }
}

/// Parses `text` (only `range` of it, when given), or `None` when parsing is too slow or the
/// tree too deep to walk recursively.
fn parse(
    text: &str,
    language: Language,
    grammar: tree_sitter::Language,
    range: Option<tree_sitter::Range>,
) -> Option<tree_sitter::Tree> {
    let mut parser = Parser::new();
    parser.set_language(&grammar).ok()?;
    if let Some(range) = range {
        parser.set_included_ranges(&[range]).ok()?;
    }
    let started = Instant::now();
    let mut out_of_time = |_: &tree_sitter::ParseState| started.elapsed() > PARSE_TIME_LIMIT;
    let options = tree_sitter::ParseOptions::new().progress_callback(&mut out_of_time);
    let bytes = text.as_bytes();
    let tree = parser.parse_with_options(&mut |at, _| bytes.get(at..).unwrap_or_default(), None, Some(options));
    let Some(tree) = tree else {
        tracing::info!(?language, "parsing took over {PARSE_TIME_LIMIT:?}; chunked by lines instead");
        return None;
    };
    // The walk below recurses along the tree: a pathological nesting depth (generated data,
    // fuzz input) would overflow the stack and costs time quadratic in the depth.
    let depth = tree_depth(&tree);
    if depth > MAX_SYNTAX_DEPTH {
        tracing::info!(?language, depth, "syntax tree nested deeper than {MAX_SYNTAX_DEPTH}; chunked by lines instead");
        return None;
    }
    Some(tree)
}

/// Deeper syntax trees are chunked by lines. Real code stays far below (tantivy's deepest file:
/// under 60 levels); nesting beyond this is data or an attack, and the recursive walk would
/// overflow a thread's stack at a few thousand levels.
pub(crate) const MAX_SYNTAX_DEPTH: usize = 400;
/// A file whose parse takes longer is chunked by lines (a parse is normally milliseconds).
pub(crate) const PARSE_TIME_LIMIT: Duration = Duration::from_secs(5);

/// The depth of the deepest node (walking stops once it passes the limit).
fn tree_depth(tree: &tree_sitter::Tree) -> usize {
    let mut deepest = 0;
    walk_preorder(tree.root_node(), |_, depth| {
        deepest = deepest.max(depth);
        deepest <= MAX_SYNTAX_DEPTH
    });
    deepest
}

/// Visits `node` and every node under it in document order, with its depth below `node`,
/// iteratively (a recursive walk would overflow on a hostile tree); `visit` returning `false`
/// stops the walk.
fn walk_preorder<'t>(node: Node<'t>, mut visit: impl FnMut(Node<'t>, usize) -> bool) {
    let mut cursor = node.walk();
    let mut depth = 0;
    loop {
        if !visit(cursor.node(), depth) {
            return;
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return;
            }
            depth -= 1;
        }
    }
}

/// What a node is to the chunker.
enum Role<'t> {
    /// A comment, attribute or decorator: belongs to the definition right after it.
    Leading,
    Definition(Def<'t>),
    /// A wrapper whose children are visited as if they were its siblings (`#ifdef`, `extern "C"`).
    Transparent,
    Other,
}

struct Def<'t> {
    kind: ChunkKind,
    name: Option<String>,
    /// An explicit container from the definition itself (`impl Foo`'s methods, Go receivers,
    /// `Foo::bar` in C++), overriding the enclosing one.
    container: Option<String>,
    /// A qualifier the definition's own name carries, under the enclosing container: `Lint` of
    /// Ruby's `class Lint::Checker`, `MyApp` of Elixir's `defmodule MyApp.Cache`.
    qualifier: Option<String>,
    /// For containers: the node whose children are the members.
    body: Option<Node<'t>>,
    /// A bodiless overload signature (TypeScript `function f(a: string): T;`, Python
    /// `@overload`), or one clause of a function written as several (Elixir's `def f(0)` then
    /// `def f(n)`, Haskell's type signature and equations): it joins the same-named definitions
    /// right after it into one chunk.
    signature: bool,
}

/// Overload signatures waiting for the definition they belong to: from the first signature's
/// leading comments (`start`) to the last one's end, which `node` and `def` describe.
struct Overloads<'t> {
    start: usize,
    end: usize,
    node: Node<'t>,
    def: Def<'t>,
}

/// Where we are in the tree: the container path and whether it is a type (members are methods).
#[derive(Default, Clone)]
struct Scope {
    container: Option<String>,
    in_type: bool,
}

impl Scope {
    /// Inside an object literal bound to `name` (none: its members keep this scope's path).
    fn object(&self, name: Option<&str>, language: Language) -> Scope {
        Scope { container: nested(self.container.as_deref(), name, language), in_type: true }
    }
}

/// Whether the functions inside a container of `kind` are methods: in every container but a
/// module, and in a Ruby module too (a mixin: its `def`s become the including class's methods).
fn members_are_methods(kind: ChunkKind, language: Language) -> bool {
    kind != ChunkKind::Module || language == Language::Ruby
}

/// The container path of a definition: its own explicit one, or the enclosing one with the
/// definition's qualifier under it.
fn container_of(def: &Def<'_>, scope: &Scope, language: Language) -> Option<String> {
    def.container.clone().or_else(|| nested(scope.container.as_deref(), def.qualifier.as_deref(), language))
}

/// The container path of what is inside `name` (a container, or an object) within `outer`.
fn nested(outer: Option<&str>, name: Option<&str>, language: Language) -> Option<String> {
    match (outer, name) {
        (Some(outer), Some(name)) => Some(format!("{outer}{}{name}", path_separator(language))),
        (None, Some(name)) => Some(name.to_string()),
        (outer, None) => outer.map(str::to_string),
    }
    .filter(|c| !c.is_empty())
}

/// A JavaScript/TypeScript statement or property that binds an object literal, and that object:
/// `const api = { get() {} }` (container `api`), `export const api = …`, `Foo.prototype = { … }`
/// (`Foo`), `exports.config = { … }` (`config`), a property `rules: { … }` of one (`rules`). No
/// name for `module.exports = { … }` and `export default { … }`: their members stand on their own.
fn object_binding<'t>(language: Language, node: Node<'t>, text: &str) -> Option<(Option<String>, Node<'t>)> {
    if !matches!(language, Language::JavaScript | Language::TypeScript | Language::Tsx) {
        return None;
    }
    // `{ … } as const`, `{ … } satisfies T`, `({ … })`.
    fn object(value: Option<Node<'_>>) -> Option<Node<'_>> {
        let value = value?;
        match value.kind() {
            "object" => Some(value),
            "as_expression" | "satisfies_expression" | "parenthesized_expression" => object(value.named_child(0)),
            _ => None,
        }
    }
    match node.kind() {
        "lexical_declaration" | "variable_declaration" => {
            let mut cursor = node.walk();
            let declarators: Vec<Node<'t>> =
                node.named_children(&mut cursor).filter(|c| c.kind() == "variable_declarator").collect();
            match declarators.as_slice() {
                [one] => object(one.child_by_field_name("value")).map(|o| (field_text(*one, "name", text), o)),
                _ => None,
            }
        }
        // `export const api = { … }` binds in its declaration, which is walked next.
        "export_statement" => object(node.child_by_field_name("value")).map(|o| (None, o)),
        "expression_statement" => {
            let assign = node.named_child(0).filter(|n| n.kind() == "assignment_expression")?;
            let object = object(assign.child_by_field_name("right"))?;
            let left = field_text(assign, "left", text)?;
            let left = left.strip_suffix(".prototype").unwrap_or(&left);
            let name = ["module.exports.", "exports."].iter().find_map(|p| left.strip_prefix(p)).unwrap_or(left);
            Some(((!matches!(name, "module.exports" | "exports")).then(|| name.to_string()), object))
        }
        "pair" => {
            let object = object(node.child_by_field_name("value"))?;
            let key = field_text(node, "key", text)?;
            Some((Some(key.trim_matches(|c| c == '"' || c == '\'' || c == '`').to_string()), object))
        }
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RawRole {
    Definition,
    ContainerHeader,
    Other,
}

struct Raw {
    range: Range<usize>,
    tokens: usize,
    kind: ChunkKind,
    symbol: Option<String>,
    container: Option<String>,
    role: RawRole,
}

/// Container headers smaller than this (in estimated tokens) join their first member.
const TINY_HEADER_TOKENS: usize = 16;

struct Splitter<'a> {
    text: &'a str,
    language: Language,
    config: &'a ChunkConfig,
    lines: LineIndex,
    raw: Vec<Raw>,
}

impl<'a> Splitter<'a> {
    fn tokens(&self, range: &Range<usize>) -> usize {
        estimate_tokens(&self.text[range.clone()])
    }

    fn visit_children(&mut self, node: Node<'_>, scope: &Scope) {
        self.visit_children_from(node, scope, node.start_byte(), Vec::new());
    }

    /// [`Self::visit_children`] for the children that end after `from` (those before it are
    /// already in a chunk: a container's header), with `leading` comments found before them
    /// that lead the first of them.
    fn visit_children_from<'t>(&mut self, node: Node<'t>, scope: &Scope, from: usize, mut leading: Vec<Node<'t>>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'t>> = node.children(&mut cursor).filter(|c| c.end_byte() > from).collect();
        let mut overloads: Option<Overloads<'t>> = None;
        let mut prev_end = node.start_byte();
        for child in children {
            let role = match classify(self.language, child, self.text) {
                Role::Other => self.small_object_of_functions(child).unwrap_or(Role::Other),
                role => role,
            };
            if let Some(set) = overloads.as_mut() {
                match role {
                    // Comments between the signatures and the implementation are the set's; they
                    // are settled when the set turns out to end.
                    Role::Leading => {
                        if leading.is_empty()
                            && self.lines.line_of(set.end - 1) == self.lines.line_of(child.start_byte())
                        {
                            set.end = child.end_byte();
                        } else {
                            leading.push(child);
                        }
                        prev_end = child.end_byte();
                        continue;
                    }
                    Role::Definition(def) if def.name.is_some() && def.name == set.def.name => {
                        leading.clear();
                        if def.signature {
                            (set.end, set.node, set.def) = (child.end_byte(), child, def);
                        } else {
                            let start = set.start;
                            overloads = None;
                            self.definition(start..child.end_byte(), child, def, scope);
                        }
                        prev_end = child.end_byte();
                        continue;
                    }
                    // A class body's overload signature ends in a `;` of its own.
                    Role::Other if leading.is_empty() && child.kind() == ";" => {
                        set.end = child.end_byte();
                        prev_end = child.end_byte();
                        continue;
                    }
                    _ => self.end_overloads(&mut overloads, &mut leading, scope),
                }
            }
            match role {
                Role::Leading => {
                    // A comment on the same line as the code before it belongs to that code.
                    // (Comment nodes may include their newline, hence `prev_end - 1`.)
                    let trailing = prev_end > node.start_byte()
                        && self.lines.line_of(prev_end - 1) == self.lines.line_of(child.start_byte());
                    // OCaml documents an item with a `(** … *)` right below it (odoc's rule; an
                    // interface's `val` always is): that comment is the item's, when it fits.
                    if leading.is_empty()
                        && !trailing
                        && self.language == Language::OCaml
                        && self.text[child.start_byte()..].starts_with("(**")
                        && prev_end > node.start_byte()
                        && self.lines.line_of(prev_end - 1) + 1 == self.lines.line_of(child.start_byte())
                        && let Some(last) = self.raw.last_mut()
                        && last.role == RawRole::Definition
                        && last.range.end == prev_end
                    {
                        let tokens = estimate_tokens(&self.text[last.range.end..child.end_byte()]);
                        if last.tokens + tokens <= self.config.max_tokens {
                            last.range.end = child.end_byte();
                            last.tokens += tokens;
                        } else {
                            let (kind, symbol, container) = (last.kind, last.symbol.clone(), last.container.clone());
                            for piece in
                                lines::split_lines(self.text, child.start_byte()..child.end_byte(), self.config)
                            {
                                self.push(piece, kind, symbol.clone(), container.clone(), RawRole::Definition);
                            }
                        }
                        prev_end = child.end_byte();
                        continue;
                    }
                    let detached =
                        leading.last().is_some_and(|last| self.has_blank_line(last.end_byte(), child.start_byte()));
                    if trailing || detached {
                        self.flush_leading(&mut leading, scope);
                    }
                    if trailing {
                        match self.raw.last_mut() {
                            Some(last) if last.range.end <= child.start_byte() => {
                                last.range.end = child.end_byte();
                                last.tokens += estimate_tokens(&self.text[child.start_byte()..child.end_byte()]);
                            }
                            _ => self.other(child.start_byte()..child.end_byte(), child, scope),
                        }
                    } else {
                        leading.push(child);
                    }
                }
                Role::Definition(def) => {
                    let attached =
                        leading.last().is_some_and(|last| !self.has_blank_line(last.end_byte(), child.start_byte()));
                    let start = if attached {
                        leading[0].start_byte()
                    } else {
                        self.flush_leading(&mut leading, scope);
                        child.start_byte()
                    };
                    leading.clear();
                    if def.signature {
                        overloads = Some(Overloads { start, end: child.end_byte(), node: child, def });
                    } else {
                        self.definition(start..child.end_byte(), child, def, scope);
                    }
                }
                Role::Transparent => {
                    self.flush_leading(&mut leading, scope);
                    self.visit_children(child, scope);
                }
                Role::Other => {
                    self.flush_leading(&mut leading, scope);
                    self.other(child.start_byte()..child.end_byte(), child, scope);
                }
            }
            prev_end = child.end_byte();
        }
        self.end_overloads(&mut overloads, &mut leading, scope);
        self.flush_leading(&mut leading, scope);
    }

    /// An overload set that no implementation of the same name follows (an interface's overloaded
    /// method, a `declare function`) is one chunk of its signatures. Comments collected after it
    /// are settled as [`Self::visit_children`] would have: all but the last group separated by a
    /// blank line become loose code; that group may still lead the next definition.
    fn end_overloads<'t>(&mut self, overloads: &mut Option<Overloads<'t>>, leading: &mut Vec<Node<'t>>, scope: &Scope) {
        let Some(set) = overloads.take() else { return };
        self.definition(set.start..set.end, set.node, set.def, scope);
        let group_start = (1..leading.len())
            .rev()
            .find(|&i| self.has_blank_line(leading[i - 1].end_byte(), leading[i].start_byte()))
            .unwrap_or(0);
        let mut detached: Vec<Node<'t>> = leading.drain(..group_start).collect();
        self.flush_leading(&mut detached, scope);
    }

    fn has_blank_line(&self, from: usize, to: usize) -> bool {
        self.text[from..to].matches('\n').count() >= 2
    }

    fn flush_leading(&mut self, leading: &mut Vec<Node<'_>>, scope: &Scope) {
        for node in leading.drain(..) {
            self.push(
                node.start_byte()..node.end_byte(),
                ChunkKind::Code,
                None,
                scope.container.clone(),
                RawRole::Other,
            );
        }
    }

    fn definition(&mut self, range: Range<usize>, node: Node<'_>, def: Def<'_>, scope: &Scope) {
        let kind = match def.kind {
            ChunkKind::Function if scope.in_type || def.container.is_some() => ChunkKind::Method,
            kind => kind,
        };
        let container = container_of(&def, scope, self.language);
        if self.tokens(&range) <= self.config.max_tokens {
            self.push(range, kind, def.name, container, RawRole::Definition);
            return;
        }
        if let Some(body) = def.body {
            // Too big to keep whole: a header chunk, then the members on their own. Where the
            // members are the definition's own children (Julia's `module`, Objective-C's
            // `@implementation`), the header runs to the first of them.
            let members_start = if body == node { self.first_member(node) } else { body.start_byte() };
            let leading = self.leading_first_member(node, members_start);
            let header_end = leading.first().map_or(members_start, |c| c.start_byte());
            self.push(range.start..header_end, kind, def.name.clone(), container.clone(), RawRole::ContainerHeader);
            let inner = Scope {
                container: nested(container.as_deref(), def.name.as_deref(), self.language),
                in_type: members_are_methods(kind, self.language),
            };
            self.visit_children_from(body, &inner, members_start, leading);
            if body.end_byte() < range.end {
                self.push(body.end_byte()..range.end, ChunkKind::Code, None, container, RawRole::Other);
            }
            return;
        }
        for piece in self.split_oversized(node, range) {
            self.push(piece, kind, def.name.clone(), container.clone(), RawRole::Definition);
        }
    }

    /// The comments between a container's header and its body that lead the body's first member,
    /// which begins at `members_start`: Ruby keeps them beside the body, not in it (`module Rack`,
    /// a class's doc comment, `class Builder`), where they would read as the outer header's. A
    /// comment on the header's own first line stays the header's.
    fn leading_first_member<'t>(&self, node: Node<'t>, members_start: usize) -> Vec<Node<'t>> {
        let header_line = self.lines.line_of(node.start_byte());
        let mut cursor = node.walk();
        let between: Vec<Node<'t>> = node
            .children(&mut cursor)
            .filter(|c| c.start_byte() > node.start_byte() && c.end_byte() <= members_start)
            .collect();
        let mut run: Vec<Node<'t>> = Vec::new();
        let mut next_start = members_start;
        for comment in between.into_iter().rev() {
            let attached = matches!(classify(self.language, comment, self.text), Role::Leading)
                && self.lines.line_of(comment.start_byte()) > header_line
                && !self.has_blank_line(comment.end_byte(), next_start);
            if !attached {
                break;
            }
            next_start = comment.start_byte();
            run.push(comment);
        }
        run.reverse();
        run
    }

    /// Where the members of a definition that holds them as its own children begin: its first
    /// child that is a definition or leads one.
    fn first_member(&self, node: Node<'_>) -> usize {
        let mut cursor = node.walk();
        let first = node
            .children(&mut cursor)
            .find(|child| matches!(classify(self.language, *child, self.text), Role::Definition(_) | Role::Leading));
        first.map_or(node.end_byte(), |child| child.start_byte())
    }

    /// `const api = { get() {…}, save: async () => {…} }` small enough for one chunk: a definition
    /// of `api`, as a small class is, instead of loose code merged with its neighbours and
    /// named by nothing. Bigger, it stays loose code whose members [`Self::other`] chunks under
    /// `api`. Only a declaration binds a name here; `module.exports = { … }` names nothing.
    fn small_object_of_functions<'t>(&self, node: Node<'t>) -> Option<Role<'t>> {
        if !matches!(self.language, Language::JavaScript | Language::TypeScript | Language::Tsx) {
            return None;
        }
        let declaration = match node.kind() {
            "export_statement" => node.child_by_field_name("declaration")?,
            _ => node,
        };
        if !matches!(declaration.kind(), "lexical_declaration" | "variable_declaration") {
            return None;
        }
        let (Some(name), object) = object_binding(self.language, declaration, self.text)? else { return None };
        let mut cursor = object.walk();
        // A member is a function as the chunker reads it anywhere: a method, or a key whose
        // value is a function.
        let has_function = object.named_children(&mut cursor).any(|member| {
            matches!(classify_js(member, self.text), Role::Definition(Def { kind: ChunkKind::Method, .. }))
        });
        // The size last: every other statement is turned down by its shape, without reading it.
        let fits = || self.tokens(&(node.start_byte()..node.end_byte())) <= self.config.max_tokens;
        (has_function && fits()).then(|| container(ChunkKind::Module, Some(name), Some(object)))
    }

    fn other(&mut self, range: Range<usize>, node: Node<'_>, scope: &Scope) {
        if self.tokens(&range) > self.config.max_tokens && node.child_count() > 0 {
            // A big statement may hold definitions (`module.exports = { … }`, `if TYPE_CHECKING:`,
            // a test suite's `describe(…)`): look inside instead of cutting blindly. An object
            // bound to a name is its members' container, as a class would be.
            match object_binding(self.language, node, self.text) {
                Some((name, _)) => self.visit_children(node, &scope.object(name.as_deref(), self.language)),
                None => self.visit_children(node, scope),
            }
            return;
        }
        let ranges = if self.tokens(&range) > self.config.max_tokens {
            lines::split_lines(self.text, range, self.config)
        } else {
            vec![range]
        };
        for range in ranges {
            self.push(range, ChunkKind::Code, None, scope.container.clone(), RawRole::Other);
        }
    }

    fn push(
        &mut self,
        range: Range<usize>,
        kind: ChunkKind,
        symbol: Option<String>,
        container: Option<String>,
        role: RawRole,
    ) {
        if range.is_empty() {
            return;
        }
        let tokens = self.tokens(&range);
        self.raw.push(Raw { range, tokens, kind, symbol, container, role });
    }

    /// Splits a definition over budget at its children's boundaries (recursively), packs the
    /// parts greedily into pieces under budget, and lets each piece start a few lines early.
    fn split_oversized(&self, node: Node<'_>, range: Range<usize>) -> Vec<Range<usize>> {
        let mut atoms = Vec::new();
        self.atoms(vec![node], range.clone(), &mut atoms);
        let mut pieces: Vec<Range<usize>> = Vec::new();
        let mut current: Option<(Range<usize>, usize)> = None;
        // Leave an eighth of the budget for the overlap added below.
        let pack_limit = self.config.max_tokens - self.config.max_tokens / 8;
        for atom in atoms {
            let tokens = self.tokens(&atom);
            current = match current {
                Some((cur, cur_tokens)) if cur_tokens + tokens <= pack_limit => {
                    Some((cur.start..atom.end, cur_tokens + tokens))
                }
                Some((cur, _)) => {
                    pieces.push(cur);
                    Some((atom, tokens))
                }
                None => Some((atom, tokens)),
            };
        }
        if let Some((cur, _)) = current {
            pieces.push(cur);
        }
        // Overlap: each piece after the first starts `overlap_lines` earlier.
        let mut out = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.iter().enumerate() {
            if i == 0 || self.config.overlap_lines == 0 {
                out.push(piece.clone());
                continue;
            }
            // As many lines back as fit the budget, up to `overlap_lines`.
            let line = self.lines.line_of(piece.start) as usize - 1;
            let start = (1..=self.config.overlap_lines)
                .rev()
                .map(|n| self.lines.start_of(line.saturating_sub(n)).max(pieces[i - 1].start))
                .find(|&start| self.tokens(&(start..piece.end)) <= self.config.max_tokens)
                .unwrap_or(piece.start);
            out.push(start..piece.end);
        }
        out
    }

    /// Partitions `range` at the lines where `nodes` begin; parts still over budget are
    /// partitioned where their nodes' children begin, recursively, and leaves by lines.
    /// Cuts fall only at the start of a line, so pieces are whole lines.
    fn atoms(&self, nodes: Vec<Node<'_>>, range: Range<usize>, out: &mut Vec<Range<usize>>) {
        let mut parts: Vec<(usize, Vec<Node<'_>>)> = vec![(range.start, Vec::new())];
        for node in nodes {
            let start = node.start_byte();
            let line_start = self.lines.start_of(self.lines.line_of(start) as usize - 1);
            let begins_line = self.text[line_start..start].trim().is_empty();
            let last = parts.last().map_or(range.start, |p| p.0);
            if begins_line && line_start > last && line_start < range.end {
                parts.push((line_start, vec![node]));
            } else if let Some(part) = parts.last_mut() {
                part.1.push(node);
            }
        }
        for (i, (start, nodes)) in parts.iter().enumerate() {
            let end = parts.get(i + 1).map_or(range.end, |p| p.0);
            let part = *start..end;
            if part.is_empty() {
                continue;
            }
            if self.tokens(&part) <= self.config.max_tokens {
                out.push(part);
                continue;
            }
            let children: Vec<Node<'_>> = nodes
                .iter()
                .flat_map(|n| {
                    let mut cursor = n.walk();
                    n.children(&mut cursor).collect::<Vec<_>>()
                })
                .collect();
            if children.is_empty() {
                out.extend(lines::split_lines(self.text, part, self.config));
            } else {
                self.atoms(children, part, out);
            }
        }
    }

    /// Merges the raw pieces: stray punctuation joins the piece before it; consecutive `Other`
    /// pieces merge up to the budget, also into a container header before them (fields join
    /// their class).
    fn finish(self) -> Vec<Piece> {
        let max = self.config.max_tokens;
        let mut out: Vec<Raw> = Vec::with_capacity(self.raw.len());
        for raw in self.raw {
            if raw.role == RawRole::Other
                && let Some(prev) = out.last_mut()
            {
                let punctuation_only = closing_only(&self.text[raw.range.clone()]);
                let mergeable = matches!(prev.role, RawRole::Other | RawRole::ContainerHeader)
                    && prev.container == raw.container
                    && prev.tokens + raw.tokens <= max;
                if (punctuation_only && raw.tokens <= 4) || mergeable {
                    prev.range.end = prev.range.end.max(raw.range.end);
                    prev.tokens += raw.tokens;
                    continue;
                }
            }
            out.push(raw);
        }
        // A bare container header (`impl Foo {`) says little on its own: it joins the first
        // member after it instead.
        let mut merged: Vec<Raw> = Vec::with_capacity(out.len());
        let mut pending_header: Option<Raw> = None;
        for mut raw in out {
            if let Some(header) = pending_header.take() {
                if header.tokens + raw.tokens <= max {
                    raw.range.start = header.range.start;
                    raw.tokens += header.tokens;
                    if raw.role == RawRole::Other {
                        // Loose code in the container (a docstring, fields) is the container's.
                        raw.kind = header.kind;
                        raw.symbol = header.symbol;
                        raw.container = header.container;
                        raw.role = RawRole::ContainerHeader;
                    }
                } else {
                    merged.push(header);
                }
            }
            if raw.role == RawRole::ContainerHeader && raw.tokens < TINY_HEADER_TOKENS {
                pending_header = Some(raw);
            } else {
                merged.push(raw);
            }
        }
        merged.extend(pending_header);
        // A lone scrap of loose code (`'use strict'`, one import, `module.exports = …`) is noise
        // as a result of its own: it joins the piece before it (or, at the top, the one after) when that fits.
        let mut i = 0;
        while i < merged.len() {
            let scrap = merged[i].role == RawRole::Other && merged[i].tokens < TINY_HEADER_TOKENS;
            let fits =
                |other: &Raw, scrap: &Raw| other.container == scrap.container && other.tokens + scrap.tokens <= max;
            if scrap && merged.len() > 1 {
                if i > 0 && fits(&merged[i - 1], &merged[i]) {
                    let scrap = merged.remove(i);
                    merged[i - 1].range.end = scrap.range.end;
                    merged[i - 1].tokens += scrap.tokens;
                    continue;
                }
                if i + 1 < merged.len() && fits(&merged[i + 1], &merged[i]) {
                    let scrap = merged.remove(i);
                    merged[i].range.start = scrap.range.start;
                    merged[i].tokens += scrap.tokens;
                    continue;
                }
            }
            i += 1;
        }
        merged
            .into_iter()
            .map(|raw| Piece { range: raw.range, kind: raw.kind, symbol: raw.symbol, container: raw.container })
            .collect()
    }
}

/// Punctuation (`}`, `);`) or the keywords that open and close a block in Ruby, Lua and Elixir
/// (`do`, `end`): a scrap that belongs to the code before it.
fn closing_only(text: &str) -> bool {
    text.split_whitespace().all(|word| matches!(word.trim_matches(|c| "{}()[];,".contains(c)), "" | "end" | "do"))
}

fn text_of(node: Node<'_>, text: &str) -> String {
    text[node.start_byte()..node.end_byte()].to_string()
}

fn field_text(node: Node<'_>, field: &str, text: &str) -> Option<String> {
    node.child_by_field_name(field).map(|n| text_of(n, text))
}

fn def(kind: ChunkKind, name: Option<String>) -> Role<'static> {
    Role::Definition(Def { kind, name, container: None, qualifier: None, body: None, signature: false })
}

fn container<'t>(kind: ChunkKind, name: Option<String>, body: Option<Node<'t>>) -> Role<'t> {
    Role::Definition(Def { kind, name, container: None, qualifier: None, body, signature: false })
}

/// `Foo<T>` → `Foo`; `crate::a::Foo` → `Foo`; `&'a mut Foo<W>` → `Foo` (the last path segment
/// of the type, without references, lifetimes or generics).
fn bare_type_name(name: &str) -> String {
    let name = name.split('<').next().unwrap_or(name).trim();
    let name = name.split_whitespace().last().unwrap_or(name);
    let name = name.rsplit("::").next().unwrap_or(name);
    name.trim_start_matches(['&', '*']).trim().to_string()
}

fn classify<'t>(language: Language, node: Node<'t>, text: &str) -> Role<'t> {
    match language {
        Language::Rust => classify_rust(node, text),
        Language::Python => classify_python(node, text),
        Language::JavaScript | Language::TypeScript | Language::Tsx => classify_js(node, text),
        Language::Go => classify_go(node, text),
        Language::Java => classify_java(node, text),
        Language::C | Language::Cpp => classify_c(node, text),
        Language::Ruby => classify_ruby(node, text),
        Language::Php => classify_php(node, text),
        Language::CSharp => classify_csharp(node, text),
        Language::Kotlin => classify_kotlin(node, text),
        Language::Swift => classify_swift(node, text),
        Language::Scala => classify_scala(node, text),
        Language::Elixir => classify_elixir(node, text),
        Language::Lua => classify_lua(node, text),
        Language::Bash => classify_bash(node, text),
        Language::Zig => classify_zig(node, text),
        Language::Haskell => classify_haskell(node, text),
        Language::Dart => classify_dart(node, text),
        Language::ObjectiveC => classify_objc(node, text),
        Language::OCaml => classify_ocaml(node, text),
        Language::R => classify_r(node, text),
        Language::Julia => classify_julia(node, text),
        Language::Markdown | Language::Text | Language::Yaml | Language::Toml | Language::Json => Role::Other,
    }
}

fn classify_rust<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    match node.kind() {
        "line_comment" | "block_comment" | "attribute_item" => Role::Leading,
        "function_item" | "function_signature_item" => def(ChunkKind::Function, name()),
        "struct_item" | "union_item" => def(ChunkKind::Struct, name()),
        "enum_item" => def(ChunkKind::Enum, name()),
        "type_item" => def(ChunkKind::Type, name()),
        "macro_definition" => def(ChunkKind::Macro, name()),
        "trait_item" => container(ChunkKind::Trait, name(), node.child_by_field_name("body")),
        "impl_item" => {
            let ty = field_text(node, "type", text).map(|t| bare_type_name(&t));
            container(ChunkKind::Impl, ty, node.child_by_field_name("body"))
        }
        "mod_item" => match node.child_by_field_name("body") {
            Some(body) => container(ChunkKind::Module, name(), Some(body)),
            None => Role::Other,
        },
        _ => Role::Other,
    }
}

fn classify_python<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        "comment" => Role::Leading,
        "function_definition" => def(ChunkKind::Function, field_text(node, "name", text)),
        "class_definition" => {
            container(ChunkKind::Class, field_text(node, "name", text), node.child_by_field_name("body"))
        }
        "decorated_definition" => match node.child_by_field_name("definition") {
            Some(inner) if is_python_overload(node, text) => classify_python(inner, text).signature(),
            Some(inner) => classify_python(inner, text),
            None => Role::Other,
        },
        _ => Role::Other,
    }
}

/// `@overload` / `@typing.overload`: a signature for type checkers, not a definition of its own.
fn is_python_overload(decorated: Node<'_>, text: &str) -> bool {
    let mut cursor = decorated.walk();
    decorated.named_children(&mut cursor).filter(|c| c.kind() == "decorator").any(|d| {
        let name = text_of(d, text);
        let name = name.trim_start_matches('@').trim();
        name == "overload" || name.ends_with(".overload")
    })
}

fn classify_js<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    match node.kind() {
        "comment" | "decorator" => Role::Leading,
        "function_declaration" | "generator_function_declaration" => def(ChunkKind::Function, name()),
        "function_signature" => def(ChunkKind::Function, name()).signature(),
        "method_definition" | "abstract_method_signature" => def(ChunkKind::Method, name()),
        "method_signature" => def(ChunkKind::Method, name()).signature(),
        "class_declaration" | "abstract_class_declaration" | "class" => {
            container(ChunkKind::Class, name(), node.child_by_field_name("body"))
        }
        "interface_declaration" => container(ChunkKind::Interface, name(), node.child_by_field_name("body")),
        "type_alias_declaration" => def(ChunkKind::Type, name()),
        "enum_declaration" => def(ChunkKind::Enum, name()),
        "internal_module" | "module" => container(ChunkKind::Module, name(), node.child_by_field_name("body")),
        // TypeScript wraps `namespace X { … }` in a statement.
        "expression_statement" if node.named_child(0).is_some_and(|n| n.kind() == "internal_module") => {
            match node.named_child(0) {
                Some(inner) => classify_js(inner, text),
                None => Role::Other,
            }
        }
        "export_statement" => match node.child_by_field_name("declaration") {
            Some(inner) => classify_js(inner, text),
            None => Role::Other,
        },
        // `declare function f(): T;`, `declare class C {}`, `declare namespace N {}`.
        "ambient_declaration" => match node.named_child(0) {
            Some(inner) => classify_js(inner, text),
            None => Role::Other,
        },
        "lexical_declaration" | "variable_declaration" => {
            let mut cursor = node.walk();
            let declarators: Vec<Node<'t>> =
                node.named_children(&mut cursor).filter(|c| c.kind() == "variable_declarator").collect();
            match declarators.as_slice() {
                [one] => js_value_role(one.child_by_field_name("value"), field_text(*one, "name", text)),
                _ => Role::Other,
            }
        }
        "pair" => js_value_role(node.child_by_field_name("value"), field_text(node, "key", text)).method(),
        "expression_statement" => {
            // `Foo.prototype.bar = function () {}` and `exports.bar = () => {}`.
            let Some(assign) = node.named_child(0).filter(|n| n.kind() == "assignment_expression") else {
                return Role::Other;
            };
            let left = field_text(assign, "left", text).unwrap_or_default();
            match js_value_role(assign.child_by_field_name("right"), None) {
                Role::Definition(mut d) => {
                    let (container, name) = match left.rsplit_once('.') {
                        Some((c, n)) => (Some(c.trim_end_matches(".prototype").to_string()), n),
                        None => (None, left.as_str()),
                    };
                    d.name = Some(name.to_string());
                    d.container = container.filter(|c| !c.is_empty() && c != "module.exports" && c != "exports");
                    Role::Definition(d)
                }
                other => other,
            }
        }
        _ => Role::Other,
    }
}

/// A value that is a function or class makes its binding a definition.
fn js_value_role<'t>(value: Option<Node<'t>>, name: Option<String>) -> Role<'t> {
    match value.map(|v| (v.kind(), v)) {
        Some(("arrow_function" | "function_expression" | "function" | "generator_function", _)) => {
            def(ChunkKind::Function, name)
        }
        Some(("class", v)) => container(ChunkKind::Class, name, v.child_by_field_name("body")),
        _ => Role::Other,
    }
}

impl Role<'_> {
    fn signature(self) -> Self {
        match self {
            Role::Definition(mut d) => {
                d.signature = true;
                Role::Definition(d)
            }
            other => other,
        }
    }

    /// An object literal's function-valued key is a method.
    fn method(self) -> Self {
        match self {
            Role::Definition(mut d) if d.kind == ChunkKind::Function => {
                d.kind = ChunkKind::Method;
                Role::Definition(d)
            }
            other => other,
        }
    }
}

fn classify_go<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        "comment" => Role::Leading,
        "function_declaration" => def(ChunkKind::Function, field_text(node, "name", text)),
        "method_declaration" => {
            let receiver = node
                .child_by_field_name("receiver")
                .and_then(|r| find_descendant(r, "type_identifier"))
                .map(|t| text_of(t, text));
            Role::Definition(Def {
                kind: ChunkKind::Method,
                name: field_text(node, "name", text),
                container: receiver,
                qualifier: None,
                body: None,
                signature: false,
            })
        }
        "type_declaration" => {
            let mut cursor = node.walk();
            let spec = node.named_children(&mut cursor).find(|c| matches!(c.kind(), "type_spec" | "type_alias"));
            let Some(spec) = spec else { return Role::Other };
            let kind = match spec.child_by_field_name("type").map(|t| t.kind()) {
                Some("struct_type") => ChunkKind::Struct,
                Some("interface_type") => ChunkKind::Interface,
                _ => ChunkKind::Type,
            };
            def(kind, field_text(spec, "name", text))
        }
        _ => Role::Other,
    }
}

fn classify_java<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "line_comment" | "block_comment" => Role::Leading,
        "class_declaration" | "record_declaration" => container(ChunkKind::Class, name(), body()),
        "interface_declaration" | "annotation_type_declaration" => container(ChunkKind::Interface, name(), body()),
        "enum_declaration" => container(ChunkKind::Enum, name(), body()),
        "enum_body_declarations" => Role::Transparent,
        "method_declaration" | "constructor_declaration" | "compact_constructor_declaration" => {
            def(ChunkKind::Method, name())
        }
        _ => Role::Other,
    }
}

fn classify_c<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        "comment" => Role::Leading,
        "function_definition" => {
            let full = c_declarator_name(node, text);
            let (container, name) = match full.as_deref().and_then(|n| n.rsplit_once("::")) {
                Some((c, n)) => (Some(c.to_string()), Some(n.to_string())),
                None => (None, full),
            };
            Role::Definition(Def {
                kind: ChunkKind::Function,
                name,
                container,
                qualifier: None,
                body: None,
                signature: false,
            })
        }
        "template_declaration" => {
            let mut cursor = node.walk();
            let inner = node.named_children(&mut cursor).last();
            match inner {
                Some(inner) if inner.kind() != "template_parameter_list" => match classify_c(inner, text) {
                    Role::Transparent => Role::Other,
                    role => role,
                },
                _ => Role::Other,
            }
        }
        "namespace_definition" => {
            container(ChunkKind::Module, field_text(node, "name", text), node.child_by_field_name("body"))
        }
        "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier" => c_type_role(node, None, text),
        "declaration" | "type_definition" => {
            let Some(ty) = node.child_by_field_name("type") else {
                return Role::Other;
            };
            if ty.child_by_field_name("body").is_none() {
                return Role::Other;
            }
            // `typedef struct { … } Name;` is named by its declarator.
            let alias = (node.kind() == "type_definition").then(|| field_text(node, "declarator", text)).flatten();
            c_type_role(ty, alias, text)
        }
        "linkage_specification"
        | "declaration_list"
        | "preproc_if"
        | "preproc_ifdef"
        | "preproc_else"
        | "preproc_elif"
        | "preproc_elifdef" => Role::Transparent,
        _ => Role::Other,
    }
}

fn c_type_role<'t>(spec: Node<'t>, alias: Option<String>, text: &str) -> Role<'t> {
    let Some(body) = spec.child_by_field_name("body") else {
        return Role::Other;
    };
    let kind = match spec.kind() {
        "class_specifier" => ChunkKind::Class,
        "enum_specifier" => ChunkKind::Enum,
        _ => ChunkKind::Struct,
    };
    let name = field_text(spec, "name", text).or(alias);
    if kind == ChunkKind::Enum { def(kind, name) } else { container(kind, name, Some(body)) }
}

/// Follows a C/C++ declarator chain (`*`, `&`, `()`) down to the declared name.
fn c_declarator_name(node: Node<'_>, text: &str) -> Option<String> {
    let mut current = node.child_by_field_name("declarator")?;
    for _ in 0..16 {
        match current.kind() {
            "identifier"
            | "field_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "type_identifier"
            | "template_function" => {
                return Some(text_of(current, text));
            }
            _ => {
                current = match current.child_by_field_name("declarator") {
                    Some(next) => next,
                    None => {
                        let mut cursor = current.walk();
                        let next = current
                            .named_children(&mut cursor)
                            .find(|c| c.kind().ends_with("declarator") || c.kind().ends_with("identifier"));
                        next?
                    }
                };
            }
        }
    }
    None
}

fn find_descendant<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    if node.kind() == kind {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
    children.into_iter().find_map(|c| find_descendant(c, kind))
}

/// A definition with a name and a qualifier split at the last `separator`: `Lint::Checker` →
/// `Lint` + `Checker`; a plain name has none (nor has `::Checker`, rooted at the top).
fn qualified_def<'t>(kind: ChunkKind, name: Option<String>, separator: &str, body: Option<Node<'t>>) -> Role<'t> {
    let (qualifier, name) = match name.as_deref().and_then(|n| n.rsplit_once(separator)) {
        Some((qualifier, last)) => {
            let qualifier = qualifier.trim_start_matches(separator);
            ((!qualifier.is_empty()).then(|| qualifier.to_string()), Some(last.to_string()))
        }
        None => (None, name),
    };
    Role::Definition(Def { kind, name, container: None, qualifier, body, signature: false })
}

/// The first child of `node` of one of `kinds` (a body that is no field of its node).
fn child_of_kind<'t>(node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).find(|c| kinds.contains(&c.kind()))
}

/// A wrapper's body whose members belong to the scope around the wrapper: C#'s and PHP's
/// `namespace X { … }` (names are not qualified by namespaces, as Java's are not by packages), a
/// Kotlin companion object's members (`Cache.create()`).
fn body_of(node: Node<'_>, wrappers: &[&str]) -> bool {
    node.parent().is_some_and(|parent| wrappers.contains(&parent.kind()))
}

fn classify_ruby<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    match node.kind() {
        "comment" => Role::Leading,
        "class" => qualified_def(ChunkKind::Class, name(), "::", node.child_by_field_name("body")),
        "module" => qualified_def(ChunkKind::Module, name(), "::", node.child_by_field_name("body")),
        "method" => def(ChunkKind::Function, name()),
        // `def self.parse` is the enclosing class's; `def Config.parse` names its class.
        "singleton_method" => {
            let object = field_text(node, "object", text).filter(|o| o != "self");
            Role::Definition(Def {
                kind: ChunkKind::Method,
                name: name(),
                container: object,
                qualifier: None,
                body: None,
                signature: false,
            })
        }
        // `class << self … end`: its methods are the class's own, chunked as its other members.
        "singleton_class" => Role::Transparent,
        "body_statement" if body_of(node, &["singleton_class"]) => Role::Transparent,
        _ => Role::Other,
    }
}

fn classify_php<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        // Attributes (`#[Route(…)]`) are part of their declaration's node.
        "comment" => Role::Leading,
        "class_declaration" => container(ChunkKind::Class, name(), body()),
        "interface_declaration" => container(ChunkKind::Interface, name(), body()),
        "trait_declaration" => container(ChunkKind::Trait, name(), body()),
        "enum_declaration" => container(ChunkKind::Enum, name(), body()),
        "function_definition" => def(ChunkKind::Function, name()),
        "method_declaration" => def(ChunkKind::Method, name()),
        "namespace_definition" if body().is_some() => Role::Transparent,
        "compound_statement" if body_of(node, &["namespace_definition"]) => Role::Transparent,
        _ => Role::Other,
    }
}

fn classify_csharp<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        // Attributes (`[Obsolete]`) are part of their declaration's node.
        "comment" => Role::Leading,
        "class_declaration" | "record_declaration" => container(ChunkKind::Class, name(), body()),
        "struct_declaration" => container(ChunkKind::Struct, name(), body()),
        "interface_declaration" => container(ChunkKind::Interface, name(), body()),
        "enum_declaration" => def(ChunkKind::Enum, name()),
        "delegate_declaration" => def(ChunkKind::Type, name()),
        "method_declaration" | "constructor_declaration" | "destructor_declaration" => def(ChunkKind::Method, name()),
        "operator_declaration" => {
            def(ChunkKind::Method, field_text(node, "operator", text).map(|op| format!("operator {op}")))
        }
        "namespace_declaration" | "preproc_if" | "preproc_else" | "preproc_elif" => Role::Transparent,
        "declaration_list" if body_of(node, &["namespace_declaration"]) => Role::Transparent,
        _ => Role::Other,
    }
}

fn classify_kotlin<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    let body = || child_of_kind(node, &["class_body", "enum_class_body"]);
    match node.kind() {
        // Annotations are part of their declaration's node (its `modifiers`).
        "line_comment" | "block_comment" => Role::Leading,
        "class_declaration" => {
            let enum_class = child_of_kind(node, &["modifiers"]).is_some_and(|m| {
                let mut cursor = m.walk();
                m.children(&mut cursor).any(|c| c.kind() == "class_modifier" && text_of(c, text) == "enum")
            });
            let kind = if child_of_kind(node, &["interface"]).is_some() {
                ChunkKind::Interface
            } else if enum_class {
                ChunkKind::Enum
            } else {
                ChunkKind::Class
            };
            container(kind, name(), body())
        }
        "object_declaration" => container(ChunkKind::Class, name(), body()),
        "companion_object" => match name() {
            Some(name) => container(ChunkKind::Class, Some(name), body()),
            None => Role::Transparent,
        },
        "class_body" if body_of(node, &["companion_object"]) => Role::Transparent,
        // `fun String.shout()` extends `String`, as a Go method its receiver.
        "function_declaration" => Role::Definition(Def {
            kind: ChunkKind::Function,
            name: name(),
            container: kotlin_receiver(node, text),
            qualifier: None,
            body: None,
            signature: false,
        }),
        "secondary_constructor" => def(ChunkKind::Method, Some("constructor".to_string())),
        // The grammar calls the alias's name its `type`.
        "type_alias" => def(ChunkKind::Type, field_text(node, "type", text)),
        _ => Role::Other,
    }
}

/// The receiver type of a Kotlin extension function (`List<T>.second` → `List`): the node
/// before the `.` that precedes the name.
fn kotlin_receiver(node: Node<'_>, text: &str) -> Option<String> {
    let name = node.child_by_field_name("name")?;
    let mut cursor = node.walk();
    let mut previous: Option<Node<'_>> = None;
    for child in node.children(&mut cursor) {
        if child.start_byte() >= name.start_byte() {
            break;
        }
        if child.kind() == "." {
            return previous.map(|p| bare_type_name(&text_of(p, text)).trim_end_matches('?').to_string());
        }
        if child.is_named() {
            previous = Some(child);
        }
    }
    None
}

fn classify_swift<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        // Attributes (`@discardableResult`) are part of their declaration's node.
        "comment" | "multiline_comment" => Role::Leading,
        "class_declaration" => {
            let kind = match field_text(node, "declaration_kind", text).as_deref() {
                Some("struct") => ChunkKind::Struct,
                Some("enum") => ChunkKind::Enum,
                Some("extension") => ChunkKind::Impl,
                _ => ChunkKind::Class,
            };
            container(kind, name().map(|n| bare_type_name(&n)), body())
        }
        "protocol_declaration" => container(ChunkKind::Interface, name(), body()),
        "function_declaration" | "protocol_function_declaration" => def(ChunkKind::Function, name()),
        "init_declaration" => def(ChunkKind::Function, Some("init".to_string())),
        "deinit_declaration" => def(ChunkKind::Function, Some("deinit".to_string())),
        "subscript_declaration" => def(ChunkKind::Function, Some("subscript".to_string())),
        "typealias_declaration" => def(ChunkKind::Type, name()),
        _ => Role::Other,
    }
}

fn classify_scala<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        // Annotations are part of their definition's node.
        "comment" | "block_comment" => Role::Leading,
        "class_definition" | "object_definition" | "package_object" => container(ChunkKind::Class, name(), body()),
        "trait_definition" => container(ChunkKind::Trait, name(), body()),
        "enum_definition" => container(ChunkKind::Enum, name(), body()),
        "function_definition" | "function_declaration" => def(ChunkKind::Function, name()),
        "type_definition" => def(ChunkKind::Type, name()),
        // `extension (s: String) { def shout … }` and `package a.b { … }`: their members stand
        // in the scope around them.
        "extension_definition" => Role::Transparent,
        "package_clause" if body().is_some() => Role::Transparent,
        "template_body" if body_of(node, &["package_clause"]) => Role::Transparent,
        _ => Role::Other,
    }
}

/// Elixir's documenting module attributes: they lead the definition after them (`@moduledoc`,
/// `use`, `alias` stay the module's own code).
const ELIXIR_LEADING_ATTRIBUTES: &[&str] = &["doc", "spec", "impl", "deprecated", "since", "decorate"];

fn classify_elixir<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        "comment" => Role::Leading,
        "unary_operator" => {
            let attribute = node
                .child_by_field_name("operand")
                .filter(|_| field_text(node, "operator", text).as_deref() == Some("@"))
                .and_then(|operand| match operand.kind() {
                    "call" => field_text(operand, "target", text),
                    "identifier" => Some(text_of(operand, text)),
                    _ => None,
                });
            match attribute {
                Some(name) if ELIXIR_LEADING_ATTRIBUTES.contains(&name.as_str()) => Role::Leading,
                _ => Role::Other,
            }
        }
        "call" => {
            let Some(target) = node.child_by_field_name("target").filter(|t| t.kind() == "identifier") else {
                return Role::Other;
            };
            let arguments = child_of_kind(node, &["arguments"]);
            let first = arguments.and_then(|a| a.named_child(0));
            let body = child_of_kind(node, &["do_block"]);
            let module_name = || first.filter(|f| f.kind() == "alias").map(|f| text_of(f, text));
            let clause = |kind| match first.and_then(|f| elixir_def_name(f, text)) {
                Some(name) => def(kind, Some(name)).signature(),
                None => Role::Other,
            };
            match text_of(target, text).as_str() {
                "defmodule" => qualified_def(ChunkKind::Module, module_name(), ".", body),
                "defprotocol" => qualified_def(ChunkKind::Interface, module_name(), ".", body),
                // `defimpl Size, for: Map` defines the module `Size.Map`.
                "defimpl" => {
                    let name = match (module_name(), arguments.and_then(|a| elixir_keyword(a, "for", text))) {
                        (Some(protocol), Some(target)) => Some(format!("{protocol}.{target}")),
                        (name, _) => name,
                    };
                    qualified_def(ChunkKind::Impl, name, ".", body)
                }
                "def" | "defp" | "defdelegate" | "defguard" | "defguardp" | "defn" | "defnp" => {
                    clause(ChunkKind::Function)
                }
                "defmacro" | "defmacrop" => clause(ChunkKind::Macro),
                _ => Role::Other,
            }
        }
        _ => Role::Other,
    }
}

/// The name a `def` head defines: `name(args)`, `name(args) when guard`, a bare `name`.
fn elixir_def_name(head: Node<'_>, text: &str) -> Option<String> {
    match head.kind() {
        "call" => field_text(head, "target", text),
        "identifier" => Some(text_of(head, text)),
        "binary_operator" if field_text(head, "operator", text).as_deref() == Some("when") => {
            elixir_def_name(head.child_by_field_name("left")?, text)
        }
        _ => None,
    }
}

/// The value of keyword `key` (`for: Map`) among a call's arguments.
fn elixir_keyword(arguments: Node<'_>, key: &str, text: &str) -> Option<String> {
    let keywords = child_of_kind(arguments, &["keywords"])?;
    let mut cursor = keywords.walk();
    let pair = keywords
        .named_children(&mut cursor)
        .find(|pair| field_text(*pair, "key", text).is_some_and(|k| k.trim().trim_end_matches(':').trim() == key))?;
    field_text(pair, "value", text)
}

fn classify_lua<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        "comment" => Role::Leading,
        // `function M.new()`, `function Cache:get()`, `local function helper()`.
        "function_declaration" => match node.child_by_field_name("name") {
            Some(name) => lua_function(name, text),
            None => Role::Other,
        },
        // `local compute = function … end`.
        "variable_declaration" => match child_of_kind(node, &["assignment_statement"]) {
            Some(assignment) => classify_lua(assignment, text),
            None => Role::Other,
        },
        // `M.put = function … end`: one target, one function value.
        "assignment_statement" => {
            let (Some(targets), Some(values)) =
                (child_of_kind(node, &["variable_list"]), child_of_kind(node, &["expression_list"]))
            else {
                return Role::Other;
            };
            let function_value = values.named_child_count() == 1
                && values.named_child(0).is_some_and(|v| v.kind() == "function_definition");
            match targets.named_child(0) {
                Some(target) if function_value && targets.named_child_count() == 1 => lua_function(target, text),
                _ => Role::Other,
            }
        }
        _ => Role::Other,
    }
}

/// A function named by `name`, `table.name` or `table:name` (the table is its container).
fn lua_function(name: Node<'_>, text: &str) -> Role<'static> {
    let (container, name) = match name.kind() {
        "identifier" => (None, Some(text_of(name, text))),
        "dot_index_expression" => (field_text(name, "table", text), field_text(name, "field", text)),
        "method_index_expression" => (field_text(name, "table", text), field_text(name, "method", text)),
        _ => return Role::Other,
    };
    Role::Definition(Def { kind: ChunkKind::Function, name, container, qualifier: None, body: None, signature: false })
}

fn classify_bash<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        "comment" => Role::Leading,
        "function_definition" => def(ChunkKind::Function, field_text(node, "name", text)),
        _ => Role::Other,
    }
}

fn classify_zig<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        // `///` doc comments and `//` comments alike.
        "comment" => Role::Leading,
        "function_declaration" => def(ChunkKind::Function, field_text(node, "name", text)),
        // `const Cache = struct { … };`: a type is a value bound to a name.
        "variable_declaration" => {
            let name = child_of_kind(node, &["identifier"]).map(|n| text_of(n, text));
            let value = child_of_kind(
                node,
                &[
                    "struct_declaration",
                    "union_declaration",
                    "enum_declaration",
                    "opaque_declaration",
                    "error_set_declaration",
                ],
            );
            match value.map(|v| (v.kind(), v)) {
                Some(("struct_declaration" | "union_declaration", v)) => container(ChunkKind::Struct, name, Some(v)),
                Some(("enum_declaration", v)) => container(ChunkKind::Enum, name, Some(v)),
                Some(("opaque_declaration", v)) => container(ChunkKind::Type, name, Some(v)),
                Some(_) => def(ChunkKind::Type, name),
                None => Role::Other,
            }
        }
        _ => Role::Other,
    }
}

fn classify_haskell<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    match node.kind() {
        "comment" | "haddock" | "pragma" => Role::Leading,
        // The module's imports and declarations sit in one node each.
        "imports" | "declarations" => Role::Transparent,
        // A type signature and the equations after it are one function.
        "signature" | "function" | "bind" => match name() {
            Some(name) => def(ChunkKind::Function, Some(name)).signature(),
            None => Role::Other,
        },
        "data_type" | "newtype" | "type_synonym" | "type_family" | "data_family" => def(ChunkKind::Type, name()),
        "class" => container(ChunkKind::Trait, name(), node.child_by_field_name("declarations")),
        // `instance Show (Tree a)` is named by its type, as Rust's `impl Display for Tree`.
        "instance" => {
            let head = field_text(node, "patterns", text).and_then(|p| {
                p.split(|c: char| c.is_whitespace() || c == '(' || c == ')').find(|w| !w.is_empty()).map(str::to_string)
            });
            container(ChunkKind::Impl, head.or_else(name), node.child_by_field_name("declarations"))
        }
        _ => Role::Other,
    }
}

fn classify_dart<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let name = || field_text(node, "name", text);
    let body = || node.child_by_field_name("body");
    match node.kind() {
        "comment" | "documentation_comment" | "annotation" => Role::Leading,
        "class_declaration" | "mixin_declaration" | "extension_declaration" | "extension_type_declaration" => {
            container(ChunkKind::Class, name(), body())
        }
        "enum_declaration" => container(ChunkKind::Enum, name(), body()),
        "type_alias" => def(ChunkKind::Type, child_of_kind(node, &["type_identifier"]).map(|n| text_of(n, text))),
        // A top-level function, a class member with a body, or a member declared without one
        // (an abstract method, a constructor); fields are not definitions.
        "function_declaration" | "member_declaration" | "method_declaration" | "declaration" => {
            match dart_signature_name(node, text) {
                Some(name) => def(ChunkKind::Function, Some(name)),
                None => Role::Other,
            }
        }
        _ => Role::Other,
    }
}

/// The name a Dart function or member signature declares (`get`, `size` of a getter, `Cache` or
/// `Cache.named` of a constructor), looked for a few levels down: members wrap their
/// signatures in `method_declaration` / `declaration` / `method_signature` nodes.
fn dart_signature_name(node: Node<'_>, text: &str) -> Option<String> {
    const SIGNATURES: &[&str] = &[
        "function_signature",
        "getter_signature",
        "setter_signature",
        "constructor_signature",
        "factory_constructor_signature",
        "redirecting_factory_constructor_signature",
        "constant_constructor_signature",
        "operator_signature",
    ];
    const WRAPPERS: &[&str] = &["method_declaration", "declaration", "method_signature", "function_signature"];
    let mut frontier = vec![node];
    for _ in 0..4 {
        let mut next = Vec::new();
        for candidate in frontier {
            if SIGNATURES.contains(&candidate.kind()) {
                if candidate.kind() == "operator_signature" {
                    return Some(format!("operator {}", field_text(candidate, "operator", text).unwrap_or_default()));
                }
                let mut cursor = candidate.walk();
                let names: Vec<String> =
                    candidate.children_by_field_name("name", &mut cursor).map(|n| text_of(n, text)).collect();
                let name = if names.is_empty() {
                    child_of_kind(candidate, &["identifier"]).map(|n| text_of(n, text))
                } else {
                    Some(names.join("."))
                };
                return name;
            }
            if candidate == node || WRAPPERS.contains(&candidate.kind()) {
                let mut cursor = candidate.walk();
                next.extend(candidate.named_children(&mut cursor));
            }
        }
        frontier = next;
    }
    None
}

fn classify_objc<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let first_name = || child_of_kind(node, &["identifier"]).map(|n| text_of(n, text));
    match node.kind() {
        // `@interface Cache : NSObject … @end`, `@implementation Cache … @end`: the class's
        // members are the node's own children.
        "class_interface" | "class_implementation" => container(ChunkKind::Class, first_name(), Some(node)),
        "protocol_declaration" => container(ChunkKind::Interface, first_name(), Some(node)),
        "implementation_definition" => match child_of_kind(node, &["method_definition"]) {
            Some(method) => def(ChunkKind::Function, Some(objc_selector(method, text))),
            None => classify_objc_c(node, text),
        },
        "method_definition" | "method_declaration" => def(ChunkKind::Function, Some(objc_selector(node, text))),
        _ => classify_objc_c(node, text),
    }
}

/// Objective-C is C with classes: its functions, structs and typedefs read as C's.
fn classify_objc_c<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match classify_c(node, text) {
        // A C declaration wrapper (`extern "C"`) is not Objective-C's; keep what is found.
        role @ (Role::Leading | Role::Definition(_)) => role,
        _ => Role::Other,
    }
}

/// A method's selector as Objective-C writes it: `sharedCache`, `objectForKey:`,
/// `put:forKey:`.
fn objc_selector(method: Node<'_>, text: &str) -> String {
    let mut cursor = method.walk();
    let children: Vec<Node<'_>> = method.children(&mut cursor).collect();
    let mut selector = String::new();
    for (i, child) in children.iter().enumerate() {
        if child.kind() != "identifier" {
            continue;
        }
        selector.push_str(&text_of(*child, text));
        if children.get(i + 1).is_some_and(|next| next.kind() == "method_parameter") {
            selector.push(':');
        }
    }
    selector
}

fn classify_ocaml<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    let named = |binding: &str, name: &[&str]| {
        child_of_kind(node, &[binding]).map(|b| (b, child_of_kind(b, name).map(|n| text_of(n, text))))
    };
    match node.kind() {
        "comment" => Role::Leading,
        "module_definition" => match named("module_binding", &["module_name"]) {
            Some((binding, name)) => container(ChunkKind::Module, name, binding.child_by_field_name("body")),
            None => Role::Other,
        },
        "module_type_definition" => container(
            ChunkKind::Interface,
            child_of_kind(node, &["module_type_name"]).map(|n| text_of(n, text)),
            node.child_by_field_name("body"),
        ),
        "class_definition" => match named("class_binding", &["class_name"]) {
            Some((binding, name)) => container(ChunkKind::Class, name, binding.child_by_field_name("body")),
            None => Role::Other,
        },
        // `let f x = …`, `let rec f … and g …`: named by the first binding; `let () = …` is not a
        // definition.
        "value_definition" => {
            match child_of_kind(node, &["let_binding"]).and_then(|b| b.child_by_field_name("pattern")) {
                Some(pattern) if pattern.kind() == "value_name" => {
                    def(ChunkKind::Function, Some(text_of(pattern, text)))
                }
                _ => Role::Other,
            }
        }
        "value_specification" | "external" => {
            def(ChunkKind::Function, child_of_kind(node, &["value_name"]).map(|n| text_of(n, text)))
        }
        "method_definition" | "method_specification" => {
            def(ChunkKind::Function, child_of_kind(node, &["method_name"]).map(|n| text_of(n, text)))
        }
        "type_definition" => {
            let name = child_of_kind(node, &["type_binding"]).and_then(|b| field_text(b, "name", text));
            def(ChunkKind::Type, name)
        }
        "exception_definition" => def(
            ChunkKind::Type,
            child_of_kind(node, &["constructor_declaration"])
                .and_then(|c| child_of_kind(c, &["constructor_name"]))
                .map(|n| text_of(n, text)),
        ),
        _ => Role::Other,
    }
}

/// R's class constructors whose result, bound to a name, is a class (`Cache <- R6Class(…)`).
const R_CLASS_CONSTRUCTORS: &[&str] = &["R6Class", "setRefClass"];
/// R's calls that define a class, generic or method by a string name (`setClass("Person", …)`).
const R_DEFINING_CALLS: &[(&str, ChunkKind)] = &[
    ("setClass", ChunkKind::Class),
    ("setGeneric", ChunkKind::Function),
    ("setMethod", ChunkKind::Method),
    ("setValidity", ChunkKind::Function),
];

fn classify_r<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        // Comments, roxygen's `#'` blocks included.
        "comment" => Role::Leading,
        // `f <- function(x) …`, `f = function(x) …`, `f <<- function(x) …`, `Cache <- R6Class(…)`.
        "binary_operator" => {
            let operator = field_text(node, "operator", text).unwrap_or_default();
            let (Some(lhs), Some(rhs)) = (node.child_by_field_name("lhs"), node.child_by_field_name("rhs")) else {
                return Role::Other;
            };
            if !matches!(operator.as_str(), "<-" | "=" | "<<-") || !matches!(lhs.kind(), "identifier" | "string") {
                return Role::Other;
            }
            let name = Some(text_of(lhs, text).trim_matches(['"', '\'', '`']).to_string());
            match rhs.kind() {
                "function_definition" => def(ChunkKind::Function, name),
                "call"
                    if field_text(rhs, "function", text)
                        .is_some_and(|f| R_CLASS_CONSTRUCTORS.contains(&f.as_str())) =>
                {
                    def(ChunkKind::Class, name)
                }
                _ => Role::Other,
            }
        }
        "call" => {
            let function = field_text(node, "function", text).unwrap_or_default();
            let Some(&(_, kind)) = R_DEFINING_CALLS.iter().find(|(f, _)| *f == function) else {
                return Role::Other;
            };
            let name = node
                .child_by_field_name("arguments")
                .and_then(|a| child_of_kind(a, &["argument"]))
                .and_then(|a| a.child_by_field_name("value"))
                .filter(|v| v.kind() == "string")
                .and_then(|v| v.child_by_field_name("content"))
                .map(|c| text_of(c, text));
            def(kind, name)
        }
        _ => Role::Other,
    }
}

fn classify_julia<'t>(node: Node<'t>, text: &str) -> Role<'t> {
    match node.kind() {
        // A docstring is a string right above the definition it documents.
        "line_comment" | "block_comment" | "string_literal" => Role::Leading,
        "function_definition" => def(ChunkKind::Function, julia_signature_name(node, text)),
        "macro_definition" => def(ChunkKind::Macro, julia_signature_name(node, text)),
        // `area(s::Square) = s.side^2`: a function in one line.
        "assignment" => match node.named_child(0).filter(|lhs| lhs.kind() == "call_expression") {
            Some(call) => def(ChunkKind::Function, call.named_child(0).map(|callee| text_of(callee, text))),
            None => Role::Other,
        },
        "struct_definition" => def(ChunkKind::Struct, julia_type_name(node, text)),
        "abstract_definition" | "primitive_definition" => def(ChunkKind::Type, julia_type_name(node, text)),
        // `module Caches … end`: its members are the node's own children.
        "module_definition" | "baremodule_definition" => {
            container(ChunkKind::Module, field_text(node, "name", text), Some(node))
        }
        _ => Role::Other,
    }
}

/// `mean_of` of `function mean_of(x)`, `Base.show` of `function Base.show(io, x)`, `put!`.
fn julia_signature_name(node: Node<'_>, text: &str) -> Option<String> {
    let signature = child_of_kind(node, &["signature"])?;
    let mut call = signature.named_child(0)?;
    // `function f(x)::Int`, `function f(x) where T`: the call is inside.
    while matches!(call.kind(), "typed_expression" | "where_expression") {
        call = call.named_child(0)?;
    }
    match call.kind() {
        "call_expression" => call.named_child(0).map(|callee| text_of(callee, text)),
        "identifier" => Some(text_of(call, text)),
        _ => None,
    }
}

/// `Cache` of `struct Cache{K,V} … end` or `abstract type Store <: Base end`.
fn julia_type_name(node: Node<'_>, text: &str) -> Option<String> {
    let mut head = child_of_kind(node, &["type_head"])?.named_child(0)?;
    while matches!(head.kind(), "binary_expression" | "parametrized_type_expression" | "subtype_clause") {
        head = head.named_child(0)?;
    }
    (head.kind() == "identifier").then(|| text_of(head, text))
}
