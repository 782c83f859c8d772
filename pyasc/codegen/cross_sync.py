"""Cross-core sync as an analysis: the flags a mixed launch's channels need, from where each side touches them.

It is the intra-core planner's two edge kinds (`sync.py`) carried across cores, for each `Channel` (the
producer's k-th write of it and the consumer's k-th read are the same tile, in `slots` rotating slots; the
template addresses the slots, both sides touch the tiles in the same order):

- ready, a forward edge: the producer sets flag R on the pipe that wrote a tile, right after the statement
  that writes it; the consumer waits for R right before the statement that reads it. One counter flag serves
  every slot: a cross-core flag counts pending sets, and both sides take the tiles in the same order.
- free, a buffer-free edge (the TQue protocol across cores): the consumer pre-sets flag F `slots` times when it
  starts and sets F after each statement that reads a tile, on the reading pipe; the producer waits for F before
  each statement that writes a tile and drains it `slots` times when it ends. The k-th write thus waits for
  the (k - slots)-th read. For n tiles each side makes n + slots sets or waits: no wait is unmatched and
  nothing is left set.

"A statement" is the top-level statement, in the innermost loop body (or the kernel body) around the access,
that holds it. A When whose condition differs between the cores of a group (it depends on the vector core's
index in its group, `sub`, through the Lets in scope) counts as all of it, so an access only some cores make
never unbalances a flag: its flags run on every path. A When whose condition every core of the group computes
alike (a block index: a producer running one block ahead of its consumer) is looked into: its flags run
exactly when its access does. A template keeps the number of such statements equal on both sides. Flag ids come from the
chip's `cross_flag_ids`, two per channel; at most `slots` + 1 sets are ever pending, within the chip's
`cross_flag_limit`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from ..target import Chip
from .. import symbolic as sy
from .schedule import SUB, Channel, GmRef, Let, Loop, MixedSchedule, Stmt, TileOp, TileSchedule, When


class CrossSyncError(Exception):
    """A mixed schedule whose channels the analysis cannot order (the tiler rejects the candidate)."""


class CrossKind(enum.Enum):
    SET = "set"
    WAIT = "wait"


@dataclass(frozen=True)
class CrossOp:
    kind: CrossKind
    flag: int
    pipe: str = ""            # where a set is queued (it fires once that pipe's earlier work is done)

    def __str__(self) -> str:
        if self.kind is CrossKind.SET:
            return f"cross_set(group, flag {self.flag}, on {self.pipe})"
        return f"cross_wait(group, flag {self.flag})"


@dataclass
class SideCross:
    """One side's cross-core ops, before and after statements (keyed by `id(stmt)`, like a SyncPlan)."""

    before: dict[int, list[CrossOp]] = field(default_factory=dict)
    after: dict[int, list[CrossOp]] = field(default_factory=dict)

    def add(self, where: dict[int, list[CrossOp]], stmt: Stmt, op: CrossOp, times: int = 1) -> None:
        where.setdefault(id(stmt), []).extend([op] * times)


@dataclass
class CrossPlan:
    sides: dict[str, SideCross]       # "aic" / "aiv"
    flags: int = 0

    def summary(self) -> str:
        return f"cross-core: {self.flags} flags"


def plan_cross(s: MixedSchedule, chip: Chip) -> CrossPlan:
    plan = CrossPlan({"aic": SideCross(), "aiv": SideCross()})
    for k, ch in enumerate(s.channels):
        ready, free = 2 * k, 2 * k + 1
        if free >= chip.cross_flag_ids:
            raise CrossSyncError(f"{len(s.channels)} channels need more than the chip's {chip.cross_flag_ids} "
                                 f"cross-core flag ids")
        if ch.slots + 1 > chip.cross_flag_limit:
            raise CrossSyncError(f"channel {ch.param}: {ch.slots} slots exceed the {chip.cross_flag_limit} pending "
                                 f"sets a cross-core flag counts")
        consumer = "aiv" if ch.producer == "aic" else "aic"
        p_side, c_side = side_of(s, ch.producer), side_of(s, consumer)
        prod, cons = plan.sides[ch.producer], plan.sides[consumer]
        for stmt, pipe in _sites(p_side, ch, write=True):
            prod.add(prod.before, stmt, CrossOp(CrossKind.WAIT, free))
            prod.add(prod.after, stmt, CrossOp(CrossKind.SET, ready, pipe))
        for stmt, pipe in _sites(c_side, ch, write=False):
            cons.add(cons.before, stmt, CrossOp(CrossKind.WAIT, ready))
            cons.add(cons.after, stmt, CrossOp(CrossKind.SET, free, pipe))
        cons.add(cons.before, c_side.body[0], CrossOp(CrossKind.SET, free, "S"), ch.slots)
        prod.add(prod.after, p_side.body[-1], CrossOp(CrossKind.WAIT, free), ch.slots)
        plan.flags += 2
    return plan


def side_of(s: MixedSchedule, core_type: str) -> TileSchedule:
    return s.aic if core_type == "aic" else s.aiv


def _sites(side: TileSchedule, ch: Channel, write: bool) -> list[tuple[Stmt, str]]:
    """Each statement (see the module docstring) holding a write (or a read) of the channel, with the access's
    pipe."""
    out: list[tuple[Stmt, str]] = []

    def walk(body: Sequence[Stmt], lets: dict[str, frozenset[str]]) -> None:
        lets = dict(lets)
        for st in body:
            if isinstance(st, Let):
                lets[st.var] = _depends(st.value, lets)
                continue
            if isinstance(st, Loop):
                walk(st.body, lets)
                continue
            if isinstance(st, When) and SUB not in _depends(st.cond, lets):
                walk(st.body, lets)   # every core of the group takes the same branch
                continue
            pipes = {op.pipe for op in _ops(st) if _touches(op, ch.param, write)}
            if len(pipes) > 1:
                raise CrossSyncError(f"{side.name}: one statement touches channel {ch.param} on pipes "
                                     f"{sorted(pipes)}; one pipe per statement is supported")
            if pipes:
                if isinstance(st, When) and any(isinstance(x, Loop) for x in _stmts(st)):
                    raise CrossSyncError(f"{side.name}: channel {ch.param} is touched inside a loop under a When")
                out.append((st, pipes.pop()))
    walk(side.body, {})
    if not out:
        raise CrossSyncError(f"{side.name}: nothing {'writes' if write else 'reads'} channel {ch.param}")
    return out


def _depends(e: object, lets: dict[str, frozenset[str]]) -> frozenset[str]:
    """The symbols an expression depends on, through the Lets in scope."""
    out: set[str] = set()
    for name in sy.free_symbols(e):
        out |= lets.get(name, frozenset((name,)))
    return frozenset(out)


def _touches(op: TileOp, param: str, write: bool) -> bool:
    for m in op.spec.mems:
        v = op.args.get(m.name)
        if isinstance(v, GmRef) and v.param == param and (m.access == "w") == write:
            return True
    return False


def _stmts(s: Stmt) -> Iterator[Stmt]:
    if isinstance(s, (Loop, When)):
        for x in s.body:
            yield x
            yield from _stmts(x)


def _ops(s: Stmt) -> Iterator[TileOp]:
    if isinstance(s, TileOp):
        yield s
    elif isinstance(s, (Loop, When)):
        for x in s.body:
            yield from _ops(x)
