"""The cost model's view of rotating slots across a matmul's output blocks (910b, estimates only: no emulation).

- A rotating slot is held from the op that first touches it to the one that last does: the second L0C slot
  lets block i's FixPipe run under block i+1's mmads, so with everything else equal it must score lower than
  one L0C slot (the emulator runs 1024^3 in 18,815 cycles with two, 19,160 with one).
- An L1 chunk loop that ends on the slot it starts on (an odd chunk count over two slots) makes the next
  block's first chunk wait for that slot instead of loading ahead.
"""
from __future__ import annotations

from pyasc.codegen import schedules
from pyasc.codegen.templates import matmul as matmul_template
from pyasc.codegen.templates.matmul_tiling import MatmulTiling
from simulator import chips

CHIP = chips.get("910b")


def _probe(m: int, k: int, n: int) -> matmul_template.CubeMatmul:
    return matmul_template.CubeMatmul("probe", m, n, k, (), "float16", "float16").for_chip(CHIP)


def _score(mk: matmul_template.CubeMatmul, t: MatmulTiling) -> float:
    return schedules.score(matmul_template.schedule(mk, t, CHIP), {}, CHIP).cycles


def test_a_second_accumulator_slot_scores_lower():
    mk = _probe(1024, 1024, 1024)
    one, two = (_score(mk, MatmulTiling(128, 128, 128, 2, slots, 24, 2)) for slots in (1, 2))
    assert two < one


def test_an_odd_chunk_count_costs_the_next_blocks_prefetch():
    # the same blocks and 256-deep chunks: K=768 ends every block on the slot it starts on, K=512 and K=1024 do
    # not. Without the wait the score is linear in the chunk count; the emulator runs the three in 14,054,
    # 21,735 and 23,893 cycles (the odd one 2,761 above the mean of its neighbours)
    t = MatmulTiling(128, 128, 128, 2, 2, 24, 2)
    two, three, four = (_score(_probe(512, k, 3072), t) for k in (512, 768, 1024))
    assert three - (two + four) / 2 > 0.05 * three
    # 128x256 blocks (two per core) at K=768: six 128-deep chunks beat three 256-deep ones (the emulator:
    # 19,806 against 20,866 cycles)
    mk = _probe(512, 768, 3072)
    assert _score(mk, MatmulTiling(128, 256, 64, 2, 1, 24, 2)) < _score(mk, MatmulTiling(128, 256, 64, 2, 1, 24, 4))
