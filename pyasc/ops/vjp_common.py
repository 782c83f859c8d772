"""What a VJP rule is given, and the helpers every rule shares (reduce over broadcast axes, zeros, fit).

A rule gets a `VjpContext`: a Builder `b` (builder.py: graph nodes for autodiff, numpy arrays for the
float64 tests), the node's inputs `x` and outputs `y`, the cotangent of each output `g` (None: zero),
its attributes, and `wants[i]`: whether input i's cotangent is used (a rule may skip work for the
others and return None there). It returns one cotangent per input, each of that input's shape and
dtype, or None (zero, or an input that is not a float: integers and bools have no cotangent).

Conventions shared with JAX and PyTorch, which the tests check against central differences:
- at a tie, maximum/minimum and the max/min reductions split the cotangent evenly between the tied
  operands (the central difference's answer); relu, abs and sign take 0 at 0; floor, ceil, sign,
  floordiv and comparisons have zero derivative;
- a cotangent is rounded to its input's dtype (a float16 operand of a float32 product gets a float16
  cotangent); broadcasting is undone by summing over the broadcast axes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .builder import Builder
from .registry import VjpRule, get, register_vjp


@dataclass
class VjpContext:
    b: Builder
    x: Sequence[Any]            # the node's inputs (primal values)
    y: Sequence[Any]            # the node's outputs (primal values)
    g: Sequence[Any]            # the cotangent of each output, None for zero
    attrs: Mapping[str, Any]
    wants: Sequence[bool]       # whether the cotangent of input i is used

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)


def vjp(*names: str):
    """Decorator: register the function as the VJP rule of each op in `names`."""
    def deco(rule: VjpRule) -> VjpRule:
        for name in names:
            register_vjp(name, rule)
        return rule

    return deco


def is_float(b: Builder, v: Any) -> bool:
    return np.dtype(b.dtype(v)).kind == "f"


def zeros(b: Builder, shape: Sequence[Any], dtype: str) -> Any:
    return b.op("full", shape=tuple(shape), fill_value=0.0, dtype=dtype)


def zeros_like(b: Builder, v: Any) -> Any:
    return zeros(b, b.shape(v), b.dtype(v))


def sum_to(b: Builder, g: Any, shape: Sequence[Any]) -> Any:
    """`g` summed over the axes broadcasting added to reach g's shape from `shape` (numpy's rules)."""
    gshape = tuple(b.shape(g))
    shape = tuple(shape)
    lead = len(gshape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape) if d == 1 and gshape[lead + i] != 1]
    if axes:
        g = b.op("sum", g, axis=tuple(axes), keepdims=True)
    if tuple(b.shape(g)) != shape:
        g = b.op("reshape", g, shape=shape)
    return g


def fit(b: Builder, g: Any, x: Any) -> Any:
    """The cotangent `g` of a broadcast result as the cotangent of operand `x`: summed to x's shape and
    rounded to x's dtype; None when x is not a float (it has no cotangent)."""
    if g is None or not is_float(b, x):
        return None
    return b.cast(sum_to(b, g, b.shape(x)), b.dtype(x))


def scalar(b: Builder, value: float, like: Any) -> Any:
    return b.const(value, b.dtype(like))


def expand_reduced(b: Builder, g: Any, x: Any, axes: Sequence[int], keepdims: bool) -> Any:
    """The cotangent of a reduction over `axes` broadcast back to the shape of its input `x`."""
    shape = tuple(b.shape(x))
    if not keepdims and axes:
        g = b.op("reshape", g, shape=tuple(1 if i in axes else d for i, d in enumerate(shape)))
    if tuple(b.shape(g)) != shape:
        g = b.op("broadcast_to", g, shape=shape)
    return g


def reduced_axes(op: str, attrs: Mapping[str, Any], ndim: int) -> tuple[int, ...]:
    """The axes a reduction (or row composite) reduces: the registry's own answer for the op."""
    return get(op).reduced_axes(attrs, ndim)


def count(b: Builder, x: Any, axes: Sequence[int], like: Any) -> Any:
    """How many elements a reduction over `axes` of `x` takes, as a 0-d value of `like`'s dtype (with a
    symbolic size: the sum of a tensor of ones over those sizes, computed at launch)."""
    dims = [b.shape(x)[i] for i in axes]
    if all(isinstance(d, (int, np.integer)) for d in dims):
        return scalar(b, float(np.prod([int(d) for d in dims])), like)
    return b.op("sum", b.op("full", shape=tuple(dims), fill_value=1.0, dtype=b.dtype(like)))
