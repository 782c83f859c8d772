"""Mutation test: the sanitizer catches the harmful synchronisation bugs seeded into the reference programs."""
import numpy as np

from simulator import Device, chips, isa, mutate
from simulator.examples import vector_add


def test_the_sanitizer_catches_at_least_95_percent_of_harmful_mutants():
    report = mutate.run_cases(mutate.example_cases(np.random.default_rng(0)), seeds=4)
    assert report["mutants"] > 100 and report["harmful"] > 100
    assert report["catch_rate"] >= 0.95, report["missed"]
    kinds = report["by_kind"]
    for kind in ("drop a wait", "drop a set", "move across a flag", "collapse event ids"):
        assert kinds[kind]["harmful"] > 0 and kinds[kind]["caught"] == kinds[kind]["harmful"], (kind, report["missed"])
    # what it misses: buffers laid over each other on one pipe, written in program order: wrong results on
    # every schedule, but not a race a flag could fix
    assert all(": overlap buffers:" in m for m in report["missed"])


def test_a_randomly_ordered_run_shows_what_an_early_set_breaks():
    cfg = chips.get("tiny")
    x = np.arange(1300, dtype=np.float32)
    t = vector_add.tiling(x.size, cfg, 2, tile=256)
    prog = vector_add.build()
    body = list(prog.instructions)
    k = next(k for k, i in enumerate(body) if isinstance(i, isa.SetFlag) and (i.src, i.dst) == ("MTE2", "V"))
    body[k - 1], body[k] = body[k], body[k - 1]   # "inputs loaded" before the load of y
    early = prog.with_instructions(body)

    def run(p, seed):
        dev = Device(cfg)
        dev.upload("x", x)
        dev.upload("y", x)
        dev.alloc("z", x.nbytes)
        dev.launch(p, 2, ["x", "y", "z"], t, schedule_seed=seed)
        return dev.read("z", np.float32)

    for seed in range(6):
        assert np.array_equal(run(prog, seed), 2 * x)  # the correct program is schedule independent
    # now the add may read y before it arrives: the lockstep order happens to work, some other order does not
    assert np.array_equal(_lockstep(early, cfg, x, t), 2 * x)
    assert any(not np.array_equal(run(early, seed), 2 * x) for seed in range(12))


def _lockstep(p, cfg, x, t):
    dev = Device(cfg)
    dev.upload("x", x)
    dev.upload("y", x)
    dev.alloc("z", x.nbytes)
    dev.launch(p, 2, ["x", "y", "z"], t)
    return dev.read("z", np.float32)


def test_randomly_ordered_runs_are_not_sanitized_and_report_hangs():
    import pytest
    from simulator import DeadlockError, LaunchError, Program, UB
    dev = Device("tiny")
    p = Program("hang", "aiv")
    p.wait_flag("V", "MTE2", 0)
    p.vdup(UB(0), 1.0, 8, "float32")
    with pytest.raises(LaunchError, match="a randomly ordered run .* cannot be sanitized"):
        dev.launch(p, 1, sanitize=True, schedule_seed=0)
    with pytest.raises(DeadlockError, match="deadlock in a randomly ordered run: no core can issue and no pipe can run"):
        dev.launch(p, 1, schedule_seed=0)
