"""Elementwise and row kernels read an input through views (sanitizer on, tiny preset, odd small shapes).

A slice, transpose, reshape or squeeze that only re-strides a tensor is not a data-move launch of its own when
a vector kernel reads it: fusion's phase 4 (ge/fusion/views.py) copies it into the kernel and the vector
template reads the input by the view's strides (codegen/strided.py, domain.py). What strides cannot express
(a reversed axis) or the template cannot tile (a transposed last axis) stays a data move, with the reason in
the fusion log, and the result is right either way.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close


def _run(fn, *args, chip="tiny"):
    kern = pyasc.kernel(fn, chip=chip, sanitize=True)
    art = kern.compile(*args)
    log = [line for line in art.stages["fusion_log"].splitlines() if "views" in line]
    assert_close(kern(*args), kern.py_func(*args))
    return [k.template for k in art.kernels], log


def transposed_lead(x, y):
    return x.transpose(1, 0, 2) * 2.0 + y


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_a_transpose_of_the_leading_axes_is_read_by_strides(rng, chip):
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    y = rng.standard_normal((5, 3, 7)).astype(np.float32)
    templates, log = _run(transposed_lead, x, y, chip=chip)
    assert templates == ["vector"]
    assert log == ["fused: views transpose %0 into the kernel of mul %2 (its template reads or writes through them)"]


def split_heads(x, c):
    t, d = x.shape
    return x.reshape(t, 3, d // 3).transpose(1, 0, 2) * c


def test_heads_split_by_reshape_and_transpose_are_read_by_strides(rng):
    x = rng.standard_normal((5, 21)).astype(np.float16)
    c = rng.standard_normal((5, 7)).astype(np.float16)
    templates, log = _run(split_heads, x, c)
    assert templates == ["vector"]
    assert log == ["fused: views transpose %1 into the kernel of mul %2 (its template reads or writes through them)",
                   "fused: views reshape %0 into the kernel of mul %2 (its template reads or writes through them)"]


def heads_rope(x, cos, sin):
    t, d = x.shape
    q = x.reshape(t, 3, d // 3).transpose(1, 0, 2)
    h = q.shape[-1] // 2
    rot = np.concatenate([-q[..., h:], q[..., :h]], axis=-1)   # rotate_half: two slices of one input
    return q * cos + rot * sin


def test_rope_reads_both_halves_and_the_heads_of_one_input(rng):
    x = rng.standard_normal((5, 36)).astype(np.float16)
    cos, sin = (rng.standard_normal((5, 12)).astype(np.float16) for _ in range(2))
    templates, log = _run(heads_rope, x, cos, sin)
    # one kernel: the halves joined and rotated in the joined shape (ge/reshape_sinking.py)
    assert templates == ["vector"]
    assert all(line.startswith("fused: views") for line in log)
    assert any(line.startswith("fused: views slice") for line in log)


def sliced_broadcast(x, y):
    return np.broadcast_to(x[1:, 2:][None], (3, 4, 5)) * y + np.expand_dims(x[:4, :5], 0)


def test_a_broadcast_and_an_expand_dims_of_slices_are_read_by_strides(rng):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    y = rng.standard_normal((3, 4, 5)).astype(np.float32)
    templates, log = _run(sliced_broadcast, x, y)
    assert templates == ["vector"]
    assert len(log) == 2 and all(line.startswith("fused: views slice") for line in log)


def head_softmax(x):
    t, d = x.shape
    q = x.reshape(t, 3, d // 3).transpose(1, 0, 2)
    e = np.exp(q - q.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_a_row_kernel_reads_its_rows_through_views(rng):
    x = rng.standard_normal((5, 33)).astype(np.float32)
    templates, log = _run(head_softmax, x)
    assert templates == ["vector"]
    assert len(log) == 2 and all(line.startswith("fused: views") for line in log)


def reversed_rows(x, y):
    return x[::-1] + y


def last_axis_transposed(x, y):
    return x.T * 2.0 + y


def test_views_strides_cannot_read_stay_data_moves(rng):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    templates, log = _run(reversed_rows, x, x)
    assert templates == ["datamove", "vector"]
    assert log == ["not fused: views slice %0 into the kernel of add %1: capacity: codegen cannot tile it: slice: "
                   "slice makes a view that strides cannot express"]
    templates, log = _run(last_axis_transposed, x, x.T.copy())
    assert templates == ["datamove", "vector"]
    assert len(log) == 1 and log[0].startswith("not fused: views transpose %0 into the kernel of mul %2: capacity:")
    assert "its row elements are not contiguous (a view strides them 7 apart)" in log[0]
    assert log[0].count("not contiguous") == 1
