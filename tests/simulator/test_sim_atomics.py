"""GM atomics on stores: add / max / min, across cores, and what the sanitizer lets through."""
import numpy as np
import pytest

from simulator import UB, Device, Program, ProgramError, RaceError


def _partials(kind, dtype, sync_then_read=True):
    """Every core stores its own 8 values into the same 8 GM elements with an atomic `kind`."""
    p = Program(f"atomic_{kind}", "aiv", params=["acc", "check"])
    core = p.core_idx()
    p.vdup(UB(0), 1, 8, dtype)
    p.vscalar("mul", UB(0), UB(0), p.add(core, 1), 8, dtype)
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("acc"), UB(0), dtype, burst=8, pad=True, atomic=kind)
    if sync_then_read:
        p.sync_all()
    with p.if_(p.alu("eq", core, 0)):
        p.copy(UB(64), p.gm("acc"), dtype, burst=8, pad=True)
        p.set_flag("MTE2", "V", 1)
        p.wait_flag("MTE2", "V", 1)
        p.set_flag("V", "MTE3", 1)
        p.wait_flag("V", "MTE3", 1)
        p.copy(p.gm("check"), UB(64), dtype, burst=8, pad=True)
    return p


@pytest.mark.parametrize("kind, dtype, start, want", [
    ("add", "float32", 0.5, 0.5 + 1 + 2 + 3 + 4),
    ("add", "int32", 7, 7 + 10),
    ("add", "float16", 0.25, 10.25),
    ("max", "float32", 2.5, 4.0),
    ("min", "int32", 3, 1),
])
def test_atomic_stores_combine_with_gm_across_cores(kind, dtype, start, want):
    dev = Device("tiny")
    dev.upload("acc", np.full(8, start, dtype))
    dev.alloc("check", 32)
    for sanitize in (True, False):  # atomic updates of one kind need no order among themselves
        dev.write("acc", np.full(8, start, dtype))
        dev.launch(_partials(kind, dtype), 4, ["acc", "check"], sanitize=sanitize)
        assert dev.read("acc", dtype, (8,)).tolist() == [want] * 8
        assert dev.read("check", dtype, (8,)).tolist() == [want] * 8


def test_reading_atomics_without_a_barrier_and_mixing_kinds_are_races():
    dev = Device("tiny")
    dev.upload("acc", np.zeros(8, np.float32))
    dev.alloc("check", 32)
    with pytest.raises(RaceError, match=r"core 0: race on byte 0x0 of GM buffer 'acc': MTE2 .* reads .* while .*MTE3 "
                                        r"instruction #6 .* atomic=add` writes it"):
        dev.launch(_partials("add", "float32", sync_then_read=False), 4, ["acc", "check"], sanitize=True)
    mixed = _partials("add", "float32").with_instructions(
        [i if not (i.OP == "copy" and i.atomic) else type(i)(**{**i.__dict__, "atomic": None})
         for i in _partials("add", "float32").instructions])
    with pytest.raises(RaceError, match="writes it, and no sync_all or cross-core flag orders the two cores"):
        dev.launch(mixed, 4, ["acc", "check"], sanitize=True)  # plain stores of the same bytes do race


def test_atomic_rules():
    p = Program("bad", "aiv", params=["x"])
    with pytest.raises(ProgramError, match="atomic applies to stores into GM only"):
        p.copy(UB(0), p.gm("x"), "float32", burst=8, atomic="add")
    with pytest.raises(ProgramError, match="atomic max works on float32, float16, int32, not int8"):
        p.copy(p.gm("x"), UB(0), "int8", burst=32, atomic="max")
    with pytest.raises(ProgramError, match="atomic must be one of add, max, min or None, got 'mul'"):
        p.copy(p.gm("x"), UB(0), "float32", burst=8, atomic="mul")
