"""The in-memory cache never runs a stale graph: globals/closure values read at compile time are guarded."""
from __future__ import annotations

import sys

import numpy as np

import pyasc
from pyasc.frontend.guards import same_value, snapshot

SCALE = 2.0
TABLE = np.array([1.0, 2.0, 3.0], np.float32)
OFFSETS = [1.0, 2.0]
THIS = sys.modules[__name__]


def _scaled(x):
    return x * SCALE


def _x():
    return np.ones(3, np.float32)


def test_rebinding_a_global_recompiles(monkeypatch):
    @pyasc.kernel
    def k(x):
        return x * SCALE

    np.testing.assert_array_equal(k(_x()), [2, 2, 2])
    np.testing.assert_array_equal(k(_x()), [2, 2, 2])
    assert k.cache_info().hits == 1 and k.cache_info().misses == 1
    monkeypatch.setattr(THIS, "SCALE", 5.0)
    np.testing.assert_array_equal(k(_x()), k.py_func(_x()))
    np.testing.assert_array_equal(k(_x()), [5, 5, 5])
    info = k.cache_info()
    assert (info.hits, info.misses, info.currsize) == (2, 2, 1)


def test_a_global_read_by_an_inlined_helper_is_guarded(monkeypatch):
    @pyasc.kernel
    def k(x):
        return _scaled(x) + 1.0

    assert k(_x())[0] == 3.0
    monkeypatch.setattr(THIS, "SCALE", -1.0)
    assert k(_x())[0] == 0.0
    assert k.cache_info().misses == 2


def test_redefining_a_helper_recompiles(monkeypatch):
    @pyasc.kernel
    def k(x):
        return _scaled(x)

    assert k(_x())[0] == 2.0
    monkeypatch.setattr(THIS, "_scaled", lambda x: x)  # even a lambda: the kernel must not run the old helper
    try:
        k(_x())
    except pyasc.CompileError as e:
        assert "lambda" in str(e)
    else:
        raise AssertionError("the new helper was not looked at")


def test_changing_a_captured_array_in_place_recompiles():
    table = TABLE.copy()

    @pyasc.kernel
    def k(x):
        return x + table

    np.testing.assert_array_equal(k(_x()), [2, 3, 4])
    table[0] = 10.0
    np.testing.assert_array_equal(k(_x()), [11, 3, 4])
    assert k.cache_info().misses == 2


def test_rebinding_a_closure_variable_recompiles():
    offset = 1.0

    @pyasc.kernel
    def k(x):
        return x + offset

    assert k(_x())[0] == 2.0
    offset = 7.0  # noqa: F841 - read through the closure cell
    assert k(_x())[0] == 8.0


def test_a_mutated_global_list_recompiles():
    @pyasc.kernel
    def k(x):
        return x + OFFSETS[1]

    assert k(_x())[0] == 3.0
    OFFSETS[1] = 4.0
    try:
        assert k(_x())[0] == 5.0
    finally:
        OFFSETS[1] = 2.0


def test_unchanged_values_stay_cache_hits():
    @pyasc.kernel
    def k(x):
        return x * SCALE + TABLE + np.float32(np.pi)

    for _ in range(3):
        k(_x())
    assert k.cache_info().hits == 2 and k.cache_info().misses == 1


def test_same_value_rules():
    assert same_value(snapshot(1.0), 1.0) and not same_value(snapshot(1.0), 1)
    assert same_value(snapshot(float("nan")), float("nan"))
    assert not same_value(snapshot((1, 2)), [1, 2])
    a = np.arange(3)
    snap = snapshot(a)
    assert same_value(snap, a)
    a[0] = 5
    assert not same_value(snap, a)
    assert not same_value(snapshot(a), a.astype(np.int8))
    obj = object()
    assert same_value(snapshot(obj), obj) and not same_value(snapshot(obj), object())
