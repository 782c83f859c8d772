"""`mixed_kernels` (opt_level 2): a matmul kernel and the vector work on its result may share one launch.

The hardware's mixed (MIX) task runs a cube core and its vector cores together: the cube hands each output
block to the vector cores through a GM workspace tile that stays in L2, so the product is never written to
HBM and read back by a second launch. This pass marks every MATMUL kernel plan as eligible and logs the
ones whose ops go beyond the product (an epilogue: bias, activation, residual, scaling, casts); code generation
then lowers a plan as one mixed launch when the part the cube's FixPipe cannot take is non-empty and the
mixed template can tile it (else as the cube launch and a vector launch, saying why in the kernel's notes).
`disable_passes=["mixed_kernels"]` keeps them apart.

A kernel plan of an op whose launch does vector work before the cube (the registry's `mixed_prologue`: a
conv's weight conversion, templates/conv_launch.py) is marked too.
"""
from __future__ import annotations

from .. import ops
from ..ir import Graph
from .capacity import ancestors_within
from .decisions import DecisionKind, FusionDecision
from .passes import Pass, PassContext
from .plan import KernelKind


class MixedKernelsPass(Pass):
    name = "mixed_kernels"
    opt_level = 2
    root_only = True

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        """Marks kernel plans, leaves the graph as it is (so no stage of its own)."""
        for plan in ctx.state.kernels or ():
            prologue = _prologue(plan.anchor)
            if plan.kind is not KernelKind.MATMUL and prologue:
                plan.mixed = True
                ctx.state.fusion_decisions.append(FusionDecision(
                    DecisionKind.MIXED, "mixed_kernels", producer=f"{plan.anchor} (k{plan.group})",
                    consumer=prologue, detail="on the vector cores of the same launch"))
                ctx.stats["mixed"] += 1
            if plan.kind is not KernelKind.MATMUL:
                continue
            plan.mixed = True
            before = set(ancestors_within(plan.anchor_node, plan.nodes)) if plan.prologue is not None else set()
            others = {m.anchor_node for m in plan.horizontal}   # the other products of a multi-output launch
            rest = [n.op for n in plan.nodes if n is not plan.anchor_node and n not in before and n not in others]
            if not rest:
                continue
            pro = f"; its A operand's producer ({', '.join(n.op for n in plan.nodes if n in before)}) runs on the " \
                  "vector cores first" if before else ""
            ctx.state.fusion_decisions.append(FusionDecision(
                DecisionKind.MIXED, "mixed_kernels", producer=f"{plan.anchor} (k{plan.group})",
                consumer=", ".join(rest), detail=f"its result stays in an L2-resident workspace tile{pro}"))
            ctx.stats["mixed"] += 1
        return False


def _prologue(op: str) -> str:
    """The vector work op's own launch does before the cube (the registry's `mixed_prologue`), or ""."""
    return ops.get(op).mixed_prologue if ops.exists(op) else ""
