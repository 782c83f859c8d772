"""Code generation for one optimised graph: every kernel plan becomes tile programs, plus the launch plan.

For each kernel plan, in the optimiser's schedule order: the kernel graph
(`kernel_graph`), its template (chosen by what the kernel computes), the
tiling choice (`tiling.choose` over the template's candidates), the sync
plan (`sync.plan_sync`) and the program (`emit.emit`). The launch plan
(`launch`) says where each value lives and runs If branches on the host.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from simulator import Program

from .. import symbolic as sy
from ..errors import CompileError
from ..ir import Graph, Node, Value
from . import kinds
from .domain import UnsupportedDomain, dims
from .emit import emit
from .kernel_graph import KernelGraph, build_kernel_graph
from .launch import IfStep, Launch, LaunchPlan, Locator, Step, WorkspaceLayout, branch_locations, \
    dim_symbols, root_locations
from .lowering import no_lowering
from .schedule import TileSchedule
from .sync import SyncPlan
from .templates import datamove, vector
from .tiling import NoLegalTiling, TilingChoice, choose, scoring_dims


@dataclass(frozen=True)
class CodegenOptions:
    buffer_num: int = 2          # a cap: 1 forces serial tiles
    cores: int | None = None     # cap on cores used
    sync: str = "flags"          # "flags" or "barrier" (debug)


@dataclass
class DeviceKernel:
    """One launched device kernel: its plan, template, tiling, schedule, sync and program."""

    index: int
    name: str
    template: str
    schedule: TileSchedule
    tiling: TilingChoice
    sync: SyncPlan
    program: Program
    inputs: list[Value]          # graph values bound to in<i>
    outputs: list[Value]         # graph values bound to out<j>
    plan: Any = None             # the optimiser's KernelPlan (None for a copy the launch plan added)

    @property
    def core_type(self) -> str:
        return self.schedule.core_type

    @property
    def blocks(self) -> Any:
        return self.schedule.blocks

    @property
    def fields(self) -> dict[str, Any]:
        return self.schedule.fields

    def listing(self) -> str:
        return self.program.listing()


@dataclass
class DeviceModule:
    kernels: list[DeviceKernel]
    launch: LaunchPlan
    output_shapes: list[tuple[Any, ...]]
    output_dtypes: list[str]
    notes: list[str] = field(default_factory=list)

    def tiling_text(self) -> str:
        out = []
        for k in self.kernels:
            out.append(f"k{k.index} {k.name} [{k.template}]")
            out.extend("  " + line for line in k.tiling.text().splitlines())
            out.extend("  " + line for line in k.schedule.text().splitlines())
            out.append("  " + k.sync.summary())
        return "\n".join(out)


class _Generator:
    def __init__(self, graph: Graph, plans: Sequence[Any], memory_plan: Any, chip: Any, options: CodegenOptions,
                 name: str):
        self.graph = graph
        self.plans = list(plans)
        self.memory_plan = memory_plan
        self.chip = chip
        self.options = options
        self.name = name
        self.kernels: list[DeviceKernel] = []
        self.consts: dict[str, Any] = {}
        self.layout = WorkspaceLayout(memory_plan.peak_bytes if memory_plan is not None else 0)

    def run(self) -> DeviceModule:
        produced = self._produced(self.graph)
        loc, inputs, sources = root_locations(self.graph, self.memory_plan, self.layout, self.consts, produced)
        self.forward_results(loc, produced)
        steps = self.scope(self.graph, loc, self.memory_plan)
        outputs = [what if kind == "buffer" else None for kind, what in sources]
        exprs: list[Any] = [self.layout.end]
        for k in self.kernels:
            exprs.extend(k.schedule.fields.values())
            exprs.append(k.schedule.blocks)
        exprs.extend(l.nbytes for l in inputs)
        plan = LaunchPlan(steps, inputs, outputs, sources, self.consts, self.layout.end, dim_symbols(exprs))
        shapes = [dims(v.type.shape) for v in self.graph.outputs]
        return DeviceModule(self.kernels, plan, shapes, [v.type.dtype for v in self.graph.outputs])

    def _produced(self, graph: Graph) -> list[Value]:
        return [v for p in self.plans if p.graph is graph and not _is_control(p) for v in p.outputs]

    # ---- one graph scope ------------------------------------------------------------------------
    def scope(self, graph: Graph, loc: Locator, memory_plan: Any) -> list[Step]:
        steps: list[Step] = []
        own = [p for p in self.plans if p.graph is graph]   # the memory plan's steps
        for step, plan in enumerate(own):
            if _is_control(plan):
                steps.append(self.if_step(plan, loc, memory_plan))
            elif plan.outputs:
                if self.alias(plan, loc, own, step):
                    continue
                for dk in self.compile_plan(plan):
                    steps.append(Launch(dk.index, self._args(dk, loc)))
        return steps

    def if_step(self, plan: Any, loc: Locator, memory_plan: Any) -> IfStep:
        node: Node = plan.nodes[0]
        cond = node.inputs[0]
        branches = []
        for attr in ("then_branch", "else_branch"):
            sub: Graph = node.attrs[attr]
            key = f"k{plan.group}.{attr}"
            sub_plan = memory_plan.branch_plans.get(key) if memory_plan is not None else None
            sub_loc, copies = branch_locations(sub, node.inputs, node.values, loc, sub_plan, self.layout, self.consts,
                                               self._produced(sub))
            steps = self.scope(sub, sub_loc, sub_plan)
            for j in copies:
                src = sub.outputs[j]
                dk = self.copy_kernel(src, node.values[j], f"{self.name}_k{plan.group}_{attr}_out{j}")
                args = {vector.out_param(0): loc[node.values[j]]}
                if dk.inputs:  # a scalar constant is written without reading anything
                    args[vector.in_param(0)] = sub_loc[src]
                steps.append(Launch(dk.index, args))
            branches.append(steps)
        return IfStep(loc[cond], cond.type.dtype, branches[0], branches[1])

    def forward_results(self, loc: Locator, produced: Sequence[Value]) -> None:
        """A result that is a same-bytes alias of a kernel's output (`return y.reshape(...)`) has that
        output written straight into its buffer; the latest first, so a chain of reshapes collapses."""
        made = set(produced)
        for plan in reversed(self.plans):
            if plan.graph is not self.graph or len(plan.nodes) != 1 or len(plan.outputs) != 1:
                continue
            node = plan.nodes[0]
            if node.inputs and node.inputs[0] in made and datamove.alias_offset(node) == 0:
                loc.forward(node.inputs[0], plan.outputs[0])

    def alias(self, plan: Any, loc: Locator, own: Sequence[Any], step: int) -> bool:
        """A data move whose output is a contiguous run of its input (a reshape) lives in the input's bytes
        when the launch plan says that is safe: then it launches nothing."""
        if len(plan.nodes) != 1 or len(plan.outputs) != 1:
            return False
        node = plan.nodes[0]
        offset = datamove.alias_offset(node)
        if offset is None:
            return False
        out = plan.outputs[0]
        last = max((j for j, p in enumerate(own) if out in p.inputs), default=step)
        return loc.alias(out, node.inputs[0], offset, step, last)

    def _args(self, dk: DeviceKernel, loc: Locator) -> dict[str, Any]:
        args = {}
        for i, v in enumerate(dk.inputs):
            args[vector.in_param(i)] = loc[v]
        for j, v in enumerate(dk.outputs):
            args[vector.out_param(j)] = loc[v]
        return args

    # ---- one kernel plan --------------------------------------------------------------------------
    def compile_plan(self, plan: Any) -> list[DeviceKernel]:
        label = f"{self.name}_k{plan.group}"
        kg = build_kernel_graph(label, plan.nodes, plan.inputs, plan.outputs)
        if datamove.handles(kg):
            return [self.move_kernel(label, kg, plan)]
        return [self.vector_kernel(label, kg, plan)]

    def move_kernel(self, label: str, kg: KernelGraph, plan: Any) -> DeviceKernel:
        """A transpose, slice, broadcast, copy or format conversion (templates/datamove.py)."""
        try:
            move = datamove.prepare(label, kg, self.chip, self.options.buffer_num,
                                    self.options.cores or self.chip.aiv_cores)
        except datamove.UnsupportedMove as e:
            raise _unsupported(kg, label, str(e)) from None
        if not move.candidates:
            raise _unsupported(kg, label, "no tile of this data move fits the chip's UB")
        dims_, nominal = scoring_dims(move.symbols)
        try:
            chosen = choose(move.candidates, move.build, self.chip, dims_, self.options.sync, nominal)
        except NoLegalTiling as e:
            raise _unsupported(kg, label, str(e)) from None
        return self._finish(label, move.template, chosen, kg, plan, None)

    def copy_kernel(self, src: Value, dst: Value, label: str) -> DeviceKernel:
        """A kernel that writes `src` (a branch input or constant) into the If output `dst`."""
        kg = build_kernel_graph(label, [], [src], [src])
        return self.vector_kernel(label, kg, None, outputs=[dst])

    def vector_kernel(self, label: str, kg: KernelGraph, plan: Any, outputs: list[Value] | None = None) -> DeviceKernel:
        shape = kinds.classify(kg)
        if shape.kind not in ("pointwise", "row"):
            raise _unsupported(kg, label, f"a {shape.kind} reduction has no template yet")
        chosen: TilingChoice | None = None
        errors: list[str] = []
        modes = ("rows",) if shape.reduce_rows is not None else ("rows", "chunks")
        candidates, analyses = [], {}
        for mode in modes:
            try:
                vk = vector.analyze(label, kg, shape.reduce_rows, shape.k, mode)
            except UnsupportedDomain as e:
                errors.append(str(e))
                continue
            analyses[mode] = vk
            candidates += vector.tilings(vk, self.chip, self.options.buffer_num,
                                         self.options.cores or self.chip.aiv_cores)
        if not candidates:
            raise _unsupported(kg, label, "; ".join(errors) or "no tile of this kernel fits the chip's UB")
        syms = sorted({s for vk in analyses.values() for d in vk.domain.shape for s in _syms(d)})
        dims, nominal = scoring_dims(syms)
        try:
            chosen = choose(candidates, lambda t: vector.schedule(analyses[t.mode], t, self.chip), self.chip, dims,
                            self.options.sync, nominal)
        except NoLegalTiling as e:
            raise _unsupported(kg, label, str(e)) from None
        return self._finish(label, "vector", chosen, kg, plan, outputs)

    def _finish(self, label: str, template: str, chosen: TilingChoice, kg: KernelGraph, plan: Any,
                outputs: list[Value] | None) -> DeviceKernel:
        sched = chosen.chosen.schedule
        assert sched is not None and chosen.chosen.sync is not None
        program = emit(sched, chosen.chosen.sync, self.chip)
        dk = DeviceKernel(len(self.kernels), label, template, sched, chosen, chosen.chosen.sync, program,
                          list(kg.inputs), list(outputs if outputs is not None else kg.outputs), plan)
        self.kernels.append(dk)
        return dk


def _syms(d: Any) -> set[str]:
    return set(sy.free_symbols(d))


def _is_control(plan: Any) -> bool:
    return plan.anchor == "If"


def _unsupported(kg: KernelGraph, label: str, why: str) -> CompileError:
    node = next((n for n in kg.nodes if n.loc is not None), kg.nodes[0] if kg.nodes else None)
    op = node.op if node is not None else "copy"
    return no_lowering(op, label, node.loc if node is not None else None, why)


def generate(graph: Graph, plans: Sequence[Any], memory_plan: Any, chip: Any, options: CodegenOptions,
             name: str) -> DeviceModule:
    """Tile programs and the launch plan for an optimised graph (see the module docstring)."""
    return _Generator(graph, plans, memory_plan, chip, options, name).run()
