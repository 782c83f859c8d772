"""Legality: which sets of ops may be one kernel, and what its structure is (one rule function per anchor kind).

`classify(facts, order, limits)` returns the candidate's `KernelStructure`,
or the `Rejection` of the first rule that refuses it:
- one data-movement op (transpose, reshape, slice, transdata, ...), one If or
  one opaque op (attention) alone is always a kernel (DATA_MOVEMENT / CONTROL /
  OPAQUE; whether codegen takes the opaque op whole was asked before fusion,
  see ge/pattern.py); with others, never, but an opaque op with views of its
  operands and result (fusion's view phase, views.py; the capacity function says whether its template reads
  through them)
  (rule "data_movement_member": GE buffer fusion fuses elementwise/broadcast
  ops only), but views an elementwise or row kernel reads an input through (`read_views`: fusion's
  input-view phase offers them, views.py; the vector template reads the input by the chain's strides; rule
  "view_member" when the rest is not such a kernel), and views an elementwise kernel writes its result
  through (`write_views`: fusion's phase 5, a `transpose -> reshape` joining heads);
- `elementwise_rule`: elementwise and broadcast ops, any number (up to the size knob), but not a value
  computed in the kernel and expanded along two different axes ("broadcast_two_ways");
- `matmul_rule`: one matmul with an elementwise epilogue of its output shape (side inputs of the epilogue
  computed in it too)
  (what FixPipe and the vector unit apply on the way out), never a prologue
  ("matmul_prologue": the kernel computing A may join later, in the `matmul_prologue` pass, ge/prologue.py;
  "matmul_epilogue_shape"), never two matmuls
  ("two_matmuls") or a matmul with a reduction ("matmul_with_reduction");
- `reduction_rule`: reductions with their elementwise/broadcast prologue;
  reductions over the trailing axes ("rows") also with epilogues and further
  reductions over the same rows ("different_rows"; softmax, layer norm = one
  kernel); a reduction over leading axes takes no epilogue and no other
  reduction ("column_reduction_epilogue", "column_reduction_shared"); ops
  after a reduction without keepdims stay in the reduced shape
  ("dropped_axes": numpy would broadcast a dropped axis against the wrong
  dimension) and every other op follows the rows ("not_row_shaped");
- size guards: at most `max_ops` ops ("max_ops"; no cap by default) and at most `max_users`
  readers of one value inside the kernel ("max_users").
Whether the kernel would close a cycle between kernels is the partition's
question (partition.py), whether it fits the chip the capacity function's.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import ops
from ...ir import Node
from ...ops import Category
from ...ops.common import broadcasts_to
from ..decisions import Rejection
from ..plan import KernelKind, KernelStructure
from .analysis import GraphFacts

_ALONE = (Category.INJECTIVE, Category.OPAQUE)


@dataclass(frozen=True)
class Limits:
    max_ops: int | None   # None: no cap (the capacity function decides)
    max_users: int


def classify(facts: GraphFacts, order: list[Node], limits: Limits) -> KernelStructure | Rejection:
    """The structure of a candidate kernel (`order`: its nodes in topological order), or why it may not be one."""
    if limits.max_ops is not None and len(order) > limits.max_ops:
        return Rejection("max_ops", f"the kernel would have {len(order)} ops, more than fusion_max_ops={limits.max_ops}")
    if len(order) == 1 and facts.pattern[order[0]] in _ALONE:
        return lone_structure(order[0])
    opaque = [n for n in order if facts.pattern[n] == Category.OPAQUE and not ops.get(n.op).is_control]
    if len(opaque) == 1 and all(n is opaque[0] or ops.get(n.op).strided_view for n in order):
        return KernelStructure(KernelKind.OPAQUE, opaque[0])   # with views of its operands / result (views.py)
    views = read_views(facts, order)
    writes = write_views(facts, order)
    if views or writes:
        rest = [n for n in order if n not in views and n not in writes]
        found = classify(facts, rest, limits) if rest else None
        if isinstance(found, Rejection):
            return found
        if found is None or found.kind not in _VIEW_READERS:
            what = found.kind.name.lower() if found is not None else "no"
            return Rejection("view_member", f"{facts.joined_labels(views or writes)} would be read or written "
                             f"through by a {what} kernel: only elementwise and row kernels read an input through "
                             "views")
        if writes and found.kind is not KernelKind.ELEMENTWISE:
            return Rejection("view_member", f"{facts.joined_labels(writes)} would be written through by a "
                             f"{found.kind.name.lower()} kernel: only an elementwise kernel writes its result "
                             "through views")
        return _users_limit(facts, order, limits) or found
    for n in order:
        p = facts.pattern[n]
        if p in _ALONE:
            return Rejection("data_movement_member", f"{facts.label(n)} is {p.name}: only elementwise/broadcast ops, "
                             "reductions and matmul epilogues share a kernel")
    mms = [n for n in order if facts.pattern[n] == Category.MATMUL]
    reds = [n for n in order if facts.pattern[n] == Category.REDUCE]
    if len(mms) > 1:
        return Rejection("two_matmuls", f"two matmul anchors {facts.joined_labels(mms)} in one kernel")
    if mms and reds:
        return Rejection("matmul_with_reduction", f"matmul {facts.label(mms[0])} and reduction {facts.label(reds[0])} "
                         "are both complex anchors and never share a kernel")
    if mms:
        found = matmul_rule(facts, mms[0], order)
    elif reds:
        found = _broadcast_two_ways(facts, order) or reduction_rule(facts, reds, order)
    else:
        found = elementwise_rule(facts, order)
    if isinstance(found, Rejection):
        return found
    return _users_limit(facts, order, limits) or found


def _users_limit(facts: GraphFacts, order: list[Node], limits: Limits) -> Rejection | None:
    group = set(order)
    for n in order:
        inside = sum(1 for u in facts.users(n) if u in group)
        if inside > limits.max_users:
            return Rejection("max_users", f"{facts.label(n)} would feed {inside} ops inside one kernel, more than "
                             f"fusion_max_users={limits.max_users}")
    return None


#: kernels whose (vector) template reads an input through a chain of views
_VIEW_READERS = (KernelKind.ELEMENTWISE, KernelKind.ROW_REDUCE)


def read_views(facts: GraphFacts, order: list[Node]) -> list[Node]:
    """The views of a candidate that a vector kernel reads an input through: each a strided view whose operand
    comes from outside the candidate or is another such view, with a data move (slice, transpose, reshape,
    squeeze) in its chain, not a graph result (readers outside the candidate get copies of it, fusion's phase
    4); `codegen.strided.is_input_view` names the same nodes in the kernel graph. Empty when the candidate
    holds no data move of that kind."""
    if not any(facts.pattern[n] == Category.INJECTIVE for n in order):
        return []   # the common case, answered without a walk
    group = set(order)
    found: dict[Node, None] = {}
    changed = True
    while changed:  # order-independent: a duplicated view is appended after the nodes that read it
        changed = False
        for n in order:
            if n in found or not ops.get(n.op).strided_view:
                continue
            src = n.inputs[0].node
            chained = src in found
            if (src in group and not chained) or (facts.pattern[n] != Category.INJECTIVE and not chained):
                continue
            if any(v in facts.graph_outputs for v in n.values):
                continue
            found[n] = None
            changed = True
    return [n for n in order if n in found]


def write_views(facts: GraphFacts, order: list[Node]) -> list[Node]:
    """The views of a candidate that a vector kernel writes its result through (fusion's phase 5, views.py):
    a chain of data moves (transpose, reshape, squeeze) below a value computed in the candidate, each the only
    reader of the value before it; `codegen.strided.output_views` names the same chains in the kernel graph.
    Whether strides express the chain is the template's question (the capacity function)."""
    if not any(facts.pattern[n] == Category.INJECTIVE for n in order):
        return []
    group = set(order)
    found: dict[Node, None] = {}
    for n in order:  # topological: a chain's earlier views come first
        if facts.pattern[n] != Category.INJECTIVE or not ops.get(n.op).strided_view:
            continue
        src = n.inputs[0].node
        computed = src in group and not ops.get(src.op).strided_view
        if not (computed or src in found) or facts.users(src) != [n]:
            continue
        if any(v in facts.graph_outputs for v in src.values):
            continue
        found[n] = None
    return list(found)


def lone_structure(node: Node) -> KernelStructure:
    """The structure of a kernel of one op that never shares one: an If, an opaque op (attention), a data move."""
    op = ops.get(node.op)
    if op.is_control:
        return KernelStructure(KernelKind.CONTROL, node)
    if op.category == Category.OPAQUE:
        return KernelStructure(KernelKind.OPAQUE, node)
    return KernelStructure(KernelKind.DATA_MOVEMENT, node)


def elementwise_rule(facts: GraphFacts, order: list[Node]) -> KernelStructure | Rejection:
    """Elementwise and broadcast ops share a kernel, except a value computed in the kernel and broadcast along
    two different axes (`y[:, None] - y[None, :]` of a computed y: the vector template computes it once, in
    one placement; rule "broadcast_two_ways")."""
    split = _broadcast_two_ways(facts, order)
    if split is not None:
        return split
    return KernelStructure(KernelKind.ELEMENTWISE, order[0])


def _broadcast_two_ways(facts: GraphFacts, order: list[Node]) -> Rejection | None:
    group = set(order)
    for n in order:
        placements = {u.outputs[0].shape for u in facts.users(n) if u in group and u.op == "expand_dims"}
        if len(placements) > 1:
            return Rejection("broadcast_two_ways", f"{facts.label(n)} is computed in the kernel and expanded to "
                             f"{' and '.join(map(str, sorted(placements, key=str)))}: one kernel computes it in one "
                             "placement")
    return None


def matmul_rule(facts: GraphFacts, mm: Node, order: list[Node]) -> KernelStructure | Rejection:
    """One matmul and an elementwise epilogue of its output shape. An op that neither reads the product nor
    feeds it (a side input of the epilogue, `residual * 0.5`) belongs to the epilogue too."""
    group = set(order)
    after = facts.descendants(mm, group)
    out_shape = mm.outputs[0].shape
    for n in order:
        if n is mm:
            continue
        if n not in after and mm in facts.descendants(n, group):
            return Rejection("matmul_prologue", f"{facts.label(n)} would be a prologue of matmul {facts.label(mm)}: "
                             "the cube reads its operands from GM through L1, only an epilogue fuses (the matmul_prologue "
                             "pass may take in A's producer kernel later)")
        if n.outputs[0].shape != out_shape:
            return Rejection("matmul_epilogue_shape", f"{facts.label(n)} has shape {n.outputs[0].shape}, not the "
                             f"matmul output shape {out_shape}: not an elementwise epilogue")
    return KernelStructure(KernelKind.MATMUL, mm)


def reduction_rule(facts: GraphFacts, reds: list[Node], order: list[Node]) -> KernelStructure | Rejection:
    """Reductions over the same rows with their prologue and epilogue, or one column reduction with a prologue."""
    info = [facts.reduction[r] for r in reds]
    columns = [r for r, i in zip(reds, info) if i.k is None]
    if columns:
        c = columns[0]
        if len(reds) > 1:
            other = next(r for r in reds if r is not c)
            return Rejection("column_reduction_shared", f"{facts.label(c)} reduces leading axes and cannot share a "
                             f"kernel with another reduction ({facts.label(other)})")
        after = facts.descendants(c, set(order))
        if after:
            return Rejection("column_reduction_epilogue", f"{facts.label(c)} reduces leading axes (not the rows): a "
                             f"column reduction takes no epilogue ({facts.joined_labels(after)})")
        return KernelStructure(KernelKind.COLUMN_REDUCE, c, info[0].rows, 0, info[0].axes)
    head = info[0]
    for r, i in zip(reds, info):
        if (i.rows, i.k) != (head.rows, head.k):
            return Rejection("different_rows", f"{facts.label(reds[0])} reduces the last {head.k} axes of {head.rows} "
                             f"but {facts.label(r)} the last {i.k} of {i.rows}: not the same rows")
    rows, k = head.rows, head.k
    assert k is not None  # no column reduction here
    reduced = rows[: len(rows) - k]
    keep_shape = tuple(reduced) + (1,) * k
    dropped: set[Node] = set()
    for n in order:
        shape = n.outputs[0].shape
        if n in facts.reduction:
            if not facts.reduction[n].keepdims and k < len(rows):
                dropped.add(n)
            continue
        fed = [v.node for v in n.inputs if v.node in dropped]
        if fed and n.op == "expand_dims" and shape == keep_shape:
            continue  # puts the reduced axes back: a keepdims value again
        if fed:
            if shape != reduced:
                return Rejection("dropped_axes", f"{facts.label(n)} broadcasts {facts.label(fed[0])} (reduced without "
                                 f"keepdims, shape {reduced}) against shape {shape}: numpy aligns trailing axes, not the "
                                 "reduced rows")
            dropped.add(n)
        elif not broadcasts_to(shape, rows, symbols_agree=False):
            return Rejection("not_row_shaped", f"{facts.label(n)} has shape {shape}, which does not follow the rows "
                             f"of {rows}")
    axes = tuple(range(len(rows) - k, len(rows)))
    return KernelStructure(KernelKind.ROW_REDUCE, reds[0], rows, k, axes, frozenset(dropped))
