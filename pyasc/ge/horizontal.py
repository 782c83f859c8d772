"""`horizontal_fusion` (opt_level 2): independent kernels run as one multi-output launch (products of one A; the
same vector kernel on several inputs).

A Llama block projects one normed input three times (x @ Wq, x @ Wk, x @ Wv) and twice more for SwiGLU
(x @ Wg, x @ Wu). After fusion each product is a kernel plan of its own, so a launch each: every launch pays the
chip's start-up (~2,500 cycles on the 910B, as much as a small product's work) and reads A again. A multi-output
matmul takes them in one launch: the cube cores walk each product's output blocks in turn with the same tiling
and buffers (codegen/templates/horizontal.py), A stays in L2 between them, and each result goes to its own
output (the weights are not concatenated: that would be a launch of its own). Likewise the same vector kernel
on several inputs (RoPE applied to q and to k): one launch runs the parts in turn. A product whose epilogue reads
the others' results (SwiGLU's gate, silu(x @ Wg) * (x @ Wu)) may join its A's group last: its launch part then
runs after an all-core barrier.

Split like the other backend passes: the rule is data (`RULES`: which plans may share a launch, as a key
two plans must agree on: `shared_a`, plain 2-D products of one A with same-typed B; `same_kernel`, elementwise
kernels with the same ops, attributes and types that read a common input), `find_groups` is the analysis (the groups and every refusal,
with the reason) and `apply_groups` the rewrite of the kernel schedule. A group becomes one KernelPlan whose
`horizontal` lists the members' plans (the first's anchor is its anchor), placed at the first member's step
(every member's inputs are ready there and no member but a last consumer reads another's result: the analysis
checks). Codegen runs it as one launch when every member alone would be one launch of a template with a
multi-output form (codegen/horizontal_plan.py), else a launch per member, saying why. Grouping is not priced:
the parts run in turn on the same cores as their own launches would, so a group only saves launch start-ups
(and re-reads of a shared operand from HBM). Every decision is in the fusion log (rule "horizontal");
`disable_passes=["horizontal_fusion"]` keeps a launch per kernel.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Hashable, Sequence

from ..ir import Graph, Node, Value, node_names
from ..ir.printer import attr_key
from .decisions import DecisionKind, FusionDecision
from .passes import Pass, PassContext
from .plan import KernelKind, KernelPlan

RULE = "horizontal"   # the decisions' rule name


@dataclass(frozen=True)
class HorizontalRule:
    """Plans of `kinds` may share a launch when `key` gives them the same key; `refusal` says why one may not
    (or ""). A rule with `shared` groups the plans reading one operand (the products of one A) and logs why a
    reader is left out; one without groups any plans with equal keys. `consumer` picks the members that do more
    than the plain form (see the field)."""

    name: str
    what: str                            # what the members are, for the fusion log
    kinds: tuple[KernelKind, ...]
    key: Callable[[KernelPlan], Hashable]
    refusal: Callable[[KernelPlan], str]
    shared: Callable[[KernelPlan], Value] | None = None
    # a member whose kernel does more than the rule's plain form (a product with an epilogue): one may join a
    # group, last, when it reads other members' results (their launch part is then a barrier ahead of it)
    consumer: Callable[[KernelPlan], bool] | None = None


def _plain_matmul_refusal(plan: KernelPlan) -> str:
    """Why a plan reading a shared A is not a product the multi-output launch takes, or "" (an epilogue is the
    group's business: `_with_consumer`)."""
    node = plan.anchor_node
    if node.op != "matmul":
        return f"it is a {node.op} (bias or activation on the cube), not a plain product"
    if node.attrs.get("transpose_a") or node.attrs.get("transpose_b"):
        return "it reads an operand transposed"
    if node.inputs[0].type.ndim != 2 or node.inputs[1].type.ndim != 2:
        return "it is a batched or vector product (the multi-output launch takes 2-D ones)"
    return ""


def _shared_a_key(plan: KernelPlan) -> Hashable:
    """Products of one A with same-typed B: their launches have the same tiling, buffers and block count."""
    node = plan.anchor_node
    b, out = node.inputs[1], node.out()
    return (node.inputs[0], _type_key(b), _type_key(out))


def _type_key(v: Value) -> Hashable:
    return (tuple(v.type.shape), v.type.dtype, v.type.format)


def node_keys(plan: KernelPlan) -> dict[Node, Hashable]:
    """Each node's computation as a key: its op, attributes and types and, per input, the key of the node
    computing it inside the plan or the type of the GM tensor it reads. Independent of the order fusion listed the
    nodes and inputs in (two inputs of one type are alike: each kernel binds its own tensors to its parameters)."""
    keys: dict[Node, Hashable] = {}
    for n in plan.nodes:   # topological order: every producer inside the plan is keyed first
        attrs = tuple(sorted((k, attr_key(v)) for k, v in n.attrs.items() if k != "fusion_group"))
        ins = tuple((keys[v.node], v.index) if v.node in keys else ("x", _type_key(v)) for v in n.inputs)
        # a digest, not the nested tuple: a key embedding its producers' keys grows with every path through the
        # plan (exponentially where values are read twice), and so would hashing and comparing it
        text = repr((n.op, attrs, tuple(_type_key(v) for v in n.values), ins))
        keys[n] = hashlib.blake2b(text.encode(), digest_size=16).digest()
    return keys


def kernel_signature(plan: KernelPlan) -> Hashable:
    """The plan's computation up to which GM tensors it reads and writes: its nodes' keys (`node_keys`), its
    inputs' types and which values it writes. Plans with equal signatures run the same tile program on different
    tensors."""
    keys = node_keys(plan)
    return (id(plan.graph), frozenset(Counter(keys.values()).items()), frozenset(Counter(map(_type_key, plan.inputs))
                                                                                  .items()),
            tuple((keys[v.node], v.index) for v in plan.outputs))


def aligned(first: KernelPlan, member: KernelPlan) -> KernelPlan:
    """`member` with its nodes and inputs in the order of their counterparts in `first` (same-signature plans:
    codegen then builds the same kernel graph, buffers and all, for each). The counterparts are paired from the
    outputs back, input by input; `member` as it is when they do not pair one to one."""
    mine, theirs = set(first.nodes), set(member.nodes)
    pairs: dict[Node, Node] = {}
    ext: dict[Value, Value] = {}
    stack = list(zip(first.outputs, member.outputs))
    while stack:
        a, b = stack.pop()
        if a.node not in mine:
            if b.node in theirs or ext.setdefault(a, b) != b:
                return member
            continue
        if b.node not in theirs or a.index != b.index or len(a.node.inputs) != len(b.node.inputs):
            return member
        if pairs.setdefault(a.node, b.node) is not b.node:
            return member
        stack.extend(zip(a.node.inputs, b.node.inputs))
    if len(pairs) != len(first.nodes) or len(set(pairs.values())) != len(member.nodes) or \
            any(v not in ext for v in first.inputs) or len(set(ext.values())) != len(member.inputs):
        return member
    return replace(member, nodes=[pairs[n] for n in first.nodes], inputs=[ext[v] for v in first.inputs])


RULES: tuple[HorizontalRule, ...] = (
    HorizontalRule("shared_a", "products of one A", (KernelKind.MATMUL,), _shared_a_key, _plain_matmul_refusal,
                   shared=lambda plan: plan.anchor_node.inputs[0], consumer=lambda plan: len(plan.nodes) > 1),
    HorizontalRule("same_kernel", "kernels of the same computation sharing an input", (KernelKind.ELEMENTWISE,),
                   kernel_signature, lambda plan: ""),
)


@dataclass(frozen=True)
class HorizontalGroup:
    """One decision of the analysis: these plans (schedule order) become one launch."""

    rule: str
    members: tuple[KernelPlan, ...]


def find_groups(kernels: Sequence[KernelPlan], rules: Sequence[HorizontalRule] = RULES
                ) -> tuple[list[HorizontalGroup], list[FusionDecision]]:
    """The groups of `kernels` that may share a launch, and a decision for each plan left out of one it could
    have joined (why). Analysis only: nothing changes."""
    groups: list[HorizontalGroup] = []
    refusals: list[FusionDecision] = []
    step = {id(k): i for i, k in enumerate(kernels)}
    producer_step = {v: i for i, k in enumerate(kernels) for v in k.outputs}
    labels: dict[Graph, dict[Node, str]] = {}
    taken: set[int] = set()

    def label(p: KernelPlan) -> str:
        names = labels.setdefault(p.graph, {n: f"{n.op} %{m}" for n, m in node_names(p.graph).items()})
        return names.get(p.anchor_node, p.anchor)

    for rule in rules:
        plans = [k for k in kernels if k.kind in rule.kinds and k.prologue is None and not k.horizontal
                 and id(k) not in taken]
        buckets: list[list[KernelPlan]] = []
        if rule.shared is None:
            by_key: dict[Hashable, list[KernelPlan]] = {}
            for plan in plans:
                if not rule.refusal(plan):
                    by_key.setdefault(rule.key(plan), []).append(plan)
            buckets = [group for same in by_key.values() for group in _sharing(same)]
        else:
            by_shared: dict[Value, list[KernelPlan]] = {}
            for plan in plans:
                by_shared.setdefault(rule.shared(plan), []).append(plan)
            for readers in (r for r in by_shared.values() if len(r) >= 2):
                by_key = {}
                for plan in readers:
                    why = rule.refusal(plan)
                    if why:
                        refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(plan), "", why))
                    else:
                        by_key.setdefault(rule.key(plan), []).append(plan)
                if len(by_key) > 1:   # products of the same A with other B shapes: a group each, say so
                    refusals += [FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m[0]), "",
                                                "no other product of its A has a B and result of its shape")
                                 for m in by_key.values() if len(m) == 1]
                buckets += list(by_key.values())
        for members in buckets:
            if len(members) < 2:
                continue
            last = None
            if rule.consumer is not None:
                members = _with_consumer(members, rule.consumer, step, refusals, label)
                last = members[-1] if members and rule.consumer(members[-1]) else None
            if len(members) < 2:   # every product of this A has an epilogue: nothing to launch together
                continue
            members = _ready_members(members, last, step, producer_step, refusals, label)
            if len(members) >= 2:
                groups.append(HorizontalGroup(rule.name, tuple(members)))
                taken.update(id(m) for m in members)
    return groups, refusals


