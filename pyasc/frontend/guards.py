"""Guards on the values a kernel read from outside itself while it was compiled.

A global or closure value read at compile time is baked into the graph. The
runtime keeps these guards with the compiled kernel and re-checks them on
every cache hit, so rebinding a global, a closure variable or a helper's
global, or changing the contents of a captured array or list, recompiles
instead of silently running the old graph.

Limit: for other objects only their identity is guarded; an attribute of a
mutable object changed in place (`cfg.scale = 2`) is not seen.
"""
from __future__ import annotations

import math
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from .scope import CLOSURE

_MISSING = object()
_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic)


@dataclass(frozen=True)
class _ListSnapshot:
    items: tuple


def snapshot(value: Any) -> Any:
    """What to compare against later: a private copy of anything mutable we can compare by contents."""
    if isinstance(value, np.ndarray):
        copy = value.copy()
        copy.flags.writeable = False
        return copy
    if isinstance(value, list):
        return _ListSnapshot(tuple(snapshot(v) for v in value))
    if isinstance(value, tuple):
        return tuple(snapshot(v) for v in value)
    return value


def same_value(snap: Any, value: Any) -> bool:
    """Whether `value` is still what `snap` (from `snapshot`) recorded."""
    if snap is value:
        return True
    if isinstance(snap, np.ndarray):
        return (isinstance(value, np.ndarray) and value.dtype == snap.dtype and value.shape == snap.shape
                and bool(np.array_equal(value, snap, equal_nan=snap.dtype.kind in "fc")))
    if isinstance(snap, _ListSnapshot):
        return isinstance(value, list) and len(value) == len(snap.items) and all(
            same_value(s, v) for s, v in zip(snap.items, value))
    if isinstance(snap, tuple):
        return type(value) is type(snap) and len(value) == len(snap) and all(
            same_value(s, v) for s, v in zip(snap, value))
    if isinstance(snap, _SCALARS):
        if type(value) is not type(snap):
            return False
        if isinstance(snap, (float, np.floating)) and math.isnan(snap):
            return bool(math.isnan(value))
        return bool(snap == value)
    return False  # any other object: only the very same object is the same value


@dataclass(frozen=True)
class Guard:
    """`name`, read from the globals or the closure of `fn`, was `snapshot` at compile time."""

    fn: types.FunctionType
    name: str
    where: str
    snapshot: Any

    def current(self) -> Any:
        if self.where == CLOSURE:
            cell = self.fn.__closure__[self.fn.__code__.co_freevars.index(self.name)]
            try:
                return cell.cell_contents
            except ValueError:
                return _MISSING
        return self.fn.__globals__.get(self.name, _MISSING)

    def holds(self) -> bool:
        return same_value(self.snapshot, self.current())

    def __str__(self) -> str:
        return f"{self.where} `{self.name}` of {self.fn.__qualname__}"
