"""What the tiler and the driver do with any schedule a template builds: one core type's `TileSchedule`, or a
`MixedSchedule` (a cube side and a vector side in groups). One function per step, each side handled by the
single-schedule step, the mixed launch adding its cross-core flags and its shared clock:

    check(s, chip)              the buffers of every side fit their memories (raises CapacityError)
    score(s, dims, chip)        the cost model's estimate (a mixed launch: its sides overlap, sharing GM)
    plan_flags(s, chip, mode)   the sync plan (a mixed launch: one per side plus the cross-core plan)
    build(s, flags, chip)       the simulator program (a mixed launch: a MixedKernel)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Union

from .. import symbolic as sy
from ..target import Chip, MixedKernel, Program
from .cost import Estimate, estimate, launch_cycles
from .cross_sync import CrossPlan, plan_cross
from .emit import emit, layout_buffers
from .schedule import AnySchedule, MixedSchedule, TileOp, TileSchedule, addresses
from .sync import SyncPlan, plan_sync


@dataclass
class MixedSync:
    """The flags of a mixed launch: each side's own, and the cross-core ones between them."""

    aic: SyncPlan
    aiv: SyncPlan
    cross: CrossPlan

    @property
    def flags(self) -> int:
        return self.aic.flags + self.aiv.flags + self.cross.flags

    @property
    def ids_used(self) -> dict[tuple[str, str], int]:
        out = dict(self.aic.ids_used)
        for pair, n in self.aiv.ids_used.items():
            out[pair] = max(n, out.get(pair, 0))
        return out

    def summary(self) -> str:
        return f"aic {self.aic.summary()}; aiv {self.aiv.summary()}; {self.cross.summary()}"


AnySync = Union[SyncPlan, MixedSync]


def sides(s: AnySchedule) -> tuple[TileSchedule, ...]:
    return s.sides if isinstance(s, MixedSchedule) else (s,)


def check(s: AnySchedule, chip: Chip) -> None:
    for side in sides(s):
        layout_buffers(side, chip)


def score(s: AnySchedule, dims: Mapping[str, int], chip: Chip, memo: dict | None = None) -> Estimate:
    """`memo`: the estimates of the sides scored so far for these dims and chip (a side that several candidates
    share, unchanged, is estimated once)."""
    if not isinstance(s, MixedSchedule):
        return estimate(s, dims, chip)
    # a two-stage pipeline per group: its AIC makes block after block, its AIVs finish each one the next. Over
    # b blocks it takes the slower side's b blocks plus the faster side's one (the first block's fill or the
    # last one's drain). Each side's estimate already holds its own GM traffic
    one_way = bool(s.channels) and not s.round_trip
    p = estimate(s.prologue, dims, chip) if s.prologue is not None else None
    a = _estimate(s.aic, dims, chip, memo, _barrier if p is not None else None)
    v = _estimate(s.aiv, dims, chip, memo, _touches_channel(s) if one_way else None)
    start = launch_cycles(chip, a.blocks + v.blocks)
    aic, aiv = (e.cycles - launch_cycles(chip, e.blocks) for e in (a, v))
    first = 0.0
    if p is not None:
        # the vector cores' prologue runs before the barrier the cube waits at: in front of the pipeline, not in
        # it; so do the cube's loads ahead of the barrier (of what the prologue does not write)
        pro = min(aiv, p.cycles - launch_cycles(chip, p.blocks))
        ahead = aic - a.tail if a.tail > 0 else 0.0
        first = max(pro, ahead) + chip.sync_all_cycles
        aic -= ahead
        aiv -= pro
    steps = sy.evaluate(s.steps, dims)
    if one_way and aic >= aiv:
        # the cube is the slower side: the launch ends when the vector cores have finished the last tile handed
        # over, a cross-core flag after the cube's last FixPipe (their loads of the tile's other inputs went
        # ahead of their wait for it), and the tiles of the last block that queued before it
        core = first + aic + chip.cross_flag_cycles + v.tail + _backlog(s, a, v, p, steps)
    else:
        core = first + two_stage(aic, aiv, steps)
    if s.round_trip:
        # a tile that goes round waits for both sides' work on it: with n in flight, each step takes at least
        # 1/n of a step of both (one in flight: the sides take turns). Measured on attention (910b, causal
        # 8x1024x128): one in flight runs 0.8-1.0x the sides' sum, two run at the slower side's pace
        core = max(core, (aic + aiv) / s.round_trip)
    busy = {**v.busy, **a.busy}
    return Estimate(core + start, core, a.gm_bytes + v.gm_bytes, a.blocks, busy)


