"""Warm-call cost: the dispatch overhead of a repeat call and the guard check, on 16-element inputs.

    python benchmarks/bench_dispatch.py [--number 20000] [--repeat 7] [--out benchmarks/results/dispatch.json]

For each kernel, in one process, after a first call compiled it:
- call: `k(*args)`, the whole warm call (bind, key, memory lookup, guard check, hidden inputs, launch);
- launch: `compiled.launch(arrays)`, the reference backend alone on the same (converted) arrays;
- dispatch: `k(*args)` with this artifact's launch replaced by a no-op: what a repeat call costs on top
  of running the kernel, measured directly (not as a difference of two noisy times);
- guards: `compiled.guards.check(fn)` alone (part of dispatch), with the number of guards and lifted arrays.
Times are the minimum over --repeat rounds of the mean of --number calls (timeit's convention: the least
disturbed round), in microseconds. "captured5" reads five captured values (a float, a small array, a
dict entry, an object attribute and a lifted 4 KiB array): the issue's budget is <= 5 us for its guards.
"""
from __future__ import annotations

import argparse
import os
import sys
import timeit

import numpy as np

import pyasc
from _report import RESULTS, write_json
from pyasc.examples import BY_NAME

SCALE = 2.0
TABLE = np.arange(16, dtype=np.float32)
WEIGHTS = np.ones((16, 64), np.float32)  # 4 KiB: lifted to a hidden input
PARAMS = {"bias": np.float32(1.5)}


class Config:
    shift = 0.5


CFG = Config()


def scale(x):
    return x * 2.0


def captured5(x):
    return (x * SCALE + TABLE + PARAMS["bias"] + CFG.shift) @ WEIGHTS


X16 = np.linspace(-1, 1, 16, dtype=np.float32)
CASES = (
    ("scale", scale, (X16,)),
    ("fused_elementwise", BY_NAME["fused_elementwise"].fn, (X16, X16[::-1].copy())),
    ("softmax", BY_NAME["softmax"].fn, (X16.reshape(1, 16),)),
    ("captured5", captured5, (X16,)),
)


def best(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measure(name: str, fn, args: tuple, number: int, repeat: int) -> dict:
    k = pyasc.kernel(fn)
    k(*args)
    compiled = k.compile(*args)
    arrays = [np.asarray(a) for a in args] + compiled.guards.check(k.py_func)
    call = best(lambda: k(*args), number, repeat)
    launch = best(lambda: compiled.launch(arrays), number, repeat)
    guards = best(lambda: compiled.guards.check(k.py_func), number, repeat)
    compiled.launch = lambda arrays: None  # this artifact only: the dispatch path with nothing to run
    try:
        dispatch = best(lambda: k(*args), number, repeat)
    finally:
        del compiled.launch
    return {"kernel": name, "call_us": call, "launch_us": launch, "dispatch_us": dispatch, "guard_us": guards,
            "guards": len(compiled.guards.guards), "lifted": len(compiled.guards.hidden),
            "guard_paths": compiled.guards.describe()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS / "dispatch.json"))
    args = parser.parse_args(argv)
    os.environ["PYASC_CACHE"] = "0"  # warm calls never reach the disk; the first compiles need not fill it
    os.environ.pop("PYASC_DUMP_DIR", None)
    rows = [measure(name, fn, a, args.number, args.repeat) for name, fn, a in CASES]
    print(f"warm call on 16-element inputs, best of {args.repeat} x {args.number} calls (us)")
    print(f"{'kernel':<18} {'call':>8} {'launch':>8} {'dispatch':>9} {'guards':>8}  guarded paths")
    for r in rows:
        print(f"{r['kernel']:<18} {r['call_us']:>8.2f} {r['launch_us']:>8.2f} {r['dispatch_us']:>9.2f} "
              f"{r['guard_us']:>8.2f}  {r['guards']} ({r['lifted']} lifted): {', '.join(r['guard_paths'])}")
    write_json(args.out, "dispatch", {"pyasc_version": pyasc.__version__, "number": args.number,
                                      "repeat": args.repeat}, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
