#!/usr/bin/env python3
"""Write tests/data/reference_vectors.json: embeddings of a few fixed inputs
computed with Python onnxruntime + tokenizers, for the Rust tests to compare
against.

Run with the tools venv made by scripts/bootstrap.sh:

    ~/.cache/raggrep/tools/venv/bin/python scripts/make_reference_vectors.py

Recipe (what the Rust side must reproduce): tokenizer.json of the model dir,
truncation at max_tokens (256, [CLS]/[SEP] included), no padding, one input
per run (batch 1); token_type_ids all zeros; mean of last_hidden_state over
the attention mask; L2-normalised.  "cases" use the DEFAULT model
(all-minilm-l6-v2-code2-int8, dynamic int8), "fp32_cases" the fp32 model.
Vectors are rounded to 6 decimals.  The int8 model's integer kernels differ
between CPUs (e.g. AVX512-VNNI vs AVX2), so compare with a tolerance
(cosine > 0.999), not bit for bit.  "query_model_cases" use the query model the
bootstrap installs beside the default model (query-model.onnx, issue 16), same recipe.
"rerank_cases" score (query, passage) pairs with the reranker installed beside the
default model (rerank-model.onnx + rerank-model.json): the pair tokenised as
[CLS] query [SEP] passage [SEP], truncated at the reranker's max_tokens with
"only_second" ("longest_first" when the query alone is too long), then the same
pooling, then score = w . v + b with the head of rerank-model.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bootstrap import sha256_file  # noqa: E402  (one checksum helper for all set-up scripts)
from engine_session import engine_session  # noqa: E402  (the engine's session options)

REPO = Path(__file__).resolve().parent.parent

RUST_FN = '''/// Returns the byte offsets of every line start in `text`.
pub fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    for (i, b) in text.bytes().enumerate() {
        if b == b'\\n' {
            starts.push(i + 1);
        }
    }
    starts
}'''

PY_FN = '''def chunk_lines(lines, max_lines=40, overlap=5):
    """Split a list of lines into overlapping windows."""
    out = []
    start = 0
    while start < len(lines):
        end = min(start + max_lines, len(lines))
        out.append("\\n".join(lines[start:end]))
        if end == len(lines):
            break
        start = end - overlap
    return out'''


def long_input() -> str:
    # Well over 256 tokens, so truncation is exercised.
    parts = []
    for i in range(40):
        parts.append(f"fn handler_{i}(req: &Request) -> Response {{ route(req, \"/api/v{i % 3}/items\") }}")
    return "\n".join(parts)


INPUTS = [
    "how to read a file line by line",
    "parse command line arguments",
    RUST_FN,
    PY_FN,
    long_input(),
    "Größe einer Datei berechnen — 计算文件大小 — naïve café ✓ émojis 🚀",
]


RERANK_PAIRS = [
    ("read a whole file into a string", "src/checksum.rs\n" + RUST_FN),
    ("split lines into overlapping windows", "chunker.py\n" + PY_FN),
    ("split lines into overlapping windows", "src/lines.rs\n" + RUST_FN),
    # A passage far over the limit: only the passage is cut.
    ("route an API request", "server/routes.rs\n" + long_input()),
    # A query over the limit on its own: both sides are cut.
    (long_input(), "src/checksum.rs\n" + RUST_FN),
]


def pooled(sess, ids: list[int]) -> np.ndarray:
    """One unpadded input (batch 1): the mean of last_hidden_state over its tokens, L2-normalised."""
    a = np.array([ids], dtype=np.int64)
    mask = np.ones_like(a)
    hidden = sess.run(["last_hidden_state"], {
        "input_ids": a, "attention_mask": mask, "token_type_ids": np.zeros_like(a)})[0]
    v = hidden.astype(np.float64)[0].mean(0)
    return v / np.linalg.norm(v)


def rerank_cases(model_dir: Path) -> tuple[dict, list]:
    meta = json.loads((model_dir / "rerank-model.json").read_text())
    model = model_dir / "rerank-model.onnx"
    sha = sha256_file(model)
    if sha != meta["sha256"]:
        sys.exit(f"{model}: sha256 {sha} does not match rerank-model.json; rerun scripts/bootstrap.sh")
    toks = {}
    for strategy in ("only_second", "longest_first"):
        toks[strategy] = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        toks[strategy].enable_truncation(meta["max_tokens"], strategy=strategy)
        toks[strategy].no_padding()
    sess = engine_session(str(model), 2)
    w, b = np.array(meta["head"]["w"], dtype=np.float64), float(meta["head"]["b"])
    cases = []
    for query, passage in RERANK_PAIRS:
        try:
            enc = toks["only_second"].encode(query, passage)
        except Exception:  # the query alone exceeds max_tokens
            enc = toks["longest_first"].encode(query, passage)
        cases.append({"query": query, "passage": passage, "n_tokens": len(enc.ids), "input_ids": enc.ids,
                      "score": round(float(pooled(sess, enc.ids) @ w + b), 6)})
    return meta, cases


def embed_cases(model_dir: Path, max_tokens: int, query_model: bool = False) -> tuple[dict, list]:
    meta = json.loads((model_dir / ("query-model.json" if query_model else "raggrep-model.json")).read_text())
    meta.setdefault("dim", 384)
    model = model_dir / ("query-model.onnx" if query_model else "model.onnx")
    sha = sha256_file(model)
    if sha != meta["sha256"]:
        sys.exit(f"{model}: sha256 {sha} does not match raggrep-model.json ({meta['sha256']}); "
                 f"rerun scripts/bootstrap.sh")
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_tokens)
    tok.no_padding()
    sess = engine_session(str(model), 2)
    cases = []
    for text in INPUTS:
        enc = tok.encode(text)
        v = pooled(sess, enc.ids)
        assert v.shape == (meta["dim"],)
        cases.append({
            "text": text,
            "n_tokens": len(enc.ids),
            "input_ids": enc.ids,
            "vector": [round(float(x), 6) for x in v],
        })
    return meta | {"sha256": sha}, cases


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=os.environ.get("RAGGREP_HOME", str(Path.home() / ".cache/raggrep")))
    ap.add_argument("--out", default=str(REPO / "tests/data/reference_vectors.json"))
    args = ap.parse_args()
    home = Path(args.home)
    max_tokens = 256
    meta, cases = embed_cases(home / "models/all-minilm-l6-v2-code2-int8", max_tokens)
    fp32_meta, fp32_cases = embed_cases(home / "models/all-minilm-l6-v2-fp32", max_tokens)
    q_meta, q_cases = embed_cases(home / "models/all-minilm-l6-v2-code2-int8", max_tokens, query_model=True)
    r_meta, r_cases = rerank_cases(home / "models/all-minilm-l6-v2-code2-int8")
    doc = {
        "model_id": meta["id"],
        "model_sha256": meta["sha256"],
        "max_tokens": max_tokens,
        "recipe": "tokenizer.json, truncate at max_tokens, no padding, batch 1, token_type_ids=0, "
                  "mean over attention mask, L2-normalise; onnxruntime " + ort.__version__,
        "cases": cases,
        "fp32_model_id": fp32_meta["id"],
        "fp32_model_sha256": fp32_meta["sha256"],
        "fp32_cases": fp32_cases,
        "query_model_id": q_meta["id"],
        "query_model_sha256": q_meta["sha256"],
        "query_model_cases": q_cases,
        "rerank_model_id": r_meta["id"],
        "rerank_model_sha256": r_meta["sha256"],
        "rerank_cases": r_cases,
    }
    for a, b in zip(cases, fp32_cases):
        cos = float(np.dot(a["vector"], b["vector"]))
        print(f"{a['n_tokens']:4d} tokens  cos(default, fp32) {cos:.5f}  {a['text'][:50]!r}", file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, out)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
