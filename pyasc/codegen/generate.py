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

import numpy as np

from simulator import Program

from .. import symbolic as sy
from ..errors import CompileError
from ..ge.plan import KernelKind, KernelPlan
from ..ir import Graph, Node, Value, interpret
from .domain import UnsupportedDomain, dim, dims
from .loop_step import loop_step
from .emit import emit
from .kernel_graph import KernelGraph, build_kernel_graph
from . import matmul_plan
from .launch import WORKSPACE, IfStep, Launch, LaunchPlan, Loc, Locator, Step, WorkspaceLayout, branch_locations, \
    dim_symbols, root_locations, value_nbytes
from .lowering import no_lowering
from .schedule import TileSchedule
from .sync import SyncPlan
from .templates import column, datamove, matmul, multipass, transpose2d, update, vector, vector_kernel
from .tiling import NoLegalTiling, TilingChoice, TilingReport, choose, scoring_dims


@dataclass(frozen=True)
class CodegenOptions:
    buffer_num: int = 2          # a cap: 1 forces serial tiles
    cores: int | None = None     # cap on cores used
    sync: str = "flags"          # "flags" or "barrier" (debug)


@dataclass
class DeviceKernel:
    """One launched device kernel: what it computes, how it was tiled, its program and how it is launched.

    Plain data (the disk cache stores and restores it): the program, the tiling fields and block count as
    expressions over the dims, the readable schedule and sync summary, the tiling report. `schedule` is the
    full `TileSchedule` in the process that generated it (None when loaded from the disk cache).
    """

    index: int
    name: str
    template: str
    core_type: str
    program: Program
    fields: dict[str, Any]       # tiling field -> expression over dims
    blocks: Any                  # cores to launch, over dims
    tiling: TilingReport
    schedule_text: str
    sync_summary: str
    notes: list[str]
    inputs: list[Value]          # graph values bound to in<i>
    outputs: list[Value]         # graph values bound to out<j>
    plan: Any = None             # the optimiser's KernelPlan (None for a copy the launch plan added)
    scratch: dict[str, Loc] = field(default_factory=dict)   # GM scratch parameter -> its workspace area
    schedule: TileSchedule | None = field(default=None, repr=False, compare=False, metadata={"persist": False})

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
            out.extend("  " + line for line in k.schedule_text.splitlines())
            out.append("  " + k.sync_summary)
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
        self.scratch_values: dict[Value, Loc] = {}
        self.host_exprs: list[Any] = []  # expressions only the host code evaluates (If predicates)

    def run(self) -> DeviceModule:
        produced = self._produced(self.graph)
        loc, inputs, sources = root_locations(self.graph, self.memory_plan, self.layout, self.consts, produced)
        self.forward_results(loc, produced)
        steps = self.scope(self.graph, loc, self.memory_plan)
        outputs = [what if kind == "buffer" else None for kind, what in sources]
        exprs: list[Any] = [self.layout.end, *self.host_exprs]
        for k in self.kernels:
            exprs.extend(k.fields.values())
            exprs.append(k.blocks)
        exprs.extend(l.nbytes for l in inputs)
        plan = LaunchPlan(steps, inputs, outputs, sources, self.consts, self.layout.end, dim_symbols(exprs))
        shapes = [dims(v.type.shape) for v in self.graph.outputs]
        return DeviceModule(self.kernels, plan, shapes, [v.type.dtype for v in self.graph.outputs])

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

    # ---- one kernel plan --------------------------------------------------------------------------
    def compile_plan(self, plan: KernelPlan) -> list[DeviceKernel]:
        label = f"{self.name}_k{plan.group}"
        kg = build_kernel_graph(label, plan.nodes, plan.inputs, plan.outputs)
        if all(any(d == 0 for d in v.type.shape) for v in kg.outputs):
            return []  # every output is empty whatever the launch sizes (a static 0 beside symbolic dims)
        if any(v.type.numel == 0 for v in kg.inputs) and all(v.type.is_static for v in kg.outputs):
            return self.empty_input_kernels(label, kg, plan)
        if datamove.handles(kg):
            return [self.move_kernel(label, kg, plan)]
        if update.handles(kg):
            return [self.update_kernel(label, kg, plan)]
        kind = plan.kind
        if kind == KernelKind.ELEMENTWISE:
            return [self.vector_kernel(label, kg, plan)]
        if kind == KernelKind.ROW_REDUCE:
            return [self.vector_kernel(label, kg, plan, rows=dims(plan.structure.rows), k=plan.structure.k)]
        if kind == KernelKind.COLUMN_REDUCE:
            return [self.column_kernel(label, kg, plan)]
        if kind == KernelKind.MATMUL:
            return self.matmul_kernels(label, plan)
        raise _unsupported(kg, label, f"a {kind.value} kernel has no template yet")

    def column_kernel(self, label: str, kg: KernelGraph, plan: KernelPlan) -> DeviceKernel:
        try:
            ck = column.analyze(label, kg, plan.structure.rows, tuple(plan.structure.reduced_axes))
        except UnsupportedDomain as e:
            raise _unsupported(kg, label, str(e)) from None
        cands = column.tilings(ck, self.chip, self.options.buffer_num, self.options.cores or self.chip.aiv_cores)
        scoring, nominal = scoring_dims(sorted({s for d in ck.domain.shape for s in _syms(d)} | _input_syms(kg)))
        try:
            chosen = choose(cands, lambda t: column.schedule(ck, t, self.chip), self.chip, scoring,
                            self.options.sync, nominal)
        except NoLegalTiling as e:
            raise _unsupported(kg, label, str(e)) from None
        return self._finish(label, "column", chosen, kg, plan, None)

    def matmul_kernels(self, label: str, plan: KernelPlan) -> list[DeviceKernel]:
        """Vector casts of the operands (if any), the cube kernel, a vector epilogue (if any): `matmul_plan`."""
        try:
            r = matmul_plan.route(label, plan)
        except UnsupportedDomain as e:
            raise no_lowering(plan.anchor, label, plan.anchor_node.loc, str(e)) from None
        for v in r.scratch:
            self.scratch_value(v)
        out = [self.vector_kernel(kg.graph.name, kg, plan) for kg in r.casts]
        out += [self.transpose_kernel(t, plan) for t in r.transposes]
        mk = r.cube.for_chip(self.chip)
        syms = sorted(set().union(*(sy.free_symbols(x) for x in (mk.M, mk.N, mk.K, mk.batch_count))))
        scoring, nominal = scoring_dims(syms)
        cores = min(self.options.cores or self.chip.aic_cores, self.chip.aic_cores)
        cands = matmul.tilings(mk, self.chip, self.options.buffer_num, cores, scoring)
        try:
            chosen = choose(cands, lambda t: matmul.schedule(mk, t, self.chip), self.chip, scoring,
                            self.options.sync, nominal)
        except NoLegalTiling as e:
            raise no_lowering(plan.anchor, label, plan.anchor_node.loc, str(e)) from None
        out.append(self._finish(label, "matmul", chosen, None, plan, [r.result], inputs=r.operands))
        if r.epilogue is not None:
            out.append(self.vector_kernel(r.epilogue.graph.name, r.epilogue, plan))
        return out

    def transpose_kernel(self, pre: matmul_plan.PreTranspose, plan: KernelPlan) -> DeviceKernel:
        tk = pre.op
        scoring, nominal = scoring_dims(sorted(set().union(*(sy.free_symbols(x) for x in (tk.batch, tk.R, tk.C)))))
        cands = transpose2d.tilings(tk, self.chip, self.options.buffer_num, self.options.cores or self.chip.aiv_cores)
        try:
            chosen = choose(cands, lambda t: transpose2d.schedule(tk, t, self.chip), self.chip, scoring,
                            self.options.sync, nominal)
        except NoLegalTiling as e:
            raise no_lowering(plan.anchor, tk.name, plan.anchor_node.loc, str(e)) from None
        return self._finish(tk.name, "transpose", chosen, None, plan, [pre.dst], inputs=[pre.src])

    def empty_input_kernels(self, label: str, kg: KernelGraph, plan: KernelPlan) -> list[DeviceKernel]:
        """A kernel reading a zero-size input computes constants (a reduction over nothing is its identity):
        they are computed now and written by fill kernels (an empty output needs no launch at all)."""
        values = interpret(kg.graph, [np.zeros(dims_static(v), v.type.dtype) for v in kg.inputs])
        out = []
        for j, (v, arr) in enumerate(zip(kg.outputs, values)):
            if arr.size == 0:
                continue
            flat = np.asarray(arr).reshape(-1)
            if not (flat == flat[0]).all() and not np.isnan(flat).all():
                raise _unsupported(kg, label, "a kernel of empty inputs with a non-uniform result")
            g = Graph(f"{label}_fill{j}")
            g.set_outputs([g.add("full", [], {"shape": tuple(arr.shape), "fill_value": flat[0].item(),
                                             "dtype": v.type.dtype}).out()])
            fill = KernelGraph(g, [], [v])
            out.append(self.vector_kernel(f"{label}_fill{j}", fill, plan))
        return out

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

    def update_kernel(self, label: str, kg: KernelGraph, plan: Any) -> DeviceKernel:
        """A slice write `x` with a region replaced by `v` (templates/update.py)."""
        try:
            uk = update.analyze(label, kg, self.chip)
        except datamove.UnsupportedMove as e:
            raise _unsupported(kg, label, str(e)) from None
        cands = update.tilings(uk, self.chip, self.options.buffer_num, self.options.cores or self.chip.aiv_cores)
        try:
            chosen = choose(cands, lambda t: update.schedule(uk, t, self.chip), self.chip, {}, self.options.sync)
        except NoLegalTiling as e:
            raise _unsupported(kg, label, str(e)) from None
        return self._finish(label, "update", chosen, kg, plan, None)

    def copy_kernel(self, src: Value, dst: Value, label: str) -> DeviceKernel:
        """A kernel that writes `src` (a branch input or constant) into the If output `dst`."""
        if src.node.op == "Const" and src.type.numel == 1:
            # a one-element constant is an immediate, not a tile a kernel can store: fill the output with it
            g = Graph(f"{label}_fill")
            value = np.asarray(src.node.attrs["value"]).reshape(-1)[0].item()
            g.set_outputs([g.add("full", [], {"shape": tuple(dst.type.shape), "fill_value": value,
                                             "dtype": dst.type.dtype}).out()])
            return self.vector_kernel(label, KernelGraph(g, [], [dst]), None, outputs=[dst])
        if src.type.numel == 1 and src.type.is_static:
            # a one-element input is read as a scalar operand, which no kernel stores as it is: copy it through
            # an op whose result is a tile
            g = Graph(f"{label}_copy")
            g.set_outputs([g.add("cast", [g.add_input(src.type, name=src.node.name)], {"dtype": dst.type.dtype}).out()])
            return self.vector_kernel(label, KernelGraph(g, [src], [dst]), None, outputs=[dst])
        kg = build_kernel_graph(label, [], [src], [src])
        return self.vector_kernel(label, kg, None, outputs=[dst])

    def vector_kernel(self, label: str, kg: KernelGraph, plan: Any, outputs: list[Value] | None = None,
                      rows: tuple | None = None, k: int = 0) -> DeviceKernel:
        """A pointwise kernel (rows None) or a row reduction of `rows` over its last k axes."""
        errors: list[str] = []
        modes = ("rows", "multipass") if rows is not None else ("rows", "chunks")
        candidates, analyses = [], {}
        cores = self.options.cores or self.chip.aiv_cores
        for mode in modes:
            try:
                vk = vector_kernel.analyze(label, kg, rows, k, mode)
            except UnsupportedDomain as e:
                errors.append(str(e))
                continue
            analyses[mode] = vk
            tiler = multipass.tilings if mode == "multipass" else vector.tilings
            candidates += tiler(vk, self.chip, self.options.buffer_num, cores)
        if not candidates:
            raise _unsupported(kg, label, "; ".join(errors) or "no tile of this kernel fits the chip's UB")
        # an operand's own names too: a stride may use one the domain spells differently (broadcast names)
        syms = {s for vk in analyses.values() for d in vk.domain.shape for s in _syms(d)} | _input_syms(kg)
        scoring, nominal = scoring_dims(sorted(syms))
        try:
            chosen = choose(candidates, lambda t: _SCHEDULES[t.mode](analyses[t.mode], t, self.chip), self.chip,
                            scoring, self.options.sync, nominal)
        except NoLegalTiling as e:
            raise _unsupported(kg, label, str(e)) from None
        return self._finish(label, "vector", chosen, kg, plan, outputs)

    def _finish(self, label: str, template: str, chosen: TilingChoice, kg: KernelGraph | None, plan: Any,
                outputs: list[Value] | None, inputs: list[Value] | None = None) -> DeviceKernel:
        sched = chosen.chosen.schedule
        assert sched is not None and chosen.chosen.sync is not None
        program = emit(sched, chosen.chosen.sync, self.chip)
        scratch = {p: Loc(WORKSPACE, self.layout.take(n), n) for p, n in sched.scratch.items()}
        dk = DeviceKernel(len(self.kernels), label, template, sched.core_type, program, dict(sched.fields),
                          sched.blocks, chosen.report(), sched.text(), chosen.chosen.sync.summary(),
                          list(sched.notes), list(inputs if inputs is not None else kg.inputs),
                          list(outputs if outputs is not None else kg.outputs), plan, scratch, sched)
        self.kernels.append(dk)
        return dk


