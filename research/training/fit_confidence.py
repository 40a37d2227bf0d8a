#!/usr/bin/env python3
"""Fit raggrep's search confidence (server/src/search/confidence.rs) on training packages only.

Usage:  research/training/fit_fusion.sh   (dumps, fits the fusion, then runs this on the same dumps)
        python fit_confidence.py --train DUMP.jsonl [--report NAME=DUMP.jsonl ...] --out JSON

Input: `cargo bench --bench retrieval -- --dump-features FILE --foreign` rows. A row with a gold
function is a query whose answer is in the index; a `"foreign"` row (gold null) is another
package's query asked of this index: nothing there is its labelled answer.

What is predicted: the probability that the answer is among the first 5 results of the default
search (learned fusion, the engine's de-duplication), from a few signals of the ranking that do
not depend on the answer: how good the best match is in absolute terms (its fused score, its raw
cosine, whether the query's words name it) and how far it stands out from the rest. A logistic
regression over standardised signals, fitted by Newton's method with an L2 penalty chosen on the
VALIDATION packages' log-loss. The "no confident match" threshold is chosen on the validation
packages too: the highest that flags at most 15 % of the queries whose answer is in the first 5.
`--report` dumps (the benchmark's TUNE half) are only evaluated.

Each hit's score (the "hit" part of the output): the probability that this hit is the answer,
from two signals, fitted the same way on the first 10 hits of every query: the hit's share of
the fusion's softmax over the query's candidates (log), which orders one query's hits as the
fusion does, and the confidence's logit, which says how good the query's best evidence is. So
scores fall down a list as the ranking does, and compare across queries and roots; before, a
hit's score was the fused linear score squashed into (0, 1), near 1.0 for the first hits of
nearly every query whether they were the answer or not.

Mixture: every package is asked as many foreign queries as its own, so the calibration is for a
stream where about half the questions have an answer in the code base. That is stated with the
numbers wherever they are reported; label noise: a foreign query may have a real answer in
this index (date parsing in two date libraries), which makes the negatives harder, not easier.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_fusion import distinct, load, overlaps, shipped_scorer  # noqa: E402
from qtower import TOWERS  # noqa: E402

# Positions in learned.rs FEATURES.
COSINE, SYMBOL_OVERLAP, PATH_OVERLAP = 4, 5, 6

# Signals, in the order of confidence.json's weights (server/src/search/confidence.rs computes
# the same from the ranking it has).
SIGNALS = ["top_linear", "gap_5", "max_cosine", "gap_2", "top_cosine", "top_symbol_overlap", "top_path_overlap"]
# The shipped subset, chosen on the validation packages' log-loss (README: the ablation).
SHIPPED = ["top_linear", "gap_5", "max_cosine"]
TOP_K = 5
# How many hits per query the hit calibration is fitted and judged on (MCP's default k).
HIT_DEPTH = 10
# The hit calibration's inputs, in the order of confidence.json's "hit" weights
# (server/src/search/confidence.rs computes the same).
HIT_SIGNALS = ["log_share", "confidence_logit"]


def signals(X: np.ndarray, linear: np.ndarray, kept: list[int]) -> list[float]:
    s = linear[kept]
    top = kept[0]
    at = lambda k: s[min(k, len(s) - 1)]  # noqa: E731
    return [
        float(s[0]),
        float(s[0] - at(4)),
        float(X[:, COSINE].max()),
        float(s[0] - at(1)),
        float(X[top, COSINE]),
        float(X[top, SYMBOL_OVERLAP]),
        float(X[top, PATH_OVERLAP]),
    ]


def prepare(rows, fusion_score):
    out = []
    for r in rows:
        cands = r["candidates"]
        if not cands:
            continue
        X = np.array([c[3] for c in cands], dtype=np.float64)
        # The engine scores in f32; the order is what matters here and ties are rare.
        linear = fusion_score(X)
        order = sorted(range(len(linear)), key=lambda i: (-linear[i], i))
        spans = [(c[0], c[1], c[2]) for c in cands]
        kept = distinct(order, spans)
        gold = r.get("gold")
        label = gold is not None and any(overlaps(spans[i], gold) for i in kept[:TOP_K])
        # Each shown hit: its share of the fusion's softmax over all candidates (what the
        # listwise fit makes a probability within the query), and whether it is the answer.
        top = linear.max()
        log_norm = top + np.log(np.exp(linear - top).sum())
        hits = [(float(linear[i] - log_norm), float(linear[i]),
                 1.0 if gold is not None and overlaps(spans[i], gold) else 0.0) for i in kept[:HIT_DEPTH]]
        out.append({"x": signals(X, linear, kept), "y": 1.0 if label else 0.0, "foreign": gold is None,
                    "split": r.get("split"), "language": r["language"], "package": r["package"], "hits": hits})
    return out


def fit(X, y, l2: float, iters: int = 50):
    """Logistic regression by Newton's method; the intercept is not penalised."""
    A = np.hstack([X, np.ones((len(X), 1))])
    theta = np.zeros(A.shape[1])
    penalty = np.full(A.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-A @ theta))
        grad = A.T @ (p - y) / len(y) + penalty * theta
        H = (A * (p * (1 - p))[:, None]).T @ A / len(y) + np.diag(penalty)
        step = np.linalg.solve(H, grad)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return theta[:-1], float(theta[-1])


