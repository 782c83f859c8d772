"""The record a launch returns: cycles, time, busy cycles per pipe and core, bytes, counts, trace."""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import trace as trace_mod
from .isa import CORE_PIPES, PIPE_ID
from .timing import TimingGroup


@dataclass
class LaunchResult:
    """Outcome of `Device.launch` (all byte and cycle counts are exact totals over the launch's cores).

    cycles / time_s: launch duration, start-up included (startup_cycles; kernel_cycles
    is the rest); pipe_busy: pipe -> busy cycles summed over cores; core_pipe_busy:
    one such dict per core (AIC cores first in a mixed launch); core_cycles: when each
    core finished; gm_read_bytes / gm_write_bytes and bytes_by_path (per data path);
    l2_hit_bytes: the bytes read that hit in L2; l2_write_hit_bytes: the bytes stored
    into lines the L2 held dirty (their write-back to HBM was counted once already);
    instr_counts (by mnemonic) and pipe_instr_counts (by pipe).
    """

    program: str
    chip: str
    core_type: str
    block_dim: int
    clock_hz: float
    gm_bytes_per_cycle: float
    cycles: int
    time_s: float
    pipe_busy: dict[str, int]
    core_pipe_busy: list[dict[str, int]]
    core_cycles: list[int]
    gm_read_bytes: int
    gm_write_bytes: int
    bytes_by_path: dict[str, int]
    instr_counts: dict[str, int]
    pipe_instr_counts: dict[str, int]
    sanitized: bool
    distinct_streams: int
    startup_cycles: int = 0
    l2_hit_bytes: int = 0
    l2_write_hit_bytes: int = 0
    _groups: list[TimingGroup] = field(repr=False, default_factory=list)
    _issue_cycles: int = field(repr=False, default=1)

    @property
    def kernel_cycles(self) -> int:
        """Cycles after the launch start-up (what the kernel body takes)."""
        return self.cycles - self.startup_cycles

    @property
    def gm_bytes(self) -> int:
        return self.gm_read_bytes + self.gm_write_bytes

    @property
    def hbm_bytes(self) -> int:
        """GM traffic that reached HBM: the reads L2 did not serve, and the writes that dirtied a line (the
        write-back each pays once; a store into a line L2 holds dirty is not one)."""
        return self.gm_bytes - self.l2_hit_bytes - self.l2_write_hit_bytes

    @property
    def gm_bandwidth(self) -> float:
        """Achieved HBM bandwidth in bytes per second (L2 hits are not HBM traffic)."""
        return self.hbm_bytes / self.time_s if self.time_s > 0 else 0.0

    @property
    def gm_bandwidth_fraction(self) -> float:
        """Achieved HBM bandwidth as a fraction of the chip's aggregate limit (never above 1)."""
        limit = self.gm_bytes_per_cycle * self.clock_hz
        return self.gm_bandwidth / limit if limit else 0.0

    def utilisation(self, pipe: str) -> float:
        """Busy fraction of `pipe` averaged over the cores that have it, after the launch start-up."""
        n = sum(1 for c in self.core_pipe_busy if pipe in c)
        if self.kernel_cycles <= 0 or n == 0:
            return 0.0
        return self.pipe_busy.get(pipe, 0) / (self.kernel_cycles * n)

    def copy(self) -> "LaunchResult":
        """A copy whose dicts and lists can be changed without touching this one."""
        new = copy.copy(self)
        for f in ("pipe_busy", "bytes_by_path", "instr_counts", "pipe_instr_counts"):
            setattr(new, f, dict(getattr(self, f)))
        new.core_pipe_busy = [dict(c) for c in self.core_pipe_busy]
        new.core_cycles = list(self.core_cycles)
        return new

    def to_dict(self) -> dict[str, Any]:
        return {
            "program": self.program, "chip": self.chip, "core_type": self.core_type, "block_dim": self.block_dim,
            "cycles": self.cycles, "time_s": self.time_s, "pipe_busy": dict(self.pipe_busy),
            "core_cycles": list(self.core_cycles), "gm_read_bytes": self.gm_read_bytes,
            "gm_write_bytes": self.gm_write_bytes, "bytes_by_path": dict(self.bytes_by_path),
            "instr_counts": dict(self.instr_counts), "pipe_instr_counts": dict(self.pipe_instr_counts),
            "gm_bandwidth_fraction": self.gm_bandwidth_fraction, "sanitized": self.sanitized,
            "startup_cycles": self.startup_cycles, "kernel_cycles": self.kernel_cycles,
            "l2_hit_bytes": self.l2_hit_bytes, "l2_write_hit_bytes": self.l2_write_hit_bytes,
        }

    def summary(self) -> str:
        """A readable table: per-pipe busy cycles and utilisation, bytes per path, GM bandwidth."""
        what = (f"{self.block_dim} group(s) of AIC + AIVs" if self.core_type == "mix"
                else f"{self.block_dim} {self.core_type.upper()} core(s)")
        lines = [
            f"launch {self.program} on {self.chip}: {what}, {self.cycles:,} cycles = {self.time_s * 1e6:,.2f} us at "
            f"{self.clock_hz / 1e9:g} GHz (start-up {self.startup_cycles:,})" + ("  [sanitized]" if self.sanitized else ""),
            f"{'pipe':<6}{'busy cycles (all cores)':>26}{'utilisation':>12}{'instructions':>14}",
        ]
        for p in self.pipe_busy:
            lines.append(f"{p:<6}{self.pipe_busy.get(p, 0):>26,}{self.utilisation(p):>12.1%}"
                         f"{self.pipe_instr_counts.get(p, 0):>14,}")
        lines.append(f"{'path':<12}{'bytes':>20}")
        for path, n in sorted(self.bytes_by_path.items()):
            lines.append(f"{path:<12}{n:>20,}")
        limit = self.gm_bytes_per_cycle * self.clock_hz
        lines.append(
            f"GM: read {self.gm_read_bytes:,} B ({self.l2_hit_bytes:,} B from L2 hits), "
            f"written {self.gm_write_bytes:,} B; HBM {self.hbm_bytes:,} B, achieved "
            f"{self.gm_bandwidth / 1e12:.3f} TB/s = {self.gm_bandwidth_fraction:.1%} of the chip's "
            f"{limit / 1e12:.3f} TB/s"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def trace(self) -> dict[str, Any]:
        """The Chrome-trace dictionary (see save_trace)."""
        return trace_mod.chrome_trace(self._groups, self.clock_hz, self._issue_cycles, self.startup_cycles)

    def save_trace(self, path: str) -> None:
        """Write a Chrome-trace JSON file (open it in Perfetto or chrome://tracing)."""
        trace_mod.save(path, self.trace())


def build(name: str, chip: Any, block_dim: int, parts: list, groups: list, tgroups: list[TimingGroup],
          sched: Any, sanitized: bool) -> LaunchResult:
    """Assemble the result from the functional groups and the timing groups of a launch's parts."""
    total = sched.cycles
    cycles = int(math.ceil(total - 1e-9)) if total > 0 else 0
    core_types = [p.dec.core_type for p in parts]
    pipe_busy: dict[str, float] = {p: 0.0 for ct in core_types for p in CORE_PIPES[ct]}
    core_pipe_busy: list = []
    core_cycles: list = []
    for part in parts:
        own = [(PIPE_ID[p], p) for p in CORE_PIPES[part.dec.core_type] if p != "S"]
        per_core: list = [None] * part.count
        for tg in tgroups:
            if tg.core_type != part.dec.core_type:
                continue
            busy = {p: tg.busy[i] for i, p in own}
            busy["S"] = tg.s_busy
            for p, v in busy.items():
                pipe_busy[p] += v * tg.m
            rounded = {p: int(round(v)) for p, v in busy.items()}
            done = int(math.ceil(tg.total - 1e-9))
            for c in tg.cores:
                per_core[c] = (rounded, done)
        core_pipe_busy.extend(dict(r) for r, _ in per_core)
        core_cycles.extend(d for _, d in per_core)
    bytes_by_path: dict[str, int] = {}
    counts: dict[str, int] = {}
    pipe_counts: dict[str, int] = {}
    for g in groups:
        mn, pp = g.dec.mnemonics, g.dec.pipes
        for path, n in g.bytes.items():
            bytes_by_path[path] = bytes_by_path.get(path, 0) + n * g.m
        for k, n in enumerate(g.counts):
            if n:
                counts[mn[k]] = counts.get(mn[k], 0) + n * g.m
                pipe_counts[pp[k]] = pipe_counts.get(pp[k], 0) + n * g.m
    gm_read = sum(n for p, n in bytes_by_path.items() if p.startswith("gm_"))
    gm_write = sum(n for p, n in bytes_by_path.items() if p.endswith("_gm"))
    l2_hit = sum(tg.hit_bytes for tg in tgroups)
    l2_write_hit = sum(tg.write_hit_bytes for tg in tgroups)
    core_type = core_types[0] if len(core_types) == 1 else "mix"
    return LaunchResult(
        program=name, chip=chip.name, core_type=core_type, block_dim=block_dim,
        clock_hz=chip.clock_hz, gm_bytes_per_cycle=chip.gm_bytes_per_cycle, cycles=cycles,
        time_s=cycles / chip.clock_hz, pipe_busy={p: int(round(v)) for p, v in pipe_busy.items()},
        core_pipe_busy=core_pipe_busy, core_cycles=core_cycles, gm_read_bytes=gm_read, gm_write_bytes=gm_write,
        bytes_by_path=bytes_by_path, instr_counts=dict(sorted(counts.items())),
        pipe_instr_counts=pipe_counts, sanitized=sanitized, distinct_streams=len(tgroups),
        startup_cycles=int(round(sched.startup)), l2_hit_bytes=int(round(l2_hit)),
        l2_write_hit_bytes=int(round(l2_write_hit)),
        _groups=tgroups, _issue_cycles=chip.issue_cycles,
    )


@dataclass
class CallProfile:
    """Several launches of one kernel call, end to end: totals and one trace (launch i starts where i-1 ended).

        prof = CallProfile([res1, res2]); prof.cycles; prof.save_trace("call.json")
    """

    launches: list[LaunchResult]

    @property
    def cycles(self) -> int:
        return sum(r.cycles for r in self.launches)

    @property
    def time_s(self) -> float:
        return sum(r.time_s for r in self.launches)

    @property
    def gm_read_bytes(self) -> int:
        return sum(r.gm_read_bytes for r in self.launches)

    @property
    def gm_write_bytes(self) -> int:
        return sum(r.gm_write_bytes for r in self.launches)

    @property
    def l2_hit_bytes(self) -> int:
        return sum(r.l2_hit_bytes for r in self.launches)

    def _sum(self, field: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.launches:
            for k, v in getattr(r, field).items():
                out[k] = out.get(k, 0) + v
        return out

    @property
    def pipe_busy(self) -> dict[str, int]:
        return self._sum("pipe_busy")

    @property
    def bytes_by_path(self) -> dict[str, int]:
        return self._sum("bytes_by_path")

    @property
    def instr_counts(self) -> dict[str, int]:
        return dict(sorted(self._sum("instr_counts").items()))

    def summary(self) -> str:
        lines = [f"kernel call: {len(self.launches)} launch(es), {self.cycles:,} cycles = {self.time_s * 1e6:,.2f} us"]
        for k, r in enumerate(self.launches):
            lines.append(f"  #{k} {r.program}: {r.cycles:,} cycles, GM {r.gm_bytes:,} B ({r.l2_hit_bytes:,} B L2 hits)")
        return "\n".join(lines)

    def trace(self) -> dict[str, Any]:
        """One Chrome trace: a "kernel call" process with a slice per launch, then one process per core (AIC
        cores first, then AIV cores, the same process for a core across launches), a track per pipe."""
        events: list[dict[str, Any]] = [
            {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "kernel call"}},
            {"ph": "M", "name": "process_sort_index", "pid": 0, "tid": 0, "args": {"sort_index": 0}},
        ]
        offset = 0.0
        for k, r in enumerate(self.launches):
            us = 1e6 / r.clock_hz
            events.append({"ph": "X", "name": r.program, "cat": "launch", "pid": 0, "tid": 0, "ts": offset,
                           "dur": r.cycles * us, "args": {"launch": k, "cycles": r.cycles}})
            part = trace_mod.chrome_trace(r._groups, r.clock_hz, r._issue_cycles, r.startup_cycles, offset,
                                          pid_of=_call_pid, flow_base=(k + 1) * 1_000_000)
            events.extend(part["traceEvents"])
            offset += r.cycles * us
        seen: set = set()
        unique = []
        for e in events:  # each core's process and track names once
            key = (e["ph"], e["name"], e["pid"], e.get("tid")) if e["ph"] == "M" else None
            if key is None or key not in seen:
                seen.add(key)
                unique.append(e)
        return {"traceEvents": unique, "displayTimeUnit": "ns"}

    def save_trace(self, path: str) -> None:
        trace_mod.save(path, self.trace())


def _call_pid(core_type: str, core: int, gcore: int) -> int:
    return (1 if core_type == "aic" else 1001) + core
