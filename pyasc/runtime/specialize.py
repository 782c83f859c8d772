"""Call-time argument handling: binding, conversion, validation and the specialisation key.

A kernel is compiled once per *specialisation*: the dtype and shape of each
tensor argument (only the rank under `dynamic=True`), the value of each
compile-time argument, and the kernel options. This module turns one call's
arguments into that key plus the numpy arrays to run on, raising TypeError /
ValueError for arguments pyasc cannot take.

What is a tensor and what is a compile-time value:
- tensors: numpy arrays, numpy scalars (0-d tensors), and any object
  exposing `__array__` or `__dlpack__` (converted with numpy);
- compile-time values: Python `bool int float str None`, tuples of those,
  dtypes (`np.float32`, `np.dtype("int8")`, ...), and anything passed to a
  parameter annotated `pyasc.constexpr`;
- pytrees (treeargs.py): dicts, lists, NamedTuples, dataclasses, and tuples
  holding a tensor or one of those, flattened into tensor leaves (in the
  arrays, in leaf order) and compile-time leaves (in the key with the
  structure).

Under `dynamic=True` each dim becomes a symbolic `Sym(f"{param}_d{axis}")`,
except dims of size 0 and 1, which stay static and are part of the key (as
in PyTorch's dynamic shapes): a size-1 dim decides broadcasting and a size-0
dim decides emptiness, so a graph traced with them symbolic would be wrong
for other sizes.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence, Union

import numpy as np

from .. import arraykinds, dtypes
from ..ir.types import Sym, TensorType
from .errors import ArgumentTypeError
from .interop import from_dlpack, is_foreign
from .limits import HOST_CHECK_BYTES, MemoryLimit, check_argument
from .treeargs import TreeKey, is_tree_argument, leaf_labels, leaf_name, tree_key

# numpy dtype -> canonical name (native byte order only); `dtype.name` is a slow Python property
_NAME_OF = {dt: name for name, dt in dtypes.NUMPY.items()}
_DEFAULT = object()  # marks "not passed, use the default" in the binding stub


@dataclass(frozen=True)
class Param:
    name: str
    constexpr: bool
    default: Any = inspect.Parameter.empty


def _is_constexpr_annotation(annotation: Any) -> bool:
    from .. import constexpr

    if annotation is constexpr:
        return True
    # `from __future__ import annotations` leaves the annotation as text
    return isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr"


class ArgBinder:
    """Binds call arguments to the kernel's parameters with Python's own rules and messages.

    A stub function with the same parameter list is generated (fast, and a
    wrong call raises exactly the TypeError Python would raise for the kernel
    function itself). Defaults are the function's as they are at the call:
    the stub is made again when its `__code__`, `__defaults__` or
    `__kwdefaults__` is another object, or a `__kwdefaults__` value is (that
    dict can change in place).
    """

    def __init__(self, fn: Callable[..., Any]):
        self._fn = fn
        self._build()

    def _build(self) -> None:
        fn = self._fn
        seen = (fn.__code__, fn.__defaults__, fn.__kwdefaults__, tuple((fn.__kwdefaults__ or {}).items()))
        sig = inspect.signature(fn)
        parts: list[str] = []
        params: list[Param] = []
        saw_kwonly = False
        kinds = inspect.Parameter
        for p in sig.parameters.values():
            if p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD):
                star = "*" if p.kind == kinds.VAR_POSITIONAL else "**"
                raise TypeError(f"kernel {fn.__qualname__}: parameter {star}{p.name} is not supported; a kernel "
                                "takes a fixed list of named parameters")
            if p.kind == kinds.KEYWORD_ONLY and not saw_kwonly:
                parts.append("*")
                saw_kwonly = True
            parts.append(p.name + ("" if p.default is kinds.empty else "=__pyasc_default__"))
            if p.kind == kinds.POSITIONAL_ONLY and _next_is_not_posonly(sig, p):
                parts.append("/")
            params.append(Param(p.name, _is_constexpr_annotation(p.annotation), p.default))
        names = [p.name for p in params]
        body = "return (" + "".join(f"{n}, " for n in names) + ")"
        namespace: dict[str, Any] = {"__pyasc_default__": _DEFAULT}
        exec(f"def _bind({', '.join(parts)}):\n    {body}\n", namespace)  # names are identifiers from a signature
        stub = namespace["_bind"]
        stub.__name__ = fn.__name__
        stub.__qualname__ = fn.__qualname__
        # one tuple, replaced whole: a thread binding meanwhile sees the old state or the new, never a mix
        self._state = (seen, stub, tuple(params))

    @property
    def params(self) -> tuple[Param, ...]:
        """The parameters as of the last `bind` (or construction)."""
        return self._state[2]

    def _stale(self) -> bool:
        """Whether the function's defaults are not the ones the stub was made with."""
        fn = self._fn
        code, defaults, kwdefaults, kw_items = self._state[0]
        if fn.__code__ is not code or fn.__defaults__ is not defaults or fn.__kwdefaults__ is not kwdefaults:
            return True
        if kwdefaults is not None:
            if len(kwdefaults) != len(kw_items):
                return True
            for k, v in kw_items:
                if kwdefaults.get(k, _DEFAULT) is not v:
                    return True
        return False

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        # defaults are looked at only when the call leaves a parameter out (or binding fails): a call passing
        # every argument pays one identity test
        state = self._state
        if self._fn.__code__ is not state[0][0]:
            self._build()
            state = self._state
        try:
            values = state[1](*args, **kwargs)
        except TypeError as e:  # only binding can fail in the stub: Python's own message, as an argument error
            if self._stale():
                self._build()
                return self.bind(args, kwargs)
            raise ArgumentTypeError(str(e)) from None
        for v in values:  # identity test: `in` would compare arrays elementwise
            if v is _DEFAULT:
                if self._stale():
                    self._build()
                    return self.bind(args, kwargs)
                return tuple(p.default if v is _DEFAULT else v for v, p in zip(values, state[2]))
        return values


