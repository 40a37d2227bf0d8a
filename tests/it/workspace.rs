//! The live workspace engine with a deterministic fake embedder (pure index logic: budgets,
//! overlays, roots). The real model is exercised by tests/it/cli.rs and tests/it/lsp.rs.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use raggrep::embed::FakeEmbedder;
use raggrep::index::{Progress, UpdateStats};
use raggrep::search::{Mode, Query};
use raggrep::workspace::{Events, MemoryLevel, Settings, Workspace};

#[derive(Default)]
struct Recorder {
    updated: Mutex<Vec<UpdateStats>>,
    memory: Mutex<Vec<MemoryLevel>>,
}

impl Events for Recorder {
    fn progress(&self, _: &Path, _: &Progress) {}
    fn updated(&self, _: &Path, stats: &UpdateStats) {
        self.updated.lock().unwrap().push(stats.clone());
    }
    fn failed(&self, _: &Path, message: &str) {
        panic!("update failed: {message}");
    }
    fn memory(&self, level: MemoryLevel, _: u64, _: u64) {
        self.memory.lock().unwrap().push(level);
    }
}

/// A workspace over the 64-dimension fake embedder with default settings, and its events.
fn fake_workspace() -> (Arc<Workspace>, Arc<Recorder>) {
    let events = Arc::new(Recorder::default());
    (Workspace::new(Arc::new(FakeEmbedder::new(64)), Settings::default(), events.clone()), events)
}

fn wait_updates(events: &Recorder, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while events.updated.lock().unwrap().len() < n {
        assert!(Instant::now() < deadline, "no update");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The first update from the `from`-th on that `pred` accepts. Updates it passes over are
/// no-ops left behind by schedules that did not coalesce (two `schedule` calls may reach the
/// indexer as one update or as two).
fn next_update(events: &Recorder, from: usize, pred: impl Fn(&UpdateStats) -> bool) -> UpdateStats {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(found) = events.updated.lock().unwrap().iter().skip(from).find(|s| pred(s)) {
            return found.clone();
        }
        assert!(Instant::now() < deadline, "no such update: {:#?}", events.updated.lock().unwrap());
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn tree(root: &Path, files: usize) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    for f in 0..files {
        let mut text = String::new();
        for g in 0..4 {
            text.push_str(&format!("pub fn item_{f}_{g}(x: u32) -> u32 {{\n    x * {g} + {f}\n}}\n\n"));
        }
        std::fs::write(root.join(format!("src/m{f:03}.rs")), text).unwrap();
    }
}

#[test]
fn the_memory_budget_stops_adding_files_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 100); // 400 chunks
    let events = Arc::new(Recorder::default());
    // 1 MB: room for ~246 chunks at 95 %.
    let settings = Settings { memory_budget_mb: 1, ..Settings::default() };
    let ws = Workspace::new(Arc::new(FakeEmbedder::new(384)), settings, events.clone());
    ws.add_root(dir.path(), true).unwrap();
    wait_updates(&events, 1);
    let status = &ws.status()[0];
    let chunks = status.index.as_ref().unwrap().chunks;
    assert!(chunks > 100 && chunks < 400, "{chunks} chunks indexed");
    assert!(status.reason.as_deref().unwrap().contains("memory budget"), "{:?}", status.reason);
    assert_eq!(events.memory.lock().unwrap().as_slice(), &[MemoryLevel::Full]);
    ws.shutdown();
}

#[test]
fn editor_buffers_are_indexed_before_they_are_saved() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 3);
    let (ws, events) = fake_workspace();
    ws.add_root(dir.path(), true).unwrap();
    wait_updates(&events, 1);
    let file = dir.path().join("src/m000.rs");
    let query = Query { mode: Mode::Lexical, ..Query::new("unsaved_buffer_function") };
    assert!(ws.search(&query).unwrap().is_empty());
    ws.set_overlay(&file, "pub fn unsaved_buffer_function() -> u8 { 1 }\n".into());
    ws.schedule(&file);
    wait_updates(&events, 2);
    let hits = ws.search(&query).unwrap();
    assert_eq!(hits[0].hit.symbol.as_deref(), Some("unsaved_buffer_function"));
    // Closing the buffer without saving: the disk is the truth again.
    ws.clear_overlay(&file);
    ws.schedule(&file);
    wait_updates(&events, 3);
    assert!(ws.search(&query).unwrap().is_empty());
    ws.shutdown();
}

