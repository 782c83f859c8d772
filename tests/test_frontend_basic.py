"""Frontend: source positions, tensor expressions, scalars, methods, subscripts, calls.

Each test compiles a small function with `build_graph`, checks the graph
(ops in order, types, source lines) and runs it with the IR interpreter
against the same function run eagerly on numpy.
"""
from __future__ import annotations

import inspect
import textwrap

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.errors import CompileError
from pyasc.frontend import ArgSpec, FrontendResult, build_graph, get_source
from pyasc.ir import interpret, verify
from pyasc.ir.types import Sym, TensorType
from conftest import assert_close


# ---- helpers -------------------------------------------------------------------------------


def specs_for(fn, args):
    names = list(inspect.signature(fn).parameters)
    out = []
    for name, a in zip(names, args):
        if isinstance(a, np.ndarray):
            out.append(ArgSpec(name, TensorType(a.shape, dtypes.narrow(a.dtype))))
        else:
            out.append(ArgSpec(name, None, a))
    return out


def build(fn, *args) -> FrontendResult:
    result = build_graph(fn, specs_for(fn, args))
    verify(result.graph)
    return result


def check(fn, *args) -> FrontendResult:
    """Compile, interpret, and compare with the function run eagerly on numpy."""
    result = build(fn, *args)
    outs = interpret(result.graph, [a for a in args if isinstance(a, np.ndarray)])
    expected = fn(*args)
    expected = list(expected) if result.returns_tuple else [expected]
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected):
        want = np.asarray(want)
        assert got.dtype.name == dtypes.narrow(want.dtype), (got.dtype, want.dtype)
        assert_close(got, want.astype(got.dtype))
    return result


def ops_of(result: FrontendResult) -> list[str]:
    return [n.op for n in result.graph.nodes if n.op not in ("Data", "Const")]


def line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


def node(result: FrontendResult, op: str, k: int = 0):
    return [n for n in result.graph.nodes if n.op == op][k]


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def passthrough(fn):  # a decorator that is not pyasc.kernel: decorators are ignored
    return fn


# ---- source and positions ----------------------------------------------------------------------


@passthrough
@passthrough
def decorated(x, w):
    y = x * w  # <- mul
    return pyasc.relu(y)  # <- relu


def test_real_line_numbers_for_decorated_function():
    r = check(decorated, f32(4, 8), f32(8))
    mul, relu = node(r, "mul"), node(r, "relu")
    assert mul.loc.lineno == line_of(decorated, "# <- mul")
    assert relu.loc.lineno == line_of(decorated, "# <- relu")
    assert mul.loc.filename == __file__
    # columns: `x * w` starts after "    y = "
    assert (mul.loc.col_offset, mul.loc.end_col_offset) == (8, 13)
    assert r.firstlineno == decorated.__code__.co_firstlineno
    assert r.filename == __file__


def test_source_is_regenerated_without_decorators():
    r = build(decorated, f32(4, 8), f32(8))
    assert r.source.startswith("def decorated(x, w):")
    assert "passthrough" not in r.source
    assert "pyasc.relu(y)" in r.source


class Holder:
    @staticmethod
    def method_kernel(x):
        z = x + 1  # <- indented
        return z


def test_indented_source_keeps_file_columns():
    r = check(Holder.method_kernel, f32(3))
    add = node(r, "add")
    line = line_of(Holder.method_kernel, "# <- indented")
    assert add.loc.lineno == line
    text = inspect.getsourcelines(Holder.method_kernel)[0][line - Holder.method_kernel.__code__.co_firstlineno]
    assert text[add.loc.col_offset:add.loc.end_col_offset] == "x + 1"


def unicode_columns(x):
    é = 2  # noqa: PLC2401 - a non-ASCII name before the expression on the next line
    y = é + é * x  # <- unicode
    return y


def test_columns_are_characters_not_utf8_bytes():
    r = build(unicode_columns, f32(3))
    mul = node(r, "mul")
    line = inspect.getsourcelines(unicode_columns)[0][2]
    assert line[mul.loc.col_offset:mul.loc.end_col_offset] == "é * x"