def _estimate(side: TileSchedule, dims: Mapping[str, int], chip: Chip, memo: dict | None,
              tail_from: Callable[[TileOp], bool] | None = None) -> Estimate:
    if memo is None:
        return estimate(side, dims, chip, tail_from=tail_from)
    # (a side is always asked with or always without its tail: a mixed launch's vector side with it)
    hit = memo.get(id(side))
    if hit is None or hit[0] is not side:   # (the memo holds the side: its id names no other object meanwhile)
        hit = memo[id(side)] = (side, estimate(side, dims, chip, tail_from=tail_from))
    return hit[1]


def _barrier(op: TileOp) -> bool:
    return op.instr == "sync_all"


def _touches_channel(s: MixedSchedule) -> Callable[[TileOp], bool]:
    """Picks the ops that address a channel: the cube's writes of a tile it hands over, the vector side's reads
    of it (where the drain starts)."""
    return addresses({c.param for c in s.channels})


def _backlog(s: MixedSchedule, a: Estimate, v: Estimate, p: Estimate | None, steps: int) -> float:
    """The cycles the last block's chunks wait for the vector cores: they arrive one FixPipe apart, and when the
    vector cores take longer for each (their busiest pipe's share of a hand-over), the later ones queue behind
    the earlier ones."""
    if s.chunks <= 1 or steps <= 0:
        return 0.0
    pro = p.busy if p is not None else {}
    vector = max((b - pro.get(pipe, 0.0) for pipe, b in v.busy.items()), default=0.0) / steps
    fix = max((a.busy.get(pipe, 0.0) for pipe in _handing(s)), default=0.0) / steps
    return (s.chunks - 1) * max(0.0, vector - fix)


def _handing(s: MixedSchedule) -> set[str]:
    """The cube side's pipes that write the channels (its FixPipes into the workspace)."""
    touches = _touches_channel(s)
    return {op.pipe for op in s.aic.ops() if touches(op)}


def two_stage(aic: float, aiv: float, steps: int) -> float:
    """The time of a group whose sides pipeline `steps` tiles, one side taking `aic` and the other `aiv` for
    all of them: the slower side's, plus the faster side's share of one tile (non-decreasing in both)."""
    return max(aic, aiv) + min(aic, aiv) / max(1, steps)


def plan_flags(s: AnySchedule, chip: Chip, mode: str) -> AnySync:
    """Raises SyncAllocationError (or CrossSyncError) when the flags do not fit the chip's ids."""
    if not isinstance(s, MixedSchedule):
        return plan_sync(s.body, s.buffers, chip.event_ids, mode)
    return MixedSync(plan_sync(s.aic.body, s.aic.buffers, chip.event_ids, mode),
                     plan_sync(s.aiv.body, s.aiv.buffers, chip.event_ids, mode), plan_cross(s, chip))


def build(s: AnySchedule, flags: AnySync, chip: Chip) -> Union[Program, MixedKernel]:
    if not isinstance(s, MixedSchedule):
        return emit(s, flags, chip)
    assert isinstance(flags, MixedSync)
    aic = emit(s.aic, flags.aic, chip, flags.cross.sides["aic"])
    aiv = emit(s.aiv, flags.aiv, chip, flags.cross.sides["aiv"])
    return MixedKernel(aic, aiv, s.name)
