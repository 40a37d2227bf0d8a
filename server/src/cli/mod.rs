//! The command-line front door. Parses arguments, calls the engine, prints results.
//!
//! Exit codes: 0 on success, 1 when a search matched nothing (grep's convention), 2 on error
//! with one line on stderr.
//!
//! Long on purpose: the command line's definition (clap structs whose doc comments are the
//! `--help` text and the manual page) is most of it; each command then parses, asks the engine
//! (`engine::Local`) and prints.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser, Subcommand};

mod ask;
mod db;
mod location;
mod log;
mod output;
mod progress;
mod team;
mod watch;

use crate::audit::Door;
use crate::engine::{
    self, Embedder, IndexLocation, IndexOptions, Local, Mode, ModelChoice, Need, OnnxEmbedder, Query, SearchRequest,
    SearchResults, SharedCacheConfig, Snapshot, Status, VectorEncoding,
};
use crate::{walk, wire};
use location::{LocationArgs, Resolved, Scope};
use wire::one_line;

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
    #[arg(long, global = true, default_value = "warn", env = "RAGGREP_LOG", value_parser = log_filter)]
    log: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build or update the index of PATH (default: the index the current directory is in, else
    /// the top of its git work tree, else the current directory). PATH inside an indexed
    /// project updates the project's index; --new makes a separate one for PATH.
    Index {
        path: Option<PathBuf>,
        /// A separate index for PATH even when it lies inside an indexed project.
        #[arg(long)]
        new: bool,
        #[command(flatten)]
        location: LocationArgs,
        #[command(flatten)]
        walk: WalkArgs,
        /// Print the summary as JSON on stdout too.
        #[arg(long)]
        json: bool,
        /// While embedding, publish progress at least this often (seconds).
        #[arg(long, default_value_t = 10.0, hide = true)]
        commit_every: f64,
        /// Publish the first vectors after this many seconds of embedding (benchmarks).
        #[arg(long, default_value_t = 0.0, hide = true)]
        first_publish: f64,
        /// Build the vector graph from this many vectors on (tests and crash loops).
        #[arg(long, default_value_t = engine::ANN_MIN_SLOTS, hide = true)]
        ann_min_slots: usize,
        /// Compact the vector file from this many dead slots on (tests and crash loops).
        #[arg(long, default_value_t = engine::COMPACT_MIN_DEAD, hide = true)]
        compact_min_dead: usize,
        /// How the index stores vectors: f32, or int8 (a quarter of the bytes; recall in
        /// BENCHMARKS.md). Converts an existing index; later updates keep its encoding.
        #[arg(long, value_name = "f32|int8", value_parser = vector_encoding)]
        vectors: Option<VectorEncoding>,
        /// At low CPU priority (the indexer a first query leaves running).
        #[arg(long, hide = true)]
        background: bool,
        /// Only these files changed: their paths (from the current directory, or absolute)
        /// read from FILE, or from stdin with `-`, one per line or NUL-separated (git's `-z`).
        /// What the git hooks hand over after a commit, merge or checkout, so a big tree is not
        /// walked; a path new to the index, or an index that cannot be trusted to skip the walk,
        /// falls back to a whole update.
        #[arg(long, value_name = "FILE|-")]
        paths_from: Option<PathBuf>,
    },
    /// Search the index. QUERY `-` reads one query per line from stdin (JSON Lines out).
    /// `raggrep QUESTION [PATH…] [OPTIONS]` without a subcommand is the same.
    Query {
        query: String,
        /// Files or directories to search in (from the current directory), as ripgrep takes
        /// them: hits elsewhere are left out.
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        #[command(flatten)]
        location: LocationArgs,
        /// Number of results.
        #[arg(short = 'k', long = "top", default_value_t = 10)]
        k: usize,
        /// One JSON object per query.
        #[arg(long)]
        json: bool,
        /// hybrid (default), dense or lexical.
        #[arg(long, default_value = "hybrid")]
        mode: String,
        /// Only this language (rust, python, typescript, go, …).
        #[arg(long = "lang")]
        language: Option<String>,
        /// Only paths matching this glob (relative to the root), e.g. 'src/**/*.rs'.
        #[arg(long = "path")]
        path_glob: Option<String>,
        /// Drop results scoring below this (default search: the probability that a hit is the
        /// answer, e.g. 0.25; dense: cosine; lexical: BM25).
        #[arg(long, value_parser = finite_score)]
        min_score: Option<f32>,
        /// Exact vector scan instead of the HNSW graph.
        #[arg(long)]
        exact: bool,
        /// Re-sort the best 10 candidates with the reranker (a cross-encoder that reads the query
        /// and each candidate together): better ranking, ~0.2 s more per query. Hybrid mode only.
        #[arg(long)]
        rerank: bool,
        /// Search the team index (PostgreSQL + pgvector) at this URL instead of the local index,
        /// e.g. postgres://dev@db.internal/code (password in PGPASSWORD).
        #[arg(long, value_name = "URL")]
        from: Option<String>,
        /// Search the configured team index: $RAGGREP_TEAM_URL, then `[team] url` in
        /// .raggrep/config.toml or ~/.config/raggrep/config.toml.
        #[arg(long, conflicts_with = "from")]
        team: bool,
        /// With --from or --team: only repositories whose name (remote@branch) matches this glob.
        #[arg(long, value_name = "GLOB")]
        repo: Option<String>,
        /// Started in a subdirectory of the root: only hits under it (default: its hits first,
        /// then the rest of the project's).
        #[arg(long, conflicts_with = "everywhere")]
        here: bool,
        /// Started in a subdirectory of the root: the whole project's ranking as it is.
        #[arg(long)]
        everywhere: bool,
        /// On a tree without an index: build every vector before answering (default: answer
        /// from the words at once and embed in the background).
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        print: PrintArgs,
    },
    /// `raggrep QUESTION…`: a question where a subcommand would be is `raggrep query`
    /// (`--answer`: `raggrep ask`).
    #[command(external_subcommand)]
    Bare(Vec<String>),
    /// Git hooks that update the index in the background after commits, checkouts and merges.
    Hook {
        #[command(subcommand)]
        action: HookAction,
    },
    /// Keep the indexes of PATHs (default: the current directory) fresh until Ctrl-C: files
    /// changed on disk are re-indexed after a short quiet period, one report line per update.
    Watch(watch::WatchArgs),
    /// Push the workspace's index to the team index (PostgreSQL + pgvector), sending only what
    /// changed since the last push of this repository and branch.
    Push(team::PushArgs),
    /// Show what the index holds.
    Status {
        #[command(flatten)]
        location: LocationArgs,
        #[arg(long)]
        json: bool,
    },
    /// Dump the index: files and chunks (JSON Lines with --json).
    Inspect {
        #[command(flatten)]
        location: LocationArgs,
        /// List every chunk, not just files.
        #[arg(long)]
        chunks: bool,
        /// List skipped files and why.
        #[arg(long)]
        skipped: bool,
        #[arg(long)]
        json: bool,
    },
    /// Run the language server on stdin/stdout.
    Lsp,
    /// Run the MCP server (for coding agents) on stdin/stdout over ROOTs (default: the current
    /// directory), keeping their index fresh as files change on disk.
    Mcp {
        /// Workspace roots to index and search (default: the current directory).
        roots: Vec<PathBuf>,
        /// Serve Streamable HTTP at http://ADDR/mcp instead of stdio (loopback only, e.g.
        /// 127.0.0.1:8731; port 0 picks a free port, printed on stderr).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
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
    /// The vector store (key, text, value, embedding in SQLite): store, retrieve, delete, list,
    /// search, import-file, set-database.
    Db(db::DbArgs),
    /// Search the project's history: the commits that most likely fixed or touched what a
    /// question describes, best first; with --path or --symbol and no question, what changed
    /// there, newest first.
    Log(log::LogArgs),
    /// Answer a question about the code: structural questions exactly, others from retrieved
    /// snippets through an OpenAI-compatible LLM (or --prompt: print the prompt).
    Ask(Box<ask::AskArgs>),
    /// Print a shell completion script for bash, zsh, fish, elvish or powershell, e.g.
    /// `raggrep completions bash > ~/.local/share/bash-completion/completions/raggrep`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `raggrep man | man -l -`.
    Man,
}

#[derive(Subcommand)]
enum HookAction {
    /// Add the hooks (post-commit, post-checkout, post-merge) to the repository of PATH; an
    /// existing shell hook keeps its content and gets one marked block.
    Install {
        #[arg(default_value = ".")]
        path: PathBuf,
        /// One JSON object per hook.
        #[arg(long)]
        json: bool,
    },
    /// Remove exactly what `hook install` added.
    Uninstall {
        #[arg(default_value = ".")]
        path: PathBuf,
        /// One JSON object per hook.
        #[arg(long)]
        json: bool,
    },
}

/// `query`'s output in grep's and ripgrep's terms.
#[derive(clap::Args, Clone)]
struct PrintArgs {
    /// Only the files, ranked by their best hit (as grep -l).
    #[arg(short = 'l', long = "files-with-matches", conflicts_with_all = ["count", "vimgrep", "json"])]
    files_with_matches: bool,
    /// `path:N`: hits per file, files ranked by their best hit (as grep -c).
    #[arg(short = 'c', long, conflicts_with_all = ["vimgrep", "json"])]
    count: bool,
    /// `path:line:column:text`, one line per hit at its definition line (editors' quickfix).
    #[arg(long, conflicts_with = "json")]
    vimgrep: bool,
    /// N lines after each hit's definition line (instead of the hit's first lines).
    #[arg(short = 'A', long = "after-context", value_name = "N")]
    after_context: Option<u32>,
    /// N lines before each hit's definition line.
    #[arg(short = 'B', long = "before-context", value_name = "N")]
    before_context: Option<u32>,
    /// N lines before and after each hit's definition line.
    #[arg(short = 'C', long = "context", value_name = "N")]
    context: Option<u32>,
    /// Line numbers before the lines shown (the default on a terminal).
    #[arg(short = 'n', long = "line-number", overrides_with = "no_line_number")]
    line_number: bool,
    /// No line numbers.
    #[arg(short = 'N', long = "no-line-number", overrides_with = "line_number")]
    no_line_number: bool,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    color: String,
    /// Each hit under its heading line `path:line  score  symbol  (lines start-end)`, the line
    /// being its definition's own (the default).
    #[arg(long, overrides_with = "no_heading")]
    heading: bool,
    /// `path:` (and `line:` with -n) before every line shown, as grep prints, no heading lines.
    #[arg(long = "no-heading", overrides_with = "heading")]
    no_heading: bool,
    /// At most N hits per file.
    #[arg(short = 'm', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
}

impl PrintArgs {
    fn format(&self) -> output::HitFormat {
        use std::io::IsTerminal;
        let terminal = io::stdout().is_terminal();
        let mode = if self.files_with_matches {
            output::HitMode::Files
        } else if self.count {
            output::HitMode::Count
        } else if self.vimgrep {
            output::HitMode::Vimgrep
        } else {
            output::HitMode::Hits
        };
        output::HitFormat {
            mode,
            heading: !self.no_heading,
            line_numbers: if self.line_number || self.no_line_number { self.line_number } else { terminal },
            before: self.before_context.or(self.context).unwrap_or(0),
            after: self.after_context.or(self.context).unwrap_or(0),
            color: match self.color.as_str() {
                "always" => true,
                "never" => false,
                _ => terminal && std::env::var_os("NO_COLOR").is_none(),
            },
        }
    }
}

/// Nothing matched: exit status 1 with nothing on stderr, as grep does.
#[derive(Debug)]
struct NoMatch;

impl std::fmt::Display for NoMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no match")
    }
}

