"""The tiler's pruned search (`tiling.Ranking` with a template's lower bound): the matmul and mixed templates'
bounds never exceed the cost model's score of any candidate, and the pruned search picks what scoring every
candidate picks (same tiling, same score, same runners-up as far as it lists them), on both presets."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.codegen import lower, tiling

import matmul_kernels as K
from ranking_check import assert_pruning_keeps_the_choice


def _args(fn, dtype, m, n, k):
    ta, tb = fn in (K.mm_at, K.mm_abt), fn in (K.mm_bt, K.mm_abt)
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (k, m) if ta else (m, k)).astype(dtype)
    b = rng.integers(-2, 3, (n, k) if tb else (k, n)).astype(dtype)
    extra = {K.bias_relu: [np.ones(n, dtype)], K.bias_relu_f16: [np.ones(n, dtype)],
             K.mm_residual: [np.ones((m, n), "float32")]}
    return [a, b] + extra.get(fn, [])


# (kernel, dtype, M, N, K): plain products in every dtype and layout, K tails, many blocks per core, products
# with an epilogue (one mixed launch) and a product kept as a result too
CASES = [
    ("tiny", K.mm, "float16", 40, 36, 300),
    ("tiny", K.mm, "float32", 33, 20, 257),
    ("tiny", K.mm, "int8", 17, 40, 500),
    ("tiny", K.mm_bt, "float16", 100, 70, 90),
    ("tiny", K.mm_at, "float32", 64, 48, 130),
    ("tiny", K.mm_abt, "int8", 24, 20, 200),
    ("tiny", K.mm, "float16", 250, 200, 64),
    ("tiny", K.bias_relu, "float32", 70, 50, 40),
    ("tiny", K.bias_relu_f16, "float16", 96, 130, 60),
    ("tiny", K.mm_scaled_twice, "float16", 48, 80, 33),
    ("910b", K.mm, "float16", 200, 300, 260),
    ("910b", K.mm, "int8", 130, 96, 700),
    ("910b", K.mm_bt, "float32", 300, 65, 100),
    ("910b", K.bias_relu, "float16", 256, 192, 128),
    ("910b", K.mm_residual, "float32", 96, 160, 50),
]
# single buffering (no loop rotates) and a cap on the cores
OPTIONS = {("tiny", K.mm, "float16", 250, 200, 64): {"buffer_num": 1},
           ("910b", K.bias_relu, "float16", 256, 192, 128): {"buffer_num": 1, "cores": 3}}
CASES += [(*case, opts) for case, opts in OPTIONS.items()]
CASES = [c if len(c) == 7 else (*c, {}) for c in CASES]


@pytest.mark.parametrize("chip,fn,dtype,m,n,k,options", CASES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_the_bound_never_exceeds_the_score_and_pruning_keeps_the_choice(monkeypatch, chip, fn, dtype, m, n, k,
                                                                       options):
    assert_pruning_keeps_the_choice(monkeypatch, lower, fn, _args(fn, dtype, m, n, k), chip, options)


def test_pruning_scores_a_fraction_of_a_large_products_candidates():
    a, b = np.zeros((512, 512), np.float16), np.zeros((512, 512), np.float16)
    (dk,) = pyasc.kernel(K.mm, chip="910b").compile(a, b).kernels
    r = dk.tiling
    assert r.unscored > 2 * (len(r.others) + 1)
    assert f"({r.unscored} more candidates not scored" in r.text()


class _Score:
    def __init__(self, cycles: float):
        self.cycles = cycles


@pytest.fixture
def made_up_scores(monkeypatch):
    """Candidates are indices into these scores; building one records it."""
    scores = [5.0, 3.0, 9.0, 3.0, 7.0, 1.0, 8.0]
    monkeypatch.setattr(tiling.schedules, "check", lambda s, chip: None)
    monkeypatch.setattr(tiling.schedules, "score", lambda s, dims, chip, memo=None: _Score(scores[s]))
    return scores


def test_a_ranking_settles_in_score_order_whatever_the_bound(made_up_scores):
    """A bound equal to the score, a loose one and none give the same order (ties in candidate order)."""
    scores = made_up_scores

    def order(bound):
        r = tiling.Ranking(list(range(len(scores))), lambda p: p, None, {}, bound)
        first = [c.params for c in r.take(2)]
        return first, [c.params for c in r.take(len(scores))]

    exact, loose, none = order(lambda p: scores[p]), order(lambda p: scores[p] / 2), order(None)
    assert exact == loose == none == ([5, 1], [5, 1, 3, 0, 4, 6, 2])


def test_a_ranking_builds_only_what_its_bound_cannot_rule_out(made_up_scores):
    scores, built = made_up_scores, []
    r = tiling.Ranking(list(range(len(scores))), lambda p: built.append(p) or p, None, {}, lambda p: scores[p])
    assert [c.params for c in r.take(2)] == [5, 1]
    # the two cheapest are certain once every bound left (5.0 and up) is above the second score (3.0)
    assert sorted(built) == [1, 3, 5] and r.unscored == 4
    assert [c.params for c in r.known()] == [5, 1, 3]   # 3's place is certain too: its score is below 5.0


@pytest.mark.parametrize("seed", range(6))
def test_floors_change_nothing_but_how_many_bounds_are_computed(monkeypatch, seed):
    """With floors (each never above its bound) a ranking settles the same order, builds the same candidates and
    knows the same as with bounds alone, on random scores, bounds and floors with ties; it computes fewer
    bounds."""
    rng = np.random.default_rng(seed)
    n = 40
    scores = rng.integers(10, 30, n).astype(float)
    bounds = scores - rng.integers(0, 12, n) * (rng.random(n) < 0.8)
    floors = bounds - rng.integers(0, 8, n) * (rng.random(n) < 0.7)
    coarser = floors - rng.integers(0, 8, n) * (rng.random(n) < 0.7)
    monkeypatch.setattr(tiling.schedules, "check", lambda s, chip: None)
    monkeypatch.setattr(tiling.schedules, "score", lambda s, dims, chip, memo=None: _Score(scores[s]))

    def run(floor):
        built, asked = [], []
        r = tiling.Ranking(list(range(n)), lambda p: built.append(p) or p, None, {},
                           lambda p: asked.append(p) or bounds[p], floor)
        steps = []
        for k in (1, 2, 5):
            steps.append(([c.params for c in r.take(k)], sorted(built), [c.params for c in r.known()], r.unscored))
        return steps, len(asked)

    (plain, every), (floored, fewer) = run(None), run(lambda p: floors[p])
    assert floored == plain and every == n and fewer < n
    # and with two levels of floors, coarsest first: a bound only where neither rules the candidate out
    twice, fewest = run([lambda p: coarser[p], lambda p: floors[p]])
    assert twice == plain and fewest <= fewer
