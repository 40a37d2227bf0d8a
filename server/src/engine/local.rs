//! The one-shot engine: a command that opens one index, answers and exits (the CLI's `index`,
//! `query`, `status`, `ask`, `push`). It keeps the rules of the long-lived
//! [`Workspace`](crate::workspace::Workspace) — when an index is built or rebuilt and why, which
//! model may read its vectors, what the audit log records — without a worker thread, and tells
//! the person waiting through a [`Report`] the door prints.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::ask;
use crate::audit::{self, Door};
use crate::embed::{Assets, EmbedOptions, Embedder, OnnxEmbedder};
use crate::index::{self, IndexError, IndexLocation, IndexOptions, Progress, Snapshot, UpdateStats};
use crate::search::{self, Query, SearchError, SearchResults};
use crate::wire;

/// What the engine tells the person waiting; the CLI prints it on stderr.
pub trait Report {
    /// A line about what the engine does and why ("no index at … yet; building it first").
    fn say(&mut self, line: &str);
    /// Indexing progress.
    fn progress(&mut self, event: Progress);
    /// An update finished.
    fn updated(&mut self, location: &IndexLocation, stats: &UpdateStats);
}

/// What a command needs of the index it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// Queries embed with the model: it loads first (a missing model fails before any work),
    /// the index must be of its vectors, and an index left partly embedded gets its indexer
    /// started again.
    pub vectors: bool,
    /// On a tree without an index, answer from the words at once and embed in the background
    /// (a first query), instead of building everything first.
    pub answer_first: bool,
}

/// The model the command names (`--model`, `--ort-dylib`), loaded when first needed.
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    pub model: Option<String>,
    pub ort: Option<PathBuf>,
}

impl ModelChoice {
    pub fn new(model: Option<&str>, ort: Option<&Path>) -> ModelChoice {
        ModelChoice { model: model.map(str::to_string), ort: ort.map(Path::to_path_buf) }
    }

    /// Loads the embedder with default options, or says how to get the assets.
    pub fn load(&self) -> Result<OnnxEmbedder> {
        self.load_with(EmbedOptions::default())
    }

    /// [`ModelChoice::load`] with other options (a background indexer's).
    pub fn load_with(&self, options: EmbedOptions) -> Result<OnnxEmbedder> {
        let assets = Assets::locate(self.model.as_deref(), self.ort.as_deref())?;
        Ok(OnnxEmbedder::load(assets, options)?)
    }

    /// The id of the model queries would embed with, if one is installed.
    fn installed_id(&self) -> Option<String> {
        Assets::locate(self.model.as_deref(), self.ort.as_deref()).and_then(|assets| assets.model_id()).ok()
    }
}

/// One index, opened for one command.
pub struct Local {
    pub location: IndexLocation,
    choice: ModelChoice,
    embedder: Option<OnnxEmbedder>,
    door: Door,
}

/// A question's retrieval: its prompt, and how the search that filled it went.
pub struct Retrieval {
    pub prompt: ask::Prompt,
    pub confidence: Option<search::Confidence>,
    /// Why the ranking was worse than usual.
    pub degraded: Option<String>,
}

/// What `status` finds.
pub enum Status {
    /// The index is damaged or in another version's format: `state` says which, in words.
    Unusable {
        state: &'static str,
        damaged: wire::Damaged,
    },
    Ready(wire::IndexStatus),
}

impl Local {
    pub fn new(location: IndexLocation, choice: ModelChoice, door: Door) -> Local {
        Local { location, choice, embedder: None, door }
    }

    /// The embedder, loaded on first use.
    pub fn embedder(&mut self) -> Result<&OnnxEmbedder> {
        loaded(&mut self.embedder, &self.choice)
    }

    /// The embedder if it is loaded already (a search by words needs none).
    pub fn loaded_embedder(&self) -> Option<&dyn Embedder> {
        self.embedder.as_ref().map(|e| e as &dyn Embedder)
    }

    /// Builds or updates the index, reporting progress; recorded in the audit log.
    pub fn update(&mut self, options: &IndexOptions, report: &mut dyn Report) -> Result<UpdateStats> {
        let embedder = loaded(&mut self.embedder, &self.choice)?;
        let stats = index::update(&self.location, embedder, options, &mut |event| report.progress(event))
            .with_context(|| format!("indexing {}", self.location.root.display()))?;
        report.updated(&self.location, &stats);
        audit::record(&self.location.dir, self.door, "index", stats.seconds * 1000.0, serde_json::to_value(&stats)?);
        Ok(stats)
    }

