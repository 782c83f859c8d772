"""Storing values into arrays, below the statements that do it (writes.py) and the keywords that ask for it
(npkwargs.py: `out=`): numpy's assignment casting and broadcasting (`coerce`), and compile-time numpy arrays
that a tensor write turns into constant tensors (`tensor_of_array`), captured ones lifted instead."""
from __future__ import annotations

import ast
from typing import Any

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from . import guards
from .values import describe, is_const_array, is_number, is_tensor


def external(b: Any, arr: np.ndarray) -> bool:
    """Whether `arr` is (or views) an array the kernel read from outside (a global, closure, object)."""
    for obj, _ in b.state.paths.values():
        if isinstance(obj, np.ndarray) and np.shares_memory(obj, arr):
            return True
    return any(np.shares_memory(obj, arr) for obj in b.state.unpathed.values())


def replace_array(b: Any, arr: np.ndarray, new: Value, at: ast.AST) -> None:
    """Every name holding the compile-time array `arr` now holds the tensor `new`; a numpy view of `arr`
    held by another name cannot follow, so it is an error."""
    builder = b
    while builder is not None:
        for name, value in list(builder.scope.locals.items()):
            items = value if isinstance(value, (tuple, list)) else (value,)
            if not any(isinstance(v, np.ndarray) for v in items):
                continue
            changed = False
            out = []
            for v in items:
                if v is arr:
                    out.append(new)
                    changed = True
                    continue
                if isinstance(v, np.ndarray) and np.shares_memory(v, arr):
                    raise b.error(
                        f"`{b.text(at)}` changes a compile-time array that `{name}` is a numpy view of, with a "
                        "tensor value; pyasc cannot follow that view (make `{name}` a copy, or compute it "
                        "after the update)", at)
                out.append(v)
            if changed:
                if builder.ctx is not b.ctx:
                    raise b.error(f"this in-place update inside an `if` on a tensor would also change `{name}` of "
                                  f"the calling function `{builder.parsed.fn.__qualname__}`, which pyasc does not "
                                  "support; assign a new value instead and return it", at)
                replaced = out[0] if not isinstance(value, (tuple, list)) else type(value)(out)
                builder.scope.bind(name, replaced)
        builder = builder.parent


def tensor_of_array(b: Any, arr: np.ndarray, at: ast.AST) -> Value:
    """A compile-time array about to be written with a tensor becomes a constant tensor (for every name)."""
    if external(b, arr):
        guards.relift(b, arr)  # a captured array: compiled again with it a hidden input, written after the call
        raise b.error(f"`{b.text(at)}` would change in place a compile-time array the kernel read from outside "
                      "it (a global, closure or attribute); a kernel cannot change it: copy it first "
                      "(`w = W.copy()`)", at)
    try:
        dtype = dtypes.narrow(arr.dtype)
    except dtypes.DTypeError as e:
        raise b.error(f"{e} (the array written by `{b.text(at)}`)", at) from None
    t = b.const(arr, dtype, at)
    replace_array(b, arr, t, at)
    return t