impl std::error::Error for NoMatch {}

#[derive(clap::Args, Clone)]
struct WalkArgs {
    /// Skip files larger than this many bytes.
    #[arg(long, default_value_t = 1024 * 1024)]
    max_file_size: u64,
    /// Extra gitignore-style globs to exclude (repeatable).
    #[arg(long)]
    exclude: Vec<String>,
    /// Index only files matching these globs (repeatable).
    #[arg(long)]
    include: Vec<String>,
}

/// What the command line asked for: the CLI's own work (done, with its exit code) or a server
/// front door, which the binary starts (front doors do not call each other).
pub enum Entry {
    Done(i32),
    Lsp,
    Mcp { roots: Vec<PathBuf>, http: Option<std::net::SocketAddr>, model: Option<String>, ort_dylib: Option<PathBuf> },
}

/// Parses the command line and runs CLI commands; hands the servers back to the binary.
pub fn run() -> Entry {
    let cli = match Cli::try_parse().and_then(bare_question) {
        Ok(cli) => cli,
        Err(err) if err.use_stderr() => {
            // One line, like every other error (clap adds a usage hint below it).
            let text = err.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            let _ = writeln!(io::stderr(), "raggrep: {}", first.trim_start_matches("error: "));
            return Entry::Done(2);
        }
        Err(help) => {
            let _ = help.print();
            return Entry::Done(0);
        }
    };
    if matches!(cli.command, Command::Lsp) {
        // The language server installs its own logging (file, client, stderr) and has its own
        // exit codes (1: `exit` without `shutdown`, as the specification says).
        return Entry::Lsp;
    }
    if let Command::Mcp { roots, http } = cli.command {
        // stdout is the protocol channel: logs go to stderr, as everywhere else.
        init_logging(&cli.log);
        return Entry::Mcp { roots, http, model: cli.model, ort_dylib: cli.ort_dylib };
    }
    init_logging(&cli.log);
    Entry::Done(match dispatch(cli) {
        Ok(()) => 0,
        Err(err) if err.downcast_ref::<NoMatch>().is_some() => 1,
        // The reader went away (`raggrep query … | head`): nothing left to say, as ripgrep does.
        Err(err) if is_broken_pipe(&err) => 0,
        Err(err) => {
            let _ = writeln!(io::stderr(), "raggrep: {}", one_line(&err));
            2
        }
    })
}

