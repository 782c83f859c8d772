"""Regression: in a column reduction, an input read through expand_dims (an input view) is laid out like the
input itself. It was taken for a full tile and loaded contiguously, so a per-row operand of the reduced axis
(`y.reshape(1, 4, 1)[None]` against x of shape (6, 1, 4, 1), summed over axis 2) read the wrong bytes: zeros,
or under the sanitizer a read of never-written UB.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close


def column_sum(x, y):
    x4 = x.reshape(6, 1, 4, 1)
    y4 = np.expand_dims(y.reshape(1, 4, 1), 0)
    return np.sum(x4 * y4, axis=2)


def cast_column_sum(x, y):
    x4 = x.astype(np.int32).reshape(6, 1, 4, 1)
    y4 = np.expand_dims(y.astype(np.int32).reshape(1, 4, 1), 0)
    return np.sum(x4 * y4, axis=2).reshape(2, 3)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int16", "int32"])
@pytest.mark.parametrize("fn", [column_sum, cast_column_sum])
def test_input_view_in_a_column_reduction(fn, dtype, chip):
    x = np.arange(24).astype(dtype).reshape(2, 3, 4)
    y = (np.arange(4) - 1).astype(dtype)
    k = pyasc.kernel(fn, chip=chip)
    want = np.asarray(k.py_func(x, y))
    assert_close(k(x, y), want.astype(np.int32) if want.dtype == np.int64 else want)
