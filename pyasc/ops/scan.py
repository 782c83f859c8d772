"""cumsum(a, axis=None, dtype=None): running sums along an axis, as a composite.

The axis is moved last (a transpose when it is not), then
- up to TRIANGLE_MAX elements: one masked sum, out[..., i] = sum_j where(j <= i, x[..., j], 0) over a
  constant lower-triangular mask (n x n elements of work per row, one fused kernel);
- longer axes: Hillis-Steele, ceil(log2 n) steps of x += x shifted by 1, 2, 4, ... (each shift is a
  `place` from joining.py and a slice: about 3n elements of work per row per step).
Dtypes are numpy's narrowed: integers and bool accumulate in int32 (numpy: int64), floats keep their
dtype (float16 sums are computed in float32 and rounded once, so they are closer to the exact sum
than numpy's float16 running sum); `dtype` casts the input first, as numpy does. The axis must have
a static size.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import FLOATS, attr_dtype, fmt_shape, normalize_axis
from .joining import place, slice_axis
from .numpy_composite import numpy_composite
from .registry import Category

#: the longest axis summed with one triangular mask (n * n elements of work per row)
TRIANGLE_MAX = 128


def scan_operand(b: Builder, a: Any, axis: Any) -> tuple[Any, int]:
    """numpy's scan operand: flattened when axis is None, a 0-d tensor as one element; and its axis."""
    x = a if axis is not None else b.op("reshape", a, shape=(-1,))
    if not b.shape(x):
        x = b.op("reshape", x, shape=(1,))
    return x, (0 if axis is None else normalize_axis(axis, len(b.shape(x)))[0])


def _cumsum(b: Builder, a: Any, *, axis: Any = None, dtype: Any = None) -> list[Any]:
    x, ax = scan_operand(b, a, axis)
    shape = b.shape(x)
    nd = len(shape)
    src = b.dtype(x) if dtype is None else dtype
    out = src if src in FLOATS else "int32"
    acc = "float32" if out == "float16" else out
    x = b.cast(b.cast(x, src), acc)
    perm = tuple(i for i in range(nd) if i != ax) + (ax,)
    if ax != nd - 1:
        x = b.op("transpose", x, axes=perm)
    n = shape[ax]
    if n <= TRIANGLE_MAX:
        tri = np.tril(np.ones((n, n), bool))                           # tri[i, j] = j <= i
        y = b.op("sum", b.op("where", b.array(tri), b.op("expand_dims", x, axis=-2), b.const(0, acc)), axis=-1)
    else:
        y, step, zero = x, 1, b.const(0, acc)
        while step < n:
            shifted = slice_axis(b, place(b, y, nd - 1, step, 0, zero), nd - 1, 0, n)
            y = b.op("add", y, shifted)
            step *= 2
    if ax != nd - 1:
        y = b.op("transpose", y, axes=tuple(int(i) for i in np.argsort(perm)))
    return [b.cast(y, out)]


def _check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (a,) = ts
    axis = attrs.get("axis")
    if attrs.get("dtype") is not None:
        attr_dtype(attrs["dtype"], "cumsum")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise InferError(f"axis must be None or an int, got {axis!r}")
    dims = list(a.shape) if axis is None else [a.shape[normalize_axis(axis, a.ndim)[0]]] if a.ndim else []
    if axis is not None and a.ndim == 0:
        normalize_axis(axis, 0)
    if any(isinstance(d, Sym) for d in dims):
        raise InferError(f"the summed axis of shape {fmt_shape(a.shape)} has a size only known at launch; "
                         "cumsum needs a static size")


def cumsum(a, axis=None, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """Running sums along `axis` (None: of the flattened tensor)."""
    return np.cumsum(a, axis=axis, dtype=dtype)


def _eager(a: Any, *, axis: Any = None, dtype: Any = None) -> Any:
    return np.cumsum(a, axis=axis, dtype=dtype)


numpy_composite("cumsum", _cumsum, cumsum, _eager, category=Category.INJECTIVE, tensor_params=("a",),
                numpy_names=("cumsum",), check=_check)
