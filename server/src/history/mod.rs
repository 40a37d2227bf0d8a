//! The project's history, searchable (issue 57): per commit its message, author date, changed
//! paths and the definitions its hunks touched, read from the repository's own git (the `git`
//! binary; nothing leaves the machine), kept beside the index in `.raggrep/history/` and brought
//! up to date with only the commits that are new. Questions are answered by the commit
//! messages' words (BM25 over code-aware tokens, paths and definitions included) fused with
//! their meaning (all-MiniLM-L6-v2 vectors of each commit's text), or, without a question, by
//! date for a path or a definition.

pub mod git;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use git::{Commit, FileChange, Status};

use crate::embed::Embedder;
use crate::index::{IndexLocation, code_terms, create_private_dir, write_atomic};
use crate::search::sort_best_first;

/// Why the history cannot be read or searched, in one line.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot run git ({0}): install git to search the history")]
    NoGit(std::io::Error),
    #[error("git: {0}")]
    Git(String),
    #[error("{0} is not in a git repository: there is no history to search")]
    NotARepository(String),
    #[error("writing the history index: {0}")]
    Write(std::io::Error),
    #[error("embedding commit messages: {0}")]
    Embed(#[from] crate::embed::EmbedError),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

/// The stored format; another one is rebuilt.
const FORMAT: u32 = 1;
const META_FILE: &str = "history.json";
const VECTORS_FILE: &str = "history.f32";
/// Commits embedded per model run.
const BATCH: usize = 32;
/// Characters of a commit's text the model reads (its first 256 tokens are what counts).
const EMBED_CHARS: usize = 1500;

#[derive(Serialize, Deserialize)]
struct Stored {
    format: u32,
    head: Option<String>,
    shallow: bool,
    /// The model that embedded the vectors file (none: not embedded).
    model: Option<String>,
    dim: usize,
    commits: Vec<Commit>,
}

/// A repository's history as indexed.
pub struct History {
    pub head: Option<String>,
    /// A shallow clone: commits before its boundary are missing.
    pub shallow: bool,
    /// Newest first.
    pub commits: Vec<Commit>,
    model: Option<String>,
    dim: usize,
    /// `commits.len() × dim`, in commit order, or empty.
    vectors: Vec<f32>,
    words: Bm25,
    /// The paths and definitions of each commit, apart: they weigh less than the message (a
    /// commit of many files is not a longer message).
    places: Bm25,
}

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Updated {
    /// Commits read from git this time.
    pub new: usize,
    pub total: usize,
    pub embedded: usize,
    /// Why everything was read again (another format, a rewritten history, another model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuilt: Option<String>,
    pub seconds: f64,
}

/// A question to the history.
#[derive(Debug, Clone, Default)]
pub struct HistoryQuery {
    /// In words; `None` or blank: newest first.
    pub text: Option<String>,
    /// Only commits that changed a path under this prefix (or matching this glob).
    pub path: Option<String>,
    /// Only commits whose hunks touched this definition (`resolve_redirects`, `Session.send`).
    pub symbol: Option<String>,
    pub k: usize,
}

/// A commit that answers, with its score (`None`: listed by date).
#[derive(Debug, Clone)]
pub struct HistoryHit<'a> {
    pub commit: &'a Commit,
    pub score: Option<f32>,
}

/// How far the history index is, while an update runs.
pub enum HistoryProgress {
    Reading,
    Read { commits: usize },
    Embedding { done: usize, total: usize },
}

impl History {
    /// Where `location`'s history index lives.
    pub fn dir(location: &IndexLocation) -> PathBuf {
        location.dir.join("history")
    }

