"""Objects in a kernel: read-only dict methods, calling an object, and private-name mangling.

- `d.get(k, default)`, `d.items()`, `d.keys()`, `d.values()`, `d.copy()` on a
  dict (a pytree argument, or a captured dict such as a global `params`):
  each value is read as `d[k]` would be, so a captured dict's values are
  guarded on their own access paths and its large arrays lifted to hidden
  inputs exactly as `params["w"]` is.
- `layer(x)` on an object whose class defines `__call__` in Python inlines
  `type(layer).__call__` with `layer` as `self` (like a bound method).
- `self.__forward` inside a class body means `self._Class__forward`, as in
  Python: the AST holds the unmangled name, so the frontend mangles it.
- `self.head_dim` that is a property runs its getter inlined, like a method
  (so a getter computing on tensors, `self.w.T`, builds graph nodes).
"""
from __future__ import annotations

import ast
import inspect
import operator
import types
from typing import Any

from ..guards import TRUSTED_MODULES
from . import comptime, effects, guards
from .protocol import KernelBuilder
from .tensors import fold
from .values import describe

#: dict methods that read without changing the dict
DICT_READERS = ("get", "items", "keys", "values", "copy")


def is_dict_method(callee: Any) -> bool:
    return isinstance(callee, types.BuiltinMethodType) and isinstance(getattr(callee, "__self__", None), dict)


