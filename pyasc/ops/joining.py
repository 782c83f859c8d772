"""Joining and splitting: concatenate/concat, stack, hstack, vstack; split, array_split.

The public functions take a list of tensors, so they are sugar (registry.register_sugar) over two
internal variadic ops: `concat` (the tensors; attrs `axis`, `kind` = "concatenate" | "stack" |
"hstack" | "vstack") and `split` (one tensor, one output per piece; attrs `sections` (an int: that
many pieces, or a tuple of split points), `axis`, `equal` (np.split: the pieces must be equal)).

Both are composites of ops the chip already runs:
- split: one `slice` per piece;
- concat of pieces of equal size n along the axis (and stack): each piece, with a new axis, is
  chosen by a `where` on a constant mask of the k positions (k - 1 selects into one broadcast),
  then a `reshape` merges (k, n) into k*n (stack keeps the new axis);
- concat of unequal sizes: each piece is *placed* into the output's extent (`place`: broadcast over
  B = 1 + ceil(before/n) + ceil(after/n) blocks of its own size, kept in one block by a `where`,
  reshaped to B*n and sliced to the output's extent), and `where`s on constant masks of each
  piece's range pick the pieces. This costs about (B*n) elements of work per piece: a dedicated
  move template would write each piece once.
Dtypes: numpy's result_type of the inputs (each is cast first). Sizes along the joining axis must
be static, except that pieces of one equal (possibly symbolic) size may be joined.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder, decompose_of, types_of
from .common import fmt_shape, named, normalize_axis
from .registry import Category, OpDef, register, register_sugar

KINDS = ("concatenate", "stack", "hstack", "vstack")


# ---- helpers shared with pad (arrange.py) ---------------------------------------------------------


def slice_axis(b: Builder, x: Any, axis: int, start: int, stop: int) -> Any:
    """x[..., start:stop, ...] on `axis` (static bounds; every other axis whole)."""
    nd = len(b.shape(x))
    starts = tuple(start if i == axis else 0 for i in range(nd))
    stops = tuple(stop if i == axis else None for i in range(nd))
    return b.op("slice", x, starts=starts, stops=stops, steps=(1,) * nd)


def axis_mask(ndim: int, axis: int, size: int, lo: int, hi: int) -> np.ndarray:
    """A bool array of shape (1, .., size, .., 1) (`size` at `axis` of `ndim` axes), True on [lo, hi)."""
    m = np.zeros((1,) * axis + (size,) + (1,) * (ndim - axis - 1), bool)
    m.reshape(-1)[lo:hi] = True
    return m


def place(b: Builder, x: Any, axis: int, before: int, after: int, fill: Any) -> Any:
    """x with `before` and `after` elements of `fill` (a 0-d value of x's dtype) added along `axis`."""
    shape = b.shape(x)
    n = shape[axis]
    if before == 0 and after == 0:
        return x
    if n == 0:
        full = shape[:axis] + (before + after,) + shape[axis + 1:]
        return b.op("broadcast_to", fill, shape=full)
    nb, na = -(-before // n), -(-after // n)
    blocks = nb + 1 + na
    e = b.op("expand_dims", x, axis=axis)
    bc = b.op("broadcast_to", e, shape=shape[:axis] + (blocks, n) + shape[axis + 1:])
    kept = b.op("where", b.array(axis_mask(len(shape) + 1, axis, blocks, nb, nb + 1)), bc, fill)
    flat = b.op("reshape", kept, shape=shape[:axis] + (blocks * n,) + shape[axis + 1:])
    start = nb * n - before
    if start == 0 and blocks * n == before + n + after:
        return flat
    return slice_axis(b, flat, axis, start, start + before + n + after)


# ---- concat ------------------------------------------------------------------------------------


def _prepared(b: Builder, xs: Sequence[Any], axis: Any, kind: str) -> tuple[list[Any], int, bool]:
    """(inputs as the joining sees them, the axis, whether a new axis is stacked)."""
    xs = list(xs)
    if kind == "hstack":
        xs = [b.op("reshape", x, shape=(1,)) if not b.shape(x) else x for x in xs]
        return xs, 0 if len(b.shape(xs[0])) == 1 else 1, False
    if kind == "vstack":
        xs = [b.op("reshape", x, shape=(1, *b.shape(x)) if b.shape(x) else (1, 1)) if len(b.shape(x)) < 2 else x
              for x in xs]
        return xs, 0, False
    if kind == "stack":
        return xs, normalize_axis(axis, len(b.shape(xs[0])) + 1)[0], True
    if axis is None:
        return [b.op("reshape", x, shape=(-1,)) for x in xs], 0, False
    return xs, normalize_axis(axis, len(b.shape(xs[0])))[0], False


def _stack_equal(b: Builder, xs: Sequence[Any], axis: int) -> Any:
    """The pieces (one shape) stacked along a new `axis`: where-selects into one broadcast."""
    shape = b.shape(xs[0])
    k = len(xs)
    out_shape = shape[:axis] + (k,) + shape[axis:]
    es = [b.op("expand_dims", x, axis=axis) for x in xs]
    # the first select broadcasts the last piece against the first (no broadcast_to of one piece to a shape
    # named by another's symbols: every select reads the pieces whose dims it has)
    out = es[0]
    for i in range(k - 1, 0, -1):
        out = b.op("where", b.array(axis_mask(len(out_shape), axis, k, i, i + 1)), es[i], out)
    return out


def _concat(b: Builder, *xs: Any, axis: Any = 0, kind: str = "concatenate") -> list[Any]:
    dt = b.result_type(*(b.dtype(x) for x in xs))
    xs_c = [b.cast(x, dt) for x in xs]
    parts, ax, new_axis = _prepared(b, xs_c, axis, kind)
    if new_axis:
        return [parts[0] if len(parts) == 1 else _stack_equal(b, parts, ax)]
    sizes = [b.shape(p)[ax] for p in parts]
    if len(set(sizes)) == 1:
        if len(parts) == 1:
            return [parts[0]]
        shape = b.shape(parts[0])
        stacked = _stack_equal(b, parts, ax)
        return [b.op("reshape", stacked, shape=shape[:ax] + (sizes[0] * len(parts),) + shape[ax + 1:])]
    keep = [(p, n) for p, n in zip(parts, sizes) if n != 0]
    total = sum(sizes)
    if len(keep) == 1:
        return [keep[0][0]]
    zero = b.const(0, dt)
    ndim = len(b.shape(parts[0]))
    offset, placed = 0, []
    for p, n in keep:
        placed.append((place(b, p, ax, offset, total - offset - n, zero), offset, n))
        offset += n
    out = placed[-1][0]
    for p, lo, n in reversed(placed[:-1]):
        out = b.op("where", b.array(axis_mask(ndim, ax, total, lo, lo + n)), p, out)
    return [out]


def _check_concat(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    kind = attrs.get("kind", "concatenate")
    if kind not in KINDS:
        raise InferError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not ts:
        raise InferError("need at least one array to concatenate" if kind != "stack" else "need at least one array to stack")
    shapes = [tuple(t.shape) for t in ts]
    if kind == "stack":
        normalize_axis(attrs.get("axis", 0), len(shapes[0]) + 1)
        if any(len(s) != len(shapes[0]) or any(x != y and not (isinstance(x, Sym) or isinstance(y, Sym))
                                               for x, y in zip(s, shapes[0])) for s in shapes):
            raise InferError("all input arrays must have the same shape, got " + ", ".join(map(fmt_shape, shapes)))
        return
    if kind == "hstack":
        shapes = [s or (1,) for s in shapes]
        axis = 0 if len(shapes[0]) == 1 else 1
    elif kind == "vstack":
        shapes = [s if len(s) >= 2 else (1, *s) if s else (1, 1) for s in shapes]
        axis = 0
    elif attrs.get("axis", 0) is None:
        return
    else:
        if any(not s for s in shapes):
            raise InferError("zero-dimensional arrays cannot be concatenated")
        axis = normalize_axis(attrs.get("axis", 0), len(shapes[0]))[0]
    for i, s in enumerate(shapes[1:], 1):
        if len(s) != len(shapes[0]):
            raise InferError(f"all the input arrays must have the same number of dimensions, but the array at index 0 "
                             f"has {len(shapes[0])} dimension(s) and the array at index {i} has {len(s)} dimension(s)")
        for d, (x, y) in enumerate(zip(shapes[0], s)):
            if d != axis and x != y and not (isinstance(x, Sym) or isinstance(y, Sym)):  # symbols: checked at launch
                raise InferError(f"all the input array dimensions except for the concatenation axis must match "
                                 f"exactly, but along dimension {d}, the array at index 0 has size {x} and the array "
                                 f"at index {i} has size {y}")
    sizes = [s[axis] for s in shapes]
    if len(set(sizes)) > 1 and any(isinstance(n, Sym) for n in sizes):
        raise InferError(f"the sizes along axis {axis} ({', '.join(map(str, sizes))}) must be static, or all equal")


def _infer_concat(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    _check_concat(ts, attrs)
    return tuple(types_of(_concat, ts, dict(attrs)))


def _concat_eager(*arrays: Any, axis: Any = 0, kind: str = "concatenate") -> Any:
    if kind == "hstack":
        return np.hstack(arrays)
    if kind == "vstack":
        return np.vstack(arrays)
    if kind == "stack":
        return np.stack(arrays, axis=axis)
    return np.concatenate(arrays, axis=axis)


register(OpDef("concat", Category.INJECTIVE, named("concat", _infer_concat), _concat_eager,
               decompose=decompose_of(_concat),
               doc="join tensors along an axis (internal: concatenate, stack, hstack, vstack are its sugar)"))


def _arrays(name: str, arrays: Any) -> list[Any]:
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(f"{name}(): arrays must be a list or tuple of tensors, got {type(arrays).__name__}")
    if not arrays:
        raise ValueError(f"{name}(): need at least one array to {'stack' if 'stack' in name else 'concatenate'}")
    return list(arrays)


def concatenate(arrays, axis=0):  # noqa: ANN001, ANN201 - the public signature
    """Join tensors along an existing axis (None: flatten them first)."""
    return np.concatenate(arrays, axis=axis)


def stack(arrays, axis=0):  # noqa: ANN001, ANN201
    """Join tensors of one shape along a new axis."""
    return np.stack(arrays, axis=axis)


def hstack(tup):  # noqa: ANN001, ANN201
    """Join along the second axis (the first for 1-D tensors)."""
    return np.hstack(tup)


def vstack(tup):  # noqa: ANN001, ANN201
    """Join along the first axis, 1-D tensors as rows."""
    return np.vstack(tup)


def _join_binder(api: Any, kind: str):
    import inspect  # only here: the sugar's signature, read once at registration

    sig = inspect.signature(api)

    def bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{api.__name__}(): {e}") from None
        bound.apply_defaults()
        arrays = _arrays(api.__name__, bound.arguments["arrays" if "arrays" in bound.arguments else "tup"])
        axis = bound.arguments.get("axis")
        if isinstance(axis, np.integer):
            axis = int(axis)
        return arrays, {"axis": axis, "kind": kind}

    return bind


for _api, _kind, _np in ((concatenate, "concatenate", ("concatenate", "concat")), (stack, "stack", ("stack",)),
                         (hstack, "hstack", ("hstack",)), (vstack, "vstack", ("vstack",))):
    register_sugar(_api.__name__, "concat", _api, _join_binder(_api, _kind), numpy_names=_np)


# ---- split ------------------------------------------------------------------------------------------


def _bounds(n: int, sections: Any, equal: bool) -> list[tuple[int, int]]:
    """The [start, stop) of each piece of an axis of size n (numpy's split / array_split rules)."""
    if isinstance(sections, (int, np.integer)) and not isinstance(sections, bool):
        k = int(sections)
        if k <= 0:
            raise InferError("number sections must be larger than 0.")
        if equal and n % k:
            raise InferError(f"array split does not result in an equal division: {n} elements into {k} sections")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        starts = [sum(sizes[:i]) for i in range(k)]
        return [(s, s + z) for s, z in zip(starts, sizes)]
    if not isinstance(sections, (tuple, list)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in sections):
        raise InferError(f"indices_or_sections must be an int or a sequence of ints, got {sections!r}")
    points = [0] + [min(max(int(i) + (n if i < 0 else 0), 0), n) for i in sections] + [n]
    return [(points[i], max(points[i], points[i + 1])) for i in range(len(points) - 1)]


def _split(b: Builder, x: Any, *, sections: Any, axis: int = 0, equal: bool = True) -> list[Any]:
    shape = b.shape(x)
    ax = normalize_axis(axis, len(shape))[0]
    return [slice_axis(b, x, ax, lo, hi) for lo, hi in _bounds(shape[ax], sections, equal)]


def _infer_split(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if len(ts) != 1:
        raise InferError(f"takes 1 input(s), got {len(ts)}")
    (x,) = ts
    if x.ndim == 0:
        raise InferError("cannot split a 0-d tensor")
    ax = normalize_axis(attrs.get("axis", 0), x.ndim)[0]
    if isinstance(x.shape[ax], Sym):
        raise InferError(f"axis {ax} of shape {fmt_shape(x.shape)} has a size only known at launch; "
                         "split needs a static size")
    return tuple(types_of(_split, ts, dict(attrs)))


def _split_eager(x: Any, *, sections: Any, axis: int = 0, equal: bool = True) -> Any:
    return tuple((np.split if equal else np.array_split)(x, sections, axis=axis))


register(OpDef("split", Category.INJECTIVE, named("split", _infer_split), _split_eager,
               decompose=decompose_of(_split),
               doc="pieces of a tensor along an axis, one output each (internal: split, array_split are its sugar)"))


def split(ary, indices_or_sections, axis=0):  # noqa: ANN001, ANN201 - the public signature
    """Pieces of equal size (an int: how many) or cut at the given indices, along `axis`."""
    return np.split(ary, indices_or_sections, axis=axis)


def array_split(ary, indices_or_sections, axis=0):  # noqa: ANN001, ANN201
    """Like split, but an int need not divide the axis (the first pieces are one longer)."""
    return np.array_split(ary, indices_or_sections, axis=axis)


def _split_binder(api: Any, equal: bool):
    import inspect  # only here: the sugar's signature, read once at registration

    sig = inspect.signature(api)

    def bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{api.__name__}(): {e}") from None
        bound.apply_defaults()
        sections = bound.arguments["indices_or_sections"]
        sections = tuple(int(i) if isinstance(i, np.integer) else i for i in sections) \
            if isinstance(sections, (list, tuple)) else int(sections) if isinstance(sections, np.integer) else sections
        axis = bound.arguments["axis"]
        return [bound.arguments["ary"]], {"sections": sections, "axis": int(axis) if isinstance(axis, np.integer)
                                          else axis, "equal": equal}

    return bind


register_sugar("split", "split", split, _split_binder(split, True), numpy_names=("split",))
register_sugar("array_split", "split", array_split, _split_binder(array_split, False), numpy_names=("array_split",))

