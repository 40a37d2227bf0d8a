//! Evidence the learned fusion does not weigh, added to its linear scores after it ranked (and
//! to BM25's in the ranking without vectors): which
//! file a candidate is in (its name carries the words of a question about a component), whether
//! it defines the symbol a lookup names, whether it is prose; and a top k that does not spend
//! every place on one file.
//!
//! The fusion was fitted on doc-comment queries, each answered by one function. People and
//! agents also ask for a component ("HTTP caching"), an architecture ("how are plugins
//! registered") or a symbol by name ("APIRouter"), and there the file and the definition are
//! the answer.

use std::collections::{HashMap, HashSet};

use super::intent::{Intent, Shape, last_segment, normal_qualified, same_word, squashed};
use super::sort_best_first;
use crate::chunk::ChunkKind;
use crate::embed::Vector;
use crate::index::{ChunkRef, Snapshot, code_tokens};
use crate::lang::Language;

/// How much each kind of evidence adds to a candidate's linear score (the fusion's scale: the
/// best candidates of a query are a few units apart).
#[derive(Debug, Clone, Copy)]
pub struct Weights {
    /// Per unit of the query's words found in the candidate's file name (0–1).
    pub path: f32,
    /// The candidate defines the symbol a lookup names.
    pub definition: f32,
    /// ... in a file named after it (added to `definition`).
    pub definition_file: f32,
    /// A question's code name (`FromRequestParts`) defined here: a share of `definition`.
    pub embedded_share: f32,
    /// A re-export of the named symbol: a share of `definition` (all of it when no chunk
    /// defines the name).
    pub reexport_share: f32,
    /// Prose (Markdown): subtracted when the question does not ask for documentation, added
    /// when it does.
    pub prose: f32,
    /// Added to each file's best chunk, times the file's share of the candidates' mass.
    pub coherence: f32,
    /// The smallest spread counted as the fusion's first page (few candidates: a tiny index).
    pub min_unit: f32,
    /// Hits of a file shown before the penalty starts.
    pub free_per_file: f32,
    /// Subtracted from a hit per hit of its file already shown.
    pub same_file: f32,
    /// Files whose name holds at least this share of a question's words are candidates even
    /// when neither ranking found them.
    pub inject_path: f32,
    /// Added to the best chunk of the file whose gist (see [`add_gist`]) is nearest a question.
    pub gist: f32,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            path: 1.5,
            definition: 3.0,
            definition_file: 1.0,
            embedded_share: 1.0,
            reexport_share: 0.5,
            prose: 2.0,
            coherence: 2.0,
            min_unit: 2.0,
            same_file: 0.5,
            inject_path: 0.5,
            free_per_file: 2.0,
            gist: 2.0,
        }
    }
}

/// How far a file's name answers the query's words: per file, the idf-weighted share of the
/// keywords found among its name's words (the file stem and its directory).
pub struct FileNames {
    scores: HashMap<String, f32>,
}

/// The words a file's name is made of: its stem (extension dropped) and its directory's name,
/// split like code (`HttpCookies.kt` in `cookies/` → httpcookies, http, cookies, cookies).
fn name_words(path: &str) -> Vec<String> {
    let mut parts = path.rsplit('/');
    let file = parts.next().unwrap_or(path);
    let stem = file.split_once('.').map_or(file, |(stem, _)| stem);
    let dir = parts.next().unwrap_or("");
    let mut words: Vec<String> =
        code_tokens(stem).into_iter().chain(code_tokens(dir)).map(|(_, _, t)| t).filter(|t| t.len() > 1).collect();
    words.sort();
    words.dedup();
    words
}

impl FileNames {
    pub fn of(snapshot: &Snapshot, intent: &Intent) -> FileNames {
        if intent.keywords.is_empty() {
            return FileNames { scores: HashMap::new() };
        }
        FileNames::from_paths(snapshot.files().into_iter().map(|(path, _, _)| path), intent)
    }

