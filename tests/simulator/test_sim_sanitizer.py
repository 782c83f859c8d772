"""Every sanitizer finding and memory rule, each caught on a seeded bug."""
import re

import numpy as np
import pytest

from simulator import (
    UB, DeadlockError, Device, DoubleSetError, FlagLeftSetError, MemoryRuleError, Program, ProgramError, RaceError,
    SanitizerError, SimulatorError, UninitializedReadError, chips, isa,
)
from simulator.examples import vector_add

N = 3000


def _launch(prog, tiling=None, chip="tiny", block_dim=4, sanitize=True):
    cfg = chips.get(chip)
    dev = Device(cfg)
    x = np.arange(N, dtype=np.float32)
    dev.upload("x", x)
    dev.upload("y", x)
    dev.alloc("z", x.nbytes)
    t = tiling or vector_add.tiling(N, cfg, block_dim)
    return dev.launch(prog, block_dim, ["x", "y", "z"], t, sanitize=sanitize)


def _without(prog, pred, which=0):
    """The program minus the `which`-th instruction satisfying pred."""
    hits = [k for k, i in enumerate(prog.instructions) if pred(i)]
    drop = hits[which]
    return prog.with_instructions([i for k, i in enumerate(prog.instructions) if k != drop]), drop


def _is_wait(src, dst):
    return lambda i: isinstance(i, isa.WaitFlag) and (i.src, i.dst) == (src, dst)


def test_the_clean_program_passes():
    res = _launch(vector_add.build())
    assert res.sanitized


def test_dropped_wait_is_a_race():
    prog, _ = _without(vector_add.build(), _is_wait("MTE2", "V"))
    with pytest.raises(RaceError) as info:
        _launch(prog)
    msg = str(info.value)
    assert msg.startswith("core 0: race on UB bytes [0x")
    assert "V instruction #" in msg and "vadd" in msg and "MTE2 instruction #" in msg and "copy UB[" in msg
    assert "no set_flag/wait_flag chain orders MTE2 before V" in msg
    a, b = info.value.accesses
    assert (a["pipe"], b["pipe"]) == ("V", "MTE2") and a["space"] == "UB" and a["end"] > a["start"]


def test_dropped_wait_leaves_its_set_unconsumed_even_without_the_sanitizer():
    prog, _ = _without(vector_add.build(), _is_wait("MTE2", "V"))
    with pytest.raises(FlagLeftSetError, match="flag MTE2->V event 0 is still set"):
        _launch(prog, sanitize=False)  # the flag protocol checks are cheap and always on


def test_overlapping_buffers_are_a_race():
    cfg = chips.get("tiny")
    t = vector_add.tiling(N, cfg, 4)
    t["slot"] -= 32  # ping and pong buffers now share 32 bytes
    with pytest.raises(RaceError, match=r"core \d: race on UB bytes"):
        _launch(vector_add.build(), t)


def test_forgotten_final_wait_leaves_a_flag_set():
    prog, _ = _without(vector_add.build(), _is_wait("MTE3", "V"), which=-1)
    with pytest.raises(FlagLeftSetError) as info:
        _launch(prog)
    msg = str(info.value)
    assert "flag MTE3->V event 1 is still set when the kernel ends" in msg
    assert "set_flag MTE3->V event=" in msg and re.match(r"core \d: ", msg)
    with pytest.raises(FlagLeftSetError):  # cheap check: always on
        _launch(prog, sanitize=False)


def test_wait_nobody_sets_is_a_deadlock():
    prog = vector_add.build()
    body = list(prog.instructions)
    body.insert(-2, isa.WaitFlag("MTE2", "V", 5))
    with pytest.raises(DeadlockError) as info:
        _launch(prog.with_instructions(body), sanitize=False)
    msg = str(info.value)
    assert "deadlock at the end of the kernel" in msg
    assert "pipe V waits at instruction #43 `wait_flag MTE2->V event=5`" in msg
    assert "which has nothing left that sets it" in msg


def test_circular_waits_are_reported_as_a_cycle():
    p = Program("cycle", "aiv")
    p.wait_flag("MTE2", "V", 0)
    p.set_flag("V", "MTE2", 0)
    p.wait_flag("V", "MTE2", 0)
    p.set_flag("MTE2", "V", 0)
    with pytest.raises(DeadlockError, match=r"cycle of waits: (V -> MTE2 -> V|MTE2 -> V -> MTE2)"):
        Device("tiny").launch(p, 2)


