//! What a query asks for: a symbol by name (`APIRouter`, `Rack::Builder`, `fmt::arg`) or a
//! question in words ("how does dependency injection work"), with the words and names in it.
//!
//! The learned fusion reads a query as a bag of tokens; these distinctions are what it cannot
//! see. A symbol lookup wants the definition, not the places that use the name; a question
//! about a component wants the file that implements it, whose name often carries the question's
//! words.

use crate::index::code_tokens;

/// The two shapes of query that rank differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One name written as code: `APIRouter`, `parse_config`, `Rack::Builder`, `fmt::arg`.
    Symbol,
    /// Words about a component, a concept, an architecture: "HTTP caching", "how does X work".
    Question,
    /// A sentence that says what one function does, as its doc comment would: "Returns the
    /// number of …", "Parse a header into …". It names a function, not a file or a component.
    Description,
}

/// A query taken apart.
#[derive(Debug, Clone)]
pub struct Intent {
    pub shape: Shape,
    /// The words that can say something about code, lowercased, without stop words and question
    /// words (`how`, `does`, `work`), each once.
    pub keywords: Vec<String>,
    /// Names the query writes as code. A symbol lookup: the whole name and, when qualified, its
    /// last segment (`Rack::Builder` → `Rack::Builder`, `Builder`). A question: the identifiers
    /// and capitalised words in it (`FromRequestParts`, `FMT_STRING`, `safeParse`, `Functor`).
    pub names: Vec<String>,
    /// A question about a task the user does ("how do I roll back a release", "how to …"):
    /// guides answer those as well as code does, unlike "how does X work".
    pub task: bool,
    /// A question about how a part of the code works ("how does dependency injection work",
    /// "how are routes registered"): its answer is the files that make up that part, so each
    /// file's best place comes before a second place of any one file.
    pub overview: bool,
}

/// Separators of a qualified name: `Rack::Builder`, `pkg.Func`, `App\Http`, `self->field`,
/// `Rack::Builder#call`.
const QUALIFIERS: [&str; 5] = ["::", "->", ".", "\\", "#"];

/// Words of a question, beside the fusion's stop words, that say nothing about which code
/// answers it.
const QUESTION_WORDS: &[&str] = &[
    "been",
    "these",
    "those",
    "how",
    "does",
    "do",
    "did",
    "what",
    "where",
    "when",
    "which",
    "who",
    "why",
    "work",
    "works",
    "working",
    "can",
    "should",
    "would",
    "will",
    "we",
    "our",
    "you",
    "your",
    "there",
    "their",
    "they",
    "them",
    "was",
    "were",
    "has",
    "have",
    "had",
    "via",
    "using",
    "used",
    "use",
    "way",
    "ways",
    "code",
    "implementation",
    "implemented",
    "implement",
    "logic",
    "handled",
    "done",
    "find",
    "show",
    "get",
    "gets",
];

/// A word that says nothing about which code answers a question.
fn is_question_word(word: &str) -> bool {
    QUESTION_WORDS.contains(&word) || super::learned::STOPWORDS.contains(&word)
}

impl Intent {
    pub fn of(text: &str) -> Intent {
        let text = text.trim();
        let shape = if is_symbol(text) {
            Shape::Symbol
        } else if describes_a_function(text) {
            Shape::Description
        } else {
            Shape::Question
        };
        let mut keywords: Vec<String> = code_tokens(text)
            .into_iter()
            .map(|(_, _, t)| t)
            .filter(|t| t.len() > 2 && !is_question_word(t) && !t.chars().all(|c| c.is_ascii_digit()))
            .collect();
        keywords.sort();
        keywords.dedup();
        let names = match shape {
            Shape::Symbol => {
                let mut names = vec![text.to_string()];
                if let Some(last) = last_segment(text)
                    && last != text
                {
                    names.push(last.to_string());
                }
                names
            }
            Shape::Description => Vec::new(),
            Shape::Question => text
                .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '`' | '"' | '\'' | '?'))
                .map(|w| w.trim_end_matches(['.', ':', '!']))
                .filter(|w| looks_like_code(w))
                .map(str::to_string)
                .collect(),
        };
        let lower = text.to_lowercase();
        let task = ["how do i ", "how do we ", "how do you ", "how can i ", "how can we ", "how should i ", "how to "]
            .iter()
            .any(|p| lower.starts_with(p));
        let overview = shape == Shape::Question && lower.starts_with("how ") && !task;
        Intent { shape, keywords, names, task, overview }
    }

    /// The query asks about documentation itself, so prose answers it.
    pub fn asks_for_prose(&self) -> bool {
        self.keywords.iter().any(|w| {
            ["doc", "docs", "documentation", "documented", "readme", "guide", "tutorial", "changelog", "manual"]
                .contains(&w.as_str())
        })
    }
}

