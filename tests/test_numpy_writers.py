"""numpy's in-place writers (np.put_along_axis, np.fill_diagonal, np.putmask, np.put: frontend/npwrites.py) and
np.lib.stride_tricks.sliding_window_view (ops/windows.py), against numpy on the same inputs."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import pyasc
from pyasc.errors import CompileError
from conftest import assert_close


@pyasc.kernel(chip="tiny")
def writers(x, i):
    one_hot = np.zeros_like(x)
    np.put_along_axis(one_hot, np.argmax(x, axis=1)[:, None], 1.0, axis=1)  # the scatter twin of take_along_axis
    ranked = x.copy()
    np.put_along_axis(ranked, np.argsort(x, axis=0)[:2], x[:2] * 10, axis=0)
    flat = x.copy()
    np.put_along_axis(flat, np.array([0, 7, -1]), 3.0, axis=None)
    column = x.copy()
    np.put_along_axis(column, np.array([[2]]), -1.0, axis=1)  # a size-1 axis of indices: every row
    gram = x @ x.T
    np.fill_diagonal(gram, np.inf)  # nearest other row: the diagonal excluded
    diag = x.copy()
    view = diag[1:]
    np.fill_diagonal(view, x[0, :2])  # values repeat along the diagonal; the write reaches `diag` through the view
    tall = np.zeros((7, 3), x.dtype)
    np.fill_diagonal(tall, x[0, 0], wrap=True)
    masked = x.copy()
    np.putmask(masked, masked < 0, -masked)
    cycled = x.copy()
    np.putmask(cycled, x > 0.5, x[0, :3])  # numpy repeats the values over the flat positions
    put = x.copy()
    np.put(put, [0, 3, -1], [9.0, 8.0])
    wrapped = x.copy()
    np.put(wrapped, i * 3 + 25, 1.0, mode="wrap")
    clipped = x.copy()
    np.put(clipped, i * 7 - 3, 2.0, mode="clip")
    return one_hot, ranked, flat, column, gram.min(axis=1), diag, view, tall, masked, cycled, put, wrapped, clipped


def test_writers_match_numpy(rng):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    i = np.array([0, 3, 1, 4], np.int32)
    got, want = writers(x, i), writers.py_func(x.copy(), i)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w)


def test_put_out_of_range_is_numpys_index_error_and_writes_nothing():
    def put(x, i):
        np.put(x, i, 7.0)
        return x

    k = pyasc.kernel(put, chip="tiny")
    x = np.zeros(5, np.float32)
    assert_close(k(x, np.array([1, -1], np.int32)), np.array([0, 7, 0, 0, 7], np.float32))
    x = np.zeros(5, np.float32)
    with pytest.raises(IndexError, match="out of bounds"):
        k(x, np.array([1, 5], np.int32))
    assert not x.any()


@pyasc.kernel(chip="tiny")
def windows(x, v):
    return (np.lib.stride_tricks.sliding_window_view(x, 3, axis=1).mean(axis=-1),
            sliding_window_view(x, (2, 3)),
            sliding_window_view(x, (2, 2), axis=(1, 1)),
            sliding_window_view(v, 4).sum(axis=-1))


def test_sliding_window_view_matches_numpy(rng):
    x = rng.standard_normal((4, 6)).astype(np.float16)
    v = rng.integers(-5, 5, 9).astype(np.int32)
    for g, w in zip(windows(x, v), windows.py_func(x, v)):
        assert g.shape == w.shape
        assert_close(g, w, check_dtype=False)  # the mean of float16 windows: numpy's float16 too, rounded apart


def _kernel(body):
    def kern(x):
        body(x)
        return x
    return pyasc.kernel(kern, chip="tiny")


@pytest.mark.parametrize("body, message", [
    (lambda x: np.put(x, [0, 12], 1.0), r"np.put\(\): index 12 is out of bounds for axis 0 with size 12"),
    (lambda x: np.put(x, [0], 1.0, mode="nearest"), r"mode must be one of 'raise', 'wrap' or 'clip'"),
    (lambda x: np.put(x, [0.5], 1.0), r"indices must be integers"),
    (lambda x: np.putmask(x, x[0] > 0, 1.0), r"mask and data must be the same size"),
    (lambda x: np.fill_diagonal(x[0], 1.0), r"array must be at least 2-d"),
    (lambda x: np.put_along_axis(x, np.argmax(x, axis=1), 0.0, axis=1),
     r"`indices` and `arr` must have the same number of dimensions"),
    (lambda x: np.put_along_axis(x, x[:, :1], 0.0, axis=1), r"`indices` must be an integer array"),
    (lambda x: np.put_along_axis(x, np.argmax(x, axis=1, keepdims=True), 0.0, axis=2),
     r"axis 2 is out of bounds for array of dimension 2"),
    (lambda x: np.put_along_axis(x, np.argmax(x, axis=1, keepdims=True), 0.0),
     r"missing a required argument: 'axis'"),
    (lambda x: np.lib.stride_tricks.sliding_window_view(x, 5, axis=0),
     r"window shape cannot be larger than input array shape"),
    (lambda x: np.lib.stride_tricks.sliding_window_view(x, 2),
     r"Since axis is `None`, must provide window_shape for all dimensions of `x`"),
    (lambda x: np.lib.stride_tricks.sliding_window_view(x, (2, 2), axis=0),
     r"Must provide matching length window_shape and axis"),
])
def test_errors_name_the_function_and_the_line(body, message):
    with pytest.raises(CompileError, match=message) as e:
        _kernel(body)(np.ones((3, 4), np.float32))
    assert "test_numpy_writers.py" in str(e.value)
