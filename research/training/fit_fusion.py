#!/usr/bin/env python3
"""Fit raggrep's learned fusion (server/src/search/learned.rs) on training packages only.

Usage:  research/training/fit_fusion.sh      (builds the data and dumps, then runs this)
        python fit_fusion.py --train DUMP.jsonl [--report NAME=DUMP.jsonl ...] --out JSON

Input: JSON lines written by `cargo bench --bench retrieval -- --data DIR --dump-features FILE`:
each query's hybrid candidates (path, start line, end line, features) exactly as the engine
computes them, its gold function (path, lines) and its package split (train / validation, from
research/training/build_fusion_data.py; the same package split as train_adapter.py).

Model: a linear score over standardised features, trained with a listwise softmax loss (every
candidate overlapping the gold function is a positive: a method and its class both count, as
in the benchmark), Adam, L2, full batch, fixed seed. The epoch is chosen on the VALIDATION
packages' chunk MRR@10 after the engine's own de-duplication (overlapping hits of one file count
once). `--report` dumps (the benchmark's TUNE half) are only evaluated, never used to choose:
the script reports them so the note can compare against the real benchmark run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter

import numpy as np


def load(path: str, foreign: bool = False) -> list[dict]:
    """The dump's rows; `foreign` keeps the rows of other packages' questions (`--foreign`, no
    gold), which only the confidence fit (fit_confidence.py) reads."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if foreign or row.get("gold") is not None:
                    rows.append(row)
    return rows


class Corpora:
    """The chunk texts of a retrieval dataset (`packages/<id>/corpus/`, blanked as the engine
    indexed them); each file is read once."""

    def __init__(self, root: str):
        self.root, self.files = root, {}

    def text(self, package: str, path: str, start: int, end: int) -> str:
        key = (package, path)
        if key not in self.files:
            with open(os.path.join(self.root, "packages", package, "corpus", path), encoding="utf-8",
                      errors="replace") as fh:
                self.files[key] = fh.read().split("\n")
        return "\n".join(self.files[key][start - 1:end])


def overlaps(c, gold) -> bool:
    return c[0] == gold[0] and c[1] <= gold[2] and gold[1] <= c[2]


def prepare(rows: list[dict]):
    """Per query: features (n×F), positive mask, candidate spans, gold, language."""
    out = []
    for r in rows:
        cands = r["candidates"]
        X = np.array([c[3] for c in cands], dtype=np.float64).reshape(len(cands), -1) if cands else None
        pos = np.array([overlaps(c, r["gold"]) for c in cands], dtype=bool)
        out.append({"X": X, "pos": pos, "spans": [(c[0], c[1], c[2]) for c in cands], "gold": r["gold"],
                    "language": r["language"], "split": r.get("split"), "package": r["package"]})
    return out


def distinct(order, spans, n: int = 10):
    """The first `n` indexes of `order` that survive the engine's de-duplication (an overlapping
    hit of the same file counts once)."""
    kept = []
    for i in order:
        if any(overlaps(spans[i], spans[j]) for j in kept):
            continue
        kept.append(i)
        if len(kept) == n:
            break
    return kept


def ranks(items, score_fn):
    """(chunk rank, file rank) per query after the engine's de-duplication; 99 = not in top 10."""
    out = []
    for it in items:
        if it["X"] is None:
            out.append((99, 99))
            continue
        s = score_fn(it["X"])
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))
        hits = [it["spans"][i] for i in distinct(order, it["spans"])]
        gold = it["gold"]
        chunk = next((k for k, h in enumerate(hits) if overlaps(h, gold)), 99)
        file = next((k for k, h in enumerate(hits) if h[0] == gold[0]), 99)
        out.append((chunk, file))
    return np.array(out)


