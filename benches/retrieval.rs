//! Retrieval quality on real code nobody here wrote (CodeSearchNet-style): queries are the first
//! sentences of doc comments, gold is the documented function, and the corpus has exactly those
//! comments blanked (line numbers kept) so the answer cannot be string-matched.
//!
//! `bash benches/retrieval/build.sh [--quick]` builds the data; then
//! `cargo bench --bench retrieval -- [--quick] [--model NAME] [--json OUT] [--check [--floor chunk_r5=X,chunk_mrr=Y,file_r1=Z]] [--no-baseline] [--rerank [--rerank-floor chunk_r5=X,...]] [--questions [--question-floor default=X,words=Y]]`
//! (`--rerank` adds the `--rerank` search mode as a system; `--rerank-floor` checks it as `--floor`
//! checks the default)
//! `cargo bench --bench retrieval -- --header none|symbol|path --chunk-tokens N` evaluates an
//! indexing variant (embedding header, chunk budget) with hybrid/dense/lexical only; so does
//! `--vectors int8` (the vector file in int8, converted from a copy of the f32 index).
//! `--split tune|test` evaluates one half of `benches/retrieval/split.json` (issue 16: choices
//! are made on TUNE, TEST is only reported). `--data DIR` reads another dataset of the same
//! format (e.g. `research/training/build_fusion_data.sh`'s training packages), and
//! `--dump-features FILE` writes every query's hybrid candidates with the learned fusion's
//! features as JSON lines, for `research/training/fit_fusion.py`. `--foreign` also asks each
//! package as many queries of other packages (no answer there) and reports how the default
//! search's confidence separates answers from non-answers and how well its hit scores are
//! calibrated (`--confidence-floor auc=X,foreign_flagged=Y,hit_calibration=Z` checks them with
//! `--check`); with `--dump-features` those queries are
//! dumped too (`"gold": null`, for `research/training/fit_confidence.py`). `--team URL` (password in
//! `PGPASSWORD`) also pushes every package to that team index (PostgreSQL + pgvector) as a
//! repository of its own and asks it each query with `--repo` set to that package: the team
//! index's ranking beside the local one, on the same queries. `--questions` also asks each
//! package the natural questions `benches/retrieval/questions.json` holds for it (a component,
//! how a part works, a symbol by name, each answered by files: issue 52) and reports their
//! NDCG@10 as semble scores its benchmark, for the default search and for the words alone (the
//! first answer before any vector); `--question-floor default=X,words=Y` checks them with `--check`.
//!
//! Systems, all in one run on the same queries: raggrep hybrid (several fusions), dense and
//! lexical, and the naive baseline of design seeds 000/004 (fixed 40-line windows, dense-only
//! cosine top-k, no header). Metrics: file- and chunk-level Recall@1/5/10 and MRR@10 (a chunk hit
//! is the gold path with overlapping lines).

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/support/fixture.rs"]
mod fixture;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use raggrep::chunk::EmbedHeader;
#[path = "support/static_tier.rs"]
mod static_tier;

use raggrep::embed::{Assets, EmbedOptions, Embedder, OnnxEmbedder, QueryEncoder, Vector};
use raggrep::index::{self, IndexLocation, IndexOptions, Snapshot, VectorEncoding};
use raggrep::search::{Fusion, Mode, Query, search_with};
use raggrep::walk::{WalkOptions, read_source, walk};
use serde::Deserialize;

#[derive(Deserialize, Clone)]
struct Gold {
    id: String,
    package: String,
    language: String,
    query: String,
    path: String,
    start_line: u32,
    end_line: u32,
    /// train / validation, in datasets of training packages.
    #[serde(default)]
    split: Option<String>,
}

/// A natural question about one package (`benches/retrieval/questions.json`): its answer is
/// files of that package's corpus.
#[derive(Deserialize)]
struct Question {
    package: String,
    category: String,
    query: String,
    targets: Vec<String>,
}

fn load_questions() -> Vec<Question> {
    #[derive(Deserialize)]
    struct File {
        questions: Vec<Question>,
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/retrieval/questions.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str::<File>(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())).questions
}

/// NDCG@10 of hits (their paths, best first) against file targets, as semble scores its
/// benchmark: a target counts at the first of the ten hits in its file, and the ideal ranking
/// puts every target (at most ten) first.
fn question_ndcg(paths: &[String], targets: &[String]) -> f64 {
    let ranks: std::collections::BTreeSet<usize> =
        targets.iter().filter_map(|t| paths.iter().take(10).position(|p| p == t)).collect();
    let gain = |rank: usize| 1.0 / ((rank + 2) as f64).log2();
    let ideal: f64 = (0..targets.len().min(10)).map(gain).sum();
    ranks.into_iter().map(gain).sum::<f64>() / ideal
}

/// NDCG@10 sums per (system, category) of the natural questions.
#[derive(Default)]
struct QuestionScores {
    sums: BTreeMap<(String, String), (f64, usize)>,
}