    /// Over the index's file paths. A keyword's weight is its rarity among the file names
    /// (`ln(1 + files / (files whose name has it + 1))`): `client` in every path of a client
    /// library says nothing, `cookies` in one says much.
    fn from_paths(paths: impl Iterator<Item = String>, intent: &Intent) -> FileNames {
        let mut scores = HashMap::new();
        let words: Vec<(String, Vec<String>)> = paths
            .map(|path| {
                let words = name_words(&path);
                (path, words)
            })
            .collect();
        let n = words.len() as f32;
        // File names share most of their words (`client`, `internal`, `utils`): each distinct
        // word is compared with the keywords once.
        let mut known: HashMap<&str, Vec<bool>> = HashMap::new();
        for (_, names) in &words {
            for w in names {
                known.entry(w.as_str()).or_insert_with(|| intent.keywords.iter().map(|k| same_word(k, w)).collect());
            }
        }
        let matched: Vec<Vec<bool>> = words
            .iter()
            .map(|(_, names)| {
                (0..intent.keywords.len())
                    .map(|i| names.iter().any(|w| known.get(w.as_str()).is_some_and(|m| m[i])))
                    .collect()
            })
            .collect();
        let weight: Vec<f32> = (0..intent.keywords.len())
            .map(|i| {
                let df = matched.iter().filter(|m| m[i]).count() as f32;
                (1.0 + n / (df + 1.0)).ln()
            })
            .collect();
        let total: f32 = weight.iter().sum();
        if total <= 0.0 {
            return FileNames { scores };
        }
        for ((path, _), hits) in words.into_iter().zip(matched) {
            let share: f32 = hits.iter().zip(&weight).filter(|(hit, _)| **hit).map(|(_, w)| w).sum::<f32>() / total;
            if share > 0.0 {
                scores.insert(path, share);
            }
        }
        FileNames { scores }
    }

    pub fn score(&self, path: &str) -> f32 {
        self.scores.get(path).copied().unwrap_or(0.0)
    }

    /// Files whose name holds at least `min` of the query's words, best first.
    fn best(&self, min: f32, limit: usize) -> Vec<(&str, f32)> {
        let mut files: Vec<(&str, f32)> =
            self.scores.iter().filter(|(_, s)| **s >= min).map(|(p, s)| (p.as_str(), *s)).collect();
        files.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        files.truncate(limit);
        files
    }
}

/// Keywords that open a definition in the languages raggrep may read without a grammar.
const DEFINITION_KEYWORDS: &[&str] = &[
    "class",
    "module",
    "def",
    "defmodule",
    "defprotocol",
    "interface",
    "struct",
    "enum",
    "trait",
    "type",
    "typealias",
    "func",
    "function",
    "fn",
    "fun",
    "object",
    "protocol",
    "record",
    "typedef",
    "namespace",
    "extension",
    "actor",
    "union",
    "macro_rules!",
    "#define",
    "defmacro",
    "defstruct",
    "sub",
    "proc",
];

/// Words that may stand before a definition keyword.
const MODIFIERS: &[&str] = &[
    "public",
    "private",
    "protected",
    "internal",
    "open",
    "abstract",
    "final",
    "static",
    "export",
    "default",
    "async",
    "sealed",
    "data",
    "inline",
    "pub",
    "pub(crate)",
    "pub(super)",
    "override",
    "partial",
    "readonly",
    "case",
    "implicit",
    "unsafe",
    "extern",
    "const",
    "fileprivate",
    "indirect",
    "value",
    "annotation",
    "enum",
    "local",
    "declare",
];

