"""Building an instruction from builder arguments: each normalised by its field's type (the class's dataclass
fields are its operands, so a builder needs no list of its own)."""
from __future__ import annotations

import typing
from dataclasses import MISSING, fields
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..errors import ProgramError
from .base import Mem, Reg, normalize_dtype


def as_operand(v: Any, what: str) -> Any:
    """An integer operand: an int (numpy integers become ints) or a register; bools are rejected."""
    if isinstance(v, Reg):
        return v
    if isinstance(v, (bool, np.bool_)):
        raise ProgramError(f"{what} must be an int or a Reg, got bool {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    raise ProgramError(f"{what} must be an int or a Reg, got {type(v).__name__} {v!r}")


def as_scalar(v: Any, what: str) -> Any:
    """A scalar operand: an int, a float or a register."""
    if isinstance(v, Reg):
        return v
    if isinstance(v, (bool, np.bool_)):
        raise ProgramError(f"{what} must be a number or a Reg, got bool {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    raise ProgramError(f"{what} must be a number or a Reg, got {type(v).__name__} {v!r}")


def is_dtype_field(name: str) -> bool:
    return name == "dtype" or name.endswith("_dtype")


@lru_cache(maxsize=None)
def _normalisers(cls: type) -> tuple[tuple[str, Callable[[Any], Any], Any], ...]:
    """(field, how to normalise a given value, default) for every field of an instruction class."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        hint = hints[f.name]
        args = set(typing.get_args(hint))
        optional = type(None) in args
        core = args - {type(None)} if args else {hint}

        def norm(v: Any, name: str = f.name, core: frozenset = frozenset(core), optional: bool = optional) -> Any:
            if v is None and optional:
                return None
            if isinstance(v, Mem) and Mem in core:
                return v
            if float in core:   # a scalar (int, float or register)
                return as_scalar(v, name) if (Reg in core or int in core) else float(v)
            if Reg in core:     # an integer operand
                return as_operand(v, name)
            if bool in core:
                return bool(v)
            if tuple in core:
                return tuple(v)
            if str in core and is_dtype_field(name):
                return normalize_dtype(v)
            return v
        default = f.default if f.default is not MISSING else MISSING
        out.append((f.name, norm, default))
    return tuple(out)


def make(cls: type, *args: Any, **kwargs: Any) -> Any:
    """An instruction of class `cls` from builder arguments (positional in field order, or by name), each
    normalised by its field's type: integer operands to ints or registers, dtypes to canonical names, ..."""
    norms = _normalisers(cls)
    if len(args) > len(norms):
        raise ProgramError(f"{cls.OP}: takes at most {len(norms)} operands, got {len(args)}")
    given = dict(zip((n for n, _, _ in norms), args))
    for k, v in kwargs.items():
        if k in given:
            raise ProgramError(f"{cls.OP}: operand {k!r} given twice")
        given[k] = v
    unknown = sorted(set(given) - {n for n, _, _ in norms})
    if unknown:
        raise ProgramError(f"{cls.OP}: unknown operand(s) {', '.join(unknown)}; operands are "
                           f"{', '.join(n for n, _, _ in norms)}")
    values = {}
    for name, norm, default in norms:
        if name in given:
            values[name] = norm(given[name])
        elif default is MISSING:
            raise ProgramError(f"{cls.OP}: operand {name!r} is missing")
    return cls(**values)

