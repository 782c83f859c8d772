"""Reference interpreter: If both ways, constants, dtype casting, input validation."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_close
from pyasc.ir import Graph, InterpreterError, Node, Sym, TensorType, interpret
from test_ir_samples import F32_4x8, build_dynamic, build_sample, nested_if_graph, sample_expected, sample_inputs


@pytest.mark.parametrize("cond", [True, False])
def test_sample_graph_both_branches(cond):
    inputs = sample_inputs(cond)
    got = interpret(build_sample(), inputs)
    want = sample_expected(*inputs)
    assert len(got) == 3
    for g, w in zip(got, want):
        assert_close(g, w)


@pytest.mark.parametrize("cond, expected", [((True, True), "tt"), ((True, False), "tf"),
                                            ((False, True), "e"), ((False, False), "e")])
def test_nested_if(cond, expected):
    x = np.arange(4, dtype=np.float32) - 1
    outer, inner = (np.array([c]) for c in cond)
    (got,) = interpret(nested_if_graph(), [outer, inner, x])
    want = {"tt": np.exp(x), "tf": np.maximum(x, 0), "e": x * x}[expected]
    assert_close(got, want)


def test_condition_of_any_one_element_shape():
    g = nested_if_graph()
    x = np.ones(4, np.float32)
    assert interpret(g, [np.array([False]), np.array([True]), x])[0].shape == (4,)


def test_constants_scalar_short_and_long():
    g = Graph()
    x = g.add_input(TensorType((2, 8), "int32"), name="x")
    long = g.const(np.arange(16, dtype=np.int32).reshape(2, 8))
    short = g.const(np.array([3], np.int32))
    g.set_outputs([g.add("mul", [g.add("add", [x, long]).out(), short]).out(), long])
    x_in = np.full((2, 8), 2, np.int32)
    prod, const_out = interpret(g, [x_in])
    assert_close(prod, (x_in + np.arange(16, dtype=np.int32).reshape(2, 8)) * 3)
    assert const_out.flags.writeable  # a fresh array, not the read-only Const value
    const_out[0, 0] = 99
    assert g.nodes[1].attrs["value"][0, 0] == 0


def test_results_take_the_inferred_dtype():
    # a float64 constant narrows to float32 in the node's type; the result follows the node
    g = Graph()
    g.append(Node("Const", [], {"value": np.array([0.5, 1.5])}, [TensorType((2,), "float32")]))
    g.set_outputs([g.nodes[0].out()])
    (out,) = interpret(g, [])
    assert out.dtype == np.float32
    assert_close(out, np.array([0.5, 1.5], np.float32))


def test_fusion_annotations_are_not_passed_to_ops():
    g = build_sample()
    assert any("fusion_group" in n.attrs for n in g.nodes)
    g.nodes[-1].attrs["_planner_note"] = "x"
    interpret(g, sample_inputs(True))


def test_inputs_are_not_modified():
    inputs = sample_inputs(False)
    before = [a.copy() for a in inputs]
    interpret(build_sample(), inputs)
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a, b)


def test_output_that_is_an_input_is_a_copy():
    g = Graph()
    x = g.add_input(F32_4x8, name="x")
    g.set_outputs([x])
    data = np.zeros((4, 8), np.float32)
    (out,) = interpret(g, [data])
    assert out is not data and not np.shares_memory(out, data)


def test_symbolic_dims_bind_per_call():
    g = build_dynamic()
    for n in (1, 3):
        x = np.ones((n, 8), np.float32)
        v = np.arange(n, dtype=np.float32).reshape(n, 1)
        total, s = interpret(g, [x, v])
        assert_close(s, x + v)
        assert_close(total, (x + v).sum(axis=0, keepdims=True))


def test_symbolic_dims_in_attributes_take_this_runs_sizes():
    # dynamic=True kernels carry shapes such as broadcast_to(y, x.shape) as attributes with symbolic dims
    n = Sym("N")
    g = Graph()
    x = g.add_input(TensorType((n, 4), "float32"), name="x")
    y = g.add_input(TensorType((4,), "float32"), name="y")
    wide = g.add("broadcast_to", [y], {"shape": (n, 4)}).out()
    zeros = g.add("full", [], {"shape": (n, 4), "fill_value": 1.0, "dtype": "float32"}).out()
    flat = g.add("reshape", [x], {"shape": (n * 4,)}).out()
    then, other = Graph("then"), Graph("else")
    then.set_outputs([then.add("full", [], {"shape": (n,), "fill_value": 2.0, "dtype": "float32"}).out()])
    other.set_outputs([other.add("full", [], {"shape": (n,), "fill_value": 3.0, "dtype": "float32"}).out()])
    cond = g.const(np.array(True))
    chosen = g.add("If", [cond], {"then_branch": then, "else_branch": other}).out()
    g.set_outputs([g.add("add", [wide, zeros]).out(), flat, chosen])
    for rows in (2, 5):
        xs, ys = np.ones((rows, 4), np.float32), np.arange(4, dtype=np.float32)
        total, flat_out, branch = interpret(g, [xs, ys])
        assert_close(total, np.broadcast_to(ys, (rows, 4)) + 1)
        assert flat_out.shape == (rows * 4,)
        assert_close(branch, np.full(rows, 2.0, np.float32))  # N bound by the kernel's inputs, not the branch's


def test_expression_dims_are_checked():
    g = Graph()
    a = g.add_input(TensorType((Sym("N"),), "float32"), name="a")
    b = g.add_input(TensorType((Sym("N") * 2,), "float32"), name="b")
    g.set_outputs([a, b])
    interpret(g, [np.ones(3, np.float32), np.ones(6, np.float32)])
    with pytest.raises(ValueError, match=r"input 1 \(b\) dim 0 must be 2\*N = 6, got 5"):
        interpret(g, [np.ones(3, np.float32), np.ones(5, np.float32)])


class TestInputValidation:
    def test_wrong_count(self):
        with pytest.raises(ValueError, match=r"graph 'main' takes 3 input\(s\), got 2"):
            interpret(build_sample(), sample_inputs(True)[:2])

    def test_wrong_dtype(self):
        inputs = sample_inputs(True)
        inputs[0] = inputs[0].astype(np.float64)
        with pytest.raises(ValueError, match=r"input 0 \(x\) must have dtype float32 \(f32\[4,8\]\), got float64"):
            interpret(build_sample(), inputs)

    def test_wrong_rank(self):
        inputs = sample_inputs(True)
        inputs[1] = np.array([True])
        with pytest.raises(ValueError, match=r"input 1 \(c\) must have rank 0 \(bool\[\]\), got shape \(1,\)"):
            interpret(build_sample(), inputs)

    def test_wrong_static_dim(self):
        inputs = sample_inputs(True)
        inputs[2] = np.zeros((16, 8), np.float16)
        with pytest.raises(ValueError, match=r"input 2 must have shape \(16, 16\) .*got \(16, 8\)"):
            interpret(build_sample(), inputs)

    def test_inconsistent_symbolic_dim(self):
        with pytest.raises(ValueError, match=r"symbolic dim N is 4 in input 0 \(x\) dim 0 but 5 in input 1 \(v\) dim 0"):
            interpret(build_dynamic(), [np.ones((4, 8), np.float32), np.ones((5, 1), np.float32)])

    def test_condition_with_many_elements(self):
        g = Graph()
        c = g.add_input(TensorType((Sym("N"),), "bool"), name="c")
        x = g.add_input(F32_4x8, name="x")
        branches = []
        for _ in range(2):
            b = Graph()
            b.set_outputs([b.add_input(F32_4x8)])
            branches.append(b)
        g.set_outputs([g.add("If", [c, x], {"then_branch": branches[0], "else_branch": branches[1]}).out()])
        interpret(g, [np.array([True]), np.ones((4, 8), np.float32)])
        with pytest.raises(ValueError, match=r"If condition must have one element, got shape \(2,\)"):
            interpret(g, [np.array([True, False]), np.ones((4, 8), np.float32)])

    def test_lists_are_accepted_as_arrays(self):
        g = Graph()
        x = g.add_input(TensorType((2,), "int32"), name="x")
        g.set_outputs([g.add("relu", [x]).out()])
        with pytest.raises(ValueError, match="must have dtype int32"):
            interpret(g, [[1.5, -2.0]])
        (out,) = interpret(g, [np.array([1, -2], np.int32)])
        assert_close(out, np.array([1, 0], np.int32))


def test_out_of_order_graph_is_an_interpreter_error():
    g = build_sample()
    g.nodes.reverse()
    with pytest.raises(InterpreterError, match="not computed before it"):
        interpret(g, sample_inputs(True))
