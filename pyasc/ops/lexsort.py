"""np.lexsort: indices sorting by several keys, the last key first, as stable argsorts from the least
significant key up (each later key sorted in the order the earlier ones left, then composed).

lexsort(keys, axis=-1): keys a sequence of tensors of one shape (or a 2-D tensor: its rows); NaN sorts last, as
numpy's. int32 results (numpy: intp). The sorted axis needs a static size (argsort's rule).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import fmt_shape
from .numpy_composite import numpy_sugar_op, signature_binder
from .registry import Category


def _lexsort(b: Builder, *keys: Any, n_keys: int = 0, axis: Any = -1) -> list[Any]:
    if len(keys) == 1 and len(b.shape(keys[0])) == 2 and n_keys == 0:  # a 2-D array: its rows are the keys
        k = keys[0]
        keys = tuple(b.op("reshape", b.op("slice", k, starts=(i, 0), stops=(i + 1, None), steps=(1, 1)),
                          shape=tuple(b.shape(k)[1:])) for i in range(b.shape(k)[0]))
    order = b.op("argsort", keys[0], axis=axis, kind="stable")
    for key in keys[1:]:
        arranged = b.op("take_along_axis", key, order, axis=axis)
        order = b.op("take_along_axis", order, b.op("argsort", arranged, axis=axis, kind="stable"), axis=axis)
    return [order]


def _check_lexsort(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if len({tuple(t.shape) for t in ts}) > 1:
        raise InferError(f"all keys need to be the same shape, got {', '.join(fmt_shape(t.shape) for t in ts)}")
    if ts[0].ndim == 0:
        raise InferError("need sequence of keys with len > 0 in lexsort (0-d keys have no axis to sort)")


def lexsort(keys, axis=-1):  # noqa: ANN001, ANN201 - numpy's signature
    """Indices that sort by the last key, ties broken by the one before, and so on."""
    return np.lexsort(keys, axis)


def _eager(*keys: Any, n_keys: int = 0, axis: Any = -1) -> Any:
    return np.lexsort(keys if n_keys else keys[0], axis)


def _bind_keys(api: Any):
    """keys as numpy takes them: a sequence of tensors (the variadic operands) or one 2-D tensor (its rows)."""
    listed = signature_binder(api, (), variadic="keys")
    single = signature_binder(api, ("keys",))

    def bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        keys = args[0] if args else kwargs.get("keys")
        if isinstance(keys, (list, tuple)):
            return listed(args, kwargs)
        tensors, attrs = single(args, kwargs)
        return tensors, {**attrs, "n_keys": 0}

    return bind


numpy_sugar_op("lexsort", _lexsort, lexsort, _eager, category=Category.OPAQUE, tensor_params=(), variadic="keys",
               numpy_names=("lexsort",), check=_check_lexsort, binder=_bind_keys(lexsort))
