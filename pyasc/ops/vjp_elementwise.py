"""VJP rules of the elementwise ops (elementwise.py): binary arithmetic, unary math, where, cast.

Each rule says which primal values it reads, since those are what the backward keeps or recomputes
(autodiff's partition): exp, tanh, sigmoid, sqrt, rsqrt, reciprocal and div read their *output*
(y = e^x gives dy/dx = y without a second exp); log, sin, cos, abs read their input. Comparisons and
bitwise ops give bools or integers, which carry no cotangent, so they need no rule.
"""
from __future__ import annotations

from typing import Any

from .vjp_common import VjpContext, fit, scalar, vjp


def _neg(c: VjpContext, v: Any) -> Any:
    return c.b.op("neg", v)


def _mul(c: VjpContext, u: Any, v: Any) -> Any:
    return c.b.op("mul", u, v)


# ---- binary (broadcasting) ---------------------------------------------------------------------


@vjp("add")
def _add(c: VjpContext) -> list[Any]:
    g = c.g[0]
    return [fit(c.b, g, c.x[0]), fit(c.b, g, c.x[1])]


@vjp("sub")
def _sub(c: VjpContext) -> list[Any]:
    g = c.g[0]
    return [fit(c.b, g, c.x[0]), fit(c.b, _neg(c, g), c.x[1]) if c.wants[1] else None]


@vjp("mul")
def _mul_rule(c: VjpContext) -> list[Any]:
    g, (a, b) = c.g[0], c.x
    return [fit(c.b, _mul(c, g, b), a) if c.wants[0] else None,
            fit(c.b, _mul(c, g, a), b) if c.wants[1] else None]


@vjp("div")
def _div(c: VjpContext) -> list[Any]:
    """d(a/b) = da / b - y db / b, with y = a / b the output (no second division by b squared)."""
    g, (a, b), y = c.g[0], c.x, c.y[0]
    gb = c.b.op("div", g, b)
    return [fit(c.b, gb, a) if c.wants[0] else None,
            fit(c.b, _neg(c, _mul(c, gb, y)), b) if c.wants[1] else None]


@vjp("pow")
def _pow(c: VjpContext) -> list[Any]:
    """d(a^p) = p a^(p-1) da + a^p log(a) dp; p = 0 contributes 0 to da even at a = 0 (0 * inf), and a = 0
    contributes 0 to dp (JAX's conventions)."""
    b, g, (a, p), y = c.b, c.g[0], c.x, c.y[0]
    da = dp = None
    if c.wants[0]:
        pf = b.cast(p, b.dtype(y))
        slope = _mul(c, pf, b.op("pow", b.cast(a, b.dtype(y)), b.op("sub", pf, scalar(b, 1.0, y))))
        slope = b.op("where", b.op("eq", pf, scalar(b, 0.0, y)), scalar(b, 0.0, y), slope)
        da = fit(b, _mul(c, g, slope), a)
    if c.wants[1]:
        af = b.cast(a, b.dtype(y))
        safe = b.op("where", b.op("eq", af, scalar(b, 0.0, y)), scalar(b, 1.0, y), af)
        dp = fit(b, _mul(c, g, _mul(c, y, b.op("log", safe))), p)
    return [da, dp]


def _chooser(pick: str, tie_other: str):
    """maximum/minimum: the cotangent goes to the chosen operand, half to each at a tie."""
    def rule(c: VjpContext) -> list[Any]:
        b, g, (u, v) = c.b, c.g[0], c.x
        half = _mul(c, g, scalar(b, 0.5, g))
        zero = scalar(b, 0.0, g)
        tie = b.op("eq", u, v)
        first = b.op(pick, u, v)       # u strictly chosen
        second = b.op(tie_other, u, v)  # v strictly chosen
        du = b.op("where", first, g, b.op("where", tie, half, zero)) if c.wants[0] else None
        dv = b.op("where", second, g, b.op("where", tie, half, zero)) if c.wants[1] else None
        return [fit(b, du, u), fit(b, dv, v)]

    return rule


vjp("maximum")(_chooser("gt", "lt"))
vjp("minimum")(_chooser("lt", "gt"))


@vjp("mod")
def _mod(c: VjpContext) -> list[Any]:
    """a mod p = a - floor(a / p) p: d/da = 1, d/dp = -floor(a / p)."""
    b, g, (a, p) = c.b, c.g[0], c.x
    dp = fit(b, _neg(c, _mul(c, g, b.op("floordiv", a, p))), p) if c.wants[1] else None
    return [fit(b, g, a), dp]


@vjp("floordiv", "floor", "ceil", "sign")
def _piecewise_constant(c: VjpContext) -> list[Any]:
    """Steps: the derivative is zero wherever it exists."""
    return [None] * len(c.x)


# ---- unary --------------------------------------------------------------------------------------


def _unary(name: str, derivative):
    """Register `name`: dx = g * derivative(c, x, y)."""
    def rule(c: VjpContext) -> list[Any]:
        if not c.wants[0]:
            return [None]
        return [fit(c.b, _mul(c, c.g[0], derivative(c, c.x[0], c.y[0])), c.x[0])]

    vjp(name)(rule)


def _in(c: VjpContext, x: Any, y: Any) -> Any:
    """x in the output's (float) dtype: integer inputs of float math are promoted first."""
    return c.b.cast(x, c.b.dtype(y))


@vjp("neg")
def _neg_rule(c: VjpContext) -> list[Any]:
    return [fit(c.b, _neg(c, c.g[0]), c.x[0])]


@vjp("relu")
def _relu(c: VjpContext) -> list[Any]:
    """Where the output is positive (0 at 0, as PyTorch and JAX); reads the output."""
    b, g, y = c.b, c.g[0], c.y[0]
    return [fit(b, b.op("where", b.op("gt", y, scalar(b, 0, y)), g, scalar(b, 0.0, g)), c.x[0])]


_unary("abs", lambda c, x, y: c.b.op("sign", x))
_unary("exp", lambda c, x, y: y)
_unary("log", lambda c, x, y: c.b.op("reciprocal", _in(c, x, y)))
_unary("sqrt", lambda c, x, y: c.b.op("div", scalar(c.b, 0.5, y), y))
_unary("rsqrt", lambda c, x, y: _mul(c, scalar(c.b, -0.5, y), _mul(c, y, _mul(c, y, y))))
_unary("reciprocal", lambda c, x, y: _neg(c, _mul(c, y, y)))
_unary("sin", lambda c, x, y: c.b.op("cos", _in(c, x, y)))
_unary("cos", lambda c, x, y: _neg(c, c.b.op("sin", _in(c, x, y))))
_unary("tanh", lambda c, x, y: c.b.op("sub", scalar(c.b, 1.0, y), _mul(c, y, y)))
_unary("sigmoid", lambda c, x, y: _mul(c, y, c.b.op("sub", scalar(c.b, 1.0, y), y)))


# ---- where, cast ----------------------------------------------------------------------------------


@vjp("where")
def _where(c: VjpContext) -> list[Any]:
    b, g, (cond, u, v) = c.b, c.g[0], c.x
    zero = scalar(b, 0.0, g)
    du = fit(b, b.op("where", cond, g, zero), u) if c.wants[1] else None
    dv = fit(b, b.op("where", cond, zero, g), v) if c.wants[2] else None
    return [None, du, dv]


@vjp("cast")
def _cast(c: VjpContext) -> list[Any]:
    """The cotangent converted back (a float cast to an integer and back has zero derivative: the
    integer carries no cotangent, so nothing reaches here through it)."""
    return [fit(c.b, c.g[0], c.x[0])]
