"""A long static `range` whose body keeps its shapes is a runtime loop (traced once), else it is unrolled.

Most checks build the graph only (frontend + the numpy interpreter of the graph); one kernel runs on the
emulator. The rule is in pyasc/frontend/loops.py (`LOOP_THRESHOLD`, `_foldable`).
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.frontend.loops import LOOP_THRESHOLD
from pyasc.testing import assert_close
from test_frontend_control import build, run

N = LOOP_THRESHOLD + 44


def _loops(result):
    return [n for n in result.graph.nodes if n.op == "Loop"]


def affine(x, a):
    for _ in range(1000):
        x = x * a + 0.5
    return x


def test_a_long_static_loop_is_traced_once_and_runs_on_the_emulator(rng):
    k = pyasc.kernel(affine, chip="tiny", sanitize=False)  # 1000 launches: the warm path (Loop bodies are sanitized
    # in test_runtime_loops.py)
    x = rng.standard_normal(64).astype(np.float32)
    a = np.float32(0.5)
    assert_close(k(x, a), affine(x, a))
    art = k.compile(x, a)
    (loop,) = [n for n in art.graph.nodes if n.op == "Loop"]
    assert loop.attrs["kind"] == "for"
    assert "a static loop of 1000 iterations (at least 256) whose body keeps the shapes" in art.stages["notes"]
    assert "pyasc.static_range unrolls it" in art.stages["notes"]


def temps(x):
    for _ in range(N):
        t = x * 0.5
        x = t + 0.25
    return x


def below(x):
    for _ in range(LOOP_THRESHOLD - 1):
        x = x + 1.0
    return x


def test_temporaries_inside_are_fine_and_shorter_loops_unroll():
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    r = build(temps, x)
    assert len(_loops(r)) == 1
    assert_close(run(r, x), temps(x))
    assert not _loops(build(below, x))


def reads_index(x):
    for i in range(N):
        x = x + i
    return x


def index_after(x):
    for i in range(N):
        x = x * 1.0
    return x + i


def carries_a_number(x):
    k = 0
    for _ in range(N):
        x = x + 1.0
        k += 1
    return x[: k - N + 2]


def temp_read_after(x):
    for _ in range(N):
        t = x + 1.0
        x = t * 1.0
    return t


def changes_shape(x):
    for _ in range(N):
        x = x[1:]
    return x


def forced(x):
    for _ in pyasc.static_range(N):
        x = x + 1.0
    return x


def call_statement(x, out):
    for _ in range(N):
        x = x + 1.0
        out.append(1)
    return x


@pytest.mark.parametrize("fn, size", [(reads_index, 8), (index_after, 8), (carries_a_number, 8),
                                      (temp_read_after, 8), (changes_shape, N + 8), (forced, 8)])
def test_loops_whose_body_means_something_else_once_are_unrolled(fn, size):
    """Reading the index (inside or after), carrying a Python number, reading a temporary after the loop, a body
    that changes a carried shape, and pyasc.static_range: unrolled, with numpy's result."""
    x = np.linspace(-1, 1, size, dtype=np.float32)
    r = build(fn, x)
    assert not _loops(r)
    assert_close(run(r, x), fn(x))


def test_a_statement_with_compile_time_effects_keeps_the_loop_unrolled():
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    seen: list[int] = []
    r = build(call_statement, x, seen)
    assert not _loops(r) and len(seen) == N  # the body ran N times at compile time, as Python would
