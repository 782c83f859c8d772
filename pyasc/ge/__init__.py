"""GE-style graph optimiser: `optimize(graph, ...)` runs the pass pipeline.

(Seed interface: returns the graph unchanged until the pipeline lands.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..ir import Graph
from .passes import Pass, PassContext  # noqa: F401
from .plan import BufferAssignment, KernelPlan, MemoryPlan  # noqa: F401


@dataclass
class OptimizeResult:
    graph: Graph                                              # the optimised graph (same object, mutated)
    stages: list[tuple[str, str]] = field(default_factory=list)   # (pass name, canonical text) per changed pass
    dots: list[tuple[str, str]] = field(default_factory=list)     # (pass name, DOT) per changed pass
    kernels: list[KernelPlan] = field(default_factory=list)       # planned device kernels, in schedule order
    memory_plan: MemoryPlan | None = None
    fusion_log: list[str] = field(default_factory=list)           # fusion decisions, incl. every "why not fused"
    pass_times: dict[str, float] = field(default_factory=dict)    # seconds per pass (for reports)


def optimize(
    graph: Graph,
    *,
    opt_level: int = 3,
    disabled_passes: Iterable[str] = (),
    required_passes: Iterable[str] = (),
    chip: Any = None,
    knobs: dict[str, Any] | None = None,
) -> OptimizeResult:
    return OptimizeResult(graph)
