"""Matmul kernels on the cube cores (emulator, sanitizer on): shapes, batches, 1-D operands, transposes,
the fused epilogue (bias, ReLU, cast), vector epilogues, casts of operands, zero sizes and the tiling.

Inputs are multiples of 1/4 (floats) or small integers, so every product and partial sum is exact in the
accumulator whatever order the K chunks are added in: the comparison with `py_func` then checks the
data movement exactly, not rounding order. int8 products accumulate in int32 (`pyasc.matmul`'s contract).
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close

import matmul_kernels as K

CHIPS = ["tiny", "910b"]
DTYPES = ["float16", "float32", "int8"]


def q(rng, shape, dtype):
    """Exactly representable test values: small integers, or quarters in [-2, 2) for floats."""
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 5, shape).astype(dtype)
    return (rng.integers(-8, 8, shape) / 4).astype(dtype)


def run(fn, *args, chip="tiny", **options):
    k = pyasc.kernel(fn, chip=chip, sanitize=True, **options)
    out, prof = k.profile(*args)
    ref = k.py_func(*args)
    for a, e in zip(out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)):
        assert_close(a, np.asarray(e))
    return k, prof


def templates(k, *args):
    return [dk.template for dk in k.compile(*args).kernels]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 31, 33), (32, 32, 32), (33, 100, 7), (100, 33, 100), (31, 7, 1)])
def test_shapes(rng, chip, dtype, mkn):
    m, k, n = mkn
    kern, prof = run(K.mm, q(rng, (m, k), dtype), q(rng, (k, n), dtype), chip=chip)
    assert prof.launches == 1
    assert templates(kern, q(rng, (m, k), dtype), q(rng, (k, n), dtype)) == ["matmul"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sa,sb", [((3, 7, 31), (31, 33)), ((1, 7, 31), (1, 31, 33)), ((3, 7, 31), (3, 31, 33)),
                                   ((3, 1, 7, 31), (2, 31, 33)), ((7, 31), (3, 31, 5))])
def test_batches_and_broadcast_batches(rng, dtype, sa, sb):
    run(K.mm, q(rng, sa, dtype), q(rng, sb, dtype))


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("sa,sb", [((31,), (31, 33)), ((7, 31), (31,)), ((31,), (31,)), ((3, 7, 31), (31,)),
                                   ((31,), (2, 31, 5))])
def test_one_dimensional_operands(rng, chip, sa, sb):
    run(K.mm, q(rng, sa, "float32"), q(rng, sb, "float32"), chip=chip)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn,sa,sb", [(K.mm_bt, (7, 31), (33, 31)), (K.mm_at, (31, 7), (31, 33)),
                                      (K.mm_abt, (2, 31, 7), (33, 31)), (K.mm_dot_t, (33, 7), (17, 7))])
def test_transposed_operands(rng, chip, dtype, fn, sa, sb):
    a, b = q(rng, sa, dtype), q(rng, sb, dtype)
    kern, _ = run(fn, a, b, chip=chip)
    # no transpose kernel, except for a left operand the cube's 16-bit transpose cannot take
    expect = ["transpose", "matmul"] if fn in (K.mm_at, K.mm_abt) and dtype != "float16" else ["matmul"]
    assert templates(kern, a, b) == expect


@pytest.mark.parametrize("chip", CHIPS)
def test_bias_and_relu_are_one_launch(rng, chip):
    a, b, bias = q(rng, (33, 40), "float32"), q(rng, (40, 33), "float32"), q(rng, (33,), "float32")
    kern, prof = run(K.bias_relu, a, b, bias, chip=chip)
    assert prof.launches == 1
    (dk,) = kern.compile(a, b, bias).kernels
    assert [op.instr for op in dk.schedule.ops()].count("load_bias") == 1
    assert any(op.instr == "fixpipe" and op.args["relu"] for op in dk.schedule.ops())


@pytest.mark.parametrize("fn,dtype,bias_dtype,out,mixed", [
    (K.bias_relu_f16, "float32", "float32", ["matmul"], ["matmul"]),           # the cast on FixPipe
    (K.bias_relu_f32, "float16", "float16", ["vector", "matmul"], ["mixed"]),  # the bias table takes float32: cast
    #                                                                            first, or the vector cores add it
    (K.bias_relu, "float16", "float32", ["matmul", "vector"], ["mixed"]),     # numpy adds a float32 bias after
    #                                                                           rounding
    (K.bias_relu, "int8", "int32", ["matmul", "vector"], ["mixed"]),          # int32 accumulator: bias in the
    (K.bias_relu_f16, "int8", "int32", ["matmul", "vector"], ["mixed"]),      # epilogue
])
def test_fused_epilogue_routes(rng, fn, dtype, bias_dtype, out, mixed):
    """Separate launches without the mixed_kernels pass; one mixed cube+vector launch with it (the default)."""
    a, b, bias = q(rng, (7, 31), dtype), q(rng, (31, 33), dtype), q(rng, (33,), bias_dtype)
    kern, _ = run(fn, a, b, bias, disable_passes=["mixed_kernels"])
    assert templates(kern, a, b, bias) == out
    kern, prof = run(fn, a, b, bias)
    assert templates(kern, a, b, bias) == mixed and prof.launches == len(mixed)


def test_bias_of_a_matrix_vector_product_is_per_row(rng):
    a, b, bias = q(rng, (33, 31), "float32"), q(rng, (31,), "float32"), q(rng, (33,), "float32")
    kern, _ = run(K.bias_relu, a, b, bias)
    assert templates(kern, a, b, bias) == ["matmul", "vector"]


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fn", [K.mm_gelu, K.mm_residual, K.mm_scaled_twice])
def test_vector_epilogue_reads_the_cube_result(rng, chip, fn):
    a, b = q(rng, (7, 31), "float32"), q(rng, (31, 33), "float32")
    args = (a, b, q(rng, (7, 33), "float32")) if fn is K.mm_residual else (a, b)
    kern, prof = run(fn, *args, chip=chip, disable_passes=["mixed_kernels"])
    assert prof.launches == 2 and templates(kern, *args) == ["matmul", "vector"]
    kern, prof = run(fn, *args, chip=chip)   # the epilogue on the vector cores of the cube's launch
    assert prof.launches == 1 and templates(kern, *args) == ["mixed"]


@pytest.mark.parametrize("da,db", [("float16", "float32"), ("int8", "float16"), ("int8", "float32"),
                                   ("uint8", "float16")])
def test_mixed_operand_dtypes_are_cast_first(rng, da, db):
    a, b = q(rng, (7, 31), da).astype(da), q(rng, (31, 33), db)
    if da == "uint8":
        a = np.abs(a.astype(np.int32)).astype(np.uint8)
    kern, _ = run(K.mm, a, b)
    assert templates(kern, a, b) == ["vector", "matmul"]


@pytest.mark.parametrize("sa,sb", [((0, 4), (4, 5)), ((7, 4), (4, 0)), ((2, 0, 3), (3, 4))])
def test_empty_outputs_launch_nothing(rng, sa, sb):
    _, prof = run(K.mm, q(rng, sa, "float32"), q(rng, sb, "float32"))
    assert prof.launches == 0


def test_empty_contraction_is_zeros(rng):
    # a contraction over nothing reads nothing: the optimiser makes it a constant (ge.pattern), no launch
    _, prof = run(K.mm, q(rng, (7, 0), "float32"), q(rng, (0, 5), "float32"))
    assert prof.launches == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_k_accumulates_in_l0c(rng, dtype):
    a, b = q(rng, (20, 1000), dtype), q(rng, (1000, 24), dtype)
    if dtype == "float16":  # keep the sums exact in float16 as well
        a, b = np.abs(a), np.abs(b) / 2
    kern, prof = run(K.mm, a, b)
    (dk,) = kern.compile(a, b).kernels
    tk = dk.tiling.params.tk
    assert tk < 1000
    (launch,) = prof.per_launch
    blocks = dk.fields["T"]  # output blocks of all cores
    assert launch.result.instr_counts["mmad"] == -(-1000 // tk) * blocks > blocks


def test_blocks_are_split_over_the_cube_cores_and_capped(rng):
    a, b = q(rng, (100, 64), "float16"), q(rng, (64, 100), "float16")
    k = pyasc.kernel(K.mm, chip="910b")
    (dk,) = k.compile(a, b).kernels
    assert dk.core_type == "aic" and dk.tiling.score.blocks > 1
    (capped,) = pyasc.kernel(K.mm, chip="910b", cores=1).compile(a, b).kernels
    assert capped.tiling.score.blocks == 1
    run(K.mm, a, b, chip="910b", cores=3)


def test_tiling_choice_is_recorded_and_buffer_num_caps_it(rng):
    a, b = q(rng, (64, 256), "float16"), q(rng, (256, 64), "float16")
    (dk,) = pyasc.kernel(K.mm, chip="tiny").compile(a, b).kernels
    assert dk.tiling.others and "base " in dk.tiling.text()
    (single,) = pyasc.kernel(K.mm, chip="tiny", buffer_num=1).compile(a, b).kernels
    assert single.tiling.params.buffer_num == 1 and single.tiling.params.l0c_slots == 1
    assert all(c.params.buffer_num == 1 for c in single.tiling.others)
    run(K.mm, a, b, buffer_num=1)


def test_dynamic_shapes_compile_once(rng):
    k = pyasc.kernel(K.bias_relu, chip="tiny", dynamic=True, sanitize=True)
    for m, kk, n in [(7, 31, 33), (40, 9, 17), (2, 64, 16)]:
        a, b, bias = q(rng, (m, kk), "float32"), q(rng, (kk, n), "float32"), q(rng, (n,), "float32")
        assert_close(k(a, b, bias), k.py_func(a, b, bias))
    assert k.cache_info().misses == 1
