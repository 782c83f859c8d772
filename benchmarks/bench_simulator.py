"""Emulator fidelity and speed, in one run: the 6144^3 GEMM against the public figure, the 16M double-buffered
add against HBM and numpy, the fixed cost of a tiny launch (now and at a baseline commit), the sanitizer's
time and memory, and the mutation catch rate.

Run:  python benchmarks/bench_simulator.py        (--quick: smaller GEMM and add; --baseline REV; --repeat N)

Targets (issue 9): 6144^3 fp16 GEMM within +-15% of 1.506 ms; 16M add >= 0.93 of 1.6 TB/s and <= 2.5x the
wall time of np.add; tiny-launch fixed cost <= 50 us; sanitizer <= 10x a plain launch at 1M elements and
<= 4 bytes of shadow per GM byte touched; mutation catch rate >= 95% of harmful mutants. Prints a table and
writes benchmarks/results/bench_simulator.json.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from simulator import UB, Device, Program, chips, mutate, sanitizer  # noqa: E402
from simulator.examples import gemm, vector_add  # noqa: E402
from _report import RESULTS, write_json  # noqa: E402

PUBLIC_GEMM_MS = {1536: 0.0388, 3072: 0.2067, 6144: 1.5060, 7680: 3.1680}  # 24-core A3, fp16 in, fp32 out
BASELINE = "ef62409"  # the emulator before issue 9


def _best(fn, repeat):
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_gemm(n):
    cfg = chips.get("910b")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float16)
    bt = rng.standard_normal((n, n)).astype(np.float16)
    t0 = time.perf_counter()
    c, res = gemm.run(a, bt, cfg, grid=(4, 6), base=(128, 256, 64, 4), sanitize=False)
    wall = time.perf_counter() - t0
    rows = np.random.default_rng(1).integers(0, n, 8)
    ref = a[rows].astype(np.float32) @ bt.astype(np.float32).T
    public = PUBLIC_GEMM_MS.get(n)
    return {"name": f"gemm {n}^3 fp16->fp32", "n": n, "sim_ms": res.time_s * 1e3, "public_ms": public,
            "ratio_to_public": res.time_s * 1e3 / public if public else None, "wall_s": wall,
            "cube_utilisation": res.utilisation("M"), "mte2_utilisation": res.utilisation("MTE2"),
            "l2_hit_fraction": res.l2_hit_bytes / res.gm_read_bytes, "cycles": res.cycles,
            "tflops": 2 * n ** 3 / res.time_s / 1e12,
            "correct": bool(np.allclose(c[rows], ref, rtol=2e-3, atol=2e-2))}


def bench_add(n, repeat):
    cfg = chips.get("910b")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dev = Device(cfg)
    dev.upload("x", x)
    dev.upload("y", y)
    dev.alloc("z", x.nbytes)
    prog = vector_add.build("float32", 2)
    t = vector_add.tiling(n, cfg, cfg.aiv_cores)
    args = ["x", "y", "z"]
    t0 = time.perf_counter()
    res = dev.launch(prog, cfg.aiv_cores, args, t)
    cold = time.perf_counter() - t0

    def fresh():
        dev._replays._entries.clear()  # a launch not seen before: decode cached, no replay
        dev.launch(prog, cfg.aiv_cores, args, t)

    first = _best(fresh, repeat)
    again = _best(lambda: dev.launch(prog, cfg.aiv_cores, args, t), repeat)
    ref = _best(lambda: np.add(x, y), repeat)
    correct = bool(np.array_equal(dev.read("z", np.float32), x + y))
    return {"name": f"vector_add x2 {n:,} f32", "elements": n, "cold_s": cold,
            "fresh_s": statistics.median(first), "repeat_s": statistics.median(again),
            "numpy_s": statistics.median(ref), "ratio_fresh": statistics.median(first) / statistics.median(ref),
            "ratio_repeat": statistics.median(again) / statistics.median(ref),
            "gm_bandwidth_fraction": res.gm_bandwidth_fraction, "cycles": res.cycles, "sim_us": res.time_s * 1e6,
            "correct": correct, "summary": res.summary()}


TINY_SCRIPT = r"""
import sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
from simulator import Device, Program, UB
dev = Device("tiny")
dev.upload("x", np.arange(64, dtype=np.float32)); dev.alloc("y", 256)
def prog(extra):
    p = Program("tiny_launch", "aiv", params=["x", "y"])
    p.copy(UB(0), p.gm("x"), "float32", burst=64)
    p.set_flag("MTE2", "V", 0); p.wait_flag("MTE2", "V", 0)
    for _ in range(extra):
        p.vscalar("mul", UB(0), UB(0), 2.0, 64, "float32")
    p.set_flag("V", "MTE3", 0); p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("y"), UB(0), "float32", burst=64)
    return p
