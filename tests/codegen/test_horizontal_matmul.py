"""Products of one A in one multi-output cube launch (GE's `horizontal_matmul`, templates/horizontal.py).

q/k/v-style projections of one input are one launch instead of one each; golden against py_func on the tiny
preset with the sanitizer on, odd sizes and one row; the fusion log says what was grouped or why not, and
`disable_passes=["horizontal_matmul"]` restores a launch per product.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from test_mixed import _run, _vals


def qkv(x, wq, wk, wv):
    return x @ wq, x @ wk, x @ wv


def mixed_shapes(x, w1, w2, w3):
    return x @ w1, x @ w2, x @ w3          # w3 has another N: w1 and w2 share a launch, w3 does not


def with_epilogue(x, w1, w2):
    return x @ w1, pyasc.relu(x @ w2) * 2   # the second product's kernel has an epilogue


def _log(kern, args) -> str:
    return "\n".join(kern.compile(*args).fusion_log)


@pytest.mark.parametrize("m,k,n", [(37, 48, 40), (1, 32, 24), (16, 16, 16)])
def test_products_of_one_a_are_one_launch(rng, m, k, n):
    args = (_vals(rng, (m, k)), *(_vals(rng, (k, n)) for _ in range(3)))
    kern, prof = _run(qkv, *args)
    assert prof.launches == 1
    (dk,) = kern.compile(*args).kernels
    assert dk.template == "matmul_group" and "multi-output" in dk.notes[0]
    assert "fused: matmul %1, matmul %2 into the launch of matmul %0 (3 products of one A (shared_a) in one " \
           "multi-output cube launch)" in _log(kern, args)


def test_disabling_the_pass_restores_a_launch_per_product(rng):
    args = (_vals(rng, (19, 32)), *(_vals(rng, (32, 24)) for _ in range(3)))
    kern, prof = _run(qkv, *args, disable_passes=["horizontal_matmul"])
    assert prof.launches == 3
    assert [dk.template for dk in kern.compile(*args).kernels] == ["matmul"] * 3
    assert "multi-output" not in _log(kern, args)


def test_refusals_are_logged(rng):
    x = _vals(rng, (9, 32))
    args = (x, _vals(rng, (32, 24)), _vals(rng, (32, 24)), _vals(rng, (32, 40)))
    kern, prof = _run(mixed_shapes, *args)
    assert prof.launches == 2
    log = _log(kern, args)
    assert "fused: matmul %1 into the launch of matmul %0 (2 products of one A" in log
    assert "not fused: matmul %2 into a multi-output launch: no other product of its A has a B and result of " \
           "its shape" in log
    args = (x, _vals(rng, (32, 24)), _vals(rng, (32, 24)))
    kern, prof = _run(with_epilogue, *args)
    assert prof.launches == 2
    assert "not fused: fused_matmul %1 into a multi-output launch: its kernel has an epilogue (mul)" in _log(kern, args)
