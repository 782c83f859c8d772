"""Elementwise ops: binary arithmetic/comparison/bitwise, unary math, where, cast.

Dtype rules are numpy's, asked of numpy itself (`ufunc.resolve_dtypes`) and
narrowed to the supported set (see `common.ufunc_dtype`). In particular:
- float math (exp, log, sqrt, sin, cos, tanh, rsqrt, sigmoid and the
  composites gelu/silu/erf) *promotes* integer and bool inputs the way np.exp
  does: int8/uint8/bool -> float16, int16 -> float32, int32 -> float64, which
  the compiler narrows to float32. Eager results are numpy's (float64 for
  int32); inferred types are the narrowed ones.
- div is true division: integers give float64 in numpy, float32 here.
- comparisons give bool; bitwise ops and invert take ints and bool only;
  neg and sign reject bool (as numpy does).
- reciprocal takes floats only: numpy's integer reciprocal truncates
  (1/2 -> 0), which is never what a kernel means; cast to a float first.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .common import (
    FLOATS,
    NUMERIC,
    arity,
    attr_dtype,
    broadcast_shapes,
    float_math_dtype,
    float_result,
    named,
    require_dtype,
    ufunc_dtype,
)
from .registry import Category, OpDef, get, register, register_sugar


def _named_api(fn: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# ---- binary (broadcasting) -------------------------------------------------------------


def _binary(
    name: str,
    ufunc: np.ufunc,
    numpy_names: Sequence[str],
    doc: str,
    *,
    expensive: bool = False,
    commutative: bool = False,
    public_name: str | None = None,
) -> None:
    def api(x1, x2):  # noqa: ANN001, ANN202 - the public signature
        return ufunc(x1, x2)

    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        arity(ts, 2, name)
        a, b = ts
        dtype = ufunc_dtype(ufunc, name, a.dtype, b.dtype)
        return (TensorType(broadcast_shapes(a.shape, b.shape), dtype),)

    api = _named_api(api, public_name or name, doc)
    register(OpDef(name, Category.BROADCAST, named(name, infer), api, api=api, tensor_params=("x1", "x2"),
                   expensive=expensive, commutative=commutative, numpy_names=tuple(numpy_names), doc=doc))


_binary("add", np.add, ("add",), "x1 + x2, broadcasting.", commutative=True)
_binary("sub", np.subtract, ("subtract",), "x1 - x2, broadcasting.")
_binary("mul", np.multiply, ("multiply",), "x1 * x2, broadcasting.", commutative=True)
_binary("div", np.true_divide, ("divide", "true_divide"), "x1 / x2 (true division; integers give float32).",
        expensive=True)
# floor division, remainder and reciprocal are division-based: expensive like XLA's divide/remainder
_binary("floordiv", np.floor_divide, ("floor_divide",), "x1 // x2 (floor division).", expensive=True)
_binary("mod", np.remainder, ("mod", "remainder"), "x1 % x2 (Python's sign convention, like numpy).",
        expensive=True)
_binary("pow", np.power, ("power", "pow"), "x1 ** x2.", expensive=True)
_binary("maximum", np.maximum, ("maximum",), "Elementwise maximum (NaN propagates).", commutative=True)
_binary("minimum", np.minimum, ("minimum",), "Elementwise minimum (NaN propagates).", commutative=True)

_binary("lt", np.less, ("less",), "x1 < x2 (bool).", public_name="less")
_binary("le", np.less_equal, ("less_equal",), "x1 <= x2 (bool).", public_name="less_equal")
_binary("gt", np.greater, ("greater",), "x1 > x2 (bool).", public_name="greater")
_binary("ge", np.greater_equal, ("greater_equal",), "x1 >= x2 (bool).", public_name="greater_equal")
_binary("eq", np.equal, ("equal",), "x1 == x2 (bool).", commutative=True, public_name="equal")
_binary("ne", np.not_equal, ("not_equal",), "x1 != x2 (bool).", commutative=True, public_name="not_equal")

_binary("bitwise_and", np.bitwise_and, ("bitwise_and",), "x1 & x2 (ints and bool).", commutative=True)
_binary("bitwise_or", np.bitwise_or, ("bitwise_or",), "x1 | x2 (ints and bool).", commutative=True)
_binary("bitwise_xor", np.bitwise_xor, ("bitwise_xor",), "x1 ^ x2 (ints and bool).", commutative=True)


# ---- unary ---------------------------------------------------------------------------


def _unary(
    name: str,
    impl: Callable[[Any], Any],
    dtype_rule: Callable[[str], str],
    numpy_names: Sequence[str],
    doc: str,
    *,
    expensive: bool = False,
) -> None:
    def api(x):  # noqa: ANN001, ANN202 - the public signature
        return impl(x)

    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        arity(ts, 1, name)
        (a,) = ts
        return (TensorType(a.shape, dtype_rule(a.dtype)),)

    api = _named_api(api, name, doc)
    register(OpDef(name, Category.ELEMWISE, named(name, infer), api, api=api, tensor_params=("x",),
                   expensive=expensive, numpy_names=tuple(numpy_names), doc=doc))


def _ufunc_unary(name: str, ufunc: np.ufunc, numpy_names: Sequence[str], doc: str, *, expensive: bool = False) -> None:
    _unary(name, ufunc, lambda dt: ufunc_dtype(ufunc, name, dt), numpy_names, doc, expensive=expensive)


def as_float(x: Any) -> np.ndarray:
    """`x` as an array in the float dtype numpy's float math would compute it in."""
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(float_math_dtype(x.dtype))


