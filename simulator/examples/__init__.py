"""Hand-written reference programs in the emulator's ISA (they double as ISA documentation).

- vector_add: z = x + y, multi-core with a tail, single or double buffered
- softmax: row softmax over the last axis
- matmul: relu(a @ b + bias) through L1 / L0A / L0B / mmad / FixPipe
- gemm: a double-buffered GEMM that lives off the L2 (the 6144^3 calibration kernel)
- matmul_epilogue: gelu(a @ b) in one mixed launch, tiles handed over through GM by cross-core flags
"""
from . import gemm, matmul, matmul_epilogue, softmax, vector_add  # noqa: F401
