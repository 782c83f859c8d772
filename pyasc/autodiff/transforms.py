"""Graph transformations for reverse mode: the gradient graph, and a forward/backward pair (VJP).

- `grad_graph(fwd, wrt, output=0, keep=())`: one graph computing the forward and the gradient of
  output `output` (a float with one element) with respect to the inputs with Data indices `wrt`;
  its outputs are the forward outputs listed in `keep`, then one gradient per `wrt` input. Forward
  and backward are one graph, so the optimiser fuses across them and nothing is stored between them.
- `vjp_graphs(fwd, wrt, policy)`: the forward with the residuals the backward needs as extra
  outputs, and the backward taking residuals and output cotangents (see residuals.py for the choice
  of residuals, split.py for the graphs).

The input graph is not changed (the transformations work on a copy).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .. import ir
from ..ir.graph import Graph, Node, Value
from .residuals import RECOMPUTE_CHEAP, Residual, ResidualPlan, plan_residuals
from .reverse import backward, is_differentiable
from .split import backward_graph, forward_graph


class GradError(TypeError):
    """A function pyasc.grad cannot take the gradient of (its output is not a float scalar, ...)."""


def copy_graph(graph: Graph) -> Graph:
    """A deep copy (subgraphs included), through the lossless JSON form."""
    return ir.from_json(ir.to_json(graph))


def _wrt_values(graph: Graph, wrt: Sequence[int]) -> list[Value]:
    inputs = graph.inputs
    out = []
    for i in wrt:
        if not 0 <= i < len(inputs):
            raise ValueError(f"wrt index {i} is out of range for a graph with {len(inputs)} inputs")
        out.append(inputs[i].out())
    return out


def grad_graph(fwd: Graph, wrt: Sequence[int], *, output: int = 0, keep: Sequence[int] = (),
               name: str | None = None) -> Graph:
    """The forward and the gradient of output `output` with respect to inputs `wrt`, in one graph."""
    g = copy_graph(fwd)
    g.name = name or f"{fwd.name}_grad"
    out = g.outputs[output]
    if not is_differentiable(out):
        raise GradError(f"the gradient needs a float output, got {out.type.dtype} (output {output})")
    if out.type.numel != 1:
        raise GradError(f"the gradient is only defined for a function with a scalar output (one element); "
                        f"output {output} has shape {tuple(out.type.shape)}: reduce it first (e.g. .sum()), "
                        "or use pyasc.vjp")
    seed = g.add("full", [], {"shape": tuple(out.type.shape), "fill_value": 1.0, "dtype": out.type.dtype}).out()
    wrt_values = _wrt_values(g, wrt)
    grads = backward(g, [out], [seed], wrt_values)
    results = [g.outputs[i] for i in keep]
    for v, grad in zip(wrt_values, grads):
        if grad is None:
            t = v.type
            grad = g.add("full", [], {"shape": tuple(t.shape), "fill_value": 0.0, "dtype": t.dtype}).out()
        results.append(grad)
    g.set_outputs(results)
    return g


@dataclass
class VjpGraphs:
    """A forward/backward pair. Backward inputs: `residuals` (in order; the caller passes the primal input,
    forward output or saved value each names), then one cotangent for each forward output listed in
    `cotangent_outputs`. Backward outputs: one cotangent per `wrt` input."""

    forward: Graph
    backward: Graph
    residuals: list[Residual]
    cotangent_outputs: list[int]
    primal_outputs: int
    wrt: list[int]
    plan: ResidualPlan


def vjp_graphs(fwd: Graph, wrt: Sequence[int], *, policy: str = RECOMPUTE_CHEAP, outputs: Sequence[int] | None = None,
               name: str | None = None) -> VjpGraphs:
    """`outputs`: the forward outputs that take a cotangent (default: every float output; the others,
    e.g. auxiliary results, are computed but not differentiated)."""
    joint = copy_graph(fwd)
    base = name or fwd.name
    primal_outputs = list(joint.outputs)
    wrt_values = _wrt_values(joint, wrt)
    chosen = range(len(primal_outputs)) if outputs is None else outputs
    cotangent_outputs = [i for i in chosen if is_differentiable(primal_outputs[i])]
    cot_nodes: list[Node] = []
    for i in cotangent_outputs:
        v = joint.add_input(primal_outputs[i].type, f"cotangent{i}")
        v.node.attrs["_cotangent"] = True
        cot_nodes.append(v.node)
    cts: list[Value | None] = [None] * len(primal_outputs)
    for i, node in zip(cotangent_outputs, cot_nodes):
        cts[i] = node.out()
    grads = backward(joint, primal_outputs, cts, wrt_values)
    plan = plan_residuals(joint, primal_outputs, cot_nodes, grads, policy)
    forward = forward_graph(joint, primal_outputs, plan, f"{base}_forward")
    bwd = backward_graph(joint, plan, cot_nodes, grads, wrt_values, f"{base}_backward")
    return VjpGraphs(forward, bwd, list(plan.residuals), cotangent_outputs, len(primal_outputs), list(wrt), plan)
