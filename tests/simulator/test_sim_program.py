"""Tile programs: builder, static checks, structure validation, listing and JSON round trip."""
import json

import pytest

from simulator import GM, L0A, L1, UB, Program, ProgramError, Reg, isa
from simulator.examples import matmul, softmax, vector_add


def _all_examples():
    return [vector_add.build("float32", 1), vector_add.build("float16", 2), softmax.build("float32"),
            softmax.build("float16"), matmul.build("float16", relu=False)]


@pytest.mark.parametrize("prog", _all_examples(), ids=lambda p: p.name)
def test_json_round_trip_is_exact(prog):
    text = prog.to_json()
    json.loads(text)  # plain JSON, no NaN/Infinity extensions
    again = Program.from_json(text)
    assert again == prog
    assert again.listing() == prog.listing()
    assert again.to_json() == text


def test_non_finite_immediates_survive_json():
    p = Program("pads", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=3, pad=True, pad_value=float("-inf"))
    p.vdup(UB(32), float("inf"), 8, "float32")
    text = p.to_json()
    assert "Infinity" not in text
    q = Program.from_json(text)
    assert q.instructions[0].pad_value == float("-inf") and q.instructions[1].value == float("inf")


def test_program_size_does_not_grow_with_tensor_size():
    # the tiling is launch data: the same program serves every size
    assert len(vector_add.build()) == len(vector_add.build())
    assert "loop" in vector_add.build().listing()


def test_listing_shows_pipes_and_nesting():
    text = vector_add.build("float32", 2).listing()
    lines = text.splitlines()
    assert lines[0].startswith("program vector_add_float32_x2 (aiv)  params: x, y, z  tiling: total, block, tile, slot")
    assert any("MTE2    copy UB[" in line and "<- GM.x[" in line for line in lines)
    assert any("V       vadd UB[" in line for line in lines)
    assert any("set_flag MTE2->V event=" in line for line in lines)


def test_builder_returns_fresh_registers():
    p = Program("regs", "aiv", tiling=["n"])
    a = p.tiling("n")
    b = p.add(a, 1)
    c = p.alu("cdiv", b, 4)
    assert len({a, b, c}) == 3 and all(isinstance(r, Reg) for r in (a, b, c))
    assert p.instructions[-1].text() == f"{c} = cdiv {b}, 4"


def test_if_else_blocks_validate():
    p = Program("branches", "aiv")
    c = p.core_idx()
    with p.if_(c):
        p.mov(1)
    with p.else_():
        p.mov(2)
    st = p.validate()
    assert st.match[1] == 5 and st.else_of[1] == 3


@pytest.mark.parametrize("make, message", [
    (lambda p: p.emit(isa.Copy(UB(0), UB(32), "float32", 8)), r"no data path UB->UB"),
    (lambda p: p.emit(isa.Copy(L1(0), GM("x", 0), "float32", 8)), r"memory space L1 does not exist on an AIV core"),
    (lambda p: p.vunary("exp", UB(0), UB(0), 8, "int32"), r"exp needs a float dtype, got int32"),
    (lambda p: p.vbinary("and", UB(0), UB(0), UB(0), 8, "float32"), r"and needs an integer or bool dtype"),
    (lambda p: p.vbinary("hypot", UB(0), UB(0), UB(0), 8, "float32"), r"unknown function 'hypot'"),
    (lambda p: p.vunary("exp", UB(0), UB(0), 8, "float64"), r"unsupported dtype 'float64'"),
    (lambda p: p.set_flag("V", "V", 0), r"source and destination pipe are both V; use pipe_barrier"),
    (lambda p: p.set_flag("MTE2", "M", 0), r"destination pipe 'M'|dst pipe 'M' is not a pipe of an AIV core"),
    (lambda p: p.alu("pow", 1, 2), r"unknown scalar function 'pow'"),
    (lambda p: p.copy(UB(0), p.gm("x"), "float32", burst=1.5), r"burst must be an int or a Reg, got float"),
    (lambda p: p.copy(UB(0), GM("nope", 0), "float32", burst=8), r"GM argument 'nope' is not a declared parameter"),
    (lambda p: p.load_l0(L0A(0), L1(0), "float16", 16, 16), r"does not exist on an AIV core"),
    (lambda p: p.vcast(UB(0), UB(64), 8, "float32", "int32", round="up"), r"round must be one of trunc"),
    (lambda p: p.alu("add", True, 1), r"must be an int or a Reg, got bool"),
])
def test_static_rules_name_the_problem(make, message):
    p = Program("bad", "aiv", params=["x"])
    with pytest.raises(ProgramError, match=message):
        make(p)


