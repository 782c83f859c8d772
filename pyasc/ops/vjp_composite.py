"""VJP rules of composites where a rule of their own is cheaper or more accurate than differentiating
their decomposition (composite.py, elementary.py). Every other composite (clip, var, std, concat, pad,
take, cumsum, ...) is differentiated through its decomposition by autodiff.

- softmax: dx = y (g - sum(g y)), reading the output only; log_softmax: dx = g - exp(y) sum(g);
- layer_norm / rms_norm: the usual closed forms over the normalised axis, recomputing the row
  statistics from x (two row reductions) instead of keeping them:
      layer_norm: dx = rstd (gw - mean(gw) - xhat mean(gw xhat)),  dweight = g xhat,  dbias = g
      rms_norm:   dx = r (gw - xhat mean(gw xhat)),               dweight = g xhat
  with gw = g * weight, xhat the normalised x, summed over broadcast axes for weight and bias;
- gelu (tanh form), silu, erf: their closed-form derivatives (erf's is the exact 2/sqrt(pi) e^(-x^2),
  not the derivative of the polynomial approximation);
- numpy's elementary composites: log1p 1/(1+x), expm1 y+1, sinh cosh x, cosh sinh x, arctan 1/(1+x^2),
  arcsin 1/sqrt(1-x^2), arccos -1/sqrt(1-x^2), log2 1/(x ln 2), exp2 y ln 2, logaddexp e^(x_i - y),
  square 2x, copy 1 (their decompositions' tricks for accuracy need not be differentiated).
Float16 inputs are computed in float32 like the forward composites, and rounded once by `fit`.
"""
from __future__ import annotations

import math
from typing import Any

from .vjp_common import VjpContext, fit, reduced_axes, scalar, vjp