#[test]
fn a_disabled_root_is_not_indexed_until_toggled_on() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 2);
    // The other doors' settings in the same file survive the toggle's save.
    std::fs::create_dir_all(dir.path().join(".raggrep")).unwrap();
    std::fs::write(dir.path().join(".raggrep/config.toml"), "[cli]\nbare = \"ask\"\n\n[llm]\nmodel = \"m\"\n").unwrap();
    let (ws, events) = fake_workspace();
    ws.add_root(dir.path(), false).unwrap();
    assert!(!ws.is_enabled(dir.path()));
    assert!(ws.status()[0].index.is_none());
    ws.set_enabled(dir.path(), true).unwrap();
    wait_updates(&events, 1);
    assert_eq!(ws.status()[0].index.as_ref().unwrap().files, 2);
    let config = std::fs::read_to_string(dir.path().join(".raggrep/config.toml")).unwrap();
    assert!(config.contains("enabled = true"), "{config}");
    assert!(config.contains("[cli]\nbare = \"ask\"") && config.contains("model = \"m\""), "{config}");
    ws.shutdown();
}

/// A root opened from an index already on disk has not been compared with the disk until its
/// first update has run: files may have changed while nothing was watching. Until then status
/// says indexing and answers say partial (they said idle and complete, so a client waiting for
/// "not partial" went on before that update and met it half-way).
#[test]
fn a_root_is_indexing_until_its_first_update_has_run() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 2);
    let (first, events) = fake_workspace();
    first.add_root(dir.path(), true).unwrap();
    wait_updates(&events, 1);
    first.shutdown();

    let (ws, events) = fake_workspace();
    ws.pause();
    ws.add_root(dir.path(), true).unwrap();
    let queued = &ws.status()[0];
    assert_eq!(queued.index.as_ref().map(|i| i.files), Some(2), "the index on disk is open at once");
    assert!(queued.indexing && queued.partial, "its first update is still waiting");
    assert!(ws.find(&Query::new("item_1_1")).is_ok());
    ws.resume();
    wait_updates(&events, 1);
    let done = &ws.status()[0];
    assert!(!done.indexing && !done.partial, "indexing {}, partial {}", done.indexing, done.partial);
    ws.shutdown();

    // Turned off while that first update waits: not left "indexing" for good.
    let (off, _events) = fake_workspace();
    off.pause();
    off.add_root(dir.path(), true).unwrap();
    off.set_enabled(dir.path(), false).unwrap();
    off.resume();
    let deadline = Instant::now() + Duration::from_secs(60);
    while off.status()[0].indexing {
        assert!(Instant::now() < deadline, "still indexing a root turned off");
        std::thread::sleep(Duration::from_millis(5));
    }
    off.shutdown();
}

/// Readers reacting to progress events must find what the event announces: on a fresh index the
/// chunk list and lexical search at `Chunked`, and more embeddings at each `Published` (the
/// language server reopens its snapshot on these; before this was fixed, `Chunked` came before
/// the first publish and a new workspace answered nothing until embedding ended).
#[test]
fn progress_events_come_after_what_they_announce_is_published() {
    use raggrep::index::{IndexLocation, IndexOptions, Snapshot, update};
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 30);
    let location = IndexLocation::new(dir.path(), None).unwrap();
    let options = IndexOptions { embed_batch: 4, commit_interval: Duration::ZERO, ..IndexOptions::default() };
    let mut seen = Vec::new();
    update(&location, &FakeEmbedder::new(32), &options, &mut |p| match p {
        Progress::Chunked { chunks, .. } => {
            let snapshot = Snapshot::open(&location).expect("published before Chunked");
            assert_eq!(snapshot.chunk_count(), chunks);
            assert!(!snapshot.lexical_search("item", 5).unwrap().is_empty(), "lexical search is live");
            seen.push(("chunked", snapshot.stats().embedded));
        }
        Progress::Published { embedded, .. } => {
            let snapshot = Snapshot::open(&location).unwrap();
            assert_eq!(snapshot.stats().embedded, embedded);
            seen.push(("published", embedded));
        }
        _ => {}
    })
    .unwrap();
    assert_eq!(seen.first().map(|s| s.0), Some("chunked"));
    assert!(seen.iter().filter(|s| s.0 == "published").count() >= 2, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1), "embedded counts only grow: {seen:?}");
}

