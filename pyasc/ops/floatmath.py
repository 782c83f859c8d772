"""More of numpy's elementwise math, as composites of the primitives (numpy's result dtypes, narrowed).

hypot(x1, x2): sqrt(x1*x1 + x2*x2) in float32 (float16 rounded once), inf where either is infinite (numpy's
  rule, even beside a NaN). No rescaling: |x| beyond ~1.8e19 overflows where numpy's does not.
copysign(x1, x2): |x1| with the sign of x2 (-0.0 counts as negative; a NaN x2 counts as positive).
fmod(x1, x2): C's remainder, with the sign of x1: numpy's remainder moved back by x2 where the signs differ.
modf(x) -> (fractional part, integral part); divmod(x1, x2) -> (floor_divide, remainder).
ldexp(x1, x2): x1 * 2**x2 for an integer x2 (numpy refuses a float exponent).
frexp(x) -> (mantissa in [0.5, 1), int32 exponent): exp2/log2 estimates corrected by one step each way.
float_power(x1, x2): numpy computes in float64; pyasc narrows float64 to float32 (README dtype rules).
cbrt(x): |x|**(1/3) refined by one Newton step, with x's sign.
deg2rad / radians, rad2deg / degrees: times numpy's float32 constants (float16 through float32).
sinc(x): sin(pi x) / (pi x), 1 at 0.
left_shift / right_shift (integers): times / floor-divided by 2**x2 (a shift past the width gives numpy's 0 / -1).
real, imag, conj, conjugate, angle of real tensors: x, zeros, x, x and 0 or pi (deg=True: 180) by sign.
Float results of integer inputs are float32 (numpy: float64), bool and 8-bit ints float16 as numpy's.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS
from .numpy_composite import numpy_sugar_op

_F32_DEG2RAD = float(np.float32(np.float32(np.pi) / np.float32(180.0)))
_F32_RAD2DEG = float(np.float32(np.float32(180.0) / np.float32(np.pi)))


def _floats(b: Builder, *xs: Any) -> tuple[list[Any], str, str]:
    """The operands in the dtype composites compute in, the result's float dtype, and that compute dtype."""
    out = b.float_dtype(b.result_type(*(b.dtype(x) for x in xs)))
    work = "float32" if out == "float16" else out
    return [b.cast(x, work) for x in xs], out, work


def _negative(b: Builder, x: Any, dt: str) -> Any:
    """x < 0, with -0.0 negative too (its reciprocal is -inf)."""
    zero = b.const(0.0, dt)
    return b.op("bitwise_or", b.op("lt", x, zero),
                b.op("bitwise_and", b.op("eq", x, zero), b.op("lt", b.op("reciprocal", x), zero)))


def _with_sign(b: Builder, mag: Any, neg: Any) -> Any:
    return b.op("where", neg, b.op("neg", mag), mag)


def _hypot(b: Builder, x1: Any, x2: Any) -> list[Any]:
    (x, y), out, work = _floats(b, x1, x2)
    r = b.op("sqrt", b.op("add", b.op("mul", x, x), b.op("mul", y, y)))
    inf = b.op("bitwise_or", b.op("isinf", x), b.op("isinf", y))
    return [b.cast(b.op("where", inf, b.const(math.inf, work), r), out)]


def _copysign(b: Builder, x1: Any, x2: Any) -> list[Any]:
    (x, y), out, work = _floats(b, x1, x2)
    return [b.cast(_with_sign(b, b.op("abs", x), _negative(b, y, work)), out)]


def _fmod(b: Builder, x1: Any, x2: Any) -> list[Any]:
    dt = b.result_type(b.dtype(x1), b.dtype(x2))
    dt = "int8" if dt == "bool" else dt
    x, y = b.cast(x1, dt), b.cast(x2, dt)
    r = b.op("mod", x, y)
    zero = b.const(0, dt)
    moved = b.op("bitwise_and", b.op("ne", r, zero), b.op("ne", b.op("lt", x, zero), b.op("lt", y, zero)))
    out = b.op("where", moved, b.op("sub", r, y), r)
    if dt in FLOATS:  # fmod(x, +-inf) is x for a finite x (numpy's remainder there is inf or -0)
        out = b.op("where", b.op("bitwise_and", b.op("isinf", y), b.op("isfinite", x)), x, out)
    return [out]


