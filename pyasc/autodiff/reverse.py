"""The reverse sweep: cotangents from a graph's outputs back to chosen inputs, as new nodes of the graph.

`backward(graph, outputs, cotangents, wrt)` walks the nodes from last to first. A node whose outputs
received a cotangent, and which depends on some value in `wrt`, hands its cotangents to its op's VJP
rule (`ops.get(op).vjp`, ops/vjp_*.py), which adds the backward nodes with the graph builder at the
node's source location (so a backward node points at the user's forward line). Contributions to a
value read several times are added up. A composite without a rule of its own is differentiated
through its decomposition: the decomposition is added (as recomputation in the backward) and swept
the same way, down to the composite's inputs, while the forward keeps the composite itself.

Only floats carry cotangents: integer and bool values (comparisons, argmax, masks) stop the sweep.
An op that depends on `wrt`, receives a cotangent and has neither a rule nor a decomposition is a
located `CompileError` naming the op (control flow, If and Loop, is such an op for now).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from .. import ops
from ..errors import CompileError
from ..ir.graph import Graph, Node, Value, is_annotation
from ..ops.builder import GraphBuilder
from ..ops.vjp_common import VjpContext


class VjpRuleError(AssertionError):
    """A VJP rule returned a cotangent that does not fit its input (a bug in the rule, not the user's)."""


def is_differentiable(v: Value) -> bool:
    """Whether a value carries a cotangent: floats do, integers and bools do not."""
    return np.dtype(v.type.dtype).kind == "f"


def op_attrs(node: Node) -> dict[str, Any]:
    """The attributes that parametrise the op (no subgraphs, no annotations)."""
    return {k: v for k, v in node.attrs.items() if not isinstance(v, Graph) and not is_annotation(k)}


def backward(graph: Graph, outputs: Sequence[Value], cotangents: Sequence[Value | None],
             wrt: Sequence[Value]) -> list[Value | None]:
    """Add the backward of `graph` to it; returns the cotangent of each value in `wrt` (None: zero).

    `cotangents[i]` is the cotangent of `outputs[i]` (None: zero), of its type.
    """
    sweep = _Sweep(graph, wrt)
    for out, ct in zip(outputs, cotangents):
        if ct is not None and is_differentiable(out) and sweep.depends(out.node):
            sweep.give(out, ct)
    sweep.run(list(graph.nodes))
    totals = {v: sweep.total(v) for v in dict.fromkeys(wrt)}  # a value listed twice gets its cotangent twice
    return [totals[v] for v in wrt]


class _Sweep:
    def __init__(self, graph: Graph, wrt: Sequence[Value]):
        self.graph = graph
        self.acc: dict[Value, list[Value]] = {}
        self.dependent: set[Node] = {v.node for v in wrt}
        self.wrt = set(wrt)
        self._mark(graph.nodes)

    def _mark(self, nodes: Iterable[Node]) -> None:
        """Extend `dependent` over `nodes` (in topological order): nodes reading a dependent value."""
        for n in nodes:
            if n not in self.dependent and any(v.node in self.dependent for v in n.inputs):
                self.dependent.add(n)

    def depends(self, node: Node) -> bool:
        return node in self.dependent

    def give(self, value: Value, ct: Value) -> None:
        if ct.type.shape != value.type.shape or ct.type.dtype != value.type.dtype:
            raise VjpRuleError(f"the cotangent of {value} has type {ct.type}")
        self.acc.setdefault(value, []).append(ct)

    def total(self, value: Value, loc: Any = None) -> Value | None:
        parts = self.acc.pop(value, None)
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = self.graph.add("add", [out, p], {}, loc).out()
        return out

    def run(self, nodes: list[Node]) -> None:
        for node in reversed(nodes):
            if node not in self.dependent or ops.get(node.op).leaf:
                continue
            gs = [self.total(v, node.loc) if is_differentiable(v) else None for v in node.values]
            if all(g is None for g in gs):
                continue
            self._node(node, gs)

    def _node(self, node: Node, gs: list[Value | None]) -> None:
        op = ops.get(node.op)
        wants = [v.node in self.dependent and is_differentiable(v) for v in node.inputs]
        if op.vjp is not None:
            ctx = VjpContext(GraphBuilder(self.graph, node.loc), list(node.inputs), node.values, gs,
                             op_attrs(node), wants)
            cts = list(op.vjp(ctx))
            if len(cts) != len(node.inputs):
                raise VjpRuleError(f"the VJP rule of {node.op} gave {len(cts)} cotangents for {len(node.inputs)} "
                                   "inputs")
            for v, ct, want in zip(node.inputs, cts, wants):
                if want and ct is not None:
                    self.give(v, ct)
            return
        if op.composite:
            self._through_decomposition(node, op, gs)
            return
        raise CompileError(_no_rule_reason(node), node.loc)

    def _through_decomposition(self, node: Node, op: Any, gs: list[Value | None]) -> None:
        start = len(self.graph.nodes)
        outs = op.decompose(self.graph, list(node.inputs), op_attrs(node), node.loc)
        added = self.graph.nodes[start:]
        self._mark(added)
        for out, g in zip(outs, gs):
            if g is not None and out.node in self.dependent and is_differentiable(out):
                self.give(out, g if g.type.dtype == out.type.dtype else
                          self.graph.add("cast", [g], {"dtype": out.type.dtype}, node.loc).out())
        self.run(added)


def _no_rule_reason(node: Node) -> str:
    op = ops.get(node.op)
    if op.is_control:
        what = {"If": "a tensor-dependent `if`/`else`", "Loop": "a loop whose trip count is a tensor"}.get(
            node.op, "control flow")
        return (f"no VJP rule for op {node.op!r}: pyasc cannot differentiate through {what} yet; make the "
                "condition a compile-time value, or use pyasc.where to compute both sides")
    return (f"no VJP rule for op {node.op!r}: pyasc does not know its derivative, so a function using it "
            "cannot be differentiated with respect to its inputs")
