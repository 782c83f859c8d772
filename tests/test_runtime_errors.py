"""Errors at the kernel boundary: trimmed CompileError tracebacks, internal compiler errors, PYASC_DEBUG."""
from __future__ import annotations

import inspect
import os
import sys
import traceback

import numpy as np
import pytest

import pyasc
from pyasc.ge import Pass

GE = pyasc.ge

PYASC_DIR = os.path.dirname(pyasc.__file__)


def f32(*shape):
    return np.zeros(shape, np.float32)


def internal_frames(exc: BaseException) -> list[str]:
    """`file:function` of every frame of the traceback that lives inside the pyasc package."""
    return [f"{os.path.relpath(f.filename, PYASC_DIR)}:{f.name}"
            for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(PYASC_DIR)]


def make_bad_kernel():
    @pyasc.kernel(chip="tiny")
    def bad(x, y):
        z = x + 1.0
        return z * y  # (4, 8) * (3,) cannot broadcast

    return bad


BAD_LINE = inspect.getsourcelines(make_bad_kernel)[1] + 4


def test_compile_error_points_at_the_user_line():
    with pytest.raises(pyasc.CompileError) as info:
        make_bad_kernel()(f32(4, 8), f32(3))
    e = info.value
    assert e.lineno == BAD_LINE and e.filename == __file__
    assert "(4, 8)" in str(e) and "(3,)" in str(e)


def test_compile_error_traceback_has_no_compiler_frames(monkeypatch):
    monkeypatch.delenv("PYASC_DEBUG", raising=False)
    for call in (lambda k: k(f32(4, 8), f32(3)), lambda k: k.compile(f32(4, 8), f32(3))):
        with pytest.raises(pyasc.CompileError) as info:
            call(make_bad_kernel())
        frames = internal_frames(info.value)
        # only the Kernel boundary itself (the frame that re-raised) is left
        assert len(frames) == 1 and frames[0].startswith(os.path.join("runtime", "kernel.py")), frames
        assert info.value.__cause__ is None and info.value.__suppress_context__


def test_debug_keeps_the_internal_stack(monkeypatch):
    monkeypatch.setenv("PYASC_DEBUG", "1")
    with pytest.raises(pyasc.CompileError) as info:
        make_bad_kernel()(f32(4, 8), f32(3))
    frames = internal_frames(info.value)
    assert any(f.startswith("frontend") for f in frames), frames


def test_internal_error_in_a_pass_is_wrapped_and_names_the_pass(monkeypatch):
    monkeypatch.delenv("PYASC_DEBUG", raising=False)

    class Exploding(Pass):
        name = "exploding_pass"
        opt_level = 0

        def run(self, graph, ctx):
            return {}["missing"]  # a bug inside a pass

    def optimize(graph, **kwargs):
        GE.PassManager([Exploding()]).run(graph, GE.PassContext(opt_level=0))

    monkeypatch.setattr(GE, "optimize", optimize)
    k = pyasc.kernel(chip="tiny")(lambda_free_kernel)
    with pytest.raises(pyasc.InternalCompilerError) as info:
        k(f32(3))
    e = info.value
    assert isinstance(e, RuntimeError)
    assert "internal compiler error in optimiser pass 'exploding_pass'" in str(e)
    assert "please report" in str(e) and "PYASC_DEBUG=1" in str(e)
    assert isinstance(e.__cause__, KeyError)
    assert k.cache_info().misses == 0 and k.cache_info().currsize == 0  # nothing half-built was cached


def test_debug_raises_a_failing_passs_own_exception(monkeypatch):
    class Exploding(Pass):
        name = "exploding_pass"
        opt_level = 0

        def run(self, graph, ctx):
            raise ZeroDivisionError("pass bug")

    monkeypatch.setattr(GE, "optimize", lambda graph, **kw: GE.PassManager([Exploding()]).run(graph, GE.PassContext()))
    monkeypatch.setenv("PYASC_DEBUG", "1")
    with pytest.raises(ZeroDivisionError, match="pass bug"):
        pyasc.kernel(lambda_free_kernel)(f32(3))


def test_internal_error_in_the_frontend_names_the_stage(monkeypatch):
    import pyasc.frontend

    def broken(*args, **kwargs):
        raise AttributeError("frontend bug")

    monkeypatch.setattr(pyasc.frontend, "build_graph", broken)
    with pytest.raises(pyasc.InternalCompilerError, match="internal compiler error in the frontend") as info:
        pyasc.kernel(lambda_free_kernel)(f32(3))
    assert isinstance(info.value.__cause__, AttributeError)


def test_debug_raises_internal_errors_unwrapped(monkeypatch):
    import pyasc.frontend

    def broken(*args, **kwargs):
        raise AttributeError("frontend bug")

    monkeypatch.setattr(pyasc.frontend, "build_graph", broken)
    monkeypatch.setenv("PYASC_DEBUG", "1")
    with pytest.raises(AttributeError, match="frontend bug"):
        pyasc.kernel(lambda_free_kernel)(f32(3))


def test_lambda_kernel_compiles():
    k = pyasc.kernel(lambda x: x + 1, chip="tiny")
    np.testing.assert_array_equal(k(f32(2)), f32(2) + 1)


def test_a_lambda_whose_source_is_gone_is_a_compile_error_not_an_internal_one():
    k = pyasc.kernel(eval("lambda x: x + 1"))  # no file holds its source
    with pytest.raises(pyasc.CompileError, match="source of the lambda"):
        k(f32(2))


def lambda_free_kernel(x):
    return x * 2.0
