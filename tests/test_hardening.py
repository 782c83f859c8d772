"""Inputs that used to end in an internal error, a wrong result or an exhausted machine (issue 21):
each is now a correct result or a clear, located user error."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import pyasc
from pyasc.runtime import limits
from simulator import chips


# ---- empty and one-element tensors ---------------------------------------------------------------------


def column_sum(x):
    return x.sum(axis=0)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_column_sum_of_an_empty_row_is_empty(dynamic):
    x = np.ones((1, 0), np.float32)
    got = pyasc.kernel(column_sum, chip="tiny", dynamic=dynamic)(x)
    assert got.shape == (0,) and got.dtype == np.float32


def empty_sum_plus(x, y):
    return x.sum(axis=1) + y


def empty_product_plus(x, w, y):
    return (x @ w) + y


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("fn, shapes", [(empty_sum_plus, [(2, 0), (2,)]), (empty_product_plus, [(2, 0), (0, 3), (2, 3)])],
                         ids=["sum", "matmul"])
def test_a_result_of_nothing_fused_with_another_input_keeps_it(fn, shapes, dynamic, opt_level, rng):
    """Fused, the empty operand was taken for the kernel's only input: `+ y` was dropped (zeros, silently)."""
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = pyasc.kernel(fn, chip="tiny", dynamic=dynamic, opt_level=opt_level)(*args)
    pyasc.testing.assert_close(got, fn(*args))


def scaled_and_expanded(x, g):
    g2 = np.expand_dims(g, (0, 2, 3))
    return x * g2, g2


@pytest.mark.parametrize("dynamic", [False, True])
def test_an_expanded_vector_returned_beside_its_broadcast_product(dynamic, rng):
    """g2 is one value per row of x's rows but not per outer index: stored by the product's kernel, it was
    written once per outer index, past its end (caught by the emulator; memory corruption on a chip)."""
    x = rng.standard_normal((2, 6, 4, 4)).astype(np.float32)
    g = rng.standard_normal(6).astype(np.float32)
    got = pyasc.kernel(scaled_and_expanded, chip="tiny", dynamic=dynamic)(x, g)
    want = scaled_and_expanded(x, g)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        pyasc.testing.assert_close(a, b)


def min_of_reductions(x):
    return pyasc.minimum(pyasc.min(x, axis=(0, -1)), pyasc.max(x, axis=-1))


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_a_per_row_operand_broadcast_over_some_of_the_rows(chip, rng):
    """min over (0, -1) is one value per x.shape[1] row, broadcast over x.shape[0]: the row kernel of max(-1)
    collapsed both row dims into one and read it as 12 contiguous values (a wrong result, or past the end)."""
    x = rng.standard_normal((4, 3, 3)).astype(np.float32)
    pyasc.testing.assert_close(pyasc.kernel(min_of_reductions, chip=chip)(x), min_of_reductions(x))


def normed_and_summed(x):
    y = pyasc.layer_norm(x)
    return pyasc.sum(y), y


def test_cross_core_partials_of_mixed_dtypes_have_their_own_scratch(rng):
    """A one-row kernel split over cores exchanges each reduction's partials through GM: the float16 sum's
    region was placed by its own item size, on top of the float32 mean's (a race the sanitizer caught)."""
    x = rng.standard_normal(10000).astype(np.float16)
    got = pyasc.kernel(normed_and_summed, chip="910b", dynamic=True, sanitize=True)(x)
    want = normed_and_summed(x)
    pyasc.testing.assert_close(got[1], want[1])
    exact = got[1].astype(np.float64).sum()  # a float16 sum that cancels to near 0: bounded by the sum of |y|
    assert abs(float(got[0]) - exact) <= np.finfo(np.float16).eps * np.abs(got[1].astype(np.float64)).sum()


