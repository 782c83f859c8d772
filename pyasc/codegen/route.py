"""Routing: which template lowers each kernel plan, as one `Job` per device kernel to launch.

The rules, in order (first match wins; a multi-output plan (`ge.horizontal`) is routed by `horizontal_plan`:
one launch of its members' jobs, each routed by these rules):
1. every output is empty whatever the launch sizes: nothing to launch;
2. an input is empty and the outputs are static: the results are constants (a reduction over nothing is its
   identity), computed now and written by vector fill kernels;
3. a plan anchored on an op some template lowers whole (`templates.TEMPLATE_OPS`): that template, when it
   takes the kernel (`Template.handles`); an attention in one launch or, when the cost model says so, with
   its keys split over the cores and a combine launch (`decode`); a matmul plan is planned by `matmul_plan`
   into its launches (vector casts and transposes of the operands, then one mixed launch of the cube and its
   epilogue when `ge.mixed` marked it and the mixed template tiles it, else the cube kernel and a vector
   epilogue);
4. otherwise by the plan's kind (`BY_KIND`): pointwise and row kernels to the vector template, column
   reductions to the column template.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import CompileError
from ..ge.plan import KernelKind, KernelPlan, KernelStructure
from ..ir import Graph, Value, interpret
from ..target import Chip
from .domain import dims
from .kernel_graph import KernelGraph, build_kernel_graph
from .lowering import no_lowering
from . import blocked, conv_plan, decode, horizontal_plan, matmul_plan
from .templates import mixed_prologue
from .template import Checked, Job, Unsupported
from .templates import TEMPLATES, template_of_op
from .templates.mixed import MixedMatmul


def _vector_job(label: str, kg: KernelGraph, st: KernelStructure, plan: KernelPlan | None) -> list[Job]:
    return [kernel_job("vector", label, kg, plan)]


def _row_job(label: str, kg: KernelGraph, st: KernelStructure, plan: KernelPlan | None) -> list[Job]:
    return [kernel_job("vector", label, kg, plan, rows=dims(st.rows), k=st.k)]


def _column_job(label: str, kg: KernelGraph, st: KernelStructure, plan: KernelPlan | None) -> list[Job]:
    return [kernel_job("column", label, kg, plan, rows=st.rows, reduced=tuple(st.reduced_axes))]


def _whole_op_job(label: str, kg: KernelGraph, st: KernelStructure, plan: KernelPlan | None) -> list[Job]:
    """An opaque op (attention) has no lowering but its template's: Unsupported when none takes it (GE asks the
    capacity function first, which says so, and lowers the op's decomposition instead)."""
    whole = template_of_op(st.anchor.op)
    if whole is None or (whole.handles is not None and not whole.handles(kg)):
        raise Unsupported(f"no template lowers {st.anchor.op} whole")
    return [kernel_job(whole.name, label, kg, plan)]


#: plan kind -> the jobs of a kernel no template lowers whole (fusion's capacity asks the same, without a plan)
BY_KIND: dict[KernelKind, Callable[[str, KernelGraph, KernelStructure, KernelPlan | None], list[Job]]] = {
    KernelKind.ELEMENTWISE: _vector_job,
    KernelKind.ROW_REDUCE: _row_job,
    KernelKind.COLUMN_REDUCE: _column_job,
    KernelKind.OPAQUE: _whole_op_job,
}


