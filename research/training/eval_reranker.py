#!/usr/bin/env python3
"""Rerank the engine's top candidates with the cross-encoder of train_reranker.py (issue 16).

Usage:  eval_reranker.py --dump FEATURES.jsonl --data RETRIEVAL_DIR [--split validation]
                         [--top 10] [--params PATH] [--cache PATH]

Reads a `cargo bench --bench retrieval -- --dump-features` file (the engine's fused candidates
with their 13 features, per query), scores each query's candidates with the shipped learned
fusion (server/src/search/learned_fusion.json), runs the cross-encoder on the best --top, and
reports chunk R@5 / MRR@10 / file R@1 with fit_fusion.py's engine-equivalent evaluator for
final score = fusion + alpha * cross-encoder over the top (others keep their order below).
Cross-encoder scores are cached per (query id, span) so alpha grids cost nothing.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as E  # noqa: E402
import fit_fusion as ff  # noqa: E402
import qtower as T  # noqa: E402
from train_reranker import FP32, code_text, pair_tokenizer, score_fn  # noqa: E402


def key(item: dict, i: int) -> str:
    """Cache key of a query's candidate i: query id and span."""
    path, start, end = item["spans"][i]
    return f"{item['id']}|{path}|{start}|{end}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--data", required=True, help="retrieval dataset dir (queries.jsonl, packages/)")
    ap.add_argument("--split", default="", help="only rows of this split (fusion dataset)")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--len", type=int, default=128)
    ap.add_argument("--params", default=os.path.join(E.training_dir(), "reranker", "params.npz"))
    ap.add_argument("--cache", default="")
    ap.add_argument("--onnx", default="", help="score with this exported int8 model dir (onnxruntime, "
                    "one pair per run as the engine would) instead of the JAX params")
    ap.add_argument("--installed", default="", metavar="MODEL",
                    help="score with the reranker the bootstrap installed beside MODEL (e.g. "
                         "all-minilm-l6-v2-code2-int8: rerank-model.onnx, its head in rerank-model.json), "
                         "as --onnx does; needs no JAX")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    ap.add_argument("--onnx-batch", action="store_true", help="with --onnx: a query's pairs in one "
                    "padded run instead of one run each (measured no faster here; int8 activations are "
                    "quantised per tensor, so scores move slightly)")
    ap.add_argument("--alphas", default="0,0.25,0.5,1,2,4,1000")
    args = ap.parse_args()

    fusion_score = ff.shipped_scorer()
    rows = [r for r in ff.load(args.dump) if not args.split or r.get("split") == args.split]
    queries = {}
    with open(os.path.join(args.data, "queries.jsonl")) as fh:
        for line in fh:
            q = json.loads(line)
            queries[q["id"]] = q["query"]
    items = ff.prepare(rows)
    for it, r in zip(items, rows):
        it["id"] = r["id"]

    cache = {}
    if args.cache and os.path.exists(args.cache):
        cache = json.load(open(args.cache))
    fp32_dir = os.path.join(E.raggrep_home(), "models", FP32)
    if args.onnx and args.installed:
        raise SystemExit("eval_reranker: --onnx or --installed, not both")
    use_onnx = bool(args.onnx or args.installed)
    if use_onnx:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        so.log_severity_level = 3
        if args.installed:
            model_dir = os.path.join(E.raggrep_home(), "models", args.installed)
            graph = os.path.join(model_dir, "rerank-model.onnx")
            with open(os.path.join(model_dir, "rerank-model.json")) as fh:
                head = json.load(fh)["head"]
        else:
            graph = os.path.join(args.onnx, "model.onnx")
            with open(os.path.join(args.onnx, "head.json")) as fh:
                head = json.load(fh)
        sess = ort.InferenceSession(graph, so, providers=["CPUExecutionProvider"])
        hw, hb = np.array(head["w"], dtype=np.float32), float(head["b"])

        def run_batch(encs):
            ids, mask = (a.astype(np.int64) for a in T.pad_batch(encs, multiple=1, max_len=args.len))
            h = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                 "token_type_ids": np.zeros_like(ids)})[0]
            v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            return [float(x) for x in (v @ hw) / np.maximum(np.linalg.norm(v, axis=1), 1e-12) + hb]

        def run(encs):
            return run_batch(encs) if args.onnx_batch else [run_batch([e])[0] for e in encs]
    else:
        import jax
        import jax.numpy as jnp

        params, _n, cfg = T.load_params(os.path.join(fp32_dir, "model.onnx"))
        params.update(dict(np.load(args.params)))
        pj = {k: jnp.asarray(v) for k, v in params.items()}
        score = jax.jit(score_fn(cfg))

        def run(encs):
            ids, mask = T.pad_batch(encs, multiple=32, max_len=args.len)
            return [float(x) for x in np.asarray(score(pj, ids, mask))]
    tok = pair_tokenizer(fp32_dir, args.len)
    corpora = ff.Corpora(args.data)

    def chunk(pkg, path, a, b):
        return code_text(path, corpora.text(pkg, path, a, b))

    todo = []
    for it in items:
        if it["X"] is None:
            continue
        f = fusion_score(it["X"])
        it["fusion"] = f
        it["top"] = list(np.argsort(-f, kind="stable")[:args.top])
        for i in it["top"]:
            k = key(it, i)
            if k not in cache:
                todo.append((k, queries[it["id"]], chunk(it["package"], *it["spans"][i])))
    t0 = time.time()
    per_query: dict[str, list] = {}
    for k, q, d in todo:
        per_query.setdefault(k.split("|")[0], []).append((k, q, d))
    lat = []
    for n, part in enumerate(per_query.values()):
        t = time.perf_counter()
        for (k, _q, _d), v in zip(part, run([tok.encode(q, d) for _k, q, d in part])):
            cache[k] = v
        lat.append(time.perf_counter() - t)
        if n % 50 == 0:
            print(f"  {n + 1}/{len(per_query)} queries, {time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    if lat:
        print(f"reranking one query's top {args.top} ({'onnx int8, %d thread(s), %s' % (args.threads, 'one batch' if args.onnx_batch else 'one pair a run') if use_onnx else 'JAX fp32, one batch'}): "
              f"p50 {np.percentile(lat, 50) * 1e3:.0f} ms, p95 {np.percentile(lat, 95) * 1e3:.0f} ms over {len(lat)} queries")
    if args.cache:
        with open(args.cache + ".tmp", "w") as fh:
            json.dump(cache, fh)
        os.replace(args.cache + ".tmp", args.cache)

    def scorer(alpha):
        def fn_for(it):
            s = it["fusion"].copy()
            ce = np.array([cache[key(it, i)] for i in it["top"]])
            # the best --top stay above the rest; alpha >= 1000 means the reranker alone
            top = s[it["top"]]
            s[it["top"]] = (ce if alpha >= 1000 else top + alpha * ce) + 100.0
            return s
        return fn_for

    langs = ["all"] + sorted({it["language"] for it in items})
    for a in [float(x) for x in args.alphas.split(",")]:
        fn = scorer(a)
        cells = []
        for lang in langs:
            sub = [it for it in items if lang == "all" or it["language"] == lang]
            by = {id(it["X"]): fn(it) for it in sub if it["X"] is not None}
            m = ff.metrics(ff.ranks(sub, lambda X: by[id(X)]))
            cells.append(f"{lang[:4]} {m['chunk_R@5']:.3f}/{m['chunk_MRR@10']:.3f}/{m['file_R@1']:.3f}")
        print(f"alpha {a:g}: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