def _sharing(plans: list[KernelPlan]) -> list[list[KernelPlan]]:
    """`plans` in groups that read a common input (RoPE on q and on k: cos and sin), the largest first: a launch
    of kernels sharing nothing would save its start-up alone."""
    out: list[list[KernelPlan]] = []
    left = list(plans)
    while len(left) >= 2:
        readers: dict[Value, list[KernelPlan]] = {}
        for p in left:
            for v in dict.fromkeys(p.inputs):
                if v.node.op != "Const":   # (a constant is no operand worth reading once)
                    readers.setdefault(v, []).append(p)
        best = max(readers.values(), key=len, default=[])
        if len(best) < 2:
            break
        out.append(best)
        taken = {id(p) for p in best}
        left = [p for p in left if id(p) not in taken]
    return out


def _with_consumer(members: list[KernelPlan], consumer: Callable[[KernelPlan], bool], step: dict[int, int],
                   refusals: list[FusionDecision], label: Callable[[KernelPlan], str]) -> list[KernelPlan]:
    """The plain members in schedule order and, last, at most one consumer: the first that reads a plain
    member's result (the others are refused, saying why)."""
    plain = sorted((m for m in members if not consumer(m)), key=lambda p: step[id(p)])
    made = {v for m in plain for v in m.outputs}
    chosen: list[KernelPlan] = []
    for m in sorted((m for m in members if consumer(m)), key=lambda p: step[id(p)]):
        ops = ", ".join(n.op for n in m.nodes if n is not m.anchor_node)
        if not plain or not any(v in made for v in m.inputs):
            why = f"its kernel has an epilogue ({ops}) that reads no other product of its A"
        elif chosen:
            why = f"its kernel has an epilogue ({ops}) and {label(chosen[0])}'s already takes the launch"
        else:
            chosen.append(m)
            continue
        refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m), "", why))
    return plain + chosen


