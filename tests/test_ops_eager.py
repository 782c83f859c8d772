"""Golden eager tests: every op, every applicable dtype, against plain numpy expressions.

Each call also checks inference against the eager result: the inferred shape
is the result's shape and the inferred dtype is numpy's dtype narrowed
(`dtypes.narrow`), so eager semantics and inference cannot drift apart.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pyasc
from conftest import assert_close
from pyasc import dtypes, ops
from pyasc.errors import InferError
from pyasc.ir.types import TensorType

ALL = dtypes.NAMES
FLOATS = ("float16", "float32")
INTS = ("int8", "int16", "int32", "uint8")


def _type_of(x) -> TensorType:
    x = np.asarray(x)
    return TensorType(x.shape, x.dtype.name)


def run(fn, *args, **kwargs):
    """Call public function `fn` eagerly and check that inference agrees with the result."""
    result = fn(*args, **kwargs)
    op, tensors, attrs = ops.bind_call(fn, args, kwargs)
    if all(isinstance(t, np.ndarray) for t in tensors):
        (t,) = ops.infer(op, [_type_of(x) for x in tensors], attrs)
        result_arr = np.asarray(result)
        assert t.shape == result_arr.shape, f"{op}: inferred {t}, eager gave shape {result_arr.shape}"
        assert t.dtype == dtypes.narrow(result_arr.dtype), f"{op}: inferred {t}, eager gave {result_arr.dtype}"
    return result


def sample(dtype, shape=(3, 4), *, rng, low=-3.0, high=3.0, nonzero=False):
    if dtype == "bool":
        return np.ones(shape, bool) if nonzero else rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        x = rng.uniform(low, high, shape)
        if nonzero:
            x = np.where(np.abs(x) < 0.25, 0.5, x)
        return x.astype(dtype)
    lo = max(int(low), 0) if dtype == "uint8" else int(low)
    x = rng.integers(lo, int(high) + 1, shape)
    if nonzero:
        x = np.where(x == 0, 1, x)
    return x.astype(dtype)


# ---- binary --------------------------------------------------------------------------------

BINARY_REF = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b,
    "maximum": lambda a, b: np.where(a > b, a, b) if a.dtype == b.dtype else np.maximum(a, b),
    "minimum": lambda a, b: np.where(a < b, a, b) if a.dtype == b.dtype else np.minimum(a, b),
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "bitwise_and": lambda a, b: a & b,
    "bitwise_or": lambda a, b: a | b,
    "bitwise_xor": lambda a, b: a ^ b,
}


def _binary_operands(op, da, db, rng):
    if op == "pow":  # small exponents, non-negative bases: no overflow or negative powers of ints
        return sample(da, rng=rng, low=0, high=3), sample(db, (4,), rng=rng, low=0, high=3)
    nonzero = op in ("div", "floordiv", "mod")
    return sample(da, rng=rng), sample(db, (4,), rng=rng, nonzero=nonzero)


@pytest.mark.parametrize("op", sorted(BINARY_REF))
@pytest.mark.parametrize("dtype", ALL)
def test_binary_same_dtype(op, dtype, rng):
    a, b = _binary_operands(op, dtype, dtype, rng)
    try:
        with np.errstate(all="ignore"):
            expected = BINARY_REF[op](a, b)
    except TypeError:  # numpy has no such loop: neither has pyasc's inference
        with pytest.raises(InferError, match=f"{op}: does not accept dtypes {dtype} and {dtype}"):
            ops.infer(op, [_type_of(a), _type_of(b)], {})
        return
    with np.errstate(all="ignore"):
        got = run(ops.public(ops.get(op)), a, b)
    assert_close(got, expected)


MIXED = [("int8", "uint8"), ("int16", "float16"), ("int32", "float16"), ("bool", "int8"), ("float16", "float32"),
         ("uint8", "int32"), ("int8", "float32")]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "lt", "eq", "pow"])
@pytest.mark.parametrize("da, db", MIXED)
def test_binary_mixed_dtypes(op, da, db, rng):
    a, b = _binary_operands(op, da, db, rng)
    if op == "sub" and "bool" in (da, db):
        b = b.astype(np.int8) if db == "bool" else b
    with np.errstate(all="ignore"):
        expected = BINARY_REF[op](a, b)
        got = run(ops.public(ops.get(op)), a, b)
    assert_close(got, expected)


def test_binary_broadcasting_and_python_scalars(rng):
    a = sample("float16", (3, 1), rng=rng)
    b = sample("float16", (4,), rng=rng)
    assert_close(run(pyasc.add, a, b), a + b)
    i8 = sample("int8", rng=rng)
    assert pyasc.add(i8, 1).dtype == np.int8  # a Python int is weak
    assert pyasc.mul(a, 2.5).dtype == np.float16
    assert pyasc.div(i8, 2).dtype == np.float64  # numpy's true division of ints (a kernel gives float32)
    assert_close(pyasc.maximum(i8, 0), np.where(i8 > 0, i8, 0).astype(np.int8))
    assert pyasc.add(2, 3) == 5


# ---- unary -----------------------------------------------------------------------------------


def _float(a):
    """a in the float dtype numpy's float math uses for it (np.exp's rule)."""
    return a if a.dtype.kind == "f" else a.astype(np.exp(a[:0]).dtype)


def _gelu_ref(a):
    x = _float(a).astype(np.float64)
    y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return y.astype(_float(a).dtype)


UNARY_REF = {
    "neg": lambda a: -a,
    "invert": lambda a: ~a,
    "abs": lambda a: abs(a),
    "exp": lambda a: np.exp(a),
    "log": lambda a: np.log(a),
    "sqrt": lambda a: np.sqrt(a),
    "rsqrt": lambda a: 1 / np.sqrt(a),
    "reciprocal": lambda a: 1 / a,
    "sin": lambda a: np.sin(a),
    "cos": lambda a: np.cos(a),
    "tanh": lambda a: np.tanh(a),
    "sigmoid": lambda a: 1 / (1 + np.exp(-_float(a))),
    "relu": lambda a: np.where(a > 0, a, np.zeros_like(a)),
    "gelu": _gelu_ref,
    "silu": lambda a: (_float(a).astype(np.float64) / (1 + np.exp(-_float(a).astype(np.float64)))).astype(
        _float(a).dtype),
    "erf": lambda a: np.vectorize(math.erf)(_float(a).astype(np.float64)).astype(_float(a).dtype),
    "floor": lambda a: np.floor(a),
    "ceil": lambda a: np.ceil(a),
    "sign": lambda a: np.sign(a),
}
POSITIVE = {"log", "sqrt", "rsqrt"}
# what each unary op rejects (numpy has no loop, or pyasc refuses on purpose: reciprocal, relu)
REJECTS = {
    "neg": {"bool"}, "sign": {"bool"}, "invert": set(FLOATS), "reciprocal": set(INTS) | {"bool"}, "relu": {"bool"},
}


@pytest.mark.parametrize("op", sorted(UNARY_REF))
@pytest.mark.parametrize("dtype", ALL)
def test_unary(op, dtype, rng):
    a = sample(dtype, rng=rng, low=1 if op in POSITIVE else -3, nonzero=op in POSITIVE | {"reciprocal"})
    if dtype in REJECTS.get(op, ()):
        with pytest.raises(InferError, match=f"{op}: does not accept dtype {dtype}"):
            ops.infer(op, [_type_of(a)], {})
        return
    with np.errstate(all="ignore"):
        expected = UNARY_REF[op](a)
        got = run(ops.public(ops.get(op)), a)
    if op == "erf" and got.dtype == np.float32:
        assert_close(got, expected, atol=5e-7, rtol=0)
    elif op == "erf" and got.dtype == np.float64:
        assert_close(got, expected, atol=2e-7, rtol=0)  # the approximation's own error
    else:
        assert_close(got, expected)


def test_float_math_promotes_like_numpy(rng):
    """Integer inputs to float math: eager is numpy's dtype, inference the narrowed one."""
    for dtype, eager_dt, kernel_dt in (("int8", "float16", "float16"), ("uint8", "float16", "float16"),
                                       ("bool", "float16", "float16"), ("int16", "float32", "float32"),
                                       ("int32", "float64", "float32")):
        a = sample(dtype, rng=rng, low=1, nonzero=True)
        for op in ("exp", "sqrt", "rsqrt", "sigmoid", "gelu", "silu", "erf"):
            assert ops.public(ops.get(op))(a).dtype == eager_dt, (op, dtype)
            assert ops.infer(op, [_type_of(a)], {})[0].dtype == kernel_dt, (op, dtype)


