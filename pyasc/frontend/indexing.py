"""Static subscripts on tensors: `x[1:3]`, `x[:, 0]`, `x[None, ...]`, `x[::2, -1]`.

The ops layer plans basic indexing (`ops.shape.normalize_index`); the
frontend turns the plan into nodes: one `slice` (attrs `starts`, `stops`,
`steps`, one entry per axis, normalised like `slice.indices`; skipped when it
selects everything), then `squeeze` of the int-indexed axes, then
`expand_dims` at the positions of `None`.
"""
from __future__ import annotations

import ast
from typing import Any

from ..errors import InferError
from ..ir.graph import Value
from ..ops.shape import normalize_index
from . import fancy, gather, masked
from .protocol import KernelBuilder
from .values import describe, is_tensor


def _slice_node(at: ast.AST, i: int, n: int, is_tuple: bool) -> ast.AST:
    """The AST of index item `i` of a subscript (the item the error is about), else the subscript itself."""
    if not isinstance(at, ast.Subscript):
        return at
    parts = at.slice.elts if is_tuple and isinstance(at.slice, ast.Tuple) else [at.slice]
    return parts[i] if len(parts) == n and isinstance(parts[i], ast.Slice) else at

def subscript(b: KernelBuilder, x: Value, index: Any, at: ast.AST) -> Any:
    """`x[index]` read: a view (basic indexing), a gather (integer arrays), or a boolean-mask selection."""
    index = gather.as_basic(b, x, index, at)  # `wpe[[0, 1, 2]]`: the slice 0:3
    if is_tensor(index) and index.type.dtype == "bool":
        return masked.select(b, x, index, at)  # `x[mask]`: its length depends on the data
    gathered = gather.fancy(b, x, index, at)  # `table[ids]`, `x[:, ids]`: a take
    if gathered is not None:
        return gathered
    if fancy.is_advanced(index):
        return fancy.read(b, x, index, at, basic)
    return basic(b, x, index, at)


def basic(b: KernelBuilder, x: Value, index: Any, at: ast.AST) -> Value:
    """`x[index]` for ints, slices, None and `...`: a view of x."""
    items = index if isinstance(index, tuple) else (index,)
    text = b.text(at)
    for i, item in enumerate(items):
        if isinstance(item, slice) and any(is_tensor(v) for v in (item.start, item.stop, item.step)):
            raise b.error(f"tensor slice bounds are not supported; use pyasc.where or a static bound (in `{text}`)",
                          _slice_node(at, i, len(items), isinstance(index, tuple)))
        if is_tensor(item):
            raise b.error(
                f"indexing a tensor with a tensor is not supported in `{text}` (only compile-time ints, "
                "slices, None and ...); to select elements by a condition use pyasc.where",
                at,
            )
        if isinstance(item, (list, tuple)):
            raise b.error(
                f"indexing with {describe(item)} (fancy indexing) is not supported in `{text}`; "
                "a kernel indexes tensors with compile-time ints, slices, None and ...",
                at,
            )
    try:
        plan = normalize_index(x.type.shape, index)
    except InferError as e:
        raise b.error(f"{e} in `{text}` ({x.type})", at) from None
    result = x
    if not plan.full:
        result = b.emit("slice", [result], dict(plan.slice_attrs), at)[0]
    if plan.squeeze_axes:
        result = b.emit("squeeze", [result], {"axis": tuple(plan.squeeze_axes)}, at)[0]
    if plan.new_axes:
        result = b.emit("expand_dims", [result], {"axis": tuple(plan.new_axes)}, at)[0]
    return result
