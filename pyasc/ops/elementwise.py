"""Elementwise ops: binary arithmetic/comparison/bitwise and unary math.

(Seed: the ops helper completes the full set from DESIGN.md section 1.)
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..ir.types import TensorType
from .common import NUMERIC, FLOATS, broadcast_shapes, require_dtype
from .registry import Category, OpDef, register


def _binary_infer(op: str, allowed: Sequence[str] = dtypes.NAMES, result: str | None = None):
    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        a, b = ts
        for t in ts:
            require_dtype(t, allowed, op)
        shape = broadcast_shapes(a.shape, b.shape)
        return (TensorType(shape, result or dtypes.promote(a.dtype, b.dtype)),)

    return infer


def _binary(name: str, np_fn, numpy_names=(), allowed=dtypes.NAMES, result=None, expensive=False):
    def api(x1, x2):
        ...

    api.__name__ = name
    register(
        OpDef(
            name,
            Category.BROADCAST,
            _binary_infer(name, allowed, result),
            lambda a, b: np_fn(a, b),
            api=api,
            tensor_params=("x1", "x2"),
            expensive=expensive,
            numpy_names=numpy_names,
        )
    )


def _unary(name: str, np_fn, numpy_names=(), allowed=dtypes.NAMES, expensive=False):
    def api(x):
        ...

    api.__name__ = name

    def infer(ts, attrs):
        (a,) = ts
        require_dtype(a, allowed, name)
        return (a.with_format("ND"),)

    register(OpDef(name, Category.ELEMWISE, infer, np_fn, api=api, tensor_params=("x",),
                   expensive=expensive, numpy_names=numpy_names))


_binary("add", np.add, ("add",))
_binary("mul", np.multiply, ("multiply",))
_unary("relu", lambda x: np.maximum(x, np.zeros((), x.dtype)), (), NUMERIC)
_unary("exp", np.exp, ("exp",), FLOATS, expensive=True)
