"""Emulator speed: the double-buffered vector add on 16M float32 on the 910b preset, against numpy.

Run:  python benchmarks/bench_simulator.py            (add --repeat N, --n ELEMENTS, --quick)

Measures, in the same run, the wall time of `Device.launch` (inputs already in GM) and of
`np.add(x, y)` on the same arrays (best and median of --repeat runs, after one warm-up
each), and reports their ratio (target: within 3x) and the simulated GM bandwidth as a
fraction of the chip's 1.6 TB/s (target: >= 0.85). A few more reference programs are timed
for context. Prints a table and writes benchmarks/results/bench_simulator.json.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from simulator import Device, chips  # noqa: E402
from simulator.examples import matmul, softmax, vector_add  # noqa: E402
from _report import RESULTS, write_json  # noqa: E402


def _times(fn, repeat):
    fn()  # warm-up: first touch of memory, caches
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_add(n, repeat, buffer_num=2):
    cfg = chips.get("910b")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dev = Device(cfg)
    dev.upload("x", x)
    dev.upload("y", y)
    dev.alloc("z", x.nbytes)
    prog = vector_add.build("float32", buffer_num)
    tiling = vector_add.tiling(n, cfg, cfg.aiv_cores, buffer_num=buffer_num)
    args = {"x": "x", "y": "y", "z": "z"}
    t0 = time.perf_counter()
    res = dev.launch(prog, cfg.aiv_cores, args, tiling)
    cold = time.perf_counter() - t0
    sim = _times(lambda: dev.launch(prog, cfg.aiv_cores, args, tiling), repeat)
    ref = _times(lambda: np.add(x, y), repeat)
    out = np.empty_like(x)
    ref_out = _times(lambda: np.add(x, y, out=out), repeat)
    correct = bool(np.array_equal(dev.read("z", np.float32), x + y))
    return {
        "name": f"vector_add x{buffer_num} {n:,} f32", "elements": n, "block_dim": cfg.aiv_cores,
        "sim_wall_s_best": min(sim), "sim_wall_s_median": statistics.median(sim), "sim_wall_s_cold": cold,
        "numpy_wall_s_best": min(ref), "numpy_wall_s_median": statistics.median(ref),
        "numpy_out_wall_s_best": min(ref_out),
        "ratio_best": min(sim) / min(ref), "ratio_median": statistics.median(sim) / statistics.median(ref),
        "cycles": res.cycles, "sim_time_s": res.time_s, "gm_bandwidth_fraction": res.gm_bandwidth_fraction,
        "gm_bytes": res.gm_bytes, "distinct_streams": res.distinct_streams, "correct": correct,
        "summary": res.summary(),
    }


def bench_other(repeat):
    rows = []
    cfg = chips.get("910b")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4096, 1000)).astype(np.float32)
    dev = Device(cfg)
    holder = {}

    def sm():
        holder["y"], holder["res"] = softmax.run(x, cfg, sanitize=False, device=dev)
    t = _times(sm, repeat)
    r = _times(lambda: softmax.reference(x), repeat)
    rows.append({"name": "softmax 4096x1000 f32", "sim_wall_s_best": min(t), "numpy_wall_s_best": min(r),
                 "ratio_best": min(t) / min(r), "cycles": holder["res"].cycles,
                 "gm_bandwidth_fraction": holder["res"].gm_bandwidth_fraction,
                 "correct": bool(np.allclose(holder["y"], softmax.reference(x), rtol=1e-5, atol=1e-7))})
    a = rng.standard_normal((1024, 1024)).astype(np.float16)
    b = rng.standard_normal((1024, 1024)).astype(np.float16)
    bias = rng.standard_normal(1024).astype(np.float32)

    def mm():
        holder["c"], holder["res"] = matmul.run(a, b, bias, cfg, sanitize=False, device=dev)
    t = _times(mm, repeat)
    r = _times(lambda: matmul.reference(a, b, bias), repeat)
    res = holder["res"]
    tflops = 2 * 1024 ** 3 / res.time_s / 1e12
    rows.append({"name": "matmul+bias+relu 1024^3 f16", "sim_wall_s_best": min(t), "numpy_wall_s_best": min(r),
                 "ratio_best": min(t) / min(r), "cycles": res.cycles, "simulated_tflops": tflops,
                 "gm_bandwidth_fraction": res.gm_bandwidth_fraction,
                 "correct": bool(np.allclose(holder["c"], matmul.reference(a, b, bias), rtol=1e-3, atol=1e-2))})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024, help="vector add elements (default 16M)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="skip the context rows")
    args = ap.parse_args(argv)
    main_row = bench_add(args.n, args.repeat, 2)
    rows = [main_row, bench_add(args.n, max(1, args.repeat // 2), 1)]
    if not args.quick:
        rows += bench_other(max(1, args.repeat // 2))
    print(f"{'benchmark':<32}{'sim wall':>11}{'numpy wall':>12}{'ratio':>8}{'sim cycles':>13}{'GM bw':>8}{'ok':>5}")
    for r in rows:
        print(f"{r['name']:<32}{r['sim_wall_s_best'] * 1e3:>9.1f}ms{r['numpy_wall_s_best'] * 1e3:>10.1f}ms"
              f"{r['ratio_best']:>7.2f}x{r['cycles']:>13,}{r['gm_bandwidth_fraction']:>8.1%}{'yes' if r['correct'] else 'NO':>5}")
    m = main_row
    print()
    print(f"double-buffered add, {m['elements']:,} float32 on 910b ({m['block_dim']} AIV cores):")
    print(f"  emulator launch: best {m['sim_wall_s_best'] * 1e3:.1f} ms, median {m['sim_wall_s_median'] * 1e3:.1f} ms, "
          f"first (cold) {m['sim_wall_s_cold'] * 1e3:.1f} ms")
    print(f"  np.add(x, y):    best {m['numpy_wall_s_best'] * 1e3:.1f} ms, median {m['numpy_wall_s_median'] * 1e3:.1f} ms "
          f"(np.add with out=: best {m['numpy_out_wall_s_best'] * 1e3:.1f} ms)")
    print(f"  ratio: {m['ratio_best']:.2f}x best / {m['ratio_median']:.2f}x median (target <= 3x): "
          f"{'met' if m['ratio_median'] <= 3 else 'MISSED'}")
    print(f"  simulated: {m['cycles']:,} cycles = {m['sim_time_s'] * 1e6:.1f} us; GM bandwidth "
          f"{m['gm_bandwidth_fraction']:.3f} of 1.6 TB/s (target >= 0.85): "
          f"{'met' if m['gm_bandwidth_fraction'] >= 0.85 else 'MISSED'}")
    print()
    print(m["summary"])
    print()
    write_json(RESULTS / "bench_simulator.json", "simulator", {}, rows)


if __name__ == "__main__":
    main()
