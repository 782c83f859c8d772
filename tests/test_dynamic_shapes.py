"""dynamic=True: symbolic dim arithmetic, slices and negative indices on symbolic axes, one compile for many shapes.

Every kernel runs on the emulator (sanitizer on, both presets) against its py_func at several shapes:
sizes of 2 and 3 (1 is static under dynamic=True and gets its own specialisation), odd sizes, and sizes
around the "tiny" preset's UB (16 KiB: 4096 float32 per buffer).
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc import symbolic as sy
from pyasc.ir import Sym
from pyasc.testing import assert_close

CHIPS = ("tiny", "910b")
SHAPES_2D = [(2, 7), (9, 33), (3, 4095), (2, 4100), (17, 64)]


def _dyn(fn, chip):
    return pyasc.kernel(dynamic=True, chip=chip)(fn)


def _run_all(k, fn, shapes, rng, dtype=np.float32):
    for shape in shapes:
        x = rng.standard_normal(shape).astype(dtype)
        assert_close(k(x), fn(x))


# ---- the algebra ------------------------------------------------------------------------------


def test_sym_arithmetic_is_the_symbolic_algebra():
    d = Sym("d")
    assert isinstance((d - 5).e, sy.Expr) and str(d - 5) == "d - 5"
    assert str(2 * d) == "2*d" and d - d == 0 and (d + 3) - d == 3
    assert str(pyasc.tensor_type.ceildiv(d, 2)) == "ceildiv(d, 2)"
    assert str(pyasc.tensor_type.min_(d, 8)) == "min(d, 8)"
    assert Sym("min(d, 8)") == pyasc.tensor_type.min_(d, 8)  # text round trip
    assert (d * 4 - 5).evaluate({"d": 3}) == 7


def test_dims_of_slices_are_readable_expressions():
    def f(x):
        return x[1:, -5:] * 2.0

    art = pyasc.kernel(dynamic=True, chip="tiny")(f).compile(np.zeros((4, 9), np.float32))
    text = str(art.graph)
    assert "x_d0 - 1" in text and "min(x_d1, 5)" in text


# ---- slices and indices on symbolic axes -------------------------------------------------------

def tail5(x):
    return x[..., -5:] * 2.0


def drop_first(x):
    return x[1:] + 1.0


def last_row(x):
    return x[-1] * 3.0


def second_last(x):
    return x[-2, 1:] - 1.0


def inner(x):
    return x[1:-1, 2:-3] * 0.5


def stepped(x):
    return x[:, ::2] + 0.25


def head8(x):
    return x[:8] * 1.5


def reversed_rows(x):
    return x[::-1, 1:] + 2.0


SLICES = {f.__name__: f for f in (tail5, drop_first, last_row, second_last, inner, stepped, head8,
                                          reversed_rows)}


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("name", sorted(SLICES))
def test_slices_on_symbolic_axes(name, chip, rng):
    fn = SLICES[name]
    k = _dyn(fn, chip)
    shapes = [(2, 7), (9, 33), (3, 4100), (12, 6)]
    _run_all(k, fn, shapes, rng)
    assert k.cache_info().misses == 1


def test_slice_shorter_than_the_axis_clamps_like_numpy(rng):
    fn = SLICES["tail5"]
    k = _dyn(fn, "tiny")
    _run_all(k, fn, [(4, 3), (4, 5), (2, 6)], rng)  # -5: of 3 columns is all 3
    assert k.cache_info().misses == 1


def test_negative_index_out_of_range_at_launch_is_a_clear_error(rng):
    def f(x):
        return x[-5] * 2.0

    k = _dyn(f, "tiny")
    assert_close(k(np.ones((6, 4), np.float32)), f(np.ones((6, 4), np.float32)))
    with pytest.raises(ValueError, match=r"index -5 is out of bounds for axis 0 with size 3 \(at .*test_dynamic_"
                                         r"shapes.py:\d+:\d+: return x\[-5\] \* 2.0\)"):
        k(np.ones((3, 4), np.float32))


def test_builtin_min_of_a_dim_is_a_dim_expression(rng):
    def f(x):
        n = min(x.shape[0], 4)
        return x[:n] + 1.0

    k = _dyn(f, "tiny")
    _run_all(k, f, [(2, 5), (7, 5), (4, 9)], rng)
    assert k.cache_info().misses == 1


# ---- reshape with symbolic sizes -----------------------------------------------------------------


@pytest.mark.parametrize("chip", CHIPS)
def test_reshape_with_symbolic_sizes(chip, rng):
    def f(x):
        n = x.shape[0]
        return (x.reshape(n * x.shape[1]) * 2.0).reshape(n, -1)

    k = _dyn(f, chip)
    _run_all(k, f, [(2, 3), (5, 8), (3, 4100)], rng)
    assert k.cache_info().misses == 1


# ---- whole kernels at five shapes, one compile ----------------------------------------------------


@pytest.mark.parametrize("chip", CHIPS)
def test_dynamic_softmax_five_shapes_one_compile(chip, rng):
    def f(x):
        return pyasc.softmax(x, axis=-1)

    k = _dyn(f, chip)
    _run_all(k, f, SHAPES_2D, rng)
    assert k.cache_info().misses == 1


@pytest.mark.parametrize("chip", CHIPS)
def test_dynamic_layer_norm_five_shapes_one_compile(chip, rng):
    def f(x, w, b):
        return pyasc.layer_norm(x, w, b)

    k = _dyn(f, chip)
    for shape in SHAPES_2D:
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal(shape[-1:]).astype(np.float32)
        b = rng.standard_normal(shape[-1:]).astype(np.float32)
        assert_close(k(x, w, b), f(x, w, b))
    assert k.cache_info().misses == 1


# ---- broadcasting of two symbolic sizes -------------------------------------------------------------


def test_broadcast_of_two_symbolic_sizes_is_checked_at_launch(rng):
    def f(x, y):
        return x + y

    k = _dyn(f, "tiny")
    x, y = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    assert_close(k(x, y), f(x, y))
    # a size 1 is part of the key: it broadcasts, in its own specialisation
    y1 = rng.standard_normal((1, 4)).astype(np.float32)
    assert_close(k(x, y1), f(x, y1))
    with pytest.raises(ValueError, match=r"add: cannot broadcast shapes \(3, 4\) and \(5, 4\) \(at .*test_dynamic"
                                         r"_shapes.py:\d+:\d+: return x \+ y\)"):
        k(x, rng.standard_normal((5, 4)).astype(np.float32))


def test_verifier_rejects_a_dim_over_a_name_no_input_binds():
    from pyasc.ir import Graph, TensorType, VerificationError, verify

    g = Graph("g")
    x = g.add_input(TensorType((Sym("n"),), "float32"), name="x")
    y = g.add("broadcast_to", [x], {"shape": (Sym("m"), Sym("n"))}).out()
    g.set_outputs([y])
    with pytest.raises(VerificationError, match=r"unbound symbolic dim.*dim m of f32\[m,n\] uses m, which no input"):
        verify(g)
    ok = Graph("ok")
    x = ok.add_input(TensorType((Sym("n"),), "float32"), name="x")
    ok.set_outputs([ok.add("slice", [x], {"starts": (Sym("n") - 2,), "stops": (None,), "steps": (1,)}).out()])
    verify(ok)  # a start of n - 2 is an expression over a bound name


@pytest.mark.parametrize("chip", CHIPS)
def test_empty_slice_beside_a_symbolic_dim_launches_nothing(chip):
    def f(x):
        return x[:-2] * 2.0  # axis 0 has a static size 1: the result is (0, x_d1) for every launch

    k = _dyn(f, chip)
    for shape in [(1, 3), (1, 31)]:
        x = np.ones(shape, np.float32)
        out, prof = k.profile(x)
        assert out.shape == (0, shape[1]) and prof.launches == 0
    assert k.cache_info().misses == 1


@pytest.mark.parametrize("chip", CHIPS)
def test_operands_that_name_a_broadcast_dim_differently(chip, rng):
    def f(a0, a1, a2):
        return pyasc.where(a2 > 0.0, a2, a0), a1[-1]  # a2_d0 and a0_d1 are one size; a1 only sliced

    k = _dyn(f, chip)
    for rows, cols in [(31, 33), (4, 100)]:
        args = [rng.standard_normal(s).astype(np.float32) for s in [(rows, cols), (rows, cols), (cols,)]]
        for got, want in zip(k(*args), f(*args)):
            assert_close(got, want)
    assert k.cache_info().misses == 1


def test_matmul_over_a_contraction_axis_empty_at_launch_is_a_clear_error(rng):
    def f(a):
        return a[:-2] @ a[:-2]

    k = _dyn(f, "tiny")
    a = rng.standard_normal(6).astype(np.float32)
    assert_close(k(a), f(a))
    with pytest.raises(ValueError, match=r"matmul over an empty contraction axis \(K = 0 for these inputs\) is not "
                                         r"supported on the device \(at .*test_dynamic_shapes.py:\d+:\d+: "):
        k(np.ones(2, np.float32))


@pytest.mark.parametrize("chip", CHIPS)
def test_a_size_1_dim_is_its_own_specialisation(chip, rng):
    def f(x):
        return pyasc.softmax(x[..., 1:], axis=-1)

    k = _dyn(f, chip)
    _run_all(k, f, [(1, 7), (1, 4100)], rng)  # rows = 1: static, broadcasting and emptiness depend on it
    _run_all(k, f, [(5, 7), (2, 4097)], rng)
    assert k.cache_info().misses == 2


def split_three(x):
    a, b, c = pyasc.split(x, 3, axis=-1)
    return a * 2.0 + c, b


def split_uneven(x):
    p = np.array_split(x, 3, axis=0)
    q = np.split(x, [2, -1], axis=0)
    return p[0] * 1.0, p[2] + 0.0, q[1] * 3.0, q[2] - 1.0


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fn, shapes", [(split_three, [(4, 9), (2, 30), (3, 4101)]),
                                        (split_uneven, [(7, 5), (9, 3), (3, 33), (2, 4100)])])
def test_split_of_a_symbolic_axis(fn, shapes, chip, rng):
    k = _dyn(fn, chip)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        for got, want in zip(k(x), fn(x)):
            assert_close(got, want)
    assert k.cache_info().misses == 1


@pyasc.kernel(chip="tiny", dynamic=True)
def _fill_and_spread(a, b):
    b[:] = 0.5             # a scalar broadcasts to any region
    a[...] = a[0:1] * 2    # (1, a_d1) into (a_d0, a_d1): the same symbol, so numpy broadcasts for every size
    return a + b


def test_whole_region_writes_that_broadcast_for_every_size(rng):
    for shape in ((4, 6), (3, 5)):
        a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        a2, b2 = a.copy(), b.copy()
        assert_close(_fill_and_spread(a, b), _fill_and_spread.py_func(a2, b2))
        assert_close(a, a2)
        assert_close(b, b2)
    assert _fill_and_spread.cache_info().misses == 1


def test_a_write_whose_broadcast_depends_on_the_sizes_is_refused():
    @pyasc.kernel(chip="tiny", dynamic=True)
    def spread(a, b):
        a[...] = b[0:1]  # b's columns and a's are different symbols: numpy raises unless they agree
        return a

    with pytest.raises(pyasc.CompileError, match=r"stores a value of shape \(1, b_d1\) into a region of shape "
                                                 r"\(a_d0, a_d1\); with symbolic dims"):
        spread(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))


# ---- writes into part of a tensor with symbolic dims (the slice-update template, fields bound at launch) -----

_PARTIAL_WRITES = {
    "rows": lambda x: _write(x, (slice(1, 3),), x[1:3] * 2),
    "tail_rows": lambda x: _write(x, (slice(-2, None),), x[-2:] + 1),
    "column": lambda x: _write(x, (slice(None), 0), x[:, -1]),
    "step_rows": lambda x: _write(x, (slice(None, None, 2),), x[::2] * -1),
    "block_with_step": lambda x: _write(x, (slice(1, None), slice(0, None, 2)), x[1:, ::2] * 3),
    "scalar_tail": lambda x: _write(x, (slice(1, None),), 0.25),
}


def _write(x, where, value):
    z = x.copy()
    z[where] = value
    return z


@pytest.mark.parametrize("name", sorted(_PARTIAL_WRITES))
def test_partial_region_writes_on_symbolic_axes(name, rng):
    fn = _PARTIAL_WRITES[name]
    k = _dyn(fn, "tiny")
    _run_all(k, fn, [(2, 7), (9, 33), (5, 4100)], rng)
    assert k.cache_info().misses == 1


def test_partial_region_write_of_a_3d_tensor_on_the_910b(rng):
    def fn(x):
        z = x * 1.0
        z[:, 1:-1, 2:] = x[:, :-2, 2:] - 1.0
        return z

    _run_all(_dyn(fn, "910b"), fn, [(2, 5, 9), (3, 3, 40)], rng, dtype=np.float16)


def test_a_compile_time_numpy_call_on_a_symbolic_dim_says_so(rng):
    def f(x):
        return x * np.arange(x.shape[1], dtype=np.float32)

    with pytest.raises(pyasc.CompileError, match=r"np\.arange\(\) runs at compile time and needs sizes known then, "
                                                 r"but x_d1 is a symbolic dim \(dynamic=True\)") as info:
        _dyn(f, "tiny")(np.ones((2, 3), np.float32))
    assert info.value.loc.lineno == f.__code__.co_firstlineno + 1
    x = rng.standard_normal((2, 3)).astype(np.float32)
    assert_close(pyasc.kernel(f, chip="tiny")(x), f(x))  # static shapes: the same code compiles
