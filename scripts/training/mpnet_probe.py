#!/usr/bin/env python3
"""Would a bigger model help? all-mpnet-base-v2 beside the shipped pair, measured (issue 16).

    mpnet_probe.py --model-dir DIR [--candidates NAME=DUMP:DATA[:SPLIT] ...] [--top 10]

DIR is the unzipped all-mpnet-base-v2 of the PyPI parts (mpnet_probe.sh fetches it). Four
measurements, each printed:

1. Fidelity: mpnet.build_onnx's fp32 graph against mpnet.Reference (numpy) on 20 validation
   texts, and the int8 graph (mpnet.quantize) against fp32 on 200.
2. Speed, as the engine embeds (onnxruntime, batch 1, 2 threads, 256 tokens): the same 200
   code texts and 200 queries by the shipped code model (int8), the shipped query model and
   the int8 mpnet graph.
3. Pairs: the validation packages of pairs.jsonl (train_adapter.split_packages, seed 16, as
   eval_query_models.py), each query ranked against its package's validation code texts, by
   the shipped pair, by mpnet alone (zero-shot: mpnet embeds both sides), by the shipped
   cosine + beta x the mpnet cosine, and, as a control, by the shipped cosine + beta x the plain
   MiniLM cosine (a second small model, not a bigger one).
4. Candidates (optional): for each query of a retrieval-bench feature dump, the shipped learned
   fusion's best --top candidates re-sorted by the fusion's linear score + alpha x the mpnet
   cosine of query and chunk (`path\\ncode`), as `--rerank` re-sorts them with its
   cross-encoder. alpha is chosen on the first set (the fusion data's validation packages) and
   reported on the others with paired 95 % bootstrap intervals (compare_dumps.paired).

Nothing here is trained: the probe says whether the bigger model's cosine carries what the
shipped pair misses, and what it would cost. BENCHMARKS.md, "a bigger model", has the numbers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_dumps  # noqa: E402
import embed as E  # noqa: E402
import fit_fusion as ff  # noqa: E402
import mpnet as M  # noqa: E402
from train_adapter import load_pairs, split_packages  # noqa: E402

CODE_MODEL = "all-minilm-l6-v2-code2-int8"
PLAIN = "all-minilm-l6-v2-int8"


def cached(store: str, label: str, texts: list[str], embed) -> np.ndarray:
    """Vectors of `texts`, kept in `store` by a hash of the texts."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:16]
    path = os.path.join(store, f"{label}-{digest}.npy")
    if os.path.exists(path):
        return np.load(path)
    t = time.time()
    vectors = np.concatenate([embed(texts[s:s + 256]) for s in range(0, len(texts), 256)]) if texts else np.zeros((0, M.DIM))
    print(f"  {label}: {len(texts)} texts in {time.time() - t:.0f}s", file=sys.stderr, flush=True)
    np.save(path + ".tmp.npy", vectors)
    os.replace(path + ".tmp.npy", path)
    return vectors


def rank_metrics(scores_of, groups, languages) -> dict:
    """R@1 / R@5 / MRR@10 over all queries and per language; the gold of row j is column j."""
    per: dict[str, list] = {}
    for g in groups:
        S = scores_of(g)
        for a, j in enumerate(g):
            rank = int((S[a] > S[a, a]).sum())
            for key in ("all", languages[j]):
                per.setdefault(key, []).append((rank < 1, rank < 5, 1.0 / (rank + 1) if rank < 10 else 0.0))
    out = {k: dict(zip(("R@1", "R@5", "MRR@10"), np.mean(v, axis=0).round(3).tolist()), n=len(v)) for k, v in per.items()}
    langs = [v["MRR@10"] for k, v in out.items() if k != "all" and v["n"] >= 50]
    out["macro_MRR@10"] = round(float(np.mean(langs)), 4)
    return out


def line(name: str, m: dict) -> str:
    a = m["all"]
    langs = " ".join(f"{k} {v['R@5']:.3f}/{v['MRR@10']:.3f}" for k, v in sorted(m.items()) if k not in ("all", "macro_MRR@10"))
    return f"{name:34s} R@1 {a['R@1']:.3f} R@5 {a['R@5']:.3f} MRR@10 {a['MRR@10']:.3f} macro {m['macro_MRR@10']:.4f} | {langs}"


