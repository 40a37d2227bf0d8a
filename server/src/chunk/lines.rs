//! Overlapping line windows, for text without a grammar and for units too big to split by syntax.

use std::ops::Range;

use super::{ChunkConfig, ChunkKind, Piece, estimate_tokens};

/// Splits `range` of `text` into windows of whole lines, each within the token budget, with
/// `overlap_lines` lines repeated between neighbours. A single line over budget is cut at a
/// character boundary rather than dropped.
pub(crate) fn windows(text: &str, range: Range<usize>, config: &ChunkConfig) -> Vec<Piece> {
    split_lines(text, range, config)
        .into_iter()
        .map(|range| Piece { range, kind: ChunkKind::Text, symbol: None, container: None })
        .collect()
}

/// A unit kept whole when it fits the token budget, else cut into windows; every piece keeps
/// the unit's kind and name (a long Markdown section, a big configuration section).
pub(crate) fn unit(
    text: &str,
    range: Range<usize>,
    kind: ChunkKind,
    symbol: Option<String>,
    container: Option<String>,
    config: &ChunkConfig,
) -> Vec<Piece> {
    let ranges = if estimate_tokens(&text[range.clone()]) <= config.max_tokens {
        vec![range]
    } else {
        split_lines(text, range, config)
    };
    ranges
        .into_iter()
        .map(|range| Piece { range, kind, symbol: symbol.clone(), container: container.clone() })
        .collect()
}

/// The byte ranges of the windows `windows` makes.
pub(crate) fn split_lines(text: &str, range: Range<usize>, config: &ChunkConfig) -> Vec<Range<usize>> {
    // Lines of the range as byte ranges, each including its newline.
    let mut lines: Vec<Range<usize>> = Vec::new();
    let mut start = range.start;
    for (i, _) in text[range.clone()].match_indices('\n') {
        let end = range.start + i + 1;
        lines.push(start..end);
        start = end;
    }
    if start < range.end {
        lines.push(start..range.end);
    }
    let lines: Vec<Range<usize>> =
        lines.into_iter().flat_map(|line| cut_long_line(text, line, config.max_tokens)).collect();

    let mut out = Vec::new();
    let mut first = 0;
    while first < lines.len() {
        let mut last = first;
        let mut tokens = estimate_tokens(&text[lines[first].clone()]);
        while last + 1 < lines.len() {
            let next = estimate_tokens(&text[lines[last + 1].clone()]);
            if tokens + next > config.max_tokens {
                break;
            }
            tokens += next;
            last += 1;
        }
        out.push(lines[first].start..lines[last].end);
        if last + 1 >= lines.len() {
            break;
        }
        // Step back for overlap, but always make progress.
        let window_len = last - first + 1;
        let overlap = config.overlap_lines.min(window_len.saturating_sub(1));
        first = last + 1 - overlap;
    }
    out
}

/// Cuts a line over budget into pieces of at most `max_tokens` estimated tokens, at char boundaries.
fn cut_long_line(text: &str, line: Range<usize>, max_tokens: usize) -> Vec<Range<usize>> {
    if estimate_tokens(&text[line.clone()]) <= max_tokens {
        return vec![line];
    }
    let mut out = Vec::new();
    let mut start = line.start;
    // ~3 bytes per token is a safe size for a cut; then shrink to a char boundary.
    let step = (max_tokens * 3).max(1);
    while start < line.end {
        let mut end = (start + step).min(line.end);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        if end <= start {
            end = line.end;
        }
        out.push(start..end);
        start = end;
    }
    out
}
