"""The FX frontend's entries for convolutions, pooling and inference batch norm (merged into aten_table.TABLE).

aten.convolution / conv2d (2-D, not transposed) -> pyasc's conv2d; a 1-D convolution (nn.Conv1d) is the
conv2d of its input and weight with a height of 1; max_pool2d(_with_indices) -> max_pool2d
(the indices are not computed: a node whose indices are read stays in PyTorch); avg_pool2d -> avg_pool2d
(no divisor_override); _adaptive_avg_pool2d -> avg_pool2d when the bins are even (the input size a multiple
of the output size), else each bin's sum (torch's bins: start floor(i*H/out), end ceil((i+1)*H/out), which
may overlap) summed rows then columns, over the constant bin sizes (its backward spreads each bin's grad
back likewise); batch norm in inference (running statistics) -> batch_norm, which GE folds into a preceding
conv. Arguments the ops do not take raise `Unsupported` (a reported graph break). The ops compute in the
dtype torch gives the result, like the table's other entries.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np
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
    if cx.rank(w) == 3:
        return _conv1d(cx, groups_at)
    if cx.rank(w) != 4:
        raise Unsupported(f"a {cx.rank(w) - 2}-D convolution (pyasc has conv2d)")
    dt = cx.out_dtype
    tensors = [cx.value(x, dt), cx.value(w, dt)] + ([cx.value(b, dt)] if b is not None else [])
    return cx.op("conv2d", *tensors, stride=_pair(cx.arg(3, "stride", 1)), padding=_pair(cx.arg(4, "padding", 0)),
                 dilation=_pair(cx.arg(5, "dilation", 1)), groups=int(cx.arg(groups_at, "groups", 1)),
                 has_bias=b is not None)


def _along_width(v: Any, unit: int) -> tuple[int, int]:
    """A 1-D convolution's stride / padding / dilation as conv2d's pair: `unit` on the height of 1."""
    if isinstance(v, str):
        raise Unsupported(f"padding={v!r}")
    (k,) = v if isinstance(v, (list, tuple)) else (v,)
    return (unit, int(k))


def _conv1d(cx: Lowering, groups_at: int) -> Any:
    """(N, C, L) with an (O, C/groups, K) weight: conv2d of (N, C, 1, L) and (O, C/groups, 1, K)."""
    x, w, b = cx.arg(0), cx.arg(1), cx.arg(2, "bias")
    if cx.rank(x) != 3:
        raise Unsupported(f"a 1-D convolution of a rank-{cx.rank(x)} input")
    dt = cx.out_dtype
    (n, c, length), (o, cg, k) = cx.shape(x), cx.shape(w)
    tensors = [cx.op("reshape", cx.value(x, dt), shape=(n, c, 1, length)),
               cx.op("reshape", cx.value(w, dt), shape=(o, cg, 1, k))] + ([cx.value(b, dt)] if b is not None else [])
    y = cx.op("conv2d", *tensors, stride=_along_width(cx.arg(3, "stride", 1), 1),
              padding=_along_width(cx.arg(4, "padding", 0), 0), dilation=_along_width(cx.arg(5, "dilation", 1), 1),
              groups=int(cx.arg(groups_at, "groups", 1)), has_bias=b is not None)
    return cx.op("reshape", y, shape=cx.shape())


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


def _adaptive_avg_pool(cx: Lowering) -> Any:
    """_adaptive_avg_pool2d(x, output_size) on (N, C, H, W) or (C, H, W)."""
    x = cx.arg(0)
    *_, h, w = cx.shape(x)
    oh, ow = cx.shape()[-2:]
    v = cx.value(x, cx.out_dtype)
    if h % oh == 0 and w % ow == 0 and cx.rank(x) == 4:
        window = (h // oh, w // ow)
        return cx.op("avg_pool2d", v, kernel_size=window, stride=window, padding=0, ceil_mode=False,
                     count_include_pad=True)
    rows, cols = _bins(h, oh), _bins(w, ow)
    v = _bin_sums(cx, v, -2, rows)
    v = _bin_sums(cx, v, -1, cols)
    sizes = np.outer([e - s for s, e in rows], [e - s for s, e in cols]).astype(np.float32)
    return cx.op("div", v, cx.graph.const(sizes, cx.out_dtype, cx.loc))


def _bins(size: int, out: int) -> list[tuple[int, int]]:
    """torch's adaptive pooling bins of an axis: [floor(i*size/out), ceil((i+1)*size/out))."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _bin_sums(cx: Lowering, v: Any, axis: int, bins: list[tuple[int, int]]) -> Any:
    """The sum of each bin along `axis` (negative), the bins side by side on that axis."""
    shape = tuple(v.type.shape)
    ax = axis % len(shape)
    sums = []
    for start, stop in bins:
        starts = tuple(start if i == ax else 0 for i in range(len(shape)))
        stops = tuple(stop if i == ax else d for i, d in enumerate(shape))
        part = cx.op("slice", v, starts=starts, stops=stops, steps=(1,) * len(shape))
        sums.append(cx.op("sum", part, axis=ax, keepdims=True))
    return cx.op("concat", *sums, axis=ax, kind="concatenate") if len(sums) > 1 else sums[0]


def _adaptive_avg_pool_backward(cx: Lowering) -> Any:
    """_adaptive_avg_pool2d_backward(grad, x): each input position gets grad / bin size of every bin holding
    it; the bins are separable, so the rows then the columns are spread with constant membership masks."""
    grad, x = cx.arg(0), cx.arg(1)
    *_, h, w = cx.shape(x)
    oh, ow = cx.shape(grad)[-2:]
    dt = cx.out_dtype
    rows, cols = _bins(h, oh), _bins(w, ow)
    sizes = np.outer([e - s for s, e in rows], [e - s for s, e in cols]).astype(np.float32)
    g = cx.op("div", cx.value(grad, dt), cx.graph.const(sizes, dt, cx.loc))
    zero = cx.value(0, dt)
    in_row = cx.graph.const(_membership(rows, h)[:, :, None], "bool", cx.loc)             # (H, oh, 1)
    g = cx.op("sum", cx.op("where", in_row, cx.op("expand_dims", g, axis=-3), zero), axis=-2)  # (.., H, ow)
    in_col = cx.graph.const(_membership(cols, w), "bool", cx.loc)                           # (W, ow)
    return cx.op("sum", cx.op("where", in_col, cx.op("expand_dims", g, axis=-2), zero), axis=-1)


def _membership(bins: list[tuple[int, int]], size: int) -> np.ndarray:
    """(size, bins) bool: position p lies in bin i."""
    pos = np.arange(size)[:, None]
    return (pos >= np.array([s for s, _ in bins])) & (pos < np.array([e for _, e in bins]))


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
    aten.avg_pool2d.default: _avg_pool, aten._adaptive_avg_pool2d.default: _adaptive_avg_pool,
    aten._adaptive_avg_pool2d_backward.default: _adaptive_avg_pool_backward,
    aten._native_batch_norm_legit_no_training.default: lambda cx: _batch_norm(cx, 6),
    aten.native_batch_norm.default: _native_batch_norm,
}
