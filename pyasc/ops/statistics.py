"""var and std along axes (numpy's `axis`, `ddof`, `keepdims`), as composites of mean.

var = mean((x - mean(x))^2) * N / (N - ddof), N the number of elements
reduced (the two-pass form: no cancellation, unlike mean(x^2) - mean(x)^2);
std = sqrt(var). Float16 and integer inputs are computed in float32;
the result keeps a float dtype and is float32 for integers and bool
(numpy: float64). Eagerly these are np.var / np.std.

Differences from numpy, both compile errors instead of a NaN with a warning:
ddof >= N (no degrees of freedom left), and a ddof other than 0 over an
axis whose size is only known at launch (`dynamic=True`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import FLOATS, attr_bool, fmt_shape, normalize_axis
from .numpy_composite import numpy_composite
from .reduce import axis_arg, reduce_axes
from .registry import Category


def _shape(x: Any) -> tuple[Any, ...]:
    """A graph Value's or a TensorType's shape (bodies of these ops run on graphs and types only)."""
    return tuple(x.type.shape if hasattr(x, "type") else x.shape)


def _var_of(b: Builder, a: Any, axis: Any, ddof: Any, keepdims: bool) -> tuple[Any, str]:
    """(variance in the compute dtype, result dtype)."""
    dt = b.dtype(a)
    out = dt if dt in FLOATS else "float32"
    xc = b.cast(a, "float32" if out == "float16" else out)
    shape = _shape(a)
    axes = normalize_axis(axis_arg(axis), len(shape))
    ax = axes if shape else None
    m = b.op("mean", xc, axis=ax, keepdims=True)
    d = b.op("sub", xc, m)
    v = b.op("mean", b.op("mul", d, d), axis=ax, keepdims=keepdims)
    if ddof:
        n = math.prod(shape[i] for i in axes)
        v = b.op("mul", v, b.scalar(n / (n - ddof), v))
    return v, out


def _var(b: Builder, a: Any, *, axis: Any = None, ddof: Any = 0, keepdims: bool = False) -> list[Any]:
    v, out = _var_of(b, a, axis, ddof, keepdims)
    return [b.cast(v, out)]


def _std(b: Builder, a: Any, *, axis: Any = None, ddof: Any = 0, keepdims: bool = False) -> list[Any]:
    v, out = _var_of(b, a, axis, ddof, keepdims)
    return [b.cast(b.op("sqrt", v), out)]


def _check(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        axes = normalize_axis(axis_arg(attrs.get("axis")), a.ndim)
        attr_bool(attrs, "keepdims", False, name)
        ddof = attrs.get("ddof", 0)
        if isinstance(ddof, bool) or not isinstance(ddof, (int, float, np.integer, np.floating)):
            raise InferError(f"ddof must be a number, got {ddof!r}")
        if not ddof:
            return
        dims = [a.shape[i] for i in axes] if a.ndim else []
        if any(isinstance(d, Sym) for d in dims):
            raise InferError(f"ddof={ddof} needs the reduced size, but axis {axes} of shape {fmt_shape(a.shape)} is "
                             "only known at launch; use ddof=0 or a static shape")
        n = math.prod(dims)
        if n - ddof <= 0:
            raise InferError(f"ddof={ddof} leaves no degrees of freedom: {n} element(s) reduced over axis {axes} "
                             f"of shape {fmt_shape(a.shape)}")

    return check


def var(a, axis=None, *, ddof=0, keepdims=False):  # noqa: ANN001, ANN201 - the public signature
    """Variance over `axis` (None: all axes): mean((a - mean(a))^2) * N / (N - ddof)."""
    return np.var(a, axis=axis_arg(axis), ddof=ddof, keepdims=keepdims)


def std(a, axis=None, *, ddof=0, keepdims=False):  # noqa: ANN001, ANN201
    """Standard deviation over `axis`: sqrt(var(a, axis, ddof=ddof))."""
    return np.std(a, axis=axis_arg(axis), ddof=ddof, keepdims=keepdims)


def _eager(fn: Any):
    def eager(a: Any, *, axis: Any = None, ddof: Any = 0, keepdims: bool = False) -> Any:
        return fn(a, axis=axis_arg(axis), ddof=ddof, keepdims=keepdims)

    return eager


for _name, _body, _api, _fn in (("var", _var, var, np.var), ("std", _std, std, np.std)):
    numpy_composite(_name, _body, _api, _eager(_fn), category=Category.REDUCE, tensor_params=("a",),
                    numpy_names=(_name,), check=_check(_name), reduce_axes=reduce_axes)
