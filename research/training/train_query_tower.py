#!/usr/bin/env python3
"""Fine-tune the MiniLM encoder on the QUERY side only, against frozen document vectors (issue 16).

Usage:  research/training/train_query_tower.sh [--lr X] [--max-minutes M] ...
        (its own venv ~/.cache/raggrep/tools/qtower-venv: jax[cpu], onnx, onnxruntime, tokenizers)

"Asymmetric" / query tower: documents keep today's int8 vectors (the ones raggrep's index
holds, embed.py's recipe, read from the vector cache), so no index is re-embedded; only a copy
of the encoder that embeds QUERIES is trained. Same architecture as the default model, so the
same query latency once exported (export_query_tower.py: fp32 graph with replaced
initializers, then the bootstrap's int8 quantisation).

Model:  all-MiniLM-L6-v2 in JAX (qtower.py), weights read from the fp32 ONNX graph of
        scripts/bootstrap.sh and checked against onnxruntime on that graph before training
        (min cosine must exceed 0.9999). Query vector = normalize(meanpool(encoder(query))).
        Word and position embeddings are frozen by default (--train-embeddings to train them).
Loss:   InfoNCE, temperature TAU. Batches of queries from ONE package at a time (as
        train_adapter.py); negatives = every training code vector of that package
        (--negatives pool, default: documents are frozen, so scoring a query against the whole
        package costs one small matrix product and is exactly the ranking the evaluation does)
        or only the batch's own code (--negatives batch, train_adapter.py's in-batch set-up).
Optim:  AdamW (decoupled weight decay on weight matrices only), linear warm-up, then constant.
Split:  train_adapter.split_packages (same seed => the same 13 validation packages). Early
        stopping on validation MRR@10 macro-averaged over languages with >= 50 validation
        queries (train_adapter.macro), evaluated every --eval-every steps.
Output: ~/.cache/raggrep/training/qtower/params.npz   trained encoder (all tensors, fp32)
        research/training/out/query_tower_train.json  hyper-parameters, packages, history,
                                                     validation numbers, times
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

FP32 = "all-minilm-l6-v2-fp32"
INT8 = "all-minilm-l6-v2-int8"
FROZEN_DEFAULT = ("embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                  "embeddings.token_type_embeddings.weight")


def qtower_dir() -> str:
    return os.path.join(E.training_dir(), "qtower")


def load_chunk_pool(packages: set[str], per_package: int, seed: int) -> list[dict]:
    """chunkpool.jsonl's chunks of `packages`, at most `per_package` each (a seeded sample, so a
    smaller number takes a subset of a larger one's draw order)."""
    path = os.path.join(E.training_dir(), "chunkpool.jsonl")
    if not os.path.exists(path):
        sys.exit(f"{path} missing: run research/training/build_chunk_pool.sh")
    by_pkg: dict[str, list[dict]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            c = json.loads(line)
            if c["package"] in packages:
                by_pkg.setdefault(c["package"], []).append(c)
    out = []
    for pk in sorted(by_pkg):
        chunks = by_pkg[pk]
        order = list(range(len(chunks)))
        random.Random(f"{seed}:{pk}").shuffle(order)
        out.extend(chunks[i] for i in sorted(order[:per_package]))
    return out


def check_forward(params, cfg, tok, model_dir: str, texts: list[str]) -> float:
    """Min cosine between this JAX forward (padded batch) and onnxruntime on the fp32 graph
    (batch 1, embed.py's recipe)."""
    import jax
    import jax.numpy as jnp
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so,
                                providers=["CPUExecutionProvider"])
    ref = []
    for t in texts:
        e = tok.encode(t)
        ids = np.array([e.ids], dtype=np.int64)
        m = np.array([e.attention_mask], dtype=np.int64)
        h = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": m,
                                             "token_type_ids": np.zeros_like(ids)})[0]
        v = (h * m[..., None]).sum(1)[0] / m.sum()
        ref.append(v / np.linalg.norm(v))
    ids, mask = T.pad_batch(tok.encode_batch(texts))
    pj = {k: jnp.asarray(v) for k, v in params.items()}
    got = np.asarray(jax.jit(lambda p, i, m: T.forward(p, i, m, cfg))(pj, ids, mask))
    return float((got * np.array(ref)).sum(1).min())


