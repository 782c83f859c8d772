"""JSON serialisation: lossless round trip, strict JSON, clear errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pyasc.errors import SourceLoc
from pyasc.ir import (Graph, Node, SerializationError, Sym, TensorType, attr_key, format_graph, from_json,
                      interpret, to_json, verify)
from test_ir_samples import F32_4x8, build_dynamic, build_sample, sample_inputs


def roundtrip(g: Graph) -> Graph:
    return from_json(to_json(g))


@pytest.mark.parametrize("build", [build_sample, build_dynamic])
def test_round_trip_prints_identically_and_verifies(build):
    g = build()
    back = roundtrip(g)
    assert format_graph(back, show_loc=True) == format_graph(g, show_loc=True)
    verify(back)
    assert to_json(back) == to_json(g)  # stable: writing again gives the same bytes


def test_round_trip_keeps_locations_hints_types_and_attrs():
    g = build_sample()
    back = roundtrip(g)
    for a, b in zip(g.all_nodes(), back.all_nodes()):
        assert (a.op, a.name, a.loc, a.outputs) == (b.op, b.name, b.loc, b.outputs)
        assert sorted(a.attrs) == sorted(b.attrs)
        for key, value in a.attrs.items():
            if isinstance(value, Graph):
                assert isinstance(b.attrs[key], Graph) and b.attrs[key] is not value
            else:
                assert attr_key(b.attrs[key]) == attr_key(value), key
    assert back.nodes[0].loc == SourceLoc("/src/kernels/sample.py", 3, 11, 3, 12)


def test_round_trip_runs_the_same():
    g = build_sample()
    for cond in (True, False):
        inputs = sample_inputs(cond)
        for got, want in zip(interpret(roundtrip(g), inputs), interpret(g, inputs)):
            np.testing.assert_array_equal(got, want)


def test_symbolic_dims_survive():
    back = roundtrip(build_dynamic())
    assert back.input_types[0] == TensorType((Sym("N"), 8), "float32")
    assert isinstance(back.input_types[0].shape[0], Sym)
    g = Graph()
    t = TensorType((Sym("((N*2)+1)"), 4), "int8", "ND")
    g.set_outputs([g.add_input(t)])
    assert roundtrip(g).input_types == [t]


def test_constants_are_exact_and_read_only():
    values = [
        np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, 3.4e38, 0.1], np.float32),
        np.array([[65504, -0.0], [np.nan, 6e-8]], np.float16),
        np.array([True, False, True]),
        np.array([-128, 127], np.int8),
        np.array([255, 0], np.uint8),
        np.array(-7, np.int32),
        np.zeros((0, 3), np.int16),
    ]
    g = Graph()
    g.set_outputs([g.const(v) for v in values])
    back = roundtrip(g)
    for node, want in zip(back.nodes, values):
        got = node.attrs["value"]
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
        assert not got.flags.writeable


def test_every_attribute_kind_round_trips():
    kinds = {
        "none": None, "flag": True, "zero": 0, "big": 2**40, "neg_zero": -0.0, "nan": float("nan"),
        "inf": float("inf"), "text": "FRACTAL_NZ", "axes": (0, -1), "nested": ((1, 2), (None, "a")),
        "listy": [1, (2,)], "mapping": {"k": (1.5,)}, "sym": Sym("N"), "type": TensorType((Sym("M"), 2), "float16"),
        "np_scalar": np.float16(1.5), "dtype": np.dtype("int8"), "arr": np.arange(4, dtype=np.int32).reshape(2, 2),
    }
    g = Graph()
    x = g.add_input(F32_4x8, name="x")
    node = g.add("relu", [x])
    node.attrs.update({f"_{k}": v for k, v in kinds.items()})
    g.set_outputs([node.out()])
    text = to_json(g)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    back_attrs = roundtrip(g).nodes[1].attrs
    for k, v in kinds.items():
        got = back_attrs[f"_{k}"]
        assert attr_key(got) == attr_key(v), k
        assert type(got) is type(v), k


def test_no_pickle_in_output():
    text = to_json(build_sample())
    assert json.loads(text)["format"] == "pyasc.graph"
    assert "pickle" not in text


class TestErrors:
    def test_not_json(self):
        with pytest.raises(SerializationError, match="not valid JSON"):
            from_json("{nope")

    def test_not_a_graph(self):
        with pytest.raises(SerializationError, match="not a serialised pyasc graph"):
            from_json('{"nodes": []}')

    def test_wrong_version(self):
        doc = json.loads(to_json(build_dynamic()))
        doc["version"] = 99
        with pytest.raises(SerializationError, match="version 99"):
            from_json(json.dumps(doc))

    def test_forward_reference(self):
        doc = json.loads(to_json(build_dynamic()))
        doc["graph"]["nodes"][2]["inputs"][0] = [3, 0]  # add reads the later sum
        with pytest.raises(SerializationError, match="not defined before its use"):
            from_json(json.dumps(doc))

    def test_unknown_tag(self):
        doc = json.loads(to_json(build_dynamic()))
        doc["graph"]["nodes"][3]["attrs"]["axis"] = {"$pickle": "..."}
        with pytest.raises(SerializationError, match="unknown attribute tag '\\$pickle'"):
            from_json(json.dumps(doc))

    def test_malformed_node(self):
        doc = json.loads(to_json(build_dynamic()))
        del doc["graph"]["nodes"][0]["outputs"]
        with pytest.raises(SerializationError, match="malformed serialised graph"):
            from_json(json.dumps(doc))

    def test_value_from_another_graph_cannot_be_written(self):
        outer = Graph("outer")
        x = outer.add_input(F32_4x8)
        inner = Graph("inner")
        inner.append(Node("relu", [x], {}, [F32_4x8]))
        inner.set_outputs([inner.nodes[0].out()])
        with pytest.raises(SerializationError, match="not in the graph"):
            to_json(inner)

    def test_unsupported_attribute(self):
        g = Graph()
        x = g.add_input(F32_4x8)
        g.add("relu", [x]).attrs["_obj"] = object()
        with pytest.raises(SerializationError, match="cannot serialise attribute value"):
            to_json(g)
