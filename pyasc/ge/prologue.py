"""`matmul_prologue` (opt_level 2): a matmul kernel takes in the kernel that computes its A operand.

A layer norm (or an RMS norm, a cast, a scale) of the rows of A followed by A @ W is two launches after
fusion: the vector kernel writes A to HBM and the cube kernel reads it back. In a mixed launch
(`mixed_kernels`) the vector cores can compute A first and hand it to the cube cores through an L2-resident
workspace (codegen/templates/mixed_prologue.py), saving a launch and the round trip. This pass offers every
MATMUL kernel plan the kernel plan producing its A operand, after fusion and before `mixed_kernels` marks the
plans, and merges the two when

- the producer is row-local over A's rows: an elementwise kernel, or a row reduction over A's last axis
  (K; layer norm, RMS norm, softmax) whose input has A's shape, and the matmul does not read A transposed;
- A is the producer's only result and the matmul its only reader (A is not a graph result either: the
  prologue writes only the cube's workspace);
- the capacity function (codegen's, which asks the mixed template) accepts the merged kernel.

A multi-output plan (ge.horizontal) takes a prologue too (the vector cores compute A first, every product
reads it from the launch's workspace): A's readers are then its products.

Every offer is a decision in the fusion log: FUSED or NOT_FUSED with rule "prologue" and the reason.
The merged plan keeps the matmul's group id and records the producer's structure in `KernelPlan.prologue`;
the producer's nodes take that group id. The pass does nothing when `mixed_kernels` is disabled or below
its opt level (without a mixed launch the prologue is a launch of its own anyway); `disable_passes=
["matmul_prologue"]` turns it off alone.
"""
from __future__ import annotations

from ..ir import Graph, Node, Value, node_names
from .capacity import CapacityVerdict, FusionCandidate
from .decisions import DecisionKind, FusionDecision
from .fusion import capacity_of
from .horizontal import has_consumer
from .mixed import MixedKernelsPass
from .passes import Pass, PassContext
from .plan import KernelKind, KernelPlan

RULE = "prologue"   # the decisions' rule name


class MatmulProloguePass(Pass):
    name = "matmul_prologue"
    opt_level = 2
    root_only = True

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        kernels = ctx.state.kernels
        if not kernels or not ctx.enabled(MixedKernelsPass())[0]:
            return False
        capacity, chip = capacity_of(ctx)
        labels: dict[Graph, dict[Node, str]] = {}
        changed = False
        for plan in [k for k in kernels if k.kind is KernelKind.MATMUL and k.prologue is None]:
            a = plan.anchor_node.inputs[0]
            producer = next((k for k in kernels if k.graph is plan.graph and a in k.outputs), None)
            if producer is None:
                continue   # A is an input of the graph (or a constant): nothing to take in
            names = labels.setdefault(plan.graph, {n: f"{n.op} %{m}" for n, m in node_names(plan.graph).items()})
            what, into = names.get(a.node, a.node.op), names.get(plan.anchor_node, plan.anchor)
            why = refusal(plan, producer, a, names)
            if not why:
                merged = merge(producer, plan)
                if plan.horizontal and not has_consumer(plan):
                    # plain products: A's producer runs on the vector cores alone, before them, as the kernel
                    # fusion already fitted (the cube's phase uses no UB)
                    verdict = CapacityVerdict(True, producer.working_set)
                else:   # a mixed launch: with a multi-output one, its mixed part's (ge.horizontal)
                    asked = merge(producer, plan.horizontal[-1]) if plan.horizontal else merged
                    verdict = capacity(FusionCandidate(plan.graph, asked.nodes, asked.structure, asked.inputs,
                                                       asked.outputs, chip, prologue=producer.structure))
                if verdict.fits:
                    merged.working_set = verdict.working_set
                    for n in producer.nodes:
                        n.attrs["fusion_group"] = plan.group
                    kernels.remove(producer)
                    kernels[kernels.index(plan)] = merged
                    ctx.state.fusion_decisions.append(FusionDecision(
                        DecisionKind.FUSED, RULE, what, into,
                        f"the vector cores compute A ({producer.kind.value}) before the cube in its launch"))
                    ctx.stats["merged"] += 1
                    changed = True
                    continue
                why = f"capacity: {verdict.reason}"
            ctx.state.fusion_decisions.append(FusionDecision(DecisionKind.NOT_FUSED, RULE, what, into, why))
            ctx.stats["refused"] += 1
        return changed


def refusal(plan: KernelPlan, producer: KernelPlan, a: Value, names: dict[Node, str]) -> str:
    """Why the kernel `producer` (which computes A) may not run as `plan`'s prologue, or ""."""
    st = producer.structure
    if st.kind not in (KernelKind.ELEMENTWISE, KernelKind.ROW_REDUCE):
        kind = st.kind.value.replace("_", " ")
        article = "an" if kind[0] in "aeiou" else "a"
        return f"not row-local: A comes from {article} {kind} kernel (a prologue is elementwise or a row reduction)"
    if st.kind is KernelKind.ROW_REDUCE and (st.k != 1 or tuple(st.rows) != tuple(a.type.shape)):
        return (f"not row-local: the kernel reduces the last {st.k} axes of {tuple(st.rows)}, not the rows of A "
                f"{tuple(a.type.shape)} along K")
    if a.type.ndim < 2 or plan.anchor_node.attrs.get("transpose_a"):
        return "A's rows are not the product's rows (a vector, or read transposed)"
    others = [v for v in producer.outputs if v != a]
    if others:
        return f"its kernel also writes {', '.join(names.get(v.node, v.node.op) for v in others)}"
    if a in plan.graph.outputs:
        return "A is also a result of the graph (the prologue writes only the cube's workspace)"
    products = [m.anchor_node for m in plan.horizontal] or [plan.anchor_node]   # (a multi-output launch's all)
    readers = [n for n in plan.graph.users().readers(a) if n not in products]
    if readers:
        return f"A is also read by {', '.join(dict.fromkeys(names.get(n, n.op) for n in readers))}"
    if any(a in n.inputs[1:] for n in products):
        return "A is also the matmul's other operand"
    return ""


def merge(producer: KernelPlan, plan: KernelPlan) -> KernelPlan:
    """The matmul plan with the producer's nodes in front (it keeps the matmul's group id)."""
    a = plan.anchor_node.inputs[0]
    inputs = list(dict.fromkeys(producer.inputs + [v for v in plan.inputs if v != a]))
    return KernelPlan(plan.group, plan.graph, producer.nodes + plan.nodes, inputs, list(plan.outputs),
                      max(producer.category, plan.category), plan.structure, plan.working_set, plan.mixed,
                      prologue=producer.structure, horizontal=plan.horizontal)
