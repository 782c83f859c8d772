"""Shape predicates under dynamic=True: comparisons of symbolic dims, `if` on them, `assert` on them.

`x.shape[0] >= 8` on a symbolic dim is a Sym whose expression is a 0/1
comparison (`8 <= x_d0`); `and`/`or`/`not` combine such predicates
symbolically. An `if` (or `a if c else b`) on one becomes an If whose
condition is a DimValue node: the host code evaluates the predicate at
launch and runs one compiled branch (an early `return` in one branch takes the
statements after the `if` into the other). An `assert` on one becomes a launch
check, recorded on the graph's inputs (attribute `_launch_checks`) with the
user's line, that the runtime evaluates before anything runs.
"""
from __future__ import annotations

import ast
from typing import Any, Sequence

from .. import symbolic as sy
from ..ops.dimvalue import LAUNCH_CHECKS
from ..tensor_type import Sym, unwrap
from .protocol import KernelBuilder

_COMPARE = {"<": sy.lt, "<=": sy.le, ">": sy.gt, ">=": sy.ge, "==": sy.eq, "!=": sy.ne}
_PREDICATES = ("lt", "le", "eq", "ne")



def _is_dim(v: Any) -> bool:
    return isinstance(v, Sym) or (isinstance(v, int) and not isinstance(v, bool))


def _as_result(e: sy.IntLike) -> Any:
    return bool(e) if isinstance(e, int) else Sym(e)


def compare(spelling: str, left: Any, right: Any) -> Any:
    """`left <spelling> right` when one side is a symbolic dim and both are dims: a bool or a predicate Sym;
    None when this is not a comparison of dims."""
    if spelling not in _COMPARE or not (isinstance(left, Sym) or isinstance(right, Sym)):
        return None
    if not (_is_dim(left) and _is_dim(right)):
        return None
    return _as_result(_COMPARE[spelling](unwrap(left), unwrap(right)))


def truth(v: Any) -> sy.IntLike:
    """The 0/1 truth of a compile-time value or a symbolic dim (a dim is true when it is not 0)."""
    if isinstance(v, Sym):
        return v.e if _is_bool(v.e) else sy.ne(v.e, 0)
    return int(bool(v))


def _is_bool(e: sy.IntLike) -> bool:
    """Whether `e` is always 0 or 1 (a comparison, or a select of such)."""
    if isinstance(e, int):
        return e in (0, 1)
    if e.op in _PREDICATES:
        return True
    return e.op == "select" and _is_bool(e.args[1]) and _is_bool(e.args[2])


def is_predicate_operand(v: Any) -> bool:
    return isinstance(v, (Sym, bool, int))


def logical(is_and: bool, values: Sequence[Any]) -> Any:
    """`a and b and ...` / `a or b or ...` of predicates (Python's truth, a 0/1 result)."""
    out: sy.IntLike = truth(values[0])
    for v in values[1:]:
        t = truth(v)
        out = sy.select(out, t, 0) if is_and else sy.select(out, 1, t)
    return _as_result(out)


_INVERSE = {"lt": lambda a, b: sy.le(b, a), "le": lambda a, b: sy.lt(b, a), "eq": sy.ne, "ne": sy.eq}


def negate(v: Sym) -> Any:
    t = truth(v)
    if isinstance(t, sy.Expr) and t.op in _INVERSE:  # not (a < b) is b <= a: the dump stays readable
        return _as_result(_INVERSE[t.op](*t.args))
    return _as_result(sy.eq(t, 0))


def condition(b: KernelBuilder, cond: Any, at: ast.AST) -> Any:
    """A predicate Sym as an If condition (a DimValue the host evaluates); anything else unchanged."""
    if not isinstance(cond, Sym):
        return cond
    return b.emit("DimValue", [], {"value": Sym(truth(cond)), "dtype": "bool"}, at)[0]


def launch_check(b: KernelBuilder, cond: Sym, message: str, at: ast.AST) -> None:
    """Record `assert cond` for the launch: the message carries the user's file, line and source."""
    inputs = b.state.graph.inputs if b.state.graph is not None else []
    loc = b.loc(at)
    where = f"{loc}: {loc.source_line().strip()}" if loc is not None else b.text(at)
    text = f"{message} (at {where})"
    pred = Sym(truth(cond))
    if not inputs:  # no tensor inputs means no symbolic dims: cannot happen for a Sym predicate
        raise b.error(f"{message}: a shape assertion needs a tensor input", at)
    node = inputs[0]
    node.attrs[LAUNCH_CHECKS] = tuple(node.attrs.get(LAUNCH_CHECKS, ())) + ((pred, text),)


