"""numpy's sign tests and integer divisors: fabs positive signbit isposinf isneginf (x), gcd lcm (x1, x2).

fabs(x): |x| as a float (numpy has float loops only: int8/uint8/bool -> float16, int16/int32 -> float32,
  its float64 narrowed). positive(x): x itself (numpy refuses bool).
signbit(x) -> bool: x < 0 and -0.0 (its reciprocal is -inf); integers x < 0, bool False. A NaN's sign bit
  cannot be read without reinterpreting its bits, which the vector unit has no op for: signbit(NaN) is False
  for either NaN (numpy: True for a NaN whose sign bit is set, e.g. -np.nan).
isposinf / isneginf(x) -> bool: x == +inf / -inf; integers and bool have no infinity (all False).
gcd / lcm (integers, broadcasting, numpy's promoted dtype): Euclid's algorithm on |x1|, |x2|, unrolled for
  the most steps the dtype can need (consecutive Fibonacci numbers are the worst pair: 12 for 8 bits, 23 for 16,
  46 for 32); gcd(0, 0) = 0; floor-mod steps keep gcd up to sign when |int_min| wraps, so the last |.| is numpy's; lcm = |x1| // gcd * |x2|, 0 when either is 0. Like numpy's, |int_min| wraps.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS
from .numpy_composite import numpy_sugar_op


def _all_false(b: Builder, x: Any) -> Any:
    """A bool tensor of x's shape, False everywhere."""
    xi = b.cast(x, "int8")
    return b.op("ne", xi, xi)


def _fabs(b: Builder, x: Any) -> list[Any]:
    return [b.op("abs", b.cast(x, b.float_dtype(b.dtype(x))))]


def _positive(b: Builder, x: Any) -> list[Any]:
    return [x]


def _signbit(b: Builder, x: Any) -> list[Any]:
    dt = b.dtype(x)
    if dt == "bool":
        return [_all_false(b, x)]
    zero = b.const(0, dt)
    if dt not in FLOATS:
        return [b.op("lt", x, zero)]
    return [b.op("bitwise_or", b.op("lt", x, zero),
                 b.op("bitwise_and", b.op("eq", x, zero), b.op("lt", b.op("reciprocal", x), zero)))]


def _infinity(sign: float):
    def body(b: Builder, x: Any) -> list[Any]:
        if b.dtype(x) not in FLOATS:
            return [_all_false(b, x)]
        return [b.op("eq", x, b.scalar(sign * np.inf, x))]
    return body


def _euclid_steps(dt: str) -> int:
    """The most remainder steps Euclid's algorithm needs on values up to the dtype's largest magnitude."""
    top = max(abs(int(np.iinfo(dtypes.to_numpy(dt)).min)), int(np.iinfo(dtypes.to_numpy(dt)).max))
    a, b, steps = 1, 1, 0
    while b <= top:
        a, b, steps = b, a + b, steps + 1
    return steps


def _gcd_of(b: Builder, x1: Any, x2: Any) -> tuple[Any, Any, Any, str]:
    """(gcd, |x1|, |x2|, dtype) in the promoted integer dtype."""
    dt = b.result_type(b.dtype(x1), b.dtype(x2))
    p, q = b.op("abs", b.cast(x1, dt)), b.op("abs", b.cast(x2, dt))
    zero, one = b.const(0, dt), b.const(1, dt)
    u, v = p, q
    for _ in range(_euclid_steps(dt)):
        more = b.op("ne", v, zero)
        rest = b.op("mod", u, b.op("where", more, v, one))
        u, v = b.op("where", more, v, u), b.op("where", more, rest, zero)
    return b.op("abs", u), p, q, dt  # |int_min| wraps negative: the floor-mod steps then end at -gcd


def _gcd(b: Builder, x1: Any, x2: Any) -> list[Any]:
    return [_gcd_of(b, x1, x2)[0]]


def _lcm(b: Builder, x1: Any, x2: Any) -> list[Any]:
    g, p, q, dt = _gcd_of(b, x1, x2)
    zero = b.const(0, dt)
    none = b.op("eq", g, zero)
    return [b.op("where", none, zero, b.op("mul", b.op("floordiv", p, b.op("where", none, b.const(1, dt), g)), q))]


def _check_positive(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if ts[0].dtype == "bool":
        raise InferError("positive: ufunc 'positive' did not contain a loop with signature matching types bool "
                         "(numpy refuses bool)")


def _check_integers(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        if any(t.dtype in FLOATS for t in ts) or all(t.dtype == "bool" for t in ts):  # numpy: int with bool works
            raise InferError(f"{name}: ufunc '{name}' did not contain a loop with signature matching types "
                             f"{ts[0].dtype} and {ts[1].dtype}: integers only")
    return check


# ---- the public signatures (numpy's names) ----------------------------------------------------


def fabs(x):  # noqa: ANN001, ANN201 - numpy's signature
    """The absolute value, as a float."""
    return np.fabs(x)


def positive(x):  # noqa: ANN001, ANN201
    """+x: x itself."""
    return np.positive(x)


def signbit(x):  # noqa: ANN001, ANN201
    """Where the sign bit is set: x < 0, and -0.0."""
    return np.signbit(x)


def isposinf(x):  # noqa: ANN001, ANN201
    """Where x is +inf."""
    return np.isposinf(x)


def isneginf(x):  # noqa: ANN001, ANN201
    """Where x is -inf."""
    return np.isneginf(x)


def gcd(x1, x2):  # noqa: ANN001, ANN201
    """The greatest common divisor of |x1| and |x2| (integers)."""
    return np.gcd(x1, x2)


def lcm(x1, x2):  # noqa: ANN001, ANN201
    """The least common multiple of |x1| and |x2| (integers)."""
    return np.lcm(x1, x2)


for _name, _body, _api, _params, _check in (
    ("fabs", _fabs, fabs, ("x",), None),
    ("positive", _positive, positive, ("x",), _check_positive),
    ("signbit", _signbit, signbit, ("x",), None),
    ("isposinf", _infinity(1.0), isposinf, ("x",), None),
    ("isneginf", _infinity(-1.0), isneginf, ("x",), None),
    ("gcd", _gcd, gcd, ("x1", "x2"), _check_integers("gcd")),
    ("lcm", _lcm, lcm, ("x1", "x2"), _check_integers("lcm")),
):
    numpy_sugar_op(_name, _body, _api, getattr(np, _name), tensor_params=_params, numpy_names=(_name,),
                   expensive=_name in ("gcd", "lcm"), **({"check": _check} if _check else {}))