/// `line` defines `name`: `[modifiers] keyword [Qualifier::]name` followed by something that is
/// not part of a name.
fn line_defines(line: &str, name: &str) -> bool {
    let mut words = line.split_whitespace().peekable();
    while let Some(&w) = words.peek() {
        if MODIFIERS.contains(&w) && !DEFINITION_KEYWORDS.contains(&w) {
            words.next();
        } else {
            break;
        }
    }
    let Some(keyword) = words.next() else { return false };
    if !DEFINITION_KEYWORDS.contains(&keyword) {
        return false;
    }
    // `enum class Foo`, `case class Foo`, `data class Foo`.
    let mut target = words.next();
    if let Some(t) = target
        && DEFINITION_KEYWORDS.contains(&t)
    {
        target = words.next();
    }
    let Some(target) = target else { return false };
    // Swift/Kotlin extension receivers and qualified definitions: `Rack::Builder`, `fun Foo.bar`.
    let target = target.trim_start_matches('*').trim_start_matches('&');
    [target, last_segment(target).unwrap_or(target)]
        .iter()
        .any(|t| t.strip_prefix(name).is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')))
}

/// `text` re-exports `name` under its own name (`pub use a::b::{Name, …};`,
/// `from .x import Name`, `export { Name } from`), in a statement that may span lines: where
/// the definition is outside the index (another crate or package), this is as close to it as
/// the index gets.
fn reexports(text: &str, name: &str) -> bool {
    const STARTS: [&str; 5] = ["pub use ", "pub(crate) use ", "export ", "from ", "module.exports"];
    let mut rest = text;
    while !rest.is_empty() {
        let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        let line = rest[..line_end].trim_start();
        if STARTS.iter().any(|p| line.starts_with(p)) {
            let start = rest.len() - rest.trim_start().len();
            // The statement: to its `;`, or to the end of its parenthesised/braced list, or to
            // the end of the line.
            let body = &rest[start..];
            let end = if line.contains('{') || line.contains('(') {
                body.find([';', '}', ')']).map_or(body.len(), |i| i + 1)
            } else {
                body.find('\n').map_or(body.len(), |i| i + 1)
            };
            let statement = &body[..end];
            let python_import = !statement.starts_with("from ") || statement.contains(" import ");
            if python_import && has_word(statement, name) {
                return true;
            }
        }
        rest = &rest[line_end..];
    }
    false
}

/// `name` occurs in `text` as a whole identifier.
fn has_word(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Reads files once per query.
#[derive(Default)]
struct Texts {
    files: HashMap<String, Option<String>>,
}

impl Texts {
    fn chunk_text<'s>(&'s mut self, snapshot: &Snapshot, chunk: &ChunkRef<'_>) -> Option<&'s str> {
        let text = self
            .files
            .entry(chunk.path.to_string())
            .or_insert_with(|| std::fs::read_to_string(crate::walk::resolve(&snapshot.location.root, chunk.path)).ok())
            .as_deref()?;
        text.get(chunk.start_byte..chunk.end_byte.min(text.len()))
    }
}

/// The same-file penalty of an overview question ([`Intent::overview`]), in units of the first
/// page's spread: enough that a file's second hit follows the first hit of any file the page
/// would show.
const OVERVIEW_SAME_FILE: f32 = 4.0;

/// Which ranking the evidence is added to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankedBy {
    /// The learned fusion of the words and the vectors.
    Fusion,
    /// BM25's alone: `--mode lexical`, and a first answer before the code has its vectors.
    Words,
}

/// How a chunk stands to the names a query gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Definition {
    None,
    /// Re-exports one of them (a definition elsewhere).
    Reexport,
    /// Defines one of them.
    Defines,
}

/// Whether `chunk` defines one of `names`: by the index's symbol (exact, or its qualified path)
/// or, where there is no grammar to name it, by a definition line in its text; else whether
/// a line of it re-exports one.
fn defines(snapshot: &Snapshot, texts: &mut Texts, chunk: &ChunkRef<'_>, names: &[String]) -> Definition {
    if !chunk.symbol.is_empty() {
        let path = chunk.symbol_path().map(|p| normal_qualified(&p));
        if names.iter().any(|n| chunk.symbol == n || path.as_deref() == Some(normal_qualified(n).as_str())) {
            return Definition::Defines;
        }
    }
    if !matches!(chunk.kind, ChunkKind::Code | ChunkKind::Text) || chunk.language == Language::Markdown {
        return Definition::None;
    }
    let Some(text) = texts.chunk_text(snapshot, chunk) else { return Definition::None };
    let short: Vec<&str> = names.iter().map(|n| last_segment(n).unwrap_or(n)).collect();
    if text.lines().any(|line| short.iter().any(|n| line_defines(line, n))) {
        Definition::Defines
    } else if short.iter().any(|n| reexports(text, n)) {
        Definition::Reexport
    } else {
        Definition::None
    }
}

/// A ranking's first page (best first): its tenth score (the last when shorter) and its spread,
/// the first score minus the tenth, at least `min_spread` — the unit the evidence is counted in.
pub fn first_page(ranked: &[(usize, f32)], min_spread: f32) -> (f32, f32) {
    let first = ranked.first().map_or(0.0, |x| x.1);
    let tenth = ranked.get(9).or(ranked.last()).map_or(0.0, |x| x.1);
    (tenth, (first - tenth).max(min_spread))
}

