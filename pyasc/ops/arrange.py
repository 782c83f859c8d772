"""Rearranging: swapaxes, moveaxis, repeat, tile, pad; composites of layout ops.

- swapaxes / moveaxis are a `transpose` with the permutation numpy computes;
- repeat(a, repeats, axis) with one count r (an int, or a sequence of one, or of equal counts):
  expand_dims after the axis, broadcast_to r copies, reshape (n, r) -> n*r; axis=None repeats the
  flattened tensor. Per-element counts: each run of equal counts is sliced out, repeated so, and the
  runs are joined (joining.join); at most MAX_REPEAT_RUNS runs;
- tile(A, reps): the axes with a count r > 1 get a new size-1 axis before them, broadcast to r,
  and each (r, n) pair is merged by one reshape;
- pad(array, pad_width, mode="constant", constant_values=c): per padded axis, `place` from
  joining.py (a broadcast over blocks, a where on a constant mask, a reshape and a slice), one scalar
  constant; modes "edge", "reflect", "symmetric", "wrap": numpy's own pad of the positions 0..n-1 is the
  compile-time index map of the axis, gathered as slices (rearrange.static_gather).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import fmt_shape, normalize_axis
from .joining import join, place, slice_axis
from .numpy_composite import numpy_composite
from .rearrange import static_gather
from .registry import Category


def _axis1(axis: Any, ndim: int, what: str = "axis") -> int:
    return normalize_axis(axis, ndim, what)[0] if ndim else 0


# ---- swapaxes / moveaxis ----------------------------------------------------------------------


def _swap_perm(ndim: int, axis1: Any, axis2: Any) -> tuple[int, ...]:
    i, j = _axis1(axis1, ndim, "axis1"), _axis1(axis2, ndim, "axis2")
    perm = list(range(ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return tuple(perm)


def _move_perm(ndim: int, source: Any, destination: Any) -> tuple[int, ...]:
    src = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    dst = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    if len(src) != len(dst):
        raise InferError("`source` and `destination` arguments must have the same number of elements")
    s = [_axis1(a, ndim, "source") for a in src]
    d = [_axis1(a, ndim, "destination") for a in dst]
    if len(set(s)) != len(s) or len(set(d)) != len(d):
        raise InferError(f"repeated axis in `source` {src} or `destination` {dst}")
    order = [n for n in range(ndim) if n not in s]
    for dest, sr in sorted(zip(d, s)):
        order.insert(dest, sr)
    return tuple(order)


def _swapaxes(b: Builder, a: Any, *, axis1: Any, axis2: Any) -> list[Any]:
    return [b.op("transpose", a, axes=_swap_perm(len(b.shape(a)), axis1, axis2))]


def _moveaxis(b: Builder, a: Any, *, source: Any, destination: Any) -> list[Any]:
    return [b.op("transpose", a, axes=_move_perm(len(b.shape(a)), source, destination))]


def swapaxes(a, axis1, axis2):  # noqa: ANN001, ANN201 - the public signature
    """Interchange two axes."""
    return np.swapaxes(a, axis1, axis2)


def moveaxis(a, source, destination):  # noqa: ANN001, ANN201
    """Move axes to new positions; the others keep their order."""
    return np.moveaxis(a, source, destination)


def _eager_swap(a: Any, *, axis1: Any, axis2: Any) -> Any:
    return np.swapaxes(a, axis1, axis2)


def _eager_move(a: Any, *, source: Any, destination: Any) -> Any:
    return np.moveaxis(a, source, destination)


numpy_composite("swapaxes", _swapaxes, swapaxes, _eager_swap, category=Category.INJECTIVE, tensor_params=("a",),
                numpy_names=("swapaxes",), expensive=False)
numpy_composite("moveaxis", _moveaxis, moveaxis, _eager_move, category=Category.INJECTIVE, tensor_params=("a",),
                numpy_names=("moveaxis",), expensive=False)


# ---- repeat ------------------------------------------------------------------------------------


#: per-element repeat counts are joined as one piece per run of equal counts; at most this many runs
MAX_REPEAT_RUNS = 64


def _counts(repeats: Any) -> list[int]:
    """The repeat counts: one (an int or a sequence of one) or one per element."""
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = [int(repeats)]
    elif isinstance(repeats, (tuple, list)) and repeats and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in repeats):
        counts = [int(v) for v in repeats]
    else:
        raise InferError(f"repeats must be a compile-time int or sequence of ints, got {repeats!r}")
    if any(r < 0 for r in counts):
        raise InferError(f"repeats may not contain negative values, got {tuple(counts)}")
    return counts


def _repeat_one(b: Builder, x: Any, ax: int, r: int) -> Any:
    """Every element of x along `ax` r times in a row: expand, broadcast, merge."""
    if r == 1:
        return x
    shape = b.shape(x)
    e = b.op("expand_dims", x, axis=ax + 1)
    bc = b.op("broadcast_to", e, shape=shape[:ax + 1] + (r,) + shape[ax + 1:])
    return b.op("reshape", bc, shape=shape[:ax] + (shape[ax] * r,) + shape[ax + 1:])


def _runs(counts: Sequence[int]) -> list[tuple[int, int, int]]:
    """(start, stop, count) of each run of equal consecutive counts."""
    out: list[tuple[int, int, int]] = []
    for i, r in enumerate(counts):
        if out and out[-1][2] == r:
            out[-1] = (out[-1][0], i + 1, r)
        else:
            out.append((i, i + 1, r))
    return out


def _repeat(b: Builder, a: Any, *, repeats: Any, axis: Any = None) -> list[Any]:
    counts = _counts(repeats)
    x = a
    if axis is None:
        x = b.op("reshape", a, shape=(-1,))
    shape = b.shape(x)
    if not shape:
        x, shape = b.op("reshape", x, shape=(1,)), (1,)
    ax = _axis1(0 if axis is None else axis, len(shape))
    if len(counts) not in (1, shape[ax]):
        raise InferError(f"operands could not be broadcast together with shape ({shape[ax]},) ({len(counts)},)")
    runs = _runs(counts)
    if len(runs) == 1:
        return [_repeat_one(b, x, ax, counts[0])]
    if len(runs) > MAX_REPEAT_RUNS:
        raise InferError(f"per-element repeats with {len(runs)} runs of different counts are not supported "
                         f"(at most {MAX_REPEAT_RUNS})")
    pieces = [_repeat_one(b, slice_axis(b, x, ax, lo, hi), ax, r) for lo, hi, r in runs if r]
    return [join(b, pieces, ax) if pieces else slice_axis(b, x, ax, 0, 0)]


def repeat(a, repeats, axis=None):  # noqa: ANN001, ANN201 - the public signature
    """Each element `repeats` times in a row along `axis` (None: of the flattened tensor)."""
    return np.repeat(a, repeats, axis=axis)


def _eager_repeat(a: Any, *, repeats: Any, axis: Any = None) -> Any:
    return np.repeat(a, repeats, axis=axis)


numpy_composite("repeat", _repeat, repeat, _eager_repeat, category=Category.INJECTIVE, tensor_params=("a",),
                numpy_names=("repeat",), expensive=False)


# ---- tile --------------------------------------------------------------------------------------


def _reps(reps: Any) -> tuple[int, ...]:
    if isinstance(reps, (int, np.integer)) and not isinstance(reps, bool):
        reps = (int(reps),)
    if not isinstance(reps, (tuple, list)) or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in reps):
        raise InferError(f"reps must be a compile-time int or tuple of ints, got {reps!r}")
    if any(v < 0 for v in reps):
        raise InferError(f"negative dimensions are not allowed, got reps {tuple(reps)}")
    return tuple(int(v) for v in reps)


def _tile(b: Builder, A: Any, *, reps: Any) -> list[Any]:  # noqa: N803 - numpy's parameter name
    rs = _reps(reps)
    shape = b.shape(A)
    d = max(len(shape), len(rs))
    shape = (1,) * (d - len(shape)) + tuple(shape)
    rs = (1,) * (d - len(rs)) + rs
    x = A if tuple(b.shape(A)) == shape else b.op("reshape", A, shape=shape)
    if all(r == 1 for r in rs):
        return [x]
    split_shape: list[Any] = []
    big: list[Any] = []
    for n, r in zip(shape, rs):
        if r != 1:
            split_shape.append(1)
            big.append(r)
        split_shape.append(n)
        big.append(n)
    e = b.op("reshape", x, shape=tuple(split_shape))
    bc = b.op("broadcast_to", e, shape=tuple(big))
    return [b.op("reshape", bc, shape=tuple(n * r for n, r in zip(shape, rs)))]


def tile(A, reps):  # noqa: ANN001, ANN201, N803 - the public signature (numpy's names)
    """A repeated `reps` times along each axis (reps shorter than A.ndim: leading axes are kept)."""
    return np.tile(A, reps)


def _eager_tile(A: Any, *, reps: Any) -> Any:  # noqa: N803
    return np.tile(A, reps)


numpy_composite("tile", _tile, tile, _eager_tile, category=Category.INJECTIVE, tensor_params=("A",),
                numpy_names=("tile",), expensive=False)


# ---- pad ---------------------------------------------------------------------------------------


def pad_pairs(pad_width: Any, ndim: int) -> tuple[tuple[int, int], ...]:
    """numpy's pad_width forms (n, (n,), (before, after), ((b0, a0), ...)) as one (before, after) per axis."""
    try:
        arr = np.asarray(pad_width)
    except (TypeError, ValueError):
        raise InferError(f"pad_width must be ints, pairs of ints or one pair per axis, got {pad_width!r}") from None
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and arr.size and np.all(arr == np.round(arr))):
        raise InferError(f"pad_width must be of integral type, got {pad_width!r}")
    try:
        pairs = np.broadcast_to(arr.astype(np.int64), (ndim, 2))
    except ValueError:
        raise InferError(f"pad_width {pad_width!r} does not fit a tensor of rank {ndim} "
                         f"(one (before, after) pair per axis, or one for all)") from None
    if (pairs < 0).any():
        raise InferError(f"index can't contain negative values, got pad_width {pad_width!r}")
    return tuple((int(p[0]), int(p[1])) for p in pairs)


