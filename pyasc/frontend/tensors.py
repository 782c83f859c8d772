"""Python operators on tensors, and Python scalars turned into tensor constants.

A Python scalar next to a tensor becomes a `Const` of the dtype numpy 2's
weak-scalar promotion gives the pair (`int8_tensor + 1` stays int8,
`int8_tensor * 0.5` is float); an int that does not fit the tensor's int
dtype is rejected like numpy rejects it. numpy scalars (`np.float32(2)`)
are strong and keep their own dtype, except float64 ones (`np.sqrt(2 / np.pi)`
computed at compile time), which are weak like the Python float they would
be in a numpy without float64 on the chip (dtype_rules.py).
"""
from __future__ import annotations

import ast
import operator
from typing import Any, Sequence

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from ..tensor_type import Sym
from .protocol import KernelBuilder
from .dtype_rules import is_weak_numpy_scalar
from .values import contains_tensor, describe, is_const_array, is_number, is_tensor


BINARY_OPS: dict[type, tuple[str, str, Any]] = {
    # ast operator -> (op name, spelling, Python function for compile-time folding)
    ast.Add: ("add", "+", operator.add),
    ast.Sub: ("sub", "-", operator.sub),
    ast.Mult: ("mul", "*", operator.mul),
    ast.Div: ("div", "/", operator.truediv),
    ast.FloorDiv: ("floordiv", "//", operator.floordiv),
    ast.Mod: ("mod", "%", operator.mod),
    ast.Pow: ("pow", "**", operator.pow),
    ast.MatMult: ("matmul", "@", operator.matmul),
    ast.BitAnd: ("bitwise_and", "&", operator.and_),
    ast.BitOr: ("bitwise_or", "|", operator.or_),
    ast.BitXor: ("bitwise_xor", "^", operator.xor),
    ast.LShift: ("", "<<", operator.lshift),
    ast.RShift: ("", ">>", operator.rshift),
}

COMPARE_OPS: dict[type, tuple[str, str, Any]] = {
    ast.Lt: ("lt", "<", operator.lt),
    ast.LtE: ("le", "<=", operator.le),
    ast.Gt: ("gt", ">", operator.gt),
    ast.GtE: ("ge", ">=", operator.ge),
    ast.Eq: ("eq", "==", operator.eq),
    ast.NotEq: ("ne", "!=", operator.ne),
}

UNARY_OPS: dict[type, tuple[str | None, str, Any]] = {
    ast.USub: ("neg", "-", operator.neg),
    ast.Invert: ("invert", "~", operator.invert),
    ast.UAdd: (None, "+", operator.pos),
}

COMPARISONS = frozenset(name for name, _, _ in COMPARE_OPS.values())


def scalar_const_dtype(value: Any, partners: Sequence[str], op: str) -> str:
    """The dtype a scalar operand takes next to tensors of dtypes `partners`.

    Raises OverflowError when a Python int does not fit the dtype the pair
    promotes to (numpy 2 does the same for arithmetic; comparisons compare
    exactly, so there the constant just gets a wide enough type).
    """
    if isinstance(value, np.generic):
        if not is_weak_numpy_scalar(value):
            return dtypes.narrow(value.dtype)  # numpy scalars are strong: their own dtype
        value = value.item()  # a float64 scalar is weak like a Python float (README: dtype rules)
    if not partners:
        return dtypes.scalar_dtype(value)
    dtype = dtypes.promote(*partners, value)
    if isinstance(value, int) and not isinstance(value, bool) and dtypes.is_int(dtype):
        info = np.iinfo(dtypes.to_numpy(dtype))
        if not info.min <= value <= info.max:
            if op in COMPARISONS and -(2**31) <= value < 2**31:
                return "int32"
            raise OverflowError(
                f"Python int {value} does not fit {dtype} (range {info.min}..{info.max})"
            )
    return dtype


def weak_values(b: KernelBuilder, v: Any) -> tuple | None:
    """The Python scalars `v` may be if it is *weak* (a Python scalar, or a tensor standing for one), else None.

    A variable set to a Python number in both branches of an `if` on a tensor
    is chosen at run time, so it becomes a 0-d tensor; numpy still sees a
    Python scalar there, which is weak in promotion (`f16_array + y` stays
    float16). Such tensors are recorded in `BuildState.weak` with the numbers
    they may hold (or a sample of their kind when those are unknown), and are
    cast like a Python scalar when they meet a strong operand.
    """
    if is_tensor(v):
        return b.state.weak.get(v)
    if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
        return (v,)
    if is_weak_numpy_scalar(v):
        return (v.item(),)
    return None


def strong_dtypes(b: KernelBuilder, operands: Sequence[Any]) -> list[str]:
    """dtypes of the operands that decide promotion: tensors that are not weak, numpy scalars, constant arrays."""
    found = []
    for v in operands:
        if is_tensor(v):
            if v not in b.state.weak:
                found.append(v.type.dtype)
        elif isinstance(v, np.generic) and is_number(v) and not is_weak_numpy_scalar(v):
            found.append(dtypes.narrow(v.dtype))
        elif is_const_array(v):
            try:
                found.append(dtypes.narrow(v.dtype))
            except dtypes.DTypeError:
                pass  # as_operand rejects it with the location
    return found


