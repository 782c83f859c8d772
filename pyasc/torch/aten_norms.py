"""The FX frontend's entries for statistics and norms (merged into aten_table.TABLE).

- var.correction / var_mean.correction -> mean and sum of squared deviations (var_mean: both results);
- native_layer_norm (over the last axis) -> pyasc's layer_norm op; native_group_norm -> per (sample, group)
  statistics over the group's channels and positions, then the per-channel affine;
  _native_batch_norm_legit.no_stats (instance norm, and batch norm without running statistics) ->
  per-channel statistics over every other axis. These return torch's saved (mean, rstd) too: in inference
  nothing reads them and the normalisation is pyasc's layer_norm op (one row kernel); when a training graph
  keeps them for the backward they come from the same row reductions as the result;
- linalg_vector_norm -> pyasc's norm of the reduced axes flattened into one (numpy's norm reads two axes as a
  matrix norm), any ord; _cdist_forward -> that norm of the pairwise differences (direct differences, never
  torch's matmul identity for p=2, which cancels catastrophically for close points).
Statistics compute in float32 (float16 inputs too) and come back in torch's dtype.
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
import torch

from ..ir.graph import Value
from .fx_graph import Entry, Lowering, Unsupported

aten = torch.ops.aten


def reduced_axes(cx: Lowering, x: Any, dims: Any) -> tuple[int, ...] | None:
    """torch's dim argument (an int, a list, None or [] for every axis) as non-negative axes (None: all)."""
    if dims is None or dims == []:
        return None
    dims = [dims] if isinstance(dims, int) else list(dims)
    return tuple(cx.axis(d, x) for d in dims)


def _var_and_mean(cx: Lowering) -> tuple[Value, Value]:
    """(var, mean) of var(_mean).correction(x, dim=None, *, correction=None, keepdim=False)."""
    x = cx.arg(0)
    axes = reduced_axes(cx, x, cx.arg(1, "dim")) or tuple(range(cx.rank(x)))
    correction = cx.node.kwargs.get("correction", 1)
    correction = 1 if correction is None else correction
    keep = bool(cx.node.kwargs.get("keepdim", False))
    count = int(np.prod([cx.shape(x)[a] for a in axes]))
    xs = cx.value(x, cx.out_dtype)
    mean = cx.op("mean", xs, axis=axes, keepdims=True)
    centred = cx.op("sub", xs, mean)
    total = cx.op("sum", cx.op("mul", centred, centred), axis=axes, keepdims=keep)
    var = cx.op("div", total, cx.value(float(count - correction), cx.out_dtype))
    if not keep:
        mean = cx.op("reshape", mean, shape=tuple(var.type.shape))
    return var, mean


def _saved_used(cx: Lowering) -> bool:
    """Whether a norm's saved statistics (results 1 and 2) are read: training keeps them for the backward."""
    return any(u.target is operator.getitem and u.args[1] in (1, 2) for u in cx.node.users)


def _row_norm(cx: Lowering, rows: Value, eps: float, saved: bool) -> tuple[Value, Value | None, Value | None]:
    """(normalised rows, mean, rstd) over the last axis of float32 rows; the statistics only when `saved`
    (then of shape rows.shape[:-1] + (1,))."""
    if not saved:
        return cx.op("layer_norm", rows, eps=eps, has_weight=False, has_bias=False), None, None
    mean = cx.op("mean", rows, axis=-1, keepdims=True)
    d = cx.op("sub", rows, mean)
    var = cx.op("mean", cx.op("mul", d, d), axis=-1, keepdims=True)
    rstd = cx.op("rsqrt", cx.op("add", var, cx.value(eps, "float32")))
    return cx.op("mul", d, rstd), mean, rstd


def _affine(cx: Lowering, y: Value, weight: Any, bias: Any) -> Value:
    """y * weight + bias with (C,) parameters on axis 1 of y."""
    rank = len(y.type.shape)
    for param, op in ((weight, "mul"), (bias, "add")):
        if param is not None:
            p = cx.value(param, "float32")
            if rank > 2:
                p = cx.op("reshape", p, shape=(p.type.shape[0],) + (1,) * (rank - 2))
            y = cx.op(op, y, p)
    return y


def _layer_norm(cx: Lowering) -> list[Any]:
    """native_layer_norm(x, normalized_shape, weight, bias, eps) -> (y, mean, rstd). In inference only y is
    used: pyasc's layer_norm op with the affine in it."""
    x, shape = cx.arg(0), cx.arg(1)
    w, b, eps = cx.arg(2, "weight"), cx.arg(3, "bias"), float(cx.arg(4, "eps", 1e-5))
    if len(shape) != 1:
        raise Unsupported("layer norm over more than the last axis")
    if not _saved_used(cx):
        tensors = [cx.value(x)] + [cx.value(t) for t in (w, b) if t is not None]
        return [cx.op("layer_norm", *tensors, eps=eps, has_weight=w is not None, has_bias=b is not None), None, None]
    y, mean, rstd = _row_norm(cx, cx.value(x, "float32"), eps, True)
    if w is not None:
        y = cx.op("mul", y, cx.value(w, "float32"))
    if b is not None:
        y = cx.op("add", y, cx.value(b, "float32"))
    return [y, mean, rstd]


