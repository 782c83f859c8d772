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

from typing import Any, Callable, Mapping, Sequence

from ..tensor_type import TensorType
from .builder import decompose_of, types_of
from .common import arity, named
from .registry import Category, OpDef, ReduceAxesFn, register

Check = Callable[[Sequence[TensorType], Mapping[str, Any]], None]


def _no_check(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> None:
    """No op-level checks beyond the primitives' own."""


def numpy_composite(name: str, body: Any, api: Callable[..., Any], eager: Callable[..., Any], *,
                    category: Category = Category.ELEMWISE, tensor_params: tuple[str, ...] = ("x",),
                    optional: tuple[str, ...] = (), numpy_names: tuple[str, ...] = (),
                    check: Check = _no_check, expensive: bool = True,
                    reduce_axes: ReduceAxesFn | None = None) -> OpDef:
    """Register `name`: eager = `eager(*arrays, **attrs)` (numpy's), decomposition and types = `body`."""
    def infer(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        if not optional:
            arity(ts, len(tensor_params), name)
        check(ts, attrs)
        return tuple(types_of(body, ts, dict(attrs), optional))

    return register(OpDef(name, category, named(name, infer), eager, api=api, tensor_params=tensor_params,
                          optional_tensors=optional, expensive=expensive, decompose=decompose_of(body, optional),
                          numpy_names=numpy_names, doc=api.__doc__ or "", reduce_axes=reduce_axes))
