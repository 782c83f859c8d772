"""Split a joint graph into a forward and a backward graph along a ResidualPlan (the rewrite).

forward:  the primal inputs -> the primal outputs, then the saved values (plan.saved);
backward: the residuals (plan.residuals, in order), then one cotangent per differentiable primal
          output -> one cotangent per `wrt` input (zeros where the output does not depend on it).
Nodes are cloned into fresh graphs (types inferred again, source locations kept); subgraph attributes
(If branches) are shared, so a compiler that edits graphs in place copies them first.
"""
from __future__ import annotations

from typing import Sequence

from ..ir.graph import Graph, Node, Value
from ..ir.uses import ancestors
from .residuals import ResidualPlan


def clone_node(graph: Graph, node: Node, inputs: Sequence[Value]) -> Node:
    if node.op == "Data":
        raise ValueError("Data nodes are made with Graph.add_input")
    return graph.add(node.op, list(inputs), dict(node.attrs), node.loc, node.name)


def forward_graph(joint: Graph, primal_outputs: Sequence[Value], plan: ResidualPlan, name: str) -> Graph:
    fwd = Graph(name)
    mapping: dict[Value, Value] = {}
    primal_inputs = [n for n in joint.inputs if not n.attrs.get("_cotangent")]
    for n in primal_inputs:
        mapping[n.out()] = fwd.add_input(n.outputs[0], n.name, n.loc)
        for key, value in n.attrs.items():
            if key.startswith("_") and key != "_cotangent":
                fwd.nodes[-1].attrs[key] = value  # annotations of the signature (launch checks)
    wanted = _ancestors_in_order(joint, list(primal_outputs) + list(plan.saved))
    for node in wanted:
        if node.op == "Data":
            continue
        clone = clone_node(fwd, node, [mapping[v] for v in node.inputs])
        for i in range(len(node.outputs)):
            mapping[node.out(i)] = clone.out(i)
    fwd.set_outputs([mapping[v] for v in list(primal_outputs) + list(plan.saved)])
    return fwd


def backward_graph(joint: Graph, plan: ResidualPlan, cotangent_inputs: Sequence[Node],
                   grads: Sequence[Value | None], wrt: Sequence[Value], name: str) -> Graph:
    bwd = Graph(name)
    mapping: dict[Value, Value] = {}
    residual_value: dict = {}
    for value, decision in plan.decisions.items():
        if decision is not None:
            residual_value.setdefault(decision, value)
    residual_inputs = {}
    for r in plan.residuals:
        v = residual_value[r]
        residual_inputs[r] = bwd.add_input(v.type, f"residual_{r.kind}{r.index}", v.node.loc)
    for node in cotangent_inputs:
        mapping[node.out()] = bwd.add_input(node.outputs[0], node.name, node.loc)

    def value_of(v: Value) -> Value:
        found = mapping.get(v)
        if found is not None:
            return found
        decision = plan.decisions.get(v)
        if decision is not None:
            mapping[v] = residual_inputs[decision]
            return mapping[v]
        node = v.node  # recomputed (or a constant): clone it, its inputs resolved the same way
        clone = clone_node(bwd, node, [value_of(u) for u in node.inputs])
        for i in range(len(node.outputs)):
            mapping[node.out(i)] = clone.out(i)
        return mapping[v]

    for node in plan.backward_nodes:
        if node in cotangent_inputs:
            continue
        clone = clone_node(bwd, node, [value_of(u) for u in node.inputs])
        for i in range(len(node.outputs)):
            mapping[node.out(i)] = clone.out(i)
    outs = []
    for g, w in zip(grads, wrt):
        if g is None:
            t = w.type
            outs.append(bwd.add("full", [], {"shape": tuple(t.shape), "fill_value": 0.0, "dtype": t.dtype}).out())
        else:
            outs.append(value_of(g))
    bwd.set_outputs(outs)
    return bwd


def _ancestors_in_order(graph: Graph, values: Sequence[Value]) -> list[Node]:
    seen = ancestors(v.node for v in values)
    return [n for n in graph.nodes if n in seen]
