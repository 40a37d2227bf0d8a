#!/usr/bin/env python3
"""Raw ONNX Runtime reference for benches/embed_throughput.rs.

Embeds the same chunks as the engine with Python onnxruntime + tokenizers and
the same recipe (tokenizer.json, truncation at 256 tokens, inputs sorted by
length, batch 1, mean pooling over the mask, L2 normalisation), so the ratio
engine / reference shows what the Rust side adds or loses around the same
kernels.  Prints one JSON object: {"chunks": n, "tokens": t, "seconds": s}.

    python benches/ort_reference.py --model-dir DIR --texts texts.json [--threads N]

Run with the tools venv made by scripts/bootstrap.sh (it holds onnxruntime
1.31.1, numpy and tokenizers).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from engine_session import engine_session  # noqa: E402  (the engine's session options)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--texts", required=True, help="JSON list of strings")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()

    with open(args.texts, encoding="utf-8") as f:
        texts: list[str] = json.load(f)
    tokenizer = Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    tokenizer.enable_truncation(args.max_tokens)
    tokenizer.no_padding()
    session = engine_session(os.path.join(args.model_dir, "model.onnx"), args.threads)
    input_names = {i.name for i in session.get_inputs()}

    def embed(batch: list[str]) -> list[np.ndarray]:
        # Length-sorted, one input per run: the engine's default strategy.
        encodings = tokenizer.encode_batch(batch)
        order = sorted(range(len(batch)), key=lambda i: len(encodings[i].ids))
        out: list[np.ndarray] = [np.empty(0)] * len(batch)
        for i in order:
            ids = np.asarray([encodings[i].ids], dtype=np.int64)
            mask = np.asarray([encodings[i].attention_mask], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(["last_hidden_state"], feeds)[0]
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
            out[i] = pooled[0] / max(float(np.linalg.norm(pooled[0])), 1e-12)
        return out

    embed(texts[:16])  # warm-up, as the engine's run does
    tokens = sum(len(e.ids) for e in tokenizer.encode_batch(texts))
    start = time.perf_counter()
    vectors = embed(texts)
    seconds = time.perf_counter() - start
    assert len(vectors) == len(texts)
    print(json.dumps({"chunks": len(texts), "tokens": tokens, "seconds": seconds}))


if __name__ == "__main__":
    main()
