"""Bad inputs found by testing (issue 11 part 7): each is numpy's answer or a located error, never an
internal RecursionError, a raw numpy traceback or a silently different result."""
from __future__ import annotations

import importlib.util
import sys
import warnings

import numpy as np
import numpy.ma
import pytest

import pyasc
from pyasc.testing import assert_close


def _deep_module(tmp_path, n: int):
    """A module whose kernel is one `return x + x + ... + x` line with n terms."""
    path = tmp_path / f"deep_{n}.py"
    path.write_text("def deep(x):\n    return " + " + ".join(["x"] * n) + "\n")
    spec = importlib.util.spec_from_file_location(f"deep_{n}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod, path


def test_a_350_term_sum_compiles(tmp_path):
    mod, _ = _deep_module(tmp_path, 350)
    x = np.arange(8, dtype=np.float32)
    k = pyasc.kernel(mod.deep, chip="tiny")
    np.testing.assert_array_equal(k(x), x * 350)
    assert k.compile(x).stages["source"].startswith("def deep(x):")


def test_a_1000_term_sum_python_compiles_compiles(tmp_path):
    """Through the frontend and every optimiser pass (the reference backend: the emulator's fusion asks the code
    generator about each of the 999 growing groups, seconds of work the 350-term test already covers)."""
    mod, _ = _deep_module(tmp_path, 1000)
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(pyasc.kernel(mod.deep, chip="tiny", backend="reference")(x), x * 1000)


def test_the_frontend_takes_the_longest_sum_python_compiles(tmp_path):
    from pyasc.frontend import ArgSpec, build_graph
    from pyasc.tensor_type import TensorType

    mod, _ = _deep_module(tmp_path, 2000)  # Python's own compiler refuses 3000 at its default recursion limit
    graph = build_graph(mod.deep, [ArgSpec("x", TensorType((4,), "float32"))]).graph
    assert sum(n.op == "add" for n in graph.nodes) == 1999


def test_a_deeper_nest_is_located_at_the_expression(tmp_path):
    path = tmp_path / "deep_negation.py"
    path.write_text("import pyasc\n\n\n@pyasc.kernel\ndef deep(x):\n    return " + "- " * 1500 + "x\n")
    spec = importlib.util.spec_from_file_location("deep_negation", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(pyasc.CompileError) as info:
        mod.deep(np.ones(4, np.float32))
    msg = str(info.value)
    assert msg.startswith(f"{path}:6:") and "nested too deeply to compile" in msg and "RecursionError" not in msg


def int_pow_literal(x):
    return x ** -1


def int_pow_call(x):
    return np.power(x, -2)


@pytest.mark.parametrize("fn,text", [(int_pow_literal, "x ** -1"), (int_pow_call, "np.power(x, -2)")])
def test_negative_integer_exponent_constant_is_located(fn, text):
    x = np.arange(1, 5, dtype=np.int32)
    with pytest.raises(ValueError):
        fn(x)  # numpy refuses it too
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(fn, chip="tiny")(x)
    line = fn.__code__.co_firstlineno + 1
    assert str(info.value).startswith(
        f"{__file__}:{line}:12: error: integers to negative integer powers are not allowed (numpy raises "
        f"ValueError) in `{text}` (i32[4] base); use a float base, e.g. `x.astype(np.float32) ** -1`")


def test_a_bool_base_with_a_negative_exponent_is_located_too():
    x = np.array([True, False, True])
    with pytest.raises(ValueError):
        int_pow_literal(x)
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(int_pow_literal, chip="tiny")(x)
    assert "integers to negative integer powers are not allowed (numpy raises ValueError) in `x ** -1` (bool[3] " \
           "base)" in str(info.value)


def float_pow(x):
    return x.astype(np.float32) ** -1


def test_a_float_base_takes_negative_exponents(rng):
    x = np.arange(1, 9, dtype=np.int32)
    np.testing.assert_allclose(pyasc.kernel(float_pow, chip="tiny")(x), x.astype(np.float32) ** -1, rtol=1e-6)


def pow_data(x, y):
    return x ** y


def test_negative_integer_exponent_data_on_the_reference_backend_is_numpys_error():
    x = np.arange(1, 5, dtype=np.int32)
    y = np.array([1, -1, 2, 0], np.int32)
    with pytest.raises(ValueError) as info:
        pyasc.kernel(pow_data, chip="tiny", backend="reference")(x, y)
    line = pow_data.__code__.co_firstlineno + 1
    assert str(info.value) == (f"pow_data(): {__file__}:{line}:12: pow: Integers to negative integer powers are not "
                               "allowed. (numpy raises ValueError for these values)")
    # non-negative exponents in data are numpy's result
    y = np.array([1, 3, 2, 0], np.int32)
    np.testing.assert_array_equal(pyasc.kernel(pow_data, chip="tiny", backend="reference")(x, y), x ** y)
    np.testing.assert_array_equal(pyasc.kernel(pow_data, chip="tiny")(x, y), x ** y)


def ident(x):
    return x * 2.0


def test_np_matrix_is_rejected_with_the_reason():
    m = np.matrix([[1.0, 2.0]], dtype=np.float32)
    with pytest.raises(TypeError) as info:
        pyasc.kernel(ident, chip="tiny")(m)
    assert str(info.value) == (
        "ident() argument 'x' is a numpy.matrix, whose operators mean something else (`*` is a matrix product, "
        "`**` a matrix power, and every result stays 2-D); pass np.asarray(...) and use `@` for a matrix product")


def test_masked_array_is_rejected_with_the_reason():
    a = numpy.ma.masked_array(np.ones(4, np.float32), mask=[0, 1, 0, 0])
    with pytest.raises(TypeError) as info:
        pyasc.kernel(ident, chip="tiny")(a)
    assert str(info.value).startswith(
        "ident() argument 'x' is a masked array (numpy.ma.MaskedArray): a kernel would compute on the masked-out "
        "values and drop the mask")


def test_a_matrix_inside_a_pytree_is_rejected():
    def leaf(d):
        return d["m"] * 2.0

    with pytest.raises(TypeError) as info:
        pyasc.kernel(leaf, chip="tiny")({"m": np.matrix([[1.0]], dtype=np.float32)})
    assert str(info.value).startswith("leaf() argument \"d['m']\" is a numpy.matrix")


with warnings.catch_warnings():  # numpy discourages np.matrix: that is the point of rejecting it
    warnings.simplefilter("ignore", PendingDeprecationWarning)
    M = np.matrix([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)

pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")


def uses_matrix(x):
    return x * M


def test_a_captured_matrix_is_a_located_error():
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(uses_matrix, chip="tiny")(np.ones((2, 2), np.float32))
    line = uses_matrix.__code__.co_firstlineno + 1
    assert str(info.value).startswith(f"{__file__}:{line}:16: error: `M` is a numpy.matrix, whose operators mean")


def reshape_nothing(x):
    return x.reshape()


def sum_list_axis(x):
    return np.sum(x, axis=[0, 1])


def method_list_axis(x):
    return x.max(axis=[0])


@pytest.mark.parametrize("fn,reason", [
    (reshape_nothing, ".reshape() needs the new shape: TypeError: reshape() takes exactly 1 argument (0 given)"),
    (sum_list_axis, "np.sum(): TypeError: 'list' object cannot be interpreted as an integer (numpy takes an int "
                    "or a tuple of ints as axis: `axis=(0, 1)`)"),
    (method_list_axis, ".max(): TypeError: 'list' object cannot be interpreted as an integer (numpy takes an int "
                       "or a tuple of ints as axis: `axis=(0,)`)"),
])
def test_calls_numpy_rejects_are_rejected(fn, reason):
    x = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError):
        fn(x)  # numpy's own TypeError
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(fn, chip="tiny")(x)
    line = fn.__code__.co_firstlineno + 1
    assert str(info.value).startswith(f"{__file__}:{line}:12: error: {reason}\n")


def test_a_tuple_axis_still_works():
    def tuple_axis(x):
        return np.sum(x, axis=(0, 1))

    x = np.ones((2, 3), np.float32)
    assert float(pyasc.kernel(tuple_axis, chip="tiny")(x)) == 6.0


def tensor_bound(x, n):
    return x[:n]


def tensor_bound_in_tuple(x):
    return x[0, 1:pyasc.sum(x[0]).astype(np.int32)]


def test_tensor_slice_bounds_say_what_to_do():
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(tensor_bound, chip="tiny")(np.ones(4, np.float32), np.int32(2))
    line = tensor_bound.__code__.co_firstlineno + 1
    assert str(info.value) == (
        f"{__file__}:{line}:14: error: tensor slice bounds are not supported; use pyasc.where or a static bound "
        "(in `x[:n]`)\n        return x[:n]\n                 ^^")
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(tensor_bound_in_tuple, chip="tiny")(np.ones((2, 4), np.int32))
    msg = str(info.value)
    assert "tensor slice bounds are not supported; use pyasc.where or a static bound" in msg
    assert "Value(" not in msg
    assert msg.endswith("\n        return x[0, 1:pyasc.sum(x[0]).astype(np.int32)]\n"
                        "                    " + "^" * len("1:pyasc.sum(x[0]).astype(np.int32)"))


K1, K2 = pyasc.kernel(lambda x: x.nonzero()), pyasc.kernel(lambda y: y.argwhere())


@pytest.mark.parametrize("k,col,width", [(K1, 33, len("x.nonzero")), (K2, 70, len("y.argwhere"))])
def test_the_caret_finds_the_right_lambda_on_a_line(k, col, width):
    with pytest.raises(pyasc.CompileError) as info:  # a lambda compiles: its own errors point into it
        k(np.ones(2, np.float32))
    msg = str(info.value)
    line = k.py_func.__code__.co_firstlineno
    assert msg.startswith(f"{__file__}:{line}:{col}: error: tensors have no attribute")
    assert msg.endswith("\n" + " " * (4 + col - 1) + "^" * width)


def test_a_lambda_kernel_runs():
    k = pyasc.kernel(lambda x, y=2.0: x * y, chip="tiny")
    assert_close(k(np.ones(3, np.float32)), np.full(3, 2.0, np.float32))


def try_star(x):
    try:
        y = x
    except* ValueError:
        y = x
    return y


def test_try_except_star_caret():
    with pytest.raises(pyasc.CompileError) as info:
        pyasc.kernel(try_star, chip="tiny")(np.ones(2, np.float32))
    line = try_star.__code__.co_firstlineno + 1
    assert str(info.value) == (f"{__file__}:{line}:5: error: `try ... except*` is not supported in a kernel\n"
                               "        try:\n        ^^^")


def test_negative_integer_exponent_data_on_the_emulator_is_numpys_error_after_the_launch():
    x = np.array([1, 2, -1, -2, 0, 3], np.int32)
    y = np.array([-1, -1, -1, -3, -1, -2], np.int32)
    with pytest.raises(ValueError) as info:  # a device check: the status word, raised at the kernel line
        pyasc.kernel(pow_data, chip="tiny")(x, y)
    line = pow_data.__code__.co_firstlineno + 1
    assert str(info.value) == f"{__file__}:{line}:12: in `x ** y`: Integers to negative integer powers are not allowed."
    got = pyasc.kernel(pow_data, chip="tiny", checks=False)(x, y)  # README: 1 // x**n toward zero, 0 for a zero base
    np.testing.assert_array_equal(got, [1, 0, -1, 0, 0, 0])
