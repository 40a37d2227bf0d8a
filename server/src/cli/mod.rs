//! The command-line front door. Parses arguments, calls the engine, prints results.
//!
//! Exit codes: 0 on success (also with zero results), 2 on error with one line on stderr.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::chunk::{ChunkConfig, chunk_file};
use crate::embed::{Assets, EmbedOptions, Embedder, OnnxEmbedder};
use crate::lang::Language;
use crate::walk;

#[derive(Parser)]
#[command(name = "raggrep", version, about = "Local-first semantic code search")]
struct Cli {
    /// Model directory, or the name of a model in the cache (e.g. all-minilm-l6-v2-fp32).
    #[arg(long, global = true, env = "RAGGREP_MODEL")]
    model: Option<String>,
    /// ONNX Runtime shared library (default: from the cache, or ORT_DYLIB_PATH).
    #[arg(long, global = true)]
    ort_dylib: Option<PathBuf>,
    /// Log level for stderr (error, warn, info, debug, trace).
    #[arg(long, global = true, default_value = "warn", env = "RAGGREP_LOG")]
    log: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the chunks of one file (debugging the chunker).
    Chunk {
        file: PathBuf,
        /// One JSON object per chunk, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Embed a text and print the vector's dimension, first values and norm.
    Embed {
        text: String,
        /// Embed as a document (the throughput path) rather than as a query.
        #[arg(long)]
        document: bool,
    },
    /// List the files a walk of PATH would index, and what it would skip.
    Files {
        #[arg(default_value = ".")]
        path: PathBuf,
    },
}

/// Runs the CLI and returns the process exit code.
pub fn run() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return code;
        }
    };
    init_logging(&cli.log);
    match dispatch(cli) {
        Ok(()) => 0,
        Err(err) => {
            let _ = writeln!(io::stderr(), "raggrep: {}", one_line(&err));
            2
        }
    }
}

fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_target(false)
        .try_init();
}

/// An error and its causes on one line: `context: cause: cause`.
fn one_line(err: &anyhow::Error) -> String {
    err.chain().map(|e| e.to_string()).collect::<Vec<_>>().join(": ")
}

fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Chunk { file, json } => cmd_chunk(&file, json),
        Command::Embed { text, document } => {
            let embedder = load_embedder(cli.model.as_deref(), cli.ort_dylib.as_deref())?;
            cmd_embed(&embedder, &text, document)
        }
        Command::Files { path } => cmd_files(&path),
    }
}

/// Loads the embedder with default options, or says how to get the assets.
pub fn load_embedder(model: Option<&str>, ort_dylib: Option<&Path>) -> Result<OnnxEmbedder> {
    let assets = Assets::locate(model, ort_dylib)?;
    Ok(OnnxEmbedder::load(assets, EmbedOptions::default())?)
}

fn cmd_chunk(file: &Path, json: bool) -> Result<()> {
    let source = walk::read_source(file, u64::MAX)
        .map_err(|reason| anyhow::anyhow!("{}: {reason}", file.display()))?;
    let language = Language::from_path(file);
    let chunks = chunk_file(&file.to_string_lossy(), &source.text, language, &ChunkConfig::default());
    let mut out = io::stdout().lock();
    for chunk in &chunks {
        if json {
            let mut value = serde_json::to_value(chunk)?;
            value["symbol_path"] = serde_json::json!(chunk.symbol_path());
            value["hash"] = serde_json::json!(chunk.hash.to_string());
            value["text"] = serde_json::json!(chunk.text(&source.text));
            writeln!(out, "{value}")?;
        } else {
            writeln!(
                out,
                "{}:{}-{}  {}  {}",
                chunk.path,
                chunk.start_line,
                chunk.end_line,
                chunk.kind.name(),
                chunk.symbol_path().unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

fn cmd_embed(embedder: &OnnxEmbedder, text: &str, document: bool) -> Result<()> {
    let vector = if document {
        embedder
            .embed_documents(&[text])?
            .pop()
            .context("no vector returned")?
    } else {
        embedder.embed_query(text)?
    };
    let first: Vec<String> = vector.as_slice().iter().take(8).map(|v| format!("{v:.6}")).collect();
    let mut out = io::stdout().lock();
    writeln!(out, "model: {}", embedder.info().id)?;
    writeln!(out, "dim: {}", vector.dim())?;
    writeln!(out, "tokens: {}", embedder.count_tokens(text)?)?;
    writeln!(out, "first: [{}]", first.join(", "))?;
    writeln!(out, "norm: {:.6}", vector.norm())?;
    Ok(())
}

fn cmd_files(path: &Path) -> Result<()> {
    let report = walk::walk(&[path.to_path_buf()], &walk::WalkOptions::default())?;
    let mut out = io::stdout().lock();
    for file in &report.files {
        writeln!(out, "{}", file.rel_path)?;
    }
    for skipped in &report.skipped {
        tracing::info!(path = %skipped.path.display(), reason = %skipped.reason, "skipped");
    }
    let _ = writeln!(
        io::stderr(),
        "{} files, {} skipped",
        report.files.len(),
        report.skipped.len()
    );
    Ok(())
}
