#!/usr/bin/env python3
"""Query models against document models on the validation packages (dense, function level).

Usage:  ~/.cache/raggrep/tools/venv/bin/python research/training/eval_query_models.py \\
            --query first=PATH/query-model.onnx --query second=PATH/model.onnx

Each query model (and all-MiniLM-L6-v2's own int8 queries, "plain") embeds the validation
queries of pairs.jsonl (train_adapter.split_packages, seed 16); each document model
(--documents, default: the code model and the plain int8 model) embeds their code texts; every
query is ranked against every validation code text of its own package (train_adapter.evaluate).
All with embed.py's int8 recipe, as the engine runs them; vectors are cached by text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402

import embed as E  # noqa: E402
from train_adapter import evaluate, fmt, load_pairs, macro, split_packages  # noqa: E402

PLAIN = "all-minilm-l6-v2-int8"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--query", action="append", default=[], help="NAME=ONNX (the vector cache is keyed by NAME + "
                    "the file's sha256)")
    ap.add_argument("--documents", action="append", default=[], help="a model directory under models/")
    ap.add_argument("--out", default="", help="JSON of the results")
    args = ap.parse_args()
    manifest, rows = load_pairs()
    _, val_p = split_packages(manifest, 0.2, 16)
    val_idx = [i for i, r in enumerate(rows) if r["package"] in set(val_p)]
    val_rows = [rows[i] for i in val_idx]
    queries = {}
    for spec in args.query:
        name, path = spec.split("=", 1)
        queries[name] = E.file_embedder(f"query-{name}", path, os.path.join(E.raggrep_home(), "models", PLAIN))
    queries["plain"] = E.Embedder(PLAIN)
    results = {}
    for model in args.documents or ["all-minilm-l6-v2-code2-int8", PLAIN]:
        docs = np.zeros((len(rows), E.DIM))
        docs[val_idx] = E.Embedder(model).embed(
            [E.document_text(r["path"], r["symbol"], r["code"]) for r in val_rows], model)
        for name, emb in queries.items():
            q = np.zeros((len(rows), E.DIM))
            q[val_idx] = emb.embed([r["query"] for r in val_rows], name)
            res = evaluate(np.eye(E.DIM), q, docs, rows, val_idx)
            print(f"documents {model:28s} queries {name:8s} {fmt(res['all'])} macro {macro(res):.4f}", flush=True)
            for lang in sorted(k for k in res if k != "all"):
                print(f"    {lang:11s} {fmt(res[lang])}", flush=True)
            results[f"{model} | {name}"] = {"macro_MRR@10": macro(res), **res}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
