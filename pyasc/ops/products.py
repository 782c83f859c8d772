"""Tensor products: np.inner, np.tensordot, np.kron, np.cross, np.linalg.matrix_power, as composites.

tensordot(a, b, axes=2): a's free axes first and its contracted axes last, flattened to (M, K); b's contracted
  axes first, (K, N); one np.dot (cube for floats, exact int32 on the vector unit for ints) reshaped to
  a_free + b_free. `axes` is an int N (a's last N against b's first N) or a pair of int sequences.
inner(a, b): tensordot over the last axis of each (a 0-d operand: a * b).
kron(a, b): both at the same rank (leading 1s), a with a size-1 axis after each of its axes times b with one
  before each of its, reshaped: out[i*p + k, ...] = a[i, ...] * b[k, ...].
cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None): 3-vectors by slices, c = a1 b2 - a2 b1, ..., joined along
  the vector axis (moved to axisc); 2-vectors give the z component (numpy 2 deprecates them, but computes it).
matrix_power(a, n): a compile-time int n >= 0 by repeated squaring (ceil(log2 n) + popcount(n) matmuls), n = 0
  the identity in a's dtype; a negative n needs an inverse, a located error.
Dtypes are numpy's (result_type; integer products wrap in the operand dtype as numpy's do).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import fmt_shape, require_static
from .joining import join, slice_axis
from .numpy_composite import numpy_composite
from .registry import Category


def _axes_pair(axes: Any, na: int, nb: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """numpy's tensordot axes as (a's contracted axes, b's), non-negative."""
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0 or n > min(na, nb):
            raise InferError(f"tensordot: axes={n} does not fit operands of rank {na} and {nb}")
        return tuple(range(na - n, na)), tuple(range(n))
    try:
        xa, xb = axes
    except (TypeError, ValueError):
        raise InferError(f"tensordot: axes must be an int or a pair of axis sequences, got {axes!r}") from None
    xa = (xa,) if isinstance(xa, (int, np.integer)) else tuple(xa)
    xb = (xb,) if isinstance(xb, (int, np.integer)) else tuple(xb)
    if len(xa) != len(xb):
        raise InferError("shape-mismatch for sum")
    for x, n in ((xa, na), (xb, nb)):
        if any(not -n <= int(i) < n for i in x):
            raise InferError(f"tensordot: axes {axes!r} are out of range for operands of rank {na} and {nb}")
    return tuple(int(i) % na for i in xa), tuple(int(i) % nb for i in xb)


def _tensordot(b: Builder, a: Any, y: Any, *, axes: Any = 2) -> list[Any]:
    sa, sb = tuple(b.shape(a)), tuple(b.shape(y))
    xa, xb = _axes_pair(axes, len(sa), len(sb))
    free_a = [i for i in range(len(sa)) if i not in xa]
    free_b = [i for i in range(len(sb)) if i not in xb]
    k = math.prod(sa[i] for i in xa)
    pa, pb = tuple(free_a) + xa, xb + tuple(free_b)
    at = b.op("transpose", a, axes=pa) if pa != tuple(range(len(sa))) else a
    yt = b.op("transpose", y, axes=pb) if pb != tuple(range(len(sb))) else y
    m2 = b.op("reshape", at, shape=(math.prod(sa[i] for i in free_a), k))
    n2 = b.op("reshape", yt, shape=(k, math.prod(sb[i] for i in free_b)))
    return [b.op("reshape", b.op("dot", m2, n2), shape=tuple(sa[i] for i in free_a) + tuple(sb[i] for i in free_b))]