    /// Brings the history index of `location` up to date with the repository and returns it:
    /// only commits that are new since the last update are read (all of them when the history
    /// was rewritten, the clone's depth, the format or the model changed), and embedded with
    /// `embedder` when there is one. Written atomically: a crash leaves the previous index.
    /// Without a model, a history that has vectors keeps them on disk untouched: the new commits
    /// answer by their words meanwhile, and the next update with the model embeds them.
    pub fn update(
        location: &IndexLocation,
        embedder: Option<&dyn Embedder>,
        progress: &mut dyn FnMut(HistoryProgress),
    ) -> Result<(History, Updated), HistoryError> {
        let started = Instant::now();
        let root = &location.root;
        let Repository { shallow, inside } = repository(root)?;
        let head = rev_parse(root, &["--verify", "-q", "HEAD^{commit}"])?;
        // The index directory first, with the `.gitignore` that keeps it out of commits.
        crate::index::prepare_dir(location)?;
        let dir = History::dir(location);
        create_private_dir(&dir).map_err(HistoryError::Write)?;
        let attributes = dir.join("gitattributes");
        if std::fs::read_to_string(&attributes).ok().as_deref() != Some(git::ATTRIBUTES) {
            write_atomic(&attributes, git::ATTRIBUTES.as_bytes()).map_err(HistoryError::Write)?;
        }
        let model = embedder.map(|e| e.info().id.clone());
        let (stored, mut rebuilt) = load(&dir);
        // What of the stored history is kept: all of it as it is, the commits before the new
        // ones, or nothing (and why).
        let kept = match stored {
            Some((old, _)) if old.model.is_some() && model.is_some() && old.model != model => {
                rebuilt = Some(format!(
                    "its vectors are of {} and this embeds with {}",
                    old.model.as_deref().unwrap_or_default(),
                    model.as_deref().unwrap_or_default()
                ));
                None
            }
            Some((old, _)) if old.model.is_none() && model.is_some() => {
                rebuilt = Some("its commits had no vectors yet".into());
                None
            }
            Some((old, _)) if old.shallow != shallow => {
                rebuilt = Some("the clone's depth changed".into());
                None
            }
            Some((old, vectors)) if old.head == head => {
                let updated = Updated {
                    total: old.commits.len(),
                    seconds: started.elapsed().as_secs_f64(),
                    ..Updated::default()
                };
                return Ok((History::from_stored(old, vectors), updated));
            }
            Some((old, vectors))
                if old.head.as_deref().zip(head.as_deref()).is_some_and(|(old, new)| is_ancestor(root, old, new)) =>
            {
                Some((old, vectors))
            }
            Some(_) => {
                rebuilt = Some("the history was rewritten (its last commit is no longer an ancestor of HEAD)".into());
                None
            }
            None => None,
        };
        let Some(head_id) = head.clone() else {
            // An empty repository: nothing to read, and nothing kept from before.
            let stored = Stored { format: FORMAT, head: None, shallow, model, dim: 0, commits: Vec::new() };
            save(&dir, &stored, &[])?;
            let updated = Updated { rebuilt, seconds: started.elapsed().as_secs_f64(), ..Updated::default() };
            return Ok((History::from_stored(stored, Vec::new()), updated));
        };
        progress(HistoryProgress::Reading);
        let range = match &kept {
            Some((old, _)) => format!("{}..{head_id}", old.head.as_deref().unwrap_or_default()),
            None => head_id,
        };
        let mut commits = git::log(root, &range, inside, &attributes)?;
        let new = commits.len();
        progress(HistoryProgress::Read { commits: new });
        let mut vectors = Vec::new();
        if let Some(embedder) = embedder {
            let texts: Vec<String> = commits.iter().map(embedding_text).collect();
            for (n, batch) in texts.chunks(BATCH).enumerate() {
                progress(HistoryProgress::Embedding { done: n * BATCH, total: texts.len() });
                let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
                for vector in embedder.embed_documents(&refs)? {
                    vectors.extend_from_slice(vector.as_slice());
                }
            }
        }
        let embedded = if embedder.is_some() { new } else { 0 };
        let dim = embedder.map_or(0, |e| e.info().dim);
        let Some((old, old_vectors)) = kept else {
            let stored = Stored { format: FORMAT, head, shallow, model, dim, commits };
            save(&dir, &stored, &vectors)?;
            let total = stored.commits.len();
            let updated = Updated { new, total, embedded, rebuilt, seconds: started.elapsed().as_secs_f64() };
            return Ok((History::from_stored(stored, vectors), updated));
        };
        commits.extend(old.commits);
        let total = commits.len();
        let updated = Updated { new, total, embedded, rebuilt, seconds: started.elapsed().as_secs_f64() };
        if embedder.is_none() && old.model.is_some() {
            // No model now: the new commits get no vector (they answer by their words), and the
            // stored history stays as it is, vectors and all, for the next update to embed them.
            let mut vectors = vec![0.0; new * old.dim];
            vectors.extend(old_vectors);
            let stored = Stored { head, commits, ..old };
            return Ok((History::from_stored(stored, vectors), updated));
        }
        vectors.extend(old_vectors);
        let stored = Stored { format: FORMAT, head, shallow, model, dim, commits };
        save(&dir, &stored, &vectors)?;
        Ok((History::from_stored(stored, vectors), updated))
    }

    fn from_stored(stored: Stored, vectors: Vec<f32>) -> History {
        let words = Bm25::new(stored.commits.iter().map(|c| code_terms(&format!("{}\n{}", c.subject, c.body))));
        let places = Bm25::new(stored.commits.iter().map(|c| code_terms(&places_text(c))));
        History {
            head: stored.head,
            shallow: stored.shallow,
            commits: stored.commits,
            model: stored.model,
            dim: stored.dim,
            vectors,
            words,
            places,
        }
    }

