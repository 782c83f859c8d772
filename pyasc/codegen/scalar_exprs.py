"""The tile programs' back end of `symbolic.Renderer`: integer expressions as scalar-unit instructions.

An int stays an immediate; a sum puts its positive terms first and subtracts the negative ones (no multiply
by -1); `select(c, a, b)` is `b + c * (a - b)` (c is 0 or 1); every other op is one ALU instruction per
operand pair. A symbol has no rule here: the emitter binds each one (the core index, the tiling fields, loop
variables, Lets) before any expression uses it.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import symbolic as sy
from ..target import Program, Reg

#: symbolic op -> the scalar ALU function of the same meaning
_ALU = {"mul": "mul", "min": "min", "max": "max", "floordiv": "div", "ceildiv": "cdiv", "mod": "mod", "lt": "lt",
        "le": "le", "eq": "eq", "ne": "ne"}


def scalar_table(p: Program) -> dict[str, Callable[..., Any]]:
    def reg(v: Any) -> Reg:
        return v if isinstance(v, Reg) else p.mov(v)

    def add(render: Callable[[sy.IntLike], Any], *terms: sy.IntLike) -> Reg:
        acc: Any = None
        for t in sorted(terms, key=lambda t: sy._split_coeff(t)[0] < 0):
            c, rest = sy._split_coeff(t)
            if c < 0 and acc is not None:
                acc = p.sub(acc, render(sy.mul(-c, rest)))
                continue
            v = render(t)
            acc = v if acc is None else p.add(acc, v)
        return reg(acc)

    def alu(fn: str) -> Callable[..., Reg]:
        def apply(render: Callable[[sy.IntLike], Any], *args: sy.IntLike) -> Reg:
            acc = render(args[0])
            for a in args[1:]:
                acc = p.alu(fn, acc, render(a))
            return reg(acc)
        return apply

    def select(render: Callable[[sy.IntLike], Any], c: sy.IntLike, a: sy.IntLike, b: sy.IntLike) -> Reg:
        c, a, b = render(c), render(a), render(b)
        return p.add(b, p.mul(c, p.sub(a, b)))

    return {"add": add, "select": select, **{op: alu(fn) for op, fn in _ALU.items()}}
