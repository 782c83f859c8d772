"""Wall-clock speed of pyasc against numpy (and jax.jit / numba when installed), measured side by side.

    python benchmarks/bench_speed.py [--quick] [--clock wall|process] [--label TEXT]
                                     [--baseline benchmarks/baselines/bench_speed_before.json]
                                     [--out benchmarks/results/bench_speed.json]

Rows (issue 20's table), each a ratio of two figures measured in this one run:
- warm call of `x + y` on 16 and on 16M float32 elements (best of --repeat rounds of the mean of a few
  calls), against numpy's `x + y` and, where installed, jax.jit and numba;
- warm call of a small model block (layer_norm, matmul, softmax, matmul on 16 x 64) against numpy;
- cold compile + first call of relu(a @ b + bias) at 512^3 float16 (fresh kernel, no disk cache) against a
  20-op elementwise chain's and jax.jit's;
- compile time per op of elementwise chains of 10 ... 1000 ops (the slope between the shortest and the
  longest), and the number of launches the 1000-op chain makes;
- a runtime loop (trip count a 0-d tensor) of 20k iterations of `x * 0.5 + 1.0` on 64 elements against the
  same loop in numpy.
With --baseline (a JSON this script wrote before a change), prints the earlier pyasc figures beside the new.
jax.jit is timed in a process of its own (this script with --peer jax): jax starts threads of its own, which
the process clock would count into pyasc's figures (and which compete with pyasc's wall clock) were jax loaded here.
Timings are wall-clock on a shared machine: compare ratios from one run, never across machines.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout this script is in, not an install
from _report import RESULTS, write_json  # noqa: E402

import pyasc  # noqa: E402

BASELINE = Path(__file__).resolve().parent / "baselines" / "bench_speed_before.json"
CLOCK = time.perf_counter  # --clock process: CPU time of this process (robust on a machine other jobs share)


def add(x, y):
    return x + y


def block(x, g, b, w1, w2):
    h = pyasc.layer_norm(x, g, b)
    return pyasc.softmax(h @ w1) @ w2


def block_np(x, g, b, w1, w2):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    h = (x - mu) / np.sqrt(var + 1e-5) * g + b
    s = h @ w1
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ w2


def mm_bias_relu(a, b, bias):
    return pyasc.relu(a @ b + bias)


def loop(x, n):
    for _ in range(n):
        x = x * 0.5 + 1.0
    return x


def loop_np(x, n):
    for _ in range(n):
        x = x * 0.5 + 1.0
    return x


def best_us(fn: Callable[[], Any], number: int, repeat: int) -> float:
    """timeit's convention: the least disturbed round's mean, in microseconds."""
    fn()
    out = float("inf")
    for _ in range(repeat):
        t0 = CLOCK()
        for _ in range(number):
            fn()
        out = min(out, (CLOCK() - t0) / number)
    return out * 1e6


def chain_module(n_ops: int, folder: Path) -> Callable:
    """A kernel function of `n_ops` elementwise ops written out (not a loop), alternating x * y and x + y."""
    lines = ["def chain(x, y):"]
    lines += [f"    x = x {'*' if i % 2 == 0 else '+'} y" for i in range(n_ops)]
    lines.append("    return x")
    path = folder / f"chain_{n_ops}.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"chain_{n_ops}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.chain


def peers() -> dict[str, Any]:
    """numba, when installed (never required), loaded here; jax.jit, when installed, is timed in a subprocess
    (`jax_figures`): the value "subprocess" only says it is there."""
    out: dict[str, Any] = {}
    if importlib.util.find_spec("jax") is not None:
        out["jax"] = "subprocess"
    try:
        import numba  # noqa: F401 - optional peer

        out["numba"] = numba
    except ImportError:
        pass
    return out


def add_inputs(size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal(size).astype(np.float32), rng.standard_normal(size).astype(np.float32)


def mm_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    a = rng.integers(-2, 3, (512, 512)).astype(np.float16)
    b = rng.integers(-2, 3, (512, 512)).astype(np.float16)
    return a, b, rng.integers(-2, 3, 512).astype(np.float16)


def jax_peer(quick: bool) -> dict:
    """jax.jit's figures on the same inputs (run in its own process by `jax_figures`)."""
    import jax  # noqa: F401 - optional peer, only ever loaded in this subprocess

    reps = 3 if quick else 7
    out: dict[str, Any] = {}
    for key, size, number in (("warm_16", 16, 200 if quick else 2000), ("warm_16M", 1 << 24, 1)):
        x, y = add_inputs(size)
        jadd = jax.jit(add)
        jx, jy = jax.numpy.asarray(x), jax.numpy.asarray(y)
        out[key] = best_us(lambda: jadd(jx, jy).block_until_ready(), number, reps)
    a, b, bias = mm_inputs()
    times = []
    for _ in range(1 if quick else 3):
        f = jax.jit(lambda a, b, bias: jax.nn.relu(a @ b + bias))
        t0 = CLOCK()
        f(a, b, bias).block_until_ready()
        times.append(CLOCK() - t0)
    out["cold_mm512"] = statistics.median(times)
    return out


