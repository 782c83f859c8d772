"""Joining and splitting: concatenate/concat, stack, hstack, vstack; split, array_split.

The public functions take a list of tensors, so they are sugar (registry.register_sugar) over two
internal variadic ops: `concat` (the tensors; attrs `axis`, `kind` = "concatenate" | "stack" |
"hstack" | "vstack") and `split` (one tensor, one output per piece; attrs `sections` (an int: that
many pieces, or a tuple of split points), `axis`, `equal` (np.split: the pieces must be equal)).

Both are composites of ops the chip already runs:
- split: one `slice` per piece;
- concat of pieces of equal size n along the axis (and stack): each piece, with a new axis, is
  chosen by a `where` on a constant mask of the k positions (k - 1 selects), then a `reshape`
  merges (k, n) into k*n (stack keeps the new axis);
- at most FAN_IN pieces per kernel (each is a kernel input, each select a constant mask, and a
  kernel's loads need event ids): more pieces are joined as a tree of joins, a reshape between
  levels, each level reading and writing the data once more;
- concat of unequal sizes whose greatest common divisor g leaves at most FAN_IN blocks: each
  piece is sliced into blocks of size g, joined as equal pieces (slices of whole leading rows are free);
- other unequal sizes: each piece is *placed* into the output's extent (`place`: broadcast over
  B = 1 + ceil(before/n) + ceil(after/n) blocks of its own size, kept in one block by a `where`,
  reshaped to B*n and sliced to the output's extent), and `where`s on constant masks of each
  piece's range pick the pieces. This costs about (B*n) elements of work per piece: a dedicated
  move template would write each piece once.
Dtypes: numpy's result_type of the inputs (each is cast first). Sizes along the joining axis must
be static, except that pieces of one equal (possibly symbolic) size may be joined.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..dim_bounds import dim_max, dim_min
from ..symbolic import eq as sym_eq, mod as sym_mod
from ..tensor_type import Sym, TensorType, min_
from .builder import Builder, decompose_of, types_of
from .dimvalue import register_launch_check
from .common import fmt_shape, named, normalize_axis, sugar_arguments
from .registry import Category, OpDef, register, register_sugar

KINDS = ("concatenate", "stack", "hstack", "vstack")

#: pieces one kernel selects from: each is an input of that kernel and each select reads a constant mask,
#: and a kernel's loads need flags (event ids) within the chip's budget; more pieces are joined as a tree
FAN_IN = 4


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


def _select_few(b: Builder, xs: Sequence[Any], axis: int) -> Any:
    """At most FAN_IN pieces of one shape stacked along a new `axis`: where-selects on constant masks."""
    k = len(xs)
    ndim = len(b.shape(xs[0])) + 1
    es = [b.op("expand_dims", x, axis=axis) for x in xs]
    # the first select broadcasts the last piece against the first (no broadcast_to of one piece to a shape
    # named by another's symbols: every select reads the pieces whose dims it has)
    out = es[0]
    for i in range(k - 1, 0, -1):
        out = b.op("where", b.array(axis_mask(ndim, axis, k, i, i + 1)), es[i], out)
    return out


def _merge(b: Builder, x: Any, axis: int) -> Any:
    """Axes `axis` and `axis + 1` of x as one (a reshape: a fusion boundary, and free on contiguous data)."""
    shape = b.shape(x)
    return b.op("reshape", x, shape=shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])


def _stack(b: Builder, parts: Sequence[Any], axis: int) -> Any:
    """Pieces of one shape stacked along a new `axis` (joined as pieces of size 1 along it)."""
    if len(parts) == 1:
        return b.op("expand_dims", parts[0], axis=axis)
    if len(parts) <= FAN_IN:
        return _select_few(b, parts, axis)
    return join(b, [b.op("expand_dims", p, axis=axis) for p in parts], axis)


def join(b: Builder, parts: Sequence[Any], ax: int) -> Any:
    """Pieces joined along an existing axis `ax`, at most FAN_IN of them per kernel (a tree above that)."""
    sizes = [b.shape(p)[ax] for p in parts]
    keep = [(p, n) for p, n in zip(parts, sizes) if n != 0] or [(parts[0], sizes[0])]
    if len(keep) == 1:
        return keep[0][0]
    if len(keep) > FAN_IN:
        return join(b, [join(b, [p for p, _ in keep[i:i + FAN_IN]], ax) for i in range(0, len(keep), FAN_IN)], ax)
    if len(set(n for _, n in keep)) == 1:
        return _merge(b, _select_few(b, [p for p, _ in keep], ax), ax)
    total = sum(n for _, n in keep)
    g = math.gcd(*(n for _, n in keep))
    if total // g <= FAN_IN:
        # cut every piece into blocks of the common size g (slices of whole leading rows are free views)
        # and select the equal blocks: each input is read once, the output written once
        return _merge(b, _select_few(b, [slice_axis(b, p, ax, i, i + g) if n != g else p
                                         for p, n in keep for i in range(0, n, g)], ax), ax)
    zero = b.const(0, b.dtype(parts[0]))
    ndim = len(b.shape(parts[0]))
    offset, placed = 0, []
    for p, n in keep:
        placed.append((place(b, p, ax, offset, total - offset - n, zero), offset, n))
        offset += n
    out = placed[-1][0]
    for p, lo, n in reversed(placed[:-1]):
        out = b.op("where", b.array(axis_mask(ndim, ax, total, lo, lo + n)), p, out)
    return out


def _concat(b: Builder, *xs: Any, axis: Any = 0, kind: str = "concatenate") -> list[Any]:
    dt = b.result_type(*(b.dtype(x) for x in xs))
    parts, ax, new_axis = _prepared(b, [b.cast(x, dt) for x in xs], axis, kind)
    if new_axis:
        return [_stack(b, parts, ax)]
    return [join(b, parts, ax)]


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
        arguments = sugar_arguments(api, sig, args, kwargs)
        arrays = _arrays(api.__name__, arguments["arrays" if "arrays" in arguments else "tup"])
        axis = arguments.get("axis")
        if isinstance(axis, np.integer):
            axis = int(axis)
        return arrays, {"axis": axis, "kind": kind}

    return bind


for _api, _kind, _np in ((concatenate, "concatenate", ("concatenate", "concat")), (stack, "stack", ("stack",)),
                         (hstack, "hstack", ("hstack",)), (vstack, "vstack", ("vstack",))):
    register_sugar(_api.__name__, "concat", _api, _join_binder(_api, _kind), numpy_names=_np)


# ---- split ------------------------------------------------------------------------------------------


def _symbolic_bounds(n: Sym, sections: Any, equal: bool) -> list[tuple[Any, Any]]:
    """_bounds for an axis whose size is only known at launch (dynamic=True): the same rules as dim
    expressions. An equal split assumes k divides n; the launch re-infers with the real size and says so."""
    if isinstance(sections, (int, np.integer)) and not isinstance(sections, bool):
        k = int(sections)
        if k <= 0:
            raise InferError("number sections must be larger than 0.")
        q = n // k
        if equal:
            return [(i * q, (i + 1) * q) for i in range(k)]
        r = n % k  # array_split: the first n % k pieces are one longer
        return [(i * q + min_(i, r), (i + 1) * q + min_(i + 1, r)) for i in range(k)]
    if not isinstance(sections, (tuple, list)) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in sections):
        raise InferError(f"indices_or_sections must be an int or a sequence of ints, got {sections!r}")
    points: list[Any] = [0]
    for i in sections:
        i = int(i)
        points.append(dim_max(n + i, 0) if i < 0 else dim_min(i, n))
    points.append(n)
    return [(points[i], dim_max(points[i], points[i + 1])) for i in range(len(points) - 1)]


def _bounds(n: Any, sections: Any, equal: bool) -> list[tuple[Any, Any]]:
    """The [start, stop) of each piece of an axis of size n (numpy's split / array_split rules)."""
    if isinstance(n, Sym):
        return _symbolic_bounds(n, sections, equal)
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
    normalize_axis(attrs.get("axis", 0), x.ndim)
    return tuple(types_of(_split, ts, dict(attrs)))  # a symbolic axis splits into dim expressions


def _split_checks(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> list[tuple[Sym, str]]:
    """An equal split of a symbolic axis: k must divide its size, which only the launch knows."""
    (x,) = ts
    sections = attrs.get("sections")
    ax = normalize_axis(attrs.get("axis", 0), x.ndim)[0]
    n = x.shape[ax]
    if not attrs.get("equal", True) or not isinstance(n, Sym) or not isinstance(sections, (int, np.integer)):
        return []
    pred = Sym(sym_eq(sym_mod(n.e, int(sections)), 0))
    return [(pred, f"array split does not result in an equal division: axis {ax} of size {n} into {int(sections)} "
                   "sections")]


register_launch_check("split", _split_checks)


def _split_eager(x: Any, *, sections: Any, axis: int = 0, equal: bool = True) -> Any:
    return tuple((np.split if equal else np.array_split)(x, sections, axis=axis))


register(OpDef("split", Category.INJECTIVE, named("split", _infer_split), _split_eager,
               decompose=decompose_of(_split), returns_sequence=True,
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
        arguments = sugar_arguments(api, sig, args, kwargs)
        sections = arguments["indices_or_sections"]
        sections = tuple(int(i) if isinstance(i, np.integer) else i for i in sections) \
            if isinstance(sections, (list, tuple)) else int(sections) if isinstance(sections, np.integer) else sections
        axis = arguments["axis"]
        return [arguments["ary"]], {"sections": sections, "axis": int(axis) if isinstance(axis, np.integer)
                                          else axis, "equal": equal}

    return bind


register_sugar("split", "split", split, _split_binder(split, True), numpy_names=("split",))
register_sugar("array_split", "split", array_split, _split_binder(array_split, False), numpy_names=("array_split",))

