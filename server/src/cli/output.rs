//! Human-readable output: ripgrep-like hits, colour only on a terminal.

use std::io::{self, Write};
use std::path::Path;

use super::location::{self, Resolved, Scope};
use crate::engine::SearchResults;
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

/// How `query` prints its hits, in grep's and ripgrep's terms.
#[derive(Debug, Clone)]
pub struct HitFormat {
    pub mode: HitMode,
    /// Each hit under a heading line (`path:line  score  symbol  (lines start-end)`, the line
    /// being the definition's own); off: `path:` before every line, as grep prints.
    pub heading: bool,
    /// Line numbers before the lines shown (`12:` in the hit, `14-` around it).
    pub line_numbers: bool,
    /// Context: lines before and after each hit's definition line (`-B`, `-A`, `-C`); none: the
    /// hit's first lines.
    pub before: u32,
    pub after: u32,
    pub color: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HitMode {
    /// The hits with their lines.
    Hits,
    /// `-l`: the files, ranked by their best hit.
    Files,
    /// `-c`: `path:hits` per file, ranked by its best hit.
    Count,
    /// `--vimgrep`: `path:line:column:text`, one line per hit (an editor's quickfix list).
    Vimgrep,
}

/// Lines of a hit shown without context.
const FIRST_LINES: u32 = 4;

pub fn print_hits(
    out: &mut impl Write,
    results: &SearchResults,
    seen: &Seen,
    format: &HitFormat,
    root: &Path,
) -> io::Result<()> {
    let style = Style { on: format.color };
    let shown = |path: &str| location::from_subtree(path, &seen.subtree);
    // Notes about the answer: above the hits for a reader, on stderr when the output is a list
    // another program reads. Each with its colour: information dim, warnings yellow.
    let mut notes: Vec<(&str, String)> = Vec::new();
    if !seen.subtree.is_empty() {
        let order = match seen.scope {
            Scope::SubtreeFirst => format!("hits under {}/ first", seen.subtree),
            Scope::Here => format!("only hits under {}/", seen.subtree),
            Scope::Everywhere => "the whole project's ranking".to_string(),
        };
        notes.push(("2", format!("(index of {}; {order})", seen.root)));
    }
    if results.partial {
        notes.push(("33", "(index is still being embedded: results are partial)".to_string()));
    }
    if let Some(confidence) = results.confidence.filter(|c| !c.confident && !results.results.is_empty()) {
        notes.push((
            "33",
            format!(
                "(no confident match: {:.0} % likely that the first results hold what you asked about; the closest code follows)",
                confidence.value * 100.0
            ),
        ));
    }
    for (color, note) in &notes {
        if format.mode == HitMode::Hits {
            writeln!(out, "{}", style.paint(color, note))?;
        } else {
            let _ = writeln!(io::stderr(), "raggrep: {}", note.trim_start_matches('(').trim_end_matches(')'));
        }
    }
    match format.mode {
        HitMode::Files | HitMode::Count => {
            let mut files: Vec<(&str, usize)> = Vec::new();
            for hit in &results.results {
                match files.iter_mut().find(|(p, _)| *p == hit.path) {
                    Some(entry) => entry.1 += 1,
                    None => files.push((&hit.path, 1)),
                }
            }
            for (path, count) in files {
                if format.mode == HitMode::Files {
                    writeln!(out, "{}", style.paint("35", &shown(path)))?;
                } else {
                    writeln!(out, "{}:{count}", style.paint("35", &shown(path)))?;
                }
            }
        }
        HitMode::Vimgrep => {
            let mut files = Files::new(root);
            for hit in &results.results {
                let lines = files.lines(&hit.path);
                let line = hit.line.max(hit.start_line);
                let text = lines.get(line as usize - 1).map_or("", |l| l.as_str());
                let column = column_of(text, hit.symbol.as_deref());
                writeln!(out, "{}:{line}:{column}:{text}", shown(&hit.path))?;
            }
        }
        HitMode::Hits => {
            let mut files = Files::new(root);
            let context = format.before > 0 || format.after > 0;
            for (i, hit) in results.results.iter().enumerate() {
                let path = shown(&hit.path);
                let lines = files.lines(&hit.path);
                let (from, to) = if context {
                    let line = hit.line.max(hit.start_line);
                    (line.saturating_sub(format.before).max(1), line + format.after)
                } else {
                    (hit.start_line, hit.end_line.min(hit.start_line + FIRST_LINES - 1))
                };
                let body: Vec<(u32, &str)> = if lines.is_empty() {
                    // The file is gone or unreadable: the snippet the search read.
                    hit.snippet.lines().take(FIRST_LINES as usize).zip(hit.start_line..).map(|(t, n)| (n, t)).collect()
                } else {
                    (from..=to.min(lines.len() as u32)).map(|n| (n, lines[n as usize - 1].as_str())).collect()
                };
                if format.heading {
                    writeln!(
                        out,
                        "{}:{}  {}  {}  {}",
                        style.paint("35", &path),
                        // `path:line` at the definition (what terminals and editors open), then
                        // the lines the hit spans, to read.
                        style.paint("32", &hit.line.max(hit.start_line).to_string()),
                        style.paint("2", &format!("{:.3}", hit.score)),
                        style.paint("1", hit.symbol.as_deref().unwrap_or(hit.kind.name())),
                        style.paint("2", &format!("(lines {}-{})", hit.start_line, hit.end_line)),
                    )?;
                } else if context && i > 0 {
                    writeln!(out, "--")?;
                }
                for (number, text) in body {
                    // ':' for a line of the hit, '-' for context around it, as grep marks them.
                    let mark = if (hit.start_line..=hit.end_line).contains(&number) { ':' } else { '-' };
                    let number = if format.line_numbers {
                        format!("{}{mark}", style.paint("32", &number.to_string()))
                    } else {
                        String::new()
                    };
                    if format.heading {
                        writeln!(out, "    {number}{text}")?;
                    } else {
                        writeln!(out, "{}{mark}{number}{text}", style.paint("35", &path))?;
                    }
                }
                if format.heading {
                    writeln!(out)?;
                }
            }
        }
    }
    Ok(())
}

/// Files read once per listing (several hits often share one).
struct Files<'a> {
    root: &'a Path,
    read: std::collections::HashMap<String, Vec<String>>,
}

