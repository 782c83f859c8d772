"""The cost walker charges a rotating loop's shallower last iteration (a K edge chunk: fewer GM bytes, fewer
cube blocks) at its own pace in the loop's steady state, not at the full chunks' period, and the matmul bound
stays under it (tiny preset; one small emulated run with the sanitizer on)."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc import symbolic as sy
from pyasc.codegen import cost
from pyasc.codegen import tileops as T
from pyasc.codegen.schedule import Buffer, GmParam, GmRef, Loop, Ref, TileSchedule
from pyasc.testing import assert_close
from simulator import chips

TINY = chips.get("tiny")


def _chunks(k_total: int, depth: int = 128) -> tuple[cost.Cost, cost.Cost, cost.Cost]:
    """(the K loop, its first iteration alone, its last alone) of L1 chunks `depth` deep over k_total, each a
    GM -> L1 copy then an mmad, ping-ponged."""
    k = sy.sym("k")
    slot = sy.mod(k, 2)
    kc = sy.min_(depth, sy.add(k_total, sy.mul(-depth, k)))
    body = [T.copy_nd2nz(Ref("l1", slot), GmRef("in0", sy.mul(k, depth * 64 * 2)), "float16", kc, 64),
            T.mmad(Ref("acc", 0), Ref("a", slot), Ref("b", slot), 64, kc, 64, "float16", accumulate=1)]
    buffers = [Buffer("l1", "L1", "float16", depth * 64, 2), Buffer("a", "L0A", "float16", depth * 64, 2),
               Buffer("b", "L0B", "float16", depth * 64, 2), Buffer("acc", "L0C", "float32", 64 * 64, 1)]
    n = -(-k_total // depth)
    side = TileSchedule("probe", "aic", [GmParam("in0", "float16", "in")], {}, 1, buffers, [])

    def walk(start: int, stop: int) -> cost.Cost:
        return cost._Walker(side, TINY, 1).loop(Loop("k", start, stop, 1, body), {})
    return walk(0, n), walk(0, 1), walk(n - 1, n)


def test_a_shallower_last_chunk_is_charged_at_its_own_pace():
    whole, first, last = _chunks(128 + 32)
    pace = (max(first.busy.values()), max(last.busy.values()))
    assert pace[1] < pace[0]
    assert whole.steady == pytest.approx(pace[0] + pace[1])   # not 2 x the full chunk's period


def test_equal_chunks_keep_the_full_period():
    whole, first, _ = _chunks(2 * 128)
    assert whole.steady == pytest.approx(2 * max(first.busy.values()))


def mm_gelu(a, b, bias):
    return pyasc.gelu(a @ b + bias)


def test_a_product_with_a_k_edge_chunk_runs_right():
    # K = 144: the tiling chosen on tiny takes it in an L1 chunk 128 deep and a 16-deep edge chunk (sanitizer on
    # in the suite)
    rng = np.random.default_rng(3)
    a, b = ((rng.standard_normal(s) * 0.3).astype(np.float16) for s in ((48, 144), (144, 80)))
    bias = (rng.standard_normal(80) * 0.3).astype(np.float16)
    k = pyasc.kernel(mm_gelu, chip="tiny")
    assert_close(k(a, b, bias), k.py_func(a, b, bias))
