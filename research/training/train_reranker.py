#!/usr/bin/env python3
"""Train a cross-encoder reranker for the top candidates (issue 16 experiment).

Usage:  research/training/train_reranker.sh [--max-minutes M] [--len L] ...
        (the query tower's venv: jax[cpu], onnx, onnxruntime, tokenizers)

Why: once the right file is found, the bi-encoder cannot tell a 4-line method from its 200
siblings (BENCHMARKS.md, "More candidates from the best files"). A cross-encoder reads the
query and the code together.

Model:  all-MiniLM-L6-v2 (qtower.py's JAX encoder, weights from the fp32 ONNX graph) reading
        "[CLS] query [SEP] path \\n code [SEP]" (token_type_ids 0, as raggrep feeds), truncated
        to --len tokens; score = w . normalize(meanpool(h)) + b. Same architecture as the
        default model, so the engine can run it with the same ONNX graph and a 385-float head.
Data:   pairs.jsonl of the TRAIN packages only (train_adapter.split_packages, the same 13
        validation packages as every other learned part). Per query one group: the documented
        function (positive), --siblings functions of the same file, --randoms of the same
        package and --hard of the same package that the shipped bi-encoder ranks highest for the
        query (installed query model against the default model's int8 vectors: the kind of
        candidate the engine hands the reranker) as negatives.
Loss:   softmax cross-entropy over each group. AdamW, encoder lr --lr, head lr --head-lr.
Output: ~/.cache/raggrep/training/reranker/params.npz (encoder + head),
        research/training/out/reranker_train.json (hyper-parameters, packages, history, times);
        with --tag T: reranker/T-params.npz and out/T_train.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")

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
from train_adapter import group_by, load_pairs, log, split_packages  # noqa: E402

FP32 = "all-minilm-l6-v2-fp32"


def pair_tokenizer(model_dir: str, max_len: int):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.enable_truncation(max_len, strategy="only_second")
    tok.no_padding()
    return tok


def code_text(path: str, code: str) -> str:
    return f"{path}\n{code}"


def score_fn(cfg):
    def score(p, ids, mask):
        u = T.forward(p, ids, mask, cfg)
        return u @ p["rerank.w"] + p["rerank.b"][0]

    return score


def dense_neighbours(rows, packages, k: int) -> dict[int, list[int]]:
    """Per query row of `packages`: the `k` other rows of its package whose code the shipped
    bi-encoder ranks highest for the query (default model's int8 vectors, installed query model)."""
    if k <= 0:
        return {}
    from train_doc_tower import query_model_embedder

    keep = [i for i, r in enumerate(rows) if r["package"] in packages]
    # The document tower's export id is the default model's (the shipped code model).
    docs = E.Embedder(T.TOWERS["document"].int8_id).embed(
        [E.document_text(rows[i]["path"], rows[i]["symbol"], rows[i]["code"]) for i in keep], "code")
    queries = query_model_embedder().embed([rows[i]["query"] for i in keep], "queries (query model)")
    at = {i: n for n, i in enumerate(keep)}
    out = {}
    for idx in group_by(rows, keep, "package").values():
        pos = [at[i] for i in idx]
        sims = queries[pos] @ docs[pos].T
        np.fill_diagonal(sims, -np.inf)
        for n, i in enumerate(idx):
            best = np.argsort(-sims[n], kind="stable")[:k]
            out[int(i)] = [int(idx[b]) for b in best if np.isfinite(sims[n, b])]
    return out


def make_groups(rows, packages, siblings: int, randoms: int, rng: random.Random,
                hard: dict[int, list[int]] | None = None):
    hard = hard or {}
    by_pkg: dict[str, list[int]] = {}
    by_file: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        if r["package"] in packages:
            by_pkg.setdefault(r["package"], []).append(i)
            by_file.setdefault((r["package"], r["path"]), []).append(i)
    groups = []
    for pkg, idx in sorted(by_pkg.items()):
        for i in idx:
            r = rows[i]
            closest = hard.get(i, [])
            neg = list(closest)
            sib = [j for j in by_file[(pkg, r["path"])] if j != i and j not in neg]
            rng.shuffle(sib)
            neg += sib[:siblings]
            pool = [j for j in idx if j != i and j not in neg]
            want = len(closest) + siblings + randoms
            neg += rng.sample(pool, min(len(pool), want - len(neg)))
            if neg:
                groups.append((i, neg))
    return groups


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--len", type=int, default=128, help="tokens per (query, code) pair (the engine reads 128: rerank-model.json)")
    ap.add_argument("--batch", type=int, default=8, help="groups per step")
    ap.add_argument("--siblings", type=int, default=1)
    ap.add_argument("--randoms", type=int, default=1)
    ap.add_argument("--hard", type=int, default=0,
                    help="negatives the shipped bi-encoder ranks highest in the package (0: the shipped run)")
    ap.add_argument("--tag", default="reranker",
                    help="names the record out/<tag>_train.json and, unless 'reranker', <tag>-params.npz")
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--head-lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--max-minutes", type=float, default=50.0)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--save-every", type=int, default=200, help="steps between checkpoints")
    ap.add_argument("--init", default="", help="params.npz to continue from (Adam state restarts)")
    ap.add_argument("--order-seed", type=int, default=-1, help="seed of the negatives and the group order (default: --seed)")
    ap.add_argument("--val-frac", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    args = ap.parse_args()
    t_start = time.time()

    import jax
    import jax.numpy as jnp

    tdir = E.training_dir()
    manifest, rows = load_pairs()
    train_pk, val_pk = split_packages(manifest, args.val_frac, args.seed)
    rng = random.Random(args.seed if args.order_seed < 0 else args.order_seed)
    hard = dense_neighbours(rows, set(train_pk), args.hard)
    groups = make_groups(rows, set(train_pk), args.siblings, args.randoms, rng, hard)
    rng.shuffle(groups)
    log(f"{len(groups)} training groups from {len(train_pk)} packages ({len(val_pk)} held out)")

    fp32_dir = os.path.join(E.raggrep_home(), "models", FP32)
    params, _names, cfg = T.load_params(os.path.join(fp32_dir, "model.onnx"))
    tok = pair_tokenizer(fp32_dir, args.len)
    params["rerank.w"] = np.zeros(cfg["hidden"], dtype=np.float32)
    params["rerank.b"] = np.zeros(1, dtype=np.float32)
    if args.init:
        params.update(dict(np.load(args.init)))
    frozen = {"embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
              "embeddings.token_type_embeddings.weight"}
    train_p = {k: jnp.asarray(v) for k, v in params.items() if k not in frozen}
    fixed_p = {k: jnp.asarray(v) for k, v in params.items() if k in frozen}
    score = score_fn(cfg)
    G = 1 + args.siblings + args.randoms + args.hard

    def loss_fn(tp, fp, ids, mask, valid):
        s = score({**tp, **fp}, ids, mask).reshape(-1, G)
        s = jnp.where(valid, s, -1e9)
        return -(jax.nn.log_softmax(s, axis=-1)[:, 0]).mean()

    @jax.jit
    def step_fn(tp, fp, m, v, step, ids, mask, valid):
        loss, g = jax.value_and_grad(loss_fn)(tp, fp, ids, mask, valid)
        b1, b2 = 0.9, 0.999
        new_tp, new_m, new_v = {}, {}, {}
        for k in tp:
            mk = b1 * m[k] + (1 - b1) * g[k]
            vk = b2 * v[k] + (1 - b2) * g[k] ** 2
            mh = mk / (1 - b1 ** (step + 1))
            vh = vk / (1 - b2 ** (step + 1))
            base = args.head_lr if k.startswith("rerank.") else args.lr
            lr = base * jnp.minimum(1.0, (step + 1) / args.warmup)
            upd = mh / (jnp.sqrt(vh) + 1e-8)
            if tp[k].ndim == 2:
                upd = upd + args.weight_decay * tp[k]
            new_tp[k] = tp[k] - lr * upd
            new_m[k], new_v[k] = mk, vk
        return new_tp, new_m, new_v, loss

    m = {k: jnp.zeros_like(x) for k, x in train_p.items()}
    v = {k: jnp.zeros_like(x) for k, x in train_p.items()}
    out_dir = os.path.join(tdir, "reranker")
    os.makedirs(out_dir, exist_ok=True)

    def encode_group(i, neg):
        q = rows[i]["query"]
        docs = [i] + neg + [neg[-1]] * (G - 1 - len(neg))
        encs = [tok.encode(q, code_text(rows[j]["path"], rows[j]["code"])) for j in docs]
        valid = [True] * (1 + len(neg)) + [False] * (G - 1 - len(neg))
        return encs, valid

    def save(step, history):
        flat = {k: np.asarray(x) for k, x in train_p.items()}
        tmp = os.path.join(out_dir, "params.tmp.npz")
        np.savez(tmp, **flat)
        name = "params.npz" if args.tag == "reranker" else f"{args.tag}-params.npz"
        os.replace(tmp, os.path.join(out_dir, name))
        meta = {"args": vars(args), "train_packages": train_pk, "validation_packages": val_pk,
                "groups": len(groups), "steps": step, "history": history,
                "minutes": round((time.time() - t_start) / 60, 1)}
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{args.tag}_train.json"), "w") as fh:
            json.dump(meta, fh, indent=1)

    history = []
    step, pos, t0, losses = 0, 0, time.time(), []
    while True:
        if args.max_steps and step >= args.max_steps:
            break
        if (time.time() - t_start) / 60 > args.max_minutes:
            break
        batch = groups[pos:pos + args.batch]
        if len(batch) < args.batch:
            rng.shuffle(groups)
            pos = 0
            continue
        pos += args.batch
        encs, valid = [], []
        for i, neg in batch:
            e, va = encode_group(i, neg)
            encs += e
            valid.append(va)
        ids, mask = T.pad_batch(encs, multiple=32, max_len=args.len)
        train_p, m, v, loss = step_fn(train_p, fixed_p, m, v, step, ids, mask, np.array(valid))
        losses.append(float(loss))
        step += 1
        if step % 25 == 0:
            el = time.time() - t0
            history.append({"step": step, "loss": float(np.mean(losses[-25:])), "seconds": round(el)})
            log(f"step {step} loss {np.mean(losses[-25:]):.4f} ({el / step:.2f} s/step, "
                f"epoch {step * args.batch / len(groups):.2f})")
        if step % args.save_every == 0:
            save(step, history)
    save(step, history)
    log(f"done: {step} steps in {(time.time() - t_start) / 60:.1f} min")


if __name__ == "__main__":
    main()
