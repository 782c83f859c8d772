"""np.piecewise in a kernel: its functions are compiled calls on the whole x (calls.py passes its own call_value,
so this module imports nothing of calls)."""
from __future__ import annotations

import ast
from typing import Any, Callable

import numpy as np

from .protocol import KernelBuilder
from .values import describe, is_tensor


def piecewise_call(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str, op_call: Callable[..., Any],
                   call_value: Callable[..., Any]) -> Any:
    """np.piecewise(x, condlist, funclist, *args, **kw): each entry of funclist (a number, or a function the
    kernel compiles, called on the whole x with args/kw: numpy calls it on x[cond], the same for elementwise
    functions) where its condition holds, a later condition winning, 0 where none does (one extra entry: the
    value there); the result has x's dtype, as numpy's assignment into zeros_like(x)."""
    if len(args) < 3 or not is_tensor(args[0]):
        return None
    x, condlist, funclist, extra = args[0], args[1], args[2], list(args[3:])
    conds = list(condlist) if isinstance(condlist, (list, tuple)) else [condlist]
    funcs = list(funclist) if isinstance(funclist, (list, tuple)) else [funclist]
    if not all(is_tensor(c) or isinstance(c, (bool, np.bool_)) for c in conds):
        raise b.error(f"{name}(): condlist must be boolean tensors", at)
    if len(funcs) == len(conds) + 1:
        anyc = conds[0]
        for c in conds[1:]:
            anyc = op_call(b, None, "logical_or", [anyc, c], {}, at, name)
        conds.append(op_call(b, None, "logical_not", [anyc], {}, at, name))
    elif len(funcs) != len(conds):
        raise b.error(f"{name}(): with {len(conds)} condition(s), funclist must have {len(conds)} or "
                      f"{len(conds) + 1} entries, got {len(funcs)}", at)
    dtype = x.type.dtype
    out = op_call(b, None, "full_like", [x, False if dtype == "bool" else 0], {}, at, name)
    for cond, f in zip(conds, funcs):
        value = call_value(b, f, [x, *extra], dict(kwargs), at) if callable(f) else f
        if not (is_tensor(value) or isinstance(value, (bool, int, float, np.generic))):
            raise b.error(f"{name}(): funclist entries must be numbers or functions, got {describe(value)}", at)
        chosen = op_call(b, None, "where", [cond, value, out], {}, at, name)
        out = chosen if chosen.type.dtype == dtype else op_call(b, None, "cast", [chosen, dtype], {}, at, name)
    return out
