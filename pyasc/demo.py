"""`pyasc demo`: compile and run every example kernel, compare with its numpy reference, print a table."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence, TextIO

import numpy as np

import pyasc

from . import dtypes
from .examples import EXAMPLES, Example
from .runtime.options import make_options
from .runtime.roofline import roofline
from .testing import TOLERANCE


@dataclass
class Row:
    name: str
    inputs: str
    nodes_in: int | None = None
    nodes_out: int | None = None
    device_kernels: int | None = None
    sim_us: float | None = None             # simulated time of the optimised kernel on the emulator
    roofline_pct: float | None = None       # roofline time / simulated time, in percent
    gm_bytes: int | None = None             # GM bytes the optimised kernel moved (read + written)
    gm_bytes_unfused: int | None = None     # the same call compiled at opt_level=0 (one kernel per op)
    max_abs_err: float | None = None
    ok: bool = False
    compile_ms: float | None = None
    error: str = ""

    @property
    def gm_ratio(self) -> float | None:
        if self.gm_bytes is None or not self.gm_bytes_unfused:
            return None
        return self.gm_bytes / self.gm_bytes_unfused


def describe_args(args: Sequence[Any]) -> str:
    parts = []
    for a in args:
        if isinstance(a, np.ndarray):
            parts.append(f"{dtypes.short(a.dtype.name)}[{','.join(map(str, a.shape))}]")
        else:
            parts.append(repr(a))
    return " ".join(parts)


def compare(actual: Any, expected: Any) -> tuple[bool, float, str]:
    """(ok, max abs error, why not ok) for a result against the reference (tuples compared item by item).

    The reference may be 64-bit where pyasc narrows to 32-bit (documented in pyasc.dtypes).
    """
    if isinstance(expected, tuple) != isinstance(actual, tuple):
        return False, float("nan"), "tuple vs single result"
    pairs = list(zip(actual, expected)) if isinstance(expected, tuple) else [(actual, expected)]
    if isinstance(expected, tuple) and len(actual) != len(expected):
        return False, float("nan"), f"{len(actual)} results, expected {len(expected)}"
    worst, ok, why = 0.0, True, ""
    for a, e in pairs:
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape:
            return False, float("nan"), f"shape {a.shape} != {e.shape}"
        if a.dtype.name != dtypes.narrow(e.dtype):
            return False, float("nan"), f"dtype {a.dtype} != {e.dtype}"
        if a.size == 0:
            continue
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        finite = np.isfinite(diff)
        same_nonfinite = np.array_equal(np.isnan(a.astype(np.float64)), np.isnan(e.astype(np.float64)))
        if finite.any():
            worst = max(worst, float(diff[finite].max()))
        rtol, atol = TOLERANCE.get(a.dtype.name, (0.0, 0.0))
        if not (same_nonfinite and np.allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                                               equal_nan=True)):
            ok, why = False, "values differ"
    return ok, worst, why


def _outputs(result: Any) -> list[np.ndarray]:
    return [np.asarray(r) for r in (result if isinstance(result, tuple) else (result,))]


def run_example(ex: Example, *, chip: str | None, opt_level: int, seed: int = 0) -> Row:
    """Compile `ex` for the emulator, run it there with a profile, and compare with numpy; the same call
    compiled at opt_level=0 (no fusion) gives the unfused graph's GM traffic."""
    args = ex.make_inputs(np.random.default_rng(seed))
    row = Row(ex.name, describe_args(args))
    options: dict[str, Any] = {"opt_level": opt_level, "backend": "emulator"}
    if chip is not None:
        options["chip"] = chip
    try:
        k = pyasc.kernel(ex.fn, **options)
        t0 = time.perf_counter()
        compiled = k.compile(*args)
        row.compile_ms = (time.perf_counter() - t0) * 1e3
        row.nodes_in, row.nodes_out = compiled.nodes_in, compiled.nodes_out
        row.device_kernels = len(compiled.kernels)
        actual, prof = k.profile(*args)
        row.sim_us = prof.time_s * 1e6
        row.gm_bytes = prof.gm_bytes
        tensors = [a for a in args if isinstance(a, np.ndarray)]
        roof = roofline(compiled.graph, compiled.options.chip_config, tensors, _outputs(actual))
        row.roofline_pct = 100.0 * roof.fraction_of(prof.time_s)
        unfused = pyasc.kernel(ex.fn, **{**options, "opt_level": 0})
        row.gm_bytes_unfused = unfused.profile(*args)[1].gm_bytes
        expected = k.py_func(*args)
        row.ok, row.max_abs_err, row.error = compare(actual, expected)
    except Exception as e:  # the demo reports every kernel, even after one fails
        row.ok = False
        row.error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return row


HEADER = ("kernel", "inputs", "nodes in->out", "kernels", "sim us", "% roofline", "GM bytes",
          "unfused GM bytes", "GM vs unfused", "max abs err", "ok", "compile ms")


def _cells(r: Row) -> tuple[str, ...]:
    dash = "-"
    return (
        r.name, r.inputs,
        dash if r.nodes_in is None else f"{r.nodes_in} -> {r.nodes_out}",
        dash if r.device_kernels is None else str(r.device_kernels),
        dash if r.sim_us is None else f"{r.sim_us:.2f}",
        dash if r.roofline_pct is None else f"{r.roofline_pct:.1f}",
        dash if r.gm_bytes is None else str(r.gm_bytes),
        dash if r.gm_bytes_unfused is None else str(r.gm_bytes_unfused),
        dash if r.gm_ratio is None else f"{r.gm_ratio:.2f}x",
        dash if r.max_abs_err is None else f"{r.max_abs_err:.2e}",
        "ok" if r.ok else "FAIL",
        dash if r.compile_ms is None else f"{r.compile_ms:.1f}",
    )


def format_table(rows: Sequence[Row]) -> str:
    body = [_cells(r) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(HEADER, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(HEADER), line(["-" * w for w in widths])]
    out += [line(cells) for cells in body]
    for r in rows:
        if r.error:
            out.append(f"{r.name}: {r.error}")
    return "\n".join(out)


def main(*, chip: str | None = None, opt_level: int = 3, out: TextIO | None = None) -> int:
    """Run the demo; returns the exit status (1 if any kernel failed or mismatched)."""
    out = out or sys.stdout
    import pyasc.frontend  # noqa: F401 - imported up front so the first row's compile time is not import time

    rows = [run_example(ex, chip=chip, opt_level=opt_level) for ex in EXAMPLES]
    chip_text = make_options(**({"chip": chip} if chip is not None else {})).chip_name
    print(f"pyasc demo: {len(rows)} example kernels, chip={chip_text}, opt_level={opt_level}, "
          "backend=emulator (simulated NPU; times are simulated, not wall clock)", file=out)
    print(format_table(rows), file=out)
    print("% roofline = max(ideal GM bytes / peak GM bandwidth, matmul MACs / peak cube rate) / simulated time; "
          "launch start-up is not in the roofline, so small kernels sit far below it. "
          "unfused = the same call at opt_level=0 (one kernel per op).", file=out)
    failed = [r.name for r in rows if not r.ok]
    print(f"{len(rows) - len(failed)}/{len(rows)} kernels match their numpy reference"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""), file=out)
    return 1 if failed else 0