def route(label: str, plan: KernelPlan, chip: Chip, buffer_num: int = 2, mixed: bool | None = None,
          cores: int = 0, prologue_apart: bool = False) -> list[Job]:
    """The device kernels of one kernel plan (see the module docstring); `mixed=False` keeps a matmul and its
    epilogue apart whatever the plan says; `cores` is the kernel's cap on the cores of a type (0: all);
    `prologue_apart` runs a matmul plan's A producer as a launch of its own before the mixed launch (the
    alternative the generator prices, `generate.compile_plan`)."""
    kg = build_kernel_graph(label, plan.nodes, plan.inputs, plan.outputs)
    if all(any(d == 0 for d in v.type.shape) for v in kg.outputs):
        return []
    if any(v.type.numel == 0 for v in kg.inputs) and all(v.type.is_static for v in kg.outputs):
        return fill_jobs(label, kg, plan)
    if plan.horizontal:
        return horizontal_plan.horizontal_jobs(
            label, plan, chip, lambda lab, p: route(lab, p, chip, buffer_num, plan.mixed if mixed is None else mixed,
                                                    cores, prologue_apart))
    whole = template_of_op(plan.anchor)
    if whole is TEMPLATES["matmul"]:
        return matmul_jobs(label, plan, chip, buffer_num, plan.mixed if mixed is None else mixed, prologue_apart)
    if whole is TEMPLATES["conv"]:
        return conv_jobs(label, plan, chip, buffer_num, plan.mixed if mixed is None else mixed)
    if whole is TEMPLATES["attention"] and whole.handles(kg):
        return decode.attention_jobs(label, kg, plan, chip, buffer_num, cores)
    if whole is not None and whole.handles is not None and whole.handles(kg):
        return [kernel_job(whole.name, label, kg, plan)]
    if plan.kind is KernelKind.ELEMENTWISE and blocked.is_blocked(kg):
        kg = blocked.storage_view(kg)
    by_kind = BY_KIND.get(plan.kind)
    if by_kind is None:
        raise unsupported(kg, label, f"a {plan.kind.value} kernel has no template yet")
    try:
        return by_kind(label, kg, plan.structure, plan)
    except Unsupported as e:
        raise unsupported(kg, label, str(e)) from None


def kernel_job(template: str, label: str, kg: KernelGraph, plan: KernelPlan | None,
               outputs: list[Value] | None = None, **options: Any) -> Job:
    """A job lowering a kernel graph; a failure names its first located node."""
    op, loc = _first_located(kg)
    return Job(template, label, kg, list(kg.inputs), list(outputs if outputs is not None else kg.outputs), plan,
               dict(options), op, loc)


def matmul_jobs(label: str, plan: KernelPlan, chip: Chip, buffer_num: int, mixed: bool,
                prologue_apart: bool = False) -> list[Job]:
    """One mixed launch of the cube and its epilogue when the plan is marked for one (`ge.mixed`) and the mixed
    template can tile it; else vector casts of the operands (if any), transposes, the cube kernel and a vector
    launch of the epilogue (if any), the first job's notes saying why. A plan's A producer (`KernelPlan.prologue`)
    runs in the mixed launch before the cube (templates/mixed_prologue.py), else (`prologue_apart`, or when the
    launch cannot take it: the notes say why) as a vector launch of its own first."""
    where = {"op": plan.anchor, "loc": plan.anchor_node.loc}
    why = ""
    if mixed:
        r = _planned(matmul_plan.route, label, plan, mixed=True, prologue_inside=not prologue_apart)
        apart = "" if prologue_apart else _prologue_refusal(r, plan)
        if apart:   # A's producer a launch of its own, the rest as without one
            jobs = matmul_jobs(label, plan, chip, buffer_num, mixed, prologue_apart=True)
            jobs[0].options.setdefault("notes", []).append(apart)
            return jobs
        if r.epilogue is not None:
            e = r.epilogue
            keep = r.result in plan.outputs   # the product is a result of the plan too
            pro = None if r.prologue is None or prologue_apart else mixed_prologue.Prologue(
                r.prologue, _rows_of(plan.prologue), plan.prologue.k if plan.prologue.kind is KernelKind.ROW_REDUCE
                else 0)
            inputs = list(r.operands) + list(e.inputs[1:])
            if pro is not None:   # the launch reads the prologue's inputs; A itself is its own workspace
                inputs = [pro.kg.inputs[0]] + inputs[1:] + list(pro.kg.inputs[1:])
            job = Job("mixed", label, MixedMatmul(label, r.cube, e, keep, pro), inputs,
                      [r.result] * keep + list(e.outputs), plan,
                      {"scratch": [v for v in r.scratch if v is not r.result]}, **where)
            why = _mixed_refusal(job, chip, buffer_num)
            if why and pro is not None:   # the mixed launch without A's producer may still tile
                jobs = matmul_jobs(label, plan, chip, buffer_num, mixed, prologue_apart=True)
                jobs[0].options.setdefault("notes", []).append(f"A's producer as a launch of its own: {why}")
                return jobs
            if not why:
                job.options["notes"] = ["one mixed launch: the product reaches the vector cores through an "
                                        "L2-resident workspace tile (no second launch, no HBM round trip)"]
                if pro is not None:
                    job.options["notes"].append(mixed_prologue.NOTE)
                return (_prologue_jobs(r, plan, where) if pro is None else []) + _pre_jobs(r, plan, where) + [job]
    r = _matmul_route(label, plan, mixed=False)
    jobs = _prologue_jobs(r, plan, where) + _pre_jobs(r, plan, where)
    jobs.append(Job("matmul", label, r.cube, list(r.operands), [r.result], plan, {"scratch": list(r.scratch)},
                    **where))
    if why:
        jobs[-1].options["notes"] = [f"not a mixed launch: {why}"]
    if r.epilogue is not None:
        e = r.epilogue
        jobs.append(Job("vector", e.graph.name, e, list(e.inputs), list(e.outputs), plan, {}, **where))
    return jobs