def test_wait_before_its_set_in_issue_order_is_fine(rng):
    # V's queue blocks on the wait; the add issued behind it must see the data loaded afterwards
    dev = Device("tiny")
    x = rng.standard_normal(64).astype(np.float32)
    dev.upload("x", x)
    dev.alloc("z", 2 * x.nbytes)
    p = Program("late_set", "aiv", params=["x", "z"])
    core = p.core_idx()
    p.wait_flag("MTE2", "V", 0)
    p.vbinary("add", UB(512), UB(0), UB(0), 64, "float32")
    p.set_flag("V", "MTE3", 0)
    # the load is issued after the add; its length differs per core, so lockstep groups split here
    p.copy(UB(0), p.gm("x"), "float32", burst=p.add(p.mul(core, 8), 32))
    p.copy(UB(128), p.gm("x", 128), "float32", burst=32)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("z", p.mul(core, 256)), UB(512), "float32", burst=64)
    for sanitize in (False, True):
        res = dev.launch(p, 2, ["x", "z"], sanitize=sanitize)
        assert np.array_equal(dev.read("z", np.float32), np.concatenate([x + x, x + x]))
        assert res.cycles > 210 + 256 / 113  # the add waited for the loads


def test_misaligned_ub_address_is_rejected():
    with pytest.raises(MemoryRuleError) as info:
        _launch(vector_add.build(ub_base=16), sanitize=False)
    e = info.value
    assert e.rule == "UB addresses are 32-byte aligned" and e.space == "UB" and e.start == 16
    assert e.pipe == "MTE2" and e.core == 0 and "copy UB[" in e.text
    assert "address 0x10 is not 32-byte aligned" in str(e)


def test_ub_overflow_is_rejected():
    # a tiling made for the 910b UB (192 KiB) run on the tiny chip (16 KiB)
    t = vector_add.tiling(200000, chips.get("910b"), 4)
    with pytest.raises(MemoryRuleError) as info:
        _launch(vector_add.build(), t, sanitize=False)
    e = info.value
    assert e.rule == "UB capacity 16384 bytes" and e.end > 16384
    assert "beyond the 16384-byte UB of chip tiny" in str(e)


def test_read_of_never_written_memory():
    p = Program("uninit", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=8)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vbinary("add", UB(128), UB(0), UB(32), 16, "float32")  # UB[32:64] is never written
    dev = Device("tiny")
    dev.upload("x", np.ones(8, np.float32))
    with pytest.raises(UninitializedReadError, match=r"core 0: V instruction #3 `vadd UB\[128\] <- UB\[0\], UB\[32\] "
                                                     r"float32 count=16` reads UB bytes \[0x20, 0x40\) that nothing wrote before"):
        dev.launch(p, 1, ["x"], sanitize=True)


def test_read_of_never_written_gm():
    p = Program("uninit_gm", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=8)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    dev = Device("tiny")
    dev.alloc("x", 64)
    with pytest.raises(UninitializedReadError, match="GM buffer 'x' that neither the host nor a kernel wrote"):
        dev.launch(p, 1, ["x"], sanitize=True)


def test_set_twice_without_a_wait():
    # events are binary: the second set, issued before any wait consumed the first, is an error
    # on every timing, so the functional run reports it (no sanitizer needed)
    p = Program("double", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=8)
    p.set_flag("MTE2", "V", 0)
    p.copy(UB(32), p.gm("x"), "float32", burst=8)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    dev = Device("910b")
    dev.upload("x", np.ones(8, np.float32))
    with pytest.raises(DoubleSetError) as info:
        dev.launch(p, 1, ["x"])
    msg = str(info.value)
    assert msg.startswith("core 0: set_flag MTE2->V event 0 is set twice without a wait: instruction #3 ")
    assert "while the set by #1 `set_flag MTE2->V event=0` is still pending" in msg
    assert [a["instruction"] for a in info.value.accesses] == [1, 3]


