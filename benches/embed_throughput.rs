//! Embedding throughput on real source chunks: batch size × length sorting × threads × layout
//! (independent single-threaded lanes, the default, or one session using every thread).
//!
//! `cargo bench --bench embed_throughput -- [PATH] [--chunks N] [--model NAME] [--quick]`
//!
//! Walks PATH (default: the cargo registry's sources), chunks it like the indexer does, takes N
//! chunks spread over the tree, and embeds them with each configuration, reporting chunks/s and
//! tokens/s. Ratios between rows matter more than absolute numbers on a shared machine.
//!
//! Then the engine's default configuration against raw ONNX Runtime (Python onnxruntime 1.31.1
//! with the same model, tokenizer and recipe: `benches/ort_reference.py`, run from the tools venv
//! of `scripts/bootstrap.sh`), alternating the two twice and keeping each one's best run, so load
//! from other processes hits both alike. `--no-reference` skips it.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::time::Instant;

use raggrep::chunk::{ChunkConfig, chunk_file};
use raggrep::embed::{Assets, EmbedOptions, Embedder, Layout, OnnxEmbedder};
use raggrep::lang::Language;
use raggrep::walk::{WalkOptions, read_source, walk};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut path: Option<PathBuf> = None;
    let mut n_chunks = 1500usize;
    let mut model: Option<String> = None;
    let mut quick = false;
    let mut reference = true;
    let mut only: Option<Vec<(usize, bool, usize, Layout)>> = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--chunks" => n_chunks = it.next().and_then(|v| v.parse().ok()).unwrap_or(n_chunks),
            "--model" => model = it.next().cloned(),
            "--quick" => quick = true,
            "--no-reference" => reference = false,
            // `--configs 1x0,8x1,1x0s`: batch size × threads (0 = all), length-sorted; a
            // trailing `s` runs one shared session instead of lanes.
            "--configs" => {
                only = it.next().map(|list| {
                    list.split(',')
                        .filter_map(|c| c.split_once('x'))
                        .filter_map(|(b, t)| {
                            let layout = if t.ends_with('s') { Layout::Shared } else { Layout::Lanes };
                            Some((b.parse().ok()?, true, t.trim_end_matches('s').parse().ok()?, layout))
                        })
                        .collect()
                })
            }
            other => path = Some(PathBuf::from(other)),
        }
    }
    if quick {
        n_chunks = n_chunks.min(100);
    }
    let path = path.unwrap_or_else(default_corpus);
    let texts = sample_chunks(&path, n_chunks);
    let assets = Assets::locate(model.as_deref(), None).expect("assets: run scripts/bootstrap.sh");
    let counter = OnnxEmbedder::load(assets.clone(), EmbedOptions::default()).expect("model");
    let tokens: usize = texts.iter().map(|t| counter.count_tokens(t).unwrap_or(0)).sum();
    eprintln!(
        "corpus: {} chunks, {} tokens (mean {:.0}) from {}; model {}",
        texts.len(),
        tokens,
        tokens as f64 / texts.len().max(1) as f64,
        path.display(),
        counter.info().id
    );
    drop(counter);
    // (batch size, length-sorted, threads, layout); threads 0 = all. A last row pads to 256 tokens.
    use Layout::{Lanes, Shared};
    let configs: Vec<(usize, bool, usize, Layout)> = if let Some(only) = only {
        only
    } else if quick {
        vec![(1, true, 0, Lanes), (1, true, 0, Shared), (8, true, 0, Lanes)]
    } else {
        vec![
            (1, true, 0, Lanes),
            (1, true, 0, Shared),
            (2, true, 0, Lanes),
            (4, true, 0, Lanes),
            (8, true, 0, Lanes),
            (8, true, 0, Shared),
            (16, true, 0, Lanes),
            (32, true, 0, Lanes),
            (8, false, 0, Lanes),
            (32, false, 0, Lanes),
            (1, true, 1, Lanes),
            (8, true, 1, Lanes),
        ]
    };
    println!("| batch | length-sorted | padding | threads | layout | chunks/s | tokens/s |");
    println!("|---:|:---:|:---:|---:|:---:|---:|---:|");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut runs: Vec<(usize, bool, usize, Layout, bool)> =
        configs.into_iter().map(|(b, s, t, l)| (b, s, t, l, false)).collect();
    if !quick {
        runs.push((8, false, 0, Lanes, true));
    }
    for (batch_size, sort_by_length, threads, layout, fixed_padding) in runs {
        let options =
            EmbedOptions { batch_size, sort_by_length, threads, layout, fixed_padding, ..EmbedOptions::default() };
        let embedder = OnnxEmbedder::load(assets.clone(), options).expect("model");
        // Warm up (first run allocates arenas).
        let _ = embedder.embed_documents(&refs[..refs.len().min(16)]);
        let start = Instant::now();
        let vectors = embedder.embed_documents(&refs).expect("embed");
        let secs = start.elapsed().as_secs_f64();
        assert_eq!(vectors.len(), refs.len());
        println!(
            "| {batch_size} | {} | {} | {} | {} | {:.1} | {:.0} |",
            if sort_by_length { "yes" } else { "no" },
            if fixed_padding { "fixed 256" } else { "dynamic" },
            if threads == 0 { "all".to_string() } else { threads.to_string() },
            if layout == Lanes { "lanes" } else { "shared" },
            refs.len() as f64 / secs,
            tokens as f64 / secs
        );
    }
    if reference {
        compare_with_onnxruntime(&assets, &refs, tokens);
    }
}