/// `raggrep QUESTION…` read again as `raggrep query QUESTION…` (or `ask` with `--answer`): the
/// words up to the first option or existing path are the question (`raggrep where is retry
/// configured src/`), the rest is what `query` takes. Global options before the question stay.
fn bare_question(cli: Cli) -> Result<Cli, clap::Error> {
    let Command::Bare(words) = &cli.command else { return Ok(cli) };
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let prefix = &args[..args.len().saturating_sub(words.len())];
    let split = words
        .iter()
        .position(|w| w.starts_with('-') || (!w.contains(' ') && Path::new(w).exists()))
        .unwrap_or(words.len())
        .max(1);
    let question = words[..split].join(" ");
    let mut rest: Vec<&str> = words[split..].iter().map(String::as_str).collect();
    let answer = rest.contains(&"--answer")
        || bare_runs_ask().map_err(|why| clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{why}\n")))?;
    rest.retain(|w| *w != "--answer");
    // `raggrep -- index`: the `--` only kept "index" from being the subcommand.
    let mut argv: Vec<std::ffi::OsString> = prefix.iter().filter(|a| a.as_os_str() != "--").cloned().collect();
    argv.push(if answer { "ask" } else { "query" }.into());
    argv.push(question.into());
    argv.extend(rest.into_iter().map(Into::into));
    let again = Cli::try_parse_from(argv)?;
    if matches!(again.command, Command::Bare(_)) {
        // Cannot happen with the `--` gone; never dispatch a question that is still bare.
        return Err(clap::Error::raw(clap::error::ErrorKind::InvalidSubcommand, "cannot read the question\n"));
    }
    Ok(again)
}

/// Whether a bare question runs `raggrep ask` instead of `raggrep query`: `[cli] bare = "ask"`
/// (or `"query"`, the default) in the `.raggrep/config.toml` of the project the current
/// directory is in, else in the user's config. Any other value is an error naming the file.
fn bare_runs_ask() -> Result<bool, String> {
    let project = std::env::current_dir()
        .ok()
        .and_then(|cwd| engine::discover(&cwd, &engine::Ceilings::from_env()).ok())
        .map(|found| found.root.join(engine::INDEX_DIR_NAME).join("config.toml"));
    match crate::engine::configured(project.as_deref(), "cli", "bare")? {
        None => Ok(false),
        Some((_, toml::Value::String(run))) if run == "ask" => Ok(true),
        Some((_, toml::Value::String(run))) if run == "query" => Ok(false),
        Some((path, other)) => Err(format!("{}: [cli] bare must be \"query\" or \"ask\", not {other}", path.display())),
    }
}

/// `--log`: a level, or tracing directives (`raggrep=debug,warn`). A bare word that is no level
/// would be read as a target name and silence every log, so it is refused instead.
fn log_filter(value: &str) -> Result<String, String> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let directive_ok = |d: &str| d.contains('=') || LEVELS.contains(&d.trim().to_ascii_lowercase().as_str());
    if value.split(',').all(directive_ok) && tracing_subscriber::EnvFilter::try_new(value).is_ok() {
        Ok(value.to_string())
    } else {
        Err(format!("expected a level ({}) or target=level directives", LEVELS.join(", ")))
    }
}

