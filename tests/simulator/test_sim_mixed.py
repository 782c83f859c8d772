"""Mixed launches: groups of one AIC and its AIVs, cross-core flags, and GM hand-over checked by the sanitizer."""
import numpy as np
import pytest

from simulator import (
    L0A, L0B, L0C, L1, UB, DeadlockError, Device, FlagLeftSetError, FlagOverflowError, LaunchError, MixedKernel,
    Program, ProgramError, RaceError, chips,
)


def _cube(with_done_wait=True, tile_flag=0):
    """Each group's AIC: ws[group] = a @ b (16 x 32 @ 32 x 16 fp16 -> fp32), then tells its AIVs."""
    p = Program("cube", "aic", params=["a", "b", "ws"])
    grp = p.group_idx()
    p.copy_nd2nz(L1(0), p.gm("a"), "float16", 16, 32)
    p.copy_nd2nz(L1(1024), p.gm("b"), "float16", 32, 16)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    p.load_l0(L0A(0), L1(0), "float16", 16, 32)
    p.load_l0(L0B(0), L1(1024), "float16", 32, 16)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), 16, 32, 16, "float16")
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    p.fixpipe(p.gm("ws", p.mul(grp, 1024)), L0C(0), 16, 16, "float32")
    p.cross_set("FIX", tile_flag)      # the tile is in GM once FIX is done
    if with_done_wait:
        p.cross_wait(1)                # both AIVs have read it
    return p


def _vector(wait=True, done_set=True):
    """Each AIV: rows [8 * sub, 8 * sub + 8) of its group's tile, doubled, to out."""
    p = Program("epilogue", "aiv", params=["ws", "out"])
    grp, sub = p.group_idx(), p.sub_idx()
    off = p.add(p.mul(grp, 1024), p.mul(sub, 512))
    if wait:
        p.cross_wait(0)
    p.copy(UB(0), p.gm("ws", off), "float32", burst=128)
    if done_set:
        p.cross_set("MTE2", 1)         # the tile's rows are read: the AIC may reuse ws
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    p.vscalar("mul", UB(512), UB(0), 2.0, 128, "float32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("out", off), UB(512), "float32", burst=128)
    return p


def _run(kernel, groups=2, sanitize=True, chip="tiny"):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 32)).astype(np.float16)
    b = rng.standard_normal((32, 16)).astype(np.float16)
    dev = Device(chip)
    dev.upload("a", a)
    dev.upload("b", b)
    dev.alloc("ws", groups * 1024)
    dev.alloc("out", groups * 1024)
    res = dev.launch(kernel, groups, {"a": "a", "b": "b", "ws": "ws", "out": "out"}, sanitize=sanitize)
    ref = 2 * (a.astype(np.float32) @ b.astype(np.float32))
    return dev.read("out", np.float32, (groups, 16, 16)), ref, res


def test_a_cube_and_vector_launch_hands_a_tile_over_through_gm():
    for sanitize in (True, False):
        out, ref, res = _run(MixedKernel(_cube(), _vector()), sanitize=sanitize)
        np.testing.assert_allclose(out, np.broadcast_to(ref, out.shape), rtol=1e-5, atol=1e-5)
        assert res.core_type == "mix" and res.block_dim == 2
        assert len(res.core_cycles) == 2 + 4 and set(res.pipe_busy) >= {"M", "FIX", "V", "MTE3"}
        assert res.instr_counts["cross_set"] == 2 + 4 and res.instr_counts["cross_wait"] == 2 + 4


def test_the_vector_side_waits_for_the_tile():
    chip = chips.get("tiny")
    _, _, res = _run(MixedKernel(_cube(), _vector()), sanitize=False)
    events = res.trace()["traceEvents"]
    fix_end = max(e["args"]["end_cycle"] for e in events if e.get("name") == "fixpipe")
    loads = [e["args"]["start_cycle"] for e in events if e.get("name") == "copy.gm_to_ub"]
    assert len(loads) == 4 and min(loads) >= fix_end + chip.cross_flag_cycles
    procs = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert procs == {"core 0 (AIC)", "core 1 (AIC)"} | {f"core {c} (AIV)" for c in range(4)}


def test_an_unordered_hand_over_is_a_cross_core_race():
    with pytest.raises(RaceError) as info:
        _run(MixedKernel(_cube(), _vector(wait=False)))
    msg = str(info.value)
    assert msg.startswith("AIV core 0: race on byte 0x0 of GM buffer 'ws': MTE2 instruction #")
    assert "while AIC core 0 FIX instruction #" in msg and "writes it" in msg
    assert "no sync_all or cross-core flag orders the two cores" in msg
    # a set on the scalar unit fires when issued, before FIX has written the tile: still a race
    early = _cube()
    body = [i if i.OP != "cross_set" else type(i)(i.mode, i.flag, "S") for i in early.instructions]
    with pytest.raises(RaceError, match="while AIC core 0 FIX instruction"):
        _run(MixedKernel(early.with_instructions(body), _vector()))