    /// The index to answer from, as `need` asks: built first when there is none (or, for a
    /// first query, indexed by its words with the vectors left to a background indexer),
    /// rebuilt when damaged or in another version's format, checked against the model.
    pub fn open_for(&mut self, need: Need, report: &mut dyn Report) -> Result<Snapshot> {
        if need.vectors {
            loaded(&mut self.embedder, &self.choice)?;
        }
        if !self.location.exists() && need.answer_first {
            return self.words_then_vectors_in_background(report);
        }
        if !self.location.exists() {
            report.say(&format!("no index at {} yet; building it first", self.location.root.display()));
            self.rebuild(report)?;
        }
        let snapshot = match Snapshot::open(&self.location) {
            Ok(snapshot) => snapshot,
            Err(err @ (IndexError::Corrupt(_) | IndexError::OtherFormat { .. })) => {
                // A damaged index, or one in another version's format, is rebuilt, not a dead end.
                report.say(&format!("{err}; rebuilding it"));
                self.rebuild(report)?;
                Snapshot::open(&self.location)?
            }
            Err(err) => return Err(err.into()),
        };
        if let Some(embedder) = &self.embedder {
            check_model(&snapshot, embedder)?;
        }
        // Vectors still missing and nobody embedding them (the background indexer was stopped,
        // the machine restarted): start it again. A search by words needs none.
        if need.vectors && snapshot.is_partial() && !index::writer_busy(&self.location.dir) {
            self.start_background("the index is partly embedded and nothing is embedding it", report);
        }
        Ok(snapshot)
    }

    /// The index as it is on disk, neither built nor rebuilt (`inspect`).
    pub fn open_as_is(&self) -> Result<Snapshot, IndexError> {
        Snapshot::open(&self.location)
    }

    /// Loads the model when it is not yet and checks that it embedded `snapshot`'s vectors
    /// (queries must be embedded by the model that embedded the index).
    pub fn check_model(&mut self, snapshot: &Snapshot) -> Result<()> {
        let embedder = loaded(&mut self.embedder, &self.choice)?;
        check_model(snapshot, embedder)
    }

    /// Searches `snapshot` (with the model when it is loaded); recorded in the audit log.
    pub fn search(&self, snapshot: &Snapshot, query: &Query) -> Result<SearchResults, SearchError> {
        let results = search::search(snapshot, self.loaded_embedder(), query)?;
        let mut detail = crate::workspace::query_detail(query, results.results.len());
        detail["partial"] = serde_json::json!(results.partial);
        detail["degraded"] = serde_json::json!(results.degraded.is_some());
        if let Some(confidence) = results.confidence {
            detail["confidence"] = serde_json::json!(confidence.value);
        }
        audit::record(&snapshot.location.dir, self.door, "search", results.took_ms, detail);
        Ok(results)
    }

    /// Retrieval for a question (`raggrep ask`): the model checked against the index, the best
    /// chunks read from disk as they are now, laid out as the prompt within `budget` tokens.
    pub fn prompt_for(&mut self, snapshot: &Snapshot, question: &str, budget: usize) -> Result<Retrieval> {
        self.check_model(snapshot)?;
        let query = Query { k: ask::CANDIDATES, ..Query::new(question) };
        let results = self.search(snapshot, &query)?;
        let root = &self.location.root;
        let snippets = results.results.into_iter().map(|hit| {
            let body = ask::read_lines(&crate::walk::resolve(root, &hit.path), hit.start_line, hit.end_line);
            ask::Snippet::from_hit(hit, body)
        });
        let prompt = ask::prompt(question, snippets, budget);
        Ok(Retrieval { prompt, confidence: results.confidence, degraded: results.degraded })
    }

    /// The index's state, or why it cannot be used (status works without any model installed).
    pub fn status(&self) -> Result<Status> {
        let snapshot = match Snapshot::open(&self.location) {
            Ok(snapshot) => snapshot,
            Err(err @ (IndexError::Corrupt(_) | IndexError::OtherFormat { .. })) => {
                // Status reports why the index cannot be used; the next `index` or `query` rebuilds.
                let (state, why) = match err {
                    IndexError::Corrupt(why) => ("is damaged", why),
                    other => ("needs a rebuild", other.to_string()),
                };
                let damaged = wire::Damaged {
                    root: self.location.root.display().to_string(),
                    damaged: why,
                    fix: "`raggrep index` rebuilds it".to_string(),
                };
                return Ok(Status::Unusable { state, damaged });
            }
            Err(err) => return Err(err.into()),
        };
        let stats = snapshot.stats();
        Ok(Status::Ready(wire::IndexStatus { model_mismatch: self.model_mismatch(&stats), index: stats }))
    }