def minilm_session(path: str, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def texts_per_second(embed, texts) -> float:
    embed(texts[:5])
    t = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--work", default=os.path.join(E.training_dir(), "mpnet"), help="graphs and vector cache")
    ap.add_argument("--candidates", action="append", default=[], metavar="NAME=DUMP:DATA[:SPLIT]",
                    help="the first is where alpha is chosen")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--betas", default="0.25,0.5,0.75,1")
    ap.add_argument("--alphas", default="0,0.5,1,2,4,8")
    ap.add_argument("--out", default="", help="JSON of the results")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    results: dict = {}

    # 1. graphs and fidelity
    fp32, int8 = os.path.join(args.work, "mpnet-fp32.onnx"), os.path.join(args.work, "mpnet-int8.onnx")
    if not os.path.exists(int8):
        M.build_onnx(args.model_dir, fp32)
        M.quantize(fp32, int8)
    manifest, rows = load_pairs()
    _, val_packages = split_packages(manifest, 0.2, 16)
    val = [r for r in rows if r["package"] in set(val_packages)]
    docs = [E.document_text(r["path"], r["symbol"], r["code"]) for r in val]
    queries = [r["query"] for r in val]
    sample = np.random.default_rng(16).choice(len(val), 200, replace=False)
    sample_docs = [docs[i] for i in sample]
    sample_queries = [queries[i] for i in sample]
    ref = M.Reference(args.model_dir).embed(sample_docs[:20])
    f32, i8 = M.Onnx(fp32, args.model_dir), M.Onnx(int8, args.model_dir)
    graph_vs_ref = (f32.embed(sample_docs[:20]) * ref).sum(1)
    int8_vs_fp32 = (i8.embed(sample_docs) * f32.embed(sample_docs)).sum(1)
    results["fidelity"] = {"fp32_graph_vs_numpy_min": float(graph_vs_ref.min()),
                           "int8_vs_fp32_mean": float(int8_vs_fp32.mean()), "int8_vs_fp32_min": float(int8_vs_fp32.min()),
                           "int8_bytes": os.path.getsize(int8)}
    print(f"fidelity: fp32 graph vs numpy min cosine {graph_vs_ref.min():.6f}; int8 vs fp32 mean "
          f"{int8_vs_fp32.mean():.4f} min {int8_vs_fp32.min():.4f} ({len(sample_docs)} code texts); "
          f"int8 graph {os.path.getsize(int8) / 1e6:.0f} MB", flush=True)
    del f32

    # 2. speed as the engine embeds
    home_models = os.path.join(E.raggrep_home(), "models")
    tok_minilm = E.Embedder(PLAIN)
    speed = {}
    for name, graph in (("code model (int8)", os.path.join(home_models, CODE_MODEL, "model.onnx")),
                        ("query model (int8)", os.path.join(home_models, CODE_MODEL, "query-model.onnx"))):
        session = minilm_session(graph, 2)

        def run(texts, session=session):
            for enc in tok_minilm.tok.encode_batch(list(texts)):
                ids = np.array([enc.ids], dtype=np.int64)
                session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                   "token_type_ids": np.zeros_like(ids)})
        kind = sample_queries if "query" in name else sample_docs
        speed[name] = texts_per_second(run, kind)
    speed["mpnet int8, code texts"] = texts_per_second(i8.embed, sample_docs)
    speed["mpnet int8, queries"] = texts_per_second(i8.embed, sample_queries)
    results["texts_per_second"] = speed
    print("speed (texts/s, batch 1, 2 threads): " + ", ".join(f"{k} {v:.1f}" for k, v in speed.items()), flush=True)

    # 3. pairs
    store = os.path.join(args.work, "vectors")
    os.makedirs(store, exist_ok=True)
    Dm = cached(store, "mpnet-int8-docs", docs, i8.embed)
    Qm = cached(store, "mpnet-int8-queries", queries, i8.embed)
    model_dir = os.path.join(home_models, CODE_MODEL)
    query_model = E.file_embedder("query-model", os.path.join(model_dir, "query-model.onnx"), model_dir)
    Ds, Qs = E.Embedder(CODE_MODEL).embed(docs, CODE_MODEL), query_model.embed(queries, "query-model")
    Dp, Qp = E.Embedder(PLAIN).embed(docs, PLAIN), E.Embedder(PLAIN).embed(queries, "plain")
    groups: dict[str, list[int]] = {}
    for j, r in enumerate(val):
        groups.setdefault(r["package"], []).append(j)
    groups_ = [np.array(g) for g in groups.values()]
    langs = [r["language"] for r in val]
    pairs = {"shipped pair": lambda g: Qs[g] @ Ds[g].T, "mpnet alone (zero-shot)": lambda g: Qm[g] @ Dm[g].T,
             "plain MiniLM alone": lambda g: Qp[g] @ Dp[g].T}
    for b in (float(x) for x in args.betas.split(",")):
        pairs[f"shipped + {b:g} x mpnet"] = lambda g, b=b: Qs[g] @ Ds[g].T + b * (Qm[g] @ Dm[g].T)
        pairs[f"shipped + {b:g} x plain (control)"] = lambda g, b=b: Qs[g] @ Ds[g].T + b * (Qp[g] @ Dp[g].T)
    results["pairs"] = {}
    print(f"pairs: {len(val)} validation queries of {len(groups)} packages, each against its package's code texts")
    for name, fn in pairs.items():
        m = rank_metrics(fn, groups_, langs)
        results["pairs"][name] = m
        print("  " + line(name, m), flush=True)

    # 4. candidates
    if args.candidates:
        results["candidates"] = candidates(args, i8, store)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)
            fh.write("\n")


