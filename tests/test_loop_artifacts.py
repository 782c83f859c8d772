"""Runtime loops in dumps, the profile, the verifier and the compile cache."""
from __future__ import annotations

import os

import numpy as np
import pytest

import pyasc
from pyasc.ir import Graph, TensorType, VerificationError, verify
from pyasc.testing import assert_close


def power(A, v, n):
    for _ in range(n):
        v = A @ v
        v = v / pyasc.sqrt((v * v).sum())
    return v


def _args(rng, n):
    A = rng.uniform(0.1, 1.0, (16, 16)).astype(np.float32)
    v = rng.uniform(0.1, 1.0, 16).astype(np.float32)
    return A, v, np.array(n, np.int32)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_profile_counts_iterations_and_launches_per_iteration(chip, rng):
    k = pyasc.kernel(chip=chip)(power)
    for n in (4, 0):
        args = _args(rng, n)
        out, prof = k.profile(*args)
        assert_close(out, power(*args))
        body = prof.loop_launches(0)
        assert prof.iterations.get(0, 0) == n
        assert body == (3 * n) and prof.launches == body + 1  # matmul, normalise, carry back; + the initial copy
        assert prof.launches_per_iteration(0) == (3.0 if n else 0.0)
        if n:
            assert "runtime loop 0: 4 iteration(s), 12 launch(es), 3.0 per iteration" in prof.summary()


def test_nested_runtime_loops_count_separately(rng):
    def f(x, n, m):
        for _ in range(n):
            for _ in range(m):
                x = x * 0.5
            x = x + 1.0
        return x

    k = pyasc.kernel(chip="tiny")(f)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    out, prof = k.profile(x, np.array(3, np.int32), np.array(2, np.int32))
    assert_close(out, f(x, 3, 2))
    assert prof.iterations == {0: 3, 1: 6}
    assert prof.launches_per_iteration(1) == 2.0  # the multiply and its carry back


def test_dumps_show_loop_bodies_like_branches(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("PYASC_DUMP_DIR", str(tmp_path))
    k = pyasc.kernel(chip="tiny")(power)
    args = _args(rng, 2)
    k(*args)
    c = k.compile(*args)
    folder = tmp_path / f"power-{c.key_hash}"
    graph_txt = (folder / "01_graph.txt").read_text()
    assert "= Loop(%n, %v, %A) {body=@power/%0.body, carried=1, kind='for'} : f32[16]" in graph_txt
    assert "graph power/%0.body {" in graph_txt and "matmul(%A, %v)" in graph_txt
    assert "cluster" in (folder / "01_graph.dot").read_text()
    launch = [f for f in os.listdir(folder) if f.endswith("_launch.txt")]
    assert "repeat in2 (int32) times:" in (folder / launch[0]).read_text()
    assert "loop_head" in c.host_ir and "loop_body" in c.host_ir


def test_disk_cache_round_trips_a_loop_kernel(disk_cache, rng):
    args = _args(rng, 3)
    first = pyasc.kernel(chip="tiny")(power)
    assert_close(first(*args), power(*args))
    again = pyasc.kernel(chip="tiny")(power)
    assert_close(again(*args), power(*args))
    info = again.cache_info()
    assert info.disk_hits == 1 and info.misses == 0


def test_cache_key_covers_loop_structure(rng):
    def f(x):
        for i in range(12):
            x = x + i
        return x

    unrolled = pyasc.kernel(chip="tiny")(f)
    looped = pyasc.kernel(chip="tiny", unroll_budget=4)(f)  # the same source, kept as a runtime Loop
    x = rng.standard_normal(5).astype(np.float32)
    a, b = unrolled.compile(x), looped.compile(x)
    assert a.full_key != b.full_key
    assert not [n for n in a.graph.nodes if n.op == "Loop"] and [n for n in b.graph.nodes if n.op == "Loop"]
    assert_close(unrolled(x), f(x))
    assert_close(looped(x), f(x))


def test_verifier_checks_a_loop_body_signature():
    g = Graph("g")
    x = g.add_input(TensorType((4,), "float32"), name="x")
    n = g.add_input(TensorType((), "int32"), name="n")
    body = Graph("body")
    d = body.add_input(TensorType((4,), "float32"))
    body.add_input(TensorType((4,), "float32"))  # one Data too many
    body.set_outputs([d])
    loop = g.add("Loop", [n, x], {"body": body, "kind": "for", "carried": 1})
    g.set_outputs([loop.out()])
    with pytest.raises(VerificationError, match="Loop body signature mismatch"):
        verify(g)
