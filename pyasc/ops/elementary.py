"""numpy's elementary functions the vector unit has no instruction for, as composites of ones it has.

log1p expm1 sinh cosh arctan arcsin arccos log2 exp2 (x), logaddexp (x1, x2),
square (x), clip (a, a_min, a_max), copy (a).

Eagerly they are numpy's own functions (see numpy_composite.py); on the
chip they are their decompositions, computed in float32 (float16 and small
integer inputs too, rounded once at the end, like the composites in
composite.py). Result dtypes are numpy's float-math rule (int8 -> float16,
int16/int32 -> float32), narrowed. Accuracy, in float32 (both branches of
every `where` are computed, so each is safe where it is not chosen):
- log1p: Goldberg's log(u) * x / (u - 1) with u = 1 + x (x when u == 1):
  a few ulps, also for tiny x where log(1 + x) loses every digit;
- expm1: Kahan's (u - 1) * x / log(u) with u = exp(x) for |x| < 1, exp(x) - 1
  beyond (no cancellation there);
- sinh: from the same expm1 for |x| < 1 (0.5 (E + E / (E + 1))), from exp
  beyond; cosh: 0.5 (exp|x| + 1 / exp|x|). Both overflow a little before
  numpy does in float32 (|x| > 88.7 instead of 89.4): exp(|x|) itself overflows;
- arctan, arcsin, arccos: Cephes' single-precision range reductions and
  minimax polynomials (arctan: |x| > tan(3pi/8) -> pi/2 - atan(1/|x|),
  |x| > tan(pi/8) -> pi/4 + atan((|x|-1)/(|x|+1)); arcsin/arccos: |x| > 0.5 ->
  via sqrt((1 - |x|) / 2)): about 1e-7 relative; |x| > 1 gives NaN, as numpy;
- log2 = log(x) / ln 2; exp2 = exp(x ln 2) (relative error grows like
  |x| * 2^-24 from rounding x ln 2, about 1e-6 at |x| = 16);
- logaddexp = max + log1p(exp(-|x1 - x2|)), equal inputs (including equal
  infinities) x1 + ln 2.
square is x * x and clip is minimum(maximum(a, a_min), a_max) in the
operands' own dtype (numpy's dtype: Python-scalar bounds are weak); copy is
the identity: the graph is functional, so a copy is the same value.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import ufunc_dtype
from .numpy_composite import numpy_composite
from .registry import Category

_LN2 = math.log(2.0)


def _compute_of(dt: str) -> str:
    return "float32" if dt == "float16" else dt


def _float_in(b: Builder, *xs: Any) -> tuple[str, list[Any]]:
    """(result dtype, operands cast to the compute dtype): numpy's float-math dtype of the promoted operands."""
    out = b.float_dtype(b.result_type(*(b.dtype(x) for x in xs)))
    return out, [b.cast(x, _compute_of(out)) for x in xs]


def _s(b: Builder, v: float, like: Any) -> Any:
    return b.scalar(v, like)


def _where(b: Builder, c: Any, x: Any, y: Any) -> Any:
    return b.op("where", c, x, y)


# ---- bodies --------------------------------------------------------------------------------


def _signed(b: Builder, xc: Any, r: Any) -> Any:
    """sign(x) * r for an odd function's |x| result r, and x itself at +-0 (numpy keeps -0.0: sign(-0.0) is 0)."""
    return _where(b, b.op("eq", xc, _s(b, 0.0, xc)), xc, b.op("mul", b.op("sign", xc), r))


def _log1p_of(b: Builder, x: Any) -> Any:
    """log(1 + x) in x's (compute) dtype, accurate for tiny x (Goldberg)."""
    u = b.op("add", _s(b, 1.0, x), x)
    d = b.op("sub", u, _s(b, 1.0, x))
    trick = b.op("mul", b.op("log", u), b.op("div", x, d))
    r = _where(b, b.op("eq", d, _s(b, 0.0, x)), x, trick)
    return _where(b, b.op("eq", x, _s(b, math.inf, x)), x, r)  # log1p(inf) = inf, the trick gives inf/inf


def _expm1_parts(b: Builder, x: Any) -> tuple[Any, Any, Any]:
    """(u = exp(x), u - 1, Kahan's expm1 valid for |x| < 1)."""
    u = b.op("exp", x)
    d = b.op("sub", u, _s(b, 1.0, x))
    kahan = _where(b, b.op("eq", d, _s(b, 0.0, x)), x, b.op("div", b.op("mul", d, x), b.op("log", u)))
    return u, d, kahan


