"""numpy's keyword arguments around a call of an op: `out=`, `dtype=`, `initial=`, and the layout-only ones.

- `out=X` (a ufunc, a reduction): the result is stored into X in place, as numpy's same-kind casting
  allows, X's other names see it, and the call's value is X (`np.tanh(X, out=X)`);
- `dtype=d` where the op's own signature has no dtype (ufuncs, sum/mean/var/std/max/min): the operands are
  cast to d first, so the op computes in d, as numpy's loop of that type does;
- `initial=v` on max/min/sum: the reduction starts from v (`np.max(x, axis=1, initial=0.0)`);
- `order=`, `casting=` (other than a forbidden one), `subok=True`: what they change is memory layout, which
  a kernel has no say in; `where=` is a located error naming np.where.
"""
from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .. import dtypes, ops
from ..ir.graph import Value
from . import aliasing, storing
from .protocol import KernelBuilder
from .values import canonical_dtype, describe, is_const_array, is_tensor

#: reductions `initial=` applies to, and the elementwise op that folds the initial value in
_INITIAL = {"max": "maximum", "min": "minimum", "sum": "add"}
_LAYOUT = ("order", "subok", "casting")


@dataclass
class Extras:
    out: Any = None
    initial: Any = None
    has_initial: bool = False
    casting: str = "same_kind"


def _params(fn: Any, op_name: str) -> set[str]:
    api = fn if fn is not None else ops.get(op_name).api
    if api is None:
        return set()
    try:
        return set(inspect.signature(api).parameters)
    except (TypeError, ValueError):
        return set()


def take(b: KernelBuilder, fn: Any, op_name: str, args: list, kwargs: dict, at: ast.AST, display: str
         ) -> tuple[list, dict, Extras]:
    """Split numpy's keywords off a call; returns (args with `dtype=` applied, the op's own kwargs, extras)."""
    own = _params(fn, op_name)
    extras = Extras()
    kwargs = dict(kwargs)
    if "out" in kwargs and "out" not in own:
        out = kwargs.pop("out")
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        if out is not None and not (is_tensor(out) or is_const_array(out)):
            raise b.error(f"{display}(): out= must be an array, got {describe(out)}", at)
        extras.out = out
    if "where" in kwargs and "where" not in own:
        if kwargs.pop("where") is not True:
            raise b.error(f"{display}(): where= is not supported in a kernel; compute the op everywhere and choose "
                          "with np.where(cond, result, other)", at)
    if "initial" in kwargs and "initial" not in own:
        value = kwargs.pop("initial")
        if value is not None and value is not np._NoValue:  # type: ignore[attr-defined]
            if op_name not in _INITIAL:
                raise b.error(f"{display}(): initial= is supported on max, min and sum", at)
            extras.initial, extras.has_initial = value, True
    for key in _LAYOUT:
        if key in kwargs and key not in own:
            value = kwargs.pop(key)
            if key == "casting":
                extras.casting = str(value)
            elif key == "subok" and value is not True:
                pass  # a kernel's results are plain arrays anyway
    if "dtype" in kwargs and "dtype" not in own:
        dtype = kwargs.pop("dtype")
        if dtype is not None:
            try:
                target = canonical_dtype(dtype)
            except (dtypes.DTypeError, TypeError) as e:
                raise b.error(f"{display}(): dtype={dtype!r}: {e}", at) from None
            args = [_cast(b, a, target, at) for a in args]
    return args, kwargs, extras


def _cast(b: KernelBuilder, a: Any, dtype: str, at: ast.AST) -> Any:
    if is_tensor(a):
        return a if a.type.dtype == dtype else b.emit("cast", [a], {"dtype": dtype}, at)[0]
    if is_const_array(a):
        return a.astype(dtypes.to_numpy(dtype))
    return a  # a Python scalar stays weak


def finish(b: KernelBuilder, extras: Extras, result: Any, op_name: str, at: ast.AST, display: str,
           op_call: Callable[..., Any]) -> Any:
    """The call's value after `initial=` (folded in with `op_call`, calls.py's) and `out=`."""
    if extras.has_initial and is_tensor(result):
        result = op_call(b, None, _INITIAL[op_name], [result, extras.initial], {}, at, display)
    if extras.out is None:
        return result
    return store_out(b, extras.out, result, at, display, extras.casting)


def store_out(b: KernelBuilder, out: Any, result: Any, at: ast.AST, display: str, casting: str = "same_kind") -> Value:
    """`result` stored into the array `out` in place (numpy's `out=`); returns what `out`'s names now hold."""
    if is_const_array(out):
        out = storing.tensor_of_array(b, out, at)
    if not is_tensor(result):
        result = storing.coerce(b, result, out.type.shape, out.type.dtype, at, at)
    if result.type.dtype != out.type.dtype and casting != "unsafe" and not np.can_cast(
            dtypes.to_numpy(result.type.dtype), dtypes.to_numpy(out.type.dtype), casting if casting in
            ("no", "equiv", "safe", "same_kind") else "same_kind"):
        raise b.error(f"{display}(): the result is {result.type.dtype}, which numpy cannot store into out= of dtype "
                      f"{out.type.dtype} with casting={casting!r} (numpy raises UFuncTypeError)", at)
    try:
        new = storing.coerce(b, result, out.type.shape, out.type.dtype, at, at)
    except Exception:
        raise
    if aliasing.is_scalar(b, out):
        raise b.error(f"{display}(): out= is a numpy scalar, which numpy cannot write", at)
    return aliasing.write(b, out, new, at, f"`{b.text(at)}`")


def stripped(kwargs: dict, names: Sequence[str]) -> dict:
    return {k: v for k, v in kwargs.items() if k not in names}
