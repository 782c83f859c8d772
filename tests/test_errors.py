"""Bad kernels: every rejection is a CompileError at the user's real line and column.

Each case is a small kernel whose offending line carries the comment
`# <- error`; the test finds that line with `inspect`, so the cases keep
working when lines move. Each case asserts the exception type, words of
the reason, the exact line, and the caret run under the expression.
"""
from __future__ import annotations

import inspect
import math
import os
import textwrap

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.errors import CompileError
from pyasc.frontend import ArgSpec, build_graph
from pyasc.ir.types import Sym, TensorType


def f32(*shape):
    return np.zeros(shape, np.float32)


def specs_for(fn, args):
    names = list(inspect.signature(fn).parameters)
    return [
        ArgSpec(n, TensorType(a.shape, dtypes.narrow(a.dtype))) if isinstance(a, np.ndarray) else ArgSpec(n, None, a)
        for n, a in zip(names, args)
    ]


def marked_line(fn, marker: str = "# <- error") -> int:
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, f"{fn.__name__}: marker found {len(hits)} times"
    return hits[0]


def caret_text(err: CompileError) -> str:
    """The source text the rendered caret run is under."""
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"{err.filename}:{err.lineno}:{err.col_offset + 1}: error: ")
    assert rendered[1] == "    " + err.source_line
    caret = rendered[2]
    assert set(caret.strip()) == {"^"}
    start = caret.index("^") - 4
    return err.source_line[start:len(caret) - 4]


def compile_error(fn, *args, **kw) -> CompileError:
    with pytest.raises(CompileError) as info:
        build_graph(fn, specs_for(fn, args), **kw)
    return info.value


# ---- the bad kernels -----------------------------------------------------------------------------


def bad_broadcast(x, w):
    y = pyasc.relu(x)
    return y * w  # <- error


def bad_matmul(a, b):
    return a @ b  # <- error


def bad_numpy_function(x):
    u = np.linalg.svd(x)  # <- error
    return u


def bad_math_function(x):
    return x * math.sqrt(x)  # <- error


def bad_unknown_name(x):
    return x + undefined_thing  # noqa: F821  # <- error


def bad_while(x):
    while x.ndim > 0:  # <- error
        x = x + 1  # (the test never changes: no end)
    return x


def bad_break(x):
    while x.sum() > 3:  # a loop that runs at launch
        x = x - 1
        break  # <- error
    return x


def bad_try(x):
    try:  # <- error
        y = x + 1
    except ValueError:
        y = x
    return y


def bad_with(x):
    with open(os.devnull):  # <- error
        pass
    return x


def bad_lambda(x):
    f = lambda v: v + 1  # noqa: E731
    return f(x, x)  # <- error


def bad_global(x):
    global COUNTER  # <- error
    return x


def bad_import(x):
    from . import helpers  # <- error
    return x * helpers.SCALE


def bad_del(x):
    y = x + 1
    del y  # <- error
    return x


def bad_subscript_assignment(x):
    v = np.broadcast_to(x, (2, 4))
    v[0] = 1.0  # <- error
    return v


def bad_print(x):
    if x.sum() > 0:
        print(x)  # <- error
    return x


def bad_condition_shape(x):
    if x > 0:  # <- error
        x = x * 2
    return x


def bad_not(x):
    return x * (not x)  # <- error


def bad_and(x, y):
    m = (x > 0) and (y > 0)  # <- error
    return m


def bad_one_branch_variable(x, c):
    if c > 0:
        z = x + 1
    return x + z  # <- error


def bad_return_one_branch(x, c):
    if c > 0:
        if c > 1:
            return x + 1  # <- error
        y = x
    else:
        y = x - 1
    return y


def bad_unroll_budget(x):
    for i in range(10):
        for j in tuple(range(1000)):  # <- error
            x = x + j
    return x


def recursive_helper(x, n):
    return recursive_helper(x, n - 1) if n > 0 else x  # <- error


def bad_recursion(x):
    return recursive_helper(x, 3)


