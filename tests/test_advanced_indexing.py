"""Advanced indexing as numpy does it (issue 22, item 3): integer-array reads and writes on several axes,
np.add.at, boolean masks feeding reductions and writes, and the device-side checks numpy's IndexError
and ValueError come from after the launch."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError
from conftest import assert_close

PRESETS = ["tiny", "910b"]


def both(fn, *args, chip="tiny"):
    """(kernel result, args after), (numpy result, args after)."""
    mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
    return (pyasc.kernel(fn, chip=chip)(*mine), mine), (fn(*theirs), theirs)


def check(fn, *args, chip="tiny"):
    (got, mine), (want, theirs) = both(fn, *args, chip=chip)
    assert_close(got, want, check_dtype=False)
    for a, b in zip(mine, theirs):
        if isinstance(a, np.ndarray):
            assert_close(a, b)


# ---- reads ----------------------------------------------------------------------------------------------


def correct_scores(x, y):
    return x[np.arange(x.shape[0]), y]


def mixed_reads(x, y):
    return x[:, [0, 2]], x[[1, 3]][:, y[:2]], x[y][:, 1:], x[1:4, y[:3]], x[y[:3], np.array([1, 2, 3])]


def three_d(t, i, j):
    return t[i, :, j], t[:, i, j], t[i, j], t[..., j]


@pytest.mark.parametrize("chip", PRESETS)
def test_integer_array_reads(chip, rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = rng.integers(-4, 4, 5).astype(np.int32)  # negative indices count from the end
    check(correct_scores, x, y, chip=chip)
    check(mixed_reads, x, y, chip=chip)
    t = rng.standard_normal((3, 4, 5)).astype(np.float32)
    check(three_d, t, np.array([0, 2, 1], np.int32), np.array([3, 0, -1], np.int32), chip=chip)


def test_reads_of_integer_and_bool_tables(rng):
    check(correct_scores, rng.integers(-9, 9, (5, 4)).astype(np.int16), rng.integers(0, 4, 5).astype(np.int8))
    check(correct_scores, rng.random((5, 4)) > 0.5, rng.integers(0, 4, 5).astype(np.int32))


# ---- writes ---------------------------------------------------------------------------------------------


def softmax_loss_grad(x, y):
    probs = np.exp(x - x.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    dx = probs.copy()
    dx[np.arange(x.shape[0]), y] -= 1
    return dx


def svm_margins(x, y):
    margins = np.maximum(0, x - x[range(x.shape[0]), y][:, None] + 1.0)
    margins[range(x.shape[0]), y] = 0
    return margins


def duplicates(x, y):
    x[y] = np.arange(len(y), dtype=np.float32)[:, None]  # repeated rows: the last value wins, as in numpy
    x[[0, 0], [1, 1]] += 5.0  # numpy buffers: added once
    return x


def scatter_into_order(x):
    out = np.empty_like(x)
    order = np.argsort(x)
    out[order] = np.arange(x.shape[0], dtype=np.float32)
    return out


def add_at(w, ids, d):
    grad = np.zeros_like(w)
    np.add.at(grad, ids, d)  # unbuffered: repeated ids accumulate
    return grad


@pytest.mark.parametrize("chip", PRESETS)
def test_integer_array_writes(chip, rng):
    x = rng.standard_normal((5, 4)).astype(np.float32)
    y = rng.integers(0, 4, 5).astype(np.int32)
    check(softmax_loss_grad, x, y, chip=chip)
    check(svm_margins, x, y, chip=chip)
    check(duplicates, x, np.array([1, 3, 1], np.int32), chip=chip)
    check(scatter_into_order, rng.standard_normal(6).astype(np.float32), chip=chip)
    ids = np.array([[0, 2], [2, 2]], np.int32)
    check(add_at, rng.standard_normal((4, 3)).astype(np.float32), ids,
          rng.standard_normal((2, 2, 3)).astype(np.float32), chip=chip)


def one_hot_valid(x):
    valid = x >= 0
    categorical = np.zeros((x.shape[0], 4), dtype=np.float32)
    categorical[np.arange(x.shape[0])[valid], x[valid]] = 1
    return categorical


def test_index_arrays_selected_by_a_mask_write_where_it_holds():
    check(one_hot_valid, np.array([0, -1, 3, 2, -1], np.int32))


# ---- boolean masks --------------------------------------------------------------------------------------


def stable_sigmoid(x):
    pos_mask = x >= 0
    neg_mask = x < 0
    z = np.zeros_like(x)
    z[pos_mask] = np.exp(-x[pos_mask])
    z[neg_mask] = np.exp(x[neg_mask])
    top = np.ones_like(x)
    top[neg_mask] = z[neg_mask]
    return top / (1 + z)


def masked_reductions(x):
    m = x > 0.2
    return x[m].sum(), np.mean(x[m]), (x[m] ** 2).max(), np.count_nonzero(x[m] > 1), x[x < 0].min()


def relu_backward(dout, x):
    dx = dout.copy()
    dx[x <= 0] = 0
    dx[x > 1.5] *= 2
    return dx


def row_mask(x, keep):
    x[keep] = 0.0  # a mask of the leading axis selects whole rows
    return x[keep].sum()


@pytest.mark.parametrize("chip", PRESETS)
def test_boolean_masks_feeding_reductions_and_writes(chip, rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    check(stable_sigmoid, x * 4, chip=chip)
    check(masked_reductions, x, chip=chip)
    check(relu_backward, rng.standard_normal((4, 6)).astype(np.float32), x, chip=chip)
    check(row_mask, x, np.array([True, False, True, False]), chip=chip)


def masked_length(x):
    return len(x[x > 0])


def masked_returned(x):
    return x[x > 0] * 2


def masked_with_other_mask(x):
    return x[x > 0] + x[x < 1]


@pytest.mark.parametrize("fn, words", [
    (masked_length, "len() would need its length"),
    (masked_returned, "which has a length that depends on the data"),
    (masked_with_other_mask, "select with different masks"),
])
def test_a_mask_selection_used_where_its_length_matters_is_a_located_error(fn, words):
    with pytest.raises(CompileError) as info:
        pyasc.kernel(fn, chip="tiny").compile(np.ones(4, np.float32))
    assert words in info.value.reason
    assert info.value.loc.lineno == fn.__code__.co_firstlineno + 1


# ---- device-side checks ---------------------------------------------------------------------------------


def take_rows(t, i):
    return t[i]


def test_an_index_out_of_range_is_numpys_index_error_after_the_launch():
    x = np.ones((3, 4), np.float32)
    k = pyasc.kernel(correct_scores, chip="tiny")
    assert_close(k(x, np.array([0, 1, -4], np.int32)), np.ones(3, np.float32))
    for bad in (np.array([0, 4, 1], np.int32), np.array([0, -5, 1], np.int32)):
        with pytest.raises(IndexError) as info:
            k(x, bad)
        line = correct_scores.__code__.co_firstlineno + 1
        assert str(info.value).startswith(f"{__file__}:{line}:")
        assert "out of bounds" in str(info.value)
    with pytest.raises(IndexError, match="an index into axis 0 of size 5 is out of bounds"):
        pyasc.kernel(take_rows, chip="tiny")(np.arange(5, dtype=np.float32), np.array([7], np.int32))


def test_a_failed_check_applies_no_write():
    def write_then_fail(x, i):
        x[0] = 9.0
        return x[i]

    x = np.zeros(3, np.float32)
    with pytest.raises(IndexError):
        pyasc.kernel(write_then_fail, chip="tiny")(x, np.array([5], np.int32))
    assert x[0] == 0.0


def test_checks_false_builds_no_checks_and_costs_nothing():
    x = np.ones((3, 4), np.float32)
    bad = np.array([0, 4, 1], np.int32)
    off = pyasc.kernel(correct_scores, chip="tiny", checks=False)
    assert_close(off(x, bad), np.array([1, 0, 1], np.float32))  # documented: an index out of range selects 0
    assert off.compile(x, bad).effects is None
    on = pyasc.kernel(correct_scores, chip="tiny")
    assert on.compile(x, bad).effects.status >= 0


def test_the_max_of_an_empty_selection_is_numpys_value_error():
    def f(x):
        return x[x > 10].max()

    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        pyasc.kernel(f, chip="tiny")(np.ones(4, np.float32))


def test_checks_inside_a_tensor_if_and_a_runtime_loop(rng):
    def f(t, i, n):
        acc = t[:2] * 0
        if t.sum() > 0:
            acc = acc + t[i]
        for _ in pyasc.runtime_range(n):
            acc = acc + t[i]
        return acc

    t = np.ones(4, np.float32)
    k = pyasc.kernel(f, chip="tiny")
    assert_close(k(t, np.array([1, 2], np.int32), np.int32(2)), np.full(2, 3.0, np.float32))
    with pytest.raises(IndexError):
        k(t, np.array([6, 0], np.int32), np.int32(2))
    with pytest.raises(IndexError):
        k(-t, np.array([6, 0], np.int32), np.int32(1))  # only the loop reads it


# ---- codegen and fusion fixes found on the way ---------------------------------------------------------


def outer_difference(x):
    y = x.astype(np.float32) * 2
    return y[:, None] - y[None, :], (y[None, :] < y[:, None]).sum(axis=1)


@pytest.mark.parametrize("chip", PRESETS)
def test_a_computed_value_expanded_along_two_axes(chip, rng):
    check(outer_difference, rng.integers(0, 5, 7).astype(np.int8), chip=chip)


def bool_constant_write(x):
    c = x > 0
    c[0] = False
    return c


W1, B1 = np.full((8, 1), 0.5, np.float32), np.full(1, 0.25, np.float32)


def one_column_dense(x):
    return 1 / (1 + np.exp(-(x @ W1 + B1)))


def test_bool_constant_writes_and_a_one_column_bias(rng):
    check(bool_constant_write, rng.standard_normal(6).astype(np.float32))
    check(one_column_dense, rng.standard_normal((4, 8)).astype(np.float32))


# ---- regressions from the differential fuzz (benchmarks/fuzz.py) -----------------------------------------


def fuzz_cumprod_of_a_0d(a0):
    t0 = a0 @ a0.T
    return np.cumprod(np.tanh(t0), axis=-1)


def fuzz_constants_at_opt_level_0(x, i):
    return np.nan_to_num(x / x), x[i]


def fuzz_ravel_and_sorts(a0):
    return np.diag(np.ravel(a0)), np.argsort(a0.sum(), axis=0), np.argsort(a0 * -1.5, axis=0, kind="stable")


def test_fuzz_regressions(rng):
    check(fuzz_cumprod_of_a_0d, rng.standard_normal(7).astype(np.float16))
    x = rng.standard_normal((3, 5)).astype(np.float32)
    x[0, 0] = 0.0
    with np.errstate(invalid="ignore"):
        want = fuzz_constants_at_opt_level_0(x, np.array([1, 2], np.int32))
    got = pyasc.kernel(fuzz_constants_at_opt_level_0, chip="tiny", opt_level=0)(x, np.array([1, 2], np.int32))
    assert_close(got, want)
    a = np.round(rng.standard_normal((7, 3)) * 2).astype(np.float32)  # ties: a stable order
    check(fuzz_ravel_and_sorts, a)
