"""The capacity function fusion is handed (pyasc/ge/capacity.py), and hardware numbers from the chip config."""
from __future__ import annotations

from pyasc.ge import DecisionKind, KernelKind, PassContext, optimize
from pyasc.ge.capacity import CapacityVerdict, FusionCandidate, default_capacity
from pyasc.ge.fusion import FusionPass
from pyasc.ge.memory import MemoryPlanningPass
from pyasc.ir import Graph, TensorType
from simulator import chips

F32 = "float32"


def chain() -> Graph:
    """relu -> exp -> (sum over rows, keepdims) -> div: one row kernel when everything fits."""
    g = Graph()
    x = g.add_input(TensorType((4, 64), F32), "x")
    e = g.add("exp", [g.add("relu", [x]).out()]).out()
    s = g.add("sum", [e], {"axis": -1, "keepdims": True}).out()
    g.set_outputs([g.add("div", [e, s]).out()])
    return g


def test_a_given_capacity_function_decides_what_fits_and_sees_the_candidate():
    seen: list[FusionCandidate] = []

    def only_pairs(c: FusionCandidate) -> CapacityVerdict:
        seen.append(c)
        if len(c.nodes) > 2:
            return CapacityVerdict(False, None, f"{len(c.nodes)} ops do not fit the test model")
        return CapacityVerdict(True, 1000 * len(c.nodes))

    chip = chips.get("tiny")
    result = optimize(chain(), chip=chip, capacity=only_pairs)
    assert [k.ops for k in result.kernels] == [["relu", "exp"], ["sum", "div"]]
    assert [k.working_set for k in result.kernels] == [2000, 2000]  # the plan's working set is the verdict's
    refused = [d for d in result.fusion_decisions if d.rule == "capacity"]
    assert refused and all(d.kind is DecisionKind.NOT_FUSED and d.detail == "4 ops do not fit the test model"
                           for d in refused)
    c = next(c for c in seen if [n.op for n in c.nodes] == ["sum", "div"])
    assert c.graph is result.graph and c.chip is chip
    assert c.structure.kind is KernelKind.ROW_REDUCE and c.structure.rows == (4, 64) and c.structure.k == 1
    assert [v.node.op for v in c.inputs] == ["exp"] and [v.node.op for v in c.outputs] == ["div"]


def test_a_given_capacity_function_means_no_chip_note():
    ctx = PassContext(opt_level=3, capacity=lambda c: CapacityVerdict(True, 0))
    FusionPass().run(chain(), ctx)
    assert not [d for d in ctx.state.fusion_decisions if d.rule == "no_chip"]
    assert [k.ops for k in ctx.state.kernels] == [["relu", "exp", "sum", "div"]]


def test_the_default_estimate_takes_the_ub_block_from_the_chip():
    g = Graph()
    x = g.add_input(TensorType((4, 16), F32))
    g.set_outputs([g.add("exp", [g.add("relu", [x]).out()]).out()])
    base = chips.get("910b")
    widths = {}
    for align in (32, 64):
        ctx = PassContext(opt_level=3, chip=base.replace(ub_align=align))
        FusionPass().run(g, ctx)
        (k,) = ctx.state.kernels
        widths[align] = k.working_set
    assert widths == {32: 2 * 32 * 3, 64: 2 * 64 * 3}  # x, relu, exp: one block each, double-buffered


def test_the_default_estimate_refuses_what_overflows_the_ub_with_the_numbers():
    verdict = default_capacity(chips.get("910b").replace(ub_bytes=1024))
    g = chain()
    order = [n for n in g.nodes if n.op != "Data"]
    from pyasc.ge.fusion.analysis import GraphFacts
    from pyasc.ge.fusion.legality import Limits, classify

    facts = GraphFacts(g)
    structure = classify(facts, order, Limits(64, 6))
    inputs, outputs = facts.boundary(order)
    v = verdict(FusionCandidate(g, order, structure, inputs, outputs, None))
    # x, relu, exp, div: one 256 B row each; the per-row sum one block: 4 * 256 + 32, doubled
    assert (v.fits, v.working_set) == (False, 2 * 1056)
    assert v.reason == "working set 2 x 1056 B = 2112 B (double-buffered) does not fit the 1024 B UB"


def test_memory_planning_aligns_to_the_chips_gm_allocation_alignment():
    g = Graph()
    x = g.add_input(TensorType((4, 8), F32))
    t = g.add("transpose", [g.add("exp", [x]).out()], {"axes": (1, 0)}).out()
    g.set_outputs([g.add("exp", [t]).out()])
    ctx = PassContext(opt_level=3, chip=chips.get("910b").replace(gm_alloc_align=2048))
    FusionPass().run(g, ctx)
    MemoryPlanningPass().run(g, ctx)
    plan = ctx.state.memory_plan
    assert plan.alignment == 2048 and [a.size for a in plan.assignments] == [2048, 2048]
