//! `ask`: answers questions about the code (design seeds 001 and 004). A router sends
//! structural questions to exact answers from the syntax tree and the index's symbols; every
//! other question — and a structural one that finds nothing — goes to retrieval, whose snippets
//! become a prompt (seed 001's template) for an OpenAI-compatible LLM ([`llm`]).

pub mod llm;
mod route;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use route::{Route, route};

use crate::chunk::{ChunkKind, estimate_tokens};
use crate::index::RootIndex;
use crate::lang::Language;
use crate::symbols::{self, FoundDefinition};

/// Most definitions an exact answer lists.
const MAX_LISTED: usize = 200;
/// Longest definition shown whole when it has no members to list.
const MAX_SHOWN_LINES: usize = 80;
/// Largest file the outline route parses (what the index skips is not outlined either).
const MAX_OUTLINE_BYTES: u64 = 4 << 20;

/// The `[llm]` table of a config file (`.raggrep/config.toml` for one workspace, or
/// `$XDG_CONFIG_HOME/raggrep/config.toml` for the user). The key itself never goes in a file:
/// `api_key_env` names the environment variable holding it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

impl LlmSettings {
    /// Fields set here win over `fallback`'s.
    pub fn or(self, fallback: LlmSettings) -> LlmSettings {
        LlmSettings {
            url: self.url.or(fallback.url),
            model: self.model.or(fallback.model),
            api_key_env: self.api_key_env.or(fallback.api_key_env),
        }
    }

    /// The `[llm]` table of a config file; absent file or table: nothing set. A table that is
    /// not understood is an error (a typo must not silently send questions elsewhere).
    pub fn load(path: &Path) -> Result<LlmSettings, String> {
        #[derive(serde::Deserialize)]
        struct File {
            #[serde(default)]
            llm: Option<toml::Value>,
        }
        let Ok(text) = std::fs::read_to_string(path) else { return Ok(LlmSettings::default()) };
        let file: File = toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
        match file.llm {
            None => Ok(LlmSettings::default()),
            Some(table) => {
                table.try_into().map_err(|e: toml::de::Error| format!("{}: [llm]: {}", path.display(), e.message()))
            }
        }
    }

    /// The user's config file ([`crate::config::user_config_file`]).
    pub fn user_file() -> Option<PathBuf> {
        crate::config::user_config_file()
    }
}

/// A place in the code an answer rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Relative to its root, `/`-separated.
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: Option<String>,
    pub kind: Option<ChunkKind>,
}

impl Source {
    /// `path:start-end`, the form prompts and answers cite.
    pub fn citation(&self) -> String {
        format!("{}:{}-{}", self.path, self.start_line, self.end_line)
    }

    /// A definition from a file's syntax tree (`path` relative to its root).
    fn in_file(path: &str, definition: &crate::chunk::Definition) -> Source {
        Source {
            path: path.to_string(),
            start_line: definition.start_line,
            end_line: definition.end_line,
            symbol: Some(definition.symbol.clone()),
            kind: Some(definition.kind),
        }
    }

    fn of(definition: &FoundDefinition) -> Source {
        Source {
            path: definition.path.clone(),
            start_line: definition.start_line,
            end_line: definition.end_line,
            symbol: Some(definition.symbol.clone()),
            kind: Some(definition.kind),
        }
    }
}

/// An answer computed exactly, without a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactAnswer {
    pub text: String,
    pub sources: Vec<Source>,
}

/// Answers a structural route exactly from the roots' syntax trees and index symbols, or says
/// why it cannot (no such file or symbol): the caller then falls back to retrieval.
pub fn answer_exactly(route: &Route, roots: &[RootIndex]) -> Result<ExactAnswer, String> {
    match route {
        Route::Outline { path, kinds } => outline_answer(roots, path, kinds.as_deref()),
        Route::Definition { name } => definition_answer(roots, name),
        Route::Members { name } => members_answer(roots, name),
        Route::Retrieval => Err("not a structural question".to_string()),
    }
}

/// `src/db.rs` inside one of the roots, as (root, relative path, absolute path). Paths that
/// leave the roots (`..`, absolute paths elsewhere, symlinks out) are not found.
fn locate(roots: &[RootIndex], path: &str) -> Option<(PathBuf, String, PathBuf)> {
    let given = Path::new(path);
    if given.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return None;
    }
    roots.iter().find_map(|view| {
        let root = std::fs::canonicalize(&view.root).ok()?;
        let absolute = std::fs::canonicalize(root.join(given)).ok()?;
        let relative = absolute.strip_prefix(&root).ok()?.to_str()?.replace('\\', "/");
        absolute.is_file().then_some((root, relative, absolute))
    })
}

fn kinds_label(kinds: Option<&[ChunkKind]>) -> String {
    match kinds {
        None => "definitions".to_string(),
        Some([ChunkKind::Function, ChunkKind::Method]) => "functions".to_string(),
        Some([ChunkKind::Class, ChunkKind::Struct, ..]) => "types".to_string(),
        Some(kinds) => kinds
            .iter()
            .map(|k| if k.name().ends_with('s') { format!("{}es", k.name()) } else { format!("{}s", k.name()) })
            .collect::<Vec<_>>()
            .join(" and "),
    }
}

