"""Guards: what a kernel read from outside itself at compile time, and how to tell it is unchanged.

A value a kernel reads while it compiles (a global, a closure variable, an
attribute or item of one, a helper's defaults) is reached by an *access path*
that starts at the kernel function itself and takes steps:

    Global(name)       fn.__globals__[name]                    (a module global of a function)
    Builtin(name)      fn.__globals__[name] if there is one,   (a builtin such as `abs`: a module global of
                       else the builtin                         the same name assigned later shadows it)
    Free(name, index)  fn.__closure__[index].cell_contents     (a closure variable of a function)
    Attr(name)         getattr(value, name)
    Item(key)          value[key]

so `params["w"]` in the kernel is `(Global("params"), Item("w"))`, and a
global read by an inlined helper `h` is `(Global("h"), Global("SCALE"))`.
Every path is re-evaluated on each warm call and the value at its end
compared with a `Check` made from the value seen at compile time:

    kind         values                                   compared by
    value        bool int float complex str bytes None,  type and value (NaN equals NaN, -0.0 != 0.0)
                 numpy scalars, dtypes
    array        arrays below LIFT_MIN_BYTES              dtype, shape and bytes
    array_meta   lifted arrays (>= LIFT_MIN_BYTES)        dtype and shape only: their contents are read at
                                                          run time (hidden kernel inputs), never compared
    identity     modules, functions, classes, builtins,  the very same object
                 code objects
    method       a bound method                           its function (the instance is its own path)
    object       any other instance, also one whose class  its type (the attributes read are paths, and so
                 defines __call__ in Python (a "module")  is the __call__ a call inlines)
    tuple list   sequences                                type, length and a check per item
    dict         dicts                                    type and keys (each value read is a path)
    set          sets and frozensets of guardable values  type and equality

Iterators, generators and files cannot be guarded (reading them changes
them): `Unguardable`, which the frontend turns into a located CompileError.

Each check also has a `fingerprint()`: plain JSON, equal in every process
for an equal value (a function by its module, qualname and a digest of its
code; an array by a sha256 of its bytes). The disk cache keys on them.

This module is a leaf (numpy only): the frontend records guards and the
runtime checks them without importing each other.
"""
from __future__ import annotations

import base64
import builtins
import functools
import hashlib
import io
import json
import math
import types
from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np

#: captured numeric arrays of at least this many bytes become hidden kernel inputs ("lifted") instead
#: of constants folded into the graph: 1 KiB (256 float32 values) is past what constant folding gains
#: from, and below it comparing the bytes on a warm call costs well under a microsecond
LIFT_MIN_BYTES = 1024

#: modules whose attributes are library constants and functions, read without a guard each
#: (the module object itself is guarded where a kernel names it)
TRUSTED_MODULES = ("numpy", "math", "pyasc")


class Unguardable(TypeError):
    """A compile-time value whose changes cannot be detected (the message says why)."""


class NotPersistable(ValueError):
    """A guard that works in this process but has no JSON form (e.g. an object used as a dict key)."""


# ---- access paths -------------------------------------------------------------------------


@dataclass(frozen=True)
class Global:
    name: str

    def get(self, fn: Any) -> Any:
        return fn.__globals__[self.name]


@dataclass(frozen=True)
class Builtin:
    name: str

    def get(self, fn: Any) -> Any:
        return builtin_lookup(fn, self.name)


def builtin_lookup(fn: Any, name: str) -> Any:
    """What a builtin name means in `fn` now: a module global of that name shadows the builtin, as in Python."""
    g = fn.__globals__
    return g[name] if name in g else getattr(builtins, name)


@dataclass(frozen=True)
class Free:
    name: str
    index: int

    def get(self, fn: Any) -> Any:
        return fn.__closure__[self.index].cell_contents


@dataclass(frozen=True)
class Attr:
    name: str

    def get(self, value: Any) -> Any:
        return getattr(value, self.name)


@dataclass(frozen=True)
class Item:
    key: Any

    def get(self, value: Any) -> Any:
        return value[self.key]


@dataclass(frozen=True)
class Has:
    """`hasattr(value, name)`: whether an attribute exists is a value a kernel reads (`if not hasattr(layer,
    "cache")` decides what it compiles), guarded like any other."""

    name: str

    def get(self, value: Any) -> Any:
        return hasattr(value, self.name)


