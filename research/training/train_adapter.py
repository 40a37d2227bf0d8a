#!/usr/bin/env python3
"""Train a query-side linear adapter W (384x384) over frozen MiniLM embeddings (issue 16).

Usage:  research/training/train_adapter.sh [--epochs N] [--lr X] ...
        (the tools venv of scripts/bootstrap.sh: onnxruntime, tokenizers, numpy; one thread)

Input:  ${RAGGREP_HOME:-~/.cache/raggrep}/training/pairs.jsonl (research/training/build_pairs.sh):
        (query = first sentence of a doc comment, code = the function without that comment)
        from the packages of ../shared/training-packages.md only.
Model:  the query vector q (raggrep's embed_query) becomes normalize(W q); documents keep their
        vectors, so an index needs no re-embedding. W starts at the identity.
Loss:   InfoNCE with in-batch negatives, temperature TAU: each query against the code texts of
        its batch; batches are drawn from ONE package at a time, so the negatives are code of
        the same code base (closer to the real task than random negatives from other
        languages), plus RIDGE * ||W - I||^2. Plain numpy, manual gradients, Adam.
Split:  BY PACKAGE: per language, a seeded ~20 % of the packages (at least one) are validation;
        the rest train. Early stopping on validation MRR@10, computed like the benchmark
        evaluation (each validation query against every validation code text of its package).
Output: research/training/out/adapter.f32   W row-major, little-endian f32, 384*384
        research/training/out/adapter.json  sha256, packages + versions, seed, hyper-parameters,
                                           validation numbers with and without the adapter
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as E  # noqa: E402

DIM = E.DIM


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def normalize(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def apply(W: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Adapted queries: normalize(W q) for each row q of Q."""
    return normalize(Q @ W.T)


def metrics(Qa: np.ndarray, D: np.ndarray, groups: list[np.ndarray], extras: list | None = None) -> dict:
    """R@1, R@5, MRR@10 of query i against all docs of its group (gold = doc i), and against
    the group's extra rows of D (`extras[k]`: more negatives of group k, e.g. chunk-pool rows)."""
    r1 = r5 = mrr = 0.0
    n = 0
    for k, idx in enumerate(groups):
        S = Qa[idx] @ D[idx].T
        gold = S[np.arange(len(idx)), np.arange(len(idx))]
        rank = (S > gold[:, None]).sum(1)  # 0-based; ties count in the query's favour
        if extras is not None and len(extras[k]):
            rank = rank + (Qa[idx] @ D[extras[k]].T > gold[:, None]).sum(1)
        r1 += float((rank < 1).sum())
        r5 += float((rank < 5).sum())
        mrr += float(np.where(rank < 10, 1.0 / (rank + 1), 0.0).sum())
        n += len(idx)
    return {"queries": n, "R@1": r1 / max(n, 1), "R@5": r5 / max(n, 1), "MRR@10": mrr / max(n, 1)}


def group_by(rows: list[dict], idx: list[int], key: str) -> dict[str, np.ndarray]:
    out: dict[str, list[int]] = {}
    for i in idx:
        out.setdefault(rows[i][key], []).append(i)
    return {k: np.array(v) for k, v in out.items()}


def evaluate(W, Q, D, rows, idx, extras: dict | None = None) -> dict:
    """Overall + per language; the pool of a query is its own package (plus, with `extras`,
    that package's extra rows of D: {package: array of row indices})."""
    Qa = apply(W, Q)
    pk = group_by(rows, idx, "package")
    none = np.zeros(0, dtype=int)

    def more(names):
        return None if extras is None else [extras.get(p, none) for p in names]

    res = {"all": metrics(Qa, D, list(pk.values()), more(pk.keys()))}
    langs = sorted({rows[i]["language"] for i in idx})
    for lang in langs:
        gs = {p: np.array([i for i in g if rows[i]["language"] == lang]) for p, g in pk.items()}
        gs = {p: g for p, g in gs.items() if len(g)}
        # pool = the package's docs of that language (a package may mix languages)
        res[lang] = metrics(Qa, D, list(gs.values()), more(gs.keys()))
    return res


MACRO_MIN_QUERIES = 50


def macro(res: dict) -> float:
    """Mean MRR@10 over the languages with >= MACRO_MIN_QUERIES validation queries, so that the
    language with the most pairs (Python) does not decide early stopping alone."""
    vals = [m["MRR@10"] for k, m in res.items() if k != "all" and m["queries"] >= MACRO_MIN_QUERIES]
    return float(np.mean(vals)) if vals else res["all"]["MRR@10"]


