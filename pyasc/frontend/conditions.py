"""The test of an `if`, a `while` or a conditional expression: Python's `and`, `or` and `not` over values some
of which are one-element tensors, known only at run time.

Outside a truth test, `a and b` is a value (a, or b), which a kernel cannot pick before the launch; inside one
only its truth counts, and `bool(a and b)` is `bool(a) and bool(b)`. So a test is taken apart: compile-time
operands short-circuit as Python's do (`n > 0 and x.max() > 1` with n == 0 never reads x), one-element tensors
become 0-d bools combined with logical and/or/not, and the test is a compile-time value or a 0-d bool tensor.
Both operands of a tensor `and` are computed (Python would skip the second when the first is false): the
expressions of a kernel have no side effects to skip. A tensor of more than one element has no truth value
(numpy's ValueError), as everywhere else.
"""
from __future__ import annotations

import ast
from typing import Any

from ..ir.graph import Value
from ..tensor_type import Sym
from . import dimpred
from .protocol import KernelBuilder
from .values import is_tensor


def test_value(b: KernelBuilder, node: ast.expr) -> Any:
    """The value of the test `node`: compile-time (a Python value or a shape predicate Sym, as `b.eval` gives)
    or a 0-d bool tensor."""
    if isinstance(node, ast.BoolOp):
        return _bool_op(b, node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = test_value(b, node.operand)
        if is_tensor(v):
            return b.emit("invert", [_as_bool(b, v, node.operand)], {}, node)[0]
        return b.eval(node)  # (the builder's own `not`: compile-time values and shape predicates)
    return b.eval(node)


def _bool_op(b: KernelBuilder, node: ast.BoolOp) -> Any:
    is_and = isinstance(node.op, ast.And)
    tensors: list[Value] = []
    symbolic: list[tuple[Sym, ast.expr]] = []
    v: Any = None
    for expr in node.values:
        v = test_value(b, expr)
        if isinstance(v, Sym):
            symbolic.append((v, expr))
        elif is_tensor(v):
            tensors.append(_as_bool(b, v, expr))
        elif b.truth(v, expr) != is_and:
            return v  # a compile-time operand decides the whole test, as Python's short circuit does
    if not tensors:
        return b.eval(node) if symbolic else v  # shape predicates: the builder combines them symbolically
    out = tensors[0]
    for t in tensors[1:] + [dimpred.condition(b, sym, expr) for sym, expr in symbolic]:
        out = b.emit("bitwise_and" if is_and else "bitwise_or", [out, t], {}, node)[0]
    return out


def _as_bool(b: KernelBuilder, v: Value, at: ast.AST) -> Value:
    """A one-element tensor as a 0-d bool (numpy's truth value of it)."""
    if v.type.numel != 1:
        raise b.error(f"the truth value of `{b.text(at)}` ({v.type}), an array with more than one element, is "
                      "ambiguous (numpy raises ValueError); use a.any() or a.all()", at)
    if v.type.ndim:
        v = b.emit("reshape", [v], {"shape": ()}, at)[0]
    if v.type.dtype != "bool":
        v = b.emit("ne", [v, b.const(0, v.type.dtype, at)], {}, at)[0]
    return v
