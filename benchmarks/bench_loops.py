"""Runtime loops: a power iteration whose trip count is a run-time argument, against the unrolled loop.

    python benchmarks/bench_loops.py [--chip tiny] [--size 64] [--iters 10 100]

For each n: the compile time (a fresh compile, no cache), the host overhead per iteration (wall time of a
call outside the emulator's launches, the marginal cost between the smallest and each n), the emulator's
wall time per launch, and the simulated time of the call. The runtime loop compiles once for every n; the
unrolled kernel (n a compile-time int) compiles once per n, with n copies of the body. Prints a table,
writes JSON. Timings are wall-clock on a shared machine: compare ratios from one run.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import RESULTS, write_json  # noqa: E402

import pyasc  # noqa: E402


def power(A, v, n):
    for _ in range(n):
        v = A @ v
        v = v / pyasc.sqrt((v * v).sum())
    return v


def _timed_call(k, args):
    """(outputs, profile, wall seconds of the call, wall seconds inside the emulator's launches)."""
    art = k.compile(*args)
    runner = art._runner or art._make_runner()
    spent = [0.0]
    inner = type(runner).launch

    def timed(site, blocks, fields):
        t = time.perf_counter()
        try:
            return inner(runner, site, blocks, fields)
        finally:
            spent[0] += time.perf_counter() - t

    runner.launch = timed  # the host code calls back through the instance attribute on each run
    try:
        t0 = time.perf_counter()
        out, prof = k.profile(*args)
        wall = time.perf_counter() - t0
    finally:
        del runner.launch
    return out, prof, wall, spent[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="tiny")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--iters", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--no-unrolled", action="store_true", help="skip the unrolled comparison")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    os.environ["PYASC_CACHE"] = "0"
    rng = np.random.default_rng(0)
    A = rng.uniform(0.1, 1.0, (args.size, args.size)).astype(np.float32)
    v = rng.uniform(0.1, 1.0, args.size).astype(np.float32)

    loop = pyasc.kernel(chip=args.chip)(power)
    t0 = time.perf_counter()
    loop.compile(A, v, np.array(1, np.int32))
    loop_compile = time.perf_counter() - t0
    rows = []
    base = None
    loop(A, v, np.array(1, np.int32))  # warm: the device, its buffers and the JIT-ed host code exist
    for n in sorted(args.iters):
        call = (A, v, np.array(n, np.int32))
        best = None
        for _ in range(args.repeat):  # the least disturbed of a few runs (the machine is shared)
            out, prof, wall, in_launch = _timed_call(loop, call)
            if best is None or wall - in_launch < best[2] - best[3]:
                best = (out, prof, wall, in_launch)
        out, prof, wall, in_launch = best
        np.testing.assert_allclose(out, power(A, v, n), rtol=1e-4, atol=1e-5)
        host = wall - in_launch
        if base is None:
            base = (n, host)
        # the marginal host cost of one more iteration (what the host loop adds), against the smallest n
        per_iter = (host - base[1]) / (n - base[0]) if n != base[0] else float("nan")
        row = {"n": n, "kind": "runtime loop", "compile_s": loop_compile, "call_wall_s": wall,
               "host_overhead_s": host, "host_overhead_per_iteration_s": per_iter,
               "emulator_wall_per_launch_s": in_launch / max(prof.launches, 1), "launches": prof.launches,
               "launches_per_iteration": prof.launches_per_iteration(0), "simulated_s": prof.time_s,
               "cycles": prof.cycles}
        rows.append(row)
        if not args.no_unrolled:
            unrolled = pyasc.kernel(chip=args.chip, unroll_budget=max(4096, n))(power)
            t0 = time.perf_counter()
            unrolled.compile(A, v, n)
            u_compile = time.perf_counter() - t0
            out_u, prof_u = unrolled.profile(A, v, n)
            np.testing.assert_allclose(out_u, out, rtol=1e-5, atol=1e-6)
            rows.append({"n": n, "kind": "unrolled", "compile_s": u_compile, "launches": prof_u.launches,
                         "simulated_s": prof_u.time_s, "cycles": prof_u.cycles})
    assert loop.cache_info().misses == 1, loop.cache_info()

    print(f"power iteration, A {args.size}x{args.size} float32, chip {args.chip} (runtime loop: one compile for "
          "every n)")
    print(f"{'n':>5} {'kind':<13}{'compile s':>10}{'host us/iter':>13}{'emu ms/launch':>14}{'launches':>9}"
          f"{'per iter':>9}{'simulated us':>13}")
    for r in rows:
        host = f"{r['host_overhead_per_iteration_s'] * 1e6:>13.1f}" if "host_overhead_s" in r else f"{'-':>13}"
        host = host.replace("nan", "(base)")
        emu = f"{r['emulator_wall_per_launch_s'] * 1e3:>14.2f}" if "host_overhead_s" in r else f"{'-':>14}"
        per = f"{r['launches_per_iteration']:>9.1f}" if "launches_per_iteration" in r else f"{'-':>9}"
        print(f"{r['n']:>5} {r['kind']:<13}{r['compile_s']:>10.3f}{host}{emu}{r['launches']:>9}{per}"
              f"{r['simulated_s'] * 1e6:>13.2f}")
    write_json(RESULTS / "bench_loops.json", "bench_loops", {"chip": args.chip, "size": args.size,
                                                            "iters": args.iters}, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
