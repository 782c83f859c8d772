"""Memory planning: place every GM intermediate between kernels in one workspace.

Over the kernel schedule (ge/plan.py), a value written by kernel i and read
by kernels up to j lives in the workspace during [i, j] (inclusive: kernel
j still reads it while it writes its own outputs). Graph inputs, graph
outputs and constants have their own buffers and are not planned here.

Placement is greedy best fit (TFLite's greedy-by-size, XLA's
GlobalDecreasingSizeBestFitHeap): buffers are taken one by one; among the
already placed buffers whose lifetimes overlap, the smallest gap that fits
is used, else the slot above the highest of them. Two orders are tried —
by size (largest first) and by lifetime (longest-lived first) — and the
smaller peak wins (ties: "size"). Sizes and offsets are rounded up to the
GM allocation alignment (the chip config's `gm_alloc_align`, 512 B on both
presets), and the lower bound (max bytes live at
once, XLA's NoFragmentationStatsHeap / GE's theory_min_memory_size) uses the
same rounding, so peak / lower bound measures fragmentation only.

If nodes: an If is one step of its graph's schedule (it reads its inputs
and writes its outputs at that step). Each branch is planned on its own
schedule, exactly like a graph whose inputs are the If's inputs and whose
outputs are the If's outputs. The two branches of one If share one region
(only one of them runs), as large as the larger branch peak; that region is
placed together with the graph's own buffers as one more buffer, live only
at the If's step, so it reuses space of buffers that are dead by then and
two Ifs at different steps may share space (`MemoryPlan.base` of a branch
plan is its region's offset). Nested Ifs repeat this inside their branch.
Values with symbolic sizes are skipped (the runtime allocates them at
launch) and named in `MemoryPlan.notes`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence

from ..ir import Graph, Value, node_names
from ..ir.printer import value_ref
from .capacity import resolve_chip
from .fusion import schedule_for
from .passes import Pass, PassContext
from .plan import BufferAssignment, KernelPlan, MemoryPlan

STRATEGIES = ("size", "lifetime")


@dataclass(frozen=True)
class Interval:
    """One buffer to place: `size` bytes live over kernel steps [first, last] (inclusive)."""

    key: Hashable
    size: int
    first: int
    last: int


def align_up(nbytes: int, alignment: int) -> int:
    return -(-nbytes // alignment) * alignment


def _order(buffers: Sequence[Interval], strategy: str) -> list[Interval]:
    if strategy == "size":
        key = lambda b: (-b.size, b.first, b.last)  # noqa: E731 - sort keys read best inline
    elif strategy == "lifetime":
        key = lambda b: (-(b.last - b.first), -b.size, b.first)  # noqa: E731
    else:
        raise ValueError(f"unknown placement strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    # sorted() is stable, so equal keys keep the schedule order of the input
    return sorted(buffers, key=key)


def place(buffers: Sequence[Interval], strategy: str = "size") -> tuple[dict[Hashable, int], int]:
    """Best-fit offsets for `buffers` taken in `strategy` order; returns ({key: offset}, peak).

    Offsets are sums of sizes, so they are aligned when the sizes are.
    """
    placed: list[tuple[int, int, Interval]] = []  # (offset, end, buffer)
    offsets: dict[Hashable, int] = {}
    peak = 0
    for b in _order(buffers, strategy):
        live = sorted((o, e) for o, e, p in placed if p.first <= b.last and b.first <= p.last)
        best_offset, best_gap, cursor = None, None, 0
        for o, e in live:
            gap = o - cursor
            if gap >= b.size and (best_gap is None or gap < best_gap):
                best_offset, best_gap = cursor, gap
            cursor = max(cursor, e)
        offset = cursor if best_offset is None else best_offset
        placed.append((offset, offset + b.size, b))
        offsets[b.key] = offset
        peak = max(peak, offset + b.size)
    return offsets, peak


def live_bytes(buffers: Iterable[Interval], steps: int) -> list[int]:
    """Bytes live at each step 0..steps-1."""
    live = [0] * steps
    for b in buffers:
        for t in range(b.first, b.last + 1):
            live[t] += b.size
    return live


def lower_bound(buffers: Sequence[Interval]) -> int:
    """Max bytes live at once: no placement can use less."""
    if not buffers:
        return 0
    return max(live_bytes(buffers, max(b.last for b in buffers) + 1))


def best_placement(buffers: Sequence[Interval]) -> tuple[str, dict[Hashable, int], int, dict[str, int]]:
    """Run every strategy and keep the smallest peak: (strategy, offsets, peak, {strategy: peak})."""
    results = {s: place(buffers, s) for s in STRATEGIES}
    candidates = {s: peak for s, (_, peak) in results.items()}
    best = min(STRATEGIES, key=lambda s: (candidates[s], STRATEGIES.index(s)))
    offsets, peak = results[best]
    return best, offsets, peak, candidates


def _label(v: Value, names: dict) -> str:
    """`exp %2`: the op and the value's canonical dump name."""
    return f"{v.node.op} {value_ref(v, names)}"


