"""Elementwise kernels on NC1HWC0 values: the same ops on the storage, as plain row-major tensors.

GE's `blocked_layout` lets an elementwise op compute in NC1HWC0 when every full-size operand is NC1HWC0 of
the result's shape (the registry's `ELEMENTWISE_FORMATS` rule): element by element, the layout does not
matter, so the kernel is the same ops on the (N, C1, H, W, C0) storage arrays (the channel padding is
computed like any element). The vector templates then see ordinary ND tensors.
"""
from __future__ import annotations

from ..ir import Graph, TensorType, Value
from ..ops import ELEMENTWISE_FORMATS
from .kernel_graph import KernelGraph, _op_attrs


def is_blocked(kg: KernelGraph) -> bool:
    return any(v.type.format in ELEMENTWISE_FORMATS for v in (*kg.inputs, *kg.outputs))


def storage_view(kg: KernelGraph) -> KernelGraph:
    """`kg` with every NC1HWC0 value replaced by its storage array (ND, the storage shape)."""
    g = Graph(kg.graph.name)
    env: dict[Value, Value] = {}
    for n in kg.graph.nodes:
        if n.op == "Data":
            t = n.outputs[0]
            if t.format in ELEMENTWISE_FORMATS:
                t = TensorType(t.storage_shape, t.dtype)
            env[n.out()] = g.add_input(t, name=n.name, loc=n.loc)
        elif n.op == "Const":
            env[n.out()] = g.const(n.attrs["value"], n.outputs[0].dtype, loc=n.loc)
        else:
            new = g.add(n.op, [env[v] for v in n.inputs], _op_attrs(n), n.loc, n.name)
            for i in range(len(n.outputs)):
                env[n.out(i)] = new.out(i)
    g.set_outputs([env[v] for v in kg.graph.outputs])
    return KernelGraph(g, list(kg.inputs), list(kg.outputs))
