"""The standard library's functional helpers in a kernel: the `operator` module's functions, `functools.reduce`,
and `itertools`. On compile-time values they are Python's own; on tensors, operator's functions are the
numpy ufuncs the operators call (`operator.add(x, y)` is `x + y`, np.add), and reduce / accumulate / starmap
call their function per item at compile time, a lambda or helper inlined as anywhere else. itertools'
combinatorics move items around (tensors included) and never look at tensor values. calls.py passes its
call_value, so this module imports nothing of calls."""
from __future__ import annotations

import ast
import functools
import itertools
import operator
from typing import Any, Callable

import numpy as np

from .protocol import KernelBuilder
from .values import contains_tensor, is_tensor

#: operator-module functions on tensors -> the numpy function the operator calls on an ndarray
OPERATOR_UFUNCS: dict[Any, Any] = {
    operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply, operator.truediv: np.true_divide,
    operator.floordiv: np.floor_divide, operator.mod: np.remainder, operator.pow: np.power,
    operator.matmul: np.matmul, operator.and_: np.bitwise_and, operator.or_: np.bitwise_or,
    operator.xor: np.bitwise_xor, operator.lshift: np.left_shift, operator.rshift: np.right_shift,
    operator.neg: np.negative, operator.invert: np.invert, operator.abs: np.abs,
    operator.lt: np.less, operator.le: np.less_equal, operator.eq: np.equal, operator.ne: np.not_equal,
    operator.ge: np.greater_equal, operator.gt: np.greater,
}

CallValue = Callable[..., Any]


def _python(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        raise b.error(f"{name}(): {type(e).__name__}: {e}", at) from None


def operator_call(fn: Any, call_value: CallValue) -> Callable[..., Any]:
    ufunc = OPERATOR_UFUNCS[fn]

    def handler(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
        if contains_tensor(args) and not kwargs:
            return call_value(b, ufunc, list(args), {}, at)
        return _python(b, fn, args, kwargs, at, name)
    return handler


def _items(b: KernelBuilder, v: Any, at: ast.AST) -> list[Any]:
    return list(b.iterate(v, at)) if is_tensor(v) or isinstance(v, (list, tuple)) else list(_python(
        b, list, [v], {}, at, "iteration"))


def reduce_(call_value: CallValue) -> Callable[..., Any]:
    def handler(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
        if kwargs or len(args) not in (2, 3):
            return _python(b, functools.reduce, args, kwargs, at, name)  # Python's own message
        items = _items(b, args[1], at)
        if len(args) == 3:
            items = [args[2]] + items
        if not items:
            raise b.error(f"{name}(): reduce() of empty iterable with no initial value (Python's TypeError)", at)
        acc = items[0]
        for item in items[1:]:
            acc = call_value(b, args[0], [acc, item], {}, at)
        return acc
    return handler


def accumulate_(call_value: CallValue) -> Callable[..., Any]:
    def handler(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
        if not args or len(args) > 2 or set(kwargs) - {"func", "initial"}:
            return _python(b, itertools.accumulate, args, kwargs, at, name)
        func = args[1] if len(args) == 2 else kwargs.get("func")
        items = _items(b, args[0], at)
        if kwargs.get("initial") is not None:
            items = [kwargs["initial"]] + items
        out: list[Any] = []
        for item in items:
            out.append(item if not out else (call_value(b, func, [out[-1], item], {}, at) if func is not None
                                             else call_value(b, operator.add, [out[-1], item], {}, at)))
        return tuple(out)
    return handler


def starmap_(call_value: CallValue) -> Callable[..., Any]:
    def handler(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
        if kwargs or len(args) != 2:
            return _python(b, itertools.starmap, args, kwargs, at, name)
        return tuple(call_value(b, args[0], _items(b, item, at), {}, at) for item in _items(b, args[1], at))
    return handler


def _combinatoric(fn: Any) -> Callable[..., Any]:
    def handler(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
        args = [b.iterate(a, at) if is_tensor(a) or isinstance(a, (list, tuple)) else a for a in args]
        return _python(b, lambda *a, **k: tuple(fn(*a, **k)), args, kwargs, at, name)
    return handler


def handlers(call_value: CallValue) -> dict[Any, Callable[..., Any]]:
    """The builtins table's entries for these modules."""
    out: dict[Any, Callable[..., Any]] = {fn: operator_call(fn, call_value) for fn in OPERATOR_UFUNCS}
    out[functools.reduce] = reduce_(call_value)
    out[itertools.accumulate] = accumulate_(call_value)
    out[itertools.starmap] = starmap_(call_value)
    for fn in (itertools.product, itertools.combinations, itertools.combinations_with_replacement,
               itertools.permutations, itertools.chain, itertools.chain.from_iterable, itertools.islice,
               itertools.zip_longest, itertools.pairwise, itertools.repeat, itertools.compress):
        out[fn] = _combinatoric(fn)
    return out
