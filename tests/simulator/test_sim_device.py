"""Device: GM allocator, host I/O, launch arguments, and the memory rules enforced on every access."""
import numpy as np
import pytest

from simulator import UB, Device, GmBuffer, LaunchError, MemoryRuleError, Program, ProgramError, chips
from simulator.examples import vector_add


def test_gm_allocations_are_named_and_512_aligned():
    dev = Device("tiny")
    a = dev.alloc("a", 100)
    b = dev.alloc("b", shape=(3, 5), dtype="float16")
    assert isinstance(a, GmBuffer) and (a.addr, a.nbytes) == (0, 100)
    assert b.addr == 512 and b.nbytes == 30
    dev.free("a")
    c = dev.alloc("c", 512)
    assert c.addr == 0  # first fit reuses the hole
    assert dev.buffer("b") is b


def test_gm_capacity_and_name_errors():
    dev = Device(chips.get("tiny").replace(gm_bytes=4096))
    dev.alloc("a", 4000)
    with pytest.raises(MemoryRuleError, match=r"GM capacity: cannot allocate 200 bytes for 'b': 4096 of 4096 bytes"):
        dev.alloc("b", 200)
    with pytest.raises(MemoryRuleError, match="a GM buffer named 'a' already exists"):
        dev.alloc("a", 8)
    with pytest.raises(MemoryRuleError, match="size must be a positive number of bytes, got 0"):
        dev.alloc("z", 0)
    with pytest.raises(MemoryRuleError, match=r"no GM buffer named 'q' \(allocated: a\)"):
        dev.read("q", "float32")
    with pytest.raises(MemoryRuleError, match="give nbytes, or shape and dtype"):
        dev.alloc("s")


def test_host_write_and_read():
    dev = Device("tiny")
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    dev.upload("x", x)
    assert np.array_equal(dev.read("x", np.int16, (3, 4)), x)
    dev.write("x", np.array([7, 8], np.int16), offset=4)
    assert dev.read("x", "int16")[:4].tolist() == [0, 1, 7, 8]
    with pytest.raises(MemoryRuleError, match=r"host write of 8 bytes at offset 20 does not fit GM buffer 'x' \(24"):
        dev.write("x", np.zeros(2, np.float32), offset=20)
    with pytest.raises(MemoryRuleError, match="host read of 40 bytes at offset 0 does not fit"):
        dev.read("x", "float32", (10,))


def _prog():
    return vector_add.build()


def _dev():
    dev = Device("tiny")
    for n in ("x", "y", "z"):
        dev.alloc(n, 4096)
    return dev


@pytest.mark.parametrize("call, message", [
    (lambda d: d.launch(_prog(), 5, ["x", "y", "z"], [1, 1, 1, 32]),
     r"block_dim must be an integer in 1..4 \(the AIV cores of chip tiny\), got 5"),
    (lambda d: d.launch(_prog(), 0, ["x", "y", "z"], [1, 1, 1, 32]), r"block_dim must be an integer in 1..4"),
    (lambda d: d.launch(_prog(), 1, ["x", "y"], [1, 1, 1, 32]), r"takes 3 argument\(s\) \(x, y, z\), got 2"),
    (lambda d: d.launch(_prog(), 1, {"x": "x", "y": "y"}, [1, 1, 1, 32]), r"lacks argument\(s\) z"),
    (lambda d: d.launch(_prog(), 1, {"x": "x", "y": "y", "z": "z", "w": "x"}, [1, 1, 1, 32]),
     r"has no parameter\(s\) w"),
    (lambda d: d.launch(_prog(), 1, ["x", "y", "nope"], [1, 1, 1, 32]), r"argument 'z': no GM buffer named 'nope'"),
    (lambda d: d.launch(_prog(), 1, ["x", "y", 3], [1, 1, 1, 32]), r"argument 'z' must be a GM buffer or its name"),
    (lambda d: d.launch(_prog(), 1, ["x", "y", "z"], {"total": 1}), r"lacks field\(s\) block, tile, slot"),
    (lambda d: d.launch(_prog(), 1, ["x", "y", "z"], [1, 1, 1]), r"has 4 tiling field\(s\).*got 3 value"),
    (lambda d: d.launch(_prog(), 1, ["x", "y", "z"], [1, 1, 1.5, 32]), r"tiling field 'tile' must be an integer"),
    (lambda d: d.launch(_prog(), 1, ["x", "y", "z"], {"total": 1, "block": 1, "tile": 1, "slot": 32, "k": 2}),
     r"declares no tiling field\(s\) k"),
    (lambda d: d.launch(42, 1), r"program must be a Program, a MixedKernel or its JSON, got int"),
])
def test_launch_argument_errors(call, message):
    with pytest.raises(LaunchError, match=message):
        call(_dev())