impl QuestionScores {
    fn add(&mut self, system: &str, category: &str, ndcg: f64) {
        for scope in [category, "all"] {
            let entry = self.sums.entry((system.to_string(), scope.to_string())).or_default();
            entry.0 += ndcg;
            entry.1 += 1;
        }
    }

    fn mean(&self, system: &str, scope: &str) -> Option<(f64, usize)> {
        self.sums.get(&(system.to_string(), scope.to_string())).map(|&(sum, n)| (sum / n as f64, n))
    }
}

/// The natural questions' systems: the default search, and the words alone.
const QUESTION_SYSTEMS: [(&str, &str, Mode); 2] = [
    ("default", "raggrep hybrid (default)", Mode::Hybrid),
    ("words", "raggrep lexical (the first answer)", Mode::Lexical),
];

/// A floor flag's value (`name=value,...`), as (name, minimum) pairs.
fn parse_floors<'a>(flag: &str, list: &'a str) -> Vec<(&'a str, f64)> {
    list.split(',')
        .map(|floor| {
            let (name, min) = floor.split_once('=').unwrap_or_else(|| panic!("{flag} name=value,..."));
            (name, min.parse().unwrap_or_else(|_| panic!("{flag} value is a number")))
        })
        .collect()
}

/// A query's hybrid candidates with the learned fusion's features, as `--dump-features` writes
/// them: `[path, start line, end line, features]`.
fn dumped_candidates(snapshot: &Snapshot, vector: &Vector, text: &str) -> Vec<serde_json::Value> {
    let query = Query { k: 10, ..Query::new(text) };
    raggrep::search::hybrid_candidates(snapshot, Some(vector), &query)
        .into_iter()
        .filter_map(|c| {
            let chunk = snapshot.chunk(c.chunk)?;
            Some(serde_json::json!([chunk.path, chunk.start_line, chunk.end_line, c.features]))
        })
        .collect()
}

fn dump_line(out: &mut impl std::io::Write, row: &serde_json::Value) {
    writeln!(out, "{row}").unwrap();
}

/// `count` queries of other packages for `package`'s index, alternately from the next package
/// of the same language and from one of another language (cyclic in package order), so the
/// negatives hold both "same kind of code, not here" and "another world".
fn foreign_queries<'a>(by_package: &'a BTreeMap<String, Vec<Gold>>, package: &str, count: usize) -> Vec<&'a Gold> {
    let names: Vec<&String> = by_package.keys().collect();
    let Some(at) = names.iter().position(|n| *n == package) else { return Vec::new() };
    let language = |name: &str| by_package[name].first().map(|g| g.language.as_str());
    let names = &names;
    let cyclic = |start: usize| (1..names.len()).map(move |step| names[(at + start + step) % names.len()]);
    let same = cyclic(0).find(|n| language(n) == language(package));
    let other = cyclic(names.len() / 2).find(|n| language(n) != language(package));
    let sources: Vec<&Vec<Gold>> = [same, other].into_iter().flatten().map(|n| &by_package[n.as_str()]).collect();
    (0..count)
        .filter_map(|j| {
            let golds = sources.get(j % sources.len().max(1))?;
            golds.get((j / sources.len()) % golds.len().max(1))
        })
        .collect()
}

/// One ranked answer: path and line range.
type Ranked = Vec<(String, u32, u32)>;

#[derive(Default, Clone)]
struct Scores {
    n: usize,
    file: [f64; 3],
    chunk: [f64; 3],
    file_mrr: f64,
    chunk_mrr: f64,
}

impl Gold {
    /// A ranked answer is the gold chunk: its path, with overlapping lines.
    fn is_hit(&self, (path, start, end): &(String, u32, u32)) -> bool {
        *path == self.path && *start <= self.end_line && self.start_line <= *end
    }
}

impl Scores {
    fn add(&mut self, gold: &Gold, ranked: &Ranked) {
        self.n += 1;
        let file_rank = ranked.iter().position(|(p, _, _)| *p == gold.path);
        let chunk_rank = ranked.iter().position(|r| gold.is_hit(r));
        for (i, k) in [1, 5, 10].into_iter().enumerate() {
            self.file[i] += f64::from(u8::from(file_rank.is_some_and(|r| r < k)));
            self.chunk[i] += f64::from(u8::from(chunk_rank.is_some_and(|r| r < k)));
        }
        self.file_mrr += file_rank.filter(|&r| r < 10).map_or(0.0, |r| 1.0 / (r + 1) as f64);
        self.chunk_mrr += chunk_rank.filter(|&r| r < 10).map_or(0.0, |r| 1.0 / (r + 1) as f64);
    }

    fn pct(&self, x: f64) -> f64 {
        100.0 * x / self.n.max(1) as f64
    }
}

