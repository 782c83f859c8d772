"""The matmul tiler's candidate search: walking down from a smaller tiling's answer lists exactly the candidates
the plain upward search lists (a footprint only grows with the block, the step, the chunk and the slots)."""
from __future__ import annotations

import pytest

from pyasc.codegen.template import buffer_nums
from pyasc.codegen.templates import matmul as matmul_template
from pyasc.codegen.templates import matmul_tiling as mt
from simulator import chips


def plain_candidates(mk, chip, buffer_num, cores, ms, ns, k_cap):
    """The search as first written: every depth from the shallowest up, every chunk from one step up."""
    def fits(tm, tn, tk, bn, l0c, steps=1):
        return mt.fits(mk, mt.MatmulTiling(tm, tn, tk, bn, l0c, cores, steps), chip)

    def largest_tk(tm, tn, bn, l0c):
        best, tk = 0, mk.k_quantum
        while tk <= k_cap:
            if not fits(tm, tn, tk, bn, l0c):
                break
            best = tk
            tk = tk * 2 if tk * 2 <= k_cap else (k_cap if tk < k_cap else k_cap + 1)
        return best

    def most_steps(tm, tn, tk, bn, l0c):
        most = 1
        while most * 2 * tk <= -(-k_cap // tk) * tk and fits(tm, tn, tk, bn, l0c, most * 2):
            most *= 2
        return most

    q, out = mk.k_quantum, []
    for bn in buffer_nums(buffer_num, most=2):
        for l0c in buffer_nums(buffer_num, most=2):
            for tm in ms:
                for tn in ns:
                    tk = largest_tk(tm, tn, bn, l0c)
                    if tk == 0:
                        continue
                    most = most_steps(tm, tn, tk, bn, l0c)
                    out += [mt.MatmulTiling(tm, tn, tk, bn, l0c, cores, s) for s in sorted({1, most, max(1, most // 2)})]
                    half = max(q, tk // 2 // q * q)
                    if half != tk:
                        deepest = most_steps(tm, tn, half, bn, l0c)
                        out += [mt.MatmulTiling(tm, tn, half, bn, l0c, cores, s) for s in sorted({1, deepest})]
    return out


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_pruned_candidate_search_lists_what_the_plain_search_lists(dtype):
    big = chips.get("910b")
    checked = 0
    for chip in (chips.get("tiny"), big, big.replace(l1_bytes=big.l1_bytes // 8)):
        cores = chip.cores_of("aic")
        out = "int32" if dtype == "int8" else "float32"
        for M, N, K in ((16, 16, 16), (48, 300, 40), (256, 256, 512), (512, 512, 512), (1000, 72, 4096),
                        (4096, 4096, 4096)):
            for ta, tb, bias in ((False, False, False), (True, False, True), (False, True, False)):
                if ta and dtype != "float16":
                    continue   # (a transposed A reaches the cube as float16 only)
                mk = matmul_template.CubeMatmul("probe", M, N, K, (), dtype, out, ta, tb, bias).for_chip(chip)
                k_cap = -(-K // mk.k_quantum) * mk.k_quantum
                for bn in (1, 2):
                    for ms, ns in ((mt._base_sizes(M, cores), mt._base_sizes(N, cores)),
                                   (mt._base_sizes(M, 0), mt._base_sizes(N, 0))):
                        want = plain_candidates(mk, chip, bn, cores, ms, ns, k_cap)
                        assert mt._candidates(mk, chip, bn, cores, ms, ns, k_cap) == want
                        checked += len(want)
    assert checked > 1000
