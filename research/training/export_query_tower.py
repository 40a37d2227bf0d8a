#!/usr/bin/env python3
"""Export a trained tower (query or document side) to ONNX: fp32 graph with replaced
initializers, then int8 exactly as scripts/bootstrap.py derives the default model.

Usage:  research/training/export_query_tower.sh [--role document]   (this step: the bootstrap's
        tools venv, i.e. the same pinned onnx 1.23.2 / onnxruntime 1.31.1 / numpy 2.4.6 that
        derive the default). `--role document` exports train_doc_tower.py's encoder as
        all-minilm-l6-v2-code-{fp32,int8} under training/doctower/.

1. Recipe check: re-quantizes the default fp32 model with bootstrap.py's call
   (quantize_dynamic(fp32, weight_type=QInt8, per_channel=True), its warnings silenced as
   there) and requires the bootstrap's pinned INT8_SHA256, i.e. byte-identical output: the
   derivation below is the bootstrap's, in the bootstrap's venv.
2. models: ~/.cache/raggrep/training/qtower/all-minilm-l6-v2-qtower-fp32/model.onnx (the default
   fp32 graph, same nodes and initializer names, trained values) and
   .../all-minilm-l6-v2-qtower-int8/model.onnx (quantized from it by the same call), each with
   the default tokenizer.json and a raggrep-model.json (id, sha256, source).
   With --dither SEED the int8 model is quantized from a copy of the fp32 graph whose weight
   matrices carry seeded uniform noise of one int8 step (per output column, as the per-channel
   quantization steps them): deterministic rounding of that copy is stochastic rounding of the
   trained weights. Why: a tower continued from an int8 export (`--init ….onnx`) starts with
   every weight on the int8 grid, and its training moves most weights by less than half a
   step, so rounding to the nearest step puts nearly all of them back and the int8 model is
   the starting model again (the code model's chunk-pool turn: int8 vs its own fp32 graph mean
   cosine 0.961, TUNE level; dithered 0.992 and the fp32 graph's gain kept).
3. Writes research/training/out/query_tower_export.json (sha256, sizes, op counts).
The numeric fidelity checks (JAX encoder vs these files) are verify_query_tower.py's job: they
need JAX, which this venv does not have.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import embed as E  # noqa: E402
import qtower as T  # noqa: E402

B = E.BOOTSTRAP


def quantize(src: str, dst: str) -> None:
    """bootstrap.py cmd_derive's quantisation call, verbatim."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(str(src), dst, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)


def model_json(mid: str, sha: str, source: str, role: str) -> str:
    return json.dumps({"id": mid, "dim": E.DIM, "max_tokens": E.MAX_TOKENS, "pooling": "mean",
                       "normalize": True, "sha256": sha, "source": source, "role": role},
                      indent=2) + "\n"


def dithered(params: dict, seed: int) -> dict:
    """`params` with each weight matrix (not the embeddings) moved by uniform noise of one int8
    step of its output column (the largest magnitude / 127). Entries within 0.1 % of their
    column's largest are left as they are, so the step changes by at most 0.3 %; see the
    module doc."""
    rng = np.random.default_rng(seed)
    out = {}
    for k in sorted(params):
        w = params[k]
        if w.ndim != 2 or k.startswith("embeddings."):
            out[k] = w
            continue
        peak = np.abs(w).max(axis=0, keepdims=True)
        noise = rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) * (peak / 127.0)
        out[k] = np.where(np.abs(w) >= 0.999 * peak, w, w + noise).astype(w.dtype)
    return out