def fmt(m: dict) -> str:
    return f"R@1 {m['R@1']:.3f}  R@5 {m['R@5']:.3f}  MRR@10 {m['MRR@10']:.3f}  (n={m['queries']})"


def make_batches(rows, idx, size: int, rng: random.Random) -> list[np.ndarray]:
    batches = []
    for _, g in sorted(group_by(rows, idx, "package").items()):
        g = list(g)
        rng.shuffle(g)
        parts = [g[s:s + size] for s in range(0, len(g), size)]
        if len(parts) > 1 and len(parts[-1]) < size // 4:
            parts[-2].extend(parts.pop())
        batches.extend(np.array(p) for p in parts if len(p) >= 8)
    rng.shuffle(batches)
    return batches


def loss_and_grad(W, Qb, Db, tau: float, ridge: float):
    U = Qb @ W.T  # (B, d) un-normalised adapted queries
    n = np.maximum(np.linalg.norm(U, axis=1, keepdims=True), 1e-12)
    Qa = U / n
    S = (Qa @ Db.T) / tau
    S -= S.max(1, keepdims=True)
    P = np.exp(S)
    P /= P.sum(1, keepdims=True)
    B = len(Qb)
    loss = -float(np.log(np.maximum(P[np.arange(B), np.arange(B)], 1e-30)).mean())
    dS = P.copy()
    dS[np.arange(B), np.arange(B)] -= 1.0
    dS /= B
    dQa = (dS @ Db) / tau
    dU = (dQa - Qa * (Qa * dQa).sum(1, keepdims=True)) / n
    dW = dU.T @ Qb
    R = W - np.eye(len(W), dtype=W.dtype)
    loss += ridge * float((R * R).sum())
    dW += 2.0 * ridge * R
    return loss, dW


def load_pairs() -> tuple[dict, list[dict]]:
    """pairs.manifest.json and the rows of pairs.jsonl (build_pairs.py's output)."""
    tdir = E.training_dir()
    with open(os.path.join(tdir, "pairs.manifest.json")) as fh:
        manifest = json.load(fh)
    with open(os.path.join(tdir, "pairs.jsonl")) as fh:
        rows = [json.loads(line) for line in fh]
    return manifest, rows


