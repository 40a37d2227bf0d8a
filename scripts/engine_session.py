"""An ONNX Runtime session built as the engine builds its own (server/src/embed/onnx.rs,
`new_session`), for the Python scripts that must compute what the engine computes: the reference
vectors the Rust tests compare against, raw ONNX Runtime beside the engine in the benchmarks,
the graph rewrite's check.

ONNX Runtime's fused skip layer norm is slower on CPU than its two kernels, and the int8
activations after it round a little differently, so the engine leaves it out, and so does this.
"""

from __future__ import annotations

import onnxruntime as ort

DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


def engine_session(model: str | bytes, threads: int) -> ort.InferenceSession:
    """`model` (a path, or the graph's bytes) on the CPU, every graph optimisation but
    `DISABLED_OPTIMIZERS`, `threads` for each inference, one inter-op thread, warnings off."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(
        model, options, providers=["CPUExecutionProvider"], disabled_optimizers=DISABLED_OPTIMIZERS
    )
