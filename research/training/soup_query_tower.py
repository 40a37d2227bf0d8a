"""Weight-space average of two query towers (a "model soup", WiSE-FT style).

    soup_query_tower.sh --base out/query-model-int8.onnx --tuned PARAMS.npz --alpha 0.5 --out SOUP.npz

Every trained tensor becomes (1 - alpha) * base + alpha * tuned; the frozen embedding tables
come from `tuned` (an int8 export holds them only rounded). `--base` / `--tuned` are a
trainer's params.npz or an int8 export (dequantized). Both towers must start from the same
model, as the query towers all do (continued training keeps them in one basin, which is what
makes the average a model and not noise).

Why: the chunk-pool tower (train_query_tower.py --chunk-pool) learned to push ordinary chunks
down but drifted on TUNE; half-way between it and the shipped tower kept both gains
(research/training/README.md, "Query model, chunk pool"). The result goes through
export_query_tower.sh like any tower.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embed as E  # noqa: E402
import qtower  # noqa: E402

FROZEN = frozenset({
    "embeddings.word_embeddings.weight",
    "embeddings.position_embeddings.weight",
    "embeddings.token_type_embeddings.weight",
})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="tower at alpha 0 (params.npz or int8 .onnx)")
    ap.add_argument("--tuned", required=True, help="tower at alpha 1 (params.npz or int8 .onnx)")
    ap.add_argument("--alpha", type=float, required=True, help="weight of --tuned, in [0, 1]")
    ap.add_argument("--out", required=True, help="params.npz to write (export_query_tower.sh --params)")
    ap.add_argument("--record", help="JSON record of inputs and output to write")
    args = ap.parse_args()
    if not 0.0 <= args.alpha <= 1.0:
        ap.error(f"--alpha must be in [0, 1], got {args.alpha}")
    home = os.environ.get("RAGGREP_HOME", os.path.expanduser("~/.cache/raggrep"))
    fp32 = os.path.join(home, "models", "all-minilm-l6-v2-fp32", "model.onnx")
    if not os.path.exists(fp32):
        raise SystemExit(f"{fp32} missing: run scripts/bootstrap.sh first")
    params, names, _ = qtower.load_params(fp32)
    base = qtower.start_params(args.base, params, names, keep=FROZEN)
    tuned = qtower.start_params(args.tuned, params, names, keep=FROZEN)
    # The embedding tables are frozen in training, so the npz side holds them exactly.
    frozen_from = tuned if args.tuned.endswith(".npz") else base
    soup = {
        k: frozen_from[k] if k in FROZEN
        else ((1.0 - args.alpha) * base[k] + args.alpha * tuned[k]).astype(np.float32)
        for k in params
    }
    tmp = args.out + ".tmp.npz"
    np.savez(tmp, **soup)
    os.replace(tmp, args.out)
    # File sha256, and for a tower the trainers' own tensor hash (their records' params_sha256).
    record = {
        "base": {"path": args.base, "sha256": E.sha256_file(args.base)},
        "tuned": {"path": args.tuned, "sha256": E.sha256_file(args.tuned)},
        "alpha": args.alpha,
        "out": {"path": args.out, "sha256": E.sha256_file(args.out), "params_sha256": qtower.params_sha256(soup)},
    }
    for side, path, tower in (("base", args.base, base), ("tuned", args.tuned, tuned)):
        if path.endswith(".npz"):
            record[side]["params_sha256"] = qtower.params_sha256(tower)
    if args.record:
        with open(args.record, "w") as fh:
            json.dump(record, fh, indent=2)
            fh.write("\n")
    print(json.dumps(record), file=sys.stderr)


if __name__ == "__main__":
    main()
