#!/usr/bin/env python3
"""A static first tier trained to the code model's chunk vectors (issue 54, model2vec's tokenlearn step).

Usage:  research/training/fit_static_tier.sh embed
        research/training/fit_static_tier.sh fit --out ROWS.f32 [--epochs N] [--lr X] [--l2 X]
        (the measured run, 2026-11-30: RAGGREP_TRAIN_THREADS=2 for embed, then fit --epochs 8 --out …;
        then export --rows ROWS.f32 --out TABLE.bin and
        `cargo bench --bench retrieval -- --split tune --no-baseline --static-table TABLE.bin`)

Why: a chunk's vector from a table of token vectors costs microseconds where the code model
costs ~30 ms, so every chunk of a fresh repository could have a vector at once. Distilled
without training (each token alone through the model) the table added nothing over the words
(BENCHMARKS.md, "Not a lever yet: a static tier distilled without training"): a token's vector
in context is not its vector alone.

What: the chunk pool (build_chunk_pool.sh: raggrep's own chunks of the training packages, doc
comments blanked) embedded by the shipped code model (embed.py's recipe, cached), then a table
E (vocabulary x 384) fitted so that normalise(sum of E[t] over a chunk's tokens) has the largest
cosine with the chunk's code-model vector (Adam on the cosine, lazy rows, an L2 pull toward the
start). The start is the distilled table the retrieval bench keeps (bench/static/<model>.table),
each row times ln(id + 1), the weight the bench's static tier gives it; tokens no chunk of the
pool has keep that start. Packages are split by a seeded draw (validation ~20 %); the fit stops
at its best validation cosine.

Output: --out, the rows as little-endian f32 (vocabulary x dim), each divided by ln(id + 1) so
the bench's `StaticTable::embed` (which multiplies by that weight) sums exactly the fitted rows;
a JSON record beside it (--out + .json) with the fidelity per epoch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as EM  # noqa: E402

MODEL = "all-minilm-l6-v2-code2-int8"
SEED = 16
MAGIC = b"RGSTAT\0\x01"


def pool_rows() -> list[dict]:
    path = os.path.join(EM.training_dir(), "chunkpool.jsonl")
    if not os.path.exists(path):
        sys.exit(f"{path} missing: run research/training/build_chunk_pool.sh first")
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def start_table(vocab: int, dim: int) -> np.ndarray:
    path = os.path.join(EM.raggrep_home(), "bench", "static", f"{MODEL}.table")
    if not os.path.exists(path):
        sys.exit(f"{path} missing: run the retrieval bench with --static-tier once (it distills the table)")
    raw = open(path, "rb").read()
    if raw[:8] != MAGIC:
        sys.exit(f"{path}: not a static table")
    d, v = np.frombuffer(raw[8:16], dtype="<u4")
    if (int(d), int(v)) != (dim, vocab):
        sys.exit(f"{path}: {v}x{d}, the tokenizer has {vocab}x{dim}")
    rows = np.frombuffer(raw[16:16 + vocab * dim * 4], dtype="<f4").reshape(vocab, dim).copy()
    return rows * np.log(np.arange(vocab, dtype=np.float32) + 1.0)[:, None]


def validation_packages(rows: list[dict], frac: float) -> set[str]:
    """The packages held out of the fit (a seeded draw): the fit stops on them, the export keeps
    only tokens the other packages trained."""
    packages = sorted({r["package"] for r in rows})
    return set(random.Random(SEED).sample(packages, max(1, round(len(packages) * frac))))


def token_ids(tok, texts: list[str]) -> tuple[list[np.ndarray], int]:
    """Each text's token ids as the model reads them (`tok`: the embedder's tokenizer, truncated
    as the model is; special tokens dropped), and the vocabulary's size."""
    out = []
    for enc in tok.encode_batch(texts):
        ids = np.array(enc.ids, dtype=np.int64)
        keep = np.array(enc.special_tokens_mask) == 0
        out.append(ids[keep])
    return out, tok.get_vocab_size(True)


