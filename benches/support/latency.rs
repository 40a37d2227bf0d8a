//! What the latency benchmarks share: the questions they ask a code base (tantivy-flavoured,
//! natural language) and the percentile they report.

/// Questions about a search engine's source, asked by every latency benchmark.
pub const QUESTIONS: &[&str] = &[
    "where is the index written to disk",
    "parse the query string into terms",
    "merge segments in the background",
    "how are deleted documents handled",
    "compute the score of a document",
    "open a file with memory mapping",
    "serialize a value to bytes",
    "iterate over the postings of a term",
    "check that a checksum matches",
    "tokenize text into words",
    "handle an error when reading a file",
    "sort results by score and keep the top ones",
    "lock a directory so only one writer runs",
    "compress a block of integers",
    "read configuration options",
    "build a finite state transducer",
];

/// The `p` quantile (0–1) of sorted samples, nearest rank; 0 for none.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at]
}
