"""ufunc methods: np.<ufunc>.reduce, .accumulate and .outer, from one table onto registry ops.

`METHODS` says what each (ufunc, method) means:
- reduce(array, axis=0, dtype=None, out=None, keepdims=False) -> the reduction op (add: sum, multiply: prod,
  maximum: max, minimum: min, logical_and: all, logical_or: any); note numpy's default axis 0;
- accumulate(array, axis=0, dtype=None, out=None) -> add: cumsum, multiply: cumprod (numpy widens ints there
  too); maximum / minimum: the internal op `ufunc_accumulate` (attr `ufunc`), a Hillis-Steele scan of
  ceil(log2 n) steps y = op(y, y shifted by 1, 2, 4, ...) with the dtype's lowest / highest value shifted in;
- outer(A, B) -> the internal op `ufunc_outer` (attr `ufunc`): every binary ufunc np.<u> whose registry twin
  takes two tensors, applied to A with B.ndim trailing axes of size 1 against B;
- reduceat(array, indices, axis=0) -> the internal op `ufunc_reduceat` (attrs `ufunc`, `indices`, compile-time):
  for each i the reduction (reduce's op, keepdims) of array[indices[i]:indices[i + 1]] along `axis` (the last
  one to the end), or array[indices[i]] itself where indices[i] >= indices[i + 1], joined along `axis`.
Each is registry sugar named `<ufunc>_<method>` (numpy name "<ufunc>.<method>", which the frontend looks up for a
bound method of a numpy ufunc). out= is refused (a kernel returns its results), and dtype= where the op has none.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..errors import InferError
from ..tensor_type import Sym, TensorType
from .builder import Builder, decompose_of, types_of
from .common import fmt_shape, named, normalize_axis, sugar_arguments
from .joining import place, slice_axis
from .registry import Category, OpDef, canonical_attr, get, numpy_twin, register, register_sugar

#: accumulate's binary op and the identity it shifts in (the dtype's lowest / highest value)
_SCANS: dict[str, tuple[str, str]] = {"maximum": ("maximum", "lowest"), "minimum": ("minimum", "highest")}

#: (ufunc, method) -> registry op; outer is added below for every binary ufunc with a two-tensor twin
METHODS: dict[tuple[str, str], str] = {
    ("add", "reduce"): "sum", ("multiply", "reduce"): "prod", ("maximum", "reduce"): "max",
    ("minimum", "reduce"): "min", ("logical_and", "reduce"): "all", ("logical_or", "reduce"): "any",
    ("add", "accumulate"): "cumsum", ("multiply", "accumulate"): "cumprod",  # numpy widens ints there, as cumsum
    **{(u, "accumulate"): "ufunc_accumulate" for u in _SCANS},
}


def _identity(dt: str, which: str) -> Any:
    if dt == "bool":
        return which == "highest"
    if np.dtype(dt).kind == "f":
        return -np.inf if which == "lowest" else np.inf
    info = np.iinfo(dt)
    return int(info.min if which == "lowest" else info.max)


def _accumulate(b: Builder, array: Any, *, ufunc: str, axis: Any = 0) -> list[Any]:
    op, which = _SCANS[ufunc]
    x = array
    ax = normalize_axis(axis, len(b.shape(x)))[0]
    n, step = b.shape(x)[ax], 1
    fill = b.const(_identity(b.dtype(x), which), b.dtype(x))
    while step < n:
        x = b.op(op, x, slice_axis(b, place(b, x, ax, step, 0, fill), ax, 0, n))
        step *= 2
    return [x]


def _infer_accumulate(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    (a,) = ts
    ufunc = attrs.get("ufunc")
    if ufunc not in _SCANS:
        raise InferError(f"np.{ufunc}.accumulate has no pyasc lowering; accumulate is lowered for "
                         f"{', '.join(f'np.{u}' for u in _SCANS)}")
    if a.ndim == 0:
        raise InferError("cannot accumulate on a scalar")
    _static_axis(a, ufunc, "accumulate", attrs)
    return tuple(types_of(_accumulate, ts, dict(attrs)))


def _static_axis(a: TensorType, ufunc: str, method: str, attrs: Mapping[str, Any]) -> int:
    """The method's axis (an int, default 0), which must have a static size."""
    axis = attrs.get("axis", 0)
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise InferError(f"{method}: axis must be an int, got {axis!r}")
    ax = normalize_axis(axis, a.ndim)[0]
    if isinstance(a.shape[ax], Sym):
        raise InferError(f"np.{ufunc}.{method}: axis {ax} of shape {fmt_shape(a.shape)} has a size only known at "
                         f"launch; {method} needs a static size there")
    return ax


