"""Build-wide state and the graph being emitted into.

`BuildState` is shared by the kernel and every helper inlined into it (the
unroll budget is a total). `GraphContext` is the graph nodes are added to:
the kernel's graph, or an If branch. A branch reads an outer tensor through
a `Data` input, created the first time the branch uses it; the If passes the
outer value as the matching operand (branch Data index i = If input i + 1).
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

from ..guards import Guard
from ..ir.graph import Graph, Value


@dataclass
class BuildState:
    unroll_budget: int
    graph: Graph | None = None  # the kernel's graph: lifted arrays become its Data inputs (see guards.py)
    unrolled: int = 0  # loop and comprehension iterations unrolled so far (all loops together)
    loop_exits: int = 0  # `break`/`continue` under tensor conditions: each copies the rest of the function
    captured: dict[str, Any] = field(default_factory=dict)  # access path text -> value read at compile time
    guards: dict[tuple, Guard] = field(default_factory=dict)  # access path -> its guard, in first-read order
    hidden: dict[tuple, Value] = field(default_factory=dict)  # access path of a lifted array -> its Data input
    paths: dict[int, tuple[Any, tuple]] = field(default_factory=dict)  # id(object) -> (object, access path)
    helpers: list[str] = field(default_factory=list)
    inlining: list[types.CodeType] = field(default_factory=list)  # functions being inlined (recursion check)
    if_count: int = 0
    current: Any = None  # (ParsedFunction, ast node) last visited: where an internal error is reported
    # 0-d tensors standing for Python scalars chosen at run time -> the numbers they may be (tensors.weak_values)
    weak: dict[Value, tuple] = field(default_factory=dict)
    lambdas_running: list = field(default_factory=list)  # lambdas being inlined (recursion check)
    root: Any = None  # what build_graph was given: the kernel function, or a bound method (its self: objects.py)
    aliasing: Any = None  # aliasing.AliasTable: which tensors are views of which, which are numpy scalars
    unpathed: dict[int, Any] = field(default_factory=dict)  # arrays read from objects that have no access path
    force_lift: frozenset = frozenset()  # access paths of captured arrays the kernel writes: lifted whatever their size
    checks_enabled: bool = True  # record numpy's errors on data in a status word (checks.py); kernel(checks=False)
    effects: Any = None  # effects.EffectTable: arrays and objects outside the kernel it writes (made on first use)


class GraphContext:
    def __init__(self, graph: Graph, parent: "GraphContext | None" = None, operands: list[Value] | None = None):
        self.graph = graph
        self.parent = parent
        # outer values the owning If passes in; shared by its then and else branch
        self.operands: list[Value] = operands if operands is not None else []
        self._imported: dict[Value, Value] = {}

    def use(self, v: Value) -> Value:
        """`v` as a value of this graph, importing it through a Data input if it is an outer value."""
        if v.node.graph is self.graph:
            return v
        if v in self._imported:
            return self._imported[v]
        if self.parent is None:
            raise RuntimeError(f"value {v!r} does not belong to graph {self.graph.name!r} or an enclosing graph")
        outer = self.parent.use(v)
        if outer in self.operands:
            index = self.operands.index(outer)
        else:
            index = len(self.operands)
            self.operands.append(outer)
        inner = self._data(index, outer)
        self._imported[v] = inner
        return inner

    def _data(self, index: int, outer: Value) -> Value:
        node = self.graph.add("Data", (), {"index": index, "type": outer.type}, outer.node.loc, outer.node.name)
        return node.out()

    def complete_inputs(self) -> None:
        """Give the branch a Data input for every If operand (the other branch may have added some),
        with the Data nodes first, in index order."""
        have = {n.attrs["index"] for n in self.graph.nodes if n.op == "Data"}
        for index, outer in enumerate(self.operands):
            if index not in have:
                self._data(index, outer)
        data = sorted((n for n in self.graph.nodes if n.op == "Data"), key=lambda n: n.attrs["index"])
        self.graph.nodes = data + [n for n in self.graph.nodes if n.op != "Data"]
