"""Layout ops: transpose, reshape, broadcast_to, expand_dims, squeeze, slice, transdata.

They move or select elements without computing on them. Symbolic dims
(`Sym`) flow through; reshape with -1 computes a symbolic product/quotient,
cancelling symbolic factors it can match (so (N, 8) -> (-1,) -> (N, -1)
gives back (N, 8)). `slice` is internal (no public function): the frontend
builds it from subscripts with `normalize_index`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..dim_bounds import dim_max, dim_min, dim_sub, lower_bound
from ..tensor_type import FORMATS, Dim, Sym, TensorType, ceildiv
from .common import (
    arity,
    attr_shape,
    broadcasts_to,
    fmt_shape,
    named,
    normalize_axis,
    product_dim,
    shape_factors,
    static_prod,
)
from .reduce import axis_arg
from .registry import ANY_FORMAT, Category, OpDef, register


def _nd(t: TensorType, shape: Sequence[Dim]) -> TensorType:
    return TensorType(tuple(shape), t.dtype)


# ---- transpose -----------------------------------------------------------------------


def transpose(a, axes=None):  # noqa: ANN001, ANN201 - the public signature
    """Permute axes (None: reverse them, like `.T`)."""
    return np.transpose(a, axis_arg(axes))


def permutation(axes: Any, ndim: int) -> tuple[int, ...]:
    """A transpose `axes` attribute as a full permutation of range(ndim)."""
    if axes is None:
        return tuple(reversed(range(ndim)))
    if isinstance(axes, (int, np.integer)) or not isinstance(axes, (tuple, list)):
        raise InferError(f"axes must be a tuple of ints or None, got {axes!r}")
    if len(axes) != ndim:
        raise InferError(f"axes {tuple(axes)} do not match a tensor of rank {ndim}")
    norm = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool) or not -ndim <= a < ndim:
            raise InferError(f"axes {tuple(axes)} are not a permutation of {tuple(range(ndim))}")
        norm.append(int(a) % ndim)
    if sorted(norm) != list(range(ndim)):
        raise InferError(f"axes {tuple(axes)} are not a permutation of {tuple(range(ndim))}")
    return tuple(norm)


def _infer_transpose(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "transpose")
    (a,) = ts
    perm = permutation(attrs.get("axes"), a.ndim)
    return (_nd(a, [a.shape[p] for p in perm]),)


# ---- reshape ---------------------------------------------------------------------------


def reshape(a, shape):  # noqa: ANN001, ANN201 - the public signature
    """Same elements in a new shape; one dim may be -1 (inferred)."""
    return np.reshape(a, axis_arg(shape))


def reshaped(in_shape: Sequence[Dim], target: Sequence[Dim]) -> tuple[Dim, ...]:
    """The shape `in_shape` becomes when reshaped to `target` (with at most one -1)."""
    holes = [i for i, d in enumerate(target) if isinstance(d, int) and d == -1]
    if len(holes) > 1:
        raise InferError(f"can only specify one unknown dimension (-1), got {fmt_shape(target)}")
    bad = [d for d in target if isinstance(d, int) and d < -1]
    if bad:
        raise InferError(f"negative dimension {bad[0]} in {fmt_shape(target)}")
    known = [d for d in target if not (isinstance(d, int) and d == -1)]
    total_static, total_syms = shape_factors(in_shape)
    known_static, known_syms = shape_factors(known)
    what = f"cannot reshape a tensor of shape {fmt_shape(in_shape)} into shape {fmt_shape(target)}"
    # cancel symbolic factors that appear on both sides
    rest = list(total_syms)
    unmatched = []
    for s in known_syms:
        if s in rest:
            rest.remove(s)
        else:
            unmatched.append(s)
    if not holes:
        if not rest and not unmatched and total_static != known_static:
            n_in = static_prod(in_shape)
            raise InferError(what + (f" ({n_in} elements)" if n_in is not None else ""))
        return tuple(target)
    if known_static == 0:
        raise InferError(what + ": the unknown dimension is ambiguous with a 0 in the shape")
    if unmatched:
        # a name on the target side only: the size is a quotient evaluated at launch
        hole: Dim = product_dim(total_static, total_syms) // product_dim(known_static, known_syms)
    elif total_static % known_static == 0:
        hole = product_dim(total_static // known_static, rest)
    elif rest:
        hole = product_dim(total_static, rest) // known_static
    else:
        raise InferError(what + f" ({total_static} elements)")
    out = list(target)
    out[holes[0]] = hole
    return tuple(out)


def _infer_reshape(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "reshape")
    (a,) = ts
    if "shape" not in attrs:
        raise InferError("missing attribute 'shape'")
    return (_nd(a, reshaped(a.shape, attr_shape(attrs["shape"], "reshape"))),)


# ---- broadcast_to / expand_dims / squeeze ----------------------------------------------


def broadcast_to(array, shape):  # noqa: ANN001, ANN201 - the public signature (numpy's parameter names)
    """`array` broadcast to `shape` (numpy rules)."""
    return np.broadcast_to(array, axis_arg(shape))


def _infer_broadcast_to(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "broadcast_to")
    (a,) = ts
    if "shape" not in attrs:
        raise InferError("missing attribute 'shape'")
    shape = attr_shape(attrs["shape"], "broadcast_to")
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise InferError(f"negative dimension in target shape {fmt_shape(shape)}")
    if not broadcasts_to(a.shape, shape):
        raise InferError(f"cannot broadcast shape {fmt_shape(a.shape)} to {fmt_shape(shape)}")
    return (_nd(a, shape),)


def expand_dims(a, axis):  # noqa: ANN001, ANN201 - the public signature
    """Insert size-1 axes at `axis` (an int or a tuple; positions in the result)."""
    return np.expand_dims(a, axis_arg(axis))


def _infer_expand_dims(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "expand_dims")
    (a,) = ts
    axis = attrs.get("axis")
    if axis is None:
        raise InferError("axis is required (an int or a tuple of ints)")
    n_new = 1 if isinstance(axis, (int, np.integer)) else len(axis) if isinstance(axis, (tuple, list)) else 1
    out_ndim = a.ndim + n_new
    axes = normalize_axis(axis, out_ndim)
    dims = iter(a.shape)
    return (_nd(a, [1 if i in axes else next(dims) for i in range(out_ndim)]),)


def squeeze(a, axis=None):  # noqa: ANN001, ANN201 - the public signature
    """Remove size-1 axes (`axis`: which ones; None: every static size-1 axis)."""
    return np.squeeze(a, axis_arg(axis))


def _infer_squeeze(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "squeeze")
    (a,) = ts
    axis = attrs.get("axis")
    if axis is None:
        # a symbolic dim is kept: under dynamic=True only a static 1 is known to be 1
        return (_nd(a, [d for d in a.shape if d != 1]),)
    axes = normalize_axis(axis, a.ndim)
    for i in axes:
        if a.ndim and a.shape[i] != 1:
            size = f"symbolic size {a.shape[i]}" if isinstance(a.shape[i], Sym) else f"size {a.shape[i]}"
            raise InferError(f"cannot squeeze axis {i} of shape {fmt_shape(a.shape)}: it has {size}, not 1")
    return (_nd(a, [d for i, d in enumerate(a.shape) if i not in axes]),)


# ---- slice (internal) ----------------------------------------------------------------------


def _slice_eager(x: Any, *, starts: Sequence[Any], stops: Sequence[Any], steps: Sequence[int]) -> Any:
    """x[start:stop:step, ...] with normalised bounds (a negative bound means "before index 0")."""
    return np.asarray(x)[slice_index(starts, stops, steps)]


def slice_index(starts: Sequence[Any], stops: Sequence[Any], steps: Sequence[int]) -> tuple[slice, ...]:
    """The numpy index of slice's (normalised) attributes; slice_update writes through the same one."""
    index = []
    for start, stop, step in zip(starts, stops, steps):
        if start is not None and start < 0:  # only an empty range normalises to start -1
            index.append(slice(0, 0))
            continue
        index.append(slice(start, None if stop is None or stop < 0 else stop, step))
    return tuple(index)


