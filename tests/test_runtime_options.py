"""@pyasc.kernel options: defaults, environment defaults, and a clear error for every bad value."""
from __future__ import annotations

import functools

import pytest

import pyasc
from pyasc.runtime import Kernel


def add(x, y):
    """Adds two tensors."""
    return x + y


def test_bare_and_called_decorator_forms():
    k1 = pyasc.kernel(add)
    k2 = pyasc.kernel()(add)
    k3 = pyasc.kernel(opt_level=1, chip="tiny")(add)
    assert all(isinstance(k, Kernel) for k in (k1, k2, k3))
    assert k3.options.opt_level == 1 and k3.options.chip == "tiny"


def test_kernel_looks_like_the_function():
    k = pyasc.kernel(add)
    assert k.__name__ == "add" and k.__doc__ == "Adds two tensors." and k.__wrapped__ is add
    assert k.__module__ == add.__module__ and k.py_func is add
    assert "add" in repr(k)


def test_defaults(monkeypatch):
    monkeypatch.delenv("PYASC_CHIP", raising=False)
    monkeypatch.delenv("PYASC_SANITIZE", raising=False)
    monkeypatch.delenv("PYASC_BACKEND", raising=False)
    o = pyasc.kernel(add).options
    assert (o.opt_level, o.chip, o.buffer_num, o.cores, o.dynamic, o.disable_passes, o.sanitize, o.backend,
            o.unroll_budget, o.sync) == (3, "910b", 2, None, False, (), False, "emulator", 4096, "flags")
    assert o.chip_config is not None


def test_environment_defaults(monkeypatch):
    monkeypatch.setenv("PYASC_CHIP", "tiny")
    monkeypatch.setenv("PYASC_SANITIZE", "1")
    o = pyasc.kernel(add).options
    assert o.chip == "tiny" and o.sanitize is True
    assert pyasc.kernel(chip="910b", sanitize=False)(add).options.chip == "910b"  # explicit wins


def test_bad_environment_chip_names_the_variable(monkeypatch):
    monkeypatch.setenv("PYASC_CHIP", "nosuchchip")
    with pytest.raises(ValueError, match=r"PYASC_CHIP='nosuchchip'"):
        pyasc.kernel(add)


def test_pyasc_backend_reference_runs_every_kernel_on_the_numpy_interpreter(monkeypatch):
    import numpy as np

    monkeypatch.setenv("PYASC_BACKEND", "reference")
    k = pyasc.kernel(chip="tiny")(add)
    assert k.options.backend == "reference"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    art = k.compile(x, x)
    assert art.kernels == [] and art.host_ir == ""            # nothing generated, nothing launched
    np.testing.assert_array_equal(k(x, x), x + x)
    with pytest.raises(ValueError, match="needs the emulator backend.*PYASC_BACKEND"):
        k.profile(x, x)
    assert pyasc.kernel(backend="emulator")(add).options.backend == "emulator"   # explicit wins


def test_bad_environment_backend_names_the_variable(monkeypatch):
    monkeypatch.setenv("PYASC_BACKEND", "interpreter")
    with pytest.raises(ValueError, match=r"PYASC_BACKEND='interpreter' is not valid; it must be 'emulator' or "
                                         r"'reference'"):
        pyasc.kernel(add)


def test_chip_config_object_accepted():
    from simulator import chips

    config = chips.get("tiny")
    k = pyasc.kernel(chip=config)(add)
    assert k.options.chip_config is config


def test_disable_passes_is_normalised():
    k = pyasc.kernel(disable_passes=["cse", "dce", "cse"])(add)
    assert k.options.disable_passes == ("cse", "dce")


def test_disable_passes_rejects_unknown_pass_names():
    with pytest.raises(ValueError) as info:
        pyasc.kernel(disable_passes=("csee",))
    msg = str(info.value)
    assert "unknown pass 'csee'" in msg and "did you mean 'cse'" in msg and "fusion" in msg


@pytest.mark.parametrize("options,exc,words", [
    ({"opt_level": 4}, ValueError, ["opt_level=4", "0 to 3"]),
    ({"opt_level": -1}, ValueError, ["opt_level=-1", "0 to 3"]),
    ({"opt_level": "3"}, TypeError, ["opt_level='3'", "int"]),
    ({"opt_level": True}, TypeError, ["opt_level=True"]),
    ({"buffer_num": 3}, ValueError, ["buffer_num=3", "1 or 2"]),
    ({"cores": 0}, ValueError, ["cores=0", "positive"]),
    ({"cores": 2.0}, TypeError, ["cores=2.0", "positive int"]),
    ({"dynamic": 1}, TypeError, ["dynamic=1", "True or False"]),
    ({"sanitize": "yes"}, TypeError, ["sanitize='yes'", "True or False"]),
    ({"disable_passes": "cse"}, TypeError, ["disable_passes='cse'", "('cse',)"]),
    ({"disable_passes": [1]}, TypeError, ["disable_passes=[1]", "pass names"]),
    ({"disable_passes": 5}, TypeError, ["disable_passes=5", "iterable"]),
    ({"backend": "npu"}, ValueError, ["backend='npu'", "'emulator' or 'reference'"]),
    ({"sync": "none"}, ValueError, ["sync='none'", "'flags' or 'barrier'"]),
    ({"sync": 1}, TypeError, ["sync=1"]),
    ({"backend": None}, TypeError, ["backend=None"]),
    ({"chip": "910c"}, ValueError, ["chip='910c'", "'910b'", "'tiny'", "did you mean '910b'"]),
    ({"chip": 910}, TypeError, ["chip=910", "preset name"]),
    ({"unroll_budget": 0}, ValueError, ["unroll_budget=0", "positive int"]),
    ({"opt_levle": 2}, TypeError, ["unknown option 'opt_levle'", "did you mean 'opt_level'", "chip"]),
])
def test_bad_option(options, exc, words):
    with pytest.raises(exc) as info:
        pyasc.kernel(**options)
    for w in words:
        assert w in str(info.value)


def test_bad_option_fails_before_decorating():
    with pytest.raises(ValueError, match="opt_level=9"):
        @pyasc.kernel(opt_level=9)
        def f(x):
            return x


@pytest.mark.parametrize("thing", [3, "add", print, functools.partial(add, 1)])
def test_non_function_is_rejected(thing):
    with pytest.raises(TypeError, match="Python function defined with `def`"):
        pyasc.kernel(thing)


def test_varargs_kernel_is_rejected():
    def f(x, *rest):
        return x

    with pytest.raises(TypeError, match=r"\*rest is not supported"):
        pyasc.kernel(f)


def test_redecorating_a_kernel_wraps_the_original_function():
    k = pyasc.kernel(pyasc.kernel(opt_level=0)(add), opt_level=2)
    assert k.py_func is add and k.options.opt_level == 2
