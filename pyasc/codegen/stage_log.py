"""What the codegen stages did for a kernel: each stage's statistics and time (from its pass log)."""
from __future__ import annotations

from typing import Sequence

from ..ge.passes import PassRecord


def stage_line(log: Sequence[PassRecord], times: bool = True) -> str:
    """`analyze (analyses=2) 0.21 ms; tile (candidates=12, rejected=1) 1.30 ms; ...`"""
    parts = []
    for r in log:
        what = r.name
        if r.stats:
            what += " (" + ", ".join(f"{k}={v}" for k, v in r.stats.items()) + ")"
        if times:
            what += f" {r.seconds * 1e3:.2f} ms"
        parts.append(what)
    return "; ".join(parts)


def add_times(totals: dict[str, float], log: Sequence[PassRecord]) -> None:
    """Add each stage's seconds to `totals` (stage name -> seconds over all kernels)."""
    for r in log:
        totals[r.name] = totals.get(r.name, 0.0) + r.seconds