def bad_zero_division(x, n):
    k = n // 0  # <- error
    return x * k


def bad_int_overflow(x):
    return x + 1000  # <- error


def bad_tensor_index(x, i):
    return x[i]  # <- error


def bad_index_range(x):
    return x[:, 5]  # <- error


def bad_iterate_tensor(x):
    total = x[0]
    for row in x.sum():  # <- error
        total = total + row
    return total


def bad_comprehension_over_tensor(x):
    rows = [r * 2 for r in x.max()]  # <- error
    return rows[0]


def bad_range_tensor(x, n):
    for i in range(n):
        x = x[1:]  # <- error
    return x


def bad_symbolic_range(x):
    for i in range(x.shape[0]):  # <- error
        x = x + i
    return x


def bad_assert(x, n):
    assert n % 16 == 0, f"n must be a multiple of 16, got {n}"  # <- error
    return x


def bad_assert_tensor(x):
    assert x > 0  # <- error
    return x


def bad_returns_function(x):
    return x, np.exp  # <- error


def bad_returns_masked(x):
    return x[x > 0]  # <- error


def bad_method(x):
    return x.nonzero()  # <- error


def bad_axis(x):
    return pyasc.sum(x, axis=5)  # <- error


def bad_float64_cast(x):
    return x.astype(np.float64)  # <- error


def bad_use_before_assignment(x):
    y = z + x  # <- error
    z = x
    return y


def bad_chained_compare(x):
    return 0 < x < 1  # <- error


def bad_max_on_tensors(x, y):
    return max(x, y)  # <- error


def bad_int_of_tensor(x):
    return x * int(x)  # <- error


def bad_raise(x, mode):
    if mode not in ("a", "b"):
        raise ValueError(f"unknown mode {mode!r}")  # <- error
    return x


def bad_branch_types(x, c):
    return x.astype(pyasc.float16) if c > 0 else x  # <- error


def bad_branch_types_statement(x, c):
    y = x
    if c > 0:  # <- error
        y = x.astype(pyasc.float16)
    return y


def bad_op_arguments(x):
    return pyasc.exp(x, 2)  # <- error


def bad_nested_def(x):
    def inner(v):
        return v.nonzero()  # <- error
    return inner(x)


def bad_not_a_function(x):
    return memoryview(x)  # <- error


def bad_shift(x):
    return x << 1  # <- error


def bad_aug_dtype(x):
    x += 0.5  # <- error
    return x


def bad_attribute_of_tensor(x):
    return x.data  # <- error


def bad_module_attribute(x):
    return pyasc.not_an_op(x)  # <- error


ROWS = []


def bad_list_append(x):
    ROWS.append(x)  # <- error
    return x


def bad_constant_array_fill(x):
    I32.fill(0)  # <- error
    return x


def bad_sum_of_tensor(x):
    return sum(x)  # <- error


def doubles_in_a_tensor_if(v, c):
    if c > 0:
        v *= 2  # <- error
    return v + 1


def bad_in_place_of_callers_array_in_tensor_if(x, c):
    z = x + 0
    return doubles_in_a_tensor_if(z, c), z


I32 = np.zeros(4, np.int32)