def split_packages(manifest: dict, frac: float, seed: int) -> tuple[list[str], list[str]]:
    """Validation packages are drawn from the first batch only, so adding the second batch
    (build_pairs.py) left the split every shipped part was chosen on unchanged."""
    by_lang: dict[str, list[str]] = {}
    later = []
    for p in manifest["packages"]:
        if p["pairs"] > 0:
            if p.get("batch", 1) == 1:
                by_lang.setdefault(p["language"], []).append(f"{p['name']}-{p['version']}")
            else:
                later.append(f"{p['name']}-{p['version']}")
    rng = random.Random(seed)
    train, val = [], []
    for lang in sorted(by_lang):
        ps = sorted(by_lang[lang])
        rng.shuffle(ps)
        k = max(1, round(frac * len(ps))) if len(ps) > 1 else 0
        val.extend(ps[:k])
        train.extend(ps[k:])
    return sorted(train + later), sorted(val)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--ridge", type=float, default=1e-3)
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--val-frac", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--model", default="all-minilm-l6-v2-int8")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    args = ap.parse_args()
    t_start = time.time()
    manifest, rows = load_pairs()
    log(f"{len(rows)} pairs from {len(manifest['packages'])} packages")

    emb = E.Embedder(args.model)
    log(f"embedding recipe check: min cosine {emb.self_check():.5f} to tests/data/reference_vectors.json")
    t0 = time.time()
    Q = emb.embed([r["query"] for r in rows], "queries")
    D = emb.embed([E.document_text(r["path"], r["symbol"], r["code"]) for r in rows], "code")
    t_embed = time.time() - t0
    log(f"embedded (or loaded from cache) in {t_embed:.0f}s")

    train_p, val_p = split_packages(manifest, args.val_frac, args.seed)
    train_idx = [i for i, r in enumerate(rows) if r["package"] in set(train_p)]
    val_idx = [i for i, r in enumerate(rows) if r["package"] in set(val_p)]
    log(f"train: {len(train_idx)} pairs / {len(train_p)} packages; "
        f"validation: {len(val_idx)} pairs / {len(val_p)} packages: {', '.join(val_p)}")

    np.random.seed(args.seed)
    rng = random.Random(args.seed)
    W = np.eye(DIM, dtype=np.float64)
    Q64, D64 = Q.astype(np.float64), D.astype(np.float64)
    base_val = evaluate(W, Q64, D64, rows, val_idx)
    base_train = evaluate(W, Q64, D64, rows, train_idx)["all"]
    log(f"identity  val {fmt(base_val['all'])}  macro MRR@10 {macro(base_val):.3f}")
    m = np.zeros_like(W)
    v = np.zeros_like(W)
    b1, b2, step = 0.9, 0.999, 0
    best = (macro(base_val), W.copy(), 0)
    history = []
    t_train = time.time()
    for epoch in range(1, args.epochs + 1):
        losses = []
        for b in make_batches(rows, train_idx, args.batch, rng):
            loss, g = loss_and_grad(W, Q64[b], D64[b], args.tau, args.ridge)
            losses.append(loss)
            step += 1
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            W -= args.lr * (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + 1e-8)
        vres = evaluate(W, Q64, D64, rows, val_idx)
        val, vmacro = vres["all"], macro(vres)
        history.append({"epoch": epoch, "loss": float(np.mean(losses)), "val_MRR@10": val["MRR@10"],
                        "val_R@5": val["R@5"], "val_macro_MRR@10": vmacro})
        log(f"epoch {epoch:3d}  loss {np.mean(losses):.4f}  val {fmt(val)}  macro MRR@10 {vmacro:.3f}")
        if vmacro > best[0]:
            best = (vmacro, W.copy(), epoch)
        elif epoch - best[2] >= args.patience:
            log(f"early stop: no validation gain for {args.patience} epochs")
            break
    t_train = time.time() - t_train
    W = best[1]
    final_val = evaluate(W, Q64, D64, rows, val_idx)
    final_train = evaluate(W, Q64, D64, rows, train_idx)["all"]
    log(f"best epoch {best[2]}: val {fmt(final_val['all'])}  (identity {fmt(base_val['all'])})")
    for lang in sorted(k for k in final_val if k != "all"):
        log(f"  {lang:11s} identity {fmt(base_val[lang])}\n  {'':11s} adapter  {fmt(final_val[lang])}")

    os.makedirs(args.out, exist_ok=True)
    blob = W.astype("<f4").tobytes()
    path = os.path.join(args.out, "adapter.f32")
    with open(path, "wb") as fh:
        fh.write(blob)
    pk = {f"{p['name']}-{p['version']}": p for p in manifest["packages"]}
    info = {
        "what": "query-side linear adapter for raggrep's dense search: q' = normalize(W q), "
                "W row-major 384x384 little-endian f32 (adapter.f32); documents unchanged",
        "adapter_sha256": hashlib.sha256(blob).hexdigest(),
        "adapter_bytes": len(blob),
        "model": args.model, "model_sha256": emb.meta.get("sha256"),
        "embedding_text": "query: as typed; code: '<path> <symbol path>\\n<code>' truncated to 256 tokens",
        "seed": args.seed,
        "hyperparameters": {k: getattr(args, k) for k in
                            ("epochs", "batch", "lr", "tau", "ridge", "patience", "val_frac")},
        "best_epoch": best[2],
        "early_stopping": f"validation MRR@10 macro-averaged over languages with >= {MACRO_MIN_QUERIES} queries",
        "validation_macro_MRR@10": {"identity": macro(base_val), "adapter": macro(final_val)},
        "train_packages": [{"package": p, "language": pk[p]["language"], "source": pk[p]["source"],
                            "sha256": pk[p]["sha256"], "pairs": pk[p]["pairs"]} for p in train_p],
        "validation_packages": [{"package": p, "language": pk[p]["language"], "source": pk[p]["source"],
                                 "sha256": pk[p]["sha256"], "pairs": pk[p]["pairs"]} for p in val_p],
        "skipped_packages": manifest.get("skipped", []),
        "pairs": {"train": len(train_idx), "validation": len(val_idx)},
        "validation": {"note": "each validation query ranked against every validation code text "
                               "of its own package; dense cosine only, function level",
                       "identity": base_val, "adapter": final_val},
        "train_fit": {"identity": base_train, "adapter": final_train},
        "history": history,
        "seconds": {"embed_or_load": round(t_embed, 1), "train": round(t_train, 1),
                    "total": round(time.time() - t_start, 1)},
    }
    with open(os.path.join(args.out, "adapter.json"), "w") as fh:
        json.dump(info, fh, indent=2)
        fh.write("\n")
    log(f"wrote {path} ({len(blob)} bytes, sha256 {info['adapter_sha256'][:16]}...) and adapter.json; "
        f"train {t_train:.0f}s, total {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
