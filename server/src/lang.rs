//! Languages raggrep knows, detected from file names (and, for scripts without an extension,
//! from the `#!` line).

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A language as far as chunking is concerned.
///
/// Languages with a tree-sitter grammar are chunked by syntax; `Markdown` by headings; YAML,
/// TOML and JSON by their keys; everything else is `Text` and chunked in overlapping line
/// windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    C,
    Cpp,
    Markdown,
    Text,
    Ruby,
    Php,
    CSharp,
    Kotlin,
    Swift,
    Scala,
    Elixir,
    Lua,
    Bash,
    Zig,
    Haskell,
    Yaml,
    Toml,
    Json,
    Dart,
    #[serde(rename = "objc")]
    ObjectiveC,
    OCaml,
    R,
    Julia,
}

impl Language {
    /// Every language, for help texts and filters. The index stores a language as its position
    /// here, so new languages go at the end: the codes of the others must not move.
    pub const ALL: [Language; 30] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
        Language::Markdown,
        Language::Text,
        Language::Ruby,
        Language::Php,
        Language::CSharp,
        Language::Kotlin,
        Language::Swift,
        Language::Scala,
        Language::Elixir,
        Language::Lua,
        Language::Bash,
        Language::Zig,
        Language::Haskell,
        Language::Yaml,
        Language::Toml,
        Language::Json,
        Language::Dart,
        Language::ObjectiveC,
        Language::OCaml,
        Language::R,
        Language::Julia,
    ];

    pub fn to_u8(self) -> u8 {
        Self::ALL.iter().position(|l| *l == self).unwrap_or(0) as u8
    }

    pub fn from_u8(value: u8) -> Language {
        Self::ALL.get(value as usize).copied().unwrap_or(Language::Text)
    }

    /// Detects the language from a path's extension (or well-known file name).
    pub fn from_path(path: &Path) -> Language {
        if let Some(language) = path.file_name().and_then(|n| n.to_str()).and_then(Self::from_file_name) {
            return language;
        }
        let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("rs") => Language::Rust,
            Some("py" | "pyi" | "pyw") => Language::Python,
            Some("js" | "mjs" | "cjs" | "jsx") => Language::JavaScript,
            Some("ts" | "mts" | "cts") => Language::TypeScript,
            Some("tsx") => Language::Tsx,
            Some("go") => Language::Go,
            Some("java") => Language::Java,
            Some("c" | "h") => Language::C,
            Some("cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "inl") => Language::Cpp,
            Some("md" | "markdown" | "mdx") => Language::Markdown,
            Some("rb" | "rake" | "gemspec" | "ru") => Language::Ruby,
            Some("php" | "phtml") => Language::Php,
            Some("cs") => Language::CSharp,
            Some("kt" | "kts") => Language::Kotlin,
            Some("swift") => Language::Swift,
            Some("scala" | "sc") => Language::Scala,
            Some("ex" | "exs") => Language::Elixir,
            Some("lua") => Language::Lua,
            // zsh and ksh scripts are close enough to bash for its grammar to find their functions.
            Some("sh" | "bash" | "zsh" | "ksh") => Language::Bash,
            Some("zig") => Language::Zig,
            Some("hs") => Language::Haskell,
            Some("yaml" | "yml") => Language::Yaml,
            Some("toml") => Language::Toml,
            Some("json" | "jsonc") => Language::Json,
            Some("dart") => Language::Dart,
            // `.h` stays C: most headers are, and Objective-C's read well enough as C.
            Some("m") => Language::ObjectiveC,
            // An interface (`.mli`) too: the implementation grammar reads its `val`s, types and
            // module signatures as the interface grammar does (the same chunks on all 13 `.mli`
            // files of ocaml-re).
            Some("ml" | "mli") => Language::OCaml,
            Some("r") => Language::R,
            Some("jl") => Language::Julia,
            _ => Language::Text,
        }
    }

    /// Files known by their whole name: Ruby's DSL files and shell start-up files.
    fn from_file_name(name: &str) -> Option<Language> {
        let language = match name {
            "Rakefile" | "Gemfile" | "Guardfile" | "Capfile" | "Vagrantfile" | "Podfile" | "Brewfile" | "Fastfile" => {
                Language::Ruby
            }
            ".bashrc" | ".bash_profile" | ".bash_login" | ".bash_logout" | ".profile" | ".zshrc" | ".zshenv"
            | ".zprofile" | ".zlogin" | "PKGBUILD" | "APKBUILD" => Language::Bash,
            ".clang-format" | ".clang-tidy" => Language::Yaml,
            "Pipfile" => Language::Toml,
            ".babelrc" | ".eslintrc" | ".prettierrc" => Language::Json,
            _ => return None,
        };
        Some(language)
    }

    /// The language of a file from its path, or for a file the path says nothing about
    /// (`bin/deploy`), from its `#!` line: scripts are often installed without an extension.
    pub fn detect(path: &Path, text: &str) -> Language {
        match Self::from_path(path) {
            Language::Text => Self::from_shebang(text).unwrap_or(Language::Text),
            language => language,
        }
    }

    /// The interpreter a `#!` first line names (`#!/bin/bash`, `#!/usr/bin/env ruby`,
    /// `#!/usr/bin/env -S python3 -u`), version suffixes ignored (`python3.12`, `lua5.4`).
    pub fn from_shebang(text: &str) -> Option<Language> {
        let line = text.lines().next()?.strip_prefix("#!")?;
        let mut words = line.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            // `env -S …` and other options before the program; `VAR=value` assignments too.
            program = words.find(|w| !w.starts_with('-') && !w.contains('='))?.rsplit('/').next()?;
        }
        let name = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        let language = match name {
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" => Language::Bash,
            "ruby" | "jruby" => Language::Ruby,
            "php" => Language::Php,
            "elixir" => Language::Elixir,
            "lua" | "luajit" => Language::Lua,
            "python" | "pypy" => Language::Python,
            "node" | "nodejs" | "deno" | "bun" => Language::JavaScript,
            "swift" => Language::Swift,
            "runghc" | "runhaskell" => Language::Haskell,
            "dart" => Language::Dart,
            "ocaml" => Language::OCaml,
            "Rscript" => Language::R,
            "julia" => Language::Julia,
            _ => return None,
        };
        Some(language)
    }

    /// Parses a user-supplied name (`rust`, `ts`, `c++` …), for `--lang` filters.
    pub fn from_name(name: &str) -> Option<Language> {
        let lang = match name.to_ascii_lowercase().as_str() {
            "rust" | "rs" => Language::Rust,
            "python" | "py" => Language::Python,
            "javascript" | "js" | "jsx" => Language::JavaScript,
            "typescript" | "ts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" | "golang" => Language::Go,
            "java" => Language::Java,
            "c" => Language::C,
            "cpp" | "c++" | "cxx" => Language::Cpp,
            "markdown" | "md" => Language::Markdown,
            "text" | "txt" => Language::Text,
            "ruby" | "rb" => Language::Ruby,
            "php" => Language::Php,
            "csharp" | "c#" | "cs" => Language::CSharp,
            "kotlin" | "kt" => Language::Kotlin,
            "swift" => Language::Swift,
            "scala" => Language::Scala,
            "elixir" | "ex" => Language::Elixir,
            "lua" => Language::Lua,
            "bash" | "sh" | "shell" | "zsh" => Language::Bash,
            "zig" => Language::Zig,
            "haskell" | "hs" => Language::Haskell,
            "yaml" | "yml" => Language::Yaml,
            "toml" => Language::Toml,
            "json" => Language::Json,
            "dart" => Language::Dart,
            "objc" | "objective-c" | "objectivec" => Language::ObjectiveC,
            "ocaml" | "ml" => Language::OCaml,
            "r" => Language::R,
            "julia" | "jl" => Language::Julia,
            _ => return None,
        };
        Some(lang)
    }

    /// The lowercase name used in output and filters.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Go => "go",
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::Markdown => "markdown",
            Language::Text => "text",
            Language::Ruby => "ruby",
            Language::Php => "php",
            Language::CSharp => "csharp",
            Language::Kotlin => "kotlin",
            Language::Swift => "swift",
            Language::Scala => "scala",
            Language::Elixir => "elixir",
            Language::Lua => "lua",
            Language::Bash => "bash",
            Language::Zig => "zig",
            Language::Haskell => "haskell",
            Language::Yaml => "yaml",
            Language::Toml => "toml",
            Language::Json => "json",
            Language::Dart => "dart",
            Language::ObjectiveC => "objc",
            Language::OCaml => "ocaml",
            Language::R => "r",
            Language::Julia => "julia",
        }
    }

    /// YAML, TOML and JSON: chunked by their keys, without a grammar.
    pub fn is_config(self) -> bool {
        matches!(self, Language::Yaml | Language::Toml | Language::Json)
    }

    /// The tree-sitter grammar, for languages chunked by syntax.
    pub fn grammar(self) -> Option<tree_sitter::Language> {
        let lang_fn = match self {
            Language::Rust => tree_sitter_rust::LANGUAGE,
            Language::Python => tree_sitter_python::LANGUAGE,
            Language::JavaScript => tree_sitter_javascript::LANGUAGE,
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX,
            Language::Go => tree_sitter_go::LANGUAGE,
            Language::Java => tree_sitter_java::LANGUAGE,
            Language::C => tree_sitter_c::LANGUAGE,
            Language::Cpp => tree_sitter_cpp::LANGUAGE,
            Language::Ruby => tree_sitter_ruby::LANGUAGE,
            // The grammar for files that mix HTML and `<?php … ?>` (LANGUAGE_PHP_ONLY expects
            // pure PHP without the opening tag).
            Language::Php => tree_sitter_php::LANGUAGE_PHP,
            Language::CSharp => tree_sitter_c_sharp::LANGUAGE,
            Language::Kotlin => tree_sitter_kotlin_ng::LANGUAGE,
            Language::Swift => tree_sitter_swift::LANGUAGE,
            Language::Scala => tree_sitter_scala::LANGUAGE,
            Language::Elixir => tree_sitter_elixir::LANGUAGE,
            Language::Lua => tree_sitter_lua::LANGUAGE,
            Language::Bash => tree_sitter_bash::LANGUAGE,
            Language::Zig => tree_sitter_zig::LANGUAGE,
            Language::Haskell => tree_sitter_haskell::LANGUAGE,
            Language::Dart => tree_sitter_dart::LANGUAGE,
            Language::ObjectiveC => tree_sitter_objc::LANGUAGE,
            Language::OCaml => tree_sitter_ocaml::LANGUAGE_OCAML,
            Language::R => tree_sitter_r::LANGUAGE,
            Language::Julia => tree_sitter_julia::LANGUAGE,
            Language::Markdown | Language::Text | Language::Yaml | Language::Toml | Language::Json => return None,
        };
        Some(lang_fn.into())
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Path components and file-name parts that mark code which exercises other code.
pub const TEST_MARKERS: &[&str] = &[
    "test",
    "tests",
    "testing",
    "spec",
    "specs",
    "example",
    "examples",
    "bench",
    "benches",
    "benchmark",
    "benchmarks",
    "mock",
    "mocks",
    "fixture",
    "fixtures",
    "testdata",
    "conftest",
];

/// Tests, examples, benchmarks, mocks, fixtures: by a path component or a file-name part
/// (`test_x.py`, `x_test.go`, `x.spec.ts`, `tests/…`), and in the languages whose test files are
/// named in CamelCase by a `Test`/`Tests`/`Spec`/`Specs` suffix (`ParserTest.kt`,
/// `ParserTests.cs`, `ParserSpec.scala`).
pub fn is_test_like(path: &str) -> bool {
    path.split('/').any(is_test_name) || is_camel_case_test_file(path)
}

/// `ParserTest.kt`, `ParserTests.swift`, `ParserSpec.hs`: the suffix after a lower-case letter or
/// digit (`Contest.kt`, `Latest.cs` are not tests). Only for the languages added with issue 53:
/// Java's `ParserTest.java` would qualify as well, but the learned ranking's test feature was
/// fitted on the nine languages as they were read before (their tests live under `test/` dirs
/// anyway); extend it to Java when the fusion is next refitted.
fn is_camel_case_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let camel_case_tests = matches!(
        Language::from_path(Path::new(name)),
        Language::CSharp
            | Language::Kotlin
            | Language::Swift
            | Language::Scala
            | Language::Php
            | Language::Haskell
            | Language::ObjectiveC
    );
    let stem = name.split('.').next().unwrap_or(name);
    camel_case_tests
        && ["Test", "Tests", "Spec", "Specs"].iter().any(|suffix| {
            stem.strip_suffix(suffix)
                .and_then(|head| head.chars().last())
                .is_some_and(|c| c.is_lowercase() || c.is_ascii_digit())
        })
}

