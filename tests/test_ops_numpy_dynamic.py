"""The numpy ops of issue 11 under dynamic=True (symbolic dims): one compile serves several shapes.

Ops that need a static size (an iota, a mask, split points, padding: argmax/argmin, take, cumsum, tril/triu,
split, pad, unequal concatenation) reject a symbolic size with a located error; their tests are beside them.
"""
from __future__ import annotations

import numpy as np

import pyasc
from conftest import assert_close


@pyasc.kernel(chip="tiny", dynamic=True)
def many(x, w):
    return (np.swapaxes(x, 0, 1), np.repeat(x, 2, axis=1), np.tile(x, (2, 1)), np.dot(x, w), np.clip(x, -0.5, 0.5),
            np.log1p(np.abs(x)), np.std(x, axis=0), np.square(x).copy(), np.logaddexp(x, 0.5), np.moveaxis(x, 0, 1),
            np.ones_like(x), np.outer(x[0], w[0]), np.stack([x, x * 2.0]), np.var(x, axis=-1, keepdims=True))


def test_one_compile_serves_several_shapes(rng):
    for rows, cols in ((3, 4), (5, 4), (2, 9)):
        x = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
        w = rng.uniform(-1, 1, (cols, cols)).astype(np.float32)
        for got, want in zip(many(x, w), many.py_func(x, w)):
            assert got.shape == want.shape
            assert_close(got, want)
    assert many.cache_info().misses == 1
