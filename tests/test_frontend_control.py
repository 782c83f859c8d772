"""Frontend control flow: unrolled loops, folded ifs, tensor If nodes, helpers, kernels."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.errors import CompileError
from pyasc.frontend import ArgSpec, FrontendResult, build_graph
from pyasc.ir import interpret, verify
from pyasc.ir.types import TensorType
from conftest import assert_close


def specs_for(fn, args):
    names = list(inspect.signature(fn).parameters)
    return [
        ArgSpec(n, TensorType(a.shape, dtypes.narrow(a.dtype))) if isinstance(a, np.ndarray) else ArgSpec(n, None, a)
        for n, a in zip(names, args)
    ]


def build(fn, *args, **kw) -> FrontendResult:
    result = build_graph(fn, specs_for(fn, args), **kw)
    verify(result.graph)
    return result


def run(result: FrontendResult, *args):
    outs = interpret(result.graph, [a for a in args if isinstance(a, np.ndarray)])
    return tuple(outs) if result.returns_tuple else outs[0]


def check(fn, *args, **kw) -> FrontendResult:
    result = build(fn, *args, **kw)
    got = run(result, *args)
    want = fn(*args)
    for g, w in zip(got if result.returns_tuple else [got], want if result.returns_tuple else [want]):
        w = np.asarray(w)
        # numpy's own dtype, narrowed to 32 bits as pyasc documents (never simply the result's dtype)
        assert_close(g, w.astype(dtypes.narrow(w.dtype)))
    return result


def ops_of(graph) -> list[str]:
    return [n.op for n in graph.nodes if n.op not in ("Data", "Const")]


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def scalar(v, dtype=np.float32):
    return np.array(v, dtype=dtype)


# ---- for loops ----------------------------------------------------------------------------------


def unrolled(x, n):
    acc = x
    for i in range(n):
        acc = acc * 2 + i
    return acc


def test_for_range_unrolls_with_constant_index():
    r = check(unrolled, f32(4), 3)
    assert ops_of(r.graph) == ["mul", "add"] * 3
    adds = [n for n in r.graph.nodes if n.op == "add"]
    assert [int(a.inputs[1].node.attrs["value"]) for a in adds] == [0, 1, 2]


def nested_loops(x):
    out = x
    for i in range(2):
        for j in range(i, 3):
            out = out + x[j] * (i + 1)
    return out


def test_nested_loops_and_loop_over_tuple():
    r = check(nested_loops, f32(3, 4))
    assert ops_of(r.graph).count("add") == 5


def loop_over_values(x, scales):
    outs = []
    for k, s in enumerate(scales):
        outs = outs + [x * s + k]
    return tuple(outs)


def test_loop_over_compile_time_tuple_with_unpacking():
    r = check(loop_over_values, f32(3), (0.5, 2.0, 4.0))
    assert len(r.graph.outputs) == 3


def big_loop(x):
    for i in range(100):
        x = x + 1
    return x


def test_unroll_budget_is_total_and_configurable():
    unrolled = build(big_loop, f32(2), unroll_budget=100)
    assert "Loop" not in ops_of(unrolled.graph)
    # past the budget the loop is not an error: it stays a runtime Loop, with a note saying why
    kept = build(big_loop, f32(2), unroll_budget=99)
    (loop,) = [n for n in kept.graph.nodes if n.op == "Loop"]
    assert "a static loop of 100 iterations exceeds the unroll budget (99 in total, 99 left)" in loop.attrs["_note"]
    x = np.arange(2, dtype=np.float32)
    np.testing.assert_array_equal(run(kept, x), x + 100)


def early_return(x, n):
    for i in range(n):
        if i == 2:
            return x + i
        x = x * 2
    return x


def break_and_continue(x, rows):
    total = x[0] * 0
    for i in range(x.shape[0]):
        if i in rows:
            continue
        if i >= 5:
            break
        total = total + x[i]
    else:
        total = total - 100  # runs only when no break ended the loop
    for j, r in enumerate(x):
        for k in range(3):
            if k == j:
                break  # the inner loop only
            total = total + r * k
    return total


@pytest.mark.parametrize("n", [3, 8])
def test_break_and_continue_on_compile_time_values_shorten_the_unrolled_loop(n):
    x = f32(n, 4)
    r = check(break_and_continue, x, (1,))
    assert_close(run(r, x), break_and_continue(x, (1,)))


def converge(x, tol):
    for _ in range(6):
        if np.abs(x).max() < tol:  # a tensor condition: the rest of the function becomes the If's branches
            break
        x = x * 0.5
    else:
        x = x - 1000.0  # only when no break ended the loop
    return x * 2 + 1


def skip_negative_rows(x):
    total = x[0] * 0
    for r in x:
        if r.sum() < 0:
            continue
        total = total + r
    for i in range(2):  # nested loops: the inner break leaves the inner loop only
        for j in range(2):
            if x[j].max() > 2 + i:
                break
            total = total + x[j] * (i + 1)
    return total


@pytest.mark.parametrize("tol", [0.5, -1.0])
def test_break_and_continue_under_a_tensor_condition(tol):
    x = f32(4, 5) * 4
    r = check(converge, x, scalar(tol))
    assert_close(run(r, x, scalar(tol)), converge(x, scalar(tol)))
    r = check(skip_negative_rows, x)
    assert_close(run(r, x), skip_negative_rows(x))


def test_break_under_a_tensor_condition_needs_a_return_and_one_level():
    def no_return(x, out):
        for _ in range(3):
            if x.sum() > 0:
                break
            x = x + 1
        out[:] = x

    def two_levels(x):
        for _ in range(3):
            if x.sum() > 0:
                if x.max() > 1:
                    continue
            x = x + 1
        return x

    with pytest.raises(CompileError, match=r"the function must end with a `return` after the loop") as e:
        build(no_return, f32(4), f32(4))
    assert e.value.loc.lineno == no_return.__code__.co_firstlineno + 3
    with pytest.raises(CompileError, match=r"`continue` under a tensor condition inside another `if` on a tensor "
                                           r"condition.*\(`if a and b: continue`\)"):
        build(two_levels, f32(4))


def test_return_inside_unrolled_loop_stops_it():
    r = check(early_return, f32(3), 5)
    assert ops_of(r.graph) == ["mul", "mul", "add"]


# ---- compile-time if ------------------------------------------------------------------------------


def folded(x, mode, bias=None):
    if mode == "relu":
        y = pyasc.relu(x)
    elif mode == "exp":
        y = pyasc.exp(x)
    else:
        y = x
    if bias is not None:
        y = y + bias
    return y if x.ndim == 1 else y.sum()


@pytest.mark.parametrize("mode, expected", [("relu", ["relu"]), ("exp", ["exp"]), ("none", [])])
def test_if_on_compile_time_values_is_folded(mode, expected):
    r = check(folded, f32(4), mode)
    assert ops_of(r.graph) == expected


def test_if_none_check_on_tensor_argument_is_compile_time():
    r = check(folded, f32(4), "relu", f32(4, seed=1))
    assert ops_of(r.graph) == ["relu", "add"]
    assert not any(n.op == "If" for n in r.graph.nodes)


# ---- tensor If ---------------------------------------------------------------------------------------


def tensor_if(x, flag):
    y = x * 2
    if flag > 0:
        y = y + 1
        z = y * 3
    else:
        z = x - 1
    return y + z


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_tensor_condition_builds_if_node_both_ways(flag):
    x = f32(4)
    r = build(tensor_if, x, scalar(flag))
    if_node = next(n for n in r.graph.nodes if n.op == "If")
    then_g, else_g = if_node.attrs["then_branch"], if_node.attrs["else_branch"]
    assert ops_of(then_g) == ["add", "mul"]
    assert ops_of(else_g) == ["sub"]
    # If(cond, y, x): both branches take every operand, outputs are the variables used after: y, z
    assert len(if_node.inputs) == 1 + len(then_g.inputs) == 1 + len(else_g.inputs)
    assert len(if_node.outputs) == 2
    assert if_node.loc.lineno == inspect.getsourcelines(tensor_if)[1] + 2
    got = run(r, x, scalar(flag))
    assert_close(got, tensor_if(x, scalar(flag)))


def only_used_vars_are_outputs(x, c):
    t = x + 1
    if c[0] > 0:
        t = x * 2
        unused = x * 3  # noqa: F841
    return t


def test_if_outputs_only_variables_used_after():
    r = check(only_used_vars_are_outputs, f32(3), scalar([1.0]))
    if_node = next(n for n in r.graph.nodes if n.op == "If")
    assert len(if_node.outputs) == 1
    check(only_used_vars_are_outputs, f32(3), scalar([-1.0]))


def ternary(x, c):
    return x * 2 if c else x - 1.0


@pytest.mark.parametrize("c", [True, False])
def test_tensor_ternary(c):
    r = check(ternary, f32(3), np.array(c))
    assert [n.op for n in r.graph.nodes if n.op == "If"] == ["If"]


def scalar_in_branch(x, c):
    y = x if c > 0 else 0.0
    return y + 1


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_scalar_branch_value_is_broadcast_to_the_other_branch(c):
    # eagerly the else path gives a Python float; compiled, both paths give x's type (like np.where)
    x = f32(2, 3).astype(np.float16)
    r = build(scalar_in_branch, x, scalar(c))
    assert r.graph.outputs[0].type == TensorType((2, 3), "float16")
    assert_close(run(r, x, scalar(c)), np.broadcast_to(scalar_in_branch(x, scalar(c)), x.shape).astype(np.float16))


def both_return(x, c):
    if c > 0:
        return x + 1, x
    else:
        return x - 1, x * 2


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_return_in_both_branches(c):
    r = check(both_return, f32(3), scalar(c))
    assert r.returns_tuple and len(r.graph.outputs) == 2


def nested(x, a, b):
    out = x
    for i in range(2):
        if a > i:
            if b > 0:
                out = out + i
            else:
                out = out - i
        out = out * 2
    return out


@pytest.mark.parametrize("a, b", [(5.0, 1.0), (0.5, -1.0), (-1.0, 1.0), (1.5, -2.0)])
def test_nested_if_inside_unrolled_loop(a, b):
    r = check(nested, f32(3), scalar(a), scalar(b))
    outer = [n for n in r.graph.nodes if n.op == "If"]
    assert len(outer) == 2
    inner = [n for n in outer[0].attrs["then_branch"].nodes if n.op == "If"]
    assert len(inner) == 1
    # the inner If reads `out` through the outer branch's Data input
    assert inner[0].inputs[1].node.op == "Data"


def elif_chain(x, c):
    if c > 1:
        y = x * 3
    elif c > 0:
        y = x * 2
    else:
        y = x
    return y


@pytest.mark.parametrize("c", [2.0, 0.5, -1.0])
def test_elif_on_tensor(c):
    check(elif_chain, f32(3), scalar(c))


def compile_time_in_branches(x, c):
    n = 1
    if c > 0:
        n = 2
    return x * n


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_compile_time_values_that_differ_become_tensors(c):
    r = check(compile_time_in_branches, f32(3), scalar(c))
    if_node = next(n for n in r.graph.nodes if n.op == "If")
    assert if_node.outputs[0].dtype == "int32"


def number_chosen_at_run_time(x, c):
    y = 0.0
    if c > 0:
        y = 1.5
    return x + y, x * -y, y * 2 + x, pyasc.maximum(x, y), y


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8])
@pytest.mark.parametrize("c", [1.0, -1.0])
def test_python_number_chosen_by_a_tensor_if_stays_weak(dtype, c):
    # numpy sees a Python float: f16 + y stays f16, int8 + y is float (narrowed to f32); y itself is 0-d
    x = (np.arange(6) - 2).astype(dtype)
    r = check(number_chosen_at_run_time, x, scalar(c))
    assert r.graph.outputs[0].type.dtype == dtypes.narrow(np.result_type(dtype, 1.5))
    assert r.graph.outputs[4].type == TensorType((), "float32")


def weak_number_or_tensor(x, c):
    y = 0.5
    if c > 0:
        y = 2.0
    z = x
    if c > 1:
        z = y  # a Python number on this path: it takes x's dtype and shape, as a scalar next to x would
    return z


@pytest.mark.parametrize("c", [2.0, 0.5, -1.0])
def test_weak_number_merged_with_a_tensor_takes_its_type(c):
    x = f32(2, 3).astype(np.float16)
    r = build(weak_number_or_tensor, x, scalar(c))
    assert r.graph.outputs[0].type == TensorType((2, 3), "float16")
    want = np.broadcast_to(np.asarray(weak_number_or_tensor(x, scalar(c)), np.float16), x.shape)
    assert_close(run(r, x, scalar(c)), want)


def ints_chosen_at_run_time(x, c):
    s = 2 if c > 0 else 3
    t = s * 2 + 1
    return x * t, x // s, x + (s > 2)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_ternary_of_python_ints_keeps_int8(c):
    r = check(ints_chosen_at_run_time, np.arange(-3, 3, dtype=np.int8), scalar(c))
    assert [v.type.dtype for v in r.graph.outputs] == ["int8", "int8", "int8"]


def augmented_weak_scalar(x, c):
    y = 0.0
    if c > 0:
        y = 1.0
    y += x  # y is a Python float in numpy: `+=` rebinds it to a new array
    return y


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_augmented_assignment_to_a_weak_scalar_rebinds(c):
    check(augmented_weak_scalar, f32(2, 3).astype(np.float16), scalar(c))


def weak_int_too_big(x, c):
    y = 0
    if c > 0:
        y = 1000
    return x + y


def test_weak_int_out_of_range_is_rejected_like_numpy():
    with pytest.raises(CompileError) as info:
        build(weak_int_too_big, np.zeros(3, np.int8), scalar(1.0))
    err = info.value
    assert "Python int 1000 does not fit int8" in err.reason and "1000 or 0" in err.reason
    assert err.lineno == inspect.getsourcelines(weak_int_too_big)[1] + 4
    check(weak_int_too_big, np.zeros(3, np.int16), scalar(1.0))  # fits int16: fine


def where_on_python_conditions(x, c):
    flag = False
    if c > 0:
        flag = True
    return pyasc.where(flag, x, 0), pyasc.where(256, x, 1), np.where(0.5, x, 2)


@pytest.mark.parametrize("c", [1.0, -1.0])
def test_where_condition_takes_no_part_in_promotion(c):
    # numpy only tests the condition for truth: 256 does not have to fit int8, a bool is not cast to int8
    r = check(where_on_python_conditions, np.arange(-2, 3, dtype=np.int8), scalar(c))
    assert "cast" not in [n.op for n in r.graph.nodes]
    conditions = [n.inputs[0].type.dtype for n in r.graph.nodes if n.op == "where"]
    assert conditions == ["bool", "int32", "float32"]


# ---- helpers and kernels --------------------------------------------------------------------------


def gelu_tanh(v):
    c = np.sqrt(2.0 / np.pi).item()
    return 0.5 * v * (1.0 + pyasc.tanh(c * (v + 0.044715 * v ** 3)))


def mlp(x, w):
    h = gelu_tanh(x @ w)
    return scale_by(h, 2), scale_by(h, k=3)


def scale_by(t, k=1):
    return t * k


def test_helpers_are_inlined_with_their_own_scope():
    r = check(mlp, f32(2, 3), f32(3, 4))
    assert r.helpers == [f"{__name__}.gelu_tanh", f"{__name__}.scale_by"]
    assert "tanh" in ops_of(r.graph)
    assert r.captured["gelu_tanh.np"] is np and "scale_by" in r.captured
    # the helper's nodes carry the helper's own lines
    tanh = next(n for n in r.graph.nodes if n.op == "tanh")
    assert tanh.loc.lineno == inspect.getsourcelines(gelu_tanh)[1] + 2


class FakeKernel:
    """What the runtime's kernel object exposes to the frontend."""

    def __init__(self, fn):
        self.py_func = fn

    def __call__(self, *args):
        return self.py_func(*args)


