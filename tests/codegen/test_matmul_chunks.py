"""Deep L1 chunks of the matmul template: one GM -> L1 move feeding several L0 steps, in every way a step
is cut out of a chunk (whole panels, LoadData2D fractal rows, one NZ image per step), on both presets,
with the sanitizer on; and the cost model's reasons for choosing them (L2 reuse, DMA start-ups).

The tiler picks the tiling; to reach each layout on small shapes these tests keep only the candidates with
several L0 steps per chunk (the rest of the choice is still the cost model's)."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from pyasc.codegen import schedules
from pyasc.codegen.templates import matmul as matmul_template
from pyasc.codegen.templates import matmul_tiling
from simulator import chips

import matmul_kernels as K

CHIPS = ["tiny", "910b"]


def q(rng, shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 5, shape).astype(dtype)
    return (rng.integers(-8, 8, shape) / 4).astype(dtype)


@pytest.fixture
def deep_chunks(monkeypatch):
    """Only tilings with at least two L0 steps per L1 chunk (when the shape allows any)."""
    real = matmul_template.tilings

    def deep(*args, **kwargs):
        out = real(*args, **kwargs)
        return [t for t in out if t.steps > 1] or out

    monkeypatch.setattr(matmul_template, "tilings", deep)


def run(fn, *args, chip):
    # these are tests of the cube template's chunks: its bias table too (a mixed launch adds an fp16 bias on the
    # vector cores instead)
    k = pyasc.kernel(fn, chip=chip, sanitize=True, disable_passes=["mixed_kernels"])
    out, prof = k.profile(*args)
    assert_close(out, np.asarray(k.py_func(*args)))
    (dk,) = [d for d in k.compile(*args).kernels if d.template == "matmul"]
    return dk, prof


# (kernel, A shape, B shape, dtype, how the B step is cut, how the A step is cut)
CASES = [
    (K.mm, (40, 300), (300, 36), "float16", "fractals", "whole"),
    (K.mm, (33, 257), (257, 20), "float32", "pieces", "whole"),
    (K.mm, (20, 1000), (1000, 24), "int8", "pieces", "whole"),
    (K.mm, (17, 500), (500, 40), "int8", "pieces", "whole"),
    (K.mm_bt, (24, 300), (40, 300), "float16", "whole", "whole"),
    (K.mm_bt, (24, 270), (20, 270), "float32", "whole", "whole"),
    (K.mm_bt, (24, 500), (20, 500), "int8", "whole", "whole"),
    (K.mm_at, (300, 40), (300, 24), "float16", "fractals", "fractals"),
    (K.mm_abt, (300, 40), (24, 300), "float16", "whole", "fractals"),
]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fn,sa,sb,dtype,bmode,amode", CASES)
def test_deep_chunks_match_numpy(rng, deep_chunks, chip, fn, sa, sb, dtype, bmode, amode):
    a, b = q(rng, sa, dtype), q(rng, sb, dtype)
    dk, prof = run(fn, a, b, chip=chip)
    t = dk.tiling.params
    assert t.steps > 1
    mk = matmul_template.CubeMatmul("probe", 1, 1, 1, (), dtype, "float32", fn in (K.mm_at, K.mm_abt),
                                    fn in (K.mm_bt, K.mm_abt)).for_chip(chips.get(chip))
    assert (matmul_tiling.b_mode(mk, t), matmul_tiling.a_mode(mk, t)) == (bmode, amode)
    k_total = sa[0] if fn in (K.mm_at, K.mm_abt) else sa[1]
    # one mmad per L0 step of every output block: the chunks cover K exactly once
    assert prof.per_launch[-1].result.instr_counts["mmad"] == -(-k_total // t.tk) * dk.fields["T"]


@pytest.mark.parametrize("chip", CHIPS)
def test_deep_chunks_with_bias_relu_and_batches(rng, deep_chunks, chip):
    """The bias enters with the first L0 step of the first chunk only; later steps accumulate."""
    a, b, bias = q(rng, (3, 40, 300), "float16"), q(rng, (300, 36), "float16"), q(rng, (36,), "float16")
    dk, prof = run(K.bias_relu, a, b, bias, chip=chip)
    assert dk.tiling.params.steps > 1 and dk.tiling.params.tk < 300
    cube = [p.result for p in prof.per_launch if p.kernel == dk.index][0]
    assert cube.instr_counts["load_bias"] == dk.fields["T"]   # one bias per output block


def test_the_cube_is_the_busiest_pipe_of_a_large_gemm():
    """On 910b a large GEMM's chosen tiling moves deep L1 chunks: the cost model says MTE2 then keeps up
    with the cube (per-pipe busy of core 0) instead of paying a DMA start-up per L0 step."""
    a, b = np.zeros((3072, 2048), np.float16), np.zeros((2048, 2048), np.float16)
    (dk,) = pyasc.kernel(K.mm, chip="910b").compile(a, b).kernels
    t, busy = dk.tiling.params, dk.tiling.score.busy
    assert t.steps > 1
    assert max(busy, key=busy.get) == "M"
    # the one-step chunks of the same blocks, scored here (the tiler's bound may have ruled them out unscored)
    chip = chips.get("910b")
    mk = matmul_template.CubeMatmul("probe", 3072, 2048, 2048, (), "float16", "float32").for_chip(chip)
    shallow = [s for s in matmul_template.TEMPLATE.tilings(mk, chip, 2, chip.cores_of("aic"))
               if s.steps == 1 and s.tm == t.tm and s.tn == t.tn]
    scores = [schedules.score(matmul_template.schedule(mk, s, chip), {}, chip).cycles for s in shallow]
    assert scores and all(c > dk.tiling.score.cycles for c in scores)


def test_l2_reuse_estimate_counts_each_panel_once_when_everything_fits():
    chip = chips.get("910b")
    mk = matmul_template.CubeMatmul("probe", 2048, 2048, 1024, (), "float16", "float32").for_chip(chip)
    t = matmul_tiling.MatmulTiling(128, 256, 64, 2, 1, 24, 4)
    fields = {"M": 2048, "N": 2048, "K": 1024, "T": 16 * 8}
    # A and B are 4 MiB each and the L2 holds 192 MiB: each panel comes from HBM once
    assert matmul_tiling.hbm_reads(mk, t, fields, 24, chip) == 2 * 2048 * 1024 * 2
    small = chip.replace(l2_bytes=1 << 20)
    # an L2 smaller than one panel per core re-reads panels from HBM
    assert matmul_tiling.hbm_reads(mk, t, fields, 24, small) > 2 * 2048 * 1024 * 2


def test_deep_chunks_halve_a_long_k_matmul_on_tiny(rng, monkeypatch):
    """Deterministic simulated figures on tiny: the cost model's choice (L1 chunks of several L0 steps) runs
    in well under the cycles of the best tiling that moves one L0 step per GM -> L1 copy, and the cost
    model predicts both within 15% of what the emulator simulates."""
    a, b = q(rng, (128, 2048), "float16") / 8, q(rng, (2048, 128), "float16") / 8
    real = matmul_template.tilings
    results = {}
    for label, keep in (("chosen", lambda t: True), ("shallow", lambda t: t.steps == 1)):
        monkeypatch.setattr(matmul_template, "tilings", lambda *x, keep=keep, **kw: [t for t in real(*x, **kw)
                                                                                    if keep(t)])
        dk, prof = run(K.mm, a, b, chip="tiny")
        results[label] = (dk.tiling.params, dk.tiling.score.cycles, prof.cycles)
    (deep, deep_pred, deep_sim), (shallow, shallow_pred, shallow_sim) = results["chosen"], results["shallow"]
    assert deep.steps > 1 and shallow.steps == 1
    assert deep_sim < 0.7 * shallow_sim
    for pred, sim in ((deep_pred, deep_sim), (shallow_pred, shallow_sim)):
        assert abs(pred - sim) <= 0.15 * sim
