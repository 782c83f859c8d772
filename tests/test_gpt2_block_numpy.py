"""A GPT-2 transformer block written in plain numpy (picoGPT style) compiles unchanged and matches numpy:
np.split heads, an np.tri causal mask, np.var layer norm, np.hstack of the heads, a comprehension over
zip(*heads). (Weights are separate arguments here; a dict of weights is the pytree part of issue 11.)
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close


def layer_norm(x, g, b, eps=1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return g * (x - mean) / np.sqrt(var + eps) + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x, w_attn, b_attn, w_proj, b_proj, n_head):
    x = x @ w_attn + b_attn
    qkv = np.split(x, 3, axis=-1)
    qkv_heads = [np.split(t, n_head, axis=-1) for t in qkv]
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads)]
    x = np.hstack(out_heads)
    return x @ w_proj + b_proj


def block(x, ln1_g, ln1_b, w_attn, b_attn, w_proj, b_proj, ln2_g, ln2_b, w_fc, b_fc, w_out, b_out):
    x = x + mha(layer_norm(x, ln1_g, ln1_b), w_attn, b_attn, w_proj, b_proj, n_head=4)
    h = gelu(layer_norm(x, ln2_g, ln2_b) @ w_fc + b_fc) @ w_out + b_out
    return x + h


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_gpt2_block_matches_numpy(chip):
    rng = np.random.default_rng(0)
    t, d = 8, 32

    def w(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    args = [w(t, d), 1 + w(d), w(d), w(d, 3 * d), w(3 * d), w(d, d), w(d), 1 + w(d), w(d), w(d, 4 * d), w(4 * d),
            w(4 * d, d), w(d)]
    got = pyasc.kernel(block, chip=chip)(*args)
    want = block(*args)  # numpy computes in float64 here (np.sqrt(2 / np.pi) is a float64 scalar)
    assert got.dtype == np.float32 and got.shape == (t, d)
    assert_close(got, want.astype(np.float32))
