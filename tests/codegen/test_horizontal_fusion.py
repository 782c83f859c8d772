"""Independent kernels in one multi-output launch (GE's `horizontal_fusion`, templates/horizontal.py).

q/k/v-style projections of one input are one launch instead of one each, and so is the same vector kernel (RoPE)
on q and on k; golden against py_func on the tiny preset with the sanitizer on, odd sizes and one row; the fusion
log says what was grouped or why not, and `disable_passes=["horizontal_fusion"]` restores a launch per kernel.
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


def with_epilogue(x, w1, w2, w3):
    return x @ w1, np.exp(x @ w2), pyasc.relu(x @ w3)   # an epilogue reading no other product; a fused_matmul


def swiglu(x, wg, wu):
    g = x @ wg
    return g / (1 + np.exp(-g)) * (x @ wu)


def rms_swiglu(x, g, wg, wu):
    return swiglu(pyasc.rms_norm(x, g), wg, wu)


def rms_qkv(x, g, wq, wk, wv):
    return qkv(pyasc.rms_norm(x, g), wq, wk, wv)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate((-x[..., half:], x[..., :half]), axis=-1)


def qk_rope(x, wq, wk, cos, sin):
    """Llama's projections and RoPE: the products share a launch, so do the two RoPE kernels."""
    t = x.shape[0]
    q, k = ((x @ w).reshape(t, 2, -1).transpose(1, 0, 2) for w in (wq, wk))
    return tuple(z * cos + rotate_half(z) * sin for z in (q, k))


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
           "multi-output launch)" in _log(kern, args)


def test_disabling_the_pass_restores_a_launch_per_product(rng):
    args = (_vals(rng, (19, 32)), *(_vals(rng, (32, 24)) for _ in range(3)))
    kern, prof = _run(qkv, *args, disable_passes=["horizontal_fusion"])
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
    args = (x, _vals(rng, (32, 24)), _vals(rng, (32, 24)), _vals(rng, (32, 24)))
    kern, prof = _run(with_epilogue, *args)
    assert prof.launches == 3
    log = _log(kern, args)
    assert "not fused: matmul %1 into a multi-output launch: its kernel has an epilogue (exp) that reads no other " \
           "product of its A" in log
    assert "into a multi-output launch: it is a fused_matmul (bias or activation on the cube), not a plain " \
           "product" in log


@pytest.mark.parametrize("t", [19, 1])
def test_rope_on_q_and_k_is_one_vector_launch(rng, t):
    d = 16
    args = (_vals(rng, (t, 32)), _vals(rng, (32, 2 * d)), _vals(rng, (32, 2 * d)), _vals(rng, (t, d)),
            _vals(rng, (t, d)))
    kern, prof = _run(qk_rope, *args)
    assert [dk.template for dk in kern.compile(*args).kernels] == ["matmul_group", "vector_group"]
    assert prof.launches == 2
    assert "(same_kernel) in one multi-output launch" in _log(kern, args)
    kern, prof = _run(qk_rope, *args, disable_passes=["horizontal_fusion"])
    assert prof.launches == 4


