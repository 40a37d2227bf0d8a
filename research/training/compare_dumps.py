#!/usr/bin/env python3
"""Paired comparison of retrieval-benchmark feature dumps against a baseline dump (issue 16).

    compare_dumps.py --split tune BASE.jsonl CANDIDATE.jsonl [CANDIDATE.jsonl ...]

Each dump is `cargo test --bench retrieval -- ... --dump-features F`, re-ranked with the shipped
fusion weights (server/src/search/learned_fusion.json), which reproduces the engine's numbers.
For each candidate: the mean difference in chunk R@5, chunk MRR@10 and file R@1 over the queries
both dumps hold, a 95 % interval from a paired bootstrap over those queries (2,000 draws, fixed
seed), and on how many queries R@5 changed at all.

Why: TUNE is four packages (803 queries, Rust is one crate) and a query-model change moves R@5
on some twenty of them, so a point up or down can be chance. The interval says how much of a
difference these queries can show; a second training seed says how much training alone moves it
(BENCHMARKS.md, "a second seed"). A change should clear both.

--split picks the dump's rows: `tune` / `test` for the benchmark's halves (their rows carry no
split), `validation` for the fusion data's held-out packages. `--candidate-weights W` scores the
candidates with another fusion: `--candidate-weights W --split tune D.jsonl D.jsonl` compares a
refitted fusion with the shipped one on the same dump.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fit_fusion as ff  # noqa: E402


def outcomes(items, score) -> np.ndarray:
    """Per prepared query (fit_fusion.prepare's items), in order: R@5 hit, reciprocal rank within
    10, file R@1 hit."""
    ranks = np.array(ff.ranks(items, score)).reshape(-1, 2)
    return np.stack([(ranks[:, 0] < 5).astype(float), np.where(ranks[:, 0] < 10, 1.0 / (ranks[:, 0] + 1), 0.0),
                     (ranks[:, 1] < 1).astype(float)], axis=1)


def per_query(path: str, split: str | None, score) -> dict:
    """(package, gold path, gold line) -> (R@5 hit, reciprocal rank within 10, file R@1 hit)."""
    rows = [it for it in ff.prepare(ff.load(path)) if it["split"] == split]
    keys = [(it["package"], it["gold"][0], it["gold"][1]) for it in rows]
    return dict(zip(keys, outcomes(rows, score)))


def paired(diff: np.ndarray, draws: int, rng: np.random.Generator) -> str:
    """Mean per-query differences (rows of `outcomes`, candidate minus base) with 95 % intervals
    from a paired bootstrap over the queries, and on how many queries R@5 changed."""
    n = len(diff)
    boot = np.array([diff[rng.integers(0, n, n)].mean(axis=0) for _ in range(draws)])
    lo, hi = np.percentile(boot, [2.5, 97.5], axis=0)
    mean = diff.mean(axis=0)
    return (f"chunk R@5 {100 * mean[0]:+.1f} [{100 * lo[0]:+.1f}, {100 * hi[0]:+.1f}]"
            f"  MRR@10 {mean[1]:+.3f} [{lo[1]:+.3f}, {hi[1]:+.3f}]"
            f"  file R@1 {100 * mean[2]:+.1f} [{100 * lo[2]:+.1f}, {100 * hi[2]:+.1f}]"
            f"  R@5 changed on {int((diff[:, 0] != 0).sum())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=["tune", "test", "validation"], required=True)
    ap.add_argument("--weights", default=ff.SHIPPED_WEIGHTS, help="fusion weights (default: the shipped ones)")
    ap.add_argument("--candidate-weights",
                    help="fusion weights for the candidates (default: --weights); with the base dump "
                         "as the candidate too, this compares two fusions on the same queries")
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("base")
    ap.add_argument("candidates", nargs="+")
    args = ap.parse_args()
    score = ff.shipped_scorer(args.weights)
    candidate_score = ff.shipped_scorer(args.candidate_weights) if args.candidate_weights else score
    split = "validation" if args.split == "validation" else None
    base = per_query(args.base, split, score)
    if not base:
        raise SystemExit(f"{args.base}: no {args.split} rows with a gold answer")
    rng = np.random.default_rng(0)
    print(f"base {args.base}: {len(base)} queries")
    for path in args.candidates:
        other = per_query(path, split, candidate_score)
        keys = sorted(set(base) & set(other))
        if not keys:
            print(f"{path}: no query in common with the base")
            continue
        diff = np.array([other[k] - base[k] for k in keys])
        print(f"{path}: n={len(keys)}  {paired(diff, args.draws, rng)}")


if __name__ == "__main__":
    main()
