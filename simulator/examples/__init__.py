"""Hand-written reference programs in the emulator's ISA (they double as ISA documentation).

- vector_add: z = x + y, multi-core with a tail, single or double buffered
- softmax: row softmax over the last axis
- matmul: relu(a @ b + bias) through L1 / L0A / L0B / mmad / FixPipe
"""
from . import matmul, softmax, vector_add  # noqa: F401
