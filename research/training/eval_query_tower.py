#!/usr/bin/env python3
"""Offline check of the query tower: identity vs linear adapter vs query tower, on the
validation packages and on the benchmark's TUNE split (never TEST).

Usage:  research/training/eval_query_tower.sh

Same harness as eval_adapter.py (function level; see its docstring for what it is and is not):
each query against every documented function of its own package (TUNE: bench/tune.jsonl from
bench_functions.py; validation: every validation code text of the query's package), dense =
cosine, hybrid = that fused 0.5/0.5 after min-max with lexical.py's BM25, top-50 lists.
Query vectors:
  identity  the default int8 model (what raggrep runs today)
  adapter   normalize(W q) with out/adapter.f32 (train_adapter.py)
  tower     the EXPORTED int8 query-tower model (export_query_tower.py), embedded with
            embed.py's recipe (onnxruntime, batch 1) — what raggrep would run
Code vectors: the default int8 model for all three (unchanged index).
Intervals: 95 % paired bootstrap over queries (eval_adapter.paired_ci, seed 16, 2,000 draws).
Output: research/training/out/eval_query_tower.json
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
from eval_adapter import E_norm, paired_ci, ranks_of, rr10, summary  # noqa: E402
from train_adapter import apply, load_pairs, log, split_packages  # noqa: E402

VARIANTS = ("identity", "adapter", "tower")
PAIRS = (("identity", "tower"), ("identity", "adapter"), ("adapter", "tower"))


def run(label: str, rows: list[dict], qidx: list[int], pools: dict[str, list[int]], D, Q: dict,
        by_package: bool) -> dict:
    bm25 = {p: L.BM25Pool([(rows[i]["path"], rows[i]["symbol"], rows[i]["code"]) for i in idx])
            for p, idx in pools.items()}
    groups: dict[str, list] = {"all": []}
    for i in qidx:
        pk = rows[i]["package"]
        pool = np.array(pools[pk])
        it = {"q": i, "pool": pool, "gold": int(np.where(pool == i)[0][0]),
              "lex": bm25[pk].scores(rows[i]["query"])}
        groups["all"].append(it)
        groups.setdefault(rows[i]["language"], []).append(it)
        if by_package:
            groups.setdefault(pk, []).append(it)
    out = {}
    log(f"== {label}")
    log(f"{'':26s} {'':18s} {'R@1':>6s} {'R@5':>6s} {'MRR@10':>7s}   n")
    for key in ["all"] + sorted(k for k in groups if k != "all"):
        res, ranks = {}, {}
        for kind in ("dense", "hybrid"):
            for var in VARIANTS:
                if kind == "dense":
                    fn = (lambda v: lambda it: D[it["pool"]] @ Q[v][it["q"]])(var)
                else:
                    fn = (lambda v: lambda it: L.fuse(D[it["pool"]] @ Q[v][it["q"]], it["lex"]))(var)
                r = ranks_of(fn, groups[key])
                ranks[f"{kind} {var}"] = r
                res[f"{kind} {var}"] = summary(r)
                m = res[f"{kind} {var}"]
                log(f"{key:26s} {kind + ' ' + var:18s} {m['R@1']:6.3f} {m['R@5']:6.3f} {m['MRR@10']:7.3f}   {m['queries']}")
        res["lexical"] = summary(ranks_of(lambda it: it["lex"], groups[key]))
        res["delta_95ci"] = {}
        for kind in ("dense", "hybrid"):
            for a, b in PAIRS:
                ra, rb = ranks[f"{kind} {a}"], ranks[f"{kind} {b}"]
                d = {"MRR@10": float(rr10(rb).mean() - rr10(ra).mean()),
                     "MRR@10_ci": paired_ci(rr10(ra), rr10(rb)),
                     "R@5": float((rb < 5).mean() - (ra < 5).mean()),
                     "R@5_ci": paired_ci((ra < 5).astype(float), (rb < 5).astype(float))}
                res["delta_95ci"][f"{kind} {b} - {a}"] = d
                lo, hi = d["MRR@10_ci"]
                log(f"{key:26s} {'Δ ' + kind + ' ' + b + '-' + a:18s} MRR@10 {d['MRR@10']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                    f"  R@5 {d['R@5']:+.3f} [{d['R@5_ci'][0]:+.3f}, {d['R@5_ci'][1]:+.3f}]")
        out[key] = res
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--adapter", default=os.path.join(HERE, "out", "adapter.f32"))
    ap.add_argument("--export-json", default=os.path.join(HERE, "out", "query_tower_export.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "eval_query_tower.json"))
    args = ap.parse_args()
    with open(args.export_json) as fh:
        exp = json.load(fh)
    with open(args.adapter, "rb") as fh:
        blob = fh.read()
    W = np.frombuffer(blob, dtype="<f4").reshape(E.DIM, E.DIM).astype(np.float64)
    base = E.Embedder()
    base.self_check()
    tower = E.Embedder(f"qtower-int8-{exp['int8']['sha256'][:12]}",
                       model_dir=os.path.dirname(exp["int8"]["path"]))
    if tower.meta.get("sha256") != exp["int8"]["sha256"]:
        sys.exit("query tower model dir does not match query_tower_export.json")
    with open(exp["int8"]["path"], "rb") as fh:
        if hashlib.sha256(fh.read()).hexdigest() != exp["int8"]["sha256"]:
            sys.exit("query tower model.onnx does not match its sha256 in query_tower_export.json")

    def qvecs(rows, qidx):
        Q = {v: np.zeros((len(rows), E.DIM)) for v in VARIANTS}
        texts = [rows[i]["query"] for i in qidx]
        Q["identity"][qidx] = E_norm(base.embed(texts, "queries (default)").astype(np.float64))
        Q["adapter"][qidx] = apply(W, Q["identity"][qidx])
        Q["tower"][qidx] = E_norm(tower.embed(texts, "queries (tower)").astype(np.float64))
        return Q

    result = {"note": "function level, see eval_adapter.py; query side: identity = default int8 model, "
                      "adapter = normalize(W q), tower = exported int8 query-tower model (onnxruntime, "
                      "batch 1); code side: default int8 vectors for all",
              "adapter_sha256": hashlib.sha256(blob).hexdigest(),
              "tower_int8_sha256": exp["int8"]["sha256"]}

    # validation packages (held-out training packages; the split of train_adapter.py)
    tdir = E.training_dir()
    manifest, prow = load_pairs()
    _, val_p = split_packages(manifest, 0.2, 16)
    vidx = [i for i, r in enumerate(prow) if r["package"] in set(val_p)]
    vrows = [prow[i] for i in vidx]
    pools: dict[str, list[int]] = {}
    for j, r in enumerate(vrows):
        pools.setdefault(r["package"], []).append(j)
    Dv = base.embed([E.document_text(r["path"], r["symbol"], r["code"]) for r in vrows],
                    "validation code").astype(np.float64)
    result["validation"] = run("validation packages", vrows, list(range(len(vrows))), pools, Dv,
                               qvecs(vrows, list(range(len(vrows)))), by_package=False)

    # TUNE half of the benchmark (never TEST)
    with open(os.path.join(tdir, "bench", "tune.jsonl")) as fh:
        trows = [json.loads(line) for line in fh]
    qidx = [i for i, r in enumerate(trows) if r["query"]]
    pools = {}
    for i, r in enumerate(trows):
        pools.setdefault(r["package"], []).append(i)
    Dt = base.embed([E.document_text(r["path"], r["symbol"], r["code"]) for r in trows],
                    "bench functions").astype(np.float64)
    result["tune"] = run("benchmark TUNE half", trows, qidx, pools, Dt, qvecs(trows, qidx), by_package=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)
        fh.write("\n")
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
