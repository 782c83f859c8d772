"""The vector template's lower bound (`templates/vector.py: bound`): never above the cost model's score of any
candidate, and the pruned search picks what scoring every candidate picks, on both presets: rows and chunks
modes, resident row vectors, row reductions (and the multi-pass ones, which get no bound), several outputs,
single buffering, a core cap, symbolic dims."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.codegen import lower

import kernels as K
from ranking_check import assert_pruning_keeps_the_choice

F32 = np.float32

CASES = [
    ("tiny", K.affine_relu, ((64, 100), (100,), (100,)), {}),
    ("tiny", K.chain, ((3, 4), (4,)), {}),
    ("tiny", K.mixed_broadcast, ((5, 1, 7), (1, 6, 7), (7,)), {}),
    ("tiny", K.softmax, ((33, 50),), {}),
    ("tiny", K.row_stats, ((40, 24),), {}),
    ("tiny", K.casts, ((3, 9000),), {}),                  # rows longer than a tile: chunks
    ("tiny", K.row_sum, ((4, 9000),), {}),                # a row reduction over long rows: multi-pass
    ("tiny", K.compare_select, ((70, 30), (30,)), {"buffer_num": 1}),
    ("tiny", K.layer_norm, ((20, 64), (64,), (64,)), {"cores": 2}),
    ("tiny", K.chain, ((12, 16), (16,)), {"dynamic": True}),
    ("910b", K.affine_relu, ((300, 257), (257,), (257,)), {}),
    ("910b", K.chain, ((3, 4), (4,)), {}),
    ("910b", K.log_softmax, ((130, 80),), {}),
    ("910b", K.casts, ((1, 100000),), {}),
]


@pytest.mark.parametrize("chip,fn,shapes,options", CASES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_the_bound_never_exceeds_the_score_and_pruning_keeps_the_choice(monkeypatch, chip, fn, shapes, options):
    args = [np.random.default_rng(0).random(s).astype(F32) for s in shapes]
    assert_pruning_keeps_the_choice(monkeypatch, lower, fn, args, chip, options)


def test_pruning_leaves_candidates_of_a_vector_kernel_unscored():
    x, w, b = np.zeros((64, 100), F32), np.zeros(100, F32), np.zeros(100, F32)
    (dk,) = pyasc.kernel(K.affine_relu, chip="tiny").compile(x, w, b).kernels
    r = dk.tiling
    assert dk.template == "vector" and r.unscored > 0
    assert f"({r.unscored} more candidates not scored" in r.text()
