"""Embeds texts exactly as raggrep's OnnxEmbedder does (server/src/embed/onnx.rs), with a cache.

Recipe (the same as scripts/make_reference_vectors.py): the model dir's tokenizer.json,
truncation at 256 tokens ([CLS]/[SEP] included), no padding, token_type_ids zero, mean of
last_hidden_state over the attention mask, L2 normalisation, batch 1 (raggrep's default).
Batch 1 matters for the int8 model: its activations are quantised dynamically per tensor, so
padding other texts into the same batch changes a vector (min cosine 0.990 to the reference
with batches of 16, 1.000 with batch 1). `self_check()` verifies the recipe against the
committed reference vectors (tests/data/reference_vectors.json, cosine > 0.999).
Speed on this 2-core machine, one thread, nice 19: ~68 code texts/s, ~390 queries/s (measured on
the first pairs); it falls with length: the chunk pool (mean 147 tokens) ran at ~20/s on one
thread and ~29/s on two (2026-11-26).

Runs in the tools venv made by scripts/bootstrap.sh (onnxruntime, tokenizers, numpy), on ONE
thread (intra_op_num_threads = 1) so that it never competes with a build on a 2-core machine;
RAGGREP_TRAIN_THREADS=N gives the session N threads when nothing else runs (a long one-off
embedding such as the chunk pool's: the integer products are exact and each text still runs
alone, so the vectors are the one-thread vectors up to float rounding, max |diff| ~1e-7).

Text formats (what the model sees):
    document: "<path> <symbol path>\n<code>"   (raggrep's default EmbedHeader::PathAndSymbol)
    query:    the query text as typed
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_TOKENS = 256
DIM = 384


def raggrep_home() -> str:
    return os.environ.get("RAGGREP_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "raggrep")


def training_dir() -> str:
    return os.path.join(raggrep_home(), "training")


def document_text(path: str, symbol: str, code: str) -> str:
    """chunk::embedding_text with EmbedHeader::PathAndSymbol."""
    return f"{path} {symbol}\n{code}" if symbol else f"{path}\n{code}"


class Embedder:
    def __init__(self, model: str = "all-minilm-l6-v2-int8", batch: int = 1,
                 model_dir: str | None = None):
        """`model` names the vector cache (and the model dir under models/ unless `model_dir`
        is given, e.g. an exported query tower under training/qtower/)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model = model
        model_dir = model_dir or os.path.join(raggrep_home(), "models", model)
        if not os.path.exists(os.path.join(model_dir, "model.onnx")):
            sys.exit(f"{model_dir}/model.onnx missing: run scripts/bootstrap.sh")
        with open(os.path.join(model_dir, "raggrep-model.json")) as fh:
            self.meta = json.load(fh)
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.enable_truncation(MAX_TOKENS)
        self.tok.no_padding()
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(os.environ.get("RAGGREP_TRAIN_THREADS", "1"))
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.sess = ort.InferenceSession(os.path.join(model_dir, "model.onnx"), so,
                                         providers=["CPUExecutionProvider"])
        self.batch = batch
        self.cache_dir = os.path.join(training_dir(), "vectors", model)
        os.makedirs(self.cache_dir, exist_ok=True)
        self._keys_path = os.path.join(self.cache_dir, "keys.txt")
        self._vecs_path = os.path.join(self.cache_dir, "vectors.f32")
        self._load_cache()

    # ---- cache: append-only (keys.txt line i <-> vectors.f32 row i), keyed by sha256(text)
    def _load_cache(self) -> None:
        self.index: dict[str, int] = {}
        if os.path.exists(self._keys_path) and os.path.exists(self._vecs_path):
            with open(self._keys_path) as fh:
                keys = fh.read().split()
            vecs = np.fromfile(self._vecs_path, dtype="<f4")
            n = min(len(keys), vecs.size // DIM)
            self.vecs = vecs[:n * DIM].reshape(n, DIM).copy()
            self.index = {k: i for i, k in enumerate(keys[:n])}
        else:
            self.vecs = np.zeros((0, DIM), dtype=np.float32)

    def _append(self, keys: list[str], vecs: np.ndarray) -> None:
        with open(self._vecs_path, "ab") as fv, open(self._keys_path, "a") as fk:
            fv.write(vecs.astype("<f4").tobytes())
            fk.write("".join(k + "\n" for k in keys))
        base = len(self.vecs)
        self.vecs = np.concatenate([self.vecs, vecs.astype(np.float32)])
        for i, k in enumerate(keys):
            self.index[k] = base + i

    # ---- embedding
    def _run(self, encs) -> np.ndarray:
        cols = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), cols), dtype=np.int64)
        mask = np.zeros((len(encs), cols), dtype=np.int64)
        for r, e in enumerate(encs):
            ids[r, :len(e.ids)] = e.ids
            mask[r, :len(e.ids)] = 1
        hidden = self.sess.run(["last_hidden_state"], {
            "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        m = mask[..., None].astype(np.float32)
        v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1.0)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

    def embed_uncached(self, texts: list[str]) -> np.ndarray:
        encs = self.tok.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encs[i].ids))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for s in range(0, len(order), self.batch):
            idx = order[s:s + self.batch]
            out[idx] = self._run([encs[i] for i in idx])
        return out

    def embed(self, texts: list[str], label: str = "") -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in self.index}.items())
        if todo:
            t0 = time.time()
            step = 512
            for s in range(0, len(todo), step):
                part = todo[s:s + step]
                self._append([k for k, _ in part], self.embed_uncached([t for _, t in part]))
                done = s + len(part)
                el = time.time() - t0
                print(f"  embed {label}: {done}/{len(todo)} new texts, {el:.0f}s "
                      f"({done / max(el, 1e-9):.1f}/s)", file=sys.stderr, flush=True)
        return self.vecs[[self.index[k] for k in keys]]

    def self_check(self) -> float:
        """Min cosine to the committed reference vectors: > 0.999 for fp32; > 0.98 for int8, whose
        integer kernels differ between CPUs (0.990 at worst measured, an AVX2-only EPYC against
        the committed file; tests/embed.rs makes its exact reference on the machine under test)."""
        with open(os.path.join(REPO, "tests", "data", "reference_vectors.json")) as fh:
            ref = json.load(fh)
        # The reference holds the default model's vectors (the code model since issue 16's
        # document tower) and the fp32 model's. all-MiniLM-L6-v2's own int8 model, which the
        # training scripts embed with, is checked against its fp32 original at the int8
        # tolerance (the bootstrap's MIN_COS_INT8_VS_FP32).
        own = {ref["model_id"]: (ref["cases"], 0.98), ref["fp32_model_id"]: (ref["fp32_cases"], 0.999)}
        cases, floor = own.get(self.model, (ref["fp32_cases"], 0.98 if self.model.endswith("-int8") else 0.999))
        texts = [c["text"] for c in cases]
        got = self.embed_uncached(texts)
        want = np.array([c["vector"] for c in cases], dtype=np.float32)
        want /= np.linalg.norm(want, axis=1, keepdims=True)
        cos = float((got * want).sum(1).min())
        if cos < floor:
            sys.exit(f"embedding recipe check failed: min cosine {cos:.5f} to reference vectors")
        return cos


def _load_bootstrap():
    """scripts/bootstrap.py as a module (standard library only): its pinned checksums and recipe
    constants, and the project's one file hash."""
    spec = importlib.util.spec_from_file_location("bootstrap", os.path.join(REPO, "scripts", "bootstrap.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BOOTSTRAP = _load_bootstrap()
sha256_file = BOOTSTRAP.sha256_file


def file_embedder(cache: str, onnx_path: str, beside: str) -> Embedder:
    """The recipe on a model file outside models/ (a query model, a tower's export), with the
    tokenizer and metadata of the model directory `beside`. Caches are keyed by text only, so
    the cache is `cache` + the file's sha256: another file never gets this one's vectors."""
    sha = sha256_file(onnx_path)[:12]
    # The Embedder reads the model and tokenizer when made, so the links can go right after.
    with tempfile.TemporaryDirectory(prefix="raggrep-model-file-") as d:
        for name, src in (("model.onnx", onnx_path), ("raggrep-model.json", os.path.join(beside, "raggrep-model.json")),
                          ("tokenizer.json", os.path.join(beside, "tokenizer.json"))):
            os.symlink(os.path.abspath(src), os.path.join(d, name))
        return Embedder(f"{cache}-{sha}", model_dir=d)
