"""Sync insertion as an analysis: which flags a tile schedule needs, derived from its ops' pipes and buffers.

Pipes run in parallel and in order; only flags order them. For every block
(the kernel body, a loop body, a guarded block) and every on-chip buffer:

- forward flags: an access on pipe Q that conflicts with an earlier access on
  pipe P != Q in the same block (read after write, write after read or write)
  needs set_flag(P, Q) right after the earlier statement and wait_flag(P, Q)
  right before the later one. A statement that is a loop or a guarded block
  counts as all the accesses inside it: a flag set after a loop fires when
  the pipe has finished everything the loop queued, and a wait before a loop
  holds every op of that pipe inside it — so the flag is executed as often
  as its block, never once per inner iteration;
- buffer-free flags (the TQue protocol): inside a loop, the first accesses of
  a buffer in iteration i + d conflict with its last accesses in iteration
  i, where d is the buffer's slot count when the loop rotates its slots
  (ping-pong) and 1 otherwise. Such a flag is pre-set once per slot before
  the loop, waited for before the first access and set after the last one in
  the body, and drained once per slot after the loop (around the outermost
  enclosing loop that touches the buffer nowhere else); a loop nested in
  another whose flags cannot be hoisted instead skips the wait in its first
  d iterations and the set in its last d, so nothing crosses its ends;
- only the most recent conflicting access on each other pipe counts (pipes
  are in order), and a flag is dropped when an earlier wait of the same pipe
  pair already orders it ("merged where identical");
- event ids: a flag whose buffer rotates uses one id per slot (base + slot),
  otherwise one id; ids are allocated per ordered pipe pair within the chip's
  `event_ids`.

`sync="barrier"` (a debug mode for bisecting) ignores all this and puts a
`pipe_barrier("ALL")` after every tile op.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .. import symbolic as sy
from ..symbolic import IntLike
from .schedule import Buffer, Loop, Stmt, TileOp, When


class SyncAllocationError(Exception):
    """A schedule needs more event ids on one pipe pair than the chip has (the tiler rejects it)."""


@dataclass(frozen=True)
class SyncOp:
    kind: str             # "set", "wait" or "barrier"
    src: str = ""
    dst: str = ""
    event: IntLike = 0
    when: IntLike | None = None   # only when this is nonzero (a buffer-free flag of a nested loop)

    def __str__(self) -> str:
        if self.kind == "barrier":
            return "pipe_barrier(ALL)"
        text = f"{self.kind}_flag({self.src}->{self.dst}, {self.event})"
        return text if self.when is None else f"if {self.when}: {text}"


@dataclass
class SyncPlan:
    """Sync ops to put before and after statements (keyed by `id(stmt)`), plus counts for reports."""

    before: dict[int, list[SyncOp]] = field(default_factory=dict)
    after: dict[int, list[SyncOp]] = field(default_factory=dict)
    ids_used: dict[tuple[str, str], int] = field(default_factory=dict)
    flags: int = 0          # distinct flags (one per edge kept, whatever its slot count)
    mode: str = "flags"

    def add_before(self, stmt: Stmt, op: SyncOp) -> None:
        self.before.setdefault(id(stmt), []).append(op)

    def add_after(self, stmt: Stmt, op: SyncOp) -> None:
        self.after.setdefault(id(stmt), []).append(op)

    def summary(self) -> str:
        if self.mode == "barrier":
            return "sync: barrier mode (pipe_barrier(ALL) after every tile op)"
        pairs = ", ".join(f"{s}->{d}: {n}" for (s, d), n in sorted(self.ids_used.items())) or "none"
        return f"sync: {self.flags} flags; event ids per pipe pair: {pairs}"


@dataclass(frozen=True)
class _Access:
    pipe: str
    buffer: str
    write: bool
    slot: IntLike


@dataclass(frozen=True)
class _Edge:
    src_stmt: int          # index in the block (for loop-carried edges: in the previous iteration)
    src_pipe: str
    dst_stmt: int
    dst_pipe: str
    rotate: int            # ids the flag needs: the buffer's slots when its slot varies in this block, else 1
    slot: IntLike          # the slot expression (0 when rotate == 1)


class _Ids:
    def __init__(self, limit: int):
        self.limit = limit
        self.next: dict[tuple[str, str], int] = {}

    def take(self, src: str, dst: str, count: int) -> int:
        base = self.next.get((src, dst), 0)
        if base + count > self.limit:
            raise SyncAllocationError(f"the schedule needs more than {self.limit} event ids for flags {src}->{dst}")
        self.next[(src, dst)] = base + count
        return base


def plan_sync(body: Sequence[Stmt], buffers: Sequence[Buffer], event_ids: int, mode: str = "flags") -> SyncPlan:
    """The sync plan of a schedule body (see the module docstring)."""
    plan = SyncPlan(mode=mode)
    if mode == "barrier":
        for s in _all_ops(body):
            plan.add_after(s, SyncOp("barrier"))
        return plan
    if mode != "flags":
        raise ValueError(f"sync mode must be 'flags' or 'barrier', got {mode!r}")
    slots = {b.name: b.slots for b in buffers}
    ids = _Ids(event_ids)
    _Planner(plan, ids, slots).block(list(body), loops=())
    plan.ids_used = dict(ids.next)
    return plan


def _all_ops(body: Sequence[Stmt]) -> Iterable[TileOp]:
    for s in body:
        if isinstance(s, TileOp):
            yield s
        elif isinstance(s, (Loop, When)):
            yield from _all_ops(s.body)


class _Planner:
    def __init__(self, plan: SyncPlan, ids: _Ids, slots: dict[str, int]):
        self.plan = plan
        self.ids = ids
        self.slots = slots
        self._summaries: dict[int, list[_Access]] = {}
        self.handled: set[tuple[int, str]] = set()   # (loop, buffer) whose buffer-free flags an inner loop owns

    # -- what a statement touches ------------------------------------------------------
    def accesses(self, s: Stmt) -> list[_Access]:
        key = id(s)
        if key not in self._summaries:
            out: list[_Access] = []
            if isinstance(s, TileOp):
                out.extend(_Access(s.pipe, r.buffer, False, r.slot) for r in s.reads)
                out.extend(_Access(s.pipe, w.buffer, True, w.slot) for w in s.writes)
            elif isinstance(s, (Loop, When)):
                for inner in s.body:
                    out.extend(self.accesses(inner))
            self._summaries[key] = _dedupe(out)
        return self._summaries[key]

    # -- one block -------------------------------------------------------------------------
    def block(self, stmts: list[Stmt], loops: tuple[Loop, ...]) -> list[_Edge]:
        """Plan the block and everything inside it; returns the block's forward edges."""
        for s in stmts:
            if isinstance(s, Loop):
                inner = self.block(s.body, loops + (s,))
                self.loop_carried(s, loops + (s,), inner)
            elif isinstance(s, When):
                self.block(s.body, loops)
        in_scope = {lp.var for lp in loops}
        pipes = [{a.pipe for a in self.accesses(st)} for st in stmts]
        kept = _select(self.forward_edges(stmts, in_scope), pipes)
        for e in kept:
            self.place_forward(stmts, e)
        return kept

    def forward_edges(self, stmts: list[Stmt], in_scope: set[str]) -> list[_Edge]:
        hist: dict[str, list[tuple[int, _Access]]] = {}
        edges: list[_Edge] = []
        for j, s in enumerate(stmts):
            mine = self.accesses(s)
            for a in mine:
                edges.extend(self._edges_into(j, a, hist.get(a.buffer, ()), in_scope))
            for a in mine:
                hist.setdefault(a.buffer, []).append((j, a))
        return edges

    def _edges_into(self, j: int, a: _Access, history: Iterable[tuple[int, _Access]], in_scope: set[str],
                    offset: int = 0) -> list[_Edge]:
        """Edges from the most recent conflicting access on each other pipe to access `a` at statement j."""
        latest: dict[str, tuple[int, _Access]] = {}
        for i, b in history:
            if b.pipe != a.pipe and (a.write or b.write):
                latest[b.pipe] = (i, b)
        out = []
        for pipe, (i, b) in latest.items():
            rotate, slot = self._rotation(a, b, in_scope)
            out.append(_Edge(i - offset, pipe, j, a.pipe, rotate, slot))
        return out

    def _rotation(self, a: _Access, b: _Access, in_scope: set[str]) -> tuple[int, IntLike]:
        for acc in (a, b):
            slot = acc.slot
            if not isinstance(slot, int) and sy.free_symbols(slot) <= in_scope:
                return self.slots[acc.buffer], slot
        return 1, 0

    # -- loop-carried (buffer free) -------------------------------------------------------
    def loop_carried(self, loop: Loop, loops: tuple[Loop, ...], forward: list[_Edge]) -> None:
        stmts = loop.body
        in_scope = {lp.var for lp in loops}
        n = len(stmts)
        per_buffer: dict[str, list[tuple[int, _Access]]] = {}
        for j, s in enumerate(stmts):
            for a in self.accesses(s):
                per_buffer.setdefault(a.buffer, []).append((j, a))
        groups: dict[tuple[int, int], tuple[Stmt, list[_Edge]]] = {}
        for buf, hist in per_buffer.items():
            if (id(loop), buf) in self.handled:
                continue
            edges: list[_Edge] = []
            # the next use of the same slot: iteration i + d sees the accesses of iteration i first
            for j, a in hist:
                prior = [(i - n, b) for i, b in hist] + [(i, b) for i, b in hist if i < j]
                for e in self._edges_into(j, a, prior, in_scope):
                    if e.src_stmt < 0:
                        edges.append(_Edge(e.src_stmt + n, e.src_pipe, e.dst_stmt, e.dst_pipe, e.rotate, e.slot))
            if edges:
                around = self._hoist(buf, loops)
                for e in edges:
                    groups.setdefault((id(around), e.rotate), (around, []))[1].append(e)
        if not groups:
            return
        pipes = [{a.pipe for a in self.accesses(st)} for st in stmts]
        # two iterations back to back: the forward flags order both, the buffer-free flags cross between them
        twice = pipes + pipes
        given = forward + [_Edge(e.src_stmt + n, e.src_pipe, e.dst_stmt + n, e.dst_pipe, e.rotate, e.slot)
                           for e in forward]
        for around, edges in groups.values():
            shifted = [_Edge(e.src_stmt, e.src_pipe, e.dst_stmt + n, e.dst_pipe, e.rotate, e.slot) for e in edges]
            for e in _select(shifted, twice, given):
                self.place_carried(loop, around, _Edge(e.src_stmt, e.src_pipe, e.dst_stmt - n, e.dst_pipe,
                                                       e.rotate, e.slot), nested=len(loops) > 1)

    def _hoist(self, buffer: str, loops: tuple[Loop, ...]) -> Stmt:
        """Where the pre-sets and drains of `buffer`'s buffer-free flags in loops[-1] go: around the
        outermost enclosing loop in which nothing else touches the buffer. Re-arming them in every
        iteration of an outer loop would set a flag again with no chain back from its last wait."""
        k = len(loops) - 1
        while k > 0:
            parent = loops[k - 1]
            holder = next(s for s in parent.body if _contains(s, loops[k]))
            if any(a.buffer == buffer for s in parent.body if s is not holder for a in self.accesses(s)):
                break
            self.handled.add((id(parent), buffer))
            k -= 1
        return loops[k]

    # -- placement ------------------------------------------------------------------------
    def place_forward(self, stmts: list[Stmt], e: _Edge) -> None:
        base = self.ids.take(e.src_pipe, e.dst_pipe, e.rotate)
        event = sy.add(base, e.slot)
        self.plan.add_after(stmts[e.src_stmt], SyncOp("set", e.src_pipe, e.dst_pipe, event))
        self.plan.add_before(stmts[e.dst_stmt], SyncOp("wait", e.src_pipe, e.dst_pipe, event))
        self.plan.flags += 1

    def place_carried(self, loop: Loop, around: Stmt, e: _Edge, nested: bool) -> None:
        count = e.rotate
        base = self.ids.take(e.src_pipe, e.dst_pipe, count)
        event = sy.add(base, e.slot)
        if nested and around is loop:
            # a loop inside another whose flags cannot be hoisted out of it: pre-set and drain would arm the
            # flag again in the next outer iteration with no chain back from the drain's wait. Instead the
            # first `count` iterations skip the wait and the last `count` skip the set: balanced inside the
            # loop, nothing crosses its ends.
            ahead = sy.mul(count, loop.step)
            first = sy.ge(sy.sym(loop.var), sy.add(loop.start, ahead))
            more = sy.lt(sy.add(sy.sym(loop.var), ahead), loop.stop)
            self.plan.add_before(loop.body[e.dst_stmt], SyncOp("wait", e.src_pipe, e.dst_pipe, event, first))
            self.plan.add_after(loop.body[e.src_stmt], SyncOp("set", e.src_pipe, e.dst_pipe, event, more))
            self.plan.flags += 1
            return
        for k in range(count):
            self.plan.add_before(around, SyncOp("set", e.src_pipe, e.dst_pipe, base + k))
        self.plan.add_before(loop.body[e.dst_stmt], SyncOp("wait", e.src_pipe, e.dst_pipe, event))
        self.plan.add_after(loop.body[e.src_stmt], SyncOp("set", e.src_pipe, e.dst_pipe, event))
        for k in range(count):
            self.plan.add_after(around, SyncOp("wait", e.src_pipe, e.dst_pipe, base + k))
        self.plan.flags += 1


