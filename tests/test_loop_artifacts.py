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
        # matmul and normalise (written in place: nothing reads the old v after it); + the initial copy
        assert body == (2 * n) and prof.launches == body + 1
        assert prof.launches_per_iteration(0) == (2.0 if n else 0.0)
        if n:
            assert "runtime loop 0: 4 iteration(s), 8 launch(es), 2.0 per iteration" in prof.summary()


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
    # the inner loop runs on the device: one launch per outer iteration runs its 2 iterations
    assert prof.device_loops == {1} and prof.loop_launches(1) == 3
    assert "runtime loop 1: 6 iteration(s) on the device, in 3 launch(es)" in prof.summary()


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


def test_optimiser_passes_run_inside_loop_bodies(rng):
    k = pyasc.kernel(chip="tiny")(power)
    art = k.compile(*_args(rng, 2))
    (loop,) = [n for n in art.graph.nodes if n.op == "Loop"]
    body = loop.attrs["body"]
    groups = {n.op: n.attrs.get("fusion_group") for n in body.nodes if n.op != "Data"}
    # fusion ran on the body: the normalisation (mul, sum, sqrt, div) is one kernel, the matmul another
    assert groups["mul"] == groups["sum"] == groups["sqrt"] == groups["div"] != groups["matmul"]
    assert "Loop(" in art.stages["inferred"] and any("body" in s for s in art.stages["ge.01.fusion"].split("\n"))


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_while_loop_in_a_dynamic_kernel(chip, rng):
    def halve_until_small(x):
        m = pyasc.abs(x).max()
        while m > 1.0:
            x = x * 0.5
            m = pyasc.abs(x).max()
        return x

    k = pyasc.kernel(chip=chip, dynamic=True)(halve_until_small)
    for shape in [(3, 7), (17, 64), (2, 4100)]:
        x = (rng.standard_normal(shape) * 40).astype(np.float32)
        assert_close(k(x), halve_until_small(x))
    assert k.cache_info().misses == 1
