"""`mixed_kernels` (opt_level 2): a matmul kernel and the vector work on its result may share one launch.

The hardware's mixed (MIX) task runs a cube core and its vector cores together: the cube hands each output
block to the vector cores through a GM workspace tile that stays in L2, so the product is never written to
HBM and read back by a second launch. This pass marks every MATMUL kernel plan as eligible and logs the
ones whose ops go beyond the product (an epilogue: bias, activation, residual, scaling, casts); code generation
then lowers a plan as one mixed launch when the part the cube's FixPipe cannot take is non-empty and the
mixed template can tile it (else as the cube launch and a vector launch, saying why in the kernel's notes).
`disable_passes=["mixed_kernels"]` keeps them apart.

A conv kernel plan (an op the cube computes whole: the registry's `cube_macs`) is marked too: its weight
conversion runs on the vector cores of the conv's own launch (templates/conv_launch.py).
"""
from __future__ import annotations

from .. import ops
from ..ir import Graph
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
            if plan.kind is not KernelKind.MATMUL and _cube_op(plan.anchor):
                plan.mixed = True
                ctx.state.fusion_decisions.append(FusionDecision(
                    DecisionKind.MIXED, "mixed_kernels", producer=f"{plan.anchor} (k{plan.group})",
                    consumer="its weight conversion", detail="on the vector cores of the same launch"))
                ctx.stats["mixed"] += 1
            if plan.kind is not KernelKind.MATMUL:
                continue
            plan.mixed = True
            rest = [n.op for n in plan.nodes if n is not plan.anchor_node]
            if not rest:
                continue
            ctx.state.fusion_decisions.append(FusionDecision(
                DecisionKind.MIXED, "mixed_kernels", producer=f"{plan.anchor} (k{plan.group})",
                consumer=", ".join(rest), detail="its result stays in an L2-resident workspace tile"))
            ctx.stats["mixed"] += 1
        return False


def _cube_op(op: str) -> bool:
    """An op the cube computes whole besides the matmul family (a conv: the registry's `cube_macs`)."""
    return ops.exists(op) and ops.get(op).cube_macs is not None
