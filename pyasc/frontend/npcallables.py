"""numpy functions that call a Python function per slice or per element: np.apply_along_axis and np.vectorize.
Both are numpy's own Python loops, so here they are loops unrolled at compile time (counted against the
unroll budget, the function inlined per call): meant for the small arrays such code runs on. calls.py passes
its own call_value and op_call, so this module imports nothing of calls.

- `np.apply_along_axis(func1d, axis, arr, *args, **kwargs)`: func1d on every 1-d slice arr[i, ..., :, ..., k]
  along `axis`; its results (all of one shape) stacked where the slices were: the result's shape is
  arr.shape[:axis] + result.shape + arr.shape[axis + 1:].
- `np.vectorize(pyfunc, otypes=None, excluded=None)` (made at compile time, or a module-level decorated
  function) called on arrays: pyfunc on every element of the broadcast arguments (the `excluded` ones passed
  whole), each output stacked to the broadcast shape; the dtype is `otypes`' or that of the first call, as
  numpy's. `signature=` (generalised ufuncs) is refused.
"""
from __future__ import annotations

import ast
import math
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from .protocol import KernelBuilder
from .values import canonical_dtype, describe, is_number, is_tensor


def _stack(b: KernelBuilder, items: list[Any], dtype: str | None, at: ast.AST, name: str,
           op_call: Callable[..., Any]) -> Value:
    """Results of one shape stacked along a new first axis, in one dtype (`dtype`, else numpy's of the first)."""
    for v in items:
        if not (is_tensor(v) or is_number(v) or isinstance(v, np.ndarray)) or (
                isinstance(v, np.ndarray) and v.dtype.kind not in "biuf"):
            raise b.error(f"{name}(): the function returned {describe(v)}; it must return an array or a number", at)
    first = items[0]
    if dtype is None:
        dtype = first.type.dtype if is_tensor(first) else canonical_dtype(np.asarray(first).dtype)
    out = []
    for v in items:
        if not is_tensor(v):
            v = b.const(np.asarray(v).astype(dtypes.to_numpy(dtype)), dtype, at)
        elif v.type.dtype != dtype:
            v = op_call(b, None, "cast", [v, dtype], {}, at, name)
        out.append(v)
    shapes = {tuple(v.type.shape) for v in out}
    if len(shapes) != 1:
        raise b.error(f"{name}(): the function's results have different shapes {sorted(shapes)}; numpy stacks "
                      "results of one shape", at)
    return b.emit("concat", out, {"axis": 0, "kind": "stack"}, at)[0]


def apply_along_axis(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str,
                     op_call: Callable[..., Any], call_value: Callable[..., Any]) -> Any:
    if len(args) < 3:
        raise b.error(f"{name}() takes (func1d, axis, arr, *args, **kwargs)", at)
    func, axis, arr, extra = args[0], args[1], args[2], list(args[3:])
    if not is_tensor(arr):
        return None
    nd = arr.type.ndim
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -nd <= axis < nd:
        raise b.error(f"{name}(): axis {axis!r} is out of bounds for array of dimension {nd}", at)
    axis = int(axis) % nd
    if not all(isinstance(d, int) for d in arr.type.shape):
        raise b.error(f"{name}(): the array's shape {arr.type.shape} has sizes only known at launch; the slices "
                      "are unrolled at compile time", at)
    outer = tuple(d for i, d in enumerate(arr.type.shape) if i != axis)
    if math.prod(outer) == 0:
        raise b.error(f"{name}(): Cannot apply_along_axis when any iteration dimensions are 0 (numpy's "
                      "ValueError)", at)
    b.count_unroll(math.prod(outer), at)
    moved = op_call(b, None, "moveaxis", [arr, axis, -1], {}, at, name) if axis != nd - 1 else arr
    results = []
    for idx in np.ndindex(*outer):
        row = moved
        for i in idx:
            row = op_call(b, None, "take", [row, int(i)], {"axis": 0}, at, name)
        results.append(call_value(b, func, [row, *extra], dict(kwargs), at))
    stacked = _stack(b, results, None, at, name, op_call)
    rshape = tuple(stacked.type.shape[1:])
    out = op_call(b, None, "reshape", [stacked, outer + rshape], {}, at, name)
    if axis == nd - 1 or not rshape:
        return out
    # the result's own axes go where the applied axis was
    perm = list(range(axis)) + list(range(len(outer), len(outer) + len(rshape))) + list(range(axis, len(outer)))
    return op_call(b, None, "transpose", [out, tuple(perm)], {}, at, name)


def vectorize_call(b: KernelBuilder, vec: np.vectorize, args: list, kwargs: dict, at: ast.AST, name: str,
                   op_call: Callable[..., Any], call_value: Callable[..., Any]) -> Any:
    if vec.signature is not None:
        raise b.error(f"{name}(): np.vectorize(signature=...) is not supported in a kernel; write the function "
                      "on whole arrays", at)
    excluded = set(vec.excluded)
    varying = [i for i, a in enumerate(args) if i not in excluded]
    varying_kw = [k for k in kwargs if k not in excluded]
    tensors = [args[i] for i in varying] + [kwargs[k] for k in varying_kw]
    shapes = [tuple(t.type.shape) if is_tensor(t) else np.shape(t) for t in tensors]
    if not all(isinstance(d, int) for s in shapes for d in s):
        raise b.error(f"{name}(): sizes only known at launch; the elements are unrolled at compile time", at)
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError as e:
        raise b.error(f"{name}(): {e}", at) from None
    size = math.prod(shape)
    if size == 0:
        raise b.error(f"{name}(): the arguments broadcast to the empty shape {shape}: nothing to call the function "
                      "on", at)
    b.count_unroll(size, at)
    flat = []
    for t in tensors:
        if is_tensor(t):
            t = op_call(b, None, "broadcast_to", [t, shape], {}, at, name) if tuple(t.type.shape) != shape else t
            flat.append(op_call(b, None, "reshape", [t, (size,)], {}, at, name))
        else:
            flat.append(np.broadcast_to(np.asarray(t), shape).reshape(size))
    outputs: list[list[Any]] | None = None
    multi = False
    for k in range(size):
        elems = [op_call(b, None, "take", [f, k], {"axis": 0}, at, name) if is_tensor(f) else f[k] for f in flat]
        call_args = list(args)
        for i, e in zip(varying, elems):
            call_args[i] = e
        call_kwargs = dict(kwargs)
        for key, e in zip(varying_kw, elems[len(varying):]):
            call_kwargs[key] = e
        r = call_value(b, vec.pyfunc, call_args, call_kwargs, at)
        parts = list(r) if isinstance(r, tuple) else [r]
        if outputs is None:
            outputs = [[] for _ in parts]
            multi = isinstance(r, tuple)
        if len(parts) != len(outputs):
            raise b.error(f"{name}(): the function returned {len(parts)} values here and {len(outputs)} for the "
                          "first element", at)
        for acc, p in zip(outputs, parts):
            acc.append(p)
    assert outputs is not None
    otypes = [canonical_dtype(np.dtype(c)) for c in vec.otypes] if vec.otypes else [None] * len(outputs)
    if len(otypes) != len(outputs):
        raise b.error(f"{name}(): otypes names {len(otypes)} outputs, the function returns {len(outputs)}", at)
    results = [op_call(b, None, "reshape", [_stack(b, acc, dt, at, name, op_call), shape], {}, at, name)
               for acc, dt in zip(outputs, otypes)]
    return tuple(results) if multi else results[0]
