"""One launch from bound arguments to its result: functional run, timing groups, schedule, result.

A launch runs one or more parts (one per core type: a plain launch has one,
a mixed launch an AIC part and an AIV part). Cores have an index within their
core type and a launch-wide id (AIC cores first), which cross-core flags use.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from . import result, timing
from .chips import ChipConfig
from .decode import Decoded
from .executor import Runner
from .fuzz import RandomRunner
from .l2 import L2Cache
from .lockstep import Launch


@dataclass
class Part:
    """The cores of one type in a launch: what they run, how many, and the launch-wide id of the first."""

    dec: Decoded
    count: int
    gbase: int


def run(chip: ChipConfig, parts: list[Part], ctx: Launch, l2: L2Cache, block_dim: int, name: str,
        lockstep: bool = True, seed: Optional[int] = None, timed: bool = True
        ) -> tuple[Optional[result.LaunchResult], list]:
    """Run the launch functionally (in a random legal order when `seed` is given), then schedule it (unless
    `timed` is False: the result is then None); returns the result and the final groups."""
    pairs = [(p.dec, p.count) for p in parts]
    groups = (RandomRunner(ctx, pairs, seed) if seed is not None else Runner(ctx, pairs, lockstep)).run()
    for buf, off, nrows, stride, width in ctx.gm_writes:
        buf.note_store(off, nrows, stride, width)
    if not timed:
        return None, groups
    return schedule(chip, parts, groups, ctx, l2, block_dim, name), groups


def schedule(chip: ChipConfig, parts: list[Part], groups: list, ctx: Launch, l2: L2Cache, block_dim: int,
             name: str) -> result.LaunchResult:
    """The timing of a functional run's groups, and the launch result."""
    sources = ctx.xflags.sources if ctx.xflags is not None else None
    gbase = {p.dec.core_type: p.gbase for p in parts}
    tgroups = timing_groups(groups, gbase)
    total_cores = sum(p.count for p in parts)
    sched = timing.schedule(chip, tgroups, total_cores, l2, sources, ctx.args)
    return result.build(name, chip, block_dim, parts, groups, tgroups, sched, ctx.san is not None)


def timing_groups(groups: list, gbase: dict[str, int]) -> list[timing.TimingGroup]:
    """One timing group per distinct (program, stream, trailing scalar work); identical cores share it."""
    if len(groups) == 1:
        g = groups[0]
        cores = g.cores.tolist()
        base = gbase[g.core_type]
        return [timing.TimingGroup(g.stream, g.m, g.scyc, cores, g.core_type, [base + c for c in cores],
                                   {j: [t] for j, t in g.touches.items()}, g.dec)]
    buckets: dict[tuple, list] = {}
    for g in groups:
        key = (id(g.dec), g.scyc, tuple(g.stream))
        buckets.setdefault(key, []).append(g)
    out = []
    for gs in buckets.values():
        g0 = gs[0]
        order = sorted(((int(c), g, k) for g in gs for k, c in enumerate(g.cores)), key=lambda t: t[0])
        cores = [c for c, _, _ in order]
        touches: dict[int, list] = {}
        for g in gs:
            for j, t in g.touches.items():
                touches.setdefault(j, []).append(t)
        base = gbase[g0.core_type]
        out.append(timing.TimingGroup(g0.stream, sum(g.m for g in gs), g0.scyc, cores, g0.core_type,
                                      [base + c for c in cores], touches, g0.dec))
    return out
