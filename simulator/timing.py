"""The timing model: in-order pipes with bounded issue queues, flags, barriers, L2 and a shared GM bandwidth.

Input: per distinct instruction stream (cores whose dynamic streams are
identical share one), the records of stream.py in issue order. Every core
starts after the launch's start-up cost. The scalar unit issues in program
order (paying the scalar cycles spent in between plus one issue slot each)
into per-pipe in-order queues of `pipe_queue_depth` entries; when a queue is
full the scalar unit stalls until the pipe starts its oldest entry. Flags on
the scalar unit itself run as it reaches them: set_flag(S, X) fires at once,
wait_flag(X, S) stops all further issue until its set has fired. A pipe
starts its next instruction when the previous one has finished and it has
been issued; a wait_flag also needs the matching set_flag (the k-th wait of
an event pairs with its k-th set), which fires when the source pipe has
finished everything queued before it. pipe_barrier(ALL) and sync_all make
the scalar unit wait until its pipes drain; sync_all also waits for every
core. A cross-core wait stops the scalar unit until every source core has
made its matching cross-core set (see crossflags.py), plus a latency.

GM transfers (MTE2, MTE3, FIX to or from GM) pay a start-up latency, then
move their bytes at their path's per-core rate, capped by a max-min fair
share of two chip-wide resources: the L2 (every byte passes it) and HBM
(only the bytes that miss in L2: reads of lines it does not hold, stores that
dirty a line, each paying that line's one write-back). The L2 decides hits
when a transfer starts (l2.py). Everything is deterministic.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .chips import ChipConfig
from .errors import DoubleSetError, SimulatorError
from .isa import CORE_PIPES, PIPE_ID, PIPES
from .bandwidth import Transfer, fair_rates
from .l2 import L2Cache
from .stream import BAR, DMA, OP, SET, WAIT, XSET, XWAIT, StreamRecord

NP = len(PIPES)
_INF = math.inf


class TimingGroup:
    """The schedule of one distinct instruction stream, shared by `multiplicity` identical cores.

    cores: the cores' indices within their core type; gcores: their launch-wide ids (for
    cross-core flags); touches: stream index -> the GmTouch list of that DMA record.
    """

    def __init__(self, stream: list[StreamRecord], multiplicity: int, tail_scalar: float, cores: list[int],
                 core_type: str = "aiv", gcores: Optional[list[int]] = None, touches: Optional[dict] = None,
                 program: Any = None):
        self.stream = stream
        self.program = program  # the decoded program (texts, mnemonics), opaque here
        self.texts: list[str] = program.texts if program is not None else []
        self.m = multiplicity
        self.cores = cores
        self.gcores = cores if gcores is None else gcores
        self.core_type = core_type
        self.touches = touches or {}
        self.tail_scalar = tail_scalar
        n = len(stream)
        self.issue = [0.0] * n
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.hit = {}                        # stream index -> L2 hit fraction of that transfer
        self.hit_bytes = 0.0                 # bytes read from L2 hits, over the group's cores
        self.write_hit_bytes = 0.0           # bytes stored into lines L2 held dirty (no HBM write-back of their own)
        self.s_idx = 0
        self.s_time = 0.0
        self.s_busy = 0.0
        self.t0 = 0.0
        self.queues: list[list[int]] = [[] for _ in range(NP)]
        self.qhead = [0] * NP
        self.free_at = [0.0] * NP
        self.running = [False] * NP
        self.busy = [0.0] * NP
        self.fires: dict[tuple, list[tuple[float, int]]] = {}
        self.nwait: dict[tuple, int] = {}
        self.consumed: dict[tuple, list[tuple[float, int]]] = {}
        self.nxwait: dict[tuple, int] = {}
        self.sync_k = 0
        self.arrived = False
        self.total = 0.0
        self.pipes = [PIPE_ID[p] for p in CORE_PIPES[core_type] if p != "S"]  # the queued pipes it has

    def drained(self) -> bool:
        running, qhead, queues = self.running, self.qhead, self.queues
        for p in self.pipes:
            if running[p] or qhead[p] < len(queues[p]):
                return False
        return True


class TimingEngine:
    def __init__(self, chip: ChipConfig, groups: list[TimingGroup], l2: Optional[L2Cache] = None,
                 start: float = 0.0, sources: Optional[Callable[[tuple, int], list[int]]] = None,
                 args: Optional[dict] = None):
        self.chip = chip
        self.args = args or {}
        self.groups = groups
        self.l2 = l2
        self.hbm_capacity = float(chip.gm_bytes_per_cycle)
        self.l2_capacity = float(chip.l2_bytes_per_cycle)
        self.issue_cost = chip.issue_cycles
        self.sync_cost = chip.sync_all_cycles
        self.depth = chip.pipe_queue_depth
        self.xlatency = chip.cross_flag_cycles
        self.sources = sources
        self.pending: list = []
        self.seq = 0
        self.sync_arrivals: dict[int, list[float]] = {}
        self.sync_release: dict[int, float] = {}
        self.xfires: dict[tuple, dict[int, list[float]]] = {}   # (mode, flag) -> core -> fire times
        self.xblocked: set[TimingGroup] = set()                 # groups whose scalar unit waits on a cross flag
        self.xdirty = False
        for g in groups:
            g.s_time = g.t0 = start
            g.free_at = [start] * NP

    # ------------------------------------------------------------------ scheduling

    def _add_transfer(self, g: TimingGroup, p: int, j: int, data_start: float, rec: StreamRecord) -> None:
        hbm = 1.0
        touches = g.touches.get(j)
        if touches:
            write = touches[0].write
            hit = self.l2.access(touches, self.args) if self.l2 is not None else 0.0
            g.hit[j] = hit
            hbm = 1.0 - hit   # a store hits a resident dirty line only: its write-back is paid already
            nbytes = hit * touches[0].nrows * touches[0].width * g.m
            if write:
                g.write_hit_bytes += nbytes
            else:
                g.hit_bytes += nbytes
        self.seq += 1
        heapq.heappush(self.pending, (data_start, self.seq, Transfer(g, p, j, rec.nbytes, rec.rate, hbm)))

    def _arrive(self, k: int, t: float) -> None:
        arr = self.sync_arrivals.setdefault(k, [])
        arr.append(t)
        if len(arr) == len(self.groups):
            self.sync_release[k] = max(arr) + self.sync_cost
            for g in self.groups:
                if g.arrived and g.sync_k == k:
                    self._advance(g)

    def _xfire(self, g: TimingGroup, key: tuple, t: float) -> None:
        table = self.xfires.setdefault(key, {})
        for c in g.gcores:
            table.setdefault(c, []).append(t)
        self.xdirty = True

    def _release_cross_waits(self) -> None:
        while self.xdirty and self.xblocked:
            self.xdirty = False
            for w in sorted(self.xblocked, key=lambda g: g.gcores[0]):
                self._advance(w)

    def _xwait_time(self, g: TimingGroup, key: tuple) -> Optional[float]:
        """When the k-th cross-core wait of `key` completes on every core of `g`, or None if not yet known."""
        k = g.nxwait.get(key, 0)
        table = self.xfires.get(key, {})
        t = -_INF
        for c in g.gcores:
            for s in self.sources(key, c):
                fires = table.get(s)
                if fires is None or len(fires) <= k:
                    return None
                if fires[k] > t:
                    t = fires[k]
        return t + self.xlatency

    def _scalar_wait(self, g: TimingGroup, i: int, rec: StreamRecord) -> bool:
        """BAR / SYNC / XWAIT at stream index i; returns False when the scalar unit must stop here for now."""
        kind = rec.kind
        start, end = g.start, g.end
        if kind == XWAIT:
            t = self._xwait_time(g, rec.key)
            if t is None:
                self.xblocked.add(g)
                return False
            self.xblocked.discard(g)
            s = g.s_time + rec.scalar + self.issue_cost
            g.s_busy += rec.scalar + self.issue_cost
            g.nxwait[rec.key] = g.nxwait.get(rec.key, 0) + 1
            start[i] = g.issue[i] = s
            end[i] = max(s, t)
            g.s_time = end[i]
            return True
        if not g.drained():
            return False
        t = max(g.s_time + rec.scalar, max(g.free_at))
        if kind == BAR:
            g.s_busy += rec.scalar
            start[i] = g.s_time + rec.scalar
            end[i] = t
            g.s_time = t
            return True
        k = g.sync_k
        if not g.arrived:
            g.s_busy += rec.scalar
            g.arrived = True
            start[i] = t
            g.s_idx = i
            self._arrive(k, t)
            if g.s_idx != i:  # released and advanced recursively
                return False
        rel = self.sync_release.get(k)
        if rel is None:
            return False
        g.arrived = False
        g.sync_k = k + 1
        end[i] = rel
        g.s_time = rel
        return True

    def _advance(self, g: TimingGroup) -> None:
        st = g.stream
        n = len(st)
        queues, qhead, free_at, running, busy = g.queues, g.qhead, g.free_at, g.running, g.busy
        issue, start, end = g.issue, g.start, g.end
        issue_cost, depth = self.issue_cost, self.depth
        while True:
            i = g.s_idx
            while i < n:
                rec = st[i]
                kind = rec.kind
                if kind >= BAR:
                    if not self._scalar_wait(g, i, rec):
                        if g.s_idx > i:  # advanced recursively past this record
                            return
                        break
                    i += 1
                    continue
                p = rec.pipe
                if p == 0:  # a flag on the scalar unit itself: it runs as the scalar unit reaches it
                    t = g.s_time + rec.scalar + issue_cost
                    key = rec.key
                    if kind == SET:
                        g.fires.setdefault(key, []).append((t, i))
                        start[i] = t
                    elif kind == XSET:
                        start[i] = t
                        self._xfire(g, key, t)
                    elif kind == WAIT:  # wait_flag(X, S): the scalar unit stops issuing until the k-th set fires
                        k = g.nwait.get(key, 0)
                        fl = g.fires.get(key)
                        if fl is None or len(fl) <= k:
                            break
                        start[i] = t
                        if fl[k][0] > t:
                            t = fl[k][0]
                        g.nwait[key] = k + 1
                        g.consumed.setdefault(key, []).append((t, i))
                    else:  # pipe_barrier(S): the scalar unit is in order anyway
                        start[i] = t
                    g.s_busy += rec.scalar + issue_cost
                    issue[i] = start[i]
                    end[i] = t
                    g.s_time = t
                    i += 1
                    continue
                q = queues[p]
                full = len(q) - depth
                if full >= 0:  # the queue is full until the pipe starts the entry `depth` from the end
                    if full >= qhead[p]:
                        break
                    free = start[q[full]]
                    if free > g.s_time:
                        g.s_time = free
                g.s_time += rec.scalar + issue_cost
                g.s_busy += rec.scalar + issue_cost
                issue[i] = g.s_time
                q.append(i)
                i += 1
            g.s_idx = i
            progressed = False
            for p in g.pipes:
                if running[p]:
                    continue
                q = queues[p]
                h = qhead[p]
                nq = len(q)
                if h >= nq:
                    continue
                fa = free_at[p]
                while h < nq:
                    j = q[h]
                    rec = st[j]
                    kind = rec.kind
                    t = issue[j]
                    if fa > t:
                        t = fa
                    if kind == OP:
                        start[j] = t
                        fa = t + rec.cycles
                        end[j] = fa
                        busy[p] += rec.cycles
                    elif kind == DMA:
                        start[j] = t
                        running[p] = True
                        fa = t
                        h += 1
                        progressed = True
                        self._add_transfer(g, p, j, t + rec.cycles, rec)
                        break
                    elif kind == SET:
                        g.fires.setdefault(rec.key, []).append((t, j))
                        start[j] = end[j] = t
                        fa = t
                    elif kind == XSET:
                        self._xfire(g, rec.key, t)
                        start[j] = end[j] = t
                        fa = t
                    else:  # WAIT
                        key = rec.key
                        k = g.nwait.get(key, 0)
                        fl = g.fires.get(key)
                        if fl is None or len(fl) <= k:
                            break
                        f = fl[k][0]
                        if f > t:
                            t = f
                        g.nwait[key] = k + 1
                        g.consumed.setdefault(key, []).append((t, j))
                        start[j] = end[j] = t
                        fa = t
                    h += 1
                    progressed = True
                qhead[p] = h
                free_at[p] = fa
            if not progressed:
                return

    def run(self) -> float:
        for g in self.groups:
            self._advance(g)
        self._release_cross_waits()
        pending = self.pending
        active: list[Transfer] = []
        now = 0.0
        dirty = False
        while active or pending:
            if dirty:
                if active:
                    fair_rates(active, self.hbm_capacity, self.l2_capacity)
                dirty = False
            t_done = _INF
            first = None
            for tr in active:
                t = tr.rem / tr.rate
                if t < t_done:
                    t_done, first = t, tr
            t_done += now
            t_start = pending[0][0] if pending else _INF
            if t_start <= t_done:
                dt = t_start - now
                if dt > 0:
                    for tr in active:
                        tr.rem -= tr.rate * dt
                now = t_start
                while pending and pending[0][0] <= now:
                    active.append(heapq.heappop(pending)[2])
                dirty = True
                continue
            dt = t_done - now
            for tr in active:
                tr.rem -= tr.rate * dt
            now = t_done
            done = [tr for tr in active if tr is first or tr.rem <= 1e-9 * (1.0 + tr.rate)]
            active = [tr for tr in active if not (tr is first or tr.rem <= 1e-9 * (1.0 + tr.rate))]
            dirty = True
            for tr in done:
                g, p, j = tr.g, tr.p, tr.j
                g.end[j] = now
                g.busy[p] += now - g.start[j]
                g.running[p] = False
                g.free_at[p] = now
            for tr in done:
                self._advance(tr.g)
            self._release_cross_waits()
        total = 0.0
        for g in self.groups:
            if g.s_idx < len(g.stream) or not g.drained():
                raise SimulatorError(
                    f"internal: timing schedule of cores {g.cores[:8]} stopped at stream record {g.s_idx} "
                    f"of {len(g.stream)}"
                )
            g.s_busy += g.tail_scalar
            g.total = max(g.s_time + g.tail_scalar, max(g.free_at))
            total = max(total, g.total)
        return total

    def check_double_sets(self) -> None:
        """A set that fires before the wait for the previous set consumed it loses an event."""
        for g in self.groups:
            for key, fires in g.fires.items():
                consumed = g.consumed.get(key, [])
                for k in range(len(fires) - 1):
                    if k < len(consumed) and fires[k + 1][0] < consumed[k][0] - 1e-9:
                        tx = g.texts
                        s1 = g.stream[fires[k][1]].instr
                        s2 = g.stream[fires[k + 1][1]].instr
                        w = g.stream[consumed[k][1]].instr
                        src, dst, ev = key
                        raise DoubleSetError(
                            f"core {g.cores[0]}: set_flag {PIPES[src]}->{PIPES[dst]} event {ev} is set twice "
                            f"without a wait: instruction #{s2} `{tx[s2]}` fires at cycle {fires[k + 1][0]:.0f} "
                            f"while the set by #{s1} (cycle {fires[k][0]:.0f}) is still pending; its wait #{w} "
                            f"`{tx[w]}` only consumes it at cycle {consumed[k][0]:.0f}. The event is lost and "
                            f"a later wait hangs on hardware",
                            g.cores[0],
                            ({"pipe": PIPES[src], "instruction": s1, "text": tx[s1]},
                             {"pipe": PIPES[src], "instruction": s2, "text": tx[s2]},
                             {"pipe": PIPES[dst], "instruction": w, "text": tx[w]}),
                        )


@dataclass
class Schedule:
    """Result of the timing model for one launch: total cycles (start-up included) and the start-up."""

    cycles: float
    startup: float
    groups: list[TimingGroup]


def startup_cycles(chip: ChipConfig, cores: int) -> float:
    """The launch's fixed cost before any core issues its first instruction."""
    return float(chip.launch_startup_cycles + chip.launch_core_cycles * cores)


def schedule(chip: ChipConfig, groups: list[TimingGroup], cores: int, l2: Optional[L2Cache] = None,
             sources: Optional[Callable[[tuple, int], list[int]]] = None, args: Optional[dict] = None) -> Schedule:
    """Schedule one launch of `cores` cores; `sources(flag key, core)` lists the cores a cross-core wait needs;
    `args` are the launch's GM buffers by kernel argument (for the L2)."""
    start = startup_cycles(chip, cores)
    engine = TimingEngine(chip, groups, l2, start, sources, args)
    total = engine.run()
    if engine.xblocked:
        raise SimulatorError("internal: a cross-core wait was never satisfied in the timing schedule")
    engine.check_double_sets()
    return Schedule(total, start, groups)

