"""Products, truth reductions and weighted means: cumprod, prod, any, all, count_nonzero, average, as
composites of elementwise ops, slices and the max/min/sum reductions.

cumprod(a, axis=None, dtype=None): Hillis-Steele, ceil(log2 n) steps of y *= y shifted by 1, 2, 4, ...
  (shifted in with ones): about 3n elements of work per row per step, any axis length.
prod(a, axis=None, keepdims=False, dtype=None): the reduced axes moved last and flattened, then halved
  ceil(log2 n) times (an odd length padded with a one): y = y[..., :h] * y[..., h:].
any / all (a, axis=None, keepdims=False) -> bool: max / min of (a != 0); count_nonzero (a, axis=None,
  keepdims=False) -> int32 (numpy: int64): sum of (a != 0).
average(a, axis=None, weights=None, keepdims=False): mean without weights; with weights (a's shape, or 1-D
  along `axis`) sum(a * w) / sum(w), in numpy's result dtype (integers: float32, numpy: float64).
Dtypes are numpy's narrowed: integer and bool products are int32 (numpy: int64), floats keep theirs
(float16 computes in float32, rounded once). Product orders differ from numpy's sequential loop, so
float results agree to rounding. Reduced axes need static sizes.
"""
from __future__ import annotations

import builtins  # the module defines numpy's any/all: the builtins by their full names
import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import FLOATS, attr_bool, attr_dtype, fmt_shape, normalize_axis
from .joining import place, slice_axis
from .numpy_composite import numpy_composite
from .reduce import axis_arg, reduce_axes
from .registry import Category
from .scan import scan_operand


def _product_dtype(b: Builder, x: Any, dtype: Any) -> tuple[str, str]:
    """(result dtype, accumulation dtype)."""
    src = b.dtype(x) if dtype is None else dtype
    out = src if src in FLOATS else "int32"
    return out, ("float32" if out == "float16" else out)


def _cumprod(b: Builder, a: Any, *, axis: Any = None, dtype: Any = None) -> list[Any]:
    x, ax = scan_operand(b, a, axis)
    shape = b.shape(x)
    out, acc = _product_dtype(b, x, dtype)
    y = b.cast(b.cast(x, b.dtype(x) if dtype is None else dtype), acc)
    n, step, one = shape[ax], 1, b.const(1, acc)
    while step < n:
        shifted = slice_axis(b, place(b, y, ax, step, 0, one), ax, 0, n)
        y = b.op("mul", y, shifted)
        step *= 2
    return [b.cast(y, out)]


def _halve(b: Builder, y: Any, one: Any) -> Any:
    """The product over the last axis (kept as size 1)."""
    nd = len(b.shape(y))
    n = b.shape(y)[-1]
    while n > 1:
        if n % 2:
            y = place(b, y, nd - 1, 0, 1, one)
            n += 1
        h = n // 2
        y = b.op("mul", slice_axis(b, y, nd - 1, 0, h), slice_axis(b, y, nd - 1, h, n))
        n = h
    return y


