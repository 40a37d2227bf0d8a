//! How likely a default search's first results hold what the user asked about: a calibrated
//! probability, so "no confident match" can be said instead of showing the least bad code.
//!
//! A fused score alone cannot say it: the learned fusion is trained to order one query's
//! candidates, not to compare queries, and its min-max parts are relative by construction. What
//! does carry over between queries: how high the best candidate's linear score is, how far it
//! stands above the fifth distinct hit, and the best raw cosine (the query model's absolute
//! judgement). `scripts/training/fit_confidence.py` fits a logistic regression over those three
//! on training packages only, with negatives made of other packages' queries (nothing in this
//! index is their answer), and writes `confidence.json`.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::learned::{Candidate, FEATURES};
use crate::index::Snapshot;

/// Signal names, in the order of the weights file.
pub const SIGNALS: [&str; 3] = ["top_linear", "gap_5", "max_cosine"];

const COSINE: usize = 4;

/// The calibrated confidence of one search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Confidence {
    /// Probability (0–1) that the first [`Calibration::top_k`] results hold the answer.
    pub value: f32,
    /// `value` clears the calibration's threshold.
    pub confident: bool,
}

#[derive(Debug, Deserialize)]
pub struct Calibration {
    pub signals: Vec<String>,
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
    pub weights: Vec<f32>,
    pub bias: f32,
    pub threshold: f32,
    /// How many first results the probability is about.
    pub top_k: usize,
}

const CALIBRATION_JSON: &str = include_str!("confidence.json");

/// The shipped calibration; `None` (no confidence reported) if the file does not name exactly
/// [`SIGNALS`], a build defect the unit test below catches.
pub fn calibration() -> Option<&'static Calibration> {
    static CALIBRATION: OnceLock<Option<Calibration>> = OnceLock::new();
    CALIBRATION
        .get_or_init(|| {
            let c: Calibration = serde_json::from_str(CALIBRATION_JSON).ok()?;
            let n = SIGNALS.len();
            let names_match = c.signals.iter().map(String::as_str).eq(SIGNALS.iter().copied());
            (names_match && c.mean.len() == n && c.std.len() == n && c.weights.len() == n && c.top_k > 0).then_some(c)
        })
        .as_ref()
}

impl Calibration {
    fn probability(&self, signals: [f32; SIGNALS.len()]) -> f32 {
        let z: f32 = signals
            .iter()
            .zip(&self.mean)
            .zip(&self.std)
            .zip(&self.weights)
            .map(|(((x, m), s), w)| w * (x - m) / s.max(1e-6))
            .sum::<f32>()
            + self.bias;
        1.0 / (1.0 + (-z).exp())
    }
}

/// The confidence of a learned-fusion ranking: `ranked` holds the linear scores, best first,
/// before any reranking (what the calibration was fitted on); `candidates` their features.
/// `None` without candidates or without a calibration.
pub fn of(snapshot: &Snapshot, candidates: &[Candidate], ranked: &[(usize, f32)]) -> Option<Confidence> {
    debug_assert_eq!(FEATURES[COSINE], "cosine");
    let calibration = calibration()?;
    let distinct = distinct_scores(snapshot, ranked, calibration.top_k);
    let (&top, &last) = (distinct.first()?, distinct.last()?);
    let max_cosine = candidates.iter().map(|c| c.features[COSINE]).fold(f32::NEG_INFINITY, f32::max);
    let value = calibration.probability([top, top - last, max_cosine]);
    Some(Confidence { value, confident: value >= calibration.threshold })
}

/// The scores of the first `n` hits the engine would show: overlapping chunks of one file count
/// once, as in `search_with`'s de-duplication.
fn distinct_scores(snapshot: &Snapshot, ranked: &[(usize, f32)], n: usize) -> Vec<f32> {
    let mut kept: Vec<(&str, u32, u32)> = Vec::with_capacity(n);
    let mut scores = Vec::with_capacity(n);
    for &(index, score) in ranked {
        let Some(chunk) = snapshot.chunk(index) else { continue };
        if kept.iter().any(|&(path, start, end)| super::overlaps(path, start, end, &chunk)) {
            continue;
        }
        kept.push((chunk.path, chunk.start_line, chunk.end_line));
        scores.push(score);
        if scores.len() == n {
            break;
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_calibration_names_the_signals() {
        let c = calibration().expect("confidence.json parses and names exactly SIGNALS");
        assert!(c.threshold > 0.0 && c.threshold < 1.0);
    }

    #[test]
    fn stronger_evidence_is_more_confident() {
        let c = calibration().unwrap();
        let weak = c.probability([0.0, 0.0, 0.2]);
        let strong = c.probability([8.0, 3.0, 0.6]);
        assert!(weak < c.threshold && strong > c.threshold, "{weak} {strong}");
        // Each signal alone pushes the same way (all three weights are positive).
        assert!(c.probability([8.0, 0.0, 0.2]) > weak);
        assert!(c.probability([0.0, 3.0, 0.2]) > weak);
        assert!(c.probability([0.0, 0.0, 0.6]) > weak);
    }
}
