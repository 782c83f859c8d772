"""Matrix products: matmul (public) and fused_matmul (what GE pattern fusion produces).

Shapes follow np.matmul: 2-D (M, K) @ (K, N); a 1-D left operand is a row
vector and a 1-D right operand a column vector, the added dim removed from
the result; more dims are batch dims that broadcast. `transpose_a` /
`transpose_b` swap the last two axes of an operand first (no effect on 1-D).

Dtypes: numpy promotion, except that integer products narrower than 32 bits
accumulate in int32 (int8 @ int8 -> int32, like the cube unit; numpy would
wrap in int8). bool is rejected.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import Dim, Sym, TensorType
from .common import NUMERIC, arity, attr_bool, attr_dtype, broadcast_shapes, broadcasts_to, fmt_shape, named, require_dtype
from .registry import Category, CubeOperand, OpDef, register

ACTIVATIONS = (None, "relu")

#: the cube reads a and b (a bias goes to the bias table, through the vector side's ND path); an operand may
#: already be FRACTAL_NZ in GM (copied into L1 as it is) or ND (converted by the GM->L1 move)
CUBE_OPERANDS = (CubeOperand(0, "a", "transpose_a"), CubeOperand(1, "b", "transpose_b"))
CUBE_FORMATS = (frozenset({"ND", "FRACTAL_NZ"}),) * 2


def accumulate_dtype(dt: str) -> str:
    """Result dtype of a product whose operands promote to `dt`."""
    return "int32" if dtypes.is_int(dt) and dtypes.itemsize(dt) < 4 else dt


def _swap_last(shape: tuple[Dim, ...], flag: bool) -> tuple[Dim, ...]:
    return shape[:-2] + (shape[-1], shape[-2]) if flag and len(shape) >= 2 else shape


def matmul_type(a: TensorType, b: TensorType, transpose_a: bool, transpose_b: bool) -> TensorType:
    desc = f"{fmt_shape(a.shape)}{'.T' if transpose_a and a.ndim >= 2 else ''} @ " \
           f"{fmt_shape(b.shape)}{'.T' if transpose_b and b.ndim >= 2 else ''}"
    if a.ndim == 0 or b.ndim == 0:
        raise InferError(f"operands must have at least one dimension, got {desc}")
    for t in (a, b):
        require_dtype(t, NUMERIC, "matmul")
    sa = _swap_last(tuple(a.shape), transpose_a)
    sb = _swap_last(tuple(b.shape), transpose_b)
    a2 = sa if len(sa) >= 2 else (1,) + sa
    b2 = sb if len(sb) >= 2 else sb + (1,)
    k_a, k_b = a2[-1], b2[-2]
    if k_a != k_b and not (isinstance(k_a, Sym) or isinstance(k_b, Sym)):
        raise InferError(f"contraction dims differ: {desc} ({k_a} != {k_b})")
    try:
        batch = broadcast_shapes(a2[:-2], b2[:-2])
    except InferError:
        raise InferError(f"cannot broadcast batch dims {fmt_shape(a2[:-2])} and {fmt_shape(b2[:-2])} in {desc}") from None
    shape = batch + ((a2[-2],) if len(sa) >= 2 else ()) + ((b2[-1],) if len(sb) >= 2 else ())
    return TensorType(shape, accumulate_dtype(dtypes.promote(a.dtype, b.dtype)))


def matmul(a, b, transpose_a=False, transpose_b=False):  # noqa: ANN001, ANN201 - the public signature
    """a @ b (np.matmul shapes); int8/int16/uint8 products accumulate in int32."""
    a, b = np.asarray(a), np.asarray(b)
    if transpose_a and a.ndim >= 2:
        a = np.swapaxes(a, -1, -2)
    if transpose_b and b.ndim >= 2:
        b = np.swapaxes(b, -1, -2)
    dt = np.result_type(a, b)
    if dt.kind in "iu" and dt.itemsize < 4:
        a, b = a.astype(np.int32), b.astype(np.int32)
    return np.matmul(a, b)


def _infer_matmul(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    arity(ts, 2, "matmul")
    ta = attr_bool(attrs, "transpose_a", False, "matmul")
    tb = attr_bool(attrs, "transpose_b", False, "matmul")
    return (matmul_type(ts[0], ts[1], ta, tb),)


def _fused_matmul_eager(a: Any, b: Any, bias: Any = None, *, transpose_a: bool = False, transpose_b: bool = False,
                        has_bias: bool = False, activation: str | None = None, out_dtype: str | None = None) -> Any:
    """activation(a @ b + bias) cast to out_dtype: exactly the unfused chain it replaces."""
    y = matmul(a, b, transpose_a, transpose_b)
    if has_bias:
        y = y + bias
    if activation == "relu":
        y = np.maximum(y, 0)
    elif activation is not None:
        raise ValueError(f"fused_matmul: unknown activation {activation!r}")
    return y if out_dtype is None else y.astype(out_dtype)


def _infer_fused_matmul(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    has_bias = attr_bool(attrs, "has_bias", False, "fused_matmul")
    arity(ts, 3 if has_bias else 2, "fused_matmul")
    t = matmul_type(ts[0], ts[1], attr_bool(attrs, "transpose_a", False, "fused_matmul"),
                    attr_bool(attrs, "transpose_b", False, "fused_matmul"))
    dtype = t.dtype
    if has_bias:
        bias = ts[2]
        if not broadcasts_to(bias.shape, t.shape):
            raise InferError(f"bias of shape {fmt_shape(bias.shape)} does not broadcast to the product's shape "
                             f"{fmt_shape(t.shape)}")
        dtype = dtypes.promote(dtype, bias.dtype)
    activation = attrs.get("activation")
    if activation not in ACTIVATIONS:
        raise InferError(f"unknown activation {activation!r}; known: {', '.join(map(repr, ACTIVATIONS))}")
    out = attrs.get("out_dtype")
    if out is not None:
        dtype = attr_dtype(out, "fused_matmul", "out_dtype")
    return (TensorType(t.shape, dtype),)


register(OpDef("matmul", Category.MATMUL, named("matmul", _infer_matmul), matmul, api=matmul, tensor_params=("a", "b"),
               expensive=True, numpy_names=("matmul",), doc=matmul.__doc__ or "",
               cube_operands=CUBE_OPERANDS, operand_formats=CUBE_FORMATS))
register(OpDef("fused_matmul", Category.MATMUL, named("fused_matmul", _infer_fused_matmul), _fused_matmul_eager,
               expensive=True, cube_operands=CUBE_OPERANDS, operand_formats=CUBE_FORMATS,
               doc="activation(a @ b + bias) -> out_dtype; inputs a, b[, bias]; attrs transpose_a, transpose_b, "
                   "has_bias, activation (None|'relu'), out_dtype (None|dtype). Internal: made by GE fusion."))
