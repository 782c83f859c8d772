"""Scalar access to UB data (integer and float registers) and index-driven gathers (embeddings)."""
import numpy as np
import pytest

from simulator import UB, Device, MemoryRuleError, Program, ProgramError, RaceError


def _load_then(body, x, wait=True):
    dev = Device("tiny")
    dev.upload("x", x)
    dev.alloc("y", 64)
    p = Program("scalar_data", "aiv", params=["x", "y"])
    p.copy(UB(0), p.gm("x"), "float32", burst=x.size, pad=True)
    if wait:
        p.set_flag("MTE2", "S", 0)
        p.wait_flag("MTE2", "S", 0)
    body(p)
    p.set_flag("S", "MTE3", 0)
    p.wait_flag("S", "MTE3", 0)
    p.copy(p.gm("y"), UB(256), "float32", burst=8)
    return dev, p


def test_ld_st_and_float_registers():
    x = np.array([1.5, -2.25, 4.0, 0.0, 0, 0, 0, 0], np.float32)

    def body(p):
        a = p.ld(UB(0), "float32")
        b = p.ld(UB(4), "float32")
        s = p.falu("add", a, b)                       # -0.75
        q = p.falu("div", s, 3.0)                     # -0.25
        p.st(UB(256), q, "float32")
        p.st(UB(260), p.falu("lt", a, b), "float32")  # 0
        p.st(UB(264), p.cvt(p.falu("mul", a, 3.0), "int", round="floor"), "float32")  # floor(4.5) = 4
        for k in range(3, 8):
            p.st(UB(256 + 4 * k), p.ld(UB(8), "float32"), "float32")

    dev, p = _load_then(body, x)
    for sanitize in (True, False):
        dev.launch(p, 1, ["x", "y"], sanitize=sanitize)
        assert dev.read("y", np.float32, (8,)).tolist() == [-0.25, 0.0, 4.0] + [4.0] * 5


def test_a_scalar_read_needs_an_order_after_the_pipe_that_wrote_it():
    x = np.ones(8, np.float32)
    dev, p = _load_then(lambda p: p.st(UB(256), p.ld(UB(0), "float32"), "float32"), x, wait=False)
    with pytest.raises(RaceError, match=r"race on UB bytes \[0x0, 0x4\): S instruction #1 `r0 = ld UB\[0\] "
                                        r"float32` reads .* while MTE2 instruction #0"):
        dev.launch(p, 1, ["x", "y"], sanitize=True)


def test_integer_alu_refuses_float_registers():
    x = np.ones(8, np.float32)
    dev, p = _load_then(lambda p: p.add(p.ld(UB(0), "float32"), 1), x)
    with pytest.raises(ProgramError, match="add works on integer registers; use falu for float registers"):
        dev.launch(p, 1, ["x", "y"])


def _embedding(table, idx):
    """Rows table[idx[i]] gathered by DMA: the scalar unit reads each index from UB and copies that row."""
    rows, dim = table.shape
    dev = Device("tiny")
    dev.upload("table", table)
    dev.upload("idx", idx.astype(np.int32))
    dev.alloc("out", idx.size * dim * 4)
    p = Program("embedding", "aiv", params=["table", "idx", "out"])
    p.copy(UB(0), p.gm("idx"), "int32", burst=idx.size, pad=True)
    p.set_flag("MTE2", "S", 0)
    p.wait_flag("MTE2", "S", 0)
    with p.loop(idx.size) as i:
        r = p.ld(UB(p.mul(i, 4)), "int32")
        p.copy(UB(p.add(1024, p.mul(i, dim * 4))), p.gm("table", p.mul(r, dim * 4)), "float32", burst=dim)
    p.set_flag("MTE2", "MTE3", 0)
    p.wait_flag("MTE2", "MTE3", 0)
    p.copy(p.gm("out"), UB(1024), "float32", burst=idx.size * dim)
    return dev, p


def test_an_embedding_lookup_by_indices_read_from_ub(rng):
    table = rng.standard_normal((50, 16)).astype(np.float32)
    for idx in (np.array([3, 3, 49, 0, 7]), np.array([1, 2, 3, 4, 5])):
        dev, p = _embedding(table, idx)
        for sanitize in (True, False):
            dev.launch(p, 1, ["table", "idx", "out"], sanitize=sanitize)
            assert np.array_equal(dev.read("out", np.float32, (idx.size, 16)), table[idx])
    dev, p = _embedding(table, np.array([3, 60]))
    with pytest.raises(MemoryRuleError, match="outside GM buffer 'table'"):
        dev.launch(p, 1, ["table", "idx", "out"])


def test_vgather_by_offsets_computed_on_the_vector_unit(rng):
    table = rng.standard_normal((32, 8)).astype(np.float32)   # 32 rows of one 32-byte block each
    idx = np.array([5, 0, 31, 5, 7, 7, 2, 9], np.int32)
    dev = Device("tiny")
    dev.upload("table", table)
    dev.upload("idx", idx)
    dev.alloc("out", 8 * 4)
    p = Program("gather", "aiv", params=["table", "idx", "out"])
    p.copy(UB(0), p.gm("table"), "float32", burst=table.size)
    p.copy(UB(2048), p.gm("idx"), "int32", burst=8)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vscalar("mul", UB(2048), UB(2048), 32, 8, "int32")       # byte offset of each row ...
    p.vscalar("add", UB(2048), UB(2048), 4, 8, "int32")        # ... and of its element 1
    p.vgather(UB(4096), UB(0), UB(2048), 8, "float32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("out"), UB(4096), "float32", burst=8)
    dev.launch(p, 1, ["table", "idx", "out"], sanitize=True)
    assert np.array_equal(dev.read("out", np.float32), table[idx, 1])
    dev.write("idx", np.array([0, 1, 2, 3, 4, 5, 6, 900], np.int32))
    with pytest.raises(MemoryRuleError, match=r"gathers element 7 from UB address 0x7084, .* outside the 16384-byte UB"):
        dev.launch(p, 1, ["table", "idx", "out"])
