"""numpy code's everyday calls, compiled unchanged (issue 22, items 2 and 4-11): builtins on arrays and
objects, np.array/asarray, ufunc keywords, lambdas and nested defs, dict writes, iteration over tensors,
prints, None and strings in results; each compared with the same function run by numpy."""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import pyasc
from pyasc.errors import CompileError
from conftest import assert_close

PRESETS = ["tiny", "910b"]


def same(fn, *args, chip="tiny", check_dtype=False):
    got = pyasc.kernel(fn, chip=chip)(*args)
    want = fn(*args)
    assert_close(got, want, check_dtype=check_dtype)
    return got


# ---- item 2: type, hasattr, getattr ---------------------------------------------------------------------


def keras_convert(x, dtype=None):
    if dtype is None:
        dtype = np.result_type(getattr(x, "dtype", type(x)))
    return np.array(x, dtype=dtype)


def keras_relu(x):
    x = keras_convert(x)
    return np.maximum(x, np.array(0.0, x.dtype)), type(x) is np.ndarray, isinstance(x.sum(), np.floating)


@pytest.mark.parametrize("chip", PRESETS)
def test_type_and_three_argument_getattr(chip, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    got = pyasc.kernel(keras_relu, chip=chip)(x)
    assert_close(got[0], np.maximum(x, 0))
    assert bool(got[1]) is True and bool(got[2]) is True


class Layer:
    def __init__(self):
        self.w = np.full(4, 2.0, np.float32)

    def step(self, x):
        if not hasattr(self, "cache"):
            self.cache = np.zeros_like(x)
        self.cache = self.cache + x * getattr(self, "scale", 1.0)
        return self.cache * self.w


def test_hasattr_is_guarded_on_the_attributes_presence():
    ref, mine = Layer(), Layer()
    k = pyasc.kernel(mine.step, chip="tiny")
    x = np.arange(4, dtype=np.float32)
    for _ in range(3):
        assert_close(k(x), ref.step(x))
        assert_close(mine.cache, ref.cache)
    assert k.cache_info().misses == 2  # the first call made `cache`: the second compiles the other branch
    mine.scale = ref.scale = 3.0
    assert_close(k(x), ref.step(x))


def set_and_test(x):
    class_free = {}
    setattr(STATE, "last", x * 2)
    return any(d > 1 for d in x.shape), all([True, x.ndim == 2]), pow(x, 2), operator.index(x.shape[0]), class_free


class _State:
    pass


STATE = _State()


def test_setattr_any_all_pow_index():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = pyasc.kernel(set_and_test, chip="tiny")(x)
    assert got[0] is True and got[1] is True and got[3] == 2 and got[4] == {}
    assert_close(got[2], x ** 2)
    assert_close(STATE.last, x * 2)


def test_operator_index_of_a_tensor_is_a_located_error():
    def f(x):
        return x[: operator.index(x.sum())]

    with pytest.raises(CompileError, match="needs an integer known at compile time"):
        pyasc.kernel(f, chip="tiny").compile(np.ones(3, np.float32))


# ---- item 4: np.array / np.asarray ----------------------------------------------------------------------


def arrays(x, y):
    a = np.array(x, dtype="float16")
    b = np.asarray(x)
    c = np.array([x.sum(), y.max(), 2.0])
    d = np.array(x)
    d[0] = -1.0  # a copy: x is not written
    e = np.asarray([[x[0, 0], 1.0], [2.0, y[0]]], dtype=np.float32)
    return a, b is x, c, d, e, np.shape(y), np.ndim(x), np.size(x)


@pytest.mark.parametrize("chip", PRESETS)
def test_np_array_copies_asarray_does_not(chip, rng):
    x, y = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    xs = x.copy()
    got = pyasc.kernel(arrays, chip=chip)(x, y)
    want = arrays(xs.copy(), y)
    for g, w in zip(got, want):
        if isinstance(w, (bool, tuple, int)):
            assert g == w
        else:
            assert_close(g, w, check_dtype=False)
    assert_close(x, xs)  # `d[0] = -1` wrote the copy


def test_np_array_of_a_ragged_list_is_numpys_error():
    def f(x):
        return np.array([x, x[:2]])

    with pytest.raises(CompileError, match="different shapes"):
        pyasc.kernel(f, chip="tiny").compile(np.ones(3, np.float32))


# ---- item 6: out=, dtype=, initial=, astype(copy=False) -------------------------------------------------


def ufunc_keywords(x, y):
    np.tanh(y, out=y)
    np.maximum(y, 0, out=y)
    e = np.log10(x * x + 1, dtype="float32")
    m = np.max(x, axis=1, initial=0.5)
    s = np.sum(x.astype(np.int8), dtype=np.int32)
    same_array = x.astype(np.float32, copy=False) is x
    return e, m, s, same_array


@pytest.mark.parametrize("chip", PRESETS)
def test_ufunc_keywords(chip, rng):
    x, y = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    y_ref = y.copy()
    got = pyasc.kernel(ufunc_keywords, chip=chip)(x, y)
    want = ufunc_keywords(x, y_ref)
    for g, w in zip(got[:3], want[:3]):
        assert_close(g, w, check_dtype=False)
    assert bool(got[3]) is True
    assert_close(y, y_ref)  # out=y reached the caller


def test_out_with_a_dtype_numpy_cannot_store_is_its_error():
    def f(x, i):
        np.sqrt(x, out=i)
        return i

    with pytest.raises(CompileError, match="cannot store into out= of dtype int32"):
        pyasc.kernel(f, chip="tiny").compile(np.ones(3, np.float32), np.ones(3, np.int32))


def test_where_keyword_is_a_located_error_naming_np_where():
    def f(x):
        return np.exp(x, where=x > 0)

    with pytest.raises(CompileError, match="np.where"):
        pyasc.kernel(f, chip="tiny").compile(np.ones(3, np.float32))


# ---- item 7: lambdas defined outside, nested defs ------------------------------------------------------

SCALE = lambda x: x * 3.0  # noqa: E731


def uses_outside_lambda(x):
    return SCALE(x) + (lambda v: v - 1)(x)


def nested(x, w):
    scale = 2.0

    def layer(h, bias=1.0):
        return np.maximum(h @ w * scale, 0) + bias

    def twice(h):
        return layer(layer(h), bias=3.0)

    return twice(x), [layer(r) for r in (x, x + 1)][1]


@pytest.mark.parametrize("chip", PRESETS)
def test_lambdas_and_nested_defs(chip, rng):
    x, w = rng.random((3, 4), dtype=np.float32), rng.random((4, 4), dtype=np.float32)
    same(uses_outside_lambda, x, chip=chip)
    same(nested, x, w, chip=chip)
    assert_close(pyasc.kernel(SCALE, chip=chip)(x), x * 3)


def test_a_nested_def_calling_itself_is_a_located_error():
    def f(x):
        def again(v):
            return again(v)
        return again(x)

    with pytest.raises(CompileError, match="recursive call to the nested function `again`"):
        pyasc.kernel(f, chip="tiny").compile(np.ones(3, np.float32))


# ---- item 8: dict item writes --------------------------------------------------------------------------


def sgd_momentum(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("momentum", 0.9)
    v = config.get("velocity", np.zeros_like(w))
    v = config["momentum"] * v - config["learning_rate"] * dw
    config["velocity"] = v
    config["steps"] = config.get("steps", 0) + 1
    return w + v, config


def test_dict_writes_reach_the_callers_dict(rng):
    w, dw = rng.random(4, dtype=np.float32), rng.random(4, dtype=np.float32)
    mine, ref = {"learning_rate": 0.1}, {"learning_rate": 0.1}
    k = pyasc.kernel(sgd_momentum, chip="tiny")
    for _ in range(2):
        got_w, got_config = k(w, dw, mine)
        want_w, _ = sgd_momentum(w, dw, ref)
        assert_close(got_w, want_w, check_dtype=False)
    assert list(mine) == list(ref) and mine["steps"] == ref["steps"] == 2
    assert_close(mine["velocity"], ref["velocity"], check_dtype=False)
    got_w, got_config = k(w, dw)  # no dict: the kernel's own, returned
    assert got_config["steps"] == 1 and got_config["momentum"] == 0.9


# ---- item 9: iterating over a tensor -------------------------------------------------------------------


def iterate(x, y):
    total = 0
    for row in x:
        total = total + row.sum()
    pairs = [a * b for a, b in zip(x, y)]
    idx = [i * r for i, r in enumerate(y)]
    first, *rest = x[:3]
    return total, np.stack(pairs), np.stack(idx), first, len(rest)


@pytest.mark.parametrize("chip", PRESETS)
def test_iterating_over_the_first_axis(chip, rng):
    x, y = rng.random((4, 3), dtype=np.float32), rng.random((4, 3), dtype=np.float32)
    got = pyasc.kernel(iterate, chip=chip)(x, y)
    want = iterate(x, y)
    for g, w in zip(got[:4], want[:4]):
        assert_close(g, w, check_dtype=False)
    assert got[4] == 2


def test_iterating_over_a_dynamic_first_axis_is_a_located_error():
    def f(x):
        return [r for r in x][0]

    with pytest.raises(CompileError, match="only known at launch"):
        pyasc.kernel(f, chip="tiny", dynamic=True).compile(np.ones((3, 2), np.float32))


# ---- items 10 and 11: print, results with None and strings, np.sum of a tuple -----------------------


def prints(x):
    print("sum", x.sum(), "shape", x.shape)
    y = x * 2
    print(y[0], end="!\n")
    return y, None, "done", np.sum((1, 2, 3))


def test_print_after_the_launch_and_none_and_strings_in_results(capsys):
    x = np.arange(3, dtype=np.float32)
    got = pyasc.kernel(prints, chip="tiny")(x)
    out = capsys.readouterr().out
    want = prints(x)
    assert capsys.readouterr().out == out  # the same lines, in the same order, as numpy code prints
    assert_close(got[0], want[0])
    assert got[1] is None and got[2] == "done" and got[3] == 6


def only_writes(x):
    x[0] = 7.0


def test_a_kernel_returning_nothing_returns_none():
    x = np.zeros(3, np.float32)
    assert pyasc.kernel(only_writes, chip="tiny")(x) is None
    assert x[0] == 7.0


def scalars(x):
    hits = int(x[0] > 0) + int(x[1] > 0)
    return hits, float(x.sum()), math.sqrt(x.sum() * x.sum())


def test_int_float_and_math_of_one_element_tensors(rng):
    x = rng.standard_normal(4).astype(np.float32)
    got = pyasc.kernel(scalars, chip="tiny")(x)
    want = scalars(x)
    assert int(got[0]) == want[0]
    assert_close(np.float32(got[1]), np.float32(want[1]))
    assert_close(np.float32(got[2]), np.float32(want[2]))


# ---- did you mean ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, near", [
    (lambda x: np.isnat(x), "np.isnan, np.isinf, np.isfinite"),
    (lambda x: np.sort_complex(x), "np.sort"),  # (np.median, np.partition: lowered by quantiles.py, sorting.py)
    (lambda x: np.linalg.multi_dot([x, x]), "np.dot, np.matmul, np.einsum"),
])
def test_unsupported_functions_suggest_by_meaning(fn, near):
    with pytest.raises(CompileError) as info:
        pyasc.kernel(fn, chip="tiny").compile(np.ones(3, np.float32))
    assert "has no pyasc lowering; supported near it: " + near in info.value.reason
    assert "np.mod" not in info.value.reason