    /// Whether the commits have vectors of `embedder`'s model.
    pub fn embedded_by(&self, embedder: &dyn Embedder) -> bool {
        self.model.as_deref() == Some(embedder.info().id.as_str()) && !self.vectors.is_empty()
    }

    /// The commits that answer `query`: by words and meaning for a question (meaning only when
    /// the commits were embedded by `embedder`'s model), else newest first; filtered by path
    /// and definition either way.
    pub fn search(
        &self,
        query: &HistoryQuery,
        embedder: Option<&dyn Embedder>,
    ) -> Result<Vec<HistoryHit<'_>>, HistoryError> {
        let path = query.path.as_deref().map(PathFilter::new);
        let symbol = query.symbol.as_deref().map(last_name);
        let keep = |commit: &Commit| {
            path.as_ref().is_none_or(|path| commit.files.iter().any(|file| path.matches(file)))
                && symbol.as_ref().is_none_or(|symbol| commit.symbols.iter().any(|s| last_name(s) == *symbol))
        };
        let text = query.text.as_deref().map(str::trim).filter(|t| !t.is_empty());
        let Some(text) = text else {
            let hits = self.commits.iter().filter(|c| keep(c)).take(query.k);
            return Ok(hits.map(|commit| HistoryHit { commit, score: None }).collect());
        };
        let terms = code_terms(text);
        let mut lexical: HashMap<usize, f32> = self.words.search(&terms).into_iter().collect();
        for (i, score) in self.places.search(&terms) {
            *lexical.entry(i).or_default() += PLACES_WEIGHT * score;
        }
        let lexical: Vec<(usize, f32)> = lexical.into_iter().collect();
        let dense = match embedder.filter(|e| self.embedded_by(*e)) {
            Some(embedder) => {
                // Symmetric: a question and a commit message are both prose, read by one network.
                let vector = embedder.embed_documents(&[text])?.pop();
                vector.map(|v| self.cosines(v.as_slice())).unwrap_or_default()
            }
            None => Vec::new(),
        };
        let mut scored = fuse(&lexical, &dense);
        scored.retain(|&(i, _)| self.commits.get(i).is_some_and(keep));
        // Best first; equal scores newest first (commits are stored newest first).
        sort_best_first(&mut scored);
        Ok(scored
            .into_iter()
            .take(query.k)
            .filter_map(|(i, score)| Some(HistoryHit { commit: self.commits.get(i)?, score: Some(score) }))
            .collect())
    }

    fn cosines(&self, query: &[f32]) -> Vec<f32> {
        if self.dim == 0 || query.len() != self.dim {
            return Vec::new();
        }
        self.vectors.chunks_exact(self.dim).map(|v| v.iter().zip(query).map(|(a, b)| a * b).sum()).collect()
    }
}

/// Weight of the words against the meaning in a question's score (hand-set on a tune
/// repository's history, see BENCHMARKS.md).
const WORDS_WEIGHT: f32 = 0.7;
/// Weight of the paths' and definitions' BM25 beside the message's.
const PLACES_WEIGHT: f32 = 0.3;
/// How many of each ranking's best take part in the fusion.
const DEPTH: usize = 200;

/// BM25 and cosine fused: each scaled to 0..1 over its own best [`DEPTH`], then weighed.
fn fuse(lexical: &[(usize, f32)], dense: &[f32]) -> Vec<(usize, f32)> {
    let mut out: HashMap<usize, f32> = HashMap::new();
    let words: Vec<(usize, f32)> = top(lexical.iter().copied(), DEPTH);
    let meaning: Vec<(usize, f32)> = top(dense.iter().copied().enumerate(), DEPTH);
    let weight = if meaning.is_empty() { 1.0 } else { WORDS_WEIGHT };
    for (list, w) in [(&words, weight), (&meaning, 1.0 - weight)] {
        let (Some(max), Some(min)) = (list.first().map(|x| x.1), list.last().map(|x| x.1)) else { continue };
        let span = max - min;
        for &(i, s) in list.iter() {
            // One candidate, or all equal: each is as good as the best.
            let scaled = if span > 1e-6 { (s - min) / span } else { 1.0 };
            *out.entry(i).or_default() += w * scaled;
        }
    }
    out.into_iter().collect()
}

fn top(items: impl Iterator<Item = (usize, f32)>, n: usize) -> Vec<(usize, f32)> {
    let mut all: Vec<(usize, f32)> = items.filter(|(_, s)| s.is_finite()).collect();
    sort_best_first(&mut all);
    all.truncate(n);
    all
}

