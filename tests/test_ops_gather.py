"""argmax/argmin, take and fancy indexing (`wte[ids]`, `x[:, ids]`, `x[[2, 0]]`), cumsum: what the generated
golden tests (test_golden_ops, numpy_op_makers) do not show: ties and NaN, embedding lookups, inf/NaN
table entries, the long-axis cumsum path, and the located errors.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from test_golden_ops import values

CHIPS = ["tiny", "910b"]


@pyasc.kernel(chip="tiny")
def args(x):
    return np.argmax(x, axis=-1), np.argmin(x, axis=0), x.argmax(), np.argmin(x, axis=1, keepdims=True)


def test_argmax_ties_and_nan_follow_numpy():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [np.nan, 1.0, np.nan, 5.0], [2.0, 2.0, 2.0, 2.0]], np.float32)
    got, want = args(x), args.py_func(x)
    for g, w in zip(got, want):
        assert g.dtype == np.int32 and g.shape == w.shape  # numpy: int64, narrowed
        np.testing.assert_array_equal(g, w)


def lookup(wte, wpe, ids, x):
    pos = [0, 1, 2]
    return wte[ids] + wpe[pos], x[:, ids[0]], x[[2, 0, 1]], np.take(x, ids, axis=1), x.take(ids[1])


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "int32", "bool"])
def test_embedding_lookup_and_fancy_indexing(dtype, chip, rng):
    wte, wpe = values(rng, dtype, (11, 8)), values(rng, dtype, (5, 8))
    ids = np.array([[3, 10, 0], [7, -1, 3]], np.int32)
    x = values(rng, dtype, (4, 11))
    k = pyasc.kernel(lookup, chip=chip)
    for g, w in zip(k(wte, wpe, ids, x), k.py_func(wte, wpe, ids, x)):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_close(g, w)


@pyasc.kernel(chip="tiny")
def gather_rows(table, ids):
    return table[ids]


def test_gather_keeps_inf_and_nan_entries():
    table = np.array([[1.0, np.inf], [-np.inf, np.nan], [2.5, -0.5]], np.float32)
    ids = np.array([1, 0, 2, 1], np.int32)
    np.testing.assert_array_equal(gather_rows(table, ids), table[ids])  # NaN == NaN here (assert_array_equal)


@pyasc.kernel(chip="tiny")
def scans(x):
    return np.cumsum(x, axis=-1), np.cumsum(x, axis=0)


@pytest.mark.parametrize("dtype", ["int32", "int8", "float32"])
def test_long_cumsum_uses_the_scan_path(dtype, rng):
    # 300 > TRIANGLE_MAX: log-step scan; integer-valued data, so float sums are exact whatever their order
    x = rng.integers(-5, 6, (3, 300)).astype(dtype)
    got, want = scans(x), scans.py_func(x)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w.astype(g.dtype))


def _arg_symbolic(x):
    return np.argmax(x, axis=1)  # <- error


def _take_float_indices(x):
    return np.take(x, x[0], axis=0)  # <- error


def _cumsum_axis(x):
    return np.cumsum(x, axis=3)  # <- error


def _argmax_tuple(x):
    return np.argmax(x, axis=(0, 1))  # <- error


CASES = [
    (_arg_symbolic, True, "argmax: the reduced axis of shape (x_d0, x_d1) has a size only known at launch; "
                          "argmax needs a static size"),
    (_take_float_indices, False, "take: indices must be integers, got dtype float32"),
    (_cumsum_axis, False, "cumsum: axis 3 is out of range for a tensor of rank 2"),
    (_argmax_tuple, False, "argmax: axis must be None or an int, got (0, 1)"),
]


@pytest.mark.parametrize("fn, dynamic, words", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_arguments_are_located(fn, dynamic, words):
    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "# <- error" in text)
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(fn, chip="tiny", dynamic=dynamic)(np.ones((3, 5), np.float32))
    err = info.value
    assert words in str(err), str(err)
    assert err.lineno == line and err.filename == __file__


def progressions(x):
    return x[[0, 1, 2]], x[:, np.arange(4)[::-1]], x[[3, 1]], x[[-1]]


def test_a_compile_time_progression_is_a_slice_not_a_gather(rng):
    x = values(rng, "float32", (5, 6))
    k = pyasc.kernel(progressions, chip="tiny")
    for g, w in zip(k(x), k.py_func(x)):
        assert g.shape == w.shape
        assert_close(g, w)
    assert not {"matmul", "take"} & {n.op for n in k.compile(x).graph.nodes}


def _index_out_of_range(x):
    return x[[0, 7]]  # <- error


def test_a_compile_time_index_out_of_range_is_located():
    lines, start = inspect.getsourcelines(_index_out_of_range)
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(_index_out_of_range, chip="tiny")(np.ones((3, 5), np.float32))
    assert "index 7 is out of bounds for axis 0 with size 3 in `x[[0, 7]]`" in str(info.value)
    assert info.value.lineno == start + 1


PICKS = np.array([[1, -1], [0, 3]])


def static_picks(x):
    return x[[2, 0, 2]], np.take(x, PICKS, axis=1)


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_compile_time_indices_are_slices_not_a_product(dtype, rng):
    x = values(rng, dtype, (4, 5))
    k = pyasc.kernel(static_picks, chip="tiny")
    for g, w in zip(k(x), k.py_func(x)):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_close(g, w)
    assert not {"matmul", "sum"} & {n.op for n in k.compile(x).graph.nodes}
