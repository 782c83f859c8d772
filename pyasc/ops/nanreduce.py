"""Reductions that skip NaN, and the range: np.nansum, nanmean, nanmax, nanmin, nanvar, nanstd, np.ptp.

nansum(a, axis=None, *, keepdims=False): sum with NaN read as 0; nanmean the mean over the non-NaN elements
  (a slice of only NaN gives NaN, as numpy's 0/0). nanmax / nanmin: max / min with NaN read as -inf / +inf,
  NaN where every element of the slice is NaN. nanvar / nanstd (ddof=0): numpy's two-pass rule over the
  non-NaN elements, sum((a - mean)^2) / (count - ddof), NaN where count <= ddof.
Integer and bool inputs have no NaN: the plain sum/mean/max/min/var/std (numpy's dtypes narrowed: sums of
ints are int32, means and variances float32). float16 computes in float32 and is rounded once.
ptp(a, axis=None, *, keepdims=False): max - min, in a's dtype (integers wrap as numpy's do).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS, attr_bool, normalize_axis
from .numpy_composite import numpy_composite
from .reduce import axis_arg, reduce_axes
from .registry import Category


def _floats(b: Builder, a: Any) -> tuple[Any, Any, str]:
    """(a in the compute dtype, its NaN mask, the result dtype) for a float `a`."""
    out = b.dtype(a)
    x = b.cast(a, "float32" if out == "float16" else out)
    return x, b.op("isnan", x), out


def _nansum(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    ax = axis_arg(axis)
    if b.dtype(a) not in FLOATS:
        return [b.op("sum", a, axis=ax, keepdims=keepdims)]
    x, nan, out = _floats(b, a)
    return [b.cast(b.op("sum", b.op("where", nan, b.scalar(0.0, x), x), axis=ax, keepdims=keepdims), out)]


def _count(b: Builder, nan: Any, like: Any, axis: Any, keepdims: bool) -> Any:
    return b.op("sum", b.cast(b.op("invert", nan), b.dtype(like)), axis=axis, keepdims=keepdims)


def _nanmean(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    ax = axis_arg(axis)
    if b.dtype(a) not in FLOATS:
        return [b.op("mean", a, axis=ax, keepdims=keepdims)]
    x, nan, out = _floats(b, a)
    total = b.op("sum", b.op("where", nan, b.scalar(0.0, x), x), axis=ax, keepdims=keepdims)
    return [b.cast(b.op("div", total, _count(b, nan, x, ax, keepdims)), out)]


def _extreme(op: str, fill: float):
    def body(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
        ax = axis_arg(axis)
        if b.dtype(a) not in FLOATS:
            return [b.op(op, a, axis=ax, keepdims=keepdims)]
        nan = b.op("isnan", a)
        m = b.op(op, b.op("where", nan, b.scalar(fill, a), a), axis=ax, keepdims=keepdims)
        every = b.op("min", nan, axis=ax, keepdims=keepdims)  # an all-NaN slice is NaN
        return [b.op("where", every, b.scalar(float("nan"), a), m)]
    return body


def _nanvar_of(b: Builder, a: Any, axis: Any, ddof: Any, keepdims: bool) -> tuple[Any, str]:
    ax = axis_arg(axis)
    x, nan, out = _floats(b, a)
    zero = b.scalar(0.0, x)
    kept = b.op("where", nan, zero, x)
    n = _count(b, nan, x, ax, True)
    d = b.op("where", nan, zero, b.op("sub", kept, b.op("div", b.op("sum", kept, axis=ax, keepdims=True), n)))
    dof = b.op("sub", _count(b, nan, x, ax, keepdims), b.scalar(float(ddof), x))
    v = b.op("div", b.op("sum", b.op("mul", d, d), axis=ax, keepdims=keepdims), dof)
    return b.op("where", b.op("le", dof, zero), b.scalar(float("nan"), x), v), out


def _nanvar(b: Builder, a: Any, *, axis: Any = None, ddof: Any = 0, keepdims: bool = False) -> list[Any]:
    if b.dtype(a) not in FLOATS:
        return [b.op("var", a, axis=axis_arg(axis), ddof=ddof, keepdims=keepdims)]
    v, out = _nanvar_of(b, a, axis, ddof, keepdims)
    return [b.cast(v, out)]


def _nanstd(b: Builder, a: Any, *, axis: Any = None, ddof: Any = 0, keepdims: bool = False) -> list[Any]:
    if b.dtype(a) not in FLOATS:
        return [b.op("std", a, axis=axis_arg(axis), ddof=ddof, keepdims=keepdims)]
    v, out = _nanvar_of(b, a, axis, ddof, keepdims)
    return [b.cast(b.op("sqrt", v), out)]


def _ptp(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    ax = axis_arg(axis)
    return [b.op("sub", b.op("max", a, axis=ax, keepdims=keepdims), b.op("min", a, axis=ax, keepdims=keepdims))]


def _check(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        normalize_axis(axis_arg(attrs.get("axis")), a.ndim)
        attr_bool(attrs, "keepdims", False, name)
        if name == "ptp" and a.dtype == "bool":
            raise InferError("ptp: numpy boolean subtract, the `-` operator, is not supported; "
                             "use the bitwise_xor, the `^` operator, or the logical_xor function instead")
        ddof = attrs.get("ddof", 0)
        if isinstance(ddof, bool) or not isinstance(ddof, (int, float, np.integer, np.floating)):
            raise InferError(f"{name}: ddof must be a compile-time number, got {ddof!r}")
    return check


def nansum(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201 - numpy's names
    """The sum over `axis` with NaN read as zero."""
    return np.nansum(a, axis=axis_arg(axis), keepdims=keepdims)


def nanmean(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The mean over `axis` of the elements that are not NaN."""
    return np.nanmean(a, axis=axis_arg(axis), keepdims=keepdims)