def test_unary_python_scalars():
    assert pyasc.relu(-3.0) == 0.0
    assert pyasc.exp(0.0) == 1.0
    assert pyasc.sigmoid(0.0) == 0.5
    assert pyasc.gelu(0.0) == 0.0


def test_sigmoid_saturates_without_overflow_warning():
    x = np.array([-100.0, 0.0, 100.0], np.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        y = pyasc.sigmoid(x)
    assert_close(y, np.array([0.0, 0.5, 1.0], np.float32))


# ---- where / cast -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
def test_where(dtype, rng):
    c = sample("bool", (3, 1), rng=rng)
    x, y = sample(dtype, rng=rng), sample(dtype, (4,), rng=rng)
    assert_close(run(pyasc.where, c, x, y), np.where(c, x, y))
    ci = sample("int32", (3, 4), rng=rng)  # a non-bool condition means "nonzero", like numpy
    assert_close(run(pyasc.where, ci, x, y), np.where(ci != 0, x, y))


def test_where_with_python_scalars(rng):
    x = sample("float16", rng=rng)
    got = pyasc.where(x > 0, x, 0.0)
    assert got.dtype == np.float16
    assert_close(got, np.where(x > 0, x, np.float16(0)))
    assert_close(run(pyasc.where, x > 0, x, np.zeros((), np.float16)), np.where(x > 0, x, np.float16(0)))


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_cast(src, dst, rng):
    a = sample(src, rng=rng, low=-100, high=100)
    with np.errstate(all="ignore"):
        expected = a.astype(dst)
        assert_close(run(pyasc.cast, a, dst), expected)
        assert_close(run(pyasc.astype, a, np.dtype(dst).type), expected)


# ---- reductions ------------------------------------------------------------------------------

REDUCE_REF = {
    "sum": lambda a, **kw: a.sum(**kw),
    "max": lambda a, **kw: a.max(**kw),
    "min": lambda a, **kw: a.min(**kw),
    "mean": lambda a, **kw: a.mean(**kw),
}


@pytest.mark.parametrize("op", sorted(REDUCE_REF))
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(op, dtype, axis, keepdims, rng):
    a = sample(dtype, (2, 3, 4), rng=rng)
    expected = REDUCE_REF[op](a, axis=axis, keepdims=keepdims)
    got = run(ops.public(ops.get(op)), a, axis, keepdims=keepdims)
    assert_close(got, expected)


def test_reduction_dtypes_narrow_numpy():
    assert ops.infer("sum", [TensorType((3,), "int8")], {})[0].dtype == "int32"  # numpy: int64
    assert ops.infer("sum", [TensorType((3,), "uint8")], {})[0].dtype == "int32"  # numpy: uint64
    assert ops.infer("sum", [TensorType((3,), "bool")], {})[0].dtype == "int32"
    assert ops.infer("mean", [TensorType((3,), "int16")], {})[0].dtype == "float32"  # numpy: float64
    assert ops.infer("mean", [TensorType((3,), "float16")], {})[0].dtype == "float16"
    assert ops.infer("max", [TensorType((3,), "uint8")], {})[0].dtype == "uint8"


# ---- composites --------------------------------------------------------------------------------


def _softmax_ref(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax_ref(x, axis):
    x = x.astype(np.float64)
    d = x - x.max(axis=axis, keepdims=True)
    return d - np.log(np.exp(d).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("op, ref", [("softmax", _softmax_ref), ("log_softmax", _log_softmax_ref)])
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "int32"])
@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
def test_softmax_family(op, ref, dtype, axis, rng):
    x = sample(dtype, (3, 5), rng=rng, low=-4, high=4)
    got = run(ops.public(ops.get(op)), x, axis=axis)
    out_dt = _float(x).dtype
    assert got.dtype == out_dt
    assert_close(got, ref(x, axis).astype(out_dt))


def test_softmax_is_stable_for_large_inputs():
    x = np.array([[1000.0, 1000.0], [-1000.0, 0.0]], np.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        y = pyasc.softmax(x)
    assert_close(y, np.array([[0.5, 0.5], [0.0, 1.0]], np.float32))


def _layer_norm_ref(x, w, b, eps):
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    y = (x64 - mu) / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("dtype", ["float16", "float32", "int16"])
@pytest.mark.parametrize("with_w, with_b", [(False, False), (True, False), (False, True), (True, True)])
def test_layer_norm(dtype, with_w, with_b, rng):
    x = sample(dtype, (2, 3, 8), rng=rng, low=-5, high=5)
    w = sample(dtype if dtype in FLOATS else "float32", (8,), rng=rng) if with_w else None
    b = sample("float32", (1, 8), rng=rng) if with_b else None
    got = pyasc.layer_norm(x, w, b, eps=1e-3)
    out_dt = np.result_type(_float(x).dtype, *(t.dtype for t in (w, b) if t is not None))
    assert got.dtype == out_dt
    assert_close(got, _layer_norm_ref(x, w, b, 1e-3).astype(out_dt))
    tensors = [t for t in (x, w, b) if t is not None]
    attrs = {"eps": 1e-3, "has_weight": with_w, "has_bias": with_b}
    assert ops.infer("layer_norm", [_type_of(t) for t in tensors], attrs) == [TensorType(x.shape, out_dt.name)]


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
@pytest.mark.parametrize("with_w", [False, True])
def test_rms_norm(dtype, with_w, rng):
    x = sample(dtype, (4, 8), rng=rng, low=-5, high=5)
    w = sample("float16", (8,), rng=rng) if with_w else None
    got = run(pyasc.rms_norm, x, w) if with_w else run(pyasc.rms_norm, x)
    x64 = x.astype(np.float64)
    ref = x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * (1 if w is None else w)
    out_dt = np.result_type(_float(x).dtype, *(() if w is None else (w.dtype,)))
    assert got.dtype == out_dt
    assert_close(got, ref.astype(out_dt))


def test_gelu_is_the_tanh_approximation():
    x = np.linspace(-4, 4, 33).astype(np.float32)
    exact = 0.5 * x.astype(np.float64) * (1 + np.vectorize(math.erf)(x.astype(np.float64) / math.sqrt(2)))
    assert_close(pyasc.gelu(x), _gelu_ref(x))
    assert np.max(np.abs(pyasc.gelu(x) - exact)) < 1e-3  # close to, but not, the erf form


def test_erf_accuracy_over_a_wide_range():
    x = np.linspace(-6, 6, 2001).astype(np.float32)
    ref = np.vectorize(math.erf)(x.astype(np.float64))
    # the formula's own error is 1.5e-7; float32 rounding (a few ulps of 1) adds up to ~3.5e-7
    assert np.max(np.abs(pyasc.erf(x).astype(np.float64) - ref)) < 5e-7
    assert np.max(np.abs(pyasc.erf(x.astype(np.float64)) - ref)) < 1.5e-7
    assert pyasc.erf(np.float32(0.0)) == 0.0
    assert_close(pyasc.erf(-x), -pyasc.erf(x))


# ---- matmul ----------------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((4,), (4,)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((2, 3, 4), (4, 6)),
]


def _matmul_ref(a, b):
    acc = np.float64 if np.result_type(a, b).kind == "f" else np.int64
    return np.matmul(a.astype(acc), b.astype(acc))


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES)
@pytest.mark.parametrize("da, db, out", [("float16", "float16", "float16"), ("float32", "float32", "float32"),
                                        ("int8", "int8", "int32"), ("int16", "int16", "int32"),
                                        ("int32", "int32", "int32"), ("uint8", "uint8", "int32"),
                                        ("int8", "uint8", "int32"), ("float16", "float32", "float32")])
