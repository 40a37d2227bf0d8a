//! The router (design seed 004): a question shaped like a structural query goes to the exact
//! tools (syntax tree, index symbols); everything else goes to retrieval. Rules, not a model:
//! they are instant, predictable, and a miss only costs the fallback to retrieval.

use crate::chunk::ChunkKind;

/// Where a question goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// "list the functions in src/db.rs": the file's definitions, optionally of some kinds.
    Outline { path: String, kinds: Option<Vec<ChunkKind>> },
    /// "where is `parse_config` defined": the index's definitions of a name.
    Definition { name: String },
    /// "what does `Foo` contain": the members of a definition.
    Members { name: String },
    /// Everything else: retrieval, then the LLM.
    Retrieval,
}

impl Route {
    /// A short name for output (`outline`, `definition`, `members`, `retrieval`).
    pub fn name(&self) -> &'static str {
        match self {
            Route::Outline { .. } => "outline",
            Route::Definition { .. } => "definition",
            Route::Members { .. } => "members",
            Route::Retrieval => "retrieval",
        }
    }

    /// What the route looks at: the file or the name (none for retrieval).
    pub fn target(&self) -> Option<&str> {
        match self {
            Route::Outline { path, .. } => Some(path),
            Route::Definition { name } | Route::Members { name } => Some(name),
            Route::Retrieval => None,
        }
    }
}

/// Words naming kinds of definitions, and the kinds they mean.
fn kinds_named(word: &str) -> Option<Option<Vec<ChunkKind>>> {
    use ChunkKind::*;
    let word =
        if word == "class" { word } else { word.strip_suffix("es").filter(|w| w.ends_with("ss")).unwrap_or(word) };
    let word = if word.ends_with("ss") { word } else { word.strip_suffix('s').unwrap_or(word) };
    Some(match word {
        "function" | "func" | "fn" => Some(vec![Function, Method]),
        "method" => Some(vec![Method]),
        "class" => Some(vec![Class]),
        "struct" => Some(vec![Struct]),
        "enum" => Some(vec![Enum]),
        "trait" => Some(vec![Trait]),
        "interface" => Some(vec![Interface]),
        "type" => Some(vec![Class, Struct, Enum, Interface, Trait, Type]),
        "macro" => Some(vec![Macro]),
        "section" | "heading" => Some(vec![Section]),
        "definition" | "symbol" | "declaration" | "item" => None,
        _ => return None,
    })
}

/// `src/db.rs`, `main.py`, `./lib/x.ts`: a token naming a file (a slash or an extension).
fn is_path(token: &str) -> bool {
    let Some((stem, extension)) = token.rsplit_once('.') else { return token.contains('/') && !token.ends_with('/') };
    !stem.is_empty()
        && !stem.ends_with('/')
        && (1..=5).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && !extension.chars().all(|c| c.is_ascii_digit())
        && token.chars().all(|c| c.is_alphanumeric() || "/._-+@".contains(c))
        && (token.contains('/')
            || crate::lang::Language::from_path(std::path::Path::new(token)) != crate::lang::Language::Text)
}

/// `parse_config`, `Foo`, `Foo::bar`, `cfg.load`: a token that can be a symbol name.
fn is_name(token: &str) -> bool {
    let mut chars = token.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && token.chars().all(|c| c.is_alphanumeric() || "_$:.".contains(c))
        && !token.ends_with([':', '.'])
}

/// A token without the quotes or backticks around it.
fn unquote(token: &str) -> &str {
    token.trim_matches(|c| matches!(c, '`' | '"' | '\'' | '“' | '”' | '‘' | '’'))
}

/// Routes a question.
pub fn route(question: &str) -> Route {
    let text = question.trim().trim_end_matches(['?', '.', '!', ' ']);
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let lower: Vec<String> = tokens.iter().map(|t| unquote(t).to_lowercase()).collect();
    let words: Vec<&str> = lower.iter().map(String::as_str).collect();
    outline_route(&tokens, &words)
        .or_else(|| definition_route(&tokens, &words))
        .or_else(|| members_route(&tokens, &words))
        .unwrap_or(Route::Retrieval)
}