def _dedupe(accesses: list[_Access]) -> list[_Access]:
    seen: dict[tuple, _Access] = {}
    for a in accesses:
        key = (a.pipe, a.buffer, a.write, a.slot)
        seen.setdefault(key, a)
    return list(seen.values())


def _select(cands: list[_Edge], pipes: list[set[str]], given: Sequence[_Edge] = ()) -> list[_Edge]:
    """The candidate edges that earlier flags and in-order pipes do not already imply.

    A vector clock per (statement, pipe) says, for each other pipe, the latest statement known to be
    finished when this pipe starts the statement: it inherits the clock of the pipe's previous
    statement, and each wait adds what the setting pipe knew plus the set point itself. A candidate
    is dropped when the clock already covers its source; among candidates into the same point the
    latest source is tried first, so one flag serves several buffers ("merged where identical").
    `given` edges (already placed) order but are not returned.
    """
    by_dst: dict[tuple[int, str], list[_Edge]] = {}
    for e in cands:
        by_dst.setdefault((e.dst_stmt, e.dst_pipe), []).append(e)
    given_by_dst: dict[tuple[int, str], list[_Edge]] = {}
    for e in given:
        given_by_dst.setdefault((e.dst_stmt, e.dst_pipe), []).append(e)
    clock: dict[tuple[int, str], dict[str, int]] = {}
    last_on: dict[str, int] = {}
    kept: list[_Edge] = []

    def after(i: int, pipe: str) -> dict[str, int]:
        """What is known once `pipe` has finished statement i."""
        return _join(clock.get((i, pipe), {}), {pipe: i})

    for j, active in enumerate(pipes):
        for q in sorted(active):
            c: dict[str, int] = after(last_on[q], q) if q in last_on else {}
            for e in given_by_dst.get((j, q), ()):
                c = _join(c, after(e.src_stmt, e.src_pipe))
            for e in sorted(by_dst.get((j, q), ()), key=lambda e: -e.src_stmt):
                if c.get(e.src_pipe, -1) >= e.src_stmt:
                    continue
                kept.append(e)
                c = _join(c, after(e.src_stmt, e.src_pipe))
            clock[(j, q)] = c
        for q in active:
            last_on[q] = j
    return kept


def _join(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        if v > out.get(k, -1):
            out[k] = v
    return out


def _contains(stmt: Stmt, target: Stmt) -> bool:
    if stmt is target:
        return True
    return isinstance(stmt, (Loop, When)) and any(_contains(s, target) for s in stmt.body)


def annotated_lines(body: Sequence[Stmt], plan: SyncPlan, indent: str = "") -> list[str]:
    """The body as text with the planned sync ops in place (the "sync" stage of a dump)."""
    lines: list[str] = []
    for s in body:
        lines.extend(f"{indent}{op}" for op in plan.before.get(id(s), ()))
        if isinstance(s, Loop):
            lines.append(f"{indent}for {s.var} in range({s.start}, {s.stop}" + (f", {s.step}" if s.step != 1 else "")
                         + "):")
            lines.extend(annotated_lines(s.body, plan, indent + "  "))
        elif isinstance(s, When):
            lines.append(f"{indent}if {s.cond}:")
            lines.extend(annotated_lines(s.body, plan, indent + "  "))
        else:
            lines.append(f"{indent}{s}")
        lines.extend(f"{indent}{op}" for op in plan.after.get(id(s), ()))
    return lines
