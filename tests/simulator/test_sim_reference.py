"""The hand-written reference programs against numpy, in lockstep and per-core (sanitized) execution."""
import numpy as np
import pytest

from conftest import assert_close
from simulator import Device, chips
from simulator.examples import gemm, matmul, matmul_epilogue, softmax, vector_add


@pytest.mark.parametrize("buffer_num", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_vector_add_matches_numpy_with_tails(rng, buffer_num, dtype):
    n = 3000 + 7  # not a multiple of the tile or the 32-byte block: tails everywhere
    x = (rng.standard_normal(n) * 100).astype(dtype)
    y = (rng.standard_normal(n) * 100).astype(dtype)
    z, res = vector_add.run(x, y, "tiny", buffer_num=buffer_num, sanitize=True)
    assert_close(z, x + y)
    assert res.block_dim == 4


def test_tiny_preset_forces_tiles_tails_and_several_cores(rng):
    cfg = chips.get("tiny")
    n = 5000
    t = vector_add.tiling(n, cfg, cfg.aiv_cores)
    assert t["tile"] < t["block"] < n  # several tiles per core, several cores
    assert n - (cfg.aiv_cores - 1) * t["block"] < t["block"]  # the last core gets a partial block
    assert t["block"] % t["tile"] != 0  # and a partial last tile
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    z, res = vector_add.run(x, y, cfg, sanitize=True)
    assert_close(z, x + y)
    assert res.instr_counts["vbinary.add"] > cfg.aiv_cores  # more tiles than cores
    assert len(set(res.core_cycles)) > 1  # the tail core finishes at another time


@pytest.mark.parametrize("sanitize", [False, True])
def test_lockstep_and_per_core_execution_agree_exactly(rng, sanitize):
    n = 40000 + 13
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    cfg = chips.get("910b")
    t = vector_add.tiling(n, cfg, 7)
    out = []
    for lockstep in (True, False):
        dev = Device(cfg)
        dev.upload("x", x)
        dev.upload("y", y)
        dev.alloc("z", x.nbytes)
        res = dev.launch(vector_add.build(), 7, ["x", "y", "z"], t, sanitize=sanitize, lockstep=lockstep)
        out.append((dev.read("z", np.float32), res))
    (z1, r1), (z2, r2) = out
    assert np.array_equal(z1, z2) and np.array_equal(z1, x + y)
    assert r1.cycles == r2.cycles and r1.pipe_busy == r2.pipe_busy and r1.core_cycles == r2.core_cycles
    assert r1.instr_counts == r2.instr_counts and r1.bytes_by_path == r2.bytes_by_path
    assert r2.distinct_streams < 7  # identical cores share one schedule


@pytest.mark.parametrize("shape", [(37, 100), (5, 3), (4, 64), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_softmax_matches_numpy(rng, shape, dtype):
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    y, res = softmax.run(x, "tiny", sanitize=True)
    assert_close(y, softmax.reference(x))
    np.testing.assert_allclose(y.astype(np.float64).sum(axis=-1), 1.0, rtol=2e-3 if dtype == "float16" else 1e-5)


def test_softmax_lockstep_equals_sanitized(rng):
    x = rng.standard_normal((123, 40)).astype(np.float32)
    y1, r1 = softmax.run(x, "910b", block_dim=10, sanitize=False)
    y2, r2 = softmax.run(x, "910b", block_dim=10, sanitize=True)
    assert np.array_equal(y1, y2) and r1.cycles == r2.cycles
    assert_close(y1, softmax.reference(x))


@pytest.mark.parametrize("mkn", [(40, 70, 50), (16, 16, 16), (100, 33, 65), (1, 5, 3)])
@pytest.mark.parametrize("out_dtype", ["float32", "float16"])
def test_matmul_bias_relu_matches_numpy(rng, mkn, out_dtype):
    m, k, n = mkn
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    c, res = matmul.run(a, b, bias, "tiny", out_dtype=out_dtype, sanitize=True)
    ref = matmul.reference(a, b, bias, out_dtype)
    assert_close(c, ref, rtol=1e-5 if out_dtype == "float32" else 2e-3, atol=1e-4 if out_dtype == "float32" else 2e-3)
    assert (c >= 0).all() and (ref == 0).any()
    assert res.core_type == "aic" and res.pipe_busy["M"] > 0 and res.bytes_by_path["l0c_to_gm"] == c.nbytes


def test_matmul_without_relu_and_several_k_chunks(rng):
    cfg = chips.get("tiny")
    m, k, n = 70, 200, 90  # K spans several tk chunks: accumulation in L0C
    t = matmul.tiling(m, n, k, cfg)
    assert t["tk"] < k and t["tm"] < m
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    c, res = matmul.run(a, b, bias, cfg, relu=False, sanitize=True)
    assert_close(c, matmul.reference(a, b, bias, relu=False), rtol=1e-4, atol=1e-3)
    assert (c < 0).any()
    c2, res2 = matmul.run(a, b, bias, cfg, relu=False, sanitize=False)
    assert np.array_equal(c, c2) and res.cycles == res2.cycles


def test_device_state_persists_between_launches(rng):
    dev = Device("tiny")
    x = rng.standard_normal(1000).astype(np.float32)
    z1, _ = vector_add.run(x, x, "tiny", device=dev)
    z2, _ = vector_add.run(z1, x, "tiny", device=dev)
    assert_close(z2, x + x + x, rtol=1e-6)


def _reference_runs(rng):
    x = rng.standard_normal(3000 + 5).astype(np.float16)
    s = rng.standard_normal((29, 70)).astype(np.float32)
    a = rng.standard_normal((40, 70)).astype(np.float16)
    b = rng.standard_normal((70, 50)).astype(np.float16)
    bias = rng.standard_normal(50).astype(np.float32)
    return [
        ("add x1", lambda chip, san: vector_add.run(x, x, chip, 3, 1, sanitize=san)),
        ("add x2", lambda chip, san: vector_add.run(x, x, chip, None, 2, sanitize=san)),
        ("softmax", lambda chip, san: softmax.run(s, chip, 3, sanitize=san)),
        ("matmul", lambda chip, san: matmul.run(a, b, bias, chip, None, "float16", sanitize=san)),
    ]


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_every_reference_program_gives_the_same_results_and_cycles_with_and_without_the_sanitizer(rng, chip):
    for name, run in _reference_runs(rng):
        out1, r1 = run(chip, False)
        out2, r2 = run(chip, True)
        assert np.array_equal(out1, out2), name
        assert (r1.cycles, r1.core_cycles, r1.core_pipe_busy) == (r2.cycles, r2.core_cycles, r2.core_pipe_busy), name
        assert (r1.instr_counts, r1.bytes_by_path) == (r2.instr_counts, r2.bytes_by_path), name


@pytest.mark.parametrize("shape, grid, base", [((128, 256, 256), (2, 1), (32, 64, 32, 2)),
                                               ((64, 128, 192), (1, 2), (32, 64, 32, 3))])
def test_the_double_buffered_gemm_matches_numpy(rng, shape, grid, base):
    m, n, k = shape
    a = rng.standard_normal((m, k)).astype(np.float16)
    bt = rng.standard_normal((n, k)).astype(np.float16)
    c, res = gemm.run(a, bt, "tiny", grid=grid, base=base, sanitize=True)
    assert_close(c, gemm.reference(a, bt), rtol=1e-4, atol=1e-3)
    c2, res2 = gemm.run(a, bt, "tiny", grid=grid, base=base, sanitize=False)
    assert np.array_equal(c, c2) and res.cycles == res2.cycles


def test_the_gemm_lives_off_the_l2(rng):
    # four cores share row and column panels: most of what they read comes back from L2
    cfg = chips.get("910b").replace(gm_bytes_per_cycle=60.0)  # an HBM slow enough to matter at this size
    a = rng.standard_normal((256, 512)).astype(np.float16)
    bt = rng.standard_normal((256, 512)).astype(np.float16)
    base = (64, 128, 64, 2)
    _, warm = gemm.run(a, bt, cfg, grid=(2, 2), base=base, sanitize=False)
    _, cold = gemm.run(a, bt, cfg.replace(l2_bytes=cfg.l2_line_bytes * 8), grid=(2, 2), base=base, sanitize=False)
    # with an L2 of 8 lines only what two cores read in the same transfer is fetched once for both
    assert warm.l2_hit_bytes > 0.8 * warm.gm_read_bytes and cold.l2_hit_bytes <= 0.5 * cold.gm_read_bytes
    assert warm.kernel_cycles < 0.7 * cold.kernel_cycles  # HBM carries ~0.5 MB instead of ~1 MB


def test_matmul_with_a_gelu_epilogue_in_one_mixed_launch(rng):
    a = rng.standard_normal((192, 128)).astype(np.float16)
    b = rng.standard_normal((128, 128)).astype(np.float16)
    for groups in (1, 2):
        c, res = matmul_epilogue.run(a, b, "tiny", groups=groups, sanitize=True)
        assert_close(c, matmul_epilogue.reference(a, b), rtol=1e-4, atol=1e-4)
        assert res.core_type == "mix" and res.instr_counts["vunary.gelu"] == 6 * 2
        assert res.l2_hit_bytes >= res.bytes_by_path["gm_to_ub"]  # each tile comes back from L2
