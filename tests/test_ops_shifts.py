"""np.roll and np.diff (ops/shifts.py): what numpy code passes that golden_ops' makers do not, and the errors.

Values against numpy on both presets are test_golden_ops' (numpy_op_makers: roll, diff)."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError
from conftest import assert_close


@pyasc.kernel(chip="tiny")
def shifted(x, m):
    # a finite-difference stencil and a run-boundary mask, as numpy code writes them
    lap = np.roll(x, 1, axis=0) + np.roll(x, -1, axis=0) - 2 * x
    edges = np.diff(m.astype(np.int8), prepend=0, append=0, axis=1)
    return lap, edges, np.diff(x, n=0), np.diff(m, axis=0)


def test_stencil_and_boundaries_match_numpy(rng):
    x = rng.standard_normal((6, 5)).astype(np.float32)
    m = rng.random((6, 5)) < 0.5
    for got, want in zip(shifted(x, m), shifted.py_func(x, m)):
        assert got.shape == want.shape
        assert_close(got, want, check_dtype=False)  # prepend=0 is int64 in numpy: int32 here (README dtype rules)


@pytest.mark.parametrize("body, message", [
    (lambda x: np.roll(x, 1, axis=0), r"roll: axis 0 of shape \(x_d0, x_d1\) has a size only known at launch"),
    (lambda x: np.diff(x, n=-1), r"diff: order n must be a non-negative compile-time int, got -1"),
    (lambda x: np.roll(x, (1, 2, 3), axis=(0, 1)), r"roll: shift \(1, 2, 3\) and axis \(0, 1\) have different"),
])
def test_errors_name_the_op_and_the_line(body, message):
    def kern(x):
        return body(x)

    k = pyasc.kernel(kern, chip="tiny", dynamic=True)
    with pytest.raises(CompileError, match=message) as e:
        k(np.ones((3, 4), np.float32))
    assert "test_ops_shifts.py" in str(e.value)
