#!/usr/bin/env python3
"""Rewrite an exported MiniLM graph into the form raggrep ships: the same weights and the same
function, fewer and faster kernels (issue 54).

Usage:  research/training/rewrite_graph.sh MODEL_DIR OUT.onnx [--texts DIR]
        research/training/rewrite_graph.sh MODEL_DIR --check
        (runs this file in the bootstrap's tools venv: onnx, onnxruntime, tokenizers)

`--check` rewrites nothing: it exits 0 when MODEL_DIR's graph has nothing left to rewrite (the
shipped form) and 1 when it has.

Four rewrites, each only where its exact pattern is found:

- The NaN guard after each attention softmax, `Where(IsNaN(p), 0, p)`, is dropped: the exporter
  adds it for a row whose every key is masked, which raggrep never sends (the first token,
  `[CLS]`, is always attended), and this export's mask is a finite -3.4e38, so even such a row
  would give uniform weights, not NaN. Bit-identical outputs; 12 % of a 160-token text's time
  on one thread.
- The erf GELU written out as five nodes, `x * 0.5 * (1 + erf(x / sqrt(2)))`, becomes ONNX
  Runtime's `com.microsoft.Gelu` (one vectorised kernel), which ONNX Runtime's own GELU fusion
  does not do for this export. The same function; the float rounding differs a little, which
  the int8 activations that follow can turn into a different step now and then.
- Each self-attention written out (query, key and value reshaped and transposed into heads,
  the scaled product, the additive mask, softmax, the product with the values, the heads put
  back: ~20 nodes with their shape arithmetic) becomes ONNX Runtime's
  `com.microsoft.MultiHeadAttention` over the three projections, its padding mask the graph's
  `attention_mask` input. Only where the scale is 1/sqrt(head size), as the op's default.
- Each masked `MultiHeadAttention` becomes an `If`: when every token of the batch is attended
  (the engine embeds one text at a time, so always) the attention runs without its mask, else
  with it. ONNX Runtime applies a mask by copying it under every head's scores and adding the
  product onto it: 17 % of the attention's time at 160 tokens, ~7 % of a 240-token text's. The
  same function; the unmasked kernel rounds a little differently (cosine to the masked graph's
  vectors 0.9967 at worst, 0.9989 on average, on this repository's sources).

Unused initializers are dropped. Then both graphs embed the same texts (mean pooling, L2
normalisation) through ONNX Runtime with the engine's session options (all optimisations but
`SkipLayerNormFusion`, one thread: see `server/src/embed/onnx.rs`), and the rewrite is refused
unless every cosine to the input graph's vector is at least --min-cosine (default 0.99) and their
mean at least --mean-cosine (default 0.998) — the int8 kernels of another CPU move vectors as
much (0.990 at worst, `tests/it/embed.rs`), and ONNX Runtime's skip-layer-norm kernel against
its parts moves them to a mean of 0.9987 — and, for texts padded in pairs into one batch, at
least --min-padded-cosine (default 0.98). Padding alone moves a vector further (to 0.96 against
the same text alone, in either graph: the int8 activations are quantised per batch; the engine
embeds one text at a time); an attention that ignored the mask gives 0.27. Prints what it
changed, the cosines and the speed.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from tokenizers import Tokenizer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from engine_session import engine_session  # noqa: E402  (the engine's session options)


def scalar(graph: onnx.GraphProto, name: str) -> float | None:
    for init in graph.initializer:
        if init.name == name:
            value = numpy_helper.to_array(init)
            return float(value.reshape(-1)[0]) if value.size == 1 else None
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            value = numpy_helper.to_array(node.attribute[0].t)
            return float(value.reshape(-1)[0]) if value.size == 1 else None
    return None


def rewrite(model: onnx.ModelProto) -> dict[str, int]:
    """Applies the rewrites in turn (each sees the graph the one before left) and drops what no
    output reads any more. Returns how many of each it made."""
    g = model.graph
    counts = {"nan_guards": 0, "gelus": 0, "attentions": 0, "unpadded": 0}
    for step in (nan_guards, gelus, attention, unpadded):
        producer = {o: n for n in g.node for o in n.output}
        consumers: dict[str, list[onnx.NodeProto]] = collections.defaultdict(list)
        for n in g.node:
            for i in n.input:
                consumers[i].append(n)
        drop: set[int] = set()
        renamed: dict[str, str] = {}
        replaced: dict[int, onnx.NodeProto] = {}
        step(g, producer, consumers, drop, renamed, replaced, counts)
        nodes = []
        for n in g.node:
            if id(n) in drop:
                continue
            n = replaced.get(id(n), n)
            for k, name in enumerate(n.input):
                if name in renamed:
                    n.input[k] = renamed[name]
            nodes.append(n)
        del g.node[:]
        g.node.extend(topological(g, nodes))
    if (counts["gelus"] or counts["attentions"]) and not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    used = {i for n in g.node for i in reads(n)}
    kept = [i for i in g.initializer if i.name in used]
    counts["initializers_dropped"] = len(g.initializer) - len(kept)
    del g.initializer[:]
    g.initializer.extend(kept)
    return counts


def nan_guards(g, producer, consumers, drop, renamed, replaced, counts) -> None:
    """Where(IsNaN(p), 0, p) -> p."""
    outputs = {o.name for o in g.output}
    for where in g.node:
        if where.op_type != "Where" or len(where.input) != 3:
            continue
        isnan = producer.get(where.input[0])
        if isnan is None or isnan.op_type != "IsNaN" or isnan.input[0] != where.input[2]:
            continue
        if scalar(g, where.input[1]) != 0.0 or where.output[0] in outputs:
            continue
        if len(consumers[isnan.output[0]]) != 1:
            continue
        renamed[where.output[0]] = where.input[2]
        drop.update((id(where), id(isnan)))
        counts["nan_guards"] += 1


def gelus(g, producer, consumers, drop, renamed, replaced, counts) -> None:
    """x * 0.5 * (1 + erf(x / sqrt 2)) -> com.microsoft.Gelu(x)."""
    outputs = {o.name for o in g.output}
    for erf in g.node:
        if erf.op_type != "Erf":
            continue
        div = producer.get(erf.input[0])
        if div is None or div.op_type != "Div" or abs((scalar(g, div.input[1]) or 0.0) - 2**0.5) > 1e-5:
            continue
        x = div.input[0]
        add = sole(consumers, erf.output[0], "Add")
        if add is None or scalar(g, next(i for i in add.input if i != erf.output[0])) != 1.0:
            continue
        half = sole(consumers, add.output[0], "Mul")
        if half is None or scalar(g, next(i for i in half.input if i != add.output[0])) != 0.5:
            continue
        mul = sole(consumers, half.output[0], "Mul")
        if mul is None or x not in mul.input:
            continue
        passed = [div, erf, add, half, mul]
        if any(c.output[0] in outputs for c in passed[:-1]):
            continue
        if any(len(consumers[c.output[0]]) != 1 for c in passed[:-1]):
            continue
        drop.update(id(c) for c in passed[:-1])
        replaced[id(mul)] = helper.make_node(
            "Gelu", [x], [mul.output[0]], name=f"raggrep_gelu_{counts['gelus']}", domain="com.microsoft"
        )
        counts["gelus"] += 1


def sole(consumers: dict, name: str, op: str) -> onnx.NodeProto | None:
    """The one node that reads tensor `name`, if there is one and it is an `op`."""
    after = consumers.get(name, [])
    return after[0] if len(after) == 1 and after[0].op_type == op else None


def chain(producer: dict, name: str, ops: list[str]) -> tuple[str, list[onnx.NodeProto]] | None:
    """Walks up from tensor `name` through nodes of the given types, each time along its first
    input: the tensor reached and the nodes passed, or None where the graph differs."""
    passed = []
    for op in ops:
        node = producer.get(name)
        if node is None or node.op_type != op:
            return None
        passed.append(node)
        name = node.input[0]
    return name, passed


def attention(g, producer, consumers, drop, renamed, replaced, counts) -> None:
    """Self-attention blocks -> com.microsoft.MultiHeadAttention (see the module doc). Their old
    nodes are left for `topological` to drop: nothing reads them any more."""
    inputs = {i.name for i in g.input}
    if "attention_mask" not in inputs:
        return
    mask = "raggrep_attention_mask_int32"
    cast = None
    for softmax in [n for n in g.node if n.op_type == "Softmax"]:
        add = producer.get(softmax.input[0])
        if add is None or add.op_type != "Add":
            continue
        product = producer.get(add.input[0])
        if product is None or product.op_type != "MatMul":
            continue
        q = chain(producer, product.input[0], ["Mul", "Transpose", "Reshape"])
        k = chain(producer, product.input[1], ["Mul", "Reshape", "Transpose", "Reshape", "Transpose", "Reshape"])
        weighted = sole(consumers, softmax.output[0], "MatMul")
        if q is None or k is None or weighted is None or weighted.input[0] != softmax.output[0]:
            continue
        v = chain(producer, weighted.input[1], ["Transpose", "Reshape"])
        heads = sole(consumers, weighted.output[0], "Transpose")
        heads_back = sole(consumers, heads.output[0], "Reshape") if heads is not None else None
        if v is None or heads_back is None:
            continue
        out = heads_back.output[0]
        # Head size: the last entry of the query's reshape target; the hidden size: its bias.
        q_reshape = q[1][2]
        shape = producer.get(q_reshape.input[1])
        head = scalar(g, shape.input[-1]) if shape is not None and shape.op_type == "Concat" else None
        bias = producer.get(q[0])
        hidden = None
        if bias is not None and bias.op_type == "Add":
            for name in bias.input:
                for init in g.initializer:
                    if init.name == name and len(init.dims) == 1:
                        hidden = int(init.dims[0])
        scales = [scalar(g, q[1][0].input[1]), scalar(g, k[1][0].input[1])]
        if not head or not hidden or hidden % int(head) or None in scales:
            continue
        if abs(scales[0] * scales[1] * float(head) ** 0.5 - 1.0) > 1e-4:
            continue
        if cast is None:
            cast = helper.make_node("Cast", ["attention_mask"], [mask], to=onnx.TensorProto.INT32,
                                    name="raggrep_attention_mask_cast")
            g.node.append(cast)
        replaced[id(heads_back)] = helper.make_node(
            "MultiHeadAttention", [q[0], k[0], v[0], "", mask], [out],
            name=f"raggrep_attention_{counts['attentions']}", domain="com.microsoft",
            num_heads=hidden // int(head),
        )
        counts["attentions"] += 1


def unpadded(g, producer, consumers, drop, renamed, replaced, counts) -> None:
    """Each masked MultiHeadAttention -> If(every token attended, the attention without its mask,
    the attention with it). ONNX Runtime's attention applies a mask by copying it under every
    head's scores and adding the product onto it: 17 % of the attention's time at 160 tokens,
    for nothing when no token is padding — always, for the engine, which embeds one text at a
    time. The branches read the graph's tensors from the outer scope; the condition is computed
    once, from `attention_mask`."""
    attentions = [n for n in g.node if n.op_type == "MultiHeadAttention" and len(n.input) == 5 and n.input[4]]
    if not attentions:
        return
    least, every = "raggrep_mask_min", "raggrep_every_token_attended"
    one = "raggrep_one"
    g.initializer.append(helper.make_tensor(one, onnx.TensorProto.INT64, [], [1]))
    g.node.extend([
        helper.make_node("ReduceMin", ["attention_mask"], [least], keepdims=0, name=least),
        helper.make_node("Equal", [least, one], [every], name=every),
    ])
    for n in attentions:
        attributes = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        out = n.output[0]

        def branch(inputs: list[str], name: str) -> onnx.GraphProto:
            node = helper.make_node("MultiHeadAttention", inputs, [f"{out}_{name}"], name=f"{n.name}_{name}",
                                    domain="com.microsoft", **attributes)
            result = helper.make_tensor_value_info(f"{out}_{name}", onnx.TensorProto.FLOAT, None)
            return helper.make_graph([node], f"{n.name}_{name}", [], [result])

        replaced[id(n)] = helper.make_node(
            "If", [every], [out], name=f"{n.name}_if",
            then_branch=branch(list(n.input[:3]), "unpadded"), else_branch=branch(list(n.input), "padded"),
        )
        counts["unpadded"] += 1


def reads(node: onnx.NodeProto) -> list[str]:
    """The tensors a node reads: its inputs, and what its subgraphs (an If's branches) read from
    the graph around them."""
    names = [i for i in node.input if i]
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            inner = attribute.g
            made = {o for m in inner.node for o in m.output} | {i.name for i in inner.initializer}
            names += [i for m in inner.node for i in reads(m) if i not in made]
    return names


def topological(g: onnx.GraphProto, nodes: list) -> list:
    """`nodes` in an order where each reads only what is made before it, without the ones no
    graph output depends on."""
    made_by = {o: n for n in nodes for o in n.output}
    live, stack = set(), [o.name for o in g.output]
    while stack:
        node = made_by.get(stack.pop())
        if node is None or id(node) in live:
            continue
        live.add(id(node))
        stack.extend(reads(node))
    ready = {i.name for i in g.input} | {i.name for i in g.initializer} | {""}
    order, waiting = [], [n for n in nodes if id(n) in live]
    while waiting:
        left = []
        for n in waiting:
            if all(i in ready for i in reads(n)):
                order.append(n)
                ready.update(n.output)
            else:
                left.append(n)
        if len(left) == len(waiting):
            raise SystemExit("rewrite_graph: the rewritten graph has a cycle")
        waiting = left
    return order


def sample_texts(directory: str, limit: int) -> list[str]:
    """Windows of 30 lines from the source files under `directory`, every seventh, up to `limit`."""
    texts = []
    for path in sorted(glob.glob(os.path.join(directory, "**", "*.*"), recursive=True)):
        if not path.endswith((".rs", ".py", ".go", ".js", ".ts")):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        texts += ["\n".join(lines[i : i + 30]) for i in range(0, len(lines), 30)]
    return texts[::7][:limit]


def embed(sess: ort.InferenceSession, tokenizer: Tokenizer, texts: list[str]) -> tuple[np.ndarray, float]:
    names = {i.name for i in sess.get_inputs()}
    out, started = [], 0.0
    for n, text in enumerate(texts):
        if n == min(3, len(texts) - 1):
            started = time.perf_counter()  # after a warm-up: the first runs set the session up
        enc = tokenizer.encode(text)
        ids = np.asarray([enc.ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.asarray([enc.attention_mask], dtype=np.int64)}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(None, feeds)[0][0]
        v = hidden.mean(axis=0)
        out.append(v / np.linalg.norm(v))
    return np.asarray(out), time.perf_counter() - started


def embed_pairs(sess: ort.InferenceSession, tokenizer: Tokenizer, texts: list[str]) -> list[np.ndarray]:
    """Texts two at a time in one padded batch, each pooled over its own tokens."""
    names = {i.name for i in sess.get_inputs()}
    out = []
    for a, b in zip(texts[0::2], texts[1::2]):
        encs = [tokenizer.encode(a).ids, tokenizer.encode(b).ids]
        width = max(map(len, encs))
        ids = np.asarray([e + [0] * (width - len(e)) for e in encs], dtype=np.int64)
        mask = np.asarray([[1] * len(e) + [0] * (width - len(e)) for e in encs], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(None, feeds)[0]
        pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    return out


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="a model directory: model.onnx and tokenizer.json")
    parser.add_argument("out", nargs="?", help="where the rewritten graph goes")
    parser.add_argument("--check", action="store_true", help="only say whether there is anything to rewrite")
    parser.add_argument("--texts", default=os.path.join(here, "..", "..", "server", "src"),
                        help="source files to check on (default: this repository's server/src)")
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--min-cosine", type=float, default=0.99)
    parser.add_argument("--mean-cosine", type=float, default=0.998)
    parser.add_argument("--min-padded-cosine", type=float, default=0.98)
    args = parser.parse_args()
    ort.set_default_logger_severity(3)

    source = os.path.join(args.model_dir, "model.onnx")
    model = onnx.load(source)
    counts = rewrite(model)
    left = counts["nan_guards"] + counts["gelus"] + counts["attentions"] + counts["unpadded"]
    if args.check:
        print(
            f"rewrite_graph: {source}: {counts['nan_guards']} NaN guards, {counts['gelus']} GELUs, "
            f"{counts['attentions']} attentions and {counts['unpadded']} masked attentions to rewrite"
        )
        sys.exit(1 if left else 0)
    if args.out is None:
        parser.error("OUT is required unless --check")
    if not left:
        sys.exit(f"rewrite_graph: nothing to rewrite in {source} (already rewritten, or another export)")
    onnx.checker.check_model(model)
    rewritten = model.SerializeToString()

    tokenizer = Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    tokenizer.enable_truncation(256)
    texts = sample_texts(args.texts, args.limit)
    if not texts:
        sys.exit(f"rewrite_graph: no source files under {args.texts}")
    old, new = engine_session(source, 1), engine_session(rewritten, 1)
    before, t_before = embed(old, tokenizer, texts)
    after, t_after = embed(new, tokenizer, texts)
    cos = (before * after).sum(axis=1)
    # Padded batches too: the attention's mask only matters there (the engine embeds one text
    # at a time, but a mask read wrongly must not pass).
    padded = np.concatenate([(a * b).sum(axis=1) for a, b in zip(*(embed_pairs(s, tokenizer, texts) for s in (old, new)))])
    print(
        f"rewrite_graph: {counts['nan_guards']} NaN guards dropped, {counts['gelus']} GELUs fused, "
        f"{counts['attentions']} attentions fused, {counts['unpadded']} attentions unmasked when nothing is "
        f"padded, {counts['initializers_dropped']} initializers dropped; "
        f"{len(texts)} texts: cosine to the input graph min {cos.min():.5f} mean {cos.mean():.6f} "
        f"(padded in pairs: min {padded.min():.5f}); {t_before:.1f} s -> {t_after:.1f} s on one thread "
        f"(x{t_before / t_after:.2f})"
    )
    if cos.min() < args.min_cosine or cos.mean() < args.mean_cosine or padded.min() < args.min_padded_cosine:
        sys.exit("rewrite_graph: the rewritten graph does not compute what the input graph does; not written")
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(rewritten)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
