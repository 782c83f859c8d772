"""numpy's advanced indexing with integer arrays, read (a gather) and written (a scatter).

`x[i0, :, i2]`, `probs[np.arange(N), y]`, `dx[np.arange(N), y] -= 1`, `W[ids]`, `out[order] = v`,
`np.add.at(dW, x, dout)`: every integer array (tensor, list or numpy array) and every int beside one is an
advanced index; they broadcast to one shape B. Planned once (`plan`):
- the slices are applied first (a view of x); the advanced axes are moved first and flattened, so the
  indices become one linear row index L = sum_k i_k * stride_k over (P, R): P the product of the advanced
  axes' sizes, R of the rest;
- a read is `take(rows, L)` reshaped to B + rest, B's dims placed where numpy places them (where the
  advanced indices were when they are adjacent, else first);
- a write is `scatter_rows` (ops/scatter.py) of the values brought to that (|B|, R) layout: the last of
  duplicate indices wins (`x[i] = v`, and `x[i] += v`, which numpy buffers: x[i] = x[i] + v), or duplicates
  accumulate (np.add.at); the new rows go back through the view into x (aliasing.write).
Negative indices count from the end; an index out of range selects nothing here and is numpy's IndexError,
recorded at run time (checks.py). A compile-time boolean array is its np.nonzero; index arrays selected by a
tensor mask (`x[idx[m]] = 1`) write only where the mask holds.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from . import aliasing, checks
from .masked import same_mask
from .protocol import KernelBuilder
from .values import Masked, describe, is_const_array, is_tensor

INDEX = "int32"


def _is_int_array(item: Any) -> bool:
    if isinstance(item, range):
        return len(item) > 0
    if isinstance(item, Masked):
        return dtypes.is_int(item.data.type.dtype)
    if is_tensor(item):
        return dtypes.is_int(item.type.dtype)
    if isinstance(item, (list, tuple)) and item:
        return np.asarray(item).dtype.kind in "iu"
    return isinstance(item, np.ndarray) and item.dtype.kind in "iu" and item.ndim >= 1


def _is_const_bool(item: Any) -> bool:
    if isinstance(item, (list, tuple)) and item:
        return np.asarray(item).dtype.kind == "b"
    return isinstance(item, np.ndarray) and item.dtype.kind == "b" and item.ndim >= 1


def is_advanced(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(_is_int_array(i) or _is_const_bool(i) for i in items)


@dataclass
class Plan:
    basic: tuple                       # slices for every axis of x (full on the advanced ones)
    axes: list[int]                    # x's advanced axes, in order
    indices: list[Any]                 # one per advanced axis: a tensor, a Masked tensor or an int
    adjacent: bool                     # numpy keeps B where the advanced axes were
    active: Value | None = None        # the mask the index arrays were selected by, if any
    shape_b: tuple = field(default_factory=tuple)


def plan(b: KernelBuilder, x: Value, index: Any, at: ast.AST) -> Plan:
    items = list(index) if isinstance(index, tuple) else [index]
    expanded: list[Any] = []
    for item in items:
        if isinstance(item, range):  # numpy takes a range as the array of its values
            item = np.arange(item.start, item.stop, item.step)
        if _is_const_bool(item):  # a compile-time mask: the positions it selects, known now
            expanded.extend(np.nonzero(np.asarray(item)))
        else:
            expanded.append(np.asarray(item) if isinstance(item, (list, tuple)) else item)
    if any(i is None for i in expanded):
        raise b.error(f"`{b.text(at)}` mixes None (np.newaxis) with integer-array indices; index first, then add the "
                      "axis with np.expand_dims", at)
    n_ell = sum(1 for i in expanded if i is Ellipsis)
    if n_ell > 1:
        raise b.error("an index can only have a single ellipsis (...)", at)
    real = [i for i in expanded if i is not Ellipsis]
    nd = x.type.ndim
    if len(real) > nd:
        raise b.error(f"too many indices for a tensor of shape {tuple(x.type.shape)}: {len(real)} were given in "
                      f"`{b.text(at)}`", at)
    full: list[Any] = []
    for i in expanded:
        full.extend([slice(None)] * (nd - len(real)) if i is Ellipsis else [i])
    full.extend([slice(None)] * (nd - len(full)))
    axes, indices, basic = [], [], []
    masks: list[Value] = []
    for axis, item in enumerate(full):
        if isinstance(item, slice):
            if any(is_tensor(v) for v in (item.start, item.stop, item.step)):
                raise b.error(f"tensor slice bounds are not supported in `{b.text(at)}`; use a static bound", at)
            basic.append(item)
            continue
        basic.append(slice(None))
        if isinstance(item, (bool, np.bool_)) or (is_tensor(item) and item.type.dtype == "bool"):
            raise b.error(f"`{b.text(at)}` mixes a boolean mask with other indices; pyasc supports a boolean tensor "
                          "as the whole index (x[mask]) and integer arrays beside slices", at)
        if isinstance(item, Masked):
            if not any(same_mask(item.mask, m) for m in masks):
                masks.append(item.mask)
        elif not (isinstance(item, (int, np.integer)) or is_tensor(item) or is_const_array(item)):
            raise b.error(f"`{b.text(at)}`: {describe(item)} is not a valid index (integers, slices, integer arrays)",
                          at)
        axes.append(axis)
        indices.append(item)
    if len(masks) > 1:
        raise b.error(f"`{b.text(at)}` indexes with arrays selected by different masks", at)
    adjacent = axes == list(range(axes[0], axes[0] + len(axes))) if axes else True
    return Plan(tuple(basic), axes, indices, adjacent, masks[0] if masks else None)


def _index_tensor(b: KernelBuilder, item: Any, at: ast.AST) -> Value:
    if isinstance(item, Masked):
        item = item.data
    if is_tensor(item):
        return item if item.type.dtype == INDEX else b.emit("cast", [item], {"dtype": INDEX}, at)[0]
    arr = np.asarray(item)
    return b.const(arr.astype(np.int32), INDEX, at)


def _broadcast(b: KernelBuilder, values: list[Value], at: ast.AST) -> tuple[list[Value], tuple]:
    shapes = [tuple(v.type.shape) for v in values]
    try:
        shape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise b.error(f"shape mismatch: indexing arrays could not be broadcast together with shapes "
                      f"{' '.join(map(str, shapes))} in `{b.text(at)}` (numpy raises IndexError)", at) from None
    out = [v if tuple(v.type.shape) == shape else b.emit("broadcast_to", [v], {"shape": shape}, at)[0]
           for v in values]
    return out, shape


@dataclass
class Rows:
    """x (after the slices) as (P, R) rows, and how to read the linear indices into it."""

    region: Value          # x with the slices applied (a view)
    perm: tuple            # the region's axes, advanced ones first
    shape_adv: tuple       # sizes of the advanced axes
    shape_rest: tuple      # sizes of the other axes, in order
    linear: Value          # (|B|,) int32 row index, P where an index is out of range
    valid: Value           # (|B|,) bool, all indices in range
    shape_b: tuple


def rows(b: KernelBuilder, x: Value, p: Plan, at: ast.AST, subscript: Callable[..., Value]) -> Rows:
    region = subscript(b, x, p.basic, at) if any(s != slice(None) for s in p.basic) else x
    shape = tuple(region.type.shape)
    if any(not isinstance(d, int) for d in shape):
        raise b.error(f"integer-array indexing needs static sizes, but `{b.text(at)}` indexes a tensor of shape "
                      f"{shape}", at)
    idx, shape_b = _broadcast(b, [_index_tensor(b, i, at) for i in p.indices], at)
    if p.active is not None:
        if tuple(p.active.type.shape) != shape_b:
            raise b.error(f"`{b.text(at)}`: the index arrays' mask does not match their shape {shape_b}", at)
    sizes = [shape[a] for a in p.axes]
    linear = None
    valid = None
    stride = 1
    for k in reversed(range(len(idx))):
        n = sizes[k]
        i = idx[k]
        i = b.emit("where", [b.emit("lt", [i, b.const(0, INDEX, at)], {}, at)[0],
                             b.emit("add", [i, b.const(n, INDEX, at)], {}, at)[0], i], {}, at)[0]
        ok = b.emit("bitwise_and", [b.emit("ge", [i, b.const(0, INDEX, at)], {}, at)[0],
                                    b.emit("lt", [i, b.const(n, INDEX, at)], {}, at)[0]], {}, at)[0]
        term = i if stride == 1 else b.emit("mul", [i, b.const(stride, INDEX, at)], {}, at)[0]
        linear = term if linear is None else b.emit("add", [linear, term], {}, at)[0]
        valid = ok if valid is None else b.emit("bitwise_and", [valid, ok], {}, at)[0]
        stride *= n
    total = stride
    flat_n = math.prod(shape_b)
    linear = b.emit("where", [valid, linear, b.const(total, INDEX, at)], {}, at)[0]
    linear = b.emit("reshape", [linear], {"shape": (flat_n,)}, at)[0]
    valid = b.emit("reshape", [valid], {"shape": (flat_n,)}, at)[0]
    rest = [a for a in range(len(shape)) if a not in p.axes]
    return Rows(region, tuple(p.axes) + tuple(rest), tuple(sizes), tuple(shape[a] for a in rest), linear, valid,
                shape_b)


def _table(b: KernelBuilder, r: Rows, at: ast.AST) -> Value:
    t = r.region
    if r.perm != tuple(range(len(r.perm))):
        t = b.emit("transpose", [t], {"axes": r.perm}, at)[0]
    return b.emit("reshape", [t], {"shape": (math.prod(r.shape_adv), math.prod(r.shape_rest))}, at)[0]


def _result_perm(p: Plan, n_b: int, n_rest: int) -> tuple[int, ...] | None:
    """How (B..., rest...) is transposed into numpy's result layout (None: it is that layout already)."""
    if not p.adjacent or p.axes[0] == 0:
        return None
    before = sum(1 for s in range(p.axes[0]))  # the slices before the advanced block
    perm = tuple(range(n_b, n_b + before)) + tuple(range(n_b)) + tuple(range(n_b + before, n_b + n_rest))
    return perm


