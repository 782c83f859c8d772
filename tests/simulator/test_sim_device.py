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
    (lambda d: d.launch(42, 1), r"program must be a Program or its JSON"),
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