def coerce(b: Any, value: Any, shape: Any, dtype: str, at: ast.AST, target: ast.AST) -> Value:
    """`value` as numpy's assignment stores it into a region of `shape` and `dtype`: cast (unsafe, like
    numpy's setitem) and broadcast, leading size-1 dims of the value dropped."""
    shape = tuple(shape)
    if is_number(value) and not isinstance(value, np.generic):
        if dtypes.is_int(dtype) and isinstance(value, float) and not np.isfinite(value):
            raise b.error(f"cannot store {value!r} into an {dtype} array in `{b.text(at)}` (numpy raises "
                          "ValueError: cannot convert float NaN/infinity to integer)", at)
        if isinstance(value, int) and not isinstance(value, bool) and dtypes.is_int(dtype):
            info = np.iinfo(dtypes.to_numpy(dtype))
            if not info.min <= value <= info.max:
                raise b.error(f"Python integer {value} out of bounds for {dtype} in `{b.text(at)}` (numpy raises "
                              "OverflowError)", at)
        v = b.const(dtypes.to_numpy(dtype).type(value), dtype, at)
    elif is_number(value) or is_const_array(value):
        arr = np.asarray(value)
        try:
            src = dtypes.narrow(arr.dtype)
        except dtypes.DTypeError as e:
            raise b.error(f"{e} (the value in `{b.text(at)}`)", at) from None
        v = b.const(arr, src, at)
    elif is_tensor(value):
        # a copy: the stored value must be a new array, not another name for `value` (or a view of it)
        v = b.emit("cast", [value], {"dtype": value.type.dtype}, at)[0]
    elif isinstance(value, (list, tuple)) and value and any(is_tensor(x) for x in value):
        v = _stacked(b, value, dtype, at)  # numpy makes an array of the sequence first
    else:
        raise b.error(f"cannot assign {describe(value)} into a tensor in `{b.text(at)}`", at)
    if v.type.dtype != dtype:
        v = b.emit("cast", [v], {"dtype": dtype}, at)[0]
    vshape = tuple(v.type.shape)
    lead = 0
    while len(vshape) - lead > len(shape) and vshape[lead] == 1:
        lead += 1
    if lead:
        v = b.emit("reshape", [v], {"shape": vshape[lead:]}, at)[0]
        vshape = vshape[lead:]
    if vshape != shape and not all(isinstance(d, int) for d in (*vshape, *shape)) \
            and not _broadcasts_whatever_the_sizes(vshape, shape):
        raise b.error(f"`{b.text(at)}` stores a value of shape {_dims(vshape)} into a region of shape {_dims(shape)}; "
                      "with symbolic dims (dynamic=True) pyasc cannot tell whether numpy would broadcast them, so "
                      "slice writes need the same shape or static shapes", at)
    if vshape != shape:
        try:
            ok = _broadcasts_whatever_the_sizes(vshape, shape) or np.broadcast_shapes(vshape, shape) == shape
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise b.error(f"could not broadcast input array from shape {vshape} into shape {shape} in "
                          f"`{b.text(at)}` (numpy raises ValueError here)", at)
        v = b.emit("broadcast_to", [v], {"shape": shape}, at)[0]
    return v


def _broadcasts_whatever_the_sizes(vshape: tuple, shape: tuple) -> bool:
    """A value of `vshape` broadcasts to `shape` for every launch size: aligned from the right, each of its dims
    is 1 or the region's own (the same int or the same symbol), e.g. a scalar or a (1, N) row into (M, N)."""
    if len(vshape) > len(shape):
        return False
    return all(v == 1 or v == s for v, s in zip(reversed(vshape), reversed(shape)))


def _stacked(b: Any, items: Any, dtype: str, at: ast.AST) -> Value:
    """A list/tuple of tensors (and numbers) as one array of `dtype`, items along a new first axis."""
    parts = []
    for x in items:
        if isinstance(x, (list, tuple)):
            x = _stacked(b, x, dtype, at)
        elif not is_tensor(x):
            if not (is_number(x) or is_const_array(x)):
                raise b.error(f"cannot store {describe(x)} into a tensor in `{b.text(at)}`", at)
            x = b.const(np.asarray(x), dtype, at)
        if x.type.dtype != dtype:
            x = b.emit("cast", [x], {"dtype": dtype}, at)[0]
        parts.append(b.emit("expand_dims", [x], {"axis": 0}, at)[0])
    shapes = {tuple(p.type.shape) for p in parts}
    if len(shapes) != 1:
        raise b.error(f"`{b.text(at)}` stores a sequence of arrays of different shapes {sorted(map(str, shapes))} "
                      "(numpy raises ValueError: inhomogeneous shape)", at)
    if len(parts) == 1:
        return parts[0]
    return b.emit("concat", parts, {"axis": 0, "kind": "concatenate"}, at)[0]


def _dims(shape: tuple) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