def plan_memory(kernels: Sequence[KernelPlan], graph: Graph, *, alignment: int) -> MemoryPlan:
    """Plan the workspace for `graph`'s schedule (the kernels whose `.graph is graph`, in list order).

    Branch kernels of If steps (same list, other graphs) are planned into the
    region their If's branches share, see the module docstring.
    """
    if alignment <= 0:
        raise ValueError(f"alignment must be a positive number of bytes, got {alignment}")
    schedule = [k for k in kernels if k.graph is graph]
    plan = MemoryPlan(alignment=alignment, steps=len(schedule))

    producer: dict[Value, int] = {}
    for i, k in enumerate(schedule):
        for v in k.outputs:
            producer[v] = i
    last: dict[Value, int] = {}
    readers: dict[Value, int] = {}
    for j, k in enumerate(schedule):
        for v in k.inputs:
            if v in producer and producer[v] < j:
                last[v] = max(last.get(v, j), j)
                readers[v] = readers.get(v, 0) + 1

    graph_outputs = set(graph.outputs)
    names = node_names(graph)
    intervals: list[Interval] = []
    values: dict[int, tuple[Value, int]] = {}
    for v, i in producer.items():
        if v in graph_outputs or v not in last:
            continue  # lives in the caller's output buffer, or nobody downstream reads it
        nbytes = v.type.storage_nbytes
        if nbytes is None:
            plan.notes.append(f"{_label(v, names)} {v.type}: symbolic size, allocated at launch (not planned)")
            continue
        key = len(intervals)
        intervals.append(Interval(key, align_up(nbytes, alignment), i, last[v]))
        values[key] = (v, nbytes)
        plan.intermediate_bytes += nbytes
        plan.traffic_bytes += nbytes * (1 + readers[v])
    live = live_bytes(intervals, len(schedule))

    # If steps: plan each branch on its own; the branches of one If share a region placed like a
    # buffer live at the If's step only
    regions: list[Interval] = []
    region_plans: dict[int, list[MemoryPlan]] = {}
    branch_need: dict[int, int] = {}   # step -> max branch lower bound at that If
    for i, k in enumerate(schedule):
        if not k.is_control:
            continue
        subs: list[MemoryPlan] = []
        for attr, sub in k.nodes[0].subgraphs.items():
            sub_plan = plan_memory(kernels, sub, alignment=alignment)
            sub_plan.if_step = i
            plan.branch_plans[f"k{k.group}.{attr}"] = sub_plan
            subs.append(sub_plan)
            branch_need[i] = max(branch_need.get(i, 0), sub_plan.lower_bound)
            plan.naive_bytes += sub_plan.naive_bytes
            plan.intermediate_bytes += sub_plan.intermediate_bytes
            plan.traffic_bytes += sub_plan.traffic_bytes
            plan.notes.extend(sub_plan.notes)
        size = max((s.peak_bytes for s in subs), default=0)
        if size:
            region_plans[i] = subs
            regions.append(Interval(("branches", i), size, i, i))

    strategy, offsets, peak, candidates = best_placement(intervals + regions)
    plan.strategy, plan.candidates = (strategy, candidates) if intervals or regions else ("", {})
    plan.assignments = [
        BufferAssignment(values[b.key][0], values[b.key][1], offsets[b.key], b.first, b.last, b.size,
                         _label(values[b.key][0], names))
        for b in intervals
    ]
    plan.naive_bytes += sum(b.size for b in intervals)
    for i, subs in region_plans.items():
        for sub_plan in subs:
            _shift(sub_plan, offsets[("branches", i)])
    plan.peak_bytes = peak
    plan.lower_bound = max((live[t] + branch_need.get(t, 0) for t in range(len(schedule))), default=0)
    return plan


def _shift(plan: MemoryPlan, delta: int) -> None:
    """Move a branch plan (and its nested branch plans) up by `delta` bytes."""
    for a in plan.assignments:
        a.offset += delta
    plan.base += delta
    for sub in plan.branch_plans.values():
        _shift(sub, delta)


class MemoryPlanningPass(Pass):
    """Analysis: reads `ctx.state.kernels`, stores `ctx.state.memory_plan`.

    The GM allocation alignment is the chip config's `gm_alloc_align`; knob `gm_alignment` overrides it.
    Without a fusion result (fusion disabled), each compute node is a kernel.
    """

    name = "memory_planning"
    opt_level = 0
    root_only = True

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        kernels, fell_back = schedule_for(graph, ctx)
        alignment = ctx.knobs.get("gm_alignment", resolve_chip(ctx.chip).gm_alloc_align)
        plan = plan_memory(kernels, graph, alignment=int(alignment))
        if fell_back:
            plan.notes.append("no fusion result for this graph: planned with one kernel per op")
        ctx.state.memory_plan = plan
        return False
