"""How a multi-output plan (GE's `horizontal_fusion`: products of one A, or the same vector kernel on several
inputs) runs: one launch of the multi-output template over its members' template (templates/horizontal.py) when
each member alone would be one launch of the same template with no workspace of its own, else each member as it
would run alone (the first job's notes say why)."""
from __future__ import annotations

from typing import Callable

from ..ge.plan import KernelPlan
from ..ir import Value
from ..target import Chip
from .template import Checked, Job, Unsupported
from .templates.horizontal import GROUPS, Horizontal
from .templates.vector_kernel import in_param, out_param


def _refusal(jobs: list[list[Job]]) -> str:
    """Why the members' jobs cannot be the parts of one launch, or ""."""
    if any(len(j) != 1 for j in jobs):
        return "a member needs more than one launch of its own (a cast, a transpose, an epilogue launch)"
    parts = [j[0] for j in jobs]
    if len({p.template for p in parts}) != 1 or parts[0].template not in GROUPS:
        return f"the members run as {', '.join(sorted({p.template for p in parts}))} launches, which have no " \
               "multi-output form"
    def plain(p: Job) -> dict:
        return {k: v for k, v in p.options.items() if k not in ("notes", "scratch")}
    if any(plain(p) != plain(parts[0]) or p.options.get("scratch") for p in parts):
        return "the members' launches differ in their options or need workspace"
    return ""


def horizontal_jobs(label: str, plan: KernelPlan, chip: Chip, single: Callable[[str, KernelPlan], list[Job]]
                    ) -> list[Job]:
    """The launch of the plan's members (`single(label, plan)`: the jobs of one member alone, the fallback)."""
    jobs = [single(f"{label}_{i}", m) for i, m in enumerate(plan.horizontal)]
    why = _refusal(jobs)
    if not why:
        job = _group_job(label, plan, [js[0] for js in jobs])
        try:
            job.checked = Checked(chip, 0, 0, GROUPS[jobs[0][0].template].analyze(job, chip), [])
            return [job]
        except Unsupported as e:
            why = str(e)
    flat = [j for js in jobs for j in js]
    flat[0].options.setdefault("notes", []).append(f"not one multi-output launch: {why}")
    return flat


def _group_job(label: str, plan: KernelPlan, parts: list[Job]) -> Job:
    inputs: list[Value] = list(dict.fromkeys(v for p in parts for v in p.inputs))
    outputs: list[Value] = []
    params = []
    for p in parts:
        names = {in_param(i): in_param(inputs.index(v)) for i, v in enumerate(p.inputs)}
        names.update({out_param(j): out_param(len(outputs) + j) for j in range(len(p.outputs))})
        outputs += p.outputs
        params.append(names)
    base = parts[0].template
    return Job(GROUPS[base].name, label, Horizontal(label, tuple(parts), tuple(params)), inputs, outputs, plan,
               {"notes": [f"one multi-output launch of {len(parts)} {base} kernels (ge.horizontal): no launch per "
                          "kernel, operands they share read once from HBM"]},
               op=plan.anchor, loc=plan.anchor_node.loc)
