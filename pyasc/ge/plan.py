"""Records the optimiser hands to codegen and the runtime (plain data, little logic).

A `KernelPlan` is one device kernel: one fusion group of the final graph.
A `MemoryPlan` places every GM intermediate between kernels in one workspace.

Schedule convention (what `OptimizerState.kernels` holds, see ge/fusion/):
a flat list, depth first. The root graph's kernels come in a topological
order of the groups; an `If` is one kernel step of its graph (kind CONTROL,
category OPAQUE, anchor "If") and is followed immediately by the kernels of
its then-branch and then those of its else-branch (recursively, each branch
in its own topological order). `KernelPlan.graph` tells which graph a kernel
belongs to, so `[k for k in kernels if k.graph is g]` is g's own schedule.

Kernel kinds (what codegen picks a template by):
- ELEMENTWISE: elementwise and broadcast ops (no reduction, no matmul);
- ROW_REDUCE: reductions over the trailing `k` axes of `rows` (row composites
  included; axis=None is a row reduction over all axes), with their
  elementwise prologue and epilogue;
- COLUMN_REDUCE: one reduction over leading or middle axes, with a prologue;
- MATMUL: one matmul / fused_matmul with an elementwise epilogue;
- DATA_MOVEMENT: one injective op alone (transpose, reshape, slice, transdata, squeeze, ...);
- OPAQUE: one opaque compute op alone (attention), lowered whole by the template codegen has for it; when
  codegen has none (its capacity function refuses the candidate), GE lowers the op's decomposition instead;
- CONTROL: an If step (the host picks a branch).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..ir import Dim, Graph, Node, Value
from ..ops import Category


class KernelKind(enum.Enum):
    ELEMENTWISE = "elementwise"
    ROW_REDUCE = "row_reduce"
    COLUMN_REDUCE = "column_reduce"
    MATMUL = "matmul"
    DATA_MOVEMENT = "data_movement"
    OPAQUE = "opaque"
    CONTROL = "control"


@dataclass(frozen=True)
class KernelStructure:
    """What fusion found out about a kernel's iteration space (the legality rules build it)."""

    kind: KernelKind
    anchor: Node                          # the node that decides the lowering (matmul, first reduction, first op)
    rows: tuple[Dim, ...] = ()            # reductions: the reduction's input shape
    k: int = 0                            # ROW_REDUCE: how many trailing axes of `rows` are reduced
    reduced_axes: tuple[int, ...] = ()    # reductions: the axes reduced (ROW_REDUCE: the last k)
    dropped: frozenset[Node] = frozenset()  # ROW_REDUCE: nodes holding per-row values without the reduced axes


@dataclass
class KernelPlan:
    group: int                     # the fusion_group attr value shared by its nodes (with fusion disabled:
                                   # just the kernel's index; the nodes carry no attr, the fusion log says so)
    graph: Graph                   # the graph the nodes live in (root or an If branch)
    nodes: list[Node]              # in topological order
    inputs: list[Value]            # values read from outside the group (graph inputs, consts, other kernels)
    outputs: list[Value]           # values used outside the group (other kernels or graph outputs)
    category: Category             # dominant op category, e.g. Category.REDUCE
    structure: KernelStructure     # kind, anchor node, rows/k/reduced axes/dropped for reductions
    working_set: int | None = None  # UB bytes with double buffering, from the capacity model (None: unknown)
    mixed: bool = False            # a matmul whose vector work on its result may share its launch (ge.mixed)
    # a MATMUL plan holding the kernel that produces its A operand (ge.prologue): that kernel's structure (its
    # nodes are the plan's nodes the matmul depends on)
    prologue: KernelStructure | None = None
    # a multi-output plan (ge.horizontal): the plans of the kernels that share its launch, in order (the first's
    # anchor is its anchor); () for a plan of one kernel
    horizontal: tuple["KernelPlan", ...] = ()

    @property
    def kind(self) -> KernelKind:
        return self.structure.kind

    @property
    def anchor_node(self) -> Node:
        return self.structure.anchor

    @property
    def anchor(self) -> str:
        """The op that decides the lowering (e.g. "softmax", "fused_matmul", "add")."""
        return self.structure.anchor.op

    @property
    def ops(self) -> list[str]:
        return [n.op for n in self.nodes]

    @property
    def is_control(self) -> bool:
        """An If step: the host picks a branch; its branch kernels are the device work."""
        return self.kind is KernelKind.CONTROL

    def describe(self) -> str:
        """One readable line: `k3 [REDUCE anchor=max] max, sub, exp, sum, div  (2 in, 1 out)`."""
        return (
            f"k{self.group} [{self.category.name} anchor={self.anchor}] {', '.join(self.ops)}"
            f"  ({len(self.inputs)} in, {len(self.outputs)} out)"
        )


