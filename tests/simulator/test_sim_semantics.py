"""Instruction semantics against numpy: vector unit, scalar unit, control flow, lockstep splitting."""
import math

import numpy as np
import pytest

from conftest import assert_close
from sim_testlib import ub_roundtrip
from simulator import UB, Device, Program

FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
                "min": np.minimum, "pow": np.power, "floordiv": np.floor_divide, "mod": np.mod}
ERF = np.vectorize(math.erf)
UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "reciprocal": lambda x: 1 / x, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * (1 + ERF(x / np.sqrt(2))), "silu": lambda x: x / (1 + np.exp(-x)),
    "erf": ERF, "floor": np.floor, "ceil": np.ceil, "sign": np.sign,
}


def _pos(rng, n, dtype):
    return (rng.random(n) * 4 + 0.25).astype(dtype)


@pytest.mark.parametrize("fn", sorted(FLOAT_BINARY))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_vector_binary_float(rng, fn, dtype):
    n = 77
    a, b = _pos(rng, n, dtype), _pos(rng, n, dtype)
    out, _ = ub_roundtrip(lambda p, ad: p.vbinary(fn, UB(ad["out"]), UB(ad["a"]), UB(ad["b"]), n, dtype),
                          {"a": a, "b": b}, dtype, n)
    ref = FLOAT_BINARY[fn](a.astype(np.float32), b.astype(np.float32)).astype(dtype)
    assert_close(out, ref)


@pytest.mark.parametrize("fn, ref", [("add", np.add), ("mul", np.multiply), ("and", np.bitwise_and),
                                     ("xor", np.bitwise_xor), ("floordiv", np.floor_divide), ("mod", np.mod),
                                     ("max", np.maximum)])
@pytest.mark.parametrize("dtype", ["int32", "int16", "int8"])
def test_vector_binary_int_wraps_like_numpy(rng, fn, ref, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 50).astype(dtype)
    b = rng.integers(1, info.max, 50).astype(dtype)
    out, _ = ub_roundtrip(lambda p, ad: p.vbinary(fn, UB(ad["out"]), UB(ad["a"]), UB(ad["b"]), 50, dtype),
                          {"a": a, "b": b}, dtype, 50)
    with np.errstate(all="ignore"):
        assert np.array_equal(out, ref(a, b))


