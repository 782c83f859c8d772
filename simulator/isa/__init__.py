"""The instruction set: operands, instructions (plain frozen dataclasses) and their static rules.

Conventions (see simulator/README.md for the full description):
- Addresses (`Mem.offset`) are byte offsets: inside the core's on-chip
  memory, or inside the GM kernel argument named by `Mem.arg`.
- Sizes (`count`, `burst`, `rows`, `cols`, strides) are in elements of the
  instruction's dtype.
- Any integer operand may be a scalar register (`Reg`); registers hold
  64-bit integers computed from the core index and the tiling data.
- Pipes: S (scalar), V (vector), M (cube), MTE1, MTE2, MTE3, FIX. An AIV
  (vector core) has S, V, MTE2, MTE3 and the UB; an AIC (cube core) has S, M,
  MTE1, MTE2, FIX and L1, L0A, L0B, L0C, BT.

Modules: base (pipes, spaces, dtypes, operands, Instr), control (scalar,
control flow, sync), moves (data moves, cube), vector (vector unit).
"""
from __future__ import annotations

import math

from .base import (  # noqa: F401
    ALU_FNS, BITWISE_ONLY, CAST_ROUNDING, CORE_PIPES, CORE_SPACES, CORE_TYPES, COPY_PATHS, CUBE_DTYPES, DTYPES,
    FLOAT_DTYPES, FLOAT_ONLY, INT_DTYPES, PIPE_ID, PIPES, SPACES, VBINARY_COST, VCOMPARE_FNS, VREDUCE_FNS,
    VUNARY_COST, BT, GM, L0A, L0B, L0C, L1, UB, Instr, Mem, Operand, Reg, ScalarValue, itemsize,
    normalize_dtype,
)
from .control import (  # noqa: F401
    CROSS_MODES, FALU_FNS, Alu, CoreIdx, CoreNum, CrossSet, CrossWait, Cvt, Else, EndIf, EndLoop, FAlu, GroupIdx, If,
    Loop, Mov, PipeBarrier, ScalarLoad, ScalarStore, SetFlag, SubIdx, SyncAll, Tiling, WaitFlag, cross_mode,
)
from . import costs  # noqa: F401
from .spec import DATA_PATHS, InstrSpec, MemOperand, DataPath, path_of  # noqa: F401
from .build import make  # noqa: F401
from .moves import ATOMIC_OPS, Copy, CopyNd2Nz, FixPipe, Load3D, LoadBias, LoadL0, LoadL0Fractals, Mmad  # noqa: F401
from .vector import (  # noqa: F401
    VBinary, VBroadcast, VCast, VCompare, VCopy, VDup, VectorInstr, VGather, VMrgSort4, VReduce, VRepeat, VScalar,
    VSelect, VSort32, VTranspose, VUnary, SORT_GROUP, SORT_PAIR_BYTES,
)

INSTRUCTIONS: dict[str, type[Instr]] = {
    cls.OP: cls
    for cls in (
        CoreIdx, CoreNum, GroupIdx, SubIdx, Tiling, Mov, Alu, FAlu, Cvt, ScalarLoad, ScalarStore,
        Loop, EndLoop, If, Else, EndIf,
        SetFlag, WaitFlag, PipeBarrier, SyncAll, CrossSet, CrossWait,
        Copy, CopyNd2Nz, LoadL0, LoadL0Fractals, Load3D, LoadBias, Mmad, FixPipe,
        VBinary, VScalar, VUnary, VCompare, VSelect, VCast, VDup, VCopy, VReduce, VBroadcast, VTranspose, VGather,
        VSort32, VMrgSort4,
    )
}
BLOCK_OPENERS = ("loop", "if")
#: instruction name -> its spec (spec.py)
SPECS: dict[str, InstrSpec] = {op: cls.SPEC for op, cls in INSTRUCTIONS.items()}


def repeats(nbytes: int, repeat_bytes: int) -> int:
    return max(1, math.ceil(nbytes / repeat_bytes))
