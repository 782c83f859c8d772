"""numpy functions about arrays themselves rather than their values: np.array / np.asarray (a copy or the
same array, a cast, a stack of a list), np.shape / np.ndim / np.size, np.copyto.

- `np.array(x, dtype=None, copy=True, ndmin=0)` of a tensor is a new array (a copy, cast to `dtype`);
  `np.asarray(x)` is `x` itself when no cast is needed, as numpy returns the same object. A list or tuple
  holding tensors is stacked, with numpy's dtype for its elements (a Python float makes float64, which
  pyasc narrows to float32); everything compile-time stays numpy's own at compile time
  (`np.array(0.0, x.dtype)`).
- `np.shape(x)`, `np.ndim(x)`, `np.size(x)` of a tensor are its compile-time shape, rank and size.
- `np.copyto(dst, src)` writes `src` into `dst` in place, broadcasting and casting as numpy does.
- `np.linspace(start, stop, ...)` with a tensor end is the op linspace_between (ops/spaces.py); with
  compile-time ends it runs at compile time, as numpy's own.
"""
from __future__ import annotations

import ast
import inspect
from typing import Any, Callable

import numpy as np

from .. import dtypes, ops
from . import aliasing, fancy, indexing, storing
from .protocol import KernelBuilder
from .values import canonical_dtype, contains_tensor, describe, is_const_array, is_tensor

#: what a handler returns to leave the call to numpy at compile time
NUMPY = object()


def _dtype_arg(b: KernelBuilder, dtype: Any, at: ast.AST, name: str) -> str | None:
    if dtype is None:
        return None
    try:
        return canonical_dtype(dtype)
    except (dtypes.DTypeError, TypeError) as e:
        raise b.error(f"{name}(): dtype={dtype!r}: {e}", at) from None


def _element_dtype(v: Any) -> np.dtype:
    """The dtype numpy gives an element of a list it makes an array of (Python scalars are not weak here)."""
    if is_tensor(v):
        return dtypes.to_numpy(v.type.dtype)
    return np.asarray(v).dtype


def _leaves(b: KernelBuilder, v: Any, at: ast.AST) -> tuple[list[Any], tuple[int, ...]]:
    """The elements of a nested list/tuple and the leading shape they make (ragged lists are numpy's error)."""
    if isinstance(v, (list, tuple)):
        if not v:
            return [], (0,)
        parts = [_leaves(b, x, at) for x in v]
        inner = parts[0][1]
        if any(p[1] != inner for p in parts):
            raise b.error(f"np.array() of a ragged nested sequence in `{b.text(at)}` (numpy raises ValueError: "
                          "the requested array has an inhomogeneous shape)", at)
        return [leaf for p in parts for leaf in p[0]], (len(v),) + inner
    return [v], ()


def _stack(b: KernelBuilder, v: Any, dtype: str | None, at: ast.AST, name: str, op_call: Callable[..., Any]) -> Any:
    leaves, lead = _leaves(b, v, at)
    shapes = {tuple(x.type.shape) if is_tensor(x) else np.shape(x) for x in leaves}
    if len(shapes) > 1:
        raise b.error(f"{name}() of arrays of different shapes {sorted(shapes)} in `{b.text(at)}` (numpy raises "
                      "ValueError: inhomogeneous shape)", at)
    target = dtype or dtypes.narrow(np.result_type(*(_element_dtype(x) for x in leaves)))
    items = []
    for x in leaves:
        if is_tensor(x):
            items.append(x if x.type.dtype == target else b.emit("cast", [x], {"dtype": target}, at)[0])
        else:
            items.append(b.const(np.asarray(x), target, at))
    (inner,) = shapes
    stack = ops.public_functions()["stack"]
    flat = op_call(b, stack, stack.__pyasc_op__, [items], {"axis": 0}, at, name) if len(items) > 1 else \
        b.emit("expand_dims", [items[0]], {"axis": 0}, at)[0]
    shape = lead + tuple(inner)
    if tuple(flat.type.shape) != shape:
        flat = b.emit("reshape", [flat], {"shape": shape}, at)[0]
    return flat


def _ndmin(b: KernelBuilder, x: Any, ndmin: int, at: ast.AST) -> Any:
    if ndmin > x.type.ndim:
        x = b.emit("reshape", [x], {"shape": (1,) * (ndmin - x.type.ndim) + tuple(x.type.shape)}, at)[0]
    return x


