//! Human-readable output: ripgrep-like hits, colour only on a terminal.

use std::io::{self, IsTerminal, Write};

use super::location::{self, Resolved, Scope};
use crate::search::SearchResults;
use crate::wire::IndexStatus;

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }
}

/// Where the user is when hits are printed: paths are shown from there, and a search started in
/// a subdirectory of the root says which index answered.
#[derive(Debug, Default)]
pub struct Seen {
    pub root: String,
    pub subtree: String,
    pub scope: Scope,
}

impl Seen {
    pub fn from(resolved: &Resolved, scope: Scope) -> Seen {
        Seen { root: resolved.location.root.display().to_string(), subtree: resolved.subtree.clone(), scope }
    }
}

pub fn print_hits(out: &mut impl Write, results: &SearchResults, seen: &Seen) -> io::Result<()> {
    let style = Style { on: io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() };
    if !seen.subtree.is_empty() {
        let order = match seen.scope {
            Scope::SubtreeFirst => format!("hits under {}/ first", seen.subtree),
            Scope::Here => format!("only hits under {}/", seen.subtree),
            Scope::Everywhere => "the whole project's ranking".to_string(),
        };
        writeln!(out, "{}", style.paint("2", &format!("(index of {}; {order})", seen.root)))?;
    }
    if results.partial {
        writeln!(out, "{}", style.paint("33", "(index is still being embedded: results are partial)"))?;
    }
    if let Some(confidence) = results.confidence.filter(|c| !c.confident && !results.results.is_empty()) {
        let line = format!(
            "(no confident match: {:.0} % likely that the first results hold what you asked about; the closest code follows)",
            confidence.value * 100.0
        );
        writeln!(out, "{}", style.paint("33", &line))?;
    }
    for hit in &results.results {
        writeln!(
            out,
            "{}:{}  {}  {}",
            style.paint("35", &location::from_subtree(&hit.path, &seen.subtree)),
            style.paint("32", &format!("{}-{}", hit.start_line, hit.end_line)),
            style.paint("2", &format!("{:.3}", hit.score)),
            style.paint("1", hit.symbol.as_deref().unwrap_or(hit.kind.name())),
        )?;
        for line in hit.snippet.lines().take(4) {
            writeln!(out, "    {line}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

pub fn print_status(out: &mut impl Write, status: &IndexStatus) -> io::Result<()> {
    let s = &status.index;
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1_000_000.0);
    writeln!(out, "root:          {}", s.root)?;
    writeln!(out, "index:         {}", s.index_dir)?;
    writeln!(out, "files:         {} ({} skipped)", s.files, s.skipped)?;
    writeln!(out, "chunks:        {} ({} embedded, {} pending)", s.chunks, s.embedded, s.pending)?;
    writeln!(out, "model:         {} ({}-d)", s.model, s.dim)?;
    if let Some(what_to_do) = &status.model_mismatch {
        writeln!(out, "               {what_to_do}")?;
    }
    writeln!(
        out,
        "vectors:       {} {} ({} dead, {} in the HNSW graph)",
        s.vectors,
        s.vector_encoding.name(),
        s.dead_vectors,
        s.ann_slots
    )?;
    writeln!(out, "on disk:       {}", mb(s.bytes_on_disk))?;
    writeln!(out, "memory (est.): {}", mb(s.memory_estimate_bytes))?;
    let ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
        .saturating_sub(s.updated_unix_ms);
    writeln!(
        out,
        "last update:   {} ago (generation {})",
        crate::wire::human_duration(ago as f64 / 1000.0),
        s.generation
    )?;
    Ok(())
}
