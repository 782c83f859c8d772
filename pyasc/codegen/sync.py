"""Sync insertion: the set_flag/wait_flag pairs a tile schedule needs, from its ops' pipes and buffers.

Pipes run in parallel and in order; only flags order them. The analysis
(`sync_analysis.analyze`) finds the dependencies and the block each one is
kept in (`Flag` records); `place` then gives each its event ids and puts its
sync ops before and after statements. The rule:

Blocks. A block is the kernel body, a loop body or the body of a `When` (a
guarded block: it runs once or not at all each time its enclosing block
runs). Inside a block a nested loop or `When` is one statement standing for
every access inside it. Each flag is placed in one block, its set and its
wait both among that block's statements, and the block is the deepest one
that holds both accesses the flag orders (their common block): whenever the
block runs both statements run, once each, whatever the conditions.

- forward flags: an access on pipe Q that conflicts with an earlier access on
  pipe P != Q (read after write, write after read or write) needs
  set_flag(P, Q) right after the common block's statement holding the earlier
  one and wait_flag(P, Q) right before the one holding the later. A set after
  a loop or a `When` fires when the pipe has finished everything it queued
  before it (run or skipped); a wait before one holds every op of that pipe
  inside it. So a dependency with one conditional end gets its flag around the
  whole `When`, set and waited once per run of the block; one with both ends
  in the same `When` gets it inside;
- buffer-free flags (the TQue protocol): inside a loop, the first accesses of
  a buffer in iteration i + d conflict with its last accesses in iteration i,
  where d is the buffer's slot count when the loop rotates its slots
  (ping-pong) and 1 otherwise. The loop body is read with its `When`s opened
  (a guarded load-then-store has no store-to-load dependency inside one
  iteration), and each dependency goes in the common block of its two ends:
  - token (the usual case): pre-set once per slot before the outermost loop
    around it, waited for before the statement holding the first access and
    set after the one holding the last (inside the `When` when both are in
    it), drained once per slot after that outermost loop. Each run of the
    common block takes its slot's token and gives it back; a skipped run
    touches neither token nor buffer, so the next run waits for the last one
    that did. Enclosing loops that touch the buffer nowhere else need no flags
    of their own for it: the tokens order it across their iterations too;
  - skip-ends: a loop directly inside a loop that touches the buffer elsewhere
    (whose own flags order the buffer across its iterations) skips the wait in
    its first d iterations and the set in its last d, so nothing crosses its
    ends. That needs every iteration to run both: only when the common block
    is the loop body (else token);
  - barrier: both ends in one inner loop (a statement of the common block):
    the block does not see that loop's own order, and it may run no
    iteration, so a pipe_barrier(ALL) after it stands for the flag. No
    template makes one today;
- only the most recent conflicting access on each other pipe counts (pipes
  are in order), and a flag is dropped when flags already kept in the same
  block and the pipes' order imply it ("merged where identical"); a flag
  inside a nested `When` or loop never counts, as it may not run;
- event ids: a flag whose buffer rotates uses one id per slot (base + slot),
  otherwise one id; ids are allocated per ordered pipe pair within the chip's
  `event_ids`.

Why it is sound (what the simulator's sanitizer checks):
- every wait has a matching set on every path: a forward flag and the per-run
  half of a token flag have both ops in one block, each statement of which
  runs once per run of the block; a token wait finds the set of the last
  earlier run that used its slot, or the pre-set; a skip-ends wait in
  iteration i finds the set of iteration i - d, which ran (both are in the
  loop body, not under a `When`);
- nothing is left set at the end: per id, sets and waits pair up on every path
  as above, and the drains, after the outermost loop, take the pre-sets'
  tokens back; pre-sets and drains run once (nothing re-arms them);
- no set of an id that is already set: a set must be ordered after the wait
  that consumed the id's previous set. In one run of a token (or skip-ends)
  flag's block, the statement holding the first access comes before the one
  holding the last (an access on the setting pipe before the first access
  would have made the dependency a forward one; the same statement is the
  barrier case), and the block's forward flags order the two; both run
  whenever the block runs, so the wait precedes the set on every path. A
  forward flag's previous set is in the block's previous run, and the
  dependency back from its destination to the next run's source (same buffer)
  orders that wait first. (Before `When`s were opened, a `When` that loads and
  then stores a buffer was one statement of the loop body: a store-to-load
  dependency of its own iteration got a flag around the `When`, nothing
  ordered its wait before its set when the `When` was skipped, and the
  sanitizer reported a DoubleSetError.)

`sync="barrier"` (a debug mode for bisecting) ignores all this and puts a
`pipe_barrier("ALL")` after every tile op.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .. import symbolic as sy
from ..symbolic import IntLike
from .schedule import Buffer, Loop, Stmt, TileOp, When
from .sync_analysis import Flag, Protocol, analyze


class SyncAllocationError(Exception):
    """A schedule needs more event ids on one pipe pair than the chip has (the tiler rejects it)."""


class SyncKind(enum.Enum):
    SET = "set"
    WAIT = "wait"
    BARRIER = "barrier"


@dataclass(frozen=True)
class SyncOp:
    kind: SyncKind        # a name ("set") is taken too
    src: str = ""
    dst: str = ""
    event: IntLike = 0
    when: IntLike | None = None   # only when this is nonzero (a buffer-free flag of a nested loop)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", SyncKind(self.kind))

    def __str__(self) -> str:
        if self.kind is SyncKind.BARRIER:
            return "pipe_barrier(ALL)"
        text = f"{self.kind.value}_flag({self.src}->{self.dst}, {self.event})"
        return text if self.when is None else f"if {self.when}: {text}"


@dataclass
class SyncPlan:
    """Sync ops to put before and after statements (keyed by `id(stmt)`), plus counts for reports."""

    before: dict[int, list[SyncOp]] = field(default_factory=dict)
    after: dict[int, list[SyncOp]] = field(default_factory=dict)
    ids_used: dict[tuple[str, str], int] = field(default_factory=dict)
    flags: int = 0          # distinct flags (one per edge kept, whatever its slot count)
    barriers: int = 0       # pipe barriers standing for a buffer-free flag (see the module docstring)
    mode: str = "flags"

    def add_before(self, stmt: Stmt, op: SyncOp) -> None:
        self.before.setdefault(id(stmt), []).append(op)

    def add_after(self, stmt: Stmt, op: SyncOp) -> None:
        self.after.setdefault(id(stmt), []).append(op)

    def summary(self) -> str:
        if self.mode == "barrier":
            return "sync: barrier mode (pipe_barrier(ALL) after every tile op)"
        pairs = ", ".join(f"{s}->{d}: {n}" for (s, d), n in sorted(self.ids_used.items())) or "none"
        extra = f", {self.barriers} pipe barriers" if self.barriers else ""
        return f"sync: {self.flags} flags{extra}; event ids per pipe pair: {pairs}"


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
            plan.add_after(s, SyncOp(SyncKind.BARRIER))
        return plan
    if mode != "flags":
        raise ValueError(f"sync mode must be 'flags' or 'barrier', got {mode!r}")
    ids = _Ids(event_ids)
    for f in analyze(body, buffers):
        place(plan, ids, f)
    plan.ids_used = dict(ids.next)
    return plan


def _all_ops(body: Sequence[Stmt]) -> Iterable[TileOp]:
    for s in body:
        if isinstance(s, TileOp):
            yield s
        elif isinstance(s, (Loop, When)):
            yield from _all_ops(s.body)


def place(plan: SyncPlan, ids: _Ids, f: Flag) -> None:
    """Put one analysed flag into the plan (its event ids taken from `ids`)."""
    d, block = f.dep, f.block
    src, dst = block[d.src.stmt], block[d.dst.stmt]
    if f.protocol is Protocol.BARRIER:
        if not any(op.kind is SyncKind.BARRIER for op in plan.after.get(id(src), ())):
            plan.add_after(src, SyncOp(SyncKind.BARRIER))
            plan.barriers += 1
        return
    p, q = d.src.pipe, d.dst.pipe
    base = ids.take(p, q, d.rotate)
    event = sy.add(base, d.slot)
    plan.flags += 1
    if f.protocol is Protocol.FORWARD:
        plan.add_after(src, SyncOp(SyncKind.SET, p, q, event))
        plan.add_before(dst, SyncOp(SyncKind.WAIT, p, q, event))
        return
    loop = f.loop
    assert loop is not None
    if f.protocol is Protocol.SKIP_ENDS:
        ahead = sy.mul(d.rotate, loop.step)
        first = sy.ge(sy.sym(loop.var), sy.add(loop.start, ahead))
        more = sy.lt(sy.add(sy.sym(loop.var), ahead), loop.stop)
        plan.add_before(dst, SyncOp(SyncKind.WAIT, p, q, event, first))
        plan.add_after(src, SyncOp(SyncKind.SET, p, q, event, more))
        return
    assert f.around is not None
    for k in range(d.rotate):
        plan.add_before(f.around, SyncOp(SyncKind.SET, p, q, base + k))
    plan.add_before(dst, SyncOp(SyncKind.WAIT, p, q, event))
    plan.add_after(src, SyncOp(SyncKind.SET, p, q, event))
    for k in range(d.rotate):
        plan.add_after(f.around, SyncOp(SyncKind.WAIT, p, q, base + k))


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