def _ready_members(members: list[KernelPlan], last: KernelPlan | None, step: dict[int, int],
                   producer_step: dict[Value, int], refusals: list[FusionDecision],
                   label: Callable[[KernelPlan], str]) -> list[KernelPlan]:
    """The members whose inputs are all computed before the first member's step (the group launches there) and
    that read no other member's result (they are independent), but a last consumer (`_with_consumer`), which
    may read the results of the members before it (`last`: it, kept last; the others go in schedule order)."""
    members = sorted((m for m in members if m is not last), key=lambda p: step[id(p)]) + ([last] if last else [])
    first = min(step[id(m)] for m in members)
    outputs = {v for m in members for v in m.outputs}
    kept = []
    for m in members:
        if m is last:
            earlier = {v for k in kept for v in k.outputs}
            if any(v in outputs and v not in earlier for v in m.inputs):
                refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m), label(members[0]),
                                               "it reads the result of a member that is not in the launch"))
            elif any(producer_step.get(v, -1) >= first and v not in earlier for v in m.inputs):
                refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m), label(members[0]),
                                               "an input of its is computed after the first member's launch"))
            else:
                kept.append(m)
        elif any(v in outputs for v in m.inputs):
            refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m), label(members[0]),
                                           "it reads the result of another member"))
        elif step[id(m)] != first and any(producer_step.get(v, -1) >= first for v in m.inputs):
            refusals.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, label(m), label(members[0]),
                                           "an input of its is computed after the first member's launch"))
        else:
            kept.append(m)
    return kept


