//! The chunker's tests, one or more per language and per invariant (ordered chunks, every
//! non-blank line covered, the token budget), many on real files of each language
//! (`tests/fixtures/languages/`). Long on purpose: a test file that grows with the languages.

use std::fmt::Write;

use super::*;

/// Renders chunks one per line: `start-end kind symbol_path | first line`.
fn render(text: &str, language: Language, config: &ChunkConfig) -> String {
    let chunks = chunk_file("fixture", text, language, config);
    check_invariants(text, &chunks);
    let mut out = String::new();
    for chunk in &chunks {
        let first = chunk.text(text).lines().next().unwrap_or("").trim();
        let _ = writeln!(
            out,
            "{}-{} {} {} | {}",
            chunk.start_line,
            chunk.end_line,
            chunk.kind.name(),
            chunk.symbol_path().unwrap_or_else(|| "-".into()),
            first
        );
    }
    out
}

/// Chunks are ordered, lie within the text, have consistent lines and hashes, and cover every
/// non-blank line.
pub(crate) fn check_invariants(text: &str, chunks: &[Chunk]) {
    let lines = LineIndex::new(text);
    let mut covered = vec![false; text.lines().count() + 1];
    let mut prev_start = 0;
    for chunk in chunks {
        assert!(chunk.byte_range.start >= prev_start, "chunks out of order: {chunk:?}");
        prev_start = chunk.byte_range.start;
        assert!(chunk.byte_range.end <= text.len());
        assert!(text.is_char_boundary(chunk.byte_range.start) && text.is_char_boundary(chunk.byte_range.end));
        assert!(chunk.start_line >= 1 && chunk.start_line <= chunk.end_line);
        assert_eq!(chunk.start_line, lines.line_of(chunk.byte_range.start));
        assert_eq!(chunk.hash, ContentHash::of(chunk.text(text)));
        assert!(!chunk.text(text).trim().is_empty());
        for line in chunk.start_line..=chunk.end_line {
            if let Some(slot) = covered.get_mut(line as usize - 1) {
                *slot = true;
            }
        }
    }
    for (i, line) in text.lines().enumerate() {
        assert!(
            line.trim().is_empty() || covered[i],
            "line {} not covered: {line:?}\nchunks: {:#?}",
            i + 1,
            chunks.iter().map(|c| (c.start_line, c.end_line)).collect::<Vec<_>>()
        );
    }
}

fn check(language: Language, text: &str) -> String {
    render(text, language, &ChunkConfig::default())
}

#[test]
fn rust() {
    let text = r#"//! Module docs.

use std::fs;
use std::path::Path;

const LIMIT: usize = 10;

/// A shard of the index.
#[derive(Debug)]
pub struct Shard {
    path: String,
}

impl Shard {
    /// Opens a shard.
    pub fn open(path: &Path) -> std::io::Result<Shard> {
        let text = fs::read_to_string(path)?;
        Ok(Shard { path: text })
    }

    fn close(self) {}
}

pub trait Store {
    fn get(&self, key: &str) -> Option<String>;
}

pub enum Mode { Dense, Lexical }

mod inner {
    pub fn helper() -> u32 { 1 }
}

macro_rules! square { ($x:expr) => { $x * $x }; }
"#;
    insta::assert_snapshot!(check(Language::Rust, text));
}

#[test]
fn impl_containers_are_named_by_their_bare_type() {
    let text = "impl<'a, W: Write> ser::Serializer for &'a mut Serializer<W> {\n    fn flush(&mut self) {}\n}\n";
    let chunks = chunk_file("x.rs", text, Language::Rust, &ChunkConfig::default());
    assert_eq!(chunks[0].symbol.as_deref(), Some("Serializer"));
}

#[test]
fn rust_large_impl_is_split_into_methods() {
    let mut text = String::from("pub struct Big;\n\nimpl Big {\n");
    for i in 0..12 {
        let _ = write!(
            text,
            "    /// Method number {i}.\n    pub fn method_{i}(&self, value: u32) -> u32 {{\n        let doubled = value * 2 + {i};\n        doubled.saturating_sub(1)\n    }}\n\n"
        );
    }
    text.push_str("}\n");
    insta::assert_snapshot!(check(Language::Rust, &text));
}

#[test]
fn oversized_function_is_split_at_statements_with_overlap() {
    let mut text = String::from("fn long() {\n");
    for i in 0..80 {
        let _ = writeln!(text, "    let value_{i} = compute_something(input_{i}, {i});");
    }
    text.push_str("}\n");
    let config = ChunkConfig::default();
    let chunks = chunk_file("f.rs", &text, Language::Rust, &config);
    check_invariants(&text, &chunks);
    assert!(chunks.len() >= 3, "expected several pieces, got {}", chunks.len());
    for pair in chunks.windows(2) {
        assert_eq!(pair[0].symbol.as_deref(), Some("long"));
        assert!(pair[1].start_line <= pair[0].end_line, "pieces should overlap: {pair:?}");
    }
    for chunk in &chunks {
        assert!(estimate_tokens(chunk.text(&text)) <= config.max_tokens, "{chunk:?}");
    }
    assert!(chunks[0].text(&text).starts_with("fn long()"));
}

#[test]
fn python() {
    let text = r#"import os
import sys

TIMEOUT = 5


@dataclass
class Config:
    """Settings for the client."""

    name: str
    retries: int = 3

    def load(self, path):
        """Reads settings from a file."""
        with open(path) as f:
            return f.read()

    @property
    def label(self):
        return self.name


def main():
    # Entry point.
    print(Config("x").label)


if __name__ == "__main__":
    main()
"#;
    insta::assert_snapshot!(check(Language::Python, text));
}

#[test]
fn javascript() {
    let text = r#"'use strict'
const fs = require('fs')

/**
 * Reads a config file.
 */
function readConfig (path) {
  return JSON.parse(fs.readFileSync(path, 'utf8'))
}

const add = (a, b) => a + b

class Server {
  constructor (port) {
    this.port = port
  }

  listen () {
    return this.port
  }
}

Server.prototype.close = function () {
  return true
}

module.exports = { readConfig, add, Server }
"#;
    insta::assert_snapshot!(check(Language::JavaScript, text));
}

#[test]
fn typescript() {
    let text = r#"import { Token } from './token'

export interface Options {
  name: string
  retries?: number
}

export type Mode = 'dense' | 'lexical'

export enum Level { Low, High }

/** Validates an API token. */
export function validateToken(token: Token): boolean {
  return token.value.length > 0
}

export class Client {
  private readonly options: Options

  constructor(options: Options) {
    this.options = options
  }

  @logged
  async send(body: string): Promise<void> {
    await fetch(this.options.name, { body })
  }
}

namespace Util {
  export function id<T>(x: T): T { return x }
}
"#;
    insta::assert_snapshot!(check(Language::TypeScript, text));
}

/// An overload set is one function: the signatures, the comments between them and the
/// implementation are one chunk, so a search for the function does not get its bodiless
/// signatures as separate hits crowding out the code.
#[test]
fn typescript_overloads_join_their_implementation() {
    let text = r#"export function map<T, R>(project: (value: T) => R): Op<T, R>;
/** @deprecated Use a closure instead of a `thisArg`. */
export function map<T, R, A>(project: (this: A, value: T) => R, thisArg: A): Op<T, R>;

/**
 * Applies a function to each value.
 */
export function map<T, R>(project: (value: T) => R, thisArg?: any): Op<T, R> {
  return operate((source, subscriber) => source.subscribe(subscriber));
}

export function lonely(a: string): void;
// a note about nothing in particular

/** Takes one value. */
export function take(count: number): Op<number, number> {
  return operate((source) => source);
}

export declare function first(a: string): string;
export declare function first(a: number): number; // the numeric form

export class Subject<T> {
  private observers: Observer<T>[] = [];
  private closed = false;
  private hasError = false;
  private thrownError: any = null;

  /** Creates a subject from an observer and an observable. */
  static create<T>(destination: Observer<T>): Subject<T>;
  static create<T>(destination: Observer<T>, source: Observable<T>): Subject<T>;
  static create(...args: any[]): any {
    const subject = new Subject();
    subject.observers.push(...args);
    return subject;
  }

  next(value: T) {
    for (const observer of this.observers) {
      observer.next(value);
    }
  }

  error(err: any) {
    this.hasError = true;
    this.thrownError = err;
    for (const observer of this.observers) {
      observer.error(err);
    }
  }

  complete() {
    this.closed = true;
    for (const observer of this.observers) {
      observer.complete();
    }
    this.observers.length = 0;
  }
}

interface Api {
  get(key: string): number;
  get(key: number): number;
  put(key: string): void;
}
"#;
    insta::assert_snapshot!(check(Language::TypeScript, text));
}

