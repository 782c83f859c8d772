"""Shape/dtype inference: broadcasting, symbolic dims, reductions, matmul, layout ops, errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pyasc import ops
from pyasc.errors import InferError
from pyasc.ir.types import Sym, TensorType

N, M, K = Sym("N"), Sym("M"), Sym("K")


def T(*shape, dtype="float32", fmt="ND"):
    return TensorType(shape, dtype, fmt)


def infer1(op, *ts, **attrs):
    (out,) = ops.infer(op, list(ts), attrs)
    return out


def rejects(op, ts, attrs, *words):
    with pytest.raises(InferError) as e:
        ops.infer(op, list(ts), attrs)
    msg = str(e.value)
    assert msg.startswith(op + ":"), msg  # every message names the op
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"
    return msg


# ---- broadcasting -------------------------------------------------------------------------------


@pytest.mark.parametrize("a, b, out", [
    ((4, 8), (8,), (4, 8)),
    ((4, 1), (1, 8), (4, 8)),
    ((), (3, 2), (3, 2)),
    ((2, 1, 5), (3, 1), (2, 3, 5)),
    ((N, 8), (8,), (N, 8)),
    ((N, 1), (1, M), (N, M)),
    ((N, 8), (1, 8), (N, 8)),
    ((N,), (4,), (4,)),  # a static size wins; launch checks N == 4
    ((N,), (N,), (N,)),
    ((0, 3), (1, 3), (0, 3)),
])
def test_broadcasting(a, b, out):
    assert infer1("add", T(*a), T(*b)) == T(*out)
    assert infer1("where", T(*a, dtype="bool"), T(*a), T(*b)).shape == out


def test_broadcast_errors_name_shapes():
    rejects("add", [T(4, 8), T(3)], {}, "cannot broadcast shapes (4, 8) and (3,)")
    rejects("where", [T(4, dtype="bool"), T(4), T(5)], {}, "cannot broadcast shapes (4,) and (4,) and (5,)")
    rejects("add", [T(4)], {}, "takes 2 input(s), got 1")


@pytest.mark.parametrize("op, a, b, out", [
    ("add", "int8", "uint8", "int16"),
    ("add", "int32", "float16", "float32"),
    ("div", "int8", "int8", "float32"),
    ("div", "int32", "int32", "float32"),
    ("div", "float16", "float16", "float16"),
    ("floordiv", "int16", "int16", "int16"),
    ("pow", "bool", "bool", "int8"),
    ("lt", "float16", "int32", "bool"),
    ("eq", "bool", "bool", "bool"),
    ("bitwise_and", "bool", "bool", "bool"),
    ("bitwise_xor", "int8", "uint8", "int16"),
    ("maximum", "uint8", "int8", "int16"),
])
def test_binary_dtypes(op, a, b, out):
    assert infer1(op, T(3, dtype=a), T(3, dtype=b)).dtype == out


def test_bitwise_only_ints_and_bool():
    rejects("bitwise_or", [T(3), T(3, dtype="int32")], {}, "does not accept dtypes float32 and int32",
            "int8, int16, int32, uint8, bool")
    rejects("invert", [T(3, dtype="float16")], {}, "does not accept dtype float16")


@pytest.mark.parametrize("op, dtype, out", [
    ("exp", "int8", "float16"), ("exp", "uint8", "float16"), ("exp", "bool", "float16"),
    ("log", "int16", "float32"), ("sqrt", "int32", "float32"),  # numpy: float64, narrowed
    ("rsqrt", "int32", "float32"), ("sigmoid", "int8", "float16"), ("tanh", "float16", "float16"),
    ("gelu", "int16", "float32"), ("silu", "float16", "float16"), ("erf", "uint8", "float16"),
    ("floor", "int8", "int8"), ("abs", "bool", "bool"), ("relu", "uint8", "uint8"), ("sign", "int32", "int32"),
    ("neg", "uint8", "uint8"),
])
def test_unary_dtypes(op, dtype, out):
    assert infer1(op, T(2, N, dtype=dtype)) == T(2, N, dtype=out)


def test_unary_rejections():
    rejects("reciprocal", [T(3, dtype="int32")], {}, "does not accept dtype int32", "cast")
    rejects("relu", [T(3, dtype="bool")], {}, "does not accept dtype bool")
    rejects("sign", [T(3, dtype="bool")], {}, "does not accept dtype bool")
    rejects("exp", [T(3), T(3)], {}, "takes 1 input(s), got 2")


def test_elementwise_results_are_nd():
    assert infer1("exp", T(16, 16, fmt="FRACTAL_NZ")).format == "ND"
    assert infer1("add", T(16, 16, fmt="FRACTAL_NZ"), T(16)).format == "ND"


# ---- cast / full ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "int16", "int32", "uint8", "bool"])
def test_cast_to_every_dtype(dtype):
    assert infer1("cast", T(2, N), dtype=dtype) == T(2, N, dtype=dtype)


def test_cast_errors():
    rejects("cast", [T(2)], {"dtype": "float64"}, "dtype float64 is not supported", "float16, float32")
    rejects("cast", [T(2)], {}, "a target dtype is required")
    rejects("cast", [T(2)], {"dtype": "nonsense"}, "not a dtype")


@pytest.mark.parametrize("value, dtype, out", [
    (1.5, None, "float32"), (1, None, "int32"), (True, None, "bool"), (0, "float16", "float16"),
    (2.7, "int8", "int8"), (255, "uint8", "uint8"), (False, "int32", "int32"),
])
def test_full(value, dtype, out):
    assert infer1("full", shape=(2, N), fill_value=value, dtype=dtype) == T(2, N, dtype=out)


def test_full_errors():
    rejects("full", [], {"shape": (2,), "fill_value": 300, "dtype": "int8"}, "fill_value 300 does not fit dtype int8")
    rejects("full", [], {"shape": (2,), "fill_value": 2 ** 40}, "does not fit the default integer dtype int32")
    rejects("full", [], {"shape": (-1,), "fill_value": 0}, "negative dimension")
    rejects("full", [], {"shape": (2,), "fill_value": "a"}, "fill_value must be a bool, int or float")
    rejects("full", [], {"fill_value": 0}, "missing attribute 'shape'")
    rejects("full", [T(2)], {"shape": (2,), "fill_value": 0}, "takes 0 input(s), got 1")


# ---- reductions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("axis, keepdims, out", [
    (None, False, ()), (None, True, (1, 1, 1)), (0, False, (3, N)), (-1, True, (2, 3, 1)),
    ((0, 2), False, (3,)), ((2, 0), True, (1, 3, 1)), ((), False, (2, 3, N)), ([1], False, (2, N)),
])
def test_reduction_shapes(axis, keepdims, out):
    for op in ("sum", "max", "min", "mean"):
        assert infer1(op, T(2, 3, N), axis=axis, keepdims=keepdims).shape == out


def test_reduction_dtypes():
    assert infer1("sum", T(3, dtype="int8")).dtype == "int32"
    assert infer1("sum", T(3, dtype="float16")).dtype == "float16"
    assert infer1("mean", T(3, dtype="int32")).dtype == "float32"
    assert infer1("mean", T(3, dtype="bool")).dtype == "float32"
    assert infer1("max", T(3, dtype="bool")).dtype == "bool"
    assert infer1("min", T(3, dtype="int16")).dtype == "int16"
    assert infer1("sum", T(dtype="float32"), axis=0) == T()  # numpy accepts axis 0 on a 0-d tensor


def test_reduction_errors():
    rejects("sum", [T(2, 3)], {"axis": 2}, "axis 2 is out of range for a tensor of rank 2")
    rejects("mean", [T(2, 3)], {"axis": (0, -2)}, "repeated axis")
    rejects("sum", [T(2, 3)], {"axis": 1.5}, "axis must be")
    rejects("sum", [T(2, 3)], {"axis": 1, "keepdims": "yes"}, "keepdims must be True or False")
    rejects("max", [T(0, 3)], {"axis": 0}, "cannot reduce shape (0, 3)", "max has no identity")
    assert infer1("sum", T(0, 3), axis=0).shape == (3,)  # sum has an identity


# ---- matmul --------------------------------------------------------------------------------------


@pytest.mark.parametrize("a, b, attrs, out", [
    ((4, 8), (8, 2), {}, (4, 2)),
    ((8,), (8, 2), {}, (2,)),
    ((4, 8), (8,), {}, (4,)),
    ((8,), (8,), {}, ()),
    ((3, 4, 8), (8, 2), {}, (3, 4, 2)),
    ((8,), (3, 8, 2), {}, (3, 2)),
    ((5, 1, 4, 8), (3, 8, 2), {}, (5, 3, 4, 2)),
    ((8, 4), (8, 2), {"transpose_a": True}, (4, 2)),
    ((4, 8), (2, 8), {"transpose_b": True}, (4, 2)),
    ((3, 8, 4), (2, 8), {"transpose_a": True, "transpose_b": True}, (3, 4, 2)),
    ((8,), (2, 8), {"transpose_a": True, "transpose_b": True}, (2,)),  # no effect on a 1-D operand
    ((M, K), (K, N), {}, (M, N)),
    ((M, 8), (K, 2), {}, (M, 2)),  # 8 vs K: checked at launch
    ((N, 4, 8), (1, 8, 2), {}, (N, 4, 2)),
])
def test_matmul_shapes(a, b, attrs, out):
    assert infer1("matmul", T(*a), T(*b), **attrs).shape == out


@pytest.mark.parametrize("a, b, out", [
    ("int8", "int8", "int32"), ("uint8", "int8", "int32"), ("int16", "int16", "int32"), ("int32", "int32", "int32"),
    ("float16", "float16", "float16"), ("float16", "float32", "float32"), ("int8", "float16", "float16"),
])
def test_matmul_dtypes(a, b, out):
    assert infer1("matmul", T(2, 3, dtype=a), T(3, 4, dtype=b)).dtype == out


def test_matmul_errors():
    rejects("matmul", [T(4, 8), T(7, 2)], {}, "contraction dims differ: (4, 8) @ (7, 2)")
    rejects("matmul", [T(4, 8), T(4, 2)], {"transpose_b": True}, "contraction dims differ: (4, 8) @ (4, 2).T")
    rejects("matmul", [T(2, 4, 8), T(3, 8, 2)], {}, "cannot broadcast batch dims (2,) and (3,)")
    rejects("matmul", [T(), T(3)], {}, "at least one dimension")
    rejects("matmul", [T(2, 2, dtype="bool"), T(2, 2, dtype="bool")], {}, "does not accept dtype bool")
    rejects("matmul", [T(2, 2), T(2, 2)], {"transpose_a": 1}, "transpose_a must be True or False")


def test_fused_matmul():
    a, b = T(4, 8, dtype="int8"), T(8, 16, dtype="int8")
    assert infer1("fused_matmul", a, b) == T(4, 16, dtype="int32")
    assert infer1("fused_matmul", a, b, T(16, dtype="int32"), has_bias=True, activation="relu",
                  out_dtype="float16") == T(4, 16, dtype="float16")
    assert infer1("fused_matmul", T(4, 8, dtype="float16"), T(8, 16, dtype="float16"), T(1, 16),
                  has_bias=True) == T(4, 16)  # float16 product + float32 bias promotes
    assert infer1("fused_matmul", T(2, 8, 4), T(16, 8), T(4, 16), has_bias=True, transpose_a=True,
                  transpose_b=True) == T(2, 4, 16)
    rejects("fused_matmul", [a, b, T(4, 1, 16, dtype="int32")], {"has_bias": True},
            "bias of shape (4, 1, 16) does not broadcast to the product's shape (4, 16)")
    rejects("fused_matmul", [a, b, T(16)], {}, "takes 2 input(s), got 3")
    rejects("fused_matmul", [a, b], {"activation": "gelu"}, "unknown activation 'gelu'")
    rejects("fused_matmul", [a, b], {"out_dtype": "float64"}, "out_dtype", "float64 is not supported")
    rejects("fused_matmul", [a, T(7, 2, dtype="int8")], {}, "contraction dims differ")


# ---- layout ----------------------------------------------------------------------------------------


def test_transpose():
    assert infer1("transpose", T(2, 3, N)) == T(N, 3, 2)
    assert infer1("transpose", T(2, 3, N), axes=(0, 2, 1)) == T(2, N, 3)
    assert infer1("transpose", T(2, 3, 4), axes=[-1, 0, 1]) == T(4, 2, 3)
    assert infer1("transpose", T()) == T()
    rejects("transpose", [T(2, 3)], {"axes": (0, 0)}, "axes (0, 0) are not a permutation of (0, 1)")
    rejects("transpose", [T(2, 3)], {"axes": (0, 1, 2)}, "do not match a tensor of rank 2")
    rejects("transpose", [T(2, 3)], {"axes": (0, 2)}, "not a permutation")


@pytest.mark.parametrize("shape, target, out", [
    ((4, 8), (32,), (32,)),
    ((4, 8), (-1,), (32,)),
    ((4, 8), (2, -1, 4), (2, 4, 4)),
    ((4, 8), -1, (32,)),
    ((0, 3), (-1, 3), (0, 3)),
    ((), (1, -1), (1, 1)),
    ((N, 8), (-1,), (Sym("(8*N)"),)),
    ((N, 8), (N, 2, -1), (N, 2, 4)),
    ((N, 8), (-1, 4), (Sym("(2*N)"), 4)),
    ((N, M), (M, -1), (M, N)),
    ((N, 6), (4, -1), (4, Sym("((6*N)//4)"))),
    ((N, 8), (M, -1), (M, Sym("((8*N)//M)"))),
    ((N, 8), (N, 8), (N, 8)),
    ((N, 8), (M, 3), (M, 3)),  # cannot be decided statically: checked at launch
])
def test_reshape(shape, target, out):
    assert infer1("reshape", T(*shape), shape=target).shape == out


def test_reshape_round_trip_through_a_symbolic_product():
    flat = infer1("reshape", T(N, 8), shape=(-1,))
    assert infer1("reshape", flat, shape=(N, -1)) == T(N, 8)
    assert infer1("reshape", flat, shape=(-1, 8)) == T(N, 8)


def test_reshape_errors():
    rejects("reshape", [T(4, 8)], {"shape": (3, -1)}, "cannot reshape a tensor of shape (4, 8) into shape (3, -1)",
            "32 elements")
    rejects("reshape", [T(4, 8)], {"shape": (5, 6)}, "cannot reshape", "(5, 6)")
    rejects("reshape", [T(4, 8)], {"shape": (-1, -1)}, "only specify one unknown dimension")
    rejects("reshape", [T(4, 8)], {"shape": (-2, 16)}, "negative dimension -2")
    rejects("reshape", [T(0, 8)], {"shape": (0, -1)}, "ambiguous")
    rejects("reshape", [T(N, 8)], {"shape": (N, 3)}, "cannot reshape a tensor of shape (N, 8)")
    rejects("reshape", [T(4, 8)], {"shape": (4, 8.0)}, "shape must be a tuple of ints")
    rejects("reshape", [T(4, 8)], {}, "missing attribute 'shape'")


def test_broadcast_to():
    assert infer1("broadcast_to", T(3), shape=(4, 3)) == T(4, 3)
    assert infer1("broadcast_to", T(1, 3), shape=(N, 2, 3)) == T(N, 2, 3)
    assert infer1("broadcast_to", T(N, 1), shape=(N, 5)) == T(N, 5)
    assert infer1("broadcast_to", T(), shape=()) == T()
    rejects("broadcast_to", [T(3)], {"shape": (4, 8)}, "cannot broadcast shape (3,) to (4, 8)")
    rejects("broadcast_to", [T(2, 3)], {"shape": (3,)}, "cannot broadcast shape (2, 3) to (3,)")
    rejects("broadcast_to", [T(3)], {"shape": (-1, 3)}, "negative dimension")


def test_expand_dims():
    assert infer1("expand_dims", T(2, N), axis=0) == T(1, 2, N)
    assert infer1("expand_dims", T(2, N), axis=-1) == T(2, N, 1)
    assert infer1("expand_dims", T(2, N), axis=(0, 3)) == T(1, 2, N, 1)
    assert infer1("expand_dims", T(), axis=0) == T(1)
    rejects("expand_dims", [T(2, 3)], {"axis": 3}, "axis 3 is out of range for a tensor of rank 3")
    rejects("expand_dims", [T(2, 3)], {}, "axis is required")


def test_squeeze():
    assert infer1("squeeze", T(1, 3, 1)) == T(3)
    assert infer1("squeeze", T(1, 3, 1), axis=0) == T(3, 1)
    assert infer1("squeeze", T(1, 3, 1), axis=(0, -1)) == T(3)
    assert infer1("squeeze", T(1, N)) == T(N)  # a symbolic dim is never squeezed implicitly
    rejects("squeeze", [T(4, 8)], {"axis": 1}, "cannot squeeze axis 1 of shape (4, 8)", "size 8, not 1")
    rejects("squeeze", [T(1, N)], {"axis": 1}, "symbolic size N")


@pytest.mark.parametrize("shape, starts, stops, steps, out", [
    ((4, 8), (0, 0), (4, 8), (1, 1), (4, 8)),
    ((4, 8), (1, 2), (3, 8), (1, 2), (2, 3)),
    ((4, 8), (3, 7), (-1, -1), (-1, -3), (4, 3)),  # reversed; stop -1 means "through index 0"
    ((4, 8), (2, 0), (2, 8), (1, 1), (0, 8)),
    ((4, 8), (-1, 0), (-1, 8), (-1, 1), (0, 8)),  # an empty reversed range
    ((N, 8), (0, 1), (None, 5), (1, 1), (N, 4)),
    ((N, 8), (2, 0), (3, 8), (1, 1), (1, 8)),  # an integer index into a symbolic dim
    ((4, 8), (None, None), (None, None), (-1, 2), (4, 4)),
])
def test_slice(shape, starts, stops, steps, out):
    assert infer1("slice", T(*shape), starts=starts, stops=stops, steps=steps).shape == out


def test_slice_errors():
    rejects("slice", [T(4, 8)], {"starts": (0,), "stops": (4,), "steps": (1,)}, "one entry per axis")
    rejects("slice", [T(4, 8)], {"starts": (5, 0), "stops": (4, 8), "steps": (1, 1)}, "not normalised for size 4")
    rejects("slice", [T(4, 8)], {"starts": (-2, 0), "stops": (4, 8), "steps": (1, 1)}, "not normalised")
    rejects("slice", [T(4, 8)], {"starts": (0, 0), "stops": (4, 8), "steps": (0, 1)}, "step must be a non-zero int")
    # normalised bounds on a symbolic axis are trusted like static ones (normalize_index clamps them)
    assert infer1("slice", T(N, 8), starts=(1, 0), stops=(3, 8), steps=(1, 1)) == T(2, 8)
    rejects("slice", [T(4, 8)], {"starts": (0, 0), "stops": (4, 8)}, "missing attribute 'steps'")


def test_normalize_index():
    plan = ops.normalize_index((4, 8), (1, slice(None, None, -2)))
    assert (plan.starts, plan.stops, plan.steps) == ((1, 7), (2, -1), (1, -2))
    assert plan.squeeze_axes == (0,) and plan.new_axes == () and not plan.full
    plan = ops.normalize_index((4, 8), (None, Ellipsis, None))
    assert plan.full and plan.new_axes == (0, 3) and plan.squeeze_axes == ()
    plan = ops.normalize_index((N, 8), (slice(None), 2))
    assert (plan.starts, plan.stops, plan.steps) == ((0, 2), (None, 3), (1, 1))
    assert infer1("slice", T(N, 8), **plan.slice_attrs) == T(N, 1)


@pytest.mark.parametrize("key, words", [
    ((0, 0, 0), "too many indices for a tensor of shape (4, 8): 3 were given"),
    ((4,), "index 4 is out of bounds for axis 0 with size 4"),
    ((-5,), "index -5 is out of bounds"),
    ((Ellipsis, Ellipsis), "single ellipsis"),
    ((slice(None, None, 0),), "slice step cannot be zero"),
    ((1.5,), "only integers, slices (:), None and ... are valid indices, got float"),
    (([0, 1],), "got list"),
    ((slice(0, 2.5),), "slice bounds must be ints, dims or None"),
])
def test_normalize_index_errors(key, words):
    with pytest.raises(InferError, match=None) as e:
        ops.normalize_index((4, 8), key)
    assert words in str(e.value)


def test_normalize_index_symbolic():
    plan = ops.normalize_index((N, 8), (slice(1, None),))
    assert plan.starts == (1, 0) and infer1("slice", T(N, 8), **plan.slice_attrs) == T(N - 1, 8)
    plan = ops.normalize_index((N, 8), (-1,))
    assert plan.starts == (N - 1, 0) and plan.squeeze_axes == (0,)
    plan = ops.normalize_index((N, 8), (slice(-5, None),))
    assert str(infer1("slice", T(N, 8), **plan.slice_attrs).shape[0]) == "min(N, 5)"
    plan = ops.normalize_index((N, 8), (slice(None, None, -1),))
    assert infer1("slice", T(N, 8), **plan.slice_attrs) == T(N, 8)


def test_normalize_index_symbolic_errors():
    with pytest.raises(InferError, match="a slice step must be a compile-time int, got the symbolic dim N"):
        ops.normalize_index((8,), (slice(None, None, N),))
    with pytest.raises(InferError, match=r"the slice bound N - 3 may be negative at launch"):
        ops.normalize_index((8,), (slice(None, N - 3),))


def test_transdata():
    assert infer1("transdata", T(32, 16), src_format="ND", dst_format="FRACTAL_NZ") == T(32, 16, fmt="FRACTAL_NZ")
    assert infer1("transdata", T(32, 16, fmt="FRACTAL_NZ"), src_format="FRACTAL_NZ", dst_format="ND") == T(32, 16)
    assert infer1("transdata", T(1, 32, 4, 4), src_format="ND", dst_format="NC1HWC0").format == "NC1HWC0"
    rejects("transdata", [T(4, 4)], {"src_format": "FRACTAL_NZ", "dst_format": "ND"}, "has format ND",
            "src_format is FRACTAL_NZ")
    rejects("transdata", [T(4, 4)], {"src_format": "ND", "dst_format": "NHWC"}, "unknown dst_format 'NHWC'")
    rejects("transdata", [T(4, 4)], {"src_format": "ND", "dst_format": "NC1HWC0"}, "needs a 4-D")


# ---- composites -----------------------------------------------------------------------------------


def test_composite_types():
    assert infer1("softmax", T(2, N, dtype="float16"), axis=-1) == T(2, N, dtype="float16")
    assert infer1("log_softmax", T(2, 3, dtype="int8"), axis=(0, 1)) == T(2, 3, dtype="float16")
    assert infer1("layer_norm", T(N, 8, dtype="float16"), T(8, dtype="float16"), T(8, dtype="float16"),
                  eps=1e-5, has_weight=True, has_bias=True) == T(N, 8, dtype="float16")
    assert infer1("layer_norm", T(4, 8, dtype="float16"), T(8), eps=1e-5, has_weight=False,
                  has_bias=True) == T(4, 8)
    assert infer1("rms_norm", T(4, 8, dtype="int32"), eps=1e-6, has_weight=False) == T(4, 8)
    assert infer1("gelu", T(3, dtype="float16")) == T(3, dtype="float16")


def test_composite_errors():
    rejects("softmax", [T(2, 3)], {"axis": 2}, "axis 2 is out of range for a tensor of rank 2")
    rejects("softmax", [T(2, 3), T(2, 3)], {"axis": -1}, "takes 1 input(s), got 2")
    rejects("layer_norm", [T(4, 8), T(7)], {"eps": 1e-5, "has_weight": True, "has_bias": False},
            "weight of shape (7,) does not broadcast to x of shape (4, 8)")
    rejects("layer_norm", [T(4, 8)], {"eps": 1e-5, "has_weight": True, "has_bias": False},
            "takes 2 input(s) (x, weight), got 1")
    rejects("rms_norm", [T()], {"eps": 1e-6, "has_weight": False}, "at least one dimension")
    rejects("layer_norm", [], {}, "got no inputs")
    rejects("rms_norm", [T(3)], {"eps": "small", "has_weight": False}, "eps must be a number")
    rejects("gelu", [T(3), T(3)], {}, "takes 1 input(s), got 2")


def test_structural_ops():
    assert infer1("Data", type=T(2, N)) == T(2, N)
    assert infer1("Const", value=np.zeros((2,), np.float64)) == T(2)  # narrowed
    rejects("Data", [T(1)], {"type": T(1)}, "takes no inputs")
    rejects("Const", [], {"value": 1.0}, "must be a numpy array")


# ---- properties against numpy -------------------------------------------------------------------


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=150, deadline=None)
@given(shapes, shapes)
def test_broadcasting_agrees_with_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(InferError, match="cannot broadcast shapes"):
            ops.infer("add", [T(*a), T(*b)], {})
        return
    assert infer1("add", T(*a), T(*b)).shape == expected


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.lists(st.integers(1, 6), min_size=1, max_size=3),
       st.integers(0, 2))
def test_reshape_agrees_with_numpy(shape, target, hole):
    target = list(target)
    target[min(hole, len(target) - 1)] = -1
    x = np.zeros(shape)
    try:
        expected = x.reshape(target).shape
    except ValueError:
        with pytest.raises(InferError, match="cannot reshape"):
            ops.infer("reshape", [T(*shape)], {"shape": tuple(target)})
        return
    assert infer1("reshape", T(*shape), shape=tuple(target)).shape == expected
