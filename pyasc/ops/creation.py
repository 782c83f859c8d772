"""Creation: full(shape, fill_value, dtype=None); zeros and ones are sugar over it.

The default dtype comes from the fill value like numpy's, narrowed: a float
gives float32 (numpy: float64), an int int32 (numpy: int64), a bool bool; a
numpy scalar keeps its dtype. The eager functions return exactly numpy's
arrays (float64 for `zeros(shape)`), inference the narrowed dtype.
"""
from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .common import arity, attr_dtype, attr_shape, fmt_shape, named, sugar_arguments
from .reduce import axis_arg
from .registry import Category, OpDef, get, register, register_sugar


def full(shape, fill_value, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """A tensor of `shape` filled with `fill_value` (a compile-time scalar)."""
    return np.full(axis_arg(shape), fill_value, dtype=dtype)


def _infer_full(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 0, "full")
    for key in ("shape", "fill_value"):
        if key not in attrs:
            raise InferError(f"missing attribute {key!r}")
    shape = attr_shape(attrs["shape"], "full")
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise InferError(f"negative dimension in shape {fmt_shape(shape)}")
    value = attrs["fill_value"]
    if not isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise InferError(f"fill_value must be a bool, int or float scalar, got {type(value).__name__} {value!r}")
    dtype_attr = attrs.get("dtype")
    if dtype_attr is None:
        dtype = dtypes.narrow(np.asarray(value).dtype)
    else:
        dtype = attr_dtype(dtype_attr, "full")
    if dtype_attr is None and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if not np.iinfo(np.int32).min <= int(value) <= np.iinfo(np.int32).max:
            raise InferError(f"fill_value {value!r} does not fit the default integer dtype int32; pass a dtype")
    try:
        with np.errstate(all="ignore"):  # inf/NaN into an int: numpy's (unspecified) value, as eagerly
            np.full((), value, dtype=dtypes.to_numpy(dtype))
    except (OverflowError, ValueError) as e:
        raise InferError(f"fill_value {value!r} does not fit dtype {dtype}: {e}") from None
    return (TensorType(shape, dtype),)


register(OpDef("full", Category.ELEMWISE, named("full", _infer_full), full, api=full, numpy_names=("full",),
               doc=full.__doc__ or ""))


def zeros(shape, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """A tensor of zeros (numpy's default dtype is float: float32 in a kernel)."""
    return full(shape, 0.0, dtype)


def ones(shape, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """A tensor of ones (numpy's default dtype is float: float32 in a kernel)."""
    return full(shape, 1.0, dtype)


def _filled(api: Any, fill_value: float):
    """A binder mapping api(shape, dtype) onto full(shape, fill_value, dtype)."""
    sig = inspect.signature(api)

    def bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        arguments = sugar_arguments(api, sig, args, kwargs)
        return get("full").bind((arguments["shape"], fill_value, arguments["dtype"]), {})

    return bind


register_sugar("zeros", "full", zeros, _filled(zeros, 0.0), numpy_names=("zeros",))
register_sugar("ones", "full", ones, _filled(ones, 1.0), numpy_names=("ones",))