impl<'a> Files<'a> {
    fn new(root: &'a Path) -> Files<'a> {
        Files { root, read: std::collections::HashMap::new() }
    }

    /// The file's lines; none when it cannot be read (gone since the search, not text).
    fn lines(&mut self, path: &str) -> &[String] {
        let root = self.root;
        self.read.entry(path.to_string()).or_insert_with(|| {
            std::fs::read_to_string(crate::walk::resolve(root, path))
                .map(|text| text.lines().map(str::to_string).collect())
                .unwrap_or_default()
        })
    }
}

/// 1-based column of the symbol's name in the line, else of its first non-blank character.
fn column_of(text: &str, symbol: Option<&str>) -> usize {
    let at = symbol
        .map(crate::engine::last_segment)
        .filter(|n| !n.is_empty())
        .and_then(|name| crate::engine::word_at(text, name))
        .unwrap_or_else(|| text.len() - text.trim_start().len());
    text[..at].chars().count() + 1
}

pub fn print_status(out: &mut impl Write, status: &IndexStatus) -> io::Result<()> {
    let s = &status.index;
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1_000_000.0);
    writeln!(out, "root:          {}", s.root)?;
    writeln!(out, "index:         {}", s.index_dir)?;
    writeln!(out, "files:         {} ({} skipped)", s.files, s.skipped)?;
    writeln!(
        out,
        "chunks:        {} ({} embedded, {} pending, {} of them code)",
        s.chunks, s.embedded, s.pending, s.code_pending
    )?;
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
