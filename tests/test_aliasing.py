"""numpy's aliasing in kernels: writes through views, immutable numpy scalars, slice and mask assignment.

Every kernel runs on the emulator (sanitizer on, both chip presets) and is compared with its own
`py_func` on copies of the inputs (numpy changes arrays in place; the kernel returns the new values).
The first five tests are the differential fuzzer's findings.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.errors import CompileError
from conftest import assert_close

CHIPS = ["tiny", "910b"]
K = np.ones(4, np.float32)


def run(fn, *args, chip="tiny"):
    k = pyasc.kernel(fn, chip=chip)
    got = k(*[np.array(a, copy=True) for a in args])
    want = fn(*[np.array(a, copy=True) for a in args])
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.dtype.name == dtypes.narrow(w.dtype), (g.dtype, w.dtype)
        assert_close(g, w.astype(g.dtype))
    return k


def through_slice(x):
    v = x[1:]
    v += 1.0
    return x


def through_reshape(x):
    v = x.reshape(2, 6)
    v += 1.0
    return x


def through_expand_dims(x):
    v = pyasc.expand_dims(x, 0)
    v *= 2.0
    return x


def through_transpose(x):
    v = x.T
    v -= 3.0
    return x


def through_column_slice(x):
    y = x[:, :2]
    y += 100.0
    return x, y


def view_of_view_and_base(x):
    a = x[1:]
    b = a[:, 1]
    x += 1.0        # a and b see it
    b *= 2.0        # x and a see it
    return x, a, b


def reshape_of_strided_view_is_a_copy(x):
    a = x[:, :2]
    r = a.reshape(-1)  # numpy copies here: writing r leaves x alone
    r += 5.0
    return x, r


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fn", [through_slice, through_reshape, through_expand_dims, through_transpose,
                                through_column_slice, view_of_view_and_base, reshape_of_strided_view_is_a_copy])
def test_in_place_update_through_a_view_reaches_the_base(fn, chip, rng):
    run(fn, rng.random((3, 4), dtype=np.float32), chip=chip)


def scalar_alias(x):
    s = pyasc.sum(x)
    g = s
    g += 1.0
    return s, g


def scalar_argument(x, s):
    g = s
    g += 1.0
    return x + s, g


def item_is_a_scalar(x):
    s = x[0]
    s += 10.0
    return x, s


@pytest.mark.parametrize("chip", CHIPS)
def test_numpy_scalars_are_immutable(chip, rng):
    run(scalar_alias, rng.random(6, dtype=np.float32), chip=chip)
    run(item_is_a_scalar, rng.random(6, dtype=np.float32), chip=chip)


@pytest.mark.parametrize("chip", CHIPS)
def test_numpy_scalar_argument_is_rebound_not_updated(chip, rng):
    x = rng.random(4, dtype=np.float32)
    k = pyasc.kernel(scalar_argument, chip=chip)
    for s in (np.float32(2.0), np.array(2.0, np.float32)):  # a numpy scalar, then a 0-d array (mutable)
        got = k(x, s.copy() if isinstance(s, np.ndarray) else s)
        want = scalar_argument(x, s.copy() if isinstance(s, np.ndarray) else s)
        for g, w in zip(got, want):
            assert_close(g, np.asarray(w))
    assert k.cache_info().misses == 2  # the two are different specialisations


def constant_alias(x):
    t = K * 2.0
    g = t
    g *= x
    return t


@pytest.mark.parametrize("chip", CHIPS)
def test_alias_of_a_compile_time_array_sees_the_update(chip, rng):
    run(constant_alias, rng.random(4, dtype=np.float32), chip=chip)


def write_into_broadcast(x):
    v = np.broadcast_to(x, (2, 4))
    v += 1.0
    return v


def test_write_into_a_read_only_broadcast_view_is_numpys_error(rng):
    with pytest.raises(ValueError, match="read-only"):
        write_into_broadcast(rng.random(4, dtype=np.float32))
    with pytest.raises(CompileError) as info:
        pyasc.kernel(write_into_broadcast).compile(rng.random(4, dtype=np.float32))
    e = info.value
    assert "`v += 1.0` writes into a read-only view" in e.reason
    assert "np.broadcast_to(x, (2, 4))" in e.reason and "output array is read-only" in e.reason
    assert e.loc.lineno == write_into_broadcast.__code__.co_firstlineno + 2


G = np.ones(4, np.float32)  # written by global_array_in_place, as numpy writes it


def global_array_in_place(x):
    g = G
    g += x
    return g * 1


def test_in_place_into_a_global_array_changes_it_like_numpy(rng):
    global G
    x = rng.random(4, dtype=np.float32)
    try:
        want = global_array_in_place(x)
        want_g = G.copy()
        G = np.ones(4, np.float32)
        got = pyasc.kernel(global_array_in_place, chip="tiny")(x)
        assert_close(got, want)
        assert_close(G, want_g)  # the small global was lifted to a hidden input and written back
    finally:
        G = np.ones(4, np.float32)


# ---- slice and mask assignment -------------------------------------------------------------------


def fill_in_a_loop(x):
    y = np.zeros((3, 4), np.float32)
    for i in range(3):
        y[i] = x[i] * i
    y[1:3, 2] = 7.0
    y[..., :2] += 1.0
    return y


def kv_cache_update(cache, new):
    pos = 5
    cache[:, pos:pos + new.shape[1]] = new
    return cache


def strided_writes(x):
    x[::2, 1:3] = -1.0
    x[::-1, 0] = 5.0
    x[1, 3] = 2
    return x


def vector_writes(v):
    v[2:5] = 0.0
    v[-1] += 3.0
    return v


def mask_write(x):
    x[x > 0.5] = 0.0
    x[x < 0.1] += 1.0
    return x


@pytest.mark.parametrize("chip", CHIPS)
def test_slice_writes_are_functional_updates(chip, rng):
    run(fill_in_a_loop, rng.random((3, 4), dtype=np.float32), chip=chip)
    run(strided_writes, rng.random((5, 70), dtype=np.float32), chip=chip)
    run(vector_writes, rng.random(37, dtype=np.float32), chip=chip)
    run(mask_write, rng.random((6, 9), dtype=np.float32), chip=chip)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "int32", "uint8", "int16"])
def test_kv_cache_update_golden(chip, dtype, rng):
    cache = (rng.random((4, 40, 16)) * 100).astype(dtype)
    new = (rng.random((4, 3, 16)) * 100).astype(dtype)
    run(kv_cache_update, cache, new, chip=chip)


def last_axis_steps(y, v):
    y[1:3, 100:4100] = v
    y[0, ::3] += 1
    y[:, 7:8] = y[:, 1:2]
    y[1:, 2::5] = -y[1:, 2::5]
    return y


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_slice_writes_with_steps_on_the_last_axis_and_wide_rows(chip, dtype, rng):
    y = (rng.random((3, 5000)) * 50).astype(dtype)
    v = (rng.random((2, 4000)) * 50).astype(dtype)
    run(last_axis_steps, y, v, chip=chip)


def reversed_last_axis(x, y):
    x[:, ::-2] = y[:, :4]
    x[1, ::-1] += 1.0
    return x


@pytest.mark.parametrize("chip", CHIPS)
def test_slice_writes_with_a_reversed_last_axis(chip, rng):
    run(reversed_last_axis, rng.random((3, 8), dtype=np.float32), rng.random((3, 8), dtype=np.float32), chip=chip)


def bool_write(b, c):
    b[1:, 2:6] = c[1:, 2:6]
    return b


@pytest.mark.parametrize("chip", CHIPS)
def test_slice_update_of_bool(chip, rng):
    run(bool_write, rng.random((4, 8)) > 0.5, rng.random((4, 8)) > 0.5, chip=chip)


def test_slice_update_op_is_in_the_graph(rng):
    art = pyasc.kernel(kv_cache_update, chip="tiny").compile(rng.random((2, 8, 4), dtype=np.float32),
                                                             rng.random((2, 2, 4), dtype=np.float32))
    assert [n.op for n in art.graph.nodes if n.op == "slice_update"] == ["slice_update"]
    assert any(k.template == "update" for k in art.kernels)


def bad_broadcast_value(x, v):
    x[1:3] = v
    return x


def bad_mask_values(x, v):
    x[x > 0] = v
    return x


def test_bad_writes_are_located_errors(rng):
    with pytest.raises(CompileError) as info:
        pyasc.kernel(bad_broadcast_value).compile(rng.random((4, 3), dtype=np.float32),
                                                  rng.random(4, dtype=np.float32))
    assert "could not broadcast input array from shape (4,) into shape (2, 3)" in info.value.reason
    with pytest.raises(CompileError) as info:
        pyasc.kernel(bad_mask_values).compile(rng.random(4, dtype=np.float32), rng.random(4, dtype=np.float32))
    assert "needs a single value there" in info.value.reason


def bool_square(b):
    return b ** 2, b ** 3, b * 2


@pytest.mark.parametrize("chip", CHIPS)
def test_bool_squared_is_int8_like_numpy(chip):
    run(bool_square, np.array([[True, False, True], [False, False, True]]), chip=chip)


def view_updated_in_a_tensor_if(x, c):
    v = x[1:]
    if c > 0:
        v += 1.0
    v *= 2.0        # still a view of x after the `if`
    return x, v


def write_in_a_helper(v):
    v[0] = 9.0


def view_passed_to_a_helper(x):
    write_in_a_helper(x[1])
    return x


def whole_writes(x, y):
    a = x[1:]
    a[...] = 0.0
    x[:] = x + y
    return x, a


def unpacked_rows_are_views(x):
    a, b, c = x
    b += 5.0
    return x, a, b


@pytest.mark.parametrize("chip", CHIPS)
def test_views_across_if_helpers_and_unpacking(chip, rng):
    x = rng.random((3, 4), dtype=np.float32)
    run(view_updated_in_a_tensor_if, x, np.float32(1.0), chip=chip)
    run(view_updated_in_a_tensor_if, x, np.array(-1.0, np.float32), chip=chip)
    run(view_passed_to_a_helper, x, chip=chip)
    run(whole_writes, x, rng.random((3, 4), dtype=np.float32), chip=chip)
    run(unpacked_rows_are_views, x, chip=chip)


def view_of_either_array(x, c):
    v = x[1:] if c > 0 else x[:2]
    v += 1.0
    return x


def test_write_through_a_view_chosen_at_run_time_is_an_error(rng):
    with pytest.raises(CompileError) as info:
        pyasc.kernel(view_of_either_array).compile(rng.random((3, 4), dtype=np.float32), np.float32(1))
    assert "writes into an array whose sharing pyasc cannot follow" in info.value.reason
    assert info.value.loc.lineno == view_of_either_array.__code__.co_firstlineno + 2


def write_row(y, v):
    y[0] = v
    return y


def write_row_of_itself(y):
    y[0] = y[1] * 2.0
    return y


def test_slice_writes_under_dynamic_shapes():
    with pytest.raises(CompileError) as info:
        pyasc.kernel(write_row, dynamic=True).compile(np.zeros((3, 4), np.float32), np.ones(4, np.float32))
    assert "`y[0]` stores a value of shape (v_d0,) into a region of shape (y_d1,)" in info.value.reason
    k = pyasc.kernel(write_row_of_itself, dynamic=True, chip="tiny")
    for shape in ((3, 4), (5, 33)):
        y = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        want = write_row_of_itself(y.copy())
        np.testing.assert_array_equal(k(y), want)
        np.testing.assert_array_equal(y, want)  # written in place, as numpy does
    assert k.cache_info().misses == 1


def base_written_under_a_run_time_view(x, c):
    v = x[1:] if c > 0 else x[:2]
    x += 1.0
    return v


def same_view_either_way(x, c):
    v = x[:2]
    if c > 0:
        v = x[:2]
        d = x[2] * 2.0
    else:
        d = x[2] * 3.0
    v += d
    return x


def test_views_chosen_at_run_time(rng):
    x = rng.random((3, 4), dtype=np.float32)
    with pytest.raises(CompileError) as info:
        pyasc.kernel(base_written_under_a_run_time_view).compile(x, np.float32(1))
    assert "`x += 1.0` changes an array that another variable may view" in info.value.reason
    run(same_view_either_way, x, np.float32(1.0))
    run(same_view_either_way, x, np.float32(-1.0))


def store_casts(a, f):
    a[0] = 2.9          # numpy truncates a float stored into an int array
    a[1:3] = f[1:3]     # float values into int8: unsafe cast, like numpy's setitem
    return a


def store_out_of_range(a):
    a[1] = 300
    return a


def test_stored_values_are_cast_like_numpy_setitem(rng):
    f = np.array([1.5, -2.7, 3.2, 4.0], np.float32)
    run(store_casts, np.zeros(4, np.int8), f)
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        store_out_of_range(np.zeros(4, np.int8))
    with pytest.raises(CompileError) as info:
        pyasc.kernel(store_out_of_range).compile(np.zeros(4, np.int8))
    assert "Python integer 300 out of bounds for int8" in info.value.reason


def kv_cache_update_at_7(cache, new):
    cache[:, 7:7 + new.shape[1]] = new
    return cache


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["float16", "int32"])
def test_region_rows_straddling_cores_move_in_groups(chip, dtype, rng):
    # 150 output rows split over the cores: groups of region rows cross the cores' boundaries
    cache = (rng.random((3, 50, 24)) * 100).astype(dtype)
    new = (rng.random((3, 22, 24)) * 100).astype(dtype)
    k = run(kv_cache_update_at_7, cache, new, chip=chip)
    (dk,) = [d for d in k.compile(cache, new).kernels if d.template == "update"]
    assert "groups of region rows" in dk.schedule_text


def write_into_an_empty_view(x):
    a = x + 0.0
    v = pyasc.expand_dims(a, 0)[1:]   # shape (0, 3, 4)
    v -= 0.5
    v[...] = 0.25
    a[2:2] = 9.0
    return v, a


@pytest.mark.parametrize("chip", CHIPS)
def test_writes_into_empty_regions_change_nothing(chip, rng):
    run(write_into_an_empty_view, rng.random((3, 4), dtype=np.float32), chip=chip)


def alias_kept_across_a_tensor_if(x, y):
    a = x + 0.0
    c0 = a               # the same array: after the `if` it still is
    if y[0, 1] > 0.5:
        a[...] = 3.0
    else:
        a *= 0.5
    v2 = a[::2]
    if y[0, 0] > 0.5:
        c0 += 1.0
    v2 -= y[0, 0]
    return c0, v2, a


def mask_alias_and_views_across_if(x, y):
    a = x + 0.0
    a[a > 0.5] = 0.0
    v1 = pyasc.expand_dims(a, 0)
    c2 = a
    if y[0, 1] > 0.5:
        a[...] = 3.0
    else:
        a *= 0.5
    c2[:1] += 1.0
    return v1.T, v1, a


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aliases_survive_a_tensor_if(chip, seed):
    # (found by a differential fuzz of view/alias programs against numpy)
    x = np.random.default_rng(seed).random((3, 4), dtype=np.float32)
    y = np.random.default_rng(seed + 10).random((3, 4), dtype=np.float32)
    run(alias_kept_across_a_tensor_if, x, y, chip=chip)
    run(mask_alias_and_views_across_if, x, y, chip=chip)


def views_of_a_base_not_used_after_the_if(x, y):
    a = x + 0.0
    v0 = a[0]
    v0[:1] += 1.0
    v2 = pyasc.expand_dims(a, 0)
    v3 = v2.T
    if y[0, 0] > 0.5:
        v2 += 1.0
    v3[0] = 7.0     # `a` is not read after the `if`, but v2 and v0 still view it
    return v3, v2, v0


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("seed", [0, 1])
def test_views_stay_views_when_only_they_are_used_after_the_if(chip, seed):
    x = np.random.default_rng(seed).random((3, 4), dtype=np.float32)
    y = np.random.default_rng(seed + 10).random((3, 4), dtype=np.float32)
    y[0, 0] = 0.9 if seed else 0.1
    run(views_of_a_base_not_used_after_the_if, x, y, chip=chip)