def _next_is_not_posonly(sig: inspect.Signature, p: inspect.Parameter) -> bool:
    params = list(sig.parameters.values())
    i = params.index(p)
    return i + 1 == len(params) or params[i + 1].kind != inspect.Parameter.POSITIONAL_ONLY


# ---- compile-time values ---------------------------------------------------------------


def _is_dtype_like(value: Any) -> bool:
    if isinstance(value, np.dtype):
        return True
    return isinstance(value, type) and (issubclass(value, np.generic) or value in (bool, int, float))


def const_key(value: Any) -> Any:
    """A hashable, process-independent key for a compile-time value, or raise TypeError.

    Floats are keyed by repr so that NaN equals itself and -0.0 differs from 0.0.
    """
    if value is None:
        return ("None",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, np.generic):
        return ("np", value.dtype.name, repr(value.item()))
    if isinstance(value, int):
        return ("int", int(value))
    if isinstance(value, float):
        return ("float", repr(float(value)))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, tuple):
        return ("tuple", tuple(const_key(v) for v in value))
    if _is_dtype_like(value):
        return ("dtype", np.dtype(value).name)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    raise TypeError(type(value).__name__)


# ---- tensors ---------------------------------------------------------------------------------


def _suggest_cast(dt: np.dtype) -> str:
    if dt.kind == "c":
        return " Complex numbers are not supported; convert it first, e.g. `.real.astype(np.float32)`."
    if dt.kind == "f":
        return " Convert it first, e.g. `.astype(np.float32)`."
    if dt.kind in "iu":
        return " Convert it first, e.g. `.astype(np.int32)`."
    return ""


def _unsupported_dtype(kernel: str, name: str, dt: np.dtype) -> ArgumentTypeError:
    return ArgumentTypeError(
        f"{kernel}() argument {name!r} has dtype {dt}, which pyasc does not support; supported dtypes are "
        f"{dtypes.SUPPORTED_TEXT}.{_suggest_cast(dt)}"
    )


def _unsupported_object(kernel: str, name: str, value: Any) -> ArgumentTypeError:
    hint = ""
    if isinstance(value, (set, frozenset)):
        hint = " (a set has no order to flatten; pass a list or a tuple)"
    return ArgumentTypeError(
        f"{kernel}() argument {name!r} is a {type(value).__module__}.{type(value).__qualname__}, which pyasc "
        "cannot take; a tensor argument must be a numpy array, a numpy scalar or an object with __array__ or "
        "__dlpack__, a compile-time argument a bool, int, float, str, None, tuple or dtype, and a pytree a dict, "
        "list, tuple, NamedTuple or dataclass of those" + hint
    )


