"""The capacity function codegen hands to fusion: a candidate fits when a template can tile it.

Fusion asks before every merge (`ge.capacity.FusionCandidate` in, `CapacityVerdict` out). The answer comes
from the same router and templates code generation uses, so a group the fuser accepts always tiles: the
candidate's nodes become a kernel graph, its template (`route.BY_KIND`) analyses it and lists its tilings (a
template lists only tilings whose buffers fit the chip), and there must be one that the template admits (a
vector kernel loading more inputs per tile than the chip has event ids for never tiles: each load is waited
for by a flag). The verdict's working set is the on-chip bytes the smallest legal tile needs. Matmul groups keep
the optimiser's estimate (their operands live in L1/L0, not UB); a lone data-movement op, an If or a conv or
pool (planned by its own router) always fits.
"""
from __future__ import annotations

from typing import Callable

from ..errors import CompileError
from ..dtypes import promote
from ..ge.capacity import CapacityVerdict, FusionCandidate, default_capacity, prologue_split
from ..ge.plan import KernelKind
from ..target import Chip
from .kernel_graph import build_kernel_graph
from .route import BY_KIND
from .template import Unsupported
from .domain import dims
from .templates import TEMPLATES, mixed, mixed_prologue, template_of_op, vector, vector_kernel


def codegen_capacity(chip: Chip, buffer_num: int = 2) -> Callable[[FusionCandidate], CapacityVerdict]:
    fallback = default_capacity(chip)

    def capacity(c: FusionCandidate) -> CapacityVerdict:
        kind = c.structure.kind
        if kind in (KernelKind.CONTROL, KernelKind.DATA_MOVEMENT):
            return CapacityVerdict(True, 0)
        if all(any(d == 0 for d in v.type.shape) for v in c.outputs):
            return CapacityVerdict(True, 0)  # every result is empty: nothing is launched (route.route)
        if kind == KernelKind.MATMUL:
            return _matmul(c, chip, buffer_num) or fallback(c)
        if kind == KernelKind.OPAQUE and _planned(c):
            if len(c.nodes) > 1:   # fusion's view phase proposed views of its operands (ge/fusion/views.py)
                return CapacityVerdict(False, None, f"the {c.structure.anchor.op} template reads its operands whole, "
                                                    "not through views")
            return CapacityVerdict(True, 0)
        if kind not in BY_KIND:
            return fallback(c)
        need, refusals = None, []
        try:
            kg = build_kernel_graph("candidate", list(c.nodes), list(c.inputs), list(c.outputs))
            for job in BY_KIND[kind]("candidate", kg, c.structure, None):
                t = TEMPLATES[job.template]
                for a in t.analyze(job, chip):
                    why = t.admits(a, chip) if t.admits is not None else ""
                    if why:
                        refusals.append(why)
                        continue
                    # a template without `need` lists only tilings that fit: any of them will do
                    sizes = [t.need(a, tl, chip) if t.need is not None else 0
                             for tl in t.tilings(a, chip, buffer_num, chip.cores_of(t.core_type))]
                    if sizes:
                        need = min(sizes) if need is None else min(need, *sizes)
        except (Unsupported, CompileError) as e:
            return CapacityVerdict(False, None, f"codegen cannot tile it: {e}")
        if need is None:
            return CapacityVerdict(False, None, refusals[0] if refusals else f"no tile of it fits the chip's "
                                                                             f"{chip.ub_bytes} B UB")
        return CapacityVerdict(True, need)

    return capacity


def _planned(c: FusionCandidate) -> bool:
    """An opaque op whose template takes a plan of its own (a conv or a pool: `route.conv_jobs` fits it to the
    chip and says why when it cannot), not a kernel graph to analyse here."""
    whole = template_of_op(c.structure.anchor.op)
    return whole is not None and whole.handles is None


def _matmul(c: FusionCandidate, chip: Chip, buffer_num: int) -> CapacityVerdict | None:
    """A matmul with an epilogue fits when the epilogue's vector side does for the smallest cube block (a
    mixed launch runs it on the vector cores, rows split between them; `templates/mixed.py`); None when the
    epilogue is not one the mixed template takes (the optimiser's own estimate decides)."""
    if c.prologue is not None:
        return _with_prologue(c, chip, buffer_num)
    anchor = c.structure.anchor
    rest = [n for n in c.nodes if n is not anchor]
    if not rest:
        return None
    inputs = list(dict.fromkeys([anchor.out()] + [v for n in rest for v in n.inputs
                                                   if v.node not in rest and v is not anchor.out()]))
    try:
        kg = build_kernel_graph("candidate", rest, inputs, [v for v in c.outputs if v is not anchor.out()])
        vk = vector_kernel.analyze("candidate", kg, None, 0, "chunks", chip.ub_align, rows_of_last_axis=True)
    except (Unsupported, CompileError):
        return None
    t = vector_kernel.VectorTiling("chunks", 1, 0, min(2, buffer_num), 1)
    need = sum(b.nbytes for b in mixed.epilogue_buffers(vk, chip.cube_block, chip.cube_block, t, chip))
    if need > chip.ub_bytes:
        return CapacityVerdict(False, need, f"the epilogue's smallest vector tile needs {need} B of the chip's "
                                            f"{chip.ub_bytes} B UB")
    return CapacityVerdict(True, need)


def _with_prologue(c: FusionCandidate, chip: Chip, buffer_num: int) -> CapacityVerdict:
    """A matmul taking in its A operand's producer (ge/prologue.py) fits when it has an epilogue for the mixed
    launch to carry the prologue (`route.matmul_jobs`), A is in the cube's dtype, and the prologue's smallest
    tile of whole rows of A fits the UB beside the epilogue's smallest vector tile."""
    body, pro = prologue_split(c)
    anchor = c.structure.anchor
    if len(body.nodes) == 1 and anchor.op == "matmul":
        return CapacityVerdict(False, None, "the product has no vector epilogue: no mixed launch to run A's producer in")
    epi = _matmul(body, chip, buffer_num)
    if epi is not None and not epi.fits:
        return epi
    a, b = anchor.inputs[0], anchor.inputs[1]
    rows = dims(pro.structure.rows) if pro.structure.kind is KernelKind.ROW_REDUCE else None
    k = pro.structure.k if pro.structure.kind is KernelKind.ROW_REDUCE else 0
    try:
        kg = build_kernel_graph("candidate", list(pro.nodes), list(pro.inputs), [a])
        vk = mixed_prologue.analyze("candidate", mixed_prologue.Prologue(kg, rows, k), promote(a.type.dtype,
                                                                                              b.type.dtype), chip)
    except (Unsupported, CompileError) as e:
        return CapacityVerdict(False, None, f"codegen cannot run the prologue on the vector cores: {e}")
    used = (epi.working_set or 0) if epi is not None else 0
    sizes = [mixed_prologue.need(vk, t, chip) for t in vector.tilings(vk, chip, min(2, buffer_num), chip.aiv_cores)]
    if not sizes or used + min(sizes) > chip.ub_bytes:
        return CapacityVerdict(False, None, f"no tile of whole rows of A ({a.type.shape[-1]} elements a row) fits "
                                            f"the chip's {chip.ub_bytes} B UB beside the epilogue's {used} B")
    return CapacityVerdict(True, used + min(sizes))
