"""The template protocol: one registry, one router, one driver whose stages run on the pass manager."""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import pyasc
from pyasc import symbolic as sy
from pyasc.codegen import lower as lower_mod
from pyasc.codegen.capacity import codegen_capacity
from pyasc.codegen.device import CodegenOptions
from pyasc.codegen.route import route
from pyasc.codegen.schedule import Buffer, Ref, TileSchedule
from pyasc.codegen.template import Job, Template, Tiling, buffer_nums, ub_slot
from pyasc.codegen.templates import TEMPLATE_OPS, TEMPLATES, lowered_by
from pyasc.codegen import tileops as T
from pyasc.ge import PassVerificationError, optimize
from pyasc.frontend import ArgSpec, build_graph
from pyasc.ir import TensorType
from pyasc.target import get_chip


def test_every_template_declares_a_tiling_record_on_the_shared_base():
    for name, t in TEMPLATES.items():
        assert t.name == name and t.core_type in ("aiv", "aic", "mix")
        assert issubclass(t.tiling_type, Tiling) and dataclasses.is_dataclass(t.tiling_type)
        fields = {f.name for f in dataclasses.fields(t.tiling_type)}
        assert {"buffer_num", "cores"} <= fields, name
    # what a template lowers whole is read from the templates themselves
    assert TEMPLATE_OPS == {op: t.name for t in TEMPLATES.values() for op in t.ops}
    assert lowered_by("transpose") == "datamove" and lowered_by("slice_update") == "update"
    assert lowered_by("matmul") == "matmul" and lowered_by("add") == "vector" and lowered_by("sum") == "reduce"


def test_the_shared_slot_rules():
    t = TEMPLATES["vector"].tiling_type("rows", 4, 0, 2, 8)
    assert t.slots() == 2 and t.slots(rotating=False) == 1 and t.slot("i") == sy.mod(sy.sym("i"), 2)
    single = dataclasses.replace(t, buffer_num=1)
    assert single.slot("i") == 0 and single.slots() == 1
    assert buffer_nums(2) == [1, 2] and buffer_nums(1) == [1] and buffer_nums(4, most=2) == [1, 2]
    chip = get_chip("tiny")
    assert ub_slot(1, chip) == chip.ub_align and ub_slot(chip.ub_align + 1, chip) == 2 * chip.ub_align


def _plans(fn, *shapes, dtype="float32", chip="tiny"):
    names = list(inspect.signature(fn).parameters)
    specs = [ArgSpec(n, TensorType(s, dtype)) for n, s in zip(names, shapes)]
    graph = build_graph(fn, specs).graph
    return optimize(graph, chip=chip, capacity=codegen_capacity(get_chip(chip))).kernels


def test_the_router_picks_templates_by_op_then_by_kind():
    def move(x):
        return x.T

    def mlp(x, w):
        return pyasc.gelu(x @ w)

    def colsum(x):
        return pyasc.sum(x * 2.0, axis=0)

    chip = get_chip("tiny")
    [p] = _plans(move, (16, 24))
    assert [j.template for j in route("k", p, chip)] == ["datamove"]
    [p] = _plans(colsum, (64, 24))
    assert [j.template for j in route("k", p, chip)] == ["column"]
    [p] = [p for p in _plans(mlp, (32, 48), (48, 16), dtype="float16") if p.kind.value == "matmul"]
    assert p.mixed and [j.template for j in route("k", p, chip)] == ["mixed"]   # one cube+vector launch
    p.mixed = False   # what disable_passes=["mixed_kernels"] leaves: the cube, then the epilogue FixPipe cannot take
    assert [j.template for j in route("k", p, chip)] == ["matmul", "vector"]


def test_codegen_stages_are_recorded_with_statistics_and_times():
    @pyasc.kernel(chip="tiny")
    def k(x, y):
        return pyasc.relu(x * y + 1.0)

    x = np.ones((8, 40), np.float32)
    art = k.compile(x, x)
    line = art.kernels[0].stages
    for stage in ("analyze (analyses=", "tile (candidates=", "sync (flags=", "emit (instructions="):
        assert stage in line, line
    assert "stages: " + line in art.stages["tiling"]
    assert {"codegen.analyze", "codegen.tile", "codegen.sync", "codegen.emit"} <= set(art.timings)


def test_the_verifier_after_each_stage_names_the_stage_that_broke_the_state(monkeypatch):
    """A template whose schedule uses a buffer it never declared is caught right after the tile stage."""
    @dataclasses.dataclass(frozen=True)
    class Broken(Tiling):
        buffer_num: int = 1
        cores: int = 1

    def schedule(a, t, chip):
        body = [T.vdup(Ref("nowhere"), 0.0, 8, "float32")]
        return TileSchedule("broken", "aiv", [], {}, 1, [Buffer("ub", "UB", "float32", 32)], body)

    bad = Template("broken", "aiv", Broken, lambda job, chip: [object()], lambda a, chip, bn, cores: [Broken()],
                   schedule, lambda a: set())
    monkeypatch.setitem(TEMPLATES, "broken", bad)
    with pytest.raises(PassVerificationError, match="after pass 'tile'.*buffer 'nowhere'"):
        lower_mod.lower(Job("broken", "k0", None, [], []), get_chip("tiny"), CodegenOptions())


def test_one_renderer_reuses_a_value_inside_its_scope_only():
    made = []

    def symbol(name):
        made.append(name)
        return name

    table = dict(sy.EVAL_TABLE)
    table["add"] = sy.folded(lambda a, b: f"({a}+{b})")
    r = sy.Renderer(table, str, symbol)
    e = sy.sym("n") + sy.sym("m")
    r.push()
    assert r(e) == r(e) == "(m+n)" and sorted(made) == ["m", "n"]   # computed once in the scope
    r.pop()
    r(e)
    assert len(made) == 4   # a closed scope is not reused
    assert sy.evaluate(sy.select(sy.lt(sy.sym("a"), 3), sy.sym("a"), sy.floordiv(7, sy.sym("a"))), {"a": 0}) == 0