@pytest.mark.parametrize("fn", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_vector_unary(rng, fn, dtype):
    n = 45
    x = _pos(rng, n, dtype) if fn in ("log", "sqrt", "rsqrt") else (rng.standard_normal(n) * 2).astype(dtype)
    out, _ = ub_roundtrip(lambda p, ad: p.vunary(fn, UB(ad["out"]), UB(ad["x"]), n, dtype), {"x": x}, dtype, n)
    ref = np.asarray(UNARY[fn](x.astype(np.float64))).astype(dtype)
    assert_close(out, ref, rtol=2e-3 if dtype == "float16" else 2e-6, atol=1e-3 if dtype == "float16" else 1e-6)


def test_vector_not_on_bool_and_int(rng):
    b = rng.integers(0, 2, 40).astype(bool)
    out, _ = ub_roundtrip(lambda p, ad: p.vunary("not", UB(ad["out"]), UB(ad["b"]), 40, "bool"), {"b": b}, "bool", 40)
    assert np.array_equal(out, ~b)
    i = rng.integers(-100, 100, 40).astype(np.int32)
    out, _ = ub_roundtrip(lambda p, ad: p.vunary("not", UB(ad["out"]), UB(ad["i"]), 40, "int32"), {"i": i}, "int32", 40)
    assert np.array_equal(out, ~i)


@pytest.mark.parametrize("fn, scalar, reverse, ref", [
    ("add", 2.5, False, lambda x: x + 2.5), ("sub", 2.5, True, lambda x: 2.5 - x), ("mul", -3.0, False, lambda x: x * -3),
    ("div", 4.0, True, lambda x: 4 / x), ("max", 1.0, False, lambda x: np.maximum(x, 1)),
])
def test_vector_scalar(rng, fn, scalar, reverse, ref):
    x = _pos(rng, 33, "float32")
    out, _ = ub_roundtrip(lambda p, ad: p.vscalar(fn, UB(ad["out"]), UB(ad["x"]), scalar, 33, "float32", reverse),
                          {"x": x}, "float32", 33)
    assert_close(out, ref(x).astype(np.float32))


def test_vector_scalar_from_a_register(rng):
    x = rng.integers(-50, 50, 20).astype(np.int32)
    out, _ = ub_roundtrip(lambda p, ad: p.vscalar("mul", UB(ad["out"]), UB(ad["x"]), p.add(p.core_idx(), 3), 20,
                                                  "int32"), {"x": x}, "int32", 20)
    assert np.array_equal(out, x * 3)


@pytest.mark.parametrize("fn, ref", [("lt", np.less), ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)])
def test_vector_compare_and_select(rng, fn, ref):
    a = rng.integers(0, 4, 40).astype(np.float16)
    b = rng.integers(0, 4, 40).astype(np.float16)

    def body(p, ad):
        p.vcompare(fn, UB(ad["m"]), UB(ad["a"]), UB(ad["b"]), 40, "float16")
        p.vselect(UB(ad["out"]), UB(ad["m"]), UB(ad["a"]), -1.0, 40, "float16")

    out, _ = ub_roundtrip(body, {"a": a, "b": b, "m": np.zeros(40, np.uint8)}, "float16", 40)
    assert np.array_equal(out, np.where(ref(a, b), a, np.float16(-1)))
    cmp, _ = ub_roundtrip(lambda p, ad: p.vcompare(fn, UB(ad["out"]), UB(ad["a"]), 2.0, 40, "float16"), {"a": a}, "bool", 40)
    assert np.array_equal(cmp, ref(a, np.float16(2)))


@pytest.mark.parametrize("src, dst, rounding, ref", [
    ("float32", "float16", "trunc", lambda x: x.astype(np.float16)),
    ("float16", "float32", "trunc", lambda x: x.astype(np.float32)),
    ("float32", "int32", "trunc", lambda x: x.astype(np.int32)),
    ("float32", "int32", "rint", lambda x: np.rint(x).astype(np.int32)),
    ("float32", "int32", "floor", lambda x: np.floor(x).astype(np.int32)),
    ("int32", "float32", "trunc", lambda x: x.astype(np.float32)),
    ("float32", "bool", "trunc", lambda x: x != 0),
    ("int8", "int32", "trunc", lambda x: x.astype(np.int32)),
])
def test_vector_cast(rng, src, dst, rounding, ref):
    x = (rng.standard_normal(30) * 50).astype(src)
    if src == "float32":
        x[:3] = [0.0, -2.5, 2.5]
    out, _ = ub_roundtrip(lambda p, ad: p.vcast(UB(ad["out"]), UB(ad["x"]), 30, src, dst, rounding), {"x": x}, dst, 30)
    assert np.array_equal(out, ref(x))


def test_vector_dup_copy_reduce_broadcast(rng):
    rows, cols, stride = 5, 13, 16
    x = rng.standard_normal(rows * stride).astype(np.float32)
    mat = x.reshape(rows, stride)[:, :cols]

    def body(p, ad):
        p.vreduce("sum", UB(ad["s"]), UB(ad["x"]), rows, cols, "float32", src_row_stride=stride)
        p.vreduce("max", UB(ad["s"] + 32), UB(ad["x"]), rows, cols, "float32", src_row_stride=stride)
        p.vbroadcast(UB(ad["out"]), UB(ad["s"]), rows, 8, "float32", axis=1)
        p.vbroadcast(UB(ad["out"] + 160), UB(ad["x"]), 2, 8, "float32", axis=0)
        p.vcopy(UB(ad["out"] + 224), UB(ad["s"] + 32), 8, "float32")
        p.vdup(UB(ad["out"] + 256), 7, 4, "float32")

    out, _ = ub_roundtrip(body, {"x": x, "s": np.zeros(16, np.float32)}, "float32", 68)
    assert_close(out[:40].reshape(rows, 8), np.repeat(mat.sum(axis=1, keepdims=True), 8, axis=1), rtol=1e-6)
    assert np.array_equal(out[40:56].reshape(2, 8), np.stack([x[:8], x[:8]]))
    assert np.array_equal(out[56:61], mat.max(axis=1))
    assert np.array_equal(out[61:64], np.zeros(3, np.float32))
    assert np.array_equal(out[64:68], np.full(4, 7, np.float32))