def to_array(kernel: str, name: str, value: Any, limit: MemoryLimit | None = None) -> np.ndarray:
    """Convert a tensor argument to a read-only, C-contiguous, native-endian numpy array.

    The caller's array is never written: a contiguous input is wrapped in a
    read-only view (no copy), anything else is copied. With a `limit`, an
    array larger than the chip's GM, or one to copy larger than this machine's
    free memory, is an ArgumentValueError raised before anything is copied.
    """
    if type(value) is np.ndarray:
        arr = value
    else:
        why = arraykinds.problem(value)
        if why is not None:
            raise ArgumentTypeError(f"{kernel}() argument {name!r} is {why}")
        try:
            if is_foreign(value):
                arr = from_dlpack(value)  # shares the caller's memory where the exporter allows
            else:
                arr = np.asarray(value)
        except Exception as e:  # a foreign object's converter failed: say which argument
            raise ArgumentTypeError(f"{kernel}() argument {name!r}: could not convert {type(value).__name__} to a "
                            f"numpy array ({type(e).__name__}: {e})") from e
    dt = arr.dtype
    contiguous = arr.flags.c_contiguous
    copy = dt not in _NAME_OF or not contiguous
    if limit is not None and (arr.nbytes > limit.gm_bytes or (copy and arr.nbytes >= HOST_CHECK_BYTES)):
        check_argument(kernel, name, arr.shape, dt.name, dt.itemsize, limit, copy)  # (sizes from the shape only)
    if dt not in _NAME_OF:
        if dt.name not in dtypes.NUMPY:
            raise _unsupported_dtype(kernel, name, dt)
        arr = arr.astype(dt.newbyteorder("="))  # a supported type in the other byte order
    if not contiguous:
        arr = np.ascontiguousarray(arr)
    view = arr.view()
    view.setflags(write=False)  # (cheaper than through `.flags`, which makes a flags object)
    return view


def is_tensor_value(value: Any) -> bool:
    if type(value) is np.ndarray or isinstance(value, (np.ndarray, np.generic)):
        return True
    if isinstance(value, (bool, int, float, str, tuple, type(None))) or _is_dtype_like(value):
        return False
    return hasattr(value, "__array__") or hasattr(value, "__dlpack__")


# ---- the key ---------------------------------------------------------------------------------


class TensorKey(NamedTuple):
    """A tensor argument's part of the key: canonical dtype name and key dims (see `tensor_dims`).

    Key records are NamedTuples, not dataclasses: one is built for every argument of every call,
    and a tuple is several times cheaper to build and hash (the fast path of repeat calls)."""

    dtype: str
    dims: tuple[int | None, ...]
    scalar: bool = False    # a numpy scalar (np.float32(2)): immutable in numpy, so `s += 1` rebinds it
    same_as: int = -1       # the very array of an earlier tensor input (`k(a, a)`): one array under two names


class ConstKey(NamedTuple):
    """A compile-time argument's part of the key: `const_key(value)` (process-independent)."""

    value: Any


ArgKey = Union[TensorKey, ConstKey, TreeKey]

#: the key of a parameter left at a default that has no key of its own (see `specialize`)
UNKEYED_DEFAULT = ConstKey(("default",))


@dataclass
class BoundCall:
    """One call, specialised: the key (one record per parameter), the tensor arrays in parameter order,
    and the raw values."""

    key: tuple[ArgKey, ...]
    arrays: list[np.ndarray]
    values: tuple[Any, ...]
    foreign: Any = None  # the first tensor argument from another library (DLPack): results go back to it
    objects: list[Any] | None = None  # the caller's own objects behind `arrays` (what a write-back changes)


def tensor_dims(shape: tuple[int, ...], dynamic: bool) -> tuple[int | None, ...]:
    """Key dims: exact sizes, or under dynamic=True None for every dim except 0 and 1."""
    if not dynamic:
        return shape
    return tuple(d if d in (0, 1) else None for d in shape)


def specialize(kernel: str, params: Sequence[Param], values: Sequence[Any], dynamic: bool,
               limit: MemoryLimit | None = None) -> BoundCall:
    """Classify and convert every argument; raise TypeError for ones pyasc cannot take (and ValueError for a
    tensor larger than `limit` allows: see `to_array`)."""
    call = BoundCall([], [], tuple(values), None, [])
    key = call.key
    seen: dict[int, int] = {}  # id of a caller's array -> its input index (the same array passed twice)
    for p, v in zip(params, values):
        if p.constexpr:
            pass
        elif v.__class__ is np.ndarray or is_tensor_value(v):
            key.append(_tensor_key(kernel, p.name, v, call, seen, dynamic, limit))
            continue
        elif is_tree_argument(v, is_tensor_value):
            def leaf_key(label: str, leaf: Any) -> ArgKey:
                if is_tensor_value(leaf):
                    return _tensor_key(kernel, label, leaf, call, seen, dynamic, limit)
                try:
                    return ConstKey(const_key(leaf))
                except TypeError:
                    raise _unsupported_object(kernel, label, leaf) from None

            key.append(tree_key(kernel, p.name, v, is_tensor_value, leaf_key))
            continue
        try:
            key.append(ConstKey(const_key(v)))
        except TypeError:
            if v is p.default:  # a default (a function, an object) the call left alone: the compile reads it
                key.append(UNKEYED_DEFAULT)  # from the function and guards it like a global
                continue
            if p.constexpr:
                raise ArgumentTypeError(f"{kernel}() argument {p.name!r} is annotated pyasc.constexpr but got a "
                                f"{type(v).__qualname__}; a compile-time value must be a bool, int, float, str, "
                                "None, tuple, dtype or numpy array") from None
            raise _unsupported_object(kernel, p.name, v) from None
    call.key = tuple(key)
    return call


