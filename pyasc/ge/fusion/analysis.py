"""Fusion analysis of one graph: the compute nodes, their fusion patterns and reductions, uses, post-dominators.

Op kinds come from the registry categories, ELEMWISE < BROADCAST <
INJECTIVE < REDUCE < MATMUL < OPAQUE; a broadcasting op whose operands all
have its output shape counts as ELEMWISE. Scalar constants are free (not a
buffer, not an edge). Graph outputs are side writes: a value the caller gets
back may sit inside a kernel, so it does not stop fusion.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ... import ops
from ...ir import Dim, Graph, Node, Value, node_names
from ...ops import Category
from ..capacity import is_scalar_const


@dataclass(frozen=True)
class Reduction:
    """A reduction's iteration space: `rows` = its input shape, reducing `axes`, the last `k` of them.

    `k is None`: it reduces leading (non-trailing) axes, a column reduction.
    """

    rows: tuple[Dim, ...]
    k: int | None
    axes: tuple[int, ...]
    keepdims: bool           # the output keeps the reduced axes as 1 (row composites: output = input shape)


def pattern_of(n: Node) -> Category:
    """The fusion pattern of a node: its category, with an equal-shape broadcast counted as elementwise."""
    cat = ops.get(n.op).category
    if cat == Category.BROADCAST and all(
        v.type.shape == t.shape for v in n.inputs if not is_scalar_const(v) for t in n.outputs
    ):
        return Category.ELEMWISE  # a broadcast edge between equal shapes is elementwise
    return cat


def reduction_of(n: Node) -> Reduction:
    rows = tuple(n.inputs[0].type.shape)
    ndim = len(rows)
    facts = ops.get(n.op)
    axes = facts.reduced_axes(n.attrs, ndim)
    keep = facts.row_composite or bool(n.attrs.get("keepdims"))  # a row composite's output has its input's shape
    trailing = axes == tuple(range(ndim - len(axes), ndim))
    return Reduction(rows, len(axes) if trailing else None, axes, keep)


class GraphFacts:
    """What fusion knows about one graph (root or branch); `refresh()` after the graph changed."""

    def __init__(self, graph: Graph, prefix: str = ""):
        self.graph = graph
        # "exp %2": the op and its canonical dump name, fixed at the start so the decisions name the ops
        # as the dump of the graph before fusion shows them
        self.labels: dict[Node, str] = {n: f"{n.op} {prefix}%{name}" for n, name in node_names(graph).items()}
        self.refresh()

    def refresh(self) -> None:
        g = self.graph
        self.pos = {n: i for i, n in enumerate(g.nodes)}
        self.compute = [n for n in g.nodes if not ops.get(n.op).leaf]
        self.computed = set(self.compute)
        self.uses = g.users()
        self.graph_outputs = set(g.outputs)
        self.pattern = {n: pattern_of(n) for n in self.compute}
        self.reduction = {n: reduction_of(n) for n in self.compute if self.pattern[n] == Category.REDUCE}

    def add_copy(self, copy: Node, of: Node, label: str) -> None:
        """Register a private copy of `of` just appended to the graph (duplication)."""
        self.labels[copy] = label
        self.computed.add(copy)
        self.pattern[copy] = self.pattern[of]
        self.pos[copy] = len(self.pos)

    # -- queries ------------------------------------------------------------
    def users(self, n: Node) -> list[Node]:
        return self.uses.users(n)

    def label(self, n: Node) -> str:
        return self.labels.get(n) or f"{n.op} %?"

    def ordered(self, nodes: Iterable[Node]) -> list[Node]:
        return sorted(nodes, key=self.pos.__getitem__)

    def labels_of(self, nodes: Iterable[Node]) -> list[str]:
        return [self.label(n) for n in self.ordered(nodes)]

    def joined_labels(self, nodes: Iterable[Node]) -> str:
        return ", ".join(self.labels_of(nodes))

    def expensive(self, n: Node) -> bool:
        return ops.get(n.op).expensive

    def boundary(self, nodes: Iterable[Node]) -> tuple[list[Value], list[Value]]:
        """(values the nodes read from outside, values used outside them or returned by the graph)."""
        members = set(nodes)
        inputs: dict[Value, None] = {}
        outputs: list[Value] = []
        for n in self.ordered(members):
            for v in n.inputs:
                if v.node not in members:
                    inputs[v] = None
            for v in n.values:
                if v in self.graph_outputs or any(u not in members for u in self.uses.readers(v)):
                    outputs.append(v)
        return list(inputs), outputs

    # -- graph analyses ---------------------------------------------------------
    def post_dominators(self) -> dict[Node, Node | None]:
        """Immediate post-dominator of each compute node among compute nodes (graph outputs are side writes)."""
        pdom: dict[Node, Node | None] = {}
        depth: dict[Node, int] = {}

        def lca(a: Node | None, b: Node | None) -> Node | None:
            while a is not b:
                if a is None or b is None:
                    return None
                if depth[a] < depth[b]:
                    b = pdom[b]
                elif depth[b] < depth[a]:
                    a = pdom[a]
                else:
                    a, b = pdom[a], pdom[b]
            return a

        for n in reversed(self.compute):
            us = self.users(n)
            parent: Node | None = us[0] if us else None
            for u in us[1:]:
                parent = lca(parent, u)
            pdom[n] = parent
            depth[n] = depth[parent] + 1 if parent is not None else 1
        return pdom

    def between(self, src: Node, dst: Node) -> set[Node]:
        """Nodes on some path src -> dst, both ends excluded."""
        limit = self.pos[dst]
        fwd: set[Node] = set()
        stack = [src]
        while stack:
            for u in self.users(stack.pop()):
                if u not in fwd and self.pos[u] <= limit:
                    fwd.add(u)
                    stack.append(u)
        bwd: set[Node] = set()
        stack = [dst]
        floor = self.pos[src]
        while stack:
            for v in stack.pop().inputs:
                p = v.node
                if p in self.computed and p not in bwd and self.pos[p] >= floor:
                    bwd.add(p)
                    stack.append(p)
        return (fwd & bwd) - {src, dst}

    def descendants(self, n: Node, group: set[Node]) -> set[Node]:
        """Members of `group` reachable from `n` through `group`."""
        seen: set[Node] = set()
        stack = [n]
        while stack:
            for u in self.users(stack.pop()):
                if u in group and u not in seen:
                    seen.add(u)
                    stack.append(u)
        return seen