#[test]
fn python_overloads_join_their_implementation() {
    let text = r#"import typing
from typing import overload


@overload
def parse(x: int) -> int: ...
@typing.overload
def parse(x: str) -> str: ...


def parse(x):
    """Parses it."""
    return x


@overload
def unrelated(x: int) -> int: ...


def other():
    return 1
"#;
    insta::assert_snapshot!(check(Language::Python, text));
}

#[test]
fn tsx() {
    let text = r#"import React from 'react'

type Props = { label: string }

/** A button that says hello. */
export function Hello({ label }: Props) {
  return <button onClick={() => alert(label)}>{label}</button>
}

export const Panel = ({ children }: { children: React.ReactNode }) => (
  <div className="panel">{children}</div>
)
"#;
    insta::assert_snapshot!(check(Language::Tsx, text));
}

#[test]
fn go() {
    let text = r#"package store

import (
	"errors"
	"os"
)

// ErrMissing is returned when a key is absent.
var ErrMissing = errors.New("missing")

// Store keeps values on disk.
type Store struct {
	dir string
}

// Reader reads values.
type Reader interface {
	Get(key string) (string, error)
}

// Open opens a store in dir.
func Open(dir string) (*Store, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	return &Store{dir: dir}, nil
}

// Get reads one value.
func (s *Store) Get(key string) (string, error) {
	return "", ErrMissing
}
"#;
    insta::assert_snapshot!(check(Language::Go, text));
}

#[test]
fn java() {
    let text = r#"package com.example;

import java.util.List;

/** Keeps users. */
public class UserService {
    private final List<String> users;

    /** Creates the service. */
    public UserService(List<String> users) {
        this.users = users;
    }

    @Override
    public String toString() {
        return "UserService";
    }

    /** Finds a user by name. */
    public String find(String name) {
        for (String u : users) {
            if (u.equals(name)) return u;
        }
        return null;
    }
}

interface Repository {
    void save(String user);
}

enum Color { RED, GREEN }
"#;
    insta::assert_snapshot!(check(Language::Java, text));
}

#[test]
fn c() {
    let text = r#"#include <stdio.h>
#include <stdlib.h>

#define MAX 10

/* A point in the plane. */
typedef struct {
    int x;
    int y;
} Point;

struct node {
    struct node *next;
};

int add(int a, int b);

/* Adds two numbers. */
int add(int a, int b) {
    return a + b;
}

static char *copy_string(const char *s) {
    return strdup(s);
}

#ifdef DEBUG
void trace(const char *msg) { fprintf(stderr, "%s\n", msg); }
#endif
"#;
    insta::assert_snapshot!(check(Language::C, text));
}

#[test]
fn cpp() {
    let text = r#"#include <string>

namespace store {

/// A key-value cache.
class Cache {
public:
    explicit Cache(int size);
    std::string get(const std::string& key) const;

private:
    int size_;
};

Cache::Cache(int size) : size_(size) {}

std::string Cache::get(const std::string& key) const {
    return key;
}

template <typename T>
T max_of(T a, T b) {
    return a > b ? a : b;
}

}  // namespace store
"#;
    insta::assert_snapshot!(check(Language::Cpp, text));
}

#[test]
fn markdown() {
    let text = r#"Intro text before any heading.

# Guide

Some words.

## Install

Run the script.

```sh
# not a heading
make
```

## Usage

### Query

Ask a question.
"#;
    insta::assert_snapshot!(check(Language::Markdown, text));
}

#[test]
fn plain_text_windows_overlap() {
    let text: String = (0..200).map(|i| format!("line number {i} of a plain text file\n")).collect();
    let chunks = chunk_file("notes.txt", &text, Language::Text, &ChunkConfig::default());
    check_invariants(&text, &chunks);
    assert!(chunks.len() > 3);
    for pair in chunks.windows(2) {
        assert_eq!(pair[1].start_line, pair[0].end_line - 1, "two lines of overlap");
    }
}

#[test]
fn empty_and_whitespace_files_have_no_chunks() {
    for language in Language::ALL {
        assert!(chunk_file("x", "", language, &ChunkConfig::default()).is_empty());
        assert!(chunk_file("x", "\n\n   \n", language, &ChunkConfig::default()).is_empty());
    }
}

#[test]
fn broken_syntax_is_still_covered() {
    let text = "fn broken( {\n  let x = ;\n}\n\nfn fine() -> u32 { 1 }\n\n}}}} garbage ((\n";
    for language in [Language::Rust, Language::Python, Language::JavaScript, Language::Go, Language::C] {
        let chunks = chunk_file("x", text, language, &ChunkConfig::default());
        check_invariants(text, &chunks);
    }
}

/// One interface whose call signatures lack `;` (mobx's `IActionFactory`) makes tree-sitter's
/// TypeScript grammar wrap the whole file in an ERROR node. The declarations after it are still
/// chunked as definitions, each with its doc comment, because the file is parsed again segment by
/// segment (a segment starts at a top-level declaration at column 0).
#[test]
fn an_error_that_swallows_the_file_stays_in_its_segment() {
    let text = r#"import { createAction } from "./action"

export interface IActionFactory
    extends Annotation,
        PropertyDecorator {
    // nameless actions
    <T extends Function | undefined | null>(fn: T): T
    // named actions
    <T extends Function | undefined | null>(name: string, fn: T): T

    // named decorator
    (customName: string): PropertyDecorator & Annotation
}

function createActionFactory(autoAction: boolean): IActionFactory {
    const res: IActionFactory = function action(arg1, arg2?): any {
        if (isFunction(arg1)) {
            return createAction(arg1.name, arg1, autoAction)
        }
    } as IActionFactory
    return res
}

/**
 * Runs `fn` inside an action.
 */
export function runInAction<T>(fn: () => T): T {
    return executeAction(fn.name, false, fn, this, undefined)
}

export function isAction(thing: any) {
    return isFunction(thing) && thing.isMobxAction === true
}
"#;
    insta::assert_snapshot!(check(Language::TypeScript, text));
    let outline: Vec<String> =
        outline(text, Language::TypeScript, &ChunkConfig::default()).into_iter().map(|d| d.symbol).collect();
    assert_eq!(outline, ["IActionFactory", "createActionFactory", "runInAction", "isAction"]);
}

/// Kotlin's grammar gives up at a `value class` whose constructor is annotated on the next line
/// (kotlinx.coroutines' `ChannelResult`): the rest of the file became one ERROR node whose
/// children stop at the last `$`, and the uncovered tail one anonymous chunk of hundreds of
/// lines. The definitions after it are chunks of their own again, and no loose code breaks
/// the token budget.
#[test]
fn kotlin_definitions_after_a_value_class_error_are_chunks() {
    let mut text = String::from(
        "@JvmInline\npublic value class Result<out T>\n@PublishedApi internal constructor(@PublishedApi internal val holder: Any?) {\n    public val isSuccess: Boolean get() = holder !is Failed\n}\n\n/** Prints \"got $element\". */\npublic fun <T> Result<T>.show(): String = \"got \" + holder\n\n",
    );
    for i in 0..60 {
        let _ = write!(
            text,
            "/**\n * Returns the value number {i} for the caller.\n */\npublic fun <T> Result<T>.value{i}(): T? = if (isSuccess) holder as T else null\n\n"
        );
    }
    let config = ChunkConfig::default();
    let chunks = chunk_file("Result.kt", &text, Language::Kotlin, &config);
    check_invariants(&text, &chunks);
    let named: Vec<&str> = chunks.iter().filter_map(|c| c.symbol.as_deref()).collect();
    for i in 0..60 {
        assert!(named.contains(&format!("value{i}").as_str()), "value{i} is not a chunk: {named:?}");
    }
    for chunk in chunks.iter().filter(|c| c.kind == ChunkKind::Code) {
        assert!(estimate_tokens(chunk.text(&text)) <= config.max_tokens, "loose code over budget: {chunk:?}");
    }
}

/// Whatever the grammar leaves uncovered is covered in windows within the budget, not as one
/// piece (the safety net under every language rule).
#[test]
fn a_long_uncovered_gap_is_cut_into_windows() {
    let text: String = (0..400).map(|i| format!("line {i} of text nobody parsed\n")).collect();
    let config = ChunkConfig::default();
    let pieces = cover_gaps(&text, Vec::new(), &config);
    assert!(pieces.len() > 1, "one piece for 400 lines");
    for piece in &pieces {
        assert!(estimate_tokens(&text[piece.range.clone()]) <= config.max_tokens);
        assert_eq!(piece.kind, ChunkKind::Code);
    }
    assert_eq!(pieces.first().map(|p| p.range.start), Some(0));
    assert_eq!(pieces.last().map(|p| p.range.end), Some(text.len()));
}

