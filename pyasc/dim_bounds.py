"""Lower bounds of symbolic dims, so that slice arithmetic on them folds where it can.

Under `dynamic=True` a dim of size 0 or 1 is static and part of the
specialisation key (`runtime/specialize.py`), so every input size symbol is
at least 2, and every dim is at least 0. Knowing that turns `min(1, x_d0)`
into 1 and `max(x_d0 - 1, 0)` into `x_d0 - 1`: `x[1:]` has the readable dim
`x_d0 - 1` instead of a formula that only the launch can answer.

This module is a leaf over `pyasc.symbolic` and `pyasc.tensor_type`.
"""
from __future__ import annotations

from . import symbolic as sy
from .tensor_type import Dim, unwrap, wrap

#: the smallest size an input size symbol stands for (0 and 1 are specialised)
SYMBOL_MIN = 2


def lower_bound(v: sy.IntLike) -> int | None:
    """A proven lower bound of `v` (a dim, so never negative), or None when nothing is proven."""
    if isinstance(v, int):
        return v
    if v.op == "sym":
        return SYMBOL_MIN
    if v.op == "add":
        total = 0
        for t in v.args:
            lb = lower_bound(t)
            if lb is None:
                return None
            total += lb
        return total
    if v.op == "mul":
        if any(isinstance(a, int) and a < 0 for a in v.args):
            return None
        out = 1
        for a in v.args:
            lb = lower_bound(a)
            if lb is None or lb < 0:
                return None
            out *= lb
        return out
    if v.op in ("min", "max"):
        lbs = [lower_bound(a) for a in v.args]
        if v.op == "min":
            return None if any(lb is None for lb in lbs) else min(lbs)  # type: ignore[type-var]
        known = [lb for lb in lbs if lb is not None]
        return max(known) if known else None
    if v.op in ("floordiv", "ceildiv") and isinstance(v.args[1], int) and v.args[1] > 0:
        lb = lower_bound(v.args[0])
        if lb is None:
            return None
        return lb // v.args[1] if v.op == "floordiv" else -(-lb // v.args[1])
    return None


def dim_min(a: Dim, b: Dim) -> Dim:
    """min(a, b), folded when a proven bound decides it."""
    ea, eb = unwrap(a), unwrap(b)
    for small, big in ((ea, eb), (eb, ea)):
        if isinstance(small, int):
            lb = lower_bound(big)
            if lb is not None and small <= lb:
                return wrap(small)
    return wrap(sy.min_(ea, eb))


def dim_max(a: Dim, b: Dim) -> Dim:
    """max(a, b), folded when a proven bound decides it."""
    ea, eb = unwrap(a), unwrap(b)
    for small, big in ((ea, eb), (eb, ea)):
        if isinstance(small, int):
            lb = lower_bound(big)
            if lb is not None and small <= lb:
                return wrap(big)
    return wrap(sy.max_(ea, eb))


def dim_sub(a: Dim, b: Dim) -> Dim:
    """a - b, with a - max(p, q) = min(a - p, a - q) (and min likewise), so a clamped slice start cancels:
    x_d1 - max(x_d1 - 5, 0) is min(x_d1, 5)."""
    ea, eb = unwrap(a), unwrap(b)
    if isinstance(eb, sy.Expr) and eb.op in ("min", "max") and len(eb.args) == 2:
        parts = [dim_sub(a, wrap(p)) for p in eb.args]
        return dim_min(*parts) if eb.op == "max" else dim_max(*parts)
    return wrap(sy.add(ea, sy.mul(-1, eb)))
