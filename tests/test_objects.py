"""Objects in kernels (issue 11 part 4): method and callable-object kernels, calling a module object,
`self.x` reads guarded like globals (large arrays lifted), private-name mangling, defaults, dict.get."""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.testing import assert_close

RNG = np.random.default_rng(7)


def relu(x):
    return pyasc.relu(x)


class Linear:
    """A 'module': weights as attributes, a __call__ that uses them."""

    def __init__(self, n_in, n_out):
        self.w = RNG.standard_normal((n_in, n_out)).astype(np.float32)  # 16x32 f32 = 2 KiB: lifted
        self.b = RNG.standard_normal(n_out).astype(np.float32)  # 128 B: folded, guarded by content

    def __call__(self, x):
        return x @ self.w + self.b


class MLP:
    def __init__(self):
        self.l1 = Linear(16, 32)
        self.__scale = 0.5

    def __forward(self, x, act=relu):
        return act(self.l1(x)) * self.__scale

    def forward(self, x, act=relu):
        return self.__forward(x, act)

    def __call__(self, x):
        return self.forward(x)


def _x(rows=8):
    return RNG.standard_normal((rows, 16)).astype(np.float32)


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_method_kernel_matches_numpy(chip):
    m = MLP()
    k = pyasc.kernel(m.forward, chip=chip)
    x = _x()
    assert_close(k(x), m.forward(x))
    assert k.py_func == m.forward  # the eager reference is the bound method itself
    assert k.__name__ == "forward"


@pytest.mark.parametrize("chip", ["tiny", "910b"])
def test_callable_object_kernel_matches_numpy(chip):
    m = MLP()
    k = pyasc.kernel(m, chip=chip)
    x = _x()
    assert_close(k(x), m(x))


def test_a_default_the_call_left_out_is_not_an_argument():
    m = MLP()
    k = pyasc.kernel(m.forward, chip="tiny")
    x = _x()
    assert_close(k(x), m.forward(x))  # `act=relu` is not reported as "argument 'act'"
    assert k.compile(x).signature == "x: f32[8,16], act=<default>"
    with pytest.raises(TypeError) as info:  # passing a function is still not an argument pyasc takes
        k(x, np.tanh)
    assert "forward() argument 'act' is a numpy.ufunc" in str(info.value)


def test_self_reads_are_guarded_and_large_arrays_lifted():
    m = MLP()
    k = pyasc.kernel(m, chip="tiny")
    x = _x()
    assert_close(k(x), m(x))
    m.l1.w[0, :] += 1.0  # a lifted array changed in place: its new contents, no recompile
    assert_close(k(x), m(x))
    assert k.cache_info()[:3] == (1, 0, 1)
    assert len(k.compile(x).guards.hidden) == 1
    m.l1.b = m.l1.b + 1.0  # a small (folded) array: recompiles
    assert_close(k(x), m(x))
    assert k.cache_info().misses == 2
    m._MLP__scale = 2.0  # the mangled private attribute is what the kernel read
    assert_close(k(x), m(x))
    assert k.cache_info().misses == 3
    text = "\n".join(k.compile(x).guards.describe())
    assert "self._MLP__scale (value)" in text and "self.l1.w (array_meta)" in text


LAYER = Linear(16, 32)


@pyasc.kernel(chip="tiny")
def calls_a_module(x):
    return relu(LAYER(x))


def test_calling_an_object_inlines_its_call():
    x = _x()
    assert_close(calls_a_module(x), np.maximum(x @ LAYER.w + LAYER.b, 0))
    LAYER.w[1, 1] = 5.0  # lifted: seen without a recompile
    assert_close(calls_a_module(x), np.maximum(x @ LAYER.w + LAYER.b, 0))
    assert calls_a_module.cache_info().misses == 1


class Scaler:
    def __init__(self, s):
        self.s = s

    def apply(self, x):
        return x * self.s


def test_method_kernel_recompiles_on_a_new_attribute_value_and_persists(disk_cache):
    x = _x(2)
    k = pyasc.kernel(Scaler(2.0).apply, chip="tiny")
    assert_close(k(x), x * 2.0)
    other = pyasc.kernel(Scaler(2.0).apply, chip="tiny")  # another object, same class and value: the disk hit
    assert_close(other(x), x * 2.0)
    assert other.cache_info().disk_hits == 1
    third = pyasc.kernel(Scaler(3.0).apply, chip="tiny")
    assert_close(third(x), x * 3.0)
    assert third.cache_info()[:3] == (0, 0, 1)


