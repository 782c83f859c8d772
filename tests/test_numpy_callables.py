"""np.apply_along_axis and np.vectorize (frontend/npcallables.py): numpy's Python loops over slices and
elements, unrolled at compile time, against numpy; and Python's min/max of one-element tensors."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError
from conftest import assert_close


def relu_py(t):
    if t > 0:  # Python control flow on one element: what np.vectorize is for
        return t
    return 0.0 * t


@np.vectorize
def clipped(t, hi=1.0):
    return min(t, hi)


@pyasc.kernel(chip="tiny")
def callables(x, v):
    k = np.array([1.0, 2.0], np.float32)
    return (np.vectorize(relu_py)(x), clipped(x, hi=0.5), *np.vectorize(lambda a, b: (a + b, a * b))(x, v),
            np.vectorize(lambda t: t * 2, otypes=[np.float16])(v),
            np.vectorize(lambda t, s: t * s, excluded={1})(v, 3),
            np.apply_along_axis(np.sum, 1, x), np.apply_along_axis(lambda r: np.convolve(r, k, "same"), 1, x),
            np.apply_along_axis(lambda c: np.stack([c.min(), c.max()]), 0, x),
            np.apply_along_axis(lambda c, s: np.outer(c, c) * s, 1, x, 2.0),
            max(x[0, 0], v[1], 0.25), min(v[0], x[1, 1]))


def test_vectorize_and_apply_along_axis_match_numpy(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    v = rng.standard_normal(4).astype(np.float32)
    got, want = callables(x, v), callables.py_func(x, v)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == np.shape(w)
        assert_close(g, np.asarray(w), check_dtype=False)  # Python floats: float64 in numpy, float32 here
    assert got[4].dtype == np.float16  # otypes


def _kernel(body):
    def kern(x):
        return body(x)
    return pyasc.kernel(kern, chip="tiny", unroll_budget=64)


@pytest.mark.parametrize("body, message", [
    (lambda x: np.vectorize(lambda a, b: a @ b, signature="(n),(n)->()")(x, x),
     r"np.vectorize\(signature=...\) is not supported in a kernel"),
    (lambda x: np.apply_along_axis(lambda r: r[: int(r.shape[0] > 0) + 1], 5, x),
     r"axis 5 is out of bounds for array of dimension 2"),
    (lambda x: np.vectorize(lambda t: t + 1)(np.ones((9, 9), np.float32) * x[0, 0]),
     r"would exceed the unroll budget of 64 iterations"),
    (lambda x: np.apply_along_axis(lambda r: "s", 1, x), r"the function returned the string 's'"),
])
def test_errors_name_the_call(body, message):
    with pytest.raises(CompileError, match=message) as e:
        _kernel(body)(np.ones((3, 4), np.float32))
    assert "test_numpy_callables.py" in str(e.value)