def student(E: np.ndarray, flat: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Unnormalised static vectors: per text (its tokens concatenated in `flat`, each text's
    first at `starts`), the sum of its tokens' rows."""
    return np.add.reduceat(E[flat], starts, axis=0)


def fidelity(E, ids, Y) -> float:
    """Mean cosine between the static vectors of `ids` and the code model's `Y`."""
    cos = []
    for b in range(0, len(ids), 1024):
        part = ids[b:b + 1024]
        lens = np.array([len(p) for p in part])
        flat = np.concatenate(part)
        starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
        s = student(E, flat, starts)
        s /= np.maximum(np.linalg.norm(s, axis=1, keepdims=True), 1e-12)
        cos.append((s * Y[b:b + 1024]).sum(1))
    return float(np.concatenate(cos).mean())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["embed", "fit", "export"])
    ap.add_argument("--rows", help="export: a fit's --out")
    ap.add_argument("--out")
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--l2", type=float, default=0.0)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--val-frac", type=float, default=0.2)
    ap.add_argument("--cached-only", action="store_true", help="fit on the chunks already embedded")
    ap.add_argument("--min-count", type=int, default=5,
                    help="export: keep the tokens the fit trained on at least this many chunks")
    args = ap.parse_args()

    if args.step == "export":
        if not (args.rows and args.out):
            sys.exit("export needs --rows (a fit's output) and --out")
        export(args.rows, args.out, args.min_count, args.val_frac)
        return
    rows = [r for r in pool_rows() if len(r["text"].strip()) > 0]
    emb = EM.Embedder(MODEL)
    if args.cached_only:
        rows = [r for r in rows if hashlib.sha256(r["text"].encode()).hexdigest() in emb.index]
    texts = [r["text"] for r in rows]
    Y = emb.embed(texts, "chunk pool")
    if args.step == "embed":
        print(f"{len(texts)} chunk texts embedded by {MODEL}")
        return
    if not args.out:
        sys.exit("fit needs --out")

    val_packages = validation_packages(rows, args.val_frac)
    ids, vocab = token_ids(emb.tok, texts)
    keep = [i for i, t in enumerate(ids) if len(t) > 0]
    train = [i for i in keep if rows[i]["package"] not in val_packages]
    val = [i for i in keep if rows[i]["package"] in val_packages]
    dim = Y.shape[1]
    E0 = start_table(vocab, dim).astype(np.float32)
    E = E0.copy()
    m = np.zeros_like(E)
    v = np.zeros_like(E)
    steps = np.zeros(vocab, dtype=np.int64)
    b1, b2, eps = 0.9, 0.999, 1e-8
    val_ids, Yv = [ids[i] for i in val], Y[val]
    record = {"model": MODEL, "chunks": len(keep), "train": len(train), "validation": len(val),
              "validation_packages": sorted(val_packages), "lr": args.lr, "l2": args.l2,
              "batch": args.batch, "epochs": []}
    start_val = fidelity(E, val_ids, Yv)
    print(f"start: validation cosine {start_val:.4f} ({len(train)} train, {len(val)} validation chunks)", flush=True)
    record["start_validation_cosine"] = start_val
    best, best_E = start_val, E.copy()
    rng_np = np.random.default_rng(SEED)
    for epoch in range(1, args.epochs + 1):
        t0 = time.time()
        order = rng_np.permutation(len(train))
        losses = []
        for b in range(0, len(order), args.batch):
            part = [train[j] for j in order[b:b + args.batch]]
            seqs = [ids[i] for i in part]
            lens = np.array([len(s) for s in seqs])
            flat = np.concatenate(seqs)
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
            y = Y[part]
            s = student(E, flat, starts)
            n = np.maximum(np.linalg.norm(s, axis=1, keepdims=True), 1e-12)
            u = s / n
            cos = (u * y).sum(1, keepdims=True)
            losses.append(float(1 - cos.mean()))
            g_u = -y / len(part)
            g_s = (g_u - u * (u * g_u).sum(1, keepdims=True)) / n
            row_of = np.repeat(np.arange(len(part)), lens)
            g_occ = g_s[row_of]
            o = np.argsort(flat, kind="stable")
            uniq, first = np.unique(flat[o], return_index=True)
            g = np.add.reduceat(g_occ[o], first, axis=0)
            if args.l2:
                g += args.l2 * (E[uniq] - E0[uniq])
            steps[uniq] += 1
            m[uniq] = b1 * m[uniq] + (1 - b1) * g
            v[uniq] = b2 * v[uniq] + (1 - b2) * g * g
            t = steps[uniq][:, None]
            mh = m[uniq] / (1 - b1 ** t)
            vh = v[uniq] / (1 - b2 ** t)
            E[uniq] -= args.lr * mh / (np.sqrt(vh) + eps)
        fv = fidelity(E, val_ids, Yv)
        ft = fidelity(E, [ids[i] for i in train[:5000]], Y[train[:5000]])
        print(f"epoch {epoch}: train loss {np.mean(losses):.4f}, train cosine {ft:.4f}, "
              f"validation cosine {fv:.4f} ({time.time() - t0:.0f}s)", flush=True)
        record["epochs"].append({"epoch": epoch, "train_cosine": ft, "validation_cosine": fv})
        if fv > best:
            best, best_E = fv, E.copy()
            record["best_validation_cosine"] = best
            record["best_epoch"] = epoch
            write(args.out, best_E, record)
    print(f"{args.out}: best validation cosine {best:.4f}")


