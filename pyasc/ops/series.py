"""Sequences along an axis: np.polyval, np.gradient, np.ediff1d, np.unwrap, the NaN-skipping and numpy 2
cumulative scans (nancumsum, nancumprod, cumulative_sum, cumulative_prod).

polyval(p, x): Horner's rule over the (static-length, 1-D) coefficients p, a tensor or a list (a constant);
  the dtype is result_type(p, x) as numpy's (a float list with float32 x: float64 there, float32 here).
gradient(f, *varargs, axis=None, edge_order=1): central differences inside, one-sided (edge_order 1 or 2) at
  the ends, with scalar spacings (none: 1; one for every axis; or one per axis). One axis: a tensor; several:
  a tuple, as numpy's. Coordinate arrays as spacing are not supported (a clear error).
ediff1d(ary, to_end=None, to_begin=None): differences of the flattened ary, to_begin/to_end joined on (cast to
  ary's dtype).
unwrap(p, discont=None, axis=-1, *, period=2*pi): numpy's algorithm: the jumps beyond discont folded into
  [-period/2, period/2) and their corrections summed along the axis.
nancumsum / nancumprod(a, axis=None, dtype=None): cumsum / cumprod with NaN taken as 0 / 1.
cumulative_sum / cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False): numpy 2's scans; an
  axis is needed above 1-D; include_initial puts the identity first.
Float math on integers is float32 (numpy: float64); float16 computes in float32 and rounds once.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS, fmt_shape, normalize_axis, require_static, require_static_axis
from .joining import join, slice_axis
from .numpy_composite import numpy_sugar_op
from .registry import Category


def _float_work(b: Builder, x: Any) -> tuple[Any, str, str]:
    out = b.float_dtype(b.dtype(x))
    work = "float32" if out == "float16" else out
    return b.cast(x, work), out, work


# ---- polyval -------------------------------------------------------------------------------------


def _polyval(b: Builder, p: Any, x: Any) -> list[Any]:
    dt = b.result_type(b.dtype(p), b.dtype(x))
    xs = b.cast(x, dt)
    n = b.shape(p)[0]
    coef = [b.op("reshape", slice_axis(b, b.cast(p, dt), 0, i, i + 1), shape=()) for i in range(n)]
    y = b.op("broadcast_to", coef[0] if coef else b.const(0, dt), shape=tuple(b.shape(xs)))
    for c in coef[1:]:
        y = b.op("add", b.op("mul", y, xs), c)
    return [y]


def _check_polyval(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if ts[0].ndim != 1:
        raise InferError(f"the coefficients p must be 1-D, got shape {fmt_shape(ts[0].shape)}")
    require_static_axis("polyval", ts[0].shape, 0)


def polyval(p, x):  # noqa: ANN001, ANN201 - numpy's signature
    """The polynomial with coefficients p (highest power first) at x."""
    return np.polyval(p, x)


# ---- gradient ------------------------------------------------------------------------------------


def _spacings(varargs: Any, n_axes: int) -> list[float]:
    given = tuple(varargs or ())
    if not all(isinstance(d, (int, float, np.integer, np.floating)) and not isinstance(d, bool) for d in given):
        raise InferError(f"spacing must be compile-time scalars (coordinate arrays are not supported), got {given!r}")
    if len(given) == 0:
        return [1.0] * n_axes
    if len(given) == 1:
        return [float(given[0])] * n_axes
    if len(given) != n_axes:
        raise InferError("invalid number of arguments")
    return [float(d) for d in given]


def _gradient_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    return tuple(range(ndim)) if axis is None else normalize_axis(axis, ndim)


def _gradient(b: Builder, f: Any, *, varargs: Any = (), axis: Any = None, edge_order: int = 1) -> list[Any]:
    x, out, work = _float_work(b, f)
    axes = _gradient_axes(len(b.shape(x)), axis)
    results = []
    for ax, dx in zip(axes, _spacings(varargs, len(axes))):
        n = b.shape(x)[ax]

        def at(i: int, ax: int = ax, n: int = n) -> Any:
            i %= n
            return slice_axis(b, x, ax, i, i + 1)

        def scale(v: Any, k: float) -> Any:
            return b.op("mul", v, b.const(k, work))

        inner = b.op("div", b.op("sub", slice_axis(b, x, ax, 2, n), slice_axis(b, x, ax, 0, n - 2)),
                     b.const(2.0 * dx, work))
        if edge_order == 1:
            first = b.op("div", b.op("sub", at(1), at(0)), b.const(dx, work))
            last = b.op("div", b.op("sub", at(-1), at(-2)), b.const(dx, work))
        else:
            first = b.op("add", b.op("add", scale(at(0), -1.5 / dx), scale(at(1), 2.0 / dx)), scale(at(2), -0.5 / dx))
            last = b.op("add", b.op("add", scale(at(-3), 0.5 / dx), scale(at(-2), -2.0 / dx)), scale(at(-1), 1.5 / dx))
        results.append(b.cast(join(b, [first, inner, last], ax), out))
    return results


def _check_gradient(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    f = ts[0]
    order = attrs.get("edge_order", 1)
    if order not in (1, 2) or isinstance(order, bool):
        raise InferError("'edge_order' greater than 2 not supported")
    if f.dtype == "bool":
        raise InferError("numpy boolean subtract, the `-` operator, is not supported")
    axes = _gradient_axes(f.ndim, attrs.get("axis"))
    _spacings(attrs.get("varargs"), len(axes))
    for ax in axes:
        if require_static_axis("gradient", f.shape, ax) < order + 1:
            raise InferError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                             "elements are required.")


def gradient(f, *varargs, axis=None, edge_order=1):  # noqa: ANN001, ANN201
    """The gradient of f by second-order central differences inside and one-sided ones at the boundaries."""
    return np.gradient(f, *varargs, axis=axis, edge_order=edge_order)


def _eager_gradient(f: Any, *, varargs: Any = (), axis: Any = None, edge_order: int = 1) -> Any:
    return np.gradient(f, *varargs, axis=axis, edge_order=edge_order)


# ---- ediff1d -------------------------------------------------------------------------------------


def _ediff1d(b: Builder, ary: Any, to_end: Any = None, to_begin: Any = None) -> list[Any]:
    flat = b.op("reshape", ary, shape=(-1,))
    n = b.shape(flat)[0]
    d = b.op("sub", slice_axis(b, flat, 0, 1, n), slice_axis(b, flat, 0, 0, n - 1)) if n else flat
    dt = b.dtype(ary)
    parts = [b.op("reshape", b.cast(to_begin, dt), shape=(-1,))] if to_begin is not None else []
    parts.append(d)
    if to_end is not None:
        parts.append(b.op("reshape", b.cast(to_end, dt), shape=(-1,)))
    return [join(b, parts, 0) if len(parts) > 1 else d]


def _check_ediff1d(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if ts[0].dtype == "bool":
        raise InferError("numpy boolean subtract, the `-` operator, is not supported")
    require_static("ediff1d", ts[0])


def ediff1d(ary, to_end=None, to_begin=None):  # noqa: ANN001, ANN201
    """Differences between consecutive elements of the flattened ary, to_begin and to_end joined on."""
    return np.ediff1d(ary, to_end, to_begin)


def _eager_ediff1d(ary: Any, *rest: Any, has_to_end: bool = False, has_to_begin: bool = False) -> Any:
    rest_ = list(rest)
    to_end = rest_.pop(0) if has_to_end else None
    return np.ediff1d(ary, to_end, rest_.pop(0) if has_to_begin else None)


# ---- unwrap --------------------------------------------------------------------------------------


def _unwrap(b: Builder, p: Any, *, discont: Any = None, axis: int = -1, period: float = 2 * math.pi) -> list[Any]:
    out = work = b.float_dtype(b.dtype(p))  # in p's own float dtype, as numpy's: its roundings decide the folds
    x = b.cast(p, work)
    ax = normalize_axis(axis, len(b.shape(x)))[0]
    n = b.shape(x)[ax]
    if n < 2:
        return [b.cast(x, out)]
    high = float(period) / 2
    discont = high if discont is None else float(discont)
    dd = b.op("sub", slice_axis(b, x, ax, 1, n), slice_axis(b, x, ax, 0, n - 1))
    low = b.const(-high, work)
    ddmod = b.op("add", b.op("mod", b.op("sub", dd, low), b.const(float(period), work)), low)
    ddmod = b.op("where", b.op("bitwise_and", b.op("eq", ddmod, low), b.op("gt", dd, b.const(0.0, work))),
                 b.const(high, work), ddmod)
    correct = b.op("where", b.op("lt", b.op("abs", dd), b.const(discont, work)), b.const(0.0, work),
                   b.op("sub", ddmod, dd))
    rest = b.op("add", slice_axis(b, x, ax, 1, n), b.op("cumsum", correct, axis=ax))
    return [b.cast(join(b, [slice_axis(b, x, ax, 0, 1), rest], ax), out)]


def _check_unwrap(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    p = ts[0]
    if p.ndim == 0:
        raise InferError("unwrap: p must be at least 1-D")
    require_static_axis("unwrap", p.shape, normalize_axis(attrs.get("axis", -1), p.ndim)[0])
    for key in ("discont", "period"):
        v = attrs.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))):
            raise InferError(f"{key} must be a compile-time number, got {v!r}")


def unwrap(p, discont=None, axis=-1, *, period=2 * math.pi):  # noqa: ANN001, ANN201
    """p with jumps larger than discont replaced by their period-complement along axis."""
    return np.unwrap(p, discont, axis, period=period)


# ---- NaN-skipping and numpy 2 cumulative scans ---------------------------------------------------


def _nanscan(op: str, identity: float):
    def body(b: Builder, a: Any, *, axis: Any = None, dtype: Any = None) -> list[Any]:
        x = a
        if b.dtype(a) in FLOATS:
            x = b.op("where", b.op("isnan", a), b.const(identity, b.dtype(a)), a)
        return [b.op(op, x, axis=axis, dtype=dtype)]
    return body


def _cumulative(op: str, identity: int):
    def body(b: Builder, x: Any, *, axis: Any = None, dtype: Any = None, include_initial: bool = False) -> list[Any]:
        ax = 0 if axis is None else axis
        out = b.op(op, x, axis=ax, dtype=dtype)
        if not include_initial:
            return [out]
        ax = normalize_axis(ax, len(b.shape(out)))[0]
        shape = tuple(1 if i == ax else d for i, d in enumerate(b.shape(out)))
        first = b.op("full", shape=shape, fill_value=identity, dtype=b.dtype(out))
        return [join(b, [first, out], ax)]
    return body


def _check_cumulative(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    x = ts[0]
    if x.ndim == 0:
        raise InferError("the input must be at least 1-D (numpy: zero-dimensional arrays are not supported)")
    if attrs.get("axis") is None and x.ndim > 1:
        raise InferError("axis must be specified for multi-dimensional arrays")


def nancumsum(a, axis=None, dtype=None):  # noqa: ANN001, ANN201
    """The cumulative sum, NaN taken as zero."""
    return np.nancumsum(a, axis, dtype)


def nancumprod(a, axis=None, dtype=None):  # noqa: ANN001, ANN201
    """The cumulative product, NaN taken as one."""
    return np.nancumprod(a, axis, dtype)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):  # noqa: ANN001, ANN201
    """numpy 2's cumulative sum (include_initial: 0 first)."""
    return np.cumulative_sum(x, axis=axis, dtype=dtype, include_initial=include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):  # noqa: ANN001, ANN201
    """numpy 2's cumulative product (include_initial: 1 first)."""
    return np.cumulative_prod(x, axis=axis, dtype=dtype, include_initial=include_initial)


