"""Numpy semantics of the vector unit.

Inputs are typed arrays with a leading core axis. fp16 and bf16 math is done
the way the unit does it: widen to fp32, compute, round once on the store.
Integer arithmetic wraps; float exceptions give IEEE results (inf/nan), no
warnings.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from . import bfloat16
from .isa import DTYPES

F32 = np.dtype(np.float32)
F16 = np.dtype(np.float16)

_erf = np.frompyfunc(math.erf, 1, 1)


def _erf_f32(x: np.ndarray) -> np.ndarray:
    return _erf(x.astype(np.float64)).astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype, copy=False)


BINARY: dict[str, Callable] = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power,
    "max": np.maximum, "min": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
}

UNARY: dict[str, Callable] = {
    "neg": np.negative,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: (1.0 / np.sqrt(x)).astype(x.dtype, copy=False),
    "reciprocal": lambda x: (1.0 / x).astype(x.dtype, copy=False),
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.maximum(x, np.zeros((), x.dtype)),
    "gelu": lambda x: (0.5 * x * (1.0 + _erf_f32(x / np.float32(math.sqrt(2.0))))).astype(x.dtype, copy=False),
    "silu": lambda x: (x * _sigmoid(x)).astype(x.dtype, copy=False),
    "erf": lambda x: _erf_f32(x) if x.dtype.kind == "f" else _erf_f32(x).astype(x.dtype),
    "floor": np.floor,
    "ceil": np.ceil,
    "sign": np.sign,
}

COMPARE: dict[str, Callable] = {
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "eq": np.equal, "ne": np.not_equal,
}

REDUCE: dict[str, Callable] = {"sum": np.add.reduce, "max": np.maximum.reduce, "min": np.minimum.reduce}


HALF = ("float16", "bfloat16")  # computed in float32, rounded once on the store


def _compute_dtype(dtype: str) -> np.dtype:
    return F32 if dtype in HALF else DTYPES[dtype]


#: from this many elements on, float16 is widened through a table (`half_to_float`)
HALF_TABLE_ELEMENTS = 4096
_half_table: Optional[np.ndarray] = None


def half_to_float(x: np.ndarray) -> np.ndarray:
    """float16 values as float32, in C order: numpy's own conversion of each, looked up in a table of all 65536
    (made by that conversion) for large arrays, where a gather is about twice as fast as `astype`."""
    global _half_table
    if x.size < HALF_TABLE_ELEMENTS:
        return x.astype(F32, order="C")
    if _half_table is None:
        _half_table = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(F16).astype(F32)
    return np.take(_half_table, x.view(np.uint16), mode="wrap")   # (a uint16 is never out of range)


def widen(x, dtype: str):
    """A UB operand (its storage view) as the values the unit computes on: float16 and bfloat16 in float32."""
    if not isinstance(x, np.ndarray):
        return x
    if dtype == "float16" and x.dtype == F16:
        return half_to_float(x)
    if dtype == "bfloat16" and x.dtype == bfloat16.BITS:
        return bfloat16.to_float32(x)
    return x


def storage(res: np.ndarray, dtype: str) -> np.ndarray:
    """Values in `dtype`'s storage form (bfloat16 -> its bits)."""
    if dtype == "bfloat16":
        return bfloat16.from_float32(res)
    return np.asarray(res).astype(DTYPES[dtype], copy=False)


def scalar_value(value, dtype: str):
    """A scalar operand converted to the instruction's compute dtype."""
    return np.asarray(value).astype(_compute_dtype(dtype))


def _finish(res: np.ndarray, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    if dtype == "bfloat16":
        res = bfloat16.from_float32(res)
    if out is not None:
        if res is not out:
            np.copyto(out, res, casting="unsafe")
        return out
    return res.astype(DTYPES[dtype], copy=False)


def binary_ufunc(fn: str, dtype: str) -> Optional[np.ufunc]:
    """The ufunc that is all `binary(fn, ..., dtype, out)` does with an `out` (not half precision, which
    rounds through float32, nor an integer power), for a caller already ignoring float errors; else None."""
    if dtype in HALF or (fn == "pow" and dtype != "float32"):
        return None
    return BINARY[fn]


def unary_ufunc(fn: str, dtype: str) -> Optional[np.ufunc]:
    """Likewise for `unary`: the ufunc of `fn` when it is one and the dtype is not half precision."""
    f = UNARY.get(fn)
    return f if isinstance(f, np.ufunc) and dtype not in HALF else None


def binary(fn: str, a, b, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    f = BINARY[fn]
    with np.errstate(all="ignore"):
        if dtype in HALF:
            return _finish(f(widen(a, dtype), widen(b, dtype)), dtype, out)
        if fn == "pow" and dtype not in ("float32",):
            # integer power: negative exponents give 0 like truncating float math (numpy would raise)
            res = np.power(np.asarray(a, np.float64), np.asarray(b, np.float64))
            return _finish(np.trunc(res).astype(np.int64).astype(DTYPES[dtype]), dtype, out)
        if out is not None:
            f(a, b, out=out, casting="unsafe")
            return out
        return _finish(f(a, b), dtype, None)


def unary(fn: str, x: np.ndarray, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        if fn == "not":
            res = (x == 0).astype(np.uint8) if dtype == "bool" else np.invert(x)
            return _finish(res, dtype, out)
        return _finish(UNARY[fn](widen(x, dtype)), dtype, out)


def compare(fn: str, a, b, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    res = COMPARE[fn](widen(a, dtype), widen(b, dtype))
    return _finish(res, "bool", out)


def select(mask: np.ndarray, a, b, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    return _finish(np.where(mask != 0, widen(a, dtype), widen(b, dtype)), dtype, out)


def cast(x: np.ndarray, src: str, dst: str, rounding: str, out: Optional[np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        x = widen(x, src)
        if dst == "bool":
            return _finish(x != 0, "bool", out)
        floats = ("float16", "bfloat16", "float32")
        if src in floats and dst not in floats and rounding != "trunc":
            x = {"rint": np.rint, "floor": np.floor, "ceil": np.ceil}[rounding](x)
        if dst == "bfloat16":
            return _finish(np.asarray(x, F32), dst, out)
        return _finish(x.astype(DTYPES[dst]), dst, out)


def reduce(fn: str, x: np.ndarray, dtype: str) -> np.ndarray:
    """Reduce the last axis; float16 and bfloat16 accumulate in float32."""
    with np.errstate(all="ignore"):
        res = REDUCE[fn](widen(x, dtype), axis=-1)
    return storage(res, dtype)


ATOMIC: dict[str, Callable] = {"add": np.add, "max": np.maximum, "min": np.minimum}


def atomic(kind: str, old: np.ndarray, new: np.ndarray, dtype: str) -> np.ndarray:
    """What an atomic store leaves in GM: kind(old, new) in `dtype` arithmetic (storage form)."""
    with np.errstate(all="ignore"):
        return storage(ATOMIC[kind](widen(old, dtype), widen(new, dtype)), dtype)
