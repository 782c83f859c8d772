"""scaled_dot_product_attention in the FX frontend: the registry's `attention` op, forward and derived backward.

torch.compile hands attention to a backend as `_scaled_dot_product_flash_attention_for_cpu` (the
forward: output and the log-sum-exp of each row) and its `_backward`. The output is one `attention(q, k,
v[, mask], scale, causal)` op (pyasc/ops/attention.py): GE keeps it whole when codegen has a kernel for
it, else lowers its decomposition. torch's masks become the op's additive mask: a bool attn_mask (True:
attend) as where(mask, 0, -inf), a float one as it is. is_causal is torch's top-left aligned triangle
(tril of an (L, S) matrix of ones): the op's causal=True when L == S, else that triangle as a mask (the op's
causal diagonal is aligned bottom-right). The log-sum-exp is computed beside it from the scores (only
a training step reads it; inference drops it). The backward differentiates the attention op with
pyasc.autodiff (its VJP comes from its decomposition), so the gradients are pyasc's own and the saved
log-sum-exp is not needed. Dropout is not supported (the node stays in PyTorch).
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


def _mask(cx: Lowering, q: Value, k: Value, is_causal: bool, mask: Any) -> tuple[Value | None, bool]:
    """(the additive mask operand or None, whether the op's causal=True says it) for torch's arguments."""
    L, S = q.type.shape[-2], k.type.shape[-2]
    if is_causal and L == S:
        return None, True
    if is_causal:
        keep = np.tril(np.ones((L, S), dtype=bool))  # torch's is_causal: the triangle of an (L, S) matrix
        return cx.graph.const(np.where(keep, 0.0, -np.inf).astype(np.float32), "float32", cx.loc), False
    if mask is None:
        return None, False
    m = cx.value(mask)
    if m.type.dtype == "bool":
        return cx.op("where", m, cx.value(0.0, "float32"), cx.value(-math.inf, "float32")), False
    return m, False


def _attention(cx: Lowering, q: Value, k: Value, v: Value, is_causal: bool, mask: Any, scale: Any) -> Value:
    m, causal = _mask(cx, q, k, is_causal, mask)
    scale = 1.0 / math.sqrt(q.type.shape[-1]) if scale is None else float(scale)
    return cx.op("attention", q, k, v, *([m] if m is not None else []), scale=scale, causal=causal,
                 has_mask=m is not None)


def _log_sum_exp(cx: Lowering, q: Value, k: Value, is_causal: bool, mask: Any, scale: Any) -> Value:
    """log(sum(exp(scores))) per query row, the scores as the attention op defines them (float32)."""
    m, causal = _mask(cx, q, k, is_causal, mask)
    scale = 1.0 / math.sqrt(q.type.shape[-1]) if scale is None else float(scale)
    nd = len(k.type.shape)
    kt = cx.op("transpose", cx.cast(k, "float32"), axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))
    scores = cx.op("mul", cx.op("matmul", cx.cast(q, "float32"), kt), cx.value(scale, "float32"))
    if m is not None:
        scores = cx.op("add", scores, cx.cast(m, "float32"))
    if causal:
        keep = cx.graph.const(np.tri(q.type.shape[-2], k.type.shape[-2], dtype=bool), "bool", cx.loc)
        scores = cx.op("where", keep, scores, cx.value(-math.inf, "float32"))
    top = cx.op("max", scores, axis=-1, keepdims=True)
    total = cx.op("sum", cx.op("exp", cx.op("sub", scores, top)), axis=-1, keepdims=True)
    lse = cx.op("add", top, cx.op("log", total))
    return cx.op("reshape", lse, shape=tuple(lse.type.shape[:-1]))


def _options(cx: Lowering, dropout_at: int, causal_at: int) -> tuple[bool, Any, Any]:
    if cx.arg(dropout_at, "dropout_p", 0.0):
        raise Unsupported("dropout in attention")
    return bool(cx.arg(causal_at, "is_causal", False)), cx.node.kwargs.get("attn_mask"), cx.node.kwargs.get("scale")


def _flash_forward(cx: Lowering) -> list[Value]:
    q, k, v = cx.values(cx.arg(0), cx.arg(1), cx.arg(2))
    is_causal, mask, scale = _options(cx, 3, 4)
    return [_attention(cx, q, k, v, is_causal, mask, scale), _log_sum_exp(cx, q, k, is_causal, mask, scale)]


def _flash_backward(cx: Lowering) -> list[Value]:
    grad, q, k, v = cx.values(cx.arg(0), cx.arg(1), cx.arg(2), cx.arg(3))
    is_causal, mask, scale = _options(cx, 6, 7)
    out = _attention(cx, q, k, v, is_causal, mask, scale)
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
