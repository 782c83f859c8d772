"""The verifier accepts valid graphs and names the broken rule, graph and node for corrupt ones."""
from __future__ import annotations

import numpy as np
import pytest

from pyasc.ir import Graph, Node, TensorType, VerificationError, verify
from test_ir_samples import F32_4x8, build_dynamic, build_sample


def node_of(g: Graph, op: str, nth: int = 0) -> Node:
    return [n for n in g.nodes if n.op == op][nth]


def expect(g: Graph, *words: str) -> VerificationError:
    with pytest.raises(VerificationError) as info:
        verify(g)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    return info.value


def test_valid_graphs_pass():
    assert verify(build_sample()) is None
    assert verify(build_dynamic()) is None
    assert verify(Graph("empty")) is None


def test_error_is_an_exception_with_fields():
    g = build_sample()
    node_of(g, "sum").outputs[0] = TensorType((4,), "int32")
    err = expect(g, "graph 'main'", "node `%6 = sum(%5#0) {axis=1, keepdims=False} : i32[4]`",
                 "types do not re-infer", "says (i32[4])", "gives (f32[4])")
    assert isinstance(err, Exception)
    assert (err.graph, err.rule) == ("main", "types do not re-infer")
    assert err.node.startswith("%6 = sum")


def test_cycle():
    g = build_sample()
    mul, exp = node_of(g, "mul"), node_of(g, "exp")
    mul.inputs[0] = exp.out()  # exp reads mul, mul now reads exp
    expect(g, "cycle", "%3 -> %4 -> %3")


def test_self_loop():
    g = build_sample()
    relu = node_of(g, "relu")
    relu.inputs[0] = relu.out()
    expect(g, "cycle", "%9 -> %9")


def test_use_before_definition():
    g = build_sample()
    mul = node_of(g, "mul")
    exp = node_of(g, "exp")
    g.nodes.remove(mul)
    g.nodes.insert(g.nodes.index(exp) + 1, mul)
    expect(g, "use before definition", "defined after its use", "exp(")


def test_input_from_another_graph():
    g = build_sample()
    then_branch = node_of(g, "If").attrs["then_branch"]
    outer_x = g.nodes[0].out()
    node_of(then_branch, "relu").inputs[0] = outer_x
    expect(g, "graph 'main/%5.then_branch'", "input from outside the graph", "graph 'main'", "%?Data")


def test_input_reads_missing_output():
    g = build_sample()
    relu = node_of(g, "relu")
    relu.inputs[0] = g.nodes[0].out(3)
    expect(g, "no such output", "output 3")


def test_type_change_in_producer_is_caught_at_the_consumer():
    g = build_sample()
    x = g.nodes[0]
    x.attrs["type"] = TensorType((4, 1), "float32")
    x.outputs[0] = TensorType((4, 1), "float32")  # the Data node itself is consistent again
    expect(g, "types do not re-infer", "%3 = mul(%x, %1)", "says (f32[4,8]) but re-inference gives (f32[4,1])")


def test_inference_rejects_mutated_inputs():
    g = build_sample()
    node_of(g, "add", 1).inputs[1] = node_of(g, "Const", 0).out()  # (4,8) + (8,) ok ...
    node_of(g, "add", 1).inputs[0] = node_of(g, "Const", 2).out()  # ... (4,1) + (8,) is (4,8) too
    verify(g)
    node_of(g, "sum").inputs[0] = node_of(g, "Data", 1).out()  # sum of a bool scalar over axis 1
    expect(g, "type re-inference failed", "op rejects its current inputs")


def test_if_branch_data_count_mismatch():
    g = build_sample()
    then_branch = node_of(g, "If").attrs["then_branch"]
    then_branch.add_input(F32_4x8)
    expect(g, "If branch signature mismatch", "then_branch has 3 Data inputs", "passes 2 operands", "%5 = If(")


def test_if_branch_data_type_mismatch():
    g = build_sample()
    else_branch = node_of(g, "If").attrs["else_branch"]
    data = node_of(else_branch, "Data", 1)
    data.attrs["type"] = data.outputs[0] = TensorType((8,), "float16")
    expect(g, "If branch signature mismatch", "else_branch Data 1 is f16[8]", "passes f32[8] (If input 2)")


def test_if_branch_result_mismatch():
    g = build_sample()
    then_branch = node_of(g, "If").attrs["then_branch"]
    then_branch.outputs.pop()
    expect(g, "If branch results mismatch", "then_branch returns (f32[4,8])",
           "the If outputs (f32[4,8], f32[4,8])")


def test_if_without_branch_graph():
    g = build_sample()
    node_of(g, "If").attrs["else_branch"] = "nope"
    expect(g, "If branch missing", "'else_branch' must be a Graph")


def test_duplicate_data_index():
    g = build_sample()
    g.nodes[1].attrs["index"] = 0
    expect(g, "duplicate Data index", "two Data nodes have index 0")


def test_data_indices_with_a_gap():
    g = build_sample()
    g.nodes[2].attrs["index"] = 5
    expect(g, "Data indices not 0..n-1", "missing [2]")


def test_unknown_op():
    g = build_sample()
    g.append(Node("frobnicate", [g.nodes[0].out()], {}, [F32_4x8]))
    expect(g, "unknown op", "'frobnicate'", "%10 = frobnicate(%x)")


def test_dangling_output():
    g = build_sample()
    relu = node_of(g, "relu")
    g.remove([relu])
    expect(g, "dangling output", "graph output 2", "relu")


def test_output_index_out_of_range():
    g = build_sample()
    g.outputs[0] = node_of(g, "sum").out(1)
    expect(g, "no such output", "graph output 0")


def test_duplicate_node_object():
    g = build_sample()
    g.nodes.append(g.nodes[-1])
    expect(g, "duplicate node", "appears twice")


def test_corrupt_const_is_reported_not_crashed():
    g = Graph()
    g.append(Node("Const", [], {}, [F32_4x8]))
    expect(g, "type re-inference failed", "%0 = Const : f32[4,8]")


def test_nested_subgraph_errors_name_the_nested_path():
    g = build_sample()
    then_branch = node_of(g, "If").attrs["then_branch"]
    then_branch.nodes[-1].outputs[0] = TensorType((4, 8), "int8")
    expect(g, "graph 'main/%5.then_branch'", "%1 = relu(%a) : i8[4,8]", "types do not re-infer")


def test_const_with_narrowed_dtype_is_consistent():
    g = Graph()
    g.set_outputs([g.const(np.arange(3, dtype=np.int64))])
    verify(g)
    assert g.nodes[0].outputs[0].dtype == "int32"