# (kernel, args, words the reason must contain, text the caret is under)
CASES = [
    (bad_broadcast, (f32(4, 8), f32(3)), ["cannot broadcast shapes (4, 8) and (3,)", "in `y * w`"], "y * w"),
    (bad_matmul, (f32(3, 4), f32(5, 6)), ["matmul", "(3, 4)", "(5, 6)", "in `a @ b`"], "a @ b"),
    (bad_numpy_function, (f32(3, 3),), ["`np.linalg.svd` has no pyasc lowering; supported near it: np.matmul"],
     "np.linalg.svd(x)"),
    (bad_math_function, (f32(4),), ["`math.sqrt` works on Python numbers at compile time", "np.sqrt(x)"],
     "math.sqrt(x)"),
    (bad_unknown_name, (f32(4),), ["name `undefined_thing` is not defined"], "undefined_thing"),
    (bad_while, (f32(4),), ["`while x.ndim > 0` is known at compile time and still true", "unroll_budget"],
     "x.ndim > 0"),
    (bad_break, (f32(4),), ["`break` inside a `while` loop is not supported", "make the condition"], "break"),
    (bad_try, (f32(4),), ["`try` is not supported"], "try"),
    (bad_with, (f32(4),), ["`with` is not supported"], "with open(os.devnull)"),
    (bad_lambda, (f32(4),), ["<lambda>(): too many positional arguments"], "f(x, x)"),
    (bad_global, (f32(4),), ["`global` is not supported"], "global COUNTER"),
    (bad_import, (f32(4),), ["a relative `import` inside a kernel: import at module level"], "from . import helpers"),
    (bad_del, (f32(4),), ["`del` is not supported"], "del y"),
    (bad_subscript_assignment, (f32(4),), ["`v[0]` writes into a read-only view", "np.broadcast_to",
                                           "output array is read-only"], "v[0]"),
    (bad_print, (f32(4),), ["inside an `if` on a tensor or a runtime loop is not supported"], "print(x)"),
    (bad_condition_shape, (f32(4),), ["must be a single value", "shape (4,)", "pyasc.where"], "x > 0"),
    (bad_not, (f32(4),), ["`not` on a tensor", "`~x`"], "not x"),
    (bad_and, (f32(4), f32(4)), ["`and` on a tensor", "`&`"], "(x > 0) and (y > 0)"),
    (bad_one_branch_variable, (f32(4), np.array(1, np.float32)), ["`z` may be undefined", "only in the then branch"], "z"),
    (bad_return_one_branch, (f32(4), np.array(1, np.float32)), ["`return` in only the then branch",
                                                                     "no `return` after it"],
     "return x + 1"),
    (bad_unroll_budget, (f32(4),), ["`for j in tuple(range(1000))`", "unroll budget of 4096",
                                    "@pyasc.kernel(unroll_budget=...)"], "tuple(range(1000))"),
    (bad_recursion, (f32(4),), ["recursive call to `recursive_helper`"], "recursive_helper(x, n - 1)"),
    (bad_zero_division, (f32(4), 3), ["ZeroDivisionError", "in `n // 0`"], "n // 0"),
    (bad_int_overflow, (np.zeros(4, np.int8),), ["1000 does not fit int8", "-128..127"], "1000"),
    (bad_tensor_index, (f32(4), f32(2)), ["indexing a tensor with a tensor"], "x[i]"),  # int tensors gather
    (bad_index_range, (f32(3, 4),), ["index 5 is out of bounds for axis 1 with size 4"], "x[:, 5]"),
    (bad_iterate_tensor, (f32(3, 4),), ["iteration over a 0-d tensor `x.sum()`", "TypeError"], "x.sum()"),
    (bad_comprehension_over_tensor, (f32(3, 4),), ["iteration over a 0-d tensor `x.max()`"], "x.max()"),
    (bad_range_tensor, (f32(4), I32[:1].reshape(())),
     ["loop-carried variable `x` is f32[4] before an iteration but f32[3] after it"], "x = x[1:]"),
    (bad_assert, (f32(4), 10), ["assertion failed: n must be a multiple of 16, got 10"], "n % 16 == 0"),
    (bad_assert_tensor, (f32(4),), ["tests a tensor", "compile-time values"], "x > 0"),
    (bad_returns_function, (f32(4),), ["result 1 of kernel `bad_returns_function` is a ufunc",
                                       "a kernel returns tensors"], "x, np.exp"),
    (bad_returns_masked, (f32(4),), ["`x[x > 0]`, which has a length that depends on the data"], "x[x > 0]"),
    (bad_method, (f32(4),), ["tensors have no attribute `nonzero`"], "x.nonzero"),
    (bad_axis, (f32(3, 4),), ["axis 5 is out of range for a tensor of rank 2"], "pyasc.sum(x, axis=5)"),
    (bad_float64_cast, (f32(4),), ["float64 is not supported", "float16, float32"], "x.astype(np.float64)"),
    (bad_use_before_assignment, (f32(4),), ["local variable `z` is used before it is assigned"], "z"),
    (bad_chained_compare, (f32(4),), ["chained comparison", "(a < b) & (b < c)"], "0 < x < 1"),
    (bad_max_on_tensors, (f32(4), f32(4)), ["max() on tensors", "pyasc.maximum"], "max(x, y)"),
    (bad_int_of_tensor, (f32(4),), ["int() of a tensor", "astype"], "int(x)"),
    (bad_raise, (f32(4), "c"), ["ValueError: unknown mode 'c'"], 'raise ValueError(f"unknown mode {mode!r}")'),
    (bad_branch_types, (f32(4), np.array(1, np.float32)), ["the value is f16[4] in the then branch but f32[4]"],
     "x.astype(pyasc.float16) if c > 0 else x"),
    (bad_branch_types_statement, (f32(4), np.array(1, np.float32)),
     ["variable `y` is f16[4] in the then branch but f32[4]"], "c > 0"),
    (bad_op_arguments, (f32(4),), ["pyasc.exp()", "too many positional arguments"], "pyasc.exp(x, 2)"),
    (bad_nested_def, (f32(4),), ["tensors have no attribute `nonzero`"], "v.nonzero"),
    (bad_not_a_function, (f32(4),), ["memoryview is not a pyasc op, a supported builtin"], "memoryview(x)"),
    (bad_shift, (f32(4),), ["`x << 1`: numpy's << is not supported for float32 (integers and bool only)"],
     "x << 1"),
    (bad_aug_dtype, (np.zeros(4, np.int32),), ["computes float32", "dtype int32 in place"], "x += 0.5"),
    (bad_attribute_of_tensor, (f32(4),), ["tensors have no attribute `data`"], "x.data"),
    (bad_module_attribute, (f32(4),), ["module pyasc has no attribute `not_an_op`"], "pyasc.not_an_op"),
    (bad_list_append, (f32(4),), ["ROWS.append() would change in place a list the kernel read from outside",
                                       "items = items + [value]"], "ROWS.append(x)"),
    (bad_constant_array_fill, (f32(4),), ["I32.fill() would change a constant numpy array in place"],
     "I32.fill(0)"),
    (bad_in_place_of_callers_array_in_tensor_if, (f32(4), np.array(1, np.float32)),
     ["would also change `z` of the calling function `bad_in_place_of_callers_array_in_tensor_if`",
      "`v = v ...`"], "v *= 2"),
    (bad_sum_of_tensor, (f32(4),), ["sum() would iterate over the tensor (f32[4])", "x.sum()"], "sum(x)"),
]


