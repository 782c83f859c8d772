"""Composite ops: registered ops with a decomposition into primitive ops.

softmax(x, axis=-1), log_softmax(x, axis=-1), layer_norm(x, weight=None,
bias=None, eps=1e-5) (normalises the last axis), rms_norm(x, weight=None,
eps=1e-6), gelu(x), silu(x), and erf(x) (elementwise, but numpy has no erf,
so it is defined by its decomposition too).

Each op is one *body* (see builder.py) that serves as its eager function,
its decomposition and its type inference, so the three agree exactly.
Numerics:
- float16 inputs are computed in float32 and rounded to float16 once at the
  end (as vendor kernels do); integer/bool inputs are promoted like np.exp
  promotes them (see elementwise.py), then computed the same way.
- softmax/log_softmax subtract the max along the axis first (stable).
- layer_norm uses the biased variance mean((x - mean)^2), like PyTorch.
- gelu is the tanh approximation
  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) (JAX's default,
  PyTorch's approximate="tanh"); it differs from the erf form by < 1e-3.
- erf is Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7 in exact arithmetic
  (float64 eagerly), below 5e-7 absolute when computed in float32.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder, decompose_of, eager_of, types_of
from .common import arity, broadcasts_to, fmt_shape, named, normalize_axis
from .registry import Category, OpDef, register


def _finish(b: Builder, y: Any, x: Any, *others: Any) -> list[Any]:
    """Round the computed result to the dtype the op returns: float of x promoted with others."""
    out = b.result_type(b.float_dtype(b.dtype(x)), *(b.dtype(o) for o in others if o is not None))
    return [b.cast(y, out)]


# ---- bodies ----------------------------------------------------------------------------


def _softmax(b: Builder, x: Any, *, axis: Any = -1) -> list[Any]:
    xc = b.to_compute(x)
    m = b.op("max", xc, axis=axis, keepdims=True)
    e = b.op("exp", b.op("sub", xc, m))
    s = b.op("sum", e, axis=axis, keepdims=True)
    return _finish(b, b.op("div", e, s), x)


def _log_softmax(b: Builder, x: Any, *, axis: Any = -1) -> list[Any]:
    xc = b.to_compute(x)
    m = b.op("max", xc, axis=axis, keepdims=True)
    d = b.op("sub", xc, m)
    lse = b.op("log", b.op("sum", b.op("exp", d), axis=axis, keepdims=True))
    return _finish(b, b.op("sub", d, lse), x)


def _layer_norm(b: Builder, x: Any, weight: Any = None, bias: Any = None, *, eps: float = 1e-5) -> list[Any]:
    xc = b.to_compute(x)
    mean = b.op("mean", xc, axis=-1, keepdims=True)
    d = b.op("sub", xc, mean)
    var = b.op("mean", b.op("mul", d, d), axis=-1, keepdims=True)
    y = b.op("mul", d, b.op("rsqrt", b.op("add", var, b.scalar(eps, var))))
    if weight is not None:
        y = b.op("mul", y, weight)
    if bias is not None:
        y = b.op("add", y, bias)
    return _finish(b, y, x, weight, bias)


def _rms_norm(b: Builder, x: Any, weight: Any = None, *, eps: float = 1e-6) -> list[Any]:
    xc = b.to_compute(x)
    ms = b.op("mean", b.op("mul", xc, xc), axis=-1, keepdims=True)
    y = b.op("mul", xc, b.op("rsqrt", b.op("add", ms, b.scalar(eps, ms))))
    if weight is not None:
        y = b.op("mul", y, weight)
    return _finish(b, y, x, weight)


_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu(b: Builder, x: Any) -> list[Any]:
    xc = b.to_compute(x)
    cube = b.op("mul", b.op("mul", xc, xc), xc)
    inner = b.op("mul", b.scalar(_GELU_C, xc), b.op("add", xc, b.op("mul", b.scalar(0.044715, xc), cube)))
    half_x = b.op("mul", b.scalar(0.5, xc), xc)
    return _finish(b, b.op("mul", half_x, b.op("add", b.scalar(1.0, xc), b.op("tanh", inner))), x)


def _silu(b: Builder, x: Any) -> list[Any]:
    xc = b.to_compute(x)
    return _finish(b, b.op("mul", xc, b.op("sigmoid", xc)), x)


# Abramowitz & Stegun 7.1.26
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(b: Builder, x: Any) -> list[Any]:
    xc = b.to_compute(x)
    t = b.op("reciprocal", b.op("add", b.scalar(1.0, xc), b.op("mul", b.scalar(_ERF_P, xc), b.op("abs", xc))))
    poly = b.scalar(_ERF_A[4], xc)
    for a in reversed(_ERF_A[:4]):  # Horner: ((((a5 t + a4) t + a3) t + a2) t + a1) t
        poly = b.op("add", b.op("mul", poly, t), b.scalar(a, xc))
    poly = b.op("mul", poly, t)
    gauss = b.op("exp", b.op("neg", b.op("mul", xc, xc)))
    y = b.op("sub", b.scalar(1.0, xc), b.op("mul", poly, gauss))
    return _finish(b, b.op("mul", b.op("sign", xc), y), x)


# ---- public signatures -------------------------------------------------------------------


def _run(body: Any, *args: Any, **attrs: Any) -> Any:
    return eager_of(body)(*args, **attrs)


def softmax(x, axis=-1):  # noqa: ANN001, ANN201 - the public signature
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    return _run(_softmax, x, axis=axis)


def log_softmax(x, axis=-1):  # noqa: ANN001, ANN201
    """x - max - log(sum(exp(x - max))) along `axis`."""
    return _run(_log_softmax, x, axis=axis)


def layer_norm(x, weight=None, bias=None, eps=1e-5):  # noqa: ANN001, ANN201
    """(x - mean) / sqrt(var + eps) over the last axis, then * weight + bias (both optional)."""
    return _run(_layer_norm, x, weight, bias, eps=eps)


def rms_norm(x, weight=None, eps=1e-6):  # noqa: ANN001, ANN201
    """x / sqrt(mean(x^2) + eps) over the last axis, then * weight (optional)."""
    return _run(_rms_norm, x, weight, eps=eps)


def gelu(x):  # noqa: ANN001, ANN201
    """GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return _run(_gelu, x)


