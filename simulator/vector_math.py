"""Numpy semantics of the vector unit.

Inputs are typed arrays with a leading core axis. fp16 math is done the way
the unit does it: widen to fp32, compute, round once to fp16 on the store.
Integer arithmetic wraps; float exceptions give IEEE results (inf/nan), no
warnings.
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

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


def _compute_dtype(dtype: str) -> np.dtype:
    return F32 if dtype == "float16" else DTYPES[dtype]


def scalar_value(value, dtype: str):
    """A scalar operand converted to the instruction's compute dtype."""
    return np.asarray(value).astype(_compute_dtype(dtype))


def _finish(res: np.ndarray, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    target = DTYPES[dtype]
    if out is not None:
        if res is not out:
            np.copyto(out, res, casting="unsafe")
        return out
    return res.astype(target, copy=False)


def binary(fn: str, a, b, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    f = BINARY[fn]
    with np.errstate(all="ignore"):
        if dtype == "float16":
            a = a.astype(F32) if isinstance(a, np.ndarray) and a.dtype == F16 else a
            b = b.astype(F32) if isinstance(b, np.ndarray) and b.dtype == F16 else b
            return _finish(f(a, b), dtype, out)
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
        if dtype == "float16":
            x = x.astype(F32)
        return _finish(UNARY[fn](x), dtype, out)


def compare(fn: str, a, b, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    if dtype == "float16":
        a = a.astype(F32) if isinstance(a, np.ndarray) else a
        b = b.astype(F32) if isinstance(b, np.ndarray) else b
    res = COMPARE[fn](a, b)
    return _finish(res, "bool", out)


def select(mask: np.ndarray, a, b, dtype: str, out: Optional[np.ndarray]) -> np.ndarray:
    return _finish(np.where(mask != 0, a, b), dtype, out)


def cast(x: np.ndarray, src: str, dst: str, rounding: str, out: Optional[np.ndarray]) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dst == "bool":
            return _finish(x != 0, "bool", out)
        if src in ("float16", "float32") and dst not in ("float16", "float32") and rounding != "trunc":
            x = {"rint": np.rint, "floor": np.floor, "ceil": np.ceil}[rounding](x)
        return _finish(x.astype(DTYPES[dst]), dst, out)


def reduce(fn: str, x: np.ndarray, dtype: str) -> np.ndarray:
    """Reduce the last axis; fp16 accumulates in fp32."""
    with np.errstate(all="ignore"):
        if dtype == "float16":
            x = x.astype(F32)
        res = REDUCE[fn](x, axis=-1)
    return res.astype(DTYPES[dtype])
