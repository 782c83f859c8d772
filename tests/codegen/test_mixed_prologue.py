"""A matmul's A operand computed by its producer kernel inside the matmul's mixed launch (sanitizer on).

GE's `matmul_prologue` pass merges the kernel computing A (a layer norm, a cast and a scale) into the matmul's
kernel; the mixed launch runs it on the vector cores before the cube (templates/mixed_prologue.py). Golden
against `py_func` on odd sizes; refusals fall back to separate launches with the reason in the fusion log.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from test_mixed import _run as run_mixed, _vals
from pyasc.codegen.route import route
from pyasc.codegen.schedule import When, iter_ops
from pyasc.target import get_chip


def ln_mm_gelu(x, g, b, w, bias):
    return pyasc.gelu(pyasc.layer_norm(x, g, b) @ w + bias)


def rms_mm_residual(x, g, w, r):
    return pyasc.rms_norm(x, g) @ w + r


def scaled_mm(x, w, bias):
    return pyasc.relu((x.astype(np.float16) * 0.5) @ w + bias)


def ln_returned(x, g, b, w, bias):
    h = pyasc.layer_norm(x, g, b)
    return h, pyasc.gelu(h @ w + bias)


def column_sum_operand(x, w, bias):
    return pyasc.gelu(pyasc.sum(x, axis=0) @ w + bias)     # A reduces x's leading axis: not row-local


def ln_mm(x, g, b, w):
    return pyasc.layer_norm(x, g, b) @ w


def _run(fn, *args, chip="tiny", **options):
    """Golden against py_func (test_mixed's check); the compiled artifact and the profile."""
    k, prof = run_mixed(fn, *args, chip=chip, **options)
    return k.compile(*args), prof


def _log(art):
    return art.stages["fusion_log"]


@pytest.mark.parametrize("chip", ["tiny"])
def test_layer_norm_prologue_shares_the_mixed_launch(rng, chip):
    m, k, n = 33, 80, 40
    args = (_vals(rng, (m, k)), _vals(rng, (k,)) + 1, _vals(rng, (k,)), _vals(rng, (k, n)), _vals(rng, (n,)))
    art, prof = _run(ln_mm_gelu, *args, chip=chip)
    assert prof.launches == 1
    (dk,) = art.kernels
    assert dk.template == "mixed" and "A's producer" in " ".join(dk.notes)
    assert "as the prologue of its A operand" in _log(art)


@pytest.mark.parametrize("fn,shapes", [
    (rms_mm_residual, [(7, 48), (48,), (48, 40), (7, 40)]),
    (scaled_mm, [(7, 48), (48, 40), (40,)]),
    (ln_mm_gelu, [(2, 5, 48), (48,), (48,), (48, 40), (40,)]),
])
def test_prologues_golden(rng, fn, shapes):
    dtypes = ["float32" if fn is scaled_mm and i == 0 else "float16" for i in range(len(shapes))]
    args = tuple(_vals(rng, s, d) for s, d in zip(shapes, dtypes))
    art, prof = _run(fn, *args)
    assert [dk.template for dk in art.kernels] == ["mixed"] and prof.launches == 1


def test_refusals_fall_back_to_separate_launches(rng):
    args = (_vals(rng, (7, 48)), _vals(rng, (48,)), _vals(rng, (48,)), _vals(rng, (48, 40)), _vals(rng, (40,)))
    art, prof = _run(ln_returned, *args)
    assert prof.launches == 2
    assert "as the prologue of fused_matmul" in _log(art) and "A is also a result of the graph" in _log(art)
    args = (_vals(rng, (3, 7, 48)), _vals(rng, (48, 40)), _vals(rng, (40,)))
    art, prof = _run(column_sum_operand, *args)
    assert "not fused: sum %0 as the prologue of fused_matmul %1: not row-local: A comes from a column reduce kernel" \
        in _log(art) and prof.launches == 2


def test_a_plain_product_keeps_its_producer_apart(rng):
    args = (_vals(rng, (9, 48)), _vals(rng, (48,)), _vals(rng, (48,)), _vals(rng, (48, 40)))
    art, prof = _run(ln_mm, *args)
    assert "the product has no vector epilogue" in _log(art)
    assert [dk.template for dk in art.kernels] == ["vector", "matmul"] and prof.launches == 2


def test_without_a_mixed_launch_the_prologue_is_a_vector_launch_first(rng):
    args = (_vals(rng, (7, 48)), _vals(rng, (48,)), _vals(rng, (48,)), _vals(rng, (48, 40)), _vals(rng, (40,)))
    (dk,) = pyasc.kernel(ln_mm_gelu, chip="tiny").compile(*args).kernels
    plan = dk.plan
    assert plan.prologue is not None and plan.mixed
    plan.mixed = False     # what the generator falls back to when the mixed launch does not lower
    jobs = route("k", plan, get_chip("tiny"))
    # A's producer, the float16 bias cast for the bias table, the cube, the epilogue
    assert [j.template for j in jobs] == ["vector", "vector", "matmul", "vector"]
    a = plan.anchor_node.inputs[0]
    assert jobs[0].outputs == [a] and jobs[2].inputs[0] == a and a in jobs[2].options["scratch"]


@pytest.mark.parametrize("off", ["matmul_prologue", "mixed_kernels"])
def test_the_pass_turns_off(rng, off):
    args = (_vals(rng, (7, 48)), _vals(rng, (48,)), _vals(rng, (48,)), _vals(rng, (48, 40)), _vals(rng, (40,)))
    art, prof = _run(ln_mm_gelu, *args, disable_passes=[off])
    assert "as the prologue" not in _log(art)
    assert prof.launches == (2 if off == "matmul_prologue" else 4)   # apart: the bias cast is a launch too


def sliced_scaled_mm(x, w, bias):
    return pyasc.relu(x[:, :40] * 0.5 @ w + bias)   # the prologue reads a slice of x through strides


def test_a_prologue_reading_a_view_of_its_input(rng):
    args = (_vals(rng, (6, 48)), _vals(rng, (40, 24)), _vals(rng, (24,)))
    kern, prof = run_mixed(sliced_scaled_mm, *args)
    assert prof.launches == 1
    log = kern.compile(*args).fusion_log
    assert any(d.startswith("fused: views slice") for d in log)
    assert any("as the prologue of its A operand" in d for d in log)


@pytest.mark.parametrize("m,k,n", [(33, 80, 40), (70, 48, 200), (1, 48, 24), (5, 272, 40)])
def test_b_is_loaded_ahead_of_the_barrier(rng, m, k, n):
    # B does not come from the prologue: the cube core loads its first block's first chunk of it before it waits
    # for A, and skips that load in its loop (golden under the sanitizer: one block per core or several, a
    # core without blocks, K in one chunk or several)
    args = (_vals(rng, (m, k)), _vals(rng, (k,)) + 1, _vals(rng, (k,)), _vals(rng, (k, n)), _vals(rng, (n,)))
    art, prof = _run(ln_mm_gelu, *args)
    assert prof.launches == 1
    (dk,) = art.kernels
    ahead, barrier = dk.schedule.aic.body[:2]
    assert isinstance(ahead, When) and barrier.instr == "sync_all"
    assert {op.args["src"].param for op in iter_ops(ahead.body)} == {"in1"}
    assert any("loaded ahead" in note for note in dk.schedule.aic.notes)
