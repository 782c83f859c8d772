"""The instruction set as the compiler reads it: the specs (`simulator/isa/spec.py`) and the machine's dtype facts."""
from __future__ import annotations

from simulator.isa import (  # noqa: F401
    CORE_PIPES, CUBE_DTYPES, DATA_PATHS, DTYPES, SPECS, InstrSpec, Mem, MemOperand, Reg, VRepeat, itemsize, path_of,
)
from simulator.isa import costs as _costs
from simulator.isa import repeats  # noqa: F401
from simulator.mixed import MixedKernel  # noqa: F401
from simulator.program import Program  # noqa: F401

#: one hardware pass of a vector instruction's decomposition: its cost class and element width
VectorPass = _costs.Pass


def spec(op: str) -> InstrSpec:
    """The spec of instruction `op` (KeyError names the instruction)."""
    try:
        return SPECS[op]
    except KeyError:
        raise KeyError(f"no instruction {op!r}; instructions are {', '.join(sorted(SPECS))}") from None


def accumulator_dtype(dtype: str) -> str:
    """The L0C dtype a cube product of `dtype` operands accumulates in."""
    return CUBE_DTYPES[dtype]


def data_path(src_space: str, dst_space: str):
    """The pipe and chip cost field of the move from one space to another."""
    return path_of(src_space, dst_space)


def vector_passes(op: str, fn: str | None, dtype: str | None) -> tuple[VectorPass, ...]:
    """The hardware passes a vector instruction costs (one native pass, or the 910B's decomposition)."""
    return _costs.passes(_Probe(op, fn, dtype))


class _Probe:
    """What the cost table reads of an instruction: its name, function and dtype."""

    def __init__(self, op: str, fn: str | None, dtype: str | None):
        self.OP, self.fn, self.dtype = op, fn, dtype

