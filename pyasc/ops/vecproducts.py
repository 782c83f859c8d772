"""numpy 2's vector products over the last axes: np.vecdot, np.matvec, np.vecmat (gufuncs, broadcasting the
leading axes), and np.packbits / np.unpackbits.

vecdot(x1, x2, /, *, axis=-1): sum(x1 * x2) over `axis` ((n),(n)->()); matvec(x1, x2): x1 (..., m, n) times
  x2 (..., n) -> (..., m); vecmat(x1, x2): x1 (..., n) times x2 (..., n, m) -> (..., m). Real tensors, so
  numpy's conjugate of x1 is x1. Products and sums in the promoted dtype, as numpy's loops: a float16 sum is
  accumulated in float32 and rounded once; integer products wrap as numpy's do; bool is any(x1 & x2).
  A core dimension that differs is numpy's ValueError message, located.
packbits(a, axis=None, bitorder="big"): a's truth (nonzero) packed eight to a uint8 along `axis` (None: the
  flattened a), the last byte padded with zeros; unpackbits(a, axis=None, count=None, bitorder="big"): the
  bits of a uint8 tensor, eight per element along `axis` (count: keep the first `count`, a negative one drops
  that many from the end, more than there are pads zeros). Both by multiplying/dividing by powers of two.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import fmt_shape, normalize_axis
from .joining import slice_axis
from .numpy_composite import numpy_sugar_op
from .registry import Category


def _dot_last(b: Builder, x1: Any, x2: Any, axis: int) -> Any:
    """sum(x1 * x2) over `axis` (of the broadcast shape), in numpy's promoted dtype."""
    dt = b.result_type(b.dtype(x1), b.dtype(x2))
    if dt == "bool":
        return b.op("any", b.op("bitwise_and", x1, x2), axis=axis, keepdims=False)
    p, q = b.cast(x1, dt), b.cast(x2, dt)
    work = "float32" if dt == "float16" else dt
    prod = b.op("mul", p, q) if dt != "float16" else b.op("mul", b.cast(p, work), b.cast(q, work))
    return b.cast(b.op("sum", prod, axis=axis, keepdims=False), dt)


def _vecdot(b: Builder, x1: Any, x2: Any, *, axis: int = -1) -> list[Any]:
    nd = max(len(b.shape(x1)), len(b.shape(x2)))
    return [_dot_last(b, x1, x2, normalize_axis(axis, nd)[0])]


def _matvec(b: Builder, x1: Any, x2: Any) -> list[Any]:
    v = b.op("expand_dims", x2, axis=len(b.shape(x2)) - 1)  # (..., 1, n) against (..., m, n)
    return [_dot_last(b, x1, v, -1)]


def _vecmat(b: Builder, x1: Any, x2: Any) -> list[Any]:
    v = b.op("expand_dims", x1, axis=len(b.shape(x1)))  # (..., n, 1) against (..., n, m)
    return [_dot_last(b, v, x2, -2)]


def _mismatch(name: str, signature: str, operand: int, core: int, n1: Any, n2: Any) -> InferError:
    return InferError(f"{name}: Input operand {operand} has a mismatch in its core dimension {core}, with gufunc "
                      f"signature {signature} (size {n2} is different from {n1})")