/// A container path with a test-like component (`parser::tests`, `test_utils.Helpers`): Rust
/// keeps unit tests in a `mod tests` inside the file they test, where the path cannot tell them
/// from the code.
pub fn is_test_container(container: &str) -> bool {
    container.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')).any(is_test_name)
}

/// A chunk of test code inside a file that is not test-like: it sits in a test module or class
/// (a Rust `mod tests`), or it is such a module whole (a small `mod tests` is one chunk). Only a
/// module's own name counts: a function named like `create_test_db` is as often the code as
/// its test.
pub fn is_test_chunk(container: &str, symbol: &str, is_module: bool) -> bool {
    is_test_container(container) || (is_module && is_test_container(symbol))
}

/// Implementation code: a file with a grammar that is neither test-like nor a declaration file.
/// The index embeds it first ([`crate::index`]'s embedding order), and its vectors are the ones
/// an answer to a question about the code needs.
pub fn is_implementation(path: &str, language: Language) -> bool {
    language.grammar().is_some() && !is_test_like(path) && !is_declaration_file(path)
}

/// What a chunk is to the index's embedding order and to the rule that the default search
/// ranks by the model's vectors once the code has them ([`chunk_role`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkRole {
    /// Implementation code: embedded first, and the default search waits for its vectors.
    Code,
    /// A window of comments alone in implementation code (a long doc comment split off its
    /// function): embedded right after the code; nothing waits for it.
    CodeComment,
    /// Everything else: tests (unit tests kept in a source file too), declaration files, prose.
    Other,
}