    /// What to do when queries would embed with another model than the one that built the
    /// index (`raggrep query` refuses it); nothing when no model is installed.
    fn model_mismatch(&self, stats: &index::IndexStats) -> Option<String> {
        let queried_with = self.choice.installed_id()?;
        (queried_with != stats.model).then(|| {
            format!(
                "queries embed with {queried_with}: `raggrep query` refuses this index until `raggrep index` rebuilds it \
                 (or pass --model {}; `--mode lexical` searches its words meanwhile)",
                stats.model
            )
        })
    }

    /// Updates the index with the options every one-shot rebuild uses.
    fn rebuild(&mut self, report: &mut dyn Report) -> Result<()> {
        let options = IndexOptions { shared_cache: index::SharedCacheConfig::from_env(), ..IndexOptions::default() };
        self.update(&options, report).map(drop)
    }

    /// A first query on a tree without an index answers at once: the files are chunked and
    /// indexed by their words (seconds, no model run), a detached indexer at low priority embeds
    /// the rest, and the query answers from the words, saying it is partial.
    fn words_then_vectors_in_background(&mut self, report: &mut dyn Report) -> Result<Snapshot> {
        report.say(&format!(
            "no index at {} yet: indexing its words now, its vectors in the background (--wait: all first)",
            self.location.root.display()
        ));
        // The index records which model its vectors will come from: the model loads.
        let words_only = IndexOptions {
            embed: false,
            // A first query waits for the static tier (tantivy's 11,542 chunks answer first in
            // 1.8 s against 1.2 s from the words alone; abseil-cpp's 22,875 in 4.8–5.9 s against
            // ~4 s); a bigger tree answers from the words.
            static_tier_max_chunks: index::STATIC_TIER_MAX_CHUNKS,
            ..IndexOptions::default()
        };
        let stats = self.update(&words_only, report)?;
        let answering = match stats.seconds_to_static {
            Some(_) => "answering from the words and the static tier's vectors (the model's are better)",
            None => "answering from the words",
        };
        self.start_background(answering, report);
        Ok(Snapshot::open(&self.location)?)
    }

    /// Starts the background indexer and says so (`why` first), or says why it could not.
    fn start_background(&self, why: &str, report: &mut dyn Report) {
        let said = match spawn_background_indexer(&self.location, &self.choice) {
            Ok(pid) => format!(
                "raggrep: {why}; embedding in the background (pid {pid}, low priority; `raggrep status` shows how far, {} its log)",
                self.location.dir.join(BACKGROUND_LOG).display()
            ),
            Err(err) => {
                format!("raggrep: {why}; cannot start the background indexer ({err}); `raggrep index` embeds the rest")
            }
        };
        report.say(&said);
    }
}

/// The model in `embedder`, loaded first when it is not yet.
fn loaded<'e>(embedder: &'e mut Option<OnnxEmbedder>, choice: &ModelChoice) -> Result<&'e OnnxEmbedder> {
    Ok(match embedder {
        Some(embedder) => embedder,
        None => embedder.insert(choice.load()?),
    })
}

/// Queries must be embedded by the model that embedded the index.
fn check_model(snapshot: &Snapshot, embedder: &OnnxEmbedder) -> Result<()> {
    let info = embedder.info();
    if !snapshot.built_by(info) {
        return Err(IndexError::ModelMismatch {
            index: snapshot.model_id().to_string(),
            index_dim: snapshot.dim(),
            embedder: info.id.clone(),
            embedder_dim: info.dim,
        }
        .into());
    }
    Ok(())
}

/// Where the background indexer's messages go, in the index directory.
pub const BACKGROUND_LOG: &str = "background-index.log";

/// Starts this very binary's `index --background` for `location` as a process of its own (its
/// own process group, so a Ctrl-C in the terminal does not stop it; at low CPU priority; one
/// writer at a time, as always: it waits for any other). Returns its process id.
fn spawn_background_indexer(location: &IndexLocation, choice: &ModelChoice) -> std::io::Result<u32> {
    use std::os::unix::process::CommandExt;
    let log = std::fs::File::create(location.dir.join(BACKGROUND_LOG))?;
    let mut command = std::process::Command::new(std::env::current_exe()?);
    if let Some(model) = &choice.model {
        command.arg("--model").arg(model);
    }
    if let Some(ort) = &choice.ort {
        command.arg("--ort-dylib").arg(ort);
    }
    command
        .args(["index", "--background", "--root"])
        .arg(&location.root)
        .arg("--index-dir")
        .arg(&location.dir)
        .current_dir(&location.root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .process_group(0);
    Ok(command.spawn()?.id())
}
