"""More of numpy's elementwise functions, as composites of the vector unit's ops.

log10 (x): log(x) / ln 10 in float32, numpy's float-math dtype.
isnan isinf isfinite (x) -> bool: NaN is the value that differs from itself; ints and bool are finite.
logical_and logical_or logical_xor (x1, x2), logical_not (x) -> bool: truth is "not zero".
round / around / rint (a[, decimals]): round half to even, as numpy: r = floor(y), up when the rest is
  over a half or exactly a half with r odd; `decimals` scales by 10**decimals first and back after (as
  numpy does, so the same double roundings); integers are returned unchanged for decimals >= 0.
trunc / fix (x): toward zero (integers and bool unchanged, as numpy 2 keeps them). fmax fmin (x1, x2): maximum / minimum ignoring NaN (the other operand wins).
nan_to_num (x, nan=0.0, posinf=None, neginf=None): NaN -> nan, +-inf -> the dtype's largest finite values
  (or the given ones); integers unchanged.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS
from .numpy_composite import numpy_composite
from .registry import Category

_LN10 = math.log(10.0)


def _is_float(b: Builder, x: Any) -> bool:
    return b.dtype(x) in FLOATS or b.dtype(x) in ("float64",)


def _log10(b: Builder, x: Any) -> list[Any]:
    out = b.float_dtype(b.dtype(x))
    xc = b.cast(x, "float32" if out == "float16" else out)
    return [b.cast(b.op("mul", b.op("log", xc), b.scalar(1.0 / _LN10, xc)), out)]


def _isnan(b: Builder, x: Any) -> list[Any]:
    if not _is_float(b, x):
        return [b.op("ne", b.cast(x, "int8"), b.cast(x, "int8"))]  # all False, of x's shape
    return [b.op("ne", x, x)]


def _isinf(b: Builder, x: Any) -> list[Any]:
    if not _is_float(b, x):
        return [b.op("ne", b.cast(x, "int8"), b.cast(x, "int8"))]
    return [b.op("eq", b.op("abs", x), b.scalar(math.inf, x))]


def _isfinite(b: Builder, x: Any) -> list[Any]:
    if not _is_float(b, x):
        return [b.op("eq", b.cast(x, "int8"), b.cast(x, "int8"))]
    return [b.op("lt", b.op("abs", x), b.scalar(math.inf, x))]  # NaN compares false


def _truth(b: Builder, x: Any) -> Any:
    return x if b.dtype(x) == "bool" else b.op("ne", x, b.const(0, b.dtype(x)))


def _logical(op: str):
    def body(b: Builder, x1: Any, x2: Any) -> list[Any]:
        return [b.op(op, _truth(b, x1), _truth(b, x2))]
    return body


def _logical_not(b: Builder, x: Any) -> list[Any]:
    return [b.op("invert", _truth(b, x))]


def _round_half_even(b: Builder, y: Any) -> Any:
    r = b.op("floor", y)
    d = b.op("sub", y, r)
    half = b.scalar(0.5, y)
    odd = b.op("ne", b.op("sub", r, b.op("mul", b.op("floor", b.op("mul", r, half)), b.scalar(2.0, y))),
               b.scalar(0.0, y))
    up = b.op("bitwise_or", b.op("gt", d, half), b.op("bitwise_and", b.op("eq", d, half), odd))
    return b.op("add", r, b.cast(up, b.dtype(y)))


def _round(b: Builder, a: Any, *, decimals: int = 0) -> list[Any]:
    if b.dtype(a) == "bool":
        a = b.cast(a, "float16")  # numpy rounds bool in float16
    dt = b.dtype(a)
    if dt not in FLOATS:
        if decimals >= 0:
            return [a]
        scale = b.const(10 ** (-decimals), dt)
        q = b.op("floordiv", a, scale)  # numpy: round(x / 10**k) * 10**k in the integer dtype, half to even
        rest = b.op("sub", a, b.op("mul", q, scale))
        twice = b.op("mul", rest, b.const(2, dt))
        up = b.op("bitwise_or", b.op("gt", twice, scale),
                  b.op("bitwise_and", b.op("eq", twice, scale), b.op("ne", b.op("mod", q, b.const(2, dt)),
                                                                     b.const(0, dt))))
        return [b.op("mul", b.op("add", q, b.cast(up, dt)), scale)]
    xc = b.cast(a, "float32")
    if decimals == 0:
        return [b.cast(_round_half_even(b, xc), dt)]
    scale = b.scalar(10.0 ** abs(decimals), xc)
    y = b.op("mul", xc, scale) if decimals > 0 else b.op("div", xc, scale)
    r = _round_half_even(b, y)
    return [b.cast(b.op("div", r, scale) if decimals > 0 else b.op("mul", r, scale), dt)]


def _rint(b: Builder, x: Any) -> list[Any]:
    out = b.float_dtype(b.dtype(x))
    return [b.cast(_round_half_even(b, b.cast(x, "float32")), out)]


def _trunc(b: Builder, x: Any) -> list[Any]:
    if b.dtype(x) not in FLOATS:
        return [x]  # numpy 2 keeps integers (and bool) as they are
    return [b.op("where", b.op("lt", x, b.scalar(0.0, x)), b.op("ceil", x), b.op("floor", x))]


def _fminmax(op: str):
    def body(b: Builder, x1: Any, x2: Any) -> list[Any]:
        m = b.op(op, x1, x2)
        dt = b.dtype(m)
        if dt not in FLOATS:
            return [m]
        p, q = b.cast(x1, dt), b.cast(x2, dt)
        return [b.op("where", b.op("ne", p, p), q, b.op("where", b.op("ne", q, q), p, m))]
    return body


def _nan_to_num(b: Builder, x: Any, *, copy: bool = True, nan: float = 0.0, posinf: Any = None,
                neginf: Any = None) -> list[Any]:
    dt = b.dtype(x)
    if dt not in FLOATS:
        return [x]
    info = np.finfo(dt)
    hi = float(info.max) if posinf is None else float(posinf)
    lo = float(info.min) if neginf is None else float(neginf)
    y = b.op("where", b.op("eq", x, b.scalar(math.inf, x)), b.scalar(hi, x), x)
    y = b.op("where", b.op("eq", x, b.scalar(-math.inf, x)), b.scalar(lo, x), y)
    return [b.op("where", b.op("ne", x, x), b.scalar(float(nan), x), y)]


def _check_round(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    d = attrs.get("decimals", 0)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise InferError(f"decimals must be an int, got {d!r}")


# ---- public signatures (numpy's) ---------------------------------------------------------------------


def log10(x):  # noqa: ANN001, ANN201 - the public signature
    """Base-10 logarithm."""
    return np.log10(x)


def isnan(x):  # noqa: ANN001, ANN201
    """Where x is NaN."""
    return np.isnan(x)


def isinf(x):  # noqa: ANN001, ANN201
    """Where x is +inf or -inf."""
    return np.isinf(x)


def isfinite(x):  # noqa: ANN001, ANN201
    """Where x is neither infinite nor NaN."""
    return np.isfinite(x)


def logical_and(x1, x2):  # noqa: ANN001, ANN201
    """Elementwise truth of x1 and x2."""
    return np.logical_and(x1, x2)


def logical_or(x1, x2):  # noqa: ANN001, ANN201
    """Elementwise truth of x1 or x2."""
    return np.logical_or(x1, x2)


def logical_xor(x1, x2):  # noqa: ANN001, ANN201
    """Elementwise truth of exactly one of x1, x2."""
    return np.logical_xor(x1, x2)


def logical_not(x):  # noqa: ANN001, ANN201
    """Elementwise falsehood of x."""
    return np.logical_not(x)


def round(a, decimals=0):  # noqa: A001, ANN001, ANN201 - numpy's name
    """Round half to even, to `decimals` places."""
    return np.round(a, decimals)


def rint(x):  # noqa: ANN001, ANN201
    """Round half to even to the nearest integer value (a float)."""
    return np.rint(x)


def trunc(x):  # noqa: ANN001, ANN201
    """Toward zero."""
    return np.trunc(x)


def fmax(x1, x2):  # noqa: ANN001, ANN201
    """Elementwise maximum, ignoring NaN."""
    return np.fmax(x1, x2)


def fmin(x1, x2):  # noqa: ANN001, ANN201
    """Elementwise minimum, ignoring NaN."""
    return np.fmin(x1, x2)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):  # noqa: ANN001, ANN201
    """NaN and infinities replaced by finite numbers."""
    return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)


def _round_eager(a: Any, *, decimals: int = 0) -> Any:
    return np.round(a, decimals)


def _nan_to_num_eager(x: Any, **attrs: Any) -> Any:
    return np.nan_to_num(x, **attrs)


for _name, _body, _api, _np, _names in (
    ("log10", _log10, log10, np.log10, ("log10",)),
    ("isnan", _isnan, isnan, np.isnan, ("isnan",)),
    ("isinf", _isinf, isinf, np.isinf, ("isinf",)),
    ("isfinite", _isfinite, isfinite, np.isfinite, ("isfinite",)),
    ("logical_not", _logical_not, logical_not, np.logical_not, ("logical_not",)),
    ("rint", _rint, rint, np.rint, ("rint",)),
    ("trunc", _trunc, trunc, np.trunc, ("trunc", "fix")),
):
    numpy_composite(_name, _body, _api, _np, numpy_names=_names,
                    expensive=_name in ("log10", "rint"))  # the tests, logic and trunc are a few cheap ops

for _name, _body, _api, _np in (
    ("logical_and", _logical("bitwise_and"), logical_and, np.logical_and),
    ("logical_or", _logical("bitwise_or"), logical_or, np.logical_or),
    ("logical_xor", _logical("bitwise_xor"), logical_xor, np.logical_xor),
    ("fmax", _fminmax("maximum"), fmax, np.fmax),
    ("fmin", _fminmax("minimum"), fmin, np.fmin),
):
    numpy_composite(_name, _body, _api, _np, category=Category.BROADCAST, tensor_params=("x1", "x2"),
                    numpy_names=(_name,), expensive=False)

numpy_composite("round", _round, round, _round_eager, tensor_params=("a",), numpy_names=("round", "around"),
                check=_check_round, expensive=False)
numpy_composite("nan_to_num", _nan_to_num, nan_to_num, _nan_to_num_eager, numpy_names=("nan_to_num",),
                expensive=False)
