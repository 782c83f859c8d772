"""Runtime loops whose body is one vector kernel: simulated time, launches and wall clock per call.

    python benchmarks/bench_device_loops.py [--chip 910b] [--quick] [--out benchmarks/results/bench_device_loops.json]

Rows: `x = x * 0.5 + 1.0` for 2000 iterations on 64 float32 elements and for 100 iterations on 1M, and a
row-wise step (`x = softmax(x * w) * 3`) for 100 iterations on 256 x 1024 float32; the trip count is a 0-d
tensor. Per row: the launches and simulated microseconds of one call (`kernel.profile`), the wall time of
the first call with a trip count not run before (after a warm-up call with 2 iterations) and of a repeat
call, and numpy's wall time for the same loop. Run it on two checkouts to compare before and after a change
(it imports the pyasc of the checkout it is in). Prints a table, writes JSON. Timings are wall-clock on a
shared machine: compare ratios from one run.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout this script is in, not an install
from _report import RESULTS, write_json  # noqa: E402

import pyasc  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the loops as the tests write them
from test_device_loops import halve_and_add, normalise as softmax_step  # noqa: E402


def _softmax_np(x, w, n):
    for _ in range(n):
        z = x * w
        e = np.exp(z - z.max(-1, keepdims=True))
        x = e / e.sum(-1, keepdims=True) * 3.0
    return x


def _row(name: str, fn, ref, tensors: list[np.ndarray], iters: int, chip: str) -> dict:
    k = pyasc.kernel(chip=chip)(fn)
    n = np.array(iters, np.int32)
    k(*tensors, np.array(2, np.int32))  # compiled and warm
    t0 = time.perf_counter()
    out = k(*tensors, n)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    k(*tensors, n)
    again = time.perf_counter() - t0
    t0 = time.perf_counter()
    want = ref(*tensors, iters)
    numpy_s = time.perf_counter() - t0
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    _, prof = k.profile(*tensors, n)
    launch = k.compile(*tensors, n).stages["launch"]
    where = "device" if "on the device" in launch else "host"
    return {"name": name, "loop": where, "launches": prof.launches, "simulated_us": prof.time_s * 1e6,
            "first_call_s": first, "repeat_call_s": again, "numpy_s": numpy_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="910b")
    ap.add_argument("--quick", action="store_true", help="only the 64-element row")
    ap.add_argument("--out", default=str(RESULTS / "bench_device_loops.json"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = [_row("x*0.5+1, 2000 iters, 64 f32", halve_and_add, halve_and_add,
                 [rng.standard_normal(64).astype(np.float32)], 2000, args.chip)]
    if not args.quick:
        rows.append(_row("x*0.5+1, 100 iters, 1M f32", halve_and_add, halve_and_add,
                         [rng.standard_normal(1 << 20).astype(np.float32)], 100, args.chip))
        x = rng.standard_normal((256, 1024)).astype(np.float32)
        w = rng.uniform(0.5, 1.5, (256, 1024)).astype(np.float32)
        rows.append(_row("softmax step, 100 iters, 256x1024 f32", softmax_step, _softmax_np, [x, w], 100, args.chip))
    print(f"{'loop':<40}{'runs on':>8}{'launches':>10}{'sim us':>12}{'first call s':>14}{'repeat s':>10}"
          f"{'numpy s':>10}")
    for r in rows:
        print(f"{r['name']:<40}{r['loop']:>8}{r['launches']:>10}{r['simulated_us']:>12.1f}{r['first_call_s']:>14.3f}"
              f"{r['repeat_call_s']:>10.3f}{r['numpy_s']:>10.4f}")
    write_json(args.out, "bench_device_loops", {"chip": args.chip, "quick": args.quick}, {"rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
