"""Sync insertion: which flags a schedule gets, checked on hand-made schedules and by the sanitizer.

The `When` tests run each program for a true and a false condition (a tiling
field read at launch, or the loop variable) on the simulator with the
sanitizer on, and check where the planner put the flags.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pytest

from simulator import Device, DoubleSetError, FlagLeftSetError, chips

from pyasc import symbolic as sy
from pyasc.codegen import tileops as T
from pyasc.codegen.emit import emit
from pyasc.codegen.launch import base_field
from pyasc.codegen.schedule import Buffer, GmParam, GmRef, Loop, Ref, Stmt, TileOp, TileSchedule, When
from pyasc.codegen.sync import SyncAllocationError, SyncOp, SyncPlan, annotated_lines, plan_sync

CHIP = chips.get("tiny")
I = sy.sym("i")
F32 = "float32"
TILE = 64                      # float32 elements of one tile (256 B)


def add_schedule(slots: int) -> TileSchedule:
    """z = x + y over tiles of 64 float32, x/y/z buffers rotating when slots == 2."""
    slot = sy.mod(I, 2) if slots == 2 else 0
    x, y, z = Ref("x", slot), Ref("y", slot), Ref("z", slot)
    off = sy.mul(I, 256)
    body = [
        T.load(x, GmRef("in0", off), "float32", 64),
        T.load(y, GmRef("in1", off), "float32", 64),
        T.vbinary("add", z, x, y, 64, "float32"),
        T.store(GmRef("out0", off), z, "float32", 64),
    ]
    bufs = [Buffer(n, "UB", "float32", 256, slots) for n in ("x", "y", "z")]
    params = [GmParam("in0", "float32", "in"), GmParam("in1", "float32", "in"), GmParam("out0", "float32", "out")]
    return TileSchedule("add", "aiv", params, {"n": 4}, 1, bufs, [Loop("i", 0, sy.sym("n"), 1, body)])


def test_flags_of_a_ping_pong_loop():
    s = add_schedule(2)
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    text = "\n".join(annotated_lines(s.body, plan))
    # one data-ready flag serves both loads; buffer-free flags are pre-set per slot and drained
    assert text.count("wait_flag(MTE2->V") == 1 and text.count("wait_flag(V->MTE3") == 1
    assert "set_flag(V->MTE2, 0)" in text and "set_flag(V->MTE2, 1)" in text
    assert "set_flag(MTE3->V, 0)" in text and "set_flag(MTE3->V, 1)" in text
    assert "MTE2->MTE3" not in text  # ordered through V already
    assert plan.ids_used == {("MTE2", "V"): 2, ("V", "MTE3"): 2, ("V", "MTE2"): 2, ("MTE3", "V"): 2}


def assert_adds(prog, chip) -> None:
    """`prog` (an add_schedule program) adds two 256-element vectors under the sanitizer."""
    dev = Device(chip)
    x, y = np.arange(256, dtype=np.float32), np.ones(256, np.float32)
    dev.upload("x", x)
    dev.upload("y", y)
    dev.alloc("z", 1024)
    dev.launch(prog, 1, {"in0": "x", "in1": "y", "out0": "z"}, {"n": 4, "b_in0": 0, "b_in1": 0, "b_out0": 0},
               sanitize=True)
    np.testing.assert_array_equal(dev.read("z", "float32"), x + y)


@pytest.mark.parametrize("slots", [1, 2])
@pytest.mark.parametrize("mode", ["flags", "barrier"])
def test_generated_flags_pass_the_sanitizer(slots, mode):
    s = add_schedule(slots)
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids, mode)
    assert_adds(emit(s, plan, CHIP), CHIP)


def test_single_buffered_flags_use_one_id_per_pair():
    s = add_schedule(1)
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    assert set(plan.ids_used.values()) == {1}


def test_too_many_flags_for_the_event_ids_are_refused():
    s = add_schedule(2)
    with pytest.raises(SyncAllocationError, match="more than 1 event ids for flags"):
        plan_sync(s.body, s.buffers, 1)


def test_a_wrong_mode_is_refused():
    s = add_schedule(1)
    with pytest.raises(ValueError, match="sync mode must be 'flags' or 'barrier'"):
        plan_sync(s.body, s.buffers, 8, "none")


# ---- conditional blocks (`When`) ------------------------------------------------------------------------------

def tile(param: str, k: sy.IntLike = 0) -> GmRef:
    """Tile k of GM parameter `param`."""
    return GmRef(param, sy.mul(k, TILE * 4))


def when_schedule(body: list[Stmt], ins: Sequence[str], outs: Sequence[str], fields: Sequence[str],
                  buffers: dict[str, int]) -> TileSchedule:
    """A one-core schedule; every field is read at launch (the planner cannot evaluate it); buffers: name -> slots."""
    params = [GmParam(p, F32, "in") for p in ins] + [GmParam(p, F32, "out") for p in outs]
    return TileSchedule("when", "aiv", params, {f: sy.sym(f.upper()) for f in fields}, 1,
                        [Buffer(b, "UB", F32, TILE * 4, n) for b, n in buffers.items()], body)


def run(s: TileSchedule, tiling: dict[str, int], ins: dict[str, np.ndarray], out_tiles: dict[str, int],
        plan: SyncPlan | None = None) -> dict[str, np.ndarray]:
    """Emit `s` with its planned flags (or `plan`) and run it with the sanitizer on (a finding raises); the
    outputs start as -1."""
    plan = plan if plan is not None else plan_sync(s.body, s.buffers, CHIP.event_ids)
    prog = emit(s, plan, CHIP)
    dev = Device(CHIP)
    for name, arr in ins.items():
        dev.upload(name, arr)
    for name, n in out_tiles.items():
        dev.upload(name, np.full(n * TILE, -1, np.float32))
    bases = {base_field(p.name): 0 for p in s.params}
    dev.launch(prog, 1, {p.name: p.name for p in s.params}, {**tiling, **bases}, sanitize=True)
    return {name: dev.read(name, F32).reshape(-1, TILE) for name in out_tiles}


def ops_at(plan: SyncPlan, where: str, stmt: Stmt) -> list[str]:
    """The sync ops the plan puts before or after one statement, as text."""
    return [str(op) for op in getattr(plan, where).get(id(stmt), ())]


def tiles(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-8, 8, (n, TILE)).astype(np.float32)


def guarded_double() -> tuple[TileSchedule, TileOp, When, TileOp]:
    """load x (MTE2); if flag: x *= 2 (V); store x (MTE3): (schedule, load, the When, store)."""
    x = Ref("x")
    load, store = T.load(x, tile("in0"), F32, TILE), T.store(tile("out0"), x, F32, TILE)
    guarded = When(sy.sym("flag"), [T.vscalar("mul", x, x, 2.0, TILE, F32)])
    return when_schedule([load, guarded, store], ["in0"], ["out0"], ["flag"], {"x": 1}), load, guarded, store


@pytest.mark.parametrize("flag", [0, 1])
def test_a_when_with_one_end_of_each_dependency_gets_its_flags_around_it(flag):
    # the V op is the destination of MTE2->V and the source of V->MTE3, so both flags run whether or not it does
    s, load, guarded, store = guarded_double()
    double = guarded.body[0]
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    assert ops_at(plan, "after", load) == ["set_flag(MTE2->V, 0)"]
    assert ops_at(plan, "before", guarded) == ["wait_flag(MTE2->V, 0)"]
    assert ops_at(plan, "after", guarded) == ["set_flag(V->MTE3, 0)"]
    assert ops_at(plan, "before", store) == ["wait_flag(V->MTE3, 0)"]
    assert ops_at(plan, "before", double) == ops_at(plan, "after", double) == []
    # MTE2->MTE3 is implied through V's flags, which run even when the When does not
    assert "MTE2->MTE3" not in "\n".join(annotated_lines(s.body, plan))
    x0 = tiles(1)
    out = run(s, {"flag": flag}, {"in0": x0}, {"out0": 1})["out0"]
    np.testing.assert_array_equal(out, x0 * (2 if flag else 1))


@pytest.mark.parametrize("n", [1, 3])
def test_whens_on_the_first_and_last_iteration_keep_buffer_free_flags_in_the_loop_body(n):
    # acc = 0 in the first iteration, acc += x[i % 2] in every one, stored in the last
    x, acc = Ref("x", sy.mod(I, 2)), Ref("acc")
    load = T.load(x, tile("in0", I), F32, TILE)
    first = When(sy.eq(I, 0), [T.vdup(acc, 0.0, TILE, F32)])
    add = T.vbinary("add", acc, acc, x, TILE, F32)
    store = T.store(tile("out0"), acc, F32, TILE)
    last = When(sy.eq(I, sy.add(sy.sym("n"), -1)), [store])
    loop = Loop("i", 0, sy.sym("n"), 1, [load, first, add, last])
    s = when_schedule([loop], ["in0"], ["out0"], ["n"], {"x": 2, "acc": 1})
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    # acc is free again once the last iteration's store ran: waited for before the When that writes it first,
    # set after the When that reads it last, both in the loop body; the store's data flag is outside its When too
    assert "wait_flag(MTE3->V, 0)" in ops_at(plan, "before", first)
    assert ops_at(plan, "after", last) == ["set_flag(MTE3->V, 0)"]
    assert ops_at(plan, "before", last) == ["wait_flag(V->MTE3, 0)"]
    assert ops_at(plan, "before", store) == ops_at(plan, "after", store) == []
    assert ops_at(plan, "before", loop) == ["set_flag(V->MTE2, 0)", "set_flag(V->MTE2, 1)", "set_flag(MTE3->V, 0)"]
    x0 = tiles(n)
    out = run(s, {"n": n}, {"in0": x0}, {"out0": 1})["out0"]
    np.testing.assert_array_equal(out[0], x0.sum(axis=0))


def update_schedule(slots: int) -> tuple[TileSchedule, When]:
    """out = x, then tile j of out = v[j] for j < k (k read at launch): the slice-update pattern, its moves
    guarded directly by a When inside the loop."""
    j, c = sy.sym("j"), sy.sym("c")
    copy = Loop("c", 0, sy.sym("n"), 1, [T.load(Ref("cp"), tile("in0", c), F32, TILE),
                                         T.store(tile("out0", c), Ref("cp"), F32, TILE)])
    v = Ref("v", sy.mod(j, 2) if slots == 2 else 0)
    guarded = When(sy.lt(j, sy.sym("k")), [T.load(v, tile("in1", j), F32, TILE), T.store(tile("out0", j), v, F32,
                                                                                            TILE)])
    body = [copy, Loop("j", 0, sy.sym("n"), 1, [guarded])]
    return when_schedule(body, ["in0", "in1"], ["out0"], ["n", "k"], {"cp": 1, "v": slots}), guarded


@pytest.mark.parametrize("slots", [1, 2])
@pytest.mark.parametrize("k", [0, 2, 4])
def test_a_when_holding_both_ends_keeps_the_buffer_free_flag_inside(slots, k):
    s, guarded = update_schedule(slots)
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    load, store = guarded.body
    write = s.body[1]
    event = "j % 2 + 1" if slots == 2 else "1"
    assert ops_at(plan, "before", guarded) == ops_at(plan, "after", guarded) == []
    assert ops_at(plan, "before", load) == [f"wait_flag(MTE3->MTE2, {event})"]
    assert ops_at(plan, "after", store) == [f"set_flag(MTE3->MTE2, {event})"]
    assert ops_at(plan, "after", load) == [f"set_flag(MTE2->MTE3, {event})"]
    presets = [f"set_flag(MTE3->MTE2, {1 + e})" for e in range(slots)]
    assert ops_at(plan, "before", write) == presets
    assert ops_at(plan, "after", write) == [p.replace("set", "wait") for p in presets]
    x0, v0 = tiles(4), tiles(4, seed=1)
    out = run(s, {"n": 4, "k": k}, {"in0": x0, "in1": v0}, {"out0": 4})["out0"]
    np.testing.assert_array_equal(out, np.concatenate([v0[:k], x0[k:]]))


@pytest.mark.parametrize("k", [0, 4])
def test_the_old_flags_around_a_when_holding_both_ends_are_a_double_set(k):
    # what the planner made before it opened Whens (the write loop alone): the When's load-then-store seen as one
    # statement, so besides the buffer-free flag a store-to-load flag of its own iteration, both around the When;
    # nothing orders their waits before their sets
    s, guarded = update_schedule(1)
    write = s.body[1]
    s.body = [write]
    load, store = guarded.body
    old = SyncPlan()
    for flag in (("MTE3", "MTE2", 0), ("MTE2", "MTE3", 1)):
        old.add_before(write, SyncOp("set", *flag))
        old.add_before(guarded, SyncOp("wait", *flag))
        old.add_after(guarded, SyncOp("set", *flag))
        old.add_after(write, SyncOp("wait", *flag))
    old.add_after(load, SyncOp("set", "MTE2", "MTE3", 0))
    old.add_before(store, SyncOp("wait", "MTE2", "MTE3", 0))
    with pytest.raises(DoubleSetError, match=r"set_flag MTE\S+ event \d may be set twice without a wait"):
        run(s, {"n": 4, "k": k}, {"in0": tiles(4), "in1": tiles(4, seed=1)}, {"out0": 4}, old)


@pytest.mark.parametrize("flag", [0, 1])
def test_a_wait_hand_placed_inside_a_when_leaves_its_flag_set(flag):
    # the first When test's program with the MTE2->V wait moved into the When (and MTE2->MTE3 ordered by a flag
    # of its own, so the flag left set is the only fault)
    s, load, guarded, store = guarded_double()
    double = guarded.body[0]
    plan = SyncPlan()
    plan.add_after(load, SyncOp("set", "MTE2", "V", 0))
    plan.add_before(double, SyncOp("wait", "MTE2", "V", 0))
    plan.add_after(guarded, SyncOp("set", "V", "MTE3", 0))
    plan.add_before(store, SyncOp("wait", "V", "MTE3", 0))
    plan.add_after(load, SyncOp("set", "MTE2", "MTE3", 0))
    plan.add_before(store, SyncOp("wait", "MTE2", "MTE3", 0))
    x0 = tiles(1)
    if flag:
        np.testing.assert_array_equal(run(s, {"flag": 1}, {"in0": x0}, {"out0": 1}, plan)["out0"], x0 * 2)
        return
    with pytest.raises(FlagLeftSetError, match="flag MTE2->V event 0 is still set when the kernel ends"):
        run(s, {"flag": 0}, {"in0": x0}, {"out0": 1}, plan)


@pytest.mark.parametrize("flag", [0, 1])
def test_nested_whens(flag):
    # per tile: load x[i % 2]; if flag: (x *= 2; if i is even: x += 1; store x to out1); store x to out0
    x = Ref("x", sy.mod(I, 2))
    load = T.load(x, tile("in0", I), F32, TILE)
    inc = T.vscalar("add", x, x, 1.0, TILE, F32)
    even = When(sy.eq(sy.mod(I, 2), 0), [inc])
    store1 = T.store(tile("out1", I), x, F32, TILE)
    outer = When(sy.sym("flag"), [T.vscalar("mul", x, x, 2.0, TILE, F32), even, store1])
    store0 = T.store(tile("out0", I), x, F32, TILE)
    loop = Loop("i", 0, sy.sym("n"), 1, [load, outer, store0])
    s = when_schedule([loop], ["in0"], ["out0", "out1"], ["n", "flag"], {"x": 2})
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    # inside the outer When: V (the inner When as a whole) -> MTE3 for out1; around it: the rest, and out0's
    # V->MTE3 flag does not count the one inside (it may not run)
    assert ops_at(plan, "after", even) == ["set_flag(V->MTE3, i % 2)"]
    assert ops_at(plan, "before", store1) == ["wait_flag(V->MTE3, i % 2)"]
    assert ops_at(plan, "before", inc) == ops_at(plan, "after", inc) == []
    assert ops_at(plan, "before", outer) == ["wait_flag(MTE2->MTE3, i % 2)", "wait_flag(MTE2->V, i % 2)"]
    assert ops_at(plan, "after", outer) == ["set_flag(V->MTE3, i % 2 + 2)"]
    assert ops_at(plan, "after", store0) == ["set_flag(MTE3->MTE2, i % 2)"]
    x0 = tiles(4)
    expect = x0 * 2 + (np.arange(4) % 2 == 0)[:, None] if flag else x0
    out = run(s, {"n": 4, "flag": flag}, {"in0": x0}, {"out0": 4, "out1": 4})
    np.testing.assert_array_equal(out["out0"], expect)
    np.testing.assert_array_equal(out["out1"], expect if flag else np.full_like(x0, -1))


@pytest.mark.parametrize("guarded", [False, True])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_nested_ping_pong_loops_whose_outer_loop_touches_the_buffer(guarded, k):
    # for o: (x[0] = tile o of in0 -> outa); for i: [if i < k:] x[i % 2] = tile (o, i) of in1 -> outb
    o, n = sy.sym("o"), sy.sym("n")
    x = Ref("x", sy.mod(I, 2))
    at = sy.add(sy.mul(o, n), I)
    load, store = T.load(x, tile("in1", at), F32, TILE), T.store(tile("outb", at), x, F32, TILE)
    moves: list[Stmt] = [When(sy.lt(I, sy.sym("k")), [load, store])] if guarded else [load, store]
    inner = Loop("i", 0, n, 1, moves)
    outer = Loop("o", 0, 2, 1, [T.load(Ref("x"), tile("in0", o), F32, TILE),
                                T.store(tile("outa", o), Ref("x"), F32, TILE), inner])
    s = when_schedule([outer], ["in0", "in1"], ["outa", "outb"], ["n", "k"], {"x": 2})
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    tokens = ["set_flag(MTE3->MTE2, 0)", "set_flag(MTE3->MTE2, 1)"]
    if guarded:
        # a skipped iteration cannot skip-ends: the tokens are pre-set around the outermost loop
        assert ops_at(plan, "before", load) == ["wait_flag(MTE3->MTE2, i % 2)"]
        assert ops_at(plan, "after", store) == ["set_flag(MTE3->MTE2, i % 2)"]
        assert set(tokens) <= set(ops_at(plan, "before", outer))
    else:
        # every iteration runs: the first two skip the wait, the last two the set; nothing crosses the loop
        assert ops_at(plan, "before", load) == ["if 2 <= i: wait_flag(MTE3->MTE2, i % 2)"]
        assert ops_at(plan, "after", store) == ["if i + 2 < n: set_flag(MTE3->MTE2, i % 2)"]
        assert not set(tokens) & set(ops_at(plan, "before", outer) + ops_at(plan, "before", inner))
    n_val = 3
    a0, b0 = tiles(2), tiles(2 * n_val, seed=1)
    out = run(s, {"n": n_val, "k": k}, {"in0": a0, "in1": b0}, {"outa": 2, "outb": 2 * n_val})
    np.testing.assert_array_equal(out["outa"], a0)
    done = np.arange(2 * n_val) % n_val < (k if guarded else n_val)
    np.testing.assert_array_equal(out["outb"], np.where(done[:, None], b0, -1))


@pytest.mark.parametrize("k", [0, 1, 2])
def test_three_nested_loops_with_the_middle_one_leaving_the_buffer_to_the_inner_one(k):
    # for o: x = 1 (V); for m: for i: [if i < k:] x[i % 2] = tile of in0 -> out. The inner loop's buffer-free
    # flags are pre-set around the outermost loop: pre-set around the middle one (inside o, which touches x),
    # they would be armed again in the next o with no chain back from their drain
    o, m = sy.sym("o"), sy.sym("m")
    x = Ref("x", sy.mod(I, 2))
    at = sy.add(sy.mul(o, 4), sy.mul(m, 2), I)
    moves = When(sy.lt(I, sy.sym("k")), [T.load(x, tile("in0", at), F32, TILE), T.store(tile("out0", at), x, F32,
                                                                                          TILE)])
    middle = Loop("m", 0, 2, 1, [Loop("i", 0, 2, 1, [moves])])
    outer = Loop("o", 0, 2, 1, [T.vdup(Ref("x"), 1.0, TILE, F32), middle])
    s = when_schedule([outer], ["in0"], ["out0"], ["k"], {"x": 2})
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    load, store = moves.body
    assert ops_at(plan, "before", load) == ["wait_flag(MTE3->MTE2, i % 2)"]
    assert ops_at(plan, "after", store) == ["set_flag(MTE3->MTE2, i % 2)"]
    assert not any(op.kind == "set" for op in plan.before.get(id(middle), ()))
    assert ops_at(plan, "before", outer) == ["set_flag(MTE3->MTE2, 0)", "set_flag(MTE3->MTE2, 1)",
                                             "set_flag(MTE2->V, 0)", "set_flag(MTE3->V, 0)"]
    x0 = tiles(8)
    out = run(s, {"k": k}, {"in0": x0}, {"out0": 8})["out0"]
    np.testing.assert_array_equal(out, np.where((np.arange(8) % 2 < k)[:, None], x0, -1))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_both_ends_in_one_inner_loop_get_a_barrier(n):
    # x = 0; for o: (for i in range(n): x = tile (o, i) of in0 -> out0); y = x (V); then y -> outa. The inner
    # loop's flags stay inside it (o touches x too); o's own dependencies from one inner loop to the next have
    # both ends in that loop, whose order (and whether it runs at all) o's body cannot see, and the copy on V
    # does not order them: a barrier after the inner loop
    o, nn = sy.sym("o"), sy.sym("n")
    x, y = Ref("x"), Ref("y")
    at = sy.add(sy.mul(o, nn), I)
    inner = Loop("i", 0, nn, 1, [T.load(x, tile("in0", at), F32, TILE), T.store(tile("out0", at), x, F32, TILE)])
    outer = Loop("o", 0, 2, 1, [inner, T.vcopy(y, x, TILE, F32)])
    body = [T.vdup(x, 0.0, TILE, F32), outer, T.store(tile("outa"), y, F32, TILE)]
    s = when_schedule(body, ["in0"], ["out0", "outa"], ["n"], {"x": 1, "y": 1})
    plan = plan_sync(s.body, s.buffers, CHIP.event_ids)
    assert ops_at(plan, "after", inner) == ["set_flag(MTE2->V, 0)", "pipe_barrier(ALL)"] and plan.barriers == 1
    assert plan.summary().startswith("sync: ") and ", 1 pipe barriers;" in plan.summary()
    x0 = tiles(2 * n)
    out = run(s, {"n": n}, {"in0": x0}, {"out0": max(1, 2 * n), "outa": 1})
    np.testing.assert_array_equal(out["out0"][:2 * n], x0)
    np.testing.assert_array_equal(out["outa"][0], x0[-1] if n else np.zeros(TILE, np.float32))
