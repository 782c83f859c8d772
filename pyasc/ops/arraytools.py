"""Whole-array comparisons, Vandermonde matrices and axis bookkeeping: np.array_equal, array_equiv, vander,
broadcast_arrays, rollaxis.

array_equal(a1, a2, equal_nan=False) -> 0-d bool: False when the shapes differ (known at compile time, so the
  result is a constant), else all(a1 == a2), NaN == NaN counting as equal with equal_nan (numpy returns a
  Python bool; a kernel a 0-d bool tensor). array_equiv(a1, a2): False when the shapes do not broadcast, else
  all(a1 == a2) broadcast.
vander(x, N=None, increasing=False): the columns x**(N-1) ... x**0 (increasing: x**0 first) of a 1-D x, as
  numpy's running products x * x * ...; numpy computes in promote(x.dtype, int): float32 for floats, int32 for
  integers and bool (numpy's float64 / int64 narrowed). N is a compile-time int (None: len(x)).
broadcast_arrays(*args) -> a tuple: each operand broadcast to the shape of all of them.
rollaxis(a, axis, start=0): `axis` moved to before position `start` (numpy's rule and error messages).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import broadcast_shapes, fmt_shape, normalize_axis
from .numpy_composite import numpy_sugar_op
from .reduce import reduce_axes
from .registry import Category


def _static(shape: Sequence[Any]) -> bool:
    return not any(isinstance(d, Sym) for d in shape)


def _all_equal(b: Builder, x1: Any, x2: Any, equal_nan: bool) -> Any:
    same = b.op("eq", x1, x2)
    if equal_nan and any(b.dtype(x) in ("float16", "float32") for x in (x1, x2)):
        same = b.op("bitwise_or", same, b.op("bitwise_and", b.op("isnan", x1), b.op("isnan", x2)))
    return b.op("all", same, axis=None, keepdims=False)


def _false(b: Builder) -> Any:
    return b.const(False, "bool")


def _array_equal(b: Builder, a1: Any, a2: Any, *, equal_nan: bool = False) -> list[Any]:
    if tuple(b.shape(a1)) != tuple(b.shape(a2)):
        return [_false(b)]
    return [_all_equal(b, a1, a2, bool(equal_nan))]


def _array_equiv(b: Builder, a1: Any, a2: Any) -> list[Any]:
    try:
        broadcast_shapes(b.shape(a1), b.shape(a2))
    except InferError:
        return [_false(b)]
    return [_all_equal(b, a1, a2, False)]


def _check_shapes(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        if ts[0].shape != ts[1].shape and not (_static(ts[0].shape) and _static(ts[1].shape)):
            raise InferError(f"{name}: shapes {fmt_shape(ts[0].shape)} and {fmt_shape(ts[1].shape)} are only known at "
                             f"launch; {name} compares shapes when it compiles")
        if not isinstance(attrs.get("equal_nan", False), (bool, np.bool_)):
            raise InferError(f"{name}: equal_nan must be a compile-time bool, got {attrs['equal_nan']!r}")
    return check


def _vander_dtype(dt: str) -> str:
    return "float32" if dt in ("float16", "float32") else "int32"


def _vander(b: Builder, x: Any, *, N: Any = None, increasing: bool = False) -> list[Any]:  # noqa: N803 - numpy's name
    n = b.shape(x)[0] if N is None else int(N)
    v = b.cast(x, _vander_dtype(b.dtype(x)))
    col = b.op("expand_dims", v, axis=1)
    powers = [b.op("full_like", col, fill_value=1)]
    for _ in range(1, n):
        powers.append(b.op("mul", powers[-1], col) if len(powers) > 1 else col)
    if not increasing:
        powers.reverse()
    if not powers:
        return [b.op("full", shape=(b.shape(x)[0], 0), fill_value=0, dtype=b.dtype(v))]
    return [powers[0] if n == 1 else b.op("concat", *powers, axis=1, kind="concatenate")]


def _check_vander(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (x,) = ts
    if x.ndim != 1:
        raise InferError("vander: x must be a one-dimensional array or sequence.")
    n = attrs.get("N")
    if n is None and not _static(x.shape):
        raise InferError("vander: N=None takes len(x), which is only known at launch: give N")
    if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer))):
        raise InferError(f"vander: N must be a compile-time int, got {n!r}")
    if n is not None and n < 0:
        raise InferError("vander: negative dimensions are not allowed")


def _broadcast_arrays(b: Builder, *args: Any, n_args: int = 0) -> list[Any]:
    shape = broadcast_shapes(*(b.shape(a) for a in args))
    return [a if tuple(b.shape(a)) == shape else b.op("broadcast_to", a, shape=shape) for a in args]


def _rolled(ndim: int, axis: Any, start: Any) -> tuple[int, ...]:
    """numpy's rollaxis permutation (and its errors)."""
    (ax,) = normalize_axis(axis, ndim)
    s = int(start) + ndim if int(start) < 0 else int(start)
    if not 0 <= s < ndim + 1:
        raise InferError(f"'start' arg requires {-ndim} <= start < {ndim + 1}, but {start} was passed in")
    if ax < s:
        s -= 1
    order = [i for i in range(ndim) if i != ax]
    order.insert(s, ax)
    return tuple(order)