@dataclass
class BufferAssignment:
    value: Value
    nbytes: int
    offset: int
    first: int                     # index of the producing kernel in the schedule
    last: int                      # index of the last consuming kernel
    size: int = 0                  # bytes reserved: nbytes rounded up to the GM alignment
    label: str = ""                # readable name for tables ("exp#3:0")

    def overlaps_in_time(self, other: "BufferAssignment") -> bool:
        return self.first <= other.last and other.first <= self.last

    def overlaps_in_space(self, other: "BufferAssignment") -> bool:
        return self.offset < other.offset + other.size and other.offset < self.offset + self.size


@dataclass
class MemoryPlan:
    assignments: list[BufferAssignment] = field(default_factory=list)
    naive_bytes: int = 0           # every intermediate in its own buffer (aligned sizes summed)
    lower_bound: int = 0           # max bytes live at once (aligned sizes, same rule as the plan)
    peak_bytes: int = 0            # workspace size of the chosen plan (If branch regions included)
    strategy: str = ""             # which ordering won ("size" or "lifetime")
    # -- added by the memory planning pass -----------------------------------
    alignment: int = 0             # GM allocation alignment applied to offsets and sizes (the chip's)
    steps: int = 0                 # kernels in this graph's schedule
    intermediate_bytes: int = 0    # raw bytes of all intermediates (what crosses GM between kernels)
    traffic_bytes: int = 0         # GM bytes moved for intermediates: one write + one read per consumer kernel
    candidates: dict[str, int] = field(default_factory=dict)  # peak per strategy tried
    notes: list[str] = field(default_factory=list)            # skipped buffers (symbolic sizes) and the like
    # If branches: key "k<if group>.<branch attr>" -> the branch's own plan. Its offsets are
    # absolute, inside [base, base + peak_bytes) of the branch plan: the region the two branches
    # of that If share, placed in this plan like a buffer live only at step `if_step`.
    branch_plans: dict[str, "MemoryPlan"] = field(default_factory=dict)
    base: int = 0                  # offset of this plan's region in the workspace (0 for the root plan)
    if_step: int | None = None     # for a branch plan: the If's step in the parent schedule

    @property
    def ratio(self) -> float:
        """peak / lower bound (1.0 when there is nothing to place)."""
        return self.peak_bytes / self.lower_bound if self.lower_bound else 1.0

    def table(self) -> str:
        """Readable table of the plan (for dumps and the artifact)."""
        lines = [self._summary(), *self._rows(""), *self._branch_lines("")]
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    def _branch_lines(self, indent: str) -> list[str]:
        """Each branch plan (and, indented further, the branch plans nested in it)."""
        lines: list[str] = []
        for key, sub in self.branch_plans.items():
            lines.append(f"{indent}branch {key} (region at {sub.base} B, live at step {sub.if_step}): "
                         f"{sub._summary()}")
            lines.extend(sub._rows(indent + "  "))
            lines.extend(sub._branch_lines(indent + "  "))
        return lines

    def _summary(self) -> str:
        tried = ", ".join(f"{k}={v}" for k, v in self.candidates.items()) or "-"
        return (
            f"workspace: {len(self.assignments)} buffers over {self.steps} kernels; naive {self.naive_bytes} B, "
            f"lower bound {self.lower_bound} B, planned peak {self.peak_bytes} B "
            f"(x{self.ratio:.3f}, strategy {self.strategy or '-'}; tried {tried}; align {self.alignment})"
        )

    def _rows(self, indent: str) -> list[str]:
        if not self.assignments:
            return [f"{indent}(no intermediates between kernels)"]
        header = ("buffer", "type", "bytes", "offset", "end", "live")
        rows = [
            (
                a.label or repr(a.value),
                str(a.value.type),
                str(a.nbytes),
                str(a.offset),
                str(a.offset + (a.size or a.nbytes)),
                f"[{a.first}, {a.last}]",
            )
            for a in sorted(self.assignments, key=lambda a: (a.offset, a.first))
        ]
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

        def fmt(r: tuple[str, ...]) -> str:
            return indent + "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))

        return [fmt(header), fmt(tuple("-" * w for w in widths)), *map(fmt, rows)]