/// The same error before an object literal of methods (mobx's `observableFactories`): the
/// methods are only found inside the big `const`, which an outline does not look into; the
/// segments must still win, so each method is a chunk of its own.
#[test]
fn methods_of_an_object_after_a_swallowing_error_are_chunks() {
    let mut text = String::from(
        "export interface IFactory {\n    <T = any>(value: T[], options?: Options): Items<T>\n    <T extends object>(\n        value: T,\n        options?: Options\n    ): T\n\n    box: IBoxFactory\n}\n\nconst factories: IFactory = {\n",
    );
    for name in ["box", "array", "map", "set", "object"] {
        text.push_str(&format!("    {name}<T = any>(value: T, options?: Options): Result<T> {{\n"));
        for i in 0..6 {
            text.push_str(&format!("        const step{i} = normalise(options, value, {i}, \"{name} step {i}\")\n"));
        }
        text.push_str("        return finish(step0, step5)\n    },\n");
    }
    text.push_str("} as any\n");
    let chunks = chunk_file("x.ts", &text, Language::TypeScript, &ChunkConfig::default());
    check_invariants(&text, &chunks);
    let methods: Vec<&str> =
        chunks.iter().filter(|c| c.kind == ChunkKind::Method).filter_map(|c| c.symbol.as_deref()).collect();
    assert_eq!(methods, ["box", "array", "map", "set", "object"], "{chunks:#?}");
    let paths: Vec<String> =
        chunks.iter().filter(|c| c.kind == ChunkKind::Method).filter_map(|c| c.symbol_path()).collect();
    assert_eq!(paths[0], "factories.box", "the object bound to a name is their container: {paths:?}");
    let outlined: Vec<String> = outline(&text, Language::TypeScript, &ChunkConfig::default())
        .into_iter()
        .filter(|d| d.kind == ChunkKind::Method)
        .map(|d| d.symbol)
        .collect();
    assert_eq!(outlined, ["factories.box", "factories.array", "factories.map", "factories.set", "factories.object"]);
}

/// An object literal bound to a name holds its methods as a class would: the name is their
/// container, in chunks (when the object is too big for one) and in the outline (always).
/// `module.exports = { … }` and `export default { … }` name nothing.
#[test]
fn an_object_bound_to_a_name_is_its_methods_container() {
    let body = |name: &str| {
        let mut s = format!("  {name}(input) {{\n");
        for i in 0..8 {
            s.push_str(&format!("    const value{i} = transform(input, {i}, \"{name} step {i}\");\n"));
        }
        s.push_str("    return value7;\n  },\n");
        s
    };
    let big = |head: &str, tail: &str| {
        format!(
            "{head}\n{}{}{}  rules: {{\n  {}  }},\n{tail}\n",
            body("parse"),
            body("render"),
            body("close"),
            body("check")
        )
    };
    let cases = [
        (
            big("export const api = {", "};"),
            Language::TypeScript,
            vec!["api.parse", "api.render", "api.close", "api.rules.check"],
        ),
        (
            big("Widget.prototype = {", "};"),
            Language::JavaScript,
            vec!["Widget.parse", "Widget.render", "Widget.close", "Widget.rules.check"],
        ),
        (
            big("exports.codec = {", "};"),
            Language::JavaScript,
            vec!["codec.parse", "codec.render", "codec.close", "codec.rules.check"],
        ),
        (big("module.exports = {", "};"), Language::JavaScript, vec!["parse", "render", "close", "rules.check"]),
        (big("export default {", "};"), Language::TypeScript, vec!["parse", "render", "close", "rules.check"]),
        (
            big("const table = ({", "}) as const;"),
            Language::TypeScript,
            vec!["table.parse", "table.render", "table.close", "table.rules.check"],
        ),
    ];
    for (text, language, expected) in cases {
        let path = if language == Language::TypeScript { "x.ts" } else { "x.js" };
        let chunks = chunk_file(path, &text, language, &ChunkConfig::default());
        check_invariants(&text, &chunks);
        let paths: Vec<String> =
            chunks.iter().filter(|c| c.kind == ChunkKind::Method).filter_map(|c| c.symbol_path()).collect();
        // `rules` is small: inside a chunk of code, not a chunk of its own.
        assert_eq!(paths, expected[..3], "{text}\n{chunks:#?}");
        let outlined: Vec<String> =
            outline(&text, language, &ChunkConfig::default()).into_iter().map(|d| d.symbol).collect();
        assert_eq!(outlined, expected, "{text}");
    }
    // Small: one chunk of its own, named by the object as a small class is by its name (not
    // loose code merged with what is around it); the outline still names the method under it.
    let small = "const api = {\n  ping() { return 1; },\n};\n";
    let chunks = chunk_file("x.js", small, Language::JavaScript, &ChunkConfig::default());
    assert_eq!(chunks.len(), 1);
    assert_eq!((chunks[0].kind, chunks[0].symbol.as_deref()), (ChunkKind::Module, Some("api")));
    let outlined: Vec<String> =
        outline(small, Language::JavaScript, &ChunkConfig::default()).into_iter().map(|d| d.symbol).collect();
    assert_eq!(outlined, ["api.ping"]);
}

/// A small object of functions bound by a declaration is a definition of its name, with its doc
/// comment, apart from the loose code around it; an object of plain values, or one bound to
/// `module.exports`, stays loose code.
#[test]
fn a_small_object_of_functions_is_a_definition_of_its_name() {
    let text = "const LIMIT = 3;\nconst config = { retries: 3, name: \"x\" };\n\nfunction helper() {\n  return LIMIT;\n}\n\n/** The user API. */\nexport const users = {\n  get(id) { return store.get(id); },\n  remove: (id) => store.del(id),\n} as const;\n\nmodule.exports = {\n  run() { return 1; },\n};\n";
    let chunks = chunk_file("x.ts", text, Language::TypeScript, &ChunkConfig::default());
    check_invariants(text, &chunks);
    let users: Vec<_> = chunks.iter().filter(|c| c.symbol.as_deref() == Some("users")).collect();
    assert_eq!(users.len(), 1, "{chunks:#?}");
    assert_eq!(users[0].kind, ChunkKind::Module);
    assert_eq!((users[0].start_line, users[0].end_line), (8, 12), "the doc comment is the object's: {chunks:#?}");
    let loose: Vec<_> = chunks.iter().filter(|c| c.kind == ChunkKind::Code).map(|c| c.start_line).collect();
    assert!(chunks.iter().all(|c| c.symbol.as_deref() != Some("config")), "{chunks:#?}");
    assert!(loose.contains(&14), "module.exports names nothing: {chunks:#?}");
}

/// A file whose error tree-sitter recovers from locally keeps its one parse, and a file with no
/// declaration keyword at column 0 is never split.
#[test]
fn a_local_error_keeps_the_whole_file_parse() {
    let text = "class A {\n  m() { return 1 +; }\n  n() { return 2 }\n}\n";
    let chunks = chunk_file("x.ts", text, Language::TypeScript, &ChunkConfig::default());
    check_invariants(text, &chunks);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].symbol.as_deref(), Some("A"));
    let starts = |text: &str, language| syntax::segment_starts(text, &LineIndex::new(text), language);
    assert_eq!(starts("  const a = 1\n  const b = (\n", Language::TypeScript), [0]);
    assert_eq!(starts("a\n/// doc\n#[test]\nfn f() {}\n", Language::Rust), [0, 2]);
    assert_eq!(starts("def f():\n    pass\n", Language::Python), [0]);
}

#[test]
fn a_single_huge_line_is_cut_not_dropped() {
    let text = format!("const DATA: &str = \"{}\";\n", "a b c ".repeat(4000));
    let config = ChunkConfig::default();
    let chunks = chunk_file("x.rs", &text, Language::Rust, &config);
    check_invariants(&text, &chunks);
    assert!(chunks.len() > 10);
    let solid = |s: &str| s.chars().filter(|c| !c.is_whitespace()).count();
    let total: usize = chunks.iter().map(|c| solid(c.text(&text))).sum();
    assert!(total >= solid(&text));
}

#[test]
fn non_ascii_text_keeps_char_boundaries() {
    let text = "/// Grüße, 世界 🚀\nfn grüße() -> &'static str {\n    \"héllo wörld\"\n}\n";
    let chunks = chunk_file("x.rs", text, Language::Rust, &ChunkConfig::default());
    check_invariants(text, &chunks);
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].symbol.as_deref(), Some("grüße"));
}

#[test]
fn chunking_is_deterministic() {
    let text = include_str!("syntax.rs");
    let a = chunk_file("syntax.rs", text, Language::Rust, &ChunkConfig::default());
    let b = chunk_file("syntax.rs", text, Language::Rust, &ChunkConfig::default());
    assert_eq!(a, b);
    check_invariants(text, &a);
}

#[test]
fn token_estimate_is_in_a_sane_range() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("read the file"), 3);
    // Punctuation counts one each.
    assert_eq!(estimate_tokens("a(b);"), 5);
    assert!(estimate_tokens("averyveryverylongidentifiername") > 3);
}

