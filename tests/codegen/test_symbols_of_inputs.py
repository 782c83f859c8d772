"""Regression (dynamic=True): a kernel whose inputs name their dims by different symbols (checked equal at
launch) compiles. Scoring a tiling bound only the domain's symbols, so an input's stride over another
input's symbol was unbound (UnboundSymbolError, an internal error), e.g. `np.stack([x, y], axis=1)`.
"""
from __future__ import annotations

import numpy as np

import pyasc
from conftest import assert_close

MASK = np.array([[[False], [True]]])


@pyasc.kernel(chip="tiny", dynamic=True)
def select_views(x, y):
    return np.where(MASK, np.expand_dims(y, 1), np.expand_dims(x, 1)), np.stack([x, y], axis=1)


def test_inputs_with_their_own_symbols(rng):
    for shape in ((3, 4), (5, 7)):
        x, y = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
        for got, want in zip(select_views(x, y), select_views.py_func(x, y)):
            assert_close(got, want)