#: modes whose padding copies the array's own elements: a compile-time index map per axis (numpy's own pad of
#: the positions 0..n-1 says which element each output position copies), gathered as slices
COPY_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pad(b: Builder, array: Any, *, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> list[Any]:
    shape = b.shape(array)
    fill = b.const(constant_values, b.dtype(array))
    x = array
    for axis, (before, after) in enumerate(pad_pairs(pad_width, len(shape))):
        if mode == "constant":
            x = place(b, x, axis, before, after, fill)
        elif before or after:
            index = np.pad(np.arange(shape[axis]), (before, after), mode=mode)
            x = static_gather(b, x, axis, index.tolist())
    return [x]


def _check_pad(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (a,) = ts
    mode = attrs.get("mode", "constant")
    if mode != "constant" and mode not in COPY_MODES:
        raise InferError(f"mode must be 'constant' or one of {', '.join(map(repr, COPY_MODES))}, got mode={mode!r}")
    c = attrs.get("constant_values", 0)
    if isinstance(c, (tuple, list)) or not isinstance(c, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise InferError(f"constant_values must be one compile-time scalar, got {c!r}")
    for axis, (before, after) in enumerate(pad_pairs(attrs.get("pad_width"), a.ndim)):
        if (before or after) and isinstance(a.shape[axis], Sym):
            raise InferError(f"axis {axis} of shape {fmt_shape(a.shape)} has a size only known at launch; "
                             "pad needs a static size on every padded axis")
        if (before or after) and mode != "constant" and a.shape[axis] == 0:
            raise InferError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")


def pad(array, pad_width, mode="constant", constant_values=0):  # noqa: ANN001, ANN201 - the public signature
    """`array` padded before and after each axis: constant_values (mode 'constant') or copies of its own
    elements (modes 'edge', 'reflect', 'symmetric', 'wrap', numpy's even reflections)."""
    return _eager_pad(array, pad_width=pad_width, mode=mode, constant_values=constant_values)


def _eager_pad(array: Any, *, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Any:
    if mode != "constant":  # numpy refuses constant_values with the other modes
        return np.pad(array, pad_width, mode=mode)
    return np.pad(array, pad_width, mode=mode, constant_values=constant_values)


numpy_composite("pad", _pad, pad, _eager_pad, category=Category.INJECTIVE, tensor_params=("array",),
                numpy_names=("pad",), check=_check_pad, expensive=False)