def jax_figures(quick: bool, clock: str) -> dict:
    """`jax_peer` run by this script in a fresh process (--peer jax), with the same clock."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--peer", "jax", "--clock", clock] + (["--quick"] if quick
                                                                                               else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def warm_add(size: int, number: int, repeat: int, others: dict[str, Any]) -> dict:
    x, y = add_inputs(size)
    k = pyasc.kernel(add)
    np.testing.assert_allclose(k(x, y), x + y, rtol=1e-6)
    row = {"pyasc_us": best_us(lambda: k(x, y), number, repeat), "numpy_us": best_us(lambda: x + y, number, repeat)}
    if "numba" in others:
        nadd = others["numba"].njit(add)
        row["numba_us"] = best_us(lambda: nadd(x, y), number, repeat)
    return row


def warm_block(number: int, repeat: int) -> dict:
    rng = np.random.default_rng(1)
    args = (rng.standard_normal((16, 64)).astype(np.float32), rng.uniform(0.5, 1.5, 64).astype(np.float32),
            rng.standard_normal(64).astype(np.float32), (rng.standard_normal((64, 64)) / 8).astype(np.float32),
            (rng.standard_normal((64, 64)) / 8).astype(np.float32))
    k = pyasc.kernel(block)
    np.testing.assert_allclose(k(*args), block_np(*args), rtol=1e-3, atol=1e-4)
    return {"pyasc_us": best_us(lambda: k(*args), number, repeat),
            "numpy_us": best_us(lambda: block_np(*args), number, repeat)}


def cold_s(fn: Callable, args: tuple, repeat: int) -> float:
    """Median over `repeat` fresh kernels of compile + first call (no disk cache), seconds."""
    times = []
    for _ in range(repeat):
        k = pyasc.kernel(fn)
        t0 = CLOCK()
        k(*args)
        times.append(CLOCK() - t0)
    return statistics.median(times)


def cold_compile(repeat: int, folder: Path, others: dict[str, Any]) -> dict:
    a, b, bias = mm_inputs()
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 1.0, (64, 128)).astype(np.float32)
    y = rng.uniform(0.1, 0.5, (64, 128)).astype(np.float32)
    chain20 = chain_module(20, folder)
    return {"pyasc_s": cold_s(mm_bias_relu, (a, b, bias), repeat), "chain20_s": cold_s(chain20, (x, y), repeat)}


def chains(lengths: list[int], folder: Path) -> dict:
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.0, (64, 128)).astype(np.float32)
    y = rng.uniform(0.1, 0.5, (64, 128)).astype(np.float32)
    compile_s, launches = {}, None
    for n in lengths:
        fn = chain_module(n, folder)
        k = pyasc.kernel(fn)
        t0 = CLOCK()
        k.compile(x, y)
        compile_s[n] = CLOCK() - t0
        if n == max(lengths):
            out, prof = k.profile(x, y)
            np.testing.assert_allclose(out, fn(x, y), rtol=1e-4, atol=1e-5)
            launches = prof.launches
    lo, hi = min(lengths), max(lengths)
    per_op = (compile_s[hi] - compile_s[lo]) / (hi - lo)
    return {"compile_s": {str(n): t for n, t in compile_s.items()}, "per_op_ms": per_op * 1e3,
            "longest": hi, "launches": launches}


def runtime_loop(iters: int) -> dict:
    x = np.random.default_rng(4).standard_normal(64).astype(np.float32)
    n = np.array(iters, np.int32)
    k = pyasc.kernel(loop)
    k(x, np.array(2, np.int32))  # compiled and warm
    t0 = CLOCK()
    out = k(x, n)
    wall = CLOCK() - t0
    t0 = CLOCK()
    ref = loop_np(x, iters)
    ref_s = CLOCK() - t0
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    return {"pyasc_s": wall, "numpy_s": ref_s, "iterations": iters}


def measure(quick: bool, clock: str) -> dict:
    others = peers()
    reps = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        res = {
            "peers": sorted(others),
            "warm_16": warm_add(16, 200 if quick else 2000, reps, others),
            "warm_16M": warm_add(1 << 24, 1, reps, others),
            "warm_block": warm_block(50 if quick else 500, reps),
            "cold_mm512": cold_compile(1 if quick else 3, folder, others),
            "chains": chains([10, 100] if quick else [10, 100, 1000], folder),
            "loop": runtime_loop(2000 if quick else 20000),
        }
    if "jax" in others:  # after pyasc's rows: the jax process never runs beside them
        jx = jax_figures(quick, clock)
        res["warm_16"]["jax_us"], res["warm_16M"]["jax_us"] = jx["warm_16"], jx["warm_16M"]
        res["cold_mm512"]["jax_s"] = jx["cold_mm512"]
    return res


def table(res: dict, before: dict | None) -> list[tuple[str, str, str, str, str]]:
    """(figure, pyasc, reference, ratio, before) rows."""

    def prev(*path: str) -> Any:
        cur: Any = before
        for p in path:
            if not isinstance(cur, dict) or p not in cur:
                return None
            cur = cur[p]
        return cur

    def warm(label: str, key: str) -> tuple:
        r = res[key]
        refs = [f"numpy {r['numpy_us']:.1f} us"] + [f"{p} {r[p + '_us']:.1f} us" for p in ("jax", "numba")
                                                    if p + "_us" in r]
        ratios = [f"{r['pyasc_us'] / r['numpy_us']:.1f}x numpy"] + [
            f"{r['pyasc_us'] / r[p + '_us']:.1f}x {p}" for p in ("jax", "numba") if p + "_us" in r]
        b = prev(key, "pyasc_us")
        bn = prev(key, "numpy_us")
        was = f"{b:.1f} us ({b / bn:.1f}x numpy)" if b and bn else "-"
        return (label, f"{r['pyasc_us']:.1f} us", "; ".join(refs), ", ".join(ratios), was)

    rows = [warm("warm call, 16-element add", "warm_16"), warm("warm call, 16M add", "warm_16M"),
            warm("warm call, model block 16x64", "warm_block")]
    c = res["cold_mm512"]
    refs = [f"20-op chain {c['chain20_s']:.3f} s"] + ([f"jax.jit {c['jax_s']:.3f} s"] if "jax_s" in c else [])
    ratios = [f"{c['pyasc_s'] / c['chain20_s']:.1f}x chain"] + (
        [f"{c['pyasc_s'] / c['jax_s']:.1f}x jax"] if "jax_s" in c else [])
    b, bc = prev("cold_mm512", "pyasc_s"), prev("cold_mm512", "chain20_s")
    rows.append(("cold compile + call, mm+bias+relu 512^3", f"{c['pyasc_s']:.3f} s", "; ".join(refs),
                 ", ".join(ratios), f"{b:.3f} s ({b / bc:.1f}x chain)" if b and bc else "-"))
    ch = res["chains"]
    b = prev("chains", "per_op_ms")
    rows.append((f"compile per op (chains {', '.join(ch['compile_s'])} ops)", f"{ch['per_op_ms']:.2f} ms", "-", "-",
                 f"{b:.2f} ms" if b else "-"))
    b = prev("chains", "launches")
    rows.append((f"{ch['longest']}-op elementwise chain", f"{ch['launches']} launches", "-", "-",
                 f"{b} launches" if b else "-"))
    lp = res["loop"]
    b, bn = prev("loop", "pyasc_s"), prev("loop", "numpy_s")
    rows.append((f"runtime loop, {lp['iterations']} iterations on 64 elements", f"{lp['pyasc_s']:.3f} s",
                 f"numpy {lp['numpy_s'] * 1e3:.1f} ms", f"{lp['pyasc_s'] / lp['numpy_s']:.1f}x numpy",
                 f"{b:.3f} s ({b / bn:.0f}x numpy)" if b and bn else "-"))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds, shorter chains and loop (a smoke run)")
    ap.add_argument("--baseline", default=str(BASELINE), help="a JSON this script wrote earlier ('' for none)")
    ap.add_argument("--out", default=str(RESULTS / "bench_speed.json"))
    ap.add_argument("--label", default="", help="what was measured (e.g. a commit), kept in the JSON")
    ap.add_argument("--clock", choices=("wall", "process"), default="wall",
                    help="wall clock, or this process's CPU time (compare runs on a busy machine)")
    ap.add_argument("--peer", choices=("jax",), help=argparse.SUPPRESS)  # (jax_figures: print its figures, JSON)
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.clock == "wall" else time.process_time
    if args.peer == "jax":
        print(json.dumps(jax_peer(args.quick)))
        return 0
    os.environ["PYASC_CACHE"] = "0"  # cold compiles must compile; warm calls never reach the disk
    for var in ("PYASC_DUMP_DIR", "PYASC_ALWAYS_COMPILE", "PYASC_SANITIZE"):
        os.environ.pop(var, None)
    res = measure(args.quick, args.clock)
    res["label"] = args.label
    res["clock"] = args.clock
    before = None
    if args.baseline and Path(args.baseline).is_file():
        before = json.loads(Path(args.baseline).read_text())["results"]
    rows = table(res, before)
    head = ("figure", "pyasc", "reference", "ratio", "before" + (f" ({before.get('label', '')})" if before else ""))
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    print(f"{args.clock} clock, chip {os.environ.get('PYASC_CHIP', '910b')}; peers installed: "
          f"{', '.join(res['peers']) or 'none (jax, numba)'}")
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    write_json(args.out, "bench_speed", {"quick": args.quick}, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
