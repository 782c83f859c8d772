"""Functional execution of a launch: cores run in lockstep groups.

All cores of a launch start as one group that executes each instruction once
for all of its cores (numpy over the stacked per-core memories; per-core GM
offsets become strided views). A value that must be the same on every core of
a group (a loop trip count, a branch condition, an on-chip address, a size)
but is not splits the group by that value; the parts continue separately.
With the sanitizer on, every core is its own group.

Order of execution inside a core: see sync.py. Each group records its stream
of pipe instructions with their costs (stream.py); the timing model
(timing.py) schedules one stream per set of identical cores.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .decode import Decoded
from .errors import DeadlockError, ProgramError
from .lockstep import BARRIER, Group, Launch, Split
from .sync import finish


class Runner:
    """One launch's functional execution of its parts ((decoded program, cores) per core type).

    `run()` returns the final groups.
    """

    def __init__(self, ctx: Launch, parts: list[tuple[Decoded, int]]):
        self.ctx = ctx
        self.parts = parts

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
                else:
                    g.pc = pc + 1
                    return BARRIER
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
            if self.ctx.san is not None:
                out.extend(Group(cores[i:i + 1], dec, self.ctx) for i in range(count))
            else:
                out.append(Group(cores, dec, self.ctx))
        return out

    def run(self) -> list[Group]:
        work = self.initial_groups()[::-1]
        waiting: list[Group] = []
        finished: list[Group] = []
        while True:
            while work:
                g = work.pop()
                res = self._run_group(g)
                if res is None:
                    finished.append(g)
                elif isinstance(res, int):
                    waiting.append(g)
                else:
                    work.extend(res[::-1])
            if not waiting:
                return finished
            if finished:
                done_cores = sorted(int(c) for f in finished for c in f.cores)
                wait_cores = sorted(int(c) for w in waiting for c in w.cores)
                idx = waiting[0].pc - 1
                texts = waiting[0].dec.texts
                raise DeadlockError(
                    f"sync_all: cores {_short(wait_cores)} wait at instruction #{idx} `{texts[idx]}` but cores "
                    f"{_short(done_cores)} ended without reaching it; the all-core barrier never opens",
                    wait_cores[0], ({"pipe": "S", "instruction": idx, "text": texts[idx]},),
                )
            if self.ctx.san is not None:
                self.ctx.san.sync_all()
            work = waiting[::-1]
            waiting = []


def _split(g: Group, key: np.ndarray) -> list[Group]:
    _, inv = np.unique(key, return_inverse=True)
    return [g.subset(inv == u) for u in range(int(inv.max()) + 1)]


def _short(cores: list[int]) -> str:
    return str(cores) if len(cores) <= 8 else f"[{', '.join(map(str, cores[:8]))}, ... ({len(cores)} cores)]"
