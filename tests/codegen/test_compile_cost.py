"""What the matmul tiling search shares between candidates to compile faster (issue 20), and that sharing never
changes a bound or a score: a cube tiling's costed blocks do not depend on its L0C slots (candidates that
differ only there share them), and a mixed launch's vector side is one schedule, estimated once, for the
candidates that differ only on the cube side."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import pyasc
from pyasc.codegen import lower, schedules, tiling
from pyasc.codegen.cost import estimate
from pyasc.codegen.templates import matmul_bound

import matmul_kernels as K


class _Kept(tiling.Ranking):
    """A ranking that remembers itself and the job state its builds read."""

    made: list["_Kept"] = []

    def __init__(self, params, build, chip, dims, bound=None, floor=None, same=None):
        super().__init__(params, build, chip, dims, bound, floor, same=same)
        cells = [c.cell_contents for c in build.__closure__ or ()]
        self.state = next(c for c in cells if isinstance(c, lower.JobState))
        _Kept.made.append(self)


@pytest.fixture
def mixed_ranking(monkeypatch):
    """The ranking of a tiny-chip mixed launch (a product with a bias and a ReLU on the vector cores)."""
    _Kept.made = []
    monkeypatch.setattr(lower, "Ranking", _Kept)
    rng = np.random.default_rng(0)
    a, b = rng.integers(-2, 3, (96, 72)).astype(np.float16), rng.integers(-2, 3, (72, 80)).astype(np.float16)
    pyasc.kernel(K.bias_relu, chip="tiny").compile(a, b, np.ones(80, np.float16))
    (r,) = [r for r in _Kept.made if r.state.template.name == "mixed"]
    return r


def test_a_cube_tilings_costed_blocks_do_not_depend_on_its_l0c_slots(mixed_ranking):
    r = mixed_ranking
    (analysis,) = r.state.analyses
    mk, chip = analysis.mk, r.chip
    extents = matmul_bound.extents(mk, r.dims)
    cubes = {p.cube for p in r.params}
    assert {t.l0c_slots for t in cubes} == {1, 2}
    memo: dict = {}
    for t in cubes:
        sinks = (matmul_bound.WHOLE,)
        one = matmul_bound._Model(mk, replace(t, l0c_slots=1), chip, extents, sinks).terms()
        two = matmul_bound._Model(mk, replace(t, l0c_slots=2), chip, extents, sinks).terms()
        assert one == two, t.describe()
        # the caller's store and the module's memo give what the model gives
        expected = (one.core_cycles(t.l0c_slots, chip) * (1 - matmul_bound.BOUND_MARGIN), one.blocks)
        assert matmul_bound.cube_bound(mk, t, chip, r.dims, sinks, memo) == expected
        assert matmul_bound.cube_bound(mk, t, chip, r.dims) == expected
    assert len([k for k in memo if k[0] == "cube terms"]) == len({replace(t, l0c_slots=1) for t in cubes})


def test_candidates_differing_only_on_the_cube_share_one_vector_side_estimated_once(mixed_ranking):
    r = mixed_ranking
    (analysis,) = r.state.analyses
    r.take(len(r.params))   # every candidate built and scored
    by_side: dict[int, list] = {}
    for c in r.scored:
        by_side.setdefault(id(c.schedule.aiv), []).append(c)
    shared = [cs for cs in by_side.values() if len(cs) > 1]
    assert shared, "no two candidates share a vector side"
    for cs in shared:
        t0 = cs[0].params
        assert all((c.params.cube.tm, c.params.cube.tn, c.params.chunks) == (t0.cube.tm, t0.cube.tn, t0.chunks)
                   for c in cs)
        side = cs[0].schedule.aiv
        # its estimate, made once for all of them, is what a fresh walk of it gives (with its drain's tail)
        fresh = estimate(side, r.dims, r.chip, tail_from=schedules._touches_channel(cs[0].schedule))
        assert r._estimates[id(side)][1] == fresh
    for c in r.scored[:6]:   # and each score is what scoring without the memo gives
        assert schedules.score(c.schedule, r.dims, r.chip) == c.score