fn outline_answer(roots: &[RootIndex], path: &str, kinds: Option<&[ChunkKind]>) -> Result<ExactAnswer, String> {
    let Some((_, relative, absolute)) = locate(roots, path) else {
        return Err(format!("no file {path} in the workspace"));
    };
    let size = std::fs::metadata(&absolute).map(|m| m.len()).unwrap_or(0);
    if size > MAX_OUTLINE_BYTES {
        return Err(format!("{relative} is too large to outline ({size} bytes)"));
    }
    let text = std::fs::read_to_string(&absolute).map_err(|e| format!("cannot read {relative}: {e}"))?;
    let language = Language::detect(&absolute, &text);
    if language.grammar().is_none() && language != Language::Markdown && !language.is_config() {
        return Err(format!("{relative} has no syntax tree raggrep can read ({} file)", language.name()));
    }
    let all = crate::chunk::outline(&text, language, &crate::chunk::ChunkConfig::default());
    let wanted: Vec<_> = all.iter().filter(|d| kinds.is_none_or(|k| k.contains(&d.kind))).collect();
    let label = kinds_label(kinds);
    let mut answer = String::new();
    if wanted.is_empty() {
        let _ = write!(answer, "{relative} has no {label}");
        if !all.is_empty() {
            let _ = write!(
                answer,
                " ({} other definitions: `raggrep ask \"outline of {relative}\"` lists them)",
                all.len()
            );
        }
        answer.push('\n');
    } else {
        let _ = writeln!(answer, "{} {label} in {relative}:", wanted.len());
    }
    let mut sources = Vec::new();
    for definition in wanted.iter().take(MAX_LISTED) {
        let source = Source::in_file(&relative, definition);
        list(&mut answer, &source);
        sources.push(source);
    }
    if wanted.len() > MAX_LISTED {
        let _ = writeln!(answer, "  … and {} more", wanted.len() - MAX_LISTED);
    }
    Ok(ExactAnswer { text: answer, sources })
}

/// One line of an exact answer: `  path:start-end  kind symbol`.
fn list(answer: &mut String, source: &Source) {
    let kind = source.kind.map_or("", ChunkKind::name);
    let _ = writeln!(answer, "  {}  {kind} {}", source.citation(), source.symbol.as_deref().unwrap_or_default());
}

fn definition_answer(roots: &[RootIndex], name: &str) -> Result<ExactAnswer, String> {
    let found = symbols::find_definitions(roots, name, MAX_LISTED);
    if found.definitions.is_empty() {
        return Err(format!("no definition named `{name}` in the index"));
    }
    let places = if found.total == 1 { "1 place".to_string() } else { format!("{} places", found.total) };
    let mut answer = format!("`{name}` is defined in {places}:\n");
    let mut sources = Vec::new();
    for definition in &found.definitions {
        let source = Source::of(definition);
        list(&mut answer, &source);
        sources.push(source);
    }
    if found.total > found.definitions.len() {
        let _ = writeln!(answer, "  … and {} more", found.total - found.definitions.len());
    }
    Ok(ExactAnswer { text: answer, sources })
}

fn members_answer(roots: &[RootIndex], name: &str) -> Result<ExactAnswer, String> {
    let found = symbols::find_definitions(roots, name, MAX_LISTED);
    if found.definitions.is_empty() {
        return Err(format!("no definition named `{name}` in the index"));
    }
    let mut answer = String::new();
    let mut sources = Vec::new();
    for definition in &found.definitions {
        let source = Source::of(definition);
        let members = symbols::members_of(definition);
        let header = format!("`{}` ({}, {})", definition.symbol, definition.kind.name(), source.citation());
        sources.push(source);
        if members.is_empty() {
            // Nothing nested to list (a struct's fields, a short class): the definition itself.
            let text =
                std::fs::read_to_string(crate::walk::resolve(&definition.root, &definition.path)).unwrap_or_default();
            let body = line_range(&text, definition.start_line, definition.end_line);
            let lines: Vec<&str> = body.lines().collect();
            let _ = writeln!(answer, "{header}:");
            for line in lines.iter().take(MAX_SHOWN_LINES) {
                let _ = writeln!(answer, "    {line}");
            }
            if lines.len() > MAX_SHOWN_LINES {
                let _ = writeln!(answer, "    … {} more lines", lines.len() - MAX_SHOWN_LINES);
            }
            continue;
        }
        let count =
            if members.len() == 1 { "1 definition".to_string() } else { format!("{} definitions", members.len()) };
        let _ = writeln!(answer, "{header} contains {count}:");
        for member in members.iter().take(MAX_LISTED) {
            let member_source = Source::in_file(&definition.path, member);
            list(&mut answer, &member_source);
            sources.push(member_source);
        }
    }
    sources.dedup();
    Ok(ExactAnswer { text: answer, sources })
}

