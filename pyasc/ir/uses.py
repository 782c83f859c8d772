"""The use-list index of a graph: which nodes read each value, kept current while a pass edits.

One index serves every pass (`Graph.users()` builds it): the rewrite driver,
the pattern rules that look at a value's readers, and the fuser. Recomputing
uses after every edit would be quadratic on big unrolled graphs, so an edit
made through the index (`added`, `dropped`, `replace_input`, `redirect`)
updates it in place.

Two views of the same facts:
- `index[value]` / `readers(value)`: the nodes reading `value`, one entry per
  use (a node reading it twice appears twice), in node order at build time;
- `users(node)`: the distinct nodes reading any output of `node`, in the order
  they first read it.
Graph outputs are not nodes: `is_output(value)` says whether the caller gets it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Iterator, Mapping

if TYPE_CHECKING:  # pragma: no cover
    from .graph import Graph, Node, Value


class UseIndex(Mapping["Value", "list[Node]"]):
    """Value -> reading nodes (one per use) and node -> distinct users, for one graph."""

    def __init__(self, graph: "Graph"):
        self.graph = graph
        self._readers: dict[Value, list[Node]] = {}
        self._users: dict[Node, list[Node]] = {}
        for n in graph.nodes:
            self.added(n)

    # -- queries -------------------------------------------------------------
    def __getitem__(self, value: "Value") -> "list[Node]":
        return self._readers[value]

    def __iter__(self) -> Iterator["Value"]:
        return iter(self._readers)

    def __len__(self) -> int:
        return len(self._readers)

    def readers(self, value: "Value") -> "list[Node]":
        """Nodes reading `value`, one entry per use (do not mutate the list)."""
        return self._readers.get(value, [])

    def users(self, node: "Node") -> "list[Node]":
        """Distinct nodes reading any output of `node` (do not mutate the list)."""
        return self._users.get(node, [])

    def is_output(self, value: "Value") -> bool:
        return value in self.graph.outputs

    def sole_reader(self, value: "Value") -> "Node | None":
        """The one node reading `value` once, if that is its only use (it is not a graph output either)."""
        readers = self._readers.get(value, [])
        if len(readers) != 1 or self.is_output(value):
            return None
        return readers[0]

    # -- edits ---------------------------------------------------------------
    def added(self, node: "Node") -> None:
        """`node` now reads its inputs (it was added to the graph)."""
        for v in node.inputs:
            self._readers.setdefault(v, []).append(node)
            users = self._users.setdefault(v.node, [])
            if node not in users:
                users.append(node)

    def dropped(self, node: "Node") -> None:
        """`node` no longer reads its inputs (it is being removed from the graph)."""
        for v in node.inputs:
            readers = self._readers.get(v)
            if readers and node in readers:
                readers.remove(node)
        for v in node.inputs:
            users = self._users.get(v.node)
            if users and node in users:
                users.remove(node)

    def replace_input(self, node: "Node", index: int, new: "Value") -> None:
        """`node.inputs[index] = new`, keeping the index current."""
        old = node.inputs[index]
        self._readers[old].remove(node)
        node.inputs[index] = new
        self._forget_if_unread(node, old.node)
        self._readers.setdefault(new, []).append(node)
        self._remember(node, new.node)

    def redirect(self, old: "Value", new: "Value") -> None:
        """Every use of `old` (node inputs and graph outputs) now reads `new`."""
        readers = self._readers.pop(old, [])
        for reader in dict.fromkeys(readers):
            reader.inputs = [new if v == old else v for v in reader.inputs]
            self._forget_if_unread(reader, old.node)
            self._remember(reader, new.node)
        self._readers.setdefault(new, []).extend(readers)
        self.graph.outputs = [new if v == old else v for v in self.graph.outputs]

    def _remember(self, reader: "Node", producer: "Node") -> None:
        users = self._users.setdefault(producer, [])
        if reader not in users:
            users.append(reader)

    def _forget_if_unread(self, reader: "Node", producer: "Node") -> None:
        if not any(v.node is producer for v in reader.inputs):
            users = self._users.get(producer)
            if users and reader in users:
                users.remove(reader)


def ancestors(nodes: "Iterable[Node]") -> "set[Node]":
    """Every node some node in `nodes` (transitively) reads from, `nodes` included."""
    seen: set = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(v.node for v in n.inputs)
    return seen
