#!/usr/bin/env python3
"""Fine-tune the MiniLM encoder on the DOCUMENT side, against the frozen query model (issue 16).

Usage:  research/training/train_doc_tower.sh [--lr X] [--max-minutes M] ...
        (the query tower's venv ~/.cache/raggrep/tools/qtower-venv)

Why: once the right file is found, the default model cannot tell a short method from its
siblings (BENCHMARKS.md, "More candidates from the best files": clap's `Arg::num_args` ranks
171st by cosine among its file's chunks). The query tower moved only the query side; this moves
the code side, so it needs every index re-embedded if shipped (same architecture, same cost).

Model:  all-MiniLM-L6-v2 in JAX (qtower.py) from the default fp32 graph; document vector =
        normalize(meanpool(encoder("<path> <symbol>\\n<code>"))) as chunk::embedding_text.
        Queries are the SHIPPED query model's int8 vectors (out/query-model-int8.onnx, as
        installed by the bootstrap), frozen: the engine pairs that model with the new documents.
Loss:   InfoNCE, temperature TAU, queries against the batch's documents. A batch holds --batch
        queries of ONE package, their documented functions, and for each one function of the
        same file (the sibling the model confuses; one of the same package when the file has
        no other). Training texts are cut at --train-len tokens (cost); validation embeds at
        256, as the engine does. With --chunk-pool, each step also holds --pool-negatives of
        its package's other chunks (build_chunk_pool.py: undocumented functions, tests, module
        code, pieces of long functions), embedded by the model in training, so the code side
        learns what the query side's pool run learned: an index holds more than documented
        functions.
Split:  train_adapter.split_packages (same seed => the same 13 validation packages as every
        learned part). Early stopping on validation MRR@10 macro over languages with >= 50
        validation queries, each query against every validation code text of its package,
        with the new document vectors (all re-embedded at every validation). With
        --chunk-pool, up to --val-pool of each validation package's pool chunks join its
        candidates as they would in an index, and early stopping reads that number (the
        function-level one is logged beside it).
Output: ~/.cache/raggrep/training/doctower/params.npz   trained encoder (fp32)
        research/training/out/doc_tower_train.json         hyper-parameters, history, numbers
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
import qtower as T  # noqa: E402
from train_adapter import evaluate, fmt, group_by, load_pairs, log, macro, split_packages  # noqa: E402
from train_query_tower import FROZEN_DEFAULT, check_forward, load_chunk_pool, train_loop  # noqa: E402

FP32 = "all-minilm-l6-v2-fp32"
INT8 = "all-minilm-l6-v2-int8"
QUERY_CACHE = "all-minilm-l6-v2-query-int8"


def doctower_dir() -> str:
    return os.path.join(E.training_dir(), "doctower")


def query_model_embedder() -> E.Embedder:
    """embed.py's recipe with the query model the bootstrap installs beside the default one."""
    installed = os.path.join(E.raggrep_home(), "models", INT8)
    onnx_path = os.path.join(installed, "query-model.onnx")
    if not os.path.exists(onnx_path):
        sys.exit(f"{onnx_path} missing: run scripts/bootstrap.sh")
    return E.file_embedder(QUERY_CACHE, onnx_path, installed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16,
                    help="queries a step (documents: (1 + --siblings) times that)")
    ap.add_argument("--siblings", type=int, default=1,
                    help="negatives a query brings: functions of its file (of its package when the "
                         "file has too few); 1 = the shipped run")
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--train-len", type=int, default=128, help="tokens of a training document")
    ap.add_argument("--eval-every", type=int, default=150, help="steps between validation runs")
    ap.add_argument("--patience", type=int, default=3, help="validation runs without gain")
    ap.add_argument("--max-minutes", type=float, default=60.0, help="training wall-clock budget")
    ap.add_argument("--max-steps", type=int, default=300,
                    help="stop after this many steps (0: no limit); 300 = both code models' runs")
    ap.add_argument("--init", default="",
                    help="start from this trained code model: an int8 export such as "
                         "out/code-model-int8.onnx (the first code model, which the shipped one "
                         "continued), or a params.npz (default: all-MiniLM-L6-v2)")
    ap.add_argument("--chunk-pool", type=int, default=0,
                    help="draw up to N chunks a package from chunkpool.jsonl (build_chunk_pool.sh) "
                         "as negatives; 0 = the first code model's run (documented functions only), 500 = "
                         "the shipped one's (README, step 13)")
    ap.add_argument("--pool-negatives", type=int, default=16,
                    help="with --chunk-pool: pool chunks of the step's package a step")
    ap.add_argument("--val-pool", type=int, default=150,
                    help="with --chunk-pool: pool chunks a validation package adds to its candidates")
    ap.add_argument("--baseline", default=INT8,
                    help="installed int8 document model of the baseline row (a directory under "
                         "models/), e.g. all-minilm-l6-v2-code2-int8 when continuing the shipped code model; "
                         "'' skips it (with --init, step 0 is that model read back in fp32)")
    ap.add_argument("--val-frac", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--tag", default="doc_tower")
    args = ap.parse_args()
    t_start = time.time()

    import jax
    import jax.numpy as jnp

    manifest, rows = load_pairs()
    log(f"{len(rows)} pairs from {len(manifest['packages'])} packages")
    texts = [E.document_text(r["path"], r["symbol"], r["code"]) for r in rows]

    qemb = query_model_embedder()
    Q = qemb.embed([r["query"] for r in rows], "queries (query model)").astype(np.float64)
    del qemb

    fp32_dir = os.path.join(E.raggrep_home(), "models", FP32)
    params, names, cfg = T.load_params(os.path.join(fp32_dir, "model.onnx"))
    tok = T.tokenizer(fp32_dir)
    probe = [texts[i] for i in range(0, len(rows), 997)][:19]
    cos_check = check_forward(params, cfg, tok, fp32_dir, probe)
    log(f"JAX forward vs onnxruntime fp32 graph: min cosine {cos_check:.7f} over {len(probe)} texts")
    if cos_check <= 0.9999:
        sys.exit("JAX forward does not reproduce the fp32 ONNX graph; not training")
    if args.init:
        # Continue from a trained code model (the shipped one's fp32 params are not kept, its
        # int8 export is read back); the frozen embeddings stay exactly the base model's.
        params = T.start_params(args.init, params, names, keep=FROZEN_DEFAULT)
        log(f"initialised from {args.init} (embeddings from the base model)")

    train_p, val_p = split_packages(manifest, args.val_frac, args.seed)
    train_idx = [i for i, r in enumerate(rows) if r["package"] in set(train_p)]
    val_idx = [i for i, r in enumerate(rows) if r["package"] in set(val_p)]
    log(f"train: {len(train_idx)} pairs / {len(train_p)} packages; validation: {len(val_idx)} "
        f"pairs / {len(val_p)} packages")

    def appended(chunks: list[dict]) -> dict[str, np.ndarray]:
        """Pool chunks as more rows of `texts`: their row indices by package."""
        start = len(texts)
        texts.extend(c["text"] for c in chunks)
        return {p: v + start for p, v in group_by(chunks, list(range(len(chunks))), "package").items()}

    # A training package draws its negatives from `pool_train`, a validation package adds
    # `pool_val` to its candidates.
    pool_train: dict[str, np.ndarray] = {}
    pool_val: dict[str, np.ndarray] | None = None
    if args.chunk_pool:
        pool_rows = load_chunk_pool(set(train_p), args.chunk_pool, args.seed)
        val_rows = load_chunk_pool(set(val_p), args.val_pool, args.seed)
        pool_train = appended(pool_rows)
        pool_val = appended(val_rows)
        log(f"chunk pool: {len(pool_rows)} training chunks (at most {args.chunk_pool} a package), "
            f"{len(val_rows)} validation chunks (at most {args.val_pool})")
    pool_val_idx = [i for v in (pool_val or {}).values() for i in v]

    # The baseline row: what an index holds, documents by an installed int8 model.
    D8 = None
    if args.baseline:
        emb = E.Embedder(args.baseline)
        if args.baseline == INT8:
            log(f"embedding recipe check: min cosine {emb.self_check():.5f} to tests/data/reference_vectors.json")
        baseline_idx = list(range(len(rows))) + pool_val_idx
        D8 = np.zeros((len(texts), E.DIM), dtype=np.float64)
        D8[baseline_idx] = emb.embed([texts[i] for i in baseline_idx], "code")
        del emb

    full_encs = tok.encode_batch(texts)
    short_tok = T.tokenizer(fp32_dir)
    short_tok.enable_truncation(args.train_len)
    train_encs = short_tok.encode_batch(texts)

    frozen_names = set(FROZEN_DEFAULT)
    trainable = {k: jnp.asarray(v) for k, v in params.items() if k not in frozen_names}
    frozen = {k: jnp.asarray(v) for k, v in params.items() if k in frozen_names}
    decay = {k: (v.ndim == 2) for k, v in trainable.items()}
    log(f"trainable values {sum(int(v.size) for v in trainable.values()):,}; frozen: {sorted(frozen_names)}")

    def encode(tp, ids, mask):
        return T.forward({**tp, **frozen}, ids, mask, cfg)

    fwd = jax.jit(encode)

    def embed_docs(tp, idx: list[int], bs: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), E.DIM), dtype=np.float64)
        order = sorted(idx, key=lambda i: len(full_encs[i].ids))
        for s in range(0, len(order), bs):
            part = order[s:s + bs]
            ids, mask = T.pad_batch([full_encs[i] for i in part], rows=bs)
            out[part] = np.asarray(fwd(tp, ids, mask))[:len(part)]
        return out

    def score(D: np.ndarray, label: str) -> dict:
        """Validation numbers of documents D: among the pool chunks too with --chunk-pool (the
        function-level numbers are then logged)."""
        functions = evaluate(np.eye(E.DIM), Q, D, rows, val_idx)
        if pool_val is None:
            return functions
        log(f"{label}function level (no pool chunks): val {fmt(functions['all'])} macro {macro(functions):.4f}")
        return evaluate(np.eye(E.DIM), Q, D, rows, val_idx, extras=pool_val)

    def validate(tp) -> dict:
        return score(embed_docs(tp, val_idx + pool_val_idx), "    ")

    n_pool = args.pool_negatives if args.chunk_pool else 0
    nd = (1 + args.siblings) * args.batch + n_pool
    Qj = jnp.asarray(Q.astype(np.float32))

    def loss_fn(tp, ids, mask, doc_ok, qrows, gold, w):
        dv = encode(tp, ids, mask)  # [nd, H]
        logits = (Qj[qrows] @ dv.T) / args.tau  # [B, nd]
        logits = jnp.where(doc_ok[None, :], logits, -1e9)
        lse = jax.scipy.special.logsumexp(logits, axis=1)
        nll = lse - jnp.take_along_axis(logits, gold[:, None], axis=1)[:, 0]
        return (nll * w).sum() / jnp.maximum(w.sum(), 1.0)

    @jax.jit
    def train_step(tp, m, v, step, lr, ids, mask, doc_ok, qrows, gold, w):
        loss, g = jax.value_and_grad(loss_fn)(tp, ids, mask, doc_ok, qrows, gold, w)
        return (*T.adamw(tp, g, m, v, step, lr, decay, args.weight_decay), loss)

    by_pkg = group_by(rows, train_idx, "package")
    by_file: dict[tuple[str, str], list[int]] = {}
    for i in train_idx:
        by_file.setdefault((rows[i]["package"], rows[i]["path"]), []).append(i)

    def make_batches(rng: random.Random):
        """(query rows, document rows) per step; one package per step."""
        out = []
        for pk, g in sorted(by_pkg.items()):
            g = list(g)
            rng.shuffle(g)
            for s in range(0, len(g), args.batch):
                part = g[s:s + args.batch]
                if len(part) < 4:
                    continue
                docs = list(dict.fromkeys(part))
                for i in part:
                    for _ in range(args.siblings):
                        sib = [j for j in by_file[(pk, rows[i]["path"])] if j not in docs]
                        pool = sib or [j for j in g if j not in docs]
                        if pool:
                            docs.append(rng.choice(pool))
                docs = docs[:nd - n_pool]
                extra = pool_train[pk].tolist() if pk in pool_train else []
                docs += rng.sample(extra, min(n_pool, len(extra)))
                out.append((part, docs))
        rng.shuffle(out)
        return out

    def batch_arrays(part, docs):
        ids, mask = T.pad_batch([train_encs[i] for i in docs], rows=nd, max_len=args.train_len)
        ok = np.zeros(nd, dtype=bool)
        ok[:len(docs)] = True
        qrows = np.zeros(args.batch, dtype=np.int32)
        qrows[:len(part)] = part
        gold = np.zeros(args.batch, dtype=np.int32)
        gold[:len(part)] = [docs.index(i) for i in part]
        w = np.zeros(args.batch, dtype=np.float32)
        w[:len(part)] = 1.0
        return ids, mask, ok, qrows, gold, w

    base_int8 = None
    if D8 is not None:
        base_int8 = score(D8, f"{args.baseline} documents, ")
    t0 = time.time()
    base_val = validate(trainable)
    if base_int8 is not None:
        log(f"{args.baseline} documents (what an index holds) val {fmt(base_int8['all'])} "
            f"macro {macro(base_int8):.4f}")
    start = "--init fp32 JAX documents     " if args.init else "default fp32 JAX documents    "
    log(f"{start}                val {fmt(base_val['all'])} macro {macro(base_val):.4f} "
        f"({time.time() - t0:.0f}s)")

    best, history, n_step, stop, t_train = train_loop(
        args, trainable, make_batches, lambda item: batch_arrays(*item), train_step, validate, base_val,
        random.Random(args.seed), on_best=lambda best: save(params, best, args))
    final = best["val"]
    log(f"best step {best['step']}: val {fmt(final['all'])} macro {best['macro']:.4f}")
    for lang in sorted(k for k in final if k != "all"):
        start_row = base_int8[lang] if base_int8 is not None else base_val[lang]
        log(f"  {lang:11s} start        {fmt(start_row)}\n  {'':11s} doc tower    {fmt(final[lang])}")

    npz, digest = save(params, best, args)
    pk = {f"{p['name']}-{p['version']}": p for p in manifest["packages"]}
    info = {
        "what": "document tower: all-MiniLM-L6-v2 fine-tuned on the document side against the "
                "frozen int8 query model; params.npz (fp32) -> export_doc_tower.py",
        "params_npz": npz, "params_sha256": digest,
        "base_model": FP32, "init": args.init or None, "query_vectors": "query-model.onnx (int8, embed.py's recipe)",
        "jax": jax.__version__, "forward_check_min_cosine_vs_onnxruntime_fp32": cos_check,
        "seed": args.seed,
        "hyperparameters": {k: getattr(args, k) for k in (
            "epochs", "batch", "siblings", "chunk_pool", "pool_negatives", "val_pool", "lr", "warmup", "weight_decay", "tau", "train_len", "eval_every",
            "patience", "max_minutes", "val_frac")},
        "frozen": sorted(frozen_names),
        "best_step": best["step"], "steps_run": n_step, "stop": stop or "all epochs done",
        "early_stopping": "validation MRR@10 macro over languages with >= 50 validation queries",
        "baseline": args.baseline or None,
        "validation_macro_MRR@10": {"default_int8": macro(base_int8) if base_int8 else None,
                                    "default_fp32": macro(base_val),
                                    "doc_tower_fp32": best["macro"]},
        "train_packages": [{"package": p, "language": pk[p]["language"], "sha256": pk[p]["sha256"]}
                           for p in train_p],
        "validation_packages": [{"package": p, "language": pk[p]["language"], "sha256": pk[p]["sha256"]}
                                for p in val_p],
        "pairs": {"train": len(train_idx), "validation": len(val_idx)},
        "validation": {"note": "query-model int8 vectors against every validation code text of "
                               "the query's package (and its --val-pool chunks with --chunk-pool); "
                               "dense only",
                       "default_int8": base_int8, "default_fp32": base_val, "doc_tower_fp32": final},
        "history": history,
        "seconds": {"train": round(t_train, 1), "total": round(time.time() - t_start, 1)},
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.tag}_train.json"), "w") as fh:
        json.dump(info, fh, indent=2)
        fh.write("\n")
    log(f"wrote {npz} and {args.out}/{args.tag}_train.json; train {t_train / 60:.1f} min, "
        f"total {(time.time() - t_start) / 60:.1f} min")


def save(params: dict, best: dict, args) -> tuple[str, str]:
    """The best parameters so far (written at every gain, so a killed run keeps them)."""
    os.makedirs(doctower_dir(), exist_ok=True)
    full = {k: np.asarray(x, dtype=np.float32) for k, x in params.items()}
    full.update({k: np.asarray(x, dtype=np.float32) for k, x in best["params"].items()})
    npz = os.path.join(doctower_dir(), f"{args.tag}-params.npz")
    tmp = npz + ".tmp.npz"
    np.savez(tmp, **full)
    os.replace(tmp, npz)
    return npz, T.params_sha256(full)


if __name__ == "__main__":
    main()
