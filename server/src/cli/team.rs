//! `raggrep push` and `raggrep query --from`: the team index on PostgreSQL (issue 15).

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::audit::Door;
use crate::engine::{Embedder, IndexLocation, IndexOptions, Local, Mode, ModelChoice, SharedCacheConfig};
use crate::team::push::{self, PushProgress};
use crate::team::schema::{self, IndexModel};
use crate::team::search::{TeamQuery, TeamResults};
use crate::team::{self as team_index, TeamUrl};
use crate::wire;

#[derive(clap::Args)]
pub struct PushArgs {
    /// The workspace to push, indexed first (default: found as every command finds it: the
    /// nearest .raggrep/ at or above the current directory, else the git work tree's top).
    path: Option<PathBuf>,
    /// PostgreSQL URL of the team index, e.g. postgres://ci@db.internal/code (default:
    /// $RAGGREP_TEAM_URL, then `[team] url` in .raggrep/config.toml or
    /// ~/.config/raggrep/config.toml). Give the password in PGPASSWORD, not in the URL.
    #[arg(long, value_name = "URL")]
    to: Option<String>,
    /// The repository's name (default: the git remote `origin`, without credentials).
    #[arg(long, value_name = "NAME")]
    remote: Option<String>,
    /// The branch (default: the checked-out one; needed on a detached HEAD).
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
    /// Print the summary as JSON on stdout too.
    #[arg(long)]
    json: bool,
    /// Keep the index here instead of PATH/.raggrep.
    #[arg(long, env = "RAGGREP_INDEX_DIR")]
    index_dir: Option<PathBuf>,
    /// Chunks per committed upload batch (tests interrupt a push between batches).
    #[arg(long, default_value_t = push::DEFAULT_BATCH, hide = true)]
    batch: usize,
}

pub fn push(args: PushArgs, model: Option<&str>, ort: Option<&Path>) -> Result<()> {
    let location =
        super::LocationArgs { root: args.path.clone(), index_dir: args.index_dir.clone() }.resolve()?.location;
    let url = resolve_url(args.to.as_deref(), &location, "--to URL")?;
    // Identity and connection first: a wrong URL or name fails before minutes of indexing.
    let identity = push::identify(&location.root, args.remote.as_deref(), args.branch.as_deref())?;
    let mut client = url.connect()?;
    let mut engine = Local::new(location.clone(), ModelChoice::new(model, ort), Door::Cli);
    let info = engine.embedder()?.info().clone();
    schema::migrate(&mut client, &url, &IndexModel::of(&info))?;
    let options = IndexOptions { shared_cache: SharedCacheConfig::from_env(), ..IndexOptions::default() };
    engine.update(&options, &mut super::progress::Terminal::new())?;
    let snapshot = engine.open_as_is()?;
    let mut err = io::stderr();
    let live = err.is_terminal();
    let mut last_line: Option<std::time::Instant> = None;
    let mut report = |event: PushProgress| {
        let (line, uploading) = match event {
            PushProgress::Uploading { sent, total } => (format!("push: {sent}/{total} chunks uploaded"), true),
            PushProgress::Publishing { files } => (format!("push: publishing {files} changed files"), false),
        };
        // Plain lines off a terminal (CI logs): the first upload line, then at most one a second.
        if live {
            let _ = write!(err, "\r{line}\x1b[K");
        } else if !uploading || last_line.is_none_or(|t| t.elapsed().as_secs_f64() >= 1.0) {
            let _ = writeln!(err, "{line}");
            last_line = Some(std::time::Instant::now());
        }
    };
    let stats = push::push(&mut client, &url, &snapshot, &identity, args.batch, &mut report)?;
    if live {
        let _ = writeln!(err);
    }
    let _ = writeln!(
        err,
        "pushed {} to {}: {} files ({} changed, {} removed), {} chunks, {} uploaded ({} already there), {:.1}s",
        stats.repo,
        url.redacted(),
        stats.files,
        stats.changed_files,
        stats.removed_files,
        stats.chunks,
        stats.chunks_sent,
        stats.chunks_present,
        stats.seconds
    );
    if args.json {
        writeln!(io::stdout().lock(), "{}", serde_json::to_string(&stats)?)?;
    }
    Ok(())
}

/// `query --from URL | --team [--repo GLOB]`.
pub struct FromArgs<'a> {
    /// `None`: the configured team index (`--team`).
    pub url: Option<&'a str>,
    pub repo_glob: Option<String>,
    pub location: &'a IndexLocation,
    pub text: &'a str,
    pub k: usize,
    pub mode: Mode,
    pub json: bool,
}

pub fn query(args: FromArgs<'_>, model: Option<&str>, ort: Option<&Path>) -> Result<()> {
    let url = resolve_url(args.url, args.location, "--from URL")?;
    let mut client = url.connect()?;
    let embedder = ModelChoice::new(model, ort).load()?;
    let info = embedder.info();
    let index_model = IndexModel::of(info);
    let request = TeamQuery {
        text: args.text.to_string(),
        k: args.k,
        mode: args.mode,
        repo_glob: args.repo_glob,
        exclude_remotes: Vec::new(),
    };
    let embedder_ref: Option<&dyn Embedder> = (args.mode != Mode::Lexical).then_some(&embedder as &dyn Embedder);
    let results = crate::team::search::search(&mut client, &url, embedder_ref, &index_model, &request)?;
    let mut out = io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&response(&results))?)?;
    } else {
        print(&mut out, &results)?;
    }
    Ok(())
}

fn response(results: &TeamResults) -> wire::SearchResponse {
    wire::SearchResponse {
        query: results.query.clone(),
        took_ms: results.took_ms,
        partial: false,
        degraded: None,
        results: results.results.iter().map(wire::Hit::from_team).collect(),
        budget: None,
        k_capped: None,
        reranked_by: None,
        confidence: None,
        team: None,
        root: None,
    }
}

fn print(out: &mut impl Write, results: &TeamResults) -> io::Result<()> {
    for crate::team::search::TeamHit { repo, hit, .. } in &results.results {
        writeln!(
            out,
            "{}  {}:{}-{}  {:.3}  {}",
            repo,
            hit.path,
            hit.start_line,
            hit.end_line,
            hit.score,
            hit.symbol.as_deref().unwrap_or(hit.kind.name())
        )?;
        for line in hit.snippet.lines().take(4) {
            writeln!(out, "    {line}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The URL a flag gives, else the configured one; never printed with its password.
fn resolve_url(flag: Option<&str>, location: &IndexLocation, flag_name: &str) -> Result<TeamUrl> {
    let raw = match flag {
        Some(url) => url.to_string(),
        None => team_index::configured_url(&location.dir.join("config.toml"))
            .map_err(anyhow::Error::msg)?
            .with_context(|| {
                format!(
                    "no team index configured: give {flag_name} (postgres://USER@HOST/DB, password in PGPASSWORD), set RAGGREP_TEAM_URL, or `[team] url` in ~/.config/raggrep/config.toml"
                )
            })?,
    };
    Ok(TeamUrl::parse(&raw)?)
}