def predict(X, w, b):
    return 1 / (1 + np.exp(-(X @ w + b)))


def auc(p, y):
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    ranks = np.argsort(np.argsort(np.concatenate([pos, neg]))) + 1
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def log_loss(p, y, eps: float = 1e-12):
    """Mean negative log-likelihood; `eps` keeps log(0) out (0 for probabilities clipped already)."""
    return float(-np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)))


def ece(p, y, bins: int = 10):
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        m = (p >= lo) & ((p < hi) | (hi == 1.0))
        if m.any():
            total += m.sum() / len(p) * abs(p[m].mean() - y[m].mean())
    return float(total)


def evaluate(items, w, b, mu, sd, threshold: float):
    X = (np.array([it["x"] for it in items]) - mu) / sd
    y = np.array([it["y"] for it in items])
    foreign = np.array([it["foreign"] for it in items])
    p = predict(X, w, b)
    confident = p >= threshold
    own = ~foreign
    return {
        "n": int(len(items)), "own": int(own.sum()), "foreign": int(foreign.sum()),
        "auc": auc(p, y), "auc_own": auc(p[own], y[own]),
        "log_loss": log_loss(p, y),
        "ece": ece(p, y),
        "own_R@5": float(y[own].mean()) if own.any() else float("nan"),
        "own_R@5_confident": float(y[own & confident].mean()) if (own & confident).any() else float("nan"),
        "own_R@5_not_confident": float(y[own & ~confident].mean()) if (own & ~confident).any() else float("nan"),
        "own_confident": float(confident[own].mean()) if own.any() else float("nan"),
        "found_confident": float(confident[own & (y == 1)].mean()) if (own & (y == 1)).any() else float("nan"),
        "foreign_not_confident": float((~confident[foreign]).mean()) if foreign.any() else float("nan"),
        "reliability": [
            [round(lo, 1), int(m.sum()), round(float(p[m].mean()), 3), round(float(y[m].mean()), 3)]
            for lo, m in ((lo, (p >= lo) & (p < lo + 0.2 if lo < 0.8 else p <= 1.0)) for lo in (0.0, 0.2, 0.4, 0.6, 0.8))
            if m.any()
        ],
    }


def hit_matrix(items, w, b, mu, sd):
    """Per shown hit: (log share, the query's confidence logit), its label, its fused score."""
    X, y, linear = [], [], []
    for it in items:
        z = float(((np.array(it["x"]) - mu) / sd) @ w + b)
        for log_share, lin, label in it["hits"]:
            X.append([log_share, z])
            y.append(label)
            linear.append(lin)
    return np.array(X).reshape(-1, len(HIT_SIGNALS)), np.array(y), np.array(linear)