/// An index made with other chunking settings is chunked again in full (not left with vectors of
/// another recipe), and vectors are reused wherever the embedded text is the same.
#[test]
fn changed_chunking_settings_rechunk_every_file_and_reuse_what_they_can() {
    use raggrep::chunk::EmbedHeader;
    use raggrep::index::{IndexLocation, IndexOptions, update};
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 6);
    let location = IndexLocation::new(dir.path(), None).unwrap();
    let embedder = FakeEmbedder::new(32);
    let with = |header| {
        let mut options = IndexOptions::default();
        options.chunk.header = header;
        update(&location, &embedder, &options, &mut |_| {}).unwrap()
    };
    let first = with(EmbedHeader::PathAndSymbol);
    assert_eq!(first.embedded, first.chunks);
    let same = with(EmbedHeader::PathAndSymbol);
    assert_eq!((same.changed_files, same.embedded), (0, 0), "nothing changed");
    let other = with(EmbedHeader::Symbol);
    assert_eq!(other.changed_files, other.files, "every file is chunked again");
    assert_eq!(other.embedded, other.chunks, "every embedded text changed");
    let back = with(EmbedHeader::PathAndSymbol);
    assert_eq!(back.changed_files, back.files);
    assert_eq!(back.embedded, 0, "the earlier vectors are still cached");
}

/// Fails on any text containing `POISON`, like a model that cannot take one input.
struct PoisonedEmbedder(FakeEmbedder);

impl raggrep::embed::Embedder for PoisonedEmbedder {
    fn info(&self) -> &raggrep::embed::ModelInfo {
        self.0.info()
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<raggrep::embed::Vector>, raggrep::embed::EmbedError> {
        if texts.iter().any(|t| t.contains("POISON")) {
            return Err(raggrep::embed::EmbedError::Inference("this text cannot be embedded".into()));
        }
        self.0.embed_documents(texts)
    }
    fn embed_query(&self, text: &str) -> Result<raggrep::embed::Vector, raggrep::embed::EmbedError> {
        self.0.embed_query(text)
    }
}

// Hardening 11: one text that failed to embed aborted the whole update, and every later one.
#[test]
fn a_text_that_cannot_be_embedded_costs_only_its_own_file() {
    use raggrep::embed::Embedder;
    use raggrep::index::{IndexLocation, IndexOptions, Snapshot, update};
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 5);
    std::fs::write(dir.path().join("src/bad.rs"), "pub fn poisoned() -> &'static str {\n    \"POISON\"\n}\n").unwrap();
    let location = IndexLocation::new(dir.path(), None).unwrap();
    let embedder = PoisonedEmbedder(FakeEmbedder::new(64));
    for round in 0..2 {
        let stats = update(&location, &embedder, &IndexOptions::default(), &mut |_| {}).unwrap();
        if round == 0 {
            assert!(stats.embedded > 0, "{stats:?}");
        }
        let snapshot = Snapshot::open(&location).unwrap();
        let unembedded: Vec<String> = (0..snapshot.chunk_count())
            .filter_map(|i| snapshot.chunk(i))
            .filter(|c| !c.embedded)
            .map(|c| c.path.to_string())
            .collect();
        assert!(!unembedded.is_empty() && unembedded.iter().all(|p| p == "src/bad.rs"), "{unembedded:?}");
        let skipped = snapshot.skipped();
        assert!(
            skipped.iter().any(|(path, reason)| path == "src/bad.rs" && reason.contains("not embedded")),
            "{skipped:?}"
        );
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        // The file is still found by its words, and the rest by meaning.
        let lexical =
            raggrep::search::search(&snapshot, None, &Query { mode: Mode::Lexical, ..Query::new("poisoned") }).unwrap();
        assert_eq!(lexical.results[0].path, "src/bad.rs");
        let vector = embedder.embed_query("item_3_2").unwrap();
        assert!(!snapshot.dense_search(&vector, 3, None, true).is_empty());
    }
}

