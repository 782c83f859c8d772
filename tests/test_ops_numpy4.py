"""numpy4's functions (ops/floatmath.py, rearrange.py, covariance.py, series.py, binning.py, lexsort.py, vdot, the
piecewise/ravel/item call forms) against numpy, several per kernel on the tiny preset, and their located errors.

They are sugar over internal ops (numpy_sugar_op), so test_golden_ops does not run them one case per op and
preset; each kernel here checks numpy's result dtype narrowed (README dtype rules) and its values."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.errors import CompileError
from conftest import assert_close


def _check(kernel, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's own warnings on 0 / 0 and the like
        got, want = kernel(*args), kernel.py_func(*args)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        try:
            assert_close(g, w.astype(dtypes.narrow(w.dtype)))
        except AssertionError as e:
            raise AssertionError(f"result {i}: {e}") from None


@pyasc.kernel(chip="tiny")
def float_math(x, y):
    frac, whole = np.modf(x)
    mant, expo = np.frexp(x)
    return (np.hypot(x, y), np.copysign(x, y), np.fmod(x, y), frac, whole, *np.divmod(x, y), np.ldexp(x, 3),
            np.float_power(np.abs(x), 1.5), np.cbrt(x), np.deg2rad(x), np.degrees(x), np.sinc(x), np.real(x),
            np.imag(x), np.conj(x), np.angle(x), np.angle(y, deg=True), mant, expo)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_math_matches_numpy(rng, dtype):
    x = (rng.standard_normal((3, 8)) * 4).astype(dtype)
    y = rng.standard_normal((3, 8)).astype(dtype)
    x[0, :6] = [0.0, -0.0, 8.0, -27.0, np.inf, 0.5]
    y[0, :4] = [-0.0, 1.0, np.inf, -np.inf]
    _check(float_math, x, y)


@pyasc.kernel(chip="tiny")
def int_math(a, n):
    return (np.left_shift(a, n), np.right_shift(a, n), np.bitwise_left_shift(a, 2), np.fmod(a, n + 1),
            np.hypot(a, n), np.cbrt(a), np.ldexp(a.astype(np.float32), n), np.deg2rad(a))


@pytest.mark.parametrize("dtype", ["int32", "int8"])
def test_int_math_matches_numpy(rng, dtype):
    a = rng.integers(-100, 100, (3, 8)).astype(dtype)
    bits = np.iinfo(dtype).bits
    n = rng.integers(0, 9, (3, 8)).astype(dtype)
    n[0, :4] = [bits - 1, bits, bits - 2, 0]  # shifts to the sign bit and past the width
    _check(int_math, a, n)


@pyasc.kernel(chip="tiny")
def rearranged(x, v):
    return (np.rot90(x), np.rot90(x, -1, axes=(1, 0)), np.dstack([x, x]), np.column_stack([v, v * 2]),
            np.resize(x, (4, 5)), np.resize(v, 7), np.delete(x, 1, axis=1), np.delete(x, (0, 2, 3)),
            np.compress([True, False, True], x, axis=0), np.insert(x, 1, 0, axis=1), np.insert(v, [0, 2, 2], 5),
            np.insert(x, 2, v[:3], axis=1), np.diagonal(x), np.diagonal(x, -1), np.pad(x, 1, mode="reflect"),
            np.pad(x, ((0, 4), (3, 1)), mode="wrap"), x.ravel(order="F"),
            *np.unravel_index(np.argmax(x, axis=1), (2, 2)), x[1:2, 2:3].item() * x)


def test_rearrangements_match_numpy(rng):
    x = (rng.standard_normal((3, 4)) * 5).astype(np.float32)
    _check(rearranged, x, (rng.standard_normal(4) * 5).astype(np.float32))


@pyasc.kernel(chip="tiny")
def sequences(x, v, i):
    return (np.cov(x, rowvar=False, bias=True), np.corrcoef(x, x[:2] * 2), np.polyval([1.0, 2.0, 3.0], x),
            np.polyval(v[:3], x), *np.gradient(x, 2.0, 3.0, edge_order=2),
            np.ediff1d(x, to_begin=0, to_end=[1, 2]), np.unwrap(x), np.nancumsum(np.where(x > 1, np.nan, x), axis=0),
            np.nancumprod(v), np.cumulative_prod(v, include_initial=True), np.digitize(x, [1.0, 0.0, -1.0], right=True),
            np.digitize(v, np.sort(v[:3])), *np.histogram(x, bins=4, range=(-2, 2)),
            np.histogram(x, bins=[-3, -1, 0, 2])[0], np.histogram(v, 3, (-1, 1), density=True)[0],
            np.isin(np.round(x), [0.0, 1.0]), np.isin(i, [1, 3], invert=True), np.choose(i % 3, [x, -x, x * 2]),
            np.lexsort((x[0], i[1])), np.vdot(x, x), np.bincount(i[0], minlength=5),
            np.bincount(i.ravel(), weights=x.ravel(), minlength=4),
            np.piecewise(x, [x < 0, x > 1], [lambda t: t * 2, lambda t: t ** 2, 7]))


def test_bincount_past_its_bins_is_a_value_error_at_run_time():
    k = pyasc.kernel(lambda i: np.bincount(i, minlength=3), chip="tiny")
    assert_close(k(np.array([0, 2, 2], np.int32)), np.array([1, 0, 2], np.int32), check_dtype=False)
    for bad in ([0, 3], [-1, 1]):  # numpy: a longer result; a ValueError
        with pytest.raises(ValueError, match=r"np.bincount: a value is negative or at least minlength"):
            k(np.array(bad, np.int32))


def test_statistics_and_sequences_match_numpy(rng):
    x = (rng.standard_normal((3, 6)) * 3).astype(np.float32)
    x[0, 0] = 2.0  # on a histogram edge
    v = (rng.standard_normal(6) * 3).astype(np.float32)
    _check(sequences, x, v, rng.integers(0, 4, (3, 6)).astype(np.int32))


@pyasc.kernel(chip="tiny")
def dtype_rules(x):
    return (np.cov(x), np.polyval([2, 1], x), np.gradient(x, axis=0), np.unwrap(x), np.digitize(x, [0, 1]),
            np.histogram(x, 3, (-1, 2))[0], np.pad(x, ((1, 0), (0, 2)), mode="edge"), np.cumulative_sum(x, axis=1))


@pytest.mark.parametrize("dtype", ["float16", "int32"])
def test_dtype_rules_match_numpy(rng, dtype):
    # float16 keeps float16 where numpy computes in it; int32 becomes float32 where numpy's float64 (narrowed)
    _check(dtype_rules, (rng.standard_normal((3, 5)) * 3).astype(dtype))


def _unique(x):
    return np.unique(x)


def _bincount(x):
    return np.bincount(x[0].astype(np.int32))


def _bincount_2d(x):
    return np.bincount(x.astype(np.int32), minlength=4)


def _histogram_no_range(x):
    return np.histogram(x, 4)


def _compress_tensor(x):
    return np.compress(x[0] > 0, x)


def _ldexp_float(x):
    return np.ldexp(x, x)


def _shift_float(x):
    return np.left_shift(x, 2)


def _gradient_order(x):
    return np.gradient(x, edge_order=3)


def _delete_range(x):
    return np.delete(x, 7, axis=1)


def _pad_mean(x):
    return np.pad(x, 1, mode="mean")


def _cumulative_no_axis(x):
    return np.cumulative_sum(x)


def _choose_float(x):
    return np.choose(x, [x, x])


def _ravel_order(x):
    return x.ravel(order="Q")


def _item_of_many(x):
    return x.item() + x


def _digitize_2d(x):
    return np.digitize(x, x)


@pytest.mark.parametrize("fn, message", [
    (_unique, r"`np.unique` has no pyasc lowering: its result's size depends on the values.*instead: np.sort"),
    (_bincount, r"bincount: the result is max\(x\) \+ 1 long, known only at run time.*give minlength=n"),
    (_bincount_2d, r"bincount: object too deep for desired array: x must be 1-d, got shape \(3, 4\)"),
    (_histogram_no_range, r"histogram: needs a compile-time range=\(lo, hi\) with an int bins: without one numpy"),
    (_compress_tensor, r"np.compress\(\): condition must be known at compile time: a tensor would make the result's"),
    (_ldexp_float, r"ldexp: the exponent x2 must be an integer tensor, got float32"),
    (_shift_float, r"left_shift: ufunc 'left_shift' not supported for the input types: integers only"),
    (_gradient_order, r"gradient: 'edge_order' greater than 2 not supported"),
    (_delete_range, r"delete: index 7 is out of bounds for axis with size 4"),
    (_pad_mean, r"pad: mode must be 'constant' or one of 'edge', 'reflect', 'symmetric', 'wrap', got mode='mean'"),
    (_cumulative_no_axis, r"cumulative_sum: axis must be specified for multi-dimensional arrays"),
    (_choose_float, r"choose: the index array a must be integers, got float32"),
    (_ravel_order, r"\.ravel\(\): order must be one of 'C', 'F', 'A', or 'K' \(got 'Q'\)"),
    (_item_of_many, r"\.item\(\) of a tensor of shape \(3, 4\): can only convert an array of size 1"),
    (_digitize_2d, r"digitize: bins must be one-dimensional, got shape \(3, 4\)"),
], ids=lambda v: getattr(v, "__name__", "")[1:] if callable(v) else "")
def test_errors_name_the_function_and_the_line(fn, message):
    with pytest.raises(CompileError, match=message) as e:
        pyasc.kernel(fn, chip="tiny").compile(np.ones((3, 4), np.float32))
    assert e.value.loc.lineno == fn.__code__.co_firstlineno + 1
