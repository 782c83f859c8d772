"""Writes that reach the caller, as in numpy: arguments written in place, pytree leaves, captured arrays,
attributes and items set on objects outside the kernel, the same array passed twice; each compared with
the same function run by numpy on copies of the same inputs."""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError
from pyasc.runtime.errors import ArgumentValueError
from conftest import assert_close

PRESETS = ["910b", "tiny"]


def run_both(fn, *args, chip="tiny", **options):
    """(kernel result, kernel's args after the call), (numpy result, numpy's args after the call)."""
    mine, theirs = copy.deepcopy(args), copy.deepcopy(args)
    got = pyasc.kernel(fn, chip=chip, **options)(*mine)
    want = fn(*theirs)
    return (got, mine), (want, theirs)


def same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            same(a[k], b[k])
    else:
        assert_close(a, b)


# ---- arguments ------------------------------------------------------------------------------------


def add_one(x):
    x += 1
    return x * 2


def slice_writes(x, v):
    x[0] = 1.0
    x[1:3, ::2] += v
    return x.sum(axis=0)


def kv_cache_write(cache, new, pos):
    cache[:, pos:pos + new.shape[1]] = new
    return cache[:, :pos + new.shape[1]].mean(axis=1)


@pytest.mark.parametrize("chip", PRESETS)
def test_argument_writes_reach_the_caller(chip, rng):
    x = rng.random((4, 8), dtype=np.float32)
    (got, (gx,)), (want, (wx,)) = run_both(add_one, x, chip=chip)
    same(got, want)
    same(gx, wx)
    assert not np.array_equal(gx, x)
    v = rng.random((2, 4), dtype=np.float32)
    (got, args), (want, ref) = run_both(slice_writes, x, v, chip=chip)
    same(got, want)
    same(args, ref)
    cache = np.zeros((2, 16, 8), np.float32)
    new = rng.random((2, 3, 8), dtype=np.float32)
    (got, args), (want, ref) = run_both(kv_cache_write, cache, new, 5, chip=chip)
    same(got, want)
    same(args, ref)


def returns_its_argument(x):
    x[1] = -x[1]
    return x


def test_a_returned_argument_is_the_callers_array(rng):
    x = rng.random(8, dtype=np.float32)
    want = returns_its_argument(x.copy())
    got = pyasc.kernel(returns_its_argument, chip="tiny")(x)
    assert got is x  # numpy returns the same object
    assert_close(x, want)


def two_names(x, y):
    x += y
    return y * 1


@pytest.mark.parametrize("chip", PRESETS)
def test_the_same_array_passed_twice_follows_numpys_order_of_effects(chip):
    a = np.arange(6, dtype=np.float32)
    want_a = a.copy()
    want = two_names(want_a, want_a)
    k = pyasc.kernel(two_names, chip=chip)
    got = k(a, a)
    assert_close(got, want)  # y sees the write through x: 2a
    assert_close(a, want_a)
    b, c = np.arange(6, dtype=np.float32), np.ones(6, np.float32)
    assert_close(k(b, c), c)  # two arrays: a new specialisation (the aliasing is in the key)
    assert_close(b, np.arange(6, dtype=np.float32) + 1)
    assert k.cache_info().misses == 2


def test_a_numpy_scalar_argument_is_not_written():
    def f(s, x):
        s += 1
        return x * s

    s = np.float32(2)
    got = pyasc.kernel(f, chip="tiny")(s, np.ones(3, np.float32))
    assert_close(got, np.full(3, 3.0, np.float32))
    assert s == np.float32(2)


def test_writing_a_read_only_argument_is_numpys_error():
    x = np.ones(4, np.float32)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        add_one(x)
    with pytest.raises(ArgumentValueError, match="writes argument 'x' in place, but that array is read-only"):
        pyasc.kernel(add_one, chip="tiny")(x)


def test_overlapping_views_of_a_written_argument_are_refused():
    a = np.arange(8, dtype=np.float32)
    with pytest.raises(ArgumentValueError, match="shares memory"):
        pyasc.kernel(two_names, chip="tiny")(a[:6], a[2:])


def not_written(x, y):
    return x + y


def test_no_write_no_effects(rng):
    k = pyasc.kernel(not_written, chip="tiny")
    x = rng.random(4, dtype=np.float32)
    assert k.compile(x, x).effects is None
    assert k.written_parameters(x, x) == ()
    assert pyasc.kernel(add_one, chip="tiny").written_parameters(x) == ("x",)