def test_scalar_unit_and_control_flow():
    dev = Device("tiny")
    dev.alloc("out", 8 * 4 * 8 * 4)
    p = Program("scalar", "aiv", params=["out"], tiling=["n"])
    core, n = p.core_idx(), p.tiling("n")
    vals = [p.alu(fn, p.add(core, 7), 3) for fn in ("div", "mod", "cdiv", "shl", "max", "lt", "xor")]
    acc = p.mov(0)
    with p.loop(2, n, 3) as i:  # 2, 5, 8 for n = 10
        p.add(acc, i, dst=acc)
    with p.if_(p.alu("eq", core, 1)):
        p.mul(acc, -1, dst=acc)
    with p.else_():
        p.add(acc, 1000, dst=acc)
    for k, v in enumerate(vals + [acc]):
        p.vdup(UB(32 * k), v, 8, "int32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("out", p.mul(core, 32)), UB(0), "int32", burst=8, nburst=8, src_stride=8, dst_stride=32)
    dev.launch(p, 4, ["out"], {"n": 10})
    got = dev.read("out", "int32", (8, 4, 8))[:, :, 0]
    for c in range(4):
        a = c + 7
        exp = [a // 3, a % 3, -(-a // 3), a << 3, max(a, 3), int(a < 3), a ^ 3, -15 if c == 1 else 1015]
        assert got[:, c].tolist() == exp


def test_irregular_core_sets_still_execute_in_lockstep(rng):
    # cores {0, 1, 3} take one branch and core 2 the other: groups that are not evenly spaced
    dev = Device("tiny")
    x = rng.standard_normal(4 * 128).astype(np.float32)
    dev.upload("x", x)
    dev.alloc("y", x.nbytes)
    p = Program("branchy", "aiv", params=["x", "y"])
    core = p.core_idx()
    off = p.mul(core, 512)
    p.copy(UB(0), p.gm("x", off), "float32", burst=64)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    with p.if_(p.alu("eq", core, 2)):
        p.vscalar("mul", UB(256), UB(0), 2.0, 64, "float32")
    with p.else_():
        p.vscalar("add", UB(256), UB(0), 1.0, 64, "float32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("y", off), UB(256), "float32", burst=64)
    res = dev.launch(p, 4, ["x", "y"])
    y = dev.read("y", np.float32).reshape(4, 128)[:, :64]
    xs = x.reshape(4, 128)[:, :64]
    assert np.array_equal(y[[0, 1, 3]], xs[[0, 1, 3]] + 1) and np.array_equal(y[2], xs[2] * 2)
    assert res.distinct_streams == 2


@pytest.mark.parametrize("dtype, rows, cols, ss, ds", [("float32", 5, 12, 16, 8), ("float16", 16, 16, 16, 16),
                                                       ("int8", 3, 40, 64, 32)])
def test_vector_transpose(rng, dtype, rows, cols, ss, ds):
    x = (rng.standard_normal(rows * ss) * 50).astype(dtype)

    def body(p, ad):
        p.vdup(UB(ad["out"]), 0, cols * ds, dtype)  # the destination row padding is not written by the transpose
        p.vtranspose(UB(ad["out"]), UB(ad["x"]), rows, cols, dtype, src_row_stride=ss, dst_row_stride=ds)

    out, res = ub_roundtrip(body, {"x": x}, dtype, cols * ds)
    got = out.reshape(cols, ds)[:, :rows]
    assert np.array_equal(got, x.reshape(rows, ss)[:, :cols].T)
    assert res.instr_counts["vtranspose"] == 1


def test_vector_transpose_rejects_overlap():
    from simulator import MemoryRuleError
    x = np.zeros(64, np.float32)
    with pytest.raises(MemoryRuleError, match="a transpose cannot work in place"):
        ub_roundtrip(lambda p, ad: p.vtranspose(UB(ad["x"]), UB(ad["x"]), 8, 8, "float32"), {"x": x}, "float32", 8)


def _fp16_ulps(a, b):
    """Distance in fp16 units in the last place (monotone integer image of the bit patterns)."""
    ia = a.astype(np.float16).view(np.int16).astype(np.int32)
    ib = b.astype(np.float16).view(np.int16).astype(np.int32)
    ia = np.where(ia < 0, -32768 - ia, ia)
    ib = np.where(ib < 0, -32768 - ib, ib)
    return np.abs(ia - ib)


@pytest.mark.parametrize("fn", ["gelu", "silu", "sigmoid", "tanh", "exp", "rsqrt", "erf"])
def test_fp16_math_is_computed_in_fp32_and_rounded_once(rng, fn):
    # rounding once gives at most 1 ulp from the exact value; a unit computing each step of a
    # composite in fp16 would be off by several
    n = 2000
    x = (rng.random(n) * 3 + 0.05).astype(np.float16) if fn == "rsqrt" else \
        (rng.standard_normal(n) * 3).astype(np.float16)
    chunks = []
    for k in range(0, n, 1000):  # keep each instruction within the repeat limit
        part = x[k:k + 1000]
        out, _ = ub_roundtrip(lambda p, ad: p.vunary(fn, UB(ad["out"]), UB(ad["x"]), part.size, "float16"),
                              {"x": part}, "float16", part.size, chip="910b")
        chunks.append(out)
    exact = np.asarray(UNARY[fn](x.astype(np.float64)), dtype=np.float64)
    normal = np.abs(exact) >= np.finfo(np.float16).tiny  # fp32 cancellation may cost an ulp of a subnormal
    assert normal.sum() > n // 2
    assert _fp16_ulps(np.concatenate(chunks), exact)[normal].max() <= 1


def test_in_place_vector_operands_must_be_the_same_bytes():
    from simulator import MemoryRuleError
    x = np.zeros(64, np.float16)
    # a widening cast in place would overwrite source elements before the unit reads them
    with pytest.raises(MemoryRuleError, match=r"destination \[0x0, 0x100\) partially overlaps source \[0x0, 0x80\)"):
        ub_roundtrip(lambda p, ad: p.vcast(UB(ad["x"]), UB(ad["x"]), 64, "float16", "float32"), {"x": x}, "float16", 8)
    out, _ = ub_roundtrip(lambda p, ad: (p.vunary("abs", UB(ad["x"]), UB(ad["x"]), 64, "float16"),
                                         p.vcopy(UB(ad["out"]), UB(ad["x"]), 64, "float16")), {"x": x}, "float16", 64)
    assert np.array_equal(out, x)  # the same bytes in and out are fine


def test_half_to_float_is_numpys_conversion_bit_for_bit():
    """The table lookup that widens large float16 arrays gives astype's float32 bits for every float16 bit
    pattern (NaN payloads, infinities, subnormals, -0.0), on contiguous arrays and on strided views, in C order."""
    from simulator.vector_math import HALF_TABLE_ELEMENTS, half_to_float

    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    want = every.astype(np.float32)
    got = half_to_float(every)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    fractal = every.reshape(4, 16, 64, 16).transpose(0, 2, 1, 3)          # a strided view, as the cube reads
    np.testing.assert_array_equal(half_to_float(fractal).view(np.uint32), fractal.astype(np.float32).view(np.uint32))
    assert half_to_float(fractal).flags.c_contiguous
    small = every[::17][:HALF_TABLE_ELEMENTS - 1]                          # below the table's size: astype
    np.testing.assert_array_equal(half_to_float(small).view(np.uint32), small.astype(np.float32).view(np.uint32))
