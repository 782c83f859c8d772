"""Decode once and replay: a repeat launch gives the result a fresh run would, on the new data."""
import numpy as np

from simulator import Device, chips
from simulator.decode import decode
from simulator.examples import matmul, vector_add


def _fresh(run):
    """The result of `run(dev)` on a device that never saw the launch before."""
    return run(Device(chips.get("tiny")))


def _add(dev, x, y, block_dim=3):
    for name in ("x", "y", "z"):
        if name in dev.gm:
            dev.free(name)
    dev.upload("x", x)
    dev.upload("y", y)
    dev.alloc("z", x.nbytes)
    res = dev.launch(vector_add.build(), block_dim, ["x", "y", "z"], vector_add.tiling(x.size, dev.chip, block_dim))
    return dev.read("z", np.float32), res


def test_a_program_is_decoded_once_per_chip():
    prog = vector_add.build()
    tiny, big = chips.get("tiny"), chips.get("910b")
    assert decode(prog, tiny) is decode(prog, tiny)
    assert decode(prog, big) is not decode(prog, tiny)
    before = decode(prog, tiny)
    prog.vdup(vector_add.UB(0), 0.0, 8, "float32")  # any change to the program drops its decoded form
    assert decode(prog, tiny) is not before and len(decode(prog, tiny).code) == len(prog)


def test_a_repeat_launch_on_new_data_in_new_buffers_matches_a_fresh_run(rng):
    dev = Device("tiny")
    n = 3000 + 5
    first = rng.standard_normal(n).astype(np.float32)
    z1, r1 = _add(dev, first, first)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    z2, r2 = _add(dev, x, y)  # freed and re-allocated: the same addresses, other buffer objects
    fz, fres = _fresh(lambda d: _add(d, x, y))
    assert np.array_equal(z2, x + y) and np.array_equal(z2, fz)
    assert r2 is not r1 and r2.to_dict() == fres.to_dict()
    assert r2.core_pipe_busy == fres.core_pipe_busy and r2.core_cycles == fres.core_cycles
    r2.pipe_busy["V"] = -1  # a result is the caller's to change
    _, r3 = _add(dev, x, y)
    assert r3.pipe_busy == fres.pipe_busy


def test_other_tiling_or_core_counts_run_afresh(rng):
    dev = Device("tiny")
    x = rng.standard_normal(1000).astype(np.float32)
    for block_dim in (1, 2, 4, 2):
        z, res = _add(dev, x, x, block_dim)
        assert np.array_equal(z, x + x) and res.block_dim == block_dim
        assert res.to_dict() == _fresh(lambda d: _add(d, x, x, block_dim))[1].to_dict()


def test_in_a_kernel_call_a_replay_is_rescheduled_against_the_l2(rng):
    dev = Device(chips.get("tiny").replace(gm_bytes_per_cycle=100.0))  # HBM, not the cores, is the limit
    x = rng.standard_normal(2000).astype(np.float32)
    _, cold = _add(dev, x, x)
    with dev.call():
        dev.launch(vector_add.build(), 3, ["x", "y", "z"], vector_add.tiling(x.size, dev.chip, 3))
        _, warm = _add(dev, x, x)  # re-uploaded inputs are not in L2 (only the lines tiles share hit)
        again = dev.launch(vector_add.build(), 3, ["x", "y", "z"], vector_add.tiling(x.size, dev.chip, 3))
    assert 0 < cold.l2_hit_bytes == warm.l2_hit_bytes < cold.gm_read_bytes // 8
    assert again.l2_hit_bytes == again.gm_read_bytes and again.cycles < cold.cycles


def test_the_cube_path_replays_too(rng):
    a = rng.standard_normal((40, 70)).astype(np.float16)
    b = rng.standard_normal((70, 50)).astype(np.float16)
    bias = rng.standard_normal(50).astype(np.float32)
    dev = Device("tiny")
    matmul.run(a, b, bias, "tiny", sanitize=False, device=dev)
    a2 = rng.standard_normal((40, 70)).astype(np.float16)
    c, res = matmul.run(a2, b, bias, "tiny", sanitize=False, device=dev)
    fc, fres = matmul.run(a2, b, bias, "tiny", sanitize=False)
    assert np.array_equal(c, fc) and res.to_dict() == fres.to_dict()
