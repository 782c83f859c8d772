"""The numpy ops of issue 11 part 1, group 1: var/std, square, clip, copy, *_like, log1p ... logaddexp.

Golden tests for every dtype and both chip presets come from test_golden_ops (numpy_op_makers); here:
accuracy over wide ranges and special values on the emulator against numpy in float64, the numpy
spellings (np.var, x.var(), x.clip(), ...), and the located errors for bad arguments.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close

RNG = np.random.default_rng(7)
WIDE = np.concatenate([RNG.uniform(-10, 10, 600), 10.0 ** RNG.uniform(-7, 1, 300) * RNG.choice([-1, 1], 300),
                       [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 40.0, -40.0]]).astype(np.float32)
UNIT = np.concatenate([RNG.uniform(-1, 1, 600), [0.0, 1.0, -1.0, 0.5, -0.5, 0.4999, 1e-6, 1.5, -2.0, np.nan]]
                      ).astype(np.float32)

DOMAIN = {"log1p": WIDE[(WIDE >= -1) | np.isnan(WIDE)], "log2": np.abs(WIDE), "arcsin": UNIT, "arccos": UNIT,
          "expm1": WIDE, "sinh": WIDE, "cosh": WIDE, "arctan": WIDE, "exp2": WIDE}


def _unary_kernel(name):
    fn = getattr(np, name)

    def k(x):
        return fn(x)

    k.__name__ = f"k_{name}"
    return k


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("name", sorted(DOMAIN))
def test_accuracy_against_numpy_in_float64(name, chip):
    x = DOMAIN[name]
    k = pyasc.kernel(_unary_kernel(name), chip=chip)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(x.astype(np.float64)).astype(np.float32)
    got = k(x)
    assert got.dtype == np.float32
    assert_close(got, want)  # float32 tolerance (rtol 1e-5, atol 1e-6); inf and NaN where numpy has them


@pyasc.kernel(chip="tiny")
def lse(a, b):
    return np.logaddexp(a, b)


def test_logaddexp_wide_range_and_infinities():
    a = np.concatenate([RNG.uniform(-50, 50, 200), [np.inf, -np.inf, np.inf, 3.0, -np.inf]]).astype(np.float32)
    b = np.concatenate([RNG.uniform(-50, 50, 200), [np.inf, -np.inf, -np.inf, 3.0, 2.0]]).astype(np.float32)
    assert_close(lse(a, b), np.logaddexp(a.astype(np.float64), b.astype(np.float64)).astype(np.float32))


@pyasc.kernel(chip="tiny")
def spellings(x, w):
    v = np.var(x, axis=-1, keepdims=True)
    s = x.std(axis=0, ddof=1)
    total = x.var() + pyasc.std(x) + np.std(x, 1).sum()
    c = np.clip(x, -1.0, 1.0) + x.clip(0.0) + x.clip(None, w) + np.square(x) + x.copy()
    z = np.zeros_like(x) + np.ones_like(x, dtype=np.float32) + pyasc.full_like(x, 2.0)  # (np.empty_like: unspecified in numpy)
    return v, s, total, c, z


def test_numpy_spellings_compile_and_match():
    x = RNG.uniform(-3, 3, (6, 40)).astype(np.float32)
    w = RNG.uniform(-3, 3, (40,)).astype(np.float32)
    for got, want in zip(spellings(x, w), spellings.py_func(x, w)):
        assert_close(got, want)


@pyasc.kernel(chip="tiny")
def likes(x):
    return np.zeros_like(x), np.ones_like(x, dtype=np.float16), np.full_like(x, 2.7), np.empty_like(x)


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8"])
def test_like_constructors_keep_shape_and_dtype(dtype):
    x = np.arange(12, dtype=dtype).reshape(3, 4)
    z, o, f, e = likes(x)
    assert z.dtype == x.dtype and o.dtype == np.float16 and f.dtype == x.dtype and e.dtype == x.dtype
    np.testing.assert_array_equal(z, np.zeros_like(x))
    np.testing.assert_array_equal(o, np.ones((3, 4), np.float16))
    np.testing.assert_array_equal(f, np.full_like(x, 2.7))  # a float fill of an int tensor truncates
    np.testing.assert_array_equal(e, np.zeros_like(x))  # empty_like: zeros (numpy leaves them unspecified)


@pyasc.kernel(chip="tiny", dynamic=True)
def dyn_like(x):
    return np.var(x, axis=-1) + np.zeros_like(x[:, 0])


def test_var_and_like_with_symbolic_dims():
    for rows in (3, 5):
        x = RNG.uniform(-2, 2, (rows, 24)).astype(np.float32)
        assert_close(dyn_like(x), dyn_like.py_func(x))


@pyasc.kernel(chip="tiny")
def half_var(x):
    return np.var(x, axis=-1), np.std(x.astype(np.int16), axis=0)


def test_var_dtypes_follow_numpy():
    x = RNG.uniform(-2, 2, (4, 64)).astype(np.float16)
    v, s = half_var(x)
    assert v.dtype == np.float16 and s.dtype == np.float32  # numpy: float16, float64 (narrowed)
    rv, rs = half_var.py_func(x)
    assert_close(v, rv)
    assert_close(s, rs.astype(np.float32))


# ---- bad arguments: located CompileErrors -------------------------------------------------------


def _ddof_too_big(x):
    return np.var(x, axis=0, ddof=3)  # <- error


def _clip_nothing(x):
    return np.clip(x, None, None)  # <- error


def _var_bad_axis(x):
    return x.std(axis=2)  # <- error


def _ddof_symbolic(x):
    return np.var(x, axis=0, ddof=1)  # <- error


@pytest.mark.parametrize("fn, shape, words, dynamic", [
    (_ddof_too_big, (3, 4), "var: ddof=3 leaves no degrees of freedom: 3 element(s) reduced over axis (0,) of "
                            "shape (3, 4)", False),
    (_clip_nothing, (3, 4), "clip: at least one of a_min and a_max must be given in `np.clip(x, None, None)`", False),
    (_var_bad_axis, (3, 4), "std: axis 2 is out of range for a tensor of rank 2", False),
    (_ddof_symbolic, (3, 4), "var: ddof=1 needs the reduced size, but axis (0,) of shape", True),
])
def test_bad_arguments_are_located(fn, shape, words, dynamic):
    import inspect  # only here: the marked line of each case

    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "# <- error" in text)
    k = pyasc.kernel(fn, chip="tiny", dynamic=dynamic)
    with pytest.raises(pyasc.CompileError) as info:
        k(np.ones(shape, np.float32))
    err = info.value
    assert words in str(err)
    assert err.lineno == line and err.filename == __file__
    assert "^" in str(err).splitlines()[2]


def test_clip_needs_a_bound_eagerly_too():
    with pytest.raises(ValueError, match="at least one of a_min and a_max must be given"):
        pyasc.clip(np.ones(3), None, None)
