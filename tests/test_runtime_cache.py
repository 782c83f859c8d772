"""The in-memory specialisation cache and dynamic=True."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc

from conftest import assert_close


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def make_kernel(**options):
    @pyasc.kernel(chip="tiny", **options)
    def k(x, y, alpha=1.0):
        return x * alpha + y

    return k


def test_cache_info_counts_hits_and_misses():
    k = make_kernel()
    assert k.cache_info() == (0, 0, 0, 0)
    x, y = f32(4, 8), f32(4, 8, seed=1)
    k(x, y)
    assert k.cache_info() == (0, 0, 1, 1)
    k(x, y)
    k(f32(4, 8, seed=2), y)  # new values, same specialisation
    info = k.cache_info()
    assert (info.hits, info.disk_hits, info.misses, info.currsize) == (2, 0, 1, 1)


@pytest.mark.parametrize("change", [
    lambda x, y: ((f32(4, 9), f32(4, 9)), {}),                                   # shape
    lambda x, y: ((f32(4, 8, 1), f32(4, 8, 1)), {}),                             # rank
    lambda x, y: ((x.astype(np.float16), y.astype(np.float16)), {}),             # dtype
    lambda x, y: ((x, y), {"alpha": 2.0}),                                       # constant value
    lambda x, y: ((x, y), {"alpha": 1}),                                         # constant type (1 vs 1.0)
    lambda x, y: ((x, f32(8)), {}),                                              # one argument's shape
])
def test_different_specialisations_compile_again(change):
    k = make_kernel()
    x, y = f32(4, 8), f32(4, 8, seed=1)
    k(x, y)
    args, kwargs = change(x, y)
    out = k(*args, **kwargs)
    assert k.cache_info().misses == 2 and k.cache_info().currsize == 2
    assert_close(out, k.py_func(*args, **kwargs))


def test_nan_and_signed_zero_constants_are_keyed_exactly():
    k = make_kernel()
    x, y = f32(3), f32(3, seed=1)
    k(x, y, alpha=float("nan"))
    k(x, y, alpha=float("nan"))
    assert k.cache_info().misses == 1  # NaN equals itself as a key
    k(x, y, alpha=0.0)
    k(x, y, alpha=-0.0)
    assert k.cache_info().misses == 3


def test_options_are_part_of_the_key_and_kernels_do_not_share_caches():
    a, b = make_kernel(opt_level=0), make_kernel(opt_level=3)
    x, y = f32(4), f32(4, seed=1)
    a(x, y)
    b(x, y)
    assert a.cache_info().misses == 1 and b.cache_info().misses == 1
    ca, cb = a.compile(x, y), b.compile(x, y)
    assert ca.key == cb.key  # the same argument records
    assert ca.full_key != cb.full_key and ca.key_hash != cb.key_hash
    assert dict(ca.components.options)["opt_level"] == 0 and dict(cb.components.options)["opt_level"] == 3


def test_compile_uses_and_fills_the_cache():
    k = make_kernel()
    x, y = f32(2, 2), f32(2, 2, seed=1)
    c1 = k.compile(x, y)
    k(x, y)
    assert k.compile(x, y) is c1
    assert k.cache_info() == (2, 0, 1, 1)


def test_cache_clear():
    k = make_kernel()
    x, y = f32(2), f32(2, seed=1)
    k(x, y)
    k.cache_clear()
    assert k.cache_info() == (0, 0, 0, 0)
    k(x, y)
    assert k.cache_info().misses == 1


def test_always_compile_bypasses_the_cache(monkeypatch):
    k = make_kernel()
    x, y = f32(2), f32(2, seed=1)
    k(x, y)
    monkeypatch.setenv("PYASC_ALWAYS_COMPILE", "1")
    k(x, y)
    k(x, y)
    assert k.cache_info().misses == 3 and k.cache_info().hits == 0


# ---- dynamic=True ----------------------------------------------------------------------


def test_dynamic_reuses_one_compile_across_shapes_of_the_same_rank():
    k = make_kernel(dynamic=True)
    for rows, cols in [(4, 8), (5, 3), (16, 7)]:
        x, y = f32(rows, cols), f32(rows, cols, seed=1)
        assert_close(k(x, y), x + y)
    assert k.cache_info().misses == 1 and k.cache_info().hits == 2
    k(f32(2, 3, 4), f32(2, 3, 4))  # another rank: another specialisation
    assert k.cache_info().misses == 2


def test_dynamic_dims_are_symbolic_names():
    k = make_kernel(dynamic=True)
    c = k.compile(f32(4, 8), f32(4, 8))
    data = c.graph.inputs
    assert [str(d) for d in data[0].outputs[0].shape] == ["x_d0", "x_d1"]
    assert [str(d) for d in data[1].outputs[0].shape] == ["y_d0", "y_d1"]
    assert all(d.isidentifier() for n in data for d in map(str, n.outputs[0].shape))
    assert "x: f32[x_d0,x_d1]" in c.signature


def test_dynamic_keeps_size_one_dims_static():
    k = make_kernel(dynamic=True)
    x, row = f32(4, 8), f32(1, 8)
    assert_close(k(x, row), x + row)   # broadcasting decided at compile time
    assert_close(k(x, x), x + x)       # a (4, 8) second argument is another specialisation
    assert k.cache_info().misses == 2
    c = k.compile(x, row)
    assert [str(d) for d in c.graph.inputs[1].outputs[0].shape] == ["1", "y_d1"]


@pyasc.kernel(dynamic=True)
def shapes_from_symbolic_dims(x, y):
    base = pyasc.zeros(x.shape, x.dtype) + pyasc.broadcast_to(y, x.shape)
    return base, x.reshape(x.shape[0], -1) * 2


def test_dynamic_shapes_in_attributes_run_at_every_size():
    for rows, cols in [(4, 6), (5, 3)]:
        x, y = f32(rows, cols), f32(cols, seed=1)
        for got, want in zip(shapes_from_symbolic_dims(x, y), shapes_from_symbolic_dims.py_func(x, y)):
            assert_close(got, want)
    assert shapes_from_symbolic_dims.cache_info().misses == 1


def test_dynamic_rejects_shapes_that_do_not_broadcast():
    k = make_kernel(dynamic=True)
    k(f32(4, 8), f32(4, 8))
    with pytest.raises(ValueError) as info:
        k(f32(4, 8), f32(4, 3))
    msg = str(info.value)
    assert "dynamic=True" in msg and "x: (4, 8), y: (4, 3)" in msg and "broadcast" in msg
    assert k.cache_info().misses == 1  # the same specialisation: the launch check refused it


def test_static_kernel_treats_other_shapes_as_new_specialisations():
    k = make_kernel()
    k(f32(4, 8), f32(4, 8))
    with pytest.raises(pyasc.CompileError, match="broadcast"):
        k(f32(4, 8), f32(4, 3))


def test_compiled_run_checks_the_specialisation():
    k = make_kernel()
    x, y = f32(4, 8), f32(4, 8, seed=1)
    c = k.compile(x, y)
    assert_close(c.run(x, y), x + y)
    with pytest.raises(TypeError, match=r"takes 2 tensor argument\(s\) \(x, y\), got 1"):
        c.run(x)
    with pytest.raises(ValueError, match="compiled for x: f32\\[4,8\\]"):
        c.run(f32(4, 9), f32(4, 9))
    with pytest.raises(ValueError, match="float16"):
        c.run(x.astype(np.float16), y)


def grown(args, extra):
    """The same arguments with every dim > 1 grown by `extra` (equal dims stay equal, so shapes stay compatible)."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            shape = tuple(d + extra if d > 1 else d for d in a.shape)
            out.append(np.resize(a, shape))
        else:
            out.append(a)
    return tuple(out)


@pytest.mark.parametrize("example", __import__("pyasc.examples", fromlist=["EXAMPLES"]).EXAMPLES,
                         ids=lambda e: e.name)
def test_dynamic_examples_run_on_other_shapes_without_recompiling(example):
    from pyasc.demo import compare

    k = pyasc.kernel(example.fn, chip="tiny", dynamic=True)
    base = example.make_inputs(np.random.default_rng(0))
    for extra in (0, 3, 5):
        args = grown(base, extra)
        ok, err, why = compare(k(*args), example.fn(*args))
        assert ok, f"{example.name} with shapes grown by {extra}: {why} (max abs err {err})"
    assert k.cache_info().misses == 1
