"""The warm path: timing replays equal full runs, untimed launches, prepared launches, buffers attached in place."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from simulator import UB, Device, LaunchError, MemoryRuleError, Program, UninitializedReadError, chips
from simulator.examples import gemm, matmul, matmul_epilogue, softmax, vector_add

TINY = chips.get("tiny")


@dataclass
class Case:
    """A program launched repeatedly: inputs made from a generator, outputs (name, dtype, shape)."""

    program: object
    block_dim: int
    tiling: dict
    inputs: Callable[[np.random.Generator], dict]
    outputs: list


def _cases() -> dict[str, Case]:
    f16 = lambda rng, *s: rng.standard_normal(s).astype(np.float16)  # noqa: E731
    f32 = lambda rng, *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    ep = matmul_epilogue.tiling(64, 128, 128, TINY)
    return {
        "vector_add": Case(vector_add.build(), 3, vector_add.tiling(1000, TINY, 3),
                           lambda r: {"x": f32(r, 1000), "y": f32(r, 1000)}, [("z", "float32", (1000,))]),
        "softmax": Case(softmax.build(), 4, softmax.tiling(9, 70, TINY, 4),
                        lambda r: {"x": f32(r, 9, 70)}, [("y", "float32", (9, 70))]),
        "matmul": Case(matmul.build(), 2, matmul.tiling(40, 50, 70, TINY),
                       lambda r: {"a": f16(r, 40, 70), "b": f16(r, 70, 50), "bias": f32(r, 50)},
                       [("c", "float32", (40, 50))]),
        "gemm": Case(gemm.build(32, 64, 32, 2), 2, gemm.tiling(64, 128, 128, TINY, (1, 2), 32, 64, 32, 2),
                     lambda r: {"a": f16(r, 64, 128), "b": f16(r, 128, 128)}, [("c", "float32", (64, 128))]),
        "matmul_epilogue": Case(matmul_epilogue.build(), 2, ep,
                                lambda r: {"a": f16(r, 64, 128), "b": f16(r, 128, 128),
                                           "ws": np.zeros(2 * 2 * ep["tm"] * ep["tn"], np.float32)},
                                [("c", "float32", (64, 128))]),
    }


def _launch(dev: Device, case: Case, data: dict, **options):
    for name, arr in data.items():
        if name in dev.gm:
            dev.write(name, arr)
        else:
            dev.upload(name, arr)
    for name, dtype, shape in case.outputs:
        if name not in dev.gm:
            dev.alloc(name, shape=shape, dtype=dtype)
    params = case.program.params if hasattr(case.program, "params") else None
    args = {p: p for p in (params or list(data) + [n for n, _, _ in case.outputs])}
    res = dev.launch(case.program, case.block_dim, args, case.tiling, **options)
    return [dev.read(n, d, s) for n, d, s in case.outputs], res


@pytest.mark.parametrize("name", ["vector_add", "softmax", "matmul", "gemm", "matmul_epilogue"])
def test_timing_replays_equal_full_runs_on_random_data(name):
    """Timing is a function of program, cores, tiling and buffers: replays on new data give the full model's
    figures (checked against a device that never saw the launch), in a call or not, and untimed replays the
    same outputs."""
    case = _cases()[name]
    rng = np.random.default_rng(7)
    warm = Device(TINY)
    for _ in range(3):
        data = case.inputs(rng)
        outs, res = _launch(warm, case, data)
        fresh_outs, fresh = _launch(Device(TINY), case, data)
        assert all(np.array_equal(a, b) for a, b in zip(outs, fresh_outs))
        assert res.to_dict() == fresh.to_dict() and res.core_pipe_busy == fresh.core_pipe_busy
        assert res.trace() == fresh.trace()
        with warm.call():
            in_call = _launch(warm, case, data)[1]
        assert in_call.to_dict() == fresh.to_dict()
        other = case.inputs(rng)
        untimed, none = _launch(warm, case, other, timing=False)
        assert none is None
        assert all(np.array_equal(a, b) for a, b in zip(untimed, _launch(Device(TINY), case, other)[0]))


def _data_dependent() -> Program:
    """Loads a trip count from the data, then doubles `n` elements that many times: timing depends on data."""
    p = Program("data_loop", "aiv", params=["cnt", "x", "y"], tiling=["n"])
    n = p.tiling("n")
    p.copy(UB(0), p.gm("cnt"), "int32", burst=8)
    p.copy(UB(64), p.gm("x"), "float32", burst=n, pad=True)
    p.set_flag("MTE2", "S", 0)
    p.wait_flag("MTE2", "S", 0)
    trips = p.ld(UB(0), "int32")
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    with p.loop(trips):
        p.vscalar("mul", UB(64), UB(64), 2.0, n, "float32")
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("y"), UB(64), "float32", burst=n, pad=True)
    return p


def test_a_program_whose_timing_depends_on_data_runs_the_full_model_every_time():
    prog = _data_dependent()
    dev = Device(TINY)
    x = np.arange(64, dtype=np.float32)
    dev.upload("x", x)
    dev.alloc("cnt", 32)
    dev.alloc("y", x.nbytes)
    cycles = []
    for trips in (1, 5, 2):
        dev.write("cnt", np.full(8, trips, np.int32))
        res = dev.launch(prog, 1, ["cnt", "x", "y"], {"n": 64})
        assert np.array_equal(dev.read("y", "float32"), x * 2.0 ** trips)
        fresh = Device(TINY)
        fresh.upload("x", x)
        fresh.upload("cnt", np.full(8, trips, np.int32))
        fresh.alloc("y", x.nbytes)
        assert res.to_dict() == fresh.launch(prog, 1, ["cnt", "x", "y"], {"n": 64}).to_dict()
        cycles.append(res.cycles)
    assert cycles[0] < cycles[2] < cycles[1]


def _add_device(n: int = 1000) -> tuple[Device, Program, dict]:
    dev = Device(TINY)
    dev.alloc("x", n * 4)
    dev.alloc("y", n * 4)
    dev.alloc("z", n * 4)
    return dev, vector_add.build(), vector_add.tiling(n, TINY, 3)


def test_a_timed_launch_after_an_untimed_one_in_the_same_call_is_refused():
    dev, prog, t = _add_device()
    dev.launch(prog, 3, ["x", "y", "z"], t)  # recorded
    with dev.call():
        assert dev.launch(prog, 3, ["x", "y", "z"], t, timing=False) is None
        with pytest.raises(LaunchError, match="an earlier launch of this kernel call ran with timing=False"):
            dev.launch(prog, 3, ["x", "y", "z"], t)
    with dev.call():  # a new call starts with an empty L2: timing is fine again
        assert dev.launch(prog, 3, ["x", "y", "z"], t).cycles > 0


def test_an_attached_array_is_the_buffer_itself_and_results_can_be_views(rng):
    dev, prog, t = _add_device()
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    x.flags.writeable = False  # only read by the kernel: a read-only array may be attached
    dev.attach("x", x)
    dev.attach("y", y)
    assert np.shares_memory(dev.buffer("x").data, x)
    dev.launch(prog, 3, ["x", "y", "z"], t, sanitize=True)  # attached bytes count as written
    z = dev.read("z", "float32", copy=False)
    assert np.array_equal(z, x + y) and np.shares_memory(z, dev.buffer("z").data)
    dev.attach("z", np.zeros(4000, np.uint8), written=False)  # new bytes for the next result
    dev.launch(prog, 3, ["x", "y", "z"], t, timing=False)
    assert np.array_equal(z, x + y) and np.array_equal(dev.read("z", "float32"), x + y)
    dev.detach("x")
    assert not np.shares_memory(dev.buffer("x").data, x) and not dev.buffer("x").data.any()
    dev.launch(prog, 3, ["x", "y", "z"], t, timing=False)  # a detached buffer is an ordinary one again
    assert np.array_equal(dev.read("z", "float32"), y)
    with pytest.raises(MemoryRuleError, match="needs a C-contiguous array of exactly that many bytes, got 400"):
        dev.attach("y", y[:100])
    with pytest.raises(MemoryRuleError, match="not contiguous"):
        dev.attach("y", np.zeros(2000, np.float32)[::2])


def test_never_written_attached_bytes_are_caught_by_the_sanitizer():
    dev, prog, t = _add_device()
    dev.attach("x", np.ones(1000, np.float32))
    dev.attach("y", np.ones(1000, np.float32), written=False)
    with pytest.raises(UninitializedReadError):
        dev.launch(prog, 3, ["x", "y", "z"], t, sanitize=True)


def test_untimed_replays_note_what_they_store_for_a_later_sanitized_launch(rng):
    dev, prog, t = _add_device()
    dev.write("x", rng.standard_normal(1000).astype(np.float32))
    dev.write("y", rng.standard_normal(1000).astype(np.float32))
    dev.launch(prog, 3, ["x", "y", "z"], t)  # recorded
    written = dev.buffer("z").written
    dev.attach("z", np.zeros(4000, np.uint8), written=False)
    dev.launch(prog, 3, ["x", "y", "z"], t, timing=False)  # replayed
    assert dev.buffer("z").written == written == [(0, 4000)]
    dev.launch(prog, 3, ["z", "z", "x"], t, sanitize=True)  # reads z: written by the replay


def test_a_prepared_launch_binds_again_after_buffers_change(rng):
    dev, prog, t = _add_device()
    pl = dev.prepare(prog, 3, ["x", "y", "z"], t)
    x = rng.standard_normal(1000).astype(np.float32)
    dev.write("x", x)
    dev.write("y", x)
    assert pl().cycles > 0 and pl(timing=False) is None
    assert np.array_equal(dev.read("z", "float32"), x + x)
    dev.free("z")
    dev.alloc("z", 8000)  # bigger, elsewhere
    pl(sanitize=True)
    assert np.array_equal(dev.read("z", "float32", (1000,)), x + x)
    with pytest.raises(LaunchError, match="lacks argument"):
        dev.prepare(prog, 3, {"x": "x"}, t)


def _ub(dev: Device) -> np.ndarray:
    return dev._onchip["aiv"].array("UB").copy()  # what the cores' UB holds after the launch


@pytest.mark.parametrize("n, block_dim, buffers, bind", [
    (30000 + 17, 3, 2, ["x", "y", "z"]),   # many tiles, a tail, a split lockstep group
    (12288, 4, 1, ["x", "y", "z"]),         # single-buffered, whole tiles
    (9000, 3, 2, ["x", "y", "x"]),          # in place: the result goes to an input (never forwarded)
    (9000, 2, 2, ["x", "x", "z"]),          # one buffer read as both operands
])
def test_forwarded_replays_leave_gm_and_ub_as_the_full_model_does(n, block_dim, buffers, bind, rng):
    """Forwarding (loads and stores folded into the vector step) changes no byte of GM or of UB: replays on new
    data against a device that runs the full model."""
    prog = vector_add.build(buffer_num=buffers)
    t = vector_add.tiling(n, TINY, block_dim, buffer_num=buffers)
    warm = Device(TINY)
    for name in ("x", "y", "z"):
        warm.alloc(name, n * 4)
    first = True
    for _ in range(3):
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        fresh = Device(TINY)
        for dev in (warm, fresh):
            for name, arr in (("x", x), ("y", y), ("z", np.zeros(n, np.float32))):
                if name in dev.gm:
                    dev.write(name, arr)
                else:
                    dev.upload(name, arr)
            dev.launch(prog, block_dim, bind, t, timing=dev is fresh or first)
        first = False
        for name in ("x", "y", "z"):
            assert np.array_equal(warm.read(name, "float32"), fresh.read(name, "float32"))
        assert np.array_equal(_ub(warm), _ub(fresh))
    (rep,) = warm._replays._entries.values()
    if bind == ["x", "y", "z"]:  # tiles before the last ones: one step instead of load, load, add, store
        assert len(rep.steps) <= len(rep.actions) - 3 * (len(rep.actions) // 4 - buffers * block_dim)


def test_call_io_attaches_inputs_gives_fresh_results_and_lets_the_inputs_go(rng):
    from simulator.hostio import CallIO

    dev, prog, t = _add_device()
    io = CallIO(dev, [("x", True), ("y", False)], ["z"], [("z", "float32", (1000,), 0, True)])
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    io.begin([x, y])
    assert np.shares_memory(dev.buffer("x").data, x) and not np.shares_memory(dev.buffer("y").data, y)
    dev.launch(prog, 3, ["x", "y", "z"], t, sanitize=True)  # inputs count as written, the result as not yet
    io.release()
    (z,) = io.results()
    assert np.array_equal(z, x + y) and not np.shares_memory(dev.buffer("x").data, x)
    assert not dev.buffer("x").data.any() and dev.buffer("x").written == []
    io.begin([y, x])
    dev.launch(prog, 3, ["x", "y", "z"], t, timing=False)
    io.release()
    assert np.array_equal(io.results()[0], x + y) and np.array_equal(z, x + y)  # the earlier result is kept
    assert not io.stale
    dev.alloc("w", 64)
    assert io.stale  # buffers may have moved: make it again
    with dev.call(), pytest.raises(LaunchError, match="inside a kernel call"):
        io.begin([x, y])
