"""numpy6's functions (ops/trig.py, signs.py, ...) against numpy, several per kernel on the tiny preset, with the
special values (NaN, +-inf, -0.0, ties), numpy's result dtypes narrowed (README dtype rules) and located errors.

Like numpy4's, they are sugar over internal ops (numpy_sugar_op), so test_golden_ops does not run them."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.errors import CompileError
from conftest import assert_close


def _check(kernel, *args, signed_zeros=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's own warnings on log(0), arctanh(1), ...
        got, want = kernel(*args), kernel.py_func(*args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        w = w.astype(dtypes.narrow(w.dtype))
        try:
            assert_close(g, w)
            if signed_zeros and w.dtype.kind == "f":  # assert_close reads -0.0 as 0.0: numpy's sign of zero too
                zero = w == 0
                assert (np.signbit(g[zero]) == np.signbit(w[zero])).all(), f"signs of zeros differ: {g} vs {w}"
        except AssertionError as e:
            raise AssertionError(f"result {i}: {e}") from None


@pyasc.kernel(chip="tiny")
def trig_and_signs(x, y):
    return (np.tan(x), np.arctan2(x, y), np.atan2(y, x), np.arcsinh(x), np.asinh(y), np.arccosh(np.abs(x) + 1),
            np.acosh(x), np.arctanh(x / 8), np.atanh(y), np.fabs(x), np.positive(x), np.signbit(x),
            np.logaddexp2(x, y), np.isneginf(x), np.isposinf(y), np.atan(x), np.asin(y), np.acos(y), np.sinh(y))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_trig_and_sign_functions_match_numpy(rng, dtype):
    x = (rng.standard_normal((3, 7)) * 4).astype(dtype)
    y = rng.uniform(-1, 1, (3, 7)).astype(dtype)
    x[0] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5707964, -1.0]  # tan beside pi/2
    y[0] = [-0.0, -0.0, -np.inf, np.inf, 1.0, 1.0, -1.0]  # atan2's signed zeros and infinities; atanh(+-1)
    x[1, :4] = [1e-5, 5000.0 if dtype == "float32" else 60000.0, 1.0, -4.0]  # asinh near 0 and far out
    y[1, :2] = [1e-5, -4.0]  # logaddexp2's tie with x (-4, -4)
    _check(trig_and_signs, x, y)


@pyasc.kernel(chip="tiny")
def arctan2_quadrants(y, x):
    return np.arctan2(y, x)


def test_arctan2_every_pair_of_special_values():
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, np.nan, 3e38, -1e-38], np.float32)
    y, x = np.meshgrid(special, special)
    _check(arctan2_quadrants, y, x)


@pyasc.kernel(chip="tiny")
def accuracy(x, t):
    return np.tan(t), np.arcsinh(x), np.arccosh(np.abs(x)), np.arctanh(np.tanh(x / 4))


def test_float32_accuracy_within_a_few_ulps(rng):
    x = np.concatenate([rng.uniform(-9, 9, 60), np.geomspace(1e-8, 3e37, 30), -np.geomspace(1e-6, 1e4, 30)])
    x = x.astype(np.float32).reshape(4, 30)
    t = np.concatenate([rng.uniform(-1e3, 1e3, 100), np.pi / 2 + np.arange(-10, 10) * 1e-7]).astype(np.float32)
    got = accuracy(x, t.reshape(4, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = accuracy.py_func(x, t.reshape(4, 30))
    for g, w in zip(got, want):
        finite = np.isfinite(w)
        assert (np.isnan(g) == np.isnan(w)).all() and (g[np.isinf(w)] == w[np.isinf(w)]).all()
        ulps = np.abs(g[finite].astype(np.float64) - w[finite]) / np.spacing(np.abs(w[finite]))
        assert ulps.max() <= 4, ulps.max()


@pyasc.kernel(chip="tiny")
def integer_functions(a, b):
    return (np.gcd(a, b), np.lcm(a, b), np.lcm(6, b), np.fabs(a), np.signbit(a), np.positive(a),
            np.isposinf(a), np.isneginf(b), np.arctan2(a, b), np.tan(b % 16), np.logaddexp2(a, b), np.gcd(a, b > 0))


@pytest.mark.parametrize("dtype", ["int32", "int8"])
def test_integer_functions_match_numpy(rng, dtype):
    a = rng.integers(-60, 60, (3, 9)).astype(dtype)
    b = rng.integers(-60, 60, (3, 9)).astype(dtype)
    a[0, :5] = [0, 0, 34, -21, -128 if dtype == "int8" else 1836311903]  # Fibonacci pairs: Euclid's longest
    b[0, :5] = [0, 7, 55, 13, 6 if dtype == "int8" else 1134903170]
    _check(integer_functions, a, b)


def _gcd_float(x):
    return np.gcd(x, 2)


def _lcm_bool(x):
    return np.lcm(x > 0, x > 1)


def _positive_bool(x):
    return np.positive(x > 0)


def _nanquantile_range(x):
    return np.nanquantile(x, 1.5)


def _nanpercentile_symbolic_q(x):
    return np.nanpercentile(x, x[0, 0])


def _vecdot_sizes(x):
    return np.vecdot(x, x[:, :3])


def _matvec_sizes(x):
    return np.matvec(x, x[0, :3])


def _vander_2d(x):
    return np.vander(x)


def _rollaxis_start(x):
    return np.rollaxis(x, 0, 5)


def _unpackbits_float(x):
    return np.unpackbits(x)


def _packbits_float(x):
    return np.packbits(x)


def _packbits_order(x):
    return np.packbits(x > 0, bitorder="middle")


@pytest.mark.parametrize("fn, message", [
    (_gcd_float, r"gcd: ufunc 'gcd' did not contain a loop with signature matching types float32 and float32: "
                 "integers only"),
    (_lcm_bool, r"lcm: ufunc 'lcm' did not contain a loop with signature matching types bool and bool"),
    (_positive_bool, r"positive: ufunc 'positive' did not contain a loop with signature matching types bool"),
    (_nanquantile_range, r"Quantiles must be in the range \[0, 1\]"),
    (_nanpercentile_symbolic_q, r"argument `q` of np.nanpercentile must be a compile-time value"),
    (_vecdot_sizes, r"vecdot: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                    r"\(n\),\(n\)->\(\) \(size 3 is different from 4\)"),
    (_matvec_sizes, r"matvec: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                    r"\(m,n\),\(n\)->\(m\) \(size 3 is different from 4\)"),
    (_vander_2d, r"vander: x must be a one-dimensional array or sequence"),
    (_rollaxis_start, r"'start' arg requires -2 <= start < 3, but 5 was passed in"),
    (_unpackbits_float, r"unpackbits: Expected an input array of unsigned byte data type, got float32"),
    (_packbits_float, r"packbits: Expected an input array of integer or boolean data type, got float32"),
    (_packbits_order, r"packbits: 'order' must be either 'little' or 'big', got 'middle'"),
], ids=lambda v: getattr(v, "__name__", "")[1:] if callable(v) else "")
def test_errors_name_the_function_and_the_line(fn, message):
    with pytest.raises(CompileError, match=message) as e:
        pyasc.kernel(fn, chip="tiny").compile(np.ones((3, 4), np.float32))
    assert e.value.loc.lineno == fn.__code__.co_firstlineno + 1


# ---- NaN-skipping reductions (ops/nanorder.py) --------------------------------------------------------------


@pyasc.kernel(chip="tiny")
def nan_reductions(x):
    return (np.nanargmax(x, axis=1), np.nanargmin(x, axis=0, keepdims=True), np.nanargmax(x), np.nanprod(x, axis=1),
            np.nanprod(x), np.nanmedian(x, axis=1),
            np.nanquantile(x, [0.1, 0.5, 0.75], axis=1), np.nanpercentile(x, 30, axis=0, keepdims=True))


@pyasc.kernel(chip="tiny")
def nan_reductions_half(x):
    return np.nanargmin(x, axis=1), np.nanprod(x, axis=0), np.nanmedian(x, axis=1), np.nanquantile(x, 0.3, axis=0)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_nan_reductions_match_numpy(rng, dtype):
    x = rng.standard_normal((4, 7)).astype(dtype)
    x[0] = [np.nan, 1, np.nan, -np.inf, 1, 0.5, np.nan]  # ties (1, 1) and -inf beside NaN
    x[1, :3] = np.nan
    x[2, 2] = np.inf
    x[3, 1] = 0.5  # an even count in row 0 (4 values) and odd ones elsewhere
    # numpy's nanquantile of float16 with a sequence q lerps partly in float16: the float32 kernel covers that form
    _check(nan_reductions if dtype == "float32" else nan_reductions_half, x)


@pyasc.kernel(chip="tiny")
def sequence_q(x):
    return np.nanquantile(x, [0.1, 0.5, 0.75], axis=1), np.quantile(x[2:], [0.25, 0.5])


def test_a_sequence_q_of_float16_gives_float32_as_numpys_float64_narrowed(rng):
    x = rng.standard_normal((4, 7)).astype(np.float16)
    x[0, :3] = np.nan
    assert [w.dtype for w in sequence_q.py_func(x)] == [np.float64, np.float64]
    # numpy lerps partly in float16 there; the float32 kernel is compared with numpy on the exact float64 values
    for g, w in zip(sequence_q(x), sequence_q.py_func(x.astype(np.float64))):
        assert_close(g, w.astype(np.float32))


@pyasc.kernel(chip="tiny")
def nan_reductions_of_integers(a):
    return np.nanargmax(a, axis=0), np.nanprod(a, axis=1), np.nanmedian(a, axis=1), np.nanpercentile(a, [25, 50])


def test_nan_reductions_of_integers_are_the_plain_ones(rng):
    _check(nan_reductions_of_integers, rng.integers(-5, 6, (3, 5)).astype(np.int32))


@pyasc.kernel(chip="tiny")
def nan_positions(x):
    return np.nanargmax(x, axis=1) + np.nanargmin(x, axis=1)


def test_nanargmax_of_an_all_nan_slice_raises_numpys_value_error_after_the_launch():
    x = np.ones((3, 4), np.float32)
    x[1, 1:] = np.nan
    assert nan_positions(x).tolist() == [0, 0, 0]  # a slice with one number is fine
    x[2] = np.nan
    with pytest.raises(ValueError, match=r"test_ops_numpy6.py:\d+:\d+: in `np.nanargmax\(x, axis=1\)`: All-NaN "
                                         "slice encountered"):
        nan_positions(x)
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        nan_positions.py_func(x)


# ---- whole-array comparisons, vander, broadcasting, axis rolls, vector products, bits ------------------------


@pyasc.kernel(chip="tiny")
def arrays(x, y, v, m):
    return (np.array_equal(x, y), np.array_equal(x, x), np.array_equal(x, y[:2]), np.array_equal(y, y, equal_nan=True),
            np.array_equal(y, y), np.array_equiv(x, x[0]), np.array_equiv(x, v), np.vander(v),
            np.vander(v, 3, increasing=True), *np.broadcast_arrays(x, v[:4], x[:1, :1]), np.rollaxis(m, 2),
            np.rollaxis(m, 0, 3), np.rollaxis(m, -1, 1), np.vecdot(x, y), np.vecdot(m, m, axis=0),
            np.matvec(m, v[:4]), np.vecmat(v, m))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_array_functions_match_numpy(rng, dtype):
    x = rng.standard_normal((3, 4)).astype(dtype)
    y = x.copy()
    y[1, 2] = np.nan  # equal only with equal_nan
    v = rng.standard_normal(5).astype(dtype)
    m = rng.standard_normal((3, 5, 4)).astype(dtype)
    _check(arrays, x, y, v, m)


@pyasc.kernel(chip="tiny")
def bits_and_integers(a, u):
    return (np.packbits(a), np.packbits(a, axis=1), np.packbits(a > 1, axis=0, bitorder="little"), np.unpackbits(u),
            np.unpackbits(u, axis=1), np.unpackbits(u, axis=0, count=-3, bitorder="little"),
            np.unpackbits(u, count=50), np.vecdot(a, a), np.matvec(a[:, :3], a[0, :3]), np.vander(a[0], 3),
            np.array_equal(a, a), np.array_equiv(a, a[:1]), np.vecdot(a.astype(np.int8) * 50, a.astype(np.int8) * 3),
            np.vecdot(a > 0, a > 1))  # int8 products and sums wrap as numpy's; bool is any(x1 & x2)


def test_bits_and_integer_products_match_numpy(rng):
    a = rng.integers(0, 3, (3, 11)).astype(np.int32)
    u = rng.integers(0, 256, (2, 3)).astype(np.uint8)
    u[0, 0], u[1, 2] = 255, 0
    _check(bits_and_integers, a, u)