def test_launch_accepts_program_json():
    dev = _dev()
    x = np.arange(100, dtype=np.float32)
    dev.write("x", x)
    dev.write("y", x)
    res = dev.launch(_prog().to_json(), 2, ["x", "y", "z"], vector_add.tiling(100, dev.chip, 2))
    assert np.array_equal(dev.read("z", np.float32, (100,)), 2 * x) and res.block_dim == 2


def test_gm_out_of_bounds_names_core_and_buffer():
    dev = _dev()  # 4096-byte buffers hold 1024 floats
    t = vector_add.tiling(2000, dev.chip, 2)
    with pytest.raises(MemoryRuleError) as info:
        dev.launch(_prog(), 2, ["x", "y", "z"], t)
    e = info.value
    assert e.core == 1 and e.space == "GM" and e.end > 4096 and e.rule == "GM accesses stay inside their buffer"
    assert "outside GM buffer 'x' (4096 bytes)" in str(e) and str(e).startswith("core 1: instruction #29")


def _single(instr_builder, chip="tiny"):
    dev = Device(chip)
    dev.upload("x", np.arange(64, dtype=np.float32))
    p = Program("rule", "aiv", params=["x"])
    instr_builder(p)
    return dev, p


@pytest.mark.parametrize("build, message", [
    (lambda p: p.copy(UB(0), p.gm("x"), "float32", burst=5),
     r"a burst of 5 float32 is 20 bytes, not a whole number of 32-byte blocks .* use pad=True"),
    (lambda p: p.copy(UB(0), p.gm("x", 2), "float32", burst=8), r"GM offset 0x2 is not a multiple of the element size 4"),
    (lambda p: p.copy(UB(0), p.gm("x"), "float32", burst=8, nburst=2, dst_stride=12),
     r"on-chip row stride of 48 bytes is not a whole number of 32-byte blocks"),
    (lambda p: p.copy(UB(0), p.gm("x"), "float32", burst=8, nburst=2, dst_stride=4),
     r"on-chip burst stride 16 bytes|row stride of 16 bytes"),
    (lambda p: p.vdup(UB(0), 0.0, 64 * 256, "float32"), r"covers 256 repeats of 256 bytes, more than the 255"),
    (lambda p: p.vbinary("add", UB(32), UB(0), UB(0), 16, "float32"), r"partially overlaps source"),
])
def test_memory_rules(build, message):
    dev, p = _single(build, "910b")
    with pytest.raises(MemoryRuleError, match=message):
        dev.launch(p, 1, ["x"])


@pytest.mark.parametrize("build, message", [
    (lambda p: p.copy(UB(0), p.gm("x"), "float32", burst=0), r"burst must be at least 1, got 0"),
    (lambda p: p.alu("div", p.core_idx(), 0), r"scalar div by zero"),
    (lambda p: p.copy(UB(0), p.gm("x"), "float32", burst=8, nburst=5000), r"nburst 5000 exceeds the 4095"),
])
def test_bad_operand_values(build, message):
    dev, p = _single(build)
    with pytest.raises(ProgramError, match=message):
        dev.launch(p, 1, ["x"])


def test_cube_moves_whole_fractals():
    dev = Device("tiny")
    dev.upload("a", np.ones((16, 16), np.int8))
    p = Program("frac", "aic", params=["a"])
    from simulator import L0B, L1
    p.copy_nd2nz(L1(0), p.gm("a"), "int8", 16, 16)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    p.load_l0(L0B(0), L1(0), "int8", 16, 16)  # int8 B needs K in whole 32-row fractals
    with pytest.raises(MemoryRuleError, match=r"not made of whole 32x16 fractals"):
        dev.launch(p, 1, ["a"])


