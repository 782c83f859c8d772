"""Sorting along an axis and gathering along it: sort, argsort, partition, argpartition, take_along_axis; and
np.append.

sort(a, axis=-1, kind=None) / argsort(a, axis=-1, kind=None): by rank, always stable (`kind` is accepted
and changes nothing: equal values keep their order; numpy's default quicksort may order ties otherwise). For a row of n values, the rank of element i is the number
of elements that sort before it: rank_i = #{j: x_j < x_i} + #{j < i: x_j == x_i}, NaN counted as the largest
(numpy sorts NaN last) — a stable order, so argsort agrees with numpy's stable sort (its default quicksort
agrees on rows without ties). The sorted row is the one-hot placement of each value at its rank
(out_r = sum_i [rank_i == r] x_i: exact, one term per position), argsort the same placement of i.
The work is n * n per row: rows of up to a few hundred elements.
partition(a, kth, axis=-1) / argpartition(a, kth, axis=-1): the stable sort (argsort). numpy promises only that
the element at each kth position is the one a sort puts there, with nothing larger before it and nothing
smaller after it; a full sort keeps that promise for every kth at once (the order of the others, which numpy
leaves to its introselect, is the sorted one here).
take_along_axis(arr, indices, axis): out[..., k, ...] = arr[..., indices[..., k, ...], ...] along `axis`, a
one-hot placement likewise (negative indices count from the end; out of range selects zero).
append(arr, values, axis=None): concatenate, both flattened when axis is None.
Int results are int32 (numpy: int64). Sorted axes need static sizes.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import FLOATS, broadcast_shapes, fmt_shape, normalize_axis
from .numpy_composite import numpy_composite
from .registry import Category


def _last(b: Builder, x: Any, axis: int) -> tuple[Any, tuple[int, ...] | None]:
    """x with `axis` moved last, and the permutation that undoes it (None: it was last already)."""
    nd = len(b.shape(x))
    if axis == nd - 1:
        return x, None
    perm = tuple(i for i in range(nd) if i != axis) + (axis,)
    return b.op("transpose", x, axes=perm), tuple(int(i) for i in np.argsort(perm))


def _back(b: Builder, x: Any, undo: tuple[int, ...] | None) -> Any:
    return x if undo is None else b.op("transpose", x, axes=undo)


def _zero(b: Builder, dt: str) -> Any:
    return b.const(False if dt == "bool" else 0, dt)


def _place(b: Builder, hit: Any, values: Any) -> Any:
    """out[..., r] = values[..., i] where hit[..., r, i] (one i per r): a where and a reduction over i."""
    dt = b.dtype(values)
    picked = b.op("where", hit, b.op("expand_dims", values, axis=-2), _zero(b, dt))
    if dt == "bool":
        return b.op("max", picked, axis=-1)
    return b.cast(b.op("sum", picked, axis=-1), dt)


def _ranks(b: Builder, x: Any) -> Any:
    """rank[..., i] of each element along the last axis (stable, NaN last), int32."""
    n = b.shape(x)[-1]
    if b.dtype(x) == "bool":
        x = b.cast(x, "int8")  # False < True
    xi = b.op("expand_dims", x, axis=-1)      # (..., n, 1): x_i
    xj = b.op("expand_dims", x, axis=-2)      # (..., 1, n): x_j
    before = b.op("lt", xj, xi)
    tie = b.op("bitwise_and", b.op("eq", xj, xi), b.array(np.tril(np.ones((n, n), bool), -1)))
    if b.dtype(x) in FLOATS:  # NaN is larger than everything, and NaNs keep their order
        nan_i, nan_j = b.op("ne", xi, xi), b.op("ne", xj, xj)
        before = b.op("bitwise_or", b.op("bitwise_and", before, b.op("invert", nan_j)),
                      b.op("bitwise_and", b.op("invert", nan_j), nan_i))
        both_nan = b.op("bitwise_and", b.op("bitwise_and", nan_i, nan_j), b.array(np.tril(np.ones((n, n), bool), -1)))
        tie = b.op("bitwise_or", tie, both_nan)
    smaller = b.op("bitwise_or", before, tie)
    return b.op("sum", b.cast(smaller, "int32"), axis=-1)


def _order(b: Builder, x: Any) -> Any:
    """hit[..., r, i]: element i goes to position r."""
    n = b.shape(x)[-1]
    rank = b.op("expand_dims", _ranks(b, x), axis=-2)                    # (..., 1, n)
    return b.op("eq", rank, b.array(np.arange(n, dtype=np.int32).reshape(n, 1)))


def _operand(b: Builder, a: Any, axis: Any) -> tuple[Any, Any]:
    """numpy's sort operand (flattened when axis is None or the input is 0-d) moved to the last axis."""
    if not b.shape(a):
        axis = None
    x = a if axis is not None else b.op("reshape", a, shape=(-1,))
    ax = -1 if axis is None else normalize_axis(axis, len(b.shape(x)))[0]
    return _last(b, x, ax % len(b.shape(x)))


