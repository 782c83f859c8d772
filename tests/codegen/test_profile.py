"""What the profile reports, on deterministic simulated figures (no wall-clock time is asserted)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import pyasc
from pyasc.testing import assert_close

import perf_kernels as P

N = 1 << 20


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).random(N).astype(np.float32)


def profile(fn, *args, **options):
    return pyasc.kernel(fn, **options).profile(*args)[1]


def test_a_fused_kernel_moves_the_minimal_bytes(x):
    p = profile(P.chain4, x, x.copy())
    minimal = 3 * x.nbytes  # two inputs read once, one output written once
    assert p.launches == 1
    assert abs(p.gm_bytes - minimal) <= 0.02 * minimal
    # the very same array passed twice is one input (a write through one name is seen through the other)
    same = profile(P.chain4, x, x)
    assert abs(same.gm_bytes - 2 * x.nbytes) <= 0.02 * 2 * x.nbytes


def test_fusion_saves_gm_traffic(x):
    unfused, fused = profile(P.chain4, x, x, opt_level=0), profile(P.chain4, x, x, opt_level=3)
    assert unfused.launches == 4 and fused.launches == 1
    assert unfused.gm_bytes >= 2.5 * fused.gm_bytes


def test_double_buffering_overlaps_the_pipes(x):
    single = profile(P.chain4, x, x, cores=4, buffer_num=1)
    double = profile(P.chain4, x, x, cores=4, buffer_num=2)
    assert single.cycles >= 1.3 * double.cycles


def test_many_cores_beat_one_and_never_beat_the_gm_bandwidth(x):
    one, all_ = profile(P.chain4, x, x, cores=1), profile(P.chain4, x, x)
    assert all_.per_launch[0].blocks == 48
    assert one.cycles >= 5 * all_.cycles
    for p in (one, all_):
        for launch in p.per_launch:
            assert launch.result.gm_bandwidth_fraction <= 1.0


def test_profile_fields_summary_and_trace(tmp_path):
    x = np.ones((64, 128), np.float32)
    w, b = np.ones(128, np.float32), np.zeros(128, np.float32)
    out, p = pyasc.kernel(P.affine, chip="tiny").profile(x, w, b)
    np.testing.assert_array_equal(out, np.ones((64, 128), np.float32))
    assert p.cycles == sum(l.cycles for l in p.per_launch) and p.cycles > 0
    assert p.time_s == pytest.approx(p.cycles / 1.8e9)
    # each core reads the broadcast row operands once (they stay resident in its UB)
    cores = p.per_launch[0].blocks
    assert p.gm_read_bytes == x.nbytes + cores * (w.nbytes + b.nbytes) and p.gm_write_bytes == x.nbytes
    assert set(p.pipe_busy) >= {"V", "MTE2", "MTE3"}
    text = p.summary()
    assert "1 launch(es)" in text and "affine_k0" in text
    path = tmp_path / "trace.json"
    p.save_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    tracks = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {"V", "MTE2", "MTE3"} <= tracks
    assert any(e.get("ph") == "X" and e.get("name", "").startswith("copy") for e in events)


def test_profile_on_the_reference_backend_is_refused():
    k = pyasc.kernel(P.affine, backend="reference")
    with pytest.raises(ValueError, match="needs the emulator backend"):
        k.profile(np.ones((2, 3), np.float32), np.ones(3, np.float32), np.ones(3, np.float32))


def _matmul(a, b):
    return a @ b


def test_summary_reports_hbm_and_l2_traffic_separately():
    """L2 hits are not HBM traffic: counting them against the HBM bandwidth gave "147.6% of peak bandwidth"
    for a 1024^3 matmul. A chip with a narrow HBM makes the same happen on small shapes."""
    import re

    import simulator

    chip = simulator.chips.get("tiny").replace(gm_bytes_per_cycle=8)
    rng = np.random.default_rng(0)
    a, b = rng.random((128, 256)).astype(np.float16), rng.random((256, 128)).astype(np.float16)
    out, p = pyasc.kernel(_matmul, chip=chip).profile(a, b)
    assert_close(out, a @ b)
    assert p.l2_hit_bytes > 0
    assert p.hbm_bytes == p.gm_read_bytes - p.l2_hit_bytes + p.gm_write_bytes
    assert p.gm_bytes / p.time_s / p.gm_peak_bytes_per_s > 1.0     # every GM byte against HBM: over 100%
    assert 0.0 < p.gm_bandwidth_fraction <= 1.0                     # HBM bytes against HBM bandwidth
    assert 0.0 < p.l2_bandwidth_fraction <= 1.0
    text = p.summary()
    assert f"HBM {p.hbm_bytes:,} B = {p.gm_bandwidth_fraction:.1%} of HBM bandwidth" in text
    assert f"L2 hits {p.l2_hit_bytes:,} B = {p.l2_bandwidth_fraction:.1%} of L2 bandwidth" in text
    assert "peak bandwidth" not in text
    assert all(float(pct) <= 100.0 for pct in re.findall(r"([0-9.]+)% of", text))
    assert "HBM bytes" in text and "L2 hit bytes" in text
    launch = p.per_launch[0].result
    assert launch.hbm_bytes == p.hbm_bytes and launch.gm_bandwidth_fraction <= 1.0
    assert f"HBM {launch.hbm_bytes:,} B" in launch.summary()
