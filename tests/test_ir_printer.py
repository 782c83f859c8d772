"""Canonical text printer: snapshot, determinism, naming, constants, attr_key."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pyasc.ir import Graph, Node, Sym, TensorType, attr_key, format_graph, format_node, node_names
from test_ir_samples import F32_4x8, build_branches, build_dynamic, build_sample

# The committed canonical dump of build_sample(); a change here is a change of the dump format.
EXPECTED_SAMPLE = """\
graph main {
  %x = Data {index=0} : f32[4,8]
  %c = Data {index=1} : bool[]
  %arg2 = Data {index=2} : f16[16,16]{FRACTAL_NZ}
  %0 = Const {value=f32[8] [0.0, 0.5, 1.0, ..., 2.5, 3.0, 3.5] #551b6fa7} : f32[8]
  %1 = Const {value=f32[] 2.0} : f32[]
  %2 = Const {value=f32[4,1] [1.0, 2.0, 3.0, -4.0]} : f32[4,1]
  %3 = mul(%x, %1) {fusion_group=0} : f32[4,8]
  %4 = exp(%3) {fusion_group=0} : f32[4,8]
  %5 = If(%c, %3, %0) {else_branch=@main/%5.else_branch, then_branch=@main/%5.then_branch} : (f32[4,8], f32[4,8])
  %6 = sum(%5#0) {axis=1, keepdims=False} : f32[4]
  %7 = add(%5#1, %4) : f32[4,8]
  %8 = add(%7, %2) : f32[4,8]
  %9 = relu(%arg2) : f16[16,16]
  return (%6, %8, %9)
}

graph main/%5.else_branch {
  %arg0 = Data {index=0} : f32[4,8]
  %arg1 = Data {index=1} : f32[8]
  %0 = relu(%arg0) : f32[4,8]
  %1 = mul(%arg0, %arg0) : f32[4,8]
  return (%0, %1)
}

graph main/%5.then_branch {
  %a = Data {index=0} : f32[4,8]
  %b = Data {index=1} : f32[8]
  %0 = add(%a, %b) : f32[4,8]
  %1 = relu(%a) : f32[4,8]
  return (%0, %1)
}
"""


def test_snapshot_of_sample_graph():
    assert format_graph(build_sample()) == EXPECTED_SAMPLE


def test_str_of_graph_is_the_canonical_text():
    g = build_sample()
    assert str(g) == format_graph(g)


def test_two_separately_built_graphs_print_identically():
    a, b = build_sample(), build_sample()
    assert {n.id for n in a.all_nodes()}.isdisjoint({n.id for n in b.all_nodes()})
    assert format_graph(a) == format_graph(b)
    assert format_graph(a, show_loc=True) == format_graph(b, show_loc=True)


def test_structural_change_changes_the_text():
    a, b = build_sample(), build_sample()
    b.nodes[-1].attrs["fusion_group"] = 1
    assert format_graph(a) != format_graph(b)
    assert "%9 = relu(%arg2) {fusion_group=1} : f16[16,16]" in format_graph(b)


def test_show_loc_adds_hint_and_basename_location():
    text = format_graph(build_sample(), show_loc=True)
    assert "%3 = mul(%x, %1) {fusion_group=0} : f32[4,8]  # y sample.py:4:9" in text
    assert "%x = Data {index=0} : f32[4,8]  # sample.py:3:12" in text
    assert "/src/kernels" not in text
    assert "#" not in format_graph(build_dynamic())


def _const_graph(values) -> str:
    g = Graph()
    g.set_outputs([g.const(values)])
    return format_graph(g)


def test_long_constant_is_abbreviated_with_digest():
    text = _const_graph(np.arange(10, dtype=np.int32))
    assert "value=i32[10] [0, 1, 2, ..., 7, 8, 9] #" in text
    assert "4" not in text.split("value=")[1].split("#")[0]
    changed = np.arange(10, dtype=np.int32)
    changed[5] = 50  # only an elided element differs: the digest must tell them apart
    assert _const_graph(changed) != text


def test_short_and_scalar_constants_print_in_full():
    assert "value=f16[2,3] [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]" in _const_graph(
        np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], dtype=np.float16))
    assert "value=bool[2] [True, False]" in _const_graph(np.array([True, False]))
    assert "value=i32[] 7" in _const_graph(7)
    assert "value=f32[3] [nan, -inf, -0.0]" in _const_graph(np.array([np.nan, -np.inf, -0.0], np.float32))


def test_data_names_hint_fallback_and_collisions():
    g = Graph()
    a = g.add_input(F32_4x8, name="arg1")  # reserved spelling: falls back to arg0
    b = g.add_input(F32_4x8, name="x")
    c = g.add_input(F32_4x8, name="x")  # duplicate hint: falls back to arg2
    d = g.add_input(F32_4x8, name="not an identifier")
    g.set_outputs([a, b, c, d])
    names = node_names(g)
    assert [names[v.node] for v in (a, b, c, d)] == ["arg0", "x", "arg2", "arg3"]
    assert "return (%arg0, %x, %arg2, %arg3)" in format_graph(g)


def test_data_names_follow_index_not_position():
    g = Graph()
    later = g.add("Data", (), {"index": 1, "type": F32_4x8})
    first = g.add("Data", (), {"index": 0, "type": F32_4x8})
    g.set_outputs([g.add("add", [later.out(), first.out()]).out()])
    assert "%0 = add(%arg1, %arg0) : f32[4,8]" in format_graph(g)


def test_nested_if_subgraph_paths():
    inner_then, inner_else = build_branches()
    outer_then = Graph("outer_then")
    cond = outer_then.add_input(TensorType((1,), "bool"))
    a = outer_then.add_input(F32_4x8)
    b = outer_then.add_input(TensorType((8,), "float32"))
    inner = outer_then.add("If", [cond, a, b], {"then_branch": inner_then, "else_branch": inner_else})
    outer_then.set_outputs([inner.out(0)])
    outer_else = Graph("outer_else")
    outer_else.add_input(TensorType((1,), "bool"))
    a = outer_else.add_input(F32_4x8)
    outer_else.add_input(TensorType((8,), "float32"))
    outer_else.set_outputs([a])

    g = Graph("k")
    c = g.add_input(TensorType((1,), "bool"), name="c")
    x = g.add_input(F32_4x8, name="x")
    w = g.add_input(TensorType((8,), "float32"), name="w")
    node = g.add("If", [c, c, x, w], {"then_branch": outer_then, "else_branch": outer_else})
    g.set_outputs([node.out()])
    text = format_graph(g)
    headers = [line for line in text.splitlines() if line.startswith("graph ")]
    assert headers == [
        "graph k {",
        "graph k/%0.else_branch {",
        "graph k/%0.then_branch {",
        "graph k/%0.then_branch/%0.else_branch {",
        "graph k/%0.then_branch/%0.then_branch {",
    ]
    assert "%0 = If(%c, %c, %x, %w) {else_branch=@k/%0.else_branch, then_branch=@k/%0.then_branch} : f32[4,8]" in text
    assert "return (%0#0)" in text  # output 0 of a two-output If inside the outer then-branch


def test_format_node_helper():
    g = build_sample()
    names = node_names(g)
    sum_node = next(n for n in g.nodes if n.op == "sum")
    assert format_node(sum_node, names) == "%6 = sum(%5#0) {axis=1, keepdims=False} : f32[4]"
    stranger = Node("relu", [], {}, [F32_4x8])
    assert format_node(stranger, names).startswith("%?relu = relu")


def test_attribute_formatting_kinds():
    g = Graph()
    x = g.add_input(F32_4x8, name="x")
    node = g.add("relu", [x])
    node.attrs.update({"t": (1,), "n": None, "f": 0.5, "s": "nz", "ty": TensorType((Sym("N"),), "int8"),
                       "d": {"b": 1, "a": (2, 3)}})
    line = format_node(node, node_names(g))
    assert line == ("%0 = relu(%x) {d={a: (2, 3), b: 1}, f=0.5, n=None, s='nz', t=(1,), "
                    "ty=i8[N]} : f32[4,8]")


class TestAttrKey:
    def test_bool_int_float_are_distinct(self):
        keys = {attr_key(True), attr_key(1), attr_key(1.0), attr_key(np.float32(1.0)), attr_key("1")}
        assert len(keys) == 5

    def test_floats_nan_and_signed_zero(self):
        assert attr_key(float("nan")) == attr_key(math.nan)
        assert attr_key(0.0) != attr_key(-0.0)
        assert attr_key(0.1) == attr_key(0.1)

    def test_tuples_and_lists_nest(self):
        assert attr_key((1, (2, None))) == attr_key((1, (2, None)))
        assert attr_key((1, 2)) != attr_key([1, 2])
        assert attr_key((1, True)) != attr_key((1, 1))
        assert attr_key({"a": 1, "b": 2}) == attr_key({"b": 2, "a": 1})

    def test_tensor_types_and_syms(self):
        assert attr_key(TensorType((Sym("N"), 4), "float16")) == attr_key(TensorType((Sym("N"), 4), "float16"))
        assert attr_key(TensorType((4, 4), "float16")) != attr_key(TensorType((4, 4), "float16", "FRACTAL_NZ"))
        assert attr_key(Sym("N")) != attr_key("N")

    def test_arrays_by_dtype_shape_and_bytes(self):
        a = np.arange(6, dtype=np.float32)
        assert attr_key(a) == attr_key(a.copy())
        assert attr_key(a) != attr_key(a.astype(np.int32))
        assert attr_key(a) != attr_key(a.reshape(2, 3))
        assert attr_key(np.array([np.nan], np.float32)) == attr_key(-np.array([np.nan], np.float32))
        hash(attr_key(a[::2]))  # non-contiguous views are fine

    def test_a_0d_array_differs_from_a_one_element_array(self):
        # (CSE keys Consts by attr_key: merging these would change a result's shape)
        assert attr_key(np.array(2.0, np.float32)) != attr_key(np.array([2.0], np.float32))
        assert attr_key(np.array(2.0, np.float32))[2] == ()

    def test_graphs_by_identity(self):
        g1, g2 = Graph("b"), Graph("b")
        assert attr_key(g1) == attr_key(g1)
        assert attr_key(g1) != attr_key(g2)

    def test_unhashable_value_is_a_clear_error(self):
        with pytest.raises(TypeError, match="no canonical key"):
            attr_key([_Unhashable()])


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]