def _one_mmad(dev, dtype, m, k, n, out_dtype, accumulate_twice=False):
    from simulator import L0A, L0B, L0C, L1
    p = Program("mmad", "aic", params=["a", "b", "c"])
    p.copy_nd2nz(L1(0), p.gm("a"), dtype, m, k)
    p.copy_nd2nz(L1(32768), p.gm("b"), dtype, k, n)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    p.load_l0(L0A(0), L1(0), dtype, m, k)
    p.load_l0(L0B(0), L1(32768), dtype, k, n)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), m, k, n, dtype)
    if accumulate_twice:
        p.mmad(L0C(0), L0A(0), L0B(0), m, k, n, dtype, accumulate=1)
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    p.fixpipe(p.gm("c"), L0C(0), m, n, out_dtype, src_dtype="int32" if dtype == "int8" else "float32")
    return dev.launch(p, 1, ["a", "b", "c"], sanitize=True)


@pytest.mark.parametrize("dtype, m, k, n, twice", [("int8", 32, 64, 48, False), ("float32", 20, 24, 48, True),
                                                   ("float16", 16, 48, 32, True)])
def test_cube_dtypes_and_accumulation(rng, dtype, m, k, n, twice):
    dev = Device("tiny")
    if dtype == "int8":
        a, b = rng.integers(-128, 128, (m, k)).astype(np.int8), rng.integers(-128, 128, (k, n)).astype(np.int8)
    else:
        a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    dev.upload("a", a)
    dev.upload("b", b)
    out = "int32" if dtype == "int8" else "float32"
    dev.alloc("c", shape=(m, n), dtype=out)
    res = _one_mmad(dev, dtype, m, k, n, out, twice)
    ref = (a.astype(np.int64) @ b.astype(np.int64)) * (2 if twice else 1)
    if dtype == "int8":
        assert np.array_equal(dev.read("c", out, (m, n)), ref)
    else:
        ref = (a.astype(np.float64) @ b.astype(np.float64)) * (2 if twice else 1)
        np.testing.assert_allclose(dev.read("c", out, (m, n)), ref, rtol=1e-5, atol=1e-4)
    # cost: fractal blocks (16 x c0 x 16, c0 = 32 bytes of the input) at the chip's per-dtype rate
    c0 = 32 // np.dtype(dtype).itemsize
    per_block = {"int8": dev.chip.cube_int8_block_cycles, "float32": dev.chip.cube_fp32_block_cycles,
                 "float16": dev.chip.cube_fp16_block_cycles}[dtype]
    blocks = -(-m // 16) * -(-k // c0) * -(-n // 16)
    assert res.pipe_busy["M"] == (2 if twice else 1) * (dev.chip.cube_startup_cycles + blocks * per_block)


def test_fixpipe_conversion_overflow_gives_inf_without_warnings():
    import warnings
    dev = Device("tiny")
    dev.upload("a", np.full((16, 32), 127, np.int8))
    dev.upload("b", np.full((32, 16), 127, np.int8))
    dev.alloc("c", shape=(16, 16), dtype="float16")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _one_mmad(dev, "int8", 16, 32, 16, "float16")
    assert np.isinf(dev.read("c", "float16", (16, 16))).all()  # 32 * 127 * 127 > 65504


def test_transposed_loads_feed_the_cube(rng):
    from simulator import L0A, L0B, L0C, L1
    m, k, n = 20, 40, 24
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    dev = Device("tiny")
    dev.upload("at", a.T.copy())  # both operands stored transposed in GM
    dev.upload("bt", b.T.copy())
    dev.alloc("c", shape=(m, n), dtype="float32")
    p = Program("transposed", "aic", params=["at", "bt", "c"])
    p.copy_nd2nz(L1(0), p.gm("at"), "float16", k, m)
    p.copy_nd2nz(L1(16384), p.gm("bt"), "float16", n, k)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    p.load_l0(L0A(0), L1(0), "float16", k, m, transpose=True)
    p.load_l0(L0B(0), L1(16384), "float16", n, k, transpose=True)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), m, k, n, "float16")
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    p.fixpipe(p.gm("c"), L0C(0), m, n, "float32")
    dev.launch(p, 1, ["at", "bt", "c"], sanitize=True)
    np.testing.assert_allclose(dev.read("c", "float32", (m, n)), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-5, atol=1e-5)
