"""scipy.special functions numpy code uses, as composites: xlogy xlog1py logit (x...), logsumexp (a, axis,
keepdims), softmax / log_softmax over any axes (scipy's: axis=None is the whole array), and expit / erf as
the registry's sigmoid and erf in scipy's dtypes. Their eager functions are scipy's own when scipy is installed
(numpy code calling them has it), else the same formula in numpy.

- xlogy(x, y) = x * log(y), 0 where x == 0 (unless y is NaN); xlog1py(x, y) = x * log1p(y) likewise;
- logit(p) = log(p / (1 - p));
- logsumexp(a) = m + log(sum(exp(a - m))), m the max (where m is infinite, m itself, as scipy gives);
- softmax(x, axis) = exp(x - logsumexp(x, axis, keepdims=True)); log_softmax likewise without the exp.
Dtypes are scipy's narrowed: its ufuncs (xlogy, xlog1py, logit, expit, erf) give float32 for float32 and
float64 (pyasc: float32) for anything else; logsumexp and softmax keep a float dtype (float16 computed in
float32) and give float32 for integers (softmax: numpy's float-math dtype, int8 -> float16).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import FLOATS, attr_bool, normalize_axis
from .elementary import _log1p_of
from .numpy_composite import numpy_composite
from .reduce import axis_arg, reduce_axes
from .registry import Category

#: the name scipy.special functions are registered under (frontend: `scipy.special.<name>` means this op)
PREFIX = "scipy.special."


def _scipy(name: str) -> Callable[..., Any] | None:
    try:
        import scipy.special  # optional: numpy code that calls scipy.special has it installed
    except ImportError:
        return None
    return getattr(scipy.special, name, None)


def _float(b: Builder, *xs: Any) -> tuple[str, list[Any]]:
    """scipy's ufunc rule: float32 in, float32 out; anything else is computed in float64 (pyasc: float32)."""
    return "float32", [b.cast(x, "float32") for x in xs]


def _float_keep(b: Builder, x: Any) -> tuple[str, list[Any]]:
    """logsumexp and softmax: a float keeps its dtype (float16 computed in float32); integers give float32."""
    dt = b.dtype(x)
    if dt in FLOATS:
        return dt, [b.cast(x, "float32")]
    out = b.float_dtype(dt)
    return out, [b.cast(x, "float32")]


def _expit(b: Builder, x: Any) -> list[Any]:
    out, (p,) = _float(b, x)
    return [b.cast(b.op("sigmoid", p), out)]


def _erf(b: Builder, x: Any) -> list[Any]:
    out, (p,) = _float(b, x)
    return [b.cast(b.op("erf", p), out)]


def _xlogy(b: Builder, x: Any, y: Any) -> list[Any]:
    out, (p, q) = _float(b, x, y)
    zero = b.scalar(0.0, p)
    keep = b.op("bitwise_or", b.op("ne", p, zero), b.op("ne", q, q))
    return [b.cast(b.op("where", keep, b.op("mul", p, b.op("log", q)), zero), out)]


def _xlog1py(b: Builder, x: Any, y: Any) -> list[Any]:
    out, (p, q) = _float(b, x, y)
    zero = b.scalar(0.0, p)
    keep = b.op("bitwise_or", b.op("ne", p, zero), b.op("ne", q, q))
    return [b.cast(b.op("where", keep, b.op("mul", p, _log1p_of(b, q)), zero), out)]


def _logit(b: Builder, x: Any) -> list[Any]:
    out, (p,) = _float(b, x)
    return [b.cast(b.op("log", b.op("div", p, b.op("sub", b.scalar(1.0, p), p))), out)]


def _lse(b: Builder, x: Any, axis: Any, keepdims: bool) -> Any:
    """logsumexp in x's (compute) dtype."""
    m = b.op("max", x, axis=axis, keepdims=True)
    finite = b.op("lt", b.op("abs", m), b.scalar(math.inf, m))
    shift = b.op("where", finite, m, b.scalar(0.0, m))
    s = b.op("sum", b.op("exp", b.op("sub", x, shift)), axis=axis, keepdims=True)
    r = b.op("add", b.op("log", s), shift)
    if not keepdims:
        shape = b.shape(x)
        axes = normalize_axis(axis_arg(axis), len(shape))
        r = b.op("reshape", r, shape=tuple(d for i, d in enumerate(shape) if i not in axes))
    return r


def _logsumexp(b: Builder, a: Any, *, axis: Any = None, keepdims: bool = False) -> list[Any]:
    out, (x,) = _float_keep(b, a)
    if b.dtype(a) not in FLOATS:
        out = "float32"  # scipy's logsumexp of integers is float64
    return [b.cast(_lse(b, x, axis_arg(axis), keepdims), out)]


def _softmax(b: Builder, x: Any, *, axis: Any = None) -> list[Any]:
    out, (p,) = _float_keep(b, x)
    return [b.cast(b.op("exp", b.op("sub", p, _lse(b, p, axis_arg(axis), True))), out)]