def dict_method(b: KernelBuilder, callee: Any, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    d: dict = callee.__self__
    method = callee.__name__
    if method in DICT_WRITERS:
        return _dict_write(b, d, method, args, kwargs, at, name)
    if method not in DICT_READERS:
        raise b.error(f"{name}() would change a dict in place, which a kernel does not support; build a new "
                      "dict instead, e.g. `{**d, key: value}`", at)
    if kwargs or (method == "get" and not 1 <= len(args) <= 2) or (method != "get" and args):
        try:
            callee(*args, **kwargs)  # Python's own message for the wrong arguments
        except TypeError as e:
            raise b.error(f"{name}(): {e}", at) from None
    if method == "keys":
        return tuple(d)

    def read(k: Any) -> Any:
        stored = effects.lookup(b, d, guards.Item(k))
        return stored if stored is not effects.MISSING else guards.read_step(b, d, guards.Item(k), d[k], at)

    if method == "get":
        key = args[0]
        try:
            present = key in d
        except TypeError:
            raise b.error(f"{name}(): the key is unhashable ({describe(key)})", at) from None
        if present:
            return read(key)
        return args[1] if len(args) == 2 else None
    if method == "values":
        return tuple(read(k) for k in d)
    if method == "items":
        return tuple((k, read(k)) for k in d)
    return {k: read(k) for k in d}  # copy


#: dict methods that set items, as `d[k] = v` does (a pytree argument's dict or a captured one: set after the call)
DICT_WRITERS = ("setdefault", "update")


def _set_item(b: KernelBuilder, d: dict, key: Any, value: Any, at: ast.AST, what: str) -> None:
    if effects.store(b, d, guards.Item(key), value, at, what):
        return
    comptime.check_list_mutation(b, d, what, at)  # a dict the kernel built: Python's own, changed now
    d[key] = value


def _dict_write(b: KernelBuilder, d: dict, method: str, args: list, kwargs: dict, at: ast.AST, name: str) -> Any:
    what = f"{name}()"
    if method == "setdefault":
        if kwargs or not 1 <= len(args) <= 2:
            raise b.error(f"{name}() takes a key and an optional default", at)
        key, default = args[0], (args[1] if len(args) == 2 else None)
        stored = effects.lookup(b, d, guards.Item(key))
        if stored is not effects.MISSING:
            return stored
        try:
            present = key in d
        except TypeError:
            raise b.error(f"{name}(): the key is unhashable ({describe(key)})", at) from None
        if present:
            return read_item(b, d, key, at)
        _set_item(b, d, key, default, at, what)
        return default
    if len(args) > 1:
        raise b.error(f"{name}() takes at most one positional argument", at)
    items = dict(args[0]) if args else {}
    items.update(kwargs)
    for key, value in items.items():
        _set_item(b, d, key, value, at, what)
    return None


def read_attribute(b: KernelBuilder, base: Any, attr: str, at: ast.AST) -> Any:
    """`base.attr` of a compile-time object: what the kernel stored there, else the attribute, guarded on its
    access path (a property is the caller's business: its getter is inlined, see `property_getter`)."""
    stored = effects.lookup(b, base, guards.Attr(attr))
    if stored is not effects.MISSING:
        return stored
    try:
        value = getattr(base, attr)
    except AttributeError:
        owner = f"module {base.__name__}" if inspect.ismodule(base) else describe(base)
        raise b.error(f"{owner} has no attribute `{attr}`", at) from None
    return guards.read_step(b, base, guards.Attr(attr), value, at)


def read_item(b: KernelBuilder, base: Any, index: Any, at: ast.AST) -> Any:
    """`base[index]` of a compile-time container: what the kernel stored there, else the item, guarded."""
    stored = effects.lookup(b, base, guards.Item(index))
    if stored is not effects.MISSING:
        return stored
    value = fold(b, operator.getitem, (base, index), at)
    return guards.read_step(b, base, guards.Item(index), value, at)


def root_of(fn: Any) -> Any:
    """What guard paths start from: the function or bound method (a kernel object's `py_func`)."""
    inner = getattr(fn, "py_func", None)
    return inner if isinstance(inner, (types.FunctionType, types.MethodType)) else fn


def bound_self(root: Any) -> Any:
    """The instance a method kernel is bound to (`pyasc.kernel(obj.method)`), or None for a function."""
    return root.__self__ if isinstance(root, types.MethodType) else None


def call_method_of(callee: Any) -> types.FunctionType | None:
    """`type(obj).__call__` when it is a Python function (so a call of `obj` can be inlined), else None."""
    if isinstance(callee, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return None
    fn = getattr(type(callee), "__call__", None)
    return fn if isinstance(fn, types.FunctionType) else None


def kernel_call_of(callee: Any) -> Any:
    """`obj.__call__` when the class's `__call__` is a `@pyasc.kernel` method (a kernel bound to `obj`), else None."""
    if isinstance(callee, type):
        return None
    method = getattr(type(callee), "__call__", None)
    if not isinstance(getattr(method, "py_func", None), types.FunctionType) or not hasattr(method, "__get__"):
        return None
    return callee.__call__


def property_getter(b: KernelBuilder, base: Any, attr: str) -> types.FunctionType | None:
    """The Python getter of `type(base).attr` when it is a property (`self.head_dim`), mapped to its access
    path (`base.__class__.attr.fget`) so the inlined getter is guarded like any helper; else None."""
    if isinstance(base, type):
        return None
    prop = inspect.getattr_static(type(base), attr, None)
    if not isinstance(prop, property) or not isinstance(prop.fget, types.FunctionType):
        return None
    if (prop.fget.__module__ or "").split(".", 1)[0] in TRUSTED_MODULES:  # numpy's own (np.finfo(...).tiny):
        return None  # plain Python reads them at compile time
    base_path = guards.path_of(b.state, base)
    if base_path is not None and guards.path_of(b.state, prop.fget) is None:
        b.state.paths[id(prop.fget)] = (prop.fget, base_path + (guards.Attr("__class__"), guards.Attr(attr),
                                                                 guards.Attr("fget")))
    return prop.fget


def mangle(b: KernelBuilder, attr: str) -> str:
    """Python's private-name mangling: `__x` inside `class C` is `_C__x` (not `__x__`)."""
    if not attr.startswith("__") or attr.endswith("__"):
        return attr
    cls = class_of(b)
    if cls is None:
        return attr
    return f"_{cls.lstrip('_')}{attr}" if cls.lstrip("_") else attr


def class_of(b: KernelBuilder) -> str | None:
    """The name of the class whose body defines the function being compiled (from its qualname)."""
    parts = b.scope.fn.__qualname__.split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        return None
    return parts[-2]
