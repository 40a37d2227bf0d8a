//! Indexing progress on stderr: a live bar on a terminal, plain lines otherwise.

use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::engine::{IndexLocation, Progress, Report, UpdateStats};
use crate::wire::human_duration;

/// The engine's reports on stderr: its notes as lines, indexing progress as a bar (or lines),
/// a summary line after each update.
pub struct Terminal {
    display: Display,
}

impl Terminal {
    pub fn new() -> Terminal {
        Terminal { display: Display::new() }
    }
}

impl Report for Terminal {
    fn say(&mut self, line: &str) {
        self.display.line(line);
    }

    fn progress(&mut self, event: Progress) {
        self.display.event(event);
    }

    fn updated(&mut self, location: &IndexLocation, stats: &UpdateStats) {
        self.display.finish();
        let _ = writeln!(
            io::stderr(),
            "indexed {}: {} files ({} changed, {} removed, {} skipped), {} chunks, {} embedded ({} from the machine-wide cache), {} reused from the index, {:.1}s",
            location.root.display(),
            stats.files,
            stats.changed_files,
            stats.removed_files,
            stats.skipped_files,
            stats.chunks,
            stats.embedded,
            stats.from_cache,
            stats.reused,
            stats.seconds
        );
        // A later update (a rebuild after the first) times its own steps.
        self.display = Display::new();
    }
}

pub struct Display {
    tty: bool,
    started: Instant,
    embed_started: Option<Instant>,
    last_line: Instant,
    drawn: bool,
}

impl Display {
    pub fn new() -> Display {
        Display {
            tty: io::stderr().is_terminal(),
            started: Instant::now(),
            embed_started: None,
            last_line: Instant::now() - Duration::from_secs(60),
            drawn: false,
        }
    }

    pub fn event(&mut self, event: Progress) {
        match event {
            Progress::Waiting => self.line("waiting for another raggrep process to finish updating this index…"),
            Progress::Rebuilding { reason } => self.line(&reason),
            Progress::Chunked { files, changed_files, chunks, to_embed } => self.line(&format!(
                "chunked {files} files ({changed_files} changed) into {chunks} chunks in {:.1}s; lexical search ready; {to_embed} chunks to embed",
                self.started.elapsed().as_secs_f64()
            )),
            Progress::Embedding { done, total } => self.embedding(done, total),
            Progress::BuildingAnn { vectors } => self.line(&format!("building the HNSW graph over {vectors} vectors…")),
            Progress::ExtendingAnn { vectors, new } => {
                self.line(&format!("adding {new} vectors to the HNSW graph ({vectors} in all)…"))
            }
            // The bar already shows embedding progress; a waiting CLI has no readers to update.
            Progress::Published { .. } | Progress::Followed => {}
        }
    }

    fn embedding(&mut self, done: usize, total: usize) {
        let started = *self.embed_started.get_or_insert_with(Instant::now);
        let elapsed = started.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 { done as f64 / elapsed } else { 0.0 };
        let eta = if rate > 0.0 { (total - done) as f64 / rate } else { 0.0 };
        let text = format!("embedding {done}/{total} chunks  {rate:.1}/s  ~{} left", human_duration(eta));
        if self.tty {
            let width = 30;
            let filled = (done * width).checked_div(total).unwrap_or(width).min(width);
            let bar = format!("[{}{}]", "=".repeat(filled), " ".repeat(width - filled));
            let _ = write!(io::stderr(), "\r\x1b[2K{bar} {text}");
            let _ = io::stderr().flush();
            self.drawn = true;
        } else if self.last_line.elapsed() >= Duration::from_secs(2) || done == total {
            self.line(&text);
        }
    }

    fn line(&mut self, text: &str) {
        let mut err = io::stderr().lock();
        if self.drawn {
            let _ = write!(err, "\r\x1b[2K");
            self.drawn = false;
        }
        let _ = writeln!(err, "{text}");
        self.last_line = Instant::now();
    }

    pub fn finish(&mut self) {
        if self.drawn {
            let _ = writeln!(io::stderr());
            self.drawn = false;
        }
    }
}
