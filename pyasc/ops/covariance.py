"""np.cov and np.corrcoef: centred rows times their transpose (a matmul), numpy's conventions.

cov(m, y=None, rowvar=True, bias=False, ddof=None, *, dtype=None): rows are variables (rowvar=False: columns),
  y's variables joined after m's; divided by N - ddof (ddof None: 0 if bias else 1). The result is squeezed as
  numpy's (one variable: a 0-d tensor). fweights/aweights are not supported (a clear error).
corrcoef(x, y=None, rowvar=True, *, dtype=None): cov divided by the outer product of its diagonal's square
  roots, clipped to [-1, 1] (one variable: c / c, as numpy's).
Both compute in float32: numpy's float64 narrowed (README dtype rules); the observations need static sizes.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import TensorType
from .builder import Builder
from .common import attr_dtype, fmt_shape, require_static
from .joining import join
from .numpy_composite import numpy_sugar_op
from .registry import Category


def _variables(b: Builder, m: Any, rowvar: bool, dt: str) -> Any:
    """m as a 2-D (variables, observations) tensor in dt (numpy: array(m, ndmin=2), transposed if not rowvar)."""
    x = b.cast(m, dt)
    shape = tuple(b.shape(x))
    if len(shape) < 2:
        x = b.op("reshape", x, shape=(1,) * (2 - len(shape)) + shape)
    if not rowvar and b.shape(x)[0] != 1:
        x = b.op("transpose", x, axes=(1, 0))
    return x


def _dtype(b: Builder, dtype: Any, *xs: Any) -> str:
    if dtype is not None:
        return attr_dtype(dtype, "cov")
    return b.float_dtype(b.result_type(*(b.dtype(x) for x in xs), "float32"))


def _cov_matrix(b: Builder, m: Any, y: Any, rowvar: bool, bias: bool, ddof: Any, dtype: Any) -> Any:
    dt = _dtype(b, dtype, *([m] if y is None else [m, y]))
    work = "float32" if dt == "float16" else dt
    x = _variables(b, m, rowvar, work)
    if y is not None:
        x = join(b, [x, _variables(b, y, rowvar, work)], 0)
    n = b.shape(x)[1]
    ddof = (0 if bias else 1) if ddof is None else int(ddof)
    centred = b.op("sub", x, b.op("mean", x, axis=1, keepdims=True))
    c = b.op("matmul", centred, centred, transpose_b=True)
    c = b.op("div", c, b.const(float(max(n - ddof, 0)), work))
    return b.cast(c, dt)


def _squeezed(b: Builder, c: Any) -> Any:
    shape = b.shape(c)
    return b.op("reshape", c, shape=tuple(d for d in shape if d != 1)) if 1 in shape else c


def _cov(b: Builder, m: Any, y: Any = None, *, rowvar: bool = True, bias: bool = False, ddof: Any = None,
         fweights: Any = None, aweights: Any = None, dtype: Any = None) -> list[Any]:
    return [_squeezed(b, _cov_matrix(b, m, y, rowvar, bias, ddof, dtype))]


def _corrcoef(b: Builder, x: Any, y: Any = None, *, rowvar: bool = True, dtype: Any = None) -> list[Any]:
    c = _cov_matrix(b, x, y, rowvar, False, None, dtype)
    dt = b.dtype(c)
    if b.shape(c) == (1, 1):
        return [b.op("reshape", b.op("div", c, c), shape=())]
    k = b.shape(c)[0]
    eye = b.array(np.eye(k, dtype=bool))
    d = b.op("sum", b.op("where", eye, c, b.const(0.0, dt)), axis=1)  # the diagonal
    sd = b.op("sqrt", d)
    c = b.op("div", b.op("div", c, b.op("reshape", sd, shape=(k, 1))), b.op("reshape", sd, shape=(1, k)))
    return [b.op("minimum", b.op("maximum", c, b.const(-1.0, dt)), b.const(1.0, dt))]  # numpy's clip


def _check(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        require_static(name, *ts)
        for t in ts:
            if t.ndim > 2:
                raise InferError(f"m has more than 2 dimensions: shape {fmt_shape(t.shape)}")
        for key in ("fweights", "aweights"):
            if attrs.get(key) is not None:
                raise InferError(f"{key} is not supported in a kernel (weigh the observations before calling cov)")
        ddof = attrs.get("ddof")
        if ddof is not None and (isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer))):
            raise InferError(f"ddof must be a compile-time integer, got {ddof!r}")
    return check


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):  # noqa: ANN001, ANN201
    """The covariance matrix of the variables in m (and y)."""
    return np.cov(m, y, rowvar, bias, ddof, fweights, aweights, dtype=dtype)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):  # noqa: ANN001, ANN201
    """Pearson correlation coefficients of the variables in x (and y)."""
    return np.corrcoef(x, y, rowvar, dtype=dtype)


def _eager_cov(m: Any, *rest: Any, has_y: bool = False, **attrs: Any) -> Any:
    return np.cov(m, rest[0] if has_y else None, **attrs)


def _eager_corrcoef(x: Any, *rest: Any, has_y: bool = False, **attrs: Any) -> Any:
    return np.corrcoef(x, rest[0] if has_y else None, **attrs)


numpy_sugar_op("cov", _cov, cov, _eager_cov, category=Category.OPAQUE, tensor_params=("m", "y"), optional=("y",),
               numpy_names=("cov",), check=_check("cov"))
numpy_sugar_op("corrcoef", _corrcoef, corrcoef, _eager_corrcoef, category=Category.OPAQUE, tensor_params=("x", "y"),
               optional=("y",), numpy_names=("corrcoef",), check=_check("corrcoef"))