/// Candidates a question's retrieval hands the prompt builder (the budget decides how many go
/// in): `raggrep ask` and a workspace's `context` alike.
pub const CANDIDATES: usize = 30;

/// Lines `start..=end` (1-based) of the file at `path` as it is on disk now (empty when it
/// cannot be read: the snippet then shows no code rather than failing the answer).
pub fn read_lines(path: &Path, start: u32, end: u32) -> String {
    line_range(&std::fs::read_to_string(path).unwrap_or_default(), start, end)
}

/// Lines `start..=end` (1-based, inclusive) of `text`, joined: the body of a snippet.
pub fn line_range(text: &str, start: u32, end: u32) -> String {
    text.lines()
        .skip(start.saturating_sub(1) as usize)
        .take((end.max(start) - start.max(1) + 1) as usize)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A retrieved piece of code for a prompt.
#[derive(Debug, Clone)]
pub struct Snippet {
    pub source: Source,
    pub language: Language,
    pub body: String,
}

impl Snippet {
    /// A search hit with its code (`body`, read by the caller: from disk or an editor buffer).
    pub fn from_hit(hit: crate::search::Hit, body: String) -> Snippet {
        Snippet {
            body,
            source: Source {
                path: hit.path,
                start_line: hit.start_line,
                end_line: hit.end_line,
                symbol: hit.symbol,
                kind: Some(hit.kind),
            },
            language: hit.language,
        }
    }
}

/// Snippets laid out for a model, each headed by its citation, as many as fit in a budget.
#[derive(Debug, Clone, Default)]
pub struct Fitted {
    pub text: String,
    /// Estimated tokens of `text`.
    pub tokens: usize,
    pub sources: Vec<Source>,
}

/// Lays snippets out best first while they fit in `max_tokens`; a snippet that does not fit is
/// skipped and a smaller one further down may still go in.
pub fn fit_snippets(snippets: impl IntoIterator<Item = Snippet>, max_tokens: usize) -> Fitted {
    let mut fitted = Fitted::default();
    for snippet in snippets {
        let block = format!(
            "{}\n```{}\n{}\n```\n\n",
            snippet.source.citation(),
            snippet.language.name(),
            snippet.body.trim_end()
        );
        let cost = estimate_tokens(&block);
        if fitted.tokens + cost > max_tokens {
            continue;
        }
        fitted.tokens += cost;
        fitted.text.push_str(&block);
        fitted.sources.push(snippet.source);
    }
    fitted.text.truncate(fitted.text.trim_end().len());
    fitted
}

/// The prompt for a retrieval answer (seed 001's template): the snippets, the question, and
/// the instruction to answer only from them and cite them.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub text: String,
    /// Estimated tokens of the whole prompt.
    pub tokens: usize,
    pub sources: Vec<Source>,
}

pub fn prompt(question: &str, snippets: impl IntoIterator<Item = Snippet>, max_tokens: usize) -> Prompt {
    let fitted = fit_snippets(snippets, max_tokens);
    let snippets = if fitted.sources.is_empty() { "(no code in the index matches)".to_string() } else { fitted.text };
    // The question comes after the snippets, next to the instruction: small models answer it
    // instead of greeting the user (SmolLM2-135M did with seed 001's question-first order).
    let text = format!(
        "You are analyzing the following codebase.\n\n\
         Relevant code snippets, each headed by its source (path:start-end):\n\n\
         {snippets}\n\n\
         Question: {question:?}\n\
         Answer the question based only on these snippets. Cite the source (path:start-end) of every \
         snippet you use. If the snippets do not answer the question, say so.\n"
    );
    Prompt { tokens: estimate_tokens(&text), text, sources: fitted.sources }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snippet(path: &str, lines: u32, body: &str) -> Snippet {
        Snippet {
            source: Source { path: path.into(), start_line: 1, end_line: lines, symbol: None, kind: None },
            language: Language::Rust,
            body: body.into(),
        }
    }

    #[test]
    fn the_prompt_cites_every_snippet_it_holds_and_keeps_the_budget() {
        let big = "let x = 1;\n".repeat(400);
        let snippets =
            vec![snippet("a.rs", 3, "fn a() {}"), snippet("big.rs", 400, &big), snippet("c.rs", 1, "fn c() {}")];
        let prompt = prompt("where is a?", snippets, 100);
        let cited: Vec<String> = prompt.sources.iter().map(Source::citation).collect();
        assert_eq!(cited, ["a.rs:1-3", "c.rs:1-1"], "the snippet over budget is skipped, a later small one fits");
        assert!(prompt.text.contains("a.rs:1-3\n```rust\nfn a() {}\n```"));
        assert!(prompt.text.contains("Question: \"where is a?\""));
        assert!(!prompt.text.contains("let x"));
        assert!(prompt.text.contains("based only on these snippets"));
    }

    #[test]
    fn an_empty_retrieval_says_so_in_the_prompt() {
        let prompt = prompt("anything", Vec::new(), 100);
        assert!(prompt.sources.is_empty());
        assert!(prompt.text.contains("(no code in the index matches)"));
    }
}
