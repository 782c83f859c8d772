"""`horizontal_matmul` (opt_level 2): independent matmuls that read the same A run as one launch.

A Llama block projects one normed input three times (x @ Wq, x @ Wk, x @ Wv) and twice more for SwiGLU
(x @ Wg, x @ Wu). After fusion each product is a kernel plan of its own, so a launch each: every launch pays the
chip's start-up (~2,500 cycles on the 910B, as much as a small product's work) and reads A again. A multi-output
matmul takes them in one launch: the cube cores walk each product's output blocks in turn with the same tiling
and buffers (codegen/templates/horizontal.py), A stays in L2 between them, and each result goes to its own
output (the weights are not concatenated: that would be a launch of its own).

Split like the other backend passes: the rule is data (`RULES`: which plans may share a launch, as a key
two plans must agree on), `find_groups` is the analysis (the groups and every refusal, with the reason) and
`apply_groups` the rewrite of the kernel schedule. A group becomes one KernelPlan whose `horizontal` lists the
members' matmul nodes (the first is its anchor), placed at the first member's step (every member's inputs are
ready there: the analysis checks). Every decision is in the fusion log (rule "horizontal");
`disable_passes=["horizontal_matmul"]` keeps a launch per product.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

from ..ir import Graph, Node, Value, node_names
from .decisions import DecisionKind, FusionDecision
from .passes import Pass, PassContext
from .plan import KernelKind, KernelPlan

RULE = "horizontal"   # the decisions' rule name


@dataclass(frozen=True)
class HorizontalRule:
    """Plans may share a launch when `key` gives both the same non-None key; `refusal` says why one that reads
    a shared operand may not (or "")."""

    name: str
    key: Callable[[KernelPlan], Hashable | None]
    refusal: Callable[[KernelPlan], str]
    shared: Callable[[KernelPlan], Value]     # the operand the members share


def _plain_matmul_refusal(plan: KernelPlan) -> str:
    """Why a plan reading a shared A is not a plain product the multi-output launch takes, or ""."""
    node = plan.anchor_node
    if plan.prologue is not None:
        return "its kernel computes A first (a prologue)"
    if len(plan.nodes) != 1:
        return f"its kernel has an epilogue ({', '.join(n.op for n in plan.nodes if n is not node)})"
    if node.op != "matmul":
        return f"it is a {node.op} (bias or activation on the cube), not a plain product"
    if node.attrs.get("transpose_a") or node.attrs.get("transpose_b"):
        return "it reads an operand transposed"
    a, b = node.inputs[0], node.inputs[1]
    if a.type.ndim != 2 or b.type.ndim != 2:
        return "it is a batched or vector product (the multi-output launch takes 2-D ones)"
    return ""


def _shared_a_key(plan: KernelPlan) -> Hashable | None:
    """Products of one A with same-typed B: their launches have the same tiling, buffers and block count."""
    node = plan.anchor_node
    b, out = node.inputs[1], node.out()
    return (id(plan.graph), node.inputs[0], tuple(b.type.shape), b.type.dtype, b.type.format, tuple(out.type.shape),
            out.type.dtype)


RULES: tuple[HorizontalRule, ...] = (
    HorizontalRule("shared_a", _shared_a_key, _plain_matmul_refusal, lambda plan: plan.anchor_node.inputs[0]),
)


@dataclass(frozen=True)
class HorizontalGroup:
    """One decision of the analysis: these plans (schedule order) become one launch."""

    rule: str
    members: tuple[KernelPlan, ...]
    shared: Value


def _matmul_plans(kernels: Sequence[KernelPlan]) -> list[KernelPlan]:
    return [k for k in kernels if k.kind is KernelKind.MATMUL and k.prologue is None and not k.horizontal]


def find_groups(kernels: Sequence[KernelPlan], rules: Sequence[HorizontalRule] = RULES
                ) -> tuple[list[HorizontalGroup], list[FusionDecision]]:
    """The groups of `kernels` that may share a launch, and a decision for each plan that reads a shared operand
    and was left out (why). Analysis only: nothing changes."""
    groups: list[HorizontalGroup] = []
    refusals: list[FusionDecision] = []
    step = {id(k): i for i, k in enumerate(kernels)}
    producer_step = {v: i for i, k in enumerate(kernels) for v in k.outputs}
    labels: dict[Graph, dict[Node, str]] = {}
    taken: set[int] = set()
    for rule in rules:
        by_shared: dict[Value, list[KernelPlan]] = {}
        for plan in _matmul_plans(kernels):
            if id(plan) not in taken:
                by_shared.setdefault(rule.shared(plan), []).append(plan)
        for shared, readers in by_shared.items():
            if len(readers) < 2:
                continue
            names = labels.setdefault(readers[0].graph, {n: f"{n.op} %{m}" for n, m in
                                                          node_names(readers[0].graph).items()})
            label = lambda p: names.get(p.anchor_node, p.anchor)  # noqa: E731 - a local shorthand
            by_key: dict[Hashable, list[KernelPlan]] = {}
            for plan in readers:
                why = rule.refusal(plan)
                if why:
                    refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(plan), "", why))
                    continue
                by_key.setdefault(rule.key(plan), []).append(plan)
            for members in by_key.values():
                members = _ready_members(members, step, producer_step, refusals, label)
                if len(members) >= 2:
                    groups.append(HorizontalGroup(rule.name, tuple(members), shared))
                    taken.update(id(m) for m in members)
            sizes = {key: len(m) for key, m in by_key.items()}
            if len(sizes) > 1:   # products of the same A with other B shapes: a group each, say so
                for key, members in by_key.items():
                    if len(members) == 1:
                        refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(members[0]), "",
                                                       "no other product of its A has a B and result of its shape"))
    return groups, refusals


def _ready_members(members: list[KernelPlan], step: dict[int, int], producer_step: dict[Value, int],
                   refusals: list[FusionDecision], label: Callable[[KernelPlan], str]) -> list[KernelPlan]:
    """The members whose inputs are all computed before the first member's step (the group launches there) and
    that read no other member's result (they are independent)."""
    members = sorted(members, key=lambda p: step[id(p)])
    first = step[id(members[0])]
    outputs = {v for m in members for v in m.outputs}
    kept = []
    for m in members:
        late = [v for v in m.inputs if producer_step.get(v, -1) >= first and v not in outputs]
        if any(v in outputs for v in m.inputs):
            refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m), label(members[0]),
                                           "it reads the result of another product of the same A"))
        elif late and m is not members[0]:
            refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m), label(members[0]),
                                           "its B is computed after the first product's launch"))
        else:
            kept.append(m)
    return kept