/// Found by fuzzing (fuzz/findings/chunk-tsx-nul-hang): NUL bytes in TSX send tree-sitter's
/// error recovery into a loop of many seconds. The walker skips such files as binary; the chunker
/// itself stops parsing after its time limit and falls back to line windows.
#[test]
fn a_parse_that_takes_too_long_falls_back_to_line_windows() {
    let finding = include_bytes!("../../../fuzz/findings/chunk-tsx-nul-hang");
    let text = String::from_utf8_lossy(finding).into_owned();
    let started = std::time::Instant::now();
    let chunks = chunk_file("finding.tsx", &text, Language::Tsx, &ChunkConfig::default());
    assert!(started.elapsed() < syntax::PARSE_TIME_LIMIT * 3, "{:?}", started.elapsed());
    check_invariants(&text, &chunks);
    assert!(!chunks.is_empty());
}

/// Deeper than the cap: line windows, every line covered, no stack overflow.
#[test]
fn nesting_deeper_than_the_cap_is_chunked_by_lines() {
    let depth = syntax::MAX_SYNTAX_DEPTH * 4;
    let text: String = format!("const deep = {}1{};\n", "[".repeat(depth), "]".repeat(depth))
        .as_bytes()
        .chunks(80)
        .map(|line| format!("{}\n", String::from_utf8_lossy(line)))
        .collect();
    let chunks = chunk_file("deep.js", &text, Language::JavaScript, &ChunkConfig::default());
    check_invariants(&text, &chunks);
    assert!(chunks.iter().all(|c| c.kind == ChunkKind::Text || c.kind == ChunkKind::Code), "{chunks:?}");
}

#[test]
fn outline_lists_members_of_small_containers() {
    let text = "class Store:\n    \"\"\"Tokens.\"\"\"\n\n    def issue(self):\n        return 1\n\n\ndef validate(token):\n    return True\n";
    let names: Vec<(String, ChunkKind, u32, u32)> = outline(text, Language::Python, &ChunkConfig::default())
        .into_iter()
        .map(|d| (d.symbol, d.kind, d.start_line, d.end_line))
        .collect();
    assert_eq!(
        names,
        [
            ("Store".to_string(), ChunkKind::Class, 1, 5),
            ("Store.issue".to_string(), ChunkKind::Method, 4, 5),
            ("validate".to_string(), ChunkKind::Function, 8, 9),
        ]
    );
    let rust = "impl Shard {\n    fn open() {}\n}\n";
    let symbols: Vec<String> =
        outline(rust, Language::Rust, &ChunkConfig::default()).into_iter().map(|d| d.symbol).collect();
    assert_eq!(symbols, ["Shard", "Shard::open"]);
}

#[test]
fn code_lines_leave_out_comments_blanks_and_docstrings() {
    let rust = "/// Opens the shard.\n/// More.\n#[inline]\npub fn open() {\n    // why\n\n    let x = 1;\n    x\n}\n";
    assert_eq!(code_lines(rust, Language::Rust), 4);
    let go = "// Open opens.\nfunc Open() error {\n\t/* note */\n\treturn nil\n}";
    assert_eq!(code_lines(go, Language::Go), 3);
    let ts = "/**\n * Opens.\n * @param x the thing\n */\nexport function open(x: number) {\n  return x * 2;\n}";
    assert_eq!(code_lines(ts, Language::TypeScript), 3);
    let python =
        "def open(path):\n    \"\"\"Opens the file.\n\n    More words.\n    \"\"\"\n    # why\n    return path\n";
    assert_eq!(code_lines(python, Language::Python), 2);
    let one_line_doc = "def f():\n    r'''One line.'''\n    return 1\n";
    assert_eq!(code_lines(one_line_doc, Language::Python), 2);
    // The same function documented or not has the same length.
    let blanked = "def open(path):\n\n\n\n\n    # why\n    return path\n";
    assert_eq!(code_lines(blanked, Language::Python), code_lines(python, Language::Python));
    // Only Python reads triple quotes as a docstring.
    assert_eq!(code_lines("let s = 1;\n\"\"\"\nx\n", Language::Rust), 3);
    assert_eq!(code_lines("", Language::Rust), 0);
}

/// Every file listed (one path a line) in the file `RAGGREP_CHUNK_CORPUS` names, chunked with
/// the invariants checked: `RAGGREP_CHUNK_CORPUS=list cargo test --lib -- --ignored real_corpus
/// --nocapture`. Prints, per language, files, chunks and the share of chunks with a symbol.
#[test]
#[ignore = "needs a corpus on disk"]
#[allow(clippy::print_stdout)] // Run by hand: its report is what it prints.
fn real_corpus() {
    let Ok(list) = std::env::var("RAGGREP_CHUNK_CORPUS") else { return };
    let list = std::fs::read_to_string(list).expect("the corpus list");
    let mut stats: std::collections::BTreeMap<&str, (usize, usize, usize)> = Default::default();
    for path in list.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        let language = Language::detect(std::path::Path::new(path), &text);
        let started = std::time::Instant::now();
        let chunks = chunk_file(path, &text, language, &ChunkConfig::default());
        let elapsed = started.elapsed();
        check_invariants(&text, &chunks);
        for chunk in &chunks {
            let tokens = estimate_tokens(chunk.text(&text));
            if tokens > ChunkConfig::default().max_tokens {
                println!("over budget: {path}:{}-{} {tokens} {:?}", chunk.start_line, chunk.end_line, chunk.kind);
            }
        }
        if elapsed > std::time::Duration::from_millis(500) {
            println!("slow: {path} {elapsed:?}");
        }
        let entry = stats.entry(language.name()).or_default();
        entry.0 += 1;
        entry.1 += chunks.len();
        entry.2 += chunks.iter().filter(|c| c.symbol.is_some()).count();
    }
    for (language, (files, chunks, named)) in stats {
        println!("{language}: {files} files, {chunks} chunks, {named} named");
    }
}

// Issue 53: the languages after the first nine. Each snippet is chunked (snapshot, invariants)
// and outlined (every definition with its qualified name, as `find_symbol` and MCP `outline` see it).

/// The outline as `kind qualified-name` lines.
fn outline_of(language: Language, text: &str) -> Vec<String> {
    outline(text, language, &ChunkConfig::default())
        .into_iter()
        .map(|d| format!("{} {}", d.kind.name(), d.symbol))
        .collect()
}

/// Chunks with a budget small enough that every container is opened: `kind symbol_path` of the
/// named ones (members carry their container).
fn members_of(language: Language, text: &str) -> Vec<String> {
    let config = ChunkConfig { max_tokens: 24, ..ChunkConfig::default() };
    let chunks = chunk_file("fixture", text, language, &config);
    check_invariants(text, &chunks);
    let mut out: Vec<String> = Vec::new();
    for chunk in &chunks {
        let Some(path) = chunk.symbol_path() else { continue };
        let line = format!("{} {path}", chunk.kind.name());
        if out.last() != Some(&line) {
            out.push(line);
        }
    }
    out
}

const RUBY: &str = r#"# frozen_string_literal: true

require "set"

module Rack
  # Builds a Rack application from middleware.
  class Builder
    attr_reader :app

    # Creates a builder.
    def initialize(default_app = nil, &block)
      @use = []
      @run = default_app
      instance_eval(&block) if block_given?
    end

    # Parses a config file.
    def self.parse_file(path)
      new.tap { |b| b.instance_eval(File.read(path)) }
    end

    class << self
      def app(default_app = nil, &block)
        new(default_app, &block).to_app
      end
    end

    def call(env)
      to_app.call(env)
    end

    def valid?
      !@run.nil?
    end
  end

  class Lint::Checker < Base
    def check!; end
  end
end

def helper(x)
  x * 2
end
"#;

#[test]
fn ruby_definitions() {
    insta::assert_snapshot!(check(Language::Ruby, RUBY));
    assert_eq!(
        outline_of(Language::Ruby, RUBY),
        [
            "module Rack",
            "class Rack::Builder",
            "method Rack::Builder.initialize",
            "method Rack::Builder.parse_file",
            "method Rack::Builder.app",
            "method Rack::Builder.call",
            "method Rack::Builder.valid?",
            "class Rack::Lint::Checker",
            "method Rack::Lint::Checker.check!",
            "function helper"
        ]
    );
    assert_eq!(
        members_of(Language::Ruby, RUBY),
        [
            "class Rack::Builder",
            "method Rack::Builder.initialize",
            "method Rack::Builder.parse_file",
            "method Rack::Builder.app",
            "method Rack::Builder.call",
            "method Rack::Builder.valid?",
            "class Rack::Lint::Checker",
            "function helper"
        ]
    );
}

const PHP: &str = r#"<?php

namespace App\Http;

use Psr\Log\LoggerInterface;

/**
 * Handles requests.
 */