SCALER = Scaler(4.0)
scale_kernel = pyasc.kernel(SCALER.apply, chip="tiny")


@pyasc.kernel(chip="tiny")
def uses_a_method_kernel(x):
    return scale_kernel(x) + 1.0


def test_a_method_kernel_inlined_into_another_kernel():
    x = _x(2)
    assert_close(uses_a_method_kernel(x), x * 4.0 + 1.0)
    SCALER.s = 5.0
    try:
        assert_close(uses_a_method_kernel(x), x * 5.0 + 1.0)
    finally:
        SCALER.s = 4.0


def test_not_a_kernel_callable():
    with pytest.raises(TypeError) as info:
        pyasc.kernel(object())
    assert str(info.value).startswith("pyasc.kernel needs a Python function defined with `def`, a bound method or "
                                      "an object whose class defines __call__ with `def`, got object")


PARAMS = {"w": RNG.standard_normal(300).astype(np.float32), "s": 2.0}


@pyasc.kernel(chip="tiny")
def uses_get(x):
    return x * PARAMS.get("s", 1.0) + PARAMS.get("w") + PARAMS.get("missing", 0.5)


def test_dict_get_on_a_captured_dict():
    x = RNG.standard_normal(300).astype(np.float32)
    assert_close(uses_get(x), x * 2.0 + PARAMS["w"] + 0.5)
    PARAMS["w"][:10] = 0.0  # 1200 bytes: lifted through .get like through PARAMS["w"]
    assert_close(uses_get(x), x * 2.0 + PARAMS["w"] + 0.5)
    assert uses_get.cache_info()[:3] == (1, 0, 1)
    PARAMS["missing"] = 1.5  # a key appeared: the dict's guard (its keys) recompiles
    try:
        assert_close(uses_get(x), x * 2.0 + PARAMS["w"] + 1.5)
        assert uses_get.cache_info().misses == 2
    finally:
        del PARAMS["missing"]


WEIGHTS = {"a": np.float32(2.0), "b": np.float32(3.0)}


@pyasc.kernel(chip="tiny")
def uses_items(x):
    out = x
    for name, v in WEIGHTS.items():
        out = out * v
    return out + len(WEIGHTS.keys()) + sum(WEIGHTS.values())


def test_dict_items_keys_values_on_a_captured_dict():
    x = RNG.standard_normal(8).astype(np.float32)
    assert_close(uses_items(x), x * 6.0 + 2 + 5.0)
    WEIGHTS["b"] = np.float32(4.0)
    try:
        assert_close(uses_items(x), x * 8.0 + 2 + 6.0)
        assert uses_items.cache_info().misses == 2
    finally:
        WEIGHTS["b"] = np.float32(3.0)


def test_dict_update_sets_the_items_after_the_call_and_pop_is_a_located_error():
    def updates(x):
        PARAMS.update(s=3.0)
        return x * PARAMS["s"]

    def pops(x):
        PARAMS.pop("s")
        return x

    saved = dict(PARAMS)
    try:
        assert_close(pyasc.kernel(updates, chip="tiny")(np.ones(2, np.float32)), np.full(2, 3.0, np.float32))
        assert PARAMS["s"] == 3.0  # as numpy code leaves the dict
    finally:
        PARAMS.clear()
        PARAMS.update(saved)
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(pops, chip="tiny")(np.zeros(2, np.float32))
    msg = str(info.value)
    assert "PARAMS.pop() would change a dict in place, which a kernel does not support" in msg
    line = pops.__code__.co_firstlineno + 1
    assert f"test_objects.py:{line}:9: error: PARAMS.pop()" in msg
    assert msg.endswith('\n            PARAMS.pop("s")\n            ^^^^^^^^^^^^^^^')


class Private:
    def __init__(self):
        self.__w = np.float32(3.0)

    def __helper(self, x):
        return x * self.__w

    def run(self, x):
        return self.__helper(x) + 1.0


def test_private_name_mangling():
    p = Private()
    x = _x(2)
    assert_close(pyasc.kernel(p.run, chip="tiny")(x), p.run(x))


def _helper_with_defaults(x, a=2.0, /, b=3.0, *, act=relu, c=4.0):
    return act(x * a + b) * c


def kernel_with_defaults(x, a=np.float32(2.0), *, act=relu, scale=np.float32(0.5)):
    return _helper_with_defaults(x, c=a) * scale + act(x)


