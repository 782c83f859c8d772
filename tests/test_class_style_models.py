"""Pytrees and objects together, as model code is written: a GPT-2-style block in plain numpy taking a
nested dict of weights, and the same block as a class (`self.params`, `pyasc.kernel(model)`)."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.testing import assert_close


T, C, H = 16, 64, 4
CAUSAL = np.tri(T, dtype=bool)


def layer_norm(x, g, b, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def linear(x, p):
    return x @ p["w"] + p["b"]


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def attention(x, p, n_head):
    c = x.shape[-1]
    d = c // n_head
    qkv = linear(x, p["c_attn"])
    out = p["c_proj"]["b"]
    for h in range(n_head):
        q, k, v = (qkv[:, i * c + h * d:i * c + (h + 1) * d] for i in range(3))
        s = np.where(CAUSAL, q @ k.T / np.sqrt(d), -1e10)
        out = out + (softmax(s) @ v) @ p["c_proj"]["w"][h * d:(h + 1) * d]  # concat(heads) @ W, by blocks
    return out


def block(x, params, n_head=H):
    x = x + attention(layer_norm(x, **params["ln_1"]), params["attn"], n_head)
    return x + linear(gelu(linear(layer_norm(x, **params["ln_2"]), params["mlp"]["c_fc"])), params["mlp"]["c_proj"])

def close(got, want):
    # numpy computes in float64 from `/ np.sqrt(d)` on (a float64 scalar is strong there, weak here: README)
    assert got.dtype == np.float32 and want.dtype == np.float64
    assert_close(got, want, check_dtype=False)


def make_params(rng):
    def w(*s):
        return (rng.standard_normal(s) * 0.05).astype(np.float32)

    return {"ln_1": {"g": np.ones(C, np.float32), "b": np.zeros(C, np.float32)},
            "attn": {"c_attn": {"w": w(C, 3 * C), "b": w(3 * C)}, "c_proj": {"w": w(C, C), "b": w(C)}},
            "ln_2": {"g": np.ones(C, np.float32), "b": np.zeros(C, np.float32)},
            "mlp": {"c_fc": {"w": w(C, 4 * C), "b": w(4 * C)}, "c_proj": {"w": w(4 * C, C), "b": w(C)}}}


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_gpt2_block_with_a_dict_of_weights(chip, rng):
    params = make_params(rng)
    x = rng.standard_normal((T, C)).astype(np.float32)
    k = pyasc.kernel(block, chip=chip)
    close(k(x, params), block(x, params))
    other = make_params(rng)  # new weights, same structure: the same compiled kernel
    close(k(x, other), block(x, other))
    assert k.cache_info()[:3] == (1, 0, 1)
    assert len(k.compile(x, params).tensor_params) == 13  # x and the 12 weight leaves


class GPT2Block:
    def __init__(self, params, n_head=H):
        self.params = params
        self.n_head = n_head

    def __call__(self, x):
        return block(x, self.params, self.n_head)


def test_gpt2_block_as_an_object(rng):
    model = GPT2Block(make_params(rng))
    x = rng.standard_normal((T, C)).astype(np.float32)
    k = pyasc.kernel(model, chip="tiny")
    close(k(x), model(x))
    model.params["mlp"]["c_fc"]["w"] *= 0.5  # 64 KiB: a lifted hidden input, read as it is now
    close(k(x), model(x))
    assert k.cache_info()[:3] == (1, 0, 1)
    assert len(k.compile(x).guards.hidden) == 5  # the four weight matrices and c_fc.b: 1 KiB or more