@dataclass(frozen=True, eq=False)
class Pinned:
    """A fixed object standing in for a path (a helper reached other than through one): such a guard
    works in this process only (`NotPersistable`)."""

    obj: Any

    def get(self, _: Any) -> Any:
        return self.obj


Step = Union[Global, Builtin, Free, Attr, Item, Has, Pinned]
AccessPath = tuple  # tuple[Step, ...], from the kernel function

#: what a path evaluation raises when the value is gone (a global deleted, an attribute removed, ...)
PATH_ERRORS = (LookupError, AttributeError, ValueError, TypeError)


def resolve(root: Any, path: AccessPath) -> Any:
    """The value at the end of `path` from `root` (raises one of PATH_ERRORS when it is gone)."""
    value = root
    for step in path:
        value = step.get(value)
    return value


def path_text(path: AccessPath) -> str:
    """Python-like spelling: `params["w"]`, `cfg.scale`, `helper.__globals__["SCALE"]`."""
    out = ""
    for step in path:
        if isinstance(step, (Global, Builtin, Free)):
            if not out:
                out = step.name
            elif isinstance(step, (Global, Builtin)):
                out += f".__globals__[{step.name!r}]"
            else:
                out += f".<closure {step.name}>"
        elif isinstance(step, Attr):
            if not out:  # an attribute of the kernel itself: a method kernel's self, or its code
                out = "self" if step.name == "__self__" else step.name
            else:
                out += f".{step.name}"
        elif isinstance(step, Pinned):
            out = f"<{getattr(step.obj, '__qualname__', type(step.obj).__qualname__)}>"
        elif isinstance(step, Has):
            out = f"hasattr({out}, {step.name!r})"
        else:
            out += f"[{step.key!r}]"
    return out


def step_to_json(step: Step) -> list:
    if isinstance(step, Global):
        return ["global", step.name]
    if isinstance(step, Builtin):
        return ["builtin", step.name]
    if isinstance(step, Free):
        return ["free", step.name, step.index]
    if isinstance(step, Attr):
        return ["attr", step.name]
    if isinstance(step, Has):
        return ["has", step.name]
    if isinstance(step, Pinned):
        raise NotPersistable(f"{path_text((step,))} was not reached through a name")
    return ["item", _key_to_json(step.key)]


def step_from_json(doc: Any) -> Step:
    kind = doc[0]
    if kind == "global":
        return Global(str(doc[1]))
    if kind == "builtin":
        return Builtin(str(doc[1]))
    if kind == "free":
        return Free(str(doc[1]), int(doc[2]))
    if kind == "attr":
        return Attr(str(doc[1]))
    if kind == "has":
        return Has(str(doc[1]))
    if kind == "item":
        return Item(_key_from_json(doc[1]))
    raise ValueError(f"unknown access-path step {doc!r}")


def _key_to_json(key: Any) -> Any:
    if key is None or isinstance(key, (bool, str)) or type(key) is int:
        return key
    if isinstance(key, float):
        return {"float": repr(key)}
    if isinstance(key, tuple):
        return {"tuple": [_key_to_json(k) for k in key]}
    if isinstance(key, slice):
        return {"slice": [_key_to_json(k) for k in (key.start, key.stop, key.step)]}
    raise NotPersistable(f"a subscript key of type {type(key).__name__}")


def _key_from_json(doc: Any) -> Any:
    if not isinstance(doc, dict):
        return doc
    (tag, body), = doc.items()
    if tag == "float":
        return float(body)
    if tag == "tuple":
        return tuple(_key_from_json(k) for k in body)
    if tag == "slice":
        return slice(*(_key_from_json(k) for k in body))
    raise ValueError(f"unknown subscript key {doc!r}")


# ---- digests --------------------------------------------------------------------------------


def _const_repr(c: Any) -> str:
    if isinstance(c, types.CodeType):
        return "code:" + code_digest(c)
    if isinstance(c, frozenset):  # element order follows string hashing, which differs per process
        return "frozenset(" + ",".join(sorted(map(_const_repr, c))) + ")"
    if isinstance(c, tuple):
        return "(" + ",".join(map(_const_repr, c)) + ")"
    return f"{type(c).__name__}:{c!r}"