def test_get_source():
    text, filename, first = get_source(decorated)
    assert filename == __file__
    assert first == decorated.__code__.co_firstlineno
    assert text.startswith("@passthrough\n@passthrough\ndef decorated(x, w):")


def test_get_source_rejects_builtins_and_lambdas():
    with pytest.raises(TypeError, match="Python function"):
        get_source(len)
    with pytest.raises(TypeError, match="Python function"):
        get_source(np.exp)
    with pytest.raises(CompileError, match="lambda"):
        get_source(lambda x: x)  # noqa: E731


def test_get_source_missing_source():
    namespace: dict = {}
    exec(textwrap.dedent("""
        def made_by_exec(x):
            return x
    """), namespace)
    with pytest.raises(CompileError, match="cannot find the source of `made_by_exec`"):
        get_source(namespace["made_by_exec"])


def test_kernel_object_with_py_func():
    class FakeKernel:
        py_func = staticmethod(decorated)

    r = build_graph(FakeKernel(), [ArgSpec("x", TensorType((2,), "float32")), ArgSpec("w", TensorType((2,), "float32"))])
    assert ops_of(r) == ["mul", "relu"]


# ---- names, SSA, data order -----------------------------------------------------------------


def ssa(x, w, n):
    y = x * w
    y = y + 1
    y = y * 2
    return y


def test_data_nodes_follow_tensor_parameters_and_names_are_ssa():
    r = check(ssa, f32(4), f32(4), 3)
    data = r.graph.inputs
    assert [d.name for d in data] == ["x", "w"]
    assert [d.attrs["index"] for d in data] == [0, 1]
    assert [n.name for n in r.graph.nodes if n.op in ("mul", "add")] == ["y", "y_1", "y_2"]
    assert r.returns_tuple is False


def test_missing_spec_uses_default_and_bad_specs_raise():
    def with_default(x, k=3):
        return x * k

    r = build_graph(with_default, [ArgSpec("x", TensorType((2,), "float32"))])
    assert ops_of(r) == ["mul"]
    with pytest.raises(TypeError, match="no ArgSpec for parameter `w`"):
        build_graph(ssa, [ArgSpec("x", TensorType((2,), "float32"))])
    with pytest.raises(TypeError, match="not a parameter"):
        build_graph(with_default, [ArgSpec("q", None, 1), ArgSpec("x", TensorType((2,), "float32"))])


# ---- operators and scalar promotion ------------------------------------------------------------


def all_binary(a, b):
    return (a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, a < b, a <= b, a > b, a >= b,
            a == b, a != b, -a, +a)


def test_arithmetic_and_comparison_operators():
    a, b = f32(3, 4) + 3, np.abs(f32(4, seed=1)) + 1
    r = check(all_binary, a, b)
    # `+a` is a copy (np.positive), so an in-place update of it cannot reach `a`: a same-dtype cast
    assert ops_of(r) == ["add", "sub", "mul", "div", "floordiv", "mod", "pow", "lt", "le", "gt", "ge",
                         "eq", "ne", "neg", "cast"]
    assert [v.type.dtype for v in r.graph.outputs[7:13]] == ["bool"] * 6


def bitwise(a, b):
    return a & b, a | b, a ^ b, ~a


def test_bitwise_operators_on_ints():
    a = np.arange(6, dtype=np.int32)
    b = np.arange(6, dtype=np.int32)[::-1].copy()
    r = check(bitwise, a, b)
    assert ops_of(r) == ["bitwise_and", "bitwise_or", "bitwise_xor", "invert"]


def matmul_op(a, b):
    return a @ b


def test_matmul_operator():
    r = check(matmul_op, f32(3, 4), f32(4, 5))
    assert r.graph.outputs[0].type == TensorType((3, 5), "float32")


def reversed_scalars(x):
    return 2 - x, 1 / x, 3 ** x


def test_reversed_operands_keep_order():
    r = check(reversed_scalars, np.abs(f32(4)) + 1)
    sub = node(r, "sub")
    assert sub.inputs[0].node.op == "Const" and sub.inputs[1].node.op == "Data"


def int8_plus(x):
    return x + 1, x * 2.5, x < 1000


