#!/usr/bin/env python3
"""Probe: does a LEARNED fusion of the signals raggrep already has beat its fixed 0.5/0.5 fusion?

Usage:  research/training/fusion_probe.sh     (after build_pairs, train_adapter, eval_adapter)

A linear scorer over per-candidate features (below), trained with a listwise softmax loss on
the TRAINING packages' pairs (each query against the code texts of its package, candidates =
raggrep's candidate lists: dense top 50 ∪ lexical top 50), early-stopped on the validation
packages (same package split as train_adapter.py), then checked on the benchmark's TUNE half
with the same function-level set-up as eval_adapter.py. Never on TEST.
Function level, BM25 approximated (lexical.py): a probe to decide what to build in Rust, not
a benchmark number.

Features (global, no per-language or per-package switches):
  dense_mm, lex_mm      min-max normalised scores inside each candidate list (0 when absent):
                        exactly what the fixed fusion sums 0.5/0.5
  dense_rr, lex_rr      1 / (1 + rank) in each list (0 when absent)
  dense_raw             the cosine
  sym_mm, path_mm       BM25 of the symbol-path field / the path field alone, / max over pool
  sym_overlap           share of the query's content words that are parts of the symbol path
  log_len               log(1 + code tokens), a length prior
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as E  # noqa: E402
import lexical as L  # noqa: E402
from eval_adapter import paired_ci, rr10  # noqa: E402
from train_adapter import apply, load_pairs, log, split_packages  # noqa: E402

FEATURES = ["dense_mm", "lex_mm", "dense_rr", "lex_rr", "dense_raw", "sym_mm", "path_mm",
            "sym_overlap", "log_len"]
LIMIT = 50
STOP = {"a", "an", "the", "of", "to", "for", "from", "in", "on", "at", "by", "with", "and", "or",
        "is", "are", "be", "this", "that", "it", "its", "as", "if", "into", "given", "specified"}


def list_features(scores: np.ndarray, keep: np.ndarray):
    idx = np.where(keep)[0]
    idx = idx[np.argsort(-scores[idx], kind="stable")][:LIMIT]
    mm = np.zeros(len(scores))
    rr = np.zeros(len(scores))
    if len(idx):
        lo, hi = scores[idx].min(), scores[idx].max()
        mm[idx] = (scores[idx] - lo) / (hi - lo) if hi - lo > 1e-6 else 1.0
        rr[idx] = 1.0 / (1.0 + np.arange(len(idx)))
    inlist = np.zeros(len(scores), dtype=bool)
    inlist[idx] = True
    return mm, rr, inlist


class Pool:
    """One package: its docs (path, symbol, code), vectors, BM25, symbol parts, lengths."""

    def __init__(self, docs, vecs):
        self.docs = docs
        self.D = vecs
        self.bm25 = L.BM25Pool(docs)
        self.sym_parts = [set(L.code_tokens(d[1])) for d in docs]
        self.log_len = np.log1p([len(L.code_tokens(d[2])) for d in docs])

    def query(self, text: str, qvec: np.ndarray, gold: int):
        """(features of the candidates, index of the gold among them or -1, candidate ids)."""
        dense = self.D @ qvec
        lex = self.bm25.scores(text)
        d_mm, d_rr, d_in = list_features(dense, np.ones(len(dense), dtype=bool))
        l_mm, l_rr, l_in = list_features(lex, lex > 0)
        cand = np.where(d_in | l_in)[0]
        sym = self.bm25.scores(text, (1,))
        path = self.bm25.scores(text, (2,))
        qw = [w for w in set(L.code_tokens(text)) if w not in STOP]
        overlap = np.array([len([w for w in qw if w in self.sym_parts[c]]) / max(len(qw), 1)
                            for c in cand])
        X = np.stack([d_mm[cand], l_mm[cand], d_rr[cand], l_rr[cand], dense[cand],
                      sym[cand] / max(sym.max(), 1e-9), path[cand] / max(path.max(), 1e-9),
                      overlap, self.log_len[cand]], axis=1)
        g = np.where(cand == gold)[0]
        return X, (int(g[0]) if len(g) else -1), cand


def ranks(items, w: np.ndarray | None, mu, sd) -> np.ndarray:
    """Rank of the gold; w None = raggrep's fixed fusion (0.5 dense_mm + 0.5 lex_mm)."""
    out = []
    for X, g, _, n in items:
        if g < 0:
            out.append(n)
            continue
        s = 0.5 * X[:, 0] + 0.5 * X[:, 1] if w is None else ((X - mu) / sd) @ w
        out.append(int((s > s[g]).sum()))
    return np.array(out)


def summary(r: np.ndarray) -> dict:
    return {"queries": len(r), "R@1": float((r < 1).mean()), "R@5": float((r < 5).mean()),
            "MRR@10": float(rr10(r).mean())}