def _log_softmax(b: Builder, x: Any, *, axis: Any = None) -> list[Any]:
    out, (p,) = _float_keep(b, x)
    return [b.cast(b.op("sub", p, _lse(b, p, axis_arg(axis), True)), out)]


def _check_axes(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        (a,) = ts
        normalize_axis(axis_arg(attrs.get("axis")), a.ndim)
        attr_bool(attrs, "keepdims", False, name)
        if a.dtype not in FLOATS and a.dtype == "bool":
            raise InferError(f"{name}: does not accept dtype bool")
    return check


# ---- numpy fallbacks (scipy not installed) and public signatures --------------------------------------


def _np_xlogy(x: Any, y: Any) -> Any:
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((x != 0) | np.isnan(y), x * np.log(y), 0.0)


def _np_xlog1py(x: Any, y: Any) -> Any:
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((x != 0) | np.isnan(y), x * np.log1p(y), 0.0)


def _np_logsumexp(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    a = np.asarray(a)
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=axis)


def xlogy(x, y):  # noqa: ANN001, ANN201 - the public signature (scipy.special's)
    """x * log(y), 0 where x == 0."""
    fn = _scipy("xlogy")
    return fn(x, y) if fn is not None else _np_xlogy(x, y)


def xlog1py(x, y):  # noqa: ANN001, ANN201
    """x * log1p(y), 0 where x == 0."""
    fn = _scipy("xlog1py")
    return fn(x, y) if fn is not None else _np_xlog1py(x, y)


def logit(x):  # noqa: ANN001, ANN201
    """log(x / (1 - x)), the inverse of expit."""
    fn = _scipy("logit")
    return fn(x) if fn is not None else np.log(np.asarray(x) / (1 - np.asarray(x)))


def logsumexp(a, axis=None, keepdims=False):  # noqa: ANN001, ANN201
    """log(sum(exp(a))) over `axis` without overflow."""
    fn = _scipy("logsumexp")
    return fn(a, axis=axis_arg(axis), keepdims=keepdims) if fn is not None else \
        _np_logsumexp(a, axis_arg(axis), keepdims)


def special_softmax(x, axis=None):  # noqa: ANN001, ANN201
    """scipy.special.softmax: exp(x) / sum(exp(x)) over `axis` (None: the whole array)."""
    fn = _scipy("softmax")
    if fn is not None:
        return fn(x, axis=axis_arg(axis))
    return np.exp(np.asarray(x) - _np_logsumexp(x, axis_arg(axis), True))


def special_log_softmax(x, axis=None):  # noqa: ANN001, ANN201
    """scipy.special.log_softmax: x - logsumexp(x) over `axis` (None: the whole array)."""
    fn = _scipy("log_softmax")
    if fn is not None:
        return fn(x, axis=axis_arg(axis))
    return np.asarray(x) - _np_logsumexp(x, axis_arg(axis), True)


def _eager(api: Callable[..., Any]) -> Callable[..., Any]:
    def eager(*arrays: Any, **attrs: Any) -> Any:
        return api(*arrays, **attrs)
    return eager


numpy_composite("xlogy", _xlogy, xlogy, _eager(xlogy), category=Category.BROADCAST, tensor_params=("x", "y"),
                numpy_names=(PREFIX + "xlogy",))
numpy_composite("xlog1py", _xlog1py, xlog1py, _eager(xlog1py), category=Category.BROADCAST, tensor_params=("x", "y"),
                numpy_names=(PREFIX + "xlog1py",))
numpy_composite("logit", _logit, logit, _eager(logit), numpy_names=(PREFIX + "logit",))
numpy_composite("logsumexp", _logsumexp, logsumexp, _eager(logsumexp), category=Category.REDUCE,
                tensor_params=("a",), numpy_names=(PREFIX + "logsumexp",), check=_check_axes("logsumexp"),
                reduce_axes=reduce_axes)
numpy_composite("special_softmax", _softmax, special_softmax, _eager(special_softmax),
                numpy_names=(PREFIX + "softmax",), check=_check_axes("softmax"))
numpy_composite("special_log_softmax", _log_softmax, special_log_softmax, _eager(special_log_softmax),
                numpy_names=(PREFIX + "log_softmax",), check=_check_axes("log_softmax"))


def expit(x):  # noqa: ANN001, ANN201
    """scipy.special.expit: 1 / (1 + exp(-x))."""
    fn = _scipy("expit")
    if fn is not None:
        return fn(x)
    x = np.asarray(x)
    return 1 / (1 + np.exp(-x.astype(np.float32 if x.dtype == np.float32 else np.float64)))


def special_erf(x):  # noqa: ANN001, ANN201
    """scipy.special.erf: the error function (in scipy's dtypes; pyasc.erf keeps a float16 float16)."""
    fn = _scipy("erf")
    if fn is not None:
        return fn(x)
    return np.vectorize(math.erf, otypes=[np.float64])(np.asarray(x, np.float64))


numpy_composite("expit", _expit, expit, _eager(expit), numpy_names=(PREFIX + "expit",))
numpy_composite("special_erf", _erf, special_erf, _eager(special_erf), numpy_names=(PREFIX + "erf",))