def test_weak_scalar_promotion():
    x = np.arange(-3, 3, dtype=np.int8)
    r = check(int8_plus, x)
    assert [v.type.dtype for v in r.graph.outputs] == ["int8", "float32", "bool"]
    const = node(r, "add").inputs[1].node
    assert const.op == "Const" and const.attrs["value"].dtype == np.int8


def f16_times_f32_scalar(x):
    return x * np.float32(2), x * 2.0


def test_numpy_scalars_are_strong():
    r = check(f16_times_f32_scalar, f32(4).astype(np.float16))
    assert [v.type.dtype for v in r.graph.outputs] == ["float32", "float16"]


def compile_time_folding(x, n):
    k = (n * 3 + 1) // 2  # 5 when n == 3
    shape = x.shape + (1,)
    return x * k, pyasc.reshape(x, shape)


def test_compile_time_values_fold_in_python():
    r = check(compile_time_folding, f32(4), 3)
    const = node(r, "mul").inputs[1].node
    assert const.attrs["value"] == 5
    assert r.graph.outputs[1].type.shape == (4, 1)


# ---- attributes, methods, subscripts ------------------------------------------------------------


def tensor_attrs(x):
    n = x.shape[-1] * x.ndim + len(x)
    y = x.astype(pyasc.float16) if x.dtype == np.float32 else x
    return (y.sum(axis=1, keepdims=True), x.max(axis=0), x.T, x.reshape(2, -1), x.transpose(1, 0),
            x.mean(), x.min(1), x * n, x.size + x)


def test_tensor_attributes_and_methods():
    r = check(tensor_attrs, f32(3, 4))
    assert ops_of(r) == ["cast", "sum", "max", "transpose", "reshape", "transpose", "mean", "min", "mul", "add"]
    assert node(r, "cast").attrs["dtype"] == "float16"
    assert node(r, "mul").inputs[1].node.attrs["value"] == 4 * 2 + 3
    assert [v.type.shape for v in r.graph.outputs[:5]] == [(3, 1), (4,), (4, 3), (2, 6), (4, 3)]


def subscripts(x):
    return x[1], x[:, 1:3], x[None, ..., ::2], x[-1, -2], x[...], x[:, None, 0]


def test_static_subscripts():
    r = check(subscripts, f32(3, 4))
    first = [n for n in r.graph.nodes if n.op != "Data"][:2]
    assert [n.op for n in first] == ["slice", "squeeze"]
    assert first[0].attrs == {"starts": (1, 0), "stops": (2, 4), "steps": (1, 1)}
    assert [v.type.shape for v in r.graph.outputs] == [(4,), (3, 2), (1, 3, 2), (), (3, 4), (3, 1)]
    # x[...] selects everything: no node at all
    assert r.graph.outputs[4].node.op == "Data"


def negative_step(x):
    return x[::-1], x[3:0:-2]


def test_negative_step_slices():
    check(negative_step, f32(5))


def unpack_tensor(x):
    a, b = x
    return a - b


def test_unpacking_a_tensor_splits_axis_0():
    check(unpack_tensor, f32(2, 3))


# ---- calls: pyasc ops, numpy twins, builtins ------------------------------------------------------


def numpy_twins(x, y):
    a = np.exp(x) + np.maximum(x, 0.0)
    b = np.where(x > y, x, y)
    c = np.sum(a * b, axis=-1)
    return c, np.matmul(x, y.T), np.abs(x), np.transpose(y)


def test_numpy_twins_compile_to_ops():
    r = check(numpy_twins, f32(3, 3), f32(3, 3, seed=1))
    assert ops_of(r)[:6] == ["exp", "maximum", "add", "gt", "where", "mul"]
    assert "matmul" in ops_of(r) and "abs" in ops_of(r)


def pyasc_ops(x, w, b):
    y = pyasc.layer_norm(x, w, b)
    z = pyasc.softmax(y, axis=-1) + pyasc.where(x > 0, x, 0.0)
    return pyasc.sigmoid(z) * pyasc.zeros(x.shape, pyasc.float32) + pyasc.full((3, 4), 2.0, pyasc.float32)


