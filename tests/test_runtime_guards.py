"""The in-memory cache never runs a stale graph: every access path a kernel read is guarded, large captured
arrays are hidden inputs, and a kernel whose file was edited after import is refused."""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
import types

import numpy as np
import pytest

import pyasc
from pyasc.guards import (Attr, Global, Item, LIFT_MIN_BYTES, Unguardable, check_for, path_text, step_from_json,
                          step_to_json)

SCALE = 2.0
TABLE = np.array([1.0, 2.0, 3.0], np.float32)
OFFSETS = [1.0, 2.0]
THIS = sys.modules[__name__]
BIG = np.ones((16, 32), np.float32)  # 2 KiB: lifted
PARAMS = {"w": np.ones((4, 3), np.float32), "big": np.full((32, 16), 2.0, np.float32)}
fake_mod = types.ModuleType("fake_mod")
fake_mod.SCALE = 2.0


class Cfg:
    scale = 2.0

    def apply(self, x):
        return x * self.scale


CFG = Cfg()


def _scaled(x):
    return x * SCALE


def _with_default(x, s=2.0):
    return x * s


def _x(n=3):
    return np.ones(n, np.float32)


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
    assert "_scaled.__globals__['SCALE']" in [path_text(g.path) for g in k.compile(_x()).guards.guards]
    monkeypatch.setattr(THIS, "SCALE", -1.0)
    assert k(_x())[0] == 0.0
    assert k.cache_info().misses == 2


def test_redefining_a_helper_recompiles(monkeypatch):
    @pyasc.kernel
    def k(x):
        return _scaled(x)

    assert k(_x())[0] == 2.0
    monkeypatch.setattr(THIS, "_scaled", lambda x: x * 3)  # even a lambda: the kernel must not run the old helper
    assert k(_x())[0] == 3.0


@pytest.mark.parametrize("change, expected", [
    (lambda: PARAMS.__setitem__("w", PARAMS["w"] * 3), 12.0),          # a dict entry (the issue's example)
    (lambda: setattr(CFG, "scale", 3.0), 6.0),                          # an attribute of a captured object
    (lambda: setattr(Cfg, "scale", 3.0), 6.0),                          # a class attribute, read through it
    (lambda: setattr(fake_mod, "SCALE", 3.0), 6.0),                     # a module attribute
    (lambda: setattr(_with_default, "__defaults__", (3.0,)), 6.0),      # a helper's defaults
], ids=["dict entry", "attribute", "class attribute", "module attribute", "helper defaults"])
def test_each_kind_of_access_path_is_guarded(change, expected):
    saved = (PARAMS["w"], Cfg.scale, fake_mod.SCALE, _with_default.__defaults__)

    @pyasc.kernel
    def k(x):
        return _with_default(x @ PARAMS["w"]) * CFG.scale * fake_mod.SCALE / 8.0

    x = np.ones((2, 4), np.float32)
    try:
        np.testing.assert_allclose(k(x), np.full((2, 3), 4.0))  # 4 * 2 * 2 * 2 / 8
        k(x)
        assert k.cache_info().misses == 1
        change()
        np.testing.assert_allclose(k(x), np.full((2, 3), expected))
        np.testing.assert_allclose(k.py_func(x), np.full((2, 3), expected))
        assert k.cache_info().misses == 2
    finally:
        PARAMS["w"] = saved[0]
        CFG.__dict__.pop("scale", None)
        Cfg.scale, fake_mod.SCALE, _with_default.__defaults__ = saved[1], saved[2], saved[3]


def test_the_issue_example_dict_of_weights():
    params = {"w": np.ones((4, 3), np.float32)}

    @pyasc.kernel
    def f(x):
        return x @ params["w"]

    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(f(x), np.full((2, 3), 4.0))
    params["w"] = params["w"] * 3
    np.testing.assert_allclose(f(x), np.full((2, 3), 12.0))
    assert f.cache_info().hits == 0 and f.cache_info().misses == 2


def test_a_method_of_a_captured_object_is_inlined_and_its_attributes_guarded():
    model = Cfg()

    @pyasc.kernel
    def k(x):
        return model.apply(x)

    assert k(_x())[0] == 2.0
    assert k(_x())[0] == 2.0
    assert k.cache_info().hits == 1  # a bound method is a new object on every read: still a hit
    model.scale = 4.0
    assert k(_x())[0] == 4.0
    assert k.cache_info().misses == 2


def test_changing_a_small_captured_array_in_place_recompiles():
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
        return x * SCALE + TABLE + np.float32(np.pi) + pyasc.relu(x)

    for _ in range(3):
        k(_x())
    assert k.cache_info().hits == 2 and k.cache_info().misses == 1
    paths = [path_text(g.path) for g in k.compile(_x()).guards.guards]
    assert paths == ["SCALE", "TABLE", "np", "pyasc", "__code__"]  # library attributes (np.pi, pyasc.relu) are
    # trusted; the kernel's own code is guarded too (a replaced `__code__` compiles again)


