"""Rewrites of aten patterns before the FX frontend emits them, where aten's form costs pyasc a kernel.

aten lowers `nn.Linear` on a 3-D input to view (B*T, K) -> addmm/mm -> view (B, T, N). pyasc's
matmul takes batch dims itself, and its optimiser gives each reshape next to a layer norm or an
activation a data-movement kernel of its own, so the pair of views is dropped: the matmul reads
the 3-D tensor and produces the 3-D result.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

aten = torch.ops.aten
_VIEWS = (aten.view.default, aten._unsafe_view.default, aten.reshape.default)
_MATMULS = {aten.addmm.default: 1, aten.mm.default: 0}  # op -> index of the flattened operand


@dataclass(frozen=True)
class BatchedLinear:
    matmul: torch.fx.Node     # the addmm / mm, not emitted on its own
    flat: torch.fx.Node       # the view that flattened the input
    source: torch.fx.Node     # the un-flattened input the matmul reads instead


def _shape(node: torch.fx.Node) -> tuple[int, ...]:
    return tuple(int(d) for d in node.meta["val"].shape)


def batched_linears(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, BatchedLinear]:
    """The final view of each view -> addmm/mm -> view chain that can read the input unflattened."""
    out = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in _VIEWS or not isinstance(node.args[0], torch.fx.Node):
            continue
        mm = node.args[0]
        if mm.op != "call_function" or mm.target not in _MATMULS or len(mm.users) != 1:
            continue
        flat = mm.args[_MATMULS[mm.target]]
        if not isinstance(flat, torch.fx.Node) or flat.op != "call_function" or flat.target not in _VIEWS:
            continue
        src = flat.args[0]
        if not isinstance(src, torch.fx.Node) or "val" not in src.meta:
            continue
        lead, k = _shape(src)[:-1], _shape(src)[-1]
        if len(lead) < 2 or _shape(flat) != (math.prod(lead), k) or _shape(node) != lead + (_shape(mm)[-1],):
            continue
        out[node] = BatchedLinear(mm, flat, src)
    return out