def _log1p(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    return [b.cast(_log1p_of(b, xc), out)]


def _expm1(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    _, d, kahan = _expm1_parts(b, xc)
    small = b.op("lt", b.op("abs", xc), _s(b, 1.0, xc))
    return [b.cast(_where(b, small, kahan, d), out)]


def _sinh(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    a = b.op("abs", xc)
    u, _, e = _expm1_parts(b, a)
    near = b.op("mul", _s(b, 0.5, a), b.op("add", e, b.op("div", e, b.op("add", e, _s(b, 1.0, a)))))
    far = b.op("mul", _s(b, 0.5, a), b.op("sub", u, b.op("reciprocal", u)))
    r = _where(b, b.op("lt", a, _s(b, 1.0, a)), near, far)
    return [b.cast(_signed(b, xc, r), out)]


def _cosh(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    u = b.op("exp", b.op("abs", xc))
    return [b.cast(b.op("mul", _s(b, 0.5, u), b.op("add", u, b.op("reciprocal", u))), out)]


def _poly(b: Builder, z: Any, coeffs: Sequence[float]) -> Any:
    """Horner: ((c0 z + c1) z + c2) ..."""
    p = _s(b, coeffs[0], z)
    for c in coeffs[1:]:
        p = b.op("add", b.op("mul", p, z), _s(b, c, z))
    return p


_ATAN_P = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
_ASIN_P = (4.2163199048e-2, 2.4181311049e-2, 4.5470025998e-2, 7.4953002686e-2, 1.6666752422e-1)


def _arctan(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    a = b.op("abs", xc)
    big = b.op("gt", a, _s(b, 2.414213562373095, a))
    mid = b.op("gt", a, _s(b, 0.41421356237309503, a))
    inv = b.op("neg", b.op("reciprocal", b.op("maximum", a, _s(b, 1.0, a))))  # only chosen where a > 2.4
    shifted = b.op("div", b.op("sub", a, _s(b, 1.0, a)), b.op("add", a, _s(b, 1.0, a)))
    t = _where(b, big, inv, _where(b, mid, shifted, a))
    off = _where(b, big, _s(b, math.pi / 2, a), _where(b, mid, _s(b, math.pi / 4, a), _s(b, 0.0, a)))
    z = b.op("mul", t, t)
    p = b.op("add", b.op("mul", b.op("mul", _poly(b, z, _ATAN_P), z), t), t)
    return [b.cast(_signed(b, xc, b.op("add", off, p)), out)]


def _asin_poly(b: Builder, z: Any, s: Any) -> Any:
    """asin(s) for |s| <= 0.5, z = s * s (Cephes asinf)."""
    return b.op("add", b.op("mul", b.op("mul", _poly(b, z, _ASIN_P), z), s), s)


def _reduced(b: Builder, xc: Any, a: Any, small_s: Any) -> tuple[Any, Any, Any]:
    """(|x| > 0.5, z, s): s = sqrt((1 - |x|) / 2) beyond 0.5 (NaN for |x| > 1, as numpy), else `small_s`."""
    big = b.op("gt", a, _s(b, 0.5, a))
    half = b.op("mul", _s(b, 0.5, a), b.op("sub", _s(b, 1.0, a), a))
    z = _where(b, big, half, b.op("mul", xc, xc))
    s = _where(b, big, b.op("sqrt", z), small_s)
    return big, z, s


def _arcsin(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    a = b.op("abs", xc)
    big, z, s = _reduced(b, xc, a, a)
    p = _asin_poly(b, z, s)
    r = _where(b, big, b.op("sub", _s(b, math.pi / 2, p), b.op("mul", _s(b, 2.0, p), p)), p)
    return [b.cast(_signed(b, xc, r), out)]


def _arccos(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    a = b.op("abs", xc)
    big, z, s = _reduced(b, xc, a, xc)
    p = _asin_poly(b, z, s)
    twice = b.op("mul", _s(b, 2.0, p), p)
    outer = _where(b, b.op("lt", xc, _s(b, 0.0, xc)), b.op("sub", _s(b, math.pi, p), twice), twice)
    r = _where(b, big, outer, b.op("sub", _s(b, math.pi / 2, p), p))
    return [b.cast(r, out)]


def _log2(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    return [b.cast(b.op("mul", b.op("log", xc), _s(b, 1.0 / _LN2, xc)), out)]


def _exp2(b: Builder, x: Any) -> list[Any]:
    out, (xc,) = _float_in(b, x)
    return [b.cast(b.op("exp", b.op("mul", xc, _s(b, _LN2, xc))), out)]


def _logaddexp(b: Builder, x1: Any, x2: Any) -> list[Any]:
    out, (p, q) = _float_in(b, x1, x2)
    m = b.op("maximum", p, q)
    t = b.op("exp", b.op("neg", b.op("abs", b.op("sub", p, q))))
    r = b.op("add", m, _log1p_of(b, t))
    same = b.op("eq", p, q)  # equal infinities: inf - inf is NaN, the answer is the infinity
    return [b.cast(_where(b, same, b.op("add", p, _s(b, _LN2, p)), r), out)]


def _square(b: Builder, x: Any) -> list[Any]:
    xc = b.cast(x, ufunc_dtype(np.square, "square", b.dtype(x)))  # bool squares in int8, as numpy's loop does
    return [b.op("mul", xc, xc)]


def _clip(b: Builder, a: Any, a_min: Any = None, a_max: Any = None, min: Any = None, max: Any = None) -> list[Any]:  # noqa: A002
    a_min = a_min if a_min is not None else min  # numpy 2.1's (and the method's) spelling: min=, max=
    a_max = a_max if a_max is not None else max
    y = a
    if a_min is not None:
        y = b.op("maximum", y, a_min)
    if a_max is not None:
        y = b.op("minimum", y, a_max)
    return [y]


def _copy(b: Builder, a: Any) -> list[Any]:
    return [a]


# ---- public signatures ---------------------------------------------------------------------


def log1p(x):  # noqa: ANN001, ANN201 - the public signature
    """log(1 + x), accurate for small x."""
    return np.log1p(x)


def expm1(x):  # noqa: ANN001, ANN201
    """exp(x) - 1, accurate for small x."""
    return np.expm1(x)


def sinh(x):  # noqa: ANN001, ANN201
    """Hyperbolic sine."""
    return np.sinh(x)


def cosh(x):  # noqa: ANN001, ANN201
    """Hyperbolic cosine."""
    return np.cosh(x)


def arctan(x):  # noqa: ANN001, ANN201
    """Inverse tangent, in (-pi/2, pi/2)."""
    return np.arctan(x)


def arcsin(x):  # noqa: ANN001, ANN201
    """Inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1])."""
    return np.arcsin(x)


def arccos(x):  # noqa: ANN001, ANN201
    """Inverse cosine, in [0, pi] (NaN outside [-1, 1])."""
    return np.arccos(x)


def log2(x):  # noqa: ANN001, ANN201
    """Base-2 logarithm."""
    return np.log2(x)


def exp2(x):  # noqa: ANN001, ANN201
    """2 ** x."""
    return np.exp2(x)


def logaddexp(x1, x2):  # noqa: ANN001, ANN201
    """log(exp(x1) + exp(x2)) without overflow, broadcasting."""
    return np.logaddexp(x1, x2)


def square(x):  # noqa: ANN001, ANN201
    """x * x, keeping the dtype."""
    return np.square(x)


def clip(a, a_min=None, a_max=None, *, min=None, max=None):  # noqa: ANN001, ANN201, A002
    """minimum(maximum(a, a_min), a_max); a bound may be None (no bound on that side), a scalar or a tensor.
    `min=` / `max=` are numpy 2.1's (and `ndarray.clip`'s) names for the same bounds."""
    for old_name, new_name, x, y in (("a_min", "min", a_min, min), ("a_max", "max", a_max, max)):
        if x is not None and y is not None:
            raise ValueError(f"clip: pass {old_name} or {new_name}, not both")
    a_min = a_min if a_min is not None else min
    a_max = a_max if a_max is not None else max
    if a_min is None and a_max is None:
        raise ValueError("clip: at least one of a_min and a_max must be given")
    return np.clip(a, a_min, a_max)


def copy(a):  # noqa: ANN001, ANN201
    """A copy of `a` (in a kernel every value is already its own: the copy is free)."""
    return np.array(a, copy=True)


_CLIP_BOUNDS = ("a_min", "a_max", "min", "max")


def _clip_eager(a: Any, *bounds: Any, **has: bool) -> Any:
    rest = list(bounds)
    given = {n: rest.pop(0) if has.get(f"has_{n}", False) else None for n in _CLIP_BOUNDS}
    return clip(a, given["a_min"], given["a_max"], min=given["min"], max=given["max"])


def _check_clip(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    for old_name, new_name in (("a_min", "min"), ("a_max", "max")):
        if attrs.get(f"has_{old_name}", False) and attrs.get(f"has_{new_name}", False):
            raise InferError(f"pass {old_name} or {new_name}, not both")
    if not any(attrs.get(f"has_{n}", False) for n in _CLIP_BOUNDS):
        raise InferError("at least one of a_min and a_max must be given")


#: numpy 2's array-API spellings of the inverse trigonometric functions
_SHORT = {"arctan": ("atan",), "arcsin": ("asin",), "arccos": ("acos",)}

for _name, _body, _api, _np in (
    ("log1p", _log1p, log1p, np.log1p), ("expm1", _expm1, expm1, np.expm1), ("sinh", _sinh, sinh, np.sinh),
    ("cosh", _cosh, cosh, np.cosh), ("arctan", _arctan, arctan, np.arctan), ("arcsin", _arcsin, arcsin, np.arcsin),
    ("arccos", _arccos, arccos, np.arccos), ("log2", _log2, log2, np.log2), ("exp2", _exp2, exp2, np.exp2),
):
    numpy_composite(_name, _body, _api, _np, numpy_names=(_name, *_SHORT.get(_name, ())))

numpy_composite("logaddexp", _logaddexp, logaddexp, np.logaddexp, category=Category.BROADCAST,
                tensor_params=("x1", "x2"), numpy_names=("logaddexp",))
numpy_composite("square", _square, square, np.square, numpy_names=("square",), expensive=False)
numpy_composite("clip", _clip, clip, _clip_eager, category=Category.BROADCAST, tensor_params=("a", *_CLIP_BOUNDS),
                optional=_CLIP_BOUNDS, numpy_names=("clip",), check=_check_clip, expensive=False)
numpy_composite("copy", _copy, copy, copy, tensor_params=("a",), numpy_names=("copy",), expensive=False)
