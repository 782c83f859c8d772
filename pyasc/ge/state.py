"""What the optimiser's passes hand each other: one typed record per compile (`PassContext.state`).

- `kernels`: the kernel schedule (ge/plan.py), set by fusion, or by the
  one-kernel-per-op fallback when fusion did not run (`schedule_for`);
- `fusion_decisions`: every fusion decision, in order (ge/decisions.py);
- `pattern_decisions`: what the pattern passes before fusion found, missed or
  decomposed (they come first in the fusion log; fusion rewrites its own list);
- `cube_routes`: how each matmul operand reaches the cube (layout_assign);
- `memory_plan`: the GM workspace plan (memory_planning).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .decisions import CubeOperandRoute, FusionDecision
from .plan import KernelPlan, MemoryPlan


@dataclass
class OptimizerState:
    kernels: list[KernelPlan] | None = None
    fusion_decisions: list[FusionDecision] = field(default_factory=list)
    pattern_decisions: list[FusionDecision] = field(default_factory=list)
    cube_routes: list[CubeOperandRoute] = field(default_factory=list)
    memory_plan: MemoryPlan | None = None
