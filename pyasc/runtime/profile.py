"""The profile of one kernel call on the emulator: the launches it made, summed, with one combined trace."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator import CallProfile, LaunchResult


@dataclass
class LaunchProfile:
    kernel: int            # index into the artifact's device kernels
    name: str
    blocks: int
    result: LaunchResult
    loops: tuple[int, ...] = ()   # the runtime loops it ran inside, outermost first

    @property
    def cycles(self) -> int:
        return self.result.cycles


@dataclass
class Profile:
    """What `kernel.profile(...)` returns next to the outputs (simulated figures, deterministic)."""

    clock_hz: float
    gm_peak_bytes_per_s: float          # HBM: what GM traffic the L2 does not serve is limited by
    per_launch: list[LaunchProfile] = field(default_factory=list)
    iterations: dict[int, int] = field(default_factory=dict)  # runtime loop (host order) -> iterations run
    l2_peak_bytes_per_s: float = 0.0    # the L2's bandwidth on a hit (0: unknown)

    device_loops: set[int] = field(default_factory=set)  # runtime loops that ran inside one launch (on chip)

    def count_iteration(self, loop: int, n: int = 1, device: bool = False) -> None:
        """`n` more iterations of runtime loop `loop`: one the host ran, or `n` a device loop's launch ran."""
        self.iterations[loop] = self.iterations.get(loop, 0) + n
        if device:
            self.device_loops.add(loop)

    def loop_launches(self, loop: int = 0) -> int:
        """Launches made inside runtime loop `loop` (numbered in host-code order), over all its iterations."""
        return sum(1 for p in self.per_launch if loop in p.loops)

    def launches_per_iteration(self, loop: int = 0) -> float:
        """Launches an iteration of runtime loop `loop` made, on average (0.0 when it never ran)."""
        n = self.iterations.get(loop, 0)
        return self.loop_launches(loop) / n if n else 0.0

    @property
    def launches(self) -> int:
        return len(self.per_launch)

    @property
    def cycles(self) -> int:
        """Launches run one after the other: the call's cycles are their sum."""
        return sum(p.cycles for p in self.per_launch)

    @property
    def time_s(self) -> float:
        return self.cycles / self.clock_hz

    @property
    def gm_read_bytes(self) -> int:
        return sum(p.result.gm_read_bytes for p in self.per_launch)

    @property
    def gm_write_bytes(self) -> int:
        return sum(p.result.gm_write_bytes for p in self.per_launch)

    @property
    def gm_bytes(self) -> int:
        return self.gm_read_bytes + self.gm_write_bytes

    @property
    def l2_hit_bytes(self) -> int:
        """GM reads the L2 served (they cost no HBM bandwidth)."""
        return sum(p.result.l2_hit_bytes for p in self.per_launch)

    @property
    def pipe_busy(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.per_launch:
            for pipe, c in p.result.pipe_busy.items():
                out[pipe] = out.get(pipe, 0) + c
        return out

    @property
    def hbm_bytes(self) -> int:
        """The GM traffic that reached HBM: reads the L2 did not serve, and writes that dirtied a line (a store
        into a line the L2 holds dirty, such as a workspace tile rewritten in a launch, is not HBM traffic)."""
        return (self.gm_read_bytes - self.l2_hit_bytes + self.gm_write_bytes
                - sum(p.result.l2_write_hit_bytes for p in self.per_launch))

    @property
    def gm_bandwidth_fraction(self) -> float:
        """HBM traffic over the chip's HBM bandwidth (L2 hits cost none of it, so this never passes 1)."""
        if self.time_s <= 0:
            return 0.0
        return self.hbm_bytes / self.time_s / self.gm_peak_bytes_per_s

    @property
    def l2_bandwidth_fraction(self) -> float:
        """Bytes the L2 served on hits over its bandwidth (0.0 when the chip's L2 bandwidth is unknown)."""
        if self.time_s <= 0 or self.l2_peak_bytes_per_s <= 0:
            return 0.0
        return self.l2_hit_bytes / self.time_s / self.l2_peak_bytes_per_s

    def traffic(self) -> str:
        """GM reads and writes, and how they split between HBM and L2 hits, each against its own bandwidth."""
        l2 = f" = {self.l2_bandwidth_fraction:.1%} of L2 bandwidth" if self.l2_peak_bytes_per_s > 0 else ""
        return (f"GM read {self.gm_read_bytes:,} B, written {self.gm_write_bytes:,} B; "
                f"HBM {self.hbm_bytes:,} B = {self.gm_bandwidth_fraction:.1%} of HBM bandwidth, "
                f"L2 hits {self.l2_hit_bytes:,} B{l2}")

    def summary(self) -> str:
        lines = [f"{self.launches} launch(es), {self.cycles:,} cycles = {self.time_s * 1e6:,.2f} us simulated",
                 self.traffic()]
        for loop in sorted(self.iterations):
            if loop in self.device_loops:
                lines.append(f"runtime loop {loop}: {self.iterations[loop]} iteration(s) on the device, in "
                             f"{self.loop_launches(loop)} launch(es)")
                continue
            lines.append(f"runtime loop {loop}: {self.iterations[loop]} iteration(s), {self.loop_launches(loop)} "
                         f"launch(es), {self.launches_per_iteration(loop):.1f} per iteration")
        header = (f"{'#':>3}  {'kernel':<28}{'core':>5}{'blocks':>7}{'cycles':>12}{'us':>10}{'HBM bytes':>14}"
                  f"{'L2 hit bytes':>14}  busiest pipe")
        lines.append(header)
        for i, p in enumerate(self.per_launch):
            r = p.result
            busy = max(r.pipe_busy.items(), key=lambda kv: kv[1], default=("-", 0))
            util = busy[1] / (r.cycles * r.block_dim) if r.cycles else 0.0
            hbm = r.gm_bytes - r.l2_hit_bytes
            lines.append(f"{i:>3}  {p.name:<28}{r.core_type.upper():>5}{p.blocks:>7}{r.cycles:>12,}"
                         f"{r.time_s * 1e6:>10.2f}{hbm:>14,}{r.l2_hit_bytes:>14,}  {busy[0]} {util:.0%}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def trace(self) -> dict[str, Any]:
        """One Chrome trace of all launches, placed one after the other (the simulator's CallProfile)."""
        return CallProfile([p.result for p in self.per_launch]).trace()

    def save_trace(self, path: str) -> None:
        """Write the combined Chrome-trace JSON (Perfetto opens it)."""
        CallProfile([p.result for p in self.per_launch]).save_trace(path)