/// The default search's confidence against what happened: own queries (the answer is in the
/// index; was it in the first 5?) and foreign ones (another package's question: no answer here).
#[derive(Default)]
struct ConfidenceStats {
    own: Vec<(f64, bool, bool)>,
    foreign: Vec<(f64, bool)>,
    /// Every hit's score (the probability that it is the answer) and whether it is, own and
    /// foreign queries alike; `first` marks each query's first hit.
    hits: Vec<HitScore>,
    /// The same for `--rerank`'s hits (own queries only: foreign ones are asked of the default).
    reranked_hits: Vec<HitScore>,
}

struct HitScore {
    score: f64,
    answer: bool,
    first: bool,
    own: bool,
}

impl ConfidenceStats {
    fn add_own(&mut self, confidence: raggrep::search::Confidence, gold: &Gold, ranked: &Ranked) {
        let found = ranked.iter().take(5).any(|r| gold.is_hit(r));
        self.own.push((f64::from(confidence.value), confidence.confident, found));
    }

    fn hit_scores(scores: &[f32], answer: impl Fn(usize) -> bool, own: bool) -> Vec<HitScore> {
        scores
            .iter()
            .enumerate()
            .map(|(i, &s)| HitScore { score: f64::from(s), answer: answer(i), first: i == 0, own })
            .collect()
    }

    fn add_hits(&mut self, scores: &[f32], answer: impl Fn(usize) -> bool, own: bool) {
        self.hits.extend(Self::hit_scores(scores, answer, own));
    }

    fn add_reranked_hits(&mut self, scores: &[f32], answer: impl Fn(usize) -> bool) {
        self.reranked_hits.extend(Self::hit_scores(scores, answer, true));
    }

    /// 1 − the hit scores' expected calibration error (10 equal-width bins): 1 when a hit that
    /// scores p is the answer p of the time.
    fn hit_calibration(&self) -> f64 {
        Self::calibration(self.hits.iter())
    }

    fn calibration<'a>(hits: impl Iterator<Item = &'a HitScore>) -> f64 {
        // Per bin: the sum of the scores and the number of answers.
        let mut bins = [(0.0f64, 0.0f64); 10];
        let mut n = 0usize;
        for h in hits {
            let bin = &mut bins[((h.score * 10.0) as usize).min(9)];
            bin.0 += h.score;
            bin.1 += f64::from(u8::from(h.answer));
            n += 1;
        }
        1.0 - bins.iter().map(|&(p, y)| (p - y).abs() / n.max(1) as f64).sum::<f64>()
    }

    /// Rank AUC of the confidence for "the answer is in the first 5" over every query.
    fn auc(&self) -> f64 {
        let scored: Vec<(f64, bool)> = self
            .own
            .iter()
            .map(|&(v, _, found)| (v, found))
            .chain(self.foreign.iter().map(|&(v, _)| (v, false)))
            .collect();
        let (pos, neg): (Vec<f64>, Vec<f64>) = (
            scored.iter().filter(|x| x.1).map(|x| x.0).collect(),
            scored.iter().filter(|x| !x.1).map(|x| x.0).collect(),
        );
        let pairs = (pos.len() * neg.len()).max(1) as f64;
        let wins: f64 = pos
            .iter()
            .map(|p| {
                neg.iter()
                    .map(|n| {
                        if p > n {
                            1.0
                        } else if p == n {
                            0.5
                        } else {
                            0.0
                        }
                    })
                    .sum::<f64>()
            })
            .sum();
        wins / pairs
    }

    fn share<T>(items: &[T], pick: impl Fn(&T) -> bool) -> f64 {
        items.iter().filter(|x| pick(x)).count() as f64 / items.len().max(1) as f64
    }

    fn foreign_flagged(&self) -> f64 {
        Self::share(&self.foreign, |x| !x.1)
    }

    fn print(&self) {
        let found_when = |confident: bool| {
            let group: Vec<_> = self.own.iter().filter(|x| x.1 == confident).collect();
            Self::share(&group, |x| x.2) * 100.0
        };
        println!(
            "**Confidence of the default search** ({} own queries, {} foreign: another package's questions, no answer here)\n",
            self.own.len(),
            self.foreign.len()
        );
        let found: Vec<_> = self.own.iter().filter(|x| x.2).collect();
        println!(
            "| AUC (answer in the first 5) | own queries confident | chunk R@5 when confident | when not | found answers flagged | foreign flagged \"no confident match\" |"
        );
        println!("|---:|---:|---:|---:|---:|---:|");
        println!(
            "| {:.3} | {:.1} % | {:.1} | {:.1} | {:.1} % | {:.1} % |\n",
            self.auc(),
            Self::share(&self.own, |x| x.1) * 100.0,
            found_when(true),
            found_when(false),
            Self::share(&found, |x| !x.1) * 100.0,
            self.foreign_flagged() * 100.0
        );
        let first: Vec<&HitScore> = self.hits.iter().filter(|h| h.first).collect();
        let mean =
            |pick: &dyn Fn(&HitScore) -> f64| first.iter().map(|h| pick(h)).sum::<f64>() / first.len().max(1) as f64;
        println!(
            "**Hit scores of the default search** (the probability that a hit is the answer; {} hits, own and foreign queries): calibration {:.3} (1 − ECE), first hits score {:.3} on average and are the answer {:.3} of the time\n",
            self.hits.len(),
            self.hit_calibration(),
            mean(&|h| h.score),
            mean(&|h| f64::from(u8::from(h.answer)))
        );
        if !self.reranked_hits.is_empty() {
            println!(
                "Own queries only: calibration {:.3}; with `--rerank` (scores read after the reranker, calibrated without it) {:.3}\n",
                Self::calibration(self.hits.iter().filter(|h| h.own)),
                Self::calibration(self.reranked_hits.iter())
            );
        }
    }
}

