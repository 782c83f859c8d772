"""numpy functions that write into an array in place and return None: np.put_along_axis, np.fill_diagonal,
np.putmask, np.put. Each is the indexed write numpy documents it as, so it shares that write's semantics
(casting, the last of repeated indices wins, views and other names of the array see it, an index out of
range is numpy's IndexError at run time):

- `np.put_along_axis(arr, indices, values, axis)`: `arr[ii, ..., indices, ..., kk] = values` with the
  other axes' aranges (numpy's `_make_along_axis_idx`); axis None writes the flattened array.
- `np.fill_diagonal(a, val, wrap=False)`: `a.flat[:end:step] = val`, positions known at compile time.
- `np.putmask(a, mask, values)`: `a = where(mask, values, a)`.
- `np.put(a, ind, v, mode='raise')`: `a.flat[ind] = v`; mode 'wrap' / 'clip' brings indices into range.

Where numpy repeats a shorter `val` / `values` / `v` over the positions it writes (`a.flat[...] = v`
cycles), the values are that repetition: a gather with compile-time indices.
"""
from __future__ import annotations

import ast
import inspect
import math
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from . import aliasing, fancy, indexing, storing
from .npfuncs import NUMPY
from .protocol import KernelBuilder
from .values import contains_tensor, describe, is_const_array, is_number, is_tensor


def _bind(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str) -> dict[str, Any]:
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise b.error(f"{name}(): {e}", at) from None
    bound.apply_defaults()
    return dict(bound.arguments)


def _target(b: KernelBuilder, a: Any, at: ast.AST, name: str) -> Value:
    if is_const_array(a):
        return storing.tensor_of_array(b, a, at)
    if not is_tensor(a):
        raise b.error(f"{name}(): the array to write must be an array, got {describe(a)}", at)
    return a


def _cycled(b: KernelBuilder, v: Any, n: int, at: ast.AST, name: str, op_call: Callable[..., Any]) -> Any:
    """`v` repeated over n positions as numpy's flat assignment repeats it: a number stays itself, a tensor of
    n elements is flattened, any other length is gathered cyclically."""
    if is_number(v):
        return v
    if not is_tensor(v):
        v = np.asarray(v)
        if v.dtype == object:
            raise b.error(f"{name}(): values must be numbers or arrays, got {describe(v)}", at)
        flat = v.reshape(-1)
        return flat[np.arange(n) % flat.size] if flat.size else flat
    size = v.type.numel
    if not isinstance(size, int):
        raise b.error(f"{name}(): the values' shape {v.type.shape} has sizes only known at launch", at)
    if size == 0:
        raise b.error(f"{name}(): cannot write an empty array of values (numpy writes nothing only when there "
                      "is nothing to write)", at)
    flat = op_call(b, None, "reshape", [v, (-1,)], {}, at, name)
    if size == n:
        return flat
    return op_call(b, None, "take", [flat, np.arange(n, dtype=np.int32) % size], {}, at, name)


def _static_size(b: KernelBuilder, x: Value, at: ast.AST, name: str) -> int:
    if not all(isinstance(d, int) for d in x.type.shape):
        raise b.error(f"{name}(): the array's shape {x.type.shape} has sizes only known at launch; the written "
                      "positions need static sizes", at)
    return math.prod(x.type.shape)


def put_along_axis(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
                   op_call: Callable[..., Any]) -> Any:
    p = _bind(b, fn, args, kwargs, at, name)
    arr, indices, values, axis = p["arr"], p["indices"], p["values"], p["axis"]
    if not contains_tensor([arr, indices, values]):
        return NUMPY
    arr = _target(b, arr, at, name)
    if not (is_tensor(indices) or is_const_array(indices)) or not dtypes.is_int(
            indices.type.dtype if is_tensor(indices) else dtypes.narrow(np.asarray(indices).dtype)):
        raise b.error(f"{name}(): `indices` must be an integer array, got {describe(indices)}", at)
    ndim = indices.type.ndim if is_tensor(indices) else np.ndim(indices)
    if axis is None:
        if ndim != 1:
            raise b.error(f"{name}(): when axis=None, `indices` must have a single dimension.", at)
        flat = op_call(b, None, "reshape", [arr, (-1,)], {}, at, name)
        fancy.write(b, flat, (indices,), values, at, indexing.basic, storing.coerce, None)
        return None
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise b.error(f"{name}(): axis must be an int or None, got {describe(axis)}", at)
    if ndim != arr.type.ndim:
        raise b.error(f"{name}(): `indices` and `arr` must have the same number of dimensions", at)
    if not -ndim <= axis < ndim:
        raise b.error(f"{name}(): axis {axis} is out of bounds for array of dimension {ndim}", at)
    axis = int(axis) % ndim
    shape = indices.type.shape if is_tensor(indices) else np.shape(indices)
    index: list[Any] = []
    for d in range(ndim):  # numpy's _make_along_axis_idx: the other axes' positions, broadcast against indices
        if d == axis:
            index.append(indices)
            continue
        size, n = shape[d], arr.type.shape[d]
        if not isinstance(size, int) or not isinstance(n, int):
            raise b.error(f"{name}(): axis {d} has a size only known at launch", at)
        if size not in (1, n):
            raise b.error(f"{name}(): `indices` of shape {tuple(shape)} does not match `arr` of shape "
                          f"{arr.type.shape} on axis {d} (numpy raises IndexError: shape mismatch)", at)
        # every position of the axis, broadcast against indices (a size-1 axis of indices reaches them all)
        index.append(np.arange(n, dtype=np.int32).reshape([-1 if i == d else 1 for i in range(ndim)]))
    fancy.write(b, arr, tuple(index), values, at, indexing.basic, storing.coerce, None)
    return None


