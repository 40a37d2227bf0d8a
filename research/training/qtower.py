"""MiniLM (all-MiniLM-L6-v2) encoder in JAX, read from and written back to raggrep's fp32 ONNX graph.

Used by train_query_tower.py (issue 16: query-side fine-tuning with frozen document vectors).

* `load_params(onnx_path)` reads the fp32 graph of scripts/bootstrap.sh
  (models/all-minilm-l6-v2-fp32/model.onnx) with the `onnx` package and returns
  ({checkpoint name: np.float32 array}, {checkpoint name: ONNX initializer name}, config).
  Linear weights are kept as the graph stores them, [in, out]. The names follow the graph:
  the `inner.<name>` initializers are the checkpoint tensors themselves; an anonymous MatMul
  weight (`val_N`) is named after the bias initializer of the Add that follows its MatMul
  (`inner.<layer>.bias` -> `<layer>.weight`), the same mapping bootstrap.py's build_fp32 uses.
  The LayerNorm epsilon and the attention scale are read from the graph, not assumed.
* `forward(params, ids, mask, cfg)` is the BERT encoder (post-LN, exact erf GELU, additive
  attention mask with float32 min as the graph does) plus raggrep's pooling: mean over the
  attention mask, L2 normalisation. token_type_ids are always 0 (raggrep feeds zeros).
* `write_onnx(src, dst, params, names)` writes a copy of the graph with the initializers
  replaced (same nodes, same names, same order) — the query-tower fp32 model.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

HEADS = 12


class Tower(NamedTuple):
    """Where a trained tower's files live, for export_query_tower.py and verify_query_tower.py."""
    subdir: str        # under training/
    fp32_id: str       # exported model ids (directories under subdir)
    int8_id: str
    params: str        # the trainer's output in subdir
    trainer: str
    export_json: str   # under out/
    cache_tag: str     # embed.py vector caches of the exports


TOWERS = {
    "query": Tower("qtower", "all-minilm-l6-v2-qtower-fp32", "all-minilm-l6-v2-qtower-int8", "params.npz",
                   "train_query_tower.py", "query_tower_export.json", "qtower"),
    "document": Tower("doctower", "all-minilm-l6-v2-code2-fp32", "all-minilm-l6-v2-code2-int8",
                      "doc_tower-params.npz", "train_doc_tower.py", "doc_tower_export.json", "doctower"),
}


