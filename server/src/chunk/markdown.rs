//! Markdown: one chunk per section (a heading and the text up to the next heading), with the
//! headings above it as its container. Long sections are split into line windows.

use super::{ChunkConfig, ChunkKind, Piece, lines};

pub(crate) fn split(text: &str, config: &ChunkConfig) -> Vec<Piece> {
    // (byte offset, level, title) of every ATX heading outside fenced code.
    let mut headings: Vec<(usize, usize, String)> = Vec::new();
    let mut fence: Option<&str> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
        } else if trimmed.starts_with("```") {
            fence = Some("```");
        } else if trimmed.starts_with("~~~") {
            fence = Some("~~~");
        } else if let Some((level, title)) = atx_heading(line) {
            headings.push((offset, level, title));
        }
        offset += line.len();
    }

    let mut pieces = Vec::new();
    let first_heading = headings.first().map_or(text.len(), |h| h.0);
    if first_heading > 0 {
        push_section(text, 0..first_heading, None, None, config, &mut pieces);
    }
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (i, (start, level, title)) in headings.iter().enumerate() {
        let end = headings.get(i + 1).map_or(text.len(), |h| h.0);
        while stack.last().is_some_and(|(l, _)| *l >= *level) {
            stack.pop();
        }
        let container =
            (!stack.is_empty()).then(|| stack.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>().join(" > "));
        push_section(text, *start..end, Some(title.clone()), container, config, &mut pieces);
        stack.push((*level, title.clone()));
    }
    pieces
}

fn push_section(
    text: &str,
    range: std::ops::Range<usize>,
    symbol: Option<String>,
    container: Option<String>,
    config: &ChunkConfig,
    out: &mut Vec<Piece>,
) {
    let kind = if symbol.is_some() { ChunkKind::Section } else { ChunkKind::Text };
    out.extend(lines::unit(text, range, kind, symbol, container, config));
}

/// `## Title` → (2, "Title"); at most three leading spaces, as CommonMark says.
fn atx_heading(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with([' ', '\t', '\n', '\r'])) {
        return None;
    }
    let title = after.trim().trim_end_matches('#').trim().to_string();
    Some((level, title))
}