def test_moving_the_first_axis_of_a_wide_tensor_last():
    """Fuzz regression (np.argsort(x, axis=0) moves the axis last): the (3, 1024) -> (1024, 3) move's tile
    passed the repeat limit unpadded, but vtranspose pads both dims to 16-element blocks (256 repeats)."""
    a = np.random.default_rng(3).standard_normal((3, 64, 16)).astype(np.float32)

    def f(x):
        return np.transpose(x, (1, 2, 0)) + 1.0

    assert_close(pyasc.kernel(f, chip="910b", opt_level=0)(a), f(a))


@pyasc.kernel(chip="tiny")
def resample_path(x, y):
    """numpy-100's "sample a path at equidistant points": np.linspace up to a run-time value."""
    dr = (np.diff(x) ** 2 + np.diff(y) ** 2) ** .5
    r = np.zeros_like(x)
    r[1:] = np.cumsum(dr)
    r_int = np.linspace(0, r.max(), 20)
    grid, step = np.linspace(x[:2], x.max(), 5, endpoint=False, retstep=True, axis=1)
    return np.interp(r_int, r, x), np.interp(r_int, r, y), grid, step, np.linspace(x.min(), 7, 4, dtype=int)


def test_linspace_with_run_time_ends(rng):
    x, y = rng.standard_normal(10).astype(np.float32), rng.standard_normal(10).astype(np.float32)
    got, want = resample_path(x, y), resample_path.py_func(x, y)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert_close(g, w, check_dtype=False)  # numpy's float64 / int64: float32 / int32 here
    with pytest.raises(CompileError, match=r"num must be an int known at compile time"):
        pyasc.kernel(lambda x: np.linspace(0, x[0], x[1]), chip="tiny")(x)


@pyasc.kernel(chip="tiny")
def einsums(x, m):
    return (np.einsum("ij,jk->ik", x, x.T), np.einsum("ii->i", x[:, :3]), np.einsum("ij->", x),
            np.einsum("...i,...i->...", m, m), np.einsum("i,j->ij", m[0], m[1]),  # bool: an OR of ANDs
            np.einsum("ij,ij->i", m, x))  # a bool beside floats: numpy's float product


def test_einsum_spellings_and_bool_operands(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    m = rng.standard_normal((3, 4)) > 0.3
    m[1] = False  # one row with no true product
    got, want = einsums(x, m), einsums.py_func(x, m)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert_close(g, w)