def apply_groups(kernels: list[KernelPlan], groups: Sequence[HorizontalGroup]) -> None:
    """Replace each group's plans by one plan at its first member's step (the rewrite)."""
    for g in groups:
        first = g.members[0]
        nodes = [n for m in g.members for n in m.nodes]
        inputs = list(dict.fromkeys(v for m in g.members for v in m.inputs))
        outputs = [v for m in g.members for v in m.outputs]
        merged = KernelPlan(first.group, first.graph, nodes, inputs, outputs, first.category, first.structure,
                            first.working_set, first.mixed, horizontal=tuple(m.anchor_node for m in g.members))
        for n in nodes:
            if "fusion_group" in n.attrs:
                n.attrs["fusion_group"] = first.group
        kernels[kernels.index(first)] = merged
        for m in g.members[1:]:
            kernels.remove(m)


class HorizontalMatmulPass(Pass):
    name = "horizontal_matmul"
    opt_level = 2
    root_only = True

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        kernels = ctx.state.kernels
        if not kernels:
            return False
        groups, refusals = find_groups(kernels)
        ctx.state.fusion_decisions.extend(refusals)
        ctx.stats["refused"] += len(refusals)
        for g in groups:
            names = {n: f"{n.op} %{m}" for n, m in node_names(g.members[0].graph).items()}
            labels = [names.get(m.anchor_node, m.anchor) for m in g.members]
            ctx.state.fusion_decisions.append(FusionDecision(
                DecisionKind.FUSED, RULE, ", ".join(labels[1:]), labels[0],
                f"{len(g.members)} products of one A ({g.rule}) in one multi-output cube launch",
                consumers=len(g.members)))
            ctx.stats["grouped"] += len(g.members)
        apply_groups(kernels, groups)
        return bool(groups)