def test_pyasc_ops_and_sugar():
    r = check(pyasc_ops, f32(3, 4), f32(4, seed=1), f32(4, seed=2))
    assert ops_of(r) == ["layer_norm", "softmax", "gt", "where", "add", "sigmoid", "full", "mul", "full", "add"]
    ln = node(r, "layer_norm")
    assert len(ln.inputs) == 3


def optional_weight(x, w):
    return pyasc.layer_norm(x, w), pyasc.rms_norm(x)


def test_optional_tensor_arguments_left_out():
    r = check(optional_weight, f32(2, 4), f32(4))
    assert [len(n.inputs) for n in r.graph.nodes if n.op in ("layer_norm", "rms_norm")] == [2, 1]


def builtins_at_compile_time(x, dims):
    n = max(dims) + min(3, 4) + abs(-2) + int(2.7) + len(dims)
    half = float(n) / 2
    flag = bool(n) and isinstance(n, int)
    total = sum_of([d for d in dims if d > 1])
    pairs = tuple(i * d for i, d in enumerate(dims))
    return x * half if flag else x, x + total + pairs[-1], abs(x), np.float16(x)


def sum_of(values):
    out = 0
    for v in values:
        out += v
    return out


def test_builtins_and_comprehensions_at_compile_time():
    r = check(builtins_at_compile_time, f32(4), (1, 2, 3))
    assert ops_of(r) == ["mul", "add", "add", "abs", "cast"]
    # n = 3 + 3 + 2 + 2 + 3 = 13; half = 6.5
    assert float(node(r, "mul").inputs[1].node.attrs["value"]) == 6.5


def len_of_a_list_of_tensors(x):
    rows = [x[i] for i in range(x.shape[0])]
    first, *rest = rows
    return first * len(rest) + len(rows)


def test_len_of_a_list_holding_tensors_is_compile_time():
    r = check(len_of_a_list_of_tensors, f32(3, 2))
    assert [float(n.attrs["value"]) for n in r.graph.nodes if n.op == "Const"] == [2.0, 3.0]


WEIGHTS = np.linspace(0.0, 1.0, 8).reshape(2, 4)  # float64, as numpy makes it


def constant_array_methods(x):
    w16 = WEIGHTS.astype(np.float16)
    return x * w16, x + WEIGHTS.sum(), x * WEIGHTS.T.reshape(2, 4).max(axis=0), x + [1, 2, 3].index(2)


def check_values(fn, *args) -> FrontendResult:
    """Like check, for kernels whose dtypes knowingly differ from numpy's (README: dtype rules): values only."""
    result = build(fn, *args)
    outs = interpret(result.graph, [a for a in args if isinstance(a, np.ndarray)])
    expected = fn(*args)
    for got, want in zip(outs, list(expected) if result.returns_tuple else [expected]):
        assert_close(got, np.asarray(want).astype(got.dtype))
    return result


def test_methods_of_constant_arrays_run_at_compile_time():
    r = check_values(constant_array_methods, f32(2, 4).astype(np.float16))
    # WEIGHTS.sum() is a float64 numpy scalar: weak like a Python float, so x + it stays float16 (numpy: float64)
    assert [v.type.dtype for v in r.graph.outputs] == ["float16", "float16", "float32", "float16"]
    assert ops_of(r) == ["mul", "add", "mul", "add"]


def python_sum(x, m):
    rows = [x[i] for i in range(x.shape[0])]
    masks = [m[i] for i in range(2)]
    return sum(rows), sum(rows, 10), sum(masks), sum(rows[:0]) + x, sum((1, 2), start=3) * x


def test_builtin_sum_adds_like_the_operator():
    # Python's sum is 0 + a + b + ...: bool masks add up to ints, as in numpy
    r = check(python_sum, f32(3, 4), np.array([[True, False], [True, True]]))
    assert [v.type.dtype for v in r.graph.outputs] == ["float32", "float32", "int32", "float32", "float32"]


def compile_time_numpy(x):
    scale = 1.0 / np.sqrt(x.shape[-1])
    big = np.finfo(np.float16).max
    return x * scale, pyasc.minimum(x, big)


