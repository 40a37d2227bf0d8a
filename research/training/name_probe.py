#!/usr/bin/env python3
"""Would a vector of each chunk's *name* help the learned fusion? Measured offline (issue 16).

    name_probe.py --raggrep target/debug/raggrep --fusion DUMP:DATA [--report NAME=DUMP:DATA ...]
                  [--names-with document|query] [--seeds 16,17,18]

DUMP is a retrieval-bench feature dump (`cargo test --bench retrieval -- ... --dump-features
DUMP`), DATA the dataset it was made from (`packages/<id>/corpus/`, `queries.jsonl`). `--fusion`
is the learned fusion's dataset (rows split train / validation), the others are only measured.

For every candidate of every dumped query, the chunk's symbol path (container and symbol, as
`raggrep chunk --json` gives them) is split into lower-case words (`Command::get_matches_from`
-> "command get matches from") and embedded alone, by the document model (default) or by the
query model, with embed.py's recipe. Two features join the engine's: whether the chunk has a
name at all, and the cosine between the query's vector (the query model's, as the engine
computes it) and the name's vector. The fusion is then fitted as fit_fusion.py does (same loss,
epoch rule, learning rate and L2) with and without them, on the same rows, for each seed, and
each set is reported with the paired difference (95 % bootstrap interval) of the first seed.

Why: the fusion's dense signal is one vector of a whole chunk, name and code together, and
analyses of the misses found the answer losing to siblings in its own file, where the name is
what differs. The engine would have to store a second vector per chunk for this (a format
change, about 10 % more of the model's time when indexing); this script says first whether it is worth it.
BENCHMARKS.md, "a vector of each chunk's name", has what it found.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_dumps  # noqa: E402
import embed as E  # noqa: E402
import fit_fusion as ff  # noqa: E402

DOCUMENT_MODEL = "all-minilm-l6-v2-code2-int8"


def name_words(container: str, symbol: str) -> str:
    """`Command::get_matches_from` / `HTTPServer.listen` -> "command get matches from" /
    "http server listen": identifier parts, lower case, one space apart."""
    text = f"{container} {symbol}"
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)
    return " ".join(w for w in re.split(r"[^A-Za-z0-9]+", text) if w).lower()


def chunk_names(raggrep: str, data: str, rows: list[dict]) -> dict:
    """(package, path, start, end) -> name words ("" without a symbol), for the files the
    candidates come from, chunked by the same binary that made the dump."""
    files = sorted({(r["package"], c[0]) for r in rows for c in r["candidates"]})
    names = {}
    for package, path in files:
        out = subprocess.run([raggrep, "chunk", "--json", os.path.join(data, "packages", package, "corpus", path)],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            c = json.loads(line)
            symbol = c.get("symbol") or ""
            names[(package, path, c["start_line"], c["end_line"])] = (
                name_words(c.get("container") or "", symbol) if symbol else "")
    return names


def load_set(spec: str, raggrep: str):
    dump, data = spec.split(":", 1)
    rows = ff.load(dump)
    with open(os.path.join(data, "queries.jsonl"), encoding="utf-8") as fh:
        queries = {q["id"]: q["query"] for q in map(json.loads, fh)}
    return rows, queries, chunk_names(raggrep, data, rows)


def with_names(rows, queries, names, query_vectors, name_vectors):
    """fit_fusion.prepare's items with `has_name` and `name_cosine` appended."""
    items = ff.prepare(rows)
    for row, item in zip(rows, items):
        if item["X"] is None:
            continue
        q = query_vectors[queries[row["id"]]]
        extra = []
        for c in row["candidates"]:
            name = names.get((row["package"], c[0], c[1], c[2]), "")
            extra.append([1.0, float(q @ name_vectors[name])] if name else [0.0, 0.0])
        item["X_names"] = np.concatenate([item["X"], np.array(extra)], axis=1)
    return items