def test_matmul(sa, sb, da, db, out, rng):
    a = sample(da, sa, rng=rng, low=-100, high=100) if da in INTS else sample(da, sa, rng=rng)
    b = sample(db, sb, rng=rng, low=-100, high=100) if db in INTS else sample(db, sb, rng=rng)
    got = run(pyasc.matmul, a, b)
    assert got.dtype == out
    assert_close(got, _matmul_ref(a, b).astype(out), rtol=5e-3 if out == "float16" else None,
                 atol=2e-2 if out == "float16" else None)


@pytest.mark.parametrize("ta, tb", [(True, False), (False, True), (True, True)])
def test_matmul_transpose_flags(ta, tb, rng):
    a = sample("float32", (2, 3, 4), rng=rng)
    b = sample("float32", (4, 5), rng=rng)
    a_in = np.swapaxes(a, -1, -2) if ta else a
    b_in = b.T if tb else b
    got = run(pyasc.matmul, a_in, b_in, transpose_a=ta, transpose_b=tb)
    assert_close(got, _matmul_ref(a, b).astype(np.float32))


def test_matmul_int8_accumulates_in_int32_without_wrapping():
    a = np.full((2, 64), 100, np.int8)
    b = np.full((64, 3), 100, np.int8)
    got = pyasc.matmul(a, b)
    assert got.dtype == np.int32 and (got == 640000).all()


