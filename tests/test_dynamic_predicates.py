"""dynamic=True: shape predicates pick compiled branches at launch; `assert` on shapes is a launch check."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.testing import assert_close

CHIPS = ("tiny", "910b")


def branchy(x):
    if x.shape[0] >= 8:
        y = x * 2.0
    else:
        y = x * 3.0 if x.shape[1] > 6 and not x.shape[0] == 4 else x + 1.0
    return y.sum(axis=0)


@pytest.mark.parametrize("chip", CHIPS)
def test_shape_predicate_selects_a_compiled_branch_at_launch(chip, rng):
    k = pyasc.kernel(dynamic=True, chip=chip)(branchy)
    # every path: >= 8 rows; < 8 rows with wide / narrow rows; exactly 4 rows; around the tiny UB
    for shape in [(9, 7), (2, 9), (3, 5), (4, 9), (8, 4100), (3, 4100)]:
        x = rng.standard_normal(shape).astype(np.float32)
        assert_close(k(x), branchy(x))
    assert k.cache_info().misses == 1


def test_predicates_print_as_expressions_and_the_host_evaluates_them():
    k = pyasc.kernel(dynamic=True, chip="tiny")(branchy)
    art = k.compile(np.zeros((9, 7), np.float32))
    text = "\n".join(str(g) for g in art.graph.walk())
    assert "DimValue {dtype='bool', value=8 <= x_d0}" in text
    assert "value=select(6 < x_d1, x_d0 != 4, 0)" in text
    assert "if host: 8 <= x_d0:" in art.stages["launch"]
    assert "pyasc_run" in art.host_ir and art.host_ir.count("icmp") >= 2


def test_branch_not_taken_launches_nothing(rng):
    def f(x):
        if x.shape[0] > 4:
            y = pyasc.exp(x)
        else:
            y = x + 1.0
        return y

    k = pyasc.kernel(dynamic=True, chip="tiny")(f)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    out, prof = k.profile(x)
    assert_close(out, f(x))
    assert prof.launches == 1
    x = rng.standard_normal((3, 8)).astype(np.float32)
    out, prof = k.profile(x)
    assert_close(out, f(x))
    assert prof.launches == 1 and k.cache_info().misses == 1


def test_chained_comparison_of_dims(rng):
    def f(x):
        return x * 2.0 if 2 < x.shape[0] <= 5 else x - 1.0

    k = pyasc.kernel(dynamic=True, chip="tiny")(f)
    for n in (2, 3, 5, 6):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        assert_close(k(x), f(x))
    assert k.cache_info().misses == 1


def test_static_shapes_still_fold_the_if(rng):
    k = pyasc.kernel(chip="tiny")(branchy)
    art = k.compile(np.zeros((9, 7), np.float32))
    assert "DimValue" not in str(art.graph) and "If" not in str(art.graph)


def asserting(x):
    assert x.shape[0] >= 4, "need 4 rows"
    assert x.shape[1] % 2 == 0
    return x * 2.0


@pytest.mark.parametrize("backend", ["emulator", "reference"])
def test_assert_on_shapes_is_a_launch_check_with_the_users_line(backend):
    k = pyasc.kernel(dynamic=True, chip="tiny", backend=backend)(asserting)
    assert_close(k(np.ones((4, 6), np.float32)), np.full((4, 6), 2.0, np.float32))
    with pytest.raises(ValueError, match=r"assertion failed: need 4 rows \(at .*test_dynamic_predicates.py:\d+:\d+: "
                                         r"assert x.shape\[0\] >= 4, \"need 4 rows\"\)"):
        k(np.ones((3, 6), np.float32))
    with pytest.raises(ValueError, match=r"assertion failed: `x.shape\[1\] % 2 == 0` \(at .*test_dynamic_predicates"
                                         r".py:\d+:\d+: assert x.shape\[1\] % 2 == 0\)"):
        k(np.ones((5, 5), np.float32))
    assert k.cache_info().misses == 1


def test_assert_on_static_shapes_is_still_a_compile_error():
    k = pyasc.kernel(chip="tiny")(asserting)
    with pytest.raises(pyasc.CompileError, match="assertion failed: need 4 rows"):
        k(np.ones((3, 6), np.float32))


def test_disk_cache_round_trips_predicates_checks_and_expression_dims(disk_cache, rng):
    def f(x):
        assert x.shape[1] >= 5, "need 5 columns"
        y = x[1:, -5:] * 2.0
        return y + 1.0 if x.shape[0] > 4 else y - 1.0

    first = pyasc.kernel(dynamic=True, chip="tiny")(f)
    x = rng.standard_normal((6, 9)).astype(np.float32)
    assert_close(first(x), f(x))
    again = pyasc.kernel(dynamic=True, chip="tiny")(f)
    for shape in [(6, 9), (3, 5)]:
        x = rng.standard_normal(shape).astype(np.float32)
        assert_close(again(x), f(x))
    assert again.cache_info().disk_hits == 1 and again.cache_info().misses == 0
    with pytest.raises(ValueError, match="assertion failed: need 5 columns"):
        again(np.zeros((3, 4), np.float32))


def size_switch(x):
    y = x * 2.0
    if x.shape[0] < 8:
        return y + 1.0
    z = pyasc.exp(y)
    return z - 1.0


def size_switch_else(x):
    if x.shape[-1] > 16:
        y = x * 0.5
    else:
        return x - 3.0
    return pyasc.tanh(y)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fn", [size_switch, size_switch_else])
def test_early_return_under_a_shape_predicate(fn, chip, rng):
    k = pyasc.kernel(dynamic=True, chip=chip)(fn)
    for shape in [(3, 5), (9, 5), (2, 33), (12, 4100)]:
        x = rng.standard_normal(shape).astype(np.float32)
        assert_close(k(x), fn(x))
    assert k.cache_info().misses == 1


def early_return_in_a_loop(x):
    for i in range(2):
        if x.shape[0] < 8:
            return x + i
        x = x * 2.0
    return x


@pytest.mark.parametrize("chip", CHIPS)
def test_early_return_inside_an_unrolled_loop_under_a_shape_predicate(chip, rng):
    # the rest of the iteration, the other iterations and the rest of the function run once (regression: the
    # rest ran twice, giving 16x instead of 4x)
    k = pyasc.kernel(dynamic=True, chip=chip)(early_return_in_a_loop)
    for shape in [(3, 4), (9, 4), (20, 7), (7, 33)]:
        x = rng.standard_normal(shape).astype(np.float32)
        assert_close(k(x), early_return_in_a_loop(x))
    assert k.cache_info().misses == 1