def train_loop(args, tp, make_batches, arrays, train_step, validate, base_val, rng, on_best=None):
    """The towers' training loop: AdamW state from zero, linear warm-up, the mean loss every 20
    steps, validation every --eval-every steps (and at the time/step budget and the last batch),
    early stopping on validation macro MRR@10 after --patience runs without gain. A non-finite
    loss ends the run without saving. `make_batches(rng)` gives one epoch's items,
    `arrays(item)` the train step's batch arguments, `on_best(best)` is called at every gain.
    Returns (best, history, steps run, why it stopped, training seconds)."""
    import jax.numpy as jnp

    m = {k: jnp.zeros_like(x) for k, x in tp.items()}
    v = {k: jnp.zeros_like(x) for k, x in tp.items()}
    step = jnp.asarray(0, dtype=jnp.int32)
    best = {"macro": macro(base_val), "step": 0, "params": {k: np.asarray(x) for k, x in tp.items()},
            "val": base_val}
    history = [{"step": 0, "epoch": 0.0, "loss": None, "val_MRR@10": base_val["all"]["MRR@10"],
                "val_R@5": base_val["all"]["R@5"], "val_macro_MRR@10": macro(base_val)}]
    t_train = time.time()
    n_step, stale, stop, losses = 0, 0, "", []
    for epoch in range(1, args.epochs + 1):
        batches = make_batches(rng)
        for bi, item in enumerate(batches):
            lr = args.lr * min(1.0, (n_step + 1) / max(args.warmup, 1))
            tp, m, v, step, loss = train_step(tp, m, v, step, lr, *arrays(item))
            n_step += 1
            losses.append(float(loss))
            if not np.isfinite(losses[-1]):
                sys.exit(f"loss is {losses[-1]} at step {n_step}; not saving")
            if n_step % 20 == 0:
                log(f"  step {n_step} (epoch {epoch}, {bi + 1}/{len(batches)})  loss {np.mean(losses[-20:]):.4f}"
                    f"  {(time.time() - t_train) / n_step:.2f}s/step")
            over = (time.time() - t_train) / 60 > args.max_minutes or n_step == args.max_steps
            if n_step % args.eval_every == 0 or over or (epoch == args.epochs and bi == len(batches) - 1):
                vres = validate(tp)
                vm = macro(vres)
                history.append({"step": n_step, "epoch": round(epoch - 1 + (bi + 1) / len(batches), 3),
                                "loss": float(np.mean(losses[-args.eval_every:])),
                                "val_MRR@10": vres["all"]["MRR@10"], "val_R@5": vres["all"]["R@5"],
                                "val_macro_MRR@10": vm, "minutes": round((time.time() - t_train) / 60, 1)})
                log(f"step {n_step} epoch {history[-1]['epoch']}  val {fmt(vres['all'])}  macro MRR@10 {vm:.4f}"
                    f"  ({(time.time() - t_train) / 60:.1f} min)")
                if vm > best["macro"]:
                    best = {"macro": vm, "step": n_step, "val": vres,
                            "params": {k: np.asarray(x) for k, x in tp.items()}}
                    stale = 0
                    if on_best:
                        on_best(best)
                else:
                    stale += 1
                if stale >= args.patience:
                    stop = f"early stop: no validation gain in {args.patience} evaluations"
                elif over:
                    stop = (f"--max-steps {args.max_steps} reached" if n_step == args.max_steps
                            else f"time budget of {args.max_minutes} min reached")
            if stop:
                break
        if stop:
            break
    t_train = time.time() - t_train
    log(stop or "all epochs done")
    return best, history, n_step, stop, t_train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--negatives", choices=["pool", "batch"], default="pool")
    ap.add_argument("--chunk-pool", type=int, default=0,
                    help="add up to N chunks a package from chunkpool.jsonl (build_chunk_pool.py: "
                         "the package's other code as raggrep chunks it) to its negatives, and "
                         "validate against them too (0: the pairs' code only)")
    ap.add_argument("--train-embeddings", action="store_true")
    ap.add_argument("--eval-every", type=int, default=100, help="steps between validation runs")
    ap.add_argument("--patience", type=int, default=4, help="validation runs without gain")
    ap.add_argument("--max-minutes", type=float, default=50.0, help="training wall-clock budget")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    ap.add_argument("--params-out", default="", help="params.npz path (default: training/qtower/params.npz)")
    ap.add_argument("--init", default="",
                    help="start from this trained tower: its params.npz, or an int8 export such as "
                         "out/query-model-int8.onnx (default: all-MiniLM-L6-v2)")
    ap.add_argument("--val-frac", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--split-seed", type=int, default=None,
                    help="seed of the train/validation package split (default: --seed); keep it "
                         "at 16 to vary only the training's own randomness against the shipped split")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--tag", default="query_tower")
    ap.add_argument("--documents", default=INT8,
                    help="the frozen document model (a directory under models/): all-minilm-l6-v2-int8 "
                         "(the first tower) or all-minilm-l6-v2-code2-int8 (the code model, what an "
                         "index holds since the document tower)")
    args = ap.parse_args()
    t_start = time.time()

    import jax
    import jax.numpy as jnp

    manifest, rows = load_pairs()
    log(f"{len(rows)} pairs from {len(manifest['packages'])} packages")

    # Frozen document side: the int8 vectors an index holds (--documents; cached by text), and
    # all-MiniLM-L6-v2's own int8 query vectors for the identity row.
    demb = E.Embedder(args.documents)
    log(f"embedding recipe check ({args.documents}): min cosine {demb.self_check():.5f} to "
        f"tests/data/reference_vectors.json")
    D = demb.embed([E.document_text(r["path"], r["symbol"], r["code"]) for r in rows], "code")
    # More negatives: each package's other chunks, rows len(rows).. of D.
    extras: dict[str, np.ndarray] | None = None
    if args.chunk_pool:
        pool_rows = load_chunk_pool({r["package"] for r in rows}, args.chunk_pool, args.seed)
        D = np.vstack([D, demb.embed([c["text"] for c in pool_rows], "chunk pool")])
        extras = group_by(pool_rows, list(range(len(pool_rows))), "package")
        extras = {p: v + len(rows) for p, v in extras.items()}
        log(f"chunk pool: {len(pool_rows)} chunks of {len(extras)} packages (at most {args.chunk_pool} each)")
    del demb
    emb = E.Embedder(INT8)
    Q8 = emb.embed([r["query"] for r in rows], "queries")
    del emb
    # The query model shipped today, against the same documents: the row a new tower must beat.
    from train_doc_tower import query_model_embedder  # noqa: E402 (it imports this module)
    QS = query_model_embedder().embed([r["query"] for r in rows], "queries (shipped query model)")

    fp32_dir = os.path.join(E.raggrep_home(), "models", FP32)
    params, names, cfg = T.load_params(os.path.join(fp32_dir, "model.onnx"))
    tok = T.tokenizer(fp32_dir)
    probe = [rows[i]["query"] for i in range(0, len(rows), 997)][:16] + \
        [E.document_text(rows[i]["path"], rows[i]["symbol"], rows[i]["code"]) for i in (0, 5000, 9000)]
    t0 = time.time()
    cos_check = check_forward(params, cfg, tok, fp32_dir, probe)
    log(f"JAX forward vs onnxruntime fp32 graph: min cosine {cos_check:.7f} over {len(probe)} texts "
        f"({time.time() - t0:.0f}s)")
    if cos_check <= 0.9999:
        sys.exit("JAX forward does not reproduce the fp32 ONNX graph; not training")
    frozen_names = set() if args.train_embeddings else set(FROZEN_DEFAULT)
    if args.init:
        # Continue from a trained tower instead of all-MiniLM-L6-v2: the forward check above
        # still ran on the base weights, whose graph the tower shares.
        params = T.start_params(args.init, params, names, keep=frozen_names)
        log(f"initialised from {args.init} ({len(params)} tensors)")

    split_seed = args.seed if args.split_seed is None else args.split_seed
    train_p, val_p = split_packages(manifest, args.val_frac, split_seed)
    train_idx = [i for i, r in enumerate(rows) if r["package"] in set(train_p)]
    val_idx = [i for i, r in enumerate(rows) if r["package"] in set(val_p)]
    log(f"train: {len(train_idx)} pairs / {len(train_p)} packages; validation: {len(val_idx)} "
        f"pairs / {len(val_p)} packages")

    encs = tok.encode_batch([r["query"] for r in rows])
    trainable = {k: jnp.asarray(v) for k, v in params.items() if k not in frozen_names}
    frozen = {k: jnp.asarray(v) for k, v in params.items() if k in frozen_names}
    decay = {k: (v.ndim == 2) for k, v in trainable.items()}
    n_train = sum(int(v.size) for v in trainable.values())
    log(f"trainable tensors {len(trainable)} ({n_train:,} values); frozen: {sorted(frozen_names)}")

    def encode(tp, ids, mask):
        return T.forward({**tp, **frozen}, ids, mask, cfg)

    fwd = jax.jit(encode)

    def embed_queries(tp, idx: list[int], bs: int = 128) -> np.ndarray:
        out = np.zeros((len(rows), E.DIM), dtype=np.float64)
        order = sorted(idx, key=lambda i: len(encs[i].ids))  # similar lengths together
        for s in range(0, len(order), bs):
            part = order[s:s + bs]
            ids, mask = T.pad_batch([encs[i] for i in part], rows=bs)
            out[part] = np.asarray(fwd(tp, ids, mask))[:len(part)]
        return out

    Dj = jnp.asarray(D)
    by_pkg = group_by(rows, train_idx, "package")
    none = np.zeros(0, dtype=int)
    pmax = max(len(v) + len((extras or {}).get(p, none)) for p, v in by_pkg.items())

    def loss_fn(tp, ids, mask, pool, pool_ok, gold, w):
        qv = encode(tp, ids, mask)  # [B, H]
        logits = (qv @ Dj[pool].T) / args.tau  # [B, P]
        logits = jnp.where(pool_ok[None, :], logits, -1e9)
        lse = jax.scipy.special.logsumexp(logits, axis=1)
        nll = lse - jnp.take_along_axis(logits, gold[:, None], axis=1)[:, 0]
        return (nll * w).sum() / jnp.maximum(w.sum(), 1.0)

    @jax.jit
    def train_step(tp, m, v, step, lr, ids, mask, pool, pool_ok, gold, w):
        loss, g = jax.value_and_grad(loss_fn)(tp, ids, mask, pool, pool_ok, gold, w)
        return (*T.adamw(tp, g, m, v, step, lr, decay, args.weight_decay), loss)

    def make_batches(rng: random.Random):
        """(query indices, pool doc indices, gold positions) per batch; one package per batch."""
        out = []
        for pk, g in sorted(by_pkg.items()):
            g = list(g)
            rng.shuffle(g)
            parts = [g[s:s + args.batch] for s in range(0, len(g), args.batch)]
            if len(parts) > 1 and len(parts[-1]) < args.batch // 4:
                parts[-2].extend(parts.pop())
            for part in parts:
                if len(part) < 8:
                    continue
                pool = list(by_pkg[pk]) if args.negatives == "pool" else list(part)
                if extras is not None and args.negatives == "pool":
                    pool += list(extras.get(pk, none))
                out.append((part, pool))
        rng.shuffle(out)
        return out

    def batch_arrays(part, pool):
        # fixed shapes: queries padded to the largest part size, pool padded to pmax / batch
        nb = args.batch + args.batch // 4
        ids, mask = T.pad_batch([encs[i] for i in part], rows=nb)
        w = np.zeros(nb, dtype=np.float32)
        w[:len(part)] = 1.0
        psize = pmax if args.negatives == "pool" else nb
        pool_arr = np.zeros(psize, dtype=np.int32)
        pool_arr[:len(pool)] = pool
        ok = np.zeros(psize, dtype=bool)
        ok[:len(pool)] = True
        pos = {d: j for j, d in enumerate(pool)}
        gold = np.zeros(nb, dtype=np.int32)
        gold[:len(part)] = [pos[i] for i in part]
        return ids, mask, pool_arr, ok, gold, w

    def validate(tp) -> dict:
        Qv = embed_queries(tp, val_idx)
        return evaluate(np.eye(E.DIM), Qv, D.astype(np.float64), rows, val_idx, extras)

    Q8_64, D64 = Q8.astype(np.float64), D.astype(np.float64)
    base_int8 = evaluate(np.eye(E.DIM), Q8_64, D64, rows, val_idx, extras)
    shipped = evaluate(np.eye(E.DIM), QS.astype(np.float64), D64, rows, val_idx, extras)
    t0 = time.time()
    base_val = validate(trainable)
    t_val = time.time() - t0
    log(f"identity (int8 queries, what raggrep runs) val {fmt(base_int8['all'])} macro {macro(base_int8):.3f}")
    start = "--init tower (fp32 JAX queries)    " if args.init else "identity (fp32 JAX queries)        "
    log(f"{start}        val {fmt(base_val['all'])} macro {macro(base_val):.3f} "
        f"({t_val:.0f}s)")
    log(f"shipped query model (int8)                 val {fmt(shipped['all'])} macro {macro(shipped):.3f}")

    np.random.seed(args.seed)
    rng = random.Random(args.seed)
    best, history, n_step, stop, t_train = train_loop(
        args, trainable, make_batches, lambda item: batch_arrays(*item), train_step, validate, base_val, rng)
    final = best["val"]
    log(f"best step {best['step']}: val {fmt(final['all'])} macro {best['macro']:.4f}")
    for lang in sorted(k for k in final if k != "all"):
        log(f"  {lang:11s} int8 identity {fmt(base_int8[lang])}\n  {'':11s} fp32 tower    {fmt(final[lang])}")

    os.makedirs(qtower_dir(), exist_ok=True)
    full = {k: np.asarray(x, dtype=np.float32) for k, x in params.items()}
    full.update({k: np.asarray(x, dtype=np.float32) for k, x in best["params"].items()})
    npz = args.params_out or os.path.join(qtower_dir(), "params.npz")
    np.savez(npz, **full)
    pk = {f"{p['name']}-{p['version']}": p for p in manifest["packages"]}
    info = {
        "what": "query tower: all-MiniLM-L6-v2 fine-tuned on the query side against frozen int8 "
                "document vectors; params.npz (fp32) -> export_query_tower.py",
        "params_npz": npz, "params_sha256": T.params_sha256(full),
        "base_model": FP32, "init": args.init or None, "document_vectors": args.documents,
        "jax": jax.__version__, "forward_check_min_cosine_vs_onnxruntime_fp32": cos_check,
        "seed": args.seed, "split_seed": split_seed,
        "hyperparameters": {k: getattr(args, k) for k in (
            "epochs", "batch", "lr", "warmup", "weight_decay", "tau", "negatives", "chunk_pool",
            "train_embeddings",
            "eval_every", "patience", "max_minutes", "val_frac")},
        "frozen": sorted(frozen_names), "trainable_values": n_train,
        "best_step": best["step"], "steps_run": n_step, "stop": stop or "all epochs done",
        "early_stopping": "validation MRR@10 macro over languages with >= 50 validation queries",
        "validation_macro_MRR@10": {"identity_int8": macro(base_int8), "identity_fp32": macro(base_val),
                                    "shipped_query_model_int8": macro(shipped), "tower_fp32": best["macro"]},
        "train_packages": [{"package": p, "language": pk[p]["language"], "sha256": pk[p]["sha256"]}
                           for p in train_p],
        "validation_packages": [{"package": p, "language": pk[p]["language"], "sha256": pk[p]["sha256"]}
                                for p in val_p],
        "pairs": {"train": len(train_idx), "validation": len(val_idx)},
        "validation": {"note": "each validation query against every validation code text of its own "
                               "package (with --chunk-pool, and that package's pool chunks); dense "
                               "only, function level; tower row = fp32 JAX queries "
                               "(the exported int8 model is checked by export_query_tower.py)",
                       "identity_int8": base_int8, "identity_fp32": base_val,
                       "shipped_query_model_int8": shipped, "tower_fp32": final},
        "history": history,
        "seconds": {"train": round(t_train, 1), "total": round(time.time() - t_start, 1)},
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.tag}_train.json"), "w") as fh:
        json.dump(info, fh, indent=2)
        fh.write("\n")
    log(f"wrote {npz} and {args.out}/{args.tag}_train.json; train {t_train / 60:.1f} min, "
        f"total {(time.time() - t_start) / 60:.1f} min")


if __name__ == "__main__":
    main()