@functools.lru_cache(maxsize=4096)
def code_digest(code: types.CodeType) -> str:
    """sha256 of what a code object does (bytecode, constants, names), the same in every process.
    File name, line numbers and flags are left out: moving a function does not change what it computes,
    and the flags follow from the bytecode (a generator, *args) or from where it was defined (nested)."""
    h = hashlib.sha256()
    for part in (code.co_name, code.co_code, code.co_names, code.co_varnames, code.co_freevars,
                 code.co_cellvars, (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)):
        h.update(repr(part).encode() if not isinstance(part, bytes) else part)
        h.update(b"\0")
    for c in code.co_consts:
        h.update(_const_repr(c).encode())
        h.update(b"\0")
    return h.hexdigest()


def function_fingerprint(fn: types.FunctionType) -> list:
    return ["function", fn.__module__, fn.__qualname__, code_digest(fn.__code__)]


def _qualified(obj: Any) -> list:
    return [getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", None) or type(obj).__qualname__]


# ---- checks ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Check:
    """How one value is compared on a warm call (`holds`) and across processes (`fingerprint`)."""

    kind: str
    holds: Callable[[Any], bool]
    fingerprint: Any  # plain JSON


_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def _scalar_fingerprint(value: Any) -> list:
    if value is None:
        return ["none"]
    if isinstance(value, (bool, int, str)):
        return [type(value).__name__, value]
    if isinstance(value, bytes):
        return ["bytes", base64.b64encode(value).decode("ascii")]
    if isinstance(value, (float, complex)):
        return [type(value).__name__, repr(value)]
    if isinstance(value, np.generic):
        return ["np", value.dtype.str, repr(value.item())]
    return ["dtype", np.dtype(value).str]


def _value_check(value: Any) -> Check:
    t, fp = type(value), _scalar_fingerprint(value)
    if t is float:
        if math.isnan(value):
            return Check("value", lambda v: type(v) is float and v != v, fp)
        if value == 0.0:
            sign = math.copysign(1.0, value)
            return Check("value", lambda v: type(v) is float and v == 0.0 and math.copysign(1.0, v) == sign, fp)
    if isinstance(value, np.generic):  # bit for bit: NaN is itself, -0.0 is not 0.0
        data = value.tobytes()
        return Check("value", lambda v: type(v) is t and v.tobytes() == data, fp)
    return Check("value", lambda v: type(v) is t and v == value, fp)


def _array_check(arr: np.ndarray, lifted: bool) -> Check:
    if arr.dtype.hasobject:
        raise Unguardable(f"an array of dtype {arr.dtype} (its items are Python objects)")
    t, dtype, shape = type(arr), arr.dtype, arr.shape
    meta = [dtype.str, list(shape)]
    if lifted:
        return Check("array_meta", lambda v: type(v) is t and v.dtype == dtype and v.shape == shape,
                     ["array_meta", *meta])
    data = arr.tobytes()
    digest = hashlib.sha256(data).hexdigest()
    return Check("array", lambda v: type(v) is t and v.dtype == dtype and v.shape == shape and v.tobytes() == data,
                 ["array", *meta, digest])


def _identity_fingerprint(obj: Any) -> Any:
    if isinstance(obj, types.ModuleType):
        return ["module", obj.__name__]
    if isinstance(obj, types.FunctionType):
        return function_fingerprint(obj)
    if isinstance(obj, types.CodeType):
        return ["code", code_digest(obj)]
    if isinstance(obj, type):
        return ["class", *_qualified(obj)]
    if isinstance(obj, np.ufunc):
        return ["ufunc", obj.__name__]
    module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", getattr(obj, "__name__", None))
    if not isinstance(module, str) or not isinstance(name, str):
        return None  # an anonymous callable: guarded in this process only
    return ["callable", module, name]


def _module_object(value: Any) -> bool:
    """An instance of a class whose `__call__` is a Python function (a "module": `layer(x)`), which is not itself
    named like a function (a wrapper such as a kernel object keeps its identity check)."""
    if isinstance(value, type) or hasattr(value, "__qualname__"):
        return False
    return isinstance(getattr(type(value), "__call__", None), types.FunctionType)


def _bound_to_a_value(fn: Any) -> bool:
    """A builtin method bound to a value (`shape.index`), as opposed to a module's builtin function."""
    owner = getattr(fn, "__self__", None)
    return owner is not None and not isinstance(owner, types.ModuleType)


def check_for(value: Any, *, lifted: bool = False, always_lift: bool = False) -> Check:
    """The check for a value read at compile time (`lifted`: a large array is a hidden input; `always_lift`:
    an array of any size is, e.g. one the kernel writes in place).

    Raises Unguardable for a value whose changes cannot be seen.
    """
    if isinstance(value, _SCALARS) or isinstance(value, (np.generic, np.dtype)):
        return _value_check(value)
    if isinstance(value, np.ndarray):
        return _array_check(value, always_lift or (lifted and value.nbytes >= LIFT_MIN_BYTES))
    if isinstance(value, (tuple, list)):
        return _sequence_check(value)
    if isinstance(value, dict):
        return _dict_check(value)
    if isinstance(value, (set, frozenset)):
        return _set_check(value)
    if isinstance(value, types.MethodType):
        fn = value.__func__
        return Check("method", lambda v: type(v) is types.MethodType and v.__func__ is fn,
                     ["method", _identity_fingerprint(fn)])
    if isinstance(value, (types.BuiltinMethodType, types.MethodWrapperType)) and _bound_to_a_value(value):
        # `shape.index` of a guarded value: a new object on every read, the same method of the same value
        t, name = type(value), value.__name__
        return Check("method", lambda v: type(v) is t and v.__name__ == name, ["builtin_method", name])
    if isinstance(value, (types.GeneratorType, types.CoroutineType, io.IOBase)) or (
            hasattr(value, "__next__") and not isinstance(value, type)):  # (a class such as `zip` is no iterator)
        raise Unguardable(f"a {type(value).__qualname__}, which changes as it is read")
    if _module_object(value):  # `layer(x)` inlines type(layer).__call__: its code and attributes are paths
        t = type(value)
        return Check("object", lambda v: type(v) is t, ["object", *_qualified(t)])
    if isinstance(value, (types.ModuleType, types.FunctionType, types.CodeType, type)) or callable(value):
        return Check("identity", lambda v: v is value, _identity_fingerprint(value))
    t = type(value)
    return Check("object", lambda v: type(v) is t, ["object", *_qualified(t)])


def _sequence_check(seq: tuple | list) -> Check:
    t = type(seq)
    items = [check_for(v, lifted=True) for v in seq]
    tests = [c.holds for c in items]
    n = len(seq)

    def holds(v: Any) -> bool:
        return type(v) is t and len(v) == n and all(test(x) for test, x in zip(tests, v))

    return Check(t.__name__ if t in (tuple, list) else "tuple", holds,
                 [t.__name__, [c.fingerprint for c in items]])


def _dict_check(d: dict) -> Check:
    """Type and keys, in order. A kernel reaches a dict's values only through subscripts and `**`, and
    the frontend records each of those as a path of its own, checked by itself."""
    t = type(d)
    keys = list(d)
    try:
        fp: Any = ["dict", [_key_to_json(k) for k in keys]]
    except NotPersistable:
        fp = None  # no JSON form: the guard set that holds it is memory-only
    return Check("dict", lambda v: type(v) is t and list(v) == keys, fp)


def _set_check(s: set | frozenset) -> Check:
    t = type(s)
    items = [check_for(v) for v in s]
    if any(c.kind not in ("value", "identity") for c in items):
        raise Unguardable("a set holding values other than numbers, strings and named objects")
    frozen = frozenset(s)
    fp = [t.__name__, sorted((c.fingerprint for c in items), key=lambda f: json.dumps(f, sort_keys=True))]
    return Check("set", lambda v: type(v) is t and v == frozen, fp)


def is_persistable(fingerprint: Any) -> bool:
    """Whether a fingerprint is complete JSON (no part of it lacked a JSON form)."""
    if fingerprint is None:
        return False
    if isinstance(fingerprint, list):
        return all(is_persistable(x) for x in fingerprint)
    return True


def liftable(value: Any) -> bool:
    """A captured array the frontend turns into a hidden kernel input instead of a constant."""
    return (isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.nbytes >= LIFT_MIN_BYTES)


def trusted_module(value: Any) -> bool:
    """A library module whose attributes need no guard of their own (see TRUSTED_MODULES)."""
    if not isinstance(value, types.ModuleType):
        return False
    root = value.__name__.split(".", 1)[0]
    return root in TRUSTED_MODULES


@dataclass(frozen=True, eq=False)
class Guard:
    """The value at the end of `path` (from the kernel function) must pass `check`."""

    path: AccessPath
    check: Check

    def __str__(self) -> str:
        return f"{path_text(self.path)} ({self.check.kind})"