def train(items, val_items, epochs: int, lr: float, l2: float, seed: int):
    Xall = np.concatenate([it[0] for it in items])
    mu, sd = Xall.mean(0), Xall.std(0) + 1e-9
    w = np.zeros(len(FEATURES))
    w[0] = w[1] = 1.0 / 2  # start near the fixed fusion (in standardised units, roughly)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    rng = random.Random(seed)
    usable = [it for it in items if it[1] >= 0]
    best = (float(rr10(ranks(val_items, w, mu, sd)).mean()), w.copy(), 0)
    step = 0
    for ep in range(1, epochs + 1):
        rng.shuffle(usable)
        for s in range(0, len(usable), 256):
            g = np.zeros_like(w)
            for X, gi, _, _ in usable[s:s + 256]:
                Z = (X - mu) / sd
                sc = Z @ w
                p = np.exp(sc - sc.max())
                p /= p.sum()
                g += Z.T @ p - Z[gi]
            g = g / len(usable[s:s + 256]) + 2 * l2 * w
            step += 1
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            w -= lr * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
        val = float(rr10(ranks(val_items, w, mu, sd)).mean())
        log(f"epoch {ep:2d}  val MRR@10 {val:.4f}")
        if val > best[0]:
            best = (val, w.copy(), ep)
    return best[1], mu, sd, best[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-package", type=int, default=400, help="training queries per package")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--adapter", default=os.path.join(HERE, "out", "adapter.f32"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "fusion_probe.json"))
    args = ap.parse_args()
    t0 = time.time()
    tdir = E.training_dir()
    manifest, rows = load_pairs()
    emb = E.Embedder()
    emb.self_check()
    Q = emb.embed([r["query"] for r in rows], "queries").astype(np.float64)
    D = emb.embed([E.document_text(r["path"], r["symbol"], r["code"]) for r in rows], "code").astype(np.float64)
    W = np.fromfile(args.adapter, dtype="<f4").reshape(E.DIM, E.DIM).astype(np.float64)
    train_p, val_p = split_packages(manifest, 0.2, args.seed)
    rng = random.Random(args.seed)
    by_pkg: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_pkg.setdefault(r["package"], []).append(i)

    def items_for(pkgs, qmat, cap):
        out = []
        for p in sorted(pkgs):
            idx = by_pkg.get(p, [])
            if len(idx) < 2:
                continue
            pool = Pool([(rows[i]["path"], rows[i]["symbol"], rows[i]["code"]) for i in idx], D[idx])
            qs = list(range(len(idx)))
            if cap and len(qs) > cap:
                qs = sorted(rng.sample(qs, cap))
            for j in qs:
                X, g, _ = pool.query(rows[idx[j]]["query"], qmat[idx[j]], j)
                out.append((X, g, rows[idx[j]]["language"], len(idx)))
        return out

    results = {}
    variants = {"identity": Q / np.linalg.norm(Q, axis=1, keepdims=True), "adapter": apply(W, Q)}
    # TUNE items
    with open(os.path.join(tdir, "bench", "tune.jsonl")) as fh:
        brows = [json.loads(line) for line in fh]
    BD = emb.embed([E.document_text(r["path"], r["symbol"], r["code"]) for r in brows],
                   "bench functions").astype(np.float64)
    bq = [i for i, r in enumerate(brows) if r["query"]]
    BQ = np.zeros((len(brows), E.DIM))
    BQ[bq] = emb.embed([brows[i]["query"] for i in bq], "bench queries")
    bpools: dict[str, list[int]] = {}
    for i, r in enumerate(brows):
        bpools.setdefault(r["package"], []).append(i)
    for vname in ("identity", "adapter"):
        log(f"--- query vectors: {vname}")
        qmat = variants[vname]
        tr = items_for(train_p, qmat, args.per_package)
        va = items_for(val_p, qmat, 0)
        log(f"train {len(tr)} queries ({sum(1 for it in tr if it[1] >= 0)} with the gold among "
            f"the candidates), validation {len(va)}")
        w, mu, sd, ep = train(tr, va, args.epochs, args.lr, args.l2, args.seed)
        bqm = BQ / np.maximum(np.linalg.norm(BQ, axis=1, keepdims=True), 1e-12) if vname == "identity" \
            else apply(W, BQ)
        tune = []
        for p, idx in sorted(bpools.items()):
            pool = Pool([(brows[i]["path"], brows[i]["symbol"], brows[i]["code"]) for i in idx], BD[idx])
            for j, i in enumerate(idx):
                if brows[i]["query"]:
                    X, g, _ = pool.query(brows[i]["query"], bqm[i], j)
                    tune.append((X, g, brows[i]["language"], len(idx)))
        res = {"weights": dict(zip(FEATURES, w.tolist())), "mean": mu.tolist(), "std": sd.tolist(),
               "best_epoch": ep}
        for split, its in (("validation", va), ("tune", tune)):
            res[split] = {}
            langs = ["all"] + sorted({it[2] for it in its})
            for lang in langs:
                sub = [it for it in its if lang == "all" or it[2] == lang]
                rf, rl = ranks(sub, None, mu, sd), ranks(sub, w, mu, sd)
                lo, hi = paired_ci(rr10(rf), rr10(rl))
                res[split][lang] = {"fixed": summary(rf), "learned": summary(rl),
                                    "delta_MRR@10_95ci": [lo, hi]}
                f, l_ = summary(rf), summary(rl)
                log(f"{split:10s} {lang:11s} n={f['queries']:5d}  fixed R@1 {f['R@1']:.3f} R@5 {f['R@5']:.3f} "
                    f"MRR {f['MRR@10']:.3f}  learned R@1 {l_['R@1']:.3f} R@5 {l_['R@5']:.3f} "
                    f"MRR {l_['MRR@10']:.3f}  Δ95% [{lo:+.3f}, {hi:+.3f}]")
        log("weights (standardised features): " + ", ".join(f"{k} {v:+.2f}" for k, v in zip(FEATURES, w)))
        results[vname] = res
    out = {"note": "function-level probe; BM25 approximated; TUNE split only; fixed = raggrep's "
                   "0.5/0.5 min-max fusion, learned = linear listwise model over FEATURES trained "
                   "on training packages", "features": FEATURES, "seed": args.seed,
           "train_packages": train_p, "validation_packages": val_p, "results": results,
           "seconds": round(time.time() - t0, 1)}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=2)
        fh.write("\n")
    log(f"wrote {args.out} ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