fresh = "--fresh" in sys.argv
def timed(p, n):
    dev.launch(p, 1, ["x", "y"])
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            if fresh and hasattr(dev, "_replays"):
                dev._replays._entries.clear()
            dev.launch(p, 1, ["x", "y"])
        best = min(best, (time.perf_counter() - t0) / n)
    return best
sizes = [0, 100, 1600]
times = [timed(prog(k), n) for k, n in zip(sizes, (200, 10, 2))]
n_instr = [len(prog(k).instructions) for k in sizes]
# cost per instruction of a 108- and of a 1608-instruction program: equal when growth is linear
print(times[0], times[1] / n_instr[1], times[2] / n_instr[2])
"""


def bench_tiny(baseline):
    """Per variant: the wall time of launching the tiny program (8 instructions), and the wall time per
    instruction of 108- and 1608-instruction programs (superlinear growth shows as a rise)."""
    def measure(root, extra=()):
        out = subprocess.run([sys.executable, "-c", TINY_SCRIPT, root, *extra], capture_output=True, text=True,
                             timeout=600, check=True).stdout.split()
        return dict(zip(("tiny_s", "per_instr_108_s", "per_instr_1608_s"), map(float, out)))

    rows = {"now (repeat launch)": measure(ROOT), "now (first launch)": measure(ROOT, ("--fresh",))}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tar = subprocess.run(["git", "-C", ROOT, "archive", baseline, "simulator"], capture_output=True,
                                 check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=tar, check=True)
            rows[f"baseline {baseline}"] = measure(tmp)
        except (subprocess.CalledProcessError, FileNotFoundError) as e:
            rows[f"baseline {baseline}"] = {"error": str(e)}
    return rows


def bench_sanitizer(n, repeat):
    cfg = chips.get("910b")
    x = np.random.default_rng(2).standard_normal(n).astype(np.float32)
    prog = vector_add.build("float32", 2)
    t = vector_add.tiling(n, cfg, cfg.aiv_cores)
    dev = Device(cfg)
    dev.upload("x", x)
    dev.upload("y", x)
    dev.alloc("z", x.nbytes)
    made = []
    real = sanitizer.make

    def keep(*a, **k):
        s = real(*a, **k)
        made.append(s)
        return s

    def plain():
        dev._replays._entries.clear()
        dev.launch(prog, cfg.aiv_cores, ["x", "y", "z"], t)

    def sanitized():
        dev.launch(prog, cfg.aiv_cores, ["x", "y", "z"], t, sanitize=True)

    p = statistics.median(_best(plain, repeat))
    s = statistics.median(_best(sanitized, repeat))
    sanitizer.make = keep
    try:
        sanitized()
    finally:
        sanitizer.make = real
    shadow = made[-1].shadow_bytes
    touched = 3 * x.nbytes
    return {"elements": n, "plain_s": p, "sanitized_s": s, "time_ratio": s / p,
            "gm_shadow_bytes_per_byte": shadow["gm"] / touched,
            "all_shadow_bytes_per_byte": sum(shadow.values()) / touched, "shadow": shadow}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3072^3 GEMM and a 4M add (the targets are for 6144^3, 16M)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--baseline", default=BASELINE, help="git revision to measure the tiny-launch cost of")
    ap.add_argument("--seeds", type=int, default=12, help="randomly ordered runs per mutant")
    args = ap.parse_args(argv)
    n_gemm, n_add = (3072, 4 << 20) if args.quick else (6144, 16 << 20)

    add = bench_add(n_add, args.repeat)
    tiny = bench_tiny(args.baseline)
    san = bench_sanitizer(1 << 20, args.repeat)
    mut = mutate.run_cases(mutate.example_cases(np.random.default_rng(0)), seeds=args.seeds)
    gem = bench_gemm(n_gemm)

    print(f"{'measure':<46}{'value':>16}  target")
    g_ok = gem["ratio_to_public"] is not None and abs(gem["ratio_to_public"] - 1) <= 0.15
    print(f"{'GEMM %d^3: simulated ms (public %.3f)' % (n_gemm, gem['public_ms']):<46}{gem['sim_ms']:>16.4f}  "
          f"+-15%: ratio {gem['ratio_to_public']:.3f} {'met' if g_ok else 'MISSED'}")
    print(f"{'  wall time to simulate it, s':<46}{gem['wall_s']:>16.1f}")
    print(f"{'  cube / MTE2 utilisation, L2 hit fraction':<46}{gem['cube_utilisation']:>9.3f} / "
          f"{gem['mte2_utilisation']:.3f} / {gem['l2_hit_fraction']:.3f}")
    bw_ok = add["gm_bandwidth_fraction"] >= 0.93
    print(f"{'add %s: GM bandwidth fraction' % f'{n_add:,}':<46}{add['gm_bandwidth_fraction']:>16.3f}  "
          f">= 0.93 {'met' if bw_ok else 'MISSED'}")
    for key, label in (("ratio_repeat", "repeat launch"), ("ratio_fresh", "first launch of these args")):
        ok = add[key] <= 2.5
        print(f"{'  wall time / np.add, ' + label:<46}{add[key]:>16.2f}  <= 2.5 {'met' if ok else 'MISSED'}")
    for name, row in tiny.items():
        if "error" in row:
            print(f"{'tiny launch, ' + name:<46}{'n/a':>16}  ({row['error'][:40]})")
            continue
        ok = row["tiny_s"] <= 50e-6
        print(f"{'tiny launch, ' + name + ': wall us':<46}{row['tiny_s'] * 1e6:>16.1f}  <= 50 "
              f"{'met' if ok else 'MISSED'}")
        lin = row["per_instr_1608_s"] < 1.5 * row["per_instr_108_s"]
        print(f"{'  us per instruction at 108 / 1608 instructions':<46}{row['per_instr_108_s'] * 1e6:>9.2f} / "
              f"{row['per_instr_1608_s'] * 1e6:.2f}  linear: {'yes' if lin else 'NO'}")
    print(f"{'sanitizer at 1M: time / plain launch':<46}{san['time_ratio']:>16.2f}  <= 10 "
          f"{'met' if san['time_ratio'] <= 10 else 'MISSED'}")
    print(f"{'  GM shadow bytes per GM byte touched':<46}{san['gm_shadow_bytes_per_byte']:>16.2f}  <= 4 "
          f"{'met' if san['gm_shadow_bytes_per_byte'] <= 4 else 'MISSED'} (all shadow: "
          f"{san['all_shadow_bytes_per_byte']:.2f})")
    print(f"{'mutation: caught / harmful (of %d mutants)' % mut['mutants']:<46}{mut['caught']:>10} / "
          f"{mut['harmful']:<4}  >= 95%: {mut['catch_rate']:.1%} {'met' if mut['catch_rate'] >= 0.95 else 'MISSED'}")
    for m in mut["missed"]:
        print(f"    missed: {m}")
    print(f"    caught but harmless in every schedule tried: {len(mut['false_alarms'])}")
    print()
    print(add["summary"])
    write_json(RESULTS / "bench_simulator.json", "simulator", {"quick": args.quick, "seeds": args.seeds},
               {"gemm": gem, "add": {k: v for k, v in add.items() if k != "summary"}, "tiny_launch": tiny,
                "sanitizer": san, "mutation": mut})


if __name__ == "__main__":
    main()
