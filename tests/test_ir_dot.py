"""Graphviz DOT export: checked structurally (no `dot` binary is needed)."""
from __future__ import annotations

import re

from pyasc.ir import Graph, TensorType, to_dot
from test_ir_samples import F32_4x8, build_sample

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|->|[{}\[\];=,]|[A-Za-z_][A-Za-z0-9_]*|-?\d+(?:\.\d+)?|\S')


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def parse(text: str) -> dict:
    """A small DOT reader: the node ids declared, the edges, the cluster names, brace balance."""
    toks = tokens(text)
    assert toks[:2] == ["digraph", toks[1]] and toks[2] == "{", toks[:3]
    depth, declared, edges, clusters = 0, set(), [], []
    statement: list[str] = []
    for tok in toks:
        if tok == "{":
            if statement[:1] == ["subgraph"]:
                clusters.append(statement[1])
            depth += 1
            statement = []
        elif tok == "}":
            depth -= 1
            assert depth >= 0, "unbalanced closing brace"
            statement = []
        elif tok == ";":
            head = statement[: statement.index("[")] if "[" in statement else statement
            if "->" in head:
                edges.append((head[0], head[2]))
            elif len(head) == 1 and head[0] not in ("node", "edge", "graph"):
                declared.add(head[0])
            statement = []
        else:
            statement.append(tok)
    assert depth == 0, "unbalanced braces"
    return {"declared": declared, "edges": edges, "clusters": clusters}


def test_dot_is_structurally_valid():
    text = to_dot(build_sample())
    parsed = parse(text)
    assert parsed["edges"], "no edges"
    for a, b in parsed["edges"]:
        assert a in parsed["declared"] and b in parsed["declared"], (a, b)
    # every quote is closed: the tokeniser saw no stray quote character
    assert '"' not in "".join(t for t in tokens(text) if not t.startswith('"'))


def test_if_branches_and_fusion_groups_are_clusters():
    parsed = parse(to_dot(build_sample()))
    clusters = parsed["clusters"]
    assert all(c.startswith("cluster_") for c in clusters)
    assert any("then_branch" in c for c in clusters)
    assert any("else_branch" in c for c in clusters)
    assert sum(c.startswith("cluster_fusion") for c in clusters) == 1  # mul and exp share group 0


def test_fusion_cluster_holds_its_members():
    text = to_dot(build_sample())
    block = text.split("subgraph cluster_fusion_")[1].split("}")[0]
    assert "mul" in block and "exp" in block and "sum" not in block


def test_edges_are_labelled_with_types():
    text = to_dot(build_sample())
    assert 'label="0: f32[4,8]"' in text  # an input of a two-input node
    assert 'label="bool[]"' in text or 'label="0: bool[]"' in text
    assert "f16[16,16]{FRACTAL_NZ}" in text


def test_clusters_argument_groups_nodes():
    g = Graph("g")
    x = g.add_input(F32_4x8, name="x")
    a = g.add("relu", [x])
    b = g.add("exp", [a.out()])
    c = g.add("add", [a.out(), b.out()])
    g.set_outputs([c.out()])
    text = to_dot(g, clusters={a: "A", b: "A", c: "B"})
    parsed = parse(text)
    assert sum(name.startswith("cluster_fusion") for name in parsed["clusters"]) == 2
    assert 'label="fusion A"' in text and 'label="fusion B"' in text


def test_labels_are_escaped():
    g = Graph('we"ird\\name{}')
    x = g.add_input(TensorType((2,), "float32"), name="x")
    g.set_outputs([g.add("relu", [x]).out()])
    text = to_dot(g)
    assert text.startswith('digraph "we\\"ird\\\\name{}" {')
    parse(text)  # braces inside the quoted name do not unbalance anything


def test_deterministic():
    assert to_dot(build_sample()) == to_dot(build_sample())


def test_the_structural_checker_itself_catches_errors():
    import pytest

    with pytest.raises(AssertionError):
        parse('digraph "g" {\n  n0 [label="a"];\n')  # missing closing brace
    broken = parse('digraph "g" {\n  n0 [label="a"];\n  n0 -> n9 [label="x"];\n}\n')
    assert ("n0", "n9") in broken["edges"] and "n9" not in broken["declared"]