@pytest.mark.parametrize("fn, args, words, under", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_kernel_is_a_located_compile_error(fn, args, words, under):
    err = compile_error(fn, *args)
    for w in words:
        assert w in err.reason, f"{w!r} not in {err.reason!r}"
    assert err.filename == __file__
    where = {bad_recursion: recursive_helper, bad_in_place_of_callers_array_in_tensor_if: doubles_in_a_tensor_if
             }.get(fn, fn)
    assert err.lineno == marked_line(where), str(err)
    assert caret_text(err) == under, str(err)


def test_at_least_twenty_cases():
    assert len(CASES) >= 20


def test_message_format():
    err = compile_error(bad_broadcast, f32(4, 8), f32(3))
    line = marked_line(bad_broadcast)
    assert str(err).splitlines() == [
        f"{__file__}:{line}:12: error: {err.reason}",
        "        return y * w  # <- error",
        "               ^^^^^",
    ]
    assert (err.col_offset, err.end_col_offset) == (11, 16)


# ---- symbolic dims, budgets, sources ---------------------------------------------------------------


def test_symbolic_loop_bound_is_a_runtime_loop():
    n = Sym("n")
    graph = build_graph(bad_symbolic_range, [ArgSpec("x", TensorType((n,), "float32"))]).graph
    (loop,) = [node for node in graph.nodes if node.op == "Loop"]
    trip = loop.inputs[0].node
    assert trip.op == "DimValue" and trip.attrs["value"] == n and loop.attrs["kind"] == "for"


def compare_symbolic(x):
    if x.shape == (4,):  # <- error
        return x * 2
    return x


def test_comparing_a_symbolic_dim():
    with pytest.raises(CompileError) as info:
        build_graph(compare_symbolic, [ArgSpec("x", TensorType((Sym("n"),), "float32"))])
    assert "compares a symbolic dim" in info.value.reason
    assert info.value.lineno == marked_line(compare_symbolic)


def helper_without_source_kernel(x):
    return NO_SOURCE(x)  # <- error


_ns: dict = {}
exec(textwrap.dedent("""
    def no_source(v):
        return v
"""), _ns)
NO_SOURCE = _ns["no_source"]


def test_helper_without_source_is_reported_at_the_call():
    err = compile_error(helper_without_source_kernel, f32(4))
    assert "cannot inline NO_SOURCE" in err.reason and "cannot find the source" in err.reason
    assert err.lineno == marked_line(helper_without_source_kernel)


LAMBDA_KERNEL = lambda x: x * 2  # noqa: E731
TWO_LAMBDAS = (lambda x: x + 1, lambda x: x.nonzero())  # noqa: E731


def test_lambda_kernel_compiles_and_its_errors_are_located():
    fe = build_graph(LAMBDA_KERNEL, [ArgSpec("x", TensorType((2,), "float32"))])
    assert [n.op for n in fe.graph.nodes if n.op not in ("Data", "Const")] == ["mul"]
    with pytest.raises(CompileError) as info:  # the second lambda of the line, found by its column
        build_graph(TWO_LAMBDAS[1], [ArgSpec("x", TensorType((2,), "float32"))])
    assert "tensors have no attribute `nonzero`" in info.value.reason
    assert info.value.lineno == TWO_LAMBDAS[1].__code__.co_firstlineno
    assert caret_text(info.value) == "x.nonzero"


def test_builtin_is_a_type_error():
    with pytest.raises(TypeError, match="Python function"):
        build_graph(np.exp, [])


def test_unroll_budget_must_be_an_int():
    with pytest.raises(ValueError, match="unroll_budget"):
        build_graph(bad_broadcast, [], unroll_budget=-1)


def internal_error_kernel(x):
    return x + BROKEN  # <- error


class _Broken:
    def __radd__(self, other):  # never reached: tensors take the operator first
        raise AssertionError


BROKEN = _Broken()


def test_unsupported_operand_value_is_named():
    err = compile_error(internal_error_kernel, f32(4))
    assert "must be a tensor or a number, got a _Broken" in err.reason
    assert err.lineno == marked_line(internal_error_kernel)


def test_internal_errors_are_located_unless_debugging(monkeypatch):
    from pyasc.frontend.builder import FunctionBuilder

    def broken(self, node):
        raise RuntimeError("simulated compiler bug")

    monkeypatch.setattr(FunctionBuilder, "_e_BinOp", broken)
    monkeypatch.delenv("PYASC_DEBUG", raising=False)
    with pytest.raises(pyasc.InternalCompilerError) as info:
        build_graph(bad_broadcast, specs_for(bad_broadcast, (f32(4, 8), f32(3))))
    err = info.value
    assert not isinstance(err, CompileError)  # a pyasc bug is never reported as the user's mistake
    assert "internal compiler error in the frontend" in str(err)
    assert "RuntimeError: simulated compiler bug" in str(err) and "PYASC_DEBUG=1" in str(err)
    assert isinstance(err.__cause__, RuntimeError)
    assert err.loc.lineno == marked_line(bad_broadcast)
    assert f":{marked_line(bad_broadcast)}:" in str(err)
    monkeypatch.setenv("PYASC_DEBUG", "1")
    with pytest.raises(RuntimeError, match="simulated compiler bug"):
        build_graph(bad_broadcast, specs_for(bad_broadcast, (f32(4, 8), f32(3))))


@pytest.mark.parametrize("value, on", [("0", False), ("false", False), ("off", False), ("", False),
                                       ("1", True), ("true", True), (" YES ", True)])
def test_pyasc_debug_values_mean_the_same_in_the_frontend_and_the_runtime(monkeypatch, value, on):
    from pyasc.frontend.builder import FunctionBuilder
    from pyasc.runtime.errors import debug_enabled

    def broken(self, node):
        raise RuntimeError("simulated compiler bug")

    monkeypatch.setattr(FunctionBuilder, "_e_BinOp", broken)
    monkeypatch.setenv("PYASC_DEBUG", value)
    assert debug_enabled() is on
    expected = RuntimeError if on else pyasc.InternalCompilerError
    with pytest.raises(expected, match="simulated compiler bug") as info:
        build_graph(bad_broadcast, specs_for(bad_broadcast, (f32(4, 8), f32(3))))
    assert type(info.value) is expected


def failing_helper(a, w):
    return a @ w  # <- error


def middle_helper(a, w):
    return failing_helper(a, w) + 1  # <- middle


def calls_failing_helpers(x, w):
    return middle_helper(x, w)  # <- outer


def test_error_in_a_helper_notes_every_call_that_led_there():
    err = compile_error(calls_failing_helpers, f32(4, 8), f32(3))
    assert err.lineno == marked_line(failing_helper) and caret_text(err) == "a @ w"
    middle, outer = err.notes
    assert (middle.loc.lineno, outer.loc.lineno) == (marked_line(middle_helper, "# <- middle"),
                                                     marked_line(calls_failing_helpers, "# <- outer"))
    assert middle.text == "in `failing_helper`, called here" and outer.text == "in `middle_helper`, called here"
    rendered = str(err).splitlines()
    assert rendered[3:] == [
        f"{__file__}:{middle.loc.lineno}:12: note: in `failing_helper`, called here",
        "        return failing_helper(a, w) + 1  # <- middle",
        "               ^^^^^^^^^^^^^^^^^^^^",
        f"{__file__}:{outer.loc.lineno}:12: note: in `middle_helper`, called here",
        "        return middle_helper(x, w)  # <- outer",
        "               ^^^^^^^^^^^^^^^^^^^",
    ]


def test_caret_keeps_the_tabs_of_a_tab_indented_source(tmp_path, monkeypatch):
    (tmp_path / "tabbed_kernel.py").write_text("import pyasc\n\n\ndef k(x, w):\n\ty = x + 1\n\treturn y * w\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import tabbed_kernel

    err = compile_error(tabbed_kernel.k, f32(4, 8), f32(3))
    assert (err.lineno, err.col_offset, err.end_col_offset) == (6, 8, 13)
    assert str(err).splitlines()[1:] == ["    \treturn y * w", "    \t       ^^^^^"]


def kernel_reading_a_closure_variable_assigned_later():
    def kernel(x):
        return x * later  # <- error

    err = compile_error(kernel, f32(4))
    later = 2.0  # noqa: F841  (assigned after the compile: the kernel's cell is still empty)
    return kernel, err


later = 100.0  # a global of the same name, which Python does not fall back to


def test_empty_closure_cell_is_an_error_not_the_global():
    kernel, err = kernel_reading_a_closure_variable_assigned_later()
    assert "`later` is a variable of the enclosing function" in err.reason
    assert "kernel_reading_a_closure_variable_assigned_later" in err.reason
    assert err.lineno == marked_line(kernel) and caret_text(err) == "later"


def test_pickling_keeps_the_location():
    import pickle

    err = compile_error(bad_broadcast, f32(4, 8), f32(3))
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.lineno == err.lineno
    noted = compile_error(calls_failing_helpers, f32(4, 8), f32(3))
    again = pickle.loads(pickle.dumps(noted))
    assert str(again) == str(noted) and again.notes == noted.notes
