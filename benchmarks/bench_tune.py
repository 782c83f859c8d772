"""Autotuning: the cost model's predicted cycles against the emulator's for a matmul's and a softmax's top
candidates, and the wall time of a tuning run on 1 and on 2 worker processes.

    python benchmarks/bench_tune.py [--quick] [--top-k 8] [--workers 1 2] [--ray]

Default: a 1024x1024x1024 float16 matmul and an 8192x2048 float32 softmax on "910b" (a matmul candidate takes
seconds to emulate, which is what tuning on several workers is for); --quick: a 64^3 matmul and a 100x64 softmax
on "tiny". Every run tunes from scratch (its own empty cache folder). Wall time covers compiling the candidates
here (serial) and emulating them on the workers (parallel). Prints the tables, writes JSON. Timings are
wall-clock on a shared machine: compare the ratio from one run.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import RESULTS, write_json  # noqa: E402

import pyasc  # noqa: E402


def matmul(a, b):
    return a @ b


def softmax(x):
    return pyasc.softmax(x, axis=-1)


def cases(quick: bool) -> list[tuple[str, object, tuple[np.ndarray, ...], str]]:
    rng = np.random.default_rng(0)
    if quick:
        return [("matmul 64x64x64 f16", matmul, (rng.random((64, 64)).astype(np.float16),) * 2, "tiny"),
                ("softmax 100x64 f32", softmax, (rng.random((100, 64)).astype(np.float32),), "tiny")]
    n = 1024
    return [(f"matmul {n}x{n}x{n} f16", matmul, (rng.random((n, n)).astype(np.float16),) * 2, "910b"),
            ("softmax 8192x2048 f32", softmax, (rng.random((8192, 2048)).astype(np.float32),), "910b")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--top-k", type=int, default=8)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--ray", action="store_true", help="also tune on a local Ray instance (needs the extra)")
    args = ap.parse_args()
    os.environ["PYASC_CACHE"] = "1"
    rows, timings = [], []
    for name, fn, inputs, chip in cases(args.quick):
        runs = [("process", w) for w in args.workers] + ([("ray", 2)] if args.ray else [])
        first = None
        for executor, workers in runs:
            with tempfile.TemporaryDirectory(prefix="pyasc-bench-tune-") as folder:
                os.environ["PYASC_CACHE_DIR"] = folder
                k = pyasc.kernel(fn, chip=chip)
                r = k.tune(*inputs, top_k=args.top_k, executor=executor, workers=workers, verbose=False)
            timings.append({"case": name, "executor": r.executor, "workers": workers, "wall_s": r.seconds,
                            "compile_s": r.compile_seconds, "emulator_s": r.emulator_seconds, "runs": r.jobs})
            if first is None:
                first = r
                print(f"\n== {name} on {chip}, top {args.top_k}")
                print(r.table())
                rows.append({"case": name, "chip": chip, **r.to_json()})
    print(f"\n{'case':<26}{'executor':<34}{'runs':>5}{'wall s':>9}{'compile s':>11}{'emulate s':>11}"
          f"{'vs 1 worker':>13}")
    for t in timings:
        base = next(b for b in timings if b["case"] == t["case"])
        print(f"{t['case']:<26}{t['executor']:<34}{t['runs']:>5}{t['wall_s']:>9.1f}{t['compile_s']:>11.1f}"
              f"{t['emulator_s']:>11.1f}{base['wall_s'] / t['wall_s']:>12.2f}x")
    write_json(RESULTS / "bench_tune.json", "bench_tune", {"quick": args.quick, "top_k": args.top_k},
               {"tables": rows, "timings": timings})


if __name__ == "__main__":
    main()