def test_a_multi_output_launch_comes_back_from_the_disk_cache(rng, disk_cache):
    args = (_vals(rng, (9, 32)), *(_vals(rng, (32, 16)) for _ in range(3)))
    first = pyasc.kernel(qkv, chip="tiny")
    a = first.compile(*args)
    second = pyasc.kernel(qkv, chip="tiny")
    b = second.compile(*args)
    assert (a.origin, b.origin) == ("compiled", "disk")
    (plan,) = b.plans
    assert [m.anchor_node in plan.nodes for m in plan.horizontal] == [True] * 3
    for got, want in zip(second(*args), first(*args)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("m", [37, 1])
def test_swiglu_gate_and_up_are_one_mixed_launch(rng, m):
    """The up product on the cube cores first, an all-core barrier, then the gate product whose epilogue
    silu(gate) * up reads it (up lives in workspace scratch: nothing else reads it)."""
    args = (_vals(rng, (m, 32)), _vals(rng, (32, 40)), _vals(rng, (32, 40)))
    kern, prof = _run(swiglu, *args)
    assert prof.launches == 1
    (dk,) = kern.compile(*args).kernels
    assert dk.template == "mixed_group" and dk.core_type == "mix" and "all-core barrier" in dk.notes[1]
    assert "the epilogue of matmul %0 reads the others' results" in _log(kern, args)
    kern, prof = _run(swiglu, *args, disable_passes=["horizontal_fusion"])
    assert [dk.template for dk in kern.compile(*args).kernels] == ["matmul", "mixed"] and prof.launches == 2


@pytest.mark.parametrize("m", [37, 1])
def test_rms_norm_and_swiglu_are_one_launch(rng, m):
    """The RMS norm of A runs on the vector cores first (matmul_prologue), then both products read A from the
    launch's workspace."""
    args = (_vals(rng, (m, 32)), _vals(rng, (32,)) + 1, _vals(rng, (32, 40)), _vals(rng, (32, 40)))
    kern, prof = _run(rms_swiglu, *args)
    assert prof.launches == 1
    (dk,) = kern.compile(*args).kernels
    assert dk.template == "mixed_group" and "A's producer" in dk.notes[1]
    assert "fused: rms_norm %0 into the kernel of matmul %7 as the prologue of its A operand" in _log(kern, args)


@pytest.mark.parametrize("m", [9, 1])
def test_rms_norm_and_plain_products_are_one_launch(rng, m):
    """The vector cores compute A, every core meets at a barrier, then the cube cores run the products."""
    args = (_vals(rng, (m, 32)), _vals(rng, (32,)) + 1, *(_vals(rng, (32, 16)) for _ in range(3)))
    kern, prof = _run(rms_qkv, *args)
    assert prof.launches == 1
    (dk,) = kern.compile(*args).kernels
    assert dk.template == "prologue_group" and dk.core_type == "mix" and "A's producer" in dk.notes[1]
    assert "fused: rms_norm %0 into the kernel of matmul %1 as the prologue of its A operand" in _log(kern, args)
    kern, prof = _run(rms_qkv, *args, disable_passes=["matmul_prologue"])
    assert [dk.template for dk in kern.compile(*args).kernels] == ["vector", "matmul_group"]


def test_a_prologue_the_products_cannot_take_is_a_launch_first(rng):
    """float32 weights: each product casts A first (more than one launch each), so A's producer runs before them."""
    args = (_vals(rng, (9, 32)), _vals(rng, (32,)) + 1, *(_vals(rng, (32, 16), "float32") for _ in range(3)))
    kern, prof = _run(rms_qkv, *args)
    kernels = kern.compile(*args).kernels
    assert kernels[0].template == "vector" and "A's producer as a launch of its own" in kernels[0].notes[0]
    assert "not one multi-output launch" in " ".join(kernels[1].notes)


def twin_kernels(a, b, c, e, d):
    """The same elementwise kernel three times: on (a, b) and (c, b) it shares b and is one launch; on (e, d)
    it shares nothing with them and stays a launch of its own."""
    return np.exp(a) * b, np.exp(c) * b, np.exp(e) * d


def test_same_kernels_share_a_launch_only_when_they_share_an_input(rng):
    args = tuple(_vals(rng, (7, 40)) for _ in range(5))
    kern, prof = _run(twin_kernels, *args)
    assert [dk.template for dk in kern.compile(*args).kernels].count("vector_group") == 1
    assert prof.launches == 2


def test_a_group_that_falls_back_keeps_its_inner_result_in_scratch(rng):
    """N = 1: the gate's epilogue is no mixed launch, so the members launch apart; up (read only by the gate's
    epilogue, which GE kept inside the group) still gets a workspace location (was: a KeyError)."""
    args = (_vals(rng, (6, 8)), _vals(rng, (8, 1)), _vals(rng, (8, 1)))
    kern, prof = _run(swiglu, *args)
    kernels = kern.compile(*args).kernels
    assert prof.launches == 3 and "not one multi-output launch" in kernels[0].notes[0]


def diamonds(x):
    """Forty diamonds in a row: every value is read twice, so a node's key that embedded its producers' keys
    would hold 2**40 paths (the pass took minutes on numpy's integer functions before node keys were digests)."""
    for _ in range(40):
        x = np.abs(x) * 0.5 + x * 0.25
    return x


def test_a_kernel_of_reconverging_values_is_keyed_in_linear_time(rng):
    x = _vals(rng, (3, 16), "float32")
    kern, prof = _run(diamonds, x)
    assert prof.launches == 1
    np.testing.assert_allclose(kern(x), diamonds(x), rtol=1e-5)