/// [`ChunkRole`] of a chunk: code is in an implementation file ([`is_implementation`]), not a
/// unit test kept inside it ([`is_test_chunk`]) and not comments alone (`code_lines`, as
/// [`crate::chunk::code_lines`] counts them). In Rust sources such tests are often as many
/// lines as the code (two fifths of one search engine's `src/`); a long doc comment is split off
/// its function as windows of its own (a fifth of one Java library's chunks, a quarter of its
/// tokens). The index embeds both after the code, and the default search does not wait for
/// their vectors; the words find them from the start.
pub fn chunk_role(
    path: &str,
    language: Language,
    container: &str,
    symbol: &str,
    is_module: bool,
    code_lines: u32,
) -> ChunkRole {
    if is_implementation(path, language) {
        implementation_chunk_role(container, symbol, is_module, code_lines)
    } else {
        ChunkRole::Other
    }
}

/// [`chunk_role`] of a chunk of a file already known to be [`is_implementation`].
pub fn implementation_chunk_role(container: &str, symbol: &str, is_module: bool, code_lines: u32) -> ChunkRole {
    if is_test_chunk(container, symbol, is_module) {
        ChunkRole::Other
    } else if code_lines == 0 {
        ChunkRole::CodeComment
    } else {
        ChunkRole::Code
    }
}

