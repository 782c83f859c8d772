"""Fancy indexing that is a gather: `table[ids]`, `x[:, ids]`, `x[[2, 0, 1]]` -> the registry op `take`.

One index is an integer tensor, or a compile-time list / numpy array of ints, and every other
index is a whole slice (`:`): the subscript is numpy's take along that axis (the result has the
index's shape in place of the axis). A compile-time 1-D index that is an arithmetic progression
(`wpe[np.arange(T)]`) is the slice it equals instead (`as_basic`), and one out of range is an error. Anything else (several index arrays, an index array beside
ints or partial slices, a bool mask) is left to `indexing.subscript`, which rejects it.
"""
from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ..ir.graph import Value
from .. import dtypes
from . import checks
from .protocol import KernelBuilder
from .values import Masked, is_tensor


def _index_array(item: Any) -> bool:
    """An integer index array: an int tensor, a non-empty list/ndarray of ints (not bools)."""
    if is_tensor(item):
        return item.type.dtype in ("int8", "int16", "int32", "uint8")
    if isinstance(item, list) and item:
        arr = np.asarray(item)
        return arr.dtype.kind in "iu"
    return isinstance(item, np.ndarray) and item.dtype.kind in "iu" and item.ndim >= 1


def _ranges_as_arrays(index: Any) -> Any:
    """numpy takes a range in an index as the array of its values (`x[range(n), y]`)."""
    if isinstance(index, range):
        return np.arange(index.start, index.stop, index.step)
    if isinstance(index, tuple) and any(isinstance(i, range) for i in index):
        return tuple(np.arange(i.start, i.stop, i.step) if isinstance(i, range) else i for i in index)
    return index


def as_basic(b: KernelBuilder, x: Value, index: Any, at: ast.AST) -> Any:
    """`index` with a compile-time index array that is an arithmetic progression (`wpe[[0, 1, 2]]`,
    `x[:, np.arange(4)]`) replaced by the slice it equals: a strided view, no gather. Other indices as given."""
    index = _ranges_as_arrays(index)
    items = index if isinstance(index, tuple) else (index,)
    arrays = [i for i, item in enumerate(items) if _index_array(item) and not is_tensor(item)]
    if len(arrays) != 1 or any(not (isinstance(s, slice) and s == slice(None))
                               for i, s in enumerate(items) if i != arrays[0]):
        return index
    axis = arrays[0]
    arr = np.asarray(items[axis])
    n = x.type.shape[axis] if axis < x.type.ndim else None
    if arr.ndim != 1 or not isinstance(n, int):
        return index
    bad = [int(i) for i in arr if not -n <= int(i) < n]
    if bad:
        raise b.error(f"index {bad[0]} is out of bounds for axis {axis} with size {n} in `{b.text(at)}`", at)
    norm = [int(i) % n for i in arr]
    steps = {q - p for p, q in zip(norm, norm[1:])}
    if len(steps) > 1 or 0 in steps:
        return index
    step = steps.pop() if steps else 1
    stop = norm[-1] + step
    as_slice = slice(norm[0], stop if stop >= 0 else None, step)
    return tuple(as_slice if i == axis else item for i, item in enumerate(items))


def fancy(b: KernelBuilder, x: Value, index: Any, at: ast.AST) -> Value | None:
    """The gather `x[index]` means, or None when `index` is not one index array among full slices."""
    items = index if isinstance(index, tuple) else (index,)
    arrays = [i for i, item in enumerate(items) if _index_array(item)]
    if len(arrays) != 1:
        return None
    others = [item for i, item in enumerate(items) if i != arrays[0]]
    if any(not (isinstance(s, slice) and s == slice(None)) for s in others):
        return None
    ids = items[arrays[0]]
    if isinstance(ids, Masked):
        return None  # indices selected by a mask: only a write takes them (fancy.py)
    axis = arrays[0]
    n = x.type.shape[axis] if axis < x.type.ndim else None
    if not is_tensor(ids):
        ids = np.asarray(ids)
        if isinstance(n, int) and ids.size and not ((-n <= ids) & (ids < n)).all():
            bad = int(ids[(ids < -n) | (ids >= n)].reshape(-1)[0])
            raise b.error(f"index {bad} is out of bounds for axis {axis} with size {n} in `{b.text(at)}` (numpy "
                          "raises IndexError)", at)
    elif isinstance(n, int):
        i32 = ids if ids.type.dtype == "int32" else b.emit("cast", [ids], {"dtype": "int32"}, at)[0]
        ok = b.emit("bitwise_and", [b.emit("ge", [i32, b.const(-n, "int32", at)], {}, at)[0],
                                    b.emit("lt", [i32, b.const(n, "int32", at)], {}, at)[0]], {}, at)[0]
        checks.index_in_range(b, ok, at, f"an index into axis {axis} of size {n}")
    if not is_tensor(ids):
        ids = b.const(ids, dtypes.narrow(ids.dtype), at)
    return b.emit("take", [x, ids], {"axis": axis}, at)[0]

