"""arange/linspace/eye/identity/tri at compile time (np.<name>: a constant array) and as tensors
(pyasc.<name>), triu/tril on tensors and constants, outer; the located errors."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from test_golden_ops import values


def causal(x, a, b):
    t = x.shape[0]
    att = np.where(np.tri(t, t, dtype=bool), x, -1e4)          # the causal mask of an attention block
    pos = x + np.arange(t)[:, None] * np.linspace(0.0, 1.0, t)  # constants folded with constants
    scaled = x * np.eye(t) + np.identity(t)
    return att, pos, scaled, np.triu(x, 1), np.tril(np.ones((t, t))) + x, np.outer(a, b), a[:, None] * np.arange(3)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_constructors_compile_to_constants(dtype, chip, rng):
    x, a, b = values(rng, dtype, (6, 6)), values(rng, dtype, (4,)), values(rng, "int8", (3,))
    k = pyasc.kernel(causal, chip=chip)
    for g, w in zip(k(x, a, b), k.py_func(x, a, b)):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype.name == pyasc.dtypes.narrow(w.dtype)  # float64 constants narrow
        assert_close(g, w.astype(g.dtype))


def loop_over_arange(x):
    out = x
    for i in np.arange(3):  # a compile-time array: the loop unrolls
        out = out + float(i)
    return out


def test_a_compile_time_arange_is_iterable():
    x = np.ones((2, 3), np.float32)
    k = pyasc.kernel(loop_over_arange, chip="tiny")
    assert_close(k(x), k.py_func(x))


def tensors(x):
    return pyasc.arange(x.shape[1]) + x, pyasc.tri(3, dtype=np.int8), pyasc.eye(2, 3, k=1), pyasc.linspace(1, 2, 5)


def test_pyasc_constructors_are_tensors():
    x = np.zeros((2, 4), np.int32)
    k = pyasc.kernel(tensors, chip="tiny")
    got = k(x)
    want = k.py_func(x)
    assert [g.dtype.name for g in got] == ["int32", "int8", "float32", "float32"]  # numpy: int64, int8, float64 x2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def _arange_symbolic(x):
    return pyasc.arange(x.shape[0]) + x[:, 0]  # <- error


def _tril_1d(x):
    return np.tril(x[0])  # <- error


def _arange_bad(x):
    return pyasc.arange(0, 5, 0) + x  # <- error


@pytest.mark.parametrize("fn, dynamic, words", [
    (_arange_symbolic, True, "arange: start=x_d0 is a size only known at launch; arange needs compile-time arguments"),
    (_tril_1d, False, "tril: needs a tensor of at least 2 dimensions, got shape (5,)"),
    (_arange_bad, False, "arange: ZeroDivisionError: division by zero"),
], ids=["arange_symbolic", "tril_1d", "arange_step_0"])
def test_bad_arguments_are_located(fn, dynamic, words):
    lines, start = inspect.getsourcelines(fn)
    line = start + next(i for i, text in enumerate(lines) if "# <- error" in text)
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(fn, chip="tiny", dynamic=dynamic)(np.ones((3, 5), np.float32))
    err = info.value
    assert words in str(err), str(err)
    assert err.lineno == line and err.filename == __file__