def _check_tensordot(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, y = ts
    require_static("tensordot", a, y)
    xa, xb = _axes_pair(attrs.get("axes", 2), a.ndim, y.ndim)
    if any(a.shape[i] != y.shape[j] for i, j in zip(xa, xb)):
        raise InferError(f"tensordot: shape-mismatch for sum: {fmt_shape(a.shape)} axes {xa} against "
                         f"{fmt_shape(y.shape)} axes {xb}")


def _inner(b: Builder, a: Any, y: Any) -> list[Any]:
    if not b.shape(a) or not b.shape(y):
        return [b.op("mul", a, y)]
    return _tensordot(b, a, y, axes=((len(b.shape(a)) - 1,), (len(b.shape(y)) - 1,)))


def _check_inner(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, y = ts
    require_static("inner", a, y)
    if a.ndim and y.ndim and a.shape[-1] != y.shape[-1]:
        raise InferError(f"shapes {fmt_shape(a.shape)} and {fmt_shape(y.shape)} not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {y.shape[-1]} (dim {y.ndim - 1})")


def _kron(b: Builder, a: Any, y: Any) -> list[Any]:
    nd = max(len(b.shape(a)), len(b.shape(y)))
    if nd == 0:
        return [b.op("mul", a, y)]
    sa = (1,) * (nd - len(b.shape(a))) + tuple(b.shape(a))
    sb = (1,) * (nd - len(b.shape(y))) + tuple(b.shape(y))
    left = b.op("reshape", a, shape=tuple(d for n in sa for d in (n, 1)))
    right = b.op("reshape", y, shape=tuple(d for n in sb for d in (1, n)))
    return [b.op("reshape", b.op("mul", left, right), shape=tuple(p * q for p, q in zip(sa, sb)))]


def _move_last(b: Builder, x: Any, axis: int) -> Any:
    nd = len(b.shape(x))
    return x if axis % nd == nd - 1 else b.op("moveaxis", x, source=axis, destination=-1)


def _cross(b: Builder, a: Any, y: Any, *, axisa: int = -1, axisb: int = -1, axisc: int = -1,
           axis: Any = None) -> list[Any]:
    if axis is not None:
        axisa = axisb = axisc = axis
    dt = b.result_type(b.dtype(a), b.dtype(y))
    u, v = _move_last(b, b.cast(a, dt), axisa), _move_last(b, b.cast(y, dt), axisb)
    last = len(b.shape(u)) - 1

    def at(x: Any, i: int) -> Any:
        return slice_axis(b, x, len(b.shape(x)) - 1, i, i + 1)

    def minor(i: int, j: int) -> Any:
        return b.op("sub", b.op("mul", at(u, i), at(v, j)), b.op("mul", at(u, j), at(v, i)))

    if b.shape(u)[-1] == 2:
        z = minor(0, 1)
        return [b.op("reshape", z, shape=tuple(b.shape(z))[:-1])]
    c = join(b, [minor(1, 2), minor(2, 0), minor(0, 1)], max(last, len(b.shape(minor(0, 1))) - 1))
    nd = len(b.shape(c))
    return [c if axisc % nd == nd - 1 else b.op("moveaxis", c, source=-1, destination=axisc)]


def _check_cross(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, y = ts
    require_static("cross", a, y)
    axis = attrs.get("axis")
    axisa, axisb = (axis, axis) if axis is not None else (attrs.get("axisa", -1), attrs.get("axisb", -1))
    for t, ax, what in ((a, axisa, "axisa"), (y, axisb, "axisb")):
        if t.ndim == 0 or not -t.ndim <= ax < t.ndim:
            raise InferError(f"{what}: axis {ax} is out of bounds for array of dimension {t.ndim}")
    na, nb = a.shape[axisa], y.shape[axisb]
    if na not in (2, 3) or nb not in (2, 3):
        raise InferError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if na != nb:
        raise InferError(f"cross: vectors of {na} and {nb} elements; pyasc crosses 3-vectors with 3-vectors "
                         "(or 2 with 2)")
    if "bool" in (a.dtype, y.dtype):
        raise InferError("cross: numpy boolean subtract, the `-` operator, is not supported")


def _matrix_power(b: Builder, a: Any, *, n: Any) -> list[Any]:
    shape, dt = tuple(b.shape(a)), b.dtype(a)
    if n == 0:
        return [b.array(np.broadcast_to(np.eye(shape[-1], dtype=dtypes.to_numpy(dt)), shape).copy())]
    result, power, k = None, a, int(n)
    while True:
        if k & 1:
            result = power if result is None else b.cast(b.op("matmul", result, power), dt)
        k >>= 1
        if not k:
            return [result]
        power = b.cast(b.op("matmul", power, power), dt)


def _check_matrix_power(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (a,) = ts
    n = attrs.get("n")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InferError(f"matrix_power: exponent must be a compile-time integer, got {n!r}")
    if n < 0:
        raise InferError(f"matrix_power: a negative exponent ({n}) needs the matrix inverse, which pyasc does not "
                         "compute; invert on the host or use n >= 0")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise InferError(f"Last 2 dimensions of the array must be square, got shape {fmt_shape(a.shape)}")
    require_static("matrix_power", a)
    if a.dtype == "bool" and n > 1:
        raise InferError("matrix_power: matmul does not accept dtype bool")


def tensordot(a, b, axes=2):  # noqa: ANN001, ANN201 - numpy's signature
    """The sum of products over the given axes of a and b."""
    return np.tensordot(a, b, axes)


def inner(a, b):  # noqa: ANN001, ANN201
    """The sum of products over the last axes of a and b."""
    return np.inner(a, b)


def kron(a, b):  # noqa: ANN001, ANN201
    """The Kronecker product: blocks of b scaled by the elements of a."""
    return np.kron(a, b)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):  # noqa: ANN001, ANN201
    """The cross product of 3-element vectors (2-element: its z component)."""
    import warnings  # only here: numpy 2 deprecates 2-vectors, and still computes them

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return np.cross(a, b, axisa, axisb, axisc, axis)


def matrix_power(a, n):  # noqa: ANN001, ANN201
    """The square matrix a (or a stack of them) raised to the integer power n >= 0."""
    return np.linalg.matrix_power(a, n)


numpy_composite("tensordot", _tensordot, tensordot, lambda a, b, **k: np.tensordot(a, b, **k), category=Category.OPAQUE,
                tensor_params=("a", "b"), numpy_names=("tensordot",), check=_check_tensordot)
numpy_composite("inner", _inner, inner, np.inner, category=Category.OPAQUE, tensor_params=("a", "b"),
                numpy_names=("inner",), check=_check_inner)
numpy_composite("kron", _kron, kron, np.kron, category=Category.INJECTIVE, tensor_params=("a", "b"),
                numpy_names=("kron",), check=lambda ts, attrs: require_static("kron", *ts))
numpy_composite("cross", _cross, cross, lambda a, b, **k: cross(a, b, **k), category=Category.INJECTIVE,
                tensor_params=("a", "b"), numpy_names=("cross",), check=_check_cross)
numpy_composite("matrix_power", _matrix_power, matrix_power, lambda a, **k: np.linalg.matrix_power(a, **k),
                category=Category.OPAQUE, tensor_params=("a",), numpy_names=("linalg.matrix_power",),
                check=_check_matrix_power)