# ---- pytree arguments --------------------------------------------------------------------------------


def rwkv_state_update(x, state, i):
    state[i][3] = x * 0.5 + state[i][3]
    state[i][0][:2] = -1.0
    return state[i][3].sum()


def batchnorm_train(x, bn_param):
    momentum = bn_param.get("momentum", 0.9)
    mean = x.mean(axis=0)
    var = x.var(axis=0)
    bn_param["running_mean"] = momentum * bn_param["running_mean"] + (1 - momentum) * mean
    bn_param["running_var"] *= momentum
    bn_param["running_var"] += (1 - momentum) * var
    bn_param["steps"] = bn_param["steps"] + 1
    return (x - mean) / np.sqrt(var + 1e-5)


@pytest.mark.parametrize("chip", PRESETS)
def test_pytree_leaves_and_items_reach_the_caller(chip, rng):
    x = rng.random(8, dtype=np.float32)
    state = [[rng.random(8, dtype=np.float32) for _ in range(4)] for _ in range(2)]
    (got, args), (want, ref) = run_both(rwkv_state_update, x, state, 1, chip=chip)
    same(got, want)
    same(args, ref)
    bn = {"momentum": 0.9, "running_mean": np.zeros(8, np.float32), "running_var": np.ones(8, np.float32),
          "steps": 0}
    xs = rng.random((6, 8), dtype=np.float32)
    (got, (_, gbn)), (want, (_, wbn)) = run_both(batchnorm_train, xs, bn, chip=chip)
    assert_close(got, want, check_dtype=False)
    assert gbn["steps"] == wbn["steps"] == 1
    for key in ("running_mean", "running_var"):
        assert_close(gbn[key], wbn[key], check_dtype=False)


def test_a_set_item_is_a_new_array_and_an_augmented_one_the_same_array(rng):
    old_mean, old_var = np.zeros(8, np.float32), np.ones(8, np.float32)
    bn = {"momentum": 0.9, "running_mean": old_mean, "running_var": old_var, "steps": 0}
    pyasc.kernel(batchnorm_train, chip="tiny")(rng.random((6, 8), dtype=np.float32), bn)
    assert bn["running_mean"] is not old_mean and not old_mean.any()  # `=`: a new array, the old one unchanged
    assert bn["running_var"] is old_var  # `*=` and `+=`: numpy updates the array in place


# ---- objects: attributes set in a kernel, captured arrays written ------------------------------------


class Dense:
    def __init__(self, rng, n, m):
        self.w = (rng.standard_normal((n, m)) * 0.1).astype(np.float32)
        self.calls = 0

    def __call__(self, x):
        self.layer_input = x  # kept for the backward pass, as in many numpy layer classes
        self.out = x @ self.w
        self.calls += 1
        return self.out


@dataclass
class Model:
    layer: Dense

    def forward(self, x):
        return np.maximum(self.layer(x), 0)


def test_attributes_set_in_a_kernel_are_set_on_the_object(rng):
    ref, mine = Model(Dense(rng, 8, 4)), None
    mine = copy.deepcopy(ref)
    x = rng.random((3, 8), dtype=np.float32)
    want = ref.forward(x)
    k = pyasc.kernel(mine.forward, chip="tiny")
    got = k(x)
    assert_close(got, want)
    assert mine.layer.layer_input is x  # the very array passed in, as numpy stores it
    assert_close(mine.layer.out, ref.layer.out)
    assert mine.layer.calls == 1
    got2 = k(x)  # `calls` changed: the guard on it compiles again, and it counts on
    assert_close(got2, want)
    assert mine.layer.calls == 2


class KVCache:
    """A KV cache on the model object, written in place at a position (numpy Llama style)."""

    def __init__(self, t, d):
        self.k = np.zeros((t, d), np.float32)
        self.v = np.zeros((t, d), np.float32)

    def step(self, q, k, v, pos):
        self.k[pos] = k
        self.v[pos] = v
        s = self.k[:pos + 1] @ q
        e = np.exp(s - s.max())
        return (e / e.sum()) @ self.v[:pos + 1]


