"""Each instruction is described once (its SPEC): checks, pipes, paths and builders all derive from it."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from simulator import Program, chips, isa
from simulator.errors import ProgramError
from simulator.isa import DATA_PATHS, SPECS, UB, GM, L1, L0A, L0B, L0C, BT


def test_every_instruction_has_a_named_spec_whose_operands_are_its_fields():
    assert set(SPECS) == set(isa.INSTRUCTIONS)
    for op, cls in isa.INSTRUCTIONS.items():
        spec = SPECS[op]
        assert spec.op == op and cls.SPEC is spec
        names = {f.name for f in dataclasses.fields(cls)}
        for m in spec.mems:
            assert m.name in names, f"{op}: spec operand {m.name} is not a field"
            assert m.elem in names or m.elem in isa.DTYPES, f"{op}: element type {m.elem}"
        if spec.move:
            src, dst = (spec.mem(n) for n in spec.move)
            paths = {(a, b) for a in src.spaces for b in dst.spaces} & set(DATA_PATHS)
            assert paths, f"{op}: no data path between its operands' spaces"


def test_a_moves_pipe_and_cost_path_come_from_the_path_table():
    cases = [
        (isa.Copy(UB(0), GM("x"), "float16", 16), "MTE2", "gm_to_ub"),
        (isa.Copy(GM("x"), UB(0), "float16", 16), "MTE3", "ub_to_gm"),
        (isa.Copy(L1(0), GM("x"), "float16", 16), "MTE2", "gm_to_l1"),
        (isa.LoadL0(L0A(0), L1(0), "float16", 16, 16), "MTE1", "l1_to_l0a"),
        (isa.LoadL0(L0B(0), L1(0), "float16", 16, 16), "MTE1", "l1_to_l0b"),
        (isa.LoadBias(BT(0), L1(0), 16), "MTE1", "l1_to_bt"),
        (isa.FixPipe(GM("y"), L0C(0), 16, 16, "float16"), "FIX", "l0c_to_gm"),
    ]
    for instr, pipe, path in cases:
        assert (instr.pipe, instr.path) == (pipe, path), instr.text()
        assert isinstance(getattr(chips.get("910b"), path), chips.DmaPath)


def test_memory_operands_are_checked_against_the_spec_spaces():
    p = Program("k", "aic", params=["x"])
    with pytest.raises(ProgramError, match="dst must be in L0A or L0B, got L1"):
        p.load_l0(L1(0), L1(512), "float16", 16, 16)
    with pytest.raises(ProgramError, match="bias must be in BT, got L1"):
        p.mmad(L0C(0), L0A(0), L0B(0), 16, 16, 16, "float16", bias=L1(0))
    v = Program("v", "aiv")
    with pytest.raises(ProgramError, match="a must be in UB, got GM"):
        v.emit(isa.VBinary("add", UB(0), GM("x"), UB(64), 8, "float32"))
    v.vcompare("lt", UB(0), UB(64), 0.5, 8, "float32")  # a source whose type admits a scalar may be one


def test_pipe_builders_are_made_from_the_instruction_fields():
    for op, cls in isa.INSTRUCTIONS.items():
        if not cls.SPEC.is_pipe_work():
            continue
        builder = getattr(Program, op)
        params = list(inspect.signature(builder).parameters)[1:]
        assert params == [f.name for f in dataclasses.fields(cls)], op
    p = Program("k", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "f4", burst=8, pad=True)           # dtypes normalised, keywords and positions
    p.instr("vscalar", "add", UB(32), UB(0), 1, count=8, dtype="float32")
    assert p.instructions[0].dtype == "float32" and p.instructions[1].scalar == 1
    with pytest.raises(ProgramError, match="burst must be an int or a Reg, got bool"):
        p.copy(UB(0), p.gm("x"), "float32", True)
    with pytest.raises(ProgramError, match="unknown operand"):
        p.vcopy(UB(0), UB(32), 8, "float32", stride=2)
    with pytest.raises(ProgramError, match="unknown instruction 'vfrobnicate'"):
        p.instr("vfrobnicate")