#[Attribute]
final class Controller extends Base implements Handler
{
    private LoggerInterface $logger;

    public function __construct(LoggerInterface $logger)
    {
        $this->logger = $logger;
    }

    /** Shows one item. */
    public function show(int $id): string
    {
        return "item $id";
    }

    public static function create(): self
    {
        return new self(new NullLogger());
    }
}

interface Handler
{
    public function handle(Request $request): Response;
}

trait Greets
{
    public function greet(): string { return "hi"; }
}

enum Suit: string
{
    case Hearts = 'H';
    public function label(): string { return ucfirst($this->name); }
}

function helper(array $items): int
{
    return count($items);
}
"#;

#[test]
fn php_definitions() {
    insta::assert_snapshot!(check(Language::Php, PHP));
    assert_eq!(
        outline_of(Language::Php, PHP),
        [
            "class Controller",
            "method Controller::__construct",
            "method Controller::show",
            "method Controller::create",
            "interface Handler",
            "method Handler::handle",
            "trait Greets",
            "method Greets::greet",
            "enum Suit",
            "method Suit::label",
            "function helper"
        ]
    );
    assert_eq!(
        members_of(Language::Php, PHP),
        [
            "class Controller",
            "method Controller::__construct",
            "method Controller::show",
            "method Controller::create",
            "interface Handler",
            "trait Greets",
            "enum Suit",
            "method Suit::label",
            "function helper"
        ]
    );
}

const CSHARP: &str = r#"using System;
using System.Collections.Generic;

namespace Example.Store
{
    /// <summary>A key-value cache.</summary>
    [Serializable]
    public class Cache<T> : ICache<T>
    {
        private readonly Dictionary<string, T> items = new();

        /// <summary>Creates a cache.</summary>
        public Cache(int size)
        {
            Size = size;
        }

        public int Size { get; }

        [Obsolete("use TryGet")]
        public T Get(string key) => items[key];

        public bool TryGet(string key, out T value)
        {
            return items.TryGetValue(key, out value);
        }

        private class Entry
        {
            public void Touch() { }
        }
    }

    public interface ICache<T>
    {
        T Get(string key);
    }

    public struct Point { public int X; }

    public enum Color { Red, Green }

    public record Person(string Name);
}
"#;

#[test]
fn csharp_definitions() {
    insta::assert_snapshot!(check(Language::CSharp, CSHARP));
    assert_eq!(
        outline_of(Language::CSharp, CSHARP),
        [
            "class Cache",
            "method Cache.Cache",
            "method Cache.Get",
            "method Cache.TryGet",
            "class Cache.Entry",
            "method Cache.Entry.Touch",
            "interface ICache",
            "method ICache.Get",
            "struct Point",
            "enum Color",
            "class Person"
        ]
    );
    assert_eq!(
        members_of(Language::CSharp, CSHARP),
        [
            "class Cache",
            "method Cache.Cache",
            "method Cache.Get",
            "method Cache.TryGet",
            "class Cache.Entry",
            "interface ICache",
            "struct Point",
            "enum Color",
            "class Person"
        ]
    );
}

const KOTLIN: &str = r#"package com.example.store

import kotlin.collections.HashMap

/** A key-value cache. */
@Suppress("UNCHECKED_CAST")
class Cache<T>(private val size: Int) : Store<T> {
    private val items = HashMap<String, T>()

    /** Reads a value. */
    override fun get(key: String): T? = items[key]

    fun put(key: String, value: T) {
        items[key] = value
    }

    companion object {
        fun create(): Cache<Int> = Cache(10)
    }
}

interface Store<T> {
    fun get(key: String): T?
}

object Registry {
    fun register(name: String) {
        println(name)
    }
}

enum class Color { RED, GREEN }

data class Point(val x: Int, val y: Int)

typealias Names = List<String>

fun String.shout(): String = uppercase()

fun main() {
    println(Cache<Int>(1).get("a"))
}
"#;

#[test]
fn kotlin_definitions() {
    insta::assert_snapshot!(check(Language::Kotlin, KOTLIN));
    assert_eq!(
        outline_of(Language::Kotlin, KOTLIN),
        [
            "class Cache",
            "method Cache.get",
            "method Cache.put",
            "method Cache.create",
            "interface Store",
            "method Store.get",
            "class Registry",
            "method Registry.register",
            "enum Color",
            "class Point",
            "type Names",
            "method String.shout",
            "function main"
        ]
    );
    assert_eq!(
        members_of(Language::Kotlin, KOTLIN),
        [
            "class Cache",
            "method Cache.get",
            "method Cache.put",
            "method Cache.create",
            "interface Store",
            "class Registry",
            "enum Color",
            "class Point",
            "type Names",
            "method String.shout",
            "function main"
        ]
    );
}

const SWIFT: &str = r#"import Foundation

/// A key-value cache.
public final class Cache<Value> {
    private var items: [String: Value] = [:]

    /// Creates a cache.
    public init(size: Int) {
        self.size = size
    }

    /// Reads a value.
    public func get(_ key: String) -> Value? {
        return items[key]
    }

    deinit {
        items.removeAll()
    }
}

protocol Store {
    func get(_ key: String) -> String?
}

struct Point {
    var x: Int
    func length() -> Double { 0 }
}

enum Color {
    case red, green
    func name() -> String { "c" }
}

extension Cache: Store where Value == String {
    @discardableResult
    func clear() -> Bool { true }
}

typealias Names = [String]

func helper(_ x: Int) -> Int {
    return x * 2
}
"#;

#[test]
fn swift_definitions() {
    insta::assert_snapshot!(check(Language::Swift, SWIFT));
    assert_eq!(
        outline_of(Language::Swift, SWIFT),
        [
            "class Cache",
            "method Cache.init",
            "method Cache.get",
            "method Cache.deinit",
            "interface Store",
            "method Store.get",
            "struct Point",
            "method Point.length",
            "enum Color",
            "method Color.name",
            "impl Cache",
            "method Cache.clear",
            "type Names",
            "function helper"
        ]
    );
    assert_eq!(
        members_of(Language::Swift, SWIFT),
        [
            "class Cache",
            "method Cache.init",
            "method Cache.get",
            "method Cache.deinit",
            "interface Store",
            "struct Point",
            "enum Color",
            "impl Cache",
            "method Cache.clear",
            "type Names",
            "function helper"
        ]
    );
}

const SCALA: &str = r#"package example.store

import scala.collection.mutable

/** A key-value cache. */
class Cache[T](size: Int) extends Store[T] {
  private val items = mutable.Map.empty[String, T]

  /** Reads a value. */
  override def get(key: String): Option[T] = items.get(key)

  def put(key: String, value: T): Unit = {
    items(key) = value
  }
}

trait Store[T] {
  def get(key: String): Option[T]
}

object Cache {
  def apply[T](): Cache[T] = new Cache[T](10)
}

case class Point(x: Int, y: Int)

@deprecated("old", "1.0")
def helper(x: Int): Int = x * 2

type Names = List[String]
"#;

#[test]
fn scala_definitions() {
    insta::assert_snapshot!(check(Language::Scala, SCALA));
    assert_eq!(
        outline_of(Language::Scala, SCALA),
        [
            "class Cache",
            "method Cache.get",
            "method Cache.put",
            "trait Store",
            "method Store.get",
            "class Cache",
            "method Cache.apply",
            "class Point",
            "function helper",
            "type Names"
        ]
    );
    assert_eq!(
        members_of(Language::Scala, SCALA),
        [
            "class Cache",
            "method Cache.get",
            "method Cache.put",
            "trait Store",
            "class Cache",
            "method Cache.apply",
            "class Point",
            "function helper",
            "type Names"
        ]
    );
}

const ELIXIR: &str = r#"defmodule MyApp.Cache do
  @moduledoc """
  A key-value cache.
  """

  use GenServer
  alias MyApp.Store

  @doc "Starts the cache."
  @spec start_link(keyword) :: GenServer.on_start()
  def start_link(opts) do
    GenServer.start_link(__MODULE__, opts, name: __MODULE__)
  end

  def get(key), do: Store.get(key)

  def fetch(key) when is_binary(key) do
    {:ok, key}
  end

  def fetch(_key), do: :error

  defp normalize(key), do: String.downcase(key)

  defmacro cached(do: block) do
    quote do: unquote(block)
  end

  defmodule Entry do
    defstruct [:key, :value]

    def new(key), do: %__MODULE__{key: key}
  end
end

defprotocol MyApp.Sizer do
  def size(data)
end

defimpl MyApp.Sizer, for: Map do
  def size(map), do: map_size(map)
end
"#;

