"""Copy one graph into another (inlining a pyasc op's graph into the graph being built around it)."""
from __future__ import annotations

from typing import Sequence

from ..errors import SourceLoc
from ..ir.graph import Graph, Node, Value


def splice(graph: Graph, sub: Graph, inputs: Sequence[Value], loc: SourceLoc | None = None) -> list[Value]:
    """Copy `sub`'s nodes into `graph`, its Data inputs bound to `inputs` (by index); returns the values of
    its outputs. Nodes keep their own source locations (else `loc`); types are inferred again."""
    data = sub.inputs
    if len(data) != len(inputs):
        raise ValueError(f"graph {sub.name!r} takes {len(data)} tensors, {len(inputs)} were given")
    mapping: dict[Value, Value] = {d.out(): v for d, v in zip(data, inputs)}
    for n in sub.nodes:
        if n.op == "Data":
            continue
        clone: Node = graph.add(n.op, [mapping[v] for v in n.inputs], dict(n.attrs), n.loc or loc, n.name)
        for i in range(len(n.outputs)):
            mapping[n.out(i)] = clone.out(i)
    return [mapping[v] for v in sub.outputs]
