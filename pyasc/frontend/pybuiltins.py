"""Python builtins numpy code calls on arrays and objects: type, hasattr, getattr, setattr, any, all, pow,
operator.index and print, with the answers Python and numpy give.

- `type(x)` of a tensor is `np.ndarray` (a numpy scalar's type for a 0-d value numpy holds as a scalar),
  so `getattr(x, "dtype", type(x))` and `type(x) is np.ndarray` read as in numpy;
- `hasattr(obj, name)` / `getattr(obj, name, default)` on an object outside the kernel are compile-time
  answers guarded on the attribute's presence (`if not hasattr(layer, "cache")` compiles again once the
  kernel's store has made it); the kernel's own stores count;
- `print(...)` prints after the launch, as numpy code printing in the same place would (values are the
  kernel's, compile-time values as Python shows them), in program order.
"""
from __future__ import annotations

import ast
import operator
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..guards import Attr, Has
from ..tensor_type import Sym
from . import aliasing, effects, guards, objects
from .protocol import KernelBuilder
from .values import TensorMethod, contains_tensor, describe, is_tensor


def _compile_time(b: KernelBuilder, fn: Any, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    try:
        return fn(*args, **kwargs)
    except Exception as e:
        raise b.error(f"{name}(): {type(e).__name__}: {e}", at) from None


def type_(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    if len(args) == 1 and not kwargs:
        x = args[0]
        if is_tensor(x):
            if aliasing.is_scalar(b, x):
                return dtypes.to_numpy(x.type.dtype).type
            return np.ndarray
        if isinstance(x, TensorMethod):
            return type(np.empty(0).sum)
    if contains_tensor(args):
        raise b.error(f"{name}() with {len(args)} arguments makes a class, which a kernel does not do", at)
    return _compile_time(b, type, args, kwargs, at, name)


def _name_of(b: KernelBuilder, value: Any, at: ast.AST, name: str) -> str:
    if not isinstance(value, str):
        raise b.error(f"{name}(): attribute name must be string, not '{type(value).__name__}'", at)
    return value


def _has(b: KernelBuilder, obj: Any, attr: str, at: ast.AST) -> bool:
    """Whether `obj.attr` exists now (the kernel's stores count), guarded on the object's path."""
    if effects.lookup(b, obj, Attr(attr)) is not effects.MISSING:
        return True
    present = hasattr(obj, attr)
    return bool(guards.read_step(b, obj, Has(attr), present, at))


def hasattr_(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> bool:
    if len(args) != 2 or kwargs:
        return _compile_time(b, hasattr, args, kwargs, at, name)
    obj, attr = args[0], _name_of(b, args[1], at, name)
    if is_tensor(obj):
        try:
            b.tensor_attribute(obj, attr, at)
        except Exception:
            return hasattr(np.empty(0), attr)  # numpy's answer for an array attribute pyasc does not model
        return True
    return _has(b, obj, attr, at)


def getattr_(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str, *,
             inline: Callable[..., Any]) -> Any:
    if not 2 <= len(args) <= 3 or kwargs:
        return _compile_time(b, getattr, args, kwargs, at, name)
    obj, attr = args[0], _name_of(b, args[1], at, name)
    if is_tensor(obj):
        if len(args) == 3 and attr not in ("shape", "dtype", "ndim", "size", "T") and not hasattr(np.empty(0), attr):
            return args[2]
        return b.tensor_attribute(obj, attr, at)
    if len(args) == 3 and not _has(b, obj, attr, at):
        return args[2]
    attr = objects.mangle(b, attr)
    if effects.lookup(b, obj, Attr(attr)) is effects.MISSING:
        getter = objects.property_getter(b, obj, attr)
        if getter is not None:  # a property: its getter inlined, like `obj.attr`
            return inline(b, getter, [obj], {}, at, name)
    return objects.read_attribute(b, obj, attr, at)


def setattr_(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> None:
    if len(args) != 3 or kwargs:
        return _compile_time(b, setattr, args, kwargs, at, name)
    obj, attr, value = args[0], _name_of(b, args[1], at, name), args[2]
    what = f"`{b.text(at)}`"
    if is_tensor(obj):
        raise b.error(f"{what} sets an attribute of a tensor, which a kernel does not do", at)
    if effects.store(b, obj, Attr(attr), value, at, what) or effects.set_made(b, obj, Attr(attr), value, at, what):
        return None
    raise b.error(f"{what} sets an attribute of {describe(obj)}, which the kernel did not build and cannot reach "
                  "from outside (an argument, `self`, a global)", at)


def _truth_all(fn: Callable[[Any], bool]) -> Callable[..., Any]:
    def handler(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
        if len(args) == 1 and not kwargs:
            items = b.iterate(args[0], at)
            for item in items:
                if is_tensor(item) or isinstance(item, Sym):
                    raise b.error(f"{name}() needs the truth of {describe(item)} at compile time; use "
                                  f"np.{name}(...) for an elementwise test of a tensor", at)
            return fn(b.truth(item, at) for item in items)
        return _compile_time(b, fn, args, kwargs, at, name)
    return handler


any_, all_ = _truth_all(any), _truth_all(all)


def pow_(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    if len(args) == 2 and not kwargs and contains_tensor(args):
        return b.binary(ast.Pow(), args[0], args[1], at, (at, at))
    if contains_tensor(args):
        raise b.error(f"{name}() with a modulus on a tensor is not supported; use (x ** y) % m", at)
    return _compile_time(b, pow, args, kwargs, at, name)


def index_(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    if len(args) == 1 and is_tensor(args[0]):
        raise b.error(f"{name}() needs an integer known at compile time, but `{b.text(at)}` is a tensor "
                      f"({args[0].type}), known only at run time", at)
    return _compile_time(b, operator.index, args, kwargs, at, name)


def print_(b: KernelBuilder, args: list, kwargs: dict, at: ast.AST, name: str) -> None:
    unknown = set(kwargs) - {"sep", "end", "flush", "file"}
    if unknown or kwargs.get("file") is not None:
        raise b.error(f"{name}() in a kernel prints to standard output after the call; it takes sep= and end= "
                      f"(got {', '.join(sorted(unknown)) or 'file='})", at)
    sep, end = kwargs.get("sep", " "), kwargs.get("end", "\n")
    if not (isinstance(sep, str) or sep is None) or not (isinstance(end, str) or end is None):
        raise b.error(f"{name}(): sep and end must be strings", at)
    effects.add_print(b, list(args), " " if sep is None else sep, "\n" if end is None else end, at,
                      f"`{b.text(at)}`")
    return None


HANDLERS: dict[Any, Callable[..., Any]] = {
    type: type_,
    hasattr: hasattr_,
    setattr: setattr_,
    any: any_,
    all: all_,
    pow: pow_,
    operator.index: index_,
    print: print_,
}
