"""Recording what a kernel reads from outside itself while it compiles (the records are in pyasc.guards).

The builder calls these hooks where Python evaluates something at compile
time: a global or closure name (`read_name`), an attribute or a subscript of
a value reached that way (`read_step`), the items of such a sequence when a
loop runs over it (`read_items`), the values of such a dict spread with `**`
(`read_values`) and a helper function about to be inlined
(`read_function`: its code, defaults and keyword defaults). Each hook
extends the access path of the value it starts from, so a path always leads
from the kernel function to the value, through any number of helpers
(`helper.__globals__["SCALE"]`), and records one Guard per path.

A numeric array of at least pyasc.guards.LIFT_MIN_BYTES at the end of a path
is *lifted*: it becomes a Data input of the kernel graph, appended after the
user's tensors, and the runtime passes its current contents at every call.
Its guard then checks only dtype and shape. Smaller arrays are constants.

Objects are mapped to their path by identity while one kernel compiles
(`BuildState.paths`); numbers and strings are never mapped (small ones are
shared objects) and need no path: they are guarded where they were read.
"""
from __future__ import annotations

import re
import types
from typing import Any, Sequence

import numpy as np

from .. import arraykinds, dtypes
from ..guards import Attr, Builtin, Free, Global, Guard, Item, Pinned, Unguardable, check_for, liftable, \
    path_text, trusted_module
from ..tensor_type import TensorType
from . import effects
from .context import BuildState
from .protocol import KernelBuilder
from .scope import CLOSURE

_UNMAPPED = (bool, int, float, complex, str, bytes, type(None), np.generic)
_CONTENT_CHECKED = ("value", "array", "tuple", "list", "dict", "set")
_NOT_IDENTIFIER = re.compile(r"\W+")


def begin(state: BuildState, fn: types.FunctionType) -> None:
    """The kernel function is the root every path starts from."""
    state.paths[id(fn)] = (fn, ())


def finish(state: BuildState, fn: types.FunctionType) -> None:
    """The kernel's own code is guarded last (a `__code__` replaced after the first call compiles the new code)."""
    _guard(state, (Attr("__code__"),), fn.__code__)


def read_builtin(b: KernelBuilder, name: str, value: Any) -> Any:
    """A builtin name (`abs`, `range`) of the function being compiled, guarded as that function resolves it, so
    a module global of the same name assigned later (shadowing the builtin) compiles the kernel again."""
    _guard(b.state, _function_path(b.state, b.scope.fn) + (Builtin(name),), value)
    return value


def _guard(state: BuildState, path: tuple, value: Any) -> None:
    """A guard on a value the kernel depends on without naming it as a value (not listed as `captured`)."""
    if path not in state.guards:
        state.guards[path] = Guard(path, check_for(value))


def path_of(state: BuildState, obj: Any) -> tuple | None:
    entry = state.paths.get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def _function_path(state: BuildState, fn: types.FunctionType) -> tuple:
    """The path to a function whose names are being read; one reached some other way is pinned
    (guarded in this process only: its guards cannot be written to the disk cache)."""
    path = path_of(state, fn)
    if path is None:
        path = (Pinned(fn),)
        state.paths[id(fn)] = (fn, path)
    return path


def read_name(b: KernelBuilder, name: str, where: str, value: Any, at: Any) -> Any:
    """A global or closure name of the function being compiled (the kernel or an inlined helper)."""
    fn = b.scope.fn
    step = Free(name, fn.__code__.co_freevars.index(name)) if where == CLOSURE else Global(name)
    path = _function_path(b.state, fn)
    label = name if path == () else f"{fn.__qualname__}.{name}"  # `captured`: a helper's names as "helper.name"
    return _read(b, path + (step,), value, at, label)


def read_self(b: KernelBuilder, obj: Any, at: Any) -> Any:
    """The `self` of a method kernel (`pyasc.kernel(obj.method)`): the root's `__self__`, guarded like a
    global, so `self.w` reads are paths from it."""
    return _read(b, (Attr("__self__"),), obj, at, "self")


def read_step(b: KernelBuilder, base: Any, step: Attr | Item, value: Any, at: Any) -> Any:
    """`base.attr` or `base[key]` evaluated at compile time; tracked when `base` was reached by a path."""
    base_path = path_of(b.state, base)
    if base_path is None or trusted_module(base):
        if isinstance(value, np.ndarray) and base_path is None:
            b.state.unpathed[id(value)] = value  # an array of an object reached without a path: never written
        return value
    if isinstance(step, Item):
        try:
            hash(step)
        except TypeError:  # an unhashable index: the base's own content check covers the result
            if b.state.guards[base_path].check.kind in _CONTENT_CHECKED:
                return value
            raise b.error(f"`{b.text(at)}` indexes {path_text(base_path)} with an unhashable "
                          f"{type(step.key).__name__}, which pyasc cannot guard; pass the value to the kernel "
                          "as an argument", at) from None
    return _read(b, base_path + (step,), value, at)


def read_items(b: KernelBuilder, container: Any, items: list[Any], at: Any) -> list[Any]:
    """The items of a tracked list or tuple a loop runs over: item i is `container[i]`."""
    base_path = path_of(b.state, container)
    if base_path is None or not isinstance(container, (list, tuple)):
        return items
    return [_read(b, base_path + (Item(i),), x, at) for i, x in enumerate(items)]