def test_defaults_of_every_kind_are_read_and_guarded():
    x = _x(2)
    k = pyasc.kernel(kernel_with_defaults, chip="tiny")
    assert_close(k(x), kernel_with_defaults(x))
    assert_close(k(x, np.float32(3.0), scale=np.float32(1.5)), kernel_with_defaults(x, np.float32(3.0),
                                                                                       scale=np.float32(1.5)))
    text = "\n".join(k.compile(x).guards.describe())
    assert "__kwdefaults__['act']" in text and "_helper_with_defaults.__defaults__[0]" in text
    assert "_helper_with_defaults.__kwdefaults__['act']" in text


class Affine:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __call__(self, x):
        return x * self.a + self.b


def test_a_module_object_kernel_persists_by_type_not_identity(disk_cache):
    x = _x(2)
    first = pyasc.kernel(Affine(2.0, 1.0), chip="tiny")
    assert_close(first(x), x * 2.0 + 1.0)
    again = pyasc.kernel(Affine(2.0, 1.0), chip="tiny")  # an equal object in a "new process": the disk entry
    assert_close(again(x), x * 2.0 + 1.0)
    assert again.cache_info().disk_hits == 1
    assert "self (object)" in again.compile(x).guards.describe()


def test_build_graph_takes_a_method_kernel_object():
    from pyasc.frontend import ArgSpec, build_graph  # the frontend API directly, only in this test
    from pyasc.tensor_type import TensorType

    k = pyasc.kernel(Scaler(2.0).apply, chip="tiny")
    result = build_graph(k, [ArgSpec("x", TensorType((4,), "float32"))])
    assert [n.name for n in result.graph.inputs] == ["x"]
    assert result.captured["self"] is k.py_func.__self__


class Block:
    def __init__(self, scale):
        self.scale = scale
        self.w = RNG.standard_normal((16, 16)).astype(np.float32)

    @pyasc.kernel(chip="tiny")
    def __call__(self, x):
        return pyasc.relu(x @ self.w) * self.scale

    @pyasc.kernel(chip="tiny")
    def shifted(self, x, shift=1.0):
        return self(x) + shift


def test_kernel_decorated_methods_bind_like_functions():
    b, c = Block(2.0), Block(3.0)
    x = _x(4)
    want = np.maximum(x @ b.w, 0) * 2.0
    assert_close(b(x), want)  # `b(x)`: the __call__ kernel bound to b
    assert_close(b.shifted(x), want + 1.0)  # a kernel calling the instance inlines the other method kernel
    assert_close(c(x), np.maximum(x @ c.w, 0) * 3.0)
    assert b.shifted is b.shifted and b.shifted is not c.shifted  # one bound kernel per instance
    assert Block.__call__.py_func is Block.__dict__["__call__"].py_func  # on the class: the kernel itself
    b(x)
    assert type(b).__call__.__get__(b).cache_info()[:3] == (1, 0, 1)
    b.shifted(x)
    assert b.shifted.cache_info()[:3] == (1, 0, 1)  # its guards (b.__call__, b.w, b.scale) hold on a warm call
    b.scale = 5.0
    assert_close(b.shifted(x), np.maximum(x @ b.w, 0) * 5.0 + 1.0)
    assert b.shifted.cache_info().misses == 2


class Attn:
    def __init__(self, n_embd, n_head):
        self.n_embd, self.n_head = n_embd, n_head
        self.w = RNG.standard_normal((n_embd, n_embd)).astype(np.float32)

    @property
    def head_dim(self):
        return self.n_embd // self.n_head

    @property
    def w_t(self):
        return self.w.T  # computes on a tensor (a lifted array): graph nodes, not a compile-time value

    def __call__(self, x):
        return (x @ self.w_t)[:, :self.head_dim] * np.finfo(np.float32).tiny / np.finfo(np.float32).tiny


def test_properties_run_their_getters_inlined():
    a = Attn(16, 4)
    x = _x(2)
    k = pyasc.kernel(a, chip="tiny")
    assert_close(k(x), (x @ a.w.T)[:, :4])
    a.n_head = 2  # read through the getter: guarded on its path, so it recompiles
    assert_close(k(x), (x @ a.w.T)[:, :8])
    assert k.cache_info().misses == 2
    text = "\n".join(k.compile(x).guards.describe())
    assert "self.__class__.head_dim.fget.__code__ (identity)" in text and "self.n_head (value)" in text