def test_a_set_that_fires_before_the_previous_wait_consumed_it():
    # the wait is issued before the second set, but V is busy: in this schedule the second
    # set fires while the first is still pending; the cheap timing check reports it
    p = Program("double_late", "aiv", params=["x"])
    p.vdup(UB(4096), 1.0, 16000, "float32")           # keeps V busy
    p.vunary("tanh", UB(4096), UB(4096), 16000, "float32")
    p.copy(UB(0), p.gm("x"), "float32", burst=8)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.copy(UB(32), p.gm("x"), "float32", burst=8)
    p.set_flag("MTE2", "V", 0)                         # fires while V still runs: first set not consumed
    p.wait_flag("MTE2", "V", 0)
    dev = Device("910b")
    dev.upload("x", np.ones(8, np.float32))
    with pytest.raises(DoubleSetError) as info:
        dev.launch(p, 1, ["x"])
    msg = str(info.value)
    assert "set_flag MTE2->V event 0 is set twice without a wait" in msg
    assert "instruction #6" in msg and "its wait #4" in msg


def _reduce_over_cores(with_barrier):
    """Each core writes one partial to a workspace; core 0 then sums them."""
    p = Program("partials", "aiv", params=["ws", "out"])
    core = p.core_idx()
    p.vdup(UB(0), 1.0, 8, "float32")
    p.vscalar("mul", UB(0), UB(0), core, 8, "float32")  # 8 copies of the core index
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("ws", p.mul(core, 32)), UB(0), "float32", burst=8)
    if with_barrier:
        p.sync_all()
    with p.if_(p.alu("eq", core, 0)):
        p.set_flag("MTE3", "MTE2", 0)
        p.wait_flag("MTE3", "MTE2", 0)
        p.copy(UB(64), p.gm("ws"), "float32", burst=32)
        p.set_flag("MTE2", "V", 0)
        p.wait_flag("MTE2", "V", 0)
        p.vreduce("sum", UB(256), UB(64), 1, 32, "float32")
        p.set_flag("V", "MTE3", 1)
        p.wait_flag("V", "MTE3", 1)
        p.copy(p.gm("out"), UB(256), "float32", burst=1, pad=True)
    return p


def test_sync_all_orders_cores_through_gm():
    dev = Device("tiny")
    dev.alloc("ws", 4 * 32)
    dev.alloc("out", 4)
    for sanitize in (True, False):
        res = dev.launch(_reduce_over_cores(True), 4, ["ws", "out"], sanitize=sanitize)
        assert dev.read("out", np.float32)[0] == 8 * (0 + 1 + 2 + 3)
        assert res.instr_counts["sync_all"] == 4


def test_cross_core_gm_race_without_barrier():
    dev = Device("tiny")
    dev.upload("ws", np.zeros(32, np.float32))
    dev.alloc("out", 4)
    with pytest.raises(RaceError, match=r"core 1: race on byte 0x20 of GM buffer 'ws': MTE3 instruction #\d+ .* "
                                        r"while core 0 MTE2 instruction #\d+ .* reads it, and "
                                        r"no sync_all or cross-core flag orders the two cores"):
        dev.launch(_reduce_over_cores(False), 4, ["ws", "out"], sanitize=True)


def test_barrier_some_cores_never_reach_is_a_deadlock():
    p = Program("half_barrier", "aiv")
    core = p.core_idx()
    with p.if_(p.alu("lt", core, 2)):
        p.sync_all()
    with pytest.raises(DeadlockError, match=r"sync_all: cores \[0, 1\] wait at instruction #3 `sync_all` but cores "
                                            r"\[2, 3\] ended without reaching it"):
        Device("tiny").launch(p, 4)


def test_event_id_out_of_range():
    p = Program("ev", "aiv")
    p.set_flag("V", "MTE3", 8)
    p.wait_flag("V", "MTE3", 8)
    with pytest.raises(ProgramError, match=r"event id 8 is outside 0..7"):
        Device("tiny").launch(p, 1)


def test_all_findings_share_one_base_class():
    for cls in (RaceError, UninitializedReadError, DeadlockError, FlagLeftSetError, DoubleSetError):
        assert issubclass(cls, SanitizerError) and issubclass(cls, SimulatorError)
    assert issubclass(MemoryRuleError, SimulatorError)


def _reused_event(back_flag):
    """Two loads, each handed to V with event MTE2->V 0; optionally a flag back from V orders the reuse."""
    p = Program("reuse", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=64)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vbinary("add", UB(256), UB(0), UB(0), 64, "float32")
    if back_flag:
        p.set_flag("V", "MTE2", 0)
        p.wait_flag("V", "MTE2", 0)
    p.copy(UB(512), p.gm("x"), "float32", burst=64)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vbinary("add", UB(768), UB(512), UB(512), 64, "float32")
    return p


