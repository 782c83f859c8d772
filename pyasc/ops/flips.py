"""Reversals: np.flip, np.fliplr, np.flipud, as one `slice` of step -1 on the reversed axes.

flip(m, axis=None): every axis reversed (None), or the given int / tuple of ints; fliplr reverses axis 1
(m at least 2-d), flipud axis 0 (m at least 1-d). Any dtype; sizes may be known only at launch.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import normalize_axis
from .numpy_composite import numpy_composite
from .registry import Category
from .shape import normalize_index


def reversed_axes(b: Builder, m: Any, axes: Sequence[int]) -> Any:
    """m with `axes` reversed (shared with correlate)."""
    if not axes:
        return m
    shape = b.shape(m)
    plan = normalize_index(shape, tuple(slice(None, None, -1 if i in axes else 1) for i in range(len(shape))))
    return b.op("slice", m, **plan.slice_attrs)  # x[::-1] as the frontend indexes it


def _flip(b: Builder, m: Any, *, axis: Any = None) -> list[Any]:
    return [reversed_axes(b, m, normalize_axis(axis, len(b.shape(m))) if b.shape(m) else ())]


def _fliplr(b: Builder, m: Any) -> list[Any]:
    return [reversed_axes(b, m, (1,))]


def _flipud(b: Builder, m: Any) -> list[Any]:
    return [reversed_axes(b, m, (0,))]


def _check_rank(least: int):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        if ts[0].ndim < least:
            raise InferError(f"Input must be >= {least}-d.")
    return check


def _check_flip(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    axis = attrs.get("axis")
    if ts[0].ndim == 0 and axis is not None:
        raise InferError(f"axis {axis} is out of bounds for array of dimension 0")
    normalize_axis(axis, ts[0].ndim)


def flip(m, axis=None):  # noqa: ANN001, ANN201 - the public signature
    """The order of elements reversed along `axis` (None: along every axis)."""
    return np.flip(m, axis=axis)


def fliplr(m):  # noqa: ANN001, ANN201
    """Columns reversed (axis 1)."""
    return np.fliplr(m)


def flipud(m):  # noqa: ANN001, ANN201
    """Rows reversed (axis 0)."""
    return np.flipud(m)


numpy_composite("flip", _flip, flip, lambda m, **k: np.flip(m, **k), category=Category.INJECTIVE,
                tensor_params=("m",), numpy_names=("flip",), check=_check_flip, expensive=False)
numpy_composite("fliplr", _fliplr, fliplr, np.fliplr, category=Category.INJECTIVE, tensor_params=("m",),
                numpy_names=("fliplr",), check=_check_rank(2), expensive=False)
numpy_composite("flipud", _flipud, flipud, np.flipud, category=Category.INJECTIVE, tensor_params=("m",),
                numpy_names=("flipud",), check=_check_rank(1), expensive=False)