# ---- lifted arrays ----------------------------------------------------------------------


def test_a_large_captured_array_is_a_hidden_input_read_at_every_call():
    weights = np.ones((32, 16), np.float32)
    assert weights.nbytes >= LIFT_MIN_BYTES

    @pyasc.kernel
    def k(x):
        return x @ weights

    x = np.ones((2, 32), np.float32)
    np.testing.assert_allclose(k(x), np.full((2, 16), 32.0))
    weights[:] = 2.0  # in place: no recompile, the new contents are used
    np.testing.assert_allclose(k(x), np.full((2, 16), 64.0))
    assert k.cache_info().misses == 1 and k.cache_info().hits == 1
    c = k.compile(x)
    assert [n.name for n in c.graph.inputs] == ["x", "weights"]
    assert c.guards.guards[0].check.kind == "array_meta" and len(c.guards.hidden) == 1
    assert "Const" not in {n.op for n in c.graph.nodes}
    assert "hidden inputs (lifted captured arrays): 1" in str(c)


def test_a_lifted_array_of_another_shape_recompiles_and_float64_is_narrowed():
    holder = {"w": np.ones((32, 16))}  # float64: the Data input is float32, converted at each call

    @pyasc.kernel
    def k(x):
        return x @ holder["w"]

    x = np.ones((2, 32), np.float32)
    np.testing.assert_allclose(k(x), np.full((2, 16), 32.0))
    assert k.compile(x).graph.inputs[1].outputs[0].dtype == "float32"
    holder["w"] = np.ones((32, 8)) * 3  # rebinding to the same shape would be a hit; another shape is a miss
    np.testing.assert_allclose(k(x), np.full((2, 8), 96.0))
    assert k.cache_info().misses == 2


def test_lifted_items_of_a_list_used_by_a_loop_and_inside_a_tensor_if():
    layers = [np.full((32, 32), 0.5, np.float32), np.full((32, 32), 0.25, np.float32)]

    @pyasc.kernel
    def k(x):
        for w in layers:
            x = x @ w
        if pyasc.sum(x) > 0.0:
            y = x + BIG[0]
        else:
            y = x
        return y

    x = np.ones((1, 32), np.float32)
    np.testing.assert_allclose(k(x), k.py_func(x))
    layers[1][:] = 1.0
    np.testing.assert_allclose(k(x), k.py_func(x))
    assert k.cache_info().misses == 1
    assert [path_text(p) for p in k.compile(x).guards.hidden] == ["layers[0]", "layers[1]", "BIG"]


def test_a_value_that_cannot_be_guarded_is_a_located_error():
    counter = iter(range(10))

    @pyasc.kernel
    def k(x):
        return x * next(counter)

    with pytest.raises(pyasc.CompileError) as info:
        k(_x())
    err = info.value
    assert "`counter` is a range_iterator, which changes as it is read" in err.reason
    assert "pass it to the kernel as an argument" in err.reason
    assert err.source_line.strip() == "return x * next(counter)" and err.lineno is not None


def test_a_kernel_file_edited_after_import_is_refused(tmp_path):
    path = tmp_path / "edited_kernel.py"
    path.write_text("import pyasc\n\n\n@pyasc.kernel\ndef k(x):\n    return x * 2.0\n")
    spec = importlib.util.spec_from_file_location("edited_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path.write_text("import pyasc\n\n\n@pyasc.kernel\ndef k(x):\n    return x * 3.0\n")  # same lines
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))
    with pytest.raises(pyasc.CompileError) as info:
        module.k(_x())
    assert str(path) in info.value.reason and "re-import the module or restart Python" in info.value.reason


class _Mangled:
    """Methods with a private (name-mangled) attribute and with super(): compiled again as Python did."""

    def __init__(self):
        self.__factor = 3.0

    def apply(self, x):
        return x * self.__factor + super().__hash__() * 0.0


def test_mangled_names_super_and_closures_are_not_mistaken_for_edited_files():
    from pyasc.frontend.source import parse_function

    for method in (_Mangled.__init__, _Mangled.apply):
        assert parse_function(method).fn is method  # raises if the recompiled code differed
    scale = 3.0

    @pyasc.kernel
    def k(x):
        return x * scale

    assert k(_x())[0] == 3.0


# ---- checks, paths, threads -------------------------------------------------------------------


