"""Reductions along axes: sum, max, min, mean (attrs axis=None|int|tuple, keepdims=False).

Result dtypes are numpy's, narrowed: sum of integers/bool accumulates in
int32 (numpy: int64/uint64), mean of integers/bool is float32 (numpy:
float64), max/min keep the dtype, floats keep their dtype.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .common import FLOATS, arity, attr_bool, fmt_shape, named, normalize_axis
from .registry import Category, OpDef, register


def axis_arg(axis: Any) -> Any:
    """An axis attribute as numpy takes it (a serialised graph may hold a list)."""
    return tuple(axis) if isinstance(axis, list) else axis


def reduce_axes(attrs: Mapping[str, Any], ndim: int) -> tuple[int, ...]:
    """The axes sum/max/min/mean reduce: attribute `axis` (None: all of them)."""
    return normalize_axis(axis_arg(attrs.get("axis")), ndim)


def reduced_shape(shape: Sequence[Any], axes: Sequence[int], keepdims: bool) -> tuple[Any, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce_infer(name: str, dtype_rule: Callable[[str], str], has_identity: bool):
    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        arity(ts, 1, name)
        (a,) = ts
        axes = normalize_axis(attrs.get("axis"), a.ndim)
        keep = attr_bool(attrs, "keepdims", False, name)
        if not has_identity and any(a.shape[i] == 0 for i in axes if a.ndim):
            raise InferError(f"cannot reduce shape {fmt_shape(a.shape)} over axis {axes} of size 0: "
                             f"{name} has no identity")
        return (TensorType(reduced_shape(a.shape, axes, keep), dtype_rule(a.dtype)),)

    return named(name, infer)


def _keep(dt: str) -> str:
    return dt


def _sum_dtype(dt: str) -> str:
    return dt if dt in FLOATS else "int32"


def _mean_dtype(dt: str) -> str:
    return dt if dt in FLOATS else "float32"


def sum(a, axis=None, *, keepdims=False):  # noqa: A001, ANN001, ANN201 - mirrors numpy's name
    """Sum over `axis` (None: all axes)."""
    return np.sum(a, axis=axis_arg(axis), keepdims=keepdims)


def max(a, axis=None, *, keepdims=False):  # noqa: A001, ANN001, ANN201
    """Maximum over `axis` (None: all axes); NaN propagates."""
    return np.max(a, axis=axis_arg(axis), keepdims=keepdims)


def min(a, axis=None, *, keepdims=False):  # noqa: A001, ANN001, ANN201
    """Minimum over `axis` (None: all axes); NaN propagates."""
    return np.min(a, axis=axis_arg(axis), keepdims=keepdims)


def mean(a, axis=None, *, keepdims=False):  # noqa: ANN001, ANN201
    """Arithmetic mean over `axis` (None: all axes); integers give a float."""
    return np.mean(a, axis=axis_arg(axis), keepdims=keepdims)


for _fn, _rule, _identity, _np_names in (
    (sum, _sum_dtype, True, ("sum",)),
    (max, _keep, False, ("max", "amax")),
    (min, _keep, False, ("min", "amin")),
    (mean, _mean_dtype, True, ("mean",)),
):
    register(OpDef(_fn.__name__, Category.REDUCE, _reduce_infer(_fn.__name__, _rule, _identity), _fn, api=_fn,
                   tensor_params=("a",), expensive=True, numpy_names=_np_names, doc=_fn.__doc__ or "",
                   reduce_axes=reduce_axes))