def metrics(r: np.ndarray) -> dict:
    def at(col, k):
        return float((r[:, col] < k).mean()) if len(r) else 0.0

    def mrr(col):
        return float(np.where(r[:, col] < 10, 1.0 / (r[:, col] + 1), 0.0).mean()) if len(r) else 0.0

    return {"n": int(len(r)), "chunk_R@1": at(0, 1), "chunk_R@5": at(0, 5), "chunk_R@10": at(0, 10),
            "chunk_MRR@10": mrr(0), "file_R@1": at(1, 1), "file_R@5": at(1, 5), "file_MRR@10": mrr(1)}


def fixed(X):
    return 0.5 * X[:, 0] + 0.5 * X[:, 1]


def train(items, val, epochs: int, lr: float, l2: float, seed: int, log, hidden: int = 0,
          linear_only: np.ndarray | None = None, balance: bool = False):
    """Listwise softmax fit of `z @ w` (+ `out @ tanh(units @ z + bias)` with `hidden` units).
    Returns the parameters of the epoch with the best validation chunk MRR@10, mean, std, epoch."""
    usable = [it for it in items if it["X"] is not None and it["pos"].any()]
    Xall = np.concatenate([it["X"] for it in usable])
    mu, sd = Xall.mean(0), Xall.std(0) + 1e-6
    F = Xall.shape[1]
    n = max(len(it["pos"]) for it in usable)
    # Padded batch: Z (q×n×F), mask of real candidates, mask of positives.
    Z = np.zeros((len(usable), n, F))
    real = np.zeros((len(usable), n), dtype=bool)
    pos = np.zeros((len(usable), n), dtype=bool)
    for q, it in enumerate(usable):
        m = len(it["pos"])
        Z[q, :m] = (it["X"] - mu) / sd
        real[q, :m] = True
        pos[q, :m] = it["pos"]
    # Each query counts 1/n, or with `balance` each language counts as much as any other.
    per_language = Counter(it["language"] for it in usable)
    query_weight = (np.array([1.0 / per_language[it["language"]] for it in usable]) / len(per_language) if balance
                    else np.full(len(usable), 1.0 / len(usable)))
    rng = np.random.default_rng(seed)
    P = {"w": rng.normal(0, 0.01, F)}
    P["w"][0] += 0.5
    P["w"][1] += 0.5
    if hidden:
        P["units"] = rng.normal(0, 0.3 / np.sqrt(F), (hidden, F))
        # Features the hidden units do not see: they enter the score through their weight only.
        unit_mask = np.ones(F) if linear_only is None else (~linear_only).astype(float)
        P["units"] *= unit_mask
        P["bias"] = np.zeros(hidden)
        P["out"] = rng.normal(0, 0.01, hidden)
    M1 = {k: np.zeros_like(v) for k, v in P.items()}
    M2 = {k: np.zeros_like(v) for k, v in P.items()}
    best = (-1.0, {k: v.copy() for k, v in P.items()}, 0)
    for epoch in range(1, epochs + 1):
        s, h = forward(Z, P)
        s = np.where(real, s, -np.inf)
        smax = s.max(1, keepdims=True)
        e = np.exp(s - smax)
        p_all = e / e.sum(1, keepdims=True)
        ep = np.where(pos, e, 0.0)
        p_pos = ep / ep.sum(1, keepdims=True)
        # d(-log Σpos / Σall)/ds = p_all - p_pos
        g_s = np.where(real, p_all - p_pos, 0.0) * query_weight[:, None]
        G = {"w": np.einsum("qn,qnf->f", g_s, Z) + 2 * l2 * P["w"]}
        if hidden:
            G["out"] = np.einsum("qn,qnh->h", g_s, h) + 2 * l2 * P["out"]
            g_h = g_s[..., None] * P["out"] * (1 - h ** 2)
            G["units"] = (np.einsum("qnh,qnf->hf", g_h, Z) + 2 * l2 * P["units"]) * unit_mask
            G["bias"] = g_h.sum((0, 1))
        for k, g in G.items():
            M1[k] = 0.9 * M1[k] + 0.1 * g
            M2[k] = 0.999 * M2[k] + 0.001 * g ** 2
            P[k] = P[k] - lr * (M1[k] / (1 - 0.9 ** epoch)) / (np.sqrt(M2[k] / (1 - 0.999 ** epoch)) + 1e-8)
        if epoch % 10 == 0:
            snapshot = {k: v.copy() for k, v in P.items()}
            r = metrics(ranks(val, lambda X: forward((X - mu) / sd, snapshot)[0]))
            loss = float(-np.log(np.where(pos, p_all, 0).sum(1) + 1e-12).mean())
            log(f"epoch {epoch:4d} loss {loss:.4f} validation chunk MRR@10 {r['chunk_MRR@10']:.4f} "
                f"R@5 {r['chunk_R@5']:.4f}")
            if r["chunk_MRR@10"] > best[0]:
                best = (r["chunk_MRR@10"], snapshot, epoch)
    return best[1], mu, sd, best[2]


