"""NaN-skipping positions, products and order statistics: np.nanargmax, nanargmin, nanprod, nanmedian,
nanquantile, nanpercentile.

nanargmax / nanargmin(a, axis=None, *, keepdims=False): argmax / argmin with NaN read as -inf / +inf (numpy's
  own rule, so a slice holding -inf and NaN answers the first of either); int32 (numpy: int64). numpy raises
  ValueError("All-NaN slice encountered") on a slice of only NaN: the op's registry fact data_error says so,
  and the frontend records it as a data check (frontend/checks.py): the call raises it after the launch.
nanprod(a, axis=None, dtype=None, keepdims=False): prod with NaN read as 1.
nanquantile / nanpercentile(a, q, axis=None, *, keepdims=False) and nanmedian(a, axis=None, *, keepdims=False):
  the reduced axes moved last, flattened and sorted (NaN last, as quantiles.py does), n = the count of non-NaN
  values per slice, and for each compile-time q the virtual index q * (n - 1) read from its two neighbours by
  take_along_axis and blended as numpy's _lerp (from the nearer end); NaN where n is 0 (numpy warns and gives
  NaN). nanmedian is numpy's masked median: the mean (lo + hi) / 2 of the two middle values (one twice when n
  is odd). Integers have no NaN: quantile / median themselves. Float results (integers, and float16 with a
  sequence q: float32, numpy: float64); float16 computes in float32 and is rounded once.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS, attr_bool, attr_dtype, normalize_axis
from .numpy_composite import numpy_sugar_op
from .nanreduce import _eager as _quiet
from .quantiles import _check_order, _qs, _result_shape, _sorted_rows, stacked
from .reduce import axis_arg, reduce_axes
from .registry import Category, DataError


def _nan_arg(op: str, fill: float):
    def body(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
        if b.dtype(a) in FLOATS:
            a = b.op("where", b.op("isnan", a), b.scalar(fill, a), a)
        return [b.op(op, a, axis=axis, keepdims=keepdims)]
    return body


def _all_nan_slices(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> Any | None:
    """True for each slice along `axis` (None: the whole tensor) whose elements are all NaN (numpy's ValueError);
    None for integer tensors, which hold no NaN."""
    if b.dtype(a) not in FLOATS:
        return None
    return b.op("all", b.op("isnan", a), axis=axis_arg(axis), keepdims=False)


_ALL_NAN = DataError("ValueError", "All-NaN slice encountered", _all_nan_slices)


def _nanprod(b: Builder, a: Any, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> list[Any]:
    if b.dtype(a) in FLOATS:
        a = b.op("where", b.op("isnan", a), b.scalar(1.0, a), a)
    return [b.op("prod", a, axis=axis_arg(axis), dtype=dtype, keepdims=keepdims)]


def _take_last(b: Builder, s: Any, index: Any) -> Any:
    return b.op("take_along_axis", s, index, axis=len(b.shape(s)) - 1)


def _nan_order(b: Builder, a: Any, qs: Sequence[float], many: bool, axis: Any, keepdims: bool,
               median: bool = False) -> Any:
    shape = tuple(b.shape(a))
    out = "float32" if many else b.float_dtype(b.dtype(a))  # numpy: a sequence q (float64) promotes float16
    acc = "float32" if out == "float16" else out
    axes = normalize_axis(axis_arg(axis), len(shape)) if shape else ()
    s = b.cast(_sorted_rows(b, a, axes) if shape else b.op("reshape", a, shape=(1,)), acc)
    n = b.op("sum", b.cast(b.op("invert", b.op("isnan", s)), "int32"), axis=-1, keepdims=True)
    top = b.op("maximum", b.op("sub", n, b.const(1, "int32")), b.const(0, "int32"))  # the last non-NaN place
    empty = b.op("eq", n, b.const(0, "int32"))
    picks = []
    for q in qs:
        if median:  # numpy's masked median: (lo + hi) / 2 of the middle pair, the middle one twice for an odd n
            hi = b.op("minimum", b.op("floordiv", n, b.const(2, "int32")), top)
            lo = b.op("floordiv", top, b.const(2, "int32"))
            r = b.op("mul", b.op("add", _take_last(b, s, lo), _take_last(b, s, hi)), b.const(0.5, acc))
        else:
            idx = b.op("mul", b.cast(top, acc), b.const(q, acc))
            lo = b.op("minimum", b.cast(b.op("floor", idx), "int32"), top)
            t = b.op("sub", idx, b.cast(lo, acc))
            hi = b.op("minimum", b.op("add", lo, b.const(1, "int32")), top)
            below, above = _take_last(b, s, lo), _take_last(b, s, hi)
            diff = b.op("sub", above, below)
            r = b.op("where", b.op("ge", t, b.const(0.5, acc)),  # numpy's _lerp: from the nearer end
                     b.op("sub", above, b.op("mul", diff, b.op("sub", b.const(1.0, acc), t))),
                     b.op("add", below, b.op("mul", diff, t)))
        r = b.op("where", empty, b.const(math.nan, acc), r)
        picks.append(b.op("reshape", r, shape=_result_shape(shape, axes, keepdims)))
    return b.cast(stacked(b, picks, many), out)


def _nanquantile(b: Builder, a: Any, *, q: Any, axis: Any = None, keepdims: bool = False) -> list[Any]:
    if b.dtype(a) not in FLOATS:
        return [b.op("quantile", a, q=q, axis=axis, keepdims=keepdims)]
    qs, many = _qs(q)
    return [_nan_order(b, a, qs, many, axis, keepdims)]


def _nanpercentile(b: Builder, a: Any, *, q: Any, axis: Any = None, keepdims: bool = False) -> list[Any]:
    if b.dtype(a) not in FLOATS:
        return [b.op("percentile", a, q=q, axis=axis, keepdims=keepdims)]
    qs, many = _qs(q)
    return [_nan_order(b, a, [v / 100.0 for v in qs], many, axis, keepdims)]


def _nanmedian(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    if b.dtype(a) not in FLOATS:
        return [b.op("median", a, axis=axis, keepdims=keepdims)]
    return [_nan_order(b, a, (0.5,), False, axis, keepdims, median=True)]


def _check_nanprod(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    attr_bool(attrs, "keepdims", False, "nanprod")
    if attrs.get("dtype") is not None:
        attr_dtype(attrs["dtype"], "nanprod")


# ---- the public signatures (numpy's names) ----------------------------------------------------


def nanargmax(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201 - numpy's names
    """Index of the largest element along `axis`, ignoring NaN (ValueError on an all-NaN slice)."""
    return np.nanargmax(a, axis=axis, keepdims=keepdims)


def nanargmin(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """Index of the smallest element along `axis`, ignoring NaN (ValueError on an all-NaN slice)."""
    return np.nanargmin(a, axis=axis, keepdims=keepdims)


def nanprod(a, axis=None, dtype=None, keepdims=False):  # noqa: ANN001, ANN201
    """The product over `axis` with NaN read as one."""
    return np.nanprod(a, axis=axis_arg(axis), dtype=dtype, keepdims=keepdims)


def nanquantile(a, q, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The q-th quantiles over `axis` of the values that are not NaN (numpy's "linear" method)."""
    return np.nanquantile(a, q, axis=axis_arg(axis), keepdims=keepdims)


def nanpercentile(a, q, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The q-th percentiles over `axis` of the values that are not NaN (q in [0, 100])."""
    return np.nanpercentile(a, q, axis=axis_arg(axis), keepdims=keepdims)


def nanmedian(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The median over `axis` of the values that are not NaN."""
    return np.nanmedian(a, axis=axis_arg(axis), keepdims=keepdims)


for _name, _body, _api in (
    ("nanargmax", _nan_arg("argmax", -np.inf), nanargmax),  # argmax's own checks name the axis and empty slices
    ("nanargmin", _nan_arg("argmin", np.inf), nanargmin),
    ("nanprod", _nanprod, nanprod),
):
    numpy_sugar_op(_name, _body, _api, _api, category=Category.REDUCE, tensor_params=("a",), numpy_names=(_name,),
                   reduce_axes=reduce_axes, data_error=None if _name == "nanprod" else _ALL_NAN,
                   **({"check": _check_nanprod} if _name == "nanprod" else {}))

for _name, _body, _api, _scale in (
    ("nanquantile", _nanquantile, nanquantile, 1.0), ("nanpercentile", _nanpercentile, nanpercentile, 100.0),
    ("nanmedian", _nanmedian, nanmedian, 1.0),
):
    numpy_sugar_op(_name, _body, _api, _quiet(_api), category=Category.OPAQUE, tensor_params=("a",),
                   numpy_names=(_name,), check=_check_order(_name, _scale))