def slice_length(start: int, stop: int, step: int, size: int, axis: int) -> int:
    """Length of a normalised slice of an axis of `size` (as `slice.indices` returns bounds)."""
    if step > 0:
        ok = 0 <= start <= size and 0 <= stop <= size
    else:
        ok = -1 <= start <= size - 1 and -1 <= stop <= size - 1
    if not ok:
        raise InferError(
            f"axis {axis}: bounds start={start}, stop={stop}, step={step} are not normalised for size {size} "
            "(use slice(start, stop, step).indices(size))"
        )
    return len(range(start, stop, step))


def _infer_slice(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "slice")
    (a,) = ts
    try:
        starts, stops, steps = (tuple(attrs[k]) for k in ("starts", "stops", "steps"))
    except KeyError as e:
        raise InferError(f"missing attribute {e.args[0]!r}") from None
    if not len(starts) == len(stops) == len(steps) == a.ndim:
        raise InferError(
            f"starts, stops and steps need one entry per axis of shape {fmt_shape(a.shape)}, "
            f"got {len(starts)}, {len(stops)} and {len(steps)}")
    out: list[Dim] = []
    for axis, (dim, start, stop, step) in enumerate(zip(a.shape, starts, stops, steps)):
        if not isinstance(step, (int, np.integer)) or step == 0:
            raise InferError(f"axis {axis}: step must be a non-zero int, got {step!r}")
        for bound in (start, stop):
            if bound is not None and (not isinstance(bound, (int, np.integer, Sym)) or isinstance(bound, bool)):
                raise InferError(f"axis {axis}: bounds must be ints, dims or None, got start={start!r}, stop={stop!r}")
        if isinstance(dim, Sym) or isinstance(start, Sym) or isinstance(stop, Sym):
            if step == 1 and start in (0, None) and stop is None:
                out.append(dim)
            elif step == 1 and start is not None and stop is not None and stop - start == 1:
                out.append(1)  # an integer index; the launch re-infers with sizes and checks it is in bounds
            else:
                out.append(symbolic_length(start, stop, int(step), dim))
            continue
        if step == 1 and stop is not None and start is not None and stop == start + 1 and not 0 <= start < dim:
            # an integer index (x[i], x[-i]) that the launch sizes put out of range
            shown = start - dim if start < 0 else start
            raise InferError(f"index {shown} is out of bounds for axis {axis} with size {dim}")
        start = (0 if step > 0 else dim - 1) if start is None else start
        stop = (dim if step > 0 else -1) if stop is None else stop
        out.append(slice_length(int(start), int(stop), int(step), dim, axis))
    return (_nd(a, out),)