fn init_logging(level: &str) {
    use std::io::IsTerminal;
    let filter =
        tracing_subscriber::EnvFilter::try_new(level).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.io_error_kind() == Some(io::ErrorKind::BrokenPipe))
    })
}

/// `--vectors`: an encoding name.
fn vector_encoding(text: &str) -> Result<VectorEncoding, String> {
    VectorEncoding::parse(text).ok_or_else(|| format!("{text:?}: use f32 or int8"))
}

/// `--min-score`: a finite number (NaN would silently drop every result).
fn finite_score(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(score) if score.is_finite() => Ok(score),
        Ok(_) => Err(format!("{text:?} is not a finite number")),
        Err(err) => Err(format!("{text:?}: {err}")),
    }
}

fn dispatch(cli: Cli) -> Result<()> {
    let model = cli.model.as_deref();
    let ort = cli.ort_dylib.as_deref();
    let choice = ModelChoice::new(model, ort);
    match cli.command {
        Command::Index {
            path,
            new,
            location,
            walk,
            json,
            commit_every,
            first_publish,
            ann_min_slots,
            compact_min_dead,
            vectors,
            background,
            paths_from,
        } => {
            if background && let Err(err) = crate::priority::lower_current_thread() {
                tracing::warn!("cannot lower the indexer's priority: {err}");
            }
            let location = index_location(path.as_deref(), new, location)?;
            let only_paths = paths_from.as_deref().map(|from| changed_paths(from, &location.root)).transpose()?;
            let mut engine = Local::new(location, choice, Door::Cli);
            // The model loads before the walk: a missing one fails before any work.
            engine.embedder()?;
            let options = IndexOptions {
                walk: walk.into(),
                commit_interval: std::time::Duration::try_from_secs_f64(commit_every.max(0.0))
                    .unwrap_or(std::time::Duration::MAX),
                first_publish: std::time::Duration::try_from_secs_f64(first_publish.max(0.0))
                    .unwrap_or(std::time::Duration::MAX),
                ann_min_slots,
                compact_min_dead,
                vectors,
                shared_cache: SharedCacheConfig::from_env(),
                only_paths,
                ..IndexOptions::default()
            };
            let stats = engine.update(&options, &mut progress::Terminal::new())?;
            // The history too, when there is one: after a commit, the hooks keep both fresh.
            engine::history::refresh_history(&engine.location, &crate::vectordb::StoreModel::new(model, ort));
            if json {
                writeln!(io::stdout().lock(), "{}", serde_json::to_string(&stats)?)?;
            }
            Ok(())
        }
        Command::Query {
            query,
            location,
            k,
            json,
            mode,
            language,
            path_glob,
            min_score,
            exact,
            rerank,
            from,
            team,
            repo,
            here,
            everywhere,
            wait,
            paths,
            print,
        } => {
            let mode = engine::mode(&mode)?;
            if repo.is_some() && from.is_none() && !team {
                anyhow::bail!("--repo filters the team index: add --from URL or --team");
            }
            if from.is_some() || team {
                if language.is_some() || path_glob.is_some() || min_score.is_some() || exact || rerank || query == "-" {
                    anyhow::bail!(
                        "the team index takes a single query with -k, --mode, --json and --repo (--lang, --path, --min-score, --exact, --rerank and `-` are local-only)"
                    );
                }
                let location = location.resolve()?.location;
                let args = team::FromArgs {
                    url: from.as_deref(),
                    repo_glob: repo,
                    location: &location,
                    text: &query,
                    k,
                    mode,
                    json,
                };
                return team::query(args, model, ort);
            }
            let resolved = location.resolve()?;
            let scope = if here {
                Scope::Here
            } else if everywhere {
                Scope::Everywhere
            } else {
                Scope::SubtreeFirst
            };
            let path_glob = match location::paths_glob(&resolved.location.root, &paths)? {
                Some(glob) if path_glob.is_some() || here => {
                    anyhow::bail!("PATH arguments narrow the search as --path and --here do: give one of them ({glob})")
                }
                Some(glob) => Some(glob),
                None => location::here_glob(&resolved.subtree, scope, path_glob.as_deref())?,
            };
            let request = SearchRequest {
                mode,
                lang: language,
                path: path_glob,
                min_score: min_score.map(f64::from),
                exact,
                rerank,
                ..SearchRequest::new("", k)
            };
            // The text comes per query (one, or a line each from stdin): the options are checked now.
            let template = request.template()?;
            cmd_query(&resolved, choice, QueryCommand { text: &query, template, json, scope, wait, print: &print })
        }
        Command::Status { location, json } => {
            let location = location.resolve()?.location;
            cmd_status(&Local::new(location, choice, Door::Cli), json)
        }
        Command::Inspect { location, chunks, skipped, json } => {
            let location = location.resolve()?.location;
            cmd_inspect(&Local::new(location, choice, Door::Cli), chunks, skipped, json)
        }
        Command::Lsp | Command::Mcp { .. } => unreachable!("handled in run()"),
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "raggrep", &mut io::stdout().lock());
            Ok(())
        }
        Command::Man => {
            clap_mangen::Man::new(Cli::command()).render(&mut io::stdout().lock())?;
            Ok(())
        }
        Command::Bare(words) => anyhow::bail!("cannot read {:?} as a question", words.join(" ")),
        Command::Chunk { file, json } => cmd_chunk(&file, json),
        Command::Embed { text, document } => {
            let embedder = choice.load()?;
            cmd_embed(&embedder, &text, document)
        }
        Command::Files { path } => cmd_files(&path),
        Command::Db(args) => db::run(args, model, ort),
        Command::Ask(args) => ask::run(*args, model, ort),
        Command::Push(args) => team::push(args, model, ort),
        Command::Hook { action } => cmd_hook(action),
        Command::Watch(args) => watch::run(args, model, ort),
        Command::Log(args) => log::run(args, model, ort),
    }
}

