"""Fancy indexing that is a gather: `table[ids]`, `x[:, ids]`, `x[[2, 0, 1]]` -> the registry op `take`.

One index is an integer tensor, or a compile-time list / numpy array of ints, and every other
index is a whole slice (`:`): the subscript is numpy's take along that axis (the result has the
index's shape in place of the axis). Anything else (several index arrays, an index array beside
ints or partial slices, a bool mask) is left to `indexing.subscript`, which rejects it.
"""
from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ..ir.graph import Value
from . import calls
from .protocol import KernelBuilder
from .values import is_tensor


def _index_array(item: Any) -> bool:
    """An integer index array: an int tensor, a non-empty list/ndarray of ints (not bools)."""
    if is_tensor(item):
        return item.type.dtype in ("int8", "int16", "int32", "uint8")
    if isinstance(item, list) and item:
        arr = np.asarray(item)
        return arr.dtype.kind in "iu"
    return isinstance(item, np.ndarray) and item.dtype.kind in "iu" and item.ndim >= 1


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
    if not is_tensor(ids):
        ids = np.asarray(ids)
    return calls.op_call(b, None, "take", [x, ids], {"axis": arrays[0]}, at, b.text(at))