/// Verbs a doc comment starts with, in their base form ("Returns …", "Parse …").
const DOC_VERBS: &[&str] = &[
    "return",
    "get",
    "set",
    "create",
    "make",
    "build",
    "parse",
    "convert",
    "check",
    "compute",
    "add",
    "remove",
    "delete",
    "insert",
    "update",
    "find",
    "search",
    "load",
    "save",
    "read",
    "write",
    "open",
    "close",
    "start",
    "stop",
    "run",
    "execute",
    "call",
    "invoke",
    "apply",
    "handle",
    "process",
    "render",
    "format",
    "print",
    "send",
    "receive",
    "fetch",
    "push",
    "pop",
    "append",
    "prepend",
    "extend",
    "merge",
    "split",
    "join",
    "sort",
    "compare",
    "validate",
    "verify",
    "ensure",
    "determine",
    "calculate",
    "count",
    "generate",
    "produce",
    "wrap",
    "unwrap",
    "encode",
    "decode",
    "serialize",
    "deserialize",
    "escape",
    "unescape",
    "register",
    "unregister",
    "subscribe",
    "unsubscribe",
    "dispatch",
    "cancel",
    "wait",
    "lock",
    "unlock",
    "acquire",
    "release",
    "allocate",
    "free",
    "copy",
    "clone",
    "move",
    "reset",
    "clear",
    "flush",
    "initialize",
    "init",
    "configure",
    "enable",
    "disable",
    "toggle",
    "show",
    "hide",
    "display",
    "draw",
    "resize",
    "attach",
    "detach",
    "bind",
    "connect",
    "disconnect",
    "listen",
    "accept",
    "reject",
    "resolve",
    "raise",
    "throw",
    "log",
    "mark",
    "skip",
    "ignore",
    "include",
    "exclude",
    "collect",
    "normalize",
    "sanitize",
    "strip",
    "trim",
    "truncate",
    "consume",
    "tokenize",
    "transform",
    "translate",
    "lookup",
    "retrieve",
    "obtain",
    "provide",
    "construct",
    "instantiate",
    "define",
    "specify",
    "describe",
    "indicate",
    "represent",
    "contain",
    "hold",
    "store",
    "keep",
    "record",
    "capture",
    "override",
    "implement",
    "delegate",
    "forward",
    "redirect",
    "try",
    "attempt",
    "use",
    "allow",
    "prevent",
    "guess",
    "examine",
    "inspect",
    "combine",
    "emit",
    "iterate",
    "visit",
    "traverse",
    "scan",
    "assign",
    "replace",
    "rename",
    "evaluate",
    "compile",
    "fill",
    "populate",
    "pack",
    "unpack",
    "test",
    "match",
    "filter",
    "map",
    "reduce",
    "yield",
    "take",
    "drop",
    "modify",
    "prepare",
    "erase",
    "negate",
    "perform",
    "extract",
    "identify",
    "dispose",
    "report",
    "shift",
    "fold",
    "flatten",
    "enumerate",
    "mutate",
    "notify",
    "signal",
    "spawn",
    "poll",
    "peek",
    "advance",
    "pad",
    "quote",
    "clamp",
    "round",
    "hash",
    "sign",
    "encrypt",
    "decrypt",
    "compress",
    "decompress",
    "sum",
    "multiply",
    "divide",
    "subtract",
    "negotiate",
    "authenticate",
    "authorize",
    "align",
    "assume",
    "begin",
    "blend",
    "catch",
    "coerce",
    "deduplicate",
    "detect",
    "end",
    "enter",
    "exit",
    "finalize",
    "highlight",
    "install",
    "justify",
    "leave",
    "look",
    "output",
    "pick",
    "refresh",
    "require",
    "select",
    "track",
];