def symbolic_indices(k: slice, dim: Dim) -> tuple[Dim, Dim, int]:
    """`slice.indices(dim)` for a symbolic `dim`: bounds as dim expressions (Python's clamping rules)."""
    step = 1 if k.step is None else int(k.step)

    def bound(b: Dim | None, default: Dim) -> Dim:
        if b is None:
            return default
        if isinstance(b, Sym):  # proven non-negative by the caller: only the upper clamp applies
            return dim_min(b, dim) if step > 0 else dim_min(b, dim - 1)
        b = int(b)
        if step > 0:  # clamp into [0, dim]
            return dim_max(dim + b, 0) if b < 0 else dim_min(b, dim)
        return dim_max(dim + b, -1) if b < 0 else dim_min(b, dim - 1)  # into [-1, dim - 1]

    if step > 0:
        return bound(k.start, 0), bound(k.stop, dim), step
    return bound(k.start, dim - 1), bound(k.stop, -1), step


def symbolic_length(start: Dim | None, stop: Dim | None, step: int, dim: Dim) -> Dim:
    """len(range(start, stop, step)) of normalised, possibly symbolic bounds."""
    if step > 0:
        start = 0 if start is None else start
        stop = dim if stop is None else stop
        return dim_max(ceildiv(dim_sub(stop, start), step), 0)
    start = dim - 1 if start is None else start
    stop = -1 if stop is None else stop
    return dim_max(ceildiv(dim_sub(start, stop), -step), 0)


@dataclass(frozen=True)
class IndexPlan:
    """How a basic-indexing subscript becomes ops: slice, then squeeze, then expand_dims.

    `starts/stops/steps` are slice's attributes (one per input axis);
    `squeeze_axes` are the int-indexed axes to drop from the slice result;
    `new_axes` are the positions of `None` (np.newaxis) in the final result.
    """

    starts: tuple[Any, ...]
    stops: tuple[Any, ...]
    steps: tuple[int, ...]
    squeeze_axes: tuple[int, ...]
    new_axes: tuple[int, ...]
    full: bool  # the slice selects everything (it may be skipped)

    @property
    def slice_attrs(self) -> dict[str, tuple[Any, ...]]:
        return {"starts": self.starts, "stops": self.stops, "steps": self.steps}


