"""1-D signals and grids: np.convolve, np.correlate, np.trapezoid, np.meshgrid.

convolve(a, v, mode="full"): with m = the shorter length (numpy swaps so), out[i] = sum_k v[k] * a[i - k] as m
  shifted slices of a (zero-padded by m - 1 each side) times the 0-d slices v[k], added: m products per output
  element, so meant for short kernels. Only the mode's outputs are computed: full (n + m - 1), same (max(n, m),
  centred as numpy's), valid (max - min + 1).
correlate(a, v, mode="valid"): convolve(a, v[::-1], mode), numpy's definition for real inputs.
trapezoid(y, x=None, dx=1.0, axis=-1): numpy's sum(d * (y[1:] + y[:-1]) / 2.0) along the axis, d = diff(x)
  (a 1-D x along `axis`) or dx. float results (integers: float32).
meshgrid(*xi, sparse=False, indexing="xy"): each 1-D input (others flattened) reshaped to its own axis and
  broadcast to the grid (sparse: left at size 1 elsewhere); "xy" swaps the first two axes. Sugar over the internal
  variadic `meshgrid` op (one output per input, a tuple as numpy's).
Sizes along the convolved, integrated or gridded axes must be static. Dtypes are numpy's result_type.
"""
from __future__ import annotations

import inspect
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder, decompose_of, types_of
from .common import fmt_shape, named, normalize_axis, require_static_axis, sugar_arguments
from .flips import reversed_axes
from .joining import place, slice_axis
from .numpy_composite import numpy_composite
from .registry import Category, OpDef, register, register_sugar

MODES = ("full", "same", "valid")


def _window(n: int, m: int, mode: str) -> tuple[int, int]:
    """(first output index of the full convolution, how many) for `mode`; n >= m."""
    if mode == "full":
        return 0, n + m - 1
    if mode == "same":
        return (m - 1) // 2, n
    return m - 1, n - m + 1


def _convolve(b: Builder, a: Any, v: Any, *, mode: str = "full") -> list[Any]:
    dt = b.result_type(b.dtype(a), b.dtype(v))
    a, v = b.cast(a, dt), b.cast(v, dt)
    if b.shape(v)[0] > b.shape(a)[0]:
        a, v = v, a  # convolution commutes; numpy slides the shorter one
    n, m = b.shape(a)[0], b.shape(v)[0]
    start, length = _window(n, m, mode)
    padded = place(b, a, 0, m - 1, m - 1, b.const(0, dt))
    out = None
    for k in range(m):
        lo = start - k + m - 1
        term = b.op("mul", slice_axis(b, padded, 0, lo, lo + length), b.op("reshape", slice_axis(b, v, 0, k, k + 1),
                                                                             shape=()))
        out = term if out is None else b.op("add", out, term)
    return [out]


def _correlate(b: Builder, a: Any, v: Any, *, mode: str = "valid") -> list[Any]:
    return _convolve(b, a, reversed_axes(b, v, (0,)), mode=mode)


def _check_convolve(name: str):
    def check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
        a, v = ts
        if a.ndim != 1 or v.ndim != 1:
            raise InferError(f"{name}: object too deep for desired array: a and v must be 1-D, got shapes "
                             f"{fmt_shape(a.shape)} and {fmt_shape(v.shape)}")
        if isinstance(a.shape[0], Sym) or isinstance(v.shape[0], Sym):
            raise InferError(f"{name}: shapes {fmt_shape(a.shape)} and {fmt_shape(v.shape)} have sizes only known at "
                             f"launch; {name} needs static sizes")
        if a.shape[0] == 0:
            raise InferError("a cannot be empty")
        if v.shape[0] == 0:
            raise InferError("v cannot be empty")
        if attrs.get("mode", "full") not in MODES:
            raise InferError(f"mode must be one of 'full', 'same' or 'valid', got {attrs.get('mode')!r}")
        if "bool" in (a.dtype, v.dtype):
            raise InferError(f"{name}: does not accept dtype bool")
    return check


def convolve(a, v, mode="full"):  # noqa: ANN001, ANN201 - numpy's signature
    """The discrete linear convolution of two 1-D sequences."""
    return np.convolve(a, v, mode=mode)


def correlate(a, v, mode="valid"):  # noqa: ANN001, ANN201
    """The cross-correlation of two 1-D sequences: c[k] = sum_n a[n + k] * v[n]."""
    return np.correlate(a, v, mode=mode)


# ---- trapezoid ----------------------------------------------------------------------------------------


def _trapezoid(b: Builder, y: Any, x: Any = None, *, dx: Any = 1.0, axis: Any = -1) -> list[Any]:
    nd = len(b.shape(y))
    ax = normalize_axis(axis, nd)[0]
    n = b.shape(y)[ax]
    if x is None:
        d = b.const(float(dx), b.float_dtype(b.dtype(y)))
    else:
        d = b.op("diff", x, axis=-1 if len(b.shape(x)) == 1 else ax)
        if len(b.shape(x)) == 1:
            d = b.op("reshape", d, shape=tuple(n - 1 if i == ax else 1 for i in range(nd)))
    pairs = b.op("add", slice_axis(b, y, ax, 1, n), slice_axis(b, y, ax, 0, n - 1))
    prod = b.op("mul", d, pairs)
    half = b.op("div", prod, b.const(2.0, b.float_dtype(b.dtype(prod))))
    return [b.op("sum", half, axis=ax)]


