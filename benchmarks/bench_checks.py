"""What device-side checks cost: simulated cycles of kernels with numpy's data errors checked
(`pyasc.kernel(checks=True)`, the default) and without (`checks=False`), measured in the same run.

    python benchmarks/bench_checks.py [--chip 910b] [--out benchmarks/results/checks.json]

A check is a few vector ops folded into the kernel's status word (frontend/checks.py): a compare of the
indices against the axis size, a min over them, an or into the word, and the word's 4-byte output.
Reported per kernel: cycles with and without checks, the overhead, and the number of checks.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pyasc  # noqa: E402
from _report import RESULTS, write_json  # noqa: E402


def softmax_loss(x, y):
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    dx = np.exp(log_probs)
    dx[np.arange(x.shape[0]), y] -= 1
    return -np.sum(log_probs[np.arange(x.shape[0]), y]) / x.shape[0], dx / x.shape[0]


def embedding(table, ids):
    return table[ids] * 2.0


def int_power(x, e):
    return x ** e


def add_at(grad, ids, d):
    np.add.at(grad, ids, d)
    return grad


def cases(rng: np.random.Generator) -> list[tuple[str, object, tuple]]:
    return [
        ("softmax loss + grad (64x32, labels)", softmax_loss,
         (rng.standard_normal((64, 32)).astype(np.float32), rng.integers(0, 32, 64).astype(np.int32))),
        ("embedding gather (512x64 table, 16 ids)", embedding,
         (rng.standard_normal((512, 64)).astype(np.float32), rng.integers(0, 512, 16).astype(np.int32))),
        ("int ** int tensor (4096)", int_power,
         (rng.integers(1, 4, 4096).astype(np.int32), rng.integers(0, 4, 4096).astype(np.int32))),
        ("np.add.at (64x16, 32 ids)", add_at,
         (np.zeros((64, 16), np.float32), rng.integers(0, 64, 32).astype(np.int32),
          rng.standard_normal((32, 16)).astype(np.float32))),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="910b")
    ap.add_argument("--out", default=str(RESULTS / "checks.json"))
    args = ap.parse_args()
    os.environ.setdefault("PYASC_CACHE", "0")
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'kernel':<44}{'checks':>8}{'cycles on':>12}{'cycles off':>12}{'overhead':>10}")
    for label, fn, inputs in cases(rng):
        on = pyasc.kernel(fn, chip=args.chip)
        off = pyasc.kernel(fn, chip=args.chip, checks=False)
        _, p_on = on.profile(*[np.array(a, copy=True) for a in inputs])
        _, p_off = off.profile(*[np.array(a, copy=True) for a in inputs])
        effects = on.compile(*[np.array(a, copy=True) for a in inputs]).effects
        n = len(effects.checks) if effects is not None else 0
        over = p_on.cycles / p_off.cycles - 1
        rows.append({"kernel": label, "checks": n, "cycles_on": p_on.cycles, "cycles_off": p_off.cycles,
                     "overhead": over, "launches_on": p_on.launches, "launches_off": p_off.launches})
        print(f"{label:<44}{n:>8}{p_on.cycles:>12}{p_off.cycles:>12}{over:>10.1%}")
    write_json(args.out, "checks", {"chip": args.chip}, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
