//! `raggrep log [QUESTION…]`: the project's history by meaning (issue 57) — the commits that
//! most likely fixed or touched what the question describes, best first; with `--path` or
//! `--symbol` and no question, what changed there, newest first. The history index is brought
//! up to date first (only new commits are read).

use std::io::{self, Write};
use std::path::Path;

use anyhow::Result;

use super::location::LocationArgs;
use super::{NoMatch, warn_degraded};
use crate::audit::Door;
use crate::engine::history::search_history;
use crate::engine::{self, HistoryProgress, HistoryQuery};
use crate::vectordb::StoreModel;
use crate::wire;

#[derive(clap::Args)]
pub struct LogArgs {
    /// What to look for, in words ("proxy authentication fails on redirect"); without it, the
    /// newest commits that match --path / --symbol.
    question: Vec<String>,
    #[command(flatten)]
    location: LocationArgs,
    /// Only commits that changed a path under PATH: a directory, a file or a glob, relative to
    /// the current directory.
    #[arg(long, value_name = "PATH")]
    path: Option<String>,
    /// Only commits whose changes touched the definition NAME (`resolve_redirects`,
    /// `Session.resolve_redirects`).
    #[arg(long, value_name = "NAME")]
    symbol: Option<String>,
    /// Number of commits.
    #[arg(short = 'k', long, default_value_t = 10)]
    k: usize,
    /// One JSON object on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: LogArgs, model: Option<&str>, ort: Option<&Path>) -> Result<()> {
    anyhow::ensure!(args.k > 0, "-k must be at least 1");
    let resolved = args.location.resolve()?;
    // A path is the user's, relative to where they typed it, as git takes it.
    let path = args.path.map(|path| match crate::walk::relative_path(Path::new(&path), &resolved.location.root) {
        // An absolute path inside the root, in the root's terms.
        Some(rel) if Path::new(&path).is_absolute() => rel,
        _ => engine::in_index(&resolved.subtree, path.trim_start_matches("./")),
    });
    let text = args.question.join(" ");
    let query = HistoryQuery { text: (!text.trim().is_empty()).then_some(text), path, symbol: args.symbol, k: args.k };
    let mut err = io::stderr();
    let mut progress = |event: HistoryProgress| {
        let _ = match event {
            HistoryProgress::Reading => Ok(()),
            HistoryProgress::Read { commits } if commits > 0 => writeln!(err, "history: {commits} new commits"),
            HistoryProgress::Read { .. } => Ok(()),
            // A line per 20 batches: the first history of a large repository takes a minute.
            HistoryProgress::Embedding { done, total } if done % 640 == 0 && total > 640 => {
                writeln!(err, "history: embedding {done}/{total} commits")
            }
            HistoryProgress::Embedding { .. } => Ok(()),
        };
    };
    let answer = search_history(&resolved.location, &StoreModel::new(model, ort), &query, Door::Cli, &mut progress)?;
    if let Some(why) = &answer.updated.rebuilt {
        let _ = writeln!(io::stderr(), "history: read again: {why}");
    }
    let response = answer.response;
    warn_degraded(response.degraded.as_deref());
    if response.shallow {
        let _ = writeln!(
            io::stderr(),
            "raggrep: a shallow clone: the history before its oldest commit is missing (`git fetch --unshallow` brings it)"
        );
    }
    let mut out = io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&response)?)?;
    } else {
        print(&mut out, &response)?;
    }
    if response.results.is_empty() {
        out.flush()?;
        return Err(NoMatch.into());
    }
    Ok(())
}

/// A commit per block: id, date and subject, then its paths and definitions.
fn print(out: &mut impl Write, response: &wire::HistoryResponse) -> io::Result<()> {
    for hit in &response.results {
        let short = hit.commit.get(..12).unwrap_or(&hit.commit);
        writeln!(out, "{short}  {}  {}", hit.date, hit.subject)?;
        if !hit.files.is_empty() {
            let more = if hit.more_files > 0 { format!(" and {} more", hit.more_files) } else { String::new() };
            writeln!(out, "    {}{more}", hit.files.join(", "))?;
        }
        if !hit.symbols.is_empty() {
            writeln!(out, "    changed: {}", hit.symbols.join(", "))?;
        }
    }
    Ok(())
}