def _rsqrt(x: Any) -> Any:
    return 1 / np.sqrt(as_float(x))


def _sigmoid(x: Any) -> Any:
    with np.errstate(over="ignore"):  # exp(-x) overflows to inf for very negative x: the result 0 is right
        return 1 / (1 + np.exp(-as_float(x)))


def _relu(x: Any) -> Any:
    return np.maximum(x, 0)  # 0 is a weak scalar: the dtype of x is kept


def _numeric(op: str) -> Callable[[str], str]:
    def rule(dt: str) -> str:
        require_dtype(TensorType((), dt), NUMERIC, op)
        return dt

    return rule


def _floats_only(op: str, hint: str) -> Callable[[str], str]:
    def rule(dt: str) -> str:
        if dt not in FLOATS:
            raise InferError(f"{op}: does not accept dtype {dt}; it takes {', '.join(FLOATS)} ({hint})")
        return dt

    return rule


_ufunc_unary("neg", np.negative, ("negative",), "-x (not for bool, like numpy).")
_ufunc_unary("invert", np.invert, ("invert", "bitwise_not", "bitwise_invert"), "~x (ints and bool).")
_ufunc_unary("abs", np.absolute, ("abs", "absolute"), "|x|.")
_ufunc_unary("exp", np.exp, ("exp",), "e ** x.", expensive=True)
_ufunc_unary("log", np.log, ("log",), "Natural logarithm.", expensive=True)
_ufunc_unary("sqrt", np.sqrt, ("sqrt",), "Square root.", expensive=True)
_ufunc_unary("sin", np.sin, ("sin",), "Sine.", expensive=True)
_ufunc_unary("cos", np.cos, ("cos",), "Cosine.", expensive=True)
_ufunc_unary("tanh", np.tanh, ("tanh",), "Hyperbolic tangent.", expensive=True)
_ufunc_unary("floor", np.floor, ("floor",), "Round down (integers are kept as they are).")
_ufunc_unary("ceil", np.ceil, ("ceil",), "Round up (integers are kept as they are).")
_ufunc_unary("sign", np.sign, ("sign",), "-1, 0 or 1 (NaN stays NaN; not for bool).")
_unary("reciprocal", np.reciprocal, _floats_only("reciprocal", "numpy's integer reciprocal truncates; cast first"),
       ("reciprocal",), "1 / x (floats only).", expensive=True)
_unary("rsqrt", _rsqrt, float_result, (), "1 / sqrt(x).", expensive=True)
_unary("sigmoid", _sigmoid, float_result, (), "1 / (1 + exp(-x)).", expensive=True)
_unary("relu", _relu, _numeric("relu"), (), "max(x, 0), keeping the dtype.")


# ---- where -----------------------------------------------------------------------------


def where(condition, x, y):  # noqa: ANN001, ANN201 - the public signature
    """x where condition is true (nonzero), else y; all three broadcast."""
    return np.where(condition, x, y)


def _infer_where(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 3, "where")
    c, x, y = ts
    return (TensorType(broadcast_shapes(c.shape, x.shape, y.shape), dtypes.promote(x.dtype, y.dtype)),)


register(OpDef("where", Category.BROADCAST, named("where", _infer_where), where, api=where,
               tensor_params=("condition", "x", "y"), numpy_names=("where",), doc=where.__doc__ or "",
               unpromoted=("condition",)))


# ---- cast ------------------------------------------------------------------------------


def cast(x, dtype):  # noqa: ANN001, ANN201 - the public signature
    """x converted to `dtype` (numpy's astype: floats truncate toward zero into ints)."""
    return np.asarray(x).astype(dtype)


def _infer_cast(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "cast")
    if attrs.get("dtype") is None:
        raise InferError(f"a target dtype is required; supported dtypes are {dtypes.SUPPORTED_TEXT}")
    return (TensorType(ts[0].shape, attr_dtype(attrs["dtype"], "cast")),)


register(OpDef("cast", Category.ELEMWISE, named("cast", _infer_cast), cast, api=cast, tensor_params=("x",),
               doc=cast.__doc__ or ""))


def astype(x, dtype):  # noqa: ANN001, ANN201 - the public signature
    """x converted to `dtype`: the same op as `cast` (the method `x.astype(d)` maps here too)."""
    return cast(x, dtype)


register_sugar("astype", "cast", astype, get("cast").bind, numpy_names=("astype",))