def fill_diagonal(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
                  op_call: Callable[..., Any]) -> Any:
    p = _bind(b, fn, args, kwargs, at, name)
    a, val, wrap = p["a"], p["val"], p["wrap"]
    if not contains_tensor([a, val]):
        return NUMPY
    a = _target(b, a, at, name)
    shape = a.type.shape
    if a.type.ndim < 2:
        raise b.error(f"{name}(): array must be at least 2-d", at)
    _static_size(b, a, at, name)
    if a.type.ndim == 2:
        step = shape[1] + 1
        end = None if wrap else shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise b.error(f"{name}(): All dimensions of input must be of equal length", at)
        step = 1 + int(np.cumprod(shape[:-1]).sum())
        end = None
    positions = np.arange(math.prod(shape))[:end:step]
    if positions.size == 0:
        return None
    index = tuple(np.asarray(i, dtype=np.int32) for i in np.unravel_index(positions, shape))
    values = _cycled(b, val, positions.size, at, name, op_call)
    fancy.write(b, a, index, values, at, indexing.basic, storing.coerce, None)
    return None


def putmask(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
            op_call: Callable[..., Any]) -> Any:
    if len(args) + len(kwargs) != 3 or set(kwargs) - {"mask", "values"}:
        raise b.error(f"{name}() takes (a, mask, values)", at)
    a = args[0]
    rest = dict(zip(("mask", "values"), args[1:]), **kwargs)
    mask, values = rest["mask"], rest["values"]
    if not contains_tensor([a, mask, values]):
        return NUMPY
    a = _target(b, a, at, name)
    n = _static_size(b, a, at, name)
    mshape = mask.type.shape if is_tensor(mask) else np.shape(mask)
    if math.prod(mshape) != n:
        raise b.error(f"{name}(): mask and data must be the same size", at)
    mask = op_call(b, None, "reshape", [mask, a.type.shape], {}, at, name)
    if not is_tensor(mask) or not dtypes.is_bool(mask.type.dtype):
        mask = op_call(b, None, "cast", [mask, "bool"], {}, at, name)
    values = _cycled(b, values, n, at, name, op_call)
    if is_tensor(values) or isinstance(values, np.ndarray):
        values = op_call(b, None, "reshape", [values, a.type.shape], {}, at, name)
    values = storing.coerce(b, values, a.type.shape, a.type.dtype, at, at)
    new = op_call(b, None, "where", [mask, values, a], {}, at, name)
    aliasing.write(b, a, storing.coerce(b, new, a.type.shape, a.type.dtype, at, at), at, name)
    return None


def put(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
        op_call: Callable[..., Any]) -> Any:
    p = _bind(b, fn, args, kwargs, at, name)
    a, ind, v, mode = p["a"], p["ind"], p["v"], p["mode"]
    if not contains_tensor([a, ind, v]):
        return NUMPY
    if mode not in ("raise", "wrap", "clip"):
        raise b.error(f"{name}(): mode must be one of 'raise', 'wrap' or 'clip', got {mode!r}", at)
    a = _target(b, a, at, name)
    n = _static_size(b, a, at, name)
    if is_tensor(ind):
        if not dtypes.is_int(ind.type.dtype):
            raise b.error(f"{name}(): indices must be integers, got {ind.type.dtype}", at)
        flat_ind = op_call(b, None, "reshape", [ind, (-1,)], {}, at, name)
        count = ind.type.numel
        if mode == "wrap":
            flat_ind = op_call(b, None, "mod", [flat_ind, n], {}, at, name)
        elif mode == "clip":
            flat_ind = op_call(b, None, "clip", [flat_ind, 0, n - 1], {}, at, name)
    else:
        arr = np.asarray(ind)
        if arr.dtype.kind not in "iu":
            raise b.error(f"{name}(): indices must be integers, got {describe(ind)}", at)
        arr = arr.reshape(-1).astype(np.int64)
        if mode == "wrap":
            arr = arr % n
        elif mode == "clip":
            arr = np.clip(arr, 0, n - 1)
        elif arr.size and (arr.min() < -n or arr.max() >= n):
            bad = int(arr[(arr < -n) | (arr >= n)][0])
            raise b.error(f"{name}(): index {bad} is out of bounds for axis 0 with size {n}", at)
        flat_ind, count = arr.astype(np.int32), arr.size
    if not isinstance(count, int):
        raise b.error(f"{name}(): the indices' shape has sizes only known at launch", at)
    if count == 0:
        return None
    flat = op_call(b, None, "reshape", [a, (-1,)], {}, at, name)
    fancy.write(b, flat, (flat_ind,), _cycled(b, v, count, at, name, op_call), at, indexing.basic,
                storing.coerce, None)
    return None


#: numpy function name -> handler(b, fn, args, kwargs, at, name, op_call), as npfuncs.HANDLERS
HANDLERS: dict[str, Callable[..., Any]] = {
    "put_along_axis": put_along_axis,
    "fill_diagonal": fill_diagonal,
    "putmask": putmask,
    "put": put,
}


def handler_for(callee: Any) -> Callable[..., Any] | None:
    for name, handler in HANDLERS.items():
        if getattr(np, name, None) is callee:
            return handler
    return None
