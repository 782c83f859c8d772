"""Static rearrangements: numpy functions whose every output element comes from a position known at compile time.

`static_gather(b, x, axis, index)` is their one mechanism: the compile-time index list split into runs (steps
of -1, 0 or +1 ... any constant step), each run one slice (step 0: one element broadcast), joined along the axis
(joining.join). No gather instruction and no index tensor: strided copies the fuser merges.

rot90(m, k=1, axes=(0, 1)): flips and a transpose, as numpy's definition.
dstack(tup) / column_stack(tup): inputs raised to 3-d / 2-d as numpy's (atleast_3d; 1-D as columns), joined.
resize(a, new_shape): the flattened a repeated cyclically to the new size (a size-0 a: zeros, as numpy's).
delete(arr, obj, axis=None) / compress(condition, a, axis=None): compile-time obj (an int, slice or ints) and
  condition (bools); a tensor condition would make the result's size depend on the data: refused.
insert(arr, obj, values, axis=None): compile-time obj (an int or ints); values broadcast as numpy's.
diagonal(a, offset=0, axis1=0, axis2=1): the diagonal as the last axis (masked sums over one of the two axes).
unravel_index(indices, shape): the coordinates of flat indices in a compile-time shape (a tuple of tensors);
  out-of-range indices are not checked (numpy raises ValueError).
The rearranged axes need static sizes. Dtypes are the input's (joined inputs: their result_type).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import fmt_shape, normalize_axis, require_static
from .flips import reversed_axes
from .joining import join
from .numpy_composite import numpy_sugar_op
from .registry import Category
from .shape import normalize_index


def _runs(index: Sequence[int]) -> list[tuple[int, int, int]]:
    """(start, step, count) runs covering `index` in order, each as long as its constant step allows."""
    out: list[tuple[int, int, int]] = []
    i = 0
    while i < len(index):
        if i + 1 == len(index):
            out.append((index[i], 1, 1))
            break
        step = index[i + 1] - index[i]
        j = i + 1
        while j + 1 < len(index) and index[j + 1] - index[j] == step:
            j += 1
        out.append((index[i], step, j - i + 1))
        i = j + 1
    return out


def _run(b: Builder, x: Any, axis: int, start: int, step: int, count: int) -> Any:
    shape = b.shape(x)
    if step == 0:
        one = _run(b, x, axis, start, 1, 1)
        return b.op("broadcast_to", one, shape=shape[:axis] + (count,) + shape[axis + 1:])
    stop = start + step * count
    key = tuple(slice(start, None if stop < 0 else stop, step) if i == axis else slice(None)
                for i in range(len(shape)))
    return b.op("slice", x, **normalize_index(shape, key).slice_attrs)


def static_gather(b: Builder, x: Any, axis: int, index: Sequence[int]) -> Any:
    """x's elements at the compile-time positions `index` (non-negative) along `axis`, in that order."""
    index = [int(i) for i in index]
    if index == list(range(b.shape(x)[axis])):
        return x
    if not index:
        return _run(b, x, axis, 0, 1, 0)
    return join(b, [_run(b, x, axis, s, st, n) for s, st, n in _runs(index)], axis)


