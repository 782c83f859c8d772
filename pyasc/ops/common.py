"""Inference helpers shared by op definitions: broadcasting, axes, dtype checks."""
from __future__ import annotations

from typing import Any, Sequence

from .. import dtypes
from ..errors import InferError
from ..ir.types import Dim, Sym, TensorType


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


def normalize_axis(axis: Any, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """An int, tuple of ints or None (= all axes) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not isinstance(a, int) or isinstance(a, bool):
            raise InferError(f"{what} must be an int or a tuple of ints, got {a!r}")
        if not -ndim <= a < max(ndim, 1) and not (ndim == 0 and a in (0, -1)):
            raise InferError(f"{what} {a} is out of range for a tensor of rank {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise InferError(f"repeated {what} in {axis!r}")
    return tuple(sorted(out))


def require_dtype(t: TensorType, allowed: Sequence[str], op: str) -> None:
    if t.dtype not in allowed:
        raise InferError(f"{op} does not accept dtype {t.dtype}; it takes {', '.join(allowed)}")


FLOATS = ("float16", "float32")
INTS = ("int8", "int16", "int32", "uint8")
NUMERIC = FLOATS + INTS
ALL = dtypes.NAMES
