"""Elementwise kernels write their result through views (sanitizer on, tiny preset, odd small shapes).

A transpose or reshape below a value an elementwise kernel computes (the heads joined back by
`transpose(1, 0, 2).reshape(T, C)`, a rotated k returned for a KV cache) is no data-move launch: fusion puts the
chain into the kernel (phase 5, ge/fusion/views.py `write_chain`; or phase 1 through legality's `write_views`)
and the vector template stores each tile through the chain's strides (codegen/strided.py `output_views`). What
it cannot store that way (a transposed last axis) or a kernel that is not elementwise (a row reduction) keeps
the move as a launch of its own, and the fusion log says why.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close


def _run(fn, *args, chip="tiny"):
    kern = pyasc.kernel(fn, chip=chip, sanitize=True)
    art = kern.compile(*args)
    assert_close(kern(*args), kern.py_func(*args))
    return [k.template for k in art.kernels], art.stages["fusion_log"].splitlines()


def rope_kv(x, cos, sin, n_head: int):
    """RoPE on heads, the rotated tensor returned in (T, C) as a KV cache stores it."""
    t, c = x.shape
    q = x.reshape(t, n_head, c // n_head).transpose(1, 0, 2)
    h = q.shape[-1] // 2
    rot = np.concatenate((-q[..., h:], q[..., :h]), axis=-1)
    return (q * cos + rot * sin).transpose(1, 0, 2).reshape(t, c)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_rope_returned_as_rows_writes_through_the_heads_transpose(rng, chip):
    x = rng.standard_normal((7, 30)).astype(np.float16)
    cos, sin = (rng.standard_normal((7, 10)).astype(np.float16) for _ in range(2))
    templates, log = _run(rope_kv, x, cos, sin, 3, chip=chip)
    assert templates == ["vector"]
    assert "fused: views transpose %16, reshape %17 into the kernel of neg %3 (its template reads or writes " \
           "through them)" in log


def heads_joined(x, s):
    return (x * s + 1).transpose(1, 0, 2).reshape(x.shape[1], -1)


def test_heads_joined_by_transpose_and_reshape_are_written_by_strides(rng):
    x = rng.standard_normal((3, 5, 9)).astype(np.float32)
    templates, log = _run(heads_joined, x, np.float32(2))
    assert templates == ["vector"]
    assert "fused: add %2 -> post-dominator transpose %3" in log


def transposed_last(x):
    return (x * 2 + 1).T


def test_a_transposed_last_axis_stays_a_data_move_and_the_log_says_why(rng):
    templates, log = _run(transposed_last, rng.standard_normal((5, 7)).astype(np.float32))
    assert templates == ["vector", "datamove"]
    assert ("not fused: views transpose %4 into the kernel of mul %1: capacity: codegen cannot tile it: its result "
            "written through views to output 0: operand (5, 7): its row elements are not contiguous (a view "
            "strides them 5 apart)") in log


def softmax_heads(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).transpose(1, 0, 2)


def test_a_row_kernel_does_not_write_through_views_and_the_log_says_why(rng):
    templates, log = _run(softmax_heads, rng.standard_normal((3, 5, 7)).astype(np.float32))
    assert templates == ["vector", "datamove"]
    assert ("not fused: div %4 -> post-dominator transpose %5: transpose %5 would be written through by a "
            "row_reduce kernel: only an elementwise kernel writes its result through views") in log
