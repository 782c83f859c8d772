"""Warm-call dispatch cost of pytree arguments and method kernels, against the same kernel with flat arguments.

    python benchmarks/bench_pytree.py [--number 20000] [--repeat 7] [--out benchmarks/results/pytree.json]

Every case computes `x * s + t` on 16-element inputs, with `s` a compile-time float and `t` a tensor, passed
as separate arguments (flat), in a dict, a NamedTuple, a dataclass, a list of three dicts (12 leaves), or read
from `self` by a method kernel. "dispatch" is a warm `k(*args)` with the artifact's launch replaced by a no-op
(binding, flattening, the key, the memory lookup and the guard check), as bench_dispatch.py measures it; the
ratio column is dispatch over the flat case's, measured in the same run. Times in microseconds, the minimum
over --repeat rounds of the mean of --number calls.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import timeit
from typing import NamedTuple

import numpy as np

import pyasc
from _report import RESULTS, write_json

X16 = np.linspace(-1, 1, 16, dtype=np.float32)


class ST(NamedTuple):
    s: float
    t: np.ndarray


@dataclasses.dataclass
class STData:
    s: float
    t: np.ndarray


class Affine:
    def __init__(self, s: float, t: np.ndarray):
        self.s, self.t = s, t

    def apply(self, x):
        return x * self.s + self.t


def flat(x, s, t):
    return x * s + t


def in_dict(x, p):
    return x * p["s"] + p["t"]


def in_record(x, p):
    return x * p.s + p.t


def in_list(x, layers):
    for p in layers:
        x = x * p["s"] + p["t"]
    return x


CASES = (
    ("flat", flat, (X16, 2.0, X16)),
    ("dict", in_dict, (X16, {"s": 2.0, "t": X16})),
    ("namedtuple", in_record, (X16, ST(2.0, X16))),
    ("dataclass", in_record, (X16, STData(2.0, X16))),
    ("list_of_3_dicts", in_list, (X16, [{"s": 2.0, "t": X16} for _ in range(3)])),
    ("method_self", Affine(2.0, X16).apply, (X16,)),
)


def best(fn, number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def measure(name: str, fn, args: tuple, number: int, repeat: int) -> dict:
    k = pyasc.kernel(fn, chip="tiny")
    k(*args)
    compiled = k.compile(*args)
    compiled.launch = lambda arrays: None  # this artifact only: the dispatch path with nothing to run
    dispatch = best(lambda: k(*args), number, repeat)
    return {"case": name, "dispatch_us": dispatch, "tensor_inputs": len(compiled.tensor_params),
            "hidden_inputs": len(compiled.guards.hidden), "signature": compiled.signature}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", default=str(RESULTS / "pytree.json"))
    args = parser.parse_args(argv)
    os.environ["PYASC_CACHE"] = "0"  # warm calls never reach the disk
    os.environ.pop("PYASC_DUMP_DIR", None)
    rows = [measure(name, fn, a, args.number, args.repeat) for name, fn, a in CASES]
    base = rows[0]["dispatch_us"]
    for r in rows:
        r["ratio_to_flat"] = r["dispatch_us"] / base
    print(f"warm-call dispatch, best of {args.repeat} x {args.number} calls (us)")
    print(f"{'case':<16} {'dispatch':>9} {'x flat':>7}  signature")
    for r in rows:
        print(f"{r['case']:<16} {r['dispatch_us']:>9.2f} {r['ratio_to_flat']:>7.2f}  {r['signature']}")
    write_json(args.out, "pytree", {"pyasc_version": pyasc.__version__, "number": args.number,
                                    "repeat": args.repeat}, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
