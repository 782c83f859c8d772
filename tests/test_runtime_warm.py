"""Warm calls without a profile do only what the outputs need; profiles still run the full model.

Kernels here run unsanitized (a sanitized launch never replays, so the suite's default would never take the
warm path) on the tiny preset, and are compared with their py_func on fresh random data every call.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pyasc
from pyasc.examples import BY_NAME, EXAMPLES
from pyasc.examples import tensor_if as branchy  # an If on a tensor condition
from pyasc.testing import assert_close


def block(x, g, b, w1, w2):
    h = pyasc.layer_norm(x, g, b)
    return pyasc.softmax(h @ w1) @ w2


def looped(x, n):
    for _ in range(n):
        x = x * 0.5 + 1.0
    return x


def _block_args(rng):
    return (rng.standard_normal((16, 64)).astype(np.float32), rng.uniform(0.5, 1.5, 64).astype(np.float32),
            rng.standard_normal(64).astype(np.float32), (rng.standard_normal((64, 32)) / 8).astype(np.float32),
            (rng.standard_normal((32, 16)) / 8).astype(np.float32))


def _figures(prof):
    return (prof.cycles, prof.gm_read_bytes, prof.gm_write_bytes, prof.pipe_busy,
            [(p.kernel, p.blocks, p.loops, p.result.to_dict(), p.result.core_pipe_busy) for p in prof.per_launch],
            prof.iterations)


@pytest.mark.parametrize("fn, make", [
    (block, _block_args),
    (branchy, lambda rng: (rng.standard_normal(300).astype(np.float32), np.float32(0.0))),
    (looped, lambda rng: (rng.standard_normal(100).astype(np.float32), np.array(3, np.int32))),
])
def test_a_profile_after_warm_calls_gives_the_figures_of_a_first_call(fn, make, rng):
    k = pyasc.kernel(fn, chip="tiny", sanitize=False)
    args = make(rng)
    for _ in range(3):
        other = make(rng)
        assert_close(k(*other), fn(*other))
    out, prof = k.profile(*args)
    assert_close(out, fn(*args))
    first_out, first = pyasc.kernel(fn, chip="tiny", sanitize=False).profile(*args)
    assert np.array_equal(out, first_out)
    assert _figures(prof) == _figures(first) and prof.launches > 0
    assert prof.trace() == first.trace()
    sanitized = pyasc.kernel(fn, chip="tiny", sanitize=True).profile(*args)[1]
    assert [p.result.cycles for p in sanitized.per_launch] == [p.result.cycles for p in prof.per_launch]


def test_warm_calls_follow_branches_and_trip_counts_that_change_with_the_data(rng):
    b = pyasc.kernel(branchy, chip="tiny", sanitize=False)
    lp = pyasc.kernel(looped, chip="tiny", sanitize=False)
    x = rng.standard_normal(300).astype(np.float32)
    for t in (1e9, -1e9, 1e9):
        assert_close(b(x, np.float32(t)), branchy(x, np.float32(t)))
    for n in (0, 4, 1, 7):
        assert_close(lp(x, np.array(n, np.int32)), looped(x, n))


def test_dynamic_shapes_on_the_warm_path(rng):
    k = pyasc.kernel(lambda_add, chip="tiny", sanitize=False, dynamic=True)
    for n in (40, 1000, 40, 7, 1000):
        x, y = rng.standard_normal((3, n)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        assert_close(k(x, y), x * y + 1.0)
    assert k.cache_info().misses == 1


def lambda_add(x, y):
    return x * y + 1.0


def test_results_of_one_call_are_not_changed_by_the_next(rng):
    k = pyasc.kernel(lambda_add, chip="tiny", sanitize=False)
    x, y = rng.standard_normal(500).astype(np.float32), rng.standard_normal(500).astype(np.float32)
    first = k(x, y)
    kept = first.copy()
    second = k(y, x + 1.0)
    assert np.array_equal(first, kept) and not np.shares_memory(first, second)
    assert_close(second, y * (x + 1.0) + 1.0)


def test_one_value_returned_twice_gives_two_independent_arrays(rng):
    def twice(x):
        y = x + 1.0
        return y, y

    k = pyasc.kernel(twice, chip="tiny", sanitize=False)
    x = rng.standard_normal(64).astype(np.float32)
    a, b = k(x)
    a[0] = 1234.0
    assert b[0] == x[0] + 1.0 and a[0] == 1234.0


def test_the_inputs_are_read_in_place_and_not_kept_after_the_call(rng):
    k = pyasc.kernel(lambda_add, chip="tiny", sanitize=False)
    x, y = rng.standard_normal(2048).astype(np.float32), rng.standard_normal(2048).astype(np.float32)
    k(x, y)  # compiled and recorded
    runner = k.compile(x, y)._runner
    seen = []
    inner = runner.device._run

    def spy(*args):  # the input buffers are the caller's memory while the kernel runs
        seen.append(any(np.shares_memory(b.data, x) for b in runner.device.gm))
        return inner(*args)

    runner.device._run = spy
    try:
        assert_close(k(x, y), x * y + 1.0)
    finally:
        del runner.device._run
    assert seen and all(seen)
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None  # the device let go of it


def test_non_contiguous_and_read_only_inputs(rng):
    k = pyasc.kernel(lambda_add, chip="tiny", sanitize=False)
    x = rng.standard_normal((64, 2)).astype(np.float32)[:, 0]  # strided: one copy
    y = rng.standard_normal(64).astype(np.float32)
    y.flags.writeable = False
    for _ in range(2):
        assert_close(k(x, y), x * y + 1.0)
    assert not y.flags.writeable


@pytest.mark.parametrize("name", [e.name for e in EXAMPLES])
def test_warm_replays_are_bit_exact_against_full_runs(name):
    """Every example kernel, called warm on fresh data: the replayed, untimed launches give exactly the bytes
    the full model (a sanitized kernel never replays) gives."""
    ex = BY_NAME[name]
    warm = pyasc.kernel(ex.fn, chip="tiny", sanitize=False)
    full = pyasc.kernel(ex.fn, chip="tiny", sanitize=True)
    rng = np.random.default_rng(3)
    for _ in range(3):
        args = ex.make_inputs(rng)
        got, want = warm(*args), full(*args)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)


def test_a_device_loop_at_a_new_trip_count_replays_without_running_the_model_again(rng, monkeypatch):
    """The first call at a new trip count replays the recording at another (simulator/tripcount.py): the outputs
    of a full run; a profile at that count still runs the full model and gives a fresh kernel's figures."""
    import simulator.launcher as launcher

    k = pyasc.kernel(looped, chip="tiny", sanitize=False)
    x = rng.standard_normal(300).astype(np.float32)
    k(x, np.array(2, np.int32))  # compiled and recorded at 2
    runs = []
    inner = launcher.run
    monkeypatch.setattr(launcher, "run", lambda *a, **kw: runs.append(1) or inner(*a, **kw))
    for n in (5, 1, 8):
        assert_close(k(x, np.array(n, np.int32)), k.py_func(x, n))
    assert runs == []
    out, prof = k.profile(x, np.array(8, np.int32))
    assert runs == [1]
    fresh_out, fresh = pyasc.kernel(looped, chip="tiny", sanitize=False).profile(x, np.array(8, np.int32))
    assert np.array_equal(out, fresh_out) and _figures(prof) == _figures(fresh)