/// The root-relative paths `--paths-from` names: read from a file or stdin, NUL-separated when
/// there is a NUL, else one per line; relative ones from the current directory. A path outside
/// the root is left out (and said).
fn changed_paths(from: &Path, root: &Path) -> Result<Vec<String>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    if from == Path::new("-") {
        io::stdin().lock().read_to_end(&mut bytes).context("reading the changed paths from stdin")?;
    } else {
        bytes = std::fs::read(from).with_context(|| format!("reading the changed paths from {}", from.display()))?;
    }
    let separator = if bytes.contains(&0) { b'\0' } else { b'\n' };
    let cwd = std::env::current_dir().context("the current directory")?;
    let mut paths = Vec::new();
    for raw in bytes.split(|&b| b == separator) {
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches('\r');
        if text.trim().is_empty() {
            continue;
        }
        let absolute = cwd.join(text);
        match walk::relative_path(&absolute, root) {
            Some(rel) if !rel.is_empty() => paths.push(rel),
            _ => tracing::warn!("{text} is outside {}: left out of the update", root.display()),
        }
    }
    Ok(paths)
}

fn cmd_hook(action: HookAction) -> Result<()> {
    let (changes, json) = match action {
        HookAction::Install { path, json } => {
            // The hooks name this very binary, so they work whatever PATH git runs them with.
            let binary = std::env::current_exe().context("locating the raggrep binary")?;
            (crate::hooks::install(&path, &binary)?, json)
        }
        HookAction::Uninstall { path, json } => (crate::hooks::uninstall(&path)?, json),
    };
    let mut out = io::stdout().lock();
    for change in &changes {
        if json {
            writeln!(out, "{}", serde_json::to_string(change)?)?;
        } else {
            writeln!(out, "{}: {} ({})", change.hook, change.action, change.path.display())?;
        }
    }
    Ok(())
}