def _all_static(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        require_static(name, *ts)
    return check


# ---- rot90 --------------------------------------------------------------------------------------


def _rot90(b: Builder, m: Any, *, k: Any = 1, axes: Any = (0, 1)) -> list[Any]:
    nd = len(b.shape(m))
    a0, a1 = normalize_axis(axes[0], nd)[0], normalize_axis(axes[1], nd)[0]
    k = int(k) % 4
    if k == 0:
        return [m]
    if k == 2:
        return [reversed_axes(b, m, (a0, a1))]
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return [b.op("transpose", reversed_axes(b, m, (a1,)), axes=tuple(perm))]
    return [reversed_axes(b, b.op("transpose", m, axes=tuple(perm)), (a1,))]


def _check_rot90(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    axes = attrs.get("axes", (0, 1))
    if not isinstance(axes, (tuple, list)) or len(axes) != 2:
        raise InferError("len(axes) must be 2.")
    k = attrs.get("k", 1)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InferError(f"rot90: k must be a compile-time int, got {k!r}")
    nd = ts[0].ndim
    if nd < 2:
        raise InferError("rot90: the array must have at least 2 dimensions")
    a0, a1 = (normalize_axis(a, nd)[0] for a in axes)
    if a0 == a1:
        raise InferError("Axes must be different.")


def rot90(m, k=1, axes=(0, 1)):  # noqa: ANN001, ANN201 - numpy's signature
    """m rotated by 90 degrees k times, from the first axis towards the second."""
    return np.rot90(m, k, axes)


# ---- dstack, column_stack -------------------------------------------------------------------------


def _raised_shape(shape: tuple[Any, ...], kind: str) -> tuple[Any, ...]:
    """numpy's shape for an input of dstack (atleast_3d) or column_stack (1-D as a column)."""
    if kind == "dstack":
        return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}.get(len(shape), shape)
    return {0: (1, 1), 1: shape + (1,)}.get(len(shape), shape)


def _stack_as(kind: str):
    def body(b: Builder, *xs: Any, n_tup: int = 0) -> list[Any]:
        dt = b.result_type(*(b.dtype(x) for x in xs))
        parts = []
        for x in xs:
            shape = tuple(b.shape(x))
            new = _raised_shape(shape, kind)
            parts.append(b.cast(x if new == shape else b.op("reshape", x, shape=new), dt))
        return [join(b, parts, 2 if kind == "dstack" else 1)]
    return body


def _check_stack_as(kind: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        ax = 2 if kind == "dstack" else 1
        shapes = [_raised_shape(tuple(t.shape), kind) for t in ts]
        if len({s[:ax] + s[ax + 1:] for s in shapes}) > 1:
            raise InferError(f"all the input array dimensions except for the concatenation axis must match "
                             f"exactly, got shapes {', '.join(fmt_shape(t.shape) for t in ts)}")
    return check


def dstack(tup):  # noqa: ANN001, ANN201
    """Arrays joined along a third axis (1-D (N,) as (1, N, 1), 2-D (M, N) as (M, N, 1))."""
    return np.dstack(tup)


def column_stack(tup):  # noqa: ANN001, ANN201
    """1-D arrays as columns (2-D ones as they are), joined along the second axis."""
    return np.column_stack(tup)


# ---- resize ---------------------------------------------------------------------------------------


def _new_shape(new_shape: Any) -> tuple[int, ...]:
    dims = (new_shape,) if isinstance(new_shape, (int, np.integer)) else new_shape
    if not isinstance(dims, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dims):
        raise InferError(f"resize: new_shape must be a compile-time int or tuple of ints, got {new_shape!r}")
    if any(d < 0 for d in dims):
        raise InferError("all elements of `new_shape` must be non-negative")
    return tuple(int(d) for d in dims)


def _resize(b: Builder, a: Any, *, new_shape: Any) -> list[Any]:
    shape = _new_shape(new_shape)
    size = int(np.prod(shape))
    flat = b.op("reshape", a, shape=(-1,))
    n = int(np.prod(b.shape(a)))
    if n == 0:
        return [b.op("full", shape=shape, fill_value=0, dtype=b.dtype(a))]
    reps = -(-size // n)
    tiled = b.op("tile", flat, reps=reps) if reps > 1 else flat
    return [b.op("reshape", static_gather(b, tiled, 0, range(size)), shape=shape)]


def resize(a, new_shape):  # noqa: ANN001, ANN201
    """A new array of new_shape filled with a's elements repeated in order."""
    return np.resize(a, new_shape)


# ---- delete, compress, insert ----------------------------------------------------------------------


def _obj_positions(obj: Any, n: int, name: str) -> list[int]:
    """The compile-time positions an int, a slice or a sequence of ints names along an axis of size n."""
    if isinstance(obj, slice):
        return list(range(n))[obj]
    items = [obj] if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool) else obj
    if not isinstance(items, (tuple, list)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) for i in items):
        raise InferError(f"{name}: obj must be a compile-time int, slice or sequence of ints, got {obj!r} (a tensor "
                         "obj would make the result's size depend on the data)")
    out = []
    for i in items:
        if not -n <= i < n:
            raise InferError(f"{name}: index {i} is out of bounds for axis with size {n}")
        out.append(int(i) % n)
    return out


def _flat_or_axis(b: Builder, x: Any, axis: Any) -> tuple[Any, int]:
    if axis is None:
        return b.op("reshape", x, shape=(-1,)), 0
    return x, normalize_axis(axis, len(b.shape(x)))[0]


def _delete(b: Builder, arr: Any, *, obj: Any, axis: Any = None) -> list[Any]:
    x, ax = _flat_or_axis(b, arr, axis)
    n = b.shape(x)[ax]
    gone = set(_obj_positions(obj, n, "delete"))
    return [static_gather(b, x, ax, [i for i in range(n) if i not in gone])]


def _compress(b: Builder, a: Any, *, condition: Any, axis: Any = None) -> list[Any]:
    x, ax = _flat_or_axis(b, a, axis)
    n = b.shape(x)[ax]
    cond = np.asarray(condition)
    if cond.ndim != 1 or cond.dtype.kind not in "biu":
        raise InferError(f"compress: condition must be a compile-time 1-D sequence of bools, got {condition!r} (a "
                         "tensor condition would make the result's size depend on the data; np.where(condition, a, "
                         "fill) keeps the shape)")
    picked = [int(i) for i in np.flatnonzero(cond)]
    if picked and picked[-1] >= n:
        raise InferError(f"compress: index {picked[-1]} is out of bounds for axis {ax} with size {n}")
    return [static_gather(b, x, ax, picked)]


def _insert(b: Builder, arr: Any, values: Any, *, obj: Any, axis: Any = None) -> list[Any]:
    x, ax = _flat_or_axis(b, arr, axis)
    shape = tuple(b.shape(x))
    n = shape[ax]
    v = b.cast(values, b.dtype(x))
    scalar_obj = isinstance(obj, (int, np.integer))
    if scalar_obj:
        at = [int(obj) + (n if obj < 0 else 0)]
        if not 0 <= at[0] <= n:
            raise InferError(f"insert: index {obj} is out of bounds for axis {ax} with size {n}")
        vshape = tuple(b.shape(v))
        vshape = (1,) * (len(shape) - len(vshape)) + vshape  # numpy: np.array(values, ndmin=arr.ndim) ...
        v = b.op("reshape", v, shape=vshape)
        if len(vshape) > 1:  # ... with its first axis moved to `axis`
            perm = list(range(1, len(vshape)))
            perm.insert(ax, 0)
            v = b.op("transpose", v, axes=tuple(perm))
        count = b.shape(v)[ax]
        v = b.op("broadcast_to", v, shape=shape[:ax] + (count,) + shape[ax + 1:])
        pieces = [(at[0], v)]
    else:
        items = list(obj) if isinstance(obj, (tuple, list)) else None
        if items is None or not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
            raise InferError(f"insert: obj must be a compile-time int or sequence of ints, got {obj!r}")
        at = [int(i) + (n if i < 0 else 0) for i in items]
        if any(not 0 <= i <= n for i in at):
            raise InferError(f"insert: an index of {obj!r} is out of bounds for axis {ax} with size {n}")
        v = b.op("broadcast_to", v, shape=shape[:ax] + (len(at),) + shape[ax + 1:])
        order = sorted(range(len(at)), key=lambda j: at[j])  # numpy inserts in a stable order of the positions
        pieces = [(at[j], static_gather(b, v, ax, [j])) for j in order]
    parts, done = [], 0
    for pos, piece in pieces:
        if pos > done:
            parts.append(static_gather(b, x, ax, range(done, pos)))
        parts.append(piece)
        done = pos
    if done < n:
        parts.append(static_gather(b, x, ax, range(done, n)))
    return [join(b, parts, ax)]


def delete(arr, obj, axis=None):  # noqa: ANN001, ANN201
    """arr without the entries obj names along axis (None: of the flattened arr)."""
    return np.delete(arr, obj, axis)


def compress(condition, a, axis=None):  # noqa: ANN001, ANN201
    """The entries of a along axis (None: flattened) where the compile-time condition is true."""
    return np.compress(condition, a, axis)


def insert(arr, obj, values, axis=None):  # noqa: ANN001, ANN201
    """arr with values inserted before the positions obj names along axis (None: of the flattened arr)."""
    return np.insert(arr, obj, values, axis)


# ---- diagonal ---------------------------------------------------------------------------------------


def _diagonal(b: Builder, a: Any, *, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> list[Any]:
    shape = b.shape(a)
    nd = len(shape)
    a1, a2 = normalize_axis(axis1, nd)[0], normalize_axis(axis2, nd)[0]
    rest = tuple(i for i in range(nd) if i not in (a1, a2))
    x = b.op("transpose", a, axes=rest + (a1, a2)) if rest + (a1, a2) != tuple(range(nd)) else a
    n, m, k = shape[a1], shape[a2], int(offset)
    dt = b.dtype(a)
    mask = b.array(np.eye(n, m, k, dtype=bool))
    picked = b.op("where", mask, x, b.const(False if dt == "bool" else 0, dt))
    # each row (offset >= 0) or column (offset < 0) holds at most one diagonal element: its sum (bool: max)
    along = nd - 1 if k >= 0 else nd - 2
    red = b.op("max" if dt == "bool" else "sum", picked, axis=along)
    length = max(0, min(n, m - k)) if k >= 0 else max(0, min(m, n + k))
    return [b.cast(static_gather(b, red, nd - 2, range(length)), dt)]


def _check_diagonal(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    _all_static("diagonal")(ts, attrs)
    a = ts[0]
    if a.ndim < 2:
        raise InferError("diag requires an array of at least two dimensions")
    a1, a2 = normalize_axis(attrs.get("axis1", 0), a.ndim)[0], normalize_axis(attrs.get("axis2", 1), a.ndim)[0]
    if a1 == a2:
        raise InferError("axis1 and axis2 cannot be the same")
    off = attrs.get("offset", 0)
    if isinstance(off, bool) or not isinstance(off, (int, np.integer)):
        raise InferError(f"diagonal: offset must be a compile-time int, got {off!r}")


def diagonal(a, offset=0, axis1=0, axis2=1):  # noqa: ANN001, ANN201
    """The offset diagonal of the axis1 x axis2 planes, as the last axis."""
    return np.diagonal(a, offset, axis1, axis2).copy()


# ---- unravel_index ------------------------------------------------------------------------------------


def _unravel_index(b: Builder, indices: Any, *, shape: Any, order: str = "C") -> list[Any]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dt = "int32"
    flat = b.cast(indices, dt)
    order_dims = list(enumerate(dims))
    out: list[Any] = [None] * len(dims)
    for i, d in (reversed(order_dims) if order == "C" else order_dims):
        out[i] = b.op("mod", flat, b.const(int(d), dt)) if d else flat
        flat = b.op("floordiv", flat, b.const(int(d), dt)) if d else flat
    return out


def _check_unravel(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if ts[0].dtype not in ("int8", "int16", "int32", "uint8"):
        raise InferError(f"unravel_index: only int indices permitted, got {ts[0].dtype}")
    shape = attrs.get("shape")
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise InferError(f"unravel_index: shape must be compile-time ints, got {shape!r}")
    if attrs.get("order", "C") not in ("C", "F"):
        raise InferError("only 'C' or 'F' order is permitted")


def unravel_index(indices, shape, order="C"):  # noqa: ANN001, ANN201
    """The coordinate arrays of flat indices into an array of the given shape."""
    return np.unravel_index(indices, shape, order)


_DATA_SIZED = ("a tensor would make the result's size depend on the data; np.where(condition, a, fill) keeps the "
               "shape")
numpy_sugar_op("rot90", _rot90, rot90, lambda m, k=1, axes=(0, 1): np.rot90(m, k, axes).copy(),
               category=Category.INJECTIVE, tensor_params=("m",), numpy_names=("rot90",), check=_check_rot90,
               expensive=False)
for _kind, _api in (("dstack", dstack), ("column_stack", column_stack)):
    numpy_sugar_op(_kind, _stack_as(_kind), _api, lambda *xs, n_tup=0, _api=_api: _api(list(xs)),
                   category=Category.INJECTIVE, tensor_params=(), variadic="tup", numpy_names=(_kind,),
                   check=_check_stack_as(_kind), expensive=False)
numpy_sugar_op("resize", _resize, resize, lambda a, new_shape: np.resize(a, new_shape), category=Category.INJECTIVE,
               tensor_params=("a",), numpy_names=("resize",), check=_all_static("resize"), expensive=False)
numpy_sugar_op("delete", _delete, delete, lambda arr, obj, axis=None: np.delete(arr, obj, axis),
               category=Category.INJECTIVE, tensor_params=("arr",), numpy_names=("delete",),
               check=_all_static("delete"), expensive=False, static={"obj": _DATA_SIZED})
numpy_sugar_op("compress", _compress, compress, lambda a, condition, axis=None: np.compress(condition, a, axis),
               category=Category.INJECTIVE, tensor_params=("a",), numpy_names=("compress",),
               check=_all_static("compress"), expensive=False, static={"condition": _DATA_SIZED})
numpy_sugar_op("insert", _insert, insert, lambda arr, values, obj, axis=None: np.insert(arr, obj, values, axis),
               category=Category.INJECTIVE, tensor_params=("arr", "values"), numpy_names=("insert",),
               check=_all_static("insert"), expensive=False)
numpy_sugar_op("diagonal", _diagonal, diagonal, lambda a, **k: np.diagonal(a, **k).copy(), category=Category.OPAQUE,
               tensor_params=("a",), numpy_names=("diagonal",), check=_check_diagonal)
numpy_sugar_op("unravel_index", _unravel_index, unravel_index,
               lambda indices, shape, order="C": np.unravel_index(indices, shape, order),
               tensor_params=("indices",), numpy_names=("unravel_index",), check=_check_unravel,
               returns_sequence=True)