/// The words of the paths a commit changed and the definitions it touched.
fn places_text(commit: &Commit) -> String {
    let mut text = String::new();
    for file in &commit.files {
        text.push_str(&file.path);
        text.push('\n');
    }
    text.push_str(&commit.symbols.join(" "));
    text
}

/// What the model reads of a commit: the message first (the pull request's title for a merge),
/// then paths and definitions, cut to what it reads.
fn embedding_text(commit: &Commit) -> String {
    let mut text = format!("{}\n{}", commit.subject, commit.body);
    let paths: Vec<&str> = commit.files.iter().take(12).map(|f| f.path.as_str()).collect();
    if !paths.is_empty() {
        text.push_str("\nfiles: ");
        text.push_str(&paths.join(", "));
    }
    if !commit.symbols.is_empty() {
        text.push_str("\nchanged: ");
        text.push_str(&commit.symbols.iter().take(12).cloned().collect::<Vec<_>>().join(", "));
    }
    text.chars().take(EMBED_CHARS).collect()
}

/// A `--path`: a directory prefix, a file, or a glob, matched as one once per question.
pub struct PathFilter {
    path: String,
    glob: Option<globset::GlobMatcher>,
}

impl PathFilter {
    pub fn new(path: &str) -> PathFilter {
        let path = path.trim_start_matches("./").trim_end_matches('/').to_string();
        let glob = globset::Glob::new(&path).ok().map(|g| g.compile_matcher());
        PathFilter { path, glob }
    }

    /// `file` is under the path, before or after a rename.
    pub fn matches(&self, file: &FileChange) -> bool {
        std::iter::once(file.path.as_str()).chain(file.from.as_deref()).any(|p| {
            self.path.is_empty()
                || p == self.path
                || p.strip_prefix(self.path.as_str()).is_some_and(|rest| rest.starts_with('/'))
                || self.glob.as_ref().is_some_and(|g| g.is_match(p))
        })
    }
}

/// A definition's last name (`Session.send`, `Rack::Builder#call` → `send`, `call`): how
/// `--symbol` compares with what a commit touched.
fn last_name(name: &str) -> String {
    crate::search::intent::normal_qualified(name).rsplit('.').next().unwrap_or_default().to_string()
}

/// What git says of the repository `root` is in.
struct Repository {
    /// A shallow clone.
    shallow: bool,
    /// `root` is a directory inside its repository's top level.
    inside: bool,
}