def fit_hits(train, val, w, b, mu, sd):
    """The hit calibration: L2 chosen on the validation packages' log-loss, as for the query's."""
    Xt, yt, _ = hit_matrix(train, w, b, mu, sd)
    Xv, yv, _ = hit_matrix(val, w, b, mu, sd)
    hmu, hsd = Xt.mean(0), Xt.std(0) + 1e-9
    best = None
    for l2 in (1e-4, 1e-3, 1e-2, 1e-1, 1.0):
        hw, hb = fit((Xt - hmu) / hsd, yt, l2)
        pv = predict((Xv - hmu) / hsd, hw, hb)
        loss = log_loss(pv, yv)
        if best is None or loss < best[0]:
            best = (loss, l2, hw, hb)
    _, l2, hw, hb = best
    return hw, hb, hmu, hsd, l2


def evaluate_hits(items, w, b, mu, sd, hit):
    """How well each hit's score says whether it is the answer: the calibrated probability against
    the squashed fused score it replaced (AUC over all hits of all queries, calibration error,
    log-loss), and the first hit's mean score against how often it is the answer."""
    hw, hb, hmu, hsd = hit
    X, y, linear = hit_matrix(items, w, b, mu, sd)
    first = np.concatenate([np.arange(len(it["hits"])) == 0 for it in items])
    own = np.concatenate([np.full(len(it["hits"]), not it["foreign"]) for it in items])
    out = {"hits": int(len(y))}
    for name, p in (("probability", predict((X - hmu) / hsd, hw, hb)), ("squashed", 1 / (1 + np.exp(-linear)))):
        p = np.clip(p, 1e-7, 1 - 1e-7)
        out[name] = {
            "auc": auc(p, y), "ece": ece(p, y),
            "log_loss": log_loss(p, y, eps=0.0),
            "first_mean": float(p[first].mean()), "first_answer": float(y[first].mean()),
            "own_first_mean": float(p[first & own].mean()) if (first & own).any() else float("nan"),
            "own_first_answer": float(y[first & own].mean()) if (first & own).any() else float("nan"),
            "ece_own": ece(p[own], y[own]) if own.any() else float("nan"),
        }
    return out


def hit_line(name, r):
    parts = []
    for which in ("probability", "squashed"):
        m = r[which]
        parts.append(f"{which}: AUC {m['auc']:.3f} ECE {m['ece']:.4f} (own queries {m['ece_own']:.4f}) log-loss "
                     f"{m['log_loss']:.3f}, first hit {m['first_mean']:.3f} vs answer {m['first_answer']:.3f} "
                     f"(own {m['own_first_mean']:.3f} vs {m['own_first_answer']:.3f})")
    return f"{name:16s} hits={r['hits']:6d}  " + " | ".join(parts)


