"""np.linspace with run-time ends: `np.linspace(0, r.max(), 20)`. With compile-time ends np.linspace runs at
compile time (constructors.py); with a tensor start or stop the frontend builds the internal op
`linspace_between(start, stop)` (attrs num, endpoint, dtype, axis), numpy's own formula:
  div = num - 1 if endpoint else num;  y = iota * ((stop - start) / div) + start  (iota * (stop - start) when
  div is 0);  the last sample is stop itself when endpoint and num > 1;
the samples run along a new axis 0 of the broadcast shape of start and stop, moved to `axis`; an integer dtype
takes the floor, as numpy's. Computed in float32 (numpy: float64); float16 ends stay float16 like numpy's
result_type(start, stop, float(num)) narrowed.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder, decompose_of, types_of
from .common import broadcast_shapes, named, normalize_axis
from .registry import Category, OpDef, register


def _linspace_between(b: Builder, start: Any, stop: Any, *, num: int, endpoint: bool = True, dtype: Any = None,
                      axis: int = 0) -> list[Any]:
    dt = b.float_dtype(b.result_type(b.dtype(start), b.dtype(stop)))
    shape = tuple(broadcast_shapes(tuple(b.shape(start)), tuple(b.shape(stop))))
    start, stop = (b.op("broadcast_to", b.cast(v, dt), shape=shape) for v in (start, stop))
    div = num - 1 if endpoint else num
    iota = b.array(np.arange(num, dtype=dtypes.to_numpy(dt)).reshape((num,) + (1,) * len(shape)))
    delta = b.op("sub", stop, start)
    step = b.op("div", delta, b.const(div, dt)) if div > 0 else delta
    y = b.op("add", b.op("mul", iota, step), start)
    if endpoint and num > 1:
        last = b.array((np.arange(num) == num - 1).reshape((num,) + (1,) * len(shape)))
        y = b.op("where", last, stop, y)
    if axis != 0:
        y = b.op("moveaxis", y, source=0, destination=axis)
    if dtype is not None and dtype != dt:
        y = b.cast(b.op("floor", y) if dtypes.is_int(dtype) else y, dtype)
    return [y]


def _infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if len(ts) != 2:
        raise InferError(f"linspace_between takes start and stop, got {len(ts)} operands")
    num = attrs.get("num")
    if isinstance(num, bool) or not isinstance(num, (int, np.integer)):
        raise InferError(f"num must be an int known at compile time, got {num!r}")
    if num < 0:
        raise InferError(f"Number of samples, {num}, must be non-negative.")
    nd = len(broadcast_shapes(tuple(ts[0].shape), tuple(ts[1].shape))) + 1
    normalize_axis(attrs.get("axis", 0), nd)
    return tuple(types_of(_linspace_between, ts, dict(attrs)))


def _eager(start: Any, stop: Any, *, num: int, endpoint: bool = True, dtype: Any = None, axis: int = 0) -> Any:
    dt = dtypes.to_numpy(dtypes.narrow(np.result_type(start, stop, float(num))))
    y = np.linspace(np.asarray(start, dt), np.asarray(stop, dt), num, endpoint=endpoint, axis=axis).astype(dt)
    return y if dtype is None else np.linspace(start, stop, num, endpoint=endpoint, axis=axis, dtype=dtype)


register(OpDef("linspace_between", Category.OPAQUE, named("linspace_between", _infer), _eager,
               decompose=decompose_of(_linspace_between), expensive=False,
               doc="num samples from start to stop, tensors (internal: np.linspace with run-time ends)"))