@pytest.mark.parametrize("size", [(4, 8), (64, 16)])  # a small cache is lifted because it is written
def test_a_captured_cache_is_written_in_place(size, rng):
    t, d = size
    ref, mine = KVCache(t, d), KVCache(t, d)
    k = pyasc.kernel(mine.step, chip="tiny")
    for pos in range(3):
        q, kk, vv = (rng.random(d, dtype=np.float32) for _ in range(3))
        assert_close(k(q, kk, vv, pos), ref.step(q, kk, vv, pos))
        assert_close(mine.k, ref.k)
        assert_close(mine.v, ref.v)
    assert k.cache_info().misses == 3  # one per position (a compile-time int), not one per write


class Growing:
    def __init__(self, d):
        self.cache = np.zeros((0, d), np.float32)

    def append(self, row):
        self.cache = np.concatenate([self.cache, row[None]], axis=0)
        return self.cache.sum(axis=0)


def test_a_stored_attribute_is_guarded_for_the_next_call(rng):
    ref, mine = Growing(4), Growing(4)
    k = pyasc.kernel(mine.append, chip="tiny")
    for _ in range(3):
        row = rng.random(4, dtype=np.float32)
        assert_close(k(row), ref.append(row))
        assert_close(mine.cache, ref.cache)
    assert mine.cache.shape == (3, 4)


def test_stores_inside_a_tensor_if_and_a_runtime_loop(rng):
    class Acc:
        def __init__(self):
            self.total = np.zeros(4, np.float32)

        def run(self, x, n):
            if x.sum() > 2:
                self.total = self.total + x
            else:
                self.total = self.total - x
            for _ in pyasc.runtime_range(n):
                self.total += 1.0
            return self.total * 1

    for x in (np.ones(4, np.float32), np.zeros(4, np.float32)):
        ref, mine = Acc(), Acc()
        want = ref.run(x, 3)
        got = pyasc.kernel(mine.run, chip="tiny")(x, np.int32(3))
        assert_close(got, want)
        assert_close(mine.total, ref.total)


def loop_writes(x, y, n):
    z = x * 1
    for _ in pyasc.runtime_range(n):
        z[1:3] += y
        x[0] += 1.0
    return z


def test_in_place_writes_inside_a_runtime_loop_are_carried(rng):
    x = rng.random((4, 8), dtype=np.float32)
    y = rng.random((2, 8), dtype=np.float32)
    (got, args), (want, ref) = run_both(loop_writes, x, y, np.int32(3))
    same(got, want)
    same(args, ref)


def branch_writes(x, c):
    if c.sum() > 0:
        x[0] = 5.0
    else:
        x[1] += 2.0
    return c * 2


@pytest.mark.parametrize("sign", [1, -1])
def test_writes_inside_a_tensor_if(sign, rng):
    x = rng.random((3, 4), dtype=np.float32)
    c = np.full(2, sign, np.float32)
    (got, args), (want, ref) = run_both(branch_writes, x, c)
    same(got, want)
    same(args, ref)


def test_dynamic_shapes_write_back(rng):
    for n in (3, 5):
        x = rng.random((n, 8), dtype=np.float32)
        (got, args), (want, ref) = run_both(add_one, x, dynamic=True)
        same(got, want)
        same(args, ref)


def test_writes_survive_the_disk_cache(disk_cache, rng):
    x = rng.random(8, dtype=np.float32)
    want = x.copy()
    add_one(want)
    a = x.copy()
    pyasc.kernel(add_one, chip="tiny")(a)
    fresh = pyasc.kernel(add_one, chip="tiny")
    b = x.copy()
    fresh(b)
    assert fresh.cache_info().disk_hits == 1
    assert_close(a, want)
    assert_close(b, want)


def test_setting_an_attribute_of_a_tensor_is_a_located_error():
    def f(x):
        x.shape = (2, 2)
        return x

    with pytest.raises(CompileError, match="sets the attribute `shape` of a tensor"):
        pyasc.kernel(f, chip="tiny").compile(np.ones(4, np.float32))


def test_kernel_built_dicts_and_dataclasses_are_plain_python(rng):
    @dataclass
    class Cache:
        k: object = None

    def f(x):
        d = {}
        d["a"] = x * 2
        d["a"] += 1
        c = Cache()
        c.k = d["a"]
        return c.k + d["a"]

    x = rng.random(4, dtype=np.float32)
    assert_close(pyasc.kernel(f, chip="tiny")(x), f(x))