def _rollaxis(b: Builder, a: Any, *, axis: Any, start: Any = 0) -> list[Any]:
    order = _rolled(len(b.shape(a)), axis, start)
    return [a if order == tuple(range(len(order))) else b.op("transpose", a, axes=order)]


# ---- the public signatures (numpy's names) ----------------------------------------------------


def array_equal(a1, a2, equal_nan=False):  # noqa: ANN001, ANN201 - numpy's signature
    """Whether a1 and a2 have the same shape and elements (a 0-d bool)."""
    return np.array_equal(a1, a2, equal_nan=equal_nan)


def array_equiv(a1, a2):  # noqa: ANN001, ANN201
    """Whether a1 and a2 broadcast to each other with equal elements (a 0-d bool)."""
    return np.array_equiv(a1, a2)


def vander(x, N=None, increasing=False):  # noqa: ANN001, ANN201, N803 - numpy's names
    """The Vandermonde matrix of a 1-D x: columns x**(N-1) ... x**0 (increasing: the other way)."""
    return np.vander(x, N, increasing)


def broadcast_arrays(*args):  # noqa: ANN002, ANN201
    """The operands broadcast to one shape (a tuple)."""
    return tuple(np.broadcast_arrays(*args))


def rollaxis(a, axis, start=0):  # noqa: ANN001, ANN201
    """`axis` rolled back to before position `start`."""
    return np.rollaxis(a, axis, start)


def _eager_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    return np.asarray(np.array_equal(a1, a2, equal_nan=equal_nan))


def _eager_equiv(a1: Any, a2: Any) -> Any:
    return np.asarray(np.array_equiv(a1, a2))


def _check_rollaxis(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    for key in ("axis", "start"):
        v = attrs.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InferError(f"rollaxis: {key} must be a compile-time int, got {v!r}")


_EQ = ("a1", "a2")
numpy_sugar_op("array_equal", _array_equal, array_equal, _eager_equal, category=Category.REDUCE, tensor_params=_EQ,
               numpy_names=("array_equal",), check=_check_shapes("array_equal"), reduce_axes=reduce_axes,
               static={"equal_nan": "it decides how NaN compares"})
numpy_sugar_op("array_equiv", _array_equiv, array_equiv, _eager_equiv, category=Category.REDUCE, tensor_params=_EQ,
               numpy_names=("array_equiv",), check=_check_shapes("array_equiv"), reduce_axes=reduce_axes)
numpy_sugar_op("vander", _vander, vander, lambda x, **k: np.vander(x, **k), category=Category.INJECTIVE,
               numpy_names=("vander",), check=_check_vander, static={"N": "it is the number of columns"})
numpy_sugar_op("broadcast_arrays", _broadcast_arrays, broadcast_arrays,
               lambda *xs, n_args=0: tuple(np.broadcast_arrays(*xs)), category=Category.INJECTIVE, tensor_params=(),
               variadic="args", numpy_names=("broadcast_arrays",), returns_sequence=True, expensive=False)
numpy_sugar_op("rollaxis", _rollaxis, rollaxis, lambda a, **k: np.rollaxis(a, **k), category=Category.INJECTIVE,
               tensor_params=("a",), numpy_names=("rollaxis",), check=_check_rollaxis, expensive=False,
               static={"axis": "it picks the axis", "start": "it picks the place"})