def test_cube_rules():
    p = Program("cube", "aic", params=["a"])
    with pytest.raises(ProgramError, match="transpose on load is supported for 16-bit fractals only, got float32"):
        p.load_l0(L0A(0), L1(0), "float32", 16, 16, transpose=True)
    with pytest.raises(ProgramError, match="does not exist on an AIC core"):
        p.vdup(UB(0), 1.0, 8, "float32")


@pytest.mark.parametrize("instrs, message", [
    ([isa.EndLoop()], r"no open block to close"),
    ([isa.Loop(Reg("i"), 0, 4, 1)], r"loop block opened at #0 is never closed"),
    ([isa.If(1), isa.EndLoop()], r"end_loop closes an if block opened at #0"),
    ([isa.Mov(Reg("a"), Reg("b"))], r"reads register b before any instruction writes it"),
    ([isa.Loop(Reg("i"), 0, 4, 1), isa.Mov(Reg("i"), 3), isa.EndLoop()], r"writes loop counter i inside its loop"),
    ([isa.Loop(Reg("i"), 0, 4, 0), isa.EndLoop()], r"step must not be 0"),
])
def test_structure_errors(instrs, message):
    with pytest.raises(ProgramError, match=message):
        Program("s", "aiv").with_instructions(instrs)


def test_unclosed_builder_block_and_misplaced_else():
    p = Program("open", "aiv")
    with pytest.raises(ProgramError, match="else_\\(\\) must directly follow an if_\\(\\) block"):
        with p.else_():
            pass
    p._open.append(("loop", 0))
    with pytest.raises(ProgramError, match="unclosed blocks: loop"):
        p.validate()


@pytest.mark.parametrize("doc, message", [
    ("{", "program JSON does not parse"),
    ('{"format": "other"}', "not a simulator-program document"),
    ('{"format": "simulator-program", "version": 9}', "unsupported simulator-program version 9"),
    ('{"format": "simulator-program", "version": 1, "name": "p", "core_type": "aiv", "instructions": [{"op": "fly"}]}',
     "instruction #0: unknown op 'fly'"),
    ('{"format": "simulator-program", "version": 1, "name": "p", "core_type": "aiv", '
     '"instructions": [{"op": "mov", "dst": {"reg": "a"}, "src": 1, "speed": 3}]}',
     r"unknown field\(s\) speed"),
    ('{"format": "simulator-program", "version": 1, "name": "p", "core_type": "gpu", "instructions": []}',
     "core_type must be one of aiv, aic"),
    ('{"format": "simulator-program", "version": 1, "core_type": "aiv", "instructions": []}',
     "lacks field 'name'"),
])
def test_bad_json_documents(doc, message):
    with pytest.raises(ProgramError, match=message):
        Program.from_json(doc)


def test_bad_operands_and_names():
    with pytest.raises(ProgramError, match="unknown memory space 'L2'"):
        isa.Mem("L2", 0)
    with pytest.raises(ProgramError, match="a GM operand needs the name of a kernel argument"):
        isa.Mem("GM", 0)
    with pytest.raises(ProgramError, match="register name must be an identifier"):
        Reg("1x")
    with pytest.raises(ProgramError, match="core_type must be one of aiv, aic"):
        Program("p", "npu")
