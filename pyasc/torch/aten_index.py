"""The FX frontend's entries for indexing (merged into aten_table.TABLE): embedding lookups, gathers, scatters.

Every entry is a registry op pyasc's numpy frontend already uses for integer-array indexing:
- embedding(weight, ids) / index_select(x, dim, ids) -> take along the axis (a one-hot product; padding_idx
  changes only the backward, as in torch);
- gather(x, dim, index) -> take_along_axis (x first sliced to index's extent on the other dims, as torch
  reads it);
- index.Tensor(x, [None.., i0, i1, .., None..]) -> one take along the indexed dims flattened into one (the
  index tensors broadcast together, negative indices counted from the end); the index tensors must be
  adjacent, as torch then keeps the result's dims in place; bool masks (how many elements they select is
  known only from the values) and index tensors apart are refused with a graph break that says so;
- embedding_dense_backward and index_put (accumulate or not, the index tensors leading) -> scatter_rows, the
  rows of the grad added (or written) at the ids; rows at padding_idx get nothing; scatter.value / scatter.src /
  scatter_add along a dim -> a one-hot placement (the last of duplicate indices wins a "set", as numpy's);
- argmax / argmin -> the registry ops (int32 indices; the backend widens an int64 graph output back);
- _embedding_bag (sum / mean / max, offsets, padding_idx, per_sample_weights) -> take of the rows, then each
  bag's reduction over a (bags, ids) membership mask of the offsets.
Index tensors are int64 in torch and int32 in the graph (convert.NARROWED). An index out of range selects
zeros (a gather) or nothing (a scatter): torch raises, a kernel cannot. The gathers and scatters are one-hot
products, their work (ids) x (table rows) x (row size): right for the small vocabularies and label sets
of tests and small models; a large embedding table needs a DMA gather/scatter, which pyasc does not have.
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


def _index(cx: Lowering, a: Any) -> Value:
    """An index tensor as int32 (torch's int64 is narrowed already; bool masks are refused)."""
    if isinstance(a, torch.fx.Node) and a.meta["val"].dtype == torch.bool:
        raise Unsupported("a bool mask index (how many elements it selects depends on the values)")
    return cx.value(a, "int32")


def _wrapped(cx: Lowering, ids: Value, n: int) -> Value:
    """Negative indices counted from the end of an axis of size n."""
    neg = cx.op("lt", ids, cx.value(0, "int32"))
    return cx.op("where", neg, cx.op("add", ids, cx.value(n, "int32")), ids)


def _embedding(cx: Lowering) -> Any:
    return cx.op("take", cx.value(cx.arg(0), cx.out_dtype), _index(cx, cx.arg(1)), axis=0)


def _index_select(cx: Lowering) -> Any:
    x = cx.arg(0)
    return cx.op("take", cx.value(x, cx.out_dtype), _index(cx, cx.arg(2)), axis=cx.axis(cx.arg(1), x))


def _gather(cx: Lowering) -> Any:
    x, index = cx.arg(0), cx.arg(2)
    dim = cx.axis(cx.arg(1), x)
    xs, ishape = cx.shape(x), cx.shape(index)
    if len(xs) != len(ishape):
        raise Unsupported(f"index of rank {len(ishape)} for an input of rank {len(xs)}")
    v = cx.value(x, cx.out_dtype)
    stops = tuple(xs[d] if d == dim else ishape[d] for d in range(len(xs)))
    if stops != xs:  # torch reads only index's extent of the other dims
        v = cx.op("slice", v, starts=(0,) * len(xs), stops=stops, steps=(1,) * len(xs))
    return cx.op("take_along_axis", v, _index(cx, index), axis=dim)


def _index_run(cx: Lowering, x: Any, indices: list[Any]) -> tuple[int, list[Any]]:
    """(the first indexed dim, the adjacent index tensors from it) of an index list; others are refused."""
    given = [i for i, a in enumerate(indices) if a is not None]
    if not given:
        raise Unsupported("no index tensor")
    first, last = given[0], given[-1]
    if last - first + 1 != len(given):
        raise Unsupported("index tensors apart (torch moves the indexed dims first; pyasc lowers adjacent ones)")
    return first, list(indices[first:last + 1])


def _flat_ids(cx: Lowering, x: Any, first: int, run: list[Any]) -> Value:
    """One index into dims first..first+len(run) of x flattened: sum of each wrapped index times its stride."""
    dims = cx.shape(x)[first:first + len(run)]
    flat = None
    for k, a in enumerate(run):
        term = _wrapped(cx, _index(cx, a), dims[k])
        stride = math.prod(dims[k + 1:])
        if stride != 1:
            term = cx.op("mul", term, cx.value(stride, "int32"))
        flat = term if flat is None else cx.op("add", flat, term)
    return flat


def _merged(cx: Lowering, x: Any, v: Value, first: int, count: int) -> Value:
    """v (of x's shape) with dims first..first+count merged into one."""
    xs = cx.shape(x)
    if count == 1:
        return v
    shape = xs[:first] + (math.prod(xs[first:first + count]),) + xs[first + count:]
    return cx.op("reshape", v, shape=shape)


def _index_tensor(cx: Lowering) -> Any:
    x, indices = cx.arg(0), list(cx.arg(1))
    first, run = _index_run(cx, x, indices)
    v = _merged(cx, x, cx.value(x, cx.out_dtype), first, len(run))
    return cx.op("take", v, _flat_ids(cx, x, first, run), axis=first)


def _rows_scatter(cx: Lowering, table: Value, ids: Value, rows: Value, active: Value | None, mode: str) -> Value:
    """scatter_rows on a (P, ...) table, ids of any shape and rows of ids.shape + table.shape[1:]."""
    ts = tuple(table.type.shape)
    r = math.prod(ts[1:])
    j = math.prod(ids.type.shape)
    flat_ids = cx.op("reshape", ids, shape=(j,))
    if active is None:
        active = cx.graph.const(np.ones(j, dtype=bool), "bool", cx.loc)
    else:
        active = cx.op("reshape", active, shape=(j,))
    out = cx.op("scatter_rows", cx.op("reshape", table, shape=(ts[0], r)), flat_ids,
                cx.op("reshape", rows, shape=(j, r)), active, mode=mode)
    return cx.op("reshape", out, shape=ts)


def _embedding_dense_backward(cx: Lowering) -> Any:
    grad, indices = cx.arg(0), cx.arg(1)
    num_weights, padding_idx = int(cx.arg(2)), int(cx.arg(3))
    if cx.arg(4, "scale_grad_by_freq", False):
        raise Unsupported("scale_grad_by_freq")
    dt = cx.out_dtype
    ids = _index(cx, indices)
    table = cx.op("full", shape=cx.shape(), fill_value=0, dtype=dt)
    active = None if padding_idx < 0 else cx.op("ne", ids, cx.value(padding_idx, "int32"))
    return _rows_scatter(cx, table, ids, cx.value(grad, dt), active, "add")


def _index_put(cx: Lowering) -> Any:
    x, indices, values = cx.arg(0), list(cx.arg(1)), cx.arg(2)
    first, run = _index_run(cx, x, indices)
    if first != 0:
        raise Unsupported("index_put with a slice before the index tensors (pyasc scatters leading dims)")
    xs = cx.shape(x)
    table = _merged(cx, x, cx.value(x, cx.out_dtype), 0, len(run))
    ids = _flat_ids(cx, x, 0, run)
    rows = cx.op("broadcast_to", cx.value(values, cx.out_dtype), shape=tuple(ids.type.shape) + xs[len(run):])
    mode = "add" if cx.arg(3, "accumulate", False) else "set"
    out = _rows_scatter(cx, table, ids, rows, None, mode)
    return cx.op("reshape", out, shape=xs)


def _scatter(mode: str) -> Entry:
    """scatter / scatter_add along a dim: out[.., index[.., k, ..], ..] = (or +=) src[.., k, ..]."""
    def entry(cx: Lowering) -> Any:
        x, index, src = cx.arg(0), cx.arg(2), cx.arg(3)
        dim = cx.axis(cx.arg(1), x)
        xs, ishape = cx.shape(x), cx.shape(index)
        if len(ishape) != len(xs) or any(ishape[d] != xs[d] for d in range(len(xs)) if d != dim):
            raise Unsupported(f"an index of shape {ishape} for an input of shape {xs} (pyasc scatters an index "
                              "of the input's extent on the other dims)")
        if isinstance(src, torch.fx.Node) and cx.shape(src) != ishape:
            raise Unsupported(f"src of shape {cx.shape(src)} for an index of shape {ishape}")
        dt = cx.out_dtype
        perm = tuple(d for d in range(len(xs)) if d != dim) + (dim,)
        last = (lambda v: v) if dim == len(xs) - 1 else (lambda v: cx.op("transpose", v, axes=perm))
        n, k = xs[dim], ishape[dim]
        ids = _wrapped(cx, last(_index(cx, index)), n)
        hit = cx.op("eq", cx.op("expand_dims", ids, axis=-1),
                    cx.graph.const(np.arange(n, dtype=np.int32), "int32", cx.loc))                # (..., k, n)
        xt = last(cx.value(x, dt))
        if mode == "add":
            acc = dt if dt in ("float16", "float32") else "int32"
            picked = cx.op("where", hit, cx.op("expand_dims", last(cx.value(src, acc)), axis=-1), cx.value(0, acc))
            out = cx.cast(cx.op("add", cx.cast(xt, acc), cx.op("sum", picked, axis=-2)), dt)
        else:  # the last k naming a position wins (numpy's rule for repeated indices)
            order = cx.graph.const(np.arange(k, dtype=np.int32).reshape(k, 1), "int32", cx.loc)
            winner = cx.op("max", cx.op("where", hit, order, cx.value(-1, "int32")), axis=-2)  # (..., n)
            has = cx.op("ge", winner, cx.value(0, "int32"))
            if isinstance(src, torch.fx.Node):
                new = cx.op("take_along_axis", last(cx.value(src, dt)),
                            cx.op("maximum", winner, cx.value(0, "int32")), axis=-1)
            else:
                new = cx.value(src, dt)
            out = cx.op("where", has, new, xt)
        if dim == len(xs) - 1:
            return out
        return cx.op("transpose", out, axes=tuple(int(i) for i in np.argsort(perm)))
    return entry


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def _embedding_bag(cx: Lowering) -> list[Any]:
    """_embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
    include_last_offset, padding_idx) -> (out, offset2bag, bag_size, max_indices); only `out` is computed.
    Bag b holds the ids at positions offsets[b] <= j < offsets[b + 1]; the last bag runs to the end, or with
    include_last_offset to the last offset (torch documents it as len(indices); torch's own kernels disagree
    by mode on one short of it, and this reads the bag as ending there). Ids equal to padding_idx belong to no
    bag. A bag's row is the sum, the mean or the max of its weight rows (per_sample_weights scale the rows of
    a sum); an empty bag's is zeros."""
    weight, indices, offsets = cx.arg(0), cx.arg(1), cx.arg(2)
    mode = _BAG_MODES[int(cx.arg(4, "mode", 0))]
    psw, last_offset = cx.arg(6, "per_sample_weights"), bool(cx.arg(7, "include_last_offset", False))
    padding_idx = cx.arg(8, "padding_idx", -1)
    if any(u.target is operator.getitem and u.args[1] != 0 for u in cx.node.users):
        raise Unsupported("embedding_bag whose offset2bag, bag sizes or max indices are used (training)")
    if cx.rank(indices) != 1:
        raise Unsupported("embedding_bag with 2-D indices (torch passes them flattened, with offsets)")
    dt = cx.out_dtype
    j, bags = cx.shape(indices)[0], cx.shape()[0]
    ids = _index(cx, indices)
    offs = cx.value(offsets, "int32")
    starts = cx.op("slice", offs, starts=(0,), stops=(bags,), steps=(1,))
    ends = cx.op("slice", offs, starts=(1,), stops=(bags + 1,), steps=(1,)) if last_offset else cx.op(
        "concat", cx.op("slice", offs, starts=(1,), stops=(bags,), steps=(1,)),
        cx.graph.const(np.array([j], np.int32), "int32", cx.loc), axis=0, kind="concatenate")
    pos = cx.graph.const(np.arange(j, dtype=np.int32), "int32", cx.loc)                     # (J,)
    member = cx.op("bitwise_and", cx.op("ge", pos, cx.op("expand_dims", starts, axis=-1)),
                   cx.op("lt", pos, cx.op("expand_dims", ends, axis=-1)))                   # (B, J)
    if padding_idx is not None and padding_idx >= 0:
        member = cx.op("bitwise_and", member, cx.op("ne", ids, cx.value(int(padding_idx), "int32")))
    rows = cx.op("take", cx.value(weight, dt), ids, axis=0)                                  # (J, D)
    if psw is not None:
        rows = cx.op("mul", rows, cx.op("expand_dims", cx.value(psw, dt), axis=-1))
    inside = cx.op("expand_dims", member, axis=-1)                                           # (B, J, 1)
    if mode == "max":
        lowest = cx.value(-math.inf if dt in ("float16", "float32") else np.iinfo(np.dtype(dt)).min, dt)
        top = cx.op("max", cx.op("where", inside, rows, lowest), axis=1)
        filled = cx.op("max", cx.op("cast", inside, dtype="int32"), axis=1)                  # (B, 1): not empty
        return [cx.op("where", cx.op("gt", filled, cx.value(0, "int32")), top, cx.value(0, dt)), None, None, None]
    total = cx.op("sum", cx.op("where", inside, rows, cx.value(0, dt)), axis=1)
    if mode == "mean":
        count = cx.op("sum", cx.op("cast", inside, dtype=dt), axis=1)                        # (B, 1)
        total = cx.op("div", total, cx.op("maximum", count, cx.value(1, dt)))
    return [total, None, None, None]


def _arg(op: str) -> Entry:
    def entry(cx: Lowering) -> Any:
        x, dim = cx.arg(0), cx.arg(1, "dim")
        return cx.op(op, cx.value(x), axis=None if dim is None else cx.axis(dim, x),
                     keepdims=bool(cx.arg(2, "keepdim", False)))
    return entry


TABLE: dict[Any, Entry] = {
    aten.embedding.default: _embedding, aten.index_select.default: _index_select, aten.gather.default: _gather,
    aten.index.Tensor: _index_tensor, aten.index_put.default: _index_put,
    aten.embedding_dense_backward.default: _embedding_dense_backward,
    aten.scatter.value: _scatter("set"), aten.scatter.src: _scatter("set"), aten.scatter_add.default: _scatter("add"),
    aten.argmax.default: _arg("argmax"), aten.argmin.default: _arg("argmin"),
    aten._embedding_bag.default: _embedding_bag, aten._embedding_bag_forward_only.default: _embedding_bag,
}

#: kept whole by the decompositions: one scatter of the grad rows instead of torch's masks, clamp and index_put
KEPT = (aten.embedding_dense_backward.default,)