def _eager_accumulate(a: Any, *, ufunc: str, axis: Any = 0) -> Any:
    return getattr(np, ufunc).accumulate(a, axis=axis)


def _outer(b: Builder, a: Any, y: Any, *, ufunc: str) -> list[Any]:
    shape = tuple(b.shape(a))
    left = b.op("reshape", a, shape=shape + (1,) * len(b.shape(y))) if b.shape(y) else a
    return [b.op(numpy_twin(ufunc), left, y)]


def _infer_outer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    if attrs.get("ufunc") not in _OUTER:
        raise InferError(f"np.{attrs.get('ufunc')}.outer has no pyasc lowering")
    return tuple(types_of(_outer, ts, dict(attrs)))


def _eager_outer(a: Any, y: Any, *, ufunc: str) -> Any:
    return getattr(np, ufunc).outer(a, y)


def _reduceat(b: Builder, array: Any, *, ufunc: str, indices: Any, axis: Any = 0) -> list[Any]:
    x = array
    ax = normalize_axis(axis, len(b.shape(x)))[0]
    n = b.shape(x)[ax]
    reduce_op = METHODS[(ufunc, "reduce")]
    dt = b.dtype(b.op(reduce_op, slice_axis(b, x, ax, 0, 1), axis=ax, keepdims=True))
    parts = []
    for i, start in enumerate(indices):
        stop = indices[i + 1] if i + 1 < len(indices) else n
        if start < stop:
            parts.append(b.op(reduce_op, slice_axis(b, x, ax, start, stop), axis=ax, keepdims=True))
        else:
            parts.append(b.cast(slice_axis(b, x, ax, start, start + 1), dt))
    return [parts[0] if len(parts) == 1 else b.op("concat", *parts, axis=ax, kind="concatenate")]


