"""Vector kernels on the emulator (pointwise, row, multi-pass, column and full reductions, If), sanitizer on.

Every kernel runs on both presets and is compared with its numpy reference (`py_func`); shapes are the
awkward ones: a single element, odd lengths around the 32-byte block, rows longer than the tiny chip's UB,
a prime above 10^5.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close

import kernels as K

CHIPS = ["tiny", "910b"]


def run(fn, *args, chip="tiny", **options):
    k = pyasc.kernel(fn, chip=chip, sanitize=True, **options)
    out, prof = k.profile(*args)
    ref = k.py_func(*args)
    for a, e in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        e = np.asarray(e)
        assert_close(a, e.astype(a.dtype) if e.dtype.itemsize == 8 else e)
    return k, prof


def f32(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("n", [1, 7, 31, 32, 33, 1023, 4097, 100003])
def test_pointwise_lengths(rng, chip, n):
    x, y = f32(rng, n), f32(rng, n)
    _, prof = run(K.chain, x, y, chip=chip)
    assert prof.launches == 1


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("shape,wshape", [((64, 100), (100,)), ((5, 3), (3,)), ((33, 1000), (1000,)),
                                          ((2, 3, 4), (3, 4)), ((9, 7), (9, 1))])
def test_broadcast_operands(rng, chip, shape, wshape):
    run(K.affine_relu, f32(rng, *shape), f32(rng, *wshape), f32(rng, *wshape), chip=chip)


@pytest.mark.parametrize("shapes", [((4, 1, 8), (4, 6, 8), (1, 6, 1)), ((3, 5), (), (5,)), ((), (), ())])
def test_mixed_and_scalar_broadcasts(rng, shapes):
    run(K.mixed_broadcast, *(f32(rng, *s) for s in shapes))


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "int16", "int32", "uint8"])
def test_dtypes_and_casts(rng, chip, dtype):
    x = (rng.uniform(0, 20, (3, 37))).astype(dtype)
    run(K.casts, x, chip=chip)


@pytest.mark.parametrize("chip", CHIPS)
def test_compare_select_and_int_and_bool_ops(rng, chip):
    run(K.compare_select, f32(rng, 17, 9), f32(rng, 17, 9), chip=chip)
    x, y = rng.integers(-50, 50, (6, 40)).astype(np.int32), rng.integers(1, 50, (6, 40)).astype(np.int32)
    run(K.int_ops, x, y, chip=chip)
    a, b = rng.random((5, 33)) < 0.5, rng.random((5, 33)) < 0.5
    run(K.bool_ops, a, b, chip=chip)


ROWS = [(1, 1), (7, 31), (33, 50), (4, 5000), (3, 100003 // 10)]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("rows,cols", ROWS)
def test_row_reductions(rng, chip, rows, cols):
    x, w, b = f32(rng, rows, cols), f32(rng, cols), f32(rng, cols)
    k, prof = run(K.softmax, x, chip=chip)
    assert prof.launches == 1
    run(K.layer_norm, x, w, b, chip=chip)
    run(K.rms_norm, x, w, chip=chip)
    run(K.row_stats, x, chip=chip)


def test_rows_longer_than_ub_take_several_passes(rng):
    x = f32(rng, 5, 5000)  # 20 KB rows, the tiny chip has a 16 KB UB
    k, prof = run(K.log_softmax, x)
    (dk,) = k.compile(x).kernels
    assert dk.tiling.params.mode == "multipass" and "2 reduction pass(es)" in " ".join(dk.notes)
    assert prof.launches == 1


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("shape", [(7, 5), (100, 33), (1000, 4), (513, 300)])
def test_column_reductions(rng, chip, shape):
    x = f32(rng, *shape, lo=0.5, hi=1.5)  # sums without cancellation: the summation order shows in no digit
    k, _ = run(K.col_sum, x, chip=chip)
    assert [dk.template for dk in k.compile(x).kernels] == ["column"]
    run(K.col_max, x, chip=chip)


def test_middle_and_separated_axes(rng):
    run(K.col_mean_middle, f32(rng, 3, 9, 130, lo=0.5, hi=1.5))
    k, prof = run(K.split_axes, f32(rng, 4, 6, 10, lo=0.5, hi=1.5))
    assert prof.launches == 2  # one reduction per block of axes
    run(K.softmax_axis0, f32(rng, 40, 24))


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("n", [1, 33, 100003])
def test_full_reductions_are_split_over_cores(rng, chip, n):
    x = f32(rng, n, lo=0.5, hi=1.5)
    run(K.total, x, chip=chip)
    run(K.normalize_total, x, chip=chip)


def test_a_full_reduction_of_a_large_tensor_uses_every_core(rng):
    x = f32(rng, 100003, lo=0.5, hi=1.5)
    _, prof = run(K.total, x, chip="tiny")
    assert prof.per_launch[0].blocks == 4


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("t", [-1e9, 1e9])
def test_tensor_if_launches_only_the_chosen_branch(rng, chip, t):
    x = f32(rng, 8, 8)
    _, prof = run(K.tensor_if, x, np.float32(t), chip=chip)
    assert prof.launches == 3  # the condition, one branch, the add after the If
    run(K.passthrough_if, x, np.float32(t), chip=chip)


def test_barrier_sync_mode_gives_the_same_results(rng):
    x, w, b = f32(rng, 33, 50), f32(rng, 50), f32(rng, 50)
    k, prof = run(K.layer_norm, x, w, b, sync="barrier")
    flags, _ = run(K.layer_norm, x, w, b)
    listing = k.compile(x, w, b).kernels[0].program.listing()
    assert "pipe_barrier ALL" in listing and "set_flag" not in listing


def test_zero_size_inputs(rng):
    out = pyasc.kernel(K.row_sum, chip="tiny", sanitize=True)(np.zeros((3, 0), np.float32))
    assert_close(out, np.zeros(3, np.float32))
    _, prof = run(K.chain, np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32))
    assert prof.launches == 0
