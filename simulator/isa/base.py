"""ISA basics: pipes, spaces, dtypes, operands, the Instr base class and static-check helpers.

The conventions (byte addresses, sizes in elements, registers, the pipes and
spaces of each core type) are in the package docstring (isa/__init__.py) and
simulator/README.md.
"""
from __future__ import annotations

import dataclasses
import typing
from functools import lru_cache
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar, Optional, Union

import numpy as np

from ..errors import ProgramError
from .spec import DATA_PATHS, DataPath, InstrSpec, path_of

PIPES: tuple[str, ...] = ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX")
PIPE_ID: dict[str, int] = {p: i for i, p in enumerate(PIPES)}
CORE_TYPES: tuple[str, ...] = ("aiv", "aic")
CORE_PIPES: dict[str, tuple[str, ...]] = {
    "aiv": ("S", "V", "MTE2", "MTE3"),
    "aic": ("S", "M", "MTE1", "MTE2", "FIX"),
}
SPACES: tuple[str, ...] = ("GM", "UB", "L1", "L0A", "L0B", "L0C", "BT")
CORE_SPACES: dict[str, tuple[str, ...]] = {
    "aiv": ("GM", "UB"),
    "aic": ("GM", "L1", "L0A", "L0B", "L0C", "BT"),
}

#: canonical dtype name -> numpy storage dtype ("bool" is stored as one byte holding 0 or 1)
DTYPES: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(np.uint16),  # bits: see simulator/bfloat16.py
    "float32": np.dtype(np.float32),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8),
    "bool": np.dtype(np.uint8),
}
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32"})
INT_DTYPES = frozenset({"int8", "int16", "int32", "uint8", "bool"})

# vector functions, each with its cost class (cycles per repeat come from the chip config)
VBINARY_COST = {
    "add": "binary", "sub": "binary", "mul": "binary", "max": "binary", "min": "binary",
    "and": "binary", "or": "binary", "xor": "binary",
    "div": "complex", "floordiv": "complex", "mod": "complex", "pow": "composite",
}
VUNARY_COST = {
    "neg": "simple", "abs": "simple", "relu": "simple", "not": "simple", "floor": "simple",
    "ceil": "simple", "sign": "binary", "exp": "binary", "log": "binary", "sqrt": "complex",
    "rsqrt": "complex", "reciprocal": "complex", "sin": "composite", "cos": "composite",
    "tanh": "composite", "sigmoid": "composite", "gelu": "composite", "silu": "composite",
    "erf": "composite",
}
VCOMPARE_FNS = ("lt", "le", "gt", "ge", "eq", "ne")
VREDUCE_FNS = ("sum", "max", "min")
CAST_ROUNDING = ("trunc", "rint", "floor", "ceil")
ALU_FNS = (
    "add", "sub", "mul", "div", "mod", "cdiv", "min", "max", "shl", "shr",
    "and", "or", "xor", "lt", "le", "gt", "ge", "eq", "ne",
)
# float-only functions (integer inputs would need a different instruction on hardware)
FLOAT_ONLY = frozenset({
    "div", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid",
    "gelu", "silu", "erf",
})
BITWISE_ONLY = frozenset({"and", "or", "xor", "not"})

# the paths the `copy` instruction takes (the others belong to the cube's own moves); see spec.DATA_PATHS
COPY_PATHS: dict[tuple[str, str], DataPath] = {
    k: DATA_PATHS[k] for k in (("GM", "UB"), ("UB", "GM"), ("GM", "L1"))
}

CUBE_DTYPES = {"float16": "float32", "bfloat16": "float32", "int8": "int32", "float32": "float32"}  # -> L0C


def itemsize(dtype: str) -> int:
    return DTYPES[dtype].itemsize


def normalize_dtype(dtype: Any) -> str:
    """Canonical dtype name of anything numpy accepts as a supported dtype."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    if dtype is bool:
        return "bool"
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name == "bool":
        return "bool"
    if name not in DTYPES:
        raise ProgramError(f"unsupported dtype {dtype!r}; supported: {', '.join(DTYPES)}")
    return name


@dataclass(frozen=True)
class Reg:
    """A scalar register (64-bit integer)."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ProgramError(f"register name must be an identifier, got {self.name!r}")

    def __str__(self) -> str:
        return self.name


Operand = Union[int, Reg]
ScalarValue = Union[int, float, Reg]


@dataclass(frozen=True)
class Mem:
    """A memory operand: `space` plus a byte offset; GM operands also name a kernel argument."""

    space: str
    offset: Operand = 0
    arg: Optional[str] = None

    def __post_init__(self) -> None:
        if self.space not in SPACES:
            raise ProgramError(f"unknown memory space {self.space!r}; spaces are {', '.join(SPACES)}")
        _check_operand(self.offset, "memory offset")
        if self.space == "GM" and not (isinstance(self.arg, str) and self.arg):
            raise ProgramError("a GM operand needs the name of a kernel argument (Mem('GM', offset, arg='x'))")
        if self.space != "GM" and self.arg is not None:
            raise ProgramError(f"only GM operands name a kernel argument, got arg={self.arg!r} for {self.space}")

    def __str__(self) -> str:
        if self.space == "GM":
            return f"GM.{self.arg}[{self.offset}]"
        return f"{self.space}[{self.offset}]"


def GM(arg: str, offset: Operand = 0) -> Mem:
    return Mem("GM", offset, arg)


def UB(offset: Operand = 0) -> Mem:
    return Mem("UB", offset)


def L1(offset: Operand = 0) -> Mem:
    return Mem("L1", offset)


def L0A(offset: Operand = 0) -> Mem:
    return Mem("L0A", offset)


def L0B(offset: Operand = 0) -> Mem:
    return Mem("L0B", offset)


