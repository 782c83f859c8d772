"""np.dot with numpy's rules (it is not matmul for N-D operands), as a composite.

- a 0-d operand: a * b;
- 1-D . 1-D: sum(a * b) (a 0-d result);
- b 1-D or 2-D: exactly matmul(a, b) (N-D a contracts its last axis with b's first/only one);
- b N-D (N >= 3): dot(a, b)[i..., j..., m] = sum_k a[i..., k] * b[j..., k, m]: b's contracted axis is
  moved first and the rest flattened, (K, J*M), one matmul, and the result reshaped to
  a.shape[:-1] + b.shape[:-2] + b.shape[-1:].
Float operands use the cube (matmul). Integer and bool operands multiply and sum on the vector unit
(exact int32 accumulation, then cast to numpy's result dtype, wrapping like numpy: np.dot keeps the
operands' dtype, where pyasc's matmul would widen small integers to int32).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder
from .common import fmt_shape
from .numpy_composite import numpy_composite
from .registry import Category


def _flat(dims: Sequence[Any]) -> Any:
    return math.prod(dims) if all(isinstance(d, int) for d in dims) else -1


def _int_product(b: Builder, a: Any, bb: Any, out: str) -> Any:
    """dot on the vector unit: broadcast multiply over (A, J, K, M), sum over K, in int32."""
    sa, sb = b.shape(a), b.shape(bb)
    acc = "int32"
    x, y = b.cast(a, acc), b.cast(bb, acc)
    k = sa[-1]
    lead_a = sa[:-1]
    if len(sb) == 1:  # a row reduction: (..., K) * (K,) summed over the last axis
        return b.cast(b.op("sum", b.op("mul", x, y), axis=-1), out)
    lead_b, m = sb[:-2], sb[-1]
    y3 = b.op("reshape", y, shape=(_flat(lead_b), k, m))
    x4 = b.op("reshape", x, shape=(_flat(lead_a) if lead_a else 1, 1, k, 1))
    prod = b.op("mul", x4, b.op("expand_dims", y3, axis=0))
    s = b.op("sum", prod, axis=2)
    final = tuple(lead_a) + tuple(lead_b) + (m,)
    return b.cast(b.op("reshape", s, shape=final), out)


def _dot(b: Builder, a: Any, bb: Any) -> list[Any]:
    out = b.result_type(b.dtype(a), b.dtype(bb))
    x, y = b.cast(a, out), b.cast(bb, out)
    sa, sb = b.shape(x), b.shape(y)
    if not sa or not sb:
        return [b.op("mul", x, y)]
    if not dtypes.is_float(out):
        return [_int_product(b, x, y, out)]
    if len(sa) == 1 and len(sb) == 1:
        return [b.op("sum", b.op("mul", x, y))]
    if len(sb) <= 2:
        return [b.op("matmul", x, y)]
    nd = len(sb)
    k, m, lead_b = sb[-2], sb[-1], sb[:-2]
    moved = b.op("transpose", y, axes=(nd - 2,) + tuple(range(nd - 2)) + (nd - 1,))
    flat = b.op("reshape", moved, shape=(k, _flat(tuple(lead_b) + (m,))))
    r = b.op("matmul", x, flat)
    return [b.op("reshape", r, shape=tuple(sa[:-1]) + tuple(lead_b) + (m,))]


def _check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, b = ts
    if a.ndim == 0 or b.ndim == 0:
        return
    ka = a.shape[-1]
    kb = b.shape[-1] if b.ndim == 1 else b.shape[-2]
    if ka != kb and not (isinstance(ka, Sym) or isinstance(kb, Sym)):
        raise InferError(f"shapes {fmt_shape(a.shape)} and {fmt_shape(b.shape)} not aligned: "
                         f"{ka} (dim {a.ndim - 1}) != {kb} (dim {max(b.ndim - 2, 0)})")


def dot(a, b):  # noqa: ANN001, ANN201 - the public signature
    """numpy's dot: a product over the last axis of a and the second-to-last of b (1-D: the only one)."""
    return np.dot(a, b)


numpy_composite("dot", _dot, dot, np.dot, category=Category.MATMUL, tensor_params=("a", "b"), numpy_names=("dot",),
                check=_check)
