//! How likely a default search's first results hold what the user asked about: a calibrated
//! probability, so "no confident match" can be said instead of showing the least bad code.
//!
//! A fused score alone cannot say it: the learned fusion is trained to order one query's
//! candidates, not to compare queries, and its min-max parts are relative by construction. What
//! does carry over between queries: how high the best candidate's linear score is, how far it
//! stands above the fifth distinct hit, and the best raw cosine (the query model's absolute
//! judgement). `research/training/fit_confidence.py` fits a logistic regression over those three
//! on training packages only, with negatives made of other packages' queries (nothing in this
//! index is their answer), and writes `confidence.json`.
//!
//! Each hit's score comes from the same file ([`HitCalibration`]): the probability that this hit
//! is the answer, from its share of the fusion's softmax over the query's candidates (which
//! orders one query's hits) and the confidence's logit (which says how good the best evidence
//! is). The fused score squashed into (0, 1) was near 1.0 for the first hits of nearly every
//! query, answer or not, so it ordered hits and said nothing else.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::learned::{Candidate, FEATURES, Standardized};
use crate::index::Snapshot;

/// Signal names, in the order of the weights file.
pub const SIGNALS: [&str; 3] = ["top_linear", "gap_5", "max_cosine"];

const COSINE: usize = 4;

/// The hit calibration's inputs, in the order of its weights.
pub const HIT_SIGNALS: [&str; 2] = ["log_share", "confidence_logit"];

/// The calibrated confidence of one search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Confidence {
    /// Probability (0–1) that the first [`Calibration::top_k`] results hold the answer.
    pub value: f32,
    /// `value` clears the calibration's threshold.
    pub confident: bool,
    /// `value` before the logistic: what each hit's probability reads (exact where `value`
    /// rounds to 1.0 in f32).
    #[serde(skip)]
    pub logit: f32,
}

#[derive(Debug, Deserialize)]
pub struct Calibration {
    pub signals: Vec<String>,
    #[serde(flatten)]
    pub model: Standardized,
    pub bias: f32,
    pub threshold: f32,
    /// How many first results the probability is about.
    pub top_k: usize,
    /// The document models whose rankings this calibration was fitted or measured on. Over
    /// another model's index its signals (a raw cosine above all) mean something else, so no
    /// probability is claimed there.
    pub models: Vec<String>,
    pub hit: HitCalibration,
}

/// P(this hit is the answer), fitted on the first 10 hits of training packages' queries.
#[derive(Debug, Deserialize)]
pub struct HitCalibration {
    pub signals: Vec<String>,
    #[serde(flatten)]
    pub model: Standardized,
    pub bias: f32,
}

const CALIBRATION_JSON: &str = include_str!("confidence.json");

/// The shipped calibration; `None` (no confidence reported) if the file does not name exactly
/// [`SIGNALS`], a build defect the unit test below catches.
pub fn calibration() -> Option<&'static Calibration> {
    static CALIBRATION: OnceLock<Option<Calibration>> = OnceLock::new();
    CALIBRATION
        .get_or_init(|| {
            let c: Calibration = serde_json::from_str(CALIBRATION_JSON).ok()?;
            (c.model.fits(&c.signals, &SIGNALS)
                && c.hit.model.fits(&c.hit.signals, &HIT_SIGNALS)
                && c.top_k > 0
                && !c.models.is_empty())
            .then_some(c)
        })
        .as_ref()
}

