//! Languages raggrep knows, detected from file names.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A language as far as chunking is concerned.
///
/// Languages with a tree-sitter grammar are chunked by syntax; `Markdown` by headings;
/// everything else is `Text` and chunked in overlapping line windows.
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
}

impl Language {
    /// Every language, for help texts and filters.
    pub const ALL: [Language; 11] = [
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

    pub fn to_u8(self) -> u8 {
        Self::ALL.iter().position(|l| *l == self).unwrap_or(0) as u8
    }

    pub fn from_u8(value: u8) -> Language {
        Self::ALL.get(value as usize).copied().unwrap_or(Language::Text)
    }

    /// Detects the language from a path's extension (or well-known file name).
    pub fn from_path(path: &Path) -> Language {
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
            _ => Language::Text,
        }
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
        }
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
            Language::Markdown | Language::Text => return None,
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
/// (`test_x.py`, `x_test.go`, `x.spec.ts`, `tests/…`).
pub fn is_test_like(path: &str) -> bool {
    path.split('/').any(is_test_name)
}

/// A container path with a test-like component (`parser::tests`, `test_utils.Helpers`): Rust
/// keeps unit tests in a `mod tests` inside the file they test, where the path cannot tell them
/// from the code.
pub fn is_test_container(container: &str) -> bool {
    container.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')).any(is_test_name)
}

/// A declaration file: TypeScript's `.d.ts` (`.d.mts`, `.d.cts`) or a Python stub (`.pyi`). It
/// restates an implementation's signatures and doc comments for type checkers, so beside that
/// implementation it matches a question as well as the code does without being the code.
pub fn is_declaration_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    [".d.ts", ".d.mts", ".d.cts", ".pyi"].iter().any(|suffix| name.ends_with(suffix))
}

fn is_test_name(name: &str) -> bool {
    name.split(['.', '_', '-']).any(|part| TEST_MARKERS.contains(&part.to_ascii_lowercase().as_str()))
}