/// One `git rev-parse` for both facts; it fails outside a repository.
fn repository(root: &Path) -> Result<Repository, HistoryError> {
    let out = git::git(root)
        .args(["rev-parse", "--is-shallow-repository", "--show-prefix"])
        .output()
        .map_err(HistoryError::NoGit)?;
    if !out.status.success() {
        return Err(HistoryError::NotARepository(root.display().to_string()));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let shallow = lines.next().map(str::trim) == Some("true");
    let inside = lines.next().is_some_and(|prefix| !prefix.trim().is_empty());
    Ok(Repository { shallow, inside })
}

/// `git rev-parse ARGS`: its one line, or `None` when it prints nothing (an unborn HEAD).
fn rev_parse(root: &Path, args: &[&str]) -> Result<Option<String>, HistoryError> {
    let out = git::git(root).arg("rev-parse").args(args).output().map_err(HistoryError::NoGit)?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((!text.is_empty()).then_some(text))
}

fn is_ancestor(root: &Path, old: &str, new: &str) -> bool {
    git::git(root).args(["merge-base", "--is-ancestor", old, new]).status().is_ok_and(|s| s.success())
}

/// The stored history, or why there is none to build on.
fn load(dir: &Path) -> (Option<(Stored, Vec<f32>)>, Option<String>) {
    let Ok(bytes) = std::fs::read(dir.join(META_FILE)) else { return (None, None) };
    let stored: Stored = match serde_json::from_slice(&bytes) {
        Ok(stored) => stored,
        Err(e) => return (None, Some(format!("its history index could not be read ({e})"))),
    };
    if stored.format != FORMAT {
        return (None, Some(format!("its history index is in format {} (this reads {FORMAT})", stored.format)));
    }
    let vectors: Vec<f32> = std::fs::read(dir.join(VECTORS_FILE))
        .map(|b| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        .unwrap_or_default();
    if vectors.len() != stored.commits.len() * stored.dim {
        return (None, Some("its history vectors do not match its commits".into()));
    }
    (Some((stored, vectors)), None)
}

/// Writes the vectors, then the commits that name them (a crash in between leaves a count that
/// does not match, read as damaged and rebuilt).
fn save(dir: &Path, stored: &Stored, vectors: &[f32]) -> Result<(), HistoryError> {
    create_private_dir(dir).map_err(HistoryError::Write)?;
    let bytes: Vec<u8> = vectors.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_atomic(&dir.join(VECTORS_FILE), &bytes).map_err(HistoryError::Write)?;
    let json = serde_json::to_vec(stored).map_err(|e| HistoryError::Write(std::io::Error::other(e)))?;
    write_atomic(&dir.join(META_FILE), &json).map_err(HistoryError::Write)
}

/// Okapi BM25 over the commits' terms (k1 1.2, b 0.75), in memory: a history of 10,000 commits
/// is read in milliseconds.
struct Bm25 {
    postings: HashMap<String, Vec<(usize, u32)>>,
    lengths: Vec<f32>,
    average: f32,
}

impl Bm25 {
    fn new(docs: impl Iterator<Item = Vec<String>>) -> Bm25 {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        for (doc, terms) in docs.enumerate() {
            lengths.push(terms.len() as f32);
            let mut counts: HashMap<String, u32> = HashMap::new();
            for term in terms {
                *counts.entry(term).or_default() += 1;
            }
            for (term, count) in counts {
                postings.entry(term).or_default().push((doc, count));
            }
        }
        let average = if lengths.is_empty() { 1.0 } else { lengths.iter().sum::<f32>() / lengths.len() as f32 };
        Bm25 { postings, lengths, average: average.max(1.0) }
    }

    fn search(&self, terms: &[String]) -> Vec<(usize, f32)> {
        let (k1, b) = (1.2_f32, 0.75_f32);
        let n = self.lengths.len() as f32;
        let mut scores: HashMap<usize, f32> = HashMap::new();
        let mut seen = std::collections::HashSet::new();
        for term in terms.iter().filter(|t| seen.insert(t.as_str())) {
            let Some(list) = self.postings.get(term) else { continue };
            let df = list.len() as f32;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in list {
                let tf = tf as f32;
                let length = self.lengths.get(doc).copied().unwrap_or(self.average);
                let norm = tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length / self.average));
                *scores.entry(doc).or_default() += idf * norm;
            }
        }
        scores.into_iter().collect()
    }
}

/// `YYYY-MM-DD` of seconds since the epoch (UTC), for showing a commit's date.
pub fn date(seconds: i64) -> String {
    // Days to a civil date (Howard Hinnant's algorithm).
    let days = seconds.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(id: &str, subject: &str, files: &[&str], symbols: &[&str]) -> Commit {
        Commit {
            id: id.into(),
            parents: vec!["p".into()],
            time: 0,
            author: "a".into(),
            subject: subject.into(),
            body: String::new(),
            files: files
                .iter()
                .map(|p| FileChange { path: (*p).into(), status: Status::Modified, from: None })
                .collect(),
            symbols: symbols.iter().map(|s| (*s).to_string()).collect(),
        }
    }

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(1_700_000_000), "2023-11-14");
        assert_eq!(date(951_782_400), "2000-02-29");
    }

    #[test]
    fn words_paths_and_definitions_answer_without_a_model() {
        let stored = Stored {
            format: FORMAT,
            head: Some("c".into()),
            shallow: false,
            model: None,
            dim: 0,
            commits: vec![
                commit("c", "Bump version", &["setup.py"], &[]),
                commit("b", "Keep the proxy header on redirects", &["src/sessions.py"], &["rebuild_proxies"]),
                commit("a", "Add retries", &["src/adapters.py"], &["send"]),
            ],
        };
        let history = History::from_stored(stored, Vec::new());
        let ask = |text: Option<&str>, path: Option<&str>, symbol: Option<&str>| -> Vec<String> {
            let query = HistoryQuery {
                text: text.map(str::to_string),
                path: path.map(str::to_string),
                symbol: symbol.map(str::to_string),
                k: 5,
            };
            history.search(&query, None).map(|h| h.iter().map(|h| h.commit.id.clone()).collect()).unwrap_or_default()
        };
        assert_eq!(ask(Some("proxy redirect"), None, None)[0], "b");
        assert_eq!(ask(Some("sessions"), None, None)[0], "b", "a path's words count");
        assert_eq!(ask(None, Some("src/"), None), ["b", "a"], "newest first under a directory");
        assert_eq!(ask(None, Some("src/*.py"), None), ["b", "a"], "globs too");
        assert_eq!(ask(None, None, Some("Adapter.send")), ["a"]);
        assert!(ask(Some("proxy"), Some("setup.py"), None).is_empty());
    }
}