def forward(Z, P):
    """Scores of standardised features Z (…×F), and the hidden activations (or None)."""
    s = Z @ P["w"]
    if "units" not in P:
        return s, None
    h = np.tanh(Z @ P["units"].T + P["bias"])
    return s + h @ P["out"], h


# The fusion the engine ships (fit_fusion.sh writes it; the engine compiles it in).
SHIPPED_WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "server", "src",
                               "search", "learned_fusion.json")


# The engine's feature names, in dump order: `FEATURES` in learned.rs, read rather than copied.
ENGINE_FEATURES = os.path.join(os.path.dirname(SHIPPED_WEIGHTS), "learned.rs")


def engine_features(path: str = ENGINE_FEATURES) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        found = re.search(r"pub const FEATURES: \[&str; \d+\] = \[(.*?)\];", fh.read(), re.S)
    if not found:
        raise SystemExit(f"fit_fusion: no `pub const FEATURES` in {path}")
    return re.findall(r'"([^"]+)"', found.group(1))


def shipped_scorer(path: str = SHIPPED_WEIGHTS):
    """The learned score of a candidate's raw features (…×F) under a fitted weights file."""
    with open(path, encoding="utf-8") as fh:
        fusion = json.load(fh)
    mu, sd, w = (np.array(fusion[k], dtype=np.float64) for k in ("mean", "std", "weights"))
    P = {"w": w, **{k: np.array(v, dtype=np.float64) for k, v in fusion.get("hidden", {}).items()}}
    return lambda X: forward((X - mu) / sd, P)[0]


def report(name, items, P, mu, sd, log):
    out = {}
    for lang in ["all"] + sorted({it["language"] for it in items}):
        sub = [it for it in items if lang == "all" or it["language"] == lang]
        a, b = metrics(ranks(sub, fixed)), metrics(ranks(sub, lambda X: forward((X - mu) / sd, P)[0]))
        out[lang] = {"fixed": a, "learned": b}
        log(f"{name:10s} {lang:11s} n={a['n']:5d} chunk R@5 {a['chunk_R@5']:.3f} -> {b['chunk_R@5']:.3f}  "
            f"MRR@10 {a['chunk_MRR@10']:.3f} -> {b['chunk_MRR@10']:.3f}  file R@1 {a['file_R@1']:.3f} -> "
            f"{b['file_R@1']:.3f}")
    return out


def names_arg(text: str) -> set[str]:
    return {n.strip() for n in text.split(",") if n.strip()}


def package_name(package_id: str, names: set[str]) -> str | None:
    """The name of `names` a dump's package id (`name-version`, versions may hold dashes) is of."""
    return next((n for n in names if package_id == n or package_id.startswith(n + "-")), None)


