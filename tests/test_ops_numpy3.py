"""numpy3's functions where golden_ops' makers cannot reach: ufunc methods, np.select and np.meshgrid (sugar over
internal ops), allclose's 0-d bool in an expression, and the located errors.

Values of the public ops (flip, isclose, nanmean, tensordot, median, convolve, ...) against numpy on both presets
are test_golden_ops' (numpy_op_makers.makers_numpy3)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError
from conftest import assert_close


@pyasc.kernel(chip="tiny")
def methods(x, v, n):
    return (np.add.reduce(x) + np.maximum.reduce(x, axis=1).sum(), np.multiply.reduce(x, 1, keepdims=True),
            np.minimum.reduce(x, axis=None), np.logical_or.reduce(x > 1, axis=0), np.add.accumulate(x, axis=1),
            np.multiply.accumulate(v), np.maximum.accumulate(v), np.minimum.accumulate(x, axis=1),
            np.minimum.outer(v, v), np.subtract.outer(x, v[:2]), np.greater.outer(v, v),
            np.add.reduce(n), np.add.accumulate(n, axis=1), np.maximum.accumulate(n[0]),
            # integer paths of functions golden_ops runs on float32 only
            np.convolve(n[0], n[1, :3], "same"), np.searchsorted(np.sort(n[0]), n[1]), np.quantile(n, 0.5, axis=1),
            np.ptp(n, axis=0), np.flip(n, axis=1),
            np.add.reduceat(x, [0, 3, 1, 4], axis=1), np.maximum.reduceat(n, [1, 1, 0], axis=1),
            np.logical_and.reduceat(x > -1, [0, 2]))


def test_ufunc_methods_match_numpy(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    x[1, 2] = x[1, 3] = 1  # a tie for the running max/min
    v, n = x[2].copy(), rng.integers(-100, 100, (3, 6)).astype(np.int8)
    for got, want in zip(methods(x, v, n), methods.py_func(x, v, n)):
        assert got.shape == np.shape(want)
        assert_close(got, np.asarray(want), check_dtype=False)  # int8 sums: int32 (numpy: int64), no wrapping


@pyasc.kernel(chip="tiny")
def grids_and_choices(x, v, w):
    gx, gy = np.meshgrid(v, w)
    ix, iy = np.meshgrid(v, w[:2], indexing="ij", sparse=True)
    picked = np.select([x < -1, x > 1], [x * 2, x / 2], default=0)
    first = np.select([v > 0, v > -1], [v, -v], default=np.nan)  # the first true condition wins
    clipped = np.select([x < -1, x > 1], [-1.0, 1.0], default=x.astype(np.float16))  # an array default, promoted
    same = np.allclose(x, x + 1e-9)
    swapped = np.correlate(w, v[:3], "valid")  # numpy slides the shorter sequence (golden_ops: the full mode)
    return (gx, gy, ix, iy, picked, first, clipped, np.where(same, x, -x), swapped,
            np.linalg.matrix_power(x[:, :3], 0), same)


def test_meshgrid_select_and_allclose_match_numpy(rng):
    x = rng.standard_normal((3, 5)).astype(np.float32) * 2
    v, w = x[0].copy(), rng.standard_normal(4).astype(np.float32)
    got, want = grids_and_choices(x, v, w), grids_and_choices.py_func(x, v, w)
    assert len(got) == len(want)
    for g, e in zip(got, want):
        assert g.shape == np.shape(e)
        assert_close(g, np.asarray(e), check_dtype=False)  # default=0 is int64 in numpy: float32 result either way
    assert got[-1].dtype == np.bool_ and got[-1].shape == ()


@pyasc.kernel(chip="tiny")
def partitions(x, v):
    return (np.partition(x, 3), np.argpartition(x, [0, -2], axis=0), np.partition(v, (1, 5), axis=None),
            np.argpartition(v, 4))


def test_partition_keeps_numpy_promise_at_every_kth(rng):
    x = rng.integers(-3, 4, (5, 9)).astype(np.float32)  # ties: any valid partition, but kth values are numpy's
    x[0, :2] = [np.nan, -np.inf]
    v = rng.standard_normal(7).astype(np.float16)
    part, arg0, flat, argv = partitions(x, v)
    np.testing.assert_array_equal(part[:, 3], np.partition(x, 3)[:, 3])
    assert (np.nan_to_num(part[:, :3], nan=np.inf) <= np.nan_to_num(part[:, 3:4], nan=np.inf)).all()
    assert (np.nan_to_num(part[:, 4:], nan=np.inf) >= np.nan_to_num(part[:, 3:4], nan=np.inf)).all()
    assert arg0.dtype == np.int32 and sorted(arg0[:, 0]) == list(range(5))  # a permutation of each column
    picked = np.take_along_axis(x, arg0, axis=0)
    np.testing.assert_array_equal(picked[[0, -2]], np.partition(x, [0, -2], axis=0)[[0, -2]])
    np.testing.assert_array_equal(flat[[1, 5]], np.partition(v, (1, 5), axis=None)[[1, 5]])
    assert v[argv[4]] == np.partition(v, 4)[4]
    assert (v[argv[:4]] <= v[argv[4]]).all() and (v[argv[5:]] >= v[argv[4]]).all()


def _kernel(body, dynamic=False):
    def kern(x):
        return body(x)
    return pyasc.kernel(kern, chip="tiny", dynamic=dynamic)


@pytest.mark.parametrize("body, message", [
    (lambda x: np.linalg.matrix_power(x[:, :3], -1),
     r"matrix_power: a negative exponent \(-1\) needs the matrix inverse"),
    (lambda x: np.linalg.matrix_power(x, 2), r"Last 2 dimensions of the array must be square, got shape \(3, 4\)"),
    (lambda x: np.select([x], [x]), r"invalid entry 0 in condlist: should be boolean ndarray"),
    (lambda x: np.select([x > 0], [x], default="x"), r"select\(\): default must be a number or an array, got str"),
    (lambda x: np.partition(x, 4), r"partition: kth\(=4\) out of bounds \(4\)"),
    (lambda x: np.argpartition(x, [0, 1.5], axis=0), r"argpartition: kth must be an int or a sequence of ints"),
    (lambda x: np.add.reduce(x, dtype=np.float16), r"np.add.reduce\(\): dtype= is not supported in a kernel"),
    (lambda x: np.maximum.accumulate(x, axis=None), r"accumulate: axis must be an int, got None"),
    (lambda x: np.quantile(x, 1.5), r"Quantiles must be in the range \[0, 1\]"),
    (lambda x: np.convolve(x, x[0]), r"convolve: object too deep for desired array"),
    (lambda x: np.cross(x, x), r"incompatible dimensions for cross product"),
    (lambda x: np.tensordot(x, x, axes=([0], [1])), r"tensordot: shape-mismatch for sum"),
    (lambda x: np.meshgrid(x[0], indexing="yx"), r"Valid values for `indexing` are 'xy' and 'ij'"),
    (lambda x: np.fliplr(x[0]), r"Input must be >= 2-d"),
    (lambda x: np.add.reduceat(x, [0, 4], axis=1), r"index 4 out-of-bounds in add.reduceat \[0, 4\)"),
    (lambda x: np.add.reduceat(x, x[0].astype(int)), r"reduceat\(\): indices must be a list or array of ints known "
                                                     r"at compile time"),
    (lambda x: np.add.reduceat(x, [0], dtype=np.float16), r"out= and dtype= are not supported in a kernel"),
    (lambda x: np.subtract.reduceat(x, [0, 2]),
     r"`np.subtract.reduceat` has no pyasc lowering; lowered methods of np.subtract: np.subtract.outer"),
])
def test_errors_name_the_op_and_the_line(body, message):
    with pytest.raises(CompileError, match=message) as e:
        _kernel(body)(np.ones((3, 4), np.float32))
    assert "test_ops_numpy3.py" in str(e.value)


@pytest.mark.parametrize("body, message", [
    (lambda x: np.convolve(x[0], x[1]), r"convolve: shapes \(x_d1,\) and \(x_d1,\) have sizes only known at launch"),
    (lambda x: np.median(x, axis=1), r"median: the reduced axes of shape \(x_d0, x_d1\) have sizes only known"),
    (lambda x: np.maximum.accumulate(x, axis=1), r"np.maximum.accumulate: axis 1 of shape \(x_d0, x_d1\) has a size"),
])
def test_launch_sized_axes_are_refused_by_name(body, message):
    with pytest.raises(CompileError, match=message):
        _kernel(body, dynamic=True)(np.ones((3, 4), np.float32))


def test_flip_of_launch_sized_axes_runs(rng):
    k = _kernel(lambda x: np.flip(x) + np.flipud(x), dynamic=True)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    assert_close(k(x), np.flip(x) + np.flipud(x))


def test_eager_functions_are_numpys():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning leaks from an all-NaN slice
        assert np.isnan(pyasc.nanmax(np.array([np.nan, np.nan], np.float32)))
    assert pyasc.add_reduce(np.arange(6).reshape(2, 3)).tolist() == [3, 5, 7]
    assert pyasc.allclose(np.ones(3), np.ones(3)).shape == ()