def L0C(offset: Operand = 0) -> Mem:
    return Mem("L0C", offset)


def BT(offset: Operand = 0) -> Mem:
    return Mem("BT", offset)


def _check_operand(v: Any, what: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, Reg)):
        raise ProgramError(f"{what} must be an int or a Reg, got {type(v).__name__} {v!r}")


def _check_scalar(v: Any, what: str) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float, Reg)):
        raise ProgramError(f"{what} must be an int, a float or a Reg, got {type(v).__name__} {v!r}")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


@dataclass(frozen=True)
class Instr:
    """Base of every instruction. Subclasses are frozen dataclasses with an `OP` name and a `SPEC`
    (spec.py): the pipe, the memory operands and what charges the instruction are read from it."""

    OP: ClassVar[str] = ""
    WRITES: ClassVar[tuple[str, ...]] = ()  # fields naming registers this instruction writes
    SPEC: ClassVar[InstrSpec] = InstrSpec()  # a scalar-unit instruction unless the class says otherwise

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.OP:  # the spec carries the instruction's name, so a spec alone says what it describes
            cls.SPEC = dataclasses.replace(cls.SPEC, op=cls.OP)

    @property
    def pipe(self) -> str:
        spec = self.SPEC
        if spec.move:
            path = DATA_PATHS.get(self._move_spaces())
            return path.pipe if path is not None else "MTE2"  # check() reports the missing path
        return spec.pipe

    @property
    def path(self) -> str:
        """A data move's cost field in the chip config (its path's)."""
        return path_of(*self._move_spaces()).cost

    def _move_spaces(self) -> tuple[str, str]:
        src, dst = (getattr(self, n) for n in self.SPEC.move)
        return (getattr(src, "space", "?"), getattr(dst, "space", "?"))

    def regs_read(self) -> list[Reg]:
        out = []
        for name in _field_names(type(self)):
            if name in self.WRITES:
                continue
            v = getattr(self, name)
            if isinstance(v, Reg):
                out.append(v)
            elif isinstance(v, Mem) and isinstance(v.offset, Reg):
                out.append(v.offset)
        return out

    def regs_written(self) -> list[Reg]:
        return [getattr(self, n) for n in self.WRITES]

    def mems(self) -> list[Mem]:
        return [v for v in (getattr(self, n) for n in _field_names(type(self))) if isinstance(v, Mem)]

    def check(self, core_type: str) -> None:
        """Static rules (operand kinds, spaces, dtypes); raises ProgramError."""
        self._check_spec_mems()
        for m in self.mems():
            if m.space not in CORE_SPACES[core_type]:
                raise ProgramError(
                    f"{self.OP}: memory space {m.space} does not exist on an {core_type.upper()} core "
                    f"(it has {', '.join(CORE_SPACES[core_type])})"
                )
        if self.pipe not in CORE_PIPES[core_type]:
            raise ProgramError(
                f"{self.OP}: runs on pipe {self.pipe}, which an {core_type.upper()} core does not have "
                f"(pipes: {', '.join(CORE_PIPES[core_type])})"
            )

    def _check_spec_mems(self) -> None:
        """Each memory operand of the spec is a Mem in one of its spaces (or a scalar / None where the field
        allows it); a data move's spaces are one of the chip's paths."""
        for m in self.SPEC.mems:
            v = getattr(self, m.name)
            if not isinstance(v, Mem):
                if v is None and _field_default(self, m.name) is None:
                    continue
                if m.name in _scalar_fields(type(self)):
                    continue
                _req(self, False, f"{m.name} must be a Mem operand, got {v!r}")
            _req(self, v.space in m.spaces, f"{m.name} must be in {' or '.join(m.spaces)}, got {v.space}")
        if self.SPEC.move:
            key = self._move_spaces()
            _req(self, key in DATA_PATHS, f"no data path {key[0]}->{key[1]}; paths are "
                 + ", ".join(f"{a}->{b}" for a, b in DATA_PATHS))

    def text(self) -> str:
        parts = [f"{f.name}={_fmt(getattr(self, f.name))}" for f in fields(self)]
        return f"{self.OP} " + " ".join(parts)

    def __str__(self) -> str:
        return self.text()


def _field_default(instr: Instr, name: str) -> Any:
    return _defaults(type(instr)).get(name, MISSING)


@lru_cache(maxsize=None)
def _field_names(cls: type) -> tuple[str, ...]:
    """An instruction class's field names in order (dataclasses.fields rebuilds its tuple on every call, and
    every instruction emitted, validated and decoded asks for them)."""
    return tuple(f.name for f in fields(cls))


@lru_cache(maxsize=None)
def _defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in fields(cls)}


@lru_cache(maxsize=None)
def _scalar_fields(cls: type) -> frozenset[str]:
    """Fields that may hold a scalar instead of a Mem (their type admits float)."""
    hints = typing.get_type_hints(cls)
    return frozenset(n for n, h in hints.items() if float in typing.get_args(h))


def _req(instr: Instr, cond: bool, msg: str) -> None:
    if not cond:
        raise ProgramError(f"{instr.OP}: {msg}")


def _check_dtype(instr: Instr, name: str) -> None:
    v = getattr(instr, name)
    _req(instr, isinstance(v, str) and v in DTYPES, f"{name} must be one of {', '.join(DTYPES)}, got {v!r}")


def _check_ops(instr: Instr, *names: str) -> None:
    for n in names:
        v = getattr(instr, n)
        if v is not None:
            _check_operand(v, f"{instr.OP}: {n}")


def _optional(instr: Instr, *names: str) -> str:
    """Listing suffix " name=value" for each optional operand that is set."""
    return "".join(f" {n}={getattr(instr, n)}" for n in names if getattr(instr, n) is not None)