def candidates(args, model: M.Onnx, store: str) -> dict:
    fusion = ff.shipped_scorer()
    sets = {}
    for spec in args.candidates:
        name, rest = spec.split("=", 1)
        dump, data, *split = rest.split(":")
        rows = [r for r in ff.load(dump) if not split or r.get("split") == split[0]]
        with open(os.path.join(data, "queries.jsonl"), encoding="utf-8") as fh:
            texts = {q["id"]: q["query"] for q in map(json.loads, fh)}
        items = ff.prepare(rows)
        corpora = ff.Corpora(data)
        wanted = []
        for it, r in zip(items, rows):
            it["query"] = texts[r["id"]]
            if it["X"] is None:
                continue
            it["fusion"] = fusion(it["X"])
            it["top"] = list(np.argsort(-it["fusion"], kind="stable")[:args.top])
            it["texts"] = [f"{it['spans'][i][0]}\n{corpora.text(it['package'], *it['spans'][i])}" for i in it["top"]]
            wanted += it["texts"]
        unique = sorted(set(wanted))
        vectors = dict(zip(unique, cached(store, f"mpnet-int8-{name}-chunks", unique, model.embed)))
        live = [it for it in items if it["X"] is not None]
        qv = dict(zip(sorted({it["query"] for it in live}),
                      cached(store, f"mpnet-int8-{name}-queries", sorted({it["query"] for it in live}), model.embed)))
        for it in live:
            it["cosine"] = np.array([float(qv[it["query"]] @ vectors[t]) for t in it["texts"]])
        sets[name] = items

    def scorer(alpha):
        def score_of(it):
            s = it["fusion"].copy()
            if alpha:
                s[it["top"]] = s[it["top"]] + alpha * it["cosine"] + 100.0
            return s
        return score_of

    def outcome(items, alpha):
        fn = scorer(alpha)
        by = {id(it["X"]): fn(it) for it in items if it["X"] is not None}
        return compare_dumps.outcomes(items, lambda X: by[id(X)])

    alphas = [float(a) for a in args.alphas.split(",")]
    first = next(iter(sets))
    choice = max(alphas, key=lambda a: (outcome(sets[first], a)[:, 1].mean(), -a))
    out = {"alpha_chosen_on": first, "alpha": choice}
    print(f"candidates: the shipped fusion's best {args.top} re-sorted by fusion + alpha x mpnet cosine; "
          f"alpha {choice:g} chosen on {first}'s chunk MRR@10")
    rng = np.random.default_rng(0)
    for name, items in sets.items():
        for a in alphas:
            o = outcome(items, a)
            print(f"  {name} ({len(o)}) alpha {a:g}: chunk R@5 {100 * o[:, 0].mean():.1f} / MRR@10 "
                  f"{o[:, 1].mean():.3f} / file R@1 {100 * o[:, 2].mean():.1f}", flush=True)
        diff = outcome(items, choice) - outcome(items, 0.0)
        out[name] = compare_dumps.paired(diff, 2000, rng)
        print(f"  {name}: alpha {choice:g} against the shipped ranking: {out[name]}", flush=True)
    return out


if __name__ == "__main__":
    main()
