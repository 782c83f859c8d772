"""Reshape sinking: elementwise ops after a reshape of a computed value run in the value's own (finer) shape.

A reshape of a value an elementwise kernel computes is a kernel boundary: fusion's vector kernels read their
inputs through views (a reshape of an input is free, fusion's phase 4) but compute every value in one domain,
so `where(...)` of shape (12, 256, 2, 32) and the ops reading it as (12, 256, 64) are two launches, with a GM
round trip between them. That is how every concatenate along an axis arrives (its decomposition stacks the
pieces on a new axis and merges it, ops/joining.py): RoPE's `rotate_half(x) = concatenate((-x2, x1), -1)`
read by `x * cos + rotate_half(x) * sin` is two launches per tensor in numpy ports of Llama.

When the reshape only splits or merges runs of axes (the coarse shape's axes are products of consecutive fine
axes: a refinement, `refinement`), every elementwise reader can compute in the fine shape instead, its other
operands reshaped to match (`refined_shape`: a size-1 or missing axis stays broadcast), and the reshape moves
below it. Repeated, the reshape sinks to the first reader that is not elementwise (a reduction, a matmul,
attention, a graph output), where it is a view of a kernel's result again: free (a contiguous reshape is an
alias, codegen/templates/datamove.py) or read through by the next kernel. An operand that is itself computed
by an elementwise op read only here is rebuilt in the fine shape too (no reshape of a computed value is left
in front of the reader); any other operand gets a reshape (of an input or of another kernel's result: a view,
read by strides).

Analysis (`plan_sink`: which reader, in which shape, or why not) is separate from the rewrite (`sink`), and
the pass records both in the fusion log: a PATTERN decision "reshape_sinking" per reshape sunk, a NEAR_MISS
per reshape of a computed value left in place, with the reason (its reader is not elementwise, a dynamic
shape, a reshape that is not a split or merge of axes).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .. import ops
from ..ir import Graph, Node, UseIndex, Value, node_names
from .decisions import DecisionKind, FusionDecision
from .edit import build_node
from .passes import PassContext
from .rewrite import Replacement, RewriteRule, Rewriter, RulePass
from .simplify import op_attrs

Shape = tuple[int, ...]
RULE = "reshape_sinking"


def elementwise(node: Node) -> bool:
    """An op computed element by element (with numpy broadcasting) that keeps no axis attributes: the
    registry's elementwise and broadcast categories without the views among them (expand_dims, broadcast_to)."""
    if not ops.exists(node.op) or len(node.outputs) != 1:
        return False
    op = ops.get(node.op)
    return op.category <= ops.Category.BROADCAST and op.pure and not op.strided_view and not op.structural


def _static(shape: Sequence[object]) -> Shape | None:
    return tuple(shape) if all(isinstance(d, int) for d in shape) else None


def refinement(fine: Shape, coarse: Shape) -> list[list[int]] | None:
    """Per axis of `coarse`, the run of consecutive axes of `fine` whose product it is; None when `fine` is not
    such a split of `coarse` (a reshape that reorders how elements group, or of another size). Size-1 axes of
    `fine` join the run before them (the first run when they lead)."""
    real = [i for i, d in enumerate(fine) if d != 1]
    runs: list[list[int]] = []
    k = 0
    for c in coarse:
        if c == 1:
            runs.append([])
            continue
        run, size = [], 1
        while k < len(real) and size < c:
            size *= fine[real[k]]
            run.append(real[k])
            k += 1
        if size != c:
            return None
        runs.append(run)
    if k != len(real):
        return None
    # every size-1 axis of `fine` joins a run that has axes (the one before it, else the first)
    for i, d in enumerate(fine):
        if d == 1:
            owner = next((r for r in reversed(runs) if r and r[0] < i), None) or next((r for r in runs if r), None)
            if owner is None:
                return None
            owner.append(i)
            owner.sort()
    return runs if all(r == list(range(r[0], r[-1] + 1)) for r in runs if r) else None


def refined_shape(shape: Shape, coarse: Shape, fine: Shape, runs: list[list[int]]) -> Shape | None:
    """`shape` (broadcastable to `coarse`, aligned by its trailing axes) as a shape broadcastable to `fine`:
    an axis of full size splits as `coarse`'s did, a size-1 axis stays broadcast over its whole run."""
    lead = len(coarse) - len(shape)
    if lead < 0:
        return None
    out: list[int] = []
    for i, d in enumerate(shape):
        run = runs[lead + i]
        if d == coarse[lead + i]:
            out += [fine[j] for j in run]
        elif d == 1:
            out += [1] * len(run)
        else:
            return None
    return tuple(out)


@dataclass(frozen=True)
class SinkPlan:
    """Reader `node` of `reshape` computes in `fine` (the shape of the reshape's input) instead of `coarse`."""

    node: Node
    reshape: Node
    fine: Shape
    coarse: Shape
    runs: list[list[int]]


