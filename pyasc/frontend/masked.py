"""Boolean-mask selections `x[mask]` (values.Masked), whose length depends on the data.

numpy gives a 1-D array of the selected elements. A kernel's shapes are known before it runs, so pyasc
keeps the selection as (data, mask) and supports what does not need its length:
- elementwise ops on it, with numbers or with selections by the same mask: still a selection
  (`np.exp(-x[m])`, `x[m] * 2 + y[m]`);
- a reduction of all of it: sum / mean / max / min / prod / any / all / count_nonzero over the selected
  elements (where(mask, x, neutral) reduced; mean divides by the mask's count; max / min of an empty
  selection is numpy's ValueError, a data check raised after the launch);
- a write with the same mask (`z[m] = np.exp(-x[m])` is where(m, exp(-x), z)), and selections of index
  arrays by the same mask as the indices of a write (frontend/fancy.py);
anything else is a located CompileError saying why (values.MASKED_USE).
"""
from __future__ import annotations

import ast
import math
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from ..ir.graph import Value
from ..ops import Category
from . import checks
from .protocol import KernelBuilder
from .values import MASKED_USE, Masked, describe, is_number, is_tensor

#: reductions of a whole selection -> the neutral element selected-out positions take (None: per dtype)
_REDUCTIONS = {"sum": 0, "mean": 0, "prod": 1, "max": None, "min": None, "any": False, "all": True,
               "count_nonzero": 0}


def is_masked(v: Any) -> bool:
    return isinstance(v, Masked)


def any_masked(values: Any) -> bool:
    return any(isinstance(v, Masked) for v in values)


def select(b: KernelBuilder, x: Value, mask: Value, at: ast.AST) -> Masked:
    """`x[mask]`: the mask must cover x's leading axes (numpy's IndexError otherwise)."""
    ms, xs = tuple(mask.type.shape), tuple(x.type.shape)
    if len(ms) > len(xs) or any(m != d for m, d in zip(ms, xs)):
        raise b.error(f"boolean index of shape {ms} does not match the indexed tensor's shape {xs} in "
                      f"`{b.text(at)}` (numpy raises IndexError)", at)
    return Masked(x, mask, b.text(at))


def full_mask(b: KernelBuilder, m: Masked, at: ast.AST) -> Value:
    """The mask broadcast to the data's shape."""
    ms, xs = tuple(m.mask.type.shape), tuple(m.data.type.shape)
    mask = m.mask
    if ms != xs:
        mask = b.emit("reshape", [mask], {"shape": ms + (1,) * (len(xs) - len(ms))}, at)[0]
        mask = b.emit("broadcast_to", [mask], {"shape": xs}, at)[0]
    return mask


def unsupported(b: KernelBuilder, m: Masked, at: ast.AST, doing: str) -> Exception:
    return b.error(f"`{m.text}` {MASKED_USE}; {doing} would need its length", at)


def same_mask(a: Value, c: Value, depth: int = 6) -> bool:
    """Whether two masks are the same value, or the same expression of the same values (`~m` written twice)."""
    if a == c:
        return True
    if depth == 0 or a.index != c.index:
        return False
    na, nc = a.node, c.node
    if na.op != nc.op or na.op in ("Data", "If", "Loop") or len(na.inputs) != len(nc.inputs):
        return False
    if na.op == "Const":
        return np.array_equal(na.attrs["value"], nc.attrs["value"]) and na.outputs == nc.outputs
    try:
        if na.attrs != nc.attrs:
            return False
    except ValueError:  # attributes holding arrays
        return False
    return all(same_mask(x, y, depth - 1) for x, y in zip(na.inputs, nc.inputs))


def _same_selection(b: KernelBuilder, masked: list[Masked], at: ast.AST) -> Masked:
    first = masked[0]
    for m in masked[1:]:
        if not same_mask(m.mask, first.mask) or tuple(m.data.type.shape) != tuple(first.data.type.shape):
            raise b.error(f"`{first.text}` and `{m.text}` select with different masks, so numpy would line their "
                          "elements up only if the counts agree, known at run time; select both with one mask", at)
    return first


