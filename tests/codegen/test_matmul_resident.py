"""A's row panel resident in L1 (`MatmulTiling.a_resident`): a core whose run of output blocks stays in one row
panel loads A's panel once, chunk by chunk in the panel's first block, and then reads only B from GM. Both
presets, odd sizes, tails, batches, bias, the mixed launch; the sanitizer on.

The tiler offers the option only where a step's mmad outlasts its L1 -> L0 moves (on tiny, hardly ever); to
run the schedule on small shapes these tests turn every double-buffered candidate whose panel fits into its
resident variant (the rest of the choice is still the cost model's)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from pyasc.codegen.templates import matmul as matmul_template
from pyasc.codegen.templates import matmul_tiling
from simulator import chips

import matmul_kernels as K
from test_matmul_chunks import q   # small exact values of each dtype

CHIPS = ["tiny", "910b"]


@pytest.fixture
def resident(monkeypatch):
    """Only resident tilings (when the shape allows any)."""
    real = matmul_template.tilings

    def keep(mk, chip, *args, **kwargs):
        out = real(mk, chip, *args, **kwargs)
        if not isinstance(mk.K, int) or mk.transpose_a:
            return out
        made = [replace(t, a_resident=True) for t in out if t.buffer_num == 2 and
                -(-mk.K // t.kl1) <= matmul_tiling.MAX_RESIDENT_CHUNKS]
        return [t for t in made if matmul_tiling.fits(mk, t, chip)] or out

    monkeypatch.setattr(matmul_template, "tilings", keep)


def run(fn, *args, chip, mixed=False):
    k = pyasc.kernel(fn, chip=chip, sanitize=True, disable_passes=[] if mixed else ["mixed_kernels"])
    out, prof = k.profile(*args)
    assert_close(out, np.asarray(k.py_func(*args)))
    kernels = k.compile(*args).kernels
    (dk,) = [d for d in kernels if d.template == ("mixed" if mixed else "matmul")]
    cube = [p.result for p in prof.per_launch if p.kernel == dk.index][0]
    return dk, cube


def a_panels(total_blocks: int, cores: int, nnb: int) -> int:
    """Row panels the cores' runs of blocks start (each core's first block, and every block at column 0)."""
    per = -(-total_blocks // cores)
    return sum(1 for t in range(total_blocks) if t % per == 0 or t % nnb == 0)


# (kernel, A shape, B shape, dtype): the first two wide enough for several blocks per core on 910b too
WIDE = [(K.mm, (40, 136), (136, 1000), "float16"), (K.mm, (17, 72), (72, 610), "float16")]
NARROW = [(K.mm, (33, 100), (100, 60), "float32"), (K.mm, (20, 200), (200, 130), "int8"),
          (K.mm_bt, (24, 120), (90, 120), "float16")]
CASES = [(chip, *c) for c in WIDE for chip in CHIPS] + [("tiny", *c) for c in NARROW]


@pytest.mark.parametrize("chip,fn,sa,sb,dtype", CASES)
def test_a_resident_panel_matches_numpy_and_reads_a_once_per_panel(rng, resident, chip, fn, sa, sb, dtype):
    a, b = q(rng, sa, dtype), q(rng, sb, dtype)
    dk, cube = run(fn, a, b, chip=chip)
    t = dk.tiling.params
    assert t.a_resident
    M, N, K_ = sa[0], sb[1] if fn is K.mm else sb[0], sa[1]
    nmb, nnb = -(-M // t.tm), -(-N // t.tn)
    total = nmb * nnb
    cores = -(-total // -(-total // t.cores))
    # one mmad per L0 step of every block; A chunks only where a panel starts
    assert cube.instr_counts["mmad"] == -(-K_ // t.tk) * total
    if dtype == "float16":   # (float32 and int8 B chunks may take fill copies or pieces: a count of their own)
        b_moves = -(-K_ // t.kl1) * total
        assert cube.instr_counts["copy_nd2nz"] == b_moves + -(-K_ // t.kl1) * a_panels(total, cores, nnb)


@pytest.mark.parametrize("chip", CHIPS)
def test_a_resident_panel_with_bias_relu_and_batches(rng, resident, chip):
    """A batch index changes the panel: it is loaded again at each batch's first block."""
    a, b, bias = q(rng, (3, 40, 100), "float16"), q(rng, (100, 120), "float16"), q(rng, (120,), "float16")
    dk, _ = run(K.bias_relu, a, b, bias, chip=chip)
    assert dk.tiling.params.a_resident or chip == "910b"


@pytest.mark.parametrize("chip", CHIPS)
def test_a_resident_panel_in_a_mixed_launch(rng, resident, chip):
    a, b = q(rng, (48, 144), "float16"), q(rng, (144, 200), "float16")
    dk, _ = run(K.mm_gelu, a, b, chip=chip, mixed=True)
    assert dk.tiling.params.cube.a_resident or chip == "910b"


def test_the_tiler_offers_a_resident_panel_where_the_cube_paces_the_steps():
    chip = chips.get("910b")
    mk = matmul_template.CubeMatmul("probe", 512, 3072, 768, (), "float16", "float16").for_chip(chip)
    offered = [t for t in matmul_template.tilings(mk, chip, 2, chip.aic_cores, {}) if t.a_resident]
    # 128x128 blocks (the cube paces their steps) are offered it, 128x64 ones (MTE1 does) are not
    assert any((t.tm, t.tn) == (128, 128) for t in offered)
    assert not any((t.tm, t.tn) == (128, 64) for t in offered)
    # a K that takes more chunks than a panel may hold: none
    deep = matmul_template.CubeMatmul("probe", 512, 3072, 8192, (), "float16", "float16").for_chip(chip)
    assert not [t for t in matmul_template.tilings(deep, chip, 2, chip.aic_cores, {}) if t.a_resident]