def test_a_set_not_ordered_after_the_previous_wait_is_a_double_set():
    # the timing model happens to consume the first set in time, but nothing guarantees it:
    # with a busier V the second set would fire while the first is pending
    dev = Device("tiny")
    dev.upload("x", np.ones(64, np.float32))
    dev.launch(_reused_event(False), 1, ["x"])  # the cheap timing check finds nothing here
    with pytest.raises(DoubleSetError) as info:
        dev.launch(_reused_event(False), 1, ["x"], sanitize=True)
    msg = str(info.value)
    assert msg.startswith("core 0: set_flag MTE2->V event 0 may be set twice without a wait: MTE2 instruction #5")
    assert "after MTE2 instruction #1" in msg and "V instruction #2 `wait_flag MTE2->V event=0`" in msg
    assert [a["instruction"] for a in info.value.accesses] == [1, 5, 2]
    assert [a["pipe"] for a in info.value.accesses] == ["MTE2", "MTE2", "V"]
    dev.launch(_reused_event(True), 1, ["x"], sanitize=True)  # a flag back from V makes the reuse safe


def test_a_set_before_the_previous_one_was_waited_for_is_a_double_set():
    p = Program("twice", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=8)
    p.set_flag("MTE2", "V", 3)
    p.set_flag("MTE2", "V", 3)
    p.wait_flag("MTE2", "V", 3)
    p.wait_flag("MTE2", "V", 3)
    dev = Device("tiny")
    dev.upload("x", np.ones(8, np.float32))
    for sanitize in (True, False):  # the binary-event rule holds with and without the sanitizer
        with pytest.raises(DoubleSetError, match=r"instruction #2 `set_flag MTE2->V event=3` sets it while the set by "
                                                 r"#1 `set_flag MTE2->V event=3` is still pending"):
            dev.launch(p, 1, ["x"], sanitize=sanitize)


def test_two_pipes_writing_the_same_bytes_race():
    p = Program("waw", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=64)
    p.vdup(UB(64), 1.0, 16, "float32")  # overwrites bytes MTE2 is still loading
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    dev = Device("tiny")
    dev.upload("x", np.ones(64, np.float32))
    with pytest.raises(RaceError) as info:
        dev.launch(p, 1, ["x"], sanitize=True)
    assert "V instruction #1 `vdup UB[64]" in str(info.value) and "writes [0x40, 0x80)" in str(info.value)
    assert "MTE2 instruction #0" in str(info.value) and "writes them" in str(info.value)
    a, b = info.value.accesses
    assert (a["pipe"], b["pipe"], b["start"], b["end"]) == ("V", "MTE2", 0x40, 0x60)