def _modf(b: Builder, x: Any) -> list[Any]:
    (v,), out, work = _floats(b, x)
    whole = b.op("trunc", v)
    frac = b.op("where", b.op("isinf", v), b.const(0.0, work), b.op("sub", v, whole))
    frac = _with_sign(b, b.op("abs", frac), b.op("lt", v, b.const(0.0, work)))  # -2.0 -> (-0.0, -2.0), as numpy
    return [b.cast(frac, out), b.cast(whole, out)]


def _divmod(b: Builder, x1: Any, x2: Any) -> list[Any]:
    dt = b.result_type(b.dtype(x1), b.dtype(x2))
    dt = "int8" if dt == "bool" else dt
    x, y = b.cast(x1, dt), b.cast(x2, dt)
    return [b.op("floordiv", x, y), b.op("mod", x, y)]


def _ldexp(b: Builder, x1: Any, x2: Any) -> list[Any]:
    (x,), out, work = _floats(b, x1)
    e = b.cast(x2, "int32")
    # 2**e as two exact halves: 2**e alone overflows float32 where x1 * 2**e does not (e up to 254)
    half = b.op("floordiv", e, b.const(2, "int32"))
    p1 = b.op("exp2", b.cast(half, work))
    p2 = b.op("exp2", b.cast(b.op("sub", e, half), work))
    return [b.cast(b.op("mul", b.op("mul", x, p1), p2), out)]


