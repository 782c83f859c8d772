"""Functional execution of a launch: cores run in lockstep groups.

All cores of a launch start as one group that executes each instruction once
for all of its cores (numpy over the stacked per-core memories; per-core GM
offsets become strided views). A value that must be the same on every core of
a group (a loop trip count, a branch condition, an on-chip address, a size)
but is not splits the group by that value; the parts continue separately.
The sanitizer runs in lockstep too (its state has one clock per core).

Order of execution inside a core: see sync.py. Each group records its stream
of pipe instructions with their costs (stream.py); the timing model
(timing.py) schedules one stream per set of identical cores.
"""
from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from .decode import Decoded
from .errors import DeadlockError, ProgramError
from .lockstep import BARRIER, BLOCKED, Group, Launch, Split
from .sync import finish


class Runner:
    """One launch's functional execution of its parts ((decoded program, cores) per core type).

    `run()` returns the final groups.
    """

    def __init__(self, ctx: Launch, parts: list[tuple[Decoded, int]], lockstep: bool = True):
        self.ctx = ctx
        self.parts = parts
        self.lockstep = lockstep

    def _run_group(self, g: Group) -> Any:
        code = g.dec.code
        n = len(code)
        counts = g.counts
        pc = g.pc
        try:
            while pc < n:
                counts[pc] += 1
                r = code[pc](g)
                if r is None:
                    pc += 1
                elif r >= 0:
                    pc = r
                elif r == BARRIER:
                    g.pc = pc + 1
                    return BARRIER
                else:  # BLOCKED: the instruction runs again once the flags it waits on changed
                    counts[pc] -= 1
                    g.pc = pc
                    return BLOCKED
        except Split as s:
            counts[pc] -= 1
            g.pc = pc
            return _split(g, s.key)
        except KeyError as e:
            raise ProgramError(
                f"core {int(g.cores[0])}: instruction #{pc} `{g.dec.texts[pc]}` reads register {e.args[0]} "
                f"that this core never wrote"
            ) from None
        g.pc = n
        finish(g)
        g.done = True
        return None

    def initial_groups(self) -> list[Group]:
        out = []
        for dec, count in self.parts:
            cores = np.arange(count, dtype=np.int64)
            for c in ([cores] if self.lockstep else [cores[i:i + 1] for i in range(count)]):
                g = Group(c, dec, self.ctx)
                if self.ctx.san is not None:
                    self.ctx.san.attach(g)
                out.append(g)
        return out

    def run(self) -> list[Group]:
        """Run every group until it ends; groups stop at sync_all (all must arrive) and at cross-core waits
        (retried whenever a cross-core flag was set since)."""
        xf = self.ctx.xflags
        ready: deque[Group] = deque(self.initial_groups())
        blocked: list[tuple[Group, int]] = []
        waiting: list[Group] = []
        finished: list[Group] = []
        while True:
            while ready:
                g = ready.popleft()
                res = self._run_group(g)
                if res is None:
                    finished.append(g)
                elif isinstance(res, list):
                    ready.extend(res)
                elif res == BARRIER:
                    waiting.append(g)
                else:
                    blocked.append((g, xf.version))
                if blocked and not ready:
                    woken = [b for b, v in blocked if v != xf.version]
                    if woken:
                        blocked = [(b, v) for b, v in blocked if v == xf.version]
                        ready.extend(woken)
            if blocked:
                raise xf.deadlock([b for b, _ in blocked])
            if not waiting:
                xf.check_end()
                return finished
            if finished:
                raise _barrier_deadlock(waiting, finished)
            if self.ctx.san is not None:
                self.ctx.san.sync_all()
            ready.extend(waiting)
            waiting = []


def _barrier_deadlock(waiting: list[Group], finished: list[Group]) -> DeadlockError:
    done_cores = sorted(int(c) for f in finished for c in f.cores)
    wait_cores = sorted(int(c) for w in waiting for c in w.cores)
    idx = waiting[0].pc - 1
    texts = waiting[0].dec.texts
    return DeadlockError(
        f"sync_all: cores {_short(wait_cores)} wait at instruction #{idx} `{texts[idx]}` but cores "
        f"{_short(done_cores)} ended without reaching it; the all-core barrier never opens",
        wait_cores[0], ({"pipe": "S", "instruction": idx, "text": texts[idx]},),
    )


def _split(g: Group, key: np.ndarray) -> list[Group]:
    _, inv = np.unique(key, return_inverse=True)
    parts = [g.subset(inv == u) for u in range(int(inv.max()) + 1)]
    g.sg = None  # the parts carry on; the sanitizer forgets the whole
    return parts


def _short(cores: list[int]) -> str:
    return str(cores) if len(cores) <= 8 else f"[{', '.join(map(str, cores[:8]))}, ... ({len(cores)} cores)]"
