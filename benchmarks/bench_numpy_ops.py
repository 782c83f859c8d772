"""The numpy ops of issue 11 on the emulator: a GPT-2 block in plain numpy, and the data-movement composites.

    python benchmarks/bench_numpy_ops.py [--chip 910b] [--out benchmarks/results/numpy_ops.json]

GPT-2 block (tests/test_gpt2_block_numpy.py: np.split heads, np.tri mask, np.var layer norm, np.hstack):
cold compile (PYASC_CACHE=0: no disk cache), warm call (compiled, emulator run included), simulated time,
launches, and the error against numpy in float64 beside numpy's own float32 error. Joins and pads: simulated
cycles and GM bytes of each composite against an elementwise add of the same output size (a ratio measured in
the same run: how much the decompositions cost over one read and one write).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("PYASC_CACHE", "0")  # cold means cold

import pyasc  # noqa: E402
from _report import RESULTS, write_json  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_gpt2_block_numpy import block  # noqa: E402


def gpt2(chip: str, t: int, d: int) -> dict:
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    args = [w(t, d), 1 + w(d), w(d), w(d, 3 * d), w(3 * d), w(d, d), w(d), 1 + w(d), w(d), w(d, 4 * d), w(4 * d),
            w(4 * d, d), w(d)]
    k = pyasc.kernel(block, chip=chip)
    t0 = time.perf_counter()
    k(*args)
    t1 = time.perf_counter()
    out = k(*args)
    t2 = time.perf_counter()
    _, prof = k.profile(*args)
    ref64 = block(*[a.astype(np.float64) for a in args])
    return {"T": t, "D": d, "heads": 4, "cold_s": t1 - t0, "warm_s": t2 - t1, "simulated_us": prof.time_s * 1e6,
            "launches": prof.launches, "max_abs_err_vs_f64": float(np.abs(out - ref64).max())}


def cat_eq(x, y):
    return np.concatenate([x, y], axis=1)


def cat_uneq(x, y):
    return np.concatenate([x, y[:, :64]], axis=1)


def cat_rows(x, y):
    return np.concatenate([x, y[:100]], axis=0)


def stack12(x, y):
    return np.stack([x * float(i) for i in range(12)])


def pad(x, y):
    return np.pad(x, ((1, 1), (3, 5)))


def split4(x, y):
    return np.split(x, 4, axis=1)


def add(x, y):
    return x + y


def movement(chip: str) -> list[dict]:
    x = np.ones((256, 128), np.float32)
    y = np.ones((256, 128), np.float32)
    rows = []
    base = None
    for fn in (add, cat_eq, cat_uneq, cat_rows, stack12, pad, split4):
        _, prof = pyasc.kernel(fn, chip=chip).profile(x, y)
        if fn is add:
            base = prof.cycles
        rows.append({"case": fn.__name__, "cycles": prof.cycles, "vs_add": prof.cycles / base,
                     "gm_read": prof.gm_read_bytes, "gm_write": prof.gm_write_bytes, "launches": prof.launches})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="910b")
    ap.add_argument("--out", default=str(RESULTS / "numpy_ops.json"))
    a = ap.parse_args()
    blocks = [gpt2(a.chip, 8, 32), gpt2(a.chip, 16, 256)]
    print(f"{'GPT-2 block':14s} {'cold s':>8s} {'warm s':>8s} {'sim us':>8s} {'launches':>8s} {'err vs f64':>10s}")
    for r in blocks:
        print(f"T={r['T']:<3d} D={r['D']:<6d} {r['cold_s']:8.2f} {r['warm_s']:8.3f} {r['simulated_us']:8.1f} "
              f"{r['launches']:8d} {r['max_abs_err_vs_f64']:10.2e}")
    moves = movement(a.chip)
    print(f"\n{'case':10s} {'cycles':>9s} {'x add':>6s} {'GM read':>9s} {'GM write':>9s} {'launches':>8s}")
    for r in moves:
        print(f"{r['case']:10s} {r['cycles']:9.0f} {r['vs_add']:6.2f} {r['gm_read']:9d} {r['gm_write']:9d} "
              f"{r['launches']:8d}")
    write_json(a.out, "numpy_ops", {"chip": a.chip}, {"gpt2_block": blocks, "data_movement": moves})


if __name__ == "__main__":
    main()
