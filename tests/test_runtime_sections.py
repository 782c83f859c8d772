"""The artifact as sections (one codec table) and the plan-record codec that points into the final graph."""
from __future__ import annotations

import enum
import json
import types
from dataclasses import dataclass, field

import numpy as np
import pytest

import pyasc
from pyasc.examples import BY_NAME
from pyasc.ge import DecisionKind, KernelKind
from pyasc.runtime import records, sections


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


class Kind(str, enum.Enum):
    A = "a"


@dataclass
class Probe:
    colour: Colour
    kind: Kind
    maybe: Colour | None = None
    pair: tuple = ()
    table: dict = field(default_factory=dict)


def compiled(name: str):
    ex = BY_NAME[name]
    return pyasc.kernel(ex.fn, chip="tiny").compile(*ex.make_inputs(np.random.default_rng(0)))


def test_records_round_trip_with_enums_tuples_dicts_and_graph_references():
    records.register_record(Probe)
    try:
        c = compiled("tensor_if")
        index = records.GraphIndex(c.graph)
        branch_kernels = [k for k in c.plans if k.graph is not c.graph]
        assert branch_kernels, "the tensor-if example plans kernels inside its branches"
        value = [Probe(Colour.BLUE, Kind.A, None, (1, "x", 2.5), {"k": [3]}), c.fusion_decisions, *c.plans]
        doc = records.encode(value, index)
        back = records.decode(doc, records.GraphIndex(c.graph))
        assert back[0] == value[0] and isinstance(back[0].kind, Kind)
        assert back[1] == c.fusion_decisions and all(type(d.kind) is DecisionKind for d in back[1])
        for a, b in zip(back[2:], c.plans):
            assert a.graph is b.graph and a.nodes == b.nodes and a.inputs == b.inputs and a.outputs == b.outputs
            assert (a.category, a.anchor, a.group, a.working_set) == (b.category, b.anchor, b.group, b.working_set)
            assert a.structure == b.structure and a.anchor_node is b.anchor_node and type(a.kind) is KernelKind
    finally:
        records.RECORD_TYPES.pop("Probe")


def test_symbolic_dims_and_node_sets_are_tagged_and_sorted():
    c = pyasc.kernel(BY_NAME["softmax"].fn, chip="tiny", dynamic=True).compile(np.ones((4, 8), np.float32))
    index = records.GraphIndex(c.graph)
    nodes = [n for n in c.graph.nodes if n.op != "Data"]
    doc = records.encode((c.plans[0].structure.rows, frozenset(reversed(nodes))), index)
    assert doc["$tuple"][0] == {"$tuple": [{"$sym": "x_d0"}, {"$sym": "x_d1"}]}
    assert doc["$tuple"][1] == records.encode(frozenset(nodes), index)  # the same set, the same bytes
    assert doc["$tuple"][1]["$frozenset"] == sorted(doc["$tuple"][1]["$frozenset"], key=json.dumps)
    rows, back = records.decode(doc, index)
    assert rows == (pyasc.ir.Sym("x_d0"), pyasc.ir.Sym("x_d1")) and back == frozenset(nodes)


def test_records_refuse_what_they_cannot_write_or_do_not_know():
    c = compiled("softmax")
    index = records.GraphIndex(c.graph)
    with pytest.raises(records.RecordError, match="register_record it"):
        records.encode(Probe(Colour.RED, Kind.A), index)
    with pytest.raises(records.RecordError, match="unknown record type 'Evil'"):
        records.decode({"$record": "Evil", "fields": {}}, index)
    other = pyasc.ir.Graph("other")
    with pytest.raises(records.RecordError, match="not part of the final graph"):
        records.encode(other, index)
    with pytest.raises(TypeError, match="not a dataclass"):
        records.register_record(int)


def test_every_section_of_an_artifact_round_trips():
    c = compiled("matmul_bias_relu")
    files = sections.encode_artifact(c)
    assert list(files) == ["graph.json", "stages.json", "plans.json", "call.json", "device.json", "host.json"]
    fields = sections.decode_artifact(files, {})
    assert pyasc.ir.format_graph(fields["graph"]) == pyasc.ir.format_graph(c.graph)
    assert fields["stages"] == c.stages and fields["stage_ops"] == c.stage_ops
    assert [k.describe() for k in fields["plans"]] == [k.describe() for k in c.plans]
    assert fields["fusion_decisions"] == c.fusion_decisions
    assert fields["memory_plan"].table() == c.memory_plan.table()
    assert fields["signature"] == c.signature and fields["timings"] == c.timings
    assert [k.program for k in fields["device"].kernels] == [k.program for k in c.kernels]
    assert [k.tiling for k in fields["device"].kernels] == [k.tiling for k in c.kernels]
    assert fields["device"].launch == c.device.launch
    assert fields["host"].object_code == c.host.object_code and fields["host"].source == c.host.source


def test_a_new_section_is_one_table_entry(monkeypatch):
    monkeypatch.setattr(sections, "SECTIONS", list(sections.SECTIONS))
    sections.register_section(sections.json_section(
        "extra.json", write=lambda ck: {"n": ck.n} if ck.n else None, read=lambda doc, f: {"n": doc["n"]}))
    sections.register_section(sections.bytes_section("blob.bin", "blob"))
    with pytest.raises(ValueError, match="already stored as 'blob.bin'"):
        sections.register_section(sections.bytes_section("blob.bin", "other"))
    with pytest.raises(ValueError, match="cannot name a section file"):
        sections.register_section(sections.bytes_section("manifest.json", "other"))
    c = compiled("softmax")
    fake = types.SimpleNamespace(**{name: getattr(c, name) for name in (
        "graph", "stages", "dots", "stage_ops", "plans", "memory_plan", "fusion_decisions", "pass_log", "signature",
        "returns_tuple", "out_tree", "out_consts", "effects", "nodes_in", "nodes_out", "timings", "pass_times", "device", "host")}, n=7, blob=b"\x00\x01object code")
    files = sections.encode_artifact(fake)
    assert files["extra.json"] == b'{"n":7}' and files["blob.bin"] == b"\x00\x01object code"
    fields = sections.decode_artifact(files, {})
    assert fields["n"] == 7 and fields["blob"] == b"\x00\x01object code"
    fake.n, fake.blob = 0, b""
    assert "extra.json" not in sections.encode_artifact(fake) and "blob.bin" not in sections.encode_artifact(fake)