fn bench_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("RAGGREP_BENCH_DIR") {
        return PathBuf::from(dir);
    }
    raggrep::embed::cache_dir().unwrap().join("bench")
}

/// The naive baseline: 40-line windows of every indexed file, embedded raw, cosine top-k.
#[derive(Default)]
struct Baseline {
    windows: Vec<(String, u32, u32)>,
    vectors: Vec<Vector>,
}

impl Baseline {
    fn build(corpus: &Path, embedder: &OnnxEmbedder) -> Baseline {
        let report = walk(&[corpus.to_path_buf()], &WalkOptions::default()).unwrap();
        let mut windows = Vec::new();
        let mut texts = Vec::new();
        for file in &report.files {
            let Ok(source) = read_source(&file.abs_path, 1 << 20) else { continue };
            let lines: Vec<&str> = source.text.lines().collect();
            for (w, chunk) in lines.chunks(40).enumerate() {
                let text = chunk.join("\n");
                if text.trim().is_empty() {
                    continue;
                }
                let start = (w * 40 + 1) as u32;
                windows.push((file.rel_path.clone(), start, start + chunk.len() as u32 - 1));
                texts.push(text);
            }
        }
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_documents(&refs).unwrap();
        Baseline { windows, vectors }
    }

    fn search(&self, query: &Vector, k: usize) -> Ranked {
        let mut scored: Vec<(usize, f32)> = self.vectors.iter().map(|v| v.dot(query)).enumerate().collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.into_iter().take(k).map(|(i, _)| self.windows[i].clone()).collect()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let quick = args.iter().any(|a| a == "--quick");
    let check = args.iter().any(|a| a == "--check");
    let model = args.iter().position(|a| a == "--model").and_then(|i| args.get(i + 1)).cloned();
    let json_out = args.iter().position(|a| a == "--json").and_then(|i| args.get(i + 1)).cloned();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let mut options = IndexOptions::default();
    if let Some(tokens) = arg("--chunk-tokens") {
        options.chunk.max_tokens = tokens.parse().expect("--chunk-tokens N");
    }
    if let Some(header) = arg("--header") {
        options.chunk.header = match header.as_str() {
            "none" => EmbedHeader::None,
            "symbol" => EmbedHeader::Symbol,
            "path" => EmbedHeader::PathAndSymbol,
            other => panic!("--header none|symbol|path, not {other}"),
        };
    }
    // --static-tier: chunks embedded by the static table only (the first tier before the
    // transformer pass), searched with the model's query vectors.
    // --static-table PATH: a trained table as the engine reads it (research/training/
    // fit_static_tier.sh export; the shipped one is models/all-minilm-l6-v2-code2-static.bin)
    // instead of the distilled one; its file name is part of the indexes' name, so two tables
    // never share them.
    let static_table = arg("--static-table").map(PathBuf::from);
    let static_tier = args.iter().any(|a| a == "--static-tier") || static_table.is_some();
    if static_tier {
        // Static vectors must never reach the machine-wide cache under the model's id.
        options.shared_cache = None;
    }
    // --vectors int8: the same index with its vector file converted (a copy of the f32 index,
    // when there is one, so no chunk is embedded again).
    options.vectors = arg("--vectors").map(|name| VectorEncoding::parse(&name).expect("--vectors f32|int8"));
    let variant =
        arg("--chunk-tokens").is_some() || arg("--header").is_some() || static_tier || options.vectors.is_some();
    let variant_name = format!(
        "h-{:?}-t{}{}{}",
        options.chunk.header,
        options.chunk.max_tokens,
        match (&static_table, static_tier) {
            (Some(path), _) => format!("-static-{}", path.file_stem().map(|s| s.to_string_lossy()).unwrap_or_default()),
            (None, true) => "-static".to_string(),
            (None, false) => String::new(),
        },
        options.vectors.map(|v| format!("-{}", v.name())).unwrap_or_default()
    )
    .to_lowercase();
    let data = match arg("--data") {
        Some(dir) => PathBuf::from(dir),
        None => bench_dir().join(if quick { "retrieval-quick" } else { "retrieval" }),
    };
    // Indexes of another dataset live apart from the benchmark's.
    let dataset = arg("--data").map(|_| {
        format!(
            "{}-",
            data.parent().and_then(|p| p.file_name()).map_or("data".into(), |n| n.to_string_lossy().into_owned())
        )
    });
    let dump = arg("--dump-features").map(|path| std::io::BufWriter::new(std::fs::File::create(path).unwrap()));
    let mut dump = dump;
    let foreign = args.iter().any(|a| a == "--foreign");
    let queries_path = data.join("queries.jsonl");
    let Ok(text) = std::fs::read_to_string(&queries_path) else {
        eprintln!(
            "no benchmark data at {}: run `bash benches/retrieval/build.sh{}` first",
            data.display(),
            if quick { " --quick" } else { "" }
        );
        std::process::exit(2);
    };
    let mut golds: Vec<Gold> =
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    let split = arg("--split");
    if let Some(half) = &split {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/retrieval/split.json");
        let table: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let Some(packages) = table[half.as_str()].as_array() else {
            eprintln!("--split tune|test, not {half}");
            std::process::exit(2);
        };
        let packages: Vec<&str> = packages.iter().filter_map(|p| p.as_str()).collect();
        golds.retain(|g| packages.contains(&g.package.as_str()));
    }
    let questions = if args.iter().any(|a| a == "--questions") { load_questions() } else { Vec::new() };
    let mut question_scores = QuestionScores::default();
    let assets = Assets::locate(model.as_deref(), None).expect("assets: run scripts/bootstrap.sh");
    let embedder = OnnxEmbedder::load(assets.clone(), EmbedOptions::default()).unwrap();
    // The same document model with queries embedded by the document model itself: the "before"
    // of the query model, measured on the same indexes in the same run.
    let symmetric =
        OnnxEmbedder::load(assets, EmbedOptions { query_encoder: QueryEncoder::Document, ..EmbedOptions::default() })
            .unwrap();
    let table = static_tier.then(|| {
        let t = Instant::now();
        let (path, table) = match &static_table {
            Some(path) => {
                let table = raggrep::embed::StaticTable::load(path, embedder.info().dim, embedder.vocab_size())
                    .unwrap_or_else(|e| panic!("--static-table: {e}"));
                (path.clone(), static_tier::Table::Shipped(table))
            }
            None => {
                let path = static_tier::StaticTable::path(&bench_dir(), embedder.info());
                let table = static_tier::StaticTable::load_or_distill(&path, &embedder, &mut |_, _| {}).unwrap();
                (path, static_tier::Table::Distilled(table))
            }
        };
        eprintln!("static table ready in {:.1}s ({})", t.elapsed().as_secs_f64(), path.display());
        table
    });
    let static_embedder = table.as_ref().map(|table| static_tier::StaticEmbedder { model: &embedder, table });
    let index_embedder: &dyn Embedder = match &static_embedder {
        Some(e) => e,
        None => &embedder,
    };
    let model_id = embedder.info().id.clone();
    let query_model = embedder.query_model().map(str::to_string);
    eprintln!(
        "{} queries from {}{}; model {model_id}, query model {}",
        golds.len(),
        data.display(),
        split.as_deref().map(|s| format!(" ({s} split)")).unwrap_or_default(),
        query_model.as_deref().unwrap_or("(the document model)")
    );

    // (name, mode (None = baseline), fusion, queries embedded by the query model)
    let mut systems: Vec<(&str, Option<Mode>, Fusion, bool)> = vec![
        ("raggrep hybrid (default: learned fusion)", Some(Mode::Hybrid), Fusion::Learned, true),
        ("raggrep hybrid (weighted 0.5/0.5)", Some(Mode::Hybrid), Fusion::Weighted { dense_weight: 0.5 }, true),
        ("raggrep hybrid (RRF k=60)", Some(Mode::Hybrid), Fusion::Rrf { k: 60.0, dense_weight: 1.0 }, true),
        ("raggrep hybrid (weighted 0.7/0.3)", Some(Mode::Hybrid), Fusion::Weighted { dense_weight: 0.7 }, true),
        ("raggrep dense", Some(Mode::Dense), Fusion::default(), true),
        ("raggrep hybrid (learned fusion), document-model queries", Some(Mode::Hybrid), Fusion::Learned, false),
        (
            "raggrep hybrid (weighted 0.5/0.5), document-model queries: the previous default",
            Some(Mode::Hybrid),
            Fusion::Weighted { dense_weight: 0.5 },
            false,
        ),
        ("raggrep dense, document-model queries", Some(Mode::Dense), Fusion::default(), false),
        ("raggrep lexical", Some(Mode::Lexical), Fusion::default(), false),
        ("baseline: 40-line windows, dense", None, Fusion::default(), false),
    ];
    if query_model.is_none() {
        systems.retain(|s| !s.0.contains("document-model queries"));
    }
    let no_baseline = variant || args.iter().any(|a| a == "--no-baseline");
    if no_baseline {
        systems.retain(|(_, mode, _, _)| mode.is_some());
    }
    if variant {
        systems.retain(|(name, mode, fusion, _)| {
            *mode == Some(Mode::Dense)
                || *mode == Some(Mode::Lexical)
                || name.contains("default") && *fusion == Fusion::default()
                || static_tier && !name.contains("document-model")
        });
        eprintln!("variant {variant_name}: {:?}", options.chunk);
    }
    const RERANK: &str = "raggrep hybrid (learned fusion) + reranker over the best 10 (--rerank)";
    let rerank = args.iter().any(|a| a == "--rerank");
    if rerank {
        systems.insert(1, (RERANK, Some(Mode::Hybrid), Fusion::Learned, true));
    }
    let reranker = rerank.then(|| embedder.reranker().expect("--rerank: the reranker (run scripts/bootstrap.sh)"));
    const TEAM: &str = "team index (PostgreSQL + pgvector), hybrid";
    let mut team = arg("--team").map(|raw| {
        let url = raggrep::team::TeamUrl::parse(&raw).unwrap();
        let mut client = url.connect().unwrap();
        let info = embedder.info();
        let model = raggrep::team::schema::IndexModel::of(info);
        raggrep::team::schema::migrate(&mut client, &url, &model).unwrap();
        (url, client, model)
    });
    if team.is_some() {
        systems.insert(1, (TEAM, Some(Mode::Hybrid), Fusion::Learned, true));
    }
    let mut by_package: BTreeMap<String, Vec<Gold>> = BTreeMap::new();
    for gold in &golds {
        by_package.entry(gold.package.clone()).or_default().push(gold.clone());
    }
    // scores[system][language] (and "all").
    let mut scores: Vec<BTreeMap<String, Scores>> = vec![BTreeMap::new(); systems.len()];
    let mut confidence_stats = ConfidenceStats::default();
    let started = Instant::now();
    for (package, golds) in &by_package {
        let corpus = data.join("packages").join(package).join("corpus");
        let set = if variant {
            format!("{}-{variant_name}", if quick { "quick" } else { "full" })
        } else {
            (if quick { "quick" } else { "full" }).to_string()
        };
        let set = format!("{}{set}", dataset.as_deref().unwrap_or(""));
        let index_dir = bench_dir().join("indexes").join(&model_id).join(set).join(package);
        if options.vectors.is_some() && !index_dir.exists() {
            let plain = format!("{}{}", dataset.as_deref().unwrap_or(""), if quick { "quick" } else { "full" });
            let source = bench_dir().join("indexes").join(&model_id).join(plain).join(package);
            if source.is_dir() {
                fixture::copy_dir(&source, &index_dir);
            }
        }
        let location = IndexLocation::new(&corpus, Some(&index_dir)).unwrap();
        let t = Instant::now();
        let stats = index::update(&location, index_embedder, &options, &mut |_| {}).unwrap();
        let snapshot = Snapshot::open(&location).unwrap();
        let baseline = if no_baseline { Baseline::default() } else { Baseline::build(&corpus, &embedder) };
        if let Some((url, client, _)) = team.as_mut() {
            let identity =
                raggrep::team::push::RepoIdentity { name: package.clone(), remote: None, branch: None, commit: None };
            raggrep::team::push::push(client, url, &snapshot, &identity, 256, &mut |_| {}).unwrap();
        }
        eprintln!(
            "{package}: {} files, {} chunks ({} embedded now), {} baseline windows, {} queries, {:.0}s",
            stats.files,
            stats.chunks,
            stats.embedded,
            baseline.windows.len(),
            golds.len(),
            t.elapsed().as_secs_f64()
        );
        for gold in golds {
            let tuned = embedder.embed_query(&gold.query).unwrap();
            let plain = if query_model.is_some() { symmetric.embed_query(&gold.query).unwrap() } else { tuned.clone() };
            if let Some(out) = dump.as_mut() {
                let row = serde_json::json!({
                    "id": gold.id, "package": gold.package, "language": gold.language, "split": gold.split,
                    "gold": [gold.path, gold.start_line, gold.end_line],
                    "candidates": dumped_candidates(&snapshot, &tuned, &gold.query),
                });
                dump_line(out, &row);
            }
            for (s, (name, mode, fusion, use_tuned)) in systems.iter().enumerate() {
                let vector = if *use_tuned { &tuned } else { &plain };
                let ranked: Ranked = match mode {
                    Some(_) if *name == TEAM => {
                        let (url, client, model) = team.as_mut().unwrap();
                        let query = raggrep::team::search::TeamQuery {
                            text: gold.query.clone(),
                            k: 10,
                            mode: Mode::Hybrid,
                            repo_glob: Some(package.clone()),
                            exclude_remotes: Vec::new(),
                        };
                        raggrep::team::search::search(client, url, Some(&embedder as &dyn Embedder), model, &query)
                            .unwrap()
                            .results
                            .into_iter()
                            .map(|h| (h.hit.path, h.hit.start_line, h.hit.end_line))
                            .collect()
                    }
                    Some(mode) => {
                        let rerank = *name == RERANK;
                        let query =
                            Query { k: 10, mode: *mode, fusion: *fusion, rerank, ..Query::new(gold.query.clone()) };
                        let results = search_with(
                            &snapshot,
                            Some(vector),
                            reranker.filter(|_| rerank),
                            &query,
                            None,
                            Instant::now(),
                        )
                        .unwrap();
                        let confidence = results.confidence;
                        let hit_scores: Vec<f32> = results.results.iter().map(|h| h.score).collect();
                        let ranked: Ranked =
                            results.results.into_iter().map(|h| (h.path, h.start_line, h.end_line)).collect();
                        // The default system's confidence, judged against its own first 5, and
                        // its hit scores against each hit.
                        if let (0, Some(c)) = (s, confidence) {
                            confidence_stats.add_own(c, gold, &ranked);
                            confidence_stats.add_hits(&hit_scores, |i| gold.is_hit(&ranked[i]), true);
                        }
                        if rerank && confidence.is_some() {
                            confidence_stats.add_reranked_hits(&hit_scores, |i| gold.is_hit(&ranked[i]));
                        }
                        ranked
                    }
                    None => baseline.search(vector, 10),
                };
                scores[s].entry(gold.language.clone()).or_default().add(gold, &ranked);
                scores[s].entry("all".into()).or_default().add(gold, &ranked);
            }
        }
        for question in questions.iter().filter(|q| &q.package == package) {
            let vector = embedder.embed_query(&question.query).unwrap();
            for (system, _, mode) in QUESTION_SYSTEMS {
                let query = Query { k: 10, mode, ..Query::new(question.query.clone()) };
                let results = search_with(&snapshot, Some(&vector), None, &query, None, Instant::now()).unwrap();
                let paths: Vec<String> = results.results.into_iter().map(|h| h.path).collect();
                question_scores.add(system, &question.category, question_ndcg(&paths, &question.targets));
            }
        }
        if foreign {
            // Queries whose answer is in another package: this index holds no labelled answer
            // for them (negatives for the confidence, and for research/training/fit_confidence.py).
            for asked in foreign_queries(&by_package, package, golds.len()) {
                let vector = embedder.embed_query(&asked.query).unwrap();
                let query = Query { k: 10, ..Query::new(asked.query.clone()) };
                let results = search_with(&snapshot, Some(&vector), None, &query, None, Instant::now()).unwrap();
                if let Some(c) = results.confidence {
                    confidence_stats.foreign.push((f64::from(c.value), c.confident));
                    let hit_scores: Vec<f32> = results.results.iter().map(|h| h.score).collect();
                    confidence_stats.add_hits(&hit_scores, |_| false, false);
                }
                if let Some(out) = dump.as_mut() {
                    let row = serde_json::json!({
                        "id": format!("{}@{package}", asked.id), "package": package, "language": golds[0].language,
                        "split": golds[0].split, "foreign": asked.package, "gold": null,
                        "candidates": dumped_candidates(&snapshot, &vector, &asked.query),
                    });
                    dump_line(out, &row);
                }
            }
        }
    }

    println!(
        "Model `{model_id}`, query model `{}`, {} queries{}, {:.0} s.\n",
        query_model.as_deref().unwrap_or(&model_id),
        golds.len(),
        split.as_deref().map(|s| format!(" ({} split)", s.to_uppercase())).unwrap_or_default(),
        started.elapsed().as_secs_f64()
    );
    let languages: Vec<String> = scores[0].keys().filter(|l| *l != "all").cloned().collect();
    for scope in std::iter::once("all".to_string()).chain(languages) {
        let n = scores[0].get(&scope).map_or(0, |s| s.n);
        println!("**{scope}** ({n} queries)\n");
        println!("| system | file R@1 | R@5 | R@10 | MRR@10 | chunk R@1 | R@5 | R@10 | MRR@10 |");
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (s, (name, _, _, _)) in systems.iter().enumerate() {
            let Some(x) = scores[s].get(&scope) else { continue };
            println!(
                "| {name} | {:.1} | {:.1} | {:.1} | {:.3} | {:.1} | {:.1} | {:.1} | {:.3} |",
                x.pct(x.file[0]),
                x.pct(x.file[1]),
                x.pct(x.file[2]),
                x.file_mrr / x.n.max(1) as f64,
                x.pct(x.chunk[0]),
                x.pct(x.chunk[1]),
                x.pct(x.chunk[2]),
                x.chunk_mrr / x.n.max(1) as f64
            );
        }
        println!();
    }
    let asked = question_scores.mean("default", "all").map_or(0, |m| m.1);
    if !questions.is_empty() && asked == 0 {
        println!("**Natural questions**: none belongs to these packages\n");
    } else if !questions.is_empty() {
        let scopes = ["all", "architecture", "semantic", "symbol"];
        println!("**Natural questions** ({asked} questions, NDCG@10 as semble scores its benchmark)\n");
        println!("| system | all | architecture | semantic | symbol |");
        println!("|---|---:|---:|---:|---:|");
        for (system, name, _) in QUESTION_SYSTEMS {
            let cells: Vec<String> = scopes
                .iter()
                .map(|scope| question_scores.mean(system, scope).map_or("".into(), |(m, n)| format!("{m:.3} ({n})")))
                .collect();
            println!("| {name} | {} |", cells.join(" | "));
        }
        println!();
    }
    if foreign {
        confidence_stats.print();
    }
    if let Some(out) = json_out {
        let value: Vec<serde_json::Value> = systems
            .iter()
            .enumerate()
            .map(|(s, (name, _, _, _))| {
                let per: BTreeMap<&String, serde_json::Value> = scores[s]
                    .iter()
                    .map(|(scope, x)| {
                        (
                            scope,
                            serde_json::json!({
                                "n": x.n,
                                "file_recall": [x.pct(x.file[0]), x.pct(x.file[1]), x.pct(x.file[2])],
                                "chunk_recall": [x.pct(x.chunk[0]), x.pct(x.chunk[1]), x.pct(x.chunk[2])],
                                "file_mrr10": x.file_mrr / x.n.max(1) as f64,
                                "chunk_mrr10": x.chunk_mrr / x.n.max(1) as f64,
                            }),
                        )
                    })
                    .collect();
                serde_json::json!({"system": name, "model": model_id, "scores": per})
            })
            .collect();
        std::fs::write(out, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    }
    if check {
        // Sanity only (never timings): numbers were produced and retrieval works at all.
        let hybrid = &scores[0]["all"];
        assert!(hybrid.n > 0, "no queries evaluated");
        let ids: std::collections::HashSet<&str> = golds.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids.len(), golds.len(), "query ids are not unique");
        assert!(hybrid.file[2] > 0.0, "hybrid file recall@10 is zero");
        assert!(scores[systems.len() - 1]["all"].n == hybrid.n, "last system evaluated on other queries");
        // Regression floors for the default ranking (quality, not speed): `--floor
        // chunk_r5=0.60,chunk_mrr=0.45,file_r1=0.60` fails the run when the default falls below;
        // `--rerank-floor` does the same for the --rerank system.
        let floors = [("--floor", Some(0)), ("--rerank-floor", systems.iter().position(|s| s.0 == RERANK))];
        for (flag, system) in floors {
            let Some(list) = arg(flag) else { continue };
            let system = system.unwrap_or_else(|| panic!("{flag} needs --rerank"));
            let x = &scores[system]["all"];
            for (name, min) in parse_floors(flag, &list) {
                let value = match name {
                    "chunk_r5" => x.chunk[1] / x.n as f64,
                    "chunk_mrr" => x.chunk_mrr / x.n as f64,
                    "file_r1" => x.file[0] / x.n as f64,
                    other => panic!("{flag} knows chunk_r5, chunk_mrr, file_r1, not {other}"),
                };
                assert!(value >= min, "{} regressed: {name} {value:.3} < floor {min}", systems[system].0);
                eprintln!("{flag} {name}: {value:.3} >= {min}");
            }
        }
        // `--confidence-floor auc=X,foreign_flagged=Y` (with `--foreign`): the default search's
        // confidence still tells answers from non-answers.
        if let Some(list) = arg("--confidence-floor") {
            assert!(foreign, "--confidence-floor needs --foreign");
            for (name, min) in parse_floors("--confidence-floor", &list) {
                let value = match name {
                    "auc" => confidence_stats.auc(),
                    "foreign_flagged" => confidence_stats.foreign_flagged(),
                    "hit_calibration" => confidence_stats.hit_calibration(),
                    other => panic!("--confidence-floor knows auc, foreign_flagged, hit_calibration, not {other}"),
                };
                assert!(value >= min, "the default search's confidence regressed: {name} {value:.3} < floor {min}");
                eprintln!("--confidence-floor {name}: {value:.3} >= {min}");
            }
        }
        // `--question-floor default=X,words=Y` (with `--questions`): the natural questions'
        // NDCG@10 over all of them, per system.
        if let Some(list) = arg("--question-floor") {
            assert!(!questions.is_empty(), "--question-floor needs --questions");
            for (name, min) in parse_floors("--question-floor", &list) {
                let Some((_, label, _)) = QUESTION_SYSTEMS.iter().find(|s| s.0 == name) else {
                    panic!("--question-floor knows default, words, not {name}")
                };
                let (value, n) = question_scores.mean(name, "all").expect("no natural question was asked");
                assert!(value >= min, "{label} regressed on the natural questions: NDCG@10 {value:.3} < floor {min}");
                eprintln!("--question-floor {name}: {value:.3} over {n} >= {min}");
            }
        }
        eprintln!("check: ok");
    }
}