def _group_norm(cx: Lowering) -> list[Any]:
    """native_group_norm(x, weight, bias, N, C, HxW, group, eps) -> (y, mean (N, group), rstd (N, group))."""
    x, weight, bias = cx.arg(0), cx.arg(1), cx.arg(2)
    groups, eps = int(cx.arg(6)), float(cx.arg(7))
    shape = cx.shape(x)
    n = shape[0]
    rows = cx.op("reshape", cx.value(x, "float32"), shape=(n, groups, math.prod(shape) // (n * groups)))
    y, mean, rstd = _row_norm(cx, rows, eps, _saved_used(cx))
    y = _affine(cx, cx.op("reshape", y, shape=shape), weight, bias)
    stats = [None if s is None else cx.op("reshape", s, shape=(n, groups)) for s in (mean, rstd)]
    return [y] + stats


def _batch_norm_batch_stats(cx: Lowering) -> list[Any]:
    """_native_batch_norm_legit.no_stats(x, weight, bias, training, momentum, eps): statistics of each channel
    (axis 1) over the batch and positions (instance norm reaches it with the instances as channels)."""
    x, weight, bias, eps = cx.arg(0), cx.arg(1), cx.arg(2), float(cx.arg(5, "eps", 1e-5))
    shape = cx.shape(x)
    c = shape[1]
    v = cx.value(x, "float32")
    if shape[0] != 1:  # channels first: each channel's values are one row
        v = cx.op("transpose", v, axes=(1, 0) + tuple(range(2, len(shape))))
    rows = cx.op("reshape", v, shape=(c, math.prod(shape) // c))
    y, mean, rstd = _row_norm(cx, rows, eps, _saved_used(cx))
    moved = (shape[1], shape[0]) + shape[2:]
    y = cx.op("reshape", y, shape=moved if shape[0] != 1 else shape)
    if shape[0] != 1:
        y = cx.op("transpose", y, axes=(1, 0) + tuple(range(2, len(shape))))
    y = _affine(cx, y, weight, bias)
    stats = [None if s is None else cx.op("reshape", s, shape=(c,)) for s in (mean, rstd)]
    return [y] + stats


def _vector_norm_of(cx: Lowering, v: Value, axes: tuple[int, ...], ord: Any,  # noqa: A002 - torch's name
                    out_shape: tuple[int, ...]) -> Value:
    """pyasc's vector norm over `axes` of v, reshaped to `out_shape` (torch's, keepdim or not)."""
    shape = tuple(v.type.shape)
    kept = tuple(a for a in range(len(shape)) if a not in axes)
    perm = kept + tuple(sorted(axes))
    if perm != tuple(range(len(shape))):
        v = cx.op("transpose", v, axes=perm)
    flat = tuple(shape[a] for a in kept) + (math.prod(shape[a] for a in axes),)
    if tuple(v.type.shape) != flat:
        v = cx.op("reshape", v, shape=flat)
    r = cx.op("norm", v, ord=float(ord), axis=-1, keepdims=False)
    return r if tuple(r.type.shape) == out_shape else cx.op("reshape", r, shape=out_shape)


def _vector_norm(cx: Lowering) -> Any:
    """linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)."""
    x = cx.arg(0)
    axes = reduced_axes(cx, x, cx.arg(2, "dim")) or tuple(range(cx.rank(x)))
    return _vector_norm_of(cx, cx.value(x, cx.out_dtype), axes, cx.arg(1, "ord", 2), cx.shape())


def _cdist(cx: Lowering) -> Any:
    """_cdist_forward(x1 (.., P, M), x2 (.., R, M), p, compute_mode) -> (.., P, R): the p-norm of x1_i - x2_j."""
    x1, x2, p = cx.arg(0), cx.arg(1), cx.arg(2)
    if cx.rank(x1) != cx.rank(x2):
        raise Unsupported("cdist of inputs of different ranks")
    dt = cx.out_dtype
    diff = cx.op("sub", cx.op("expand_dims", cx.value(x1, dt), axis=-2),
                 cx.op("expand_dims", cx.value(x2, dt), axis=-3))                         # (.., P, R, M)
    return _vector_norm_of(cx, diff, (len(diff.type.shape) - 1,), p, cx.shape())


def _var(cx: Lowering) -> Any:
    return _var_and_mean(cx)[0]


def _var_mean(cx: Lowering) -> list[Any]:
    return list(_var_and_mean(cx))


TABLE: dict[Any, Entry] = {
    aten.var.correction: _var, aten.var_mean.correction: _var_mean, aten.native_layer_norm.default: _layer_norm,
    aten.native_group_norm.default: _group_norm, aten._native_batch_norm_legit.no_stats: _batch_norm_batch_stats,
    aten.linalg_vector_norm.default: _vector_norm, aten._cdist_forward.default: _cdist,
}