def _check_trapezoid(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    y = ts[0]
    if y.ndim == 0:
        raise InferError("trapezoid: y must have at least one dimension")
    ax = normalize_axis(attrs.get("axis", -1), y.ndim)[0]
    require_static_axis("trapezoid", y.shape, ax)
    if y.dtype == "bool":
        raise InferError("trapezoid: numpy boolean subtract, the `-` operator, is not supported")
    if len(ts) == 2 and ts[1].ndim == 1 and ts[1].shape[0] != y.shape[ax]:
        raise InferError(f"trapezoid: x of shape {fmt_shape(ts[1].shape)} does not match axis {ax} of y's shape "
                         f"{fmt_shape(y.shape)}")
    dx = attrs.get("dx", 1.0)
    if isinstance(dx, bool) or not isinstance(dx, (int, float, np.integer, np.floating)):
        raise InferError(f"trapezoid: dx must be a compile-time number, got {dx!r}")


def trapezoid(y, x=None, dx=1.0, axis=-1):  # noqa: ANN001, ANN201
    """The integral of y along `axis` by the trapezoidal rule (sample points x, or spacing dx)."""
    return np.trapezoid(y, x, dx=dx, axis=axis)


def _eager_trapezoid(y: Any, *rest: Any, dx: Any = 1.0, axis: Any = -1, has_x: bool = False) -> Any:
    return np.trapezoid(y, rest[0] if has_x else None, dx=dx, axis=axis)


numpy_composite("convolve", _convolve, convolve, lambda a, v, **k: np.convolve(a, v, **k), category=Category.OPAQUE,
                tensor_params=("a", "v"), numpy_names=("convolve",), check=_check_convolve("convolve"))
numpy_composite("correlate", _correlate, correlate, lambda a, v, **k: np.correlate(a, v, **k),
                category=Category.OPAQUE, tensor_params=("a", "v"), numpy_names=("correlate",),
                check=_check_convolve("correlate"))
numpy_composite("trapezoid", _trapezoid, trapezoid, _eager_trapezoid, category=Category.REDUCE,
                tensor_params=("y", "x"), optional=("x",), numpy_names=("trapezoid",), check=_check_trapezoid,
                reduce_axes=lambda attrs, ndim: normalize_axis(attrs.get("axis", -1), ndim))


# ---- meshgrid -----------------------------------------------------------------------------------------


def _meshgrid(b: Builder, *xs: Any, sparse: bool = False, indexing: str = "xy") -> list[Any]:
    flat = [b.op("reshape", x, shape=(-1,)) if len(b.shape(x)) != 1 else x for x in xs]
    sizes = [b.shape(x)[0] for x in flat]
    nd = len(flat)
    at = list(range(nd))
    if indexing == "xy" and nd > 1:
        at[0], at[1] = 1, 0
    full = [0] * nd
    for i, n in zip(at, sizes):
        full[i] = n
    outs = []
    for i, x in zip(at, flat):
        r = b.op("reshape", x, shape=tuple(sizes[at.index(j)] if j == i else 1 for j in range(nd)))
        outs.append(r if sparse else b.op("broadcast_to", r, shape=tuple(full)))
    return outs


def _infer_meshgrid(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if attrs.get("indexing", "xy") not in ("xy", "ij"):
        raise InferError("Valid values for `indexing` are 'xy' and 'ij'.")
    for t in ts:
        if any(isinstance(d, Sym) for d in t.shape) and t.ndim != 1:
            raise InferError(f"meshgrid: an input of shape {fmt_shape(t.shape)} is flattened, which needs static sizes")
    return tuple(types_of(_meshgrid, ts, dict(attrs)))


def _eager_meshgrid(*xs: Any, sparse: bool = False, indexing: str = "xy") -> Any:
    return tuple(np.meshgrid(*xs, sparse=sparse, indexing=indexing))


register(OpDef("meshgrid", Category.INJECTIVE, named("meshgrid", _infer_meshgrid), _eager_meshgrid,
               decompose=decompose_of(_meshgrid), returns_sequence=True, expensive=False,
               doc="coordinate grids, one output per input (internal: np.meshgrid is its sugar)"))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):  # noqa: ANN001, ANN002, ANN201 - numpy's signature
    """Coordinate matrices from coordinate vectors (a tuple, one per vector)."""
    return tuple(np.meshgrid(*xi, copy=copy, sparse=sparse, indexing=indexing))


_MESHGRID_SIG = inspect.signature(meshgrid)


def _bind_meshgrid(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    arguments = sugar_arguments(meshgrid, _MESHGRID_SIG, args, kwargs)
    if not arguments.get("xi"):
        raise TypeError("meshgrid(): a kernel's meshgrid needs at least one coordinate vector")
    return list(arguments["xi"]), {"sparse": bool(arguments["sparse"]), "indexing": arguments["indexing"]}


register_sugar("meshgrid", "meshgrid", meshgrid, _bind_meshgrid, numpy_names=("meshgrid",))
