"""Integer products the cube cannot take (int16, uint8, int32, mixed int8 @ uint8) run exactly on the vector unit.

GE's `vector_integer_matmul` rewrites them into reshape -> cast -> multiply -> sum over K, which fuses into
one vector kernel. Values are chosen so that int32 sums wrap: the result must still equal numpy's bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError

import matmul_kernels as K

CHIPS = ["tiny", "910b"]


def ints(rng, shape, dtype, big=False):
    info = np.iinfo(dtype)
    lo, hi = (info.min, info.max) if big else (max(info.min, -50), min(info.max, 50))
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def run(fn, *args, chip="tiny", **options):
    k = pyasc.kernel(fn, chip=chip, sanitize=True, **options)
    out, prof = k.profile(*args)
    ref = k.py_func(*args)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)
    return k, prof


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["int16", "uint8", "int32"])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (3, 4, 5), (33, 70, 17), (64, 128, 48)])
def test_exact_products(rng, chip, dtype, mkn):
    m, k, n = mkn
    a, b = ints(rng, (m, k), dtype, big=True), ints(rng, (k, n), dtype, big=True)
    _, prof = run(K.mm, a, b, chip=chip)
    # one fused vector kernel: the (M, K, N) products never reach GM, only the result is written
    assert prof.launches == 1
    assert prof.gm_write_bytes == m * n * 4


def test_int32_sums_wrap_like_numpy(rng):
    a = np.full((2, 3), 2**30, dtype=np.int32)
    b = np.full((3, 2), 3, dtype=np.int32)
    run(K.mm, a, b)
    out = pyasc.kernel(K.mm, chip="tiny")(a, b)
    assert out[0, 0] == np.int32(2**30)    # 9 * 2**30 modulo 2**32, as numpy's int32 matmul gives
    np.testing.assert_array_equal(out, np.matmul(a, b))


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("sa,sb", [((31,), (31, 9)), ((7, 31), (31,)), ((31,), (31,)), ((3, 7, 31), (31,)),
                                   ((3, 1, 7, 31), (2, 31, 5)), ((7, 31), (3, 31, 5))])
def test_vectors_and_batches(rng, chip, sa, sb):
    run(K.mm, ints(rng, sa, "int16"), ints(rng, sb, "int16"), chip=chip)


@pytest.mark.parametrize("fn", [K.mm_at, K.mm_bt, K.mm_abt, K.mm_dot_t])
def test_transposed_operands(rng, fn):
    a = ints(rng, (9, 5) if fn in (K.mm_at, K.mm_abt) else (5, 9), "int16")
    b = ints(rng, (7, 9) if fn in (K.mm_bt, K.mm_abt, K.mm_dot_t) else (9, 7), "int16")
    run(fn, a, b)


def test_mixed_int8_uint8_promotes_to_int16(rng):
    a, b = ints(rng, (6, 10), "int8", big=True), ints(rng, (10, 4), "uint8", big=True)
    run(K.mm, a, b)
    assert pyasc.kernel(K.mm, chip="tiny")(a, b).dtype == np.int32


def test_bias_and_relu_after_the_product(rng):
    a, b, bias = ints(rng, (8, 12), "int16"), ints(rng, (12, 16), "int16"), ints(rng, (16,), "int32")
    _, prof = run(K.bias_relu, a, b, bias)
    # at most the product and the epilogue go through GM, never the (M, K, N) products
    assert prof.gm_write_bytes <= 2 * 8 * 16 * 4


def test_empty_contraction(rng):
    a, b = np.zeros((3, 0), np.int16), np.zeros((0, 4), np.int16)
    run(K.mm, a, b)
    np.testing.assert_array_equal(pyasc.kernel(K.mm, chip="tiny")(a, b), np.zeros((3, 4), np.int32))


def test_int8_stays_on_the_cube(rng):
    k = pyasc.kernel(K.mm, chip="tiny")
    a, b = ints(rng, (16, 32), "int8"), ints(rng, (32, 16), "int8")
    assert [dk.template for dk in k.compile(a, b).kernels] == ["matmul"]


def test_disabling_the_pass_gives_the_cube_error(rng):
    k = pyasc.kernel(K.mm, chip="tiny", disable_passes=["vector_integer_matmul"])
    with pytest.raises(CompileError, match=r"no NPU lowering for `matmul`.*int16 @ int16 product computes in int16"):
        k(ints(rng, (3, 4), "int16"), ints(rng, (4, 5), "int16"))
