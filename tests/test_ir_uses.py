"""The one use-list index of a graph (pyasc/ir/uses.py): readers per value, users per node, edits."""
from __future__ import annotations

from pyasc.ir import Graph, TensorType, UseIndex

F32 = TensorType((4,), "float32")


def diamond():
    g = Graph()
    x = g.add_input(F32, "x")
    a = g.add("exp", [x]).out()
    b = g.add("mul", [a, a]).out()       # reads a twice
    c = g.add("add", [a, x]).out()
    g.set_outputs([b, c])
    return g, x, a, b, c


def test_readers_count_every_use_and_users_are_distinct_in_node_order():
    g, x, a, b, c = diamond()
    uses = g.users()
    assert isinstance(uses, UseIndex)
    assert uses[a] == [b.node, b.node, c.node] and uses.readers(b) == [] and b not in uses
    assert uses.users(a.node) == [b.node, c.node] and uses.users(x.node) == [a.node, c.node]
    assert uses.is_output(b) and not uses.is_output(a)


def test_sole_reader_needs_one_use_and_not_a_graph_output():
    g, x, a, b, c = diamond()
    uses = g.users()
    assert uses.sole_reader(a) is None           # three uses
    e = g.add("neg", [c]).out()
    uses.added(e.node)
    assert uses.sole_reader(c) is None           # c is also a graph output
    g.set_outputs([b, e])
    assert uses.sole_reader(c) is e.node


def test_edits_keep_the_index_current():
    g, x, a, b, c = diamond()
    uses = g.users()
    uses.replace_input(c.node, 0, x)              # c = add(x, x)
    assert c.node.inputs == [x, x] and uses[a] == [b.node, b.node]
    assert uses.users(a.node) == [b.node] and uses.users(x.node) == [a.node, c.node]
    r = g.add("relu", [x]).out()
    uses.added(r.node)
    uses.redirect(b, r)                           # the graph output b now reads relu
    assert g.outputs == [r, c] and uses.readers(b) == []
    uses.dropped(b.node)
    assert uses[a] == [] and uses.users(a.node) == []
    assert uses.users(x.node) == [a.node, c.node, r.node]


def test_redirect_moves_every_reader_and_each_user_once():
    g, x, a, b, c = diamond()
    uses = g.users()
    y = g.add("abs", [x]).out()
    uses.added(y.node)
    uses.redirect(a, y)
    assert b.node.inputs == [y, y] and c.node.inputs == [y, x]
    assert uses[y] == [b.node, b.node, c.node] and uses.users(y.node) == [b.node, c.node]
    assert uses.users(a.node) == []
