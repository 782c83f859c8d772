"""Reductions along axes (seed: the ops helper completes it)."""
from __future__ import annotations

import numpy as np

from ..ir.types import TensorType
from .common import NUMERIC, normalize_axis, require_dtype
from .registry import Category, OpDef, register


def _reduce_infer(name):
    def infer(ts, attrs):
        (a,) = ts
        require_dtype(a, NUMERIC, name)
        axes = normalize_axis(attrs.get("axis"), a.ndim)
        keep = bool(attrs.get("keepdims", False))
        shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape)) if keep else tuple(
            d for i, d in enumerate(a.shape) if i not in axes)
        return (TensorType(shape, a.dtype),)
    return infer


def sum(x, axis=None, keepdims=False):  # noqa: A001 - mirrors numpy's name
    ...


register(OpDef("sum", Category.REDUCE, _reduce_infer("sum"),
               lambda x, axis=None, keepdims=False: np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype),
               api=sum, tensor_params=("x",), expensive=True, numpy_names=("sum",)))
