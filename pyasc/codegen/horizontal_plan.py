"""How a multi-output MATMUL plan (GE's `horizontal_matmul`: products of one A) runs: one launch of the
multi-output cube template (templates/horizontal.py) when every product is a plain cube product of the same
shape, else each product as the cube template would run it alone (the first job's notes say why)."""
from __future__ import annotations

from typing import Callable

from ..ge.plan import KernelPlan, KernelStructure
from ..target import Chip
from . import matmul_plan
from .domain import UnsupportedDomain
from .template import Job
from .templates.horizontal import MatmulGroup


def member_plans(plan: KernelPlan) -> list[KernelPlan]:
    """The plan of each product on its own (what it was before GE grouped them)."""
    out = []
    for node in plan.horizontal:
        st = KernelStructure(plan.structure.kind, node)
        out.append(KernelPlan(plan.group, plan.graph, [node], list(node.inputs), [node.out()], plan.category, st,
                              mixed=plan.mixed))
    return out


def horizontal_jobs(label: str, plan: KernelPlan, single: Callable[[str, KernelPlan], list[Job]]) -> list[Job]:
    """The launch of the plan's products (`single(label, plan)`: the jobs of one product alone, the fallback)."""
    members = member_plans(plan)
    why = ""
    cubes = []
    for i, m in enumerate(members):
        try:
            r = matmul_plan.route(f"{label}_{i}", m)
        except UnsupportedDomain as e:
            why = str(e)
            break
        if r.casts or r.transposes or r.epilogue is not None or r.prologue is not None or r.scratch:
            why = "a product needs vector work before or after the cube (a cast, a transpose, an epilogue)"
            break
        cubes.append(r.cube)
    if not why and len({(c.M, c.N, c.K, c.dtype, c.out_dtype, c.bias, c.relu) for c in cubes}) != 1:
        why = "the products differ in shape or dtype"
    if why:
        jobs = [j for i, m in enumerate(members) for j in single(f"{label}_{i}", m)]
        jobs[0].options.setdefault("notes", []).append(f"not one multi-output launch: {why}")
        return jobs
    a = plan.anchor_node.inputs[0]
    inputs = [a] + [n.inputs[1] for n in plan.horizontal]
    outputs = [n.out() for n in plan.horizontal]
    job = Job("matmul_group", label, MatmulGroup(label, tuple(cubes)), inputs, outputs, plan, {},
              op=plan.anchor, loc=plan.anchor_node.loc)
    job.options["notes"] = [f"one multi-output launch of {len(cubes)} products of one A (ge.horizontal): no launch "
                            "per product, A read from L2 after the first"]
    return [job]