def test_a_write_after_reads_by_two_cores_races_with_the_other_core():
    # cores 0 and 1 both read ws; then core 1 overwrites it without a barrier: core 0's read is unordered
    # (core 1's own read is ordered before its write by its flags)
    p = Program("readers", "aiv", params=["ws"])
    core = p.core_idx()
    p.copy(UB(0), p.gm("ws"), "float32", burst=8)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vscalar("add", UB(0), UB(0), 1.0, 8, "float32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    with p.if_(p.alu("eq", core, 1)):
        p.copy(p.gm("ws"), UB(0), "float32", burst=8)
    dev = Device("tiny")
    dev.upload("ws", np.zeros(8, np.float32))
    with pytest.raises(RaceError, match=r"core 1: race on byte 0x0 of GM buffer 'ws': MTE3 instruction #\d+ .* writes "
                                        r"\[0x0, 0x20\) while core 0 MTE2 instruction #1 .* reads it, and no "
                                        r"sync_all or cross-core flag orders the two cores"):
        dev.launch(p, 2, ["ws"], sanitize=True)


def test_gm_written_by_an_earlier_kernel_may_be_read(rng):
    cfg = chips.get("tiny")
    dev = Device(cfg)
    x = rng.standard_normal(1000).astype(np.float32)
    dev.upload("x", x)
    dev.upload("y", x)
    dev.alloc("z", x.nbytes)
    dev.alloc("w", x.nbytes)
    dev.alloc("never", x.nbytes)
    t = vector_add.tiling(1000, cfg, 4)
    dev.launch(vector_add.build(), 4, ["x", "y", "z"], t, sanitize=True)
    dev.launch(vector_add.build(), 4, ["z", "x", "w"], t, sanitize=True)  # reads the first kernel's output
    assert np.array_equal(dev.read("w", np.float32), (x + x) + x)
    with pytest.raises(UninitializedReadError, match="GM buffer 'never' that neither the host nor a kernel wrote"):
        dev.launch(vector_add.build(), 4, ["never", "x", "w"], t, sanitize=True)


def test_sanitizer_blocks_follow_the_chip_alignment():
    # with 16-byte UB alignment, MTE2 filling [0, 16) and V filling [16, 32) touch different bytes
    chip = chips.get("tiny").replace(ub_align=16, dma_block_bytes=16)
    p = Program("halves", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float32", burst=4)
    p.vdup(UB(16), 2.0, 4, "float32")
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vbinary("add", UB(32), UB(0), UB(16), 4, "float32")
    dev = Device(chip)
    dev.upload("x", np.ones(4, np.float32))
    dev.launch(p, 1, ["x"], sanitize=True)
    p2 = Program("halves2", "aiv", params=["x"])
    p2.copy(UB(0), p2.gm("x"), "float32", burst=4)
    p2.vdup(UB(0), 2.0, 4, "float32")  # ... but V writing the bytes MTE2 writes still races
    with pytest.raises(RaceError, match=r"race on UB bytes \[0x0, 0x10\)"):
        dev.launch(p2, 1, ["x"], sanitize=True)


def _halves_program(overlap):
    """Two cores store 7 (or 8) float16 each at element offsets 0 and 7: inside one 16-byte granule."""
    p = Program("halves_gm", "aiv", params=["out"])
    core = p.core_idx()
    p.vdup(UB(0), 1.0, 16, "float16")
    p.vscalar("mul", UB(0), UB(0), p.add(core, 1), 16, "float16")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("out", p.mul(core, 14)), UB(0), "float16", burst=8 if overlap else 7, pad=True)
    p.sync_all()
    with p.if_(p.alu("eq", core, 0)):
        p.copy(UB(64), p.gm("out"), "float16", burst=14, pad=True)
        p.set_flag("MTE2", "V", 1)
        p.wait_flag("MTE2", "V", 1)
    return p


def test_gm_ownership_is_exact_to_the_byte_inside_a_granule():
    dev = Device("tiny")
    dev.alloc("out", 64)
    dev.launch(_halves_program(False), 2, ["out"], sanitize=True)
    assert dev.read("out", np.float16, (14,)).tolist() == [1.0] * 7 + [2.0] * 7
    # one element more and the two stores overlap in bytes [14, 16)
    with pytest.raises(RaceError, match=r"core [01]: race on byte 0xe of GM buffer 'out': MTE3 .* writes .* while "
                                        r"core [01] MTE3 .* writes it, and no sync_all or cross-core flag orders"):
        dev.launch(_halves_program(True), 2, ["out"], sanitize=True)


def test_a_read_of_bytes_half_written_before_is_uninitialised_exactly_where_nothing_wrote():
    dev = Device("tiny")
    dev.alloc("x", 64)
    dev.write("x", np.ones(3, np.float16))          # bytes [0, 6) only
    p = Program("partial_read", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x"), "float16", burst=3, pad=True)
    p.copy(UB(32), p.gm("x"), "float16", burst=4, pad=True)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    with pytest.raises(UninitializedReadError, match=r"MTE2 instruction #1 .* reads byte 0x6 of GM buffer 'x' that "
                                                     r"neither the host nor a kernel wrote"):
        dev.launch(p, 1, ["x"], sanitize=True)


def test_reads_by_several_cores_at_once_then_a_write_races_with_the_other_readers():
    p = Program("broadcast", "aiv", params=["w"])
    core = p.core_idx()
    p.copy(UB(0), p.gm("w"), "float32", burst=64)   # every core reads the same bytes in one instruction
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    with p.if_(p.alu("eq", core, 2)):
        p.copy(p.gm("w"), UB(0), "float32", burst=64)
    dev = Device("tiny")
    dev.upload("w", np.zeros(64, np.float32))
    with pytest.raises(RaceError, match=r"core 2: race on byte 0x0 of GM buffer 'w': MTE3 .* writes \[0x0, 0x100\) "
                                        r"while core [013] MTE2 instruction #1 .* reads it"):
        dev.launch(p, 4, ["w"], sanitize=True)