impl From<WalkArgs> for walk::WalkOptions {
    fn from(args: WalkArgs) -> Self {
        walk::WalkOptions {
            max_file_size: args.max_file_size,
            exclude: args.exclude,
            include: args.include,
            ..walk::WalkOptions::default()
        }
    }
}

/// What `raggrep query` was asked: the text, the search, and how to show its answer.
struct QueryCommand<'a> {
    text: &'a str,
    template: Query,
    json: bool,
    scope: Scope,
    /// On a tree without an index, embed everything before answering.
    wait: bool,
    print: &'a PrintArgs,
}

fn cmd_query(resolved: &Resolved, choice: ModelChoice, command: QueryCommand<'_>) -> Result<()> {
    let QueryCommand { text: query, template, json, scope, wait, print } = command;
    let template = &template;
    let location = &resolved.location;
    let mut engine = Local::new(location.clone(), choice, Door::Cli);
    // Dense search has nothing to answer with before the vectors.
    let need = Need { vectors: template.mode != Mode::Lexical, answer_first: !wait && template.mode != Mode::Dense };
    let snapshot = engine.open_for(need, &mut progress::Terminal::new())?;
    // Hits under the directory the search started in come first, unless asked otherwise.
    let first = if scope == Scope::SubtreeFirst { resolved.subtree.as_str() } else { "" };
    let mut out = io::stdout().lock();
    if query == "-" {
        return batch_queries(&engine, &snapshot, template, first, &mut out);
    }
    let request = Query { text: query.to_string(), ..template.clone() };
    let mut results = engine.search(&snapshot, &request)?;
    location::subtree_first(&mut results, first);
    if let Some(max) = print.max_count {
        let mut per_file: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        results.results.retain(|hit| {
            let seen = per_file.entry(hit.path.clone()).or_default();
            *seen += 1;
            *seen <= max
        });
    }
    warn_degraded(results.degraded.as_deref());
    if json {
        writeln!(out, "{}", serde_json::to_string(&cli_response(&results, location))?)?;
        return Ok(());
    }
    let seen = output::Seen::from(resolved, scope);
    output::print_hits(&mut out, &results, &seen, &print.format(), &location.root)?;
    if results.results.is_empty() {
        // grep's convention, for scripts: 1 when nothing matched (2 is an error).
        out.flush()?;
        return Err(NoMatch.into());
    }
    Ok(())
}

