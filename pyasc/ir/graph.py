"""The operator DAG: `Graph` owns ordered `Node`s; a `Value` is one output of a node.

Conventions every layer relies on:
- `graph.nodes` is in a topological order (def before use). Passes that add
  nodes out of order call `graph.sort()` before they return.
- Graph inputs are `Data` nodes (attr `index`, attr `type`); constants are
  `Const` nodes (attr `value`, a numpy array); graph outputs are a list of
  Values (GE's NetOutput).
- Subgraphs (If branches) are attributes of their owner node holding a
  `Graph` (`then_branch`, `else_branch`); `Data(index=i)` in a branch is the
  owner's input i+1 (input 0 of If is the condition).
- Every node's output types are inferred by the op registry when the node
  is created (`Graph.add`), so a graph is typed at every moment.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from .. import dtypes, ops
from ..errors import SourceLoc
from ..tensor_type import TensorType
from .uses import UseIndex

_ids = itertools.count()

#: Attributes that annotate a node for later passes instead of parametrising its op
#: (the optimiser's "fusion_group"; any name starting with "_"). They print and
#: serialise like other attributes but are never passed to an op's eager function.
ANNOTATION_ATTRS = frozenset({"fusion_group"})


def is_annotation(attr: str) -> bool:
    return attr in ANNOTATION_ATTRS or attr.startswith("_")


class Value:
    """Output `index` of `node`. Hashable and comparable by identity of (node, index)."""

    __slots__ = ("node", "index")

    def __init__(self, node: "Node", index: int = 0):
        self.node = node
        self.index = index

    @property
    def type(self) -> TensorType:
        return self.node.outputs[self.index]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and other.node is self.node and other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.node), self.index))

    def __repr__(self) -> str:
        return f"Value(%{self.node.name or self.node.op}#{self.node.id}:{self.index} {self.type})"


class Node:
    __slots__ = ("id", "op", "inputs", "attrs", "outputs", "loc", "name", "graph", "__weakref__")

    def __init__(
        self,
        op: str,
        inputs: Sequence[Value],
        attrs: Mapping[str, Any],
        outputs: Sequence[TensorType],
        loc: SourceLoc | None = None,
        name: str | None = None,
    ):
        self.id = next(_ids)
        self.op = op
        self.inputs: list[Value] = list(inputs)
        self.attrs: dict[str, Any] = dict(attrs)
        self.outputs: list[TensorType] = list(outputs)
        self.loc = loc
        self.name = name  # a hint from the user's variable name, for dumps
        self.graph: Graph | None = None

    def out(self, index: int = 0) -> Value:
        return Value(self, index)

    @property
    def values(self) -> list[Value]:
        return [Value(self, i) for i in range(len(self.outputs))]

    @property
    def subgraphs(self) -> dict[str, "Graph"]:
        return {k: v for k, v in self.attrs.items() if isinstance(v, Graph)}

    def __repr__(self) -> str:
        ins = ", ".join(f"{v.node.op}#{v.node.id}" for v in self.inputs)
        return f"Node(#{self.id} {self.op}({ins}) -> {', '.join(map(str, self.outputs))})"


class Graph:
    def __init__(self, name: str = "main"):
        self.name = name
        self.nodes: list[Node] = []
        self.outputs: list[Value] = []

    # -- construction ---------------------------------------------------
    def add(
        self,
        op: str,
        inputs: Sequence[Value] = (),
        attrs: Mapping[str, Any] | None = None,
        loc: SourceLoc | None = None,
        name: str | None = None,
    ) -> Node:
        """Append a node, inferring its output types from the op registry.

        Raises `InferError` (from the registry) when the op rejects the types.
        """
        attrs = dict(attrs or {})
        outputs = ops.infer(op, [v.type for v in inputs], attrs)
        node = Node(op, inputs, attrs, outputs, loc, name)
        return self.append(node)

    def append(self, node: Node) -> Node:
        node.graph = self
        self.nodes.append(node)
        return node

    def add_input(self, type: TensorType, name: str | None = None, loc: SourceLoc | None = None) -> Value:
        index = len(self.inputs)
        return self.add("Data", (), {"index": index, "type": type}, loc, name).out()

    def const(self, value: Any, dtype: str | None = None, loc: SourceLoc | None = None, name: str | None = None) -> Value:
        arr = np.asarray(value)
        if dtype is None:
            dtype = dtypes.scalar_dtype(arr.item()) if arr.ndim == 0 and arr.dtype.kind in "biuf" and not isinstance(value, np.ndarray) else dtypes.narrow(arr.dtype)
        arr = arr.astype(dtypes.to_numpy(dtype), order="C")  # a copy; not ascontiguousarray, which makes 0-d 1-d
        arr.flags.writeable = False
        return self.add("Const", (), {"value": arr}, loc, name).out()

    def set_outputs(self, values: Iterable[Value]) -> None:
        self.outputs = list(values)

    # -- queries ----------------------------------------------------------
    @property
    def inputs(self) -> list[Node]:
        """Data nodes ordered by their `index`."""
        return sorted((n for n in self.nodes if n.op == "Data"), key=lambda n: n.attrs["index"])

    @property
    def input_types(self) -> list[TensorType]:
        return [n.outputs[0] for n in self.inputs]

    @property
    def output_types(self) -> list[TensorType]:
        return [v.type for v in self.outputs]

    def users(self) -> UseIndex:
        """The use-list index: value -> nodes reading it (once per use), node -> distinct users.

        Graph outputs are not nodes (`UseIndex.is_output`). Edits made through the
        index keep it current (see ir/uses.py).
        """
        return UseIndex(self)

    def walk(self) -> Iterator["Graph"]:
        """This graph and every subgraph, depth first, parents before children."""
        yield self
        for n in self.nodes:
            for sub in n.subgraphs.values():
                yield from sub.walk()

    def all_nodes(self) -> Iterator[Node]:
        for g in self.walk():
            yield from g.nodes

    # -- mutation -----------------------------------------------------------
    def replace_all_uses(self, old: Value, new: Value) -> int:
        """Point every use of `old` (node inputs and graph outputs) at `new`; returns the count."""
        count = 0
        for n in self.nodes:
            for i, v in enumerate(n.inputs):
                if v == old:
                    n.inputs[i] = new
                    count += 1
        for i, v in enumerate(self.outputs):
            if v == old:
                self.outputs[i] = new
                count += 1
        return count

    def remove(self, nodes: Iterable[Node]) -> None:
        dead = {id(n) for n in nodes}
        self.nodes = [n for n in self.nodes if id(n) not in dead]

    def sort(self) -> None:
        """Stable topological sort: keeps the current order wherever it is already valid."""
        position = {id(n): i for i, n in enumerate(self.nodes)}
        pending = {id(n): sum(1 for v in n.inputs if id(v.node) in position) for n in self.nodes}
        users: dict[int, list[Node]] = {}
        for n in self.nodes:
            for v in n.inputs:
                if id(v.node) in position:
                    users.setdefault(id(v.node), []).append(n)
        ready = [(position[id(n)], n.id, n) for n in self.nodes if pending[id(n)] == 0]
        heapq.heapify(ready)
        ordered: list[Node] = []
        while ready:
            _, _, n = heapq.heappop(ready)
            ordered.append(n)
            for u in users.get(id(n), ()):
                pending[id(u)] -= 1
                if pending[id(u)] == 0:
                    heapq.heappush(ready, (position[id(u)], u.id, u))
        if len(ordered) != len(self.nodes):
            raise ValueError(f"graph {self.name!r} has a cycle")
        self.nodes = ordered

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self.nodes)} nodes, {len(self.outputs)} outputs)"

    # str(graph) is its canonical text: ir/printer.py installs Graph.__str__, so that the graph module does not
    # import the printer that imports it
