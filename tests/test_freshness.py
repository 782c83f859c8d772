"""A kernel's source file edited after import is refused; nothing else is mistaken for one (pyasc.frontend.freshness).

The check compares what the running code records about its source (the positions of its instructions, and
the names, constants and operators there) with the file's text: no false "file changed" for code the
compiler arranged its own way, and every edit that changes what the function computes is caught.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest

import pyasc
from pyasc.frontend.source import parse_function

X = np.linspace(-1.0, 1.0, 8, dtype=np.float32)


def load(tmp_path, name: str, text: str) -> types.ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def edit(module: types.ModuleType, old: str, new: str) -> None:
    path = module.__file__
    with open(path) as f:
        text = f.read()
    assert old in text
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))  # the file system's clock may be coarse


def changed_error(fn) -> str:
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(fn, chip="tiny")(X)
    assert "re-import the module or restart Python" in info.value.reason, info.value.reason
    return info.value.reason


# ---- the three false alarms of the issue (Python 3.11) --------------------------------------------


def partial_call(x):
    return functools.partial(np.multiply, 2.0)(x)


def frompyfunc_call(x):
    return np.frompyfunc(abs, 1, 1)(x)


def vectorize_call(x):
    return np.vectorize(abs)(x)


def test_calling_the_result_of_a_module_function_call_is_not_a_changed_file():
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(frompyfunc_call, chip="tiny")(X)
    assert "changed after" not in info.value.reason  # refused for what it is: a call pyasc cannot compile
    assert "has no pyasc lowering" in info.value.reason
    assert info.value.lineno == inspect.getsourcelines(frompyfunc_call)[1] + 1
    for fn in (partial_call, vectorize_call):  # compiled now
        np.testing.assert_array_equal(pyasc.kernel(fn, chip="tiny")(X), fn(X))


def twice(v):
    return v * 2.0


def pick(name):
    return {"twice": twice}[name]


def factory_call(x):
    return pick("twice")(x) + np.maximum(x, 0.0)


def test_calling_the_result_of_a_helper_call_compiles():
    pyasc.testing.assert_close(pyasc.kernel(factory_call, chip="tiny")(X), factory_call(X))


class Layer:
    def __init__(self):
        self.w = np.float32(1.5)

    def _forward_pass(self, x):
        """Scale the input.

        A docstring over several lines, indented as a method's is: the dedented source
        gives another docstring constant than the one Python compiled.
        """
        return np.maximum(x * self.w, 0.0)


def test_a_method_with_a_multiline_docstring_compiles_as_a_bound_kernel():
    layer = Layer()
    pyasc.testing.assert_close(pyasc.kernel(layer._forward_pass, chip="tiny")(X), layer._forward_pass(X))


def long_method_source() -> str:
    """A method whose `if` jumps to an instruction with an EXTENDED_ARG prefix (a constant past the 256th),
    after a module-function call compiled one way in the module and another way alone."""
    body = "".join(f"        y = y + {j + 1}.5\n" for j in range(300))
    return ("import numpy as np\n\n\nclass Long:\n    def run(self, x):\n        y = np.maximum(x, 0.0)\n" + body
            + "        if x.ndim == 1:\n            y = y * 2.0\n        z = 1234.5\n        return y + z\n")


def test_a_long_method_whose_jump_lands_on_an_extended_arg_compiles(tmp_path):
    import dis

    module = load(tmp_path, "long_method", long_method_source())
    obj = module.Long()
    targets = [i.opname for i in dis.get_instructions(module.Long.run) if i.is_jump_target]
    assert "EXTENDED_ARG" in targets  # the case the issue describes
    pyasc.testing.assert_close(pyasc.kernel(obj.run, chip="tiny")(X), obj.run(X))


# ---- edits that change what the function computes are caught --------------------------------------


KERNEL_MODULE = """
import numpy as np


def helper(v):
    return v - 0.5


def k(x):
    y = x * 2.0 + 1.0
    return np.maximum(helper(y), 0.0)


def other(x):
    return x + 7.0