/// The index `raggrep index [PATH]` updates: PATH's own with `--new` or `--index-dir`; else the
/// index PATH lies in, when there is one (said on stderr), else PATH; without PATH, the one the
/// current directory resolves to ([`location::resolve_from`]).
fn index_location(path: Option<&Path>, new: bool, location: LocationArgs) -> Result<IndexLocation> {
    if new || location.index_dir.is_some() || location.root.is_some() {
        let root = path.or(location.root.as_deref()).unwrap_or(Path::new("."));
        return Ok(IndexLocation::new(root, location.index_dir.as_deref())?);
    }
    let resolved = location::resolve_from(path.unwrap_or(Path::new(".")))?;
    match (path, resolved.found) {
        (Some(path), Some(engine::FoundIndex::Index)) if !resolved.subtree.is_empty() => {
            let _ = writeln!(
                io::stderr(),
                "raggrep: {} is inside the index of {}: updating that one (`raggrep index --new {}` makes a separate index)",
                path.display(),
                resolved.location.root.display(),
                path.display()
            );
            Ok(resolved.location)
        }
        // A PATH given names the root, unless an index encloses it.
        (Some(path), _) => Ok(IndexLocation::new(path, None)?),
        (None, _) => {
            resolved.announce("updating");
            Ok(resolved.location)
        }
    }
}

/// JSON Lines: exactly one answer per input line, in order, so answers can be matched to
/// questions (an empty line gets an empty answer, a line that cannot be read an error object);
/// model and index are loaded once.
fn batch_queries(
    engine: &Local,
    snapshot: &Snapshot,
    template: &Query,
    first: &str,
    out: &mut impl Write,
) -> Result<()> {
    use std::io::BufRead;
    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut warned = false;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).context("reading queries from stdin")? == 0 {
            return Ok(());
        }
        number += 1;
        let answer = match std::str::from_utf8(&line) {
            Err(_) => serde_json::to_value(wire::ErrorBody {
                query: None,
                error: format!("line {number} is not valid UTF-8"),
                fix: None,
            })?,
            Ok(text) => {
                let request = Query { text: text.trim_end_matches(['\n', '\r']).to_string(), ..template.clone() };
                match engine.search(snapshot, &request) {
                    Ok(mut results) => {
                        location::subtree_first(&mut results, first);
                        if !warned {
                            warn_degraded(results.degraded.as_deref());
                            warned = results.degraded.is_some();
                        }
                        serde_json::to_value(cli_response(&results, &snapshot.location))?
                    }
                    Err(err) => serde_json::to_value(wire::ErrorBody {
                        query: Some(request.text),
                        error: one_line(&err.into()),
                        fix: None,
                    })?,
                }
            }
        };
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
}

fn search_response(results: &SearchResults) -> wire::SearchResponse {
    wire::SearchResponse::new(results, results.results.iter().map(wire::Hit::from_search).collect())
}

/// `query --json`: the response, naming the root that answered (paths are relative to it).
fn cli_response(results: &SearchResults, location: &IndexLocation) -> wire::SearchResponse {
    wire::SearchResponse { root: Some(location.root.display().to_string()), ..search_response(results) }
}

fn warn_degraded(degraded: Option<&str>) {
    if let Some(why) = degraded {
        let _ = writeln!(io::stderr(), "raggrep: warning: {why}");
    }
}

