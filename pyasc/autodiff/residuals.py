"""Which forward values the backward keeps and which it recomputes (an analysis; split.py applies it).

In a joint graph (forward, then the backward the reverse sweep added, reading cotangent inputs), the
backward part is every node that depends on a cotangent and leads to a gradient. What it reads from
the forward part (the frontier) comes from one of:

- a primal input: the backward takes the caller's array itself (no copy, nothing stored);
- a forward output: the backward takes the result the caller already has;
- a saved value: an extra forward output, stored between the two kernels;
- recomputation: the node is cloned into the backward, reading its own inputs the same way.

The policy decides between the last two:
- `RECOMPUTE_CHEAP` (pyasc.vjp): an op the registry marks not `expensive` (add, mul, where, casts,
  reshapes, slices, ...) is recomputed: it fuses into the backward's kernels, so recomputing costs a
  few vector instructions while saving costs a store in the forward, GM space between the kernels and
  a load in the backward. Expensive ops (exp, log, division, reductions, matmuls, composites) and
  control nodes are saved. This is XLA's IsExpensive split, and AOTAutograd's default for pointwise ops.
- `INPUTS_AND_OUTPUTS` (torch custom ops): only primal inputs and forward outputs may be kept, as
  torch.library's autograd keeps nothing else (setup_context sees inputs and output); everything
  else the backward needs is recomputed from them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .. import ops
from ..ir.graph import Graph, Node, Value
from ..ir.uses import ancestors

RECOMPUTE_CHEAP = "recompute_cheap"
INPUTS_AND_OUTPUTS = "inputs_and_outputs"
POLICIES = (RECOMPUTE_CHEAP, INPUTS_AND_OUTPUTS)


@dataclass(frozen=True)
class Residual:
    """A value the backward takes from the forward: `kind` "input" (the primal input with Data index
    `index`), "output" (forward output `index`) or "saved" (saved value `index`, a forward output after
    the primal ones)."""

    kind: str
    index: int


@dataclass
class ResidualPlan:
    """The decisions: frontier (and recomputed) values -> Residual, or None for "recompute"."""

    backward_nodes: list[Node]                      # joint-graph nodes of the backward, in order
    decisions: dict[Value, Residual | None] = field(default_factory=dict)
    residuals: list[Residual] = field(default_factory=list)   # distinct, in first-use order
    saved: list[Value] = field(default_factory=list)          # the values behind the "saved" residuals

    def describe(self) -> str:
        kept = sum(1 for d in self.decisions.values() if d is not None)
        return (f"{len(self.backward_nodes)} backward nodes; {kept} forward values kept "
                f"({len(self.saved)} saved, the rest primal inputs or outputs), "
                f"{len(self.decisions) - kept} recomputed")


def plan_residuals(joint: Graph, primal_outputs: Sequence[Value], cotangent_inputs: Sequence[Node],
                   grads: Sequence[Value | None], policy: str = RECOMPUTE_CHEAP) -> ResidualPlan:
    if policy not in POLICIES:
        raise ValueError(f"unknown residual policy {policy!r}; known: {', '.join(POLICIES)}")
    tangent = _descendants(joint, set(cotangent_inputs))
    needed = ancestors(g.node for g in grads if g is not None)
    plan = ResidualPlan([n for n in joint.nodes if n in tangent and n in needed])
    output_index = {}
    for i, v in enumerate(primal_outputs):
        output_index.setdefault(v, i)

    def decide(v: Value) -> None:
        if v in plan.decisions:
            return
        node = v.node
        op = ops.get(node.op)
        if node.op == "Data":
            found: Residual | None = Residual("input", node.attrs["index"])
        elif op.leaf:
            found = None  # a constant: cloned
        elif v in output_index:
            found = Residual("output", output_index[v])
        elif policy == RECOMPUTE_CHEAP and (op.expensive or op.structural or op.is_control):
            plan.saved.append(v)
            found = Residual("saved", len(plan.saved) - 1)
        else:
            found = None
        plan.decisions[v] = found
        if found is None:
            for u in node.inputs:
                decide(u)
        elif found not in plan.residuals:
            plan.residuals.append(found)

    for node in plan.backward_nodes:
        for v in node.inputs:
            if v.node not in tangent:
                decide(v)
    for g in grads:
        if g is not None and g.node not in tangent:
            decide(g)
    return plan


def _descendants(graph: Graph, seeds: set[Node]) -> set[Node]:
    out = set(seeds)
    for n in graph.nodes:
        if n not in out and any(v.node in out for v in n.inputs):
            out.add(n)
    return out