def _matmul_route(label: str, plan: KernelPlan, mixed: bool) -> matmul_plan.MatmulRoute:
    return _planned(matmul_plan.route, label, plan, mixed=mixed)


def _planned(planner: Callable[..., Any], label: str, plan: KernelPlan, **options: Any) -> Any:
    """A cube plan's route (`matmul_plan`, `conv_plan`); what it cannot lower is a located error."""
    try:
        return planner(label, plan, **options)
    except Unsupported as e:
        raise no_lowering(plan.anchor, label, plan.anchor_node.loc, str(e)) from None


def conv_jobs(label: str, plan: KernelPlan, chip: Chip, buffer_num: int, mixed: bool) -> list[Job]:
    """The weights in the cube's layout (and the conv's float32 bias), the cube kernel and the conversions at
    the conv region's edges (`conv_edge_fold`): one mixed launch (`conv_launch`) when the plan is marked for
    one and it tiles, else a launch each (the notes say why)."""
    r = _planned(conv_plan.route, label, plan, chip=chip)
    where = {"op": plan.anchor, "loc": plan.anchor_node.loc}
    why = ""
    if mixed:
        job = Job("conv_launch", label, conv_plan.launch(label, r), r.launch_inputs, [r.result], plan, {}, **where)
        why = _mixed_refusal(job, chip, buffer_num)
        if not why:
            return [job]
    jobs = []
    if r.edge_in is not None:
        jobs.append(Job("conv_edge", r.edge_in.name, r.edge_in, [r.x], [r.map], plan, {}, **where))
    jobs.append(Job("conv_weights", r.weights.name, r.weights, r.weight_inputs, r.weight_outputs, plan, {}, **where))
    jobs.append(Job("conv", label, r.cube, r.operands, [r.cube_result], plan, {"scratch": list(r.scratch)}, **where))
    if why:
        edges = " and its edge conversions" if r.edge_in is not None or r.edge_out is not None else ""
        jobs[-1].options["notes"] = [f"not one launch with its weight conversion{edges}: {why}"]
    if r.edge_out is not None:
        jobs.append(Job("conv_edge", r.edge_out.name, r.edge_out, r.edge_out_inputs, [r.result], plan, {}, **where))
    return jobs


