"""Sync insertion: which flags a schedule gets, checked on hand-made schedules and by the sanitizer."""
from __future__ import annotations

import numpy as np
import pytest

from simulator import Device, chips

from pyasc import symbolic as sy
from pyasc.codegen import tileops as T
from pyasc.codegen.emit import emit
from pyasc.codegen.schedule import Buffer, GmParam, GmRef, Loop, Ref, TileSchedule
from pyasc.codegen.sync import SyncAllocationError, annotated_lines, plan_sync

CHIP = chips.get("tiny")
I = sy.sym("i")


def add_schedule(slots: int) -> TileSchedule:
    """z = x + y over tiles of 64 float32, x/y/z buffers rotating when slots == 2."""
    slot = sy.mod(I, 2) if slots == 2 else 0
    x, y, z = Ref("x", slot), Ref("y", slot), Ref("z", slot)
    off = sy.mul(I, 256)
    body = [
        T.load(x, GmRef("in0", off), "float32", 64),
        T.load(y, GmRef("in1", off), "float32", 64),
        T.vbinary("add", z, x, y, 64, "float32"),
        T.store(GmRef("out0", off), z, "float32", 64),
    ]
    bufs = [Buffer(n, "UB", "float32", 256, slots) for n in ("x", "y", "z")]
    params = [GmParam("in0", "float32", "in"), GmParam("in1", "float32", "in"), GmParam("out0", "float32", "out")]
    return TileSchedule("add", "aiv", params, {"n": 4}, 1, bufs, [Loop("i", 0, sy.sym("n"), 1, body)])


def test_flags_of_a_ping_pong_loop():
    s = add_schedule(2)
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    text = "\n".join(annotated_lines(s.body, plan))
    # one data-ready flag serves both loads; buffer-free flags are pre-set per slot and drained
    assert text.count("wait_flag(MTE2->V") == 1 and text.count("wait_flag(V->MTE3") == 1
    assert "set_flag(V->MTE2, 0)" in text and "set_flag(V->MTE2, 1)" in text
    assert "set_flag(MTE3->V, 0)" in text and "set_flag(MTE3->V, 1)" in text
    assert "MTE2->MTE3" not in text  # ordered through V already
    assert plan.ids_used == {("MTE2", "V"): 2, ("V", "MTE3"): 2, ("V", "MTE2"): 2, ("MTE3", "V"): 2}


@pytest.mark.parametrize("slots", [1, 2])
@pytest.mark.parametrize("mode", ["flags", "barrier"])
def test_generated_flags_pass_the_sanitizer(slots, mode):
    s = add_schedule(slots)
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids, mode)
    prog = emit(s, plan, CHIP)
    dev = Device(CHIP)
    x, y = np.arange(256, dtype=np.float32), np.ones(256, np.float32)
    dev.upload("x", x)
    dev.upload("y", y)
    dev.alloc("z", 1024)
    dev.launch(prog, 1, {"in0": "x", "in1": "y", "out0": "z"}, {"n": 4, "b_in0": 0, "b_in1": 0, "b_out0": 0},
               sanitize=True)
    np.testing.assert_array_equal(dev.read("z", "float32"), x + y)


def test_single_buffered_flags_use_one_id_per_pair():
    s = add_schedule(1)
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    assert set(plan.ids_used.values()) == {1}


def test_too_many_flags_for_the_event_ids_are_refused():
    s = add_schedule(2)
    with pytest.raises(SyncAllocationError, match="more than 1 event ids for flags"):
        plan_sync(s.body, s.buffers, 1)


def test_a_wrong_mode_is_refused():
    s = add_schedule(1)
    with pytest.raises(ValueError, match="sync mode must be 'flags' or 'barrier'"):
        plan_sync(s.body, s.buffers, 8, "none")