/// The evidence of one query, computed once.
pub struct Evidence<'q> {
    intent: &'q Intent,
    files: FileNames,
    weights: Weights,
    texts: Texts,
    /// The spread of the fusion's first page, in which the weights are counted.
    unit: f32,
    /// A symbol lookup whose name no chunk defines: its re-exports stand in for the definition.
    defined_elsewhere: bool,
    /// The chunks that define a symbol lookup's name, among those the query accepts (found by
    /// the first [`Evidence::extra_candidates`]).
    definitions: Option<Vec<usize>>,
}

impl<'q> Evidence<'q> {
    pub fn new(snapshot: &Snapshot, intent: &'q Intent) -> Evidence<'q> {
        Evidence {
            intent,
            files: FileNames::of(snapshot, intent),
            weights: Weights::default(),
            texts: Texts::default(),
            unit: 1.0,
            defined_elsewhere: false,
            definitions: None,
        }
    }

    /// The penalty per earlier hit of the same file, in the scale of that ranking (after
    /// [`adjust`]), and how many hits of a file come before it starts.
    pub fn same_file_penalty(&self, ranked_by: RankedBy) -> (f32, f32) {
        // A description asks for one function, which is often beside others of its file.
        if self.intent.shape == Shape::Description {
            return (0.0, self.weights.free_per_file);
        }
        // "How does X work" asks for the files that make X up: one place of each first (semble's
        // tune questions: architecture 0.734 -> 0.759; no doc-comment query starts with "how").
        // So does every question the words alone rank: a file's chunks share its vocabulary
        // (its class's name and fields recur in each method), so the file that matches fills
        // the page where the vectors would tell its chunks apart (semble's tune questions, words
        // alone: 0.805 -> 0.817; in the fused ranking the same costs the project's doc-comment
        // queries a point of chunk recall per hundredth gained).
        if self.intent.overview || (ranked_by == RankedBy::Words && self.intent.shape == Shape::Question) {
            return (OVERVIEW_SAME_FILE * self.unit, 1.0);
        }
        (self.weights.same_file * self.unit, self.weights.free_per_file)
    }

    /// Chunks neither ranking found that the evidence says must be considered: definitions of
    /// the symbol a lookup names, and for a question the best chunk of each file whose name
    /// answers it. `have` are the candidates already there.
    pub fn extra_candidates(
        &mut self,
        snapshot: &Snapshot,
        vector: Option<&Vector>,
        have: &HashSet<usize>,
        accept: &dyn Fn(&ChunkRef<'_>) -> bool,
    ) -> Vec<usize> {
        let mut extra = Vec::new();
        match self.intent.shape {
            Shape::Description => {}
            Shape::Symbol => {
                let names = &self.intent.names;
                if self.definitions.is_none() {
                    // The whole index, once per query: a name lookup ranked twice (the words
                    // beside the fusion) scans it once.
                    let wanted: Vec<String> = names.iter().map(|n| normal_qualified(n)).collect();
                    let stem_name = names.last().map(|n| squashed(n)).unwrap_or_default();
                    let mut found = Vec::new();
                    for index in 0..snapshot.chunk_count() {
                        let Some(chunk) = snapshot.chunk(index) else { continue };
                        if !accept(&chunk) {
                            continue;
                        }
                        let by_symbol = !chunk.symbol.is_empty()
                            && (names.iter().any(|n| chunk.symbol == n)
                                || chunk.symbol_path().is_some_and(|p| wanted.contains(&normal_qualified(&p))));
                        let named_file = !stem_name.is_empty() && file_stem_squashed(chunk.path) == stem_name;
                        if by_symbol
                            || (named_file && defines(snapshot, &mut self.texts, &chunk, names) == Definition::Defines)
                        {
                            found.push(index);
                        }
                    }
                    self.definitions = Some(found);
                }
                extra.extend(self.definitions.iter().flatten().filter(|i| !have.contains(i)));
                // Defined outside the index (another crate or package): its re-exports are the
                // nearest the index has, and BM25 ranks them below every use of the name.
                let defined = extra.iter().chain(have.iter()).any(|&i| {
                    snapshot
                        .chunk(i)
                        .is_some_and(|c| defines(snapshot, &mut self.texts, &c, names) == Definition::Defines)
                });
                self.defined_elsewhere = !defined;
                // The whole name as one token (lowercased, it is not split into its words).
                if !defined
                    && let Some(name) = names.last()
                    && let Ok(hits) = snapshot.lexical_search(&name.to_lowercase(), 200)
                {
                    for (index, _) in hits {
                        let Some(chunk) = snapshot.chunk(index) else { continue };
                        if have.contains(&index)
                            || extra.contains(&index)
                            || chunk.kind != ChunkKind::Code
                            || !accept(&chunk)
                        {
                            continue;
                        }
                        if defines(snapshot, &mut self.texts, &chunk, names) == Definition::Reexport {
                            extra.push(index);
                        }
                    }
                }
            }
            Shape::Question => {
                let known: HashSet<&str> = have.iter().filter_map(|&i| snapshot.chunk(i)).map(|c| c.path).collect();
                for (path, _) in self.files.best(self.weights.inject_path, 5) {
                    if known.contains(path) {
                        continue;
                    }
                    let chunks: Vec<ChunkRef<'_>> =
                        snapshot.chunks_of(path).into_iter().filter(|c| accept(c)).collect();
                    let best = match vector {
                        Some(v) => chunks
                            .iter()
                            .filter_map(|c| snapshot.chunk_vector(c.index).map(|cv| (c.index, cv.dot(v))))
                            .max_by(|a, b| a.1.total_cmp(&b.1))
                            .map(|(i, _)| i),
                        None => None,
                    };
                    if let Some(index) = best.or_else(|| chunks.first().map(|c| c.index)) {
                        extra.push(index);
                    }
                }
            }
        }
        extra
    }

    /// Adds the evidence to `ranked` (learned linear scores) and re-sorts it, best first.
    /// `vector` is the query's (None in the ranking without vectors): it finds each file's gist.
    pub fn adjust(&mut self, snapshot: &Snapshot, ranked: &mut [(usize, f32)], vector: Option<&Vector>) {
        let mut w = self.weights;
        // The fusion's scores move with the query; the evidence is measured in the spread of its
        // first page, so "one unit" moves a hit about from tenth place to first.
        let (_, unit) = first_page(ranked, w.min_unit);
        for value in [&mut w.path, &mut w.definition, &mut w.definition_file, &mut w.prose] {
            *value *= unit;
        }
        self.unit = unit;
        let prose_ok = self.intent.asks_for_prose();
        let symbol = self.intent.shape == Shape::Symbol;
        let names = self.intent.names.clone();
        let stem_names: Vec<String> = names.iter().map(|n| squashed(last_segment(n).unwrap_or(n))).collect();
        let question = self.intent.shape == Shape::Question;
        for (index, score) in ranked.iter_mut() {
            let Some(chunk) = snapshot.chunk(*index) else { continue };
            if question {
                *score += w.path * self.files.score(chunk.path);
            }
            let definition =
                if names.is_empty() { Definition::None } else { defines(snapshot, &mut self.texts, &chunk, &names) };
            if definition != Definition::None {
                let share = if symbol { 1.0 } else { w.embedded_share };
                let named_file = stem_names.contains(&file_stem_squashed(chunk.path));
                let full = w.definition + if named_file { w.definition_file } else { 0.0 };
                let kind =
                    if definition == Definition::Defines || self.defined_elsewhere { 1.0 } else { w.reexport_share };
                *score += share * kind * full;
            }
            // Prose moves by the same amount both ways: below the code for a code question,
            // above it when the question asks for the documentation; a task ("how do I …") is
            // answered by a guide as well as by code, so there it stays where the fusion put it.
            let prose_moves = prose_ok || !self.intent.task;
            if chunk.language == Language::Markdown && prose_moves {
                *score += if prose_ok { w.prose } else { -w.prose };
            }
        }
        sort_best_first(ranked);
        if w.coherence > 0.0 && self.intent.shape != Shape::Description {
            self.add_coherence(snapshot, ranked, unit, w.coherence * unit);
            sort_best_first(ranked);
        }
        // A task ("how do I …") is answered by a guide as well as by code, and only code has a
        // gist: there the fusion's order between them stands.
        if question
            && !self.intent.task
            && let Some(vector) = vector
        {
            add_gist(snapshot, ranked, vector, w.gist * unit);
            sort_best_first(ranked);
        }
    }
}

impl Evidence<'_> {
    /// A file many of whose chunks match is more likely the component asked about than a file
    /// with one lucky chunk: each file's best chunk gains `weight` times the file's share of
    /// the candidates' mass (each candidate weighing `exp((score − best) / unit)`), relative to
    /// the file with the most. In C and C++ a header and its implementation file are one
    /// component (`str_cat.h` + `str_cat.cc`): their mass is pooled, and the gain goes to the
    /// header's best chunk, the component's interface and documentation, when it has one.
    fn add_coherence(&self, snapshot: &Snapshot, ranked: &mut [(usize, f32)], unit: f32, weight: f32) {
        let Some(top) = ranked.first().map(|r| r.1) else { return };
        // Per component: mass, best chunk's slot, best header chunk's slot.
        let mut mass: HashMap<String, (f32, usize, Option<usize>)> = HashMap::new();
        for (slot, &(index, score)) in ranked.iter().enumerate() {
            let Some(chunk) = snapshot.chunk(index) else { continue };
            let (key, header) = component(chunk.path, chunk.language);
            let entry = mass.entry(key).or_insert((0.0, slot, None));
            entry.0 += ((score - top) / unit).exp();
            if header && entry.2.is_none() {
                entry.2 = Some(slot);
            }
        }
        let most = mass.values().map(|m| m.0).fold(0.0f32, f32::max);
        if most <= 0.0 {
            return;
        }
        for (share, best_slot, header_slot) in mass.values() {
            ranked[header_slot.unwrap_or(*best_slot)].1 += weight * share / most;
        }
    }
}

/// How many of a ranking's first places are read for their files' gists.
const GIST_DEPTH: usize = 50;
/// How fast a file's gist gain falls with its distance (in cosine) from the best gist.
const GIST_TEMPERATURE: f32 = 0.05;
/// At most this many chunks of one file are read for its gist (evenly spaced): a generated
/// file of thousands of chunks costs no more than a large hand-written one.
const GIST_CHUNKS: usize = 1024;

/// A file's gist: the direction of its code that belongs to no definition — imports,
/// constants, top-level statements (and the line windows of a file without a grammar) — which
/// says what the file is about better than any one of its functions. A question about a
/// component ("null-safe string operations") is answered by the file whose gist it matches,
/// where one lucky function elsewhere may match its words better. Each file among the first
/// [`GIST_DEPTH`] places has its best chunk there raised by `weight · exp((cos − best) / T)`:
/// the file whose gist is nearest the query gains `weight`, the others less the further they
/// are. On semble's tune questions the mean of every chunk of a file (0.821–0.825) and a
/// file's first chunk alone (0.818) did worse than this (0.829).
fn add_gist(snapshot: &Snapshot, ranked: &mut [(usize, f32)], query: &Vector, weight: f32) {
    let mut first_slot: HashMap<&str, usize> = HashMap::new();
    for (slot, &(index, _)) in ranked.iter().enumerate().take(GIST_DEPTH) {
        if let Some(chunk) = snapshot.chunk(index) {
            first_slot.entry(chunk.path).or_insert(slot);
        }
    }
    let cosines: Vec<(usize, f32)> = first_slot
        .into_iter()
        .filter_map(|(path, slot)| {
            let chunks = snapshot.chunks_of(path);
            let outside = |kind: ChunkKind| matches!(kind, ChunkKind::Code | ChunkKind::Text);
            // A file of definitions only (one function, one class) is about them.
            let read = if chunks.iter().any(|c| outside(c.kind)) { outside } else { |kind| kind != ChunkKind::Section };
            let indices: Vec<usize> = chunks.iter().filter(|c| read(c.kind)).map(|c| c.index).collect();
            let step = indices.len().div_ceil(GIST_CHUNKS).max(1);
            let gist = mean_direction(indices.iter().step_by(step).filter_map(|&i| snapshot.chunk_vector(i)))?;
            Some((slot, gist.dot(query)))
        })
        .collect();
    for (slot, gain) in gist_gains(&cosines, weight, GIST_TEMPERATURE) {
        ranked[slot].1 += gain;
    }
}

/// The unit direction of the sum of `vectors` (None without any, or when they cancel out).
fn mean_direction(vectors: impl Iterator<Item = Vector>) -> Option<Vector> {
    let mut sum: Vec<f32> = Vec::new();
    for v in vectors {
        if sum.is_empty() {
            sum = vec![0.0; v.dim()];
        }
        sum.iter_mut().zip(v.as_slice()).for_each(|(s, x)| *s += x);
    }
    let gist = Vector::normalized(sum);
    (gist.dim() > 0 && gist.norm() > 0.0).then_some(gist)
}

/// Each (slot, cosine) gains `weight · exp((cosine − best) / temperature)`.
fn gist_gains(cosines: &[(usize, f32)], weight: f32, temperature: f32) -> Vec<(usize, f32)> {
    let Some(best) = cosines.iter().map(|c| c.1).reduce(f32::max) else { return Vec::new() };
    cosines.iter().map(|&(slot, cos)| (slot, weight * ((cos - best) / temperature).exp())).collect()
}

/// The component a file belongs to, and whether the file is its C/C++ header: a header and
/// the source file of the same name in the same directory are one; every other file is its own.
fn component(path: &str, language: Language) -> (String, bool) {
    if !matches!(language, Language::C | Language::Cpp) {
        return (path.to_string(), false);
    }
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    let Some((stem, ext)) = file.rsplit_once('.') else { return (path.to_string(), false) };
    let stem = stem.strip_suffix("-inl").or_else(|| stem.strip_suffix("_inl")).unwrap_or(stem);
    let header = matches!(ext.to_ascii_lowercase().as_str(), "h" | "hh" | "hpp" | "hxx" | "h++");
    (format!("{dir}/{stem}"), header)
}

fn file_stem_squashed(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    squashed(file.split_once('.').map_or(file, |(stem, _)| stem))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definition_lines_are_recognised_across_languages() {
        let yes = [
            ("class Builder", "Builder"),
            ("  class Builder < Base", "Builder"),
            ("module Rack", "Rack"),
            ("public final class Gson {", "Gson"),
            ("data class HttpCookies(val x: Int)", "HttpCookies"),
            ("class HttpCookies internal constructor(", "HttpCookies"),
            ("internal fun HttpClient.defaultTransformers()", "defaultTransformers"),
            ("defmodule Phoenix.Router do", "Router"),
            ("public protocol URLConvertible {", "URLConvertible"),
            ("sealed trait Validated[+E, +A]", "Validated"),
            ("pub struct Router<S = ()> {", "Router"),
            ("#define FMT_STRING(s) FMT_STRING_IMPL(s, fmt::detail::compile_string, )", "FMT_STRING"),
            ("enum class Color {", "Color"),
        ];
        for (line, name) in yes {
            assert!(line_defines(line, name), "{line:?} defines {name}");
        }
        let no = [
            ("builder = Builder.new", "Builder"),
            ("class BuilderTest", "Builder"),
            ("# class Builder", "Builder"),
            ("return Router{}", "Router"),
        ];
        for (line, name) in no {
            assert!(!line_defines(line, name), "{line:?} does not define {name}");
        }
    }

    #[test]
    fn re_exports_are_recognised() {
        assert!(reexports("pub use axum_core::extract::{FromRef, FromRequest, FromRequestParts};", "FromRequest"));
        assert!(reexports(
            "//! Types.\n\npub use axum_core::extract::{\n    FromRef,\n    FromRequest,\n};\n",
            "FromRequest"
        ));
        assert!(reexports("from .routing import APIRouter as APIRouter", "APIRouter"));
        assert!(reexports("export { createRouter } from './router';", "createRouter"));
        assert!(!reexports("pub use axum_core::extract::FromRequestParts;", "FromRequest"));
        assert!(!reexports("use axum_core::extract::FromRequest;", "FromRequest"));
        assert!(!reexports("from the request", "request"));
        assert!(!reexports("pub use a::b;\nfn f() -> FromRequest {}", "FromRequest"));
    }

    #[test]
    fn a_file_named_for_the_question_scores_by_its_rare_words() {
        let paths = [
            "fastapi/dependencies/utils.py",
            "fastapi/dependencies/models.py",
            "fastapi/applications.py",
            "fastapi/param_functions.py",
            "fastapi/routing.py",
            "fastapi/security/oauth2.py",
        ];
        let files = FileNames::from_paths(
            paths.iter().map(|p| p.to_string()),
            &Intent::of("how does dependency injection work"),
        );
        assert!(files.score("fastapi/dependencies/utils.py") > 0.3);
        assert_eq!(files.score("fastapi/dependencies/utils.py"), files.score("fastapi/dependencies/models.py"));
        assert_eq!(files.score("fastapi/applications.py"), 0.0);
        // A word in one file name weighs more than a word in every one.
        let paths =
            ["client/cookies/HttpCookies.kt", "client/HttpClient.kt", "client/HttpSend.kt", "client/engine/Engine.kt"];
        let files =
            FileNames::from_paths(paths.iter().map(|p| p.to_string()), &Intent::of("how are http cookies stored"));
        assert!(files.score("client/cookies/HttpCookies.kt") > 2.0 * files.score("client/HttpClient.kt"));
        assert_eq!(files.score("client/engine/Engine.kt"), 0.0);
        assert_eq!(files.best(0.5, 5).first().map(|f| f.0), Some("client/cookies/HttpCookies.kt"));
    }

    #[test]
    fn a_files_gist_is_the_direction_of_its_code_together() {
        let v = |x: &[f32]| Vector::normalized(x.to_vec());
        // Imports and constants that each lean towards the query's direction, none on it.
        let gist = mean_direction([v(&[1.0, 1.0, 0.0]), v(&[1.0, -1.0, 0.0])].into_iter()).unwrap();
        let query = v(&[1.0, 0.0, 0.0]);
        assert!((gist.dot(&query) - 1.0).abs() < 1e-6, "{gist:?}");
        assert!(mean_direction(std::iter::empty()).is_none(), "no code, no gist");
        assert!(mean_direction([v(&[1.0, 0.0]), v(&[-1.0, 0.0])].into_iter()).is_none(), "cancelled out");
    }

    #[test]
    fn the_file_whose_gist_is_nearest_gains_most() {
        let gains = gist_gains(&[(0, 0.40), (3, 0.55), (7, 0.50)], 2.0, 0.05);
        let gain = |slot: usize| gains.iter().find(|g| g.0 == slot).unwrap().1;
        assert!((gain(3) - 2.0).abs() < 1e-6);
        assert!((gain(7) - 2.0 * (-1.0f32).exp()).abs() < 1e-5, "0.05 below the best: e^-1 of it");
        assert!(gain(0) < 0.2 && gain(0) > 0.0);
        assert!(gist_gains(&[], 2.0, 0.05).is_empty());
    }

    #[test]
    fn a_file_name_is_split_into_words() {
        assert_eq!(name_words("plugins/cookies/HttpCookies.kt"), ["cookies", "http", "httpcookies"]);
        assert_eq!(name_words("fastapi/dependencies/utils.py"), ["dependencies", "utils"]);
        assert_eq!(name_words("Makefile"), ["makefile"]);
    }

    #[test]
    fn the_words_give_each_file_of_a_question_a_place_before_a_second() {
        let penalties = |query: &str| {
            let intent = Intent::of(query);
            let evidence = Evidence {
                intent: &intent,
                files: FileNames { scores: HashMap::new() },
                weights: Weights::default(),
                texts: Texts::default(),
                unit: 1.0,
                defined_elsewhere: false,
                definitions: None,
            };
            (evidence.same_file_penalty(RankedBy::Words), evidence.same_file_penalty(RankedBy::Fusion))
        };
        let spread = (OVERVIEW_SAME_FILE, 1.0);
        let fused = (Weights::default().same_file, Weights::default().free_per_file);
        // A component asked for by name: spread by the words, as the fusion put it otherwise.
        assert_eq!(penalties("update and delete statement builders"), (spread, fused));
        // "How does X work": spread by both.
        assert_eq!(penalties("how does dependency injection work"), (spread, spread));
        // A function's description: its siblings stay beside it in both.
        let free = (0.0, Weights::default().free_per_file);
        assert_eq!(penalties("Returns the number of elements in the map."), (free, free));
    }
}