def metrics_line(items, score) -> str:
    cells = []
    for lang in ["all"] + sorted({it["language"] for it in items}):
        sub = [it for it in items if lang == "all" or it["language"] == lang]
        m = ff.metrics(ff.ranks(sub, score))
        cells.append(f"{lang} ({m['n']}) {100 * m['chunk_R@5']:.1f} / {m['chunk_MRR@10']:.3f} / {100 * m['file_R@1']:.1f}")
    return " | ".join(cells)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--raggrep", required=True, help="the raggrep binary that made the dumps (for `chunk --json`)")
    ap.add_argument("--fusion", required=True, help="DUMP:DATA of the fusion's training data (train/validation rows)")
    ap.add_argument("--report", action="append", default=[], help="NAME=DUMP:DATA, measured only")
    ap.add_argument("--names-with", choices=["document", "query"], default="document")
    ap.add_argument("--seeds", default="16")
    ap.add_argument("--epochs", type=int, default=400)
    ap.add_argument("--trees", type=int, default=0,
                    help="also fit tree_probe.py's trees (this many seeds summed) with and without the "
                         "name features, against the shipped linear fusion (needs lightgbm)")
    args = ap.parse_args()

    sets = {"fusion": load_set(args.fusion, args.raggrep)}
    for spec in args.report:
        name, rest = spec.split("=", 1)
        sets[name] = load_set(rest, args.raggrep)
    model_dir = os.path.join(E.raggrep_home(), "models", DOCUMENT_MODEL)
    query_model = E.file_embedder("query-model", os.path.join(model_dir, "query-model.onnx"), model_dir)
    texts = sorted({q for _, queries, _ in sets.values() for q in queries.values()})
    query_vectors = dict(zip(texts, query_model.embed(texts, "queries")))
    words = sorted({n for _, _, names in sets.values() for n in names.values() if n})
    name_model = E.Embedder(DOCUMENT_MODEL) if args.names_with == "document" else query_model
    name_vectors = dict(zip(words, name_model.embed(words, "names")))
    items = {k: with_names(rows, queries, names, query_vectors, name_vectors) for k, (rows, queries, names) in sets.items()}

    train = [it for it in items["fusion"] if it["split"] == "train"]
    measured = {"validation": [it for it in items["fusion"] if it["split"] == "validation"],
                **{k: v for k, v in items.items() if k != "fusion"}}
    first = {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        for variant in ("engine features", "+ has_name, name_cosine"):
            key = "X" if variant == "engine features" else "X_names"
            view = lambda its: [dict(it, X=it.get(key, it["X"])) for it in its]  # noqa: E731
            P, mu, sd, epoch = ff.train(view(train), view(measured["validation"]), args.epochs, 0.05, 1e-3, seed,
                                        lambda m: None)
            score = lambda X: ff.forward((X - mu) / sd, P)[0]  # noqa: E731
            for name, its in measured.items():
                print(f"seed {seed} {variant} (epoch {epoch}) {name}: {metrics_line(view(its), score)}", flush=True)
                if seed == int(args.seeds.split(",")[0]):
                    first.setdefault(name, []).append(compare_dumps.outcomes(view(its), score))
    for name, (base, other) in first.items():
        paired = compare_dumps.paired(other - base, 2000, np.random.default_rng(0))
        print(f"{name}, name features against none (first seed): {paired}")
    if args.trees:
        compare_trees(train, measured, args.trees)


def compare_trees(train: list[dict], measured: dict, seeds: int) -> None:
    """tree_probe.py's trees with and without the name features, per set and pooled, against
    each other and against the shipped linear fusion."""
    import tree_probe as tp

    def view(items, key):
        return [dict(it, X=it.get(key, it["X"])) for it in items]

    shipped = ff.shipped_scorer()
    plain, named = tp.fit_trees(view(train, "X"), seeds), tp.fit_trees(view(train, "X_names"), seeds)
    rng = np.random.default_rng(0)
    pooled = {"shipped": [], "trees": [], "trees + names": []}
    for name, its in measured.items():
        o = {"shipped": compare_dumps.outcomes(view(its, "X"), shipped),
             "trees": compare_dumps.outcomes(view(its, "X"), plain),
             "trees + names": compare_dumps.outcomes(view(its, "X_names"), named)}
        for k, v in o.items():
            pooled[k].append(v)
        print(f"{name}: " + " | ".join(f"{k} {tp.summary(v)}" for k, v in o.items()))
        print(f"  trees + names vs trees:   {tp.paired(o['trees'], o['trees + names'], rng)}")
        print(f"  trees + names vs shipped: {tp.paired(o['shipped'], o['trees + names'], rng)}")
    stacked = {k: np.vstack(v) for k, v in pooled.items()}
    print(f"pooled ({len(stacked['trees'])}): trees + names vs trees: "
          f"{tp.paired(stacked['trees'], stacked['trees + names'], rng)}")
    print(f"pooled: trees + names vs shipped: {tp.paired(stacked['shipped'], stacked['trees + names'], rng)}")


if __name__ == "__main__":
    main()