def elementwise(b: KernelBuilder, args: list, at: ast.AST, apply: Callable[[list], Any]) -> Masked:
    """An elementwise op on selections (and numbers): the op on their data, selected by the same mask."""
    masked = [a for a in args if isinstance(a, Masked)]
    first = _same_selection(b, masked, at)
    data = []
    for a in args:
        if isinstance(a, Masked):
            data.append(a.data)
        elif a is None or is_number(a) or (is_tensor(a) and a.type.numel == 1) or \
                (isinstance(a, np.ndarray) and a.size == 1):
            data.append(a)
        else:
            raise b.error(f"`{first.text}` {MASKED_USE}; combining it with {describe(a)} would need its length",
                          at)
    out = apply(data)
    if not is_tensor(out):
        raise unsupported(b, first, at, "this op")
    return Masked(out, first.mask, first.text)


def is_elementwise(op_name: str) -> bool:
    op = ops.get(op_name)
    return op.category in (Category.ELEMWISE, Category.BROADCAST) and not op.is_reduction and \
        op_name not in ("broadcast_to", "expand_dims", "full", "full_like")


def reduce(b: KernelBuilder, op_name: str, m: Masked, attrs: dict, at: ast.AST,
           op_call: Callable[..., Any]) -> Value:
    """A reduction of the whole selection (axis None)."""
    if op_name not in _REDUCTIONS:
        raise unsupported(b, m, at, f"{op_name}")
    axis = attrs.get("axis")
    if axis is not None:
        raise b.error(f"`{m.text}` is 1-D in numpy (its length depends on the data); reduce it whole "
                      f"(axis=None), not over axis {axis}", at)
    mask = full_mask(b, m, at)
    data = m.data
    dt = data.type.dtype
    if op_name == "mean":
        dt_acc = dt if dtypes.is_float(dt) else "float32"
        zero = b.const(0, dt_acc, at)
        x = data if dt == dt_acc else b.emit("cast", [data], {"dtype": dt_acc}, at)[0]
        total = b.emit("sum", [b.emit("where", [mask, x, zero], {}, at)[0]], {"axis": None}, at)[0]
        count = b.emit("sum", [b.emit("cast", [mask], {"dtype": dt_acc}, at)[0]], {"axis": None}, at)[0]
        return b.emit("div", [total, count], {}, at)[0]
    if op_name == "count_nonzero":
        nz = b.emit("bitwise_and", [mask, b.emit("ne", [data, b.const(0, dt, at)], {}, at)[0]], {}, at)[0]
        return b.emit("sum", [b.emit("cast", [nz], {"dtype": "int32"}, at)[0]], {"axis": None}, at)[0]
    neutral = _REDUCTIONS[op_name]
    if op_name in ("max", "min"):  # numpy: ValueError for the max of an empty selection, raised after the launch
        some = b.emit("max", [b.emit("cast", [m.mask], {"dtype": "int32"}, at)[0]], {"axis": None}, at)[0]
        checks.data_check(b, b.emit("gt", [some, b.const(0, "int32", at)], {}, at)[0], "ValueError",
                          f"zero-size array to reduction operation {'maximum' if op_name == 'max' else 'minimum'} "
                          "which has no identity", at)
    if neutral is None:
        if dtypes.is_float(dt):
            neutral = -math.inf if op_name == "max" else math.inf
        elif dt == "bool":
            neutral = op_name == "min"
        else:
            info = np.iinfo(dtypes.to_numpy(dt))
            neutral = int(info.min if op_name == "max" else info.max)
    filled = b.emit("where", [mask, data, b.const(neutral, dt, at)], {}, at)[0]
    return op_call(b, None, op_name, [filled], {k: v for k, v in attrs.items() if k != "keepdims"}, at, op_name)


def write(b: KernelBuilder, x: Value, m: Masked, value: Any, at: ast.AST, coerce: Callable[..., Value]) -> Value:
    """where(mask, value, x): `x[mask] = value` with a value numpy would accept without knowing the count
    (one value, or a selection by the same mask of an array of x's shape)."""
    mask = full_mask(b, Masked(x, m.mask, m.text), at) if tuple(m.mask.type.shape) != tuple(x.type.shape) \
        else m.mask
    if isinstance(value, Masked):
        if not same_mask(value.mask, m.mask) or tuple(value.data.type.shape) != tuple(x.type.shape):
            raise b.error(f"`{b.text(at)}` assigns `{value.text}` to the elements `{m.text}` selects; with a "
                          "different mask their counts only agree at run time; select both with one mask", at)
        data = coerce(b, value.data, x.type.shape, x.type.dtype, at, at)
        return b.emit("where", [mask, data, x], {}, at)[0]
    one = coerce(b, value, (), x.type.dtype, at, at)
    return b.emit("where", [mask, one, x], {}, at)[0]
