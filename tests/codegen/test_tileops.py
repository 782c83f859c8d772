"""Tile ops derive their pipe and their on-chip reads and writes from the instruction specs (pyasc.target)."""
from __future__ import annotations

import pytest

from pyasc.codegen import tileops as T
from pyasc.codegen.schedule import GmRef, Ref
from pyasc.target import SPECS


def test_reads_and_writes_are_the_specs_memory_operands():
    op = T.vselect(Ref("out"), Ref("mask"), Ref("a"), 0.0, 64, "float32")
    assert op.instr == "vselect" and op.pipe == "V"
    assert op.reads == (Ref("mask"), Ref("a")) and op.writes == (Ref("out"),)   # a scalar operand is not a buffer
    cast = T.vcast(Ref("y"), Ref("x"), 64, "float32", "float16")
    assert cast.reads == (Ref("x"),) and cast.writes == (Ref("y"),)


def test_an_accumulating_mmad_also_reads_its_accumulator():
    fresh = T.mmad(Ref("c"), Ref("a"), Ref("b"), 16, 16, 16, "float16")
    acc = T.mmad(Ref("c"), Ref("a"), Ref("b"), 16, 16, 16, "float16", accumulate=1)
    assert fresh.reads == (Ref("a"), Ref("b")) and acc.reads == (Ref("a"), Ref("b"), Ref("c"))
    assert fresh.writes == acc.writes == (Ref("c"),) and acc.pipe == "M"


@pytest.mark.parametrize("make, pipe", [
    (lambda: T.load(Ref("ub"), GmRef("in0"), "float32", 8), "MTE2"),
    (lambda: T.store(GmRef("out0"), Ref("ub"), "float32", 8), "MTE3"),
    (lambda: T.copy_nd2nz(Ref("l1"), GmRef("in0"), "float16", 16, 16), "MTE2"),
    (lambda: T.load_l0(Ref("l0a"), Ref("l1"), "float16", 16, 16), "MTE1"),
    (lambda: T.load_bias(Ref("bt"), Ref("l1"), 16), "MTE1"),
    (lambda: T.fixpipe(GmRef("out0"), Ref("l0c"), 16, 16, "float16"), "FIX"),
])
def test_a_moves_pipe_is_its_data_paths(make, pipe):
    op = make()
    assert op.pipe == pipe and op.spec is SPECS[op.instr]


def test_a_move_between_spaces_with_no_path_is_refused():
    with pytest.raises(ValueError, match="copy: .* do not name one data path"):
        T.tile("copy", dst=GmRef("out0"), src=GmRef("in0"), dtype="float32", burst=8)