def mark_weak(b: KernelBuilder, v: Value, values: tuple | None = None) -> Value:
    """Record `v` as weak; without known `values`, a sample of its dtype's kind (never out of range)."""
    if values is None:
        kind = v.type.dtype
        values = (False,) if dtypes.is_bool(kind) else (0,) if dtypes.is_int(kind) else (0.0,)
    b.state.weak[v] = tuple(values)
    return v


def weak_dtype(values: Sequence[Any], partners: Sequence[str], op: str) -> str:
    """The dtype Python scalars `values` take next to `partners` (OverflowError if an int does not fit)."""
    return dtypes.promote(*{scalar_const_dtype(x, partners, op) for x in values})


def _const_sequence(b: KernelBuilder, v: Any, at: ast.AST, what: str) -> Any:
    """A compile-time list or tuple of numbers as numpy's array of it (its own dtype: not weak, as numpy's)."""
    try:
        arr = np.asarray(v)
    except ValueError as e:
        raise b.error(f"{what}: {e} in `{b.text(at)}`", at) from None
    if arr.dtype.kind not in "biuf":
        raise b.error(f"{what} must be a tensor, a number or a list of numbers, got {describe(v)} in "
                      f"`{b.text(at)}`", at)
    return arr


def as_operand(b: KernelBuilder, v: Any, partners: Sequence[str], op: str, at: ast.AST, what: str,
               strong: bool = False) -> Value:
    """A tensor operand of `op`: tensors pass through; numbers and constant arrays become Consts.

    `strong` says `partners` are strong operands: a weak tensor is then cast
    to the dtype a Python scalar would take next to them.
    """
    if is_tensor(v):
        weak = b.state.weak.get(v)
        if weak is None or not strong:
            return v
        try:
            dtype = weak_dtype(weak, partners, op)
        except OverflowError as e:
            numbers = " or ".join(map(repr, dict.fromkeys(weak)))
            raise b.error(f"{e} in `{b.text(at)}` (an operand is the Python number {numbers}, chosen at run "
                          "time by an `if` on a tensor)", at) from None
        return v if dtype == v.type.dtype else b.emit("cast", [v], {"dtype": dtype}, at)[0]
    if is_number(v):
        try:
            dtype = scalar_const_dtype(v, partners, op)
        except OverflowError as e:
            raise b.error(f"{e} in `{b.text(at)}`", at) from None
        return b.const(v, dtype, at)
    if isinstance(v, (list, tuple)) and v and not contains_tensor(v):
        v = _const_sequence(b, v, at, what)  # numpy makes an array of a list operand (np.interp(x, [0, 1], ...))
    if is_const_array(v):
        try:
            dtype = dtypes.narrow(v.dtype)
        except dtypes.DTypeError as e:
            raise b.error(f"{e} (constant array in `{b.text(at)}`)", at) from None
        return b.const(v, dtype, at)
    if isinstance(v, Sym):
        raise b.error(
            f"the symbolic dim {v} cannot be used as a tensor value in `{b.text(at)}`; "
            "it is only known at launch (compile with static shapes to use it as a number)",
            at,
        )
    raise b.error(f"{what} must be a tensor or a number, got {describe(v)} in `{b.text(at)}`", at)


def tensor_binary(b: KernelBuilder, op: str, left: Any, right: Any, at: ast.AST,
                  operands: tuple[ast.AST, ast.AST] | None = None) -> Value:
    """`left <op> right` where at least one side is a tensor; scalars follow weak promotion."""
    strong = strong_dtypes(b, (left, right))
    partners = strong or [v.type.dtype for v in (left, right) if is_tensor(v)]
    lhs_at, rhs_at = operands or (at, at)
    a = as_operand(b, left, partners, op, lhs_at if not is_tensor(left) else at, "the left operand", bool(strong))
    c = as_operand(b, right, partners, op, rhs_at if not is_tensor(right) else at, "the right operand", bool(strong))
    out = b.emit(op, [a, c], {}, at)[0]
    if not strong and weak_values(b, left) is not None and weak_values(b, right) is not None:
        mark_weak(b, out)  # Python scalars combined by an operator give a Python scalar: still weak
    return out


def fold(b: KernelBuilder, fn: Any, args: Sequence[Any], at: ast.AST) -> Any:
    """Evaluate a Python operation on compile-time values; a Python exception becomes a located CompileError."""
    try:
        return fn(*args)
    except Exception as e:  # the user's compile-time arithmetic failed, e.g. 1 // 0
        raise b.error(f"{type(e).__name__}: {e} in `{b.text(at)}`", at) from None


def check_symbolic_compare(b: KernelBuilder, spelling: str, a: Any, c: Any, at: ast.AST) -> None:
    """Comparing a symbolic dim to anything but itself has no compile-time answer."""

    def has_sym(v: Any) -> bool:
        return isinstance(v, Sym) or (isinstance(v, (tuple, list)) and any(has_sym(x) for x in v))

    if (has_sym(a) or has_sym(c)) and not (spelling in ("==", "!=") and a == c):
        raise b.error(
            f"`{b.text(at)}` compares a symbolic dim, whose value is only known at launch "
            "(the kernel is compiled with dynamic shapes); compare static dims or use static shapes",
            at,
        )
