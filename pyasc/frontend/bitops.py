"""`<<`, `>>` and bool `@` on tensors, decomposed into ops the NPU lowers.

The vector unit has no shift instruction in our ISA, and the cube no bool
matmul, so:
- `x << k` (a compile-time int k >= 0) is `x * 2**k` in x's integer dtype
  (wrapping multiplication is exactly a left shift), 0 once k reaches the
  bit width, as numpy gives;
- `x >> k` is `x // 2**k` (floor division is numpy's arithmetic shift for
  signed and its logical shift for unsigned dtypes); once 2**k does not fit
  the dtype the result is -1 for negative and 0 for other elements;
- `a @ b` of two bool tensors is `(float16(a) @ float16(b)) > 0` (numpy's
  bool matmul is an OR of ANDs; counts accumulate exactly in float32 on the
  cube and stay > 0 when rounded to float16).
Shift amounts that are tensors are a located CompileError.
"""
from __future__ import annotations

import ast
from typing import Any

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from .protocol import KernelBuilder
from .tensors import tensor_binary
from .values import describe, is_tensor


def shift(b: KernelBuilder, left: Any, right: Any, at: ast.AST, operands: tuple[ast.AST, ast.AST],
          to_left: bool) -> Any:
    spelling = "<<" if to_left else ">>"
    if not is_tensor(left):
        raise b.error(f"`{b.text(at)}` shifts {describe(left)} by a tensor; pyasc shifts tensors by compile-time "
                      "ints only", at)
    if is_tensor(right):
        raise b.error(f"`{b.text(at)}` shifts by a tensor; pyasc shifts by a compile-time int only (for a tensor "
                      f"amount use x * 2 ** k or x // 2 ** k with pyasc ops)", operands[1])
    if not isinstance(right, (int, np.integer)):
        raise b.error(f"`{b.text(at)}`: numpy's {spelling} takes integers, got {describe(right)}", operands[1])
    dt = left.type.dtype
    if not (dtypes.is_int(dt) or dtypes.is_bool(dt)):
        raise b.error(f"`{b.text(at)}`: numpy's {spelling} is not supported for {dt} (integers and bool only)", at)
    k = int(right)
    if k < 0:
        raise b.error(f"`{b.text(at)}` shifts by a negative amount {k}, which numpy leaves to the C compiler; "
                      "shift by 0 or more", operands[1])
    try:
        out_dtype = dtypes.promote(dt, right if not isinstance(right, bool) else int(right))
    except dtypes.DTypeError as e:
        raise b.error(f"{e} in `{b.text(at)}`", at) from None
    x: Value = left if out_dtype == dt else b.emit("cast", [left], {"dtype": out_dtype}, at)[0]
    info = np.iinfo(dtypes.to_numpy(out_dtype))
    bits = info.bits
    if to_left:
        if k >= bits:
            return tensor_binary(b, "mul", x, 0, at)
        factor = int(np.array(1 << k, dtype=np.uint64).astype(dtypes.to_numpy(out_dtype)))  # wraps like the shift
        return tensor_binary(b, "mul", x, factor, at)
    if (1 << k) > info.max:
        if info.min == 0:
            return tensor_binary(b, "mul", x, 0, at)
        negative = tensor_binary(b, "lt", x, 0, at)
        minus_one = b.const(np.array(-1, dtypes.to_numpy(out_dtype)), out_dtype, at)
        zero = b.const(np.array(0, dtypes.to_numpy(out_dtype)), out_dtype, at)
        return b.emit("where", [negative, minus_one, zero], {}, at)[0]
    return tensor_binary(b, "floordiv", x, 1 << k, at)


def bool_matmul(b: KernelBuilder, left: Value, right: Value, at: ast.AST) -> Value:
    a = b.emit("cast", [left], {"dtype": "float16"}, at)[0]
    c = b.emit("cast", [right], {"dtype": "float16"}, at)[0]
    counts = b.emit("matmul", [a, c], {}, at)[0]
    return tensor_binary(b, "gt", counts, 0.0, at)


def is_bool_pair(left: Any, right: Any) -> bool:
    return is_tensor(left) and is_tensor(right) and dtypes.is_bool(left.type.dtype) and dtypes.is_bool(right.type.dtype)