@pytest.mark.parametrize("has_bias", [False, True])
@pytest.mark.parametrize("activation", [None, "relu"])
@pytest.mark.parametrize("out_dtype", [None, "float16"])
def test_fused_matmul(has_bias, activation, out_dtype, rng):
    a, b = sample("float32", (3, 4), rng=rng), sample("float32", (5, 4), rng=rng)
    bias = sample("float32", (5,), rng=rng)
    attrs = {"transpose_a": False, "transpose_b": True, "has_bias": has_bias, "activation": activation,
             "out_dtype": out_dtype}
    inputs = [a, b, bias] if has_bias else [a, b]
    got = ops.get("fused_matmul").eager(*inputs, **attrs)
    ref = a.astype(np.float64) @ b.T.astype(np.float64) + (bias if has_bias else 0)
    ref = np.maximum(ref, 0) if activation else ref
    ref = ref.astype(out_dtype or np.float32)
    assert_close(got, ref)
    (t,) = ops.infer("fused_matmul", [_type_of(x) for x in inputs], attrs)
    assert (t.shape, t.dtype) == (got.shape, got.dtype.name)


def test_fused_matmul_int8_with_int32_bias(rng):
    a, b = sample("int8", (3, 4), rng=rng), sample("int8", (4, 2), rng=rng)
    bias = sample("int32", (2,), rng=rng)
    attrs = {"has_bias": True, "activation": "relu"}
    got = ops.get("fused_matmul").eager(a, b, bias, **attrs)
    assert got.dtype == np.int32
    assert_close(got, np.maximum(a.astype(np.int32) @ b.astype(np.int32) + bias, 0))
    assert ops.infer("fused_matmul", [_type_of(a), _type_of(b), _type_of(bias)], attrs)[0].dtype == "int32"


