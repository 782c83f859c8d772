"""Data-movement kernels on the emulator: simulated time against the GM roofline.

    python benchmarks/bench_datamove.py [--chip 910b] [--scale 1.0] [--out benchmarks/results/datamove.json]

Each case is one kernel whose only work is moving data (a transpose, slice,
broadcast, copy or format conversion). Reported per case: simulated cycles and
microseconds, GM bytes read and written, the roofline (the minimal bytes —
what the output needs of the input read once, the output written once — over
the chip's aggregate GM bandwidth) and the fraction of it reached, launches, the tiling the cost model
chose, how much slower the same kernel is with buffer_num=1 (serial tiles), and the emulator's
wall time for the run. `--scale` shrinks every size (0.25: a quick look).
"""
from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np

import pyasc
from _report import RESULTS, write_json
from pyasc import ge
from pyasc.codegen.generate import CodegenOptions, generate
from pyasc.ir import Graph, TensorType
from pyasc.runtime.artifact import build_host
from pyasc.runtime.emulator import EmulatorRunner
from pyasc.runtime.profile import Profile
from simulator import chips


def transpose_2d(x):
    return x.T


def last_two(x):
    return pyasc.transpose(x, (0, 2, 1))


def nchw_to_nhwc(x):
    return pyasc.transpose(x, (0, 2, 3, 1))


def every_second_row(x):
    return x[::2]


def every_second_column(x):
    return x[:, ::2]


def columns_reversed(x):
    return x[:, ::-1]


def vector_reversed(x):
    return x[::-1]


def rows_broadcast(x):
    return pyasc.broadcast_to(x, (x.shape[0], x.shape[0]))


def columns_broadcast(x):
    return pyasc.broadcast_to(x, (x.shape[0], x.shape[0]))


def reshape_result(x):
    return pyasc.reshape(x, (-1,))


def reshape_then_exp(x):
    return pyasc.exp(pyasc.reshape(x, (-1,)))


