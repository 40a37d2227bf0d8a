#!/usr/bin/env python3
"""Would gradient-boosted trees over the engine's fusion features rank better than the shipped
linear fusion? An offline probe on feature dumps (issue 16); nothing here is shipped.

    python tree_probe.py --train FUSION_DUMP --report NAME=DUMP[:SPLIT] ... [--seeds 5]

FUSION_DUMP is the fusion data's dump (`cargo test --bench retrieval -- --data
~/.cache/raggrep/training/fusion/retrieval --no-baseline --foreign --dump-features F`): its
`train` rows fit everything, its `validation` rows are reported as `fval` and choose the linear
control's epoch, as `fit_fusion.py` does. Each --report is held out of every fit; SPLIT picks its
rows (`validation`, `heldout`; none for the benchmark's TUNE dump).

Three rankers, each scored on the same dumps:
- the shipped linear fusion (server/src/search/learned_fusion.json);
- the linear fusion refitted on these dumps (`fit_fusion.train`, its defaults): the control,
  since the shipped weights were fitted on another document model's scores;
- LambdaMART trees (LightGBM, 7 leaves, learning rate 0.05, 250 rounds, at least 50 candidates a
  leaf, the sum of --seeds seeded ensembles). The round count was read off early stopping on
  three training packages held out of the fit, never off a reported set.

Prints each ranker's chunk R@5 / MRR@10 / file R@1 per set, and paired 95 % bootstrap intervals
(2,000 draws) of the trees against both linear rankers, per set and pooled over every reported
set. Needs `lightgbm` (PyPI) beside numpy; it is not part of any set-up script.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_dumps as cd  # noqa: E402
import fit_fusion as ff  # noqa: E402


def rows(path: str, split: str | None) -> list[dict]:
    return [it for it in ff.prepare(ff.load(path)) if it["split"] == split and it["X"] is not None]


def summary(o: np.ndarray) -> str:
    """compare_dumps.outcomes rows as chunk R@5 / MRR@10 / file R@1."""
    return f"{100 * o[:, 0].mean():.1f} / {o[:, 1].mean():.3f} / {100 * o[:, 2].mean():.1f}"


def paired(base: np.ndarray, cand: np.ndarray, rng: np.random.Generator) -> str:
    """compare_dumps.paired of `cand` against `base` (2,000 bootstrap draws)."""
    return cd.paired(cand - base, 2000, rng)


def fit_trees(items: list[dict], seeds: int):
    """The sum of `seeds` LambdaMART ensembles fitted on `items` (fit_fusion.prepare's, with
    "X"): a scorer of a candidate matrix, as fit_fusion's scorers are."""
    import lightgbm as lgb

    X = np.vstack([it["X"] for it in items])
    y = np.concatenate([it["pos"].astype(int) for it in items])
    groups = [len(it["X"]) for it in items]
    boosters = [
        lgb.train(dict(objective="lambdarank", num_leaves=7, learning_rate=0.05, min_child_samples=50,
                       feature_fraction=0.9, bagging_fraction=0.8, bagging_freq=1, seed=seed, verbose=-1,
                       lambdarank_truncation_level=20, num_threads=1),
                  lgb.Dataset(X, y, group=groups), 250)
        for seed in range(seeds)
    ]
    return lambda X: sum(b.predict(X) for b in boosters)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--report", action="append", default=[], help="NAME=DUMP[:SPLIT]")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()

    train = rows(args.train, "train")
    sets = {"fval": rows(args.train, "validation")}
    for spec in args.report:
        name, _, rest = spec.partition("=")
        path, _, split = rest.partition(":")
        sets[name] = rows(path, split or None)

    shipped = ff.shipped_scorer()
    P, mu, sd, epoch = ff.train(train, sets["fval"], 400, 0.05, 1e-3, 16, lambda _: None)

    def refit(X):
        return ff.forward((X - mu) / sd, P)[0]

    trees = fit_trees(train, args.seeds)
    rng = np.random.default_rng(0)
    print(f"{len(train)} training queries; the linear refit's epoch (chosen on fval): {epoch}")
    pooled = {"shipped": [], "refit": [], "trees": []}
    for name, items in sets.items():
        o = {"shipped": cd.outcomes(items, shipped), "refit": cd.outcomes(items, refit),
             "trees": cd.outcomes(items, trees)}
        for k, v in o.items():
            pooled[k].append(v)
        print(f"{name} ({len(items)}): shipped {summary(o['shipped'])} | refit {summary(o['refit'])} | "
              f"trees {summary(o['trees'])}")
        print(f"  trees vs shipped: {paired(o['shipped'], o['trees'], rng)}")
        print(f"  trees vs refit:   {paired(o['refit'], o['trees'], rng)}")
    stacked = {k: np.vstack(v) for k, v in pooled.items()}
    print(f"pooled ({len(stacked['trees'])}): trees vs shipped: {paired(stacked['shipped'], stacked['trees'], rng)}")
    print(f"pooled: trees vs refit: {paired(stacked['refit'], stacked['trees'], rng)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