def _tensor_key(kernel: str, label: str, v: Any, call: BoundCall, seen: dict[int, int], dynamic: bool,
                limit: MemoryLimit | None) -> TensorKey:
    """Convert one tensor argument into `call` (its array and the caller's object) and return its key."""
    arrays = call.arrays
    if call.foreign is None and v.__class__ is not np.ndarray and is_foreign(v):
        call.foreign = v
    arr = to_array(kernel, label, v, limit)
    scalar = isinstance(v, np.generic)
    n = len(arrays)
    same = -1 if scalar else seen.setdefault(id(v), n)
    arrays.append(arr)
    call.objects.append(v)  # type: ignore[union-attr]
    return TensorKey(_NAME_OF[arr.dtype], arr.shape if not dynamic else tensor_dims(arr.shape, True), scalar,
                     same if same != n else -1)


def tensor_leaves(params: Sequence[Param], key: Sequence[ArgKey]) -> list[tuple[str, str, TensorKey]]:
    """(label as the user spells it, identifier, key) of every tensor the graph takes, in input order:
    tensor parameters and the tensor leaves of pytree parameters."""
    out = []
    for p, k in zip(params, key):
        if isinstance(k, TensorKey):
            out.append((p.name, p.name, k))
        elif isinstance(k, TreeKey):
            for label, path, leaf in zip(leaf_labels(p.name, k.tree), k.tree.paths(), k.leaves):
                if isinstance(leaf, TensorKey):
                    out.append((label, leaf_name(p.name, k.tree, path), leaf))
    return out


def same_inputs(params: Sequence[Param], key: Sequence[ArgKey]) -> tuple[tuple[int, int], ...]:
    """(input i, earlier input j) for every tensor input that is the very array of an earlier one."""
    return tuple((i, k.same_as) for i, (_, _, k) in enumerate(tensor_leaves(params, key)) if k.same_as >= 0)


def tensor_type(name: str, key: TensorKey) -> TensorType:
    """The TensorType of a tensor parameter from its key (a None dim -> Sym(f"{name}_d{axis}"))."""
    return TensorType(tuple(Sym(f"{name}_d{axis}") if d is None else d for axis, d in enumerate(key.dims)),
                      key.dtype)


def describe_key(params: Sequence[Param], key: Sequence[ArgKey]) -> str:
    """Readable one-line form of a specialisation: `x: f32[4,8], n=3`."""
    parts = []
    for p, k in zip(params, key):
        if isinstance(k, TensorKey):
            parts.append(f"{p.name}: {tensor_type(p.name, k)}" + (f" (= input {k.same_as})" if k.same_as >= 0 else ""))
        elif isinstance(k, TreeKey):
            names = [leaf_name(p.name, k.tree, path) for path in k.tree.paths()]
            leaves = [str(tensor_type(n, leaf)) if isinstance(leaf, TensorKey) else const_text(leaf.value)
                      for n, leaf in zip(names, k.leaves)]
            parts.append(f"{p.name}={k.tree.describe(leaves)}")
        else:
            parts.append(f"{p.name}={const_text(k.value)}")
    return ", ".join(parts)


def const_text(ck: Any) -> str:
    """Readable form of a `const_key` (the kind tag is its first item, by `const_key`'s own layout)."""
    kind, body = ck[0], ck[1:]
    if kind == "None":
        return "None"
    if kind in ("bool", "int", "str"):
        return repr(body[0])
    if kind in ("float", "np"):
        return body[-1]
    if kind == "tuple":
        inner = ", ".join(const_text(x) for x in body[0])
        return f"({inner},)" if len(body[0]) == 1 else f"({inner})"
    if kind == "dtype":
        return body[0]
    if kind == "default":
        return "<default>"
    if kind == "array":
        return f"array{list(body[1])}<{np.dtype(body[0]).name}>"
    return repr(ck)