def _n(base: int, scale: float, quantum: int = 16) -> int:
    return max(quantum, int(base * scale) // quantum * quantum)


def cases(scale: float) -> list[tuple[str, Callable[..., Any], tuple[int, ...], str]]:
    n = _n(4096, scale ** 0.5)
    return [
        ("transpose 2-D", transpose_2d, (n, n), "float32"),
        ("transpose 2-D", transpose_2d, (n, n), "float16"),
        ("transpose (0,2,1)", last_two, (32, _n(512, scale ** 0.5), _n(1024, scale ** 0.5)), "float16"),
        ("NCHW -> NHWC", nchw_to_nhwc, (8, 64, _n(56, scale ** 0.5, 8), _n(56, scale ** 0.5, 8)), "float16"),
        ("x[::2]", every_second_row, (n, n), "float32"),
        ("x[:, ::2] (gather)", every_second_column, (n, n), "float32"),
        ("x[:, ::-1]", columns_reversed, (n, n), "float32"),
        ("x[::-1] 1-D", vector_reversed, (n * n,), "float32"),
        ("broadcast (n,) -> (n, n)", rows_broadcast, (n,), "float32"),
        ("broadcast (n, 1) -> (n, n)", columns_broadcast, (n, 1), "float32"),
        ("reshape into a result (copy)", reshape_result, (n, n), "float32"),
        ("exp(reshape(x)) (alias)", reshape_then_exp, (n, n), "float32"),
    ]


def run_kernel(fn: Callable[..., Any], x: np.ndarray, chip: str, buffer_num: int) -> tuple[np.ndarray, Profile, Any]:
    k = pyasc.kernel(fn, chip=chip, buffer_num=buffer_num)
    t0 = time.perf_counter()
    out, prof = k.profile(x)
    wall = time.perf_counter() - t0
    compiled = k.compile(x)
    return out, prof, (compiled, wall)


def transdata_case(shape: tuple[int, ...], dtype: str, chip: str, buffer_num: int) -> tuple[Profile, float, str]:
    """ND -> FRACTAL_NZ -> ND of a hand-built graph (no user op makes a transdata): the two conversions."""
    g = Graph("td")
    x = g.add_input(TensorType(shape, dtype), "x")
    nz = g.add("transdata", [x], {"src_format": "ND", "dst_format": "FRACTAL_NZ"}).out()
    g.set_outputs([g.add("transdata", [nz], {"src_format": "FRACTAL_NZ", "dst_format": "ND"}).out()])
    cfg = chips.get(chip)
    res = ge.optimize(g, opt_level=3, disabled_passes=["transdata_elimination"], chip=cfg, dots=False)
    dev = generate(res.graph, res.kernels, res.memory_plan, cfg, CodegenOptions(buffer_num=buffer_num), "td")
    runner = EmulatorRunner(dev, build_host(dev, "td"), cfg, False, res.graph)
    prof = Profile(cfg.clock_hz, cfg.gm_bytes_per_second)
    t0 = time.perf_counter()
    runner.run([np.zeros(shape, dtype)], prof)
    return prof, time.perf_counter() - t0, dev.kernels[0].tiling.params.describe()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="910b")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--out", default=str(RESULTS / "datamove.json"))
    args = ap.parse_args()
    cfg = chips.get(args.chip)
    rows: list[dict[str, Any]] = []
    for label, fn, shape, dtype in cases(args.scale):
        x = np.zeros(shape, dtype)
        out, prof, (compiled, wall) = run_kernel(fn, x, args.chip, 2)
        _, serial, _ = run_kernel(fn, x, args.chip, 1)
        tiling = compiled.kernels[0].tiling.params.describe() if compiled.kernels else "(no device kernel)"
        # the least a kernel must move: what the output needs of the input (a slice reads less), and the output
        least = min(x.nbytes, out.nbytes) + out.nbytes
        rows.append(_row(label, f"{dtype}{list(shape)}", least, prof, serial, tiling, wall, cfg))
    m = _n(4096, args.scale ** 0.5)
    prof, wall, tiling = transdata_case((m, m), "float16", args.chip, 2)
    serial, _, _ = transdata_case((m, m), "float16", args.chip, 1)
    rows.append(_row("transdata ND->NZ->ND", f"f16[{m}, {m}]", 2 * 2 * m * m * 2, prof, serial, tiling, wall, cfg))
    _print(rows, args.chip)
    write_json(args.out, "datamove", {"chip": args.chip, "scale": args.scale}, rows)


def _row(label: str, what: str, min_bytes: int, prof: Profile, serial: Profile, tiling: str, wall: float,
         cfg: Any) -> dict[str, Any]:
    roofline_s = min_bytes / cfg.gm_bytes_per_second
    return {"case": label, "input": what, "launches": prof.launches, "cycles": prof.cycles,
            "us": prof.time_s * 1e6, "gm_read": prof.gm_read_bytes, "gm_write": prof.gm_write_bytes,
            "min_bytes": min_bytes, "roofline_us": roofline_s * 1e6,
            "of_roofline": roofline_s / prof.time_s if prof.time_s else None,
            "serial_cycles": serial.cycles, "tiling": tiling, "emulator_wall_s": wall}


def _print(rows: list[dict[str, Any]], chip: str) -> None:
    print(f"data movement on {chip}: simulated time vs the GM roofline (min bytes / aggregate bandwidth)")
    head = f"{'case':<30} {'input':<22} {'launch':>6} {'sim us':>9} {'roof us':>8} {'of roof':>7} " \
           f"{'bn=1 x':>6} {'wall s':>7}  tiling"
    print(head)
    print("-" * len(head))
    for r in rows:
        frac = f"{r['of_roofline']:.2f}" if r["of_roofline"] is not None else "-"
        slower = f"{r['serial_cycles'] / r['cycles']:.2f}" if r["cycles"] else "-"
        print(f"{r['case']:<30} {r['input']:<22} {r['launches']:>6} {r['us']:>9.2f} {r['roofline_us']:>8.2f} "
              f"{frac:>7} {slower:>6} {r['emulator_wall_s']:>7.2f}  {r['tiling']}")


if __name__ == "__main__":
    main()