// Hardening 8: a lexical index that cannot be opened made hybrid quietly dense-only and lexical
// quietly empty.
#[test]
fn an_unavailable_lexical_index_is_reported_in_results() {
    use raggrep::index::{IndexLocation, IndexOptions, Snapshot, update};
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 3);
    let location = IndexLocation::new(dir.path(), None).unwrap();
    let embedder = FakeEmbedder::new(64);
    update(&location, &embedder, &IndexOptions::default(), &mut |_| {}).unwrap();
    std::fs::remove_dir_all(location.dir.join("lexical")).unwrap();
    let snapshot = Snapshot::open(&location).unwrap();
    for mode in [Mode::Lexical, Mode::Hybrid] {
        let results =
            raggrep::search::search(&snapshot, Some(&embedder), &Query { mode, ..Query::new("item_1_1") }).unwrap();
        assert!(results.degraded.as_deref().is_some_and(|d| d.contains("lexical")), "{mode:?}: {results:?}");
    }
    let dense =
        raggrep::search::search(&snapshot, Some(&embedder), &Query { mode: Mode::Dense, ..Query::new("item_1_1") })
            .unwrap();
    assert!(dense.degraded.is_none());
    // The next update repairs it.
    update(&location, &embedder, &IndexOptions::default(), &mut |_| {}).unwrap();
    let snapshot = Snapshot::open(&location).unwrap();
    let results =
        raggrep::search::search(&snapshot, None, &Query { mode: Mode::Lexical, ..Query::new("item_1_1") }).unwrap();
    assert!(results.degraded.is_none());
    assert_eq!(results.results[0].symbol.as_deref(), Some("item_1_1"));
}

