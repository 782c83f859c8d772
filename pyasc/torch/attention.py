"""scaled_dot_product_attention in the FX frontend: the plain pattern, forward and derived backward.

torch.compile hands attention to a backend as `_scaled_dot_product_flash_attention_for_cpu` (the
forward: output and the log-sum-exp of each row) and its `_backward`. Both are lowered to the plain
pattern as picoGPT-style numpy writes it, in pyasc's ops:

    scores = (q @ k^T) * scale
    scores = where(causal_mask, scores, -inf)        # is_causal: a constant lower-triangular mask
    out    = softmax(scores, axis=-1) @ v

(an `attn_mask` is applied the same way: a bool mask with where/-inf, a float mask added). The backward
rebuilds the pattern from q, k and v and differentiates it with pyasc.autodiff (the VJP rules of
matmul, mul, where and softmax), so the gradients are pyasc's own and the saved log-sum-exp is not
needed. An optimiser rewrite can recognise this pattern and fuse it into one attention kernel.
Dropout is not supported (the node stays in PyTorch).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .. import autodiff
from ..ir.graph import Value
from .fx_graph import Lowering, Unsupported

aten = torch.ops.aten


def _pattern(cx: Lowering, q: Value, k: Value, v: Value, is_causal: bool, mask: Any, scale: Any) -> tuple[Value, Value]:
    """(out, scores) of the attention pattern on graph values q (.., L, E), k (.., S, E), v (.., S, Ev)."""
    L, E = q.type.shape[-2], q.type.shape[-1]
    S = k.type.shape[-2]
    dt = q.type.dtype
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    nd = len(k.type.shape)
    kt = cx.op("transpose", k, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))
    scores = cx.op("mul", cx.op("matmul", q, kt), cx.value(scale, dt))
    if is_causal:
        keep = cx.graph.const(np.tril(np.ones((L, S), dtype=bool)), "bool", cx.loc)
        scores = cx.op("where", keep, scores, cx.value(-math.inf, dt))
    if mask is not None:
        m = cx.value(mask)
        if m.type.dtype == "bool":
            scores = cx.op("where", m, scores, cx.value(-math.inf, dt))
        else:
            scores = cx.op("add", scores, cx.cast(m, dt))
    out = cx.op("matmul", cx.op("softmax", scores, axis=-1), v)
    return out, scores


def _options(cx: Lowering, dropout_at: int, causal_at: int) -> tuple[bool, Any, Any]:
    if cx.arg(dropout_at, "dropout_p", 0.0):
        raise Unsupported("dropout in attention")
    return bool(cx.arg(causal_at, "is_causal", False)), cx.node.kwargs.get("attn_mask"), cx.node.kwargs.get("scale")


def _flash_forward(cx: Lowering) -> list[Value]:
    q, k, v = cx.values(cx.arg(0), cx.arg(1), cx.arg(2))
    is_causal, mask, scale = _options(cx, 3, 4)
    out, scores = _pattern(cx, q, k, v, is_causal, mask, scale)
    m = cx.op("max", scores, axis=-1, keepdims=True)
    total = cx.op("sum", cx.op("exp", cx.op("sub", scores, m)), axis=-1, keepdims=True)
    lse = cx.op("add", m, cx.op("log", total))
    return [out, cx.op("reshape", cx.cast(lse, "float32"), shape=tuple(lse.type.shape[:-1]))]


def _flash_backward(cx: Lowering) -> list[Value]:
    grad, q, k, v = cx.values(cx.arg(0), cx.arg(1), cx.arg(2), cx.arg(3))
    is_causal, mask, scale = _options(cx, 6, 7)
    out, _ = _pattern(cx, q, k, v, is_causal, mask, scale)
    grads = autodiff.backward(cx.graph, [out], [cx.cast(grad, out.type.dtype)], [q, k, v])
    return [g if g is not None else cx.op("full", shape=tuple(x.type.shape), fill_value=0.0, dtype=x.type.dtype)
            for g, x in zip(grads, (q, k, v))]


ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: _flash_forward,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: _flash_backward,
}

#: ops torch's core decompositions would expand, which the FX frontend lowers itself (the backend keeps
#: them out of the decomposition table)
KEPT = (aten._scaled_dot_product_flash_attention_for_cpu.default,)
