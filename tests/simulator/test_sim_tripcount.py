"""Replays at another trip count (tripcount.py): which programs qualify, and that such a replay gives the outputs
of a full run while a replay that asks for timing runs the full model."""
from __future__ import annotations

import numpy as np
import pytest

import simulator.launcher as launcher
from simulator import UB, Device, Program, chips
from simulator.decode import decode

TINY = chips.get("tiny")
N = 64  # float32 elements per core


def _looped(variant: str = "plain") -> Program:
    """Each core loads its N elements, applies y = y * 0.5 + 1 `trips` times on the UB, and stores them."""
    p = Program(f"looped_{variant}", "aiv", params=["x", "y"], tiling=["trips"])
    trips = p.tiling("trips")
    base = p.alu("mul", p.core_idx(), N * 4)
    p.copy(UB(0), p.gm("x", base), "float32", burst=N)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    with p.loop(trips) as i:
        p.vscalar("mul", UB(0), UB(0), 0.5, N, "float32")
        if variant == "writes_a_register":
            p.alu("add", i, 1)
        p.vscalar("add", UB(0), UB(0), 1.0, N, "float32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    out = p.alu("add", base, p.alu("mul", trips, 4)) if variant == "count_in_an_address" else base
    p.copy(p.gm("y", out), UB(0), "float32", burst=N)
    return p


def _device(x: np.ndarray) -> Device:
    dev = Device(TINY)
    dev.upload("x", x)
    dev.alloc("y", x.nbytes + 4 * 64)
    return dev


def _full_runs(monkeypatch) -> list:
    runs = []
    inner = launcher.run

    def counting(*args, **kwargs):
        runs.append(1)
        return inner(*args, **kwargs)

    monkeypatch.setattr(launcher, "run", counting)
    return runs


def test_the_analysis_finds_the_trip_count_field_only_where_iterations_repeat():
    assert decode(_looped(), TINY).trip_loop.field == "trips"
    assert decode(_looped("writes_a_register"), TINY).trip_loop is None  # the loop variable is read
    assert decode(_looped("count_in_an_address"), TINY).trip_loop is None  # the count reaches an address


@pytest.mark.parametrize("cores", [1, 3])
def test_an_untimed_launch_at_a_new_trip_count_replays_the_recording_of_another(cores, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(cores * N).astype(np.float32)
    prog = _looped()
    dev = _device(x)
    dev.launch(prog, cores, ["x", "y"], {"trips": 2}, timing=False)  # recorded at 2
    runs = _full_runs(monkeypatch)
    for trips in (5, 1, 9):
        assert dev.launch(prog, cores, ["x", "y"], {"trips": trips}, timing=False) is None
        fresh = _device(x)
        fresh.launch(prog, cores, ["x", "y"], {"trips": trips})
        assert np.array_equal(dev.read("y", "float32"), fresh.read("y", "float32"))
        ref = x[:cores * N].copy()
        for _ in range(trips):
            ref = ref * np.float32(0.5) + np.float32(1.0)
        assert np.array_equal(dev.read("y", "float32", (cores * N,)), ref)
    assert runs == [1, 1, 1]  # only the fresh devices ran the full model
    # timing at a count replayed this way runs the full model: the figures of a device that never saw it
    res = dev.launch(prog, cores, ["x", "y"], {"trips": 9})
    assert len(runs) == 4
    fresh = _device(x)
    assert res.to_dict() == fresh.launch(prog, cores, ["x", "y"], {"trips": 9}).to_dict()
    assert res.trace() == _device(x).launch(prog, cores, ["x", "y"], {"trips": 9}).trace()


def test_a_trip_count_of_zero_and_programs_that_do_not_qualify_run_in_full(monkeypatch):
    x = np.arange(N, dtype=np.float32)
    for prog in (_looped(), _looped("writes_a_register"), _looped("count_in_an_address")):
        dev = _device(x)
        dev.launch(prog, 1, ["x", "y"], {"trips": 2}, timing=False)
        runs = _full_runs(monkeypatch)
        for trips in (0, 3):
            dev.write("y", np.zeros(N + 64, np.float32))  # (the count_in_an_address variant stores elsewhere)
            dev.launch(prog, 1, ["x", "y"], {"trips": trips}, timing=False)
            fresh = _device(x)
            fresh.launch(prog, 1, ["x", "y"], {"trips": trips})
            assert np.array_equal(dev.read("y", "float32"), fresh.read("y", "float32"))
        derived = prog.name == "looped_plain"
        assert len(runs) == (3 if derived else 4)  # (the fresh devices' two, and the trip count 0 when derived)
        monkeypatch.undo()