fn cmd_status(engine: &Local, json: bool) -> Result<()> {
    let mut out = io::stdout().lock();
    match engine.status()? {
        Status::Unusable { damaged, .. } if json => writeln!(out, "{}", serde_json::to_string(&damaged)?)?,
        Status::Unusable { state, damaged } => {
            writeln!(out, "index of {} {state}: {}; {}", damaged.root, damaged.damaged, damaged.fix)?
        }
        Status::Ready(status) if json => writeln!(out, "{}", serde_json::to_string(&status)?)?,
        Status::Ready(status) => output::print_status(&mut out, &status)?,
    }
    Ok(())
}

fn cmd_inspect(engine: &Local, chunks: bool, skipped: bool, json: bool) -> Result<()> {
    let snapshot = engine.open_as_is()?;
    let mut out = io::stdout().lock();
    if skipped {
        for (path, reason) in snapshot.skipped() {
            if json {
                writeln!(out, "{}", serde_json::json!({"path": path, "reason": reason}))?;
            } else {
                writeln!(out, "{path}  {reason}")?;
            }
        }
        return Ok(());
    }
    if !chunks {
        for (path, language, count) in snapshot.files() {
            if json {
                writeln!(out, "{}", serde_json::json!({"path": path, "language": language, "chunks": count}))?;
            } else {
                writeln!(out, "{path}  {language}  {count} chunks")?;
            }
        }
        return Ok(());
    }
    for i in 0..snapshot.chunk_count() {
        let Some(c) = snapshot.chunk(i) else { continue };
        if json {
            let value = serde_json::json!({
                "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
                "kind": c.kind, "language": c.language, "symbol": c.symbol_path(),
                "hash": format!("{:032x}", c.hash), "embedded": c.embedded,
            });
            writeln!(out, "{value}")?;
        } else {
            writeln!(
                out,
                "{}:{}-{}  {}  {}{}",
                c.path,
                c.start_line,
                c.end_line,
                c.kind.name(),
                c.symbol_path().unwrap_or_default(),
                if c.embedded { "" } else { "  (not embedded yet)" }
            )?;
        }
    }
    Ok(())
}

fn cmd_chunk(file: &Path, json: bool) -> Result<()> {
    let (text, chunks) = engine::chunk_one_file(file)?;
    let mut out = io::stdout().lock();
    for chunk in &chunks {
        if json {
            let mut value = serde_json::to_value(chunk)?;
            value["symbol_path"] = serde_json::json!(chunk.symbol_path());
            value["hash"] = serde_json::json!(chunk.hash.to_string());
            value["text"] = serde_json::json!(chunk.text(&text));
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
        embedder.embed_documents(&[text])?.pop().context("no vector returned")?
    } else {
        embedder.embed_query(text)?
    };
    let first: Vec<String> = vector.as_slice().iter().take(8).map(|v| format!("{v:.6}")).collect();
    let mut out = io::stdout().lock();
    writeln!(out, "model: {}", embedder.info().id)?;
    if !document && let Some(query_model) = embedder.query_model() {
        writeln!(out, "query model: {query_model}")?;
    }
    writeln!(out, "dim: {}", vector.dim())?;
    writeln!(out, "tokens: {}", embedder.count_tokens(text)?)?;
    writeln!(out, "first: [{}]", first.join(", "))?;
    writeln!(out, "norm: {:.6}", vector.norm())?;
    Ok(())
}

fn cmd_files(path: &Path) -> Result<()> {
    let options = walk::WalkOptions::default();
    let report = walk::walk(&[path.to_path_buf()], &options)?;
    let mut out = io::stdout().lock();
    let mut err = io::stderr().lock();
    for skipped in &report.skipped {
        writeln!(err, "skipped {}: {}", skipped.path.display(), skipped.reason)?;
    }
    // The walk judges by name and size; indexing also reads each file and leaves out binary,
    // generated and minified ones. Reading them here keeps the list what would be indexed.
    let mut listed = 0;
    let mut skipped = report.skipped.len();
    for file in &report.files {
        match walk::read_source(&file.abs_path, options.max_file_size) {
            Ok(_) => {
                writeln!(out, "{}", file.rel_path)?;
                listed += 1;
            }
            Err(reason) => {
                writeln!(err, "skipped {}: {reason}", file.abs_path.display())?;
                skipped += 1;
            }
        }
    }
    writeln!(err, "{listed} files, {skipped} skipped")?;
    Ok(())
}

/// Fuzzing entry point (internal): parses a command line (program name first) the way
/// [`run`] does, without running it.
pub fn parse_args<I, T>(args: I) -> Result<(), String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::try_parse_from(args).map(drop).map_err(|e| e.to_string())
}
