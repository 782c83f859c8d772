"""What the GE optimiser does to the example kernels: nodes, device kernels, GM traffic, workspace, time.

    python benchmarks/bench_ge.py [--repeat 20] [--chip 910b] [--out benchmarks/results/ge.json]

For each example kernel (pyasc/examples.py), the graph from the frontend is
optimised at opt_level 0 and 3. Reported per kernel:
- nodes before -> after (all graphs, If branches included; opt_level 3);
- device kernels after fusion at opt_level 0 and 3 (If steps not counted: the
  host picks a branch; branch kernels are counted, both branches);
- GM bytes between kernels at opt_level 0 and 3: the intermediates the memory
  plan places (written once and read by each consuming kernel: "traffic");
- workspace at opt_level 0: naive (one buffer each) vs planned peak vs lower
  bound (max bytes live at once), all 512 B aligned; the opt_level 3 peak;
- optimiser wall time at opt_level 3, median of --repeat runs on fresh graphs.
"layer_norm (decomp.)" optimises the layer norm with no dedicated lowering
(knob dedicated_lowerings = {}), so fusion has to rebuild one kernel from the
decomposition.
"""
from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

import pyasc
from _report import RESULTS, write_json
from pyasc import dtypes
from pyasc.examples import BY_NAME
from pyasc.frontend import ArgSpec, build_graph
from pyasc.ge import optimize
from pyasc.ir import Graph, TensorType

# (row label, example name, optimiser knobs)
CASES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("fused_elementwise", "fused_elementwise", {}),
    ("softmax", "softmax", {}),
    ("layer_norm", "layer_norm", {}),
    ("layer_norm (decomp.)", "layer_norm", {"dedicated_lowerings": frozenset()}),
    ("rms_norm", "rms_norm", {}),
    ("gelu", "gelu", {}),
    ("matmul_bias_relu", "matmul_bias_relu", {}),
    ("tensor_if", "tensor_if", {}),
    ("cse_and_dead_code", "cse_and_dead_code", {}),
)


def graph_builder(name: str) -> tuple[Callable[[], Graph], str]:
    ex = BY_NAME[name]
    args = ex.make_inputs(np.random.default_rng(0))
    params = list(inspect.signature(ex.fn).parameters)
    specs = [
        ArgSpec(p, TensorType(a.shape, dtypes.normalize(a.dtype))) if isinstance(a, np.ndarray) else ArgSpec(p, None, a)
        for p, a in zip(params, args)
    ]
    shapes = " ".join(f"{dtypes.short(s.type.dtype)}{list(s.type.shape)}" for s in specs if s.type is not None)
    return (lambda: build_graph(ex.fn, specs).graph), shapes


def device_kernels(result) -> int:
    return sum(1 for k in result.kernels if not k.is_control)


def measure(label: str, name: str, knobs: dict[str, Any], chip: str, repeat: int) -> dict[str, Any]:
    build, shapes = graph_builder(name)
    r0 = optimize(build(), opt_level=0, chip=chip, knobs=knobs, dots=False)
    times = []
    for _ in range(repeat):
        g = build()
        t0 = time.perf_counter()
        r3 = optimize(g, opt_level=3, chip=chip, knobs=knobs, dots=False)
        times.append(time.perf_counter() - t0)
    p0, p3 = r0.memory_plan, r3.memory_plan
    return {
        "kernel": label, "example": name, "inputs": shapes, "knobs": {k: sorted(v) for k, v in knobs.items()},
        "nodes_before": r3.nodes_before, "nodes_after": r3.nodes_after,
        "kernels_o0": device_kernels(r0), "kernels_o3": device_kernels(r3),
        "kernel_ops_o3": [k.ops for k in r3.kernels],
        "gm_bytes_o0": p0.intermediate_bytes, "gm_bytes_o3": p3.intermediate_bytes,
        "gm_traffic_o0": p0.traffic_bytes, "gm_traffic_o3": p3.traffic_bytes,
        "workspace_naive_o0": p0.naive_bytes, "workspace_peak_o0": p0.peak_bytes,
        "workspace_lower_bound_o0": p0.lower_bound, "workspace_peak_o3": p3.peak_bytes,
        "workspace_lower_bound_o3": p3.lower_bound,
        "strategy_o0": p0.strategy,
        "optimize_ms_median": statistics.median(times) * 1e3, "optimize_ms_min": min(times) * 1e3,
        "fusion_log_o3": r3.fusion_log,
    }


def print_table(rows: list[dict[str, Any]], chip: str, repeat: int) -> None:
    print(f"GE optimiser on the example kernels, chip={chip}; opt ms = median of {repeat} optimize() calls at opt 3")
    cols = [
        ("kernel", 21, lambda r: r["kernel"]),
        ("nodes bef->aft", 14, lambda r: f"{r['nodes_before']} -> {r['nodes_after']}"),
        ("kernels O0->O3", 14, lambda r: f"{r['kernels_o0']} -> {r['kernels_o3']}"),
        ("GM B between O0->O3", 19, lambda r: f"{r['gm_bytes_o0']} -> {r['gm_bytes_o3']}"),
        ("traffic B O0->O3", 17, lambda r: f"{r['gm_traffic_o0']} -> {r['gm_traffic_o3']}"),
        ("O0 ws naive/planned/LB", 23,
         lambda r: f"{r['workspace_naive_o0']}/{r['workspace_peak_o0']}/{r['workspace_lower_bound_o0']}"),
        ("O3 ws", 6, lambda r: str(r["workspace_peak_o3"])),
        ("opt ms", 7, lambda r: f"{r['optimize_ms_median']:.2f}"),
    ]
    print("  ".join(name.ljust(w) if i == 0 else name.rjust(w) for i, (name, w, _) in enumerate(cols)))
    print("  ".join("-" * w for _, w, _ in cols))
    for r in rows:
        print("  ".join(f(r).ljust(w) if i == 0 else f(r).rjust(w) for i, (_, w, f) in enumerate(cols)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--chip", default="910b")
    parser.add_argument("--out", default=str(RESULTS / "ge.json"))
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    measure(*CASES[0], args.chip, 1)  # warm-up: imports and first-use caches outside the timed runs
    rows = [measure(label, name, knobs, args.chip, args.repeat) for label, name, knobs in CASES]
    print_table(rows, args.chip, args.repeat)
    worst = max(rows, key=lambda r: r["workspace_peak_o0"] / max(r["workspace_lower_bound_o0"], 1))
    print(f"worst planned/lower-bound at opt 0: {worst['kernel']} "
          f"{worst['workspace_peak_o0']}/{worst['workspace_lower_bound_o0']}")
    write_json(args.out, "ge_optimizer", {"pyasc_version": pyasc.__version__, "chip": args.chip,
                                          "repeat": args.repeat}, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
