"""The fusion pass: fuse the root graph and every branch into one kernel schedule; the fallback schedule."""
from __future__ import annotations

import itertools
from typing import Any

from ...target import Chip
from ... import ops
from ...ir import Graph, Node, node_names
from ..capacity import CapacityFn, default_capacity, resolve_chip
from ..decisions import DecisionKind, FusionDecision
from ..passes import Pass, PassContext
from ..plan import KernelPlan
from ..state import OptimizerState
from .fuser import GraphFuser

# fusion_max_ops None: no cap, the capacity function decides how large a kernel may grow
DEFAULT_KNOBS = {"fusion_max_ops": None, "fusion_max_users": 6, "fusion_duplicate": True, "fusion_multi_output": True}
UNFUSED_NOTE = "fusion did not run (disabled): one kernel per op, nodes carry no fusion_group"


def _knobs(ctx: PassContext) -> dict[str, Any]:
    """The fusion knobs from the context; ValueError for unusable values."""
    knobs = {k: ctx.knobs.get(k, d) for k, d in DEFAULT_KNOBS.items()}
    for k in ("fusion_max_ops", "fusion_max_users"):
        if k == "fusion_max_ops" and knobs[k] is None:
            continue
        if not isinstance(knobs[k], int) or isinstance(knobs[k], bool) or knobs[k] < 1:
            raise ValueError(f"knob {k} must be an int >= 1, got {knobs[k]!r}"
                             + (" (or None: no cap, the capacity function decides)" if k == "fusion_max_ops" else ""))
    return knobs


def capacity_of(ctx: PassContext) -> tuple[CapacityFn, Any]:
    """(the capacity function, the chip): the context's, else the default estimate for its chip (or the default)."""
    chip = resolve_chip(ctx.chip)
    return (ctx.capacity or default_capacity(chip)), chip


def _branch_order(n: Node) -> list[str]:
    """Subgraph attrs of `n` in the order their kernels are scheduled (the registry's `subgraph_attrs`)."""
    return [a for a in ops.get(n.op).subgraph_attrs if a in n.subgraphs]


def _schedule(graph: Graph, knobs: dict[str, Any], capacity: CapacityFn, chip: Chip, fuse: bool,
              log: list[FusionDecision], annotate: bool) -> list[KernelPlan]:
    """Every graph's kernels, depth first (a branch's right after its If), numbered in schedule order."""
    counter = itertools.count()
    kernels: list[KernelPlan] = []

    def visit(g: Graph, prefix: str) -> None:
        fuser = GraphFuser(g, knobs, capacity, chip, log.append, prefix)
        if fuse:
            fuser.fuse()
        for nodes in fuser.schedule():
            gid = next(counter)
            if annotate:
                for n in nodes:
                    n.attrs["fusion_group"] = gid
            kernels.append(fuser.plan(gid, nodes))
            for n in nodes:
                for attr in _branch_order(n):
                    visit(n.subgraphs[attr], f"{prefix}%{node_names(g)[n]}.{attr}/")  # "exp %3.then_branch/%1"

    visit(graph, "")
    return kernels


def singleton_kernels(graph: Graph, capacity: CapacityFn | None = None, chip: Chip | None = None) -> list[KernelPlan]:
    """One kernel per compute node (the opt_level 0 schedule) without touching the graph's attrs."""
    chip = resolve_chip(chip)
    return _schedule(graph, DEFAULT_KNOBS, capacity or default_capacity(chip), chip, False, [], annotate=False)


def schedule_for(graph: Graph, ctx: PassContext) -> tuple[list[KernelPlan], bool]:
    """The kernel schedule for `graph`: fusion's, or (True) one kernel per op when fusion has none for it.

    The one place the one-kernel-per-op fallback is made: when fusion did not
    run at all, the fallback becomes the state's schedule, with a note.
    """
    state: OptimizerState = ctx.state
    kernels = state.kernels
    has_compute = any(not ops.get(n.op).leaf for n in graph.nodes)
    if kernels is not None and (not has_compute or any(k.graph is graph for k in kernels)):
        return kernels, False
    capacity, chip = capacity_of(ctx)
    fallback = singleton_kernels(graph, capacity, chip)
    if state.kernels is None:
        state.kernels = fallback
        state.fusion_decisions.append(FusionDecision(DecisionKind.NOTE, "unfused", detail=UNFUSED_NOTE))
    return fallback, True


class FusionPass(Pass):
    """Annotates "fusion_group" on every compute node; stores the schedule and decisions in `ctx.state`.

    Runs once on the root graph and fuses every branch graph itself, so that
    group ids are unique across the whole graph and the schedule is one list.
    """

    name = "fusion"
    opt_level = 0
    root_only = True

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        knobs = _knobs(ctx)
        capacity, chip = capacity_of(ctx)
        log: list[FusionDecision] = []
        fuse = ctx.opt_level >= 1
        if not fuse:
            log.append(FusionDecision(DecisionKind.NOTE, "opt_level_0", detail="opt_level 0: fusion off, one kernel per op"))
        if ctx.chip is None and ctx.capacity is None:
            log.append(FusionDecision(DecisionKind.NOTE, "no_chip",
                                      detail=f"no chip given: assuming a {chip.ub_bytes} B UB (the {chip.name} figure)"))
        for g in graph.walk():
            for n in g.nodes:
                n.attrs.pop("fusion_group", None)
        ctx.state.kernels = _schedule(graph, knobs, capacity, chip, fuse, log, annotate=True)
        ctx.state.fusion_decisions = log
        return True
