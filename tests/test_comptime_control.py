"""Control flow people write and compile-time Python, on the emulator against py_func (both presets).

An early `return` inside an `if` on a tensor, compile-time arrays in tensor-`if` branches and in
comparisons, lambdas (inlined per call, also through `map`), `sorted`/`filter`/`zip`/`enumerate`/
`reversed`/`isinstance`, `math.*` and numpy functions on compile-time values; and the located errors
for what stays unsupported (a numpy function without a lowering on a tensor, `math.*` on a tensor).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import pyasc
from pyasc import dtypes
from pyasc.errors import CompileError
from conftest import assert_close

CHIPS = ["tiny", "910b"]
K = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
HEADS = 2


def run(fn, *args, chip="tiny"):
    k = pyasc.kernel(fn, chip=chip)
    got = k(*args)
    want = fn(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.dtype.name == dtypes.narrow(w.dtype), (g.dtype, w.dtype)
        assert_close(g, w.astype(g.dtype))
    return k


def early_return(x, c):
    if c > 0:
        return x + 1.0
    y = x * 2.0
    return y - 3.0


def early_return_nested(x, c, d):
    if c > 0:
        return x + 1.0
    y = x * 2.0
    if d > 0:
        return y, 1.0
    return y - 3.0


def early_return_chain(x, c, d):
    if c > 0:
        return x + 1.0
    y = x * 2.0
    if d > 0:
        return y
    return y - 3.0


@pytest.mark.parametrize("c, d", [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)])
def test_early_returns_one_after_another(c, d, rng):
    run(early_return_chain, rng.random(5, dtype=np.float32), np.float32(c), np.float32(d))


def early_return_in_helper(x, c):
    return clamp_or_double(x, c) + 1.0


def clamp_or_double(v, c):
    if c > 0:
        return pyasc.minimum(v, 0.5)
    return v * 2.0


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("c", [1.0, -1.0])
def test_early_return_in_a_tensor_if(chip, c, rng):
    x = rng.random(6, dtype=np.float32)
    k = run(early_return, x, np.float32(c), chip=chip)
    assert [n.op for n in k.compile(x, np.float32(c)).graph.nodes].count("If") <= 1
    run(early_return_in_helper, x, np.float32(c), chip=chip)


def test_early_returns_must_agree_on_the_number_of_results(rng):
    with pytest.raises(CompileError, match="different numbers of values"):
        pyasc.kernel(early_return_nested).compile(rng.random(4, dtype=np.float32), np.float32(1), np.float32(1))


def const_in_branch(x, c):
    if c > 0:
        w = K
    else:
        w = x
    return w + x


def compare_global(x):
    mask = K > 0
    return pyasc.where(mask, x, -x), x * (K >= 1.0), ~mask & (x > 0.5)


@pytest.mark.parametrize("chip", CHIPS)
def test_compile_time_arrays_in_branches_and_comparisons(chip, rng):
    x = rng.random(4, dtype=np.float32)
    run(const_in_branch, x, np.float32(1.0), chip=chip)
    run(const_in_branch, x, np.float32(-1.0), chip=chip)
    run(compare_global, x, chip=chip)


def lambdas(x, y):
    double = lambda t, k=2.0: t * k  # noqa: E731
    heads = list(map(lambda t: t + 1.0, [x, y]))
    pairs = sorted([(3, "c"), (1, "a"), (2, "b")], key=lambda p: p[0])
    big = tuple(filter(lambda n: n > 1, [0, 1, 2, 3]))
    return double(heads[0]) + double(heads[1], k=0.5) + len(pairs) * pairs[0][0] + sum(big)


def comptime_python(x):
    n = math.sqrt(16.0) + np.sqrt(4.0) + math.floor(2.5) + float(np.prod([2, 3])) + math.pi * 0
    for i, (a, b) in enumerate(zip([1, 2], [3, 4])):
        n += i * a * b
    for r in reversed(range(2)):
        n += r
    scale = 1.0 / math.sqrt(x.shape[-1])
    if isinstance(x, np.ndarray) and not isinstance(x, float):
        n += 100
    norm = np.linalg.norm(K)  # a numpy function on a compile-time array: evaluated now
    return x * n * scale + norm


@pytest.mark.parametrize("chip", CHIPS)
def test_compile_time_python(chip, rng):
    x = rng.random((2, 4), dtype=np.float32)
    run(lambdas, x, rng.random((2, 4), dtype=np.float32), chip=chip)
    run(comptime_python, x, chip=chip)


def mapped_over_heads(x):
    parts = [x[:, h * 2:(h + 1) * 2] for h in range(HEADS)]
    return tuple(map(lambda p: pyasc.exp(p) * 2.0, parts))


def test_a_lambda_mapped_over_tensors_is_inlined_per_element(rng):
    x = rng.random((3, 4), dtype=np.float32)
    k = run(mapped_over_heads, x)
    assert k.compile(x).stages["graph"].count(" exp(") == HEADS  # the frontend's graph: one exp per head


def numpy_without_lowering(x):
    return np.isnat(x)


def math_on_a_tensor(x):
    return math.exp(x)


def tensor_to_int(x):
    return x * int(x)


def test_unsupported_compile_time_calls_are_located_errors(rng):
    x = rng.random(4, dtype=np.float32)
    with pytest.raises(CompileError) as info:
        pyasc.kernel(numpy_without_lowering).compile(x)
    # suggestions by meaning first (the nan family), not names spelled alike
    assert info.value.reason == ("`np.isnat` has no pyasc lowering; supported near it: np.isnan, np.isinf, "
                                 "np.isfinite, np.isposinf, np.isneginf")
    assert info.value.loc.lineno == numpy_without_lowering.__code__.co_firstlineno + 1
    with pytest.raises(CompileError) as info:
        pyasc.kernel(math_on_a_tensor).compile(x)
    assert "`math.exp` works on Python numbers at compile time, not on a tensor; use np.exp(x)" in info.value.reason
    with pytest.raises(CompileError) as info:
        pyasc.kernel(tensor_to_int).compile(x)
    assert "int() of a tensor would need its value at compile time" in info.value.reason
    assert "astype(pyasc.int32)" in info.value.reason


def shifts(a):
    return a << 1, a << 3, a >> 1, a >> 2, a << 40, a >> 40


def shifts_by_width(a):
    return a << (a.dtype.itemsize * 8 - 1), a >> (a.dtype.itemsize * 8 - 1)


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint8", "bool"])
def test_shifts_golden(chip, dtype, rng):
    a = rng.integers(-100, 100, size=(5, 7)).astype(dtype) if dtype != "uint8" else \
        rng.integers(0, 255, size=(5, 7)).astype(dtype)
    run(shifts, a, chip=chip)
    run(shifts_by_width, a, chip=chip)


def shift_in_place(a):
    a <<= 2
    return a


def test_shift_in_place_and_bad_shifts(rng):
    run(shift_in_place, rng.integers(-9, 9, size=6).astype(np.int16))
    with pytest.raises(CompileError, match="shifts by a tensor"):
        pyasc.kernel(lambda_free_shift_by_tensor).compile(np.ones(3, np.int32), np.ones(3, np.int32))
    with pytest.raises(CompileError, match="not supported for float32"):
        pyasc.kernel(shifts).compile(np.ones(3, np.float32))


def lambda_free_shift_by_tensor(a, s):
    return a << s


def bool_matmul(a, b):
    return a @ b, np.matmul(b, a)


@pytest.mark.parametrize("chip", CHIPS)
def test_bool_matmul_golden(chip, rng):
    a = rng.random((6, 40)) > 0.8
    b = rng.random((40, 6)) > 0.8
    run(bool_matmul, a, b, chip=chip)


M = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
B = K > 0


def ops_on_module_arrays(x):
    return (-K * x, M @ x, np.exp(K) * x, pyasc.relu(K) + x, K.sum() * x, abs(K) * x, K ** 2 + x,
            ~B & (x > 0.3), M.T @ x, np.maximum(K, x), pyasc.where(B, x, K), K[1:3].sum() + x,
            x * (K != 1.0), (K < x) | B, np.where(K > 0, K, 0.0) * x, x[K.argmax()])


@pytest.mark.parametrize("chip", CHIPS)
def test_every_op_on_module_level_arrays_folds_or_is_a_constant(chip, rng):
    run(ops_on_module_arrays, rng.random(4, dtype=np.float32), chip=chip)


GLOBAL_LIST = [1, 2]


def lists_built_in_place(x):
    outs = []
    for h in range(HEADS):
        outs.append(x[:, h * 2:(h + 1) * 2] * (h + 1.0))
    res = [None] * HEADS
    for h in range(HEADS):
        res[h] = outs[h] + 1.0
    outs.extend(res)
    return tuple(outs)


def appends_to_a_global_list(x):
    GLOBAL_LIST.append(3)
    return x


def appends_in_a_tensor_if(x, c):
    outs = [x]
    if c > 0:
        outs.append(x)
    return outs[0]


def test_lists_the_kernel_made_can_change_in_place(rng):
    run(lists_built_in_place, rng.random((3, 4), dtype=np.float32))
    with pytest.raises(CompileError) as info:
        pyasc.kernel(appends_to_a_global_list).compile(np.ones(2, np.float32))
    assert "GLOBAL_LIST.append() would change in place a list the kernel read from outside it" in info.value.reason
    assert GLOBAL_LIST == [1, 2]
    with pytest.raises(CompileError) as info:
        pyasc.kernel(appends_in_a_tensor_if).compile(np.ones(2, np.float32), np.float32(1))
    assert "outs.append() would change a list inside an `if` on a tensor" in info.value.reason


def early_return_in_a_loop(x, c):
    acc = x * 0.0
    for i in range(3):
        acc = acc + x * i
        if c < i:  # c = -1 returns in iteration 0, 0.5 in 1, 1.5 in 2, 2.5 never (the loop's else runs)
            return acc, acc * (i + 10.0)
    else:
        acc = acc - 1.0
    return acc, acc * 0.5


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("c", [0.5, 1.5, 2.5, -1.0])
def test_early_return_inside_an_unrolled_loop(chip, c, rng):
    run(early_return_in_a_loop, rng.random(5, dtype=np.float32), np.float32(c), chip=chip)


def python_numbers_chosen_at_run_time(x, c):
    if c > 0:
        d = 1.0
        k = 3
    else:
        d = 2.5
        k = -1
    return x + d, x * k, d


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("c", [1.0, -1.0])
def test_python_numbers_chosen_by_a_tensor_if_run_on_the_emulator(chip, c, rng):
    # (an If branch whose output is a one-element constant fills the output instead of copying a tile)
    run(python_numbers_chosen_at_run_time, rng.random((2, 3), dtype=np.float32), np.float32(c), chip=chip)


def crop_with_padding(Z):
    """numpy-100's "extract a subpart with padding": index bookkeeping on np.zeros/np.ones arrays (constant
    tensors in a kernel) turned into slices with .tolist() and slice()."""
    shape, fill, position = (3, 3), 0.0, (1, 1)
    R = np.ones(shape, dtype=Z.dtype) * fill
    P = np.array(list(position)).astype(int)
    Rs = np.array(list(R.shape)).astype(int)
    Zs = np.array(list(Z.shape)).astype(int)
    R_start = np.zeros((len(shape),)).astype(int)
    R_stop = np.array(list(shape)).astype(int)
    Z_start = P - Rs // 2
    Z_stop = (P + Rs // 2) + Zs % 2
    R_start = (R_start - np.minimum(Z_start, 0)).tolist()
    Z_start = (np.maximum(Z_start, 0)).tolist()
    R_stop = np.maximum(R_start, (R_stop - np.maximum(Z_stop - Zs, 0))).tolist()
    Z_stop = (np.minimum(Z_stop, Zs)).tolist()
    r = [slice(start, stop) for start, stop in zip(R_start, R_stop)]
    z = [slice(start, stop) for start, stop in zip(Z_start, Z_stop)]
    R[tuple(r)] = Z[tuple(z)]
    return R


def test_tolist_of_constant_tensors_and_slice_objects(rng):
    run(crop_with_padding, rng.standard_normal((5, 5)).astype(np.float32))

    def data_tolist(x):
        return x.tolist()
    with pytest.raises(CompileError, match=r"`x.tolist\(\)` needs the values of a tensor \(f32\[3\]\) computed "
                                           r"from the kernel's inputs"):
        pyasc.kernel(data_tolist, chip="tiny")(np.ones(3, np.float32))


def stdlib_helpers(x):
    import math  # an import inside the kernel: a compile-time module, as at module level
    import functools
    import itertools
    import operator as op
    from numpy.lib.stride_tricks import sliding_window_view as windows
    total = functools.reduce(op.add, [x, x * 2, x * 3]) + functools.reduce(lambda a, b: a * b, [x, x], 1.5)
    pairs = sum(a * b for a, b in itertools.combinations(x, 2))
    running = itertools.accumulate([x, x + 1, x], op.mul)
    mapped = sum(itertools.starmap(lambda a, s: a * s, [(x, 2), (x[::-1], 3)]))
    chosen = op.lt(x, 0.5) + op.neg(x) * op.add(1, 2) - op.truediv(x, math.pi)
    scaled = functools.partial(np.clip, a_max=0.5)(x, -0.5)
    return total, pairs, *running, mapped, chosen, windows(x, 2).sum(-1), scaled


def test_operator_functools_itertools_and_imports_in_a_kernel(rng):
    run(stdlib_helpers, rng.standard_normal(5).astype(np.float32))

    def missing(x):
        import not_a_module_anywhere  # noqa: F401
        return x
    with pytest.raises(CompileError, match=r"ImportError: No module named 'not_a_module_anywhere' \(the kernel's "
                                           r"`import` runs when it compiles\)"):
        pyasc.kernel(missing, chip="tiny")(np.ones(3, np.float32))
