"""The timing model: in-order pipes, flags, barriers and a shared GM bandwidth.

Input: per distinct instruction stream (cores whose dynamic streams are
identical share one), the pipe instructions in issue order with their costs.
The scalar unit issues them in program order (paying the scalar cycles spent
in between plus one issue slot each) into per-pipe in-order queues. Flags on
the scalar unit itself run as it reaches them: set_flag(S, X) fires at once,
wait_flag(X, S) stops all further issue until its set has fired. A pipe
starts its next instruction when the previous one has finished and it has
been issued; a wait_flag also needs the matching set_flag (the k-th wait of
an event pairs with its k-th set), which fires when the source pipe has
finished everything queued before it. pipe_barrier(ALL) and sync_all make
the scalar unit wait until its pipes drain; sync_all also waits for every
core.

GM transfers (MTE2, MTE3, FIX to or from GM) pay a start-up latency, then
move their bytes at their path's per-core rate, capped by a max-min fair
share of the chip's aggregate GM bandwidth among all transfers in flight on
all cores (a fluid model). The sum over cores therefore never exceeds the
aggregate. Everything is deterministic.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

from .chips import ChipConfig
from .errors import DoubleSetError, SimulatorError
from .isa import PIPES
from .stream import BAR, DMA, OP, SET, WAIT, StreamRecord

NP = len(PIPES)
_INF = math.inf


class TimingGroup:
    """The schedule of one distinct instruction stream, shared by `multiplicity` identical cores."""

    def __init__(self, stream: list[StreamRecord], multiplicity: int, tail_scalar: float, cores: list[int]):
        self.stream = stream
        self.m = multiplicity
        self.cores = cores
        self.tail_scalar = tail_scalar
        n = len(stream)
        self.issue = [0.0] * n
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.s_idx = 0
        self.s_time = 0.0
        self.s_busy = 0.0
        self.queues: list[list[int]] = [[] for _ in range(NP)]
        self.qhead = [0] * NP
        self.free_at = [0.0] * NP
        self.running = [False] * NP
        self.busy = [0.0] * NP
        self.fires: dict[tuple, list[tuple[float, int]]] = {}
        self.nwait: dict[tuple, int] = {}
        self.consumed: dict[tuple, list[tuple[float, int]]] = {}
        self.sync_k = 0
        self.arrived = False
        self.total = 0.0

    def drained(self) -> bool:
        for p in range(NP):
            if self.running[p] or self.qhead[p] < len(self.queues[p]):
                return False
        return True


class _Transfer:
    __slots__ = ("g", "p", "j", "rem", "cap", "m", "rate")

    def __init__(self, g: TimingGroup, p: int, j: int, nbytes: float, cap: float):
        self.g, self.p, self.j, self.rem, self.cap, self.m, self.rate = g, p, j, float(nbytes), cap, g.m, 0.0


class TimingEngine:
    def __init__(self, chip: ChipConfig, groups: list[TimingGroup]):
        self.chip = chip
        self.groups = groups
        self.capacity = float(chip.gm_bytes_per_cycle)
        self.issue_cost = chip.issue_cycles
        self.sync_cost = chip.sync_all_cycles
        self.pending: list = []
        self.seq = 0
        self.sync_arrivals: dict[int, list[float]] = {}
        self.sync_release: dict[int, float] = {}

    # ------------------------------------------------------------------ scheduling

    def _add_transfer(self, g: TimingGroup, p: int, j: int, data_start: float, nbytes: float, cap: float) -> None:
        self.seq += 1
        heapq.heappush(self.pending, (data_start, self.seq, _Transfer(g, p, j, nbytes, cap)))

    def _arrive(self, k: int, t: float) -> None:
        arr = self.sync_arrivals.setdefault(k, [])
        arr.append(t)
        if len(arr) == len(self.groups):
            self.sync_release[k] = max(arr) + self.sync_cost
            for g in self.groups:
                if g.arrived and g.sync_k == k:
                    self._advance(g)

    def _advance(self, g: TimingGroup) -> None:
        st = g.stream
        n = len(st)
        queues, qhead, free_at, running, busy = g.queues, g.qhead, g.free_at, g.running, g.busy
        issue, start, end = g.issue, g.start, g.end
        issue_cost = self.issue_cost
        while True:
            i = g.s_idx
            while i < n:
                rec = st[i]
                kind = rec.kind
                if kind >= BAR:
                    if not g.drained():
                        break
                    t = max(g.s_time + rec.scalar, max(free_at))
                    if kind == BAR:
                        g.s_busy += rec.scalar
                        start[i] = g.s_time + rec.scalar
                        end[i] = t
                        g.s_time = t
                        i += 1
                        continue
                    k = g.sync_k
                    if not g.arrived:
                        g.s_busy += rec.scalar
                        g.arrived = True
                        start[i] = t
                        g.s_idx = i
                        self._arrive(k, t)
                        if g.s_idx != i:  # released and advanced recursively
                            return
                    rel = self.sync_release.get(k)
                    if rel is None:
                        break
                    g.arrived = False
                    g.sync_k = k + 1
                    end[i] = rel
                    g.s_time = rel
                    i += 1
                    continue
                if rec.pipe == 0:  # a flag on the scalar unit itself: it runs as the scalar unit reaches it
                    t = g.s_time + rec.scalar + issue_cost
                    key = rec.key
                    if kind == SET:
                        g.fires.setdefault(key, []).append((t, i))
                        start[i] = t
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
                g.s_time += rec.scalar + issue_cost
                g.s_busy += rec.scalar + issue_cost
                issue[i] = g.s_time
                queues[rec.pipe].append(i)
                i += 1
            g.s_idx = i
            progressed = False
            for p in range(1, NP):
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
                        self._add_transfer(g, p, j, t + rec.cycles, rec.nbytes, rec.rate)
                        break
                    elif kind == SET:
                        key = rec.key
                        g.fires.setdefault(key, []).append((t, j))
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

    @staticmethod
    def _rates(active: list, capacity: float) -> None:
        active.sort(key=lambda tr: tr.cap)
        weight = 0
        for tr in active:
            weight += tr.m
        remaining = capacity
        for i, tr in enumerate(active):
            share = remaining / weight
            if tr.cap <= share:
                tr.rate = tr.cap
                remaining -= tr.cap * tr.m
                weight -= tr.m
            else:
                for tr2 in active[i:]:
                    tr2.rate = share
                return

    def run(self) -> float:
        for g in self.groups:
            self._advance(g)
        pending = self.pending
        active: list[_Transfer] = []
        now = 0.0
        dirty = False
        while active or pending:
            if dirty:
                if active:
                    self._rates(active, self.capacity)
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

    def check_double_sets(self, texts: list[str], stream_index: list) -> None:
        """A set that fires before the wait for the previous set consumed it loses an event."""
        for g in self.groups:
            for key, fires in g.fires.items():
                consumed = g.consumed.get(key, [])
                for k in range(len(fires) - 1):
                    if k < len(consumed) and fires[k + 1][0] < consumed[k][0] - 1e-9:
                        s1 = g.stream[fires[k][1]].instr
                        s2 = g.stream[fires[k + 1][1]].instr
                        w = g.stream[consumed[k][1]].instr
                        src, dst, ev = key
                        raise DoubleSetError(
                            f"core {g.cores[0]}: set_flag {PIPES[src]}->{PIPES[dst]} event {ev} is set twice "
                            f"without a wait: instruction #{s2} `{texts[s2]}` fires at cycle {fires[k + 1][0]:.0f} "
                            f"while the set by #{s1} (cycle {fires[k][0]:.0f}) is still pending; its wait #{w} "
                            f"`{texts[w]}` only consumes it at cycle {consumed[k][0]:.0f}. The event is lost and "
                            f"a later wait hangs on hardware",
                            g.cores[0],
                            ({"pipe": PIPES[src], "instruction": s1, "text": texts[s1]},
                             {"pipe": PIPES[src], "instruction": s2, "text": texts[s2]},
                             {"pipe": PIPES[dst], "instruction": w, "text": texts[w]}),
                        )


@dataclass
class Schedule:
    """Result of the timing model for one launch."""

    cycles: float
    groups: list[TimingGroup]


def schedule(chip: ChipConfig, groups: list[TimingGroup], texts: list[str]) -> Schedule:
    engine = TimingEngine(chip, groups)
    total = engine.run()
    engine.check_double_sets(texts, [])
    return Schedule(total, groups)