/// A declaration file: TypeScript's `.d.ts` (`.d.mts`, `.d.cts`), a Python stub (`.pyi`) or an
/// OCaml interface (`.mli`). It restates an implementation's signatures and doc comments for
/// type checkers and readers, so beside that implementation it matches a question as well as the
/// code does without being the code.
pub fn is_declaration_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    [".d.ts", ".d.mts", ".d.cts", ".pyi", ".mli"].iter().any(|suffix| name.ends_with(suffix))
}

fn is_test_name(name: &str) -> bool {
    name.split(['.', '_', '-']).any(|part| TEST_MARKERS.contains(&part.to_ascii_lowercase().as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_codes_of_the_first_languages_never_move() {
        let first = [
            Language::Rust,
            Language::Python,
            Language::JavaScript,
            Language::TypeScript,
            Language::Tsx,
            Language::Go,
            Language::Java,
            Language::C,
            Language::Cpp,
            Language::Markdown,
            Language::Text,
        ];
        for (code, language) in first.into_iter().enumerate() {
            assert_eq!(language.to_u8() as usize, code, "{language}");
        }
        for language in Language::ALL {
            assert_eq!(Language::from_u8(language.to_u8()), language);
            assert_eq!(Language::from_name(language.name()), Some(language), "{language}");
            assert_eq!(serde_json::to_value(language).ok(), Some(serde_json::json!(language.name())));
            let without_grammar = matches!(language, Language::Markdown | Language::Text) || language.is_config();
            assert_eq!(language.grammar().is_none(), without_grammar, "{language}");
        }
    }

    #[test]
    fn files_are_known_by_extension_and_well_known_name() {
        let cases = [
            ("lib/rack/builder.rb", Language::Ruby),
            ("Rakefile", Language::Ruby),
            ("app/Gemfile", Language::Ruby),
            ("rack.gemspec", Language::Ruby),
            ("lib/tasks/db.rake", Language::Ruby),
            ("config.ru", Language::Ruby),
            ("src/Controller.php", Language::Php),
            ("Cache.cs", Language::CSharp),
            ("Cache.kt", Language::Kotlin),
            ("build.gradle.kts", Language::Kotlin),
            ("Sources/Cache.swift", Language::Swift),
            ("Cache.scala", Language::Scala),
            ("build.sc", Language::Scala),
            ("lib/cache.ex", Language::Elixir),
            ("test/cache_test.exs", Language::Elixir),
            ("init.lua", Language::Lua),
            ("deploy.sh", Language::Bash),
            ("x.bash", Language::Bash),
            ("x.zsh", Language::Bash),
            ("/home/me/.bashrc", Language::Bash),
            ("std/mem.zig", Language::Zig),
            ("src/Data/Cache.hs", Language::Haskell),
            (".github/workflows/ci.yml", Language::Yaml),
            ("deploy/values.yaml", Language::Yaml),
            (".clang-format", Language::Yaml),
            ("Cargo.toml", Language::Toml),
            ("Pipfile", Language::Toml),
            ("tsconfig.json", Language::Json),
            (".vscode/settings.jsonc", Language::Json),
            (".eslintrc", Language::Json),
            ("lib/src/queue_list.dart", Language::Dart),
            ("Source/NSCache.m", Language::ObjectiveC),
            ("lib/glob.ml", Language::OCaml),
            ("lib/glob.mli", Language::OCaml),
            ("R/glue.R", Language::R),
            ("src/heaps.jl", Language::Julia),
            ("README", Language::Text),
        ];
        for (path, language) in cases {
            assert_eq!(Language::from_path(Path::new(path)), language, "{path}");
        }
    }

    #[test]
    fn scripts_without_an_extension_are_known_by_their_shebang() {
        let cases = [
            ("#!/bin/bash\necho hi\n", Some(Language::Bash)),
            ("#!/usr/bin/env bash\n", Some(Language::Bash)),
            ("#!/bin/sh -e\n", Some(Language::Bash)),
            ("#! /usr/bin/env ruby\n", Some(Language::Ruby)),
            ("#!/usr/bin/env -S python3.12 -u\n", Some(Language::Python)),
            ("#!/usr/bin/env LUA_PATH=x lua5.4\n", Some(Language::Lua)),
            ("#!/usr/bin/env elixir\n", Some(Language::Elixir)),
            ("#!/usr/bin/env Rscript\n", Some(Language::R)),
            ("#!/usr/bin/env julia\n", Some(Language::Julia)),
            ("#!/usr/bin/perl\n", None),
            ("# not a shebang\n", None),
            ("", None),
        ];
        for (text, language) in cases {
            assert_eq!(Language::from_shebang(text), language, "{text:?}");
        }
        // The path wins when it says something; the `#!` line only names files it says nothing of.
        assert_eq!(Language::detect(Path::new("bin/deploy"), "#!/bin/bash\n"), Language::Bash);
        assert_eq!(Language::detect(Path::new("tool.py"), "#!/bin/bash\n"), Language::Python);
        assert_eq!(Language::detect(Path::new("notes"), "plain words\n"), Language::Text);
    }

    #[test]
    fn test_files_of_the_new_languages_are_recognised() {
        for path in [
            "spec/rack/builder_spec.rb",
            "test/cache_test.exs",
            "Tests/CacheTests/CacheTests.swift",
            "src/CacheTest.kt",
            "src/CacheSpec.scala",
            "Cache.Tests/CacheTests.cs",
            "tests/ParserTest.php",
            "spec/cache_spec.lua",
            "lua/cache_test.lua",
            "test/CacheSpec.hs",
        ] {
            assert!(is_test_like(path), "{path}");
        }
        for path in ["src/Contest.kt", "src/Latest.cs", "src/Manifest.swift", "lib/request.rb", "src/ParserTest.java"] {
            assert!(!is_test_like(path), "{path}");
        }
    }
}
