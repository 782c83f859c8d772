"""swapaxes, moveaxis, repeat, tile, pad, dot: numpy spellings and methods, N-D dot rules, located errors.

Golden tests for every dtype on both presets come from test_golden_ops (numpy_op_makers).
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from test_golden_ops import values


@pyasc.kernel(chip="tiny")
def spellings(x, w):
    return (x.swapaxes(0, 1), np.moveaxis(x, -1, 0), x.repeat(2, axis=0), np.repeat(x, [3], axis=1),
            np.tile(x, (2, 2)), np.pad(x, (1, 2)), np.pad(x, ((1, 0), (0, 3)), "constant", constant_values=7.0),
            x.dot(w), pyasc.dot(x[0], w), np.repeat(x, [1, 0, 3], axis=0), x.repeat([2, 1, 1, 3, 3], axis=1))


def test_spellings_and_methods(rng):
    x, w = values(rng, "float32", (3, 5)), values(rng, "float32", (5,))
    for a, e in zip(spellings(x, w), spellings.py_func(x, w)):
        assert a.shape == e.shape
        assert_close(a, e)


@pyasc.kernel(chip="tiny")
def nd_dot(a, b):
    return np.dot(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int32"])
@pytest.mark.parametrize("sa, sb", [((2, 3, 4), (5, 4, 6)), ((4,), (2, 4, 3)), ((2, 2, 4), (4, 3)), ((3, 4), (4, 1)),
                                    ((2, 3, 4), (5, 4, 1))])
def test_nd_dot_is_not_matmul(sa, sb, dtype, rng):
    a, b = values(rng, dtype, sa, "small"), values(rng, dtype, sb, "small")
    got, want = nd_dot(a, b), np.dot(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert_close(got, want)


def _pad_mode(x):
    return np.pad(x, 1, mode="mean")  # <- error


def _repeat_counts(x):
    return np.repeat(x, [1, -2, 3], axis=0)  # <- error


def _swap_axis(x):
    return np.swapaxes(x, 0, 3)  # <- error


def _tile_negative(x):
    return np.tile(x, (2, -1))  # <- error


def _dot_aligned(x):
    return np.dot(x, x)  # <- error


def _pad_negative(x):
    return np.pad(x, ((1, -1), (0, 0)))  # <- error


CASES = [
    (_pad_mode, "pad: mode must be 'constant' or one of 'edge', 'reflect', 'symmetric', 'wrap', got mode='mean'"),
    (_repeat_counts, "repeat: repeats may not contain negative values, got (1, -2, 3)"),
    (_swap_axis, "swapaxes: axis2 3 is out of range for a tensor of rank 2"),
    (_tile_negative, "tile: negative dimensions are not allowed, got reps (2, -1)"),
    (_dot_aligned, "dot: shapes (3, 5) and (3, 5) not aligned: 5 (dim 1) != 3 (dim 0)"),
    (_pad_negative, "pad: index can't contain negative values"),
]


@pytest.mark.parametrize("fn, words", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_arguments_are_located(fn, words):
    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "# <- error" in text)
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(fn, chip="tiny")(np.ones((3, 5), np.float32))
    err = info.value
    assert words in str(err), str(err)
    assert err.lineno == line and err.filename == __file__
    assert "^" in str(err).splitlines()[2]