def _infer_reduceat(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
    (a,) = ts
    ufunc = attrs.get("ufunc")
    if (ufunc, "reduce") not in METHODS:
        raise InferError(f"np.{ufunc}.reduceat has no pyasc lowering; reduceat is lowered for "
                         f"{', '.join(f'np.{u}' for u, m in METHODS if m == 'reduce')}")
    if a.ndim == 0:
        raise InferError("reduceat: cannot reduce a 0-d array")
    ax = _static_axis(a, ufunc, "reduceat", attrs)
    indices = attrs.get("indices")
    if not isinstance(indices, tuple) or not indices:
        raise InferError("reduceat: indices must be a non-empty sequence of ints known at compile time")
    for i in indices:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InferError(f"reduceat: indices must be ints, got {i!r}")
        if not 0 <= i < a.shape[ax]:
            raise InferError(f"index {i} out-of-bounds in {ufunc}.reduceat [0, {a.shape[ax]})")
    return tuple(types_of(_reduceat, ts, dict(attrs)))


def _eager_reduceat(a: Any, *, ufunc: str, indices: Any, axis: Any = 0) -> Any:
    return getattr(np, ufunc).reduceat(a, list(indices), axis=axis)


register(OpDef("ufunc_reduceat", Category.OPAQUE, named("ufunc_reduceat", _infer_reduceat), _eager_reduceat,
               decompose=decompose_of(_reduceat), expensive=True,
               doc="reductions over the segments between compile-time indices (internal: np.<ufunc>.reduceat)"))
register(OpDef("ufunc_accumulate", Category.INJECTIVE, named("ufunc_accumulate", _infer_accumulate),
               _eager_accumulate, decompose=decompose_of(_accumulate), expensive=True,
               doc="running op along an axis (internal: np.<ufunc>.accumulate is its sugar)"))
register(OpDef("ufunc_outer", Category.BROADCAST, named("ufunc_outer", _infer_outer), _eager_outer,
               decompose=decompose_of(_outer),
               doc="op(A[..., None, ...], B) (internal: np.<ufunc>.outer is its sugar)"))


# ---- the sugar: one public function per table entry -----------------------------------------------


def _reduce_api(array, axis=0, dtype=None, out=None, keepdims=False):  # noqa: ANN001, ANN201 - numpy's signature
    """The ufunc applied along `axis` until one element is left (numpy's default axis is 0)."""


def _accumulate_api(array, axis=0, dtype=None, out=None):  # noqa: ANN001, ANN201
    """The running ufunc along `axis`: out[i] = op(out[i - 1], array[i])."""


def _outer_api(A, B):  # noqa: ANN001, ANN201, N803
    """The ufunc of every pair: out[i..., j...] = op(A[i...], B[j...])."""


def _reduceat_api(array, indices, axis=0, dtype=None, out=None):  # noqa: ANN001, ANN201
    """The ufunc reduced over each segment array[indices[i]:indices[i + 1]] along `axis` (indices known at
    compile time)."""


_APIS = {"reduce": _reduce_api, "accumulate": _accumulate_api, "outer": _outer_api, "reduceat": _reduceat_api}


Binder = Callable[[Sequence[Any], Mapping[str, Any]], "tuple[list[Any], dict[str, Any]]"]


def _binder(ufunc: str, method: str, op: str) -> Binder:
    api = _APIS[method]
    sig = inspect.signature(api)
    where = f"np.{ufunc}.{method}()"

    def bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        try:
            arguments = sugar_arguments(api, sig, args, kwargs)
        except TypeError as e:
            raise TypeError(f"{where}: {str(e).split(': ', 1)[-1]}") from None
        if method == "outer":
            return [arguments["A"], arguments["B"]], {"ufunc": ufunc}
        if method == "reduceat":
            if arguments["out"] is not None or arguments["dtype"] is not None:
                raise TypeError(f"{where}: out= and dtype= are not supported in a kernel")
            indices = arguments["indices"]
            if not isinstance(indices, (list, tuple, range, np.ndarray)) or (
                    isinstance(indices, np.ndarray) and indices.dtype.kind not in "iu"):
                raise TypeError(f"{where}: indices must be a list or array of ints known at compile time, got "
                                f"{type(indices).__name__}")
            return [arguments["array"]], {"ufunc": ufunc, "indices": tuple(int(i) for i in np.ravel(indices)),
                                          "axis": canonical_attr("axis", arguments["axis"])}
        if arguments["out"] is not None:
            raise TypeError(f"{where}: out= is not supported in a kernel (a kernel returns its results)")
        attrs = {"axis": canonical_attr("axis", arguments["axis"])}
        if arguments["dtype"] is not None:
            if "dtype" not in get(op).attr_defaults:
                raise TypeError(f"{where}: dtype= is not supported in a kernel (cast the array first)")
            attrs["dtype"] = canonical_attr("dtype", arguments["dtype"])
        if op == "ufunc_accumulate":
            attrs["ufunc"] = ufunc
        if method == "reduce":
            attrs["keepdims"] = bool(arguments["keepdims"])
        return [arguments["array"]], attrs

    return bind


def _sugar_api(ufunc: str, method: str) -> Callable[..., Any]:
    def api(*args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(np, ufunc), method)(*args, **kwargs)

    api.__name__ = f"{ufunc}_{method}"
    api.__doc__ = f"np.{ufunc}.{method}: " + (_APIS[method].__doc__ or "")
    api.__signature__ = inspect.signature(_APIS[method])  # type: ignore[attr-defined]
    return api


#: binary elementwise ufuncs (no gufunc signature: not matmul) whose registry twin takes two tensors; numpy's
#: own namespace dict, not dir()+getattr, which would import its lazy submodules (testing, f2py: ~0.5 s per process)
_OUTER = tuple(sorted(u for u, f in vars(np).items() if isinstance(f, np.ufunc) and f.nin == 2
                      and f.signature is None and numpy_twin(u) is not None
                      and len(get(numpy_twin(u)).tensor_params) == 2))
METHODS.update({(u, "outer"): "ufunc_outer" for u in _OUTER})
METHODS.update({(u, "reduceat"): "ufunc_reduceat" for u, m in list(METHODS) if m == "reduce"})

for (_ufunc, _method), _op in METHODS.items():
    register_sugar(f"{_ufunc}_{_method}", _op, _sugar_api(_ufunc, _method), _binder(_ufunc, _method, _op),
                   numpy_names=(f"{_ufunc}.{_method}",))
