"""np.linalg.solve, inv, det, slogdet and cholesky (ops/linsolve.py) against numpy float64, and their located errors."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError
from conftest import assert_close


@pyasc.kernel(chip="tiny")
def systems(a, b, c):
    sign, logdet = np.linalg.slogdet(a)
    return np.linalg.solve(a, b), np.linalg.inv(a), np.linalg.det(a), np.linalg.solve(a, c), sign, logdet


def _check(kernel, *args):
    got = kernel(*args)
    want = kernel.py_func(*(np.asarray(a, np.float64) for a in args))
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == np.float32, f"result {i}: {g.dtype}"
        assert_close(g, np.asarray(w).astype(np.float32))


def test_solve_inv_det_slogdet_match_numpy(rng):
    a = (rng.standard_normal((3, 3, 3)) + 2 * np.eye(3)).astype(np.float32)
    a[0] = [[0, 2, 1], [1, 0, 0], [3, 1, 2]]  # a zero pivot in place: rows must be exchanged
    a[1] = -a[1]  # a negative determinant
    b = rng.standard_normal((3, 3, 2)).astype(np.float32)
    c = rng.standard_normal(3).astype(np.float32)  # one vector (M,) against a stack of matrices
    _check(systems, a, b, c)


@pyasc.kernel(chip="tiny")
def determinants(a):
    return np.linalg.det(a), np.linalg.slogdet(a)


def test_a_singular_matrix_has_determinant_zero_as_numpy_says():
    a = np.array([[[1, 2, 3], [2, 4, 6], [0, 1, 1]], [[2, 0, 0], [0, 3, 0], [0, 0, 4]]], np.float32)
    d, (sign, logdet) = determinants(a)
    assert_close(d, np.array([0.0, 24.0], np.float32))
    assert sign.tolist() == [0.0, 1.0] and logdet[0] == -np.inf
    assert_close(logdet[1:], np.log(np.array([24.0], np.float32)))


def test_integer_and_one_by_one_matrices():
    a = np.array([[[-4]], [[0]], [[7]]], np.int32)  # computed in float32 (numpy: float64)
    d, (sign, logdet) = determinants(a)
    assert d.dtype == np.float32 and d.tolist() == [-4.0, 0.0, 7.0]
    assert sign.tolist() == [-1.0, 0.0, 1.0] and logdet[1] == -np.inf
    assert_close(logdet[[0, 2]], np.log(np.array([4.0, 7.0], np.float32)))


@pyasc.kernel(chip="tiny")
def broadcast_solve(a, b):
    return np.linalg.solve(a, b)


def test_solve_broadcasts_the_leading_axes(rng):
    from numpy.linalg import solve  # the spelling of an import from numpy.linalg

    a = (rng.standard_normal((2, 2)) + 3 * np.eye(2)).astype(np.float32)
    b = rng.standard_normal((2, 2, 1)).astype(np.float32)
    assert_close(broadcast_solve(a, b), solve(a.astype(np.float64), b).astype(np.float32))


def _inv(a):
    return np.linalg.inv(a)


def _solve(a, b):
    return np.linalg.solve(a, b)


@pytest.mark.parametrize("fn,args,message", [
    (_inv, [np.ones((2, 3), np.float32)], r"Last 2 dimensions of the array must be square, got \(2, 3\)"),
    (_inv, [np.ones((3,), np.float32)], "1-dimensional array given"),
    (_inv, [np.eye(2, dtype=np.float16)], "float16 is unsupported in linalg"),
    (_inv, [np.eye(65, dtype=np.float32)], "larger than the 64x64"),
    (_solve, [np.eye(3, dtype=np.float32), np.ones((4,), np.float32)], r"b of shape \(4,\) does not match a"),
    (_solve, [np.ones((2, 3, 3), np.float32), np.ones((4, 3, 1), np.float32)], "do not broadcast"),
])
def test_bad_inputs_are_located_errors(fn, args, message):
    with pytest.raises(CompileError, match=message) as info:
        pyasc.kernel(fn, chip="tiny")(*args)
    assert "test_ops_linsolve.py" in str(info.value)  # the user's line


@pyasc.kernel(chip="tiny")
def inverse(a):
    return np.linalg.inv(a)


def test_a_singular_matrix_raises_numpys_linalg_error_at_the_call():
    a = np.array([[1, 2], [2, 4]], np.float32)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix") as info:
        inverse(a)
    assert "test_ops_linsolve.py" in str(info.value)
    with pytest.raises(np.linalg.LinAlgError):
        inverse.py_func(a)  # numpy's own
    assert_close(inverse(np.array([[2, 0], [0, 4]], np.float32)), np.array([[0.5, 0], [0, 0.25]], np.float32))
    # an input that is not finite is no error (LAPACK finds no zero pivot there): numpy's values
    bad = np.array([[np.inf, 0], [0, 1]], np.float32)
    assert_close(inverse(bad), np.linalg.inv(bad.astype(np.float64)).astype(np.float32))
    unchecked = pyasc.kernel(inverse.py_func, chip="tiny", checks=False)
    assert not np.isfinite(unchecked(a)).all()  # no check built: the zero pivot's inf/nan come back


@pyasc.kernel(chip="tiny")
def factor(a):
    return np.linalg.cholesky(a), np.linalg.cholesky(a, upper=True)


def test_cholesky_matches_numpy_and_refuses_a_matrix_that_is_not_positive_definite(rng):
    m = rng.standard_normal((2, 3, 3))
    a = (m @ m.transpose(0, 2, 1) + 3 * np.eye(3)).astype(np.float32)
    for g, w in zip(factor(a), factor.py_func(a.astype(np.float64))):
        assert_close(g, w.astype(np.float32))
    with pytest.raises(np.linalg.LinAlgError, match="Matrix is not positive definite"):
        factor(np.array([[1, 2, 0], [2, 1, 0], [0, 0, 1]], np.float32))
