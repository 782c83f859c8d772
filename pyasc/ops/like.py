"""full_like(a, fill_value, dtype=None) and its sugar zeros_like / ones_like / empty_like.

A tensor of `a`'s shape (symbolic dims included) and, unless `dtype` says
otherwise, `a`'s dtype, filled with a compile-time scalar (numpy's
full_like: a float fill of an integer tensor truncates). It decomposes into
`full`; `a` is only read for its type. empty_like fills zeros: numpy leaves
the contents unspecified, so any value is numpy's, and zeros are deterministic.
"""
from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

import numpy as np

from ..tensor_type import TensorType
from .builder import Builder
from .common import attr_dtype, sugar_arguments
from .numpy_composite import numpy_composite
from .registry import get, register_sugar


def _full_like(b: Builder, a: Any, *, fill_value: Any, dtype: Any = None) -> list[Any]:
    return [b.op("full", shape=b.shape(a), fill_value=fill_value, dtype=b.dtype(a) if dtype is None else dtype)]


def _check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if attrs.get("dtype") is not None:
        attr_dtype(attrs["dtype"], "full_like")


def full_like(a, fill_value, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """A tensor of a's shape (and dtype, unless given) filled with `fill_value`."""
    return np.full_like(a, fill_value, dtype=dtype)


def _eager(a: Any, *, fill_value: Any, dtype: Any = None) -> Any:
    return np.full_like(a, fill_value, dtype=dtype)


numpy_composite("full_like", _full_like, full_like, _eager, tensor_params=("a",), numpy_names=("full_like",),
                check=_check, expensive=False)


def zeros_like(a, dtype=None):  # noqa: ANN001, ANN201 - the public signature
    """Zeros of a's shape and dtype (unless given)."""
    return full_like(a, 0, dtype)


def ones_like(a, dtype=None):  # noqa: ANN001, ANN201
    """Ones of a's shape and dtype (unless given)."""
    return full_like(a, 1, dtype)


def empty_like(a, dtype=None):  # noqa: ANN001, ANN201
    """A tensor of a's shape and dtype (unless given); its contents are zeros (numpy leaves them unspecified)."""
    return full_like(a, 0, dtype)


def _filled(api: Any, fill_value: int):
    sig = inspect.signature(api)

    def bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        arguments = sugar_arguments(api, sig, args, kwargs)
        return get("full_like").bind((arguments["a"], fill_value, arguments["dtype"]), {})

    return bind


for _api, _fill in ((zeros_like, 0), (ones_like, 1), (empty_like, 0)):
    register_sugar(_api.__name__, "full_like", _api, _filled(_api, _fill), numpy_names=(_api.__name__,))
