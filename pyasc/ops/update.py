"""slice_update: a functional slice write, `out = x.copy(); out[region] = v` (internal).

numpy's slice assignment and in-place operators through views change an
array in place; a kernel's tensors are values, so the frontend turns every
such write into this op: the whole of `x`, with the elements a static basic
slice selects replaced by `v`. The region is described exactly like
`slice`'s attributes (`starts`, `stops`, `steps`, one per axis, normalised
like `slice.indices`), so `slice(slice_update(x, v, r), r) == v` and the
frontend can build the write from the same index plan as the read. `v` has
the region's shape and `x`'s dtype (the frontend casts and broadcasts it
first, as numpy's assignment does).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .common import arity, fmt_shape, named
from .registry import Category, OpDef, register
from .shape import _infer_slice, slice_index


def _slice_update_eager(x: Any, v: Any, *, starts: Sequence[Any], stops: Sequence[Any],
                        steps: Sequence[int]) -> Any:
    out = np.array(x, copy=True)
    out[slice_index(starts, stops, steps)] = v
    return out


def _infer_slice_update(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 2, "slice_update")
    x, v = ts
    (region,) = _infer_slice([x], attrs)
    if tuple(v.shape) != tuple(region.shape):
        raise InferError(f"the value has shape {fmt_shape(v.shape)}, but the region "
                         f"{list(zip(attrs['starts'], attrs['stops'], attrs['steps']))} of {fmt_shape(x.shape)} "
                         f"has shape {fmt_shape(region.shape)}")
    if v.dtype != x.dtype:
        raise InferError(f"the value is {v.dtype}, the tensor written into is {x.dtype}")
    return (TensorType(tuple(x.shape), x.dtype),)


register(OpDef("slice_update", Category.INJECTIVE, named("slice_update", _infer_slice_update),
               _slice_update_eager,
               doc="x with x[starts:stops:steps] replaced by v (internal: built from slice writes)"))