def _prod(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> list[Any]:
    shape = b.shape(a)
    nd = len(shape)
    out, acc = _product_dtype(b, a, dtype)
    x = b.cast(b.cast(a, b.dtype(a) if dtype is None else dtype), acc)
    axes = normalize_axis(axis_arg(axis), nd)
    kept = [i for i in range(nd) if i not in axes]
    if not nd:
        return [b.cast(x, out)]
    perm = tuple(kept) + tuple(axes)
    if perm != tuple(range(nd)):
        x = b.op("transpose", x, axes=perm)
    n = math.prod(shape[i] for i in axes)
    x = b.op("reshape", x, shape=tuple(shape[i] for i in kept) + (n,))
    if n == 0:
        y = b.op("reshape", b.op("full", shape=tuple(shape[i] for i in kept), fill_value=1, dtype=acc),
                 shape=tuple(shape[i] for i in kept) + (1,))
    else:
        y = _halve(b, x, b.const(1, acc))
    final = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdims else tuple(shape[i] for i in kept)
    return [b.cast(b.op("reshape", y, shape=final), out)]


def _average(b: Builder, a: Any, weights: Any = None, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    if weights is None:
        return [b.op("mean", a, axis=axis_arg(axis), keepdims=keepdims)]
    shape = b.shape(a)
    out = b.result_type(b.dtype(a), b.dtype(weights))
    if out not in FLOATS:
        out = "float32"
    acc = "float32" if out == "float16" else out
    x, w = b.cast(a, acc), b.cast(weights, acc)
    axes = normalize_axis(axis_arg(axis), len(shape))
    if b.shape(weights) != shape:
        (ax,) = axes
        w = b.op("reshape", w, shape=tuple(shape[ax] if i == ax else 1 for i in range(len(shape))))
    total = b.op("sum", b.op("mul", x, w), axis=axes, keepdims=keepdims)
    scale = b.op("sum", b.op("broadcast_to", w, shape=shape), axis=axes, keepdims=keepdims)
    return [b.cast(b.op("div", total, scale), out)]


def _static_axes(name: str, a: TensorType, axis: Any) -> tuple[int, ...]:
    axes = normalize_axis(axis_arg(axis), a.ndim)
    if a.ndim == 0:
        return ()  # numpy takes axis 0 / -1 of a 0-d array as the one element
    if builtins.any(isinstance(a.shape[i], Sym) for i in axes):
        raise InferError(f"{name}: the reduced axes of shape {fmt_shape(a.shape)} have sizes only known at launch; "
                         f"{name} needs static sizes")
    return axes


def _truth(b: Builder, a: Any) -> Any:
    return a if b.dtype(a) == "bool" else b.op("ne", a, b.const(0, b.dtype(a)))


def _any(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    return [b.op("max", _truth(b, a), axis=axis_arg(axis), keepdims=keepdims)]


def _all(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    return [b.op("min", _truth(b, a), axis=axis_arg(axis), keepdims=keepdims)]


def _count_nonzero(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    return [b.op("sum", b.cast(_truth(b, a), "int32"), axis=axis_arg(axis), keepdims=keepdims)]


def _check_truth(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        attr_bool(attrs, "keepdims", False, name)
        normalize_axis(axis_arg(attrs.get("axis")), a.ndim)
    return check


def _check_cumprod(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (a,) = ts
    if attrs.get("dtype") is not None:
        attr_dtype(attrs["dtype"], "cumprod")
    axis = attrs.get("axis")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise InferError(f"axis must be None or an int, got {axis!r}")
    if axis is None:
        if builtins.any(isinstance(d, Sym) for d in a.shape):
            raise InferError(f"cumprod of the flattened shape {fmt_shape(a.shape)} needs static sizes")
        return
    _static_axes("cumprod", a, axis)


def _check_prod(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (a,) = ts
    attr_bool(attrs, "keepdims", False, "prod")
    if attrs.get("dtype") is not None:
        attr_dtype(attrs["dtype"], "prod")
    _static_axes("prod", a, attrs.get("axis"))


def _check_average(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a = ts[0]
    attr_bool(attrs, "keepdims", False, "average")
    axes = normalize_axis(axis_arg(attrs.get("axis")), a.ndim)
    if len(ts) == 2 and tuple(ts[1].shape) != tuple(a.shape):
        w = ts[1]
        if attrs.get("axis") is None:
            raise InferError("Axis must be specified when shapes of a and weights differ.")
        if w.ndim != 1:
            raise InferError("1D weights expected when shapes of a and weights differ.")
        if len(axes) != 1 or w.shape[0] != a.shape[axes[0]]:
            raise InferError("Length of weights not compatible with specified axis.")


def cumprod(a, axis=None, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """Running products along `axis` (None: of the flattened tensor)."""
    return np.cumprod(a, axis=axis, dtype=dtype)


def prod(a, axis=None, keepdims=False, dtype=None):  # noqa: ANN001, ANN201
    """The product of the elements over `axis` (None: all of them)."""
    return np.prod(a, axis=axis_arg(axis), keepdims=keepdims, dtype=dtype)


def average(a, axis=None, weights=None, keepdims=False):  # noqa: ANN001, ANN201
    """The (weighted) mean over `axis`."""
    return np.average(a, axis=axis_arg(axis), weights=weights, keepdims=keepdims)


def any(a, axis=None, keepdims=False):  # noqa: A001, ANN001, ANN201 - numpy's name
    """Whether any element over `axis` is true (nonzero)."""
    return np.any(a, axis=axis_arg(axis), keepdims=keepdims)


def all(a, axis=None, keepdims=False):  # noqa: A001, ANN001, ANN201
    """Whether every element over `axis` is true (nonzero)."""
    return np.all(a, axis=axis_arg(axis), keepdims=keepdims)


def count_nonzero(a, axis=None, keepdims=False):  # noqa: ANN001, ANN201
    """How many elements over `axis` are nonzero."""
    return np.count_nonzero(a, axis=axis_arg(axis), keepdims=keepdims)


def _eager_average(a: Any, *rest: Any, axis: Any = None, keepdims: bool = False, has_weights: bool = False) -> Any:
    return np.average(a, axis=axis_arg(axis), weights=rest[0] if has_weights and rest else None, keepdims=keepdims)


numpy_composite("cumprod", _cumprod, cumprod, lambda a, **k: np.cumprod(a, **k), category=Category.INJECTIVE,
                tensor_params=("a",), numpy_names=("cumprod",), check=_check_cumprod)
numpy_composite("prod", _prod, prod, lambda a, **k: np.prod(a, **{**k, "axis": axis_arg(k.get("axis"))}),
                category=Category.REDUCE, tensor_params=("a",), numpy_names=("prod",), check=_check_prod,
                reduce_axes=reduce_axes)
numpy_composite("average", _average, average, _eager_average, category=Category.REDUCE,
                tensor_params=("a", "weights"), optional=("weights",), numpy_names=("average",),
                check=_check_average, reduce_axes=reduce_axes)
for _name, _body, _api in (("any", _any, any), ("all", _all, all), ("count_nonzero", _count_nonzero, count_nonzero)):
    numpy_composite(_name, _body, _api, lambda a, _f=_api, **k: _f(a, **k), category=Category.REDUCE,
                    tensor_params=("a",), numpy_names=(_name,), check=_check_truth(_name), expensive=False,
                    reduce_axes=reduce_axes)