def read_values(b: KernelBuilder, mapping: dict, at: Any) -> dict:
    """The values of a tracked dict spread with `**`: value k is `mapping[k]`."""
    base_path = path_of(b.state, mapping)
    if base_path is None:
        return mapping
    return {k: _read(b, base_path + (Item(k),), v, at) for k, v in mapping.items()}


def read_function(b: KernelBuilder, fn: types.FunctionType, at: Any) -> None:
    """A helper about to be inlined: its code and defaults are part of what the kernel computes."""
    path = _function_path(b.state, fn)
    for attr in ("__code__", "__defaults__", "__kwdefaults__"):
        _read(b, path + (Attr(attr),), getattr(fn, attr), at)


def read_default(b: KernelBuilder, fn: types.FunctionType, name: str, at: Any) -> Any:
    """The default of parameter `name` of `fn` (the kernel, for a parameter the call left out), read through
    `fn.__defaults__[i]` or `fn.__kwdefaults__[name]` so it is guarded on that path."""
    read_function(b, fn, at)
    code = fn.__code__
    positional = code.co_varnames[:code.co_argcount]  # (co_argcount counts positional-only ones too)
    if name in positional:
        defaults = fn.__defaults__ or ()
        i = positional.index(name) - (len(positional) - len(defaults))
        return read_step(b, defaults, Item(i), defaults[i], at)
    return read_step(b, fn.__kwdefaults__, Item(name), fn.__kwdefaults__[name], at)


def derive(state: BuildState, base: Any, attr: str, value: Any) -> None:
    """Map `value` (`base.attr`, read by the call machinery) to its path; `base`'s guard covers it."""
    base_path = path_of(state, base)
    if base_path is not None and path_of(state, value) is None:
        state.paths[id(value)] = (value, base_path + (Attr(attr),))


def _read(b: KernelBuilder, path: tuple, value: Any, at: Any, label: str | None = None) -> Any:
    state = b.state
    lifted = state.hidden.get(path)
    if lifted is not None:
        return effects.value_of(b, lifted)  # as the kernel has written it so far
    why = arraykinds.problem(value)
    if why is not None:
        raise b.error(f"`{path_text(path)}` is {why}", at)
    forced = path in state.force_lift  # an array the kernel writes in place: a hidden input whatever its size
    if path not in state.guards:
        try:
            check = check_for(value, lifted=liftable(value), always_lift=forced)
        except Unguardable as e:
            raise b.error(f"`{path_text(path)}` is {e}: pyasc cannot tell whether it changed between calls; "
                          "pass it to the kernel as an argument instead", at) from None
        state.guards[path] = Guard(path, check)
        state.captured[label or path_text(path)] = value
    if liftable(value) or (forced and isinstance(value, np.ndarray)):
        return _lift(b, path, value, at)
    if not isinstance(value, _UNMAPPED):
        state.paths.setdefault(id(value), (value, path))
    return value


def _lift(b: KernelBuilder, path: tuple, value: np.ndarray, at: Any) -> Any:
    """A Data input of the kernel graph (never of an If branch: a branch imports it) for the array."""
    state = b.state
    try:
        dtype = dtypes.narrow(value.dtype)
    except dtypes.DTypeError as e:
        raise b.error(f"`{path_text(path)}`: {e}", at) from None
    name = _NOT_IDENTIFIER.sub("_", path_text(path)).strip("_") or "captured"
    lifted = state.graph.add_input(TensorType(value.shape, dtype), name=name, loc=b.loc(at))
    state.hidden[path] = lifted
    effects.add_cell(b, lifted)  # numpy code may write it in place (`self.cache[:, p] = k`): the caller's array
    return lifted


class Relift(BaseException):
    """A write into a captured array the kernel folded as a constant: the build starts again with `path` lifted
    to a hidden input (whose writes reach the captured array after the call). A BaseException, so the
    handlers that turn a failing compile-time call into a located error let it through."""

    def __init__(self, path: tuple):
        super().__init__(path)
        self.path = path


def relift(b: KernelBuilder, arr: np.ndarray) -> None:
    """Raise Relift for the captured array `arr` is (or views), if the kernel read it through a path."""
    for obj, path in b.state.paths.values():
        if isinstance(obj, np.ndarray) and path and np.shares_memory(obj, arr) and obj.dtype.kind in "biuf" \
                and path not in b.state.force_lift:
            raise Relift(path)


def relift_stored(b: KernelBuilder, obj: Any, step: Any) -> None:
    """`obj.attr = v` of an attribute the kernel read as a folded array (`self.cache = self.cache + x`): build
    again with it lifted, so the next call reads its new contents instead of compiling again for them."""
    base = path_of(b.state, obj)
    if base is None:
        return
    path = base + (step,)
    guard = b.state.guards.get(path)
    if guard is not None and guard.check.kind == "array" and path not in b.state.force_lift:
        raise Relift(path)


def hidden_label(path: tuple) -> str:
    """How the user spells a lifted array (`self.cache`)."""
    return path_text(path)


def hidden_inputs(state: BuildState) -> Sequence[tuple]:
    """The lifted paths in the order of their Data inputs."""
    return tuple(state.hidden)
