"""The cost model's terms of a mixed launch (tiny preset; compiles and estimates, one small emulated run).

- The channel between the cube and the vector cores stays in L2: of the cube's FixPipes into it only the first
  write of each slot dirties lines (an HBM write-back, as the emulator charges it); the vector cores' reads hit.
- A FixPipe whose GM rows do not start on the 512-byte boundary moves at the unaligned rate (its spec gives the
  cost model its rows, as a copy's does).
- When the cube is the slower side, the launch ends with the vector cores' work on the last tile handed over:
  its load of the tile, its ops and its stores (`cost._span_from`), a cross-core flag after the last FixPipe.
- A prologue's operand that every vector core reads whole (a layer norm's weight row) comes from HBM once, and
  the prologue's tilings are tried fastest first.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import pyasc
from pyasc import symbolic as sy
from pyasc.codegen import cost, lower, schedules
from pyasc.codegen import tileops as T
from pyasc.codegen.schedule import Buffer, GmParam, GmRef, Loop, Ref, TileSchedule
from pyasc.codegen.route import route
from pyasc.codegen.templates import mixed_prologue, vector
from pyasc.codegen.templates.mixed import CHANNEL
from pyasc.testing import assert_close
from ranking_check import assert_pruning_keeps_the_choice
from simulator import chips

TINY = chips.get("tiny")


def mm_gelu(a, b, bias):
    return pyasc.gelu(a @ b + bias)


def ln_mm_gelu(x, g, b, w, bias):
    return pyasc.gelu(pyasc.layer_norm(x, g, b) @ w + bias)


def _mixed(fn, *shapes, seed=0, chip="tiny"):
    rng = np.random.default_rng(seed)
    args = [(rng.standard_normal(s) * 0.3).astype(np.float16) for s in shapes]
    k = pyasc.kernel(fn, chip=chip)
    (dk,) = k.compile(*args).kernels
    assert dk.template == "mixed"
    return k, args, dk, dict(dk.tiling.dims)


def _fields(side: TileSchedule, dims):
    return {name: sy.evaluate(e, dims) for name, e in side.fields.items()}


@pytest.mark.parametrize("chip", ["tiny", "910b"])   # (910b: compiled and estimated only)
def test_the_channels_rewrites_cost_no_hbm_write_back(chip):
    _, _, dk, dims = _mixed(mm_gelu, (1024, 32), (32, 1024), (1024,), chip=chip)
    s, config = dk.schedule, chips.get(chip)
    groups = sy.evaluate(s.blocks, dims)
    handed, slots = sy.evaluate(s.steps, dims), s.channels[0].slots
    assert handed > slots
    assert s.aic.l2_resident(_fields(s.aic, dims), groups) == {CHANNEL: slots / handed}
    assert s.aiv.l2_resident(_fields(s.aiv, dims), groups) == {CHANNEL: 0.0}
    # with every write reaching HBM the FixPipes would share HBM's bandwidth with all the cube cores' (on 910b
    # that share is below the path's rate); the vector cores' reads would too
    for side in (s.aic, s.aiv):
        dirty = replace(side, l2_resident=None)
        ours, theirs = cost.estimate(side, dims, config).cycles, cost.estimate(dirty, dims, config).cycles
        assert ours < theirs if chip == "910b" else ours <= theirs


def test_a_fixpipe_off_the_512_byte_boundary_moves_at_the_unaligned_rate():
    def fix_cycles(row_elems: int) -> float:
        op = T.fixpipe(GmRef("out0", 0), Ref("acc", 0), 32, 64, "float16", dst_row_stride=row_elems)
        cycles, nbytes, written, _ = cost._move_cycles(op, {}, TINY, 1, {"acc": "L0C"})
        assert nbytes == written == 32 * 64 * 2
        return cycles - TINY.l0c_to_gm.startup

    aligned, narrow = fix_cycles(256), fix_cycles(64)   # rows 512 bytes apart, and 128
    assert narrow == pytest.approx(aligned / TINY.gm_unaligned_factor)


def test_the_drain_is_the_vector_sides_work_from_its_last_read_of_the_channel():
    # a walk of three blocks: each loads another input, then the cube's tile, adds and stores; the drain is the
    # last block's span from the tile's load on, not the other input's load before it
    buffers = [Buffer("x", "UB", "float16", 2048, 2), Buffer("y", "UB", "float16", 2048, 2)]
    slot = sy.mod(sy.sym("i"), 2)
    other = T.load(Ref("y", slot), GmRef("in1", 0), "float16", 1024)
    take = T.load(Ref("x", slot), GmRef(CHANNEL, 0), "float16", 1024)
    add = T.vbinary("add", Ref("x", slot), Ref("x", slot), Ref("y", slot), 1024, "float16")
    store = T.store(GmRef("out0", 0), Ref("x", slot), "float16", 1024)
    side = TileSchedule("probe", "aiv", [GmParam(CHANNEL, "float16", "scratch"), GmParam("in1", "float16", "in"),
                                         GmParam("out0", "float16", "out")], {}, 1, buffers,
                        [Loop("i", 0, 3, 1, [other, take, add, store])])
    e = cost.estimate(side, {}, TINY, tail_from=lambda op: op is take)

    def alone(op) -> float:   # the op in the last block, by itself
        return cost.estimate(replace(side, body=[Loop("i", 2, 3, 1, [op])]), {}, TINY).core_cycles

    assert e.tail == pytest.approx(alone(take) + alone(add) + alone(store))
    assert e.tail < e.core_cycles / 3 + alone(other)
    assert cost.estimate(side, {}, TINY, tail_from=lambda op: False).tail == 0.0


def test_a_mixed_launchs_score_ends_with_the_drain_after_the_cubes_last_tile():
    k, args, dk, dims = _mixed(mm_gelu, (96, 512), (512, 80), (80,))
    s = dk.schedule
    a = cost.estimate(s.aic, dims, TINY)
    v = cost.estimate(s.aiv, dims, TINY, tail_from=schedules._touches_channel(s))
    aic, aiv = (e.cycles - cost.launch_cycles(TINY, e.blocks) for e in (a, v))
    assert aic >= aiv and s.chunks == 1 and v.tail > 0
    start = cost.launch_cycles(TINY, a.blocks + v.blocks)
    assert dk.tiling.score.cycles == pytest.approx(start + aic + TINY.cross_flag_cycles + v.tail)
    # the vector cores' last tile, not an average step of theirs
    assert v.tail < aiv
    y, prof = k.profile(*args)
    assert_close(y, k.py_func(*args))
    assert prof.launches == 1


@pytest.mark.parametrize("chip,m,kk,n", [("tiny", 33, 80, 40), ("910b", 256, 768, 768)])   # (910b: compiled only)
def test_a_prologues_weight_rows_come_from_hbm_once(chip, m, kk, n):
    _, _, dk, dims = _mixed(ln_mm_gelu, (m, kk), (kk,), (kk,), (kk, n), (n,), chip=chip)
    pro, config = dk.schedule.prologue, chips.get(chip)
    assert pro is not None
    blocks = sy.evaluate(pro.blocks, dims)
    shared = pro.l2_resident(_fields(pro, dims), blocks)
    assert len(shared) == 2 and set(shared.values()) == {1.0 / blocks}   # the weight and the bias row
    reads = {op.args["src"].param for op in pro.ops() if isinstance(op.args.get("src"), GmRef)}
    assert set(shared) <= reads
    # as HBM reads on every core they would share HBM's bandwidth (on 910b below the path's rate)
    ours = cost.estimate(pro, dims, config).cycles
    theirs = cost.estimate(replace(pro, l2_resident=None), dims, config).cycles
    assert ours < theirs if chip == "910b" else ours <= theirs


@pytest.mark.parametrize("chip,m,kk,n", [("tiny", 33, 80, 40), ("910b", 256, 768, 768)])   # (910b: compiled only)
def test_the_prologues_tilings_come_fastest_first(chip, m, kk, n):
    # the cube waits for the prologue's last row: its tilings in the order of their estimates on the launch's
    # vector cores (on 910b 2-row tiles, two in flight per core, beat one 6-row tile: the barrier of the GPT-2
    # block's first launch at 2,896 cycles instead of 3,210)
    _, args, dk, _ = _mixed(ln_mm_gelu, (m, kk), (kk,), (kk,), (kk, n), (n,), chip=chip)
    config = chips.get(chip)
    (job,) = route("k", dk.plan, config)
    vk = mixed_prologue.analyze("k", job.subject.prologue, "float16", config)
    cores = config.aiv_cores
    found = [t for _, t in mixed_prologue.candidates(vk, config, 2, cores)]
    cycles = [cost.estimate(replace(vector.schedule(vk, t, config), blocks=cores), {}, config).cycles for t in found]
    assert len(found) > 1 and cycles == sorted(cycles)
    assert dk.tiling.params.prologue in found


@pytest.mark.parametrize("chip,m,kk,n", [("tiny", 150, 96, 200), ("910b", 128, 256, 384)])
def test_the_bound_stays_under_the_score_with_the_loads_ahead_of_the_barrier(monkeypatch, chip, m, kk, n):
    # the score takes the cube's loads ahead of the barrier off its side; the bound takes off at least as much
    rng = np.random.default_rng(0)
    args = [(rng.standard_normal(s) * 0.3).astype(np.float16) for s in ((m, kk), (kk,), (kk,), (kk, n), (n,))]
    assert_pruning_keeps_the_choice(monkeypatch, lower, ln_mm_gelu, args, chip, {})
