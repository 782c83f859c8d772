"""DimValue: a 0-d tensor whose value is an integer expression over the launch's dims (internal).

Under `dynamic=True`, `if x.shape[0] >= 8:` has no compile-time answer; the
frontend turns the predicate into a DimValue (attr `value`: the Sym
expression, attr `dtype`) and makes it the condition of an If. It computes
nothing on the device (a leaf, like Const): the host code evaluates the
expression from the runtime dims with the same algebra as every tiling field
and picks the branch itself. The reference interpreter binds the dims and
runs the eager form.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .common import arity, attr_dtype, named
from .registry import Category, OpDef, register


#: the attribute of a graph's first Data node holding its launch checks (`assert` on shapes under
#: dynamic=True): a tuple of (predicate Sym, message with the user's line); an annotation, so it
#: prints and serialises with the graph and no pass drops it (Data nodes are the signature)
LAUNCH_CHECKS = "_launch_checks"


def failed_checks(graph_inputs: Sequence[Any], bindings: Mapping[str, int]) -> list[str]:
    """The messages of the launch checks these dims break."""
    out = []
    for node in graph_inputs:
        for pred, message in node.attrs.get(LAUNCH_CHECKS, ()):
            if pred.evaluate(dict(bindings)) == 0:
                out.append(message)
    return out


def _eager(*, value: Any, dtype: str) -> Any:
    # the interpreter binds the dims first, so `value` is an int here
    return np.array(value, dtype=dtypes.to_numpy(dtype))


def _infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 0, "DimValue")
    value = attrs.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, Sym)):
        raise InferError(f"attribute 'value' must be an int or a symbolic dim expression, got {value!r}")
    return (TensorType((), attr_dtype(attrs.get("dtype", "int32"), "DimValue")),)


register(OpDef("DimValue", Category.OPAQUE, named("DimValue", _infer), _eager,
               doc="a 0-d value computed by the host from the launch's dims (a shape predicate); internal",
               structural=True, leaf=True))
