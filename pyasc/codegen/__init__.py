"""Code generation: every kernel the optimiser planned becomes tile programs for the emulated NPU, plus host code.

    generate(graph, plans, memory_plan, chip, CodegenOptions(...), name) -> DeviceModule

One concern per module, decisions as data:
- `symbolic` (pyasc/symbolic.py, a leaf): integer expressions, the one source of every tiling formula;
- `kernel_graph`: one kernel plan as a self-contained graph of primitive ops;
- `lowering`: op -> vector instruction tables (and which template lowers the others);
- `domain`, `alignment`, `vector_ops`, `ub_alloc`: what a vector kernel computes per tile (where each value
  sits in its domain) and in which UB buffers;
- `templates/`: pointwise and row reductions (`vector`), rows longer than UB (`multipass`), column
  reductions (`column`), the cube (`matmul`, with `matmul_plan` splitting a plan into its launches), data
  movement; each lists tiling candidates and builds a `schedule.TileSchedule` for one;
- `cost` (an analytic cost model from the chip config) and `tiling` (enumerate, reject, score, choose);
- `sync`: the flags a schedule needs, as an analysis; `emit`: schedule + sync plan -> `simulator.Program`;
- `launch`: where every value lives in GM and the order of launches and If branches; `host`: the LLVM module
  that evaluates the same expressions at launch and drives the emulator through callbacks;
- `capacity`: the capacity function fusion asks, so that every group the optimiser forms tiles;
- `generate`: the driver.
"""
