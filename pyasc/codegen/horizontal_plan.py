"""How a multi-output plan (GE's `horizontal_fusion`: products of one A, or the same vector kernel on several
inputs) runs: one launch when each member alone would be one launch, of one template with a multi-output form
(templates/horizontal.py: `GROUPS`), or plain products followed by one mixed launch whose epilogue reads them
(`MIXED_GROUP`); else each member as it would run alone (the first job's notes say why). A member's result only
another member reads lives in workspace scratch. A plan's A producer (GE's `matmul_prologue`) runs in the mixed
part's launch, or, for plain products, on the vector cores before them in one launch (`PROLOGUE_GROUP`), else
as a vector launch of its own before them."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from ..ge.horizontal import has_consumer
from ..ge.plan import KernelKind, KernelPlan
from ..ir import Value
from ..target import Chip
from .domain import dims
from .kernel_graph import build_kernel_graph
from .template import Checked, Job, Unsupported
from .templates.horizontal import GROUPS, MATMUL_GROUP, MIXED_GROUP, PROLOGUE_GROUP, Horizontal, PrologueGroup
from .templates.mixed_prologue import NOTE, WSA, Prologue
from .templates.vector_kernel import in_param, out_param


def _template(parts: list[list[Job]]) -> tuple[str, str]:
    """(the multi-output template for the members' jobs, "") or ("", why there is none)."""
    if any(len(j) != 1 for j in parts):
        return "", "a member needs more than one launch of its own (a cast, a transpose, an epilogue launch)"
    names = [j[0].template for j in parts]
    if len(set(names)) == 1 and names[0] in GROUPS:
        return GROUPS[names[0]].name, ""
    if names[-1] == "mixed" and set(names[:-1]) == {"matmul"}:
        return MIXED_GROUP.name, ""
    return "", f"the members run as {', '.join(dict.fromkeys(names))} launches, which have no multi-output form"


def _refusal(parts: list[Job]) -> str:
    """Why the members' single jobs cannot share a launch, or ""."""
    def plain(p: Job) -> dict:
        return {k: v for k, v in p.options.items() if k not in ("notes", "scratch")}
    if any(plain(p) != plain(parts[0]) or p.options.get("scratch") for p in parts):
        return "the members' launches differ in their options or need workspace"
    return ""


def horizontal_jobs(label: str, plan: KernelPlan, chip: Chip, single: Callable[[str, KernelPlan], list[Job]]
                    ) -> list[Job]:
    """The launch of the plan's members (`single(label, plan)`: the jobs of one member alone, the fallback)."""
    if plan.prologue is not None and not has_consumer(plan):
        return _with_prologue(label, plan, chip, single)
    jobs = [single(f"{label}_{i}", m) for i, m in enumerate(_members(plan))]
    template, why = _template(jobs)
    why = why or _refusal([js[0] for js in jobs])
    if not why:
        job = _group_job(template, label, plan, [js[0] for js in jobs])
        try:
            job.checked = Checked(chip, 0, 0, _analyze(template, job, chip), [])
            return [job]
        except Unsupported as e:
            why = str(e)
    flat = _ordered([j for js in jobs for j in js])
    flat[0].options.setdefault("notes", []).append(f"not one multi-output launch: {why}")
    for j in flat:   # a member's result only another member reads: no memory plan placed it (GE's group kept it in)
        inside = [v for v in j.outputs if v not in plan.outputs and v not in j.options.get("scratch", ())]
        if inside:
            j.options["scratch"] = list(j.options.get("scratch", ())) + inside
    return flat


def _with_prologue(label: str, plan: KernelPlan, chip: Chip, single: Callable[[str, KernelPlan], list[Job]]
                   ) -> list[Job]:
    """Plain products and A's producer (`KernelPlan.prologue`): one launch of the vector cores computing A and
    the cube cores the products after a barrier (`PROLOGUE_GROUP`), else A's producer as a vector launch and
    the products as they would run without it."""
    own = {n for m in plan.horizontal for n in m.nodes}
    nodes = [n for n in plan.nodes if n not in own]
    a = plan.anchor_node.inputs[0]
    kg = build_kernel_graph(f"{label}_prologue", nodes, list(dict.fromkeys(
        v for n in nodes for v in n.inputs if v.node not in set(nodes))), [a])
    st = plan.prologue
    rows, k = (dims(st.rows), st.k) if st.kind is KernelKind.ROW_REDUCE else (None, 0)
    jobs = [single(f"{label}_{i}", m) for i, m in enumerate(plan.horizontal)]
    template, why = _template(jobs)
    why = why or _refusal([js[0] for js in jobs])
    group = None if why or template != MATMUL_GROUP.name else \
        _group_job(template, label, plan, [js[0] for js in jobs], {a: WSA}, lead=kg.inputs[:1])
    # the launch reads A's producer's first input, the products' B operands, then its producer's other inputs
    if group is not None and len(group.inputs) == 1 + len(jobs) and not set(group.inputs[1:]) & set(kg.inputs):
        parts = group.subject
        inputs = list(group.inputs) + list(kg.inputs[1:])
        job = Job(PROLOGUE_GROUP.name, label, PrologueGroup(label, Prologue(kg, rows, k), parts), inputs,
                  group.outputs, plan, {"notes": group.options["notes"] + [NOTE]}, op=plan.anchor,
                  loc=plan.anchor_node.loc)
        try:
            job.checked = Checked(chip, 0, 0, PROLOGUE_GROUP.analyze(job, chip), [])
            return [job]
        except Unsupported as e:
            why = str(e)
    options = {"rows": rows, "k": k} if rows is not None else {}
    pre = Job("vector", kg.graph.name, kg, list(kg.inputs), [a], plan, {**options, "scratch": [a]},
              op=plan.anchor, loc=plan.anchor_node.loc)
    pre.options["notes"] = [f"A's producer as a launch of its own: {why or 'the products cannot share a launch'}"]
    return [pre] + horizontal_jobs(label, replace(plan, prologue=None, nodes=[n for n in plan.nodes if n in own],
                                                  inputs=[a] + [v for v in plan.inputs if v not in kg.inputs]),
                                   chip, single)


def _members(plan: KernelPlan) -> list[KernelPlan]:
    """The members' plans; a plan's A producer (`KernelPlan.prologue`) goes to its last member, the mixed one."""
    members = list(plan.horizontal)
    if plan.prologue is not None:
        own = {n for m in members for n in m.nodes}
        last = members[-1]
        nodes = [n for n in plan.nodes if n not in own] + last.nodes
        inside = set(nodes)
        inputs = list(dict.fromkeys(v for n in nodes for v in n.inputs if v.node not in inside))
        members[-1] = replace(last, nodes=nodes, inputs=inputs, prologue=plan.prologue)
    return members


def _ordered(jobs: list[Job]) -> list[Job]:
    """The jobs with each one after the jobs writing what it reads (a member's A producer launched apart runs
    before the products reading A), else in their order."""
    out: list[Job] = []
    left = list(jobs)
    while left:
        written = {v for j in left for v in j.outputs}
        ready = next(j for j in left if not any(v in written and v not in j.outputs for v in j.inputs))
        out.append(ready)
        left.remove(ready)
    return out


def _analyze(template: str, job: Job, chip: Chip) -> list:
    t = MIXED_GROUP if template == MIXED_GROUP.name else next(g for g in GROUPS.values() if g.name == template)
    return t.analyze(job, chip)


def _group_job(template: str, label: str, plan: KernelPlan, parts: list[Job],
               internal: dict[Value, str] | None = None, lead: Sequence[Value] = ()) -> Job:
    """`internal`: values the parts read from the launch's workspace (A computed by a prologue of the launch);
    `lead`: the launch's first inputs (a prologue's), before the parts' own."""
    # A computed by the mixed part's prologue: the plain products read it from that launch's workspace
    pro = getattr(parts[-1].subject, "prologue", None)
    internal = dict(internal or {})
    if pro is not None:
        internal[pro.kg.outputs[0]] = WSA
    inputs: list[Value] = list(dict.fromkeys([*lead, *(v for p in parts for v in p.inputs if v not in internal)]))
    outputs: list[Value] = []
    params = []
    for p in parts:
        names = {in_param(i): internal.get(v) or in_param(inputs.index(v)) for i, v in enumerate(p.inputs)}
        names.update({out_param(j): out_param(len(outputs) + j) for j in range(len(p.outputs))})
        outputs += p.outputs
        params.append(names)
    kinds = "/".join(dict.fromkeys(p.template for p in parts))
    return Job(template, label, Horizontal(label, tuple(parts), tuple(params)), inputs, outputs, plan,
               {"notes": [f"one multi-output launch of {len(parts)} {kinds} kernels (ge.horizontal): no launch per "
                          "kernel, operands they share read once from HBM"] + ([NOTE] if pro is not None else []),
                "scratch": [v for v in outputs if v not in plan.outputs]},   # read only inside the launch
               op=plan.anchor, loc=plan.anchor_node.loc)
