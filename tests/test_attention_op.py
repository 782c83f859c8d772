"""pyasc.attention: eager semantics against numpy float64 attention, the online-softmax recurrence its docstring
states, its checks, and a kernel calling it (whatever codegen lowers it to) against py_func."""
from __future__ import annotations

import math

import numpy as np
import pytest

import pyasc
from pyasc.errors import InferError
from conftest import assert_close


def reference(q, k, v, mask=None, scale=None, causal=False):
    """Attention in float64, written out in numpy."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    tq, tk, d = q.shape[-2], k.shape[-2], q.shape[-1]
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(d) if scale is None else scale)
    if mask is not None:
        s = s + np.asarray(mask, np.float64)
    if causal:
        j, i = np.meshgrid(np.arange(tk), np.arange(tq))
        s = np.where(j <= i + (tk - tq), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True) @ v


def online(q, k, v, block, scale=None, causal=False):
    """The recurrence of pyasc.attention's docstring, in float64, one key block at a time."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    tq, tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l_sum = np.zeros(q.shape[:-1] + (1,))
    o = np.zeros(q.shape[:-1] + (v.shape[-1],))
    for start in range(0, tk, block):
        kb, vb = k[..., start:start + block, :], v[..., start:start + block, :]
        s = q @ np.swapaxes(kb, -1, -2) * scale
        if causal:
            j, i = np.meshgrid(np.arange(start, start + kb.shape[-2]), np.arange(tq))
            s = np.where(j <= i + (tk - tq), s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        with np.errstate(invalid="ignore"):
            c = np.where(np.isneginf(m_new), 0.0, np.exp(m - m_new))  # the docstring's c = 0 while all is masked
            p = np.where(np.isneginf(m_new), 0.0, np.exp(s - m_new))
        l_sum = c * l_sum + p.sum(axis=-1, keepdims=True)
        o = c * o + p @ vb
        m = m_new
    with np.errstate(invalid="ignore"):
        return o / l_sum


TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float16: dict(rtol=2e-3, atol=2e-3)}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("t,d", [(1, 64), (7, 64), (128, 128)])
@pytest.mark.parametrize("causal", [False, True])
def test_eager_matches_float64_attention(rng, dtype, t, d, causal):
    q, k, v = (rng.standard_normal((2, t, d)).astype(dtype) for _ in range(3))
    got = pyasc.attention(q, k, v, causal=causal)
    assert got.dtype == dtype and got.shape == (2, t, d)
    np.testing.assert_allclose(got.astype(np.float64), reference(q, k, v, causal=causal), **TOL[dtype])


def test_mask_scale_and_broadcast_batch_dims(rng):
    q = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)      # (B, H, Tq, D)
    k = rng.standard_normal((1, 3, 9, 8)).astype(np.float32)      # batch broadcasts
    v = rng.standard_normal((9, 4)).astype(np.float32)            # (Tk, Dv), no batch dims at all
    mask = np.where(rng.random((2, 1, 1, 9)) < 0.3, -np.inf, 0.0).astype(np.float32)  # padding per batch
    mask[..., 0] = 0.0                                             # every row keeps a key
    got = pyasc.attention(q, k, v, mask=mask, scale=0.3)
    assert got.shape == (2, 3, 5, 4)
    np.testing.assert_allclose(got, reference(q, k, v, mask, scale=0.3), rtol=2e-5, atol=2e-6)


def test_causal_is_aligned_bottom_right(rng):
    # a decode step (Tq = 1) sees every cached key; Tq < Tk: row i sees keys j <= i + (Tk - Tq)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((1, 8), (6, 8), (6, 8)))
    np.testing.assert_allclose(pyasc.attention(q, k, v, causal=True), pyasc.attention(q, k, v), rtol=1e-6)
    q3 = rng.standard_normal((3, 8)).astype(np.float32)
    got = pyasc.attention(q3, k, v, causal=True)
    np.testing.assert_allclose(got[0], pyasc.attention(q3[:1], k[:4], v[:4])[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, reference(q3, k, v, causal=True), rtol=2e-5, atol=2e-6)


def test_a_fully_masked_row_is_nan_like_numpy(rng):
    q, k, v = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(3))
    mask = np.zeros((4, 4), np.float32)
    mask[2] = -np.inf
    with np.errstate(invalid="ignore"):  # numpy's -inf - -inf, as its own softmax would warn
        got = pyasc.attention(q, k, v, mask=mask)
        rows = pyasc.attention(rng.standard_normal((6, 8)).astype(np.float32), k, v, causal=True)
    assert np.isnan(got[2]).all() and not np.isnan(np.delete(got, 2, axis=0)).any()
    # causal with more queries than keys: the first Tq - Tk rows see nothing
    assert np.isnan(rows[:2]).all() and not np.isnan(rows[2:]).any()