def apply_groups(kernels: list[KernelPlan], groups: Sequence[HorizontalGroup]) -> None:
    """Replace each group's plans by one plan at its first member's step (the rewrite)."""
    for g in groups:
        first = g.members[0]
        members = [first] + [aligned(first, m) for m in g.members[1:]]
        nodes = [n for m in members for n in m.nodes]
        made = {v for m in members for v in m.outputs}
        inputs = list(dict.fromkeys(v for m in members for v in m.inputs if v not in made))
        inside, users = set(nodes), first.graph.users()
        # a member's result only later members read stays inside the launch (workspace scratch in codegen)
        outputs = [v for v in made if v in first.graph.outputs or any(r not in inside for r in users.readers(v))]
        outputs = [v for m in members for v in m.outputs if v in outputs]
        merged = KernelPlan(first.group, first.graph, nodes, inputs, outputs, first.category, first.structure,
                            first.working_set, first.mixed, horizontal=tuple(members))
        for n in nodes:
            if "fusion_group" in n.attrs:
                n.attrs["fusion_group"] = first.group
        kernels[kernels.index(first)] = merged
        for m in g.members[1:]:
            kernels.remove(m)


def has_consumer(plan: KernelPlan) -> bool:
    """Whether a multi-output MATMUL plan ends with a product whose epilogue reads the others (a mixed launch)."""
    return plan.kind is KernelKind.MATMUL and bool(plan.horizontal) and len(plan.horizontal[-1].nodes) > 1


class HorizontalFusionPass(Pass):
    name = "horizontal_fusion"
    opt_level = 2
    root_only = True

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        kernels = ctx.state.kernels
        if not kernels:
            return False
        changed = False
        for rule in RULES:   # each on the schedule the rules before it left (their groups launch earlier)
            changed |= self._apply(kernels, rule, ctx)
        return changed

    def _apply(self, kernels: list[KernelPlan], rule: HorizontalRule, ctx: PassContext) -> bool:
        groups, refusals = find_groups(kernels, (rule,))
        ctx.state.fusion_decisions.extend(refusals)
        ctx.stats["refused"] += len(refusals)
        for g in groups:
            names = {n: f"{n.op} %{m}" for n, m in node_names(g.members[0].graph).items()}
            labels = [names.get(m.anchor_node, m.anchor) for m in g.members]
            reads = f"; the epilogue of {labels[-1]} reads the others' results" \
                if rule.consumer is not None and rule.consumer(g.members[-1]) else ""
            ctx.state.fusion_decisions.append(FusionDecision(
                DecisionKind.FUSED, RULE, ", ".join(labels[1:]), labels[0],
                f"{len(g.members)} {rule.what} ({rule.name}) in one multi-output launch{reads}",
                consumers=len(g.members)))
            ctx.stats["grouped"] += len(g.members)
        apply_groups(kernels, groups)
        return bool(groups)
