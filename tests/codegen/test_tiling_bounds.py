"""The matmul tiler's lower bounds (issue 20): on a few hundred random candidates of random small products (tiny preset), each of a
template's bound levels (its floors, coarsest first, then its bound) is never above the next, and the bound never
above the candidate's score, the cost model's estimate the tiler ranks by. The plain cube template's (its FixPipes
at the unaligned rate where the output's rows are off the 512-byte boundary) and the mixed template's (its finest
level: the vector side's own estimate and drain)."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.codegen import lower, schedules, tiling
from pyasc.codegen.emit import CapacityError

import matmul_kernels as K


class _Kept(tiling.Ranking):
    """A ranking that remembers itself and its template's `same`."""

    made: list["_Kept"] = []

    def __init__(self, params, build, chip, dims, bound=None, floor=None, same=None):
        super().__init__(params, build, chip, dims, bound, floor, same=same)
        self.same = same
        _Kept.made.append(self)


# epilogues on the vector cores (one reading a bias row, one a residual tile, one keeping the product) and plain
# products, float16 (the mixed launch's cube dtype) and float32
KERNELS = [(K.bias_relu, "float16"), (K.mm_residual, "float16"), (K.mm_scaled_twice, "float16"), (K.mm, "float32"),
           (K.mm, "float16")]


def _args(fn, dtype, m, n, k, rng):
    a, b = rng.integers(-2, 3, (m, k)).astype(dtype), rng.integers(-2, 3, (k, n)).astype(dtype)
    extra = {K.bias_relu: [np.ones(n, dtype)], K.mm_residual: [np.ones((m, n), dtype)]}
    return [a, b] + extra.get(fn, [])


@pytest.fixture(scope="module")
def ranked() -> list[_Kept]:
    """The rankings of the matmul and mixed launches of KERNELS at random small sizes."""
    rng = np.random.default_rng(20)
    _Kept.made = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lower, "Ranking", _Kept)
        for fn, dtype in KERNELS:
            m, n, k = (int(x) for x in rng.integers(8, 160, 3))
            pyasc.kernel(fn, chip="tiny").compile(*_args(fn, dtype, m, n, k, rng))
    return [r for r in _Kept.made if r._levels]


def _score(r: _Kept, p) -> float | None:
    try:
        s = r.build(p)
        schedules.check(s, r.chip)
    except CapacityError:
        return None
    return schedules.score(s, r.dims, r.chip, r._estimates).cycles


def test_each_bound_level_is_below_the_next_and_the_bound_below_the_score(ranked):
    rng = np.random.default_rng(21)
    templates = {type(r.params[0]).__name__ for r in ranked}
    assert {"MatmulTiling", "MixedTiling"} <= templates
    pairs = [(r, p) for r in ranked for p in r.params]
    checked = 0
    for i in rng.choice(len(pairs), size=min(200, len(pairs)), replace=False):
        r, p = pairs[i]
        score = _score(r, p)
        if score is None:
            continue
        keys = [level(p) for level in r._levels]
        assert keys == sorted(keys), (p.describe(), keys)
        assert keys[-1] <= score, (p.describe(), keys[-1], score)
        checked += 1
    assert checked >= 150


def test_a_candidate_takes_its_twins_score_only_where_the_two_estimates_agree(ranked):
    # two L0C slots and at most one block per core: the one-slot twin's estimate is this one's (the template's
    # `same`); the tiler scores one of them. Checked by scoring both, on every such pair of random small products
    pairs = 0
    for r in ranked:
        for p in r.params:
            twin = r.same(p)
            if twin is None:
                continue
            assert twin in r.params and twin != p
            mine, theirs = _score(r, p), _score(r, twin)
            if mine is not None and theirs is not None:
                assert mine == theirs, (p.describe(), mine, theirs)
                pairs += 1
    assert pairs >= 10
