"""A GPT-2-style block in plain numpy with a nested dict of weights: cold compile, warm call, simulated time.

    python benchmarks/bench_gpt2_block.py [--chips tiny 910b] [--warm 5] [--out benchmarks/results/gpt2_block.json]

The block is the one tests/test_class_style_models.py checks against numpy (T=16 tokens, C=64, 4 heads,
per-head slices, a captured np.tri causal mask, layer norm by np.mean, a dict-of-dicts weight argument).
"cold" is the first call (compile + run, disk cache off), "warm" the mean of --warm repeat calls (emulator
run included), "simulated" the emulator's time for one call.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import pyasc
from _report import RESULTS, write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the block as the test defines it
from test_class_style_models import C, T, block, make_params  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", nargs="+", default=["tiny", "910b"])
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "gpt2_block.json"))
    args = parser.parse_args(argv)
    os.environ["PYASC_CACHE"] = "0"
    rng = np.random.default_rng(0)
    params = make_params(rng)
    x = rng.standard_normal((T, C)).astype(np.float32)
    rows = []
    for chip in args.chips:
        k = pyasc.kernel(block, chip=chip)
        t0 = time.perf_counter()
        y = k(x, params)
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(args.warm):
            k(x, params)
        warm = (time.perf_counter() - t0) / args.warm
        _, prof = k.profile(x, params)
        err = float(np.abs(y - block(x, params)).max())
        rows.append({"chip": chip, "cold_s": cold, "warm_ms": warm * 1e3, "simulated_us": prof.time_s * 1e6,
                     "cycles": prof.cycles, "launches": prof.launches, "max_abs_err": err})
    print(f"GPT-2-style block, x f32[{T},{C}], dict of 12 weight arrays")
    print(f"{'chip':<6} {'cold s':>7} {'warm ms':>8} {'sim us':>8} {'launches':>8} {'max|err|':>9}")
    for r in rows:
        print(f"{r['chip']:<6} {r['cold_s']:>7.2f} {r['warm_ms']:>8.1f} {r['simulated_us']:>8.1f} "
              f"{r['launches']:>8} {r['max_abs_err']:>9.1e}")
    write_json(args.out, "gpt2_block", {"pyasc_version": pyasc.__version__, "warm": args.warm}, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
