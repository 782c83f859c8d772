"""Graphviz DOT export: one box per node, edges labelled with the value's type.

If branches become `subgraph cluster_*` blocks inside their parent, and so
do fusion groups (nodes with a `fusion_group` attribute, or the grouping the
caller passes in `clusters`). Every edge is written at the top level, after
all node declarations, because an edge inside a cluster would pull its
endpoints into that cluster.
"""
from __future__ import annotations

from typing import Any, Mapping

from .graph import Graph, Node, Value
from .printer import format_attr, node_names, subgraph_paths, type_text


def quote(text: str) -> str:
    """A DOT double-quoted string; newlines become DOT's `\\n` line breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


class _DotWriter:
    def __init__(self, clusters: Mapping[Node, str] | None):
        self.clusters = clusters or {}
        self.ids: dict[Node, str] = {}
        self.returns: dict[int, str] = {}  # id(graph) -> its return node's id
        self.edges: list[str] = []
        self.extra_nodes: list[str] = []
        self.cluster_count = 0

    def node_id(self, node: Node) -> str:
        if node not in self.ids:
            # a producer outside every printed graph (a corrupt graph): still draw it
            self.ids[node] = f"x{len(self.extra_nodes)}"
            self.extra_nodes.append(f"  {self.ids[node]} [label={quote('?' + node.op)}, style=dotted];")
        return self.ids[node]

    def assign_ids(self, graph: Graph) -> None:
        for g in graph.walk():
            for n in g.nodes:
                self.ids.setdefault(n, f"n{len(self.ids)}")
            self.returns[id(g)] = f"r{len(self.returns)}"

    def group_of(self, node: Node) -> Any:
        if node in self.clusters:
            return self.clusters[node]
        return node.attrs.get("fusion_group")

    def emit_graph(self, graph: Graph, path: str, indent: str) -> list[str]:
        names = node_names(graph)
        refs = subgraph_paths(graph, path, names)
        lines: list[str] = []
        groups: dict[str, list[Node]] = {}
        for n in graph.nodes:
            group = self.group_of(n)
            if group is None:
                lines.append(indent + self.declare(n, names, refs))
            else:
                groups.setdefault(str(group), []).append(n)
        for group, members in groups.items():
            self.cluster_count += 1
            lines.append(f"{indent}subgraph cluster_fusion_{self.cluster_count} {{")
            lines.append(f"{indent}  label={quote('fusion ' + group)}; style=dashed; color=blue;")
            lines.extend(indent + "  " + self.declare(n, names, refs) for n in members)
            lines.append(f"{indent}}}")
        ret = self.returns[id(graph)]
        lines.append(f"{indent}{ret} [label={quote('return')}, shape=doubleoctagon];")
        for i, v in enumerate(graph.outputs):
            self.edge(v, ret, f"{i}: {type_text(v.type)}" if len(graph.outputs) > 1 else type_text(v.type))
        for n in graph.nodes:
            for i, v in enumerate(n.inputs):
                self.edge(v, self.ids[n], type_text(v.type) if len(n.inputs) == 1 else f"{i}: {type_text(v.type)}")
            for key in sorted(n.subgraphs):
                sub = n.attrs[key]
                self.cluster_count += 1
                cluster = f"cluster_{key}_{self.cluster_count}"
                lines.append(f"{indent}subgraph {cluster} {{")
                lines.append(f"{indent}  label={quote(refs[id(sub)])}; style=rounded;")
                lines.extend(self.emit_graph(sub, refs[id(sub)], indent + "  "))
                lines.append(f"{indent}}}")
                anchor = self.ids[sub.nodes[0]] if sub.nodes else self.returns[id(sub)]
                self.edges.append(
                    f"  {self.ids[n]} -> {anchor} [lhead={cluster}, style=dashed, label={quote(key)}];"
                )
        return lines

    def declare(self, node: Node, names: Mapping[Node, str], refs: Mapping[int, str]) -> str:
        if node.op == "Const" and "value" in node.attrs:
            detail = format_attr(node.attrs["value"], refs)  # starts with the type
        else:
            detail = ", ".join(type_text(t) for t in node.outputs)
        label = f"%{names[node]} {node.op}\n{detail}"
        shape = "ellipse" if node.op in ("Data", "Const") else "box"
        return f"{self.ids[node]} [label={quote(label)}, shape={shape}];"

    def edge(self, value: Value, target: str, label: str) -> None:
        self.edges.append(f"  {self.node_id(value.node)} -> {target} [label={quote(label)}];")


def to_dot(graph: Graph, *, clusters: Mapping[Node, str] | None = None) -> str:
    """Graphviz DOT text for `graph` and its subgraphs.

    `clusters` maps nodes to a group label (e.g. a fusion plan); a node not in
    it is grouped by its `fusion_group` attribute, if any.
    """
    writer = _DotWriter(clusters)
    writer.assign_ids(graph)
    body = writer.emit_graph(graph, graph.name, "  ")
    lines = [
        f"digraph {quote(graph.name)} {{",
        "  compound=true;",
        '  node [fontname="monospace", fontsize=10];',
        '  edge [fontname="monospace", fontsize=9];',
        *body,
        *writer.extra_nodes,
        *writer.edges,
        "}",
    ]
    return "\n".join(lines) + "\n"
