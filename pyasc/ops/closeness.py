"""Tolerant comparison and piecewise choice: np.isclose, np.allclose, np.heaviside, np.select.

isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool: numpy's rule, |a - b| <= atol + rtol * |b|
  where b is finite, or a == b (equal infinities); equal_nan also takes NaN == NaN. Computed in the float
  dtype of result_type(a, b) (integers: float32, numpy: float64); rtol/atol are compile-time numbers.
allclose(...) -> a 0-d bool (numpy: a Python bool): all of isclose.
heaviside(x1, x2): 0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0, NaN where x1 is NaN; float results
  (integers: float32, numpy: float64).
select(condlist, choicelist, default=0): the choice of the first true condition, else `default` (a
  compile-time scalar, kept as an attribute, or an array, an operand after the choices), as a chain of
  `where`s from the last condition to the first. The dtype is numpy's: result_type of the choices and of the
  default as an array (a Python int is int64 there: int32 here).
"""
from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder, decompose_of, types_of
from .common import named, sugar_arguments
from .numpy_composite import numpy_composite
from .registry import Category, OpDef, register, register_sugar


def _close(b: Builder, a: Any, y: Any, rtol: Any, atol: Any, equal_nan: Any) -> Any:
    dt = b.float_dtype(b.result_type(b.dtype(a), b.dtype(y)))
    x, y = b.cast(a, dt), b.cast(y, dt)
    bound = b.op("add", b.const(float(atol), dt), b.op("mul", b.const(float(rtol), dt), b.op("abs", y)))
    near = b.op("le", b.op("abs", b.op("sub", x, y)), bound)
    out = b.op("bitwise_or", b.op("bitwise_and", near, b.op("isfinite", y)), b.op("eq", x, y))
    if equal_nan:
        out = b.op("bitwise_or", out, b.op("bitwise_and", b.op("isnan", x), b.op("isnan", y)))
    return out


def _isclose(b: Builder, a: Any, y: Any, *, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> list[Any]:
    return [_close(b, a, y, rtol, atol, equal_nan)]


def _allclose(b: Builder, a: Any, y: Any, *, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> list[Any]:
    return [b.op("min", _close(b, a, y, rtol, atol, equal_nan), axis=None)]


def _check_close(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    for key in ("rtol", "atol"):
        v = attrs.get(key, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise InferError(f"{key} must be a compile-time number, got {v!r}")
    if not isinstance(attrs.get("equal_nan", False), (bool, np.bool_)):
        raise InferError(f"equal_nan must be a compile-time bool, got {attrs['equal_nan']!r}")


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: ANN001, ANN201 - numpy's signature
    """Whether a and b are equal within |a - b| <= atol + rtol * |b|, element by element."""
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: ANN001, ANN201
    """Whether isclose holds for every element (a 0-d bool)."""
    return np.asarray(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


# ---- heaviside ---------------------------------------------------------------------------------


def _heaviside(b: Builder, x1: Any, x2: Any) -> list[Any]:
    dt = b.float_dtype(b.result_type(b.dtype(x1), b.dtype(x2)))
    x, h = b.cast(x1, dt), b.cast(x2, dt)
    step = b.op("where", b.op("lt", x, b.const(0.0, dt)), b.const(0.0, dt),
                b.op("where", b.op("gt", x, b.const(0.0, dt)), b.const(1.0, dt), h))
    return [b.op("where", b.op("isnan", x), x, step)]


def heaviside(x1, x2):  # noqa: ANN001, ANN201
    """The step function: 0 for x1 < 0, x2 at x1 == 0, 1 for x1 > 0."""
    return np.heaviside(x1, x2)


numpy_composite("isclose", _isclose, isclose, lambda a, b, **k: np.isclose(a, b, **k), tensor_params=("a", "b"),
                check=_check_close, numpy_names=("isclose",))
numpy_composite("allclose", _allclose, allclose, lambda a, b, **k: allclose(a, b, **k), tensor_params=("a", "b"),
                category=Category.REDUCE, check=_check_close, numpy_names=("allclose",),
                reduce_axes=lambda attrs, ndim: tuple(range(ndim)))
numpy_composite("heaviside", _heaviside, heaviside, np.heaviside, tensor_params=("x1", "x2"),
                numpy_names=("heaviside",))


# ---- select ------------------------------------------------------------------------------------


def _select(b: Builder, *ts: Any, n: int, default: Any = 0, has_default: bool = False) -> list[Any]:
    conds, choices = ts[:n], ts[n:2 * n]
    if has_default:
        dt = b.result_type(*(b.dtype(c) for c in ts[n:]))
        out = b.cast(ts[2 * n], dt)
    else:
        dt = b.result_type(*(b.dtype(c) for c in choices), dtypes.narrow(np.asarray(default).dtype))
        out = b.const(default, dt)
    for c, v in zip(reversed(conds), reversed(choices)):  # the first true condition is applied last: it wins
        out = b.op("where", c, b.cast(v, dt), out)
    return [out]


def _infer_select(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    n = attrs.get("n", 0)
    if len(ts) != 2 * n + bool(attrs.get("has_default", False)):
        raise InferError("list of cases must be same length as list of conditions")
    for i, c in enumerate(ts[:n]):
        if c.dtype != "bool":
            raise InferError(f"invalid entry {i} in condlist: should be boolean ndarray")
    return tuple(types_of(_select, ts, dict(attrs)))


def _eager_select(*ts: Any, n: int, default: Any = 0, has_default: bool = False) -> Any:
    return np.select(list(ts[:n]), list(ts[n:2 * n]), ts[2 * n] if has_default else default)


register(OpDef("select", Category.ELEMWISE, named("select", _infer_select), _eager_select,
               decompose=decompose_of(_select),
               doc="the choice of the first true condition, else default (internal: np.select is its sugar)"))


def select(condlist, choicelist, default=0):  # noqa: ANN001, ANN201 - numpy's signature
    """Per element, the entry of `choicelist` whose condition in `condlist` is the first true one, else `default`."""
    return np.select(condlist, choicelist, default)


_SELECT_SIG = inspect.signature(select)


def _bind_select(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    arguments = sugar_arguments(select, _SELECT_SIG, args, kwargs)
    conds, choices, default = arguments["condlist"], arguments["choicelist"], arguments["default"]
    if not isinstance(conds, (list, tuple)) or not isinstance(choices, (list, tuple)):
        raise TypeError("select(): condlist and choicelist must be lists of arrays")
    if len(conds) != len(choices):
        raise TypeError("select(): list of cases must be same length as list of conditions")
    if not conds:
        raise TypeError("select(): select with an empty condition list is not possible")
    if isinstance(default, np.generic):
        default = default.item()
    if isinstance(default, (bool, int, float)):
        return list(conds) + list(choices), {"n": len(conds), "default": default}
    if isinstance(default, (str, bytes, complex, type(None))):
        raise TypeError(f"select(): default must be a number or an array, got {type(default).__name__}")
    return list(conds) + list(choices) + [default], {"n": len(conds), "has_default": True}


register_sugar("select", "select", select, _bind_select, numpy_names=("select",))
