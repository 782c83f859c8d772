"""The capacity function codegen hands to fusion: a candidate fits when a template can tile it.

Fusion asks before every merge (`ge.capacity.FusionCandidate` in,
`CapacityVerdict` out). The answer comes from the same analyses and
tilings code generation uses, so a group the fuser accepts always tiles:
the candidate's nodes become a kernel graph, the template for its kind
analyses it and lists its tilings (a template lists only tilings whose
buffers fit the chip), and there must be one. The verdict's working set is the UB the smallest legal tile
needs. A vector kernel loading more inputs per tile than the chip has event
ids for (each load is waited for by a flag) does not fit either: fusion then
splits it. Matmul groups keep the optimiser's estimate (their operands live in
L1/L0, not UB); a lone data-movement op or an If always fits.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import CompileError
from ..ge.capacity import CapacityVerdict, FusionCandidate, default_capacity
from ..ge.plan import KernelKind
from .domain import UnsupportedDomain, dims
from .kernel_graph import build_kernel_graph
from .templates import column, multipass, vector, vector_kernel


def _smallest(tilings: list, need: Callable[[Any], int]) -> int | None:
    """UB bytes of the smallest tiling (every tiling a template lists already fits the chip)."""
    return min((need(t) for t in tilings), default=None)


def _loads_per_tile(vk: Any) -> int:
    """MTE2->V flags the kernel's loads need, at least: one per input (loaded per tile, even single-buffered, or once
    before the loop); more than the chip's event ids never tiles."""
    return len(vk.per_tile) + len(vk.resident)


def codegen_capacity(chip: Any, buffer_num: int = 2) -> Callable[[FusionCandidate], CapacityVerdict]:
    fallback = default_capacity(chip)

    def capacity(c: FusionCandidate) -> CapacityVerdict:
        kind = c.structure.kind
        too_many = ""
        if kind in (KernelKind.CONTROL, KernelKind.DATA_MOVEMENT):
            return CapacityVerdict(True, 0)
        if all(any(d == 0 for d in v.type.shape) for v in c.outputs):
            return CapacityVerdict(True, 0)  # every result is empty: nothing is launched (generate.compile_plan)
        if kind == KernelKind.MATMUL:
            return fallback(c)
        try:
            kg = build_kernel_graph("candidate", list(c.nodes), list(c.inputs), list(c.outputs))
            if kind == KernelKind.COLUMN_REDUCE:
                ck = column.analyze("candidate", kg, c.structure.rows, tuple(c.structure.reduced_axes))
                need = _smallest(column.tilings(ck, chip, buffer_num, chip.aiv_cores),
                                 lambda t: column.ub_bytes(ck, t, chip))
            else:
                rows = dims(c.structure.rows) if kind == KernelKind.ROW_REDUCE else None
                need = None
                for mode in (("rows", "multipass") if rows is not None else ("rows", "chunks")):
                    try:
                        vk = vector_kernel.analyze("candidate", kg, rows, c.structure.k, mode)
                    except UnsupportedDomain:
                        continue
                    if _loads_per_tile(vk) > chip.event_ids:
                        too_many = (f"its {_loads_per_tile(vk)} input loads per tile need more than the chip's "
                                    f"{chip.event_ids} event ids for MTE2->V flags")
                        continue
                    tiler, ub = ((multipass.tilings, multipass.ub_bytes) if mode == "multipass"
                                 else (vector.tilings, vector_kernel.ub_bytes))
                    got = _smallest(tiler(vk, chip, buffer_num, chip.aiv_cores), lambda t, vk=vk, ub=ub: ub(vk, t, chip))
                    if got is not None:
                        need = got if need is None else min(need, got)
        except (UnsupportedDomain, CompileError) as e:
            return CapacityVerdict(False, None, f"codegen cannot tile it: {e}")
        if need is None:
            return CapacityVerdict(False, None, too_many or f"no tile of it fits the chip's {chip.ub_bytes} B UB")
        return CapacityVerdict(True, need)

    return capacity
