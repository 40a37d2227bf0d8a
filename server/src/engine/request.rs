//! A search as the doors receive it — CLI flags, the LSP command `raggrep.search`'s arguments,
//! MCP's `search` tool — checked and turned into the engine's [`Query`] by one function, so the
//! three cannot drift: the same names, the same limits, the same one-line errors.

use crate::lang::Language;
use crate::search::{Mode, Query, SearchError, rerank_applies};

/// A search request before it is checked. `k`'s bounds are each door's (a CLI user and a
/// model are allowed different amounts); paths are the door's to confine before they get here.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub text: String,
    pub k: usize,
    /// The ranking; a door that receives its name reads it with [`mode`].
    pub mode: Mode,
    /// A language's name or alias (`rust`, `ts`, `c++` …); `None`: every language.
    pub lang: Option<String>,
    /// A glob over root-relative paths.
    pub path: Option<String>,
    pub min_score: Option<f64>,
    pub exact: bool,
    pub rerank: bool,
}

/// Why a request cannot run, in one line a person or a model can act on.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("query is empty: say what to look for")]
    Empty,
    #[error("unknown mode {0:?}: use hybrid, dense or lexical")]
    Mode(String),
    #[error("unknown language {0:?}: use {names}", names = language_names())]
    Language(String),
    #[error("min_score {0} is not a finite number")]
    MinScore(f64),
    #[error(transparent)]
    Rerank(#[from] SearchError),
}

impl SearchRequest {
    /// A request for `text` with every option at its default.
    pub fn new(text: impl Into<String>, k: usize) -> SearchRequest {
        SearchRequest {
            text: text.into(),
            k,
            mode: Mode::Hybrid,
            lang: None,
            path: None,
            min_score: None,
            exact: false,
            rerank: false,
        }
    }

    /// The engine's query, or why there is none. The text is trimmed; an empty one is refused
    /// (a CLI batch reads its texts later: it checks a template with [`SearchRequest::template`]).
    pub fn query(self) -> Result<Query, RequestError> {
        if self.text.trim().is_empty() {
            return Err(RequestError::Empty);
        }
        let text = self.text.trim().to_string();
        Ok(Query { text, ..self.template()? })
    }

    /// Every option checked, without a text: the template of a batch of queries.
    pub fn template(self) -> Result<Query, RequestError> {
        let language = match self.lang.as_deref() {
            None => None,
            Some(name) => Some(Language::from_name(name).ok_or_else(|| RequestError::Language(name.to_string()))?),
        };
        let min_score = match self.min_score {
            Some(score) if !score.is_finite() => return Err(RequestError::MinScore(score)),
            // Scores are f32; a bound past its range becomes ±infinity and keeps (or drops) every hit.
            Some(score) => Some(score as f32),
            None => None,
        };
        let query = Query {
            k: self.k,
            mode: self.mode,
            path_glob: self.path,
            language,
            min_score,
            exact: self.exact,
            rerank: self.rerank,
            ..Query::new("")
        };
        if query.rerank {
            rerank_applies(&query)?;
        }
        Ok(query)
    }
}

/// A mode by its name (`hybrid`, `dense`, `lexical`).
pub fn mode(name: &str) -> Result<Mode, RequestError> {
    Mode::parse(name).ok_or_else(|| RequestError::Mode(name.to_string()))
}

/// The language names a filter takes, as a list a person reads ("rust, python, … or text").
fn language_names() -> String {
    let names: Vec<&str> = Language::ALL.iter().map(|l| l.name()).collect();
    match names.split_last() {
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(request: SearchRequest) -> String {
        request.query().err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn every_option_is_checked_once_with_one_wording() {
        let request = |edit: fn(&mut SearchRequest)| {
            let mut request = SearchRequest::new("validate token", 10);
            edit(&mut request);
            request
        };
        assert_eq!(refused(request(|r| r.text = "  ".into())), "query is empty: say what to look for");
        assert!(
            mode("fuzzy").map_err(|e| e.to_string()).unwrap_err().starts_with("unknown mode \"fuzzy\": use hybrid")
        );
        let language = refused(request(|r| r.lang = Some("cobol".into())));
        assert!(language.starts_with("unknown language \"cobol\": use rust, python,"), "{language}");
        assert!(language.ends_with(" or julia"), "every language is named: {language}");
        assert!(refused(request(|r| r.min_score = Some(f64::NAN))).contains("not a finite number"));
        assert!(!refused(request(|r| (r.mode, r.rerank) = (Mode::Lexical, true))).is_empty());
    }

    #[test]
    fn a_checked_request_is_the_query_it_names() {
        let mut request = SearchRequest::new("  where is the cache  ", 7);
        request.mode = Mode::Lexical;
        request.lang = Some("ts".into());
        request.path = Some("src/**".into());
        request.min_score = Some(0.5);
        let query = request.query().map_err(|e| e.to_string());
        let expected = Query {
            k: 7,
            mode: Mode::Lexical,
            language: Some(Language::TypeScript),
            path_glob: Some("src/**".into()),
            min_score: Some(0.5),
            ..Query::new("where is the cache")
        };
        assert_eq!(query, Ok(expected));
    }
}
