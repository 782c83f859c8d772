"""Vector repeat addressing: block and repeat strides (stride 0 broadcasts), masks for partial repeats."""
import numpy as np
import pytest

from sim_testlib import ub_roundtrip
from simulator import UB, Device, Program, ProgramError, RaceError, VRepeat, chips


def test_a_source_block_stride_of_zero_broadcasts_without_a_scratch_copy():
    x = np.arange(256, dtype=np.float32)
    row = np.arange(8, dtype=np.float32) * 100  # one 32-byte block
    out, res = ub_roundtrip(lambda p, a: p.vbinary("add", UB(a["out"]), UB(a["x"]), UB(a["row"]), None, "float32",
                                                     rep=VRepeat(4, srcs=((1, 8), (0, 0)))),
                            {"x": x, "row": row}, "float32", 256)
    assert np.array_equal(out, x + np.tile(row, 32))
    chip = chips.get("tiny")
    assert res.pipe_busy["V"] == chip.vector_startup_cycles + 4 * chip.vector_binary_cycles  # 4 repeats


def test_a_mask_computes_part_of_each_repeat_and_leaves_the_rest():
    x = np.arange(128, dtype=np.float16)
    keep = np.full(128, -1, np.float16)

    def body(p, a):
        p.vcopy(UB(a["out"]), UB(a["keep"]), 128, "float16")
        p.vscalar("mul", UB(a["out"]), UB(a["x"]), 2.0, None, "float16", rep=VRepeat(1, mask=(1 << 10) - 1))

    out, _ = ub_roundtrip(body, {"x": x, "keep": keep}, "float16", 128)
    assert out[:10].tolist() == (2 * x[:10]).tolist() and (out[10:] == -1).all()


def test_destination_and_source_strides_gather_and_scatter_blocks():
    x = np.arange(128, dtype=np.float32)   # 16 blocks of 8

    def body(p, a):
        p.vdup(UB(a["out"]), 0.0, 128, "float32")
        # read every other block of x (block stride 2), write them to blocks 0..7 of out (one repeat)
        p.vunary("neg", UB(a["out"]), UB(a["x"]), None, "float32", rep=VRepeat(1, srcs=((2, 16),)))

    out, _ = ub_roundtrip(body, {"x": x}, "float32", 128)
    want = -x.reshape(16, 8)[::2].ravel()
    assert out[:64].tolist() == want.tolist() and (out[64:] == 0).all()
    dup, _ = ub_roundtrip(lambda p, a: p.vdup(UB(a["out"]), 7, None, "int32", rep=VRepeat(2, mask=0b11)),
                          {"x": x}, "int32", 128)
    assert dup.reshape(2, 64)[:, :2].tolist() == [[7, 7], [7, 7]]


def test_repeat_rules_name_the_problem():
    p = Program("r", "aiv")
    with pytest.raises(ProgramError, match="a destination block stride of 0 is undefined"):
        p.vbinary("add", UB(0), UB(256), UB(512), None, "float32", rep=VRepeat(1, dst=(0, 8)))
    with pytest.raises(ProgramError, match="give count or rep, not both"):
        p.vbinary("add", UB(0), UB(256), UB(512), 64, "float32", rep=VRepeat(1))
    with pytest.raises(ProgramError, match=r"rep.srcs needs one \(block stride, repeat stride\) per UB source \(2\)"):
        p.vbinary("add", UB(0), UB(256), UB(512), None, "float32", rep=VRepeat(1, srcs=((1, 8),)))
    with pytest.raises(ProgramError, match="count is missing"):
        p.vunary("neg", UB(0), UB(256), None, "float32")
    q = Program("m", "aiv")
    q.vdup(UB(0), 1.0, None, "float32", rep=VRepeat(1, mask=1 << 64))  # fp32 repeats hold 64 elements
    with pytest.raises(ProgramError, match=r"mask 0x10000000000000000 has bits beyond the 64 float32 elements"):
        Device("tiny").launch(q, 1)
    o = Program("o", "aiv")
    o.vdup(UB(0), 1.0, None, "float32", rep=VRepeat(2, dst=(1, 4)))
    with pytest.raises(ProgramError, match="destination repeats overlap"):
        Device("tiny").launch(o, 1)


def test_strided_operands_are_sanitized_block_by_block():
    p = Program("strided_race", "aiv", params=["x"])
    p.copy(UB(288), p.gm("x"), "float32", burst=8)           # MTE2 fills block 9 of UB
    p.vdup(UB(0), 1.0, None, "float32", rep=VRepeat(1, dst=(2, 16)))  # V writes blocks 0, 2, .., 14: not 9
    p.vdup(UB(1024), 1.0, None, "float32", rep=VRepeat(1, dst=(1, 8)))
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    dev = Device("tiny")
    dev.upload("x", np.ones(8, np.float32))
    dev.launch(p, 1, ["x"], sanitize=True)                    # disjoint blocks: fine
    clash = Program("strided_race2", "aiv", params=["x"])
    clash.copy(UB(512), clash.gm("x"), "float32", burst=8)   # block 16 ...
    clash.vdup(UB(0), 1.0, None, "float32", rep=VRepeat(1, dst=(2, 16)))  # blocks 0..14 even: no
    clash.vdup(UB(0), 1.0, None, "float32", rep=VRepeat(2, dst=(2, 16)))  # repeat 1 covers block 16: yes
    clash.set_flag("MTE2", "V", 0)
    clash.wait_flag("MTE2", "V", 0)
    with pytest.raises(RaceError, match=r"race on UB bytes \[0x200, 0x220\): V instruction #2"):
        dev.launch(clash, 1, ["x"], sanitize=True)


def test_repeat_form_round_trips_through_json():
    p = Program("json_rep", "aiv")
    r = p.reg()
    p.mov(3, r)
    p.vbinary("max", UB(0), UB(256), UB(512), None, "float16", rep=VRepeat(r, dst=(1, 8), srcs=((1, 8), (0, 1)),
                                                                           mask=0xFF))
    back = Program.from_json(p.to_json())
    assert back == p and "rep=r0 dst=(1, 8) srcs=((1, 8), (0, 1)) mask=0xff" in back.listing()


def test_strides_beyond_the_stride_field_are_rejected_at_launch():
    p = Program("far", "aiv")
    p.vcopy(UB(0), UB(0), None, "float32", rep=VRepeat(1, srcs=((256, 8),)))
    with pytest.raises(ProgramError, match=r"stride pair \(256, 8\) exceeds the 255 blocks a stride field holds"):
        Device("910b").launch(p, 1)