def _computed_merge(v: Value) -> Node | None:
    """The reshape producing `v` when it reshapes a value an elementwise op computes, else None."""
    r = v.node
    if r.op != "reshape" or not elementwise(r.inputs[0].node):
        return None
    return r


def plan_sink(node: Node) -> SinkPlan | str | None:
    """How elementwise `node` computes in the fine shape of a reshaped operand, or why it cannot (None: no
    reshape of a computed value among its operands)."""
    for v in node.inputs:
        r = _computed_merge(v)
        if r is None:
            continue
        fine, coarse = _static(r.inputs[0].type.shape), _static(v.type.shape)
        out = _static(node.outputs[0].shape)
        if fine is None or coarse is None or out is None:
            return "a dynamic shape"
        if out != coarse:
            return f"{node.op} broadcasts it from {coarse} to {out}"
        runs = refinement(fine, coarse)
        if runs is None:
            return f"the reshape {fine} -> {coarse} is not a split or merge of axes"
        return SinkPlan(node, r, fine, coarse, runs)
    return None


def sink(plan: SinkPlan, uses: UseIndex) -> Replacement | None:
    """`plan.node` rebuilt in the fine shape and reshaped back: the rewrite of `plan_sink`'s plan."""
    built: list[Node] = []
    source = plan.reshape.out()

    def refined(v: Value, reader: Node) -> Value | None:
        if v is source:
            return plan.reshape.inputs[0]
        shape = _static(v.type.shape)
        target = None if shape is None else refined_shape(shape, plan.coarse, plan.fine, plan.runs)
        if target is None:
            return None
        if target == shape:
            return v
        n = v.node
        if n.op == "reshape" and tuple(n.inputs[0].type.shape) == target:
            return n.inputs[0]                   # a reshape of this same split: its input is the fine value
        if elementwise(n) and uses.sole_reader(v) is reader:   # computed here alone: compute it finer too
            inner = [refined(x, n) for x in n.inputs]
            if all(x is not None for x in inner):
                moved = build_node(n.op, inner, op_attrs(n), loc=n.loc)
                if moved is not None and tuple(moved.outputs[0].shape) == target:
                    built.append(moved)
                    return moved.out()
        r = build_node("reshape", [v], {"shape": target}, loc=n.loc)
        if r is None:
            return None
        built.append(r)
        return r.out()

    inputs = [refined(v, plan.node) for v in plan.node.inputs]
    if any(v is None for v in inputs):
        return None
    moved = build_node(plan.node.op, inputs, op_attrs(plan.node), loc=plan.node.loc, name=plan.node.name)
    if moved is None or tuple(moved.outputs[0].shape) != plan.fine:
        return None
    back = build_node("reshape", [moved.out()], {"shape": plan.coarse}, loc=plan.reshape.loc)
    if back is None:
        return None
    return Replacement([back.out()], [*built, moved, back])


def _label(names: dict[Node, str], n: Node) -> str:
    """"exp %2" for a node of the graph as the pass found it; the op alone for one a rewrite made."""
    return f"{n.op} %{names[n]}" if n in names else n.op


def left_in_place(graph: Graph) -> list[tuple[Node, Node, str]]:
    """(reshape, reader, why) for every reshape of a computed value that still has a reader it did not sink
    below: the kernel boundaries this pass leaves."""
    uses = UseIndex(graph)
    found = []
    for r in graph.nodes:
        if _computed_merge(r.out()) is None:
            continue
        for reader in uses.users(r):
            if not elementwise(reader):
                found.append((r, reader, f"{reader.op} is not elementwise (the reshape stays a view of a kernel's "
                                         "result)"))
                continue
            why = plan_sink(reader)
            if isinstance(why, str):
                found.append((r, reader, why))
    return found


class ReshapeSinking(RulePass):
    name = RULE
    opt_level = 2

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        def rule(node: Node, rw: Rewriter) -> Replacement | None:
            plan = plan_sink(node)
            if not isinstance(plan, SinkPlan):
                return None
            names = rw.memo.setdefault("names", node_names(rw.graph))
            done = sink(plan, rw.uses)
            if done is not None:
                ctx.state.pattern_decisions.append(FusionDecision(
                    DecisionKind.PATTERN, RULE, _label(names, plan.reshape), _label(names, node),
                    f"{node.op} computed in {plan.fine}, the reshape to {plan.coarse} after it"))
            return done

        return [RewriteRule("sink_reshape", lambda op: op.category <= ops.Category.BROADCAST and op.pure, rule)]

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        changed = super().run(graph, ctx)
        names = node_names(graph)
        for r, reader, why in left_in_place(graph):
            ctx.state.pattern_decisions.append(FusionDecision(
                DecisionKind.NEAR_MISS, RULE, _label(names, r), _label(names, reader),
                f"it reshapes {_label(names, r.inputs[0].node)} and stays before {_label(names, reader)}: {why}"))
        return changed