@pytest.mark.parametrize("block", [1, 3, 16])
@pytest.mark.parametrize("causal", [False, True])
def test_the_online_softmax_recurrence_equals_the_formula(rng, block, causal):
    q, k, v = (rng.standard_normal((2, 10, 8)) * 3 for _ in range(3))   # large scores: the rescaling matters
    np.testing.assert_allclose(online(q, k, v, block, causal=causal), reference(q, k, v, causal=causal),
                               rtol=1e-12, atol=1e-12)
    q6 = rng.standard_normal((12, 8))  # Tq > Tk: fully masked rows stay NaN through the recurrence
    np.testing.assert_array_equal(np.isnan(online(q6, k[0], v[0], block, causal=True)),
                                  np.isnan(reference(q6, k[0], v[0], causal=True)))


@pytest.mark.parametrize("bad,message", [
    (lambda q, k, v: pyasc.attention(q.astype(np.int32), k, v), "q must be float16 or float32, got int32"),
    (lambda q, k, v: pyasc.attention(q, k[..., :4], v), r"different head dims D \(8 != 4\)"),
    (lambda q, k, v: pyasc.attention(q, k, v[:, :3]), r"different numbers of keys Tk \(5 != 3\)"),
    (lambda q, k, v: pyasc.attention(q, k, v, mask=np.ones((5, 5), bool)), "for a boolean mask pass where"),
    (lambda q, k, v: pyasc.attention(q, k, v, mask=np.zeros((3, 5, 5), np.float32)), "does not broadcast"),
    (lambda q, k, v: pyasc.attention(q, k, v, scale="a"), "scale must be a Python float"),
    (lambda q, k, v: pyasc.attention(q[0, 0], k, v), r"q must have at least 2 dimensions"),
])
def test_bad_inputs_are_clear_errors(rng, bad, message):
    q, k, v = (rng.standard_normal((2, 5, 8)).astype(np.float32) for _ in range(3))
    with pytest.raises(InferError, match=message) as e:
        bad(q, k, v)
    assert str(e.value).startswith("attention: ")


def test_a_kernel_calling_attention_matches_py_func(rng):
    @pyasc.kernel(chip="tiny")
    def attend(q, k, v, m):
        return pyasc.attention(q, k, v, mask=m, causal=True)

    q, k, v = (rng.standard_normal((2, 8, 16)).astype(np.float16) for _ in range(3))
    m = np.where(rng.random((8, 8)) < 0.2, -1e4, 0.0).astype(np.float16)
    got = attend(q, k, v, m)
    assert got.dtype == np.float16
    assert_close(got, attend.py_func(q, k, v, m))
    np.testing.assert_allclose(got.astype(np.float64), reference(q, k, v, m, causal=True), rtol=1e-2, atol=1e-2)


def attention_loss(q, k, v):
    return pyasc.sum(pyasc.attention(q, k, v, causal=True) ** 2)


def test_grad_goes_through_the_decomposition(rng):
    # attention has no VJP rule of its own: autodiff differentiates its decomposition (matmul, softmax, matmul)
    q, k, v = (rng.standard_normal((2, 5, 4)).astype(np.float32) for _ in range(3))
    grads = pyasc.grad(pyasc.kernel(attention_loss, backend="reference"), argnums=(0, 1, 2))(q, k, v)
    args = [a.astype(np.float64) for a in (q, k, v)]
    for i, g in enumerate(grads):
        want = np.zeros(args[i].shape)
        for idx in np.ndindex(args[i].shape):
            plus, minus = [a.copy() for a in args], [a.copy() for a in args]
            plus[i][idx] += 1e-6
            minus[i][idx] -= 1e-6
            want[idx] = (np.sum(reference(*plus, causal=True) ** 2) - np.sum(reference(*minus, causal=True) ** 2)) / 2e-6
        np.testing.assert_allclose(g, want, rtol=1e-3, atol=1e-4)


def test_the_roofline_counts_the_cube_work_a_causal_kernel_cannot_skip():
    from pyasc.ops import get
    from pyasc.tensor_type import TensorType
    q, kv = TensorType((2, 3, 8), "float16"), TensorType((2, 5, 8), "float16")
    macs = get("attention").cube_macs
    assert macs([q, kv, kv], {}) == 2 * 3 * 5 * 16
    # rows 0..2 see keys up to i + 2: 3, 4 and 5 of them
    assert macs([q, kv, kv], {"causal": True}) == 2 * (3 + 4 + 5) * 16