#[test]
fn a_named_file_updates_without_a_walk_and_new_files_still_get_one() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), 20);
    let (ws, events) = fake_workspace();
    ws.add_root(dir.path(), true).unwrap();
    wait_updates(&events, 1);
    let last = |events: &Recorder| events.updated.lock().unwrap().last().cloned().unwrap();
    assert!(last(&events).walked, "the first update walks the tree");
    let lexical = |text: &str| {
        ws.search(&Query { mode: Mode::Lexical, ..Query::new(text) })
            .unwrap()
            .iter()
            .filter_map(|h| h.hit.symbol.clone())
            .collect::<Vec<_>>()
    };

    // A save of an indexed file: only that file is read, the tree is not walked.
    let saved = dir.path().join("src/m003.rs");
    std::fs::write(&saved, "pub fn saved_and_renamed(x: u32) -> u32 {\n    x\n}\n").unwrap();
    // Changed on disk but not named: a scoped update does not look at it.
    std::fs::write(dir.path().join("src/m004.rs"), "pub fn changed_behind_our_back() {}\n").unwrap();
    ws.schedule(&saved);
    wait_updates(&events, 2);
    let stats = last(&events);
    assert!(!stats.walked, "{stats:?}");
    assert_eq!((stats.changed_files, stats.files), (1, 20), "{stats:?}");
    assert_eq!(lexical("saved_and_renamed"), ["saved_and_renamed"]);
    assert!(!lexical("item_3_0").contains(&"item_3_0".to_string()), "the old content is gone");
    assert!(lexical("changed_behind_our_back").is_empty());

    // A deleted file, named: removed, still no walk.
    std::fs::remove_file(dir.path().join("src/m005.rs")).unwrap();
    ws.schedule(&dir.path().join("src/m005.rs"));
    wait_updates(&events, 3);
    let stats = last(&events);
    assert!(!stats.walked && stats.removed_files == 1 && stats.files == 19, "{stats:?}");

    // A new file: only a walk knows whether the ignore rules allow it.
    std::fs::write(dir.path().join(".gitignore"), "ignored/\n").unwrap();
    std::fs::create_dir_all(dir.path().join("ignored")).unwrap();
    std::fs::write(dir.path().join("ignored/x.rs"), "pub fn must_not_be_indexed() {}\n").unwrap();
    std::fs::write(dir.path().join("src/fresh.rs"), "pub fn brand_new_file() {}\n").unwrap();
    let seen = events.updated.lock().unwrap().len();
    ws.schedule(&dir.path().join("ignored/x.rs"));
    ws.schedule(&dir.path().join("src/fresh.rs"));
    let stats = next_update(&events, seen, |s| s.walked);
    assert_eq!(stats.files, 20, "{stats:?}");
    assert_eq!(lexical("brand_new_file"), ["brand_new_file"]);
    assert!(lexical("must_not_be_indexed").is_empty());
    // The walk also caught what changed behind our back.
    assert_eq!(lexical("changed_behind_our_back"), ["changed_behind_our_back"]);

    // A path that never existed (an editor's temporary file, gone): nothing to do, no walk.
    let seen = events.updated.lock().unwrap().len();
    ws.schedule(&dir.path().join("src/.m001.rs.swp"));
    let stats = next_update(&events, seen, |s| !s.walked);
    assert!(stats.changed_files == 0 && stats.removed_files == 0, "{stats:?}");

    // A deleted directory named on its own (watchers may not list its files): its files go.
    let seen = events.updated.lock().unwrap().len();
    std::fs::remove_dir_all(dir.path().join("src")).unwrap();
    ws.schedule(&dir.path().join("src"));
    let stats = next_update(&events, seen, |s| s.walked);
    assert!(stats.files == 0, "{stats:?}");
    assert!(lexical("brand_new_file").is_empty());
    ws.shutdown();
}

/// Records the texts it embeds, in order.
struct RecordingEmbedder(FakeEmbedder, Mutex<Vec<String>>);

impl raggrep::embed::Embedder for RecordingEmbedder {
    fn info(&self) -> &raggrep::embed::ModelInfo {
        self.0.info()
    }
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<raggrep::embed::Vector>, raggrep::embed::EmbedError> {
        self.1.lock().unwrap().extend(texts.iter().map(|t| t.to_string()));
        self.0.embed_documents(texts)
    }
    fn embed_query(&self, text: &str) -> Result<raggrep::embed::Vector, raggrep::embed::EmbedError> {
        self.0.embed_query(text)
    }
}

