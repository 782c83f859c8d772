"""Inference helpers shared by op definitions: broadcasting, axes, dtype rules, error naming."""
from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import InferError
from ..memo import memoised
from ..tensor_type import Dim, Sym, TensorType

FLOATS = ("float16", "float32")
INTS = ("int8", "int16", "int32", "uint8")
NUMERIC = FLOATS + INTS
ALL = dtypes.NAMES


def fmt_shape(shape: Sequence[Dim]) -> str:
    inner = ", ".join(str(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def broadcast_shapes(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """numpy broadcasting; a symbolic dim matches 1, itself, or a static size (checked at launch)."""
    ndim = max((len(s) for s in shapes), default=0)
    result: list[Dim] = []
    for axis in range(ndim):
        dims = [s[len(s) - ndim + axis] for s in shapes if len(s) - ndim + axis >= 0]
        out: Dim = 1
        for d in dims:
            if d == 1:
                continue
            if out == 1:
                out = d
            elif d != out:
                if isinstance(d, Sym) or isinstance(out, Sym):
                    # prefer a static size, else the first name; launch checks they agree
                    out = out if isinstance(d, Sym) else d
                else:
                    raise InferError("cannot broadcast shapes " + " and ".join(fmt_shape(s) for s in shapes))
        result.append(out)
    return tuple(result)


def broadcasts_to(src: Sequence[Dim], dst: Sequence[Dim], *, symbols_agree: bool = True) -> bool:
    """Whether `src` broadcasts to exactly `dst`.

    `symbols_agree`: a symbolic dim is assumed to match any dim (inference: the
    launch checks it); False: it matches only 1 and the same symbol (what a pass
    that must be sure, like fusion, asks).
    """
    if len(src) > len(dst):
        return False
    for s, d in zip(reversed(tuple(src)), reversed(tuple(dst))):
        if s == 1 or s == d or (symbols_agree and (isinstance(s, Sym) or isinstance(d, Sym))):
            continue
        return False
    return True


def normalize_axis(axis: Any, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """An int, tuple of ints or None (= all axes) as sorted non-negative axes.

    Like numpy's reductions, a 0-d tensor accepts axis 0 and -1.
    """
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else axis
    if not isinstance(axes, (tuple, list)):
        raise InferError(f"{what} must be None, an int or a tuple of ints, got {axis!r}")
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, (bool, np.bool_)):
            raise InferError(f"{what} must be an int or a tuple of ints, got {a!r}")
        a = int(a)
        if not -ndim <= a < max(ndim, 1) and not (ndim == 0 and a in (0, -1)):
            raise InferError(f"{what} {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise InferError(f"repeated {what} in {tuple(axes)!r}")
    return tuple(sorted(out))


def require_static(op: str, *ts: TensorType) -> None:
    """Refuse shapes with sizes only known at launch (dynamic=True) for an op whose lowering needs them."""
    for t in ts:
        if any(isinstance(d, Sym) for d in t.shape):
            raise InferError(f"{op}: shape {fmt_shape(t.shape)} has sizes only known at launch; {op} needs "
                             "static sizes")


def require_static_axis(op: str, shape: Sequence[Dim], ax: int) -> int:
    """The size of axis `ax`, refused when it is only known at launch (the op's lowering depends on it)."""
    n = shape[ax]
    if not isinstance(n, (int, np.integer)):
        raise InferError(f"{op}: axis {ax} of shape {fmt_shape(shape)} has a size only known at launch; "
                         f"{op} needs a static size there")
    return int(n)


def require_dtype(t: TensorType, allowed: Sequence[str], op: str) -> None:
    if t.dtype not in allowed:
        raise InferError(f"{op}: does not accept dtype {t.dtype}; it takes {', '.join(allowed)}")


def arity(ts: Sequence[TensorType], n: int | tuple[int, ...], op: str) -> None:
    """Check the input count (an exact number or the allowed numbers)."""
    allowed = (n,) if isinstance(n, int) else n
    if len(ts) not in allowed:
        want = " or ".join(map(str, allowed))
        raise InferError(f"{op}: takes {want} input(s), got {len(ts)}")


def attr_dtype(value: Any, op: str, what: str = "dtype") -> str:
    """A dtype attribute as a canonical name; InferError naming the op when unsupported."""
    try:
        return dtypes.normalize(value)
    except dtypes.DTypeError as e:
        raise InferError(f"{op}: {e}" if what == "dtype" else f"{op}: {what}: {e}") from None


def attr_shape(value: Any, op: str, what: str = "shape") -> tuple[Dim, ...]:
    """A shape attribute (int, Sym or a sequence of them) as a tuple."""
    if isinstance(value, (int, np.integer, Sym)) and not isinstance(value, (bool, np.bool_)):
        value = (value,)
    if not isinstance(value, (tuple, list)):
        raise InferError(f"{op}: {what} must be a tuple of ints, got {value!r}")
    out: list[Dim] = []
    for d in value:
        if isinstance(d, Sym):
            out.append(d)
        elif isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
            out.append(int(d))
        else:
            raise InferError(f"{op}: {what} must be a tuple of ints, got {tuple(value)!r}")
    return tuple(out)


def attr_bool(attrs: Mapping[str, Any], key: str, default: bool, op: str) -> bool:
    value = attrs.get(key, default)
    if not isinstance(value, (bool, np.bool_)):
        raise InferError(f"{op}: {key} must be True or False, got {value!r}")
    return bool(value)


def named(op: str, infer: Callable[[Sequence[TensorType], Mapping[str, Any]], Sequence[TensorType]]):
    """Wrap an inference function so every InferError it raises starts with "<op>: "."""

    @functools.wraps(infer)
    def wrapped(ts: Sequence[TensorType], attrs: Mapping[str, Any]) -> tuple[TensorType, ...]:
        try:
            return tuple(infer(ts, attrs))
        except InferError as e:
            msg = str(e)
            if msg.startswith(op + ":"):
                raise
            raise InferError(f"{op}: {msg}") from None

    return wrapped


# ---- dtype rules ---------------------------------------------------------------


@memoised(4096)  # asked at every node built and verified: numpy's resolution is slow, its answer fixed
def ufunc_dtype(ufunc: np.ufunc, op: str, *in_dtypes: str) -> str:
    """The dtype numpy's `ufunc` gives for tensors of `in_dtypes`, narrowed; InferError if numpy has no loop."""
    try:
        resolved = ufunc.resolve_dtypes(tuple(np.dtype(d) for d in in_dtypes) + (None,) * ufunc.nout)
    except TypeError:
        allowed = ufunc_accepts(ufunc)
        given = " and ".join(in_dtypes)
        raise InferError(
            f"{op}: does not accept dtype{'s' if len(in_dtypes) > 1 else ''} {given}; "
            f"it takes {', '.join(allowed)}"
        ) from None
    return dtypes.narrow(resolved[-1])


@functools.lru_cache(maxsize=None)
def ufunc_accepts(ufunc: np.ufunc) -> tuple[str, ...]:
    """Supported dtypes `ufunc` has a loop for (all operands of the same dtype)."""
    ok = []
    for d in ALL:
        try:
            ufunc.resolve_dtypes((np.dtype(d),) * ufunc.nin + (None,) * ufunc.nout)
        except TypeError:
            continue
        ok.append(d)
    return tuple(ok)


def float_math_dtype(np_dtype: Any) -> np.dtype:
    """The float dtype numpy computes transcendental math in for `np_dtype` (np.exp's rule, unnarrowed).

    Floats keep their dtype; int8/uint8/bool -> float16, int16 -> float32,
    int32/int64 -> float64 (which the compiler narrows to float32).
    """
    dt = np.dtype(np_dtype)
    if dt.kind == "f":
        return dt
    return np.exp.resolve_dtypes((dt, None))[-1]


def float_result(dtype: str) -> str:
    """Narrowed float dtype of float math on a tensor of canonical `dtype`."""
    return dtypes.narrow(float_math_dtype(dtype))


# ---- symbolic dim arithmetic for reshape -------------------------------------------


def dim_factors(d: Dim) -> tuple[int, list[Dim]]:
    """A dim as (static factor, symbolic factors): 8 -> (8, []), N*8 -> (8, [N]), 2*(N + 1) -> (1, [2*N + 2])."""
    if isinstance(d, int):
        return d, []
    e = d.e
    if e.op != "mul":
        return 1, [d]
    static, syms = 1, []
    for part in e.args:
        if isinstance(part, int):
            static *= part
        else:
            syms.append(Sym(part))
    return static, syms


def shape_factors(shape: Sequence[Dim]) -> tuple[int, list[str]]:
    static, syms = 1, []
    for d in shape:
        s, names = dim_factors(d)
        static *= s
        syms.extend(names)
    return static, syms


def product_dim(static: int, syms: Sequence[Dim]) -> Dim:
    """Rebuild a dim from a static factor and symbolic factors."""
    out: Dim = static
    for factor in syms:
        out = out * factor
    return out


def static_prod(shape: Sequence[Dim]) -> int | None:
    return math.prod(shape) if all(isinstance(d, int) for d in shape) else None


def sugar_arguments(api: Callable[..., Any], sig: inspect.Signature, args: Sequence[Any],
                    kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A public sugar function's call bound to its signature, defaults applied; a bad call is Python's
    TypeError prefixed with the function's name (what the frontend reports at the user's line)."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{api.__name__}(): {e}") from None
    bound.apply_defaults()
    return bound.arguments