def load_params(onnx_path: str):
    import onnx
    from onnx import numpy_helper

    m = onnx.load(onnx_path)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    consumers: dict[str, list] = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    params: dict[str, np.ndarray] = {}
    names: dict[str, str] = {}
    for name, t in inits.items():
        if name.startswith("inner.") and t.data_type == onnx.TensorProto.FLOAT:
            params[name[len("inner."):]] = numpy_helper.to_array(t).copy()
            names[name[len("inner."):]] = name
    for n in g.node:
        if n.op_type != "MatMul" or n.input[1] not in inits:
            continue
        adds = [a for a in consumers.get(n.output[0], []) if a.op_type == "Add"]
        bias = [i for a in adds for i in a.input if i.startswith("inner.") and i.endswith(".bias")]
        if len(adds) != 1 or len(bias) != 1:
            raise SystemExit(f"MatMul {n.name}: no unique bias Add; unexpected graph")
        key = bias[0][len("inner."):-len(".bias")] + ".weight"
        params[key] = numpy_helper.to_array(inits[n.input[1]]).copy()
        names[key] = n.input[1]
    eps = {round(a.f, 20) for n in g.node if n.op_type == "LayerNormalization"
           for a in n.attribute if a.name == "epsilon"}
    if len(eps) != 1:
        raise SystemExit(f"expected one LayerNorm epsilon, found {eps}")
    layers = 1 + max(int(k.split(".")[2]) for k in params if k.startswith("encoder.layer."))
    hidden = params["embeddings.word_embeddings.weight"].shape[1]
    cfg = {"layers": layers, "hidden": hidden, "heads": HEADS, "eps": float(eps.pop())}
    # The graph scales q and k each by head_dim ** -0.25 (val_88 = 0.42044820 for 32).
    scales = [float(numpy_helper.to_array(inits[i])) for n in g.node if n.op_type == "Mul"
              for i in n.input if i in inits and inits[i].data_type == onnx.TensorProto.FLOAT
              and numpy_helper.to_array(inits[i]).size == 1
              and abs(float(numpy_helper.to_array(inits[i])) - (hidden // HEADS) ** -0.25) < 1e-6]
    if not scales:
        raise SystemExit("attention scale head_dim**-0.25 not found in the graph; unexpected graph")
    return params, names, cfg


def forward(p: dict, ids, mask, cfg: dict):
    """ids, mask: int32 [B, L]. Returns normalize(meanpool(last_hidden_state)) [B, H], float32."""
    import jax
    import jax.numpy as jnp

    eps, H, nh = cfg["eps"], cfg["hidden"], cfg["heads"]
    hd = H // nh
    B, L = ids.shape

    def ln(x, w, b):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + eps) * w + b

    x = (p["embeddings.word_embeddings.weight"][ids]
         + p["embeddings.token_type_embeddings.weight"][0]
         + p["embeddings.position_embeddings.weight"][:L][None])
    x = ln(x, p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"])
    maskf = mask.astype(jnp.float32)
    add_mask = jnp.where(mask[:, None, None, :] > 0, 0.0, jnp.finfo(jnp.float32).min)
    s = hd ** -0.25
    for i in range(cfg["layers"]):
        pre = f"encoder.layer.{i}."

        def lin(x, name):
            return x @ p[pre + name + ".weight"] + p[pre + name + ".bias"]

        def heads(t):
            return t.reshape(B, L, nh, hd).transpose(0, 2, 1, 3)

        q = heads(lin(x, "attention.self.query")) * s
        k = heads(lin(x, "attention.self.key")) * s
        v = heads(lin(x, "attention.self.value"))
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) + add_mask, axis=-1)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(B, L, H)
        x = ln(lin(ctx, "attention.output.dense") + x,
               p[pre + "attention.output.LayerNorm.weight"], p[pre + "attention.output.LayerNorm.bias"])
        h = lin(x, "intermediate.dense")
        h = 0.5 * h * (1.0 + jax.lax.erf(h / np.float32(np.sqrt(2.0))))
        x = ln(lin(h, "output.dense") + x,
               p[pre + "output.LayerNorm.weight"], p[pre + "output.LayerNorm.bias"])
    v = (x * maskf[..., None]).sum(1) / jnp.maximum(maskf.sum(1, keepdims=True), 1.0)
    return v / jnp.maximum(jnp.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def adamw(tp: dict, g: dict, m: dict, v: dict, step, lr, decay: dict, weight_decay: float):
    """One AdamW step (b1 0.9, b2 0.999, eps 1e-8, decoupled weight decay on the tensors `decay`
    marks) inside a jitted train step: (new params, new m, new v, step + 1). Used by the query
    and document towers."""
    import jax.numpy as jnp

    b1, b2, eps = 0.9, 0.999, 1e-8
    step = step + 1
    new_tp, new_m, new_v = {}, {}, {}
    for k in tp:
        new_m[k] = b1 * m[k] + (1 - b1) * g[k]
        new_v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k]
        upd = (new_m[k] / (1 - b1 ** step)) / (jnp.sqrt(new_v[k] / (1 - b2 ** step)) + eps)
        if decay[k]:
            upd = upd + weight_decay * tp[k]
        new_tp[k] = tp[k] - lr * upd
    return new_tp, new_m, new_v, step


def tokenizer(model_dir: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.enable_truncation(256)
    tok.no_padding()
    return tok


def pad_batch(encs, rows: int | None = None, multiple: int = 16, max_len: int = 256):
    """ids, mask as int32 [rows, L] with L the longest rounded up to `multiple` (few jit shapes)."""
    L = max(len(e.ids) for e in encs)
    L = min(max_len, ((L + multiple - 1) // multiple) * multiple)
    n = rows or len(encs)
    ids = np.zeros((n, L), dtype=np.int32)
    mask = np.zeros((n, L), dtype=np.int32)
    for r, e in enumerate(encs):
        ids[r, :len(e.ids)] = e.ids
        mask[r, :len(e.ids)] = 1
    # filler rows (rows > len(encs)) get one unmasked token: an all-masked row would be NaN
    # (softmax over -inf only), and NaN * weight 0 is still NaN in the loss and its gradient
    ids[len(encs):, 0] = encs[0].ids[0]
    mask[len(encs):, 0] = 1
    return ids, mask


def write_onnx(src: str, dst: str, params: dict, names: dict, doc: str) -> None:
    """Copy of the graph at `src` with every parameter in `params` replaced (same initializer
    names, dtypes and shapes; nodes untouched)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(src)
    by_init = {v: k for k, v in names.items()}
    done = set()
    for i, t in enumerate(m.graph.initializer):
        key = by_init.get(t.name)
        if key is None or key not in params:
            continue
        old = numpy_helper.to_array(t)
        new = np.ascontiguousarray(np.asarray(params[key], dtype=np.float32))
        if new.shape != old.shape:
            raise SystemExit(f"{key}: shape {new.shape} != graph {old.shape}")
        m.graph.initializer[i].CopyFrom(numpy_helper.from_array(new, name=t.name))
        done.add(key)
    missing = set(params) - done
    if missing:
        raise SystemExit(f"parameters not written: {sorted(missing)[:5]}")
    m.doc_string = doc
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def dequantized_params(int8_path: str, params: dict, names: dict) -> dict:
    """The parameters of an int8 export (export_query_tower.py: the fp32 graph's initializers
    replaced, then quantize_dynamic), read back as fp32: (q - zero_point) * scale per channel.
    `params`/`names` are load_params() of the fp32 graph it was exported from, which gives the
    initializer names; a tensor the export kept in fp32 (biases, LayerNorm) is read as is.
    Used to continue training a shipped tower whose fp32 params.npz is gone: the result differs
    from those params only by the int8 rounding the engine already runs with. start_params
    checks the result against the graph."""
    import onnx
    from onnx import numpy_helper

    g = onnx.load(int8_path).graph
    inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    # MatMulInteger quantizes weights per output column; a Gather'ed table's DequantizeLinear
    # says its axis.
    axis_of = {}
    for n in g.node:
        if n.op_type == "DequantizeLinear":
            ax = next((a.i for a in n.attribute if a.name == "axis"), 1)
            axis_of[n.input[1]] = ax
    out = {}
    for key, init in names.items():
        if init in inits:
            out[key] = inits[init].astype(np.float32)
            continue
        q, scale, zp = (inits.get(f"{init}_{s}") for s in ("quantized", "scale", "zero_point"))
        if q is None or scale is None or zp is None:
            raise SystemExit(f"{int8_path}: no fp32 or int8 copy of {key} ({init})")
        shape = [1] * q.ndim
        if scale.size > 1:
            shape[axis_of.get(f"{init}_scale", q.ndim - 1)] = scale.size
        w = (q.astype(np.float32) - zp.astype(np.float32).reshape(shape)) * scale.astype(np.float32).reshape(shape)
        out[key] = w
    return out


def params_sha256(params: dict) -> str:
    """sha256 of a tower's tensors (names and fp32 bytes, sorted by name): what the trainers
    record, independent of how the npz file was written."""
    import hashlib

    h = hashlib.sha256()
    for k in sorted(params):
        h.update(k.encode())
        h.update(np.ascontiguousarray(params[k], dtype=np.float32).tobytes())
    return h.hexdigest()


def start_params(path: str, params: dict, names: dict, keep=frozenset()) -> dict:
    """The parameters to continue training from: a tower's params.npz as the trainers save it,
    or an int8 export read back by dequantized_params. From an int8 export, the tensors named
    in `keep` stay the base model's: the frozen ones, which the export holds only rounded."""
    if path.endswith(".npz"):
        with np.load(path) as z:
            got = {k: z[k] for k in z.files}
        keep = frozenset()
    else:
        got = dequantized_params(path, params, names)
    bad = sorted(k for k in set(params) ^ set(got) if k not in keep)
    bad += sorted(k for k in params if k in got and got[k].shape != params[k].shape)
    if bad:
        raise SystemExit(f"{path}: tensors do not match the model ({bad[:3]}...)")
    return {k: params[k] if k in keep else got[k].astype(params[k].dtype) for k in params}