#[test]
fn the_model_embeds_open_files_then_code_then_its_doc_windows_then_tests_and_stubs_then_prose() {
    use raggrep::index::{IndexLocation, IndexOptions, update};
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // File order (a/ before b/ before z/) is the opposite of the order wanted.
    write("a_docs/guide.md", "# Guide\n\nHow to use prose_marker in practice.\n");
    write("a_docs/notes.txt", "plain text notes with text_marker\n");
    write("b_tests/test_core.py", "def test_core_marker():\n    assert core_marker() == 1\n");
    write("c_src/core.py", "def core_marker():\n    return 1\n");
    write("a_types/core.pyi", "def stub_marker() -> int: ...\n");
    write("z_open/editing.py", "def open_marker():\n    return 2\n");
    // Unit tests kept in a source file's test module wait with the tests.
    write(
        "a_src/engine.rs",
        "pub fn engine_marker() -> u32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn inline_test_marker() {\n        assert_eq!(super::engine_marker(), 1);\n    }\n}\n",
    );
    // A long doc comment split off its function: its windows of comments alone come after the
    // code and before the tests.
    let doc: String = (0..60)
        .map(|i| match i {
            30 => "    /// doc_window_marker: the middle of it.\n".to_string(),
            _ => format!("    /// Line {i} of what the engine does, told at length.\n"),
        })
        .collect();
    write(
        "c_src/long.rs",
        &format!(
            "pub struct Engine;\n\nimpl Engine {{\n{doc}    pub fn long_doc_code_marker(&self) -> u32 {{\n        1\n    }}\n}}\n"
        ),
    );
    let location = IndexLocation::new(dir.path(), None).unwrap();
    let embedder = RecordingEmbedder(FakeEmbedder::new(64), Mutex::new(Vec::new()));
    let mut overlays = std::collections::HashMap::new();
    overlays.insert("z_open/editing.py".to_string(), "def open_marker():\n    return 3\n".to_string());
    let options = IndexOptions { overlays, embed_batch: 1, ..IndexOptions::default() };
    update(&location, &embedder, &options, &mut |_| {}).unwrap();
    let texts = embedder.1.lock().unwrap().clone();
    let position = |marker: &str| {
        texts.iter().position(|t| t.contains(marker)).unwrap_or_else(|| panic!("{marker} not embedded: {texts:?}"))
    };
    let order = ["open_marker", "def core_marker", "test_core_marker", "prose_marker", "text_marker", "stub_marker"]
        .map(position);
    assert!(order[0] < order[1] && order[1] < order[2], "{texts:#?}");
    assert!(order[2] < order[3] && order[2] < order[4], "{texts:#?}");
    assert!(order[1] < order[5] && order[5] < order[3] && order[5] < order[4], "{texts:#?}");
    let (code, unit_test) = (position("pub fn engine_marker"), position("fn inline_test_marker"));
    assert!(code < order[2] && order[1] < unit_test && unit_test < order[3] && unit_test < order[4], "{texts:#?}");
    let (long_code, doc_window) = (position("fn long_doc_code_marker"), position("doc_window_marker"));
    assert!(!texts[doc_window].contains("fn long_doc_code_marker"), "the doc comment is a window of its own");
    assert!(order[1].max(code).max(long_code) < doc_window && doc_window < order[2].min(unit_test), "{texts:#?}");
}

#[test]
fn after_a_clone_the_latest_commits_are_embedded_first() {
    use raggrep::index::{IndexLocation, IndexOptions, update};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    git(&["init", "-q"]);
    // Enough work for the order to consult git: a big, old file.
    let filler: String = (0..80).map(|i| format!("def filler_{i}(x):\n    return x + {i}\n\n\n")).collect();
    write("a_old/filler.py", &filler);
    write("b_old/settled.py", "def settled_marker():\n    return 1\n");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "old"]);
    write("z_new/current.py", "def current_marker():\n    return 2\n");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "new"]);
    // Like a checkout: the newest commit's file has the oldest mtime.
    let stamp = |rel: &str, secs: u64| {
        let file = std::fs::File::options().write(true).open(root.join(rel)).unwrap();
        file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
    };
    stamp("z_new/current.py", 1_000_000_000);
    stamp("b_old/settled.py", 1_700_000_100);
    stamp("a_old/filler.py", 1_700_000_000);

    let location = IndexLocation::new(root, None).unwrap();
    let embedder = RecordingEmbedder(FakeEmbedder::new(64), Mutex::new(Vec::new()));
    let options = IndexOptions { embed_batch: 1, shared_cache: None, ..IndexOptions::default() };
    update(&location, &embedder, &options, &mut |_| {}).unwrap();
    let texts = embedder.1.lock().unwrap().clone();
    let position = |marker: &str| texts.iter().position(|t| t.contains(marker)).unwrap();
    assert_eq!(position("current_marker"), 0, "the latest commit's file comes first: {texts:#?}");
    assert!(position("settled_marker") < position("filler_0("), "one commit's files: the newest first: {texts:#?}");
}