def _inner(x):
    return pyasc.relu(x) + 1


inner_kernel = FakeKernel(_inner)


def outer(x):
    return inner_kernel(x) * 2


def test_calls_to_other_kernels_are_inlined():
    r = check(outer, f32(3))
    assert ops_of(r.graph) == ["relu", "add", "mul"]
    assert r.helpers == [f"{__name__}._inner"]


def helper_with_tensor_if(x, c):
    if c > 0:
        return x + 1
    return x - 1


def test_helper_with_early_return_in_folded_if():
    def kernel(x):
        return helper_with_tensor_if(x, 1) + helper_with_tensor_if(x, -1)

    r = check(kernel, f32(3))
    assert ops_of(r.graph) == ["add", "sub", "add"]


def every_node_located(x, c):
    parts = [x[i] * i for i in range(3)]
    y = pyasc.maximum(*parts[:2]) + parts[2]
    if c > 0:
        y = scale_by(y, 2)
    return (y,)


def test_every_node_carries_a_location_in_this_file():
    r = check(every_node_located, f32(3, 4), scalar(1.0))
    assert r.returns_tuple and len(r.graph.outputs) == 1
    first = inspect.getsourcelines(every_node_located)[1]
    nodes = list(r.graph.all_nodes())
    assert any(n.op == "If" for n in nodes)
    for n in nodes:
        assert n.loc is not None and n.loc.filename == __file__, n
        assert n.loc.end_col_offset is not None
    kernel_lines = range(first, first + 7)
    helper_line = inspect.getsourcelines(scale_by)[1] + 1  # `return t * k`
    for n in r.graph.nodes:
        assert n.loc.lineno in kernel_lines, n
    if_node = next(n for n in r.graph.nodes if n.op == "If")
    branch_mul = next(n for n in if_node.attrs["then_branch"].nodes if n.op == "mul")
    assert branch_mul.loc.lineno == helper_line


