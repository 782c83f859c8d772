"""Runtime loops: `for` over a launch-time trip count and `while` on a tensor are Loop nodes the host runs.

Every kernel runs on the emulator (the default backend; the suite turns the sanitizer on) on both presets
and is compared with its py_func, the same body run eagerly by numpy.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.testing import assert_close

CHIPS = ("tiny", "910b")


def power(A, v, n):
    for _ in range(n):
        v = A @ v
        v = v / pyasc.sqrt((v * v).sum())
    return v


def _loops(graph):
    return [n for g in graph.walk() for n in g.nodes if n.op == "Loop"]


@pytest.mark.parametrize("chip", CHIPS)
def test_power_iteration_with_a_runtime_trip_count(chip, rng):
    k = pyasc.kernel(chip=chip)(power)
    A = rng.uniform(0.1, 1.0, (16, 16)).astype(np.float32)
    v = rng.uniform(0.1, 1.0, 16).astype(np.float32)
    for n in (0, 1, 4, 9):
        assert_close(k(A, v, np.array(n, np.int32)), power(A, v, n))
    assert k.cache_info().misses == 1  # the trip count is data: one compile for every n
    (loop,) = _loops(k.compile(A, v, np.array(3, np.int32)).graph)
    assert loop.attrs["kind"] == "for" and loop.attrs["carried"] == 1


@pytest.mark.parametrize("chip", CHIPS)
def test_power_iteration_over_a_symbolic_dim(chip, rng):
    def f(A, v):
        for _ in range(v.shape[0]):
            v = A @ v
            v = v / pyasc.sqrt((v * v).sum())
        return v

    k = pyasc.kernel(chip=chip, dynamic=True)(f)
    for n in (2, 5, 16):
        A = rng.uniform(0.1, 1.0, (n, n)).astype(np.float32)
        v = rng.uniform(0.1, 1.0, n).astype(np.float32)
        assert_close(k(A, v), f(A, v))
    assert k.cache_info().misses == 1


def newton_sqrt(a, tol):
    x = a * 0.5 + 0.5
    err = pyasc.abs(x * x - a).max()
    it = pyasc.zeros((), pyasc.int32)
    while (err > tol) & (it < 50):  # the guard caps the iterations whatever the data
        x = 0.5 * (x + a / x)
        err = pyasc.abs(x * x - a).max()
        it = it + 1
    return x, it


@pytest.mark.parametrize("chip", CHIPS)
def test_newton_while_loop_with_a_max_iteration_guard(chip, rng):
    k = pyasc.kernel(chip=chip)(newton_sqrt)
    for shape in [(8, 33), (3, 5), (2, 4100)]:
        a = rng.uniform(0.5, 4.0, shape).astype(np.float32)
        x, it = k(a, 1e-4)
        ref_x, ref_it = newton_sqrt(a, 1e-4)
        assert_close(x, ref_x)
        assert int(it) == int(ref_it) and 1 < int(it) < 50
    a = rng.uniform(0.5, 4.0, (3, 5)).astype(np.float32)
    x, it = k(a, -1.0)  # a tolerance never met: the guard stops it
    assert int(it) == 50
    assert_close(x, np.sqrt(a.astype(np.float64)).astype(np.float32))
    (loop,) = _loops(k.compile(a, 1e-4).graph)
    assert loop.attrs["kind"] == "while" and loop.attrs["carried"] == 3


def count_up(x):
    for _ in range(100000):
        x = x + 1.0
    return x


def test_a_static_loop_past_the_unroll_budget_is_a_runtime_loop():
    k = pyasc.kernel(chip="tiny")(count_up)
    art = k.compile(np.zeros(4, np.float32))
    (loop,) = _loops(art.graph)
    assert "a static loop of 100000 iterations exceeds the unroll budget" in loop.attrs["_note"]
    assert "exceeds the unroll budget" in art.stages["notes"]
    assert "repeat host: 100000 times on the device:" in art.stages["launch"]
    ref = pyasc.kernel(chip="tiny", backend="reference")(count_up)
    assert_close(ref(np.zeros(4, np.float32)), np.full(4, 100000.0, np.float32))


@pytest.mark.parametrize("chip", CHIPS)
def test_runtime_range_forces_a_loop_and_the_index_is_carried(chip, rng):
    def f(x):
        acc = 0.0
        for i in pyasc.runtime_range(1, 7, 2):
            acc = acc + x * i
        return acc

    k = pyasc.kernel(chip=chip)(f)
    x = rng.standard_normal((5, 9)).astype(np.float32)
    assert_close(k(x), f(x))
    (loop,) = _loops(k.compile(x).graph)
    assert loop.attrs["carried"] == 2  # acc and the index


def test_static_range_unrolls_past_the_budget(rng):
    def f(x):
        for i in pyasc.static_range(20):
            x = x + i
        return x

    k = pyasc.kernel(chip="tiny", unroll_budget=4)(f)
    x = rng.standard_normal(6).astype(np.float32)
    assert_close(k(x), f(x))
    assert not _loops(k.compile(x).graph)


def test_static_range_needs_static_bounds():
    def f(x):
        for _ in pyasc.static_range(x.shape[0]):
            x = x + 1.0
        return x

    with pytest.raises(pyasc.CompileError, match=r"static_range\(\) unrolls at compile time, so its bounds must "
                                                 r"be compile-time ints"):
        pyasc.kernel(chip="tiny", dynamic=True)(f)(np.zeros(3, np.float32))


@pytest.mark.parametrize("chip", CHIPS)
def test_if_inside_a_runtime_loop_and_invariants(chip, rng):
    def f(x, w, n):
        y = x
        for _ in range(n):
            y = pyasc.where(y > 0, y * w, y - w)
            if y.sum() > 0:
                y = y * 0.5
            else:
                y = y + 1.0
        return y, w

    k = pyasc.kernel(chip=chip)(f)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    for n in (0, 3):
        got, ref = k(x, w, np.array(n, np.int32)), f(x, w, n)
        assert_close(got[0], ref[0])
        assert_close(got[1], w)


def test_loop_carried_dtype_change_is_a_located_error():
    def f(x, n):
        for _ in range(n):
            x = x.astype(pyasc.float16)
        return x

    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(chip="tiny")(f)(np.zeros(4, np.float32), np.array(2, np.int32))
    err = info.value
    assert "loop-carried variable `x` is f32[4] before an iteration but f16[4] after it" in err.reason
    assert err.source_line.strip() == "x = x.astype(pyasc.float16)"


@pytest.mark.parametrize("bad, words", [
    ("break", "`break` inside a runtime loop is not supported"),
    ("return x", "`return` inside a runtime loop is not supported"),
])
def test_runtime_loop_body_restrictions(bad, words, tmp_path):
    src = f"def f(x, n):\n    for _ in range(n):\n        x = x + 1.0\n        {bad}\n    return x\n"
    ns: dict = {"pyasc": pyasc}
    path = str(tmp_path / "pyasc_loop_restriction.py")  # per test: parallel workers never share the file
    with open(path, "w") as fh:
        fh.write(src)
    exec(compile(src, path, "exec"), ns)
    with pytest.raises(pyasc.CompileError, match=words):
        pyasc.kernel(chip="tiny")(ns["f"])(np.zeros(4, np.float32), np.array(2, np.int32))


def test_a_variable_first_assigned_in_the_body_is_not_available_after_it():
    def f(x, n):
        for _ in range(n):
            t = x * 2.0
            x = t + 1.0
        return t

    with pytest.raises(pyasc.CompileError, match=r"`t` is assigned only inside the runtime loop at line \d+"):
        pyasc.kernel(chip="tiny")(f)(np.zeros(4, np.float32), np.array(2, np.int32))


def halve_until_one_row(x):
    while x.shape[0] > 1:  # a compile-time test: run at compile time, one iteration at a time
        half = x.shape[0] // 2
        x = x[:half] + x[half:2 * half]
    else:
        x = x * 2
    n = 0
    while n < 0:  # false at once: no iteration, no Loop node
        x = x + 1
    return x


@pytest.mark.parametrize("backend", ["emulator", "reference"])
def test_while_on_compile_time_values_runs_at_compile_time(backend, rng):
    k = pyasc.kernel(chip="tiny", backend=backend)(halve_until_one_row)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    assert_close(k(x), halve_until_one_row(x))
    assert not _loops(k.compile(x).graph)


def test_a_compile_time_while_that_never_ends_hits_the_unroll_budget():
    def f(x):
        while x.ndim > 0:
            x = x + 1
        return x

    with pytest.raises(pyasc.CompileError, match=r"`while x.ndim > 0` is known at compile time and still true after 20 "
                                                 r"iterations unrolled in total \(the unroll budget\)"):
        pyasc.kernel(chip="tiny", unroll_budget=20)(f)(np.zeros(4, np.float32))


def test_a_while_test_that_becomes_a_tensor_is_an_error():
    def f(x):
        done = False
        while not done:
            done = x.sum() > 0
        return x

    with pytest.raises(pyasc.CompileError, match=r"the `while` condition `not done` was known at compile time and is "
                                                 r"now a tensor"):
        pyasc.kernel(chip="tiny")(f)(np.zeros(4, np.float32))


def newton_with_python_guard(a, tol):
    x = a.copy()
    it = 0  # a Python int the loop carries (a tensor once the loop runs at launch)
    while np.max(np.abs(x * x - a)) > tol and it < 20 and not tol < 0:
        x = 0.5 * (x + a / x)
        it += 1
    return x, it


def test_while_test_combines_tensor_and_python_conditions_with_and_not(rng):
    k = pyasc.kernel(chip="tiny")(newton_with_python_guard)
    a = rng.uniform(0.5, 4.0, (3, 5)).astype(np.float32)
    for tol in (1e-4, 0.0, -1.0):  # met after a few steps; never met (the guard stops it); false at once
        x, it = k(a, tol)
        ref_x, ref_it = newton_with_python_guard(a, np.float32(tol))
        assert_close(x, ref_x)
        assert int(it) == ref_it
    (loop,) = _loops(k.compile(a, 1e-4).graph)
    assert loop.attrs["kind"] == "while"
