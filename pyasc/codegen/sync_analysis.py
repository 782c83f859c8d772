"""The sync analysis: which pipe-pair dependencies a tile schedule needs, and in which block each is kept.

This module decides; `sync.py` places (event ids, set/wait positions). The
rule it implements, and why it is sound, is written in `sync.py`'s docstring.
The output is a list of `Flag` records in the order the planner allocates
their event ids:

- a `Dependency` is an edge between two `End`s: "statement `stmt` of a block,
  on pipe `pipe`" must finish before the other end starts. Both ends index
  the same block (the region both accesses always run in); the next issue's
  cross-core flags add which core an end runs on, nothing else here assumes
  the two pipes share a core;
- a `Flag` says which protocol keeps the dependency (`Protocol`) and the block,
  loop and hoisting point its ops are placed around.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Iterator, Sequence

from .. import symbolic as sy
from ..symbolic import IntLike
from .schedule import Buffer, Loop, Stmt, TileOp, When


@dataclass(frozen=True)
class End:
    """One end of a dependency: statement `stmt` (an index in the dependency's block) on pipe `pipe`."""

    stmt: int
    pipe: str


@dataclass(frozen=True)
class Dependency:
    """`src` must be finished before `dst` starts (for a loop-carried one: `src` of an earlier iteration)."""

    src: End
    dst: End
    rotate: int = 1        # event ids the flag needs: the buffer's slots when its slot varies in the block, else 1
    slot: IntLike = 0      # the slot expression (0 when rotate == 1)

    def shifted(self, src: int = 0, dst: int = 0) -> "Dependency":
        return Dependency(End(self.src.stmt + src, self.src.pipe), End(self.dst.stmt + dst, self.dst.pipe),
                          self.rotate, self.slot)


class Protocol(Enum):
    FORWARD = "forward"      # set after src, wait before dst: once per run of the block
    TOKEN = "token"          # buffer free: one pre-set per slot before `around`, wait/set per run, drained after
    SKIP_ENDS = "skip_ends"  # buffer free, nested loop: no wait in the first d iterations, no set in the last d
    BARRIER = "barrier"      # buffer free, both ends in one inner loop: pipe_barrier(ALL) after it


@dataclass(frozen=True)
class Flag:
    """A kept dependency and how it is kept: what `sync.place` turns into sync ops."""

    protocol: Protocol
    block: Sequence[Stmt] = field(repr=False)   # the statements the dependency's ends index
    dep: Dependency
    loop: Loop | None = field(default=None, repr=False)     # the loop whose iterations a buffer-free flag crosses
    around: Stmt | None = field(default=None, repr=False)   # TOKEN: where its pre-sets and drains go


@dataclass(frozen=True)
class _Access:
    pipe: str
    buffer: str
    write: bool
    slot: IntLike


def analyze(body: Sequence[Stmt], buffers: Sequence[Buffer]) -> list[Flag]:
    """The flags a schedule body needs, in event-id allocation order (see `sync.py`)."""
    a = _Analysis({b.name: b.slots for b in buffers})
    a.block(list(body), loops=())
    return a.flags


class _Analysis:
    def __init__(self, slots: dict[str, int]):
        self.slots = slots
        self.flags: list[Flag] = []
        self.kept: dict[int, list[Dependency]] = {}   # id(block) -> its forward dependencies kept
        self._summaries: dict[int, list[_Access]] = {}
        self.handled: set[tuple[int, str]] = set()    # (loop, buffer) whose buffer-free flags an inner loop owns

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

    def pipes(self, stmts: Sequence[Stmt]) -> list[set[str]]:
        return [{a.pipe for a in self.accesses(s)} for s in stmts]

    # -- forward: one block, its loops and guarded blocks first --------------------------
    def block(self, stmts: list[Stmt], loops: tuple[Loop, ...]) -> list[Dependency]:
        """Analyse the block and everything inside it; returns the block's forward dependencies kept."""
        for s in stmts:
            if isinstance(s, Loop):
                self.block(s.body, loops + (s,))
                self.loop_carried(s, loops + (s,))
            elif isinstance(s, When):
                self.block(s.body, loops)
        in_scope = {lp.var for lp in loops}
        kept = select(self.forward(stmts, in_scope), self.pipes(stmts))
        self.kept[id(stmts)] = kept
        self.flags.extend(Flag(Protocol.FORWARD, stmts, d) for d in kept)
        return kept

    def forward(self, stmts: list[Stmt], in_scope: set[str]) -> list[Dependency]:
        hist: dict[str, _Latest] = {}
        deps: list[Dependency] = []
        for j, s in enumerate(stmts):
            mine = self.accesses(s)
            for a in mine:
                if a.buffer in hist:
                    deps.extend(self._into(j, a, hist[a.buffer], in_scope))
            for a in mine:
                hist.setdefault(a.buffer, _Latest()).add(j, a)
        return deps

    def _into(self, j: int, a: _Access, history: "_Latest", in_scope: set[str]) -> list[Dependency]:
        """From the most recent conflicting access on each other pipe to access `a` at position j."""
        out = []
        for pipe, (i, b) in history.conflicting(a):
            rotate, slot = self._rotation(a, b, in_scope)
            out.append(Dependency(End(i, pipe), End(j, a.pipe), rotate, slot))
        return out

    def _rotation(self, a: _Access, b: _Access, in_scope: set[str]) -> tuple[int, IntLike]:
        for acc in (a, b):
            slot = acc.slot
            if not isinstance(slot, int) and sy.free_symbols(slot) <= in_scope:
                return self.slots[acc.buffer], slot
        return 1, 0

    # -- loop-carried (buffer free) -------------------------------------------------------
    def loop_carried(self, loop: Loop, loops: tuple[Loop, ...]) -> None:
        """Dependencies from the last accesses of a buffer in one iteration to its first ones in a later one.

        Positions are those of the body with its guarded blocks opened (`_items`: inner loops stay one
        statement), so a guarded block's own order counts; each dependency is then kept in the deepest
        block holding both ends (`_common_block`)."""
        items = list(_items(loop.body))
        n = len(items)
        in_scope = {lp.var for lp in loops}
        per_buffer: dict[str, list[tuple[int, _Access]]] = {}
        for k, (_, s) in enumerate(items):
            for a in self.accesses(s):
                per_buffer.setdefault(a.buffer, []).append((k, a))
        groups: dict[tuple[int, int, bool], tuple[list[Stmt], bool, list[Dependency]]] = {}
        for buf, hist in per_buffer.items():
            if (id(loop), buf) in self.handled:
                continue
            found: list[tuple[list[Stmt], Dependency]] = []
            # the next use of the same slot: iteration i + d sees the accesses of iteration i first
            prior = _Latest()
            for i, b in hist:
                prior.add(i - n, b)
            seen = 0
            for k, a in hist:
                while hist[seen][0] < k:  # and then this iteration's accesses before position k
                    prior.add(*hist[seen])
                    seen += 1
                for d in self._into(k, a, prior, in_scope):
                    if d.src.stmt < 0:
                        block, src, dst = _common_block(loop.body, items[d.src.stmt + n][0], items[k][0])
                        found.append((block, Dependency(End(src, d.src.pipe), End(dst, d.dst.pipe), d.rotate,
                                                        d.slot)))
            if found:
                local = self._hand_over(buf, loops)
                for block, d in found:
                    groups.setdefault((id(block), d.rotate, local), (block, local, []))[2].append(d)
        for block, local, deps in groups.values():
            m = len(block)
            pipes = self.pipes(block)
            # two runs of the block back to back: its forward flags order both, the buffer-free ones cross
            given = self.kept[id(block)] + [d.shifted(m, m) for d in self.kept[id(block)]]
            for d in select([d.shifted(dst=m) for d in deps], pipes + pipes, given):
                d = d.shifted(dst=-m)
                if d.src.stmt == d.dst.stmt:  # both ends in one inner loop: its order is not this block's
                    self.flags.append(Flag(Protocol.BARRIER, block, d, loop))
                elif local and block is loop.body:
                    self.flags.append(Flag(Protocol.SKIP_ENDS, block, d, loop))
                else:
                    self.flags.append(Flag(Protocol.TOKEN, block, d, loop, loops[0]))

    def _hand_over(self, buffer: str, loops: tuple[Loop, ...]) -> bool:
        """Mark the enclosing loops that touch `buffer` nowhere else but inside loops[-1]: its buffer-free
        flags order the buffer across their iterations too, they need none of their own. True when the
        loop directly enclosing loops[-1] touches the buffer elsewhere (its own flags order the buffer
        across its iterations, so loops[-1]'s flags need not cross its ends: skip-ends)."""
        k = len(loops) - 1
        while k > 0:
            parent = loops[k - 1]
            holder = next(s for s in parent.body if _contains(s, loops[k]))
            if any(a.buffer == buffer for s in parent.body if s is not holder for a in self.accesses(s)):
                break
            self.handled.add((id(parent), buffer))
            k -= 1
        return k == len(loops) - 1 and k > 0


def _items(stmts: Sequence[Stmt], path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Stmt]]:
    """(path, statement) of every tile op and loop of a block in program order, guarded blocks opened."""
    for i, s in enumerate(stmts):
        if isinstance(s, When):
            yield from _items(s.body, path + (i,))
        elif isinstance(s, (TileOp, Loop)):
            yield path + (i,), s