# ---- layout ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "int8", "bool"])
def test_layout_ops(dtype, rng):
    a = sample(dtype, (2, 3, 4), rng=rng)
    assert_close(run(pyasc.transpose, a), a.T)
    assert_close(run(pyasc.transpose, a, (1, 0, 2)), a.transpose(1, 0, 2))
    assert_close(run(pyasc.transpose, a, [-1, 0, 1]), a.transpose(2, 0, 1))
    assert_close(run(pyasc.reshape, a, (4, -1)), a.reshape(4, 6))
    assert_close(run(pyasc.reshape, a, -1), a.reshape(24))
    assert_close(run(pyasc.broadcast_to, a[:, :1], (5, 2, 3, 4)), a[:, :1] | np.zeros((5, 2, 3, 4), a.dtype)
                 if dtype == "bool" else a[:, :1] + np.zeros((5, 2, 3, 4), a.dtype))
    assert_close(run(pyasc.expand_dims, a, 1), a[:, None])
    assert_close(run(pyasc.expand_dims, a, (0, -1)), a[None, ..., None])
    assert_close(run(pyasc.squeeze, a[:, :1, None]), a[:, 0])
    assert_close(run(pyasc.squeeze, a[:1, :, None], 2), a[:1])


KEYS = [
    0, -1, slice(None), slice(1, None), slice(None, None, -1), slice(-2, 0, -1), slice(5, -9, -2),
    (slice(None), 1), (Ellipsis, 2), (None, 0, Ellipsis, None), (1, slice(None, None, 2), -1),
    (slice(3, 1), Ellipsis), (slice(-10, 10), slice(None), slice(4, None, -3)), (Ellipsis,), (0, 0, 0),
    (slice(None, None, -1), None, slice(1, 3)), (slice(-100, None, -1),),
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_slice_from_subscripts_matches_numpy_indexing(key, rng):
    a = sample("float32", (3, 5, 4), rng=rng)
    plan = ops.normalize_index(a.shape, key)
    slice_op = ops.get("slice")
    y = slice_op.eager(a, **plan.slice_attrs)
    (t,) = ops.infer("slice", [_type_of(a)], plan.slice_attrs)
    assert t.shape == y.shape
    if plan.squeeze_axes:
        y = run(pyasc.squeeze, y, plan.squeeze_axes)
    if plan.new_axes:
        y = run(pyasc.expand_dims, y, plan.new_axes)
    assert_close(y, a[key])
    assert plan.full == (a[tuple(slice(s, e, st) for s, e, st in zip(plan.starts, plan.stops, plan.steps))].shape
                         == a.shape and all(st == 1 for st in plan.steps))


@pytest.mark.parametrize("dtype", ALL)
def test_full_zeros_ones(dtype):
    assert_close(run(pyasc.full, (2, 3), 7 if dtype != "bool" else True, dtype), np.full((2, 3), 7 if dtype != "bool"
                                                                                           else True, dtype))
    assert_close(run(pyasc.zeros, (2, 3), dtype), np.zeros((2, 3), dtype))
    assert_close(run(pyasc.ones, [4], np.dtype(dtype).type), np.ones(4, dtype))


def test_full_default_dtypes_follow_numpy():
    assert pyasc.zeros((2,)).dtype == np.float64  # numpy's; a kernel gives float32
    assert run(pyasc.full, (2,), 1).dtype == np.int64
    assert run(pyasc.full, (2,), True).dtype == np.bool_
    assert run(pyasc.full, 3, np.float16(2.0)).dtype == np.float16
    assert ops.infer("full", [], {"shape": (2,), "fill_value": 1.5})[0].dtype == "float32"
    assert ops.infer("full", [], {"shape": (2,), "fill_value": 1})[0].dtype == "int32"


def test_transdata_is_value_identity(rng):
    a = sample("float16", (4, 8), rng=rng)
    out = ops.get("transdata").eager(a, src_format="ND", dst_format="FRACTAL_NZ")
    assert_close(out, a)


def test_eager_accepts_serialised_attrs_as_lists(rng):
    """A graph read back from JSON holds lists where bind made tuples; eager functions accept both."""
    a = sample("float32", (2, 3, 4), rng=rng)
    assert_close(ops.get("sum").eager(a, axis=[0, 2], keepdims=False), a.sum(axis=(0, 2)))
    assert_close(ops.get("transpose").eager(a, axes=[2, 0, 1]), a.transpose(2, 0, 1))
    assert_close(ops.get("reshape").eager(a, shape=[6, 4]), a.reshape(6, 4))
    assert_close(ops.get("slice").eager(a, starts=[0, 2, 0], stops=[2, -1, 4], steps=[1, -1, 2]), a[:, 2::-1, ::2])


# ---- property: any basic-indexing subscript equals numpy's ---------------------------------------------


_bound = st.one_of(st.none(), st.integers(-7, 7))
_item = st.one_of(
    st.integers(-3, 2),
    st.builds(slice, _bound, _bound, st.one_of(st.none(), st.integers(-3, 3).filter(lambda s: s != 0))),
    st.none(),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_item, max_size=4), st.booleans(), st.integers(0, 4))
def test_random_subscripts_match_numpy(items, with_ellipsis, where):
    a = np.arange(3 * 5 * 4, dtype=np.int16).reshape(3, 5, 4)
    if with_ellipsis:
        items = items[:where] + [Ellipsis] + items[where:]
    key = tuple(items)
    try:
        expected = a[key]
    except IndexError:
        with pytest.raises(InferError):
            ops.normalize_index(a.shape, key)
        return
    plan = ops.normalize_index(a.shape, key)
    y = ops.get("slice").eager(a, **plan.slice_attrs)
    assert ops.infer("slice", [_type_of(a)], plan.slice_attrs)[0].shape == y.shape
    if plan.squeeze_axes:
        y = np.squeeze(y, plan.squeeze_axes)
    if plan.new_axes:
        y = np.expand_dims(y, plan.new_axes)
    np.testing.assert_array_equal(y, expected)