def _check_vecdot(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, c = ts
    if a.ndim == 0 or c.ndim == 0:
        raise InferError("vecdot: Input operand 0 does not have enough dimensions (has 0, gufunc core with "
                         "signature (n),(n)->() requires 1)")
    axis = attrs.get("axis", -1)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise InferError(f"vecdot: axis must be a compile-time int, got {axis!r}")
    n1, n2 = a.shape[normalize_axis(axis, a.ndim)[0]], c.shape[normalize_axis(axis, c.ndim)[0]]
    if n1 != n2:
        raise _mismatch("vecdot", "(n),(n)->()", 1, 0, n1, n2)


def _check_matvec(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    a, v = ts
    if a.ndim < 2:
        raise InferError(f"matvec: Input operand 0 does not have enough dimensions (has {a.ndim}, gufunc core with "
                         "signature (m,n),(n)->(m) requires 2)")
    if v.ndim < 1:
        raise InferError("matvec: Input operand 1 does not have enough dimensions (has 0, gufunc core with "
                         "signature (m,n),(n)->(m) requires 1)")
    if a.shape[-1] != v.shape[-1]:
        raise _mismatch("matvec", "(m,n),(n)->(m)", 1, 0, a.shape[-1], v.shape[-1])


def _check_vecmat(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    v, a = ts
    if v.ndim < 1:
        raise InferError("vecmat: Input operand 0 does not have enough dimensions (has 0, gufunc core with "
                         "signature (n),(n,m)->(m) requires 1)")
    if a.ndim < 2:
        raise InferError(f"vecmat: Input operand 1 does not have enough dimensions (has {a.ndim}, gufunc core with "
                         "signature (n),(n,m)->(m) requires 2)")
    if v.shape[-1] != a.shape[-2]:
        raise _mismatch("vecmat", "(n),(n,m)->(m)", 1, 0, v.shape[-1], a.shape[-2])


# ---- packbits / unpackbits ------------------------------------------------------------------------------


def _weights(b: Builder, nd: int, axis: int, bitorder: str) -> Any:
    w = np.array([1 << (7 - k) if bitorder == "big" else 1 << k for k in range(8)], np.int32)
    return b.array(w.reshape((1,) * (axis + 1) + (8,) + (1,) * (nd - axis - 1)))


def _flat_axis(b: Builder, a: Any, axis: Any) -> tuple[Any, int]:
    if axis is None:
        return b.op("reshape", a, shape=(-1,)), 0
    return a, normalize_axis(axis, len(b.shape(a)))[0]


def _packbits(b: Builder, a: Any, *, axis: Any = None, bitorder: str = "big") -> list[Any]:
    x, ax = _flat_axis(b, a, axis)
    shape = tuple(b.shape(x))
    bits = b.cast(b.op("ne", x, b.const(0, b.dtype(x))) if b.dtype(x) != "bool" else x, "int32")
    n = shape[ax]
    pad = -n % 8
    if pad:
        zeros = b.op("full", shape=tuple(pad if i == ax else d for i, d in enumerate(shape)), fill_value=0,
                     dtype="int32")
        bits = b.op("concat", bits, zeros, axis=ax, kind="concatenate")
    groups = (n + pad) // 8
    split = shape[:ax] + (groups, 8) + shape[ax + 1:]
    bits = b.op("reshape", bits, shape=split)
    packed = b.op("sum", b.op("mul", bits, _weights(b, len(shape), ax, bitorder)), axis=ax + 1, keepdims=False)
    return [b.cast(packed, "uint8")]


def _unpackbits(b: Builder, a: Any, *, axis: Any = None, count: Any = None, bitorder: str = "big") -> list[Any]:
    x, ax = _flat_axis(b, a, axis)
    shape = tuple(b.shape(x))
    v = b.op("expand_dims", b.cast(x, "int32"), axis=ax + 1)
    bits = b.op("mod", b.op("floordiv", v, _weights(b, len(shape), ax, bitorder)), b.const(2, "int32"))
    total = shape[ax] * 8
    bits = b.op("reshape", bits, shape=shape[:ax] + (total,) + shape[ax + 1:])
    if count is not None:
        keep = total + int(count) if count < 0 else int(count)
        keep = max(keep, 0)
        if keep <= total:
            bits = slice_axis(b, bits, ax, 0, keep)
        else:
            zeros = b.op("full", shape=tuple(keep - total if i == ax else d for i, d in enumerate(b.shape(bits))),
                         fill_value=0, dtype="int32")
            bits = b.op("concat", bits, zeros, axis=ax, kind="concatenate")
    return [b.cast(bits, "uint8")]


def _check_bits(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        if name == "unpackbits" and a.dtype != "uint8":
            raise InferError(f"unpackbits: Expected an input array of unsigned byte data type, got {a.dtype}")
        if name == "packbits" and a.dtype in ("float16", "float32"):
            raise InferError(f"packbits: Expected an input array of integer or boolean data type, got {a.dtype}")
        if attrs.get("bitorder", "big") not in ("big", "little"):
            raise InferError(f"{name}: 'order' must be either 'little' or 'big', got {attrs['bitorder']!r}")
        axis = attrs.get("axis")
        if axis is not None:
            normalize_axis(axis, a.ndim)
        count = attrs.get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, (int, np.integer))):
            raise InferError(f"unpackbits: count must be a compile-time int or None, got {count!r}")
        n = a.numel if axis is None else a.shape[normalize_axis(axis, a.ndim)[0]]
        if not isinstance(n, int):
            raise InferError(f"{name}: the packed axis of shape {fmt_shape(a.shape)} needs a static size")
    return check


# ---- the public signatures (numpy's names) ----------------------------------------------------


def vecdot(x1, x2, /, *, axis=-1):  # noqa: ANN001, ANN201 - numpy's signature
    """The dot product of vectors along `axis`, broadcasting the others."""
    return np.vecdot(x1, x2, axis=axis)


def matvec(x1, x2, /):  # noqa: ANN001, ANN201
    """Matrix (..., m, n) times vector (..., n), broadcasting the leading axes."""
    return np.matvec(x1, x2)


def vecmat(x1, x2, /):  # noqa: ANN001, ANN201
    """Vector (..., n) times matrix (..., n, m), broadcasting the leading axes."""
    return np.vecmat(x1, x2)


def packbits(a, /, axis=None, bitorder="big"):  # noqa: ANN001, ANN201
    """The truth of a's elements packed eight to a uint8 along `axis` (None: flattened)."""
    return np.packbits(a, axis=axis, bitorder=bitorder)


def unpackbits(a, /, axis=None, count=None, bitorder="big"):  # noqa: ANN001, ANN201
    """The bits of a uint8 tensor, eight per element along `axis` (None: flattened)."""
    return np.unpackbits(a, axis=axis, count=count, bitorder=bitorder)


for _name, _body, _api, _check in (("vecdot", _vecdot, vecdot, _check_vecdot),
                                   ("matvec", _matvec, matvec, _check_matvec),
                                   ("vecmat", _vecmat, vecmat, _check_vecmat)):
    numpy_sugar_op(_name, _body, _api, lambda x1, x2, _f=getattr(np, _name), **k: _f(x1, x2, **k),
                   category=Category.OPAQUE, tensor_params=("x1", "x2"), numpy_names=(_name,), check=_check,
                   static={"axis": "it picks the axis"} if _name == "vecdot" else None)

for _name, _body, _api in (("packbits", _packbits, packbits), ("unpackbits", _unpackbits, unpackbits)):
    numpy_sugar_op(_name, _body, _api, lambda a, _f=getattr(np, _name), **k: _f(a, **k), category=Category.OPAQUE,
                   tensor_params=("a",), numpy_names=(_name,), check=_check_bits(_name),
                   static={"axis": "it picks the axis", "count": "it sizes the result"})
