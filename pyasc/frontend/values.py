"""What an expression evaluates to while a kernel is compiled.

A tensor is an `ir.Value` (a node output in the graph being built). Anything
else is a compile-time value: a Python or numpy scalar, a tuple/list, a
dtype, a shape (ints and `Sym`s), None, a string, a module or a function.
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes
from ..ir.graph import Value
from ..tensor_type import Sym


@dataclass(frozen=True)
class TensorMethod:
    """`x.sum` before it is called: the tensor and the method name."""

    tensor: Value
    name: str


class Masked:
    """`x[mask]` with a tensor mask: the elements of `data` where `mask` (a bool tensor of data's leading
    shape) is true, in order. Their number depends on the data, so it is no tensor: it may feed elementwise
    ops (staying masked), a reduction or a write with the same mask (masked.py), and nothing else.
    (A plain class, not a dataclass: pytrees flatten dataclasses, and a selection is no container.)"""

    __slots__ = ("data", "mask", "text")

    def __init__(self, data: Value, mask: Value, text: str):
        self.data = data
        self.mask = mask
        self.text = text  # how the kernel spelled it, for messages


#: the message for a masked selection used where its data-dependent length would matter
MASKED_USE = ("has a length that depends on the data (a boolean mask selects it); pyasc supports it where it "
              "feeds a reduction (`x[m].sum()`, `np.mean(x[m])`) or a write with the same mask (`y[m] = x[m] * 2`), "
              "elementwise ops in between")


def is_tensor(v: Any) -> bool:
    return isinstance(v, Value)


def contains_tensor(v: Any) -> bool:
    if isinstance(v, Value):
        return True
    if isinstance(v, (tuple, list)):
        return any(contains_tensor(x) for x in v)
    if isinstance(v, dict):
        return any(contains_tensor(x) for x in v.values())
    return False


def is_number(v: Any) -> bool:
    """A scalar that can become a tensor constant (Python or numpy bool/int/float)."""
    if isinstance(v, (bool, int, float)):
        return True
    return isinstance(v, np.generic) and v.dtype.kind in "biuf"


def is_const_array(v: Any) -> bool:
    """A numpy array read at compile time (a global or closure constant)."""
    return isinstance(v, np.ndarray) and v.dtype.kind in "biuf"


def is_dtype_like(v: Any) -> bool:
    """A dtype spelling: np.float16, pyasc.float32, np.dtype('int8'), the builtins bool/int/float."""
    if isinstance(v, np.dtype):
        return True
    if isinstance(v, type) and (issubclass(v, np.generic) or v in (bool, int, float)):
        return True
    return False


def canonical_dtype(v: Any) -> str:
    """Canonical dtype name; Python's int/float mean numpy's defaults narrowed to 32 bits (an explicit 64-bit
    dtype stays an error: README, dtype rules)."""
    if v is int:
        return "int32"
    if v is float:
        return "float32"
    return dtypes.normalize(v)


def normalize_attr(v: Any) -> Any:
    """An attribute value as plain, comparable, serialisable data."""
    if isinstance(v, list):
        v = tuple(v)
    if isinstance(v, tuple):
        return tuple(normalize_attr(x) for x in v)
    if is_dtype_like(v):
        return canonical_dtype(v)
    if isinstance(v, np.generic) and v.dtype.kind in "biuf":
        return v.item()
    return v


def describe(v: Any) -> str:
    """A short description of a value for error messages."""
    if isinstance(v, Value):
        return f"a tensor {v.type}"
    if isinstance(v, TensorMethod):
        return f"the tensor method .{v.name}"
    if isinstance(v, Masked):
        return f"`{v.text}`, which {MASKED_USE}"
    if isinstance(v, bool):
        return f"the bool {v}"
    if isinstance(v, (int, float)):
        return f"the {type(v).__name__} {v!r}"
    if isinstance(v, Sym):
        return f"the symbolic dim {v}"
    if isinstance(v, tuple):
        return f"the tuple {v!r}" if not contains_tensor(v) else f"a tuple of {len(v)} values"
    if isinstance(v, types.ModuleType):
        return f"the module {v.__name__}"
    if v is None:
        return "None"
    if isinstance(v, str):
        return f"the string {v!r}"
    return f"a {type(v).__name__}"
