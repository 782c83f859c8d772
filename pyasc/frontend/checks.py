"""Inputs numpy rejects that the graph would otherwise compute silently, caught where they are written.

- `int_tensor ** -1` (and `pyasc.pow`/`np.power` with a negative integer
  constant exponent): numpy raises "Integers to negative integer powers are
  not allowed."; the chip would compute a truncated 1 / x. A located
  CompileError instead; one that is run-time data is a data check (below).
- `x.reshape()` with no shape, and a list as a reduction `axis`
  (`np.sum(x, axis=[0, 1])`): numpy raises TypeError; so do we, located.

Where numpy raises on data (an index out of range, an integer to a negative integer power that is data,
the max of an empty selection, an all-NaN slice to an op whose registry entry says numpy raises there
(OpDef.data_error: np.nanargmax/nanargmin), a singular matrix to np.linalg.solve/inv, cholesky of one that is not
positive definite), the kernel records the condition: `data_check` folds "ok everywhere"
into the build's status word (a slot of effects.py, so it crosses `if`s and runtime loops like any
value), one bit per check; the runtime raises the check's numpy error, located at the kernel line, when
its bit is set after the launch. `pyasc.kernel(checks=False)` builds none.
"""
from __future__ import annotations

import ast
import inspect
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from ..ops.builder import GraphBuilder
from . import effects
from .protocol import KernelBuilder


def negative_int_power(b: KernelBuilder, inputs: Sequence[Value], at: ast.AST) -> None:
    """Reject an integer `pow` whose exponent is a constant with a negative value, as numpy does."""
    if len(inputs) != 2 or not dtypes.is_int(inputs[1].type.dtype):
        return
    if not (dtypes.is_int(inputs[0].type.dtype) or dtypes.is_bool(inputs[0].type.dtype)):  # numpy: bool too
        return
    exponent = inputs[1].node
    if exponent.op != "Const":  # run-time data: numpy's ValueError when any exponent is negative, after the launch
        ok = b.emit("ge", [inputs[1], b.const(0, inputs[1].type.dtype, at)], {}, at)[0]
        data_check(b, ok, "ValueError", "Integers to negative integer powers are not allowed.", at)
        return
    if not np.any(np.asarray(exponent.attrs["value"]) < 0):
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


def data_check(b: KernelBuilder, ok: Value, exception: str, message: str, at: ast.AST) -> None:
    """Record that numpy raises `exception` (its message) at `at` unless `ok` (a bool tensor) holds everywhere."""
    if not b.state.checks_enabled:
        return
    ok_all = b.emit("min", [b.emit("cast", [ok], {"dtype": "int32"}, at)[0]], {"axis": None}, at)[0] \
        if ok.type.ndim else b.emit("cast", [ok], {"dtype": "int32"}, at)[0]
    effects.add_check(b, ok_all, exception, message, b.loc(at), b.text(at), at)


def index_in_range(b: KernelBuilder, valid: Value, at: ast.AST, what: str = "an index") -> None:
    data_check(b, valid, "IndexError", f"{what} is out of bounds (numpy raises IndexError here)", at)


#: np.linalg functions that raise LinAlgError on data, and numpy's message
LINALG_ERRORS = {"solve": "Singular matrix", "inv": "Singular matrix",
                 "cholesky": "Matrix is not positive definite"}


def linalg_error(b: KernelBuilder, op: str, a: Value, x: Value, at: ast.AST) -> None:
    """np.linalg.solve / inv raise LinAlgError where an exact zero pivot appears, cholesky where a is not
    positive definite: here a result that is not finite although every element of `a` is (the factorisation
    divided by that zero pivot, or took the square root of a negative one)."""
    finite_a = b.emit("all", [b.emit("isfinite", [a], {}, at)[0]], {"axis": None, "keepdims": False}, at)[0]
    ok = b.emit("logical_or", [b.emit("isfinite", [x], {}, at)[0], b.emit("logical_not", [finite_a], {}, at)[0]],
                {}, at)[0]
    data_check(b, ok, "LinAlgError", LINALG_ERRORS[op], at)


def take_in_range(b: KernelBuilder, a: Value, indices: Value, axis: Any, at: ast.AST) -> None:
    """np.take / x.take raise IndexError for an index outside [-n, n) of the axis (or of the flattened a)."""
    n = a.type.shape[axis % a.type.ndim] if axis is not None and a.type.ndim else a.type.numel
    if not isinstance(n, int) or not dtypes.is_int(indices.type.dtype):
        return
    i32 = indices if indices.type.dtype == "int32" else b.emit("cast", [indices], {"dtype": "int32"}, at)[0]
    ok = b.emit("bitwise_and", [b.emit("ge", [i32, b.const(-n, "int32", at)], {}, at)[0],
                                b.emit("lt", [i32, b.const(n, "int32", at)], {}, at)[0]], {}, at)[0]
    index_in_range(b, ok, at, f"an index into an axis of size {n}")


def op_data_error(b: KernelBuilder, op: Any, inputs: Sequence[Value], attrs: dict[str, Any], at: ast.AST) -> None:
    """The op's registry fact `data_error` (np.nanargmax on an all-NaN slice): its `failing` body built here."""
    failing = op.data_error.failing(_EmitBuilder(b, at), *inputs, **attrs)
    if failing is not None:
        ok = b.emit("logical_not", [failing], {}, at)[0]
        data_check(b, ok, op.data_error.exception, op.data_error.message, at)


class _EmitBuilder(GraphBuilder):
    """A composite body's builder whose nodes go through the kernel builder (its graph, branch and location)."""

    def __init__(self, b: KernelBuilder, at: ast.AST):
        super().__init__(None, b.loc(at))
        self.b, self.at = b, at

    def op(self, name: str, *inputs: Any, **attrs: Any) -> Any:
        return self.b.emit(name, list(inputs), attrs, self.at)[0]

    def const(self, value: float | int | bool, dtype: str) -> Any:
        return self.b.const(value, dtype, self.at)

    def array(self, value: np.ndarray) -> Any:
        return self.b.const(np.asarray(value), dtypes.narrow(np.asarray(value).dtype), self.at)
