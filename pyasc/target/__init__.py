"""The compiler's one door to the chip: its configuration and its instruction set, as the emulator describes them.

GE, the frontend and codegen import this package, never `simulator` (the runtime launches on the emulator and
may import it). Everything the compiler knows about the hardware comes through here, typed:

- `Chip` (the chip config: core counts, memories, alignments, every cost) and `get_chip` (a preset by name);
- the instruction specs (`SPECS`, `spec(op)`): each instruction's pipe, memory operands (read or written, in
  which spaces, of which element type), what charges it and the shape of its work, described once in
  `simulator/isa`; tile ops, the sync analysis, the cost model and the emitter all read them;
- dtype facts of the machine (`itemsize`, the cube's dtypes), vector cost passes, the data-move paths;
- `Program`, `MixedKernel`, `Mem`, `Reg`: what emission builds.
"""
from __future__ import annotations

from .chip import DEFAULT_CHIP, Chip, ChipError, DmaPath, get_chip, preset_names  # noqa: F401
from .instructions import (  # noqa: F401
    CORE_PIPES, CUBE_DTYPES, DATA_PATHS, DTYPES, SPECS, InstrSpec, Mem, MemOperand, MixedKernel, Program, Reg,
    VectorPass, VRepeat, accumulator_dtype, data_path, itemsize, repeats, spec, vector_passes,
)