#[test]
fn elixir_definitions() {
    insta::assert_snapshot!(check(Language::Elixir, ELIXIR));
    assert_eq!(
        outline_of(Language::Elixir, ELIXIR),
        [
            "module MyApp.Cache",
            "function MyApp.Cache.start_link",
            "function MyApp.Cache.get",
            "function MyApp.Cache.fetch",
            "function MyApp.Cache.normalize",
            "macro MyApp.Cache.cached",
            "module MyApp.Cache.Entry",
            "function MyApp.Cache.Entry.new",
            "interface MyApp.Sizer",
            "method MyApp.Sizer.size",
            "impl MyApp.Sizer.Map",
            "method MyApp.Sizer.Map.size"
        ]
    );
    assert_eq!(
        members_of(Language::Elixir, ELIXIR),
        [
            "module MyApp.Cache",
            "function MyApp.Cache.start_link",
            "function MyApp.Cache.get",
            "function MyApp.Cache.fetch",
            "function MyApp.Cache.normalize",
            "macro MyApp.Cache.cached",
            "module MyApp.Cache.Entry",
            "function MyApp.Cache.Entry.new",
            "interface MyApp.Sizer",
            "impl MyApp.Sizer.Map"
        ]
    );
}

const LUA: &str = r#"-- A key-value cache.
local M = {}

local Cache = {}
Cache.__index = Cache

--- Creates a cache.
function Cache.new(size)
  return setmetatable({ size = size, items = {} }, Cache)
end

--- Reads a value.
function Cache:get(key)
  return self.items[key]
end

local function helper(x)
  return x * 2
end

M.put = function(cache, key, value)
  cache.items[key] = value
end

function global_fn()
  return 1
end

local compute = function(a, b)
  return a + b
end

function a.b.c:deep() end

return M
"#;

#[test]
fn lua_definitions() {
    insta::assert_snapshot!(check(Language::Lua, LUA));
    assert_eq!(
        outline_of(Language::Lua, LUA),
        [
            "method Cache.new",
            "method Cache.get",
            "function helper",
            "method M.put",
            "function global_fn",
            "function compute",
            "method a.b.c.deep"
        ]
    );
    assert_eq!(
        members_of(Language::Lua, LUA),
        [
            "method Cache.new",
            "method Cache.get",
            "function helper",
            "method M.put",
            "function global_fn",
            "function compute",
            "method a.b.c.deep"
        ]
    );
}

const BASH: &str = r#"#!/usr/bin/env bash
# Deploys the app.
set -euo pipefail

readonly TARGET="${1:-prod}"

# Prints a message.
log() {
  echo "[deploy] $*" >&2
}

function build {
  log "building"
  make -j4
}

function deploy() {
  build
  rsync -a dist/ "$TARGET:/srv/app"
}

deploy "$@"
"#;

#[test]
fn bash_definitions() {
    insta::assert_snapshot!(check(Language::Bash, BASH));
    assert_eq!(outline_of(Language::Bash, BASH), ["function log", "function build", "function deploy"]);
    assert_eq!(members_of(Language::Bash, BASH), ["function log", "function build", "function deploy"]);
}

const ZIG: &str = r#"const std = @import("std");

/// A key-value cache.
pub const Cache = struct {
    items: std.StringHashMap(u32),

    /// Creates a cache.
    pub fn init(allocator: std.mem.Allocator) Cache {
        return .{ .items = std.StringHashMap(u32).init(allocator) };
    }

    pub fn get(self: *Cache, key: []const u8) ?u32 {
        return self.items.get(key);
    }
};

pub const Color = enum { red, green };

const Value = union(enum) { int: i64, none };

/// Adds two numbers.
pub fn add(a: i32, b: i32) i32 {
    return a + b;
}

test "add" {
    try std.testing.expectEqual(@as(i32, 3), add(1, 2));
}
"#;

#[test]
fn zig_definitions() {
    insta::assert_snapshot!(check(Language::Zig, ZIG));
    assert_eq!(
        outline_of(Language::Zig, ZIG),
        ["struct Cache", "method Cache.init", "method Cache.get", "enum Color", "struct Value", "function add"]
    );
    assert_eq!(
        members_of(Language::Zig, ZIG),
        ["struct Cache", "method Cache.init", "method Cache.get", "enum Color", "struct Value", "function add"]
    );
}

const HASKELL: &str = r#"{-# LANGUAGE OverloadedStrings #-}
-- | A key-value cache.
module Data.Cache
  ( Cache
  , lookup
  ) where

import qualified Data.Map as Map

-- | The cache.
data Cache k v = Cache
  { entries :: Map.Map k v
  , size :: Int
  }

newtype Key = Key String

type Entries = [(String, Int)]

-- | Sizes of things.
class Sized a where
  sizeOf :: a -> Int

instance Sized (Cache k v) where
  sizeOf = size

-- | Looks a key up.
lookup :: Ord k => k -> Cache k v -> Maybe v
lookup k c = Map.lookup k (entries c)

factorial :: Int -> Int
factorial 0 = 1
factorial n = n * factorial (n - 1)
"#;

#[test]
fn haskell_definitions() {
    insta::assert_snapshot!(check(Language::Haskell, HASKELL));
    assert_eq!(
        outline_of(Language::Haskell, HASKELL),
        [
            "type Cache",
            "type Key",
            "type Entries",
            "trait Sized",
            "method Sized.sizeOf",
            "impl Cache",
            "method Cache.sizeOf",
            "function lookup",
            "function factorial"
        ]
    );
    assert_eq!(
        members_of(Language::Haskell, HASKELL),
        [
            "type Cache",
            "type Key",
            "type Entries",
            "trait Sized",
            "impl Cache",
            "function lookup",
            "function factorial"
        ]
    );
}
/// Elixir's clauses (`def f(0)`, `def f(n)`) and Haskell's signature and equations are one
/// function: one chunk, from the doc attribute or comment above the first.
#[test]
fn clauses_of_one_function_are_one_chunk() {
    let mut elixir = String::from(
        "defmodule M do\n  @doc \"Fetches.\"\n  @spec fetch(term) :: term\n  def fetch(key) when is_binary(key) do\n    {:ok, key}\n  end\n\n  def fetch(_key), do: :error\n\n  def other do\n",
    );
    // A body long enough for the module to be opened.
    for i in 0..30 {
        let _ = writeln!(elixir, "    IO.puts(\"line {i}\")");
    }
    elixir.push_str("  end\nend\n");
    let elixir = elixir.as_str();
    let config = ChunkConfig::default();
    let chunks = chunk_file("m.ex", elixir, Language::Elixir, &config);
    check_invariants(elixir, &chunks);
    let fetch: Vec<&Chunk> = chunks.iter().filter(|c| c.symbol.as_deref() == Some("fetch")).collect();
    assert_eq!(fetch.len(), 1, "{chunks:#?}");
    // The module's tiny header (`defmodule M do`) joins its first member.
    assert_eq!((fetch[0].start_line, fetch[0].end_line), (1, 8));
    assert!(fetch[0].text(elixir).contains("@doc \"Fetches.\""));
    assert_eq!(fetch[0].symbol_path().as_deref(), Some("M.fetch"));
    assert!(chunks.iter().any(|c| c.symbol.as_deref() == Some("other")), "{chunks:#?}");

    let haskell = "-- | Factorial.\nfactorial :: Int -> Int\nfactorial 0 = 1\nfactorial n = n * factorial (n - 1)\n\nmain :: IO ()\nmain = print (factorial 5)\n";
    let chunks = chunk_file("m.hs", haskell, Language::Haskell, &ChunkConfig::default());
    check_invariants(haskell, &chunks);
    let spans: Vec<(Option<&str>, u32, u32)> =
        chunks.iter().map(|c| (c.symbol.as_deref(), c.start_line, c.end_line)).collect();
    assert_eq!(spans, [(Some("factorial"), 1, 4), (Some("main"), 6, 7)]);
    let names: Vec<String> = outline(haskell, Language::Haskell, &config).into_iter().map(|d| d.symbol).collect();
    assert_eq!(names, ["factorial", "main"]);
}

/// A nested container's doc comment leads it: Ruby keeps the comment between `module Rack` and
/// `class Builder` beside the module's body, where it read as the module's header.
#[test]
fn a_nested_classs_doc_comment_is_its_own() {
    let mut ruby = String::from(
        "module Rack\n  # Builder provides a DSL to construct applications.\n  # It parses config files.\n  class Builder\n",
    );
    for i in 0..12 {
        let _ = writeln!(ruby, "    def step{i}(app)\n      app.call(env, {i})\n      app.finish({i})\n    end\n");
    }
    ruby.push_str("  end\nend\n");
    let chunks = chunk_file("builder.rb", &ruby, Language::Ruby, &ChunkConfig::default());
    check_invariants(&ruby, &chunks);
    let doc = chunks.iter().find(|c| c.text(&ruby).contains("# Builder provides")).expect("the doc comment is chunked");
    assert_eq!(doc.symbol_path().as_deref(), Some("Rack::Builder"), "{chunks:#?}");
    assert!(doc.text(&ruby).contains("class Builder"), "{chunks:#?}");
}