def _sort(b: Builder, a: Any, *, axis: Any = -1, kind: Any = None, order: Any = None,
          stable: Any = None) -> list[Any]:
    x, undo = _operand(b, a, axis)
    return [_back(b, _place(b, _order(b, x), x), undo)]


def _argsort(b: Builder, a: Any, *, axis: Any = -1, kind: Any = None, order: Any = None,
             stable: Any = None) -> list[Any]:
    x, undo = _operand(b, a, axis)
    n = b.shape(x)[-1]
    iota = b.op("broadcast_to", b.array(np.arange(n, dtype=np.int32)), shape=b.shape(x))
    return [_back(b, _place(b, _order(b, x), iota), undo)]


def _take_along(b: Builder, arr: Any, indices: Any, *, axis: Any) -> list[Any]:
    if axis is None:
        arr, ax = b.op("reshape", arr, shape=(-1,)), 0
    else:
        ax = normalize_axis(axis, len(b.shape(arr)))[0]
    x, undo = _last(b, arr, ax)
    idx, _ = _last(b, b.cast(indices, "int32"), ax)
    n = b.shape(x)[-1]
    idx = b.op("where", b.op("lt", idx, b.const(0, "int32")), b.op("add", idx, b.const(n, "int32")), idx)
    lead = broadcast_shapes(tuple(b.shape(x)[:-1]), tuple(b.shape(idx)[:-1]))
    x = b.op("broadcast_to", x, shape=tuple(lead) + (n,))
    k = b.shape(idx)[-1]
    idx = b.op("broadcast_to", idx, shape=tuple(lead) + (k,))
    hit = b.op("eq", b.op("expand_dims", idx, axis=-1), b.array(np.arange(n, dtype=np.int32)))  # (..., k, n)
    return [_back(b, _place(b, hit, x), undo)]


def _append(b: Builder, arr: Any, values: Any, *, axis: Any = None) -> list[Any]:
    if axis is None:
        arr, values, axis = b.op("reshape", arr, shape=(-1,)), b.op("reshape", values, shape=(-1,)), 0
    return [b.op("concat", arr, values, axis=axis, kind="concatenate")]


