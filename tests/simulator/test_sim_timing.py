"""Timing model: pipelining, multi-core scaling, shared GM bandwidth, results, summary and trace."""
import json

import numpy as np
import pytest

from simulator import UB, DeadlockError, Device, Program, ProgramError, RaceError, chips
from simulator.examples import vector_add


def _add(n, chip, block_dim, buffer_num=2, tile=None, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z, res = vector_add.run(x, y, chip, block_dim, buffer_num, sanitize=False, tile=tile)
    assert np.array_equal(z, x + y)
    return res


def test_double_buffering_a_balanced_add_is_at_least_1_5x_faster():
    # "balanced": the vector stage takes about as long as the load stage (8 cycles per repeat
    # make a 32 KiB add ~1030 cycles, like loading its two inputs); then single buffering
    # serialises load and add while double buffering overlaps them
    chip = chips.get("910b").replace(vector_binary_cycles=8)
    sb = _add(8192 * 8, chip, 1, buffer_num=1, tile=8192)
    db = _add(8192 * 8, chip, 1, buffer_num=2, tile=8192)
    v, mte2 = db.pipe_busy["V"], db.pipe_busy["MTE2"]
    assert 0.8 < v / mte2 < 1.25
    assert sb.kernel_cycles >= 1.5 * db.kernel_cycles


def test_double_buffering_helps_on_the_stock_chip_too():
    sb = _add(8192 * 8, "910b", 1, buffer_num=1, tile=8192)
    db = _add(8192 * 8, "910b", 1, buffer_num=2, tile=8192)
    assert sb.kernel_cycles > 1.2 * db.kernel_cycles
    # double buffered, MTE2 (the slowest stage) is busy almost all the time
    assert db.utilisation("MTE2") > 0.85 and db.utilisation("MTE2") > sb.utilisation("MTE2") + 0.1


def test_eight_cores_are_at_least_6x_faster_when_gm_is_not_saturated():
    one = _add(8 * 8 * 1024, "910b", 1, tile=1024)
    eight = _add(8 * 8 * 1024, "910b", 8, tile=1024)
    assert eight.gm_bandwidth_fraction < 0.5
    assert one.kernel_cycles >= 6 * eight.kernel_cycles
    assert eight.kernel_cycles * 8 >= one.kernel_cycles * 0.95  # and not magically more than linear


def test_never_faster_than_the_aggregate_gm_bandwidth():
    chip = chips.get("910b")
    res = _add(48 * 4 * 8192, chip, 48)
    floor = (res.gm_read_bytes + res.gm_write_bytes) / chip.gm_bytes_per_cycle
    assert res.cycles >= floor
    assert 0.8 < res.gm_bandwidth_fraction <= 1.0
    # a chip with a tenth of the bandwidth is held to it
    slow = chip.replace(gm_bytes_per_cycle=chip.gm_bytes_per_cycle / 10)
    res2 = _add(48 * 4 * 8192, slow, 48)
    assert res2.cycles >= (res2.gm_read_bytes + res2.gm_write_bytes) / slow.gm_bytes_per_cycle
    assert res2.gm_bandwidth_fraction > 0.95
    assert res2.cycles > 5 * res.cycles


def test_cycles_are_deterministic_and_bytes_exact():
    a = _add(12345, "tiny", 4)
    b = _add(12345, "tiny", 4, seed=1)  # other data, same program and sizes
    assert a.cycles == b.cycles and a.pipe_busy == b.pipe_busy
    assert a.gm_read_bytes == 2 * 12345 * 4 and a.gm_write_bytes == 12345 * 4
    assert a.bytes_by_path == {"gm_to_ub": 2 * 12345 * 4, "ub_to_gm": 12345 * 4}
    assert a.time_s == pytest.approx(a.cycles / 1.8e9)
    assert set(a.pipe_busy) == {"S", "V", "MTE2", "MTE3"}
    assert sum(c["MTE2"] for c in a.core_pipe_busy) == a.pipe_busy["MTE2"]
    assert a.cycles == max(a.core_cycles)
    assert a.instr_counts["copy.gm_to_ub"] == 2 * a.instr_counts["vbinary.add"]
    assert a.pipe_instr_counts["V"] > 0


def _copy_program(gm_offset):
    p = Program("one_copy", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x", gm_offset), "float32", burst=4096)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    return p


def test_dma_costs_follow_the_chip_config():
    chip = chips.get("910b")
    dev = Device(chip)
    dev.alloc("x", 64 * 1024)
    aligned = dev.launch(_copy_program(0), 1, ["x"])
    unaligned = dev.launch(_copy_program(32), 1, ["x"])
    nbytes = 4096 * 4
    assert aligned.pipe_busy["MTE2"] == pytest.approx(210 + nbytes / 113, abs=1)
    # a GM address off the 512-byte boundary gets 70% of the path bandwidth, and the burst
    # starting 32 bytes into a 128-byte piece occupies one more piece of the bus
    assert unaligned.pipe_busy["MTE2"] == pytest.approx(210 + (nbytes + chip.gm_piece_bytes) / (113 * 0.7), abs=1)


def _pieces_bus_bytes(chip, starts, width):
    """Bytes on the bus for bursts of `width` bytes at GM addresses `starts`: the whole pieces they touch."""
    piece = chip.gm_piece_bytes
    return sum(((a + width - 1) // piece - a // piece + 1) * piece for a in starts)


def test_many_narrow_bursts_cost_more_than_one_wide_burst():
    chip = chips.get("910b")
    dev = Device(chip)
    dev.alloc("x", 1 << 20)

    def mte2(burst, nburst, src_stride):
        p = Program("bursts", "aiv", params=["x"])
        p.copy(UB(0), p.gm("x"), "float32", burst=burst, nburst=nburst, src_stride=src_stride)
        p.set_flag("MTE2", "V", 0)
        p.wait_flag("MTE2", "V", 0)
        return dev.launch(p, 1, ["x"]).pipe_busy["MTE2"]

    wide = mte2(8192, 1, None)                   # one 32 KiB burst
    narrow = mte2(8, 1024, 64)                   # 1,024 bursts of 32 B, 256 B apart
    assert wide == pytest.approx(210 + 32768 / 113, abs=1)
    bus = _pieces_bus_bytes(chip, [r * 256 for r in range(1024)], 32)
    assert bus == 1024 * chip.gm_piece_bytes  # each 32-byte burst occupies a whole 128-byte piece
    # rows 256 B apart are off the 512-byte boundary every other row: 70% of the path bandwidth
    assert narrow == pytest.approx(210 + bus / (113 * chip.gm_unaligned_factor), abs=1)
    assert narrow > 3.5 * wide


def test_vector_costs_follow_the_repeat_model():
    dev = Device("910b")
    p = Program("vec", "aiv")
    p.vdup(UB(0), 1.0, 64 * 128, "float32")             # 128 repeats x 1 cycle
    p.vbinary("add", UB(32768), UB(0), UB(0), 64 * 128, "float32")  # 128 repeats x 2
    p.vbinary("div", UB(65536), UB(0), UB(0), 100, "float32")       # 2 repeats x 4
    res = dev.launch(p, 1)
    assert res.pipe_busy["V"] == (3 + 128) + (3 + 256) + (3 + 8)


def test_summary_and_trace(tmp_path):
    res = _add(5000, "tiny", 4)
    text = res.summary()
    for word in ("cycles", "MTE2", "MTE3", "utilisation", "gm_to_ub", "TB/s", "of the chip's"):
        assert word in text
    path = tmp_path / "trace.json"
    res.save_trace(str(path))
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    procs = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert procs == {f"core {c} (AIV)" for c in range(4)}
    threads = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {"S", "V", "MTE2", "MTE3"} <= threads
    slices = [e for e in events if e["ph"] == "X"]
    assert any(e["name"] == "vbinary.add" for e in slices)
    assert all(e["dur"] >= 0 for e in slices)
    starts = [e for e in events if e["ph"] == "s"]
    finishes = [e for e in events if e["ph"] == "f"]
    assert starts and len(starts) == len(finishes)
    assert max(e["ts"] + e["dur"] for e in slices) == pytest.approx(res.time_s * 1e6, rel=1e-3)


@pytest.mark.parametrize("cores", [1, 8, 48])
def test_gm_bandwidth_is_shared_fairly(cores):
    # one 64 KiB load per core: alone it runs at the path's 113 B/cycle; 48 at once share 1.6 TB/s
    chip = chips.get("910b")
    dev = Device(chip)
    dev.alloc("x", 48 * 65536)
    p = Program("bw", "aiv", params=["x"])
    p.copy(UB(0), p.gm("x", p.mul(p.core_idx(), 65536)), "float32", burst=16384)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    res = dev.launch(p, cores, ["x"])
    data = max(65536 / 113, cores * 65536 / chip.gm_bytes_per_cycle)
    startup = chip.launch_startup_cycles + cores * chip.launch_core_cycles
    assert res.startup_cycles == startup
    assert res.cycles == pytest.approx(startup + 210 + data, abs=5)  # plus a few scalar and issue cycles
    assert len(set(res.core_cycles)) == 1


def test_sync_all_releases_every_core_together():
    p = Program("sync", "aiv")
    with p.if_(p.alu("eq", p.core_idx(), 0)):
        p.vdup(UB(0), 1.0, 16000, "float32")  # only core 0 is busy before the barrier
    p.sync_all()
    p.vdup(UB(0), 2.0, 64, "float32")
    res = Device("910b").launch(p, 4)
    assert len(set(res.core_cycles)) == 1
    busy_v0 = 3 + 250  # 16000 floats = 250 repeats
    assert res.cycles > busy_v0 + chips.get("910b").sync_all_cycles
    assert res.core_pipe_busy[0]["V"] > res.core_pipe_busy[1]["V"]


def _scalar_wait_program(wait_on_scalar):
    """MTE2 loads; the scalar unit waits for it (or not) before issuing a V instruction that reads the data."""
    p = Program("scalar_wait", "aiv", params=["x", "y"])
    p.copy(UB(0), p.gm("x"), "float32", burst=4096)
    if wait_on_scalar:
        p.set_flag("MTE2", "S", 0)
        p.wait_flag("MTE2", "S", 0)
    p.vscalar("mul", UB(16384), UB(0), 2.0, 4096, "float32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("y"), UB(16384), "float32", burst=4096)
    return p


def test_flags_on_the_scalar_unit_stop_issue_until_set():
    dev = Device("910b")
    x = np.arange(4096, dtype=np.float32)
    dev.upload("x", x)
    dev.alloc("y", x.nbytes)
    load = 210 + 4096 * 4 / 113
    for sanitize in (False, True):
        res = dev.launch(_scalar_wait_program(True), 1, ["x", "y"], sanitize=sanitize)
        assert np.array_equal(dev.read("y", np.float32), 2 * x)
        g = res._groups[0]
        v = [j for j, rec in enumerate(g.stream) if rec[1] == 1][0]  # the vector instruction
        assert g.issue[v] > res.startup_cycles + load and g.start[v] >= g.issue[v]  # issued after the load
        assert res.pipe_busy["S"] < 20  # the stall is not busy time
    with pytest.raises(RaceError, match="no set_flag/wait_flag chain orders MTE2 before V"):
        dev.launch(_scalar_wait_program(False), 1, ["x", "y"], sanitize=True)
    trace = res.trace()["traceEvents"]
    wait = [e for e in trace if e["ph"] == "X" and e["name"] == "wait_flag" and e["tid"] == 0][0]
    assert wait["dur"] * 1.8e3 == pytest.approx(load, abs=5)  # the stall shows on the S track
    flow = [e for e in trace if e["ph"] == "f"]
    assert [e["tid"] for e in flow if e["name"] == "MTE2->S event 0"] == [0]


def test_a_scalar_wait_nobody_set_before_it_is_a_deadlock():
    p = Program("scalar_deadlock", "aiv")
    p.wait_flag("V", "S", 2)
    p.vdup(UB(0), 1.0, 8, "float32")
    p.set_flag("V", "S", 2)
    with pytest.raises(DeadlockError, match=r"core 0: deadlock: the scalar unit waits at instruction #0 "
                                            r"`wait_flag V->S event=2` for a set_flag V->S event 2, but no instruction "
                                            r"issued before it sets the event"):
        Device("tiny").launch(p, 1)


def test_set_flag_from_the_scalar_unit_and_single_pipe_barriers():
    p = Program("scalar_set", "aiv")
    p.vdup(UB(0), 1.0, 64, "float32")
    p.set_flag("S", "V", 1)  # fires as soon as the scalar unit reaches it
    p.wait_flag("S", "V", 1)
    p.pipe_barrier("S")
    p.pipe_barrier("V")
    p.vdup(UB(256), 2.0, 64, "float32")
    for sanitize in (False, True):
        res = Device("tiny").launch(p, 2, sanitize=sanitize)
        assert res.pipe_busy["V"] == 2 * 2 * (3 + 1)
        # after the launch start-up, six instructions issued one a cycle; the last vdup starts at its
        # issue (cycle 6) and takes 3 + 1
        chip = chips.get("tiny")
        assert res.startup_cycles == chip.launch_startup_cycles + 2 * chip.launch_core_cycles
        assert res.cycles == res.startup_cycles + 6 + 3 + 1


def test_trace_tracks_and_flow_arrows_bind_to_their_flag_slices():
    res = _add(5000, "tiny", 2)
    events = res.trace()["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert set(names.values()) == {"S", "V", "MTE2", "MTE3"}  # only the pipes an AIV has
    slices = [e for e in events if e["ph"] == "X"]
    for kind, side in (("s", "set_flag"), ("f", "wait_flag")):
        flows = [e for e in events if e["ph"] == kind]
        assert flows
        for e in flows:
            src, dst = e["name"].split(" ")[0].split("->")
            assert names[e["tid"]] == (src if kind == "s" else dst)
            assert any(s["name"] == side and s["pid"] == e["pid"] and s["tid"] == e["tid"]
                       and s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in slices)


def test_gm_peak_bandwidth_needs_every_row_on_the_boundary():
    # the boundary is on absolute GM addresses: a buffer allocated off it is slow from offset 0
    chip = chips.get("910b").replace(gm_alloc_align=32)
    dev = Device(chip)
    dev.alloc("pad", 32)
    dev.upload("x", np.zeros(64 * 1024, np.float32))
    assert dev.buffer("x").addr % 512 == 32
    full, slow = 113, 113 * 0.7

    def mte2(gm_off, nburst, src_stride):
        p = Program("rows", "aiv", params=["x"])
        p.copy(UB(0), p.gm("x", gm_off), "float32", burst=1024, nburst=nburst, src_stride=src_stride)
        p.set_flag("MTE2", "V", 0)
        p.wait_flag("MTE2", "V", 0)
        return dev.launch(p, 1, ["x"]).pipe_busy["MTE2"]

    base = dev.buffer("x").addr
    rows = [base + 480 + r * 4096 for r in range(4)]
    assert mte2(480, 4, 1024) == pytest.approx(210 + _pieces_bus_bytes(chip, rows, 4096) / full, abs=1)  # 480+32=512
    rows = [base + r * 4096 for r in range(4)]
    assert mte2(0, 4, 1024) == pytest.approx(210 + _pieces_bus_bytes(chip, rows, 4096) / slow, abs=1)
    rows = [base + 480 + r * 4128 for r in range(4)]  # rows 4128 bytes apart
    assert mte2(480, 4, 1032) == pytest.approx(210 + _pieces_bus_bytes(chip, rows, 4096) / slow, abs=1)


def test_copy_limits_come_from_the_chip_config():
    chip = chips.get("tiny").replace(max_nburst=2, max_burst_blocks=4)
    dev = Device(chip)
    dev.upload("x", np.zeros(256, np.float32))
    for kwargs, message in (({"burst": 8, "nburst": 3}, "nburst 3 exceeds the 2 bursts of one data move"),
                            ({"burst": 40}, "a burst of 160 bytes exceeds the 128-byte limit of one burst")):
        p = Program("lim", "aiv", params=["x"])
        p.copy(UB(0), p.gm("x"), "float32", **kwargs)
        with pytest.raises(ProgramError, match=message):
            dev.launch(p, 1, ["x"])


def _slices(res, name):
    return [e for e in res.trace()["traceEvents"] if e["ph"] == "X" and e["name"] == name]


def test_a_full_issue_queue_stalls_the_scalar_unit():
    # 40 vector ops then a load on another pipe: the load may only be issued once V has started
    # all but `pipe_queue_depth` of the vector ops, so it cannot start at once
    chip = chips.get("910b")
    p = Program("queue", "aiv", params=["x"])
    for _ in range(40):
        p.vdup(UB(0), 1.0, 64 * 200, "float32")          # 3 + 200 cycles each
    p.copy(UB(65536), p.gm("x"), "float32", burst=64)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    dev = Device(chip)
    dev.upload("x", np.zeros(64, np.float32))
    res = dev.launch(p, 1, ["x"])
    vdups = sorted(e["args"]["start_cycle"] for e in _slices(res, "vdup"))
    load = _slices(res, "copy.gm_to_ub")[0]["args"]["start_cycle"]
    # vdup 0 starts as it is issued; the last vdup (39) finds 32 not-started ones ahead of it and
    # is issued when vdup 39 - 32 starts; the load comes right after it
    k = 39 - chip.pipe_queue_depth
    assert vdups[k] <= load <= vdups[k] + 5
    assert vdups[k] == res.startup_cycles + 1 + k * 203
    deep = Device(chip.replace(pipe_queue_depth=64))
    deep.upload("x", np.zeros(64, np.float32))
    unbounded = deep.launch(p, 1, ["x"])
    early = _slices(unbounded, "copy.gm_to_ub")[0]["args"]["start_cycle"]
    assert early < unbounded.startup_cycles + 50 < load   # with room in the queue it starts at once


def _v_busy(build, chip="910b"):
    p = Program("one_vector_op", "aiv")
    build(p)
    return Device(chip).launch(p, 1).pipe_busy["V"]


def test_instructions_the_910b_lacks_cost_their_decomposition():
    chip = chips.get("910b")
    start, simple, binary, complex_ = (chip.vector_startup_cycles, chip.vector_simple_cycles,
                                       chip.vector_binary_cycles, chip.vector_complex_cycles)
    n = 64 * 128  # 128 repeats of float32 or int32
    fdiv = _v_busy(lambda p: p.vbinary("div", UB(0), UB(32768), UB(65536), n, "float32"))
    assert fdiv == start + 128 * complex_
    # no integer divide: cast both to float32, divide, cast back rounding down
    idiv = _v_busy(lambda p: p.vbinary("floordiv", UB(0), UB(32768), UB(65536), n, "int32"))
    assert idiv == 4 * start + 128 * (3 * simple + complex_)
    imod = _v_busy(lambda p: p.vbinary("mod", UB(0), UB(32768), UB(65536), n, "int32"))
    assert imod == idiv + 2 * (start + 128 * binary)
    # int16 divides through float32 as well: its passes are over 4-byte elements
    i16 = _v_busy(lambda p: p.vbinary("floordiv", UB(0), UB(32768), UB(65536), n, "int16"))
    assert i16 == idiv
    # no 8-bit arithmetic: through float16
    i8 = _v_busy(lambda p: p.vbinary("add", UB(0), UB(32768), UB(65536), 256 * 64, "int8"))
    assert i8 == 4 * start + 128 * (3 * simple + binary)
    assert i8 > _v_busy(lambda p: p.vbinary("add", UB(0), UB(32768), UB(65536), 256 * 64, "int16"))


def test_a_transpose_costs_what_the_16x16_16_bit_blocks_of_the_hardware_cost():
    chip = chips.get("910b")
    start, simple, binary = chip.vector_startup_cycles, chip.vector_simple_cycles, chip.vector_binary_cycles

    def tr(rows, cols, dtype, stride=None):
        return _v_busy(lambda p: p.vtranspose(UB(0), UB(65536), rows, cols, dtype, stride, stride))

    assert tr(16, 16, "float16") == start + 2 * binary                 # one 512-byte block: 2 repeats
    assert tr(20, 20, "float16", 32) == start + 8 * binary             # padded to 32 x 32
    assert tr(16, 16, "float32") == 4 * start + 4 * simple + 2 * 2 * binary + 4 * simple  # split, 2x, merge
    assert tr(16, 16, "int8", 32) == 3 * start + 2 * simple + 2 * binary + 2 * simple