/// An OCaml interface (`.mli`) is chunked by syntax: its `val`s, types, exceptions, module types
/// and declared modules are definitions, each with the `(** … *)` odoc puts right below it.
#[test]
fn ocaml_interfaces_have_their_own_grammar() {
    let mli = "(** Shell-style regular expressions *)\n\nexception Parse_error\n\nval glob :\n  ?anchored:bool ->\n  string ->\n  Core.t\n(** Implements the semantics of shells patterns. *)\n\ntype t = private string\n(** A compiled pattern. *)\n\nmodule type S = sig\n  val compile : t -> Core.re\nend\n";
    let chunks = chunk_file("lib/glob.mli", mli, Language::OCaml, &ChunkConfig::default());
    check_invariants(mli, &chunks);
    let glob = chunks.iter().find(|c| c.symbol.as_deref() == Some("glob")).expect("`val glob` is a definition");
    assert!(glob.text(mli).contains("Implements the semantics"), "{chunks:#?}");
    let t = chunks.iter().find(|c| c.symbol.as_deref() == Some("t")).expect("`type t` is a definition");
    assert!(t.text(mli).contains("A compiled pattern"), "{chunks:#?}");
    let names: Vec<String> =
        outline(mli, Language::OCaml, &ChunkConfig::default()).into_iter().map(|d| d.symbol).collect();
    for name in ["Parse_error", "glob", "t", "S"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    // A module declared by its signature alone (`module M : S`) exists only in an interface.
    let declared = "module Compiled : S\n(** The compiled form. *)\n\nval compile : t -> Compiled.t\n";
    let chunks = chunk_file("lib/glob.mli", declared, Language::OCaml, &ChunkConfig::default());
    check_invariants(declared, &chunks);
    let names: Vec<Option<&str>> = chunks.iter().map(|c| c.symbol.as_deref()).collect();
    assert_eq!(names, [Some("Compiled"), Some("compile")], "{chunks:#?}");
}

/// Real files of each language added with issue 53 (tests/fixtures/languages, sources in its
/// SOURCES.md): every invariant holds, most chunks are named definitions, the budget is kept.
#[test]
fn real_files_of_every_new_language_keep_the_invariants() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/languages");
    let config = ChunkConfig::default();
    let mut languages: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&root)
        .expect("tests/fixtures/languages")
        .flatten()
        .filter(|dir| dir.path().is_dir())
        .flat_map(|dir| std::fs::read_dir(dir.path()).into_iter().flatten().flatten().map(|f| f.path()))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a fixture");
        let language = Language::detect(&path, &text);
        assert!(language.grammar().is_some(), "{}: {language}", path.display());
        let chunks = chunk_file(&path.to_string_lossy(), &text, language, &config);
        check_invariants(&text, &chunks);
        for chunk in &chunks {
            // A container's header (its doc comment and signature) is kept whole, in every
            // language: the one chunk allowed over the budget.
            let header = chunk.kind.is_container();
            let tokens = estimate_tokens(chunk.text(&text));
            assert!(tokens <= config.max_tokens || header, "{}: {tokens} tokens in {chunk:?}", path.display());
        }
        assert_eq!(chunk_file(&path.to_string_lossy(), &text, language, &config), chunks, "deterministic");
        let named = chunks.iter().filter(|c| c.symbol.is_some()).count();
        assert!(named > 0 && !outline(&text, language, &config).is_empty(), "{}", path.display());
        let counts: &mut (usize, usize) = languages.entry(language.name()).or_default();
        counts.0 += named;
        counts.1 += chunks.len();
    }
    // Most chunks are definitions (a script's top-level commands are not).
    for (language, (named, all)) in &languages {
        assert!(named * 2 >= *all, "{language}: {named} of {all} chunks named");
    }
    let expected = [
        "bash", "csharp", "dart", "elixir", "haskell", "julia", "kotlin", "lua", "objc", "ocaml", "php", "r", "ruby",
        "scala", "swift", "zig",
    ];
    assert_eq!(languages.into_keys().collect::<Vec<_>>(), expected);
}

/// Every grammar under the chunker's guards: a nesting far deeper than the cap, and for the
/// new languages a big file of their definitions, are chunked with every line covered, in
/// bounded time.
#[test]
fn every_grammar_survives_deep_nesting_and_big_files() {
    let depth = syntax::MAX_SYNTAX_DEPTH * 3;
    let deep: String = format!("x = {}1{}\n", "(".repeat(depth), ")".repeat(depth))
        .as_bytes()
        .chunks(80)
        .map(|line| format!("{}\n", String::from_utf8_lossy(line)))
        .collect();
    let samples = [
        (Language::Ruby, RUBY),
        (Language::Php, PHP),
        (Language::CSharp, CSHARP),
        (Language::Kotlin, KOTLIN),
        (Language::Swift, SWIFT),
        (Language::Scala, SCALA),
        (Language::Elixir, ELIXIR),
        (Language::Lua, LUA),
        (Language::Bash, BASH),
        (Language::Zig, ZIG),
        (Language::Haskell, HASKELL),
        (Language::Dart, DART),
        (Language::ObjectiveC, OBJC),
        (Language::OCaml, OCAML),
        (Language::R, R_SOURCE),
        (Language::Julia, JULIA),
    ];
    let mut cases: Vec<(Language, String)> =
        Language::ALL.into_iter().filter(|l| l.grammar().is_some()).map(|l| (l, deep.clone())).collect();
    cases.extend(samples.into_iter().map(|(language, sample)| (language, sample.repeat(100))));
    for (language, text) in cases {
        let started = std::time::Instant::now();
        let chunks = chunk_file("x", &text, language, &ChunkConfig::default());
        assert!(started.elapsed() < syntax::PARSE_TIME_LIMIT * 2, "{language}: {:?}", started.elapsed());
        check_invariants(&text, &chunks);
    }
}

#[test]
fn a_definition_line_is_the_line_that_names_it() {
    let python = ["import json", "", "@cached", "def load_settings(path):", "    return json.load(path)"];
    assert_eq!(definition_line(&python, 1, 5, Some("load_settings")), 4);
    // The name in a comment or docstring above does not count; a qualified name by its last part.
    let rust = ["/// Builds a `Router`.", "#[derive(Debug)]", "pub struct Router {", "}"];
    assert_eq!(definition_line(&rust, 1, 4, Some("http::Router")), 3);
    // Without a symbol (or when no line names it): the first non-blank line.
    assert_eq!(definition_line(&["", "  x = 1"], 1, 2, None), 2);
    assert_eq!(definition_line(&["a = 1", "b = 2"], 1, 2, Some("nowhere")), 1);
    // A word inside another does not count.
    assert_eq!(definition_line(&["def serve_all():", "def serve():"], 1, 2, Some("serve")), 2);
}

/// The key paths an outline of a configuration file lists.
fn keys_of(language: Language, text: &str) -> Vec<String> {
    outline(text, language, &ChunkConfig::default()).into_iter().map(|d| d.symbol).collect()
}

/// A budget small enough that the config samples' sections are entered.
fn small_budget() -> ChunkConfig {
    ChunkConfig { max_tokens: 60, ..ChunkConfig::default() }
}

const YAML: &str = r#"# CI for the project
name: CI
on:
  push:
    branches: [main]

env:
  RETRY_TIMEOUT: 30 # seconds

jobs:
  # The release build and the tests.
  build:
    runs-on: ubuntu-latest
    steps:
    - uses: actions/checkout@v4
    - name: Build
      run: |
        cargo build --release
        cargo test --workspace --all-features -- --nocapture
        echo "steps: not a key inside a block"
    - name: Upload
      uses: actions/upload-artifact@v4
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: cargo clippy --all-targets -- -D warnings
---
kind: ConfigMap
metadata:
  name: settings
"#;

/// YAML along its keys: `jobs` is too big for the budget, so its jobs are chunks of their own
/// (the `jobs:` line leading the first), named items (`- name: Build`) too; list items at their
/// key's own indentation belong to that key; a block of text is not read for keys; each
/// document of a stream on its own.
#[test]
fn yaml_keys() {
    insta::assert_snapshot!(render(YAML, Language::Yaml, &small_budget()));
    let names = keys_of(Language::Yaml, YAML);
    for key in ["on.push.branches", "env.RETRY_TIMEOUT", "jobs.build.steps.Build", "jobs.lint.runs-on", "metadata.name"]
    {
        assert!(names.contains(&key.to_string()), "{key} in {names:?}");
    }
    assert!(!names.iter().any(|n| n.ends_with("not a key inside a block")), "{names:?}");
    // Within the default budget the whole `jobs` mapping is one chunk.
    let chunks = chunk_file("ci.yml", YAML, Language::Yaml, &ChunkConfig::default());
    check_invariants(YAML, &chunks);
    assert!(chunks.iter().any(|c| c.symbol.as_deref() == Some("jobs") && c.kind == ChunkKind::Section));
}