def test_numpy_calls_on_compile_time_values_fold():
    r = check_values(compile_time_numpy, f32(2, 4).astype(np.float16))
    # np.sqrt(4) is a float64 numpy scalar: weak like a Python float, so the float16 kernel stays float16
    # (numpy: float64, which the chip cannot hold; README: dtype rules)
    assert r.graph.outputs[0].type.dtype == "float16"
    assert ops_of(r) == ["mul", "minimum"]


SHIFT = 0.5
TABLE = np.arange(4, dtype=np.float32)


def use_globals(x):
    return x + SHIFT + TABLE


def test_globals_are_compile_time_constants_and_recorded():
    r = check(use_globals, f32(4))
    assert r.captured == {"SHIFT": 0.5, "TABLE": TABLE}
    consts = [n.attrs["value"] for n in r.graph.nodes if n.op == "Const"]
    assert consts[0] == 0.5 and np.array_equal(consts[1], TABLE)


def make_scaled(factor, offset):
    def scaled(x):
        return x * factor + offset

    return scaled


def test_closure_values_are_compile_time_constants():
    r = check(make_scaled(3.0, 1.0), f32(4))
    assert r.captured == {"factor": 3.0, "offset": 1.0}
    assert [float(n.attrs["value"]) for n in r.graph.nodes if n.op == "Const"] == [3.0, 1.0]


def symbolic(x, y):
    n = x.shape[0]
    return (x * 2).sum(axis=0), y[:, 0], x + n if False else x


def test_symbolic_dims_flow_through():
    n = Sym("n")
    r = build_graph(symbolic, [ArgSpec("x", TensorType((n, 4), "float32")),
                               ArgSpec("y", TensorType((n, 3), "float32"))])
    assert [v.type.shape for v in r.graph.outputs] == [(4,), (n,), (n, 4)]
    x, y = f32(5, 4), f32(5, 3)
    for got, want in zip(interpret(r.graph, [x, y]), symbolic(x, y)):
        assert_close(got, want)


def annotated(x, k: pyasc.constexpr = 2):
    scale: pyasc.constexpr = k * 2
    y: "tensor" = x * scale  # noqa: F821 - annotations are not evaluated for plain names
    z: int
    return y


def test_annotated_assignments():
    r = check(annotated, f32(3), 2)
    assert float(node(r, "mul").inputs[1].node.attrs["value"]) == 4.0


def in_place_through_aliases(x, y):
    a = x + y
    c = a  # the same array: numpy's `a += ...` below is seen through c
    pair = (a, 3)
    a += 1
    a *= y
    plus = +x  # a copy: not updated by `x -= ...`
    x -= 0.5
    return a, c, pair[0], plus, x


def doubled_in_place(v):
    v *= 2  # the caller's array
    return v + 1


def in_place_in_helper(x):
    z = x + 0
    w = doubled_in_place(z)
    return z, w


def test_in_place_operators_update_every_alias_like_numpy():
    r = check(in_place_through_aliases, f32(3), f32(3, seed=1))
    a, c, first, plus, x = r.graph.outputs
    assert a == c == first and plus != x
    r = check(in_place_in_helper, f32(3))
    assert r.graph.outputs[0].node.op == "mul"


def returns_constant(x):
    return x, 1.5


def test_compile_time_results_are_returned_as_they_are():
    """numpy's `return x, 1.5` returns the Python float: it is a constant leaf of the result, not an output."""
    r = build(returns_constant, f32(2))
    assert r.returns_tuple
    assert len(r.graph.outputs) == 1 and r.out_consts == ((1, 1.5),)
    assert type(r.out_consts[0][1]) is float


def returns_numpy_scalar(x):
    return x, np.float32(1.5)


def test_numpy_scalar_results_become_consts():
    r = check(returns_numpy_scalar, f32(2))
    assert r.graph.outputs[1].node.op == "Const"
    assert r.graph.outputs[1].type == TensorType((), "float32")


def walrus_and_fstring(x, n):
    assert (m := n * 2) == 6, f"n={n} gives {m}"
    return x + m


def test_walrus_and_fstring_messages():
    check(walrus_and_fstring, f32(2), 3)
    with pytest.raises(CompileError, match="assertion failed: n=4 gives 8"):
        build(walrus_and_fstring, f32(2), 4)
