"""Runtime loops on the device: a `for` loop whose body is one vector kernel runs inside that kernel (one
launch, the carried values in UB), anything else stays host-driven and the launch plan says why.

Every kernel runs on the emulator with the sanitizer on (the suite sets PYASC_SANITIZE=1) and is compared
with its py_func.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.codegen.launch import reference_launches
from pyasc.testing import assert_close


def halve_and_add(x, n):
    for _ in range(n):
        x = x * 0.5 + 1.0
    return x


def normalise(x, w, n):
    for _ in range(n):
        x = pyasc.softmax(x * w, axis=-1) * 3.0
    return x


def _trip(n):
    return np.array(n, np.int32)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_an_elementwise_loop_is_one_launch(n, rng):
    k = pyasc.kernel(chip="tiny")(halve_and_add)
    x = rng.standard_normal((37, 70)).astype(np.float32)  # several tiles and cores, a tail
    out, prof = k.profile(x, _trip(n))
    assert_close(out, k.py_func(x, n))
    assert prof.launches == 1 and prof.iterations == {0: n} and prof.device_loops == {0}
    assert f"runtime loop 0: {n} iteration(s) on the device, in 1 launch(es)" in prof.summary()
    launch = k.compile(x, _trip(n)).stages["launch"]
    assert "repeat in1 (int32) times on the device:  # the body is one elementwise vector kernel" in launch


def test_a_row_wise_loop_is_one_launch(rng):
    k = pyasc.kernel(chip="tiny")(normalise)
    x = rng.standard_normal((9, 13)).astype(np.float32)  # rows padded in UB
    w = rng.uniform(0.5, 1.5, (9, 13)).astype(np.float32)
    for n in (0, 3):
        out, prof = k.profile(x, w, _trip(n))
        assert_close(out, k.py_func(x, w, n))
        assert prof.launches == 1 and prof.iterations == {0: n}
    art = k.compile(x, w, _trip(3))
    assert "the body is one row-wise vector kernel" in art.stages["launch"]
    (kern,) = art.kernels
    assert kern.template == "device_loop" and "device loop: the body is one row-wise vector kernel" in kern.notes


def test_the_loop_index_and_two_carried_values(rng):
    def f(a, b, n):
        for i in range(2, n):
            a = a * 0.25 + b * 0.5 + i
            b = a - b * 0.5
        return a, b

    def stepped(a):
        for i in pyasc.runtime_range(1, 12, 3):
            a = a * 0.5 + i
        return a

    k = pyasc.kernel(chip="tiny")(f)
    a = rng.standard_normal((6, 40)).astype(np.float32)
    b = rng.standard_normal((6, 40)).astype(np.float32)
    for n in (0, 3, 8):
        out, prof = k.profile(a, b, _trip(n))
        ref = k.py_func(a, b, n)
        assert_close(out[0], ref[0])
        assert_close(out[1], ref[1])
    # the trip count is computed before the loop; the loop itself is one launch
    assert "times on the device:" in k.compile(a, b, _trip(8)).stages["launch"]
    assert prof.loop_launches(0) == 1 and prof.iterations == {0: 6}
    s = pyasc.kernel(chip="tiny")(stepped)
    out, prof = s.profile(a)
    assert_close(out, s.py_func(a))
    assert prof.launches == 1 and prof.iterations == {0: 4}


def test_a_trip_count_from_a_dim_is_bound_by_the_host_code(rng):
    def f(x):
        for _ in range(x.shape[0]):
            x = x * 0.5 + 1.0
        return x

    k = pyasc.kernel(chip="tiny", dynamic=True)(f)
    for rows in (0, 3, 5):
        x = rng.standard_normal((rows, 8)).astype(np.float32)
        assert_close(k(x), k.py_func(x))
    art = k.compile(x)
    env = {s: 5 if s.endswith("d0") else 8 for s in art.device.launch.dim_symbols}
    calls = []
    art.host.run(env, lambda site, blocks, fields: calls.append((site.kernel, blocks, dict(zip(site.fields, fields)))),
                 lambda site, off: True)
    assert calls == reference_launches(art.device.launch, art.device.kernels, env)
    assert [c[2]["N"] for c in calls] == [5]


def test_bodies_that_stay_on_the_host_say_why(rng):
    def power(A, v, n):
        for _ in range(n):
            v = A @ v
            v = v / pyasc.sqrt((v * v).sum())
        return v

    def cube(A, v, n):
        for _ in range(n):
            v = pyasc.relu(A @ v)
        return v

    A = rng.uniform(0.1, 1.0, (16, 16)).astype(np.float32) / 8
    v = rng.uniform(0.1, 1.0, 16).astype(np.float32)
    for fn, why in ((power, "on the host: its body is 2 kernels"), (cube, "not one vector kernel")):
        k = pyasc.kernel(chip="tiny")(fn)
        out, prof = k.profile(A, v, _trip(3))
        assert_close(out, k.py_func(A, v, 3))
        assert prof.device_loops == set() and prof.iterations == {0: 3}
        assert why in k.compile(A, v, _trip(3)).stages["launch"]


def test_a_body_reading_a_carried_value_at_other_positions_stays_on_the_host(rng):
    def mirror(x, n):
        for _ in range(n):
            x = x * 0.5 + x[::-1] * 0.25
        return x

    k = pyasc.kernel(chip="tiny")(mirror)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    out, prof = k.profile(x, _trip(3))
    assert_close(out, k.py_func(x, 3))
    assert prof.device_loops == set() and "times:  # on the host: " in k.compile(x, _trip(3)).stages["launch"]


def test_a_device_loop_round_trips_the_disk_cache(disk_cache, rng):
    x = rng.standard_normal((4, 8)).astype(np.float32)
    first = pyasc.kernel(chip="tiny")(halve_and_add)
    assert_close(first(x, _trip(5)), halve_and_add(x, 5))
    again = pyasc.kernel(chip="tiny")(halve_and_add)
    assert_close(again(x, _trip(5)), halve_and_add(x, 5))
    assert again.cache_info().disk_hits == 1
