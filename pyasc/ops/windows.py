"""Sliding windows: np.lib.stride_tricks.sliding_window_view, as a stack of shifted slices.

sliding_window_view(x, window_shape, axis=None): numpy's read-only strided view, here a new array of the
same values: for each windowed axis a (of window size w) the axis shrinks to n - w + 1 and a window axis of
size w is appended, out[..., i, ..., k] = x[..., i + k, ...]. Several axes (axis=None: all of them, in order)
are windowed one after another, each appending its window axis, so a repeated axis sees the already shrunk
one, as numpy's does. Each window axis is w slices stacked: meant for small windows (a 3x3 stencil, a
moving average), not for a window the size of the array. Any dtype; windowed axes need static sizes.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import fmt_shape, normalize_axis
from .numpy_composite import numpy_composite
from .registry import Category


def _windows(window_shape: Any, axis: Any, ndim: int) -> list[tuple[int, int]]:
    """(axis, window size) pairs in numpy's order; InferError with numpy's words when they do not match."""
    shape = tuple(window_shape) if np.iterable(window_shape) else (window_shape,)
    if any(isinstance(w, bool) or not isinstance(w, (int, np.integer)) for w in shape):
        raise InferError(f"window_shape must be an int or a tuple of ints, got {window_shape!r}")
    if any(w < 0 for w in shape):
        raise InferError("`window_shape` cannot contain negative values")
    if axis is None:
        if len(shape) != ndim:
            raise InferError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; got "
                             f"{len(shape)} window_shape elements and `x.ndim` is {ndim}.")
        axes: tuple[int, ...] = tuple(range(ndim))
    else:
        axes = tuple(axis) if np.iterable(axis) else (axis,)
        axes = tuple(normalize_axis(a, ndim)[0] for a in axes)  # (a repeated axis is numpy's too)
        if len(shape) != len(axes):
            raise InferError(f"Must provide matching length window_shape and axis; got {len(shape)} "
                             f"window_shape elements and {len(axes)} axes elements.")
    return [(a, int(w)) for a, w in zip(axes, shape)]


def _window(b: Builder, x: Any, axis: int, w: int) -> Any:
    """x with `axis` shrunk to n - w + 1 and a last axis of size w: the w shifted slices stacked."""
    shape = b.shape(x)
    keep = shape[axis] - w + 1
    parts = []
    for k in range(w):
        starts = tuple(k if i == axis else 0 for i in range(len(shape)))
        stops = tuple(k + keep if i == axis else d for i, d in enumerate(shape))
        parts.append(b.op("slice", x, starts=starts, stops=stops, steps=(1,) * len(shape)))
    return b.op("concat", *parts, axis=-1, kind="stack")


def _sliding_window_view(b: Builder, x: Any, *, window_shape: Any, axis: Any = None, subok: Any = False,
                         writeable: Any = False) -> list[Any]:
    for a, w in _windows(window_shape, axis, len(b.shape(x))):
        x = _window(b, x, a, w)
    return [x]


def _check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    (x,) = ts
    if attrs.get("writeable"):
        raise InferError("writeable=True asks for a view to write through, which a kernel's arrays are not; "
                         "write into x itself")
    sizes = list(x.shape)
    for a, w in _windows(attrs.get("window_shape"), attrs.get("axis"), x.ndim):
        if isinstance(sizes[a], Sym):
            raise InferError(f"axis {a} of shape {fmt_shape(x.shape)} has a size only known at launch; "
                             "sliding_window_view needs a static size")
        if sizes[a] < w:
            raise InferError("window shape cannot be larger than input array shape")
        sizes[a] -= w - 1


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):  # noqa: ANN001, ANN201
    """The windows of `window_shape` sliding over `x` along `axis` (None: all axes), each a new trailing
    axis (numpy's read-only view; here a new array of the same values)."""
    return np.lib.stride_tricks.sliding_window_view(x, window_shape, axis, subok=subok, writeable=writeable)


numpy_composite("sliding_window_view", _sliding_window_view, sliding_window_view,
                lambda x, window_shape, axis=None, **_: np.lib.stride_tricks.sliding_window_view(
                    x, window_shape, axis).copy(),
                category=Category.INJECTIVE, numpy_names=("lib.stride_tricks.sliding_window_view",),
                check=_check, expensive=False)
