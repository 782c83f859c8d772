"""concatenate/concat, stack, hstack, vstack, split, array_split: golden tests on both presets, numpy
spellings, and the located errors (mismatched shapes, non-static sections, a symbolic size).

These public functions take a list of tensors (or give one back), so they are sugar over the
internal variadic ops `concat` and `split` and are not covered by test_golden_ops' generated kernels.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from test_golden_ops import values

DTYPES = ["float16", "float32", "int8", "int16", "int32", "uint8", "bool"]
CHIPS = ["tiny", "910b"]


def joins(x, y, z):
    return (np.concatenate([x, y], axis=1), np.concatenate((x, x, x)), np.concatenate([x, y, x], axis=-1),
            np.concatenate([x, y], axis=None), np.stack([x, x], axis=-1), np.stack((z, z, z)),
            np.hstack([x, y]), np.hstack([z, z[:2]]), np.vstack([z, z]), np.vstack([x, x[:1]]),
            pyasc.concatenate([x, y], 1), np.concat([z, z]))


def splits(x, y):
    p, q, r = np.split(y, 3, axis=1)
    s, t = np.array_split(x, 2)
    u, v, w = np.split(x, [1, 3], axis=1)
    e, f, g = np.array_split(y, 4, axis=-1)[1:]
    return p, q, r, s, t, u, v, w, e, f, g, pyasc.split(y, 3, axis=1)[1]


def _run(fn, chip, *args):
    k = pyasc.kernel(fn, chip=chip)
    got, want = k(*args), k.py_func(*args)
    assert len(got) == len(want)
    for a, e in zip(got, want):
        assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype)
        assert_close(a, e)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_joins_match_numpy(dtype, chip, rng):
    x, y, z = values(rng, dtype, (3, 5)), values(rng, dtype, (3, 6)), values(rng, dtype, (4,))
    _run(joins, chip, x, y, z)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_splits_match_numpy(dtype, chip, rng):
    _run(splits, chip, values(rng, dtype, (5, 7)), values(rng, dtype, (3, 9)))


def mixed(a, b):
    return np.concatenate([a, b], axis=0), np.stack([a, b])


@pytest.mark.parametrize("chip", CHIPS)
def test_mixed_dtypes_promote_like_numpy(chip, rng):
    _run(mixed, chip, values(rng, "int8", (2, 3)), values(rng, "float16", (2, 3)))


def big(x, y):
    return np.concatenate([x, y], axis=0), np.concatenate([y.T, x.T, y.T], axis=1)


@pytest.mark.parametrize("chip", CHIPS)
def test_larger_unequal_pieces(chip, rng):
    x = values(rng, "float32", (37, 40))
    _run(big, chip, x[:5], x)  # (5, 40) + (37, 40) along axis 0; (40, 37) + (40, 5) + (40, 37) along axis 1
    _run(big, chip, x[:1], x[:3])


def heads(qkv):
    q, k, v = np.split(qkv, 3, axis=-1)
    return np.concatenate([q * 2.0, k, v], axis=-1), np.stack(np.split(q, 2, axis=-1), axis=0)


@pytest.mark.parametrize("chip", CHIPS)
def test_attention_heads(chip, rng):
    _run(heads, chip, values(rng, "float16", (5, 24)))


@pyasc.kernel(chip="tiny", dynamic=True)
def dyn_join(x, y):
    return np.concatenate([x, x * 2.0], axis=-1), np.stack([x, y]), np.vstack([x, x + 1.0])


def test_equal_symbolic_sizes_join(rng):
    for rows, cols in ((3, 4), (6, 17)):
        x, y = values(rng, "float32", (rows, cols)), values(rng, "float32", (rows, cols))
        for a, e in zip(dyn_join(x, y), dyn_join.py_func(x, y)):
            assert_close(a, e)


@pyasc.kernel(chip="tiny", dynamic=True)
def dyn_split(x):
    return np.split(x, 2, axis=1)


def test_split_of_a_symbolic_axis_is_rejected():
    with pytest.raises(pyasc.CompileError, match=r"split: axis 1 of shape \(x_d0, x_d1\) has a size only known at "
                                                 r"launch; split needs a static size"):
        dyn_split(np.ones((3, 4), np.float32))


# ---- errors ---------------------------------------------------------------------------------------


def _mismatch(x, y):
    return np.concatenate([x, y], axis=1)  # <- error


def _stack_shapes(x, y):
    return np.stack([x, y])  # <- error


def _not_equal(x, y):
    return np.split(x, 2, axis=1)  # <- error


def _tensor_sections(x, y):
    return np.split(x, y)  # <- error


def _axis_range(x, y):
    return np.concatenate([x, x], axis=2)  # <- error


def _not_a_list(x, y):
    return np.concatenate(x)  # <- error


def _zero_d(x, y):
    return np.concatenate([x.sum(), y.sum()])  # <- error


CASES = [
    (_mismatch, "concat: all the input array dimensions except for the concatenation axis must match exactly, but "
                "along dimension 0, the array at index 0 has size 3 and the array at index 1 has size 2"),
    (_stack_shapes, "concat: all input arrays must have the same shape, got (3, 5), (2, 5)"),
    (_not_equal, "split: array split does not result in an equal division: 5 elements into 2 sections"),
    (_tensor_sections, "argument `sections` of np.split must be a compile-time value, got"),
    (_axis_range, "concat: axis 2 is out of range for a tensor of rank 2"),
    (_not_a_list, "np.concatenate(): concatenate(): arrays must be a list or tuple of tensors, got"),
    (_zero_d, "concat: zero-dimensional arrays cannot be concatenated"),
]


@pytest.mark.parametrize("fn, words", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_arguments_are_located(fn, words):
    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "# <- error" in text)
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(fn, chip="tiny")(np.ones((3, 5), np.float32), np.ones((2, 5), np.float32))
    err = info.value
    assert words in str(err), str(err)
    assert err.lineno == line and err.filename == __file__
    assert "^" in str(err).splitlines()[2]


@pyasc.kernel(chip="tiny", dynamic=True)
def dyn_unequal(x, y):
    return np.concatenate([x, y], axis=0)


def test_unequal_symbolic_sizes_are_rejected():
    with pytest.raises(pyasc.CompileError, match=r"concat: the sizes along axis 0 \(\w+, \w+\) must be static, or all equal"):
        dyn_unequal(np.ones((3, 4), np.float32), np.ones((2, 4), np.float32))


def test_eager_functions_are_numpys():
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(pyasc.concatenate([x, x], axis=1), np.concatenate([x, x], axis=1))
    np.testing.assert_array_equal(pyasc.vstack([x[0], x[1]]), np.vstack([x[0], x[1]]))
    assert [p.shape for p in pyasc.array_split(x, 3, axis=1)] == [(3, 2), (3, 1), (3, 1)]
    with pytest.raises(ValueError, match="need at least one array to concatenate"):
        pyasc.concatenate([])
