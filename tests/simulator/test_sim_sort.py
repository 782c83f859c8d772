"""The sort instructions: vsort32 (groups of 32 in descending order, with their indices) and vmrgsort4 (a
four-way merge of sorted lists), on hand-written programs, against numpy's stable sort."""
from __future__ import annotations

import numpy as np
import pytest

from simulator import UB, Device, Program
from simulator.errors import MemoryRuleError


def sort_program(n: int, dtype: str, lengths: tuple[int, int, int, int] | None):
    """values and indices -> vsort32 -> (vmrgsort4 of `lengths`) -> (value, index) pairs in GM."""
    p = Program("sort", "aiv", params=["x", "idx", "out"])
    size = np.dtype(dtype).itemsize
    xs, ids, sorted_at, merged_at = 0, 2048, 4096, 8192
    p.copy(UB(xs), p.gm("x"), dtype, burst=n, pad=True)
    p.copy(UB(ids), p.gm("idx"), "int32", burst=n, pad=True)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vsort32(UB(sorted_at), UB(xs), UB(ids), n, dtype)
    out = sorted_at
    if lengths is not None:
        p.pipe_barrier("V")
        p.vmrgsort4(UB(merged_at), UB(sorted_at), *lengths, dtype)
        out = merged_at
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("out"), UB(out), "int32", burst=n * 2)
    assert size in (2, 4)
    return p


def run(x: np.ndarray, lengths, chip="tiny"):
    dev = Device(chip)
    dev.upload("x", x)
    dev.upload("idx", np.arange(x.size, dtype=np.int32))
    dev.alloc("out", x.size * 8)
    p = sort_program(x.size, x.dtype.name, lengths)
    res = dev.launch(p, 1, ["x", "idx", "out"], sanitize=True)
    raw = dev.read("out", np.uint8).reshape(-1, 8)
    values = np.ascontiguousarray(raw[:, :x.dtype.itemsize]).view(x.dtype).reshape(-1)
    index = np.ascontiguousarray(raw[:, 4:]).view(np.int32).reshape(-1)
    return values, index, res


def descending(x: np.ndarray) -> np.ndarray:
    key = np.where(np.isnan(x), -np.inf, -x.astype(np.float64))
    return np.argsort(key, kind="stable")


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_sort_128_values_by_groups_and_a_merge(dtype, rng):
    x = rng.integers(-20, 20, 128).astype(dtype)  # ties: equal values keep their index order
    x[5] = np.nan
    values, index, res = run(x, (32, 32, 32, 32))
    want = descending(x)
    np.testing.assert_array_equal(index, want)
    np.testing.assert_array_equal(values, x[want])
    assert res.cycles > 0


def test_vsort32_alone_sorts_each_group(rng):
    x = rng.standard_normal(64).astype(np.float32)
    values, index, _ = run(x, None)
    for g in range(2):
        part = x[g * 32:(g + 1) * 32]
        np.testing.assert_array_equal(index[g * 32:(g + 1) * 32], g * 32 + descending(part))


def test_a_merge_of_three_lists_and_the_cost_grows_with_the_work(rng):
    x = rng.standard_normal(96).astype(np.float32)
    values, index, small = run(x, (32, 32, 32, 0))
    np.testing.assert_array_equal(index, descending(x))
    _, _, big = run(rng.standard_normal(128).astype(np.float32), (32, 32, 32, 32))
    assert big.cycles > small.cycles


def test_sort_rules_are_checked():
    p = Program("bad", "aiv", params=[])
    p.vsort32(UB(0), UB(1024), UB(2048), 40, "float32")
    with pytest.raises(MemoryRuleError, match="not a multiple of 32"):
        Device("tiny").launch(p, 1, {})
    dev = Device("tiny")
    dev.upload("x", np.arange(64, dtype=np.float32))  # ascending: not what vmrgsort4 merges
    q = Program("unsorted", "aiv", params=["x"])
    q.copy(UB(0), q.gm("x"), "int32", burst=64)
    q.set_flag("MTE2", "V", 0)
    q.wait_flag("MTE2", "V", 0)
    q.vmrgsort4(UB(4096), UB(0), 16, 16, 0, 0, "float32")
    with pytest.raises(MemoryRuleError, match="not sorted in descending order"):
        dev.launch(q, 1, ["x"])
