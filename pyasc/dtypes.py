"""The dtypes pyasc supports, their numpy twins and promotion between them.

A dtype is named inside the compiler by its canonical string ("float16",
"bool", ...). The public aliases (`pyasc.float16`, ...) are numpy's scalar
types, so `x.astype(pyasc.float16)` is valid eager numpy code too.

Promotion follows numpy 2 (Python scalars are *weak*: `int8 + 1` stays
int8), restricted to our set: where numpy would widen to a 64-bit type the
result is narrowed to the 32-bit one (float64 -> float32, int64 -> int32),
because the chip has no 64-bit vector types.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: canonical name -> numpy dtype, in a stable order (also the order shown in errors)
NUMPY: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.bool_),
}
NAMES: tuple[str, ...] = tuple(NUMPY)
SUPPORTED_TEXT = "float16, float32, int8, int16, int32, uint8, bool_"

# public aliases: numpy scalar types, so eager code accepts them unchanged
float16 = np.float16
float32 = np.float32
int8 = np.int8
int16 = np.int16
int32 = np.int32
uint8 = np.uint8
bool_ = np.bool_

_NARROW = {"float64": "float32", "int64": "int32", "uint16": "int32", "uint32": "int32", "uint64": "int32"}
_SHORT = {"float16": "f16", "float32": "f32", "int8": "i8", "int16": "i16", "int32": "i32", "uint8": "u8", "bool": "bool"}


class DTypeError(TypeError):
    """A dtype outside the supported set."""


def is_supported(obj: Any) -> bool:
    try:
        normalize(obj)
    except DTypeError:
        return False
    return True


def normalize(obj: Any) -> str:
    """Canonical name of anything numpy accepts as a dtype (or a canonical name)."""
    if isinstance(obj, str) and obj in NUMPY:
        return obj
    if obj is bool:
        return "bool"
    try:
        dt = np.dtype(obj)
    except TypeError as e:
        raise DTypeError(f"{obj!r} is not a dtype; supported dtypes are {SUPPORTED_TEXT}") from e
    name = dt.name
    if name not in NUMPY:
        raise DTypeError(f"dtype {name} is not supported; supported dtypes are {SUPPORTED_TEXT}")
    return name


def to_numpy(name: str) -> np.dtype:
    return NUMPY[name]


def itemsize(name: str) -> int:
    return NUMPY[name].itemsize


def short(name: str) -> str:
    """Short spelling used by the printer: f16, f32, i8, ..."""
    return _SHORT[name]


def is_float(name: str) -> bool:
    return name in ("float16", "float32")


def is_int(name: str) -> bool:
    return name in ("int8", "int16", "int32", "uint8")


def is_bool(name: str) -> bool:
    return name == "bool"


def narrow(np_dtype: Any) -> str:
    """Map a numpy result dtype into the supported set (64-bit -> 32-bit)."""
    name = np.dtype(np_dtype).name
    name = _NARROW.get(name, name)
    if name not in NUMPY:
        raise DTypeError(f"dtype {name} is not supported; supported dtypes are {SUPPORTED_TEXT}")
    return name


def promote(*operands: Any) -> str:
    """Result dtype of combining operands, numpy-2 style.

    Each operand is a canonical dtype name (a tensor) or a Python
    bool/int/float (a weak scalar, which only decides the *kind*).
    """
    if not operands:
        raise TypeError("promote() needs at least one operand")
    args: list[Any] = []
    for op in operands:
        if isinstance(op, np.generic):  # numpy scalars are strong (np.float64 is also a Python float)
            args.append(op.dtype)
        elif isinstance(op, (bool, int, float)):
            args.append(op)  # weak: decides the kind only
        else:
            try:
                args.append(NUMPY[op] if isinstance(op, str) and op in NUMPY else np.dtype(op))
            except TypeError as e:
                raise DTypeError(f"{op!r} is neither a dtype nor a bool/int/float scalar") from e
    if not any(isinstance(a, np.dtype) for a in args):
        # only Python scalars: the default types of their kind
        args = [np.asarray(a).dtype for a in args]
    return narrow(np.result_type(*args))


def scalar_dtype(value: Any) -> str:
    """The dtype a lone Python scalar gets when it becomes a tensor."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int32"
    if isinstance(value, (float, np.floating)):
        return "float32"
    raise DTypeError(f"{type(value).__name__} value {value!r} is not a tensor scalar")
