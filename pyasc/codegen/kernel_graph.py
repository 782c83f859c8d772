"""One device kernel as a self-contained graph of primitive ops (like TVM's primitive function).

A KernelPlan's nodes live in the whole program's graph; a template wants
just the kernel: its inputs as `Data` nodes (scalar constants stay `Const`,
they become immediate operands), its nodes copied, every composite the
optimiser kept whole (softmax, layer_norm, rms_norm, ...) expanded into the
primitives of its registry decomposition, and its outputs in plan order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .. import ops
from ..ir import Graph, Node, Value, is_annotation
from .domain import dims
from .template import free_symbols


@dataclass
class KernelGraph:
    graph: Graph                       # the local graph: Data inputs, primitive nodes, outputs
    inputs: list[Value]                # the plan's input values, in local Data index order
    outputs: list[Value]               # the plan's output values, in local output order

    @property
    def nodes(self) -> list[Node]:
        """Compute nodes in topological order (no Data or Const)."""
        return [n for n in self.graph.nodes if n.op not in ("Data", "Const")]


def _op_attrs(node: Node) -> dict:
    return {k: v for k, v in node.attrs.items() if not is_annotation(k)}


def is_scalar_const(v: Value) -> bool:
    return v.node.op == "Const" and v.type.numel == 1


def build_kernel_graph(name: str, nodes: list[Node], inputs: list[Value], outputs: list[Value],
                       aliases: Mapping[Value, Value] | None = None) -> KernelGraph:
    """`aliases`: values the nodes (and outputs) read that another value stands for, e.g. a fused op's
    result recomputed by nodes of a side graph when the kernel does only part of the op."""
    aliases = aliases or {}
    g = Graph(name)
    env: dict[Value, Value] = {}
    data_inputs: list[Value] = []
    for v in inputs:
        if is_scalar_const(v):
            env[v] = g.const(v.node.attrs["value"], v.type.dtype, loc=v.node.loc)
        else:
            env[v] = g.add_input(v.type, name=v.node.name, loc=v.node.loc)
            data_inputs.append(v)
    for n in _topological(nodes):
        new = g.add(n.op, [env[aliases.get(v, v)] for v in n.inputs], _op_attrs(n), n.loc, n.name)
        for i in range(len(n.outputs)):
            env[Value(n, i)] = new.out(i)
    g.set_outputs([env[aliases.get(v, v)] for v in outputs])
    _expand_composites(g)
    return KernelGraph(g, data_inputs, list(outputs))


def _topological(nodes: list[Node]) -> list[Node]:
    """The nodes with every producer before its readers (a fusion candidate may list a duplicated producer,
    appended to the graph, after the consumer it was copied into), otherwise in the given order."""
    members = set(nodes)
    done: set[Node] = set()
    out: list[Node] = []

    def visit(n: Node) -> None:
        stack = [(n, False)]
        while stack:
            m, ready = stack.pop()
            if m in done:
                continue
            if ready:
                done.add(m)
                out.append(m)
                continue
            stack.append((m, True))
            stack.extend((v.node, False) for v in reversed(m.inputs) if v.node in members and v.node not in done)

    for n in nodes:
        visit(n)
    return out


def _expand_composites(g: Graph) -> None:
    """Replace composite nodes by their decompositions until none is left (an opaque op, such as attention, is
    lowered whole by its own template: it stays)."""
    while True:
        comp = next((n for n in g.nodes if ops.exists(n.op) and ops.get(n.op).composite
                     and ops.get(n.op).category is not ops.Category.OPAQUE), None)
        if comp is None:
            return
        outs = ops.get(comp.op).decompose(g, list(comp.inputs), _op_attrs(comp), comp.loc)
        for i, new in enumerate(outs):
            g.replace_all_uses(comp.out(i), new)
        g.remove([comp])
        g.sort()


def kernel_symbols(kg: KernelGraph) -> set[str]:
    """Symbols of a kernel's input and output dims: an input broadcast into the domain may name its dims by
    other symbols than the domain's (checked equal at launch), and its strides are fields scoring evaluates."""
    ins = [d for n in kg.graph.nodes if n.op == "Data" for d in dims(n.outputs[0].shape)]
    return free_symbols(ins + [d for v in kg.outputs for d in dims(v.type.shape)])