def _check_sorted(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        axis = attrs.get("axis", -1)
        if attrs.get("order") is not None:
            raise InferError("order= sorts structured arrays, which a kernel does not have")
        if axis is None or a.ndim == 0:
            if a.ndim == 0 and axis is not None and name == "sort":
                raise InferError(f"axis {axis} is out of bounds for array of dimension 0")
            dims = list(a.shape)  # (a 0-d tensor sorts as one element, as numpy's argsort does)
        else:
            if not isinstance(axis, (int, np.integer)):
                raise InferError(f"axis must be None or an int, got {axis!r}")
            dims = [a.shape[normalize_axis(axis, a.ndim)[0]]]
        if any(isinstance(d, Sym) for d in dims):
            raise InferError(f"the sorted axis of shape {fmt_shape(a.shape)} has a size only known at launch; "
                             f"{name} needs a static size")
    return check


def _check_take_along(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    arr, idx = ts
    if not dtypes.is_int(idx.dtype):
        raise InferError(f"`indices` must be an integer array, got dtype {idx.dtype}")
    axis = attrs.get("axis")
    if axis is None:
        if idx.ndim != 1:
            raise InferError("when axis=None, `indices` must have a single dimension.")
        return
    if idx.ndim != arr.ndim:
        raise InferError("`indices` and `arr` must have the same number of dimensions")
    ax = normalize_axis(axis, arr.ndim)[0]
    if isinstance(arr.shape[ax], Sym):
        raise InferError(f"axis {ax} of shape {fmt_shape(arr.shape)} has a size only known at launch")


def _check_kth(name: str):
    sorted_check = _check_sorted(name)

    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        sorted_check(ts, attrs)
        (a,) = ts
        axis = attrs.get("axis", -1)
        n = int(np.prod(a.shape)) if axis is None or a.ndim == 0 else a.shape[normalize_axis(axis, a.ndim)[0]]
        kth = attrs.get("kth")
        for k in (kth if isinstance(kth, (tuple, list)) else (kth,)):
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
                raise InferError(f"kth must be an int or a sequence of ints, got {kth!r}")
            if not -n <= k < n:
                raise InferError(f"kth(={k}) out of bounds ({n})")
    return check


def _partition(b: Builder, a: Any, *, kth: Any, axis: Any = -1, kind: Any = None, order: Any = None) -> list[Any]:
    return _sort(b, a, axis=axis)


def _argpartition(b: Builder, a: Any, *, kth: Any, axis: Any = -1, kind: Any = None, order: Any = None
                  ) -> list[Any]:
    return _argsort(b, a, axis=axis)


def partition(a, kth, axis=-1, kind="introselect", order=None):  # noqa: ANN001, ANN201 - numpy's signature
    """`a` partitioned around each `kth` position along `axis`: here the stable sort, which is one valid
    partition for every kth (numpy's own leaves the order on either side of kth unspecified)."""
    return np.sort(a, axis=axis, kind="stable")


def argpartition(a, kth, axis=-1, kind="introselect", order=None):  # noqa: ANN001, ANN201
    """The indices that partition `a` around each `kth` along `axis`: here the stable argsort, one valid
    answer for every kth."""
    return np.argsort(a, axis=axis, kind="stable")


def sort(a, axis=-1, kind=None, order=None, *, stable=None):  # noqa: ANN001, ANN201 - numpy's signature
    """The values of `a` sorted along `axis` (NaN last). Always a stable sort, whatever `kind` asks."""
    return np.sort(a, axis=axis, kind="stable")


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):  # noqa: ANN001, ANN201
    """The indices that sort `a` along `axis`: a stable sort (NaN last), whatever `kind` asks; numpy's default
    quicksort may order equal values otherwise."""
    return np.argsort(a, axis=axis, kind="stable")


def take_along_axis(arr, indices, axis):  # noqa: ANN001, ANN201
    """arr's elements at `indices` along `axis`, position by position."""
    return np.take_along_axis(arr, indices, axis)


def append(arr, values, axis=None):  # noqa: ANN001, ANN201
    """`values` joined after `arr` (both flattened when axis is None)."""
    return np.append(arr, values, axis=axis)


numpy_composite("sort", _sort, sort, lambda a, axis=-1, **_: np.sort(a, axis=axis, kind="stable"),
                category=Category.OPAQUE, tensor_params=("a",), numpy_names=("sort",), check=_check_sorted("sort"))
numpy_composite("argsort", _argsort, argsort, lambda a, axis=-1, **_: np.argsort(a, axis=axis, kind="stable"),
                category=Category.OPAQUE, tensor_params=("a",), numpy_names=("argsort",), check=_check_sorted("argsort"))
numpy_composite("partition", _partition, partition, lambda a, kth, axis=-1, **_: np.sort(a, axis=axis, kind="stable"),
                category=Category.OPAQUE, tensor_params=("a",), numpy_names=("partition",),
                check=_check_kth("partition"))
numpy_composite("argpartition", _argpartition, argpartition,
                lambda a, kth, axis=-1, **_: np.argsort(a, axis=axis, kind="stable"), category=Category.OPAQUE,
                tensor_params=("a",), numpy_names=("argpartition",), check=_check_kth("argpartition"))
numpy_composite("take_along_axis", _take_along, take_along_axis,
                lambda arr, indices, axis: np.take_along_axis(arr, indices, axis), category=Category.INJECTIVE,
                tensor_params=("arr", "indices"), numpy_names=("take_along_axis",), check=_check_take_along,
                unpromoted=("indices",))
numpy_composite("append", _append, append, lambda arr, values, axis=None: np.append(arr, values, axis=axis),
                category=Category.INJECTIVE, tensor_params=("arr", "values"), numpy_names=("append",),
                expensive=False)
