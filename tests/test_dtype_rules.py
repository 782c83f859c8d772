"""Dtype honesty (issue 11 part 6): float64 compile-time scalars are weak, astype(int/float) are 32-bit."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.testing import assert_close

C = np.sqrt(2 / np.pi)  # a numpy float64 scalar at module level


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def scaled_by_global(x):
    return x * C + np.float64(0.5)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("fn", [gelu_tanh, scaled_by_global])
def test_float16_kernels_stay_float16(chip, fn, rng):
    x = rng.standard_normal((4, 64)).astype(np.float16)
    k = pyasc.kernel(fn, chip=chip)
    got = k(x)
    assert got.dtype == np.float16  # numpy: float64 (np.float64 scalars are strong there)
    assert fn(x).dtype == np.float64
    assert_close(got, fn(x.astype(np.float32)).astype(np.float16))
    assert all(t.dtype == "float16" for n in k.compile(x).graph.nodes for t in n.outputs
               if n.op != "Const")


def times_float32(x):
    return x * np.float32(2.0)


def test_a_float32_scalar_is_still_strong():
    x = np.ones(8, np.float16)
    assert pyasc.kernel(times_float32, chip="tiny")(x).dtype == np.float32  # as in numpy


def plus_int64(x):
    return x + np.int64(3)


def test_an_int64_scalar_is_strong_and_narrowed():
    x = np.arange(8, dtype=np.int8)
    got = pyasc.kernel(plus_int64, chip="tiny")(x)
    assert got.dtype == np.int32  # numpy: int64
    np.testing.assert_array_equal(got, x.astype(np.int32) + 3)


def as_int(x):
    return x.astype(int)


def as_float(x):
    return x.astype(float)


def zeros_float(x):
    return x + np.zeros(x.shape, dtype=float)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_python_int_and_float_dtypes_are_32_bit(chip, rng):
    x = (rng.standard_normal(40) * 50).astype(np.float32)
    got = pyasc.kernel(as_int, chip=chip)(x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, x.astype(np.int64).astype(np.int32))
    i = np.arange(40, dtype=np.int8)
    f = pyasc.kernel(as_float, chip=chip)(i)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f, i.astype(np.float32))
    h = rng.standard_normal(40).astype(np.float16)
    z = pyasc.kernel(zeros_float, chip=chip)(h)
    assert z.dtype == np.float32  # float16 + float32 zeros
    assert_close(z, h.astype(np.float32))


def as_float64(x):
    return x.astype(np.float64)


def test_an_explicit_64_bit_dtype_is_a_located_error():
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(as_float64, chip="tiny")(np.ones(4, np.float32))
    assert ("error: cast: dtype float64 is not supported; supported dtypes are float16, float32, int8, int16, "
            "int32, uint8, bool_ in `x.astype(np.float64)`") in str(info.value)


K64 = np.linspace(0, 1, 8)  # float64, as numpy makes it
KI64 = np.arange(8)  # int64


def true_div(x):
    return x / x.shape[0]


def int_mean(x):
    return np.mean(x)


def int_times_float(x):
    return x * 1.5


def int_sum(x):
    return np.sum(x)


def f16_times_captured_f64(x):
    return x * K64


def i8_plus_captured_i64(x):
    return x + KI64


# one row of the README's "Dtype rules" table each: (kernel, input, pyasc dtype, numpy dtype)
ROWS = [
    (true_div, np.arange(8, dtype=np.int32), "float32", "float64"),
    (int_mean, np.arange(8, dtype=np.int16), "float32", "float64"),
    (int_times_float, np.arange(8, dtype=np.int8), "float32", "float64"),
    (int_sum, np.arange(8, dtype=np.int8), "int32", "int64"),
    (int_sum, np.arange(8, dtype=np.uint8), "int32", "uint64"),
    (int_sum, np.arange(8) > 3, "int32", "int64"),
    (f16_times_captured_f64, np.ones(8, np.float16), "float32", "float64"),
    (i8_plus_captured_i64, np.arange(8, dtype=np.int8), "int32", "int64"),
]


@pytest.mark.parametrize("fn,x,ours,theirs", ROWS, ids=[f"{r[0].__name__}-{r[1].dtype}" for r in ROWS])
def test_the_documented_differences(fn, x, ours, theirs):
    want = fn(x)
    assert np.asarray(want).dtype == np.dtype(theirs)
    got = pyasc.kernel(fn, chip="tiny")(x)
    assert got.dtype == np.dtype(ours)
    assert_close(got, np.asarray(want).astype(ours))


def test_an_int64_argument_is_rejected_with_a_cast_hint():
    with pytest.raises(TypeError) as info:
        pyasc.kernel(int_sum, chip="tiny")(np.arange(4))
    assert "argument 'x' has dtype int64, which pyasc does not support" in str(info.value)
    assert "Convert it first, e.g. `.astype(np.int32)`." in str(info.value)