def _check_ldexp(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    if ts[1].dtype in FLOATS or ts[1].dtype == "bool" and ts[0].dtype == "bool":
        raise InferError(f"ldexp: the exponent x2 must be an integer tensor, got {ts[1].dtype} (numpy: ufunc "
                         "'ldexp' not supported for the input types)")


def _frexp(b: Builder, x: Any) -> list[Any]:
    (v,), out, work = _floats(b, x)
    zero, one = b.const(0.0, work), b.const(1.0, work)
    a = b.op("abs", v)
    special = b.op("bitwise_or", b.op("eq", a, zero), b.op("invert", b.op("isfinite", a)))
    safe = b.op("where", special, one, a)
    e = b.op("add", b.op("floor", b.op("log2", safe)), one)
    m = b.op("mul", safe, b.op("exp2", b.op("neg", e)))
    for test, step in (("ge", 1.0), ("lt", -1.0)):  # log2 is an estimate: at most one off either way
        bound = b.const(1.0 if step > 0 else 0.5, work)
        off = b.op(test, m, bound)
        e = b.op("where", off, b.op("add", e, b.const(step, work)), e)
        m = b.op("where", off, b.op("mul", m, b.const(0.5 if step > 0 else 2.0, work)), m)
    mant = b.op("where", special, v, _with_sign(b, m, b.op("lt", v, zero)))
    exp = b.op("where", special, b.const(0, "int32"), b.cast(e, "int32"))
    return [b.cast(mant, out), exp]


def _float_power(b: Builder, x1: Any, x2: Any) -> list[Any]:
    return [b.op("pow", b.cast(x1, "float32"), b.cast(x2, "float32"))]


def _cbrt(b: Builder, x: Any) -> list[Any]:
    (v,), out, work = _floats(b, x)
    a = b.op("abs", v)
    y = b.op("pow", a, b.const(1.0 / 3.0, work))
    good = b.op("bitwise_and", b.op("gt", y, b.const(0.0, work)), b.op("isfinite", y))
    y2 = b.op("mul", y, y)
    newton = b.op("sub", y, b.op("div", b.op("sub", b.op("mul", y2, y), a), b.op("mul", b.const(3.0, work), y2)))
    y = b.op("where", good, newton, y)
    return [b.cast(_with_sign(b, y, b.op("lt", v, b.const(0.0, work))), out)]


def _scaled(factor: float):
    def body(b: Builder, x: Any) -> list[Any]:
        (v,), out, work = _floats(b, x)
        return [b.cast(b.op("mul", v, b.const(factor, work)), out)]
    return body


def _sinc(b: Builder, x: Any) -> list[Any]:
    (v,), out, work = _floats(b, x)
    zero = b.op("eq", v, b.const(0.0, work))
    y = b.op("mul", b.op("where", zero, b.const(1e-20, work), v), b.const(math.pi, work))
    return [b.cast(b.op("div", b.op("sin", y), y), out)]


def _shift_operands(b: Builder, x1: Any, x2: Any) -> tuple[Any, Any, str, int, bool]:
    dt = b.result_type(b.dtype(x1), b.dtype(x2))
    dt = "int8" if dt == "bool" else dt
    info = np.iinfo(dtypes.to_numpy(dt))
    return b.cast(x1, dt), b.cast(x2, dt), dt, info.bits, info.min < 0


def _power_of_two(b: Builder, n: Any, dt: str, top: int) -> Any:
    """2**n in `dt` for n clipped to [0, top], exact: the product of the powers 2**(2**j) n's bits pick."""
    n = b.op("minimum", b.op("maximum", n, b.const(0, dt)), b.const(top, dt))
    out = b.const(1, dt)
    for j in range(max(1, top.bit_length())):
        bit = b.op("bitwise_and", n, b.const(1 << j, dt))
        out = b.op("where", b.op("ne", bit, b.const(0, dt)), b.op("mul", out, b.const(1 << (1 << j), dt)), out)
    return out


def _left_shift(b: Builder, x1: Any, x2: Any) -> list[Any]:
    x, n, dt, bits, _ = _shift_operands(b, x1, x2)
    # x << (bits - 1) wraps to the sign bit: x * 2**(bits - 2) * 2 does it without 2**(bits - 1) overflowing
    top = b.op("eq", n, b.const(bits - 1, dt))
    shifted = b.op("mul", x, _power_of_two(b, n, dt, bits - 2))
    shifted = b.op("where", top, b.op("mul", shifted, b.const(2, dt)), shifted)
    out_of_range = b.op("bitwise_or", b.op("ge", n, b.const(bits, dt)), b.op("lt", n, b.const(0, dt)))
    return [b.op("where", out_of_range, b.const(0, dt), shifted)]


def _right_shift(b: Builder, x1: Any, x2: Any) -> list[Any]:
    x, n, dt, bits, signed = _shift_operands(b, x1, x2)
    # a signed x >> (bits - 1) or more is its sign (0 or -1); 2**(bits - 1) does not fit there
    top = bits - 2 if signed else bits - 1
    shifted = b.op("floordiv", x, _power_of_two(b, n, dt, top))
    zero = b.const(0, dt)
    past = b.op("gt", n, b.const(top, dt))
    sign = b.op("where", b.op("lt", x, zero), b.const(-1, dt), zero) if signed else zero
    return [b.op("where", past, sign, shifted)]


def _check_shift(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        for t in ts:
            if t.dtype in FLOATS:
                raise InferError(f"{name}: ufunc '{name}' not supported for the input types: integers only, got "
                                 f"{ts[0].dtype} and {ts[1].dtype}")
    return check


def _real(b: Builder, val: Any) -> list[Any]:
    return [val]


def _imag(b: Builder, val: Any) -> list[Any]:
    return [b.op("full_like", val, fill_value=False if b.dtype(val) == "bool" else 0)]


def _conj(b: Builder, x: Any) -> list[Any]:
    return [x]


def _angle(b: Builder, z: Any, *, deg: bool = False) -> list[Any]:
    (v,), out, work = _floats(b, z)
    half_turn = 180.0 if deg else math.pi
    turned = b.op("where", _negative(b, v, work), b.const(half_turn, work), b.const(0.0, work))
    return [b.cast(b.op("where", b.op("isnan", v), v, turned), out)]


def _check_real(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        if ts and ts[0].dtype.startswith("complex"):
            raise InferError(f"{name}: complex tensors do not exist in pyasc")
    return check


# ---- the public signatures (numpy's names) ----------------------------------------------------


def hypot(x1, x2):  # noqa: ANN001, ANN201 - numpy's signature
    """sqrt(x1**2 + x2**2), element by element."""
    return np.hypot(x1, x2)


def copysign(x1, x2):  # noqa: ANN001, ANN201
    """x1's magnitude with x2's sign."""
    return np.copysign(x1, x2)


def fmod(x1, x2):  # noqa: ANN001, ANN201
    """The remainder of x1 / x2 with the sign of x1 (C's fmod)."""
    return np.fmod(x1, x2)


def modf(x):  # noqa: ANN001, ANN201
    """(fractional part, integral part), both with x's sign."""
    return np.modf(x)


def divmod(x1, x2):  # noqa: A001, ANN001, ANN201 - numpy's name
    """(x1 // x2, x1 % x2)."""
    return np.divmod(x1, x2)


def ldexp(x1, x2):  # noqa: ANN001, ANN201
    """x1 * 2**x2 (x2 an integer)."""
    return np.ldexp(x1, x2)


def frexp(x):  # noqa: ANN001, ANN201
    """(mantissa, exponent) with x == mantissa * 2**exponent, |mantissa| in [0.5, 1)."""
    return np.frexp(x)


def float_power(x1, x2):  # noqa: ANN001, ANN201
    """x1 ** x2 in the widest float (float32 in pyasc)."""
    return np.float_power(x1, x2)


def cbrt(x):  # noqa: ANN001, ANN201
    """The real cube root."""
    return np.cbrt(x)


def deg2rad(x):  # noqa: ANN001, ANN201
    """Degrees to radians."""
    return np.deg2rad(x)


def rad2deg(x):  # noqa: ANN001, ANN201
    """Radians to degrees."""
    return np.rad2deg(x)


def sinc(x):  # noqa: ANN001, ANN201
    """sin(pi x) / (pi x), 1 at 0."""
    return np.sinc(x)


def left_shift(x1, x2):  # noqa: ANN001, ANN201
    """x1 << x2 (integers)."""
    return np.left_shift(x1, x2)


def right_shift(x1, x2):  # noqa: ANN001, ANN201
    """x1 >> x2 (integers, arithmetic)."""
    return np.right_shift(x1, x2)


def real(val):  # noqa: ANN001, ANN201
    """The real part: a real tensor itself."""
    return np.real(val)


def imag(val):  # noqa: ANN001, ANN201
    """The imaginary part: zeros for a real tensor."""
    return np.imag(val)


def conj(x):  # noqa: ANN001, ANN201
    """The complex conjugate: a real tensor itself."""
    return np.conj(x)


def angle(z, deg=False):  # noqa: ANN001, ANN201
    """The argument: 0 for x >= +0, pi (deg=True: 180) for x <= -0."""
    return np.angle(z, deg=deg)


_TWO = ("x1", "x2")
for _name, _body, _api, _eager, _params, _check, _np in (
    ("hypot", _hypot, hypot, np.hypot, _TWO, None, ("hypot",)),
    ("copysign", _copysign, copysign, np.copysign, _TWO, None, ("copysign",)),
    ("fmod", _fmod, fmod, np.fmod, _TWO, None, ("fmod",)),
    ("ldexp", _ldexp, ldexp, np.ldexp, _TWO, _check_ldexp, ("ldexp",)),
    ("float_power", _float_power, float_power, np.float_power, _TWO, None, ("float_power",)),
    ("cbrt", _cbrt, cbrt, np.cbrt, ("x",), None, ("cbrt",)),
    ("deg2rad", _scaled(_F32_DEG2RAD), deg2rad, np.deg2rad, ("x",), None, ("deg2rad", "radians")),
    ("rad2deg", _scaled(_F32_RAD2DEG), rad2deg, np.rad2deg, ("x",), None, ("rad2deg", "degrees")),
    ("sinc", _sinc, sinc, np.sinc, ("x",), None, ("sinc",)),
    ("left_shift", _left_shift, left_shift, np.left_shift, _TWO, _check_shift("left_shift"),
     ("left_shift", "bitwise_left_shift")),
    ("right_shift", _right_shift, right_shift, np.right_shift, _TWO, _check_shift("right_shift"),
     ("right_shift", "bitwise_right_shift")),
    ("real", _real, real, np.real, ("val",), _check_real("real"), ("real",)),
    ("imag", _imag, imag, np.imag, ("val",), _check_real("imag"), ("imag",)),
    ("conj", _conj, conj, np.conj, ("x",), _check_real("conj"), ("conj", "conjugate")),
    ("angle", _angle, angle, lambda z, deg=False: np.angle(z, deg=deg), ("z",), _check_real("angle"), ("angle",)),
):
    numpy_sugar_op(_name, _body, _api, _eager, tensor_params=_params, numpy_names=_np,
                   unpromoted=("x2",) if _name == "ldexp" else (), **({"check": _check} if _check else {}))

for _name, _body, _api, _eager, _params in (
    ("modf", _modf, modf, np.modf, ("x",)),
    ("divmod", _divmod, divmod, np.divmod, _TWO),
    ("frexp", _frexp, frexp, np.frexp, ("x",)),
):
    numpy_sugar_op(_name, _body, _api, _eager, tensor_params=_params, numpy_names=(_name,), returns_sequence=True)