def silu(x):  # noqa: ANN001, ANN201
    """x * sigmoid(x) (a.k.a. swish)."""
    return _run(_silu, x)


def erf(x):  # noqa: ANN001, ANN201
    """The error function (Abramowitz & Stegun 7.1.26: |error| < 1.5e-7, plus rounding: < 5e-7 in float32)."""
    return _run(_erf, x)


# ---- inference: validate with op-level messages, then type the body --------------------


def _check_axis(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    normalize_axis(attrs.get("axis", -1), ts[0].ndim)


def _check_norm(param_names: Sequence[str]):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        if not ts:
            raise InferError("takes x (and the optional operands), got no inputs")
        x = ts[0]
        if x.ndim == 0:
            raise InferError("x must have at least one dimension (the last axis is normalised), got shape ()")
        given = [p for p in param_names if attrs.get(f"has_{p}", False)]
        if len(ts) != 1 + len(given):
            raise InferError(f"takes {1 + len(given)} input(s) (x{''.join(', ' + p for p in given)}), got {len(ts)}")
        for pname, t in zip(given, ts[1:]):
            if not broadcasts_to(t.shape, x.shape):
                raise InferError(f"{pname} of shape {fmt_shape(t.shape)} does not broadcast to x of shape "
                                 f"{fmt_shape(x.shape)}")
        eps = attrs.get("eps", 0.0)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise InferError(f"eps must be a number, got {eps!r}")

    return check


def _along_axis(attrs: Mapping[str, Any], ndim: int) -> tuple[int, ...]:
    """softmax / log_softmax reduce along attribute `axis` (default the last)."""
    return normalize_axis(attrs.get("axis", -1), ndim)


def _last_axis(attrs: Mapping[str, Any], ndim: int) -> tuple[int, ...]:
    """layer_norm / rms_norm normalise the last axis."""
    return (ndim - 1,)


def _no_check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    """Elementwise composites accept any dtype their primitives accept."""


def _composite(name: str, body: Any, api: Any, check: Any, category: Category,
               tensor_params: tuple[str, ...] = ("x",), optional: tuple[str, ...] = (),
               rows: Any = None) -> None:
    """`rows`: for a row composite (a reduction whose output has its input's shape), the axes it reduces."""
    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        if not optional:
            arity(ts, 1, name)
        check(ts, attrs)
        return tuple(types_of(body, ts, dict(attrs), optional))

    register(OpDef(name, category, named(name, infer), eager_of(body, optional), api=api,
                   tensor_params=tensor_params, optional_tensors=optional, expensive=True,
                   decompose=decompose_of(body, optional), doc=api.__doc__ or "",
                   reduce_axes=rows, row_composite=rows is not None))


_composite("softmax", _softmax, softmax, _check_axis, Category.REDUCE, rows=_along_axis)
_composite("log_softmax", _log_softmax, log_softmax, _check_axis, Category.REDUCE, rows=_along_axis)
_composite("layer_norm", _layer_norm, layer_norm, _check_norm(("weight", "bias")), Category.REDUCE,
           ("x", "weight", "bias"), ("weight", "bias"), rows=_last_axis)
_composite("rms_norm", _rms_norm, rms_norm, _check_norm(("weight",)), Category.REDUCE,
           ("x", "weight"), ("weight",), rows=_last_axis)
_composite("gelu", _gelu, gelu, _no_check, Category.ELEMWISE)
_composite("silu", _silu, silu, _no_check, Category.ELEMWISE)
_composite("erf", _erf, erf, _no_check, Category.ELEMWISE)
