#!/usr/bin/env python3
"""Offline check of the query adapter on the benchmark's TUNE split (never TEST).

Usage:  research/training/eval_adapter.sh [--adapter research/training/out/adapter.f32]

WHAT THIS IS: function-level; dense-only, plus a hybrid row (lexical.py: a Python BM25
approximating raggrep's tantivy fields and boosts, fused 0.5/0.5 after min-max as raggrep does). Each TUNE query (doc comment's first sentence) is
embedded as raggrep embeds a query; every documented function of the query's package is
embedded as raggrep embeds a chunk ('<path> <symbol path>\\n<code>', 256 tokens, doc comments
of the gold blanked as in the benchmark corpus); the gold is ranked by cosine among them, once
with the plain query vector and once with normalize(W q), alone and fused with BM25.
WHAT THIS IS NOT: raggrep's full pipeline. No chunking (a long function is one truncated text
here, several chunks in raggrep), no undocumented code or non-function chunks as distractors,
BM25 only approximated, no file-level metric. Numbers here are NOT comparable with BENCHMARKS.md;
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
import lexical as L  # noqa: E402
from train_adapter import apply, log  # noqa: E402

NOTE = ("function-level approximation on the TUNE split: gold function vs every documented "
        "function of its package; dense = cosine of MiniLM int8 vectors, hybrid = that fused "
        "0.5/0.5 (min-max) with a Python BM25 approximating raggrep's lexical fields; NOT "
        "raggrep's full pipeline (no chunking, no other code as distractors, BM25 approximated); "
        "compare the identity and adapter rows with each other only")


def ranks_of(scores_fn, items) -> np.ndarray:
    """0-based rank of the gold in its pool for each item (ties count in the query's favour);
    a gold with score -inf (in no candidate list) ranks last."""
    ranks = []
    for it in items:
        s = scores_fn(it)
        gold = s[it["gold"]]
        ranks.append(len(s) if not np.isfinite(gold) else int((s > gold).sum()))
    return np.array(ranks)


def summary(r: np.ndarray) -> dict:
    return {"queries": len(r), "R@1": float((r < 1).mean()), "R@5": float((r < 5).mean()),
            "MRR@10": float(np.where(r < 10, 1.0 / (r + 1), 0.0).mean())}


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
    bm25 = {p: L.BM25Pool([(rows[i]["path"], rows[i]["symbol"], rows[i]["code"]) for i in idx])
            for p, idx in pools.items()}
    items_by: dict[str, list] = {"all": []}
    for i in qrows:
        pk = rows[i]["package"]
        pool = np.array(pools[pk])
        it = {"q": i, "pool": pool, "gold": int(np.where(pool == i)[0][0]),
              "lex": bm25[pk].scores(rows[i]["query"])}
        items_by["all"].append(it)
        items_by.setdefault(rows[i]["language"], []).append(it)
        items_by.setdefault(pk, []).append(it)
    Qa = {"identity": E_norm(Qv), "adapter": apply(W, Qv)}
    modes = {
        "lexical": lambda it: it["lex"],
        "dense identity": lambda it: D[it["pool"]] @ Qa["identity"][it["q"]],
        "dense adapter": lambda it: D[it["pool"]] @ Qa["adapter"][it["q"]],
        "hybrid identity": lambda it: L.fuse(D[it["pool"]] @ Qa["identity"][it["q"]], it["lex"]),
        "hybrid adapter": lambda it: L.fuse(D[it["pool"]] @ Qa["adapter"][it["q"]], it["lex"]),
    }
    res = {"note": NOTE, "split": args.split,
           "adapter_sha256": hashlib.sha256(blob).hexdigest(),
           "pool_sizes": {k: len(v) for k, v in pools.items()}, "results": {}}
    log(f"NOTE: {NOTE}")
    log(f"{'':26s} {'':16s} {'R@1':>6s} {'R@5':>6s} {'MRR@10':>7s}   n")
    for key in ["all"] + sorted(k for k in items_by if k != "all"):
        res["results"][key] = {}
        ranks = {}
        for name, fn in modes.items():
            ranks[name] = ranks_of(fn, items_by[key])
            m = summary(ranks[name])
            res["results"][key][name] = m
            log(f"{key:26s} {name:16s} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['MRR@10']:7.3f}   {m['queries']}")
        res["results"][key]["delta_95ci"] = {}
        for kind in ("dense", "hybrid"):
            a, b = ranks[f"{kind} identity"], ranks[f"{kind} adapter"]
            lo, hi = paired_ci(rr10(a), rr10(b))
            lo5, hi5 = paired_ci((a < 5).astype(float), (b < 5).astype(float))
            res["results"][key]["delta_95ci"][kind] = {"MRR@10": [lo, hi], "R@5": [lo5, hi5]}
            log(f"{key:26s} {'Δ ' + kind:16s} 95% CI MRR@10 [{lo:+.3f}, {hi:+.3f}]  R@5 [{lo5:+.3f}, {hi5:+.3f}]")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(res, fh, indent=2)
        fh.write("\n")
    log(f"wrote {args.out}")


def E_norm(x):
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


if __name__ == "__main__":
    main()
