"""bfloat16: storage, rounding, vector arithmetic through float32, casts, and the cube with fp32 accumulation."""
import numpy as np
import pytest

from sim_testlib import cube_run, ub_roundtrip
from simulator import L0C, UB, Device, Program, bfloat16, chips


def test_bits_round_to_nearest_even_and_keep_nans():
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -9, -2.5, np.inf, np.nan, 3.4e38], np.float32)
    bits = bfloat16.from_float32(x)
    back = bfloat16.to_float32(bits)
    assert back[0] == 1.0 and back[1] == 1.0            # a tie rounds to the even neighbour
    assert back[2] == 1 + 2 ** -7                         # above the tie rounds up
    assert back[3] == -2.5 and np.isposinf(back[4]) and np.isnan(back[5])
    assert np.isinf(back[6])                              # beyond bf16's largest finite value
    assert np.array_equal(bfloat16.to_float32(bfloat16.from_float32(back[:5])), back[:5])  # exact round trip


def test_vector_cast_and_arithmetic_compute_in_float32_and_round_once(rng):
    x = (rng.standard_normal(200) * 3).astype(np.float32)
    y = (rng.standard_normal(200) * 3).astype(np.float32)
    xb, yb = bfloat16.from_float32(x), bfloat16.from_float32(y)

    def body(p, addr):
        p.vbinary("mul", UB(addr["out"]), UB(addr["x"]), UB(addr["y"]), 200, "bfloat16")

    out, _ = ub_roundtrip(body, {"x": xb, "y": yb}, "bfloat16", 200, dtypes={"x": "bfloat16", "y": "bfloat16"})
    want = bfloat16.round_float32(bfloat16.to_float32(xb) * bfloat16.to_float32(yb))
    assert np.array_equal(out, want)  # a bfloat16 read gives the float32 values

    def cast(p, addr):
        p.vcast(UB(addr["out"]), UB(addr["x"]), 200, "float32", "bfloat16")

    out, _ = ub_roundtrip(cast, {"x": x}, "bfloat16", 200)
    assert np.array_equal(out, bfloat16.to_float32(xb))
    back, _ = ub_roundtrip(lambda p, a: p.vcast(UB(a["out"]), UB(a["x"]), 200, "bfloat16", "float32"),
                           {"x": xb}, "float32", 200, dtypes={"x": "bfloat16"})
    assert np.array_equal(back, bfloat16.to_float32(xb))


def test_device_read_of_bfloat16_gives_float32_values():
    dev = Device("tiny")
    x = np.array([1.5, -0.125, 3.0], np.float32)
    dev.upload("x", bfloat16.from_float32(x))
    assert dev.read("x", "bfloat16").tolist() == x.tolist()


def test_bfloat16_arithmetic_is_charged_through_float32():
    chip = chips.get("910b")
    n = 64 * 128

    def busy(dtype):
        p = Program("bf", "aiv")
        p.vbinary("add", UB(0), UB(32768), UB(65536), n, dtype)
        return Device(chip).launch(p, 1).pipe_busy["V"]

    f16 = busy("float16")
    bf16 = busy("bfloat16")
    start, simple, binary = chip.vector_startup_cycles, chip.vector_simple_cycles, chip.vector_binary_cycles
    assert f16 == start + 64 * binary
    assert bf16 == 4 * start + 128 * (3 * simple + binary)   # cast both in, add over fp32, cast out


def test_cube_bfloat16_inputs_accumulate_in_float32(rng):
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal((64, 48)).astype(np.float32)
    ab, bb = bfloat16.from_float32(a), bfloat16.from_float32(b)
    out, res = cube_run(ab, bb, lambda p: p.fixpipe(p.gm("out"), L0C(0), 32, 48, "bfloat16"), (32, 48), "bfloat16",
                        dtype="bfloat16")
    exact = bfloat16.to_float32(ab).astype(np.float64) @ bfloat16.to_float32(bb).astype(np.float64)
    np.testing.assert_allclose(out, bfloat16.round_float32(exact.astype(np.float32)), rtol=1e-2, atol=1e-2)
    assert res.pipe_busy["M"] > 0
