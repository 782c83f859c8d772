"""The intra-core flag protocol of the functional run: set_flag, wait_flag, held-back pipes, deadlocks.

Inside a core, instructions take effect in issue order, except that a pipe
whose wait_flag is not yet satisfied holds back its later actions until the
matching set_flag runs. That order is a valid linearisation of what the
hardware would do, so race-free programs get the hardware's result.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable

from .errors import DeadlockError, DoubleSetError, FlagLeftSetError
from .isa import PIPES
from .lockstep import Group


def issue(g: Group, pipe: int, fn: Callable, vals: Any) -> None:
    """Run `fn(g, vals)` now, or hold it back if `pipe` waits on a flag; in a randomly ordered run
    (fuzz.py) every pipe's actions wait in its queue for the scheduler."""
    if (g.blocked and pipe in g.blocked) or (pipe and g.ctx.fuzz is not None):
        g.pending.setdefault(pipe, deque()).append((fn, vals))
    else:
        fn(g, vals)


def queued(g: Group) -> bool:
    """Whether any pipe of the group still has actions waiting."""
    return any(g.pending.values())


def do_set(g: Group, vals: tuple) -> None:
    key, idx = vals
    if g.flags.get(key, 0) > 0:
        _double_set(g, key, idx)
    if g.san is not None:
        g.san.set_flag(g, key, idx)
    g.flags[key] = 1
    g.last_set[key] = idx
    if g.ctx.fuzz is not None:
        return  # the scheduler runs the waiting pipe when it picks it
    dst = key[1]
    b = g.blocked.get(dst)
    if b is not None and b[0] == key:
        del g.blocked[dst]
        _consume(g, key, b[1])
        q = g.pending.get(dst)
        while q and dst not in g.blocked:
            fn, v = q.popleft()
            fn(g, v)


def _double_set(g: Group, key: tuple, idx: int) -> None:
    """Events are binary: a second set before the wait consumed the first loses one (a hang on hardware)."""
    texts = g.dec.texts
    prev = g.last_set[key]
    src, dst, ev = key
    core = int(g.cores[0])
    raise DoubleSetError(
        f"core {core}: set_flag {PIPES[src]}->{PIPES[dst]} event {ev} is set twice without a wait: instruction "
        f"#{idx} `{texts[idx]}` sets it while the set by #{prev} `{texts[prev]}` is still pending (no "
        f"wait_flag has consumed it yet). Events are binary: the second set is lost and a later wait hangs on "
        f"hardware",
        core,
        ({"pipe": PIPES[src], "instruction": prev, "text": texts[prev]},
         {"pipe": PIPES[src], "instruction": idx, "text": texts[idx]}),
    )


def do_wait(g: Group, vals: tuple) -> None:
    key, idx = vals
    if g.flags.get(key, 0) > 0:
        _consume(g, key, idx)
    else:
        g.blocked[key[1]] = (key, idx)


def do_scalar_wait(g: Group, vals: tuple) -> None:
    """wait_flag(X, S): the scalar unit stops issuing until the event is set.

    Everything issued before the wait has already run or is held behind a blocked
    wait, so an event not set by now can only be set by an instruction after the
    wait, which the stopped scalar unit never issues: a deadlock.
    """
    key, idx = vals
    texts = g.dec.texts
    if g.flags.get(key, 0) <= 0:
        src = key[0]
        why = "no instruction issued before it sets the event"
        b = g.blocked.get(src)
        if b is not None:
            why = (f"pipe {PIPES[src]} is itself blocked at instruction #{b[1]} `{texts[b[1]]}` "
                   f"before it could set it")
        raise DeadlockError(
            f"core {int(g.cores[0])}: deadlock: the scalar unit waits at instruction #{idx} `{texts[idx]}` "
            f"for a set_flag {PIPES[src]}->S event {key[2]}, but {why}; the scalar unit cannot issue anything "
            f"after the wait, so the event is never set",
            int(g.cores[0]), ({"pipe": "S", "instruction": idx, "text": texts[idx]},),
        )
    _consume(g, key, idx)
    if g.san is not None:
        scalar_reaches_all(g)


def scalar_reaches_all(g: Group) -> None:
    """What the scalar unit now knows, every instruction it issues later knows too."""
    snap = g.san.clock(g, 0)
    for p in range(1, len(PIPES)):
        issue(g, p, _join_scalar, (p, snap))


def _join_scalar(g: Group, vals: tuple) -> None:
    p, snap = vals
    g.san.join(g, p, snap)


def _consume(g: Group, key: tuple, idx: int) -> None:
    g.flags[key] -= 1
    if g.san is not None:
        g.san.wait_flag(g, key, idx)


def check_no_blocked(g: Group, where: str) -> None:
    """At a point where the scalar unit waits for the pipes (end, barrier), a blocked pipe never runs again."""
    if not g.blocked:
        return
    texts = g.dec.texts
    lines = []
    for pipe, (key, idx) in sorted(g.blocked.items()):
        src = key[0]
        why = ("whose own queue is blocked too" if src in g.blocked
               else "which has nothing left that sets it")
        lines.append(
            f"pipe {PIPES[pipe]} waits at instruction #{idx} `{texts[idx]}` for a set_flag "
            f"{PIPES[src]}->{PIPES[key[1]]} event {key[2]} from {PIPES[src]}, {why}"
        )
    cycle = _wait_cycle(g)
    text = f" (cycle of waits: {cycle})" if cycle else ""
    accesses = tuple({"pipe": PIPES[p], "instruction": idx, "text": texts[idx]}
                     for p, (_, idx) in sorted(g.blocked.items()))
    raise DeadlockError(
        f"core {int(g.cores[0])}: deadlock {where}{text}: " + "; ".join(lines), int(g.cores[0]), accesses
    )


def _wait_cycle(g: Group) -> str:
    for p0 in g.blocked:
        seen = [p0]
        while True:
            src = g.blocked[seen[-1]][0][0]
            if src not in g.blocked:
                break
            if src in seen:
                loop = seen[seen.index(src):] + [src]
                return " -> ".join(PIPES[x] for x in loop)
            seen.append(src)
    return ""


def finish(g: Group) -> None:
    """The kernel ended on these cores: nothing may still wait, no event may be left set."""
    check_no_blocked(g, "at the end of the kernel")
    left = [k for k, n in g.flags.items() if n > 0]
    if left:
        texts = g.dec.texts
        key = sorted(left)[0]
        idx = g.last_set[key]
        raise FlagLeftSetError(
            f"core {int(g.cores[0])}: flag {PIPES[key[0]]}->{PIPES[key[1]]} event {key[2]} is still set "
            f"when the kernel ends (last set by instruction #{idx} `{texts[idx]}`, never waited for): on "
            f"hardware the next kernel's wait on it would pass wrongly or a later set hang",
            int(g.cores[0]),
            ({"pipe": PIPES[key[0]], "instruction": idx, "text": texts[idx]},),
        )
