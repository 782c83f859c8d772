"""The attention template reads q, k, v and writes its result through views (sanitizer on, tiny preset).

Heads split off one projection (picoGPT's np.split, torch's view + transpose) and joined back are not data
moves of their own: fusion's view phase puts them in the attention kernel and the template addresses the
projection's columns and the joined result by strides (codegen/strided.py, templates/row_operands.py). What
strides cannot express stays a data move, and the result is right either way.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pyasc
from conftest import assert_close

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from attention import mha  # noqa: E402  (the example's picoGPT attention, unchanged numpy)

TOL = dict(rtol=2e-2, atol=2e-2, check_dtype=False)      # float16 against float64


def _templates(kern, *args) -> list[str]:
    return [k.template for k in kern.compile(*args).kernels]


def _views_log(kern, *args) -> list[str]:
    log = kern.compile(*args).stages["fusion_log"].splitlines()
    return [line for line in log if "views" in line]


def test_picogpt_heads_are_read_and_joined_through_views(rng):
    t, d, n_head = 32, 64, 2
    x = rng.standard_normal((t, d)).astype(np.float16)
    w_qkv = (rng.standard_normal((d, 3 * d)) / np.sqrt(d)).astype(np.float16)
    w_proj = (rng.standard_normal((d, d)) / np.sqrt(d)).astype(np.float16)
    kern = pyasc.kernel(mha, chip="tiny", sanitize=True)
    assert _templates(kern, x, w_qkv, w_proj, n_head) == ["matmul", "attention", "matmul"]
    assert len(_views_log(kern, x, w_qkv, w_proj, n_head)) == 4      # q, k, v and the joined result
    want = mha(*(a.astype(np.float64) for a in (x, w_qkv, w_proj)), n_head)
    assert_close(kern(x, w_qkv, w_proj, n_head), want, **TOL)


def torch_style(x, w):
    """(B, T, C) -> heads (B, H, T, D) by reshape + transpose, back to (B, T, C) the same way."""
    b, t, c = x.shape
    h = 4
    qkv = x @ w
    q, k, v = (qkv[..., i * c:(i + 1) * c].reshape(b, t, h, c // h).transpose(0, 2, 1, 3) for i in range(3))
    o = pyasc.attention(q, k, v, causal=True)
    return o.transpose(0, 2, 1, 3).reshape(b, t, c)


def test_four_dim_heads_of_a_batched_projection(rng):
    x = rng.standard_normal((2, 24, 64)).astype(np.float16)
    w = (rng.standard_normal((64, 192)) / 8).astype(np.float16)
    kern = pyasc.kernel(torch_style, chip="tiny", sanitize=True)
    assert _templates(kern, x, w) == ["matmul", "attention"]
    assert_close(kern(x, w), kern.py_func(x, w), **TOL)


def heads_last(q, k, v):
    """Arguments in (B, T, H, D), as a projection writes them; the result in the same layout."""
    o = pyasc.attention(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3))
    return o.transpose(0, 2, 1, 3)


def shared_kv(q, k, v):
    """Multi-query attention: one key/value head broadcast to all query heads."""
    shape = q.shape[:-1] + k.shape[-1:]
    return pyasc.attention(q, np.broadcast_to(k, shape), np.broadcast_to(v, shape), causal=True)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_arguments_transposed_in_the_kernel_are_one_launch(rng, chip):
    q, k, v = ((rng.standard_normal((2, 20, 3, 16)) * 0.8).astype(np.float16) for _ in range(3))
    kern = pyasc.kernel(heads_last, chip=chip, sanitize=True)
    assert _templates(kern, q, k, v) == ["attention"]
    assert_close(kern(q, k, v), kern.py_func(*(a.astype(np.float32) for a in (q, k, v))), **TOL)


def test_broadcast_key_heads_are_read_by_a_zero_stride(rng):
    q = (rng.standard_normal((2, 3, 20, 16)) * 0.8).astype(np.float16)
    k, v = ((rng.standard_normal((2, 1, 20, 16)) * 0.8).astype(np.float16) for _ in range(2))
    kern = pyasc.kernel(shared_kv, chip="tiny", sanitize=True)
    assert _templates(kern, q, k, v) == ["attention"]
    assert_close(kern(q, k, v), kern.py_func(*(a.astype(np.float32) for a in (q, k, v))), **TOL)


def reversed_keys(q, k, v):
    return pyasc.attention(q, k[:, ::-1], v)


def test_a_view_strides_cannot_express_stays_a_data_move(rng):
    q, k, v = ((rng.standard_normal((2, 20, 16)) * 0.8).astype(np.float16) for _ in range(3))
    kern = pyasc.kernel(reversed_keys, chip="tiny", sanitize=True)
    templates = _templates(kern, q, k, v)
    assert "attention" in templates and len(templates) == 2
    (line,) = _views_log(kern, q, k, v)
    assert line.startswith("not fused: views slice") and "strides cannot express" in line
    assert_close(kern(q, k, v), kern.py_func(*(a.astype(np.float32) for a in (q, k, v))), **TOL)


def test_opt_level_0_keeps_every_view_a_launch(rng):
    q, k, v = ((rng.standard_normal((2, 20, 3, 16)) * 0.8).astype(np.float16) for _ in range(3))
    kern = pyasc.kernel(heads_last, chip="tiny", opt_level=0, sanitize=True)
    assert _templates(kern, q, k, v).count("attention") == 1 and not _views_log(kern, q, k, v)
    assert_close(kern(q, k, v), kern.py_func(*(a.astype(np.float32) for a in (q, k, v))), **TOL)