def resplit(items: list[dict], validation: set[str], drop: set[str]) -> list[dict]:
    """The dump's train/validation split, or: `validation` packages validate, the rest train;
    `drop` packages are left out. Unknown names are an error, not a silent no-op."""
    ids = {it["package"] for it in items}
    unknown = sorted(n for n in validation | drop if not any(package_name(i, {n}) for i in ids))
    if unknown:
        raise SystemExit(f"fit_fusion: no package in the dump is named {', '.join(unknown)}")
    out = []
    for it in items:
        if package_name(it["package"], drop):
            continue
        if validation:
            it = {**it, "split": "validation" if package_name(it["package"], validation) else "train"}
        out.append(it)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True, help="dump of the training packages (train + validation split)")
    ap.add_argument("--report", action="append", default=[], help="NAME=DUMP, evaluated only")
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=400)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--hidden", type=int, default=0, help="hidden tanh units beside the linear score (0: linear)")
    ap.add_argument("--balance-languages", action="store_true",
                    help="every language weighs the same in the loss (not every query)")
    ap.add_argument("--linear-only", default="",
                    help="comma-separated feature names the hidden units do not see (their weights stay 0)")
    ap.add_argument("--validation-packages", default="",
                    help="comma-separated package names that choose the epoch instead of the dump's "
                         "validation split; every other package then trains")
    ap.add_argument("--drop-packages", default="", help="comma-separated package names left out of the fit")
    args = ap.parse_args()
    t0 = time.time()

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    rows = resplit(prepare(load(args.train)), names_arg(args.validation_packages), names_arg(args.drop_packages))
    tr = [it for it in rows if it["split"] == "train"]
    va = [it for it in rows if it["split"] == "validation"]
    if not tr or not va:
        log("fit_fusion: the training dump needs rows of both splits (train, validation)")
        return 2
    log(f"train {len(tr)} queries ({sum(it['pos'].any() for it in tr if it['X'] is not None)} with the gold "
        f"among the candidates), validation {len(va)}")
    names = engine_features()
    features = next(it["X"].shape[1] for it in rows if it["X"] is not None)
    if len(names) != features:
        log(f"fit_fusion: {features} features in the dump, {len(names)} in learned.rs -- a dump from another build?")
        return 2
    linear_only = names_arg(args.linear_only)
    if linear_only - set(names):
        log(f"fit_fusion: --linear-only names unknown features: {sorted(linear_only - set(names))}")
        return 2
    P, mu, sd, epoch = train(tr, va, args.epochs, args.lr, args.l2, args.seed, log, args.hidden,
                             np.array([n in linear_only for n in names]) if linear_only else None,
                             args.balance_languages)
    w = P["w"]
    log("weights (standardised): " + ", ".join(f"{k} {v:+.3f}" for k, v in zip(names, w)))
    results = {"train": report("train", tr, P, mu, sd, log), "validation": report("validation", va, P, mu, sd, log)}
    for spec in args.report:
        name, path = spec.split("=", 1)
        results[name] = report(name, prepare(load(path)), P, mu, sd, log)
    packages = sorted({(it["package"], it["split"]) for it in rows})
    doc = {
        "comment": "fitted by research/training/fit_fusion.py on training packages only (see "
                   "research/training/README.md); weights over standardised features",
        "features": names,
        "mean": [round(float(x), 6) for x in mu],
        "std": [round(float(x), 6) for x in sd],
        "weights": [round(float(x), 6) for x in w],
        **({"hidden": {"units": [[round(float(x), 6) for x in row] for row in P["units"]],
                       "bias": [round(float(x), 6) for x in P["bias"]],
                       "out": [round(float(x), 6) for x in P["out"]]}} if "units" in P else {}),
        "epoch": epoch,
        "seed": args.seed,
        "hyper": {"lr": args.lr, "l2": args.l2, "epochs": args.epochs, "hidden": args.hidden,
                  **({"linear_only": sorted(linear_only)} if linear_only else {}),
                  **({"balance_languages": True} if args.balance_languages else {})},
        "packages": [{"package": p, "split": s} for p, s in packages],
        "results": results,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, args.out)
    log(f"wrote {args.out} (epoch {epoch}, {time.time() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
