"""numpy's tangent, two-argument arctangent, inverse hyperbolic functions and logaddexp2, as composites.

All compute in float32 (float16 and integer inputs too, rounded once at the end); result dtypes are numpy's
float-math rule narrowed (int8/uint8/bool -> float16, int16/int32 -> float32). Accuracy in float32, against
numpy's float32 (both branches of every `where` are computed, so each is safe where it is not chosen):
- tan(x) = sin(x) / cos(x): the chip's sin and cos are each accurate to an ulp after their own range
  reduction, so the quotient is a few ulps even beside pi/2 (where cos is small but still relatively exact);
- arctan2(x1, x2): arctan of min(|x1|, |x2|) / max(|x1|, |x2|) in [0, 1] (no overflow, no 0/0, inf/inf read
  as 1), moved to its octant by pi/2 - r and pi - r, with x1's sign; signed zeros and infinities as C's atan2
  (atan2(+-0, -0) = +-pi, atan2(+-inf, -inf) = +-3pi/4, ...), NaN in either gives NaN;
- arcsinh: x itself below 2**-12 (keeps -0.0), log1p(a + a^2 / (1 + sqrt(1 + a^2))) up to 2,
  log(2a + 1 / (sqrt(a^2 + 1) + a)) up to 2**12, log(a) + ln 2 beyond (a^2 would overflow), with x's sign;
- arccosh: NaN below 1, log1p(t + sqrt(2t + t^2)) with t = x - 1 (exact) up to 2, log(2x - 1 / (x + sqrt(x^2 -
  1))) up to 2**12, log(x) + ln 2 beyond;
- arctanh: x below 2**-12, 0.5 log1p(2a + 2a^2 / (1 - a)) below 0.5, 0.5 log1p(2a / (1 - a)) beyond, with x's
  sign (+-inf at +-1, NaN beyond);
- logaddexp2(x1, x2) = max + log1p(2**-|x1 - x2|) / ln 2, equal inputs (equal infinities too) x1 + 1.
numpy's short spellings (np.atan2, np.asinh, np.acosh, np.atanh) name the same ops.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .builder import Builder
from .numpy_composite import numpy_sugar_op

_LN2 = math.log(2.0)
_TINY = 2.0 ** -12  # below it asinh(x) and atanh(x) are x to float32 precision (the next term is x^3 / 6)
_HUGE = 2.0 ** 12  # above it sqrt(x^2 +- 1) is x to float32 precision


def _floats(b: Builder, *xs: Any) -> tuple[list[Any], str]:
    """The operands in the dtype composites compute in (float32 for float16 and ints), and the result dtype."""
    out = b.float_dtype(b.result_type(*(b.dtype(x) for x in xs)))
    work = "float32" if out == "float16" else out
    return [b.cast(x, work) for x in xs], out


def _c(b: Builder, v: float, like: Any) -> Any:
    return b.scalar(v, like)


def _where(b: Builder, c: Any, x: Any, y: Any) -> Any:
    return b.op("where", c, x, y)


def _tan(b: Builder, x: Any) -> list[Any]:
    (v,), out = _floats(b, x)
    return [b.cast(b.op("div", b.op("sin", v), b.op("cos", v)), out)]


def _arctan2(b: Builder, x1: Any, x2: Any) -> list[Any]:
    (y, x), out = _floats(b, x1, x2)
    ay, ax = b.op("abs", y), b.op("abs", x)
    lo, hi = b.op("minimum", ay, ax), b.op("maximum", ay, ax)
    both_inf = b.op("bitwise_and", b.op("isinf", ay), b.op("isinf", ax))
    both_zero = b.op("eq", hi, _c(b, 0.0, hi))
    t = b.op("div", lo, _where(b, both_zero, _c(b, 1.0, hi), hi))
    t = _where(b, both_inf, _c(b, 1.0, t), t)
    r = b.op("arctan", t)
    r = _where(b, b.op("gt", ay, ax), b.op("sub", _c(b, math.pi / 2, r), r), r)
    r = _where(b, b.op("signbit", x), b.op("sub", _c(b, math.pi, r), r), r)  # -0.0 too: atan2(0, -0) = pi
    return [b.cast(_where(b, b.op("signbit", y), b.op("neg", r), r), out)]


def _arcsinh(b: Builder, x: Any) -> list[Any]:
    (v,), out = _floats(b, x)
    a = b.op("abs", v)
    one = _c(b, 1.0, a)
    root = b.op("sqrt", b.op("add", b.op("mul", a, a), one))  # sqrt(a^2 + 1)
    near = b.op("log1p", b.op("add", a, b.op("div", b.op("mul", a, a), b.op("add", one, root))))
    mid = b.op("log", b.op("add", b.op("mul", _c(b, 2.0, a), a), b.op("reciprocal", b.op("add", root, a))))
    far = b.op("add", b.op("log", a), _c(b, _LN2, a))
    r = _where(b, b.op("le", a, _c(b, 2.0, a)), near, _where(b, b.op("le", a, _c(b, _HUGE, a)), mid, far))
    r = _where(b, b.op("lt", v, _c(b, 0.0, v)), b.op("neg", r), r)
    return [b.cast(_where(b, b.op("lt", a, _c(b, _TINY, a)), v, r), out)]


def _arccosh(b: Builder, x: Any) -> list[Any]:
    (v,), out = _floats(b, x)
    one = _c(b, 1.0, v)
    t = b.op("sub", v, one)
    near = b.op("log1p", b.op("add", t, b.op("sqrt", b.op("add", b.op("mul", _c(b, 2.0, t), t), b.op("mul", t, t)))))
    root = b.op("sqrt", b.op("sub", b.op("mul", v, v), one))
    mid = b.op("log", b.op("sub", b.op("mul", _c(b, 2.0, v), v), b.op("reciprocal", b.op("add", v, root))))
    far = b.op("add", b.op("log", v), _c(b, _LN2, v))
    r = _where(b, b.op("le", v, _c(b, 2.0, v)), near, _where(b, b.op("le", v, _c(b, _HUGE, v)), mid, far))
    return [b.cast(_where(b, b.op("lt", v, one), _c(b, math.nan, v), r), out)]


def _arctanh(b: Builder, x: Any) -> list[Any]:
    (v,), out = _floats(b, x)
    a = b.op("abs", v)
    one, two = _c(b, 1.0, a), _c(b, 2.0, a)
    twice = b.op("mul", two, a)
    rest = b.op("sub", one, a)
    near = b.op("log1p", b.op("add", twice, b.op("div", b.op("mul", twice, a), rest)))
    far = b.op("log1p", b.op("div", twice, rest))
    r = b.op("mul", _c(b, 0.5, a), _where(b, b.op("lt", a, _c(b, 0.5, a)), near, far))
    r = _where(b, b.op("lt", v, _c(b, 0.0, v)), b.op("neg", r), r)
    return [b.cast(_where(b, b.op("lt", a, _c(b, _TINY, a)), v, r), out)]


def _logaddexp2(b: Builder, x1: Any, x2: Any) -> list[Any]:
    (p, q), out = _floats(b, x1, x2)
    m = b.op("maximum", p, q)
    t = b.op("exp2", b.op("neg", b.op("abs", b.op("sub", p, q))))
    r = b.op("add", m, b.op("mul", b.op("log1p", t), _c(b, 1.0 / _LN2, t)))
    same = b.op("eq", p, q)  # equal infinities: inf - inf is NaN, the answer is the infinity
    return [b.cast(_where(b, same, b.op("add", p, _c(b, 1.0, p)), r), out)]


# ---- the public signatures (numpy's names) ----------------------------------------------------


def tan(x):  # noqa: ANN001, ANN201 - numpy's signature
    """Tangent, element by element."""
    return np.tan(x)


def arctan2(x1, x2):  # noqa: ANN001, ANN201
    """The angle of the point (x2, x1) in (-pi, pi], quadrant by the signs of both (signed zeros too)."""
    return np.arctan2(x1, x2)


def arcsinh(x):  # noqa: ANN001, ANN201
    """Inverse hyperbolic sine."""
    return np.arcsinh(x)


def arccosh(x):  # noqa: ANN001, ANN201
    """Inverse hyperbolic cosine (NaN below 1)."""
    return np.arccosh(x)


def arctanh(x):  # noqa: ANN001, ANN201
    """Inverse hyperbolic tangent (+-inf at +-1, NaN beyond)."""
    return np.arctanh(x)


def logaddexp2(x1, x2):  # noqa: ANN001, ANN201
    """log2(2**x1 + 2**x2) without overflow, broadcasting."""
    return np.logaddexp2(x1, x2)


_TWO = ("x1", "x2")
for _name, _body, _api, _params, _np in (
    ("tan", _tan, tan, ("x",), ("tan",)),
    ("arctan2", _arctan2, arctan2, _TWO, ("arctan2", "atan2")),
    ("arcsinh", _arcsinh, arcsinh, ("x",), ("arcsinh", "asinh")),
    ("arccosh", _arccosh, arccosh, ("x",), ("arccosh", "acosh")),
    ("arctanh", _arctanh, arctanh, ("x",), ("arctanh", "atanh")),
    ("logaddexp2", _logaddexp2, logaddexp2, _TWO, ("logaddexp2",)),
):
    numpy_sugar_op(_name, _body, _api, getattr(np, _name), tensor_params=_params, numpy_names=_np)