def array_(copy_default: bool) -> Callable[..., Any]:
    def handler(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
                op_call: Callable[..., Any]) -> Any:
        if not contains_tensor(args) and not contains_tensor(list(kwargs.values())):
            return NUMPY
        kwargs = dict(kwargs)
        obj = args[0] if args else kwargs.pop("object", kwargs.pop("a", None))
        rest = list(args[1:])
        dtype = _dtype_arg(b, rest.pop(0) if rest else kwargs.pop("dtype", None), at, name)
        copy = kwargs.pop("copy", True if copy_default else None)  # asarray: None, a copy only if needed
        ndmin = kwargs.pop("ndmin", 0)
        kwargs.pop("order", None)
        kwargs.pop("like", None)
        kwargs.pop("subok", None)
        if rest or kwargs:
            raise b.error(f"{name}(): unexpected arguments {', '.join(kwargs) or len(rest)}", at)
        if is_tensor(obj):
            same = dtype is None or dtype == obj.type.dtype
            if same and copy is not True:
                out = obj  # numpy returns the very array (asarray, copy=False)
            else:
                out = b.emit("cast", [obj], {"dtype": dtype or obj.type.dtype}, at)[0]  # a new array
                aliasing.forget_view(b, out)
        else:
            out = _stack(b, obj, dtype, at, name, op_call)
        return _ndmin(b, out, int(ndmin), at)

    return handler


def _attribute(attr: str) -> Callable[..., Any]:
    def handler(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
                op_call: Callable[..., Any]) -> Any:
        if len(args) != 1 or kwargs or not is_tensor(args[0]):
            return NUMPY
        t = args[0].type
        if attr == "shape":
            return tuple(t.shape)
        if attr == "ndim":
            return t.ndim
        size: Any = 1
        for d in t.shape:
            size = size * d
        return size

    return handler


def atleast_(n: int) -> Callable[..., Any]:
    def handler(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
                op_call: Callable[..., Any]) -> Any:
        if kwargs or not contains_tensor(args):
            return NUMPY
        outs = []
        for a in args:
            if not is_tensor(a):
                a = b.const(np.asarray(a), dtypes.narrow(np.asarray(a).dtype), at)
            shape = tuple(a.type.shape)
            if len(shape) < n:  # numpy's placement: (1,), (1, N), (1, N, 1) / (M, N, 1)
                new = {0: (1,) * n, 1: ((1,) + shape + (1,))[:n] if n == 3 else (1,) + shape,
                       2: shape + (1,)}[len(shape)] if n > 1 else (1,)
                a = b.emit("reshape", [a], {"shape": new}, at)[0]
            outs.append(a)
        return outs[0] if len(outs) == 1 else tuple(outs)
    return handler


def in_order(b: KernelBuilder, x: Any, order: Any, at: ast.AST, display: str, op_call: Callable[..., Any]) -> Any:
    """x as ravel(order=...) reads it: row-major ('C', and 'A'/'K' of a kernel's row-major tensors) or
    column-major ('F': the reversed axes, transposed)."""
    if order in ("C", "A", "K", None):
        return x
    if order != "F":
        raise b.error(f"{display}(): order must be one of 'C', 'F', 'A', or 'K' (got {order!r})", at)
    nd = x.type.ndim
    return x if nd < 2 else op_call(b, None, "transpose", [x, tuple(range(nd - 1, -1, -1))], {}, at, display)


def ravel_(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
           op_call: Callable[..., Any]) -> Any:
    """np.ravel(a, order='C'): the method's flat view (`a.ravel()`); order 'F' reads the reversed axes."""
    if not args or not is_tensor(args[0]):
        return NUMPY
    if len(args) > 2 or set(kwargs) - {"order"} or (len(args) == 2 and kwargs):
        raise b.error(f"{name}() takes a and order", at)
    x = in_order(b, args[0], args[1] if len(args) == 2 else kwargs.get("order", "C"), at, name, op_call)
    return op_call(b, None, "reshape", [x, (-1,)], {}, at, name)


