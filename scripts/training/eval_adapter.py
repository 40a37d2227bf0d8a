#!/usr/bin/env python3
"""Offline check of the query adapter on the benchmark's TUNE split (never TEST).

Usage:  scripts/training/eval_adapter.sh [--adapter scripts/training/out/adapter.f32]

WHAT THIS IS: function-level, dense-only. Each TUNE query (doc comment's first sentence) is
embedded as raggrep embeds a query; every documented function of the query's package is
embedded as raggrep embeds a chunk ('<path> <symbol path>\\n<code>', 256 tokens, doc comments
of the gold blanked as in the benchmark corpus); the gold is ranked by cosine among them, once
with the plain query vector and once with normalize(W q).
WHAT THIS IS NOT: raggrep's full pipeline. No chunking (a long function is one truncated text
here, several chunks in raggrep), no undocumented code or non-function chunks as distractors,
no BM25, no fusion, no file-level metric. Numbers here are NOT comparable with BENCHMARKS.md;
only the difference identity -> adapter is meant, and it still has to be confirmed through the
real benchmark (cargo bench --bench retrieval) once the adapter is wired into the query path.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as E  # noqa: E402
from train_adapter import apply, fmt, log  # noqa: E402

NOTE = ("function-level, dense-only approximation on the TUNE split: gold function vs every "
        "documented function of its package, cosine of MiniLM int8 vectors; NOT raggrep's full "
        "pipeline (no chunking, no BM25/fusion, no other code as distractors); compare the "
        "identity and adapter rows with each other only")


def rank_metrics(Qa, D, items) -> dict:
    """items: list of (query row, gold doc row, pool doc rows)."""
    ranks = []
    for qi, gi, pool in items:
        s = D[pool] @ Qa[qi]
        gold = float(D[gi] @ Qa[qi])
        ranks.append(int((s > gold).sum()))
    r = np.array(ranks)
    return {"queries": len(r), "R@1": float((r < 1).mean()), "R@5": float((r < 5).mean()),
            "MRR@10": float(np.where(r < 10, 1.0 / (r + 1), 0.0).mean()), "_ranks": r}


def paired_ci(a: np.ndarray, b: np.ndarray, seed: int = 16, n: int = 2000) -> tuple[float, float]:
    """95 % paired-bootstrap interval of mean(b - a) over queries."""
    d = b - a
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n, len(d)))].mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def rr10(r: np.ndarray) -> np.ndarray:
    return np.where(r < 10, 1.0 / (r + 1), 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--adapter", default=os.path.join(HERE, "out", "adapter.f32"))
    ap.add_argument("--split", default="tune", choices=["tune"],
                    help="only TUNE: nothing is ever evaluated on TEST while choices are open")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "eval_tune.json"))
    args = ap.parse_args()
    src = os.path.join(E.training_dir(), "bench", f"{args.split}.jsonl")
    with open(src) as fh:
        rows = [json.loads(line) for line in fh]
    with open(args.adapter, "rb") as fh:
        blob = fh.read()
    W = np.frombuffer(blob, dtype="<f4").reshape(E.DIM, E.DIM).astype(np.float64)
    emb = E.Embedder()
    emb.self_check()
    D = emb.embed([E.document_text(r["path"], r["symbol"], r["code"]) for r in rows],
                  "bench functions").astype(np.float64)
    qrows = [i for i, r in enumerate(rows) if r["query"]]
    Qv = np.zeros((len(rows), E.DIM))
    Qv[qrows] = emb.embed([rows[i]["query"] for i in qrows], "bench queries")
    pools: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        pools.setdefault(r["package"], []).append(i)
    items_by: dict[str, list] = {"all": []}
    for i in qrows:
        it = (i, i, np.array(pools[rows[i]["package"]]))
        items_by["all"].append(it)
        items_by.setdefault(rows[i]["language"], []).append(it)
        items_by.setdefault(rows[i]["package"], []).append(it)
    Qa = {"identity": E_norm(Qv), "adapter": apply(W, Qv)}
    res = {"note": NOTE, "split": args.split,
           "adapter_sha256": hashlib.sha256(blob).hexdigest(),
           "pool_sizes": {k: len(v) for k, v in pools.items()}, "results": {}}
    log(f"NOTE: {NOTE}")
    log(f"{'':26s} {'':9s} {'R@1':>6s} {'R@5':>6s} {'MRR@10':>7s}   n")
    for key in ["all"] + sorted(k for k in items_by if k != "all"):
        res["results"][key] = {}
        ranks = {}
        for name, q in Qa.items():
            m = rank_metrics(q, D, items_by[key])
            ranks[name] = m.pop("_ranks")
            res["results"][key][name] = m
            log(f"{key:26s} {name:9s} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['MRR@10']:7.3f}   {m['queries']}")
        lo, hi = paired_ci(rr10(ranks["identity"]), rr10(ranks["adapter"]))
        lo5, hi5 = paired_ci((ranks["identity"] < 5).astype(float), (ranks["adapter"] < 5).astype(float))
        res["results"][key]["delta_95ci"] = {"MRR@10": [lo, hi], "R@5": [lo5, hi5]}
        log(f"{key:26s} {'delta':9s} 95% CI MRR@10 [{lo:+.3f}, {hi:+.3f}]  R@5 [{lo5:+.3f}, {hi5:+.3f}]")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=2)
        fh.write("\n")
    log(f"wrote {args.out}")


def E_norm(x):
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


if __name__ == "__main__":
    main()