def _prologue_refusal(r: matmul_plan.MatmulRoute, plan: KernelPlan) -> str:
    """Why the route's prologue (the plan's A producer) cannot share the mixed launch, or ""."""
    if r.prologue is None:
        return ""
    if r.epilogue is None:
        return "the product has no vector epilogue (the cube runs alone), so its A producer runs as a launch of its own"
    if r.operands[0] != plan.anchor_node.inputs[0]:
        return "A needs a cast or a transpose before the cube, so its producer runs as a launch of its own"
    return ""


def _rows_of(st: KernelStructure) -> tuple | None:
    return dims(st.rows) if st.kind is KernelKind.ROW_REDUCE else None


def _prologue_jobs(r: matmul_plan.MatmulRoute, plan: KernelPlan, where: dict) -> list[Job]:
    """The plan's A producer as a vector launch of its own (when it does not share the cube's launch)."""
    if r.prologue is None:
        return []
    kg, st = r.prologue, plan.prologue
    options = {"rows": _rows_of(st), "k": st.k} if st.kind is KernelKind.ROW_REDUCE else {}
    return [Job("vector", kg.graph.name, kg, list(kg.inputs), list(kg.outputs), plan, options, **where)]


def _pre_jobs(r: matmul_plan.MatmulRoute, plan: KernelPlan, where: dict) -> list[Job]:
    """The vector casts and transposes the cube's operands need first."""
    jobs = [Job("vector", kg.graph.name, kg, list(kg.inputs), list(kg.outputs), plan, {}, **where) for kg in r.casts]
    return jobs + [Job("transpose", t.op.name, t.op, [t.src], [t.dst], plan, {}, **where) for t in r.transposes]


def _mixed_refusal(job: Job, chip: Chip, buffer_num: int) -> str:
    """Why the job's mixed template cannot take it (its analysis refuses it, or no tiling fits), or ""."""
    t = TEMPLATES[job.template]
    try:
        analyses = t.analyze(job, chip)
    except Unsupported as e:
        return str(e)
    tilings = [t.tilings(a, chip, buffer_num, chip.aic_cores) for a in analyses]
    if not any(tilings):
        return "no tiling of the vector side fits the UB"
    job.checked = Checked(chip, buffer_num, chip.aic_cores, analyses, tilings)   # (the driver's to reuse)
    return ""


def fill_jobs(label: str, kg: KernelGraph, plan: KernelPlan) -> list[Job]:
    """A kernel reading a zero-size input computes constants: they are computed now and written by fill
    kernels (an empty output needs no launch at all)."""
    values = interpret(kg.graph, [np.zeros(tuple(int(d) for d in v.type.shape), v.type.dtype) for v in kg.inputs])
    out = []
    for j, (v, arr) in enumerate(zip(kg.outputs, values)):
        if arr.size == 0:
            continue
        flat = np.asarray(arr).reshape(-1)
        if not (flat == flat[0]).all() and not np.isnan(flat).all():
            raise unsupported(kg, label, "a kernel of empty inputs with a non-uniform result")
        out.append(kernel_job("vector", f"{label}_fill{j}", fill_graph(f"{label}_fill{j}", v, flat[0].item()), plan))
    return out


def fill_graph(name: str, dst: Value, value: Any) -> KernelGraph:
    """A kernel graph writing `value` into every element of `dst` (it reads nothing)."""
    g = Graph(name)
    g.set_outputs([g.add("full", [], {"shape": tuple(dst.type.shape), "fill_value": value,
                                     "dtype": dst.type.dtype}).out()])
    return KernelGraph(g, [], [dst])


def _first_located(kg: KernelGraph) -> tuple[str, Any]:
    node = next((n for n in kg.nodes if n.loc is not None), kg.nodes[0] if kg.nodes else None)
    return (node.op, node.loc) if node is not None else ("copy", None)


def unsupported(kg: KernelGraph, label: str, why: str) -> CompileError:
    op, loc = _first_located(kg)
    return no_lowering(op, label, loc, why)
