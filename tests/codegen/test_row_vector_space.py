"""Regression: a value computed before a row reduction that is lower-rank than the domain broadcasts like
numpy aligns it (trailing dims): `cast(v)[None, :]` inside `sum(where(mask, ., 0), -1)` is a row over every
row. The vector template took any computed (C,) value for one value per row and loaded v[r] per row,
a silent wrong result (found through pyasc.cumsum on int8 and float16 input).
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close

TRI = np.tril(np.ones((12, 12), bool))


def masked_rows(a):
    y = a.reshape(-1).astype(np.float32)
    return np.sum(np.where(TRI, np.expand_dims(y, 0), 0.0), axis=-1)


def scaled_rows(a):
    y = a.reshape(-1) * 2
    return np.max(np.expand_dims(y, 0) + TRI, axis=-1), np.sum(y + np.zeros((12, 12), a.dtype), axis=1)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "int32"])
@pytest.mark.parametrize("fn", [masked_rows, scaled_rows])
def test_row_vector_computed_before_a_reduction(fn, dtype, chip):
    a = (np.arange(12) - 4).astype(dtype).reshape(3, 4)
    k = pyasc.kernel(fn, chip=chip)
    got, want = k(a), k.py_func(a)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        w = np.asarray(w)
        assert_close(g, w.astype(np.int32) if w.dtype == np.int64 else w)  # pyasc narrows int64 sums to int32
