//! The real embedder against independent reference vectors (Python onnxruntime + tokenizers,
//! made by scripts/make_reference_vectors.py) and a semantic sanity check. Needs the assets from
//! `scripts/bootstrap.sh`.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use raggrep::embed::{Assets, EmbedOptions, Embedder, Layout, OnnxEmbedder, QueryEncoder, Vector};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    model_id: String,
    cases: Vec<Case>,
    fp32_model_id: String,
    fp32_cases: Vec<Case>,
    query_model_id: String,
    query_model_cases: Vec<Case>,
    rerank_model_id: String,
    rerank_cases: Vec<RerankCase>,
}

#[derive(Deserialize)]
struct RerankCase {
    query: String,
    passage: String,
    n_tokens: usize,
    score: f32,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    n_tokens: usize,
    vector: Vec<f32>,
}

/// The reference vectors as Python's onnxruntime computes them on this machine
/// (`scripts/make_reference_vectors.py`, run once per test process with the bootstrap's venv).
///
/// Why not only the committed file: the int8 model's integer kernels differ between CPUs (with
/// and without VNNI, the u8×s8 products are summed differently), so the same model and runtime
/// give cosines of 0.990–0.998 to vectors made on another machine; measured 2026-11-24 on an
/// AVX2-only EPYC against the committed file. The committed file still pins the recipe: every
/// machine's reference must stay close to it (see `the_reference_is_the_committed_one`).
fn reference() -> Reference {
    static MACHINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let json = MACHINE.get_or_init(|| {
        let home = raggrep::embed::cache_dir().expect("a cache directory");
        let python = home.join("tools/venv/bin/python");
        let out = tempfile::NamedTempFile::new().unwrap();
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let made = std::process::Command::new(&python)
            .arg(repo.join("scripts/make_reference_vectors.py"))
            .arg("--home")
            .arg(&home)
            .arg("--out")
            .arg(out.path())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}; run `bash scripts/bootstrap.sh` first", python.display()));
        assert!(made.status.success(), "make_reference_vectors.py: {}", String::from_utf8_lossy(&made.stderr));
        std::fs::read_to_string(out.path()).unwrap()
    });
    serde_json::from_str(json).expect("reference vectors parse")
}

fn committed_reference() -> Reference {
    serde_json::from_str(include_str!("../data/reference_vectors.json")).expect("reference vectors parse")
}

#[test]
fn the_reference_is_the_committed_one() {
    // Same models, same texts, same recipe as the committed vectors: only the CPU's integer
    // kernels may move the int8 vectors (0.990 at worst so far), and fp32 not at all.
    let (here, committed) = (reference(), committed_reference());
    assert_eq!((&here.model_id, &here.query_model_id), (&committed.model_id, &committed.query_model_id));
    for (cases, committed_cases, floor) in [
        (&here.cases, &committed.cases, 0.98),
        (&here.query_model_cases, &committed.query_model_cases, 0.98),
        (&here.fp32_cases, &committed.fp32_cases, 0.9999),
    ] {
        assert_eq!(cases.len(), committed_cases.len());
        for (case, committed_case) in cases.iter().zip(committed_cases) {
            assert_eq!((&case.text, case.n_tokens), (&committed_case.text, committed_case.n_tokens));
            let cos = cosine(&Vector::normalized(case.vector.clone()), &committed_case.vector);
            assert!(cos >= floor, "cosine {cos} to the committed reference for {:?}", case.text);
        }
    }
}

#[test]
fn the_reranker_matches_the_reference() {
    // Same pair tokenisation (only the passage cut at 128 tokens; both sides when the query
    // alone is too long), pooling and head as the Python recipe the reranker was evaluated with.
    let (here, committed) = (reference(), committed_reference());
    assert_eq!(here.rerank_model_id, committed.rerank_model_id);
    let embedder = embedder(None, EmbedOptions::default());
    let reranker = embedder.reranker().expect("the bootstrap installs a reranker");
    assert_eq!(reranker.id(), here.rerank_model_id);
    assert!(here.rerank_cases.iter().any(|c| c.n_tokens == 128), "a case exercises truncation");
    for (case, committed_case) in here.rerank_cases.iter().zip(&committed.rerank_cases) {
        assert_eq!((&case.query, &case.passage), (&committed_case.query, &committed_case.passage));
        // Another CPU's int8 kernels move a score a little, never its sign or size: on an
        // AVX-512 VNNI CPU the scores of the committed (AVX2) reference moved by up to 0.40
        // (-2.24 -> -1.84), while the embeddings kept cosine 0.989.
        assert!(
            (case.score - committed_case.score).abs() < 0.5 && case.score.signum() == committed_case.score.signum(),
            "{} vs committed {}",
            case.score,
            committed_case.score
        );
        let score = reranker.score(&case.query, &[case.passage.as_str()]).unwrap()[0];
        assert!((score - case.score).abs() < 0.02, "rust {score} vs python {} for {:?}", case.score, case.query);
    }
    // Scores of several passages come back in order and do not depend on their neighbours.
    let passages: Vec<&str> = here.rerank_cases.iter().map(|c| c.passage.as_str()).collect();
    let query = &here.rerank_cases[1].query;
    let together = reranker.score(query, &passages).unwrap();
    assert_eq!(together.len(), passages.len());
    for (passage, score) in passages.iter().zip(&together) {
        assert_eq!(reranker.score(query, &[passage]).unwrap()[0], *score);
    }
}

