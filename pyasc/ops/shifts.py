"""Shifts and differences: roll and diff (numpy's), as slices joined or subtracted.

roll(a, shift, axis=None): per (shift, axis) pair, the last `shift % n` entries of the axis joined before the
  rest (joining.join); axis=None rolls the flattened tensor and restores the shape. Shifts and axes are
  compile-time ints (tuples broadcast against each other, as numpy's); the rolled axes need static sizes.
diff(a, n=1, axis=-1, prepend=None, append=None): n times a[1:] - a[:-1] along the axis (bool: `!=`, as
  numpy's); prepend/append values (scalars or arrays) are joined on first. n=0 returns `a` unchanged.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InferError
from .builder import Builder
from .common import normalize_axis, require_static_axis
from .joining import join, slice_axis
from .numpy_composite import numpy_composite
from .registry import Category


def _ints(v: Any, what: str) -> tuple[int, ...]:
    vals = (v,) if isinstance(v, (int, np.integer)) else v
    if not isinstance(vals, (tuple, list)) or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in vals):
        raise InferError(f"roll: {what} must be a compile-time int or tuple of ints, got {v!r}")
    return tuple(int(s) for s in vals)


# ---- roll --------------------------------------------------------------------------------------


def _roll(b: Builder, a: Any, *, shift: Any, axis: Any = None) -> list[Any]:
    shape = tuple(b.shape(a))
    if axis is None:
        shifts = _ints(shift, "shift")
        if len(shifts) != 1:
            raise InferError(f"roll: with axis=None, shift must be one int, got {shift!r}")
        flat = b.op("reshape", a, shape=(-1,))
        return [b.op("reshape", _roll(b, flat, shift=shifts[0], axis=0)[0], shape=shape)]
    shifts, axes = _ints(shift, "shift"), _ints(axis, "axis")
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise InferError(f"roll: shift {shift!r} and axis {axis!r} have different lengths")
    pairs = zip(shifts * (len(axes) if len(shifts) == 1 else 1), axes * (len(shifts) if len(axes) == 1 else 1))
    total: dict[int, int] = {}
    for s, ax in pairs:  # numpy adds the shifts of a repeated axis
        ax = normalize_axis(ax, len(shape))[0]
        total[ax] = total.get(ax, 0) + s
    x = a
    for ax, s in total.items():
        n = require_static_axis("roll", b.shape(x), ax)
        k = s % n if n else 0
        if k:
            x = join(b, [slice_axis(b, x, ax, n - k, n), slice_axis(b, x, ax, 0, n - k)], ax)
    return [x]


def roll(a, shift, axis=None):  # noqa: ANN001, ANN201 - the public signature
    """Elements shifted by `shift` along `axis` (None: of the flattened tensor), wrapping around."""
    return np.roll(a, shift, axis=axis)


def _eager_roll(a: Any, *, shift: Any, axis: Any = None) -> Any:
    return np.roll(a, shift, axis=axis)


numpy_composite("roll", _roll, roll, _eager_roll, category=Category.INJECTIVE, tensor_params=("a",),
                numpy_names=("roll",), expensive=False)


# ---- diff --------------------------------------------------------------------------------------


def _edge(b: Builder, a: Any, v: Any, ax: int, dtype: str) -> Any:
    """A prepend/append value in `dtype`: a scalar broadcast to a's shape with size 1 along `ax` (as numpy's)."""
    v = v if b.dtype(v) == dtype else b.op("cast", v, dtype=dtype)
    if len(b.shape(v)) == 0:
        return b.op("broadcast_to", v, shape=tuple(1 if i == ax else n for i, n in enumerate(b.shape(a))))
    return v


def _diff(b: Builder, a: Any, prepend: Any = None, append: Any = None, *, n: Any = 1, axis: Any = -1) -> list[Any]:
    if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)) or n < 0:
        raise InferError(f"diff: order n must be a non-negative compile-time int, got {n!r}")
    if len(b.shape(a)) == 0:
        raise InferError("diff requires input that is at least one dimensional")
    ax = normalize_axis(axis, len(b.shape(a)))[0]
    if n == 0:
        return [a]
    x = a
    edges = [v for v in (prepend, append) if v is not None]
    if edges:
        dt = b.result_type(b.dtype(a), *(b.dtype(v) for v in edges))  # numpy joins them in the common dtype
        x = join(b, ([_edge(b, a, prepend, ax, dt)] if prepend is not None else [])
                 + [a if b.dtype(a) == dt else b.op("cast", a, dtype=dt)]
                 + ([_edge(b, a, append, ax, dt)] if append is not None else []), ax)
    op = "ne" if b.dtype(x) == "bool" else "sub"
    for _ in range(int(n)):
        size = require_static_axis("diff", b.shape(x), ax)
        if size == 0:
            break
        x = b.op(op, slice_axis(b, x, ax, 1, size), slice_axis(b, x, ax, 0, size - 1))
    return [x]


def diff(a, n=1, axis=-1, prepend=None, append=None):  # noqa: ANN001, ANN201 - the public signature
    """The n-th discrete difference along `axis`: out[i] = a[i + 1] - a[i], n times (bool: a[i + 1] != a[i])."""
    return np.diff(a, n=n, axis=axis, **({} if prepend is None else {"prepend": prepend}),
                   **({} if append is None else {"append": append}))


def _eager_diff(a: Any, *edges: Any, n: Any = 1, axis: Any = -1, has_prepend: bool = False,
                has_append: bool = False) -> Any:
    rest = list(edges)
    prepend = rest.pop(0) if has_prepend else None
    return diff(a, n, axis, prepend, rest.pop(0) if has_append else None)


numpy_composite("diff", _diff, diff, _eager_diff, category=Category.INJECTIVE, tensor_params=("a", "prepend", "append"),
                optional=("prepend", "append"), numpy_names=("diff",), expensive=False)