def _common_block(block: list[Stmt], src: tuple[int, ...], dst: tuple[int, ...]) -> tuple[list[Stmt], int, int]:
    """The deepest guarded block (or `block` itself) holding both paths, and the indices in it of the
    statements that hold each end."""
    depth = 0
    while (depth + 1 < min(len(src), len(dst)) and src[depth] == dst[depth]
           and isinstance(block[src[depth]], When)):
        block = block[src[depth]].body
        depth += 1
    return block, src[depth], dst[depth]


def _dedupe(accesses: list[_Access]) -> list[_Access]:
    seen: dict[tuple, _Access] = {}
    for a in accesses:
        key = (a.pipe, a.buffer, a.write, a.slot)
        seen.setdefault(key, a)
    return list(seen.values())


def select(cands: list[Dependency], pipes: list[set[str]], given: Sequence[Dependency] = ()) -> list[Dependency]:
    """The candidate dependencies that earlier flags and in-order pipes do not already imply.

    A vector clock per (statement, pipe) says, for each other pipe, the latest statement known to be
    finished when this pipe starts the statement: it inherits the clock of the pipe's previous
    statement, and each wait adds what the setting pipe knew plus the set point itself. A candidate
    is dropped when the clock already covers its source; among candidates into the same point the
    latest source is tried first, so one flag serves several buffers ("merged where identical").
    `given` dependencies (already placed) order but are not returned. Every statement is one of the
    block's own (a loop or guarded block counts as a whole), and every flag counted is one placed in
    this block, so each runs whenever the block does: nothing set inside a guarded block is counted.
    """
    by_dst: dict[tuple[int, str], list[Dependency]] = {}
    for d in cands:
        by_dst.setdefault((d.dst.stmt, d.dst.pipe), []).append(d)
    given_by_dst: dict[tuple[int, str], list[Dependency]] = {}
    for d in given:
        given_by_dst.setdefault((d.dst.stmt, d.dst.pipe), []).append(d)
    clock: dict[tuple[int, str], dict[str, int]] = {}
    last_on: dict[str, int] = {}
    kept: list[Dependency] = []

    def after(i: int, pipe: str) -> dict[str, int]:
        """What is known once `pipe` has finished statement i."""
        return _join(clock.get((i, pipe), {}), {pipe: i})

    for j, active in enumerate(pipes):
        for q in sorted(active):
            c: dict[str, int] = after(last_on[q], q) if q in last_on else {}
            for d in given_by_dst.get((j, q), ()):
                c = _join(c, after(d.src.stmt, d.src.pipe))
            for d in sorted(by_dst.get((j, q), ()), key=lambda d: -d.src.stmt):
                if c.get(d.src.pipe, -1) >= d.src.stmt:
                    continue
                kept.append(d)
                c = _join(c, after(d.src.stmt, d.src.pipe))
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


class _Latest:
    """The most recent access of one buffer on each pipe, and the most recent write, as accesses are added in
    order: what a new access conflicts with, found without walking the whole history (a long kernel touches one
    buffer hundreds of times). Pipes keep the order of their first access, as a walk of the history would."""

    def __init__(self) -> None:
        self.any: dict[str, tuple[int, _Access]] = {}
        self.writes: dict[str, tuple[int, _Access]] = {}

    def add(self, i: int, b: _Access) -> None:
        self.any[b.pipe] = (i, b)
        if b.write:
            self.writes[b.pipe] = (i, b)

    def conflicting(self, a: _Access) -> list[tuple[str, tuple[int, _Access]]]:
        """(pipe, (position, access)) of the latest access on each other pipe that conflicts with `a`."""
        found = self.any if a.write else self.writes
        return [(p, v) for p, v in found.items() if p != a.pipe]