#[test]
fn the_reranker_prefers_the_code_a_query_describes() {
    let embedder = embedder(None, EmbedOptions::default());
    let reranker = embedder.reranker().unwrap();
    let read = "src/fs.rs\n/// Reads a whole file into a string.\npub fn read_text(path: &Path) -> io::Result<String> {\n    fs::read_to_string(path)\n}";
    let add = "src/math.rs\npub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}";
    let scores = reranker.score("load the contents of a file as text", &[read, add]).unwrap();
    assert!(scores[0] > scores[1] + 1.0, "{scores:?}");
}

#[test]
fn a_missing_or_damaged_reranker_is_named_not_fatal() {
    let installed = Assets::locate(None, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for file in ["model.onnx", "tokenizer.json", "raggrep-model.json"] {
        std::os::unix::fs::symlink(installed.model_dir.join(file), dir.path().join(file)).unwrap();
    }
    let assets = Assets { model_dir: dir.path().to_path_buf(), ..installed.clone() };
    let embedder = OnnxEmbedder::load(assets.clone(), EmbedOptions::default()).unwrap();
    let err = embedder.reranker().err().expect("no reranker installed").to_string();
    assert!(err.contains("no reranker") && err.contains("bootstrap"), "{err}");
    assert!(embedder.embed_query("still searches").is_ok());

    std::os::unix::fs::symlink(installed.model_dir.join("rerank-model.onnx"), dir.path().join("rerank-model.onnx"))
        .unwrap();
    std::fs::write(dir.path().join("rerank-model.json"), "{not json").unwrap();
    let embedder = OnnxEmbedder::load(assets.clone(), EmbedOptions::default()).unwrap();
    let err = embedder.reranker().err().expect("damaged metadata").to_string();
    assert!(err.contains("rerank-model.json"), "{err}");

    // A head that does not fit the model's output is refused when it runs, not mis-scored.
    std::fs::write(
        dir.path().join("rerank-model.json"),
        r#"{"id": "short-head", "max_tokens": 128, "weight": 0.5, "head": {"w": [1.0, 2.0], "b": 0.0}}"#,
    )
    .unwrap();
    let embedder = OnnxEmbedder::load(assets, EmbedOptions::default()).unwrap();
    let err = embedder.reranker().unwrap().score("q", &["p"]).unwrap_err().to_string();
    assert!(err.contains("2 weights for a 384-dimensional output"), "{err}");
}

fn embedder(model: Option<&str>, options: EmbedOptions) -> OnnxEmbedder {
    let assets = Assets::locate(model, None)
        .unwrap_or_else(|e| panic!("assets missing ({e}); run `bash scripts/bootstrap.sh` first"));
    OnnxEmbedder::load(assets, options).expect("model loads")
}

fn cosine(a: &Vector, b: &[f32]) -> f32 {
    Vector::normalized(b.to_vec()).dot(a)
}

fn symmetric() -> EmbedOptions {
    EmbedOptions { query_encoder: QueryEncoder::Document, ..EmbedOptions::default() }
}

#[test]
fn query_path_matches_the_reference() {
    let reference = reference();
    let embedder = embedder(None, symmetric());
    assert_eq!(embedder.query_model(), None);
    assert_eq!(embedder.info().id, reference.model_id);
    assert_eq!(embedder.info().dim, 384);
    for case in &reference.cases {
        assert_eq!(embedder.count_tokens(&case.text).unwrap(), case.n_tokens, "{:?}", case.text);
        let vector = embedder.embed_query(&case.text).unwrap();
        assert!((vector.norm() - 1.0).abs() < 1e-4);
        let cos = cosine(&vector, &case.vector);
        assert!(cos >= 0.999, "cosine {cos} for {:?}", case.text);
    }
}

#[test]
fn queries_go_through_the_installed_query_model() {
    // The bootstrap installs a query model beside the default model; queries use it, documents
    // (and so the index and its model id) do not.
    let reference = reference();
    let embedder = embedder(None, EmbedOptions::default());
    assert_eq!(embedder.info().id, reference.model_id, "the index's model id is the document model's");
    assert_eq!(embedder.query_model(), Some(reference.query_model_id.as_str()));
    for (case, document_case) in reference.query_model_cases.iter().zip(&reference.cases) {
        let vector = embedder.embed_query(&case.text).unwrap();
        let cos = cosine(&vector, &case.vector);
        assert!(cos >= 0.999, "cosine {cos} to the query model's reference for {:?}", case.text);
        let document = embedder.embed_documents(&[case.text.as_str()]).unwrap().pop().unwrap();
        assert!(cosine(&document, &document_case.vector) >= 0.999, "documents still use the document model");
    }
    // A fine-tuned query side really is a different network (else this test proves nothing).
    let moved = reference
        .query_model_cases
        .iter()
        .zip(&reference.cases)
        .any(|(q, d)| Vector::normalized(q.vector.clone()).dot(&Vector::normalized(d.vector.clone())) < 0.99);
    assert!(moved, "query model vectors equal the document model's");
}

#[test]
fn a_query_model_trained_for_another_document_model_is_ignored() {
    let installed = Assets::locate(None, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for file in ["model.onnx", "tokenizer.json", "raggrep-model.json", "query-model.onnx"] {
        std::os::unix::fs::symlink(installed.model_dir.join(file), dir.path().join(file)).unwrap();
    }
    std::fs::write(
        dir.path().join("query-model.json"),
        r#"{"id": "stale-tower", "document_model_sha256": "0000000000000000000000000000000000000000000000000000000000000000"}"#,
    )
    .unwrap();
    let assets = Assets { model_dir: dir.path().to_path_buf(), ..installed.clone() };
    assert_eq!(assets.query_model(), None);
    let embedder = OnnxEmbedder::load(assets, EmbedOptions::default()).unwrap();
    assert_eq!(embedder.query_model(), None);
    let reference = reference();
    let vector = embedder.embed_query(&reference.cases[0].text).unwrap();
    assert!(cosine(&vector, &reference.cases[0].vector) >= 0.999, "falls back to the document model");

    // Unreadable metadata: ignored as well, never an error.
    std::fs::write(dir.path().join("query-model.json"), "{not json").unwrap();
    assert_eq!(Assets { model_dir: dir.path().to_path_buf(), ..installed }.query_model(), None);
}

#[test]
fn document_path_matches_the_reference_in_any_order() {
    // The default document path (length-sorted, batch 1) gives exactly the query-path vectors,
    // and the output order matches the input order whatever the sort does.
    let reference = reference();
    let embedder = embedder(None, EmbedOptions::default());
    let texts: Vec<&str> = reference.cases.iter().rev().map(|c| c.text.as_str()).collect();
    let vectors = embedder.embed_documents(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for (case, vector) in reference.cases.iter().rev().zip(&vectors) {
        let cos = cosine(vector, &case.vector);
        assert!(cos >= 0.999, "cosine {cos} for {:?}", case.text);
    }
}

#[test]
fn padding_does_not_leak_into_pooled_vectors() {
    // All cases in padded batches of mixed lengths, sorted and unsorted. With fp32 weights the
    // result must equal the unpadded reference; the int8 model quantises activations per batch,
    // so its rows influence each other slightly (why the default batch size is 1).
    let reference = reference();
    for sort_by_length in [true, false] {
        let options = EmbedOptions { batch_size: 4, sort_by_length, ..EmbedOptions::default() };
        let fp32 = embedder(Some("all-minilm-l6-v2-fp32"), options.clone());
        let texts: Vec<&str> = reference.fp32_cases.iter().map(|c| c.text.as_str()).collect();
        for (case, vector) in reference.fp32_cases.iter().zip(&fp32.embed_documents(&texts).unwrap()) {
            let cos = cosine(vector, &case.vector);
            assert!(cos >= 0.999, "fp32 cosine {cos} for {:?} (sorted: {sort_by_length})", case.text);
        }
        let int8 = embedder(None, options);
        let texts: Vec<&str> = reference.cases.iter().map(|c| c.text.as_str()).collect();
        for (case, vector) in reference.cases.iter().zip(&int8.embed_documents(&texts).unwrap()) {
            let cos = cosine(vector, &case.vector);
            assert!(cos >= 0.98, "int8 cosine {cos} for {:?} (sorted: {sort_by_length})", case.text);
        }
    }
}

#[test]
fn lanes_and_one_shared_session_give_the_same_vectors_in_order() {
    // Lanes deal a length-sorted batch round-robin over sessions and put the vectors back in the
    // caller's order; each text still runs alone (batch 1), so every vector equals what one
    // session embedding the texts one by one gives, whatever its lane.
    let reference = reference();
    let texts: Vec<&str> = reference.cases.iter().map(|c| c.text.as_str()).collect();
    let shared = embedder(None, EmbedOptions { threads: 2, layout: Layout::Shared, ..EmbedOptions::default() });
    let lanes = embedder(None, EmbedOptions { threads: 2, layout: Layout::Lanes, ..EmbedOptions::default() });
    let (a, b) = (shared.embed_documents(&texts).unwrap(), lanes.embed_documents(&texts).unwrap());
    assert_eq!(a.len(), texts.len());
    assert_eq!(b.len(), texts.len());
    for ((text, x), y) in texts.iter().zip(&a).zip(&b) {
        let cos = cosine(x, y.as_slice());
        assert!(cos >= 0.9999, "cosine {cos} between layouts for {text:?}");
    }
    for (case, vector) in reference.cases.iter().zip(&b) {
        assert!(cosine(vector, &case.vector) >= 0.999, "lane vector off its reference for {:?}", case.text);
    }
    assert_eq!(Layout::Lanes.split(2), (2, 1));
    assert_eq!(Layout::Lanes.split(16), (4, 4));
    assert_eq!(Layout::Shared.split(16), (1, 16));
}

#[test]
fn fp32_model_matches_its_reference() {
    let reference = reference();
    let embedder = embedder(Some("all-minilm-l6-v2-fp32"), EmbedOptions::default());
    assert_eq!(embedder.info().id, reference.fp32_model_id);
    let texts: Vec<&str> = reference.fp32_cases.iter().map(|c| c.text.as_str()).collect();
    let vectors = embedder.embed_documents(&texts).unwrap();
    for (case, vector) in reference.fp32_cases.iter().zip(&vectors) {
        let cos = cosine(vector, &case.vector);
        assert!(cos >= 0.999, "cosine {cos} for {:?}", case.text);
    }
}

#[test]
fn a_query_about_reading_files_prefers_read_file() {
    let embedder = embedder(None, EmbedOptions::default());
    let query = embedder.embed_query("read the contents of a file from disk").unwrap();
    let docs = embedder
        .embed_documents(&[
            "fn read_file(path: &Path) -> io::Result<String> {\n    std::fs::read_to_string(path)\n}",
            "fn checksum(bytes: &[u8]) -> u32 {\n    bytes.iter().fold(0u32, |acc, b| acc.wrapping_mul(31).wrapping_add(*b as u32))\n}",
        ])
        .unwrap();
    let (read, sum) = (query.dot(&docs[0]), query.dot(&docs[1]));
    assert!(read > sum + 0.1, "read_file {read} vs checksum {sum}");
}

#[test]
fn missing_assets_name_the_fix() {
    let err = Assets::locate(Some("/nonexistent/model-dir"), None).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("/nonexistent/model-dir"), "{message}");
    assert!(message.contains("scripts/bootstrap.sh"), "{message}");
    let err = Assets::locate(None, Some(std::path::Path::new("/nonexistent/libonnxruntime.so"))).unwrap_err();
    assert!(err.to_string().contains("ORT_DYLIB_PATH"), "{err}");
}

#[test]
fn a_repeated_query_runs_the_model_once() {
    let model = embedder(None, EmbedOptions::default());
    let first = model.embed_query("where do we validate API tokens?").unwrap();
    let again = model.embed_query("where do we validate API tokens?").unwrap();
    assert_eq!(first, again);
    assert_eq!(model.query_inferences(), 1, "the second asking is answered from the memo");
    let other = model.embed_query("parse the configuration file").unwrap();
    assert_ne!(first, other);
    assert_eq!(model.embed_query("where do we validate API tokens?").unwrap(), first);
    assert_eq!(model.query_inferences(), 3, "only the last query is remembered");
}

/// A model whose metadata reads fewer tokens than the engine's limit is fed no more than that:
/// the tokenizer truncates at the model's own `max_tokens`, so the vector of a long text is the
/// vector of its beginning.
#[test]
fn a_models_own_token_limit_truncates_its_input() {
    let installed = Assets::locate(None, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for file in ["model.onnx", "tokenizer.json"] {
        std::os::unix::fs::symlink(installed.model_dir.join(file), dir.path().join(file)).unwrap();
    }
    let metadata: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(installed.model_dir.join("raggrep-model.json")).unwrap())
            .unwrap();
    let mut short = metadata.clone();
    short["id"] = serde_json::json!("short-reader");
    short["max_tokens"] = serde_json::json!(32);
    std::fs::write(dir.path().join("raggrep-model.json"), short.to_string()).unwrap();
    let embedder =
        OnnxEmbedder::load(Assets { model_dir: dir.path().to_path_buf(), ..installed.clone() }, symmetric()).unwrap();
    assert_eq!(embedder.info().max_tokens, 32);
    let long = "fn parse_config(path: &Path) -> Result<Config> { read(path)?.parse() }\n".repeat(20);
    assert_eq!(embedder.count_tokens(&long).unwrap(), 32);
    // The same model reading at its full length sees more of the text: another vector.
    let full = embedder_at(&installed, 256);
    assert!(full.count_tokens(&long).unwrap() > 32);
    let head: String = long.lines().take(2).collect::<Vec<_>>().join("\n");
    let truncated = embedder.embed_documents(&[long.as_str()]).unwrap().remove(0);
    let head_vector = full.embed_documents(&[head.as_str()]).unwrap().remove(0);
    assert!(truncated.dot(&full.embed_documents(&[long.as_str()]).unwrap()[0]) < 0.9999);
    assert!(truncated.dot(&head_vector) > 0.9, "the truncated vector reads the text's beginning");
}

fn embedder_at(installed: &Assets, max_tokens: usize) -> OnnxEmbedder {
    OnnxEmbedder::load(installed.clone(), EmbedOptions { max_tokens, ..symmetric() }).unwrap()
}

/// The static tier tokenises many texts through a word memo ([`OnnxEmbedder::content_ids_of`]);
/// its ids must be the tokenizer's own, text for text: on this repository's source (real code,
/// cut at a model's limit and under it, at two limits), and on what the memo must hand back to
/// the tokenizer (non-ASCII, control characters, an added token written in the text, a word
/// longer than WordPiece reads).
#[test]
fn the_static_tiers_word_memo_gives_the_tokenizers_own_ids() {
    let mut texts: Vec<String> = Vec::new();
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("server/src");
    for (n, entry) in walkdir(&source).iter().enumerate() {
        let text = std::fs::read_to_string(entry).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        texts.extend(lines.chunks(if n % 4 == 0 { 7 } else { 60 }).map(|piece| piece.join("\n")));
    }
    assert!(texts.len() > 1_000, "{} texts", texts.len());
    texts.extend(
        [
            "",
            "   \t\n  ",
            "fn café() -> Naïve { 東京 }",
            "let x = 1;\x0c\x07let y = [CLS] + [sep] + [MASK]x;",
            "a\u{00a0}b\u{2003}c",
            &"x".repeat(101),
            &format!("{} {}", "y".repeat(100), "z".repeat(99)),
            "HTTPServer::new(getURL()) // TODO(bob): 100% DONE!!! #[derive(Debug)] <T: ?Sized>",
            "\r\n\tcamelCaseIdentifier snake_case_name SCREAMING_CONST kebab-case-word",
        ]
        .map(String::from),
    );
    let ascii = texts.iter().filter(|t| t.is_ascii()).count();
    assert!(ascii * 10 > texts.len() * 9, "mostly ASCII code, so the memo is what is compared");
    for max_tokens in [256, 40] {
        let embedder = embedder_at(&Assets::locate(None, None).unwrap(), max_tokens);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let memo = embedder.content_ids_of(&refs).unwrap();
        for (text, ids) in texts.iter().zip(&memo) {
            assert_eq!(ids, &embedder.content_ids(text).unwrap(), "max_tokens {max_tokens}, text {text:?}");
        }
        assert!(memo.iter().any(|ids| ids.len() == max_tokens - 2), "some texts reach the limit");
    }
}

fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walkdir(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}