def nanmax(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The maximum over `axis` ignoring NaN (NaN where a slice is all NaN)."""
    return np.nanmax(a, axis=axis_arg(axis), keepdims=keepdims)


def nanmin(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The minimum over `axis` ignoring NaN (NaN where a slice is all NaN)."""
    return np.nanmin(a, axis=axis_arg(axis), keepdims=keepdims)


def nanvar(a, axis=None, *, ddof=0, keepdims=False):  # noqa: ANN001, ANN201
    """The variance over `axis` of the elements that are not NaN."""
    return np.nanvar(a, axis=axis_arg(axis), ddof=ddof, keepdims=keepdims)


def nanstd(a, axis=None, *, ddof=0, keepdims=False):  # noqa: ANN001, ANN201
    """The standard deviation over `axis` of the elements that are not NaN."""
    return np.nanstd(a, axis=axis_arg(axis), ddof=ddof, keepdims=keepdims)


def ptp(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """The range max - min over `axis` ("peak to peak")."""
    return np.ptp(a, axis=axis_arg(axis), keepdims=keepdims)


def _eager(api: Any):
    def eager(a: Any, **attrs: Any) -> Any:
        import warnings  # only here: numpy warns on an all-NaN slice, whose NaN result is the documented answer

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return api(a, **attrs)
    return eager


for _name, _body, _api in (("nansum", _nansum, nansum), ("nanmean", _nanmean, nanmean),
                           ("nanmax", _extreme("max", -np.inf), nanmax), ("nanmin", _extreme("min", np.inf), nanmin),
                           ("nanvar", _nanvar, nanvar), ("nanstd", _nanstd, nanstd), ("ptp", _ptp, ptp)):
    numpy_composite(_name, _body, _api, _eager(_api), category=Category.REDUCE, tensor_params=("a",),
                    numpy_names=(_name,), check=_check(_name), reduce_axes=reduce_axes)