numpy_sugar_op("polyval", _polyval, polyval, np.polyval, tensor_params=("p", "x"), numpy_names=("polyval",),
               check=_check_polyval, category=Category.OPAQUE)
numpy_sugar_op("gradient", _gradient, gradient, _eager_gradient, category=Category.OPAQUE, tensor_params=("f",),
               numpy_names=("gradient",), check=_check_gradient)
numpy_sugar_op("ediff1d", _ediff1d, ediff1d, _eager_ediff1d, category=Category.INJECTIVE,
               tensor_params=("ary", "to_end", "to_begin"), optional=("to_end", "to_begin"),
               numpy_names=("ediff1d",), check=_check_ediff1d, expensive=False)
numpy_sugar_op("unwrap", _unwrap, unwrap, lambda p, **k: np.unwrap(p, **k), category=Category.OPAQUE,
               tensor_params=("p",), numpy_names=("unwrap",), check=_check_unwrap)
for _name, _op, _identity, _api in (("nancumsum", "cumsum", 0, nancumsum), ("nancumprod", "cumprod", 1, nancumprod)):
    numpy_sugar_op(_name, _nanscan(_op, _identity), _api, lambda a, _api=_api, **k: _api(a, **k),
                   category=Category.OPAQUE, tensor_params=("a",), numpy_names=(_name,))
for _name, _op, _identity, _api in (("cumulative_sum", "cumsum", 0, cumulative_sum),
                                     ("cumulative_prod", "cumprod", 1, cumulative_prod)):
    numpy_sugar_op(_name, _cumulative(_op, _identity), _api, lambda x, _api=_api, **k: _api(x, **k),
                   category=Category.OPAQUE, tensor_params=("x",), numpy_names=(_name,), check=_check_cumulative)