/// The query reads as a doc comment's first sentence, which asks for one function: its first
/// word is a verb ("Returns", "parse"), an article or a conjunction that opens a sentence
/// ("The …", "If …"), or a third-person verb stands second (Go's "reset resets …"); a long
/// sentence whose capitalised first word ends like a third-person verb ("Identifies …"), and any
/// sentence of twelve words or more, and a first word followed by a determiner ("Erase all
/// content …"), too.
/// A first word followed by "and" starts a list of names (`delay and withTimeout …`), not a
/// sentence. The file-level evidence of a question would only pull such a query towards the
/// function's neighbours.
fn describes_a_function(text: &str) -> bool {
    let words: Vec<&str> = text.split_whitespace().collect();
    let (Some(first), Some(second)) = (words.first(), words.get(1)) else { return false };
    let lower = first.to_lowercase();
    let second = second.to_lowercase();
    // Two verbs joined ("Enable or disable …", "Build and return …", "Converts, and assigns,
    // …") describe what a function does; a first word followed by "and" otherwise starts a
    // list of names.
    if matches!(second.as_str(), "and" | "or" | "/" | "&") || first.ends_with(',') {
        let joined = if first.ends_with(',') {
            is_doc_verb(&second) || matches!(second.as_str(), "and" | "to")
        } else {
            // … and the second acts on an object: "Get or set the directory", not "update and
            // delete statement builders" (a component).
            let word = |i: usize| words.get(i).map(|w| w.to_lowercase()).unwrap_or_default();
            is_doc_verb(word(2).trim_end_matches(',')) && is_determiner(&word(3))
        };
        return is_doc_verb(lower.trim_end_matches(',')) && joined;
    }
    // A callback ("Called when the node is entered") and a prohibition ("Do not display …").
    let callback = lower == "called"
        && matches!(second.as_str(), "when" | "with" | "by" | "to" | "before" | "after" | "on" | "for" | "once" | "if");
    let prohibition = (lower == "do" && second == "not") || lower == "don't";
    if callback || prohibition {
        return true;
    }
    let opens_sentence = matches!(lower.as_str(), "a" | "an" | "the" | "this" | "if" | "whether" | "when" | "unless");
    let third_person = |w: &str| w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && is_doc_verb(w);
    let long_sentence = words.len() >= 5
        && first.chars().next().is_some_and(char::is_uppercase)
        && lower.len() >= 5
        && lower.ends_with('s')
        && !lower.ends_with("ss")
        && lower.chars().all(char::is_alphabetic);
    // Twelve words or more: a sentence about one thing's behaviour, not a topic.
    let very_long = words.len() >= 12;
    // A determiner second ("Modify this sequence", "Erase all content"): the first word acts on
    // an object, so it is a verb, even one the list above does not know.
    let acts_on_object = !matches!(lower.as_str(), "how" | "what" | "where" | "why" | "which" | "who" | "when")
        && (is_determiner(&second) || matches!(second.as_str(), "that" | "their" | "these" | "those" | "whether"));
    is_doc_verb(&lower) || opens_sentence || third_person(&second) || long_sentence || very_long || acts_on_object
}

/// `word` (lowercase) opens a verb's object: "the", "a", "all", "each" …
fn is_determiner(word: &str) -> bool {
    matches!(word, "the" | "a" | "an" | "any" | "all" | "this" | "its" | "each" | "every" | "some")
}

