"""Fusion without an op cap: long kernels are bounded by capacity alone, and grow at a few capacity checks."""
from __future__ import annotations

from pyasc.codegen.capacity import codegen_capacity
from pyasc.ge import DecisionKind, PassContext
from pyasc.ge.capacity import CapacityVerdict
from pyasc.ge.fusion import FusionPass
from pyasc.ir import Graph, TensorType
from simulator import chips
from test_fusion import F32, decisions, fuse

FUSED, NOT_FUSED = DecisionKind.FUSED, DecisionKind.NOT_FUSED


def chain(n: int, shape=(4, 8)) -> Graph:
    """x * y + y * ... : n elementwise ops, each reading the previous one and the second input."""
    g = Graph()
    x = g.add_input(TensorType(shape, F32))
    y = g.add_input(TensorType(shape, F32))
    v = x
    for i in range(n):
        v = g.add("mul" if i % 2 == 0 else "add", [v, y]).out()
    g.set_outputs([v])
    return g


class Counting:
    """A capacity function that fits kernels of at most `limit` ops (None: any), counting the candidates it saw."""

    def __init__(self, limit: int | None = None, inner=None):
        self.limit, self.inner, self.sizes = limit, inner, []

    def __call__(self, c) -> CapacityVerdict:
        self.sizes.append(len(c.nodes))
        if self.limit is not None and len(c.nodes) > self.limit:
            return CapacityVerdict(False, None, f"{len(c.nodes)} ops is more than {self.limit}")
        return self.inner(c) if self.inner is not None else CapacityVerdict(True, 0)


def run(graph: Graph, capacity, **knobs) -> PassContext:
    ctx = PassContext(opt_level=3, chip=chips.get("910b"), capacity=capacity, knobs=knobs)
    assert FusionPass().run(graph, ctx) is True
    return ctx


def test_a_long_chain_is_one_kernel_at_a_logarithmic_number_of_capacity_checks():
    big = chips.get("910b")
    cap = Counting(inner=codegen_capacity(big))
    ctx = run(chain(300), cap)
    assert [len(k.nodes) for k in ctx.state.kernels] == [300]  # no op cap: capacity decides
    assert len(cap.sizes) <= 12 and sum(cap.sizes) <= 6 * 300  # not one analysis of the whole kernel per op
    assert len(decisions(ctx, FUSED, "post_dominator")) == 299 and not decisions(ctx, NOT_FUSED)


def test_the_op_cap_is_still_a_knob():
    ctx = fuse(chain(10), fusion_max_ops=4)
    assert [len(k.nodes) for k in ctx.state.kernels] == [4, 4, 2]
    assert decisions(ctx, NOT_FUSED, "max_ops")


def test_capacity_bounds_the_kernels_as_if_every_merge_had_been_checked():
    """Lazily grown groups are checked before phase 2; one that no longer fits makes phases 0 and 1 run again
    with every merge checked, and only that run's decisions are kept."""
    for limit in (9, 10, 16):
        ctx = run(chain(40), Counting(limit))
        sizes = [len(k.nodes) for k in ctx.state.kernels]
        assert sizes == [limit] * (40 // limit) + ([40 % limit] if 40 % limit else [])
        refused = decisions(ctx, NOT_FUSED, "capacity")
        assert len(refused) == len(sizes) - 1 and all(f"more than {limit}" in d.detail for d in refused)
        assert len(ctx.state.fusion_decisions) == 39  # one decision per op that tried to join its post-dominator
