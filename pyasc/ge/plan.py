"""Records the optimiser hands to codegen and the runtime (plain data, no logic).

A `KernelPlan` is one device kernel: one fusion group of the final graph.
A `MemoryPlan` places every GM intermediate between kernels in one workspace.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph, Node, Value


@dataclass
class KernelPlan:
    group: int                     # the fusion_group attr value shared by its nodes
    graph: Graph                   # the graph the nodes live in (root or an If branch)
    nodes: list[Node]              # in topological order
    inputs: list[Value]            # values read from outside the group (graph inputs, consts, other kernels)
    outputs: list[Value]           # values used outside the group (other kernels or graph outputs)
    category: str                  # dominant op category name, e.g. "REDUCE"
    anchor: str                    # the op that decides the lowering (e.g. "softmax", "fused_matmul", "add")

    @property
    def ops(self) -> list[str]:
        return [n.op for n in self.nodes]


@dataclass
class BufferAssignment:
    value: Value
    nbytes: int
    offset: int
    first: int                     # index of the producing kernel in the schedule
    last: int                      # index of the last consuming kernel


@dataclass
class MemoryPlan:
    assignments: list[BufferAssignment] = field(default_factory=list)
    naive_bytes: int = 0           # every intermediate in its own buffer
    lower_bound: int = 0           # max bytes live at once
    peak_bytes: int = 0            # workspace size of the chosen plan
    strategy: str = ""             # which ordering won ("size" or "lifetime")

    def table(self) -> str:
        """Readable table of the plan (for dumps and the artifact)."""
        raise NotImplementedError  # filled in by the memory planning pass