_LN2 = math.log(2.0)
_GELU_C = math.sqrt(2.0 / math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _c(c: VjpContext, v: Any, like: Any) -> Any:
    """`v` cast to the compute dtype of `like` (float32 for float16)."""
    return c.b.cast(v, c.b.compute_dtype(like))


def _op(c: VjpContext, name: str, *args: Any, **attrs: Any) -> Any:
    return c.b.op(name, *args, **attrs)


def _row_sum(c: VjpContext, v: Any, axis: Any) -> Any:
    return _op(c, "sum", v, axis=axis, keepdims=True)


def _row_mean(c: VjpContext, v: Any) -> Any:
    return _op(c, "mean", v, axis=-1, keepdims=True)


@vjp("softmax")
def _softmax(c: VjpContext) -> list[Any]:
    if not c.wants[0]:
        return [None]
    y = c.y[0]
    yc, gc = _c(c, y, y), _c(c, c.g[0], y)
    axes = reduced_axes("softmax", c.attrs, len(c.b.shape(y)))
    inner = _row_sum(c, _op(c, "mul", gc, yc), axes)
    return [fit(c.b, _op(c, "mul", yc, _op(c, "sub", gc, inner)), c.x[0])]


@vjp("log_softmax")
def _log_softmax(c: VjpContext) -> list[Any]:
    if not c.wants[0]:
        return [None]
    y = c.y[0]
    yc, gc = _c(c, y, y), _c(c, c.g[0], y)
    axes = reduced_axes("log_softmax", c.attrs, len(c.b.shape(y)))
    return [fit(c.b, _op(c, "sub", gc, _op(c, "mul", _op(c, "exp", yc), _row_sum(c, gc, axes))), c.x[0])]


def _norm_operands(c: VjpContext, names: tuple[str, ...]) -> dict[str, Any]:
    """The optional operands of a norm by name (None when not given)."""
    rest = list(c.x[1:])
    return {n: rest.pop(0) if c.attr(f"has_{n}", False) else None for n in names}


def _norm_rule(centred: bool, names: tuple[str, ...]):
    def rule(c: VjpContext) -> list[Any]:
        b, y, x = c.b, c.y[0], c.x[0]
        given = _norm_operands(c, names)
        eps = float(c.attr("eps", 1e-5 if centred else 1e-6))
        xc = _c(c, x, y)
        gc = _c(c, c.g[0], y)
        d = _op(c, "sub", xc, _row_mean(c, xc)) if centred else xc
        r = _op(c, "rsqrt", _op(c, "add", _row_mean(c, _op(c, "mul", d, d)), scalar(b, eps, xc)))
        xhat = _op(c, "mul", d, r)
        w = given.get("weight")
        gw = _op(c, "mul", gc, _c(c, w, y)) if w is not None else gc
        out = [None] * len(c.x)
        if c.wants[0]:
            inner = _op(c, "mul", xhat, _row_mean(c, _op(c, "mul", gw, xhat)))
            core = _op(c, "sub", gw, inner)
            if centred:
                core = _op(c, "sub", core, _row_mean(c, gw))
            out[0] = fit(b, _op(c, "mul", r, core), x)
        position = 1
        for name in names:
            operand = given[name]
            if operand is None:
                continue
            if c.wants[position]:
                part = _op(c, "mul", gc, xhat) if name == "weight" else gc
                out[position] = fit(b, part, operand)
            position += 1
        return out

    return rule


vjp("layer_norm")(_norm_rule(True, ("weight", "bias")))
vjp("rms_norm")(_norm_rule(False, ("weight",)))


def _elementwise(name: str, derivative):
    """Register `name` (one float input): dx = g * derivative(c, x, y), computed in the compute dtype."""
    def rule(c: VjpContext) -> list[Any]:
        if not c.wants[0]:
            return [None]
        y = c.y[0]
        xc, yc = _c(c, c.x[0], y), _c(c, y, y)
        return [fit(c.b, _op(c, "mul", _c(c, c.g[0], y), derivative(c, xc, yc)), c.x[0])]

    vjp(name)(rule)


def _one_minus(c: VjpContext, v: Any) -> Any:
    return _op(c, "sub", scalar(c.b, 1.0, v), v)


def _gelu(c: VjpContext, x: Any, y: Any) -> Any:
    b = c.b
    x2 = _op(c, "mul", x, x)
    inner = _op(c, "mul", scalar(b, _GELU_C, x), _op(c, "add", x, _op(c, "mul", scalar(b, 0.044715, x),
                                                                   _op(c, "mul", x2, x))))
    t = _op(c, "tanh", inner)
    slope = _op(c, "mul", scalar(b, _GELU_C, x), _op(c, "add", scalar(b, 1.0, x),
                                                     _op(c, "mul", scalar(b, 3 * 0.044715, x), x2)))
    left = _op(c, "mul", scalar(b, 0.5, x), _op(c, "add", scalar(b, 1.0, x), t))
    right = _op(c, "mul", _op(c, "mul", scalar(b, 0.5, x), x), _op(c, "mul", _one_minus(c, _op(c, "mul", t, t)),
                                                                     slope))
    return _op(c, "add", left, right)


def _silu(c: VjpContext, x: Any, y: Any) -> Any:
    s = _op(c, "sigmoid", x)
    return _op(c, "mul", s, _op(c, "add", scalar(c.b, 1.0, x), _op(c, "mul", x, _one_minus(c, s))))


def _erf(c: VjpContext, x: Any, y: Any) -> Any:
    return _op(c, "mul", scalar(c.b, _TWO_OVER_SQRT_PI, x), _op(c, "exp", _op(c, "neg", _op(c, "mul", x, x))))


def _inv_sqrt_one_minus_square(c: VjpContext, x: Any) -> Any:
    return _op(c, "rsqrt", _one_minus(c, _op(c, "mul", x, x)))


_elementwise("gelu", _gelu)
_elementwise("silu", _silu)
_elementwise("erf", _erf)
_elementwise("log1p", lambda c, x, y: _op(c, "reciprocal", _op(c, "add", scalar(c.b, 1.0, x), x)))
_elementwise("expm1", lambda c, x, y: _op(c, "add", y, scalar(c.b, 1.0, y)))
_elementwise("sinh", lambda c, x, y: _op(c, "cosh", x))
_elementwise("cosh", lambda c, x, y: _op(c, "sinh", x))
_elementwise("arctan", lambda c, x, y: _op(c, "reciprocal", _op(c, "add", scalar(c.b, 1.0, x), _op(c, "mul", x, x))))
_elementwise("arcsin", lambda c, x, y: _inv_sqrt_one_minus_square(c, x))
_elementwise("arccos", lambda c, x, y: _op(c, "neg", _inv_sqrt_one_minus_square(c, x)))
_elementwise("log2", lambda c, x, y: _op(c, "reciprocal", _op(c, "mul", x, scalar(c.b, _LN2, x))))
_elementwise("exp2", lambda c, x, y: _op(c, "mul", y, scalar(c.b, _LN2, y)))
_elementwise("square", lambda c, x, y: _op(c, "mul", x, scalar(c.b, 2.0, x)))


@vjp("copy")
def _copy(c: VjpContext) -> list[Any]:
    return [fit(c.b, c.g[0], c.x[0])]


@vjp("logaddexp")
def _logaddexp(c: VjpContext) -> list[Any]:
    y = c.y[0]
    yc, gc = _c(c, y, y), _c(c, c.g[0], y)
    out = []
    for x, want in zip(c.x, c.wants):
        weight = _op(c, "exp", _op(c, "sub", _c(c, x, y), yc)) if want else None
        out.append(fit(c.b, _op(c, "mul", gc, weight), x) if want else None)
    return out
