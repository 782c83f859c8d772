"""Simulated efficiency of generated kernels on 910b: time against the roofline, and what each feature buys.

    python benchmarks/sim_efficiency.py [--small]

Roofline = max(minimal GM bytes / 1.6 TB/s, FLOPs / cube peak). For each kernel: its simulated time and
fraction of the roofline, the same kernel at opt_level 0, with buffer_num 1 and with cores=1 (what fusion,
double buffering and multi-core each buy), and the emulator's wall time against numpy's eager `py_func` on
the same inputs. Then the cold compile time (median of 10, a fresh kernel each: frontend, optimiser,
codegen and host JIT) of the 10-op elementwise kernel and softmax, and the warm call time of a 16-element
kernel. `--small` shrinks every size (a quick check, not the issue's figures).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import RESULTS, write_json  # noqa: E402

import pyasc  # noqa: E402
from pyasc import examples  # noqa: E402
from simulator import chips  # noqa: E402

CHIP = chips.get("910b")
HBM = CHIP.gm_bytes_per_second
CUBE_PEAK = CHIP.aic_cores * 16 * 16 * 16 * 2 * CHIP.clock_hz   # fp16 FLOP/s


def affine(x, w, b):
    return pyasc.relu(x * w + b)


def softmax(x):
    return pyasc.softmax(x)


def layer_norm(x, w, b):
    return pyasc.layer_norm(x, w, b)


def matmul_bias_relu(a, b, bias):
    return pyasc.relu(a @ b + bias)


def gemm(a, b):
    return a @ b


def _timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def row(name, fn, args, flops=0.0, variants=True):
    k = pyasc.kernel(fn, chip="910b")
    try:
        out, prof = k.profile(*args)
    except Exception as e:  # noqa: BLE001 - a kernel the compiler cannot run yet is reported, not hidden
        return {"kernel": name, "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
    outs = out if isinstance(out, tuple) else (out,)
    minimal = sum(a.nbytes for a in args) + sum(o.nbytes for o in outs)
    roof = max(minimal / HBM, flops / CUBE_PEAK if flops else 0.0)
    _, wall = _timed(k, *args)                      # a warm call
    _, eager = _timed(k.py_func, *args)
    rec = {"kernel": name, "sim_us": prof.time_s * 1e6, "roofline_us": roof * 1e6, "roofline_frac": roof / prof.time_s,
           "gm_bytes": prof.gm_bytes, "minimal_bytes": minimal, "launches": prof.launches,
           "wall_vs_numpy": wall / eager, "tiling": [dk.tiling.params.describe() for dk in k.compile(*args).kernels]}
    if flops:
        rec["cube_peak_frac"] = flops / CUBE_PEAK / prof.time_s
    if variants:
        for label, opts in (("opt0", {"opt_level": 0}), ("bn1", {"buffer_num": 1}), ("cores1", {"cores": 1})):
            try:
                _, p = pyasc.kernel(fn, chip="910b", **opts).profile(*args)
                rec[f"{label}_us"] = p.time_s * 1e6
            except Exception as e:  # noqa: BLE001
                rec[f"{label}_us"] = f"{type(e).__name__}"
    return rec


def cold_compile(example: examples.Example, repeat: int = 10) -> float:
    args = example.make_inputs(np.random.default_rng(0))
    times = []
    for _ in range(repeat):
        k = pyasc.kernel(example.fn, chip="910b")
        t = time.perf_counter()
        k.compile(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def warm_call_us(repeat: int = 2000) -> float:
    k = pyasc.kernel(affine, chip="910b")
    x, w, b = (np.ones(16, np.float32) for _ in range(3))
    k(x, w, b)
    t = time.perf_counter()
    for _ in range(repeat):
        k(x, w, b)
    return (time.perf_counter() - t) / repeat * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--no-matmul", action="store_true",
                    help="leave out the two large matmuls (benchmarks/bench_matmul.py measures them; their "
                         "opt0/bn1/cores1 variants take hours on the emulator)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n = 1 << (20 if args.small else 24)
    side = 1024 if args.small else 4096
    mm = 512 if args.small else 4096
    gm = 768 if args.small else 6144
    x16 = rng.random(n, np.float32)
    sq = rng.random((side, side), np.float32)
    vec = rng.random(side, np.float32)
    rows = [
        row(f"relu(x*w+b) {n >> 20}M f32", affine, (x16, rng.random(n, np.float32), rng.random(n, np.float32))),
        row(f"softmax {side}x{side} f32", softmax, (sq,)),
        row(f"layer_norm {side}x{side} f32", layer_norm, (sq, vec, vec)),
    ]
    if not args.no_matmul:
        rows += [row(f"matmul+bias+relu {mm}^3 fp16->fp32", matmul_bias_relu,
            (rng.random((mm, mm)).astype(np.float16), rng.random((mm, mm)).astype(np.float16),
             rng.random(mm).astype(np.float32)), flops=2.0 * mm ** 3),
        row(f"GEMM {gm}^3 fp16", gemm, (rng.random((gm, gm)).astype(np.float16),
                                        rng.random((gm, gm)).astype(np.float16)), flops=2.0 * gm ** 3,
            variants=False)]
    print(f"simulated efficiency on 910b (HBM {HBM / 1e12:.2f} TB/s, cube peak {CUBE_PEAK / 1e12:.0f} TFLOP/s)")
    head = f"{'kernel':<34}{'sim us':>10}{'roof us':>10}{'of roof':>9}{'opt0 us':>10}{'bn1 us':>10}" \
           f"{'cores1 us':>11}{'wall/np':>9}"
    print(head)
    for r in rows:
        if "error" in r:
            print(f"{r['kernel']:<34}  {r['error'][:100]}")
            continue
        extra = f"  cube {r['cube_peak_frac']:.2f} of peak" if "cube_peak_frac" in r else ""

        def f(v):
            return f"{v:10.1f}" if isinstance(v, float) else f"{str(v):>10}"
        print(f"{r['kernel']:<34}{r['sim_us']:10.1f}{r['roofline_us']:10.1f}{r['roofline_frac']:9.3f}"
              f"{f(r.get('opt0_us', '-'))}{f(r.get('bn1_us', '-'))} {f(r.get('cores1_us', '-'))}"
              f"{r['wall_vs_numpy']:9.2f}{extra}")
    by_name = {e.name: e for e in examples.EXAMPLES}
    compile_ms = {name: cold_compile(by_name[name]) * 1e3 for name in ("fused_elementwise", "softmax")}
    warm = warm_call_us()
    print(f"cold compile (median of 10, fresh kernel, incl. codegen and host JIT): "
          + ", ".join(f"{k} {v:.1f} ms" for k, v in compile_ms.items()))
    print(f"warm call of a 16-element kernel: {warm:.1f} us")
    write_json(RESULTS / "sim_efficiency.json", "sim_efficiency", {"small": args.small, "no_matmul": args.no_matmul},
               {"kernels": rows, "cold_compile_ms": compile_ms, "warm_call_us": warm})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
