"""Calling a kernel: argument binding, conversion, call-time errors, outputs."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc

from conftest import assert_close


@pyasc.kernel(chip="tiny")
def axpy(a, x, y):
    return a * x + y


@pyasc.kernel(chip="tiny")
def scale(x, factor=2.0):
    return x * factor


@pyasc.kernel(chip="tiny")
def pair(x, y):
    return x + y, x * y


@pyasc.kernel(chip="tiny")
def total(x):
    return pyasc.sum(x)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class ArrayLike:
    """Exposes only __array__ (like many array libraries)."""

    def __init__(self, arr):
        self._arr = arr

    def __array__(self, dtype=None, copy=None):
        return self._arr if dtype is None else self._arr.astype(dtype)


class DLPackOnly:
    """Exposes only the DLPack protocol."""

    def __init__(self, arr):
        self._arr = arr

    def __dlpack__(self, **kwargs):
        return self._arr.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._arr.__dlpack_device__()


# ---- results ----------------------------------------------------------------------------


def test_call_matches_py_func():
    x, y = f32(4, 8), f32(4, 8, seed=1)
    out = axpy(3.0, x, y)
    assert isinstance(out, np.ndarray)
    assert_close(out, axpy.py_func(3.0, x, y))


def test_keyword_arguments_and_defaults():
    x = f32(3, 5)
    assert_close(scale(x), x * np.float32(2.0))
    assert_close(scale(x, factor=0.5), x * np.float32(0.5))
    assert_close(scale(factor=-1.0, x=x), -x)


def test_tuple_return():
    x, y = f32(2, 3), f32(2, 3, seed=1)
    out = pair(x, y)
    assert isinstance(out, tuple) and len(out) == 2
    assert_close(out[0], x + y)
    assert_close(out[1], x * y)


def test_reduction_to_scalar_returns_a_0d_array():
    x = f32(4, 4)
    out = total(x)
    assert isinstance(out, np.ndarray) and out.shape == ()
    assert_close(out, np.asarray(total.py_func(x)))


def test_numpy_scalar_is_a_0d_tensor():
    x, y = f32(4), f32(4, seed=1)
    out = axpy(np.float32(2.5), x, y)
    assert_close(out, np.float32(2.5) * x + y)
    key = axpy.compile(np.float32(2.5), x, y).signature
    assert "a: f32[]" in key


def test_outputs_are_fresh_writable_arrays():
    x = f32(3, 3)
    y = np.zeros((3, 3), np.float32)
    out = axpy(1.0, x, y)
    assert out.flags.writeable and not np.shares_memory(out, x) and not np.shares_memory(out, y)
    out[...] = 7  # writing the result never touches the inputs
    assert not (x == 7).any()


# ---- conversion ---------------------------------------------------------------------------


def test_inputs_are_never_modified():
    x, y = f32(8, 8), f32(8, 8, seed=1)
    x0, y0 = x.copy(), y.copy()
    axpy(2.0, x, y)
    pair(x, y)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    assert x.flags.writeable and y.flags.writeable  # and the caller's arrays stay writable


def test_non_contiguous_inputs_are_accepted():
    base = f32(8, 10)
    x = base[:, ::2]          # strided
    y = base[:5, :5].T        # transposed (Fortran order)
    assert not x.flags.c_contiguous and not y.flags.c_contiguous
    before = base.copy()
    assert_close(pair(x[:5, :5], y)[0], x[:5, :5] + y)
    np.testing.assert_array_equal(base, before)


def test_big_endian_input_is_converted():
    x = f32(4).astype(">f4")
    y = f32(4, seed=1)
    assert_close(axpy(1.0, x, y), x.astype(np.float32) + y)


@pytest.mark.parametrize("shape", [(0,), (0, 4), (3, 0)])
def test_zero_size_tensors_return_what_numpy_would(shape):
    x = np.zeros(shape, np.float32)
    out = axpy(2.0, x, x)
    ref = axpy.py_func(2.0, x, x)
    assert out.shape == ref.shape and out.dtype == ref.dtype


def test_zero_size_sum_is_zero_like_numpy():
    x = np.zeros((0, 3), np.float32)
    assert_close(total(x), np.asarray(np.sum(x, dtype=np.float32)))


def test_array_like_objects_are_converted():
    x, y = f32(3, 4), f32(3, 4, seed=1)
    assert_close(axpy(2.0, ArrayLike(x), y), 2.0 * x + y)
    assert_close(axpy(2.0, x, DLPackOnly(y)), 2.0 * x + y)


def test_dlpack_object_with_unsupported_dtype_is_reported():
    with pytest.raises(TypeError, match="'x' has dtype float64"):
        axpy(2.0, DLPackOnly(np.zeros(3)), f32(3))


def test_failing_array_like_names_the_argument():
    class Broken:
        def __array__(self, dtype=None, copy=None):
            raise RuntimeError("device memory")

    with pytest.raises(TypeError, match="argument 'y': could not convert Broken.*device memory"):
        axpy(1.0, f32(2), Broken())


# ---- call-time errors ------------------------------------------------------------------


@pytest.mark.parametrize("args,kwargs,words", [
    ((1.0, np.zeros(2, np.float32)), {}, "axpy() missing 1 required positional argument: 'y'"),
    ((1.0, np.zeros(2, np.float32), np.zeros(2, np.float32), 4), {},
     "axpy() takes 3 positional arguments but 4 were given"),
    ((1.0,), {"x": 1, "y": 2, "z": 3}, "axpy() got an unexpected keyword argument 'z'"),
    ((1.0, 2.0), {"a": 3.0, "y": 1}, "axpy() got multiple values for argument 'a'"),
])
def test_wrong_arguments_raise_pythons_own_type_error(args, kwargs, words):
    with pytest.raises(TypeError) as info:
        axpy(*args, **kwargs)
    assert str(info.value) == words


@pytest.mark.parametrize("dtype,suggest", [
    (np.float64, ".astype(np.float32)"),
    (np.int64, ".astype(np.int32)"),
    (np.uint32, ".astype(np.int32)"),
    (np.complex64, ".astype(np.float32)"),
])
def test_unsupported_dtypes(dtype, suggest):
    bad = np.zeros(4, dtype)
    with pytest.raises(TypeError) as info:
        axpy(1.0, bad, np.zeros(4, np.float32))
    msg = str(info.value)
    assert f"argument 'x' has dtype {np.dtype(dtype).name}" in msg
    assert "float16, float32, int8, int16, int32, uint8, bool_" in msg
    assert suggest in msg


def test_complex_says_complex_is_unsupported():
    with pytest.raises(TypeError, match=r"Complex numbers are not supported.*\.real\.astype\(np\.float32\)"):
        axpy(1.0, np.zeros(2, np.complex128), np.zeros(2, np.float32))


def test_float64_numpy_scalar_is_rejected_like_an_array():
    with pytest.raises(TypeError, match="argument 'a' has dtype float64"):
        axpy(np.float64(2.0), f32(2), f32(2))


def test_string_array_is_rejected_without_a_cast_hint():
    with pytest.raises(TypeError) as info:
        axpy(1.0, np.array(["a", "b"]), f32(2))
    assert "has dtype <U1" in str(info.value) and "astype" not in str(info.value)


@pytest.mark.parametrize("value,words", [
    ({1.0, 2.0}, "is a builtins.set"),
    (object(), "is a builtins.object"),
])
def test_unsupported_objects(value, words):
    # (lists and dicts are pytrees: tests/test_pytree.py)
    with pytest.raises(TypeError) as info:
        axpy(1.0, value, f32(2))
    msg = str(info.value)
    assert "argument 'x'" in msg and words in msg and "numpy array" in msg and "pytree" in msg
    if isinstance(value, set):
        assert "a set has no order" in msg


def test_argument_errors_carry_no_internal_frames():
    import traceback

    with pytest.raises(TypeError) as info:
        axpy(1.0, np.zeros(2), f32(2))
    files = [f.filename for f in traceback.extract_tb(info.value.__traceback__)]
    assert not any("pyasc/runtime/specialize.py" in f.replace("\\", "/") for f in files)


# ---- compile-time arguments ------------------------------------------------------------


def test_constexpr_annotation_makes_an_array_compile_time():
    @pyasc.kernel(chip="tiny")
    def shift(x, table: pyasc.constexpr):
        return x + table

    x = f32(4)
    table = np.arange(4, dtype=np.float32)
    assert_close(shift(x, table), x + table)
    c = shift.compile(x, table)
    assert "table=array[4]<float32>" in c.signature
    assert shift.cache_info().misses == 1


def test_constexpr_rejects_unhashable_objects():
    @pyasc.kernel(chip="tiny")
    def f(x, n: pyasc.constexpr):
        return x

    with pytest.raises(TypeError, match="'n' is annotated pyasc.constexpr but got a dict"):
        f(f32(2), {})


def test_dtype_argument_is_compile_time():
    @pyasc.kernel(chip="tiny")
    def to(x, dtype):
        return pyasc.cast(x, dtype)

    x = f32(5)
    out = to(x, np.int32)
    assert out.dtype == np.int32
    assert_close(out, x.astype(np.int32))
    assert to(x, pyasc.float16).dtype == np.float16
    assert to.cache_info().misses == 2


def test_constexpr_annotation_as_an_object_and_as_text():
    # this module uses `from __future__ import annotations`, so annotations are text here;
    # a module without it gives the class itself
    def shift(x, table):
        return x + table

    shift.__annotations__ = {"table": pyasc.constexpr}
    k = pyasc.kernel(chip="tiny")(shift)
    x, table = f32(3), np.ones(3, np.float32)
    assert_close(k(x, table), x + 1)
    assert "table=array[3]<float32>" in k.compile(x, table).signature

    def shift2(x, table: pyasc.constexpr):
        return x + table

    assert shift2.__annotations__["table"] == "pyasc.constexpr"
    k2 = pyasc.kernel(chip="tiny")(shift2)
    assert "table=array[3]<float32>" in k2.compile(x, table).signature


def test_comparison_functions_use_numpy_names_and_pyasc_ge_is_the_optimiser():
    # `pyasc.ge` is the optimiser package; the comparison ops are exported under numpy's names
    import types

    assert isinstance(pyasc.ge, types.ModuleType) and hasattr(pyasc.ge, "optimize")
    assert pyasc.greater_equal(np.array([2, 0]), np.array([1, 1])).tolist() == [True, False]
    assert not hasattr(pyasc, "lt") and pyasc.less(1, 2)


TWO = np.array([2.0], np.float32)


@pyasc.kernel
def scalar_and_one_element_constants(x):
    return x + 2.0, x + TWO


def test_0d_and_one_element_constants_keep_their_shapes():
    # the optimiser's CSE once merged the two constants (their keys ignored 0-d), making both results 0-d
    got = scalar_and_one_element_constants(np.float32(1.0))
    assert [a.shape for a in got] == [(), (1,)]
    assert_close(got[1], np.array([3.0], np.float32))