/// "list the functions in src/db.rs", "what classes are defined in app/models.py",
/// "outline of src/main.rs", "show all definitions in lib.rs".
fn outline_route(tokens: &[&str], words: &[&str]) -> Option<Route> {
    let last = unquote(tokens.last()?);
    if !is_path(last) {
        return None;
    }
    let path = last.trim_start_matches("./").to_string();
    let head = &words[..words.len() - 1];
    let starts = ["list", "show", "outline", "what", "which", "give", "enumerate", "all"];
    if !head.first().is_some_and(|w| starts.contains(w)) {
        return None;
    }
    if head.first() == Some(&"outline") && head.len() <= 3 {
        return Some(Route::Outline { path, kinds: None });
    }
    // The preposition before the path, and a kind word before it.
    let preposition = head.iter().rposition(|w| matches!(*w, "in" | "of" | "inside" | "from"))?;
    if !head[preposition + 1..].iter().all(|w| matches!(*w, "the" | "file")) {
        return None;
    }
    let kinds = head[..preposition].iter().rev().find_map(|w| kinds_named(w))?;
    Some(Route::Outline { path, kinds })
}

/// "where is `parse_config` defined", "where's Foo declared", "definition of Foo::bar",
/// "find the definition of parse_config", "where do we define Foo".
fn definition_route(tokens: &[&str], words: &[&str]) -> Option<Route> {
    let name_at = |i: usize| tokens.get(i).map(|t| unquote(t)).filter(|t| is_name(t)).map(str::to_string);
    let verbs = ["defined", "declared", "implemented"];
    match words {
        ["where", "is" | "are", _, verb] if verbs.contains(verb) => name_at(2),
        ["where's", _, verb] if verbs.contains(verb) => name_at(1),
        ["where", "is" | "are", "the", "definition" | "definitions", "of", _] => name_at(5),
        ["where", "do" | "does", "we" | "they" | "you", "define" | "declare" | "implement", _] => name_at(4),
        [.., "definition" | "definitions", "of", _] if words.len() <= 6 => name_at(words.len() - 1),
        ["go", "to", _] | ["goto", _] => name_at(words.len() - 1),
        _ => None,
    }
    .map(|name| Route::Definition { name })
}

/// "what does `Foo` contain", "what is in Foo", "members of Foo", "what fields does Foo have",
/// "list the methods of Foo".
fn members_route(tokens: &[&str], words: &[&str]) -> Option<Route> {
    let name_at = |i: usize| tokens.get(i).map(|t| unquote(t)).filter(|t| is_name(t)).map(str::to_string);
    let member_words = ["members", "fields", "methods", "properties", "variants", "attributes"];
    match words {
        ["what", "does" | "do", _, "contain" | "have" | "hold"] => name_at(2),
        ["what's" | "whats", "in", _] => name_at(2),
        ["what", "is", "in", _] => name_at(3),
        ["what", member, "does" | "do", _, "have"] if member_words.contains(member) => name_at(3),
        [.., member, "of", _] if member_words.contains(member) && words.len() <= 5 => name_at(words.len() - 1),
        _ => None,
    }
    .map(|name| Route::Members { name })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outline(path: &str, kinds: Option<Vec<ChunkKind>>) -> Route {
        Route::Outline { path: path.into(), kinds }
    }

    #[test]
    fn structural_questions_take_the_exact_routes() {
        use ChunkKind::*;
        let cases = [
            ("list the functions in src/db.rs", outline("src/db.rs", Some(vec![Function, Method]))),
            ("List all classes in `app/models.py`?", outline("app/models.py", Some(vec![Class]))),
            ("which class is in app/models.py", outline("app/models.py", Some(vec![Class]))),
            ("list the interfaces in src/api.ts", outline("src/api.ts", Some(vec![Interface]))),
            (
                "what structs are defined in the file server/src/wire.rs",
                outline("server/src/wire.rs", Some(vec![Struct])),
            ),
            ("show the definitions in ./lib.rs", outline("lib.rs", None)),
            ("outline of src/main.go", outline("src/main.go", None)),
            ("where is `parse_config` defined?", Route::Definition { name: "parse_config".into() }),
            ("Where's Foo::bar declared", Route::Definition { name: "Foo::bar".into() }),
            ("find the definition of cfg.load", Route::Definition { name: "cfg.load".into() }),
            ("where do we define ParseError", Route::Definition { name: "ParseError".into() }),
            ("what does `Foo` contain?", Route::Members { name: "Foo".into() }),
            ("what fields does Config have", Route::Members { name: "Config".into() }),
            ("list the methods of Store", Route::Members { name: "Store".into() }),
        ];
        for (question, expected) in cases {
            assert_eq!(route(question), expected, "{question}");
        }
    }

    #[test]
    fn open_questions_go_to_retrieval() {
        for question in [
            "where do we validate API tokens?",
            "how does authentication work",
            "where is the user validated",
            "list the functions that parse dates",
            "what does the indexer do when a file is deleted?",
            "explain src/db.rs",
            "what is in version 1.2",
            "",
        ] {
            assert_eq!(route(question), Route::Retrieval, "{question}");
        }
    }
}