/// Engine (default options) vs Python onnxruntime on the same chunks: A B A B, best of each.
fn compare_with_onnxruntime(assets: &Assets, texts: &[&str], tokens: usize) {
    let home = raggrep::embed::cache_dir().expect("cache dir");
    let python = home.join("tools").join("venv").join("bin").join("python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches").join("ort_reference.py");
    let dir = tempfile::tempdir().expect("temp dir");
    let texts_file = dir.path().join("texts.json");
    std::fs::write(&texts_file, serde_json::to_vec(texts).expect("json")).expect("write texts");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let embedder = OnnxEmbedder::load(assets.clone(), EmbedOptions::default()).expect("model");
    let _ = embedder.embed_documents(&texts[..texts.len().min(16)]);
    let (mut engine_best, mut python_best) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..2 {
        let start = Instant::now();
        embedder.embed_documents(texts).expect("embed");
        engine_best = engine_best.min(start.elapsed().as_secs_f64());
        let output = std::process::Command::new(&python)
            .arg(&script)
            .arg("--model-dir")
            .arg(&assets.model_dir)
            .arg("--texts")
            .arg(&texts_file)
            .arg("--threads")
            .arg(threads.to_string())
            .output();
        let report: serde_json::Value = match output {
            Ok(out) if out.status.success() => serde_json::from_slice(&out.stdout).expect("reference output"),
            Ok(out) => {
                eprintln!("reference run failed: {}", String::from_utf8_lossy(&out.stderr).trim());
                return;
            }
            Err(err) => {
                eprintln!("cannot run {} ({err}); run scripts/bootstrap.sh", python.display());
                return;
            }
        };
        assert_eq!(report["tokens"].as_u64(), Some(tokens as u64), "both sides see the same tokens");
        python_best = python_best.min(report["seconds"].as_f64().expect("seconds"));
    }
    let n = texts.len() as f64;
    println!();
    println!(
        "| embedder (batch 1, length-sorted, {threads} threads; engine in lanes, raw in one session) | chunks/s | tokens/s |"
    );
    println!("|---|---:|---:|");
    println!("| raggrep engine | {:.1} | {:.0} |", n / engine_best, tokens as f64 / engine_best);
    println!(
        "| raw ONNX Runtime (Python onnxruntime 1.31.1) | {:.1} | {:.0} |",
        n / python_best,
        tokens as f64 / python_best
    );
    println!("| **ratio engine / raw** | **{:.2}×** | |", python_best / engine_best);
}

fn default_corpus() -> PathBuf {
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo"));
    home.join("registry").join("src")
}

/// Chunks every file under `path` and takes `n` chunks spread evenly over them.
fn sample_chunks(path: &std::path::Path, n: usize) -> Vec<String> {
    let report = walk(&[path.to_path_buf()], &WalkOptions::default()).expect("walk");
    let mut all = Vec::new();
    for file in &report.files {
        let language = Language::from_path(&file.abs_path);
        if language == Language::Text {
            continue;
        }
        let Ok(source) = read_source(&file.abs_path, 1 << 20) else {
            continue;
        };
        for chunk in chunk_file(&file.rel_path, &source.text, language, &ChunkConfig::default()) {
            all.push(chunk.text(&source.text).to_string());
        }
        if all.len() > n * 20 {
            break;
        }
    }
    let step = (all.len() / n.max(1)).max(1);
    all.into_iter().step_by(step).take(n).collect()
}