/// `word` (lowercase) is one of [`DOC_VERBS`], bare or in its third person (`returns`,
/// `matches`, `applies`).
fn is_doc_verb(word: &str) -> bool {
    DOC_VERBS.iter().any(|v| {
        word == *v
            || word.strip_suffix('s') == Some(v)
            || word.strip_suffix("es") == Some(v)
            || (v.ends_with('y') && word.strip_suffix("ies").is_some_and(|stem| v.strip_suffix('y') == Some(stem)))
    })
}

/// A qualified name with every separator written as a dot (`Rack::Builder#call`,
/// `App\Cache`, `self->field` → `Rack.Builder.call`, `App.Cache`, `self.field`): how names
/// are compared whatever the language or the user writes.
pub fn normal_qualified(name: &str) -> String {
    QUALIFIERS.iter().filter(|s| **s != ".").fold(name.to_string(), |name, separator| name.replace(separator, "."))
}

/// The last segment of a qualified name (`Rack::Builder#call` → `call`).
pub fn last_segment(name: &str) -> Option<&str> {
    let mut rest = name;
    for sep in QUALIFIERS {
        if let Some((_, last)) = rest.rsplit_once(sep) {
            rest = last;
        }
    }
    (!rest.is_empty()).then_some(rest)
}

pub(super) fn is_word(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '?' || c == '!')
}

pub(super) fn segments(text: &str) -> Vec<&str> {
    let mut parts = vec![text];
    for sep in QUALIFIERS {
        parts = parts.into_iter().flat_map(|p| p.split(sep)).collect();
    }
    parts
}

/// One name written as code. A single lowercase word (`session`) is not: people search for a
/// concept that way as often as for a symbol of that name.
fn is_symbol(text: &str) -> bool {
    if text.is_empty() || text.chars().any(char::is_whitespace) {
        return false;
    }
    let parts = segments(text);
    if !parts.iter().all(|p| is_word(p)) {
        return false;
    }
    parts.len() > 1 || text.contains('_') || text.chars().any(char::is_uppercase) || text.starts_with('$')
}

/// A word of a sentence that names something in code: a qualified name, snake_case, an
/// identifier with a capital inside (`safeParse`, `FromRequestParts`, `FMT_STRING`), or a
/// capitalised word that is not a question word (`Functor`, `Deferred`, `CORS`): prose
/// capitalises a word for a sentence's start or for a name, and a type's name is what a
/// question about a component usually carries.
fn looks_like_code(word: &str) -> bool {
    if word.len() < 3 {
        return false;
    }
    if word.chars().next().is_some_and(char::is_uppercase)
        && word.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !is_question_word(&word.to_lowercase())
    {
        return true;
    }
    let parts = segments(word);
    if !parts.iter().all(|p| is_word(p)) {
        return false;
    }
    let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
    let inner_capital = word.chars().zip(word.chars().skip(1)).any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    let snake = word.trim_matches('_').contains('_') && letters.len() > 1;
    parts.len() > 1 && parts.iter().all(|p| !p.is_empty()) || snake || inner_capital
}

/// Two words are one for matching names: the same word inflected (`dependency` /
/// `dependencies`, `cache` / `caching`, `validate` / `validation`, `route` / `router`), not a
/// word inside another (`form` / `format`, `test` / `attest`).
pub fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (a, b) = (stems(a), stems(b));
    a.iter().any(|s| b.contains(s))
}

/// Suffixes of inflection and derivation that name the same thing (`parse`, `parser`,
/// `parsing`).
const SUFFIXES: [&str; 18] = [
    "ations", "ation", "ings", "ing", "ions", "ion", "ers", "er", "ors", "or", "ies", "es", "s", "ed", "ize", "ise",
    "y", "e",
];

/// The word and its stems of at least four letters (a doubled last consonant undoubled:
/// `formatt` → `format`).
fn stems(word: &str) -> Vec<&str> {
    let mut out = vec![word];
    for suffix in SUFFIXES {
        if let Some(stem) = word.strip_suffix(suffix)
            && stem.len() >= 4
        {
            out.push(stem);
            let bytes = stem.as_bytes();
            if bytes.len() >= 5 && bytes[bytes.len() - 1] == bytes[bytes.len() - 2] {
                out.push(&stem[..stem.len() - 1]);
            }
        }
    }
    out
}

