"""Order statistics and lookups in a sorted axis: np.median, np.quantile, np.percentile, np.searchsorted, np.interp.

quantile(a, q, axis=None, keepdims=False) with numpy's default "linear" method: the reduced axes moved last and
  flattened (n values), sorted (np.sort), and for each compile-time q the virtual index q * (n - 1) read from its
  two neighbours by static slices and blended as numpy's _lerp does (from the nearer end). A slice holding NaN
  gives NaN (sorted last, the last element says so). q is a number or a 1-D sequence (its axis first);
  percentile is quantile at q / 100, median at 0.5. Float results (integers, and float16 with a sequence q:
  float32, numpy: float64).
searchsorted(a, v, side="left"): for a sorted 1-D a, the count of a < v (left) or a <= v (right), by one
  broadcast compare and a sum over a's axis; NaN sorts last, as numpy's. int32 (numpy: int64).
interp(x, xp, fp, left=None, right=None): the segment j of each x (a searchsorted on the right, clipped to the
  xp's inner segments), fp[j] + slope_j * (x - xp[j]) by two gathers (np.take), left/right (default fp[0] /
  fp[-1]) outside [xp[0], xp[-1]]. float32 (numpy: float64).
The sorted or searched axes need static sizes.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import FLOATS, attr_bool, fmt_shape, normalize_axis
from .joining import slice_axis
from .numpy_composite import numpy_composite
from .reduce import axis_arg
from .registry import Category


def _qs(q: Any) -> tuple[tuple[float, ...], bool]:
    """(the quantiles, whether q was a sequence)."""
    if isinstance(q, (int, float, np.integer, np.floating)) and not isinstance(q, bool):
        return (float(q),), False
    if isinstance(q, (tuple, list)) and q and all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in q):
        return tuple(float(v) for v in q), True
    raise InferError(f"q must be a compile-time number or a 1-D sequence of numbers, got {q!r}")


def _sorted_rows(b: Builder, a: Any, axes: tuple[int, ...]) -> Any:
    """a with `axes` moved last, flattened to one, and sorted along it."""
    shape = tuple(b.shape(a))
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    x = b.op("transpose", a, axes=kept + axes) if kept + axes != tuple(range(len(shape))) else a
    x = b.op("reshape", x, shape=tuple(shape[i] for i in kept) + (math.prod(shape[i] for i in axes),))
    return b.op("sort", x, axis=-1)


def _quantiles(b: Builder, a: Any, qs: Sequence[float], many: bool, axis: Any, keepdims: bool) -> Any:
    shape = tuple(b.shape(a))
    out = "float32" if many else b.float_dtype(b.dtype(a))  # numpy: a sequence q (float64) promotes float16
    acc = "float32" if out == "float16" else out
    axes = normalize_axis(axis_arg(axis), len(shape)) if shape else ()
    s = b.cast(_sorted_rows(b, a, axes) if shape else b.op("reshape", a, shape=(1,)), acc)
    last = len(b.shape(s)) - 1
    n = b.shape(s)[-1]
    has_nan = b.op("isnan", slice_axis(b, s, last, n - 1, n)) if acc in FLOATS else None
    picks = []
    for q in qs:
        idx = q * (n - 1)
        lo = min(int(math.floor(idx)), n - 1)
        hi = min(lo + 1, n - 1)
        t = idx - lo
        below, above = slice_axis(b, s, last, lo, lo + 1), slice_axis(b, s, last, hi, hi + 1)
        diff = b.op("sub", above, below)
        if t >= 0.5:  # numpy's _lerp: from the nearer end
            r = b.op("sub", above, b.op("mul", diff, b.const(1.0 - t, acc)))
        else:
            r = b.op("add", below, b.op("mul", diff, b.const(t, acc)))
        if has_nan is not None:
            r = b.op("where", has_nan, b.const(float("nan"), acc), r)
        picks.append(b.op("reshape", r, shape=_result_shape(shape, axes, keepdims)))
    return b.cast(stacked(b, picks, many), out)


def stacked(b: Builder, picks: Sequence[Any], many: bool) -> Any:
    """One quantile's result, or a sequence q's stacked along a new first axis (numpy's layout)."""
    if many:
        return b.op("concat", *[b.op("expand_dims", p, axis=0) for p in picks], axis=0, kind="concatenate")
    return picks[0]


def _result_shape(shape: tuple[Any, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[Any, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _quantile(b: Builder, a: Any, *, q: Any, axis: Any = None, keepdims: bool = False) -> list[Any]:
    qs, many = _qs(q)
    return [_quantiles(b, a, qs, many, axis, keepdims)]


def _percentile(b: Builder, a: Any, *, q: Any, axis: Any = None, keepdims: bool = False) -> list[Any]:
    qs, many = _qs(q)
    return [_quantiles(b, a, [v / 100.0 for v in qs], many, axis, keepdims)]


def _median(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    return [_quantiles(b, a, (0.5,), False, axis, keepdims)]


def _check_order(name: str, scale: float):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        attr_bool(attrs, "keepdims", False, name)
        if a.dtype == "bool":
            raise InferError(f"{name}: numpy boolean subtract, the `-` operator, is not supported")
        axes = normalize_axis(axis_arg(attrs.get("axis")), a.ndim)
        if any(isinstance(a.shape[i], Sym) for i in axes if a.ndim):
            raise InferError(f"{name}: the reduced axes of shape {fmt_shape(a.shape)} have sizes only known at "
                             f"launch; {name} needs static sizes")
        if a.ndim and math.prod(a.shape[i] for i in axes) == 0:
            raise InferError(f"{name}: cannot take a {name} of an empty slice")
        if "q" in attrs:
            qs, _ = _qs(attrs["q"])
            if any(not 0.0 <= v / scale <= 1.0 for v in qs):
                raise InferError("Percentiles must be in the range [0, 100]" if scale == 100.0
                                 else "Quantiles must be in the range [0, 1]")
    return check


def quantile(a, q, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201 - numpy's names
    """The q-th quantiles over `axis` (numpy's "linear" method)."""
    return np.quantile(a, q, axis=axis_arg(axis), keepdims=keepdims)


def percentile(a, q, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The q-th percentiles over `axis` (q in [0, 100], numpy's "linear" method)."""
    return np.percentile(a, q, axis=axis_arg(axis), keepdims=keepdims)


def median(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The median over `axis`."""
    return np.median(a, axis=axis_arg(axis), keepdims=keepdims)


# ---- searchsorted and interp -------------------------------------------------------------------------


def _count_before(b: Builder, a: Any, v: Any, side: str) -> Any:
    dt = b.result_type(b.dtype(a), b.dtype(v))
    a, v = b.cast(a, dt), b.op("expand_dims", b.cast(v, dt), axis=-1)
    before = b.op("lt" if side == "left" else "le", a, v)
    if dt in FLOATS:  # NaN sorts last: every number is before a NaN v (on the right, a NaN too)
        nan_v = b.op("isnan", v)
        before = b.op("bitwise_or", before, b.op("bitwise_and", nan_v, b.op("invert", b.op("isnan", a)))
                      if side == "left" else nan_v)
    return b.op("sum", b.cast(before, "int32"), axis=-1)


def _searchsorted(b: Builder, a: Any, v: Any, *, side: str = "left") -> list[Any]:
    return [_count_before(b, a, v, side)]


def _check_searchsorted(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, _ = ts
    if a.ndim != 1:
        raise InferError(f"object too deep for desired array: searchsorted needs a 1-D a, got shape "
                         f"{fmt_shape(a.shape)}")
    if isinstance(a.shape[0], Sym):
        raise InferError(f"searchsorted: a of shape {fmt_shape(a.shape)} has a size only known at launch; "
                         "searchsorted needs a static size")
    if attrs.get("side", "left") not in ("left", "right"):
        raise InferError(f"side must be 'left' or 'right' (got {attrs.get('side')!r})")


def _interp(b: Builder, x: Any, xp: Any, fp: Any, *, left: Any = None, right: Any = None,
            period: Any = None) -> list[Any]:
    dt = "float32"
    x, xp, fp = b.cast(x, dt), b.cast(xp, dt), b.cast(fp, dt)
    n = b.shape(xp)[0]
    first = b.op("reshape", slice_axis(b, fp, 0, 0, 1), shape=())
    last = b.op("reshape", slice_axis(b, fp, 0, n - 1, n), shape=())
    lo_val = first if left is None else b.const(float(left), dt)
    hi_val = last if right is None else b.const(float(right), dt)
    if n == 1:
        y = b.op("broadcast_to", first, shape=tuple(b.shape(x)))
    else:
        j = b.op("sub", _count_before(b, xp, x, "right"), b.const(1, "int32"))
        j = b.op("minimum", b.op("maximum", j, b.const(0, "int32")), b.const(n - 2, "int32"))
        x0, f0 = b.op("take", xp, j, axis=0), b.op("take", fp, j, axis=0)
        j1 = b.op("add", j, b.const(1, "int32"))
        x1, f1 = b.op("take", xp, j1, axis=0), b.op("take", fp, j1, axis=0)
        slope = b.op("div", b.op("sub", f1, f0), b.op("sub", x1, x0))
        y = b.op("add", b.op("mul", slope, b.op("sub", x, x0)), f0)
        y = b.op("where", b.op("eq", x, x1), f1, y)  # the right end of a segment is its fp exactly
    x_first = b.op("reshape", slice_axis(b, xp, 0, 0, 1), shape=())
    x_last = b.op("reshape", slice_axis(b, xp, 0, n - 1, n), shape=())
    y = b.op("where", b.op("lt", x, x_first), lo_val, y)
    return [b.op("where", b.op("gt", x, x_last), hi_val, y)]


def _check_interp(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    _, xp, fp = ts
    if xp.ndim != 1 or fp.ndim != 1:
        raise InferError("object too deep for desired array: interp needs 1-D xp and fp")
    if isinstance(xp.shape[0], Sym) or isinstance(fp.shape[0], Sym):
        raise InferError("interp: xp and fp need static sizes")
    if xp.shape[0] != fp.shape[0]:
        raise InferError("fp and xp are not of the same length.")
    if xp.shape[0] == 0:
        raise InferError("array of sample points is empty")
    for key in ("left", "right"):
        v = attrs.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))):
            raise InferError(f"interp: {key} must be a compile-time number or None, got {v!r}")
    if attrs.get("period") is not None:
        raise InferError("interp: period= is not supported in a kernel")


def searchsorted(a, v, side="left"):  # noqa: ANN001, ANN201
    """Indices where v would be inserted into the sorted 1-D a to keep it sorted."""
    return np.searchsorted(a, v, side=side)


def interp(x, xp, fp, left=None, right=None, period=None):  # noqa: ANN001, ANN201
    """Piecewise-linear interpolation of the points (xp, fp) at x (xp increasing)."""
    return np.interp(x, xp, fp, left=left, right=right, period=period)


numpy_composite("quantile", _quantile, quantile, lambda a, **k: quantile(a, **k), category=Category.OPAQUE,
                tensor_params=("a",), numpy_names=("quantile",), check=_check_order("quantile", 1.0))
numpy_composite("percentile", _percentile, percentile, lambda a, **k: percentile(a, **k), category=Category.OPAQUE,
                tensor_params=("a",), numpy_names=("percentile",), check=_check_order("percentile", 100.0))
numpy_composite("median", _median, median, lambda a, **k: median(a, **k), category=Category.OPAQUE,
                tensor_params=("a",), numpy_names=("median",), check=_check_order("median", 1.0))
numpy_composite("searchsorted", _searchsorted, searchsorted, lambda a, v, **k: np.searchsorted(a, v, **k),
                category=Category.OPAQUE, tensor_params=("a", "v"), numpy_names=("searchsorted",),
                check=_check_searchsorted)
numpy_composite("interp", _interp, interp, lambda x, xp, fp, **k: np.interp(x, xp, fp, **k), category=Category.OPAQUE,
                tensor_params=("x", "xp", "fp"), numpy_names=("interp",), check=_check_interp)