def pick_by_max(x):
    return x if pyasc.max(x) > 0.5 else x * 2


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("shape", [(1,), (1, 1), ()])
@pytest.mark.parametrize("value", [0.25, 0.75])
def test_a_tensor_if_with_a_one_element_result(value, shape, dynamic):
    x = np.full(shape, value, np.float32)
    got = pyasc.kernel(pick_by_max, chip="tiny", dynamic=dynamic)(x)
    assert got.shape == shape
    pyasc.testing.assert_close(got, pick_by_max(x))


# ---- tensors larger than the chip's GM or this machine's memory ------------------------------------------


def plus_one(x):
    return x + 1.0


def plus_huge_zeros(x):
    return x + pyasc.zeros((1 << 40,), pyasc.float32)


def small_gm_chip(nbytes):
    return chips.get("tiny").replace(gm_bytes=nbytes)


def test_a_4_tib_result_is_a_located_compile_error():
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(plus_huge_zeros, chip="tiny")(np.ones(1, np.float32))
    e = info.value
    assert "this result is float32[1099511627776] (4.0 TiB), larger than the 64.0 GiB of GM" in e.reason
    assert e.lineno == plus_huge_zeros.__code__.co_firstlineno + 1 and "pyasc.zeros((1 << 40,)" in e.source_line


def test_a_broadcast_argument_larger_than_memory_is_refused_before_it_is_copied(monkeypatch):
    monkeypatch.setattr(limits, "host_available", lambda: 1 << 30)
    x = np.broadcast_to(np.float32(1), (1 << 28,))  # 1 GiB as a view of 4 bytes
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            pyasc.kernel(plus_one, chip="tiny")(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20  # nothing of its size was allocated
    assert "argument 'x' is float32[268435456] (1.0 GiB), to be copied into a contiguous array" in str(info.value)
    assert "this machine has 1.0 GiB of memory available" in str(info.value)


def test_an_argument_larger_than_the_chips_gm_names_the_sizes():
    x = np.broadcast_to(np.float32(1), (1 << 20,))  # 4 MiB
    with pytest.raises(ValueError) as info:
        pyasc.kernel(plus_one, chip=small_gm_chip(1 << 20))(x)
    assert "argument 'x' is float32[1048576] (4.0 MiB): larger than the 1.0 MiB of GM of the emulated chip" \
        in str(info.value)


def test_a_launch_larger_than_the_chips_gm_is_refused_before_anything_is_allocated():
    x = np.ones(96 << 10, np.float32)  # 384 KiB in, 384 KiB out: 768 KiB of a 512 KiB GM
    k = pyasc.kernel(plus_one, chip=small_gm_chip(512 << 10), dynamic=True)
    with pytest.raises(ValueError) as info:
        k(x)
    assert "plus_one() needs 768.0 KiB of GM for this call (input 0 384.0 KiB, result 0 384.0 KiB" in str(info.value)
    assert "more than the 512.0 KiB of the emulated chip" in str(info.value)
    small = np.ones(1024, np.float32)
    pyasc.testing.assert_close(k(small), small + 1.0)  # the same kernel, a call that fits


# ---- comprehensions -------------------------------------------------------------------------------------


def walrus_last(x):
    y = x
    _ = [(y := x + i) for i in range(3)]
    return y


def walrus_never_runs(x):
    y = x
    _ = [(y := x + i) for i in range(0)]
    return y


def walrus_only_inside(x):
    _ = [(z := x * i) for i in range(1, 4)]
    return z


def walrus_in_a_filter(x):
    kept = [u for i in range(4) if (u := i * 2) > 1]
    return x + u + len(kept)


@pytest.mark.parametrize("fn", [walrus_last, walrus_never_runs, walrus_only_inside, walrus_in_a_filter])
def test_a_walrus_in_a_comprehension_binds_in_the_kernel(fn):
    x = np.arange(3, dtype=np.float32)
    pyasc.testing.assert_close(pyasc.kernel(fn, chip="tiny")(x), fn(x))