def line(name, r):
    return (f"{name:16s} n={r['n']:5d} (own {r['own']}, foreign {r['foreign']})  AUC {r['auc']:.3f} (own only "
            f"{r['auc_own']:.3f})  log-loss {r['log_loss']:.3f}  ECE {r['ece']:.3f}  | own R@5 {r['own_R@5']:.3f}: "
            f"confident {r['own_confident']:.2f} of own queries, R@5 {r['own_R@5_confident']:.3f} when confident vs "
            f"{r['own_R@5_not_confident']:.3f} when not; found-and-confident {r['found_confident']:.2f}; foreign "
            f"flagged {r['foreign_not_confident']:.2f}  reliability {r['reliability']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--report", action="append", default=[])
    ap.add_argument("--out")
    ap.add_argument("--max-false-alarm", type=float, default=0.15,
                    help="the threshold is the highest (in steps of 0.05) that flags at most this share of the "
                         "validation queries whose answer IS in the first 5")
    ap.add_argument("--signals", default=",".join(SHIPPED),
                    help=f"signals to use (ablations), from {','.join(SIGNALS)}")
    ap.add_argument("--models", default=TOWERS["document"].int8_id,
                    help="comma-separated ids of the document models whose rankings the dumps hold (default: "
                         "the shipped code model); the engine claims a confidence only over their indexes. Add "
                         "another model's id only after measuring the calibration on its rankings")
    args = ap.parse_args()
    fusion_score = shipped_scorer()
    use = [SIGNALS.index(s) for s in args.signals.split(",")]
    items = prepare(load(args.train, foreign=True), fusion_score)
    for it in items:
        it["x"] = [it["x"][i] for i in use]
    train = [it for it in items if it["split"] == "train"]
    val = [it for it in items if it["split"] == "validation"]
    Xt = np.array([it["x"] for it in train])
    yt = np.array([it["y"] for it in train])
    mu, sd = Xt.mean(0), Xt.std(0) + 1e-9
    best = None
    for l2 in (1e-4, 1e-3, 1e-2, 1e-1, 0.3, 1.0, 3.0):
        w, b = fit((Xt - mu) / sd, yt, l2)
        r = evaluate(val, w, b, mu, sd, 0.5)  # only the log-loss is read here
        print(f"l2 {l2:g}: validation log-loss {r['log_loss']:.4f} AUC {r['auc']:.3f}", file=sys.stderr)
        if best is None or r["log_loss"] < best[0]:
            best = (r["log_loss"], l2, w, b)
    _, l2, w, b = best
    # "No confident match" must rarely be said of a found answer (an agent would give up on it).
    Xv = (np.array([it["x"] for it in val]) - mu) / sd
    found = np.array([it["y"] == 1 for it in val])
    pv = predict(Xv, w, b)
    threshold = max((t for t in np.arange(0.05, 0.96, 0.05) if (pv[found] < t).mean() <= args.max_false_alarm),
                    default=0.05)
    threshold = round(float(threshold), 2)
    print(f"l2 {l2:g}; threshold {threshold}: flags {(pv[found] < threshold).mean():.3f} of the validation queries "
          f"whose answer is in the first {TOP_K}", file=sys.stderr)
    args.threshold = threshold
    hw, hb, hmu, hsd, hit_l2 = fit_hits(train, val, w, b, mu, sd)
    hit = (hw, hb, hmu, hsd)
    print(f"hits: l2 {hit_l2:g}, weights {np.round(hw, 4).tolist()}, bias {hb:.4f}", file=sys.stderr)
    results = {"train": evaluate(train, w, b, mu, sd, args.threshold),
               "validation": evaluate(val, w, b, mu, sd, args.threshold)}
    hit_results = {"train": evaluate_hits(train, w, b, mu, sd, hit),
                   "validation": evaluate_hits(val, w, b, mu, sd, hit)}
    for spec in args.report:
        name, path = spec.split("=", 1)
        rep = prepare(load(path, foreign=True), fusion_score)
        for it in rep:
            it["x"] = [it["x"][i] for i in use]
        results[name] = evaluate(rep, w, b, mu, sd, args.threshold)
        hit_results[name] = evaluate_hits(rep, w, b, mu, sd, hit)
        for lang in sorted({it["language"] for it in rep}):
            results[f"{name}/{lang}"] = evaluate([it for it in rep if it["language"] == lang], w, b, mu, sd,
                                                 args.threshold)
    for name, r in results.items():
        print(line(name, r))
    for name, r in hit_results.items():
        print(hit_line(name, r))
    if args.out:
        doc = {
            "comment": "fitted by research/training/fit_confidence.py on training packages only "
                       "(research/training/README.md): P(answer in the first 5 results) from the default ranking",
            "signals": [SIGNALS[i] for i in use], "mean": [round(float(v), 6) for v in mu],
            "std": [round(float(v), 6) for v in sd], "weights": [round(float(v), 6) for v in w],
            "bias": round(b, 6), "l2": l2, "threshold": args.threshold, "max_false_alarm": args.max_false_alarm,
            "top_k": TOP_K,
            "models": args.models.split(","),
            "results": {k: {m: v for m, v in r.items() if m != "reliability"} for k, r in results.items()
                        if k in ("train", "validation")},
            "hit": {
                "comment": "P(this hit is the answer) from its log share of the fusion's softmax over the "
                           f"query's candidates and the confidence's logit; fitted on the first {HIT_DEPTH} hits",
                "signals": HIT_SIGNALS, "mean": [round(float(v), 6) for v in hmu],
                "std": [round(float(v), 6) for v in hsd], "weights": [round(float(v), 6) for v in hw],
                "bias": round(hb, 6), "l2": hit_l2,
                "results": {k: v for k, v in hit_results.items() if k in ("train", "validation")},
            },
        }
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
        os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