"""

EDITS = {
    "a constant": ("x * 2.0", "x * 3.0"),
    "a name": ("return np.maximum(helper(y), 0.0)", "return np.minimum(helper(y), 0.0)"),
    "an operator": ("x * 2.0 + 1.0", "x * 2.0 - 1.0"),
    "the order of operands": ("helper(y), 0.0", "0.0, helper(y)"),
    "a line inserted above": ("\n\ndef k(x):", "\n\nSHIFT = 1\n\ndef k(x):"),
    "an inlined helper": ("v - 0.5", "v - 1.5"),
    "a line removed": ("    y = x * 2.0 + 1.0\n", ""),
}


@pytest.mark.parametrize("old, new", EDITS.values(), ids=EDITS.keys())
def test_an_edit_of_the_function_after_import_is_refused(tmp_path, old, new):
    module = load(tmp_path, "edited_" + str(abs(hash(old)) % 10**6), KERNEL_MODULE)
    edit(module, old, new)
    reason = changed_error(module.k)
    assert module.__file__ in reason


def test_an_edit_elsewhere_that_moves_no_line_of_the_kernel_is_not_a_change(tmp_path):
    module = load(tmp_path, "edited_elsewhere", KERNEL_MODULE)
    edit(module, "x + 7.0", "x + 8.0")
    pyasc.testing.assert_close(pyasc.kernel(module.k, chip="tiny")(X), module.k(X))


def test_an_edited_method_is_refused(tmp_path):
    module = load(tmp_path, "edited_method", """
        class M:
            def __init__(self):
                self.__w = 2.0

            def run(self, x):
                return x * self.__w + 1.0
    """)
    edit(module, "x * self.__w + 1.0", "x * self.__w + 2.0")
    changed_error(module.M().run)


# ---- decorators ----------------------------------------------------------------------------------


def doubled(f):
    @functools.wraps(f)
    def wrapper(x):
        return 2.0 * f(x)
    return wrapper


@pyasc.kernel(chip="tiny")
@doubled
def k_doubled(x):
    return x + 1.0


def test_a_functools_wraps_decorator_is_compiled_not_skipped():
    assert k_doubled.py_func.__wrapped__ is not None  # inspect alone would follow it to the inner function
    pyasc.testing.assert_close(k_doubled(X), 2.0 * (X + 1.0))


# ---- no false alarm on real code ---------------------------------------------------------------


def functions_of(module: types.ModuleType):
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            yield value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr in vars(value).values():
                attr = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
                if isinstance(attr, types.FunctionType):
                    yield attr


CORPUS = ["json.decoder", "json.encoder", "argparse", "functools", "dataclasses", "typing", "email.message",
          "logging", "asyncio.base_events", "unittest.case", "http.client", "xml.etree.ElementTree", "inspect",
          "collections", "pyasc.frontend.builder", "pyasc.ge.fusion", "numpy.lib._npyio_impl"]


def test_thousands_of_real_functions_are_never_mistaken_for_edited_ones():
    checked = 0
    for name in CORPUS:
        module = importlib.import_module(name)
        for fn in functions_of(module):
            if fn.__name__ == "<lambda>" or not os.path.isfile(fn.__code__.co_filename):
                continue
            try:
                parse_function(fn)
            except pyasc.CompileError as e:
                assert "changed after" not in e.reason, f"{fn.__module__}.{fn.__qualname__}: {e.reason}"
            checked += 1
    assert checked > 1000


# ---- every Python the project supports (>= 3.10), as far as this machine has them ----------------------------


def interpreter(version: str) -> str | None:
    """A `python<version>` that runs, from PATH or a pyenv installation."""
    import glob
    import shutil
    import subprocess

    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python")))
    for exe in filter(None, candidates):
        try:
            out = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                                 text=True, timeout=30)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return exe
    return None


@pytest.mark.parametrize("version", ["3.10", "3.11", "3.12", "3.13"])
def test_no_false_alarm_and_no_missed_edit_on_each_python(version):
    """freshness.py alone (standard library only) under each interpreter: the standard library's functions are
    never taken for edited ones, and edits of a constant, a name, an operator and the line numbers are caught."""
    import json
    import subprocess

    if version == "%d.%d" % sys.version_info[:2]:
        pytest.skip("this interpreter: the tests above")
    exe = interpreter(version)
    if exe is None:
        pytest.skip(f"no Python {version} on this machine")
    script = os.path.join(os.path.dirname(__file__), "freshness_check.py")
    out = subprocess.run([exe, script, "--quick"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["python"].startswith(version) and report["functions"] > 500
    assert report["false_alarms"] == [] and report["missed_edits"] == []
