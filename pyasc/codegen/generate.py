"""Code generation for one optimised graph: every kernel plan becomes tile programs, plus the launch plan.

For each kernel plan, in the optimiser's schedule order: `route` says which templates lower it (one `Job`
per device kernel), `lower` runs each job through the codegen stages (analyze, tile, sync, emit; on the pass
manager), and the launch plan (`launch`) says where each value lives and runs If branches and Loops on the
host. What codegen produces is plain data (`device.py`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import CompileError
from ..ge.plan import KernelKind, KernelPlan
from ..ir import Graph, Node, Value
from ..target import Chip
from .device import CodegenOptions, DeviceKernel, DeviceModule  # noqa: F401  (the records codegen produces)
from .domain import dim, dims
from .kernel_graph import KernelGraph, build_kernel_graph
from .launch import WORKSPACE, IfStep, Launch, LaunchPlan, Loc, Locator, SourceKind, Step, WorkspaceLayout, branch_locations, \
    dim_symbols, root_locations, value_nbytes
from .loop_step import loop_step
from .lower import lower
from .route import fill_graph, kernel_job, route
from .stage_log import add_times, stage_line
from .template import Job
from .templates import datamove, vector_kernel
from .templates.mixed import MixedMatmul


class _Generator:
    def __init__(self, graph: Graph, plans: Sequence[Any], memory_plan: Any, chip: Chip, options: CodegenOptions,
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
        self.scratch_values: dict[Value, Loc] = {}
        self.host_exprs: list[Any] = []  # expressions only the host code evaluates (If predicates)
        self.stage_times: dict[str, float] = {}   # seconds per codegen stage over all kernels

    def run(self) -> DeviceModule:
        produced = self._produced(self.graph)
        loc, inputs, sources = root_locations(self.graph, self.memory_plan, self.layout, self.consts, produced)
        self.forward_results(loc, produced)
        steps = self.scope(self.graph, loc, self.memory_plan)
        outputs = [src.value if src.kind is SourceKind.BUFFER else None for src in sources]
        exprs: list[Any] = [self.layout.end, *self.host_exprs]
        for k in self.kernels:
            exprs.extend(k.fields.values())
            exprs.append(k.blocks)
        exprs.extend(l.nbytes for l in inputs)
        plan = LaunchPlan(steps, inputs, outputs, sources, self.consts, self.layout.end, dim_symbols(exprs))
        shapes = [dims(v.type.shape) for v in self.graph.outputs]
        return DeviceModule(self.kernels, plan, shapes, [v.type.dtype for v in self.graph.outputs],
                            stage_times=self.stage_times)

    def _produced(self, graph: Graph) -> list[Value]:
        """Values the kernels of `graph` write: their outputs, and every output of an If (its branches
        write them all, read or not)."""
        out: list[Value] = []
        for p in self.plans:
            if p.graph is graph:
                out += [v for n in p.nodes for v in n.values] if _is_control(p) else p.outputs
        return out

    # ---- one graph scope ------------------------------------------------------------------------
    def scope(self, graph: Graph, loc: Locator, memory_plan: Any) -> list[Step]:
        steps: list[Step] = []
        own = [p for p in self.plans if p.graph is graph]   # the memory plan's steps
        for step, plan in enumerate(own):
            if _is_control(plan) and plan.nodes[0].op == "Loop":
                steps.append(loop_step(self, plan, loc, memory_plan))
            elif _is_control(plan):
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
                args = {vector_kernel.out_param(0): loc[node.values[j]]}
                if dk.inputs:  # a scalar constant is written without reading anything
                    args[vector_kernel.in_param(0)] = sub_loc[src]
                steps.append(Launch(dk.index, args))
            branches.append(steps)
        if cond.node.op == "DimValue":  # a shape predicate: the host evaluates it from the dims
            predicate = dim(cond.node.attrs["value"])
            self.host_exprs.append(predicate)
            return IfStep(None, cond.type.dtype, branches[0], branches[1], predicate)
        return IfStep(loc[cond], cond.type.dtype, branches[0], branches[1])

    def unsupported_loop(self, node: Node, why: str) -> CompileError:
        return CompileError(f"this runtime loop cannot be compiled: {why}", node.loc)

    def scratch_value(self, v: Value) -> Loc:
        """A workspace location for a value no memory plan placed because it exists only between the
        launches of one plan (a cast operand, a cube result its epilogue reads back): a new area in the
        workspace tail, used by every launch that reads or writes `v`."""
        if v not in self.scratch_values:
            n = value_nbytes(v)
            self.scratch_values[v] = Loc(WORKSPACE, self.layout.take(n), n)
        return self.scratch_values[v]

    def _where(self, v: Value, loc: Locator) -> Loc:
        return self.scratch_values[v] if v in self.scratch_values else loc[v]

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
            args[vector_kernel.in_param(i)] = self._where(v, loc)
        for j, v in enumerate(dk.outputs):
            args[vector_kernel.out_param(j)] = self._where(v, loc)
        args.update(dk.scratch)
        return args

    # ---- one kernel plan ----------------------------------------------------------------------------
    def compile_plan(self, plan: KernelPlan) -> list[DeviceKernel]:
        label = f"{self.name}_k{plan.group}"
        jobs = route(label, plan, self.chip, self.options.buffer_num, cores=self.options.cores or 0)
        try:
            lowered = [lower(job, self.chip, self.options) for job in jobs]
        except CompileError as e:
            if not any(job.template == "mixed" for job in jobs):
                raise
            # no tiling of the mixed launch is legal (its flags do not fit): the cube and its epilogue apart
            jobs = route(label, plan, self.chip, self.options.buffer_num, mixed=False, cores=self.options.cores or 0)
            jobs[0].options.setdefault("notes", []).append(f"not a mixed launch: {_first_reason(e)}")
            lowered = [lower(job, self.chip, self.options) for job in jobs]
        if plan.prologue is not None and any(job.template == "mixed" for job in jobs):
            jobs, lowered = self._priced_prologue(label, plan, jobs, lowered)
        for job in jobs:  # values that exist only between the launches of this plan (a cube result, a cast)
            for v in job.options.get("scratch", ()):
                self.scratch_value(v)
        return [self.record(job, *done) for job, done in zip(jobs, lowered)]

    def _priced_prologue(self, label: str, plan: KernelPlan, jobs: list[Job], lowered: list[Any]
                         ) -> tuple[list[Job], list[Any]]:
        """A matmul's A producer in its mixed launch (ahead of the cube) or as a launch of its own before it,
        whichever the cost model prices lower (the prologue's UB share can cost the epilogue its best tile);
        the first job's notes say which and why."""
        inside = any(isinstance(j.subject, MixedMatmul) and j.subject.prologue is not None for j in jobs)
        if not inside:
            return jobs, lowered
        alt = route(label, plan, self.chip, self.options.buffer_num, prologue_apart=True,
                    cores=self.options.cores or 0)
        try:
            alt_lowered = [lower(job, self.chip, self.options) for job in alt]
        except CompileError:
            return jobs, lowered
        here, apart = (sum(st.choice.score.cycles for st, _ in done) for done in (lowered, alt_lowered))
        if apart < here:
            alt[0].options.setdefault("notes", []).append(
                f"A's producer as a launch of its own: {apart:,.0f} cycles estimated, {here:,.0f} inside the "
                f"matmul's mixed launch")
            return alt, alt_lowered
        jobs[0].options.setdefault("notes", []).append(
            f"A's producer inside the mixed launch: {here:,.0f} cycles estimated, {apart:,.0f} as a launch of "
            f"its own")
        return jobs, lowered

    def copy_kernel(self, src: Value, dst: Value, label: str) -> DeviceKernel:
        """A kernel that writes `src` (a branch input or constant) into `dst`."""
        if src.node.op == "Const" and src.type.numel == 1:
            # a one-element constant is an immediate, not a tile a kernel can store: fill the output with it
            kg = fill_graph(f"{label}_fill", dst, np.asarray(src.node.attrs["value"]).reshape(-1)[0].item())
            return self.kernel(kernel_job("vector", label, kg, None))
        if src.type.numel == 1 and src.type.is_static:
            # a one-element input is read as a scalar operand, which no kernel stores as it is: copy it through
            # an op whose result is a tile
            g = Graph(f"{label}_copy")
            g.set_outputs([g.add("cast", [g.add_input(src.type, name=src.node.name)], {"dtype": dst.type.dtype}).out()])
            return self.kernel(kernel_job("vector", label, KernelGraph(g, [src], [dst]), None, outputs=[dst]))
        kg = build_kernel_graph(label, [], [src], [src])
        return self.kernel(kernel_job("vector", label, kg, None, outputs=[dst]))

    def kernel(self, job: Job) -> DeviceKernel:
        """Lower one job through the codegen stages and record the device kernel."""
        return self.record(job, *lower(job, self.chip, self.options))

    def record(self, job: Job, st: Any, ctx: Any) -> DeviceKernel:
        """The device kernel of a lowered job (its scratch areas taken from the workspace)."""
        chosen = st.choice.chosen
        sched = chosen.schedule
        scratch = {p: Loc(WORKSPACE, self.layout.take(n), n) for p, n in sched.scratch.items()}
        dk = DeviceKernel(len(self.kernels), job.label, job.template, sched.core_type, st.program, dict(sched.fields),
                          sched.blocks, st.choice.report(), sched.text(), chosen.sync.summary(), list(sched.notes),
                          list(job.inputs), list(job.outputs), job.plan, scratch, stage_line(ctx.log, times=False), sched)
        dk.notes[:0] = job.options.get("notes", [])
        self.kernels.append(dk)
        add_times(self.stage_times, ctx.log)
        return dk


def _first_reason(e: CompileError) -> str:
    """The reason of a no-lowering error, cut at its first candidate (the full list is in the tiling stage)."""
    text = str(e).split(": error: ", 1)[-1]
    return text if len(text) <= 160 else text[:157] + "..."


def _is_control(plan: Any) -> bool:
    return plan.kind == KernelKind.CONTROL


def generate(graph: Graph, plans: Sequence[Any], memory_plan: Any, chip: Chip, options: CodegenOptions,
             name: str) -> DeviceModule:
    """Tile programs and the launch plan for an optimised graph (see the module docstring)."""
    return _Generator(graph, plans, memory_plan, chip, options, name).run()