def copyto_(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
            op_call: Callable[..., Any]) -> Any:
    kwargs = dict(kwargs)
    if len(args) < 2:
        raise b.error(f"{name}() needs dst and src", at)
    dst, src = args[0], args[1]
    casting = args[2] if len(args) > 2 else kwargs.pop("casting", "same_kind")
    if kwargs.pop("where", True) is not True or kwargs:
        raise b.error(f"{name}(): where= is not supported; write np.copyto(dst, np.where(mask, src, dst))", at)
    if not (is_tensor(dst) or is_const_array(dst)):
        raise b.error(f"{name}(): dst must be an array, got {describe(dst)}", at)
    if not contains_tensor([dst, src]):
        return NUMPY
    if is_const_array(dst):
        dst = storing.tensor_of_array(b, dst, at)
    if is_tensor(src) and src.type.dtype != dst.type.dtype and casting != "unsafe" and not np.can_cast(
            dtypes.to_numpy(src.type.dtype), dtypes.to_numpy(dst.type.dtype), casting):
        raise b.error(f"{name}(): cannot cast {src.type.dtype} to {dst.type.dtype} with casting={casting!r} "
                      "(numpy raises TypeError)", at)
    new = storing.coerce(b, src, dst.type.shape, dst.type.dtype, at, at)
    aliasing.write(b, dst, new, at, f"`{b.text(at)}`")
    return None


def linspace_(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
              op_call: Callable[..., Any]) -> Any:
    if not contains_tensor([args, list(kwargs.values())]):
        return NUMPY
    try:
        p = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise b.error(f"{name}(): {e}", at) from None
    p.apply_defaults()
    a = p.arguments
    num = a["num"]
    if is_tensor(num) or isinstance(num, bool) or not isinstance(num, (int, np.integer)):
        raise b.error(f"{name}(): num must be an int known at compile time (it is the result's size), got "
                      f"{describe(num)}", at)
    ends = []
    for end in (a["start"], a["stop"]):
        if not is_tensor(end):
            if isinstance(end, (list, tuple)) and contains_tensor(end):
                raise b.error(f"{name}(): a list holding tensors as an end; stack it first (np.stack)", at)
            end = b.const(np.asarray(end, np.float32), "float32", at)
        ends.append(end)
    dtype = _dtype_arg(b, a["dtype"], at, name)
    y = b.emit("linspace_between", ends, {"num": int(num), "endpoint": bool(a["endpoint"]), "dtype": dtype,
                                          "axis": a["axis"]}, at)[0]
    if not a["retstep"]:
        return y
    div = int(num) - 1 if a["endpoint"] else int(num)
    delta = op_call(b, None, "sub", [ends[1], ends[0]], {}, at, name)
    return y, (op_call(b, None, "div", [delta, div], {}, at, name) if div > 0 else
               op_call(b, None, "mul", [delta, float("nan")], {}, at, name))


#: numpy function name -> handler(b, fn, args, kwargs, at, name, op_call); a handler returning NUMPY leaves the
#: call to numpy itself, at compile time
HANDLERS: dict[str, Callable[..., Any]] = {
    "array": array_(True),
    "asarray": array_(False),
    "asanyarray": array_(False),
    "ascontiguousarray": array_(False),
    "shape": _attribute("shape"),
    "ndim": _attribute("ndim"),
    "size": _attribute("size"),
    "copyto": copyto_,
    "linspace": linspace_,
    "ravel": ravel_,
    "atleast_1d": atleast_(1),
    "atleast_2d": atleast_(2),
    "atleast_3d": atleast_(3),
}


def add_at(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str,
           op_call: Callable[..., Any]) -> Any:
    """np.add.at(a, indices, b): unbuffered, so repeated indices accumulate (fancy.py's "add" scatter)."""
    if kwargs or len(args) not in (2, 3):
        raise b.error(f"{name}() takes (a, indices, b)", at)
    a, indices = args[0], args[1]
    value = args[2] if len(args) == 3 else 1
    if not contains_tensor([a, indices, value]):
        return NUMPY
    if is_const_array(a):
        a = storing.tensor_of_array(b, a, at)
    if not is_tensor(a):
        raise b.error(f"{name}(): the first argument must be an array, got {describe(a)}", at)
    index = indices if isinstance(indices, tuple) else (indices,)
    if not fancy.is_advanced(index):
        region = indexing.basic(b, a, index, at)  # slices and ints: an ordinary buffered += on a view
        new = op_call(b, None, "add", [region, value], {}, at, name)
        aliasing.write(b, region, storing.coerce(b, new, region.type.shape, region.type.dtype, at, at), at, name)
        return None
    fancy.write(b, a, index, value, at, indexing.basic, storing.coerce, None, mode="add")
    return None


def handler_for(callee: Any) -> Callable[..., Any] | None:
    if getattr(callee, "__self__", None) is np.add and getattr(callee, "__name__", "") == "at":
        return add_at
    for name, handler in HANDLERS.items():
        if getattr(np, name, None) is callee:
            return handler
    return None


