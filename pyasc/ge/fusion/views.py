"""Phase 3 of fusion: an opaque op takes the views of its operands and of its result into its kernel.

An opaque op's template may read its operands and write its result by strides (the attention template: a
row at a time), and then a data move that only re-strides (registry fact `OpDef.strided_view`: slice,
reshape, transpose, ...) need not be a launch of its own: picoGPT's per-head `slice -> reshape ->
transpose` of the qkv projection and the `transpose -> reshape` joining the heads, torch's
`view(B, T, H, D).transpose(1, 2)`. The phase proposes, for each operand, the chain of views above it (each
read by the next alone, in a kernel of its own, not a graph result), and the chain below the result; the
capacity function (codegen) answers whether the op's template can address through it, and a refusal keeps
the chain's moves as they were (the fuser then tries shorter chains, nearest the op first). Decisions:
FUSED "view" or NOT_FUSED with the refusing rule. This module finds the chains; the fuser checks and merges.

Phase 4 does the same for the elementwise and row kernels (the vector template reads an input through a
chain of views by strided copies, `codegen/strided.py`): a lone data move that only re-strides (`read_view`:
the per-head `reshape -> transpose` of a projection, the two halves RoPE's `rotate_half` slices) goes into
each vector kernel that reads it and can read through it, as a private copy (a view costs nothing to
repeat: each kernel reads the input at its own strides), consumers first, so a chain joins view by view.
It stays a launch of its own only for readers that cannot (legality's rule "view_member", or the template's
refusal through the capacity function, e.g. a reversed axis or a transposed last axis).

Phase 5 is the result side: a chain of lone reshapes and transposes below a value an elementwise kernel
computes (`write_chain`: picoGPT's `transpose -> reshape` joining heads, a rotated k returned as (T, C))
joins that kernel, which stores its tile through the chain's strides (codegen/strided.py `output_views`),
when the capacity function accepts it; else the chain without its farthest views, else it stays a launch.
"""
from __future__ import annotations

from ... import ops
from ...ir import Node
from ...ops import Category
from .analysis import GraphFacts
from .partition import Partition


def _alone_view(facts: GraphFacts, part: Partition, n: Node) -> bool:
    return n in part.group and ops.get(n.op).strided_view and part.size(part.group[n]) == 1


def _returned(facts: GraphFacts, n: Node) -> bool:
    return any(v in facts.graph_outputs for v in n.values)


def operand_chain(facts: GraphFacts, part: Partition, op: Node, index: int) -> list[Node]:
    """The views above operand `index` of `op`, nearest first (none the graph returns: that one is in GM)."""
    chain: list[Node] = []
    reader, p = op, op.inputs[index].node
    while _alone_view(facts, part, p) and not _returned(facts, p) and facts.users(p) == [reader]:
        chain.append(p)
        reader, p = p, p.inputs[0].node
    return chain


def result_chain(facts: GraphFacts, part: Partition, op: Node) -> list[Node]:
    """The views below `op`'s result, nearest first: the last may be a graph result, none before it."""
    chain: list[Node] = []
    n = op
    while len(n.outputs) == 1 and not _returned(facts, n):
        users = facts.users(n)
        if len(users) != 1 or not _alone_view(facts, part, users[0]):
            break
        n = users[0]
        chain.append(n)
    return chain


def view_chains(facts: GraphFacts, part: Partition, op: Node) -> list[list[Node]]:
    """The chains to propose for opaque op `op`: one per operand and one for its result (empty ones left out)."""
    if ops.get(op.op).is_control:
        return []          # an If: its branches are kernels of their own
    found = [operand_chain(facts, part, op, i) for i in range(len(op.inputs))] + [result_chain(facts, part, op)]
    return [c for c in found if c]


def read_view(facts: GraphFacts, part: Partition, n: Node) -> bool:
    """Whether `n` is a lone data move that only re-strides (a slice, transpose, reshape or squeeze in a kernel
    of its own), not a graph result: phase 4 offers it to the vector kernels that read it."""
    return facts.pattern[n] == Category.INJECTIVE and _alone_view(facts, part, n) and not _returned(facts, n)


def write_chain(facts: GraphFacts, part: Partition, n: Node) -> list[Node]:
    """The lone data moves (reshape, transpose, squeeze) below computed `n`, nearest first, each the only
    reader of the value before it; the last may be a graph result, `n` may not be (it is in GM anyway)."""
    if _returned(facts, n) or len(n.outputs) != 1:
        return []
    chain: list[Node] = []
    cur = n
    while True:
        users = facts.users(cur)
        if len(users) != 1:
            break
        u = users[0]
        if facts.pattern[u] != Category.INJECTIVE or not _alone_view(facts, part, u):
            break
        chain.append(u)
        if _returned(facts, u):
            break
        cur = u
    return chain
