"""Inputs numpy rejects that the graph would otherwise compute silently, caught where they are written.

- `int_tensor ** -1` (and `pyasc.pow`/`np.power` with a negative integer
  constant exponent): numpy raises "Integers to negative integer powers are
  not allowed."; the chip would compute a truncated 1 / x. A located
  CompileError instead. (A negative exponent that is run-time data is the
  data's business: the reference backend raises numpy's error at the kernel
  line, the emulator truncates toward zero, README: dtype rules.)
- `x.reshape()` with no shape, and a list as a reduction `axis`
  (`np.sum(x, axis=[0, 1])`): numpy raises TypeError; so do we, located.
"""
from __future__ import annotations

import ast
import inspect
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from .protocol import KernelBuilder


def negative_int_power(b: KernelBuilder, inputs: Sequence[Value], at: ast.AST) -> None:
    """Reject an integer `pow` whose exponent is a constant with a negative value, as numpy does."""
    if len(inputs) != 2 or not all(dtypes.is_int(v.type.dtype) for v in inputs):
        return
    exponent = inputs[1].node
    if exponent.op != "Const" or not np.any(np.asarray(exponent.attrs["value"]) < 0):
        return
    raise b.error(
        f"integers to negative integer powers are not allowed (numpy raises ValueError) in `{b.text(at)}` "
        f"({inputs[0].type} base); use a float base, e.g. `x.astype(np.float32) ** -1`", at)


def list_axis(b: KernelBuilder, display: str, attrs: dict[str, Any], raw: Any, at: ast.AST) -> None:
    """numpy takes an int or a tuple of ints as `axis`, never a list (`TypeError: 'list' object cannot be
    interpreted as an integer`); `raw` is the axis as the call wrote it (the binder turns lists into tuples)."""
    if "axis" in attrs and isinstance(raw, list):
        raise b.error(f"{display}(): TypeError: 'list' object cannot be interpreted as an integer (numpy takes an "
                      f"int or a tuple of ints as axis: `axis={tuple(raw)!r}`)", at)


def raw_argument(api: Any, args: Sequence[Any], kwargs: dict[str, Any], name: str) -> Any:
    """The argument `name` of a call of `api` as written (None when absent or the call does not bind)."""
    if name in kwargs:
        return kwargs[name]
    try:
        return inspect.signature(api).bind_partial(*args, **kwargs).arguments.get(name)
    except (TypeError, ValueError):
        return None