const TOML: &str = r#"# A package manifest.
name = "demo"
version = "0.1.0"

[package]
edition = "2024"
description = """
[not.a.table]
a multi-line string"""

# What it needs.
[dependencies]
serde = { version = "1", features = ["derive"] }
tokio = { version = "1", features = [
  "rt",
  "macros",
] }

[dependencies.regex]
version = "1"

[dependencies.memchr]
version = "2"

[[bin]]
name = "demo"
path = "src/main.rs"

[profile.release]
lto = true
codegen-units = 1
"#;

/// TOML by its tables (with the comments above them), dotted table names as containers,
/// small neighbouring tables grouped under what they share (`dependencies`); a `[x]` line inside
/// a multi-line string is not a table, nor an array's lines keys.
#[test]
fn toml_tables() {
    insta::assert_snapshot!(check(Language::Toml, TOML));
    let names = keys_of(Language::Toml, TOML);
    let expected = [
        "name",
        "version",
        "package",
        "package.edition",
        "package.description",
        "dependencies",
        "dependencies.serde",
        "dependencies.tokio",
        "dependencies.regex",
        "dependencies.regex.version",
        "dependencies.memchr",
        "dependencies.memchr.version",
        "bin",
        "bin.name",
        "bin.path",
        "profile.release",
        "profile.release.lto",
        "profile.release.codegen-units",
    ];
    assert_eq!(names, expected);
}

const JSON: &str = r#"{
  "name": "demo",
  "scripts": {
    "build": "tsc -p .",
    "test": "node --test"
  },
  // JSON with comments, as tsconfig.json and VS Code's settings are written.
  "compilerOptions": {
    "strict": true,
    "paths": { "@/*": ["src/*"] },
    "lib": ["es2022", "dom"]
  },
  "contributes": {
    "commands": [
      { "command": "demo.search", "title": "Search \"here\"" },
      { "id": "demo.index", "title": "Index" },
      42
    ]
  }
}
"#;

/// JSON by its members, nested objects entered when too big, list items named by their `id`
/// or `name`; a string's escaped quote and a comment do not confuse the scanner.
#[test]
fn json_members() {
    insta::assert_snapshot!(render(JSON, Language::Json, &small_budget()));
    let names = keys_of(Language::Json, JSON);
    for key in
        ["scripts.build", "compilerOptions.paths", "compilerOptions.paths.@/*", "contributes.commands.demo.index"]
    {
        assert!(names.contains(&key.to_string()), "{key} in {names:?}");
    }
    // Text that does not balance is cut into windows as plain text is.
    let broken = "{\n  \"a\": [1, 2,\n  \"b\": {\n";
    let chunks = chunk_file("x.json", broken, Language::Json, &ChunkConfig::default());
    check_invariants(broken, &chunks);
    assert!(chunks.iter().all(|c| c.kind == ChunkKind::Text));
}

/// Real configuration files (tests/fixtures/config, sources in its SOURCES.md): every invariant
/// holds, the budget is kept, most chunks are named by their keys, and an outline lists keys.
#[test]
fn real_config_files_keep_the_invariants() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/config");
    let config = ChunkConfig::default();
    let mut seen = std::collections::BTreeSet::new();
    for dir in ["yaml", "toml", "json"] {
        let mut files: Vec<_> =
            std::fs::read_dir(root.join(dir)).expect("a fixture dir").flatten().map(|f| f.path()).collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path).expect("a fixture");
            let language = Language::detect(&path, &text);
            assert!(language.is_config(), "{}: {language}", path.display());
            let chunks = chunk_file(&path.to_string_lossy(), &text, language, &config);
            check_invariants(&text, &chunks);
            for chunk in &chunks {
                let tokens = estimate_tokens(chunk.text(&text));
                assert!(tokens <= config.max_tokens, "{}: {tokens} tokens in {chunk:?}", path.display());
            }
            let named = chunks.iter().filter(|c| c.symbol.is_some()).count();
            assert!(named * 2 >= chunks.len(), "{}: {named} of {} chunks named", path.display(), chunks.len());
            assert!(outline(&text, language, &config).len() >= named, "{}", path.display());
            seen.insert(language.name());
        }
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["json", "toml", "yaml"]);
}

/// Deep nesting and a big file of each format stay within the guards: covered, in bounded time.
#[test]
fn config_formats_survive_deep_nesting_and_big_files() {
    let deep_json = format!("{}{}", "{\"a\": [".repeat(500), "]}".repeat(500));
    let deep_yaml: String = (0..500).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
    let cases = [
        (Language::Json, deep_json),
        (Language::Yaml, deep_yaml),
        (Language::Yaml, YAML.repeat(200)),
        (Language::Toml, TOML.repeat(200)),
        (Language::Json, format!("[{}]", JSON.repeat(200).replace("}\n{", "},\n{"))),
    ];
    for (language, text) in cases {
        let started = std::time::Instant::now();
        let chunks = chunk_file("x", &text, language, &ChunkConfig::default());
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{language}: {:?}", started.elapsed());
        check_invariants(&text, &chunks);
    }
}

const DART: &str = r#"import 'dart:async';

/// A cache of values.
class Cache<K, V> extends Base implements Store {
  final Map<K, V> _map = {};

  /// Creates a cache.
  Cache(this.capacity);

  /// Gets a value.
  V? get(K key) {
    return _map[key];
  }

  int get size => _map.length;

  set limit(int value) {}

  static Cache<K, V> empty<K, V>() => Cache(0);
}

mixin Logging on Base {
  void log(String m) => print(m);
}

extension StringX on String {
  String shout() => toUpperCase();
}

enum Mode { dense, lexical }

typedef Handler = void Function(int);

/// Top-level function.
Future<int> compute(int x) async {
  return x * 2;
}

abstract class Store {
  void put(String k);
}
"#;

const OBJC: &str = r#"#import <Foundation/Foundation.h>

/// A cache.
@interface Cache : NSObject
@property (nonatomic) NSInteger capacity;
- (id)objectForKey:(NSString *)key;
+ (instancetype)sharedCache;
@end

@implementation Cache

/// Returns the object.
- (id)objectForKey:(NSString *)key {
    return nil;
}

+ (instancetype)sharedCache {
    return nil;
}

@end

@protocol Store <NSObject>
- (void)put:(id)value forKey:(NSString *)key;
@end

// C function.
static int helper(int x) {
    return x + 1;
}

typedef struct Point { int x; int y; } Point;
"#;

const OCAML: &str = r#"(** A cache module. *)
module Cache = struct
  type t = { size : int }

  (** Creates a cache. *)
  let create n = { size = n }

  let get c k = c.size + k
end

module type STORE = sig
  val put : string -> unit
end

(* Top-level function. *)
let rec fact n = if n = 0 then 1 else n * fact (n - 1)

type mode = Dense | Lexical

exception Not_found_here of string

class counter = object
  val mutable n = 0
  method incr = n <- n + 1
end

let () = print_endline "hi"
"#;

const R_SOURCE: &str = r#"# Computes the mean.
#' Roxygen docs
#' @param x values
mean_of <- function(x) {
  sum(x) / length(x)
}

helper = function(a, b) a + b

setClass("Person", representation(name = "character"))

Cache <- R6Class("Cache",
  public = list(
    get = function(key) { private$store[[key]] }
  )
)

x <- 1
print(x)
"#;

const JULIA: &str = r#""""
    mean_of(x)

Computes the mean.
"""
function mean_of(x)
    return sum(x) / length(x)
end

module Caches

# A cache.
struct Cache{K,V}
    data::Dict{K,V}
end

mutable struct Counter
    n::Int
end

abstract type Store end

get(c::Cache, k) = c.data[k]

function put!(c::Cache, k, v)
    c.data[k] = v
end

macro trace(ex)
    :(println($(string(ex))); $ex)
end

end # module

const LIMIT = 10
"#;

/// The five languages issue 53 adds where a maintained grammar exists: definitions with their
/// doc comments (Dart's `///`, OCaml's `(** *)`, roxygen's `#'`, Julia's docstrings), containers
/// entered when too big, names as each language writes them (`put:forKey:`, `put!`).
#[test]
fn dart_objc_ocaml_r_julia_definitions() {
    for (language, text) in [
        (Language::Dart, DART),
        (Language::ObjectiveC, OBJC),
        (Language::OCaml, OCAML),
        (Language::R, R_SOURCE),
        (Language::Julia, JULIA),
    ] {
        let rendered = check(language, text);
        let outline = outline_of(language, text).join("\n");
        let members = members_of(language, text).join("\n");
        insta::assert_snapshot!(
            format!("{}_definitions", language.name()),
            format!("{rendered}\n# outline\n{outline}\n\n# members (small budget)\n{members}\n")
        );
    }
}