fn logistic(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

impl Calibration {
    fn logit(&self, signals: [f32; SIGNALS.len()]) -> f32 {
        self.model.linear(&signals) + self.bias
    }

    #[cfg(test)]
    fn probability(&self, signals: [f32; SIGNALS.len()]) -> f32 {
        logistic(self.logit(signals))
    }
}

impl HitCalibration {
    fn probability(&self, log_share: f32, confidence_logit: f32) -> f32 {
        logistic(self.model.linear(&[log_share, confidence_logit]) + self.bias)
    }
}

/// Each hit's probability of being the answer, in the ranking's order. `ranked` holds the
/// learned fusion's linear scores (after any reranking, which adds to them), best first; the
/// softmax over all of them is the fusion's own distribution over the candidates. Higher linear
/// score, higher probability (the share's weight is positive; the unit test checks it). A hit
/// never scores above one the ranking puts before it: reranking re-sorts only the best
/// candidates, which stay first even where the reranker lowered one below the next.
pub fn hit_probabilities(confidence: &Confidence, ranked: &[(usize, f32)]) -> Option<Vec<(usize, f32)>> {
    let hit = &calibration()?.hit;
    let top = ranked.iter().map(|&(_, linear)| linear).fold(f32::NEG_INFINITY, f32::max);
    if !top.is_finite() {
        return None;
    }
    let log_norm = top + ranked.iter().map(|&(_, linear)| (linear - top).exp()).sum::<f32>().ln();
    let mut ceiling = 1.0_f32;
    Some(
        ranked
            .iter()
            .map(|&(chunk, linear)| {
                ceiling = ceiling.min(hit.probability(linear - log_norm, confidence.logit));
                (chunk, ceiling)
            })
            .collect(),
    )
}

/// The confidence of a learned-fusion ranking: `ranked` holds the linear scores, best first,
/// before any reranking (what the calibration was fitted on); `candidates` their features.
/// `None` without candidates, without a calibration, or over the index of a model the
/// calibration was not measured on.
pub fn of(snapshot: &Snapshot, candidates: &[Candidate], ranked: &[(usize, f32)]) -> Option<Confidence> {
    debug_assert_eq!(FEATURES[COSINE], "cosine");
    let calibration = calibration()?;
    if !calibration.models.iter().any(|m| m == snapshot.model_id()) {
        return None;
    }
    let distinct = distinct_scores(snapshot, ranked, calibration.top_k);
    let (&top, &last) = (distinct.first()?, distinct.last()?);
    let max_cosine = candidates.iter().map(|c| c.features[COSINE]).fold(f32::NEG_INFINITY, f32::max);
    let logit = calibration.logit([top, top - last, max_cosine]);
    let value = logistic(logit);
    Some(Confidence { value, confident: value >= calibration.threshold, logit })
}

/// The scores of the first `n` hits the engine would show: overlapping chunks of one file count
/// once, as in `search_with`'s de-duplication.
fn distinct_scores(snapshot: &Snapshot, ranked: &[(usize, f32)], n: usize) -> Vec<f32> {
    super::distinct_hits(ranked.iter().copied(), n, |index, score| {
        let chunk = snapshot.chunk(index)?;
        Some((chunk.path, chunk.start_line, chunk.end_line, score))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_calibration_names_the_signals() {
        let c = calibration().expect("confidence.json parses and names exactly SIGNALS");
        assert!(c.threshold > 0.0 && c.threshold < 1.0);
    }

    /// A new default model needs its calibration measured (the retrieval bench with `--foreign`)
    /// and its id listed; until then its searches would quietly lose their confidence.
    #[test]
    fn the_calibration_was_measured_on_the_default_model() {
        let c = calibration().unwrap();
        assert!(c.models.iter().any(|m| m == crate::embed::DEFAULT_MODEL), "{:?}", c.models);
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

    fn confidence(logit: f32) -> Confidence {
        Confidence { value: logistic(logit), confident: true, logit }
    }

    #[test]
    fn hit_probabilities_follow_the_ranking_and_the_confidence() {
        let ranked = [(7, 9.0), (3, 6.5), (4, 6.4), (1, 2.0), (9, -3.0)];
        let sure = hit_probabilities(&confidence(3.0), &ranked).unwrap();
        assert_eq!(sure.iter().map(|h| h.0).collect::<Vec<_>>(), [7, 3, 4, 1, 9], "order and chunks kept");
        assert!(sure.windows(2).all(|w| w[0].1 > w[1].1), "falls down the list: {sure:?}");
        assert!(sure.iter().all(|h| h.1 > 0.0 && h.1 < 1.0), "{sure:?}");
        // A hit that stands far above the rest of a confident query is probably the answer;
        // the one after it probably is not.
        assert!(sure[0].1 > 0.5 && sure[1].1 < 0.3, "{sure:?}");
        // The same ranking with weak evidence: every hit is less likely.
        let unsure = hit_probabilities(&confidence(-3.0), &ranked).unwrap();
        assert!(sure.iter().zip(&unsure).all(|(a, b)| a.1 > b.1), "{sure:?} {unsure:?}");
        // A first hit that shares the mass with many near-equals is less likely than a lone one.
        let crowded: Vec<(usize, f32)> = (0..10).map(|i| (i, 9.0 - 0.01 * i as f32)).collect();
        let crowded = hit_probabilities(&confidence(3.0), &crowded).unwrap();
        assert!(crowded[0].1 < sure[0].1, "{crowded:?}");
        assert_eq!(hit_probabilities(&confidence(3.0), &[]), None);
        // Reranked: the re-sorted best candidates come first even when the next one's score is
        // higher; it does not score above them.
        let reranked = [(1, 8.0), (2, 3.0), (3, 5.0)];
        let p = hit_probabilities(&confidence(3.0), &reranked).unwrap();
        assert!(p[2].1 <= p[1].1, "{p:?}");
    }
}
