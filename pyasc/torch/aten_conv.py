"""The FX frontend's entries for convolutions, pooling and inference batch norm (merged into aten_table.TABLE).

aten.convolution / conv2d (2-D, not transposed) -> pyasc's conv2d; max_pool2d(_with_indices) -> max_pool2d
(the indices are not computed: a node whose indices are read stays in PyTorch); avg_pool2d -> avg_pool2d
(no divisor_override); batch norm in inference (running statistics) -> batch_norm, which GE folds into a
preceding conv. Arguments the ops do not take raise `Unsupported` (a reported graph break). The ops compute
in the dtype torch gives the result, like the table's other entries.
"""
from __future__ import annotations

import operator
from typing import Any

import torch

from .fx_graph import Entry, Lowering, Unsupported

aten = torch.ops.aten


def _pair(v: Any) -> Any:
    """torch's int-or-list arguments as pyasc takes them (an int, or a pair)."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return int(v[0])
        if len(v) == 2:
            return (int(v[0]), int(v[1]))
        raise Unsupported(f"{len(v)}-D window arguments {v!r} (pyasc has 2-D convolution and pooling)")
    return v


def _conv(cx: Lowering, groups_at: int) -> Any:
    x, w, b = cx.arg(0), cx.arg(1), cx.arg(2, "bias")
    if cx.rank(w) != 4:
        raise Unsupported(f"a {cx.rank(w) - 2}-D convolution (pyasc has conv2d)")
    dt = cx.out_dtype
    tensors = [cx.value(x, dt), cx.value(w, dt)] + ([cx.value(b, dt)] if b is not None else [])
    return cx.op("conv2d", *tensors, stride=_pair(cx.arg(3, "stride", 1)), padding=_pair(cx.arg(4, "padding", 0)),
                 dilation=_pair(cx.arg(5, "dilation", 1)), groups=int(cx.arg(groups_at, "groups", 1)),
                 has_bias=b is not None)


def _convolution(cx: Lowering) -> Any:
    """convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)."""
    if cx.arg(6, "transposed", False):
        raise Unsupported("transposed convolution")
    return _conv(cx, 8)


def _pool_window(cx: Lowering) -> dict[str, Any]:
    stride = cx.arg(2, "stride", None)
    return {"kernel_size": _pair(cx.arg(1, "kernel_size")), "stride": None if stride in ((), [], None) else _pair(stride),
            "padding": _pair(cx.arg(3, "padding", 0))}


def _max_pool(cx: Lowering) -> Any:
    """max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)."""
    if _pair(cx.arg(4, "dilation", 1)) not in (1, (1, 1)):
        raise Unsupported("max pooling with dilation")
    return cx.op("max_pool2d", cx.value(cx.arg(0), cx.out_dtype), ceil_mode=bool(cx.arg(5, "ceil_mode", False)),
                 **_pool_window(cx))


def _max_pool_with_indices(cx: Lowering) -> list[Any]:
    if any(u.target is operator.getitem and u.args[1] == 1 for u in cx.node.users):
        raise Unsupported("max pooling whose indices are used")
    return [_max_pool(cx), None]


def _avg_pool(cx: Lowering) -> Any:
    """avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)."""
    if cx.arg(6, "divisor_override", None) is not None:
        raise Unsupported("avg pooling with divisor_override")
    return cx.op("avg_pool2d", cx.value(cx.arg(0), cx.out_dtype), ceil_mode=bool(cx.arg(4, "ceil_mode", False)),
                 count_include_pad=bool(cx.arg(5, "count_include_pad", True)), **_pool_window(cx))


def _batch_norm(cx: Lowering, eps_at: int) -> list[Any]:
    """(y, None, None): batch norm with running statistics (x, weight, bias, mean, var, ...); the saved
    statistics are not computed (nothing reads them in inference)."""
    x, w, b, mean, var = (cx.arg(i) for i in range(5))
    if mean is None or var is None:
        raise Unsupported("batch norm without running statistics")
    if any(u.target is operator.getitem and u.args[1] != 0 for u in cx.node.users):
        raise Unsupported("batch norm whose saved statistics are used (training)")
    dt = cx.out_dtype
    tensors = [cx.value(x, dt), cx.value(mean), cx.value(var)] + [cx.value(p) for p in (w, b) if p is not None]
    y = cx.op("batch_norm", *tensors, eps=float(cx.arg(eps_at, "eps", 1e-5)), has_weight=w is not None,
              has_bias=b is not None)
    return [cx.cast(y, dt), None, None]


def _native_batch_norm(cx: Lowering) -> list[Any]:
    """native_batch_norm(x, weight, bias, mean, var, training, momentum, eps): inference only."""
    if cx.arg(5, "training", False):
        raise Unsupported("batch norm in training mode (batch statistics)")
    return _batch_norm(cx, 7)


TABLE: dict[Any, Entry] = {
    aten.convolution.default: _convolution, aten.conv2d.default: lambda cx: _conv(cx, 6),
    aten.max_pool2d.default: _max_pool, aten.max_pool2d_with_indices.default: _max_pool_with_indices,
    aten.avg_pool2d.default: _avg_pool,
    aten._native_batch_norm_legit_no_training.default: lambda cx: _batch_norm(cx, 6),
    aten.native_batch_norm.default: _native_batch_norm,
}