def read(b: KernelBuilder, x: Value, index: Any, at: ast.AST, subscript: Callable[..., Value]) -> Value:
    p = plan(b, x, index, at)
    if p.active is not None:
        raise b.error(f"`{b.text(at)}` reads with index arrays selected by a mask: its length depends on the data; "
                      "pyasc supports such indices in a write", at)
    r = rows(b, x, p, at, subscript)
    checks.index_in_range(b, r.valid, at)
    table = _table(b, r, at)
    g = b.emit("take", [table, r.linear], {"axis": 0}, at)[0]
    g = b.emit("reshape", [g], {"shape": r.shape_b + r.shape_rest}, at)[0]
    perm = _result_perm(p, len(r.shape_b), len(r.shape_rest))
    if perm is not None:
        g = b.emit("transpose", [g], {"axes": perm}, at)[0]
    aliasing.forget_view(b, g)  # numpy's advanced indexing copies
    return g


def write(b: KernelBuilder, x: Value, index: Any, value: Any, at: ast.AST, subscript: Callable[..., Value],
          coerce: Callable[..., Value], combine: Callable[[Value], Any] | None, mode: str = "set") -> Value:
    """x with `x[index] = value` (or `= combine(x[index])`, an augmented assignment; or np.add.at's
    accumulation, mode "add") applied through the view; returns the value x's names hold afterwards."""
    p = plan(b, x, index, at)
    r = rows(b, x, p, at, subscript)
    checks.index_in_range(b, r.valid, at)
    table = _table(b, r, at)
    result_shape = r.shape_b + r.shape_rest
    perm = _result_perm(p, len(r.shape_b), len(r.shape_rest))
    if perm is not None:
        result_shape = tuple(result_shape[i] for i in perm)
    if combine is not None:
        g = b.emit("take", [table, r.linear], {"axis": 0}, at)[0]
        g = b.emit("reshape", [g], {"shape": r.shape_b + r.shape_rest}, at)[0]
        if perm is not None:
            g = b.emit("transpose", [g], {"axes": perm}, at)[0]
        value = combine(g)
    vals = coerce(b, value, result_shape, x.type.dtype, at, at)
    if perm is not None:
        vals = b.emit("transpose", [vals], {"axes": tuple(int(i) for i in np.argsort(perm))}, at)[0]
    vals = b.emit("reshape", [vals], {"shape": (math.prod(r.shape_b), math.prod(r.shape_rest))}, at)[0]
    active = r.valid
    if p.active is not None:
        flat_mask = b.emit("reshape", [p.active], {"shape": (math.prod(r.shape_b),)}, at)[0]
        active = b.emit("bitwise_and", [active, flat_mask], {}, at)[0]
    new = b.emit("scatter_rows", [table, r.linear, vals, active], {"mode": mode}, at)[0]
    new = b.emit("reshape", [new], {"shape": r.shape_adv + r.shape_rest}, at)[0]
    if r.perm != tuple(range(len(r.perm))):
        new = b.emit("transpose", [new], {"axes": tuple(int(i) for i in np.argsort(r.perm))}, at)[0]
    return aliasing.write(b, r.region, new, at, f"`{b.text(at)}`")
