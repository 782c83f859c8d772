"""Compile-time constructors arange, linspace, eye, tri, and the tensor ops triu, tril, outer.

`np.arange(...)`, `np.linspace`, `np.eye`, `np.identity`, `np.tri` in a kernel run at compile time
(frontend/calls.py: NUMPY_COMPILE_TIME) and give a numpy array, a constant like any other: it
folds with other constants and becomes a Const tensor next to a tensor. `pyasc.arange` and the
others are registry ops with no tensor operands whose decomposition is that Const (numpy's array,
narrowed: int64 -> int32, float64 -> float32), so they are tensors from the start. Their arguments
are compile-time values; a size only known at launch is an error.

tril(m, k=0) / triu(m, k=0) keep the elements on and below / above the k-th diagonal of the last two
axes (a `where` on a constant mask); outer(a, b) = ravel(a)[:, None] * ravel(b)[None, :] (numpy's
definition: a broadcast multiply).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import fmt_shape
from .numpy_composite import numpy_composite
from .registry import Category


def _value(fn: Callable[..., Any], name: str, attrs: Mapping[str, Any]) -> np.ndarray:
    """numpy's array for these attributes, narrowed to a supported dtype (InferError naming the op)."""
    for k, v in attrs.items():
        if isinstance(v, Sym):
            raise InferError(f"{k}={v} is a size only known at launch; {name} needs compile-time arguments")
    try:
        arr = np.asarray(fn(**attrs))
    except (TypeError, ValueError, ArithmeticError) as e:
        raise InferError(f"{type(e).__name__}: {e}") from None
    try:
        return arr.astype(dtypes.to_numpy(dtypes.narrow(arr.dtype)))
    except dtypes.DTypeError as e:
        raise InferError(str(e)) from None


def _creation(name: str, api: Callable[..., Any], fn: Callable[..., Any]) -> None:
    def body(b: Builder, **attrs: Any) -> list[Any]:
        return [b.array(_value(fn, name, attrs))]

    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        _value(fn, name, attrs)

    def eager(**attrs: Any) -> Any:
        return fn(**attrs)

    numpy_composite(name, body, api, eager, tensor_params=(), check=check, expensive=False)


def arange(start, stop=None, step=None, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """Evenly spaced values in [start, stop) (a compile-time constant tensor)."""
    return np.arange(start, stop, step, dtype=dtype) if stop is not None or step is not None else \
        np.arange(start, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None):  # noqa: ANN001, ANN201
    """`num` evenly spaced values from start to stop (a compile-time constant tensor)."""
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype)


def eye(N, M=None, k=0, dtype=float):  # noqa: ANN001, ANN201, N803 - numpy's parameter names
    """Ones on the k-th diagonal, zeros elsewhere (a compile-time constant tensor)."""
    return np.eye(N, M, k, dtype=dtype)


def tri(N, M=None, k=0, dtype=float):  # noqa: ANN001, ANN201, N803
    """Ones at and below the k-th diagonal (a compile-time constant tensor; np.tri(T) is a causal mask)."""
    return np.tri(N, M, k, dtype=dtype)


for _api in (arange, linspace, eye, tri):
    _creation(_api.__name__, _api, _api)


# ---- triu / tril / outer --------------------------------------------------------------------------


def _tri_mask(b: Builder, m: Any, k: int, upper: bool) -> Any:
    shape = b.shape(m)
    n, c = shape[-2], shape[-1]
    keep = np.tri(n, c, k - 1, dtype=bool) if upper else np.tri(n, c, k, dtype=bool)  # True where tril keeps
    zero = b.const(0, b.dtype(m))
    return b.op("where", b.array(keep), zero, m) if upper else b.op("where", b.array(keep), m, zero)


def _tril(b: Builder, m: Any, *, k: int = 0) -> list[Any]:
    return [_tri_mask(b, m, k, upper=False)]


def _triu(b: Builder, m: Any, *, k: int = 0) -> list[Any]:
    return [_tri_mask(b, m, k, upper=True)]


def _check_tri(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (m,) = ts
        if m.ndim < 2:
            raise InferError(f"needs a tensor of at least 2 dimensions, got shape {fmt_shape(m.shape)}")
        if any(isinstance(d, Sym) for d in m.shape[-2:]):
            raise InferError(f"the last two axes of shape {fmt_shape(m.shape)} must have static sizes")
        k = attrs.get("k", 0)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise InferError(f"k must be an int, got {k!r}")

    return check


def tril(m, k=0):  # noqa: ANN001, ANN201 - the public signature
    """m with the elements above the k-th diagonal (of the last two axes) zeroed."""
    return np.tril(m, k)


def triu(m, k=0):  # noqa: ANN001, ANN201
    """m with the elements below the k-th diagonal (of the last two axes) zeroed."""
    return np.triu(m, k)


def _eager_tri(fn: Any):
    def eager(m: Any, *, k: int = 0) -> Any:
        return fn(m, k)

    return eager


numpy_composite("tril", _tril, tril, _eager_tri(np.tril), category=Category.BROADCAST, tensor_params=("m",),
                numpy_names=("tril",), check=_check_tri("tril"), expensive=False)
numpy_composite("triu", _triu, triu, _eager_tri(np.triu), category=Category.BROADCAST, tensor_params=("m",),
                numpy_names=("triu",), check=_check_tri("triu"), expensive=False)


def _outer(b: Builder, a: Any, bb: Any) -> list[Any]:
    return [b.op("mul", b.op("reshape", a, shape=(-1, 1)), b.op("reshape", bb, shape=(1, -1)))]


def outer(a, b):  # noqa: ANN001, ANN201 - the public signature
    """a[i] * b[j] over the flattened operands."""
    return np.outer(a, b)


numpy_composite("outer", _outer, outer, np.outer, category=Category.BROADCAST, tensor_params=("a", "b"),
                numpy_names=("outer",), expensive=False)
