"""Reshape sinking (ge/reshape_sinking.py): elementwise readers of a reshaped computed value compute in its shape.

A concatenate along an axis is a `where` over the pieces stacked on a new axis and a reshape merging it: its
elementwise readers (RoPE's `x * cos + rotate_half(x) * sin`) were a second launch. The pass moves the reshape
below them; what it leaves in place is a NEAR_MISS in the fusion log with the reason. Golden tests on the tiny
preset with the sanitizer on, odd sizes.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from pyasc.codegen.domain import pointwise_domain
from pyasc.ge.reshape_sinking import refined_shape, refinement


def _compile_run(fn, *args, **opts):
    kern = pyasc.kernel(fn, chip="tiny", sanitize=True, **opts)
    art = kern.compile(*args)
    out = kern(*args)
    assert_close(out, kern.py_func(*args))
    log = [line for line in art.stages["fusion_log"].splitlines() if line.startswith("reshape_sinking")]
    return [k.template for k in art.kernels], log


# ---- the analysis, as data ------------------------------------------------------------------------


def test_refinement_names_the_fine_axes_of_each_coarse_axis():
    assert refinement((12, 256, 2, 32), (12, 256, 64)) == [[0], [1], [2, 3]]
    assert refinement((2, 1, 3), (6,)) == [[0, 1, 2]]
    assert refinement((4, 6), (24,)) == [[0, 1]]
    assert refinement((4, 6), (6, 4)) is None         # regroups elements: not a split of each axis
    assert refinement((4, 6), (4, 5)) is None


def test_refined_shape_keeps_broadcast_axes_broadcast():
    runs = refinement((12, 256, 2, 32), (12, 256, 64))
    fine, coarse = (12, 256, 2, 32), (12, 256, 64)
    assert refined_shape((256, 64), coarse, fine, runs) == (256, 2, 32)
    assert refined_shape((12, 1, 1), coarse, fine, runs) == (12, 1, 1, 1)
    assert refined_shape((64,), coarse, fine, runs) == (2, 32)
    assert refined_shape((3,), coarse, fine, runs) is None


def test_a_short_row_domain_takes_its_longest_outer_dim_as_rows():
    shape = (12, 256, 2, 32)
    operands = [(12, 256, 1, 32), (1, 1, 2, 1), (256, 2, 32), shape]
    d = pointwise_domain(shape, operands)
    assert d.reordered and (d.R, d.C) == (256, 32) and d.outer == (12, 2)
    long = pointwise_domain((4, 2, 4096), [(4, 1, 4096), (1, 2, 1), (4, 2, 4096)])
    assert not long.reordered and (long.R, long.C) == (2, 4096)


# ---- kernels --------------------------------------------------------------------------------------


def rope_heads(x, cos, sin, n_head: int):
    """Llama's RoPE on heads split by reshape and transpose, rotate_half as numpy ports write it."""
    t, c = x.shape
    q = x.reshape(t, n_head, c // n_head).transpose(1, 0, 2)
    h = q.shape[-1] // 2
    rot = np.concatenate((-q[..., h:], q[..., :h]), axis=-1)
    return q * cos + rot * sin


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_rope_with_rotate_half_is_one_launch(rng, dtype):
    t, n_head, d = 7, 3, 10
    x = rng.standard_normal((t, n_head * d)).astype(dtype)
    cos, sin = (rng.standard_normal((t, d)).astype(dtype) for _ in range(2))
    templates, log = _compile_run(rope_heads, x, cos, sin, n_head)
    assert templates == ["vector"]
    found = [line for line in log if ": found " in line]
    assert found and all("computed in (3, 7, 2, 5), the reshape to (3, 7, 10) after it" in line for line in found)


def joined_then_scaled(a, b, y):
    return np.concatenate((a * 2, b + 1), axis=-1) * y - 1


def test_a_concatenate_of_computed_pieces_fuses_with_its_elementwise_readers(rng):
    a, b = (rng.standard_normal((5, 3)).astype(np.float32) for _ in range(2))
    y = rng.standard_normal((1, 6)).astype(np.float32)
    templates, _ = _compile_run(joined_then_scaled, a, b, y)
    assert templates == ["vector"]


def joined_then_summed(a, b):
    return np.concatenate((a * 2, b), axis=-1).sum(axis=-1)


def test_a_reduction_reader_keeps_the_reshape_and_the_log_says_why(rng):
    a, b = (rng.standard_normal((5, 3)).astype(np.float32) for _ in range(2))
    _, log = _compile_run(joined_then_summed, a, b)
    assert len(log) == 1
    assert log[0].startswith("reshape_sinking: not matched at reshape %")
    assert "stays before sum %" in log[0] and log[0].endswith(
        "sum is not elementwise (the reshape stays a view of a kernel's result)")


def regrouped(a, y):
    return (a * 2).reshape(6, 4) * y


def test_a_reshape_that_regroups_elements_stays_and_the_log_says_why(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    y = rng.standard_normal((6, 4)).astype(np.float32)
    _, log = _compile_run(regrouped, a, y)
    assert len(log) == 1 and log[0].endswith("the reshape (4, 6) -> (6, 4) is not a split or merge of axes")


def test_the_pass_can_be_disabled(rng):
    t, n_head, d = 7, 3, 10
    x = rng.standard_normal((t, n_head * d)).astype(np.float16)
    cos, sin = (rng.standard_normal((t, d)).astype(np.float16) for _ in range(2))
    templates, log = _compile_run(rope_heads, x, cos, sin, n_head, disable_passes=("reshape_sinking",))
    assert templates == ["vector", "vector"] and log == []