def test_a_cross_wait_nothing_satisfies_is_a_deadlock():
    with pytest.raises(DeadlockError) as info:
        _run(MixedKernel(_cube(), _vector(done_set=False)), sanitize=False)
    msg = str(info.value)
    assert msg.startswith("deadlock: cross-core waits that can never be satisfied")
    assert "AIC core 0 waits at instruction #" in msg and "`cross_wait group flag=1`" in msg
    assert "for AIV core 0, AIV core 1" in msg


def test_a_cross_flag_left_set_and_a_counter_overflow():
    with pytest.raises(FlagLeftSetError, match=r"AIV core 0: cross-core flag 1 \(group\) still holds 1 set\(s\) for "
                                               r"AIC core 0 when the kernel ends"):
        _run(MixedKernel(_cube(with_done_wait=False), _vector()), sanitize=False)
    chip = chips.get("tiny")
    p = Program("chatty", "aiv")
    with p.loop(chip.cross_flag_limit + 1):
        p.cross_set("S", 3, mode="all")
    with pytest.raises(FlagOverflowError, match=r"core 0: cross-core flag 3 \(all\) is set 16 times ahead of core 0's "
                                                r"waits .* at most 15 pending sets"):
        Device(chip).launch(p, 1)


def test_group_modes_need_a_mixed_launch_and_block_dim_counts_groups():
    with pytest.raises(ProgramError, match="cross-core flag mode 'group' needs a mixed launch"):
        _single(_vector())
    with pytest.raises(LaunchError, match=r"block_dim must be an integer in 1..2 \(groups of one AIC and 2 AIVs"):
        _run(MixedKernel(_cube(), _vector()), groups=3)
    with pytest.raises(ProgramError, match="aic must be a Program for core_type 'aic'"):
        MixedKernel(_vector(), _vector())
    with pytest.raises(ProgramError, match="mode group_aivs syncs the AIVs of a group"):
        Program("bad", "aic").cross_wait(0, mode="group_aivs")
    with pytest.raises(ProgramError, match=r"mode must be one of all, group_aivs, group \(or 0, 1, 2\), got 7"):
        Program("bad", "aiv").cross_wait(0, mode=7)


def _single(prog):
    dev = Device("tiny")
    dev.alloc("ws", 2048)
    dev.alloc("out", 2048)
    return dev.launch(prog, 2, ["ws", "out"])


def test_group_and_sub_indices():
    cube = Program("ids_c", "aic", params=["o"])
    aiv = Program("ids_v", "aiv", params=["o"])
    for p in (cube, aiv):
        p.group_idx()
        p.sub_idx()
    k = MixedKernel(cube, aiv)
    assert k.params == ["o"] and "mixed kernel ids_c+ids_v" in k.listing()
    assert MixedKernel.from_dict(k.to_dict()).to_json() == k.to_json()


def test_all_mode_is_a_barrier_among_the_cores_of_a_type():
    def prog(wait):
        p = Program("partials", "aiv", params=["ws", "out"])
        core = p.core_idx()
        p.vdup(UB(0), 1.0, 8, "float32")
        p.vscalar("mul", UB(0), UB(0), p.add(core, 1), 8, "float32")
        p.set_flag("V", "MTE3", 0)
        p.wait_flag("V", "MTE3", 0)
        p.copy(p.gm("ws", p.mul(core, 32)), UB(0), "float32", burst=8)
        p.set_flag("MTE3", "MTE2", 2)   # a core's own partial is ordered before its read anyway
        p.wait_flag("MTE3", "MTE2", 2)
        p.cross_set("MTE3", 0, mode="all")
        if wait:
            p.cross_wait(0, mode="all")
        with p.if_(p.alu("eq", core, 0)):
            p.copy(UB(64), p.gm("ws"), "float32", burst=32)
            p.set_flag("MTE2", "V", 1)
            p.wait_flag("MTE2", "V", 1)
            p.vreduce("sum", UB(256), UB(64), 1, 32, "float32")
            p.set_flag("V", "MTE3", 1)
            p.wait_flag("V", "MTE3", 1)
            p.copy(p.gm("out"), UB(256), "float32", burst=1, pad=True)
        if not wait:
            p.cross_wait(0, mode="all")
        return p

    dev = Device("tiny")
    dev.alloc("ws", 128)
    dev.alloc("out", 4)
    dev.launch(prog(True), 4, ["ws", "out"], sanitize=True)
    assert dev.read("out", np.float32)[0] == 8 * (1 + 2 + 3 + 4)
    # core 0's read of the partials and core 1's store of its partial: nothing orders them
    with pytest.raises(RaceError, match=r"core [01]: race on byte 0x20 of GM buffer 'ws': .* and no sync_all or "
                                        r"cross-core flag orders the two cores"):
        dev.launch(prog(False), 4, ["ws", "out"], sanitize=True)
