"""Norms and diagonals: np.linalg.norm, np.trace, np.diag, np.diagflat, as composites.

norm(x, ord=None, axis=None, keepdims=False):
  vector norms (a 1-D x, or an int `axis`): ord None/2 sqrt(sum |x|^2), 1 sum |x|, inf max |x|, -inf min |x|,
  0 the count of nonzeros, any other p (sum |x|^p)^(1/p); matrix norms (a 2-D x with axis None, or a pair of
  axes): None/'fro' sqrt(sum |x|^2), 1 / -1 max / min column sum of |x|, inf / -inf max / min row sum;
  2, -2 and 'nuc' need singular values, a located error. Float results, float32 for integers (numpy:
  float64); float16 computes in float32.
trace(a, offset=0, axis1=0, axis2=1): the sum of a diagonal (a mask times the matrix, summed).
diag(v, k=0): a 1-D v on the k-th diagonal of a square matrix, or the k-th diagonal of a 2-D v.
diagflat(v, k=0): diag of v flattened. Diagonals are read as a masked sum, exact (a -0.0 comes back +0.0).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS, attr_bool, normalize_axis, require_static
from .numpy_composite import numpy_composite
from .reduce import axis_arg
from .registry import Category

_MATRIX_ORDS = (None, "fro", 1, -1, math.inf, -math.inf)


def _norm_axes(ndim: int, axis: Any) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(int(a) % ndim for a in axes)


def _norm(b: Builder, x: Any, *, ord: Any = None, axis: Any = None, keepdims: bool = False) -> list[Any]:  # noqa: A002
    shape = b.shape(x)
    out = b.float_dtype(b.dtype(x))
    acc = "float32" if out == "float16" else out
    a = b.op("abs", b.cast(x, acc))
    axes = _norm_axes(len(shape), axis_arg(axis))
    matrix = len(axes) == 2 and (axis is not None or ord is not None)
    if ord is None or ord == "fro" or (ord == 2 and not matrix):
        r = b.op("sqrt", b.op("sum", b.op("mul", a, a), axis=axes, keepdims=keepdims))
    elif matrix:
        rows, cols = axes
        if ord in (1, -1):
            per = b.op("sum", a, axis=rows, keepdims=True)
            pick = "max" if ord == 1 else "min"
            r = b.op(pick, per, axis=cols, keepdims=True)
        else:
            per = b.op("sum", a, axis=cols, keepdims=True)
            r = b.op("max" if ord == math.inf else "min", per, axis=rows, keepdims=True)
        if not keepdims:
            r = b.op("reshape", r, shape=tuple(d for i, d in enumerate(shape) if i not in axes))
    elif ord == math.inf:
        r = b.op("max", a, axis=axes, keepdims=keepdims)
    elif ord == -math.inf:
        r = b.op("min", a, axis=axes, keepdims=keepdims)
    elif ord == 0:
        r = b.op("sum", b.cast(b.op("ne", a, b.scalar(0.0, a)), acc), axis=axes, keepdims=keepdims)
    elif ord == 1:
        r = b.op("sum", a, axis=axes, keepdims=keepdims)
    else:
        p = b.scalar(float(ord), a)
        r = b.op("pow", b.op("sum", b.op("pow", a, p), axis=axes, keepdims=keepdims), b.scalar(1.0 / float(ord), a))
    return [b.cast(r, out)]


def _check_norm(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (x,) = ts
    attr_bool(attrs, "keepdims", False, "norm")
    ord_, axis = attrs.get("ord"), axis_arg(attrs.get("axis"))
    if x.dtype == "bool":
        raise InferError("norm: does not accept dtype bool")
    if axis is not None:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        normalize_axis(tuple(axes), x.ndim)
        if len(axes) > 2:
            raise InferError("Improper number of dimensions to norm.")
    else:
        axes = tuple(range(x.ndim))
        if ord_ is not None and x.ndim > 2:
            raise InferError("Improper number of dimensions to norm.")
    if len(axes) == 2 and (axis is not None or ord_ is not None):
        if ord_ not in _MATRIX_ORDS:
            raise InferError(f"the matrix norm ord={ord_!r} needs singular values, which pyasc does not compute; "
                             "use ord=None ('fro'), 1, -1, inf or -inf")
    elif isinstance(ord_, str):
        raise InferError(f"Invalid norm order '{ord_}' for vectors")


def _diag_mask(n: int, m: int, k: int) -> np.ndarray:
    return np.eye(n, m, k, dtype=bool)


def _reduce_masked(b: Builder, x: Any, mask: Any, axis: int) -> Any:
    zero = b.const(False if b.dtype(x) == "bool" else 0, b.dtype(x))
    picked = b.op("where", mask, x, zero)
    if b.dtype(x) == "bool":
        return b.op("max", picked, axis=axis)
    return b.cast(b.op("sum", picked, axis=axis), b.dtype(x))


def _diag(b: Builder, v: Any, *, k: int = 0) -> list[Any]:
    shape = b.shape(v)
    dt = b.dtype(v)
    zero = b.const(False if dt == "bool" else 0, dt)
    if len(shape) == 1:
        n = shape[0]
        size = n + abs(k)
        mask = b.array(_diag_mask(size, size, k))
        padded = b.op("concat", v, b.op("full", shape=(abs(k),), fill_value=0, dtype=dt), axis=0) if k else v
        if k >= 0:  # row i holds v[i] at column i + k
            return [b.op("where", mask, b.op("reshape", padded, shape=(size, 1)), zero)]
        return [b.op("where", mask, b.op("reshape", padded, shape=(1, size)), zero)]
    n, m = shape
    mask = b.array(_diag_mask(n, m, k))
    if k >= 0:
        length = max(0, min(n, m - k))
        rows = _reduce_masked(b, v, mask, 1)
        return [b.op("slice", rows, starts=(0,), stops=(length,), steps=(1,))]
    length = max(0, min(m, n + k))
    cols = _reduce_masked(b, v, mask, 0)
    return [b.op("slice", cols, starts=(0,), stops=(length,), steps=(1,))]


def _diagflat(b: Builder, v: Any, *, k: int = 0) -> list[Any]:
    return _diag(b, b.op("reshape", v, shape=(-1,)), k=k)


def _trace(b: Builder, a: Any, *, offset: int = 0, axis1: int = 0, axis2: int = 1) -> list[Any]:
    shape = b.shape(a)
    nd = len(shape)
    a1, a2 = axis1 % nd, axis2 % nd
    rest = tuple(i for i in range(nd) if i not in (a1, a2))
    x = b.op("transpose", a, axes=rest + (a1, a2)) if rest + (a1, a2) != tuple(range(nd)) else a
    mask = b.array(_diag_mask(shape[a1], shape[a2], offset))
    dt = b.dtype(a)
    out = dt if dt in FLOATS else "int32"
    zero = b.const(0, out)
    picked = b.op("where", mask, b.cast(x, out), zero)
    return [b.op("sum", picked, axis=(nd - 2, nd - 1))]


def _check_diag(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    require_static("diag", ts[0])
    if ts[0].ndim not in (1, 2):
        raise InferError("Input must be 1- or 2-d.")
    k = attrs.get("k", 0)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InferError(f"k must be an int, got {k!r}")


def _check_diagflat(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    require_static("diagflat", ts[0])


def _check_trace(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    require_static("trace", ts[0])
    (a,) = ts
    if a.ndim < 2:
        raise InferError("diag requires an array of at least two dimensions")
    a1, a2 = normalize_axis(attrs.get("axis1", 0), a.ndim)[0], normalize_axis(attrs.get("axis2", 1), a.ndim)[0]
    if a1 == a2:
        raise InferError("axis1 and axis2 cannot be the same")


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002, ANN001, ANN201 - numpy's signature
    """Vector or matrix norm (np.linalg.norm)."""
    return np.linalg.norm(x, ord=ord, axis=axis_arg(axis), keepdims=keepdims)


def diag(v, k=0):  # noqa: ANN001, ANN201
    """A 1-D v on the k-th diagonal of a square matrix, or the k-th diagonal of a 2-D v."""
    return np.diag(v, k)


def diagflat(v, k=0):  # noqa: ANN001, ANN201
    """The flattened v on the k-th diagonal of a square matrix."""
    return np.diagflat(v, k)


def trace(a, offset=0, axis1=0, axis2=1):  # noqa: ANN001, ANN201
    """The sum along a diagonal."""
    return np.trace(a, offset, axis1, axis2)


numpy_composite("norm", _norm, norm, lambda x, **k: np.linalg.norm(x, **{**k, "axis": axis_arg(k.get("axis"))}),
                category=Category.OPAQUE, numpy_names=("linalg.norm",), check=_check_norm)
numpy_composite("diag", _diag, diag, lambda v, **k: np.diag(v, **k), category=Category.INJECTIVE,
                tensor_params=("v",), numpy_names=("diag",), check=_check_diag)
numpy_composite("diagflat", _diagflat, diagflat, lambda v, **k: np.diagflat(v, **k), category=Category.INJECTIVE,
                tensor_params=("v",), numpy_names=("diagflat",), check=_check_diagflat)
numpy_composite("trace", _trace, trace, lambda a, **k: np.trace(a, **k), category=Category.OPAQUE,
                tensor_params=("a",), numpy_names=("trace",), check=_check_trace)
