"""Registering a composite whose eager function is numpy's own (np.log1p, np.var, np.clip, ...).

The composites in composite.py use their body as the eager function too, so
eager and decomposition agree bit for bit. The ops registered through
`numpy_composite` are numpy functions users already know: their eager
function *is* numpy's, so `kernel.py_func` gives numpy's exact result and a
golden test compares our decomposition against numpy itself, not against
itself. Inference still types the body (TypeBuilder), so the decomposed
graph and the inferred type cannot disagree; `check` adds the op-level
argument checks with messages naming the op.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..tensor_type import TensorType
from .builder import decompose_of, types_of
from .common import arity, named, sugar_arguments
from .registry import Category, DataError, OpDef, ReduceAxesFn, canonical_attr, register, register_sugar

Check = Callable[[Sequence[TensorType], Mapping[str, Any]], None]


def _no_check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    """No op-level checks beyond the primitives' own."""


def numpy_composite(name: str, body: Any, api: Callable[..., Any], eager: Callable[..., Any], *,
                    category: Category = Category.ELEMWISE, tensor_params: tuple[str, ...] = ("x",),
                    optional: tuple[str, ...] = (), numpy_names: tuple[str, ...] = (),
                    check: Check = _no_check, expensive: bool = True,
                    reduce_axes: ReduceAxesFn | None = None, unpromoted: tuple[str, ...] = ()) -> OpDef:
    """Register `name`: eager = `eager(*arrays, **attrs)` (numpy's), decomposition and types = `body`."""
    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        if not optional:
            arity(ts, len(tensor_params), name)
        check(ts, attrs)
        return tuple(types_of(body, ts, dict(attrs), optional))

    return register(OpDef(name, category, named(name, infer), eager, api=api, tensor_params=tensor_params,
                          optional_tensors=optional, expensive=expensive, decompose=decompose_of(body, optional),
                          numpy_names=numpy_names, doc=api.__doc__ or "", reduce_axes=reduce_axes,
                          unpromoted=unpromoted))


#: what a compile-time parameter may hold (anything else, a tensor above all, is refused by `static` reasons)
_COMPILE_TIME = (bool, int, float, str, list, tuple, slice, type(None), np.ndarray, np.generic)


def signature_binder(api: Callable[..., Any], tensor_params: tuple[str, ...], optional: tuple[str, ...] = (),
                     variadic: str | None = None, static: Mapping[str, str] | None = None
                     ) -> Callable[..., tuple[list[Any], dict[str, Any]]]:
    """Bind a call of `api` (numpy's signature) onto an internal op: its tensor parameters in order (an
    `optional` one left out when None, with attribute has_<param>), a `variadic` one (a list of tensors)
    spread in, and every other parameter a canonical attribute (`n_<variadic>` counts the spread ones).
    `static` names compile-time parameters with the reason a run-time value cannot be taken there."""
    sig = inspect.signature(api)

    def bind(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        arguments = sugar_arguments(api, sig, args, kwargs)
        tensors: list[Any] = []
        attrs: dict[str, Any] = {}
        for pname, value in arguments.items():
            if pname == variadic:
                if not isinstance(value, (list, tuple)) or not value:
                    raise TypeError(f"{api.__name__}(): {pname} must be a non-empty list or tuple of arrays")
                tensors.extend(value)
                attrs[f"n_{pname}"] = len(value)
            elif pname in tensor_params:
                if pname in optional:
                    attrs[f"has_{pname}"] = value is not None
                    if value is None:
                        continue
                elif value is None:
                    raise TypeError(f"{api.__name__}(): argument {pname!r} must be a tensor or a scalar, got None")
                tensors.append(value)
            else:
                if static and pname in static and not isinstance(value, _COMPILE_TIME):
                    raise TypeError(f"{pname} must be known at compile time: {static[pname]}")
                attrs[pname] = canonical_attr(pname, value)
        return tensors, attrs

    return bind


def numpy_sugar_op(name: str, body: Any, api: Callable[..., Any], eager: Callable[..., Any], *,
                   category: Category = Category.ELEMWISE, tensor_params: tuple[str, ...] = ("x",),
                   optional: tuple[str, ...] = (), variadic: str | None = None, numpy_names: tuple[str, ...] = (),
                   check: Check = _no_check, expensive: bool = True, reduce_axes: ReduceAxesFn | None = None,
                   returns_sequence: bool = False, unpromoted: tuple[str, ...] = (),
                   static: Mapping[str, str] | None = None,
                   binder: Callable[..., tuple[list[Any], dict[str, Any]]] | None = None,
                   data_error: DataError | None = None) -> OpDef:
    """Register internal op `name` (decomposition and types = `body`, eager = numpy's `eager`) and the public
    sugar `name` binding `api`'s signature onto it (signature_binder), so `np.<numpy_names>` compiles.

    Used where one registry op with an api does not fit numpy's function: several results (np.modf, np.divmod,
    np.gradient over several axes), a list of tensors (np.dstack, np.choose). Their values are tested in
    tests/test_ops_numpy4.py, grouped per kernel, instead of test_golden_ops' one case per op and preset."""
    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        if not optional and variadic is None:
            arity(ts, len(tensor_params), name)
        check(ts, attrs)
        return tuple(types_of(body, ts, dict(attrs), optional))

    op = register(OpDef(name, category, named(name, infer), eager, expensive=expensive,
                        decompose=decompose_of(body, optional), doc=api.__doc__ or "", reduce_axes=reduce_axes,
                        returns_sequence=returns_sequence, tensor_params=tensor_params, unpromoted=unpromoted,
                        data_error=data_error))
    register_sugar(name, name, api, binder or signature_binder(api, tensor_params, optional, variadic, static),
                   numpy_names)
    return op