def write(out: str, E: np.ndarray, record: dict) -> None:
    """The rows divided by the bench's per-token weight ln(id + 1), written atomically."""
    weight = np.log(np.arange(E.shape[0], dtype=np.float32) + 1.0)[:, None]
    weight[0] = 1.0
    (E / weight).astype("<f4").tofile(out + ".tmp")
    os.replace(out + ".tmp", out)
    with open(out + ".json.tmp", "w") as fh:
        json.dump(record, fh, indent=1)
    os.replace(out + ".json.tmp", out + ".json")


EXPORT_MAGIC = b"RGSTAT\0\x03"


def nibble_codes(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """4-bit codes (-7..7) and a scale per row, the scale searched per row (eleven clip ratios
    from half the row's largest value to all of it) for the least squared error: clipping the
    few large values keeps the many small ones apart (held-out fidelity 0.8415 against 0.8403 for
    the plain largest-value scale, all trained tokens; 0.8460 unquantised)."""
    top = np.abs(rows).max(1)
    top[top == 0] = 1.0
    best_codes, best_scale, best_err = None, None, None
    for ratio in np.linspace(0.5, 1.0, 11):
        scale = top * ratio / 7.0
        codes = np.clip(np.rint(rows / scale[:, None]), -7, 7)
        err = ((codes * scale[:, None] - rows) ** 2).sum(1)
        if best_err is None:
            best_codes, best_scale, best_err = codes, scale, err
        else:
            better = err < best_err
            best_codes[better], best_scale[better], best_err[better] = codes[better], scale[better], err[better]
    return best_codes.astype(np.int8), best_scale.astype(np.float32)


def export(rows_path: str, out: str, min_count: int, val_frac: float) -> None:
    """The table the engine reads (server/src/embed/static_table.rs), version 3: magic; dim,
    vocabulary and the number of rows kept (u32 each); the kept token ids (u32, ascending); a
    f32 scale per kept row; the rows as 4-bit codes, two a byte, low nibble first, each code
    stored plus 8 (row = (nibble - 8) x scale). Kept: the tokens the fit trained on at least
    `min_count` chunks of the training packages (a token seen less is barely trained; one the fit
    never saw keeps a start that points nowhere useful; a token left out adds nothing to a sum).
    The rows are the fitted ones (the bench's weight multiplied back in): the engine sums them
    plainly. Deterministic: the same rows give the same bytes."""
    raw = np.fromfile(rows_path, dtype="<f4")
    dim = EM.DIM
    vocab = raw.size // dim
    if raw.size != vocab * dim:
        sys.exit(f"{rows_path}: not a table of {dim}-d rows")
    weight = np.log(np.arange(vocab, dtype=np.float32) + 1.0)[:, None]
    rows = raw.reshape(vocab, dim) * weight
    # Which tokens the fit trained, and on how many chunks: the fit's own split.
    pool = [r for r in pool_rows() if len(r["text"].strip()) > 0]
    val_packages = validation_packages(pool, val_frac)
    emb = EM.Embedder(MODEL)
    ids, tok_vocab = token_ids(emb.tok, [r["text"] for r in pool])
    if tok_vocab != vocab:
        sys.exit(f"{rows_path}: {vocab} rows, the tokenizer has {tok_vocab} tokens")
    chunks_with = np.zeros(vocab, dtype=np.int64)
    for r, t in zip(pool, ids):
        if r["package"] not in val_packages:
            chunks_with[np.unique(t)] += 1
    kept = np.flatnonzero((chunks_with >= min_count) & (np.abs(rows).max(1) > 0)).astype(np.uint32)
    codes, scale = nibble_codes(rows[kept])
    back = codes.astype(np.float32) * scale[:, None]
    cos = (back * rows[kept]).sum(1) / np.maximum(
        np.linalg.norm(back, axis=1) * np.linalg.norm(rows[kept], axis=1), 1e-12)
    nibbles = (codes + 8).astype(np.uint8).reshape(len(kept), dim // 2, 2)
    packed = nibbles[:, :, 0] | (nibbles[:, :, 1] << 4)
    with open(out + ".tmp", "wb") as fh:
        fh.write(EXPORT_MAGIC)
        fh.write(np.array([dim, vocab, len(kept)], dtype="<u4").tobytes())
        fh.write(kept.astype("<u4").tobytes())
        fh.write(scale.astype("<f4").tobytes())
        fh.write(packed.astype(np.uint8).tobytes())
    os.replace(out + ".tmp", out)
    print(f"wrote {out}: {len(kept)} of {vocab} tokens (trained on >= {min_count} chunks) x {dim}, 4-bit; "
          f"row cosine to the f32 rows mean {cos.mean():.4f} min {cos.min():.4f}, "
          f"{os.path.getsize(out)} bytes, sha256 {hashlib.sha256(open(out, 'rb').read()).hexdigest()}")


if __name__ == "__main__":
    main()