def default_fp32() -> str:
    """Path of the bootstrap's fp32 default model, after checking its sha256."""
    path = os.path.join(E.raggrep_home(), "models", "all-minilm-l6-v2-fp32", "model.onnx")
    if E.sha256_file(path) != B.FP32_SHA256:
        sys.exit(f"{path} is not the bootstrap's fp32 model; run scripts/bootstrap.sh")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--role", choices=sorted(T.TOWERS), default="query")
    ap.add_argument("--params", default="", help="default: the role's trainer output")
    ap.add_argument("--out", default="", help="default: the role's out/*_tower_export.json")
    ap.add_argument("--dither", type=int, default=None, metavar="SEED",
                    help="quantize with stochastic rounding (seeded; see the module doc); "
                         "needed for a tower continued from an int8 export")
    args = ap.parse_args()
    t0 = time.time()
    home = E.raggrep_home()
    fp32_default = default_fp32()
    tower = T.TOWERS[args.role]
    FP32_ID, INT8_ID, trainer = tower.fp32_id, tower.int8_id, tower.trainer
    qdir = os.path.join(E.training_dir(), tower.subdir)
    args.params = args.params or os.path.join(qdir, tower.params)
    args.out = args.out or os.path.join(HERE, "out", tower.export_json)

    # 1. the derivation here is the bootstrap's: same call, same venv => same bytes
    with tempfile.TemporaryDirectory(dir=qdir) as tmp:
        p = os.path.join(tmp, "default-int8.onnx")
        quantize(fp32_default, p)
        got = E.sha256_file(p)
    if got != B.INT8_SHA256:
        sys.exit(f"re-quantizing the default fp32 model gave sha256 {got}, the bootstrap pins "
                 f"{B.INT8_SHA256}: this venv is not the bootstrap's; not exporting")
    print(f"recipe check: default fp32 -> int8 reproduces the bootstrap's sha256 {got[:16]}...",
          file=sys.stderr)

    # 2. fp32 graph with the trained values, then int8 from it
    _, names, _ = T.load_params(fp32_default)
    with np.load(args.params) as z:
        params = {k: z[k] for k in z.files}
    if set(params) != set(names):
        sys.exit(f"params.npz tensors differ from the graph's: {sorted(set(params) ^ set(names))[:5]}")
    tok_src = os.path.join(home, "models", "all-minilm-l6-v2-fp32", "tokenizer.json")
    fdir, idir = os.path.join(qdir, FP32_ID), os.path.join(qdir, INT8_ID)
    for d in (fdir, idir):
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(tok_src, os.path.join(d, "tokenizer.json"))
    fp32_path, int8_path = os.path.join(fdir, "model.onnx"), os.path.join(idir, "model.onnx")
    T.write_onnx(fp32_default, fp32_path, params, names,
                 doc=f"raggrep {args.role} tower (issue 16): all-minilm-l6-v2-fp32 graph, {args.role}-side "
                     f"fine-tuned values (research/training/{trainer})")
    if args.dither is None:
        quantize(fp32_path, int8_path)
    else:
        with tempfile.TemporaryDirectory(dir=qdir) as tmp:
            noisy = os.path.join(tmp, "dithered-fp32.onnx")
            T.write_onnx(fp32_default, noisy, dithered(params, args.dither), names, doc="dithered copy")
            quantize(noisy, int8_path)
    fsha, isha = E.sha256_file(fp32_path), E.sha256_file(int8_path)
    ops = B.op_counts(B.Path(int8_path))
    if ops.get("MatMulInteger", 0) < 36 or ops.get("DynamicQuantizeLinear", 0) < 1:
        sys.exit(f"quantized {args.role} tower lacks MatMulInteger/DynamicQuantizeLinear: {ops}")
    with open(os.path.join(fdir, "raggrep-model.json"), "w") as fh:
        fh.write(model_json(FP32_ID, fsha, f"all-minilm-l6-v2-fp32 graph with the {args.role} tower's "
                            "trained values (research/training/export_query_tower.py)", args.role))
    with open(os.path.join(idir, "raggrep-model.json"), "w") as fh:
        source = B.SOURCES["int8"].replace("all-minilm-l6-v2-fp32", FP32_ID)
        if args.dither is not None:
            source += f", with stochastic rounding (export_query_tower.py --dither {args.dither})"
        fh.write(model_json(INT8_ID, isha, source, args.role))
    psha = E.sha256_file(args.params)
    info = {
        "params_npz_sha256": psha,
        "recipe_check": {"default_int8_requantized_sha256": got, "bootstrap_INT8_SHA256": B.INT8_SHA256},
        "fp32": {"path": fp32_path, "sha256": fsha, "bytes": os.path.getsize(fp32_path)},
        "int8": {"path": int8_path, "sha256": isha, "bytes": os.path.getsize(int8_path),
                 "op_counts": {k: ops[k] for k in ("MatMulInteger", "DynamicQuantizeLinear") if k in ops}},
        "quantization": "onnxruntime.quantization.quantize_dynamic(fp32, weight_type=QInt8, "
                        "per_channel=True), onnxruntime 1.31.1, onnx 1.23.2, numpy 2.4.6 (bootstrap's venv)",
        "dither_seed": args.dither,
        "seconds": round(time.time() - t0, 1),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(info, fh, indent=2)
        fh.write("\n")
    print(f"wrote {fp32_path} ({info['fp32']['bytes']:,} B, {fsha[:16]}...) and {int8_path} "
          f"({info['int8']['bytes']:,} B, sha256 {isha}) in {info['seconds']}s", file=sys.stderr)


if __name__ == "__main__":
    main()