def normalize_index(shape: Sequence[Dim], key: Any) -> IndexPlan:
    """Plan `x[key]` for basic indexing: ints, slices with int/None bounds, None, Ellipsis.

    Raises InferError for anything else (a tensor index, out-of-range ints, ...).
    """
    items = key if isinstance(key, tuple) else (key,)
    n_ellipsis = sum(1 for k in items if k is Ellipsis)
    if n_ellipsis > 1:
        raise InferError("an index can only have a single ellipsis (...)")
    for k in items:
        ok = k is None or k is Ellipsis or isinstance(k, slice) or (
            isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
        if not ok:
            raise InferError(
                f"only integers, slices (:), None and ... are valid indices, got {type(k).__name__} {k!r}"
                " (for a tensor condition use pyasc.where)")
    n_real = sum(1 for k in items if k is not None and k is not Ellipsis)
    ndim = len(shape)
    if n_real > ndim:
        raise InferError(f"too many indices for a tensor of shape {fmt_shape(shape)}: {n_real} were given")
    expanded: list[Any] = []
    for k in items:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (ndim - n_real))
        else:
            expanded.append(k)
    if n_ellipsis == 0:
        expanded.extend([slice(None)] * (ndim - n_real))

    starts: list[Any] = []
    stops: list[Any] = []
    steps: list[int] = []
    squeeze_axes: list[int] = []
    new_axes: list[int] = []
    out_pos = 0
    axis = 0
    for k in expanded:
        if k is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        dim = shape[axis]
        if isinstance(k, slice):
            for bound in (k.start, k.stop, k.step):
                if bound is not None and (not isinstance(bound, (int, np.integer, Sym)) or isinstance(bound, bool)):
                    raise InferError(f"slice bounds must be ints, dims or None, got {k}")
            if isinstance(k.step, Sym):
                raise InferError(f"a slice step must be a compile-time int, got the symbolic dim {k.step}")
            if k.step == 0:
                raise InferError("slice step cannot be zero")
            for bound in (k.start, k.stop):
                if isinstance(bound, Sym) and (lower_bound(bound.e) is None or lower_bound(bound.e) < 0):
                    raise InferError(f"the slice bound {bound} may be negative at launch; a symbolic bound must be "
                                     f"a size or a sum of sizes, got {k}")
            if isinstance(dim, Sym) or isinstance(k.start, Sym) or isinstance(k.stop, Sym):
                if k.start in (None, 0) and k.stop is None and k.step in (None, 1):
                    start, stop, step = 0, None, 1
                else:
                    start, stop, step = symbolic_indices(k, dim)
            else:
                start, stop, step = slice(k.start, k.stop, k.step).indices(dim)
            out_pos += 1
        else:
            i = int(k)
            if isinstance(dim, Sym):
                if i < 0:
                    i = dim + i  # counted from the end; the launch checks dim >= -i
            elif not -dim <= i < dim:
                raise InferError(f"index {i} is out of bounds for axis {axis} with size {dim}")
            else:
                i %= dim
            start, stop, step = i, i + 1, 1
            squeeze_axes.append(axis)
        starts.append(start)
        stops.append(stop)
        steps.append(step)
        axis += 1
    full = all(
        st == 1 and s == 0 and (e is None or e == d) for s, e, st, d in zip(starts, stops, steps, shape)
    )
    return IndexPlan(tuple(starts), tuple(stops), tuple(steps), tuple(squeeze_axes), tuple(new_axes), full)


# ---- transdata (internal) ------------------------------------------------------------------


def _transdata_eager(x: Any, *, src_format: str = "ND", dst_format: str = "ND") -> Any:
    return x  # logical values are unchanged; only the storage format differs


def _infer_transdata(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 1, "transdata")
    (a,) = ts
    src, dst = attrs.get("src_format", "ND"), attrs.get("dst_format", "ND")
    for what, fmt in (("src_format", src), ("dst_format", dst)):
        if fmt not in FORMATS:
            raise InferError(f"unknown {what} {fmt!r}; known formats are {', '.join(FORMATS)}")
    if a.format != src:
        raise InferError(f"input {a} has format {a.format}, but src_format is {src}")
    if dst == "NC1HWC0" and a.ndim != 4:
        raise InferError(f"NC1HWC0 needs a 4-D (N, C, H, W) tensor, got shape {fmt_shape(a.shape)}")
    if dst == "FRACTAL_NZ" and a.ndim < 1:
        raise InferError("FRACTAL_NZ needs a tensor of rank 1 or more, got a 0-d tensor")
    return (a.with_format(dst),)


# ---- registration --------------------------------------------------------------------------

for _name, _infer, _fn, _cat, _np in (
    ("transpose", _infer_transpose, transpose, Category.INJECTIVE, ("transpose", "permute_dims")),
    ("reshape", _infer_reshape, reshape, Category.INJECTIVE, ("reshape",)),
    ("squeeze", _infer_squeeze, squeeze, Category.INJECTIVE, ("squeeze",)),
    ("broadcast_to", _infer_broadcast_to, broadcast_to, Category.BROADCAST, ("broadcast_to",)),
    ("expand_dims", _infer_expand_dims, expand_dims, Category.BROADCAST, ("expand_dims",)),
):
    _params = ("array",) if _name == "broadcast_to" else ("a",)
    register(OpDef(_name, _cat, named(_name, _infer), _fn, api=_fn, tensor_params=_params,
                   numpy_names=_np, doc=_fn.__doc__ or "", strided_view=True))

register(OpDef("slice", Category.INJECTIVE, named("slice", _infer_slice), _slice_eager,
               doc="x[starts:stops:steps] per axis, normalised bounds (internal: built from subscripts)",
               strided_view=True))
register(OpDef("transdata", Category.INJECTIVE, named("transdata", _infer_transdata), _transdata_eager,
               doc="change the storage format (src_format -> dst_format); values unchanged (internal)",
               other_formats=ANY_FORMAT))  # it converts from any format