def conditions_with_and_or_not(x, c, n):
    y = x * 2 if c > 0 and n > 1 else x  # n <= 1: x, whatever c
    if not c > 0 or x.max() > 10:  # a tensor `not`, `or`
        y = y - 1
    if n > 3 and c > 0:  # a compile-time operand that decides: no If for this one when n <= 3
        y = y * 5
    if x.shape[0] > 1 and (c > 1 or c < -1):
        y = y + 100
    return y


@pytest.mark.parametrize("c", [2.0, 0.5, -0.5, -2.0])
@pytest.mark.parametrize("n", [0, 2, 5])
def test_if_tests_take_and_or_not_of_one_element_tensors(c, n):
    x = f32(4)
    r = check(conditions_with_and_or_not, x, scalar(c), n)
    got = run(r, x, scalar(c))
    assert_close(got, conditions_with_and_or_not(x, scalar(c), n))
    ifs = sum(node.op == "If" for node in r.graph.nodes)
    assert ifs == 2 + (n > 1) + (n > 3)  # a false compile-time operand of `and` decides the test: no If


def test_and_of_a_tensor_outside_a_test_or_of_many_elements_is_an_error():
    def value_of_and(x, c):
        return c > 0 and x
    with pytest.raises(CompileError, match=r"`and` on a tensor needs its truth value at compile time"):
        build(value_of_and, f32(3), scalar(1.0))

    def many(x, c):
        if c > 0 and x > 0:
            return x
        return -x
    with pytest.raises(CompileError, match=r"the truth value of `x > 0` \(.*\), an array with more than one "
                                           r"element, is ambiguous"):
        build(many, f32(3), scalar(1.0))