def test_check_rules():
    def same(a, b):
        return check_for(a).holds(b)

    assert same(1.0, 1.0) and not same(1.0, 1) and not same(0.0, -0.0)
    assert same(float("nan"), float("nan")) and not same(True, 1)
    assert not same((1, 2), [1, 2]) and same([1, (2, "a")], [1, (2, "a")])
    a = np.arange(3)
    check = check_for(a)
    assert check.holds(a)
    a[0] = 5
    assert not check.holds(a) and not check_for(a).holds(a.astype(np.int8))
    big = np.zeros(LIFT_MIN_BYTES, np.uint8)
    meta = check_for(big, lifted=True)
    big[0] = 1
    assert meta.kind == "array_meta" and meta.holds(big)
    assert check_for(_scaled).holds(_scaled) and not check_for(_scaled).holds(_with_default)
    assert check_for(CFG).kind == "object" and check_for(CFG).holds(Cfg())
    assert check_for({"a": 1}).fingerprint == ["dict", ["a"]] and check_for({"a": 1}).holds({"a": 2})
    assert check_for(np.float32(-0.0)).holds(np.float32(-0.0)) and not check_for(np.float32(-0.0)).holds(np.float32(0))
    with pytest.raises(Unguardable, match="generator"):
        check_for(x for x in ())


def test_paths_round_trip_through_json():
    path = (Global("params"), Item("w"), Attr("T"), Item((0, slice(1, None, 2))))
    assert tuple(step_from_json(step_to_json(s)) for s in path) == path
    assert path_text(path) == "params['w'].T[(0, slice(1, None, 2))]"


def test_eight_threads_making_the_first_call_compile_once():
    @pyasc.kernel
    def k(x):
        return pyasc.exp(x) * SCALE

    x = _x(16)
    results = [None] * 8
    barrier = threading.Barrier(8)

    def call(i):
        barrier.wait()
        results[i] = k(x)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_allclose(r, np.exp(x) * 2.0, rtol=1e-6)
    info = k.cache_info()
    assert (info.misses, info.hits, info.currsize) == (1, 7, 1)


# ---- what the kernel function itself is: its defaults, the builtins it names, its code -------------------


def with_defaults(x, s=2.0, *, t=1.0):
    return x * s + t


def test_changed_defaults_and_keyword_defaults_compile_again():
    k = pyasc.kernel(with_defaults, chip="tiny")
    x = _x()
    np.testing.assert_allclose(k(x), x * 2.0 + 1.0)
    saved = with_defaults.__defaults__, with_defaults.__kwdefaults__
    try:
        with_defaults.__defaults__ = (3.0,)
        np.testing.assert_allclose(k(x), x * 3.0 + 1.0)
        with_defaults.__kwdefaults__ = {"t": 5.0}
        np.testing.assert_allclose(k(x), x * 3.0 + 5.0)
        with_defaults.__kwdefaults__["t"] = 7.0  # the same dict, changed in place
        np.testing.assert_allclose(k(x), x * 3.0 + 7.0)
        with_defaults.__defaults__ = None  # `s` has no default any more: Python's own error
        with pytest.raises(TypeError, match="missing 1 required positional argument: 's'"):
            k(x)
    finally:
        with_defaults.__defaults__, with_defaults.__kwdefaults__ = saved
    np.testing.assert_allclose(k(x), x * 2.0 + 1.0)


def magnitude(x):
    return abs(x) + 0.0


def ten_times(v):
    return v * 10.0


def test_a_builtin_shadowed_later_by_a_module_global_compiles_again(monkeypatch):
    k = pyasc.kernel(magnitude, chip="tiny")
    x = -_x()
    np.testing.assert_allclose(k(x), np.abs(x))
    monkeypatch.setattr(THIS, "abs", ten_times, raising=False)  # what `global abs; abs = ...` does
    np.testing.assert_allclose(k(x), magnitude(x))
    np.testing.assert_allclose(k(x), x * 10.0)
    monkeypatch.delattr(THIS, "abs")
    np.testing.assert_allclose(k(x), np.abs(x))
    assert k.cache_info().misses == 3 and "abs (identity)" in k.compile(x).guards.describe()


def test_a_builtin_guard_is_stored_with_the_entry(disk_cache, monkeypatch):
    x = -_x()
    pyasc.kernel(magnitude, chip="tiny")(x)
    again = pyasc.kernel(magnitude, chip="tiny")
    np.testing.assert_allclose(again(x), np.abs(x))
    assert again.cache_info().disk_hits == 1
    monkeypatch.setattr(THIS, "abs", ten_times, raising=False)
    third = pyasc.kernel(magnitude, chip="tiny")
    np.testing.assert_allclose(third(x), x * 10.0)
    assert third.cache_info().misses == 1  # the stored entry saw the builtin: it does not apply


def plus_one(x):
    return x + 1.0


def plus_hundred(x):
    return x + 100.0


def test_a_replaced_code_object_compiles_again():
    def victim(x):
        return x + 1.0

    k = pyasc.kernel(victim, chip="tiny")
    x = _x()
    np.testing.assert_allclose(k(x), x + 1.0)
    victim.__code__ = plus_hundred.__code__
    np.testing.assert_allclose(k(x), x + 100.0)
    victim.__code__ = plus_one.__code__
    np.testing.assert_allclose(k(x), x + 1.0)
    assert k.cache_info().misses == 3