def dims_static(v: Value) -> tuple[int, ...]:
    return tuple(int(d) for d in v.type.shape)


def _syms(d: Any) -> set[str]:
    return set(sy.free_symbols(d))


def _input_syms(kg: KernelGraph) -> set[str]:
    """Symbols of the kernel's input dims: an input broadcast into the domain may name its dims by other
    symbols than the domain's (they are checked equal at launch), and its strides are fields scoring evaluates."""
    ins = {s for n in kg.graph.nodes if n.op == "Data" for d in dims(n.outputs[0].shape) for s in _syms(d)}
    return ins | {s for v in kg.outputs for d in dims(v.type.shape) for s in _syms(d)}


_SCHEDULES = {"rows": vector.schedule, "chunks": vector.schedule, "multipass": multipass.schedule}


def _is_control(plan: Any) -> bool:
    return plan.kind == KernelKind.CONTROL


def _unsupported(kg: KernelGraph, label: str, why: str) -> CompileError:
    node = next((n for n in kg.nodes if n.loc is not None), kg.nodes[0] if kg.nodes else None)
    op = node.op if node is not None else "copy"
    return no_lowering(op, label, node.loc if node is not None else None, why)


def generate(graph: Graph, plans: Sequence[Any], memory_plan: Any, chip: Any, options: CodegenOptions,
             name: str) -> DeviceModule:
    """Tile programs and the launch plan for an optimised graph (see the module docstring)."""
    return _Generator(graph, plans, memory_plan, chip, options, name).run()
