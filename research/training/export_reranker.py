#!/usr/bin/env python3
"""Export the cross-encoder of train_reranker.py to ONNX, int8 exactly as the query tower.

Usage:  research/training/export_reranker.sh [--params PATH]
        (this step: the bootstrap's tools venv, like export_query_tower.py)

Writes ~/.cache/raggrep/training/reranker/all-minilm-l6-v2-rerank-int8/
  model.onnx         the default fp32 graph with the trained encoder values, quantized by the
                     bootstrap's call (export_query_tower.quantize); its output is
                     last_hidden_state, as the embedding model's
  tokenizer.json     the default tokenizer (pairs: [CLS] query [SEP] path\\ncode [SEP])
  head.json          w (384 floats) and b: score = w . normalize(meanpool(h)) + b
and, for the bootstrap to install (committed), models/all-minilm-l6-v2-rerank-int8.onnx and
models/all-minilm-l6-v2-rerank-int8.head.json (copies of model.onnx and head.json), plus
research/training/out/reranker_export.json (sha256, sizes, op counts).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as E  # noqa: E402
import export_query_tower as X  # noqa: E402
import qtower as T  # noqa: E402

INT8_ID = "all-minilm-l6-v2-rerank-int8"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", default=os.path.join(E.training_dir(), "reranker", "params.npz"))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "reranker_export.json"))
    args = ap.parse_args()
    t0 = time.time()
    home = E.raggrep_home()
    fp32_default = X.default_fp32()
    params, names, _ = T.load_params(fp32_default)
    with np.load(args.params) as z:
        trained = {k: z[k] for k in z.files}
    head = {"w": trained.pop("rerank.w").astype(float).tolist(),
            "b": float(trained.pop("rerank.b")[0])}
    unknown = set(trained) - set(names)
    if unknown:
        sys.exit(f"params.npz has tensors the graph lacks: {sorted(unknown)[:5]}")
    params.update(trained)
    rdir = os.path.join(E.training_dir(), "reranker")
    idir = os.path.join(rdir, INT8_ID)
    os.makedirs(idir, exist_ok=True)
    fp32_path, int8_path = os.path.join(rdir, "rerank-fp32.onnx"), os.path.join(idir, "model.onnx")
    T.write_onnx(fp32_default, fp32_path, params, names,
                 doc="raggrep reranker (issue 16): all-minilm-l6-v2-fp32 graph, cross-encoder "
                     "values (research/training/train_reranker.py)")
    X.quantize(fp32_path, int8_path)
    shutil.copyfile(os.path.join(home, "models", "all-minilm-l6-v2-fp32", "tokenizer.json"),
                    os.path.join(idir, "tokenizer.json"))
    with open(os.path.join(idir, "head.json"), "w") as fh:
        json.dump(head, fh)
        fh.write("\n")
    out_dir = os.path.join(HERE, "out")
    shutil.copyfile(int8_path, os.path.join(out_dir, "rerank-model-int8.onnx"))
    shutil.copyfile(os.path.join(idir, "head.json"), os.path.join(out_dir, "rerank-head.json"))
    ops = X.B.op_counts(X.B.Path(int8_path))
    if ops.get("MatMulInteger", 0) < 36:
        sys.exit(f"quantized reranker lacks MatMulInteger: {ops}")
    info = {"params_npz_sha256": E.sha256_file(args.params),
            "int8": {"path": int8_path, "sha256": E.sha256_file(int8_path),
                     "bytes": os.path.getsize(int8_path), "MatMulInteger": ops["MatMulInteger"]},
            "fp32_sha256": E.sha256_file(fp32_path), "seconds": round(time.time() - t0, 1)}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(info, fh, indent=2)
        fh.write("\n")
    print(f"wrote {int8_path} ({info['int8']['bytes']:,} B) in {info['seconds']}s", file=sys.stderr)


if __name__ == "__main__":
    main()