/// `name` with case and word separators dropped, for comparing a symbol with a file name
/// (`HttpCookies` / `http_cookies.rb` / `http-cookies.ts`).
pub fn squashed(name: &str) -> String {
    name.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_told_from_questions() {
        for q in ["APIRouter", "Router", "parse_config", "Rack::Builder", "fmt::arg", "pkg.Func", "Rack::Builder#call"]
        {
            assert_eq!(Intent::of(q).shape, Shape::Symbol, "{q}");
        }
        for q in ["session", "how does dependency injection work", "CORS header handling", "a::", ""] {
            assert_eq!(Intent::of(q).shape, Shape::Question, "{q}");
        }
    }

    #[test]
    fn a_doc_comment_sentence_is_a_description() {
        for q in [
            "Returns the number of items",
            "Parse a header into its parts",
            "Applies the style to a span",
            "Copies the buffer",
            "reset resets the scalar value range",
            "The default timeout of a request",
            "Identifies an input as being a stream",
            "Enable or disable the alternate screen",
            "Converts, and assigns, the comma-separated argument",
            "Called when the parser leaves the element",
            "Do not display the argument in the help message",
            "Begin capturing console output",
        ] {
            assert_eq!(Intent::of(q).shape, Shape::Description, "{q}");
        }
        for q in [
            "delay and withTimeout suspending time functions",
            "update and delete statement builders",
            "static file serving middleware",
            "how does parsing work",
            "Serialize",
        ] {
            assert_ne!(Intent::of(q).shape, Shape::Description, "{q}");
        }
    }

    #[test]
    fn a_qualified_symbol_names_its_last_segment_too() {
        assert_eq!(Intent::of("Rack::Builder").names, ["Rack::Builder", "Builder"]);
        assert_eq!(Intent::of("APIRouter").names, ["APIRouter"]);
    }

    #[test]
    fn questions_keep_their_content_words_and_code_names() {
        let intent = Intent::of("How does FromRequestParts extract the FMT_STRING value?");
        assert_eq!(intent.names, ["FromRequestParts", "FMT_STRING"]);
        assert_eq!(Intent::of("how the Functor type class defines mapping").names, ["Functor"]);
        assert_eq!(Intent::of("Deferred and await for async results").names, ["Deferred"]);
        assert!(intent.keywords.contains(&"extract".to_string()));
        assert!(!intent.keywords.iter().any(|w| w == "how" || w == "does" || w == "the"));
        assert!(Intent::of("how does dependency injection work").names.is_empty());
        assert!(Intent::of("How do I roll back a release").task);
        assert!(!Intent::of("how does routing work").task);
    }

    /// "How does X work" asks for the files that make X up; a task, a topic or a doc comment's
    /// sentence does not.
    #[test]
    fn how_a_part_works_is_an_overview_question() {
        for q in [
            "how does dependency injection work",
            "How are routes registered and resolved",
            "how the engine abstraction separates the client API",
        ] {
            assert!(Intent::of(q).overview, "{q}");
        }
        for q in [
            "How do I roll back a release",
            "how to add a middleware",
            "HTTP caching middleware",
            "Router",
            "Returns how many bytes were read",
        ] {
            assert!(!Intent::of(q).overview, "{q}");
        }
    }

    #[test]
    fn words_match_their_inflections_not_their_neighbours() {
        for (a, b) in [
            ("dependency", "dependencies"),
            ("cache", "caching"),
            ("validate", "validation"),
            ("route", "router"),
            ("cookie", "cookies"),
            ("quantization", "quantize"),
            ("format", "formatter"),
            ("process", "processor"),
            ("retry", "retries"),
        ] {
            assert!(same_word(a, b), "{a} {b}");
        }
        for (a, b) in [("content", "context"), ("test", "attest"), ("form", "format"), ("map", "mapping")] {
            assert!(!same_word(a, b), "{a} {b}");
        }
    }
}
