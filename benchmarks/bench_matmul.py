"""Cube efficiency of generated matmul kernels on the 910b preset: simulated time against the cube peak.

Run:  python benchmarks/bench_matmul.py            (--quick: 1024^3 shapes only, for a smoke run)

Kernels: relu(a @ b + bias) cast to float32 at 4096^3 (float16 in; one fused launch), and a plain
6144^3 float16 GEMM. For each: simulated time, the fraction of the cube peak (24 cores x 4096 fp16
MAC/cycle x 2 FLOP at 1.8 GHz), the GM bytes moved against the minimum (each operand read once, the
result written once), per-pipe busy fractions of the busiest core (where the time goes), the tiling
the cost model chose, its predicted cycles, and the wall time of the run. The emulator's L2 serves the
re-reads of A and B panels (the L2 hit fraction is reported), so the cube, not HBM, is the limit; the
tiling moves L1 chunks of several L0 steps so that MTE2 keeps up with it.
Prints a table and writes benchmarks/results/bench_matmul.json.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pyasc  # noqa: E402
from simulator import chips  # noqa: E402
from _report import RESULTS, write_json  # noqa: E402


#: the templates of a launch that runs the product (alone, or with its epilogue in one mixed launch)
CUBE_TEMPLATES = ("matmul", "mixed")


def bias_relu_f32(a, b, bias):
    return pyasc.relu(pyasc.matmul(a, b) + bias).astype(np.float32)


def gemm(a, b):
    return pyasc.matmul(a, b)


def cube_peak_flops(chip) -> float:
    return chip.aic_cores * 4096 * 2 * chip.clock_hz


def bench(name, fn, args, flops, chip_name="910b"):
    chip = chips.get(chip_name)
    k = pyasc.kernel(fn, chip=chip_name)
    t0 = time.perf_counter()
    art = k.compile(*args)
    t1 = time.perf_counter()
    _, prof = k.profile(*args)
    t2 = time.perf_counter()
    minimal = sum(a.nbytes for a in args) + int(np.prod(art.graph.outputs[0].type.shape)) * \
        art.graph.outputs[0].type.itemsize
    cube = [dk for dk in art.kernels if dk.template in CUBE_TEMPLATES][0]
    launch = [p for p in prof.per_launch if art.kernels[p.kernel].template in CUBE_TEMPLATES][0].result
    core0 = {pipe: c / launch.cycles for pipe, c in launch.core_pipe_busy[0].items()} if launch.core_pipe_busy \
        else {}
    return {
        "kernel": name, "launches": prof.launches, "time_us": prof.time_s * 1e6, "cycles": prof.cycles,
        "peak_fraction": flops / prof.time_s / cube_peak_flops(chip),
        "gm_bytes": prof.gm_bytes, "gm_vs_minimal": prof.gm_bytes / minimal,
        "gm_bandwidth_fraction": prof.gm_bandwidth_fraction,
        "l2_hit_fraction": launch.l2_hit_bytes / max(1, launch.gm_read_bytes),
        "busy_core0": {p: round(v, 3) for p, v in sorted(core0.items())},
        "tiling": cube.tiling.params.describe(), "blocks": cube.tiling.score.blocks,
        "predicted_cycles": cube.tiling.score.cycles, "cube_cycles": launch.cycles, "compile_s": t1 - t0,
        "run_wall_s": t2 - t1,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1024^3 shapes only")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    n1, n2 = (1024, 1024) if args.quick else (4096, 6144)
    rows = []
    a = rng.integers(-2, 3, (n1, n1)).astype(np.float16)
    b = rng.integers(-2, 3, (n1, n1)).astype(np.float16)
    bias = rng.integers(-2, 3, n1).astype(np.float16)
    rows.append(bench(f"relu(a@b+bias)->f32 {n1}^3 fp16", bias_relu_f32, (a, b, bias), 2.0 * n1 ** 3))
    a = rng.integers(-2, 3, (n2, n2)).astype(np.float16)
    b = rng.integers(-2, 3, (n2, n2)).astype(np.float16)
    rows.append(bench(f"gemm {n2}^3 fp16", gemm, (a, b), 2.0 * n2 ** 3))
    print(f"{'kernel':34} {'launches':>8} {'time us':>10} {'peak':>6} {'GM/min':>7} {'GM bw':>6}  tiling")
    for r in rows:
        print(f"{r['kernel']:34} {r['launches']:>8} {r['time_us']:>10.1f} {r['peak_fraction']:>6.3f} "
              f"{r['gm_vs_minimal']:>7.2f} {r['gm_bandwidth_fraction']:>6.2f}  {r['tiling']} on {r['blocks']} cores")
        print(f"{'':34} busy (core 0): {r['busy_core0']}; L2 hits {r['l2_hit_fraction']:.2f}; predicted "
              f"{r['predicted_cycles']:.0f} cycles, simulated {r['cube_cycles']} (cube launch); "
              f"compile {r['compile_s']:.1f} s, run {r['run_wall_s']:.1f} s")
    write_json(RESULTS / "bench_matmul.json", "bench_matmul", {"chip": "910b", "quick": args.quick}, rows)


if __name__ == "__main__":
    main()
