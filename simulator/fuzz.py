"""Randomly ordered runs: every core on its own, its pipes' actions interleaved in a random legal order.

The lockstep executor runs each pipe's actions as early as the flags allow,
one legal order among many. A randomly ordered run (`Device.launch(...,
schedule_seed=k)`) queues every pipe action and lets a seeded scheduler pick,
step by step, any core's scalar unit or the head of any of its pipe queues
(a wait only once its set has run). Each pipe keeps its order; only flags,
barriers and cross-core flags order pipes and cores, as on hardware. A
program is schedule independent when every such run gives the same result;
one that is not has a race, even where the lockstep order happens to work.

Odd seeds pick uniformly among what can run; even seeds give every (core,
pipe) a random priority and always run the highest, demoting the one that
just ran now and then (as in probabilistic concurrency testing): a pipe then
races far ahead of, or lags far behind, the others, which is what exposes a
missing flag.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import sync
from .errors import DeadlockError
from .lockstep import BARRIER, BLOCKED, Group, Launch


class RandomRunner:
    """Runs a launch's parts with one group per core and a seeded random interleaving."""

    def __init__(self, ctx: Launch, parts: list, seed: int):
        self.ctx = ctx
        self.parts = parts
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        ctx.fuzz = self.rng

    def run(self) -> list[Group]:
        groups = [Group(np.arange(c, c + 1, dtype=np.int64), dec, self.ctx) for dec, count in self.parts
                  for c in range(count)]
        state = {id(g): "run" for g in groups}   # run | blocked | barrier | end | done
        seen = {id(g): -1 for g in groups}       # progress counter when it last blocked
        progress = 0
        rng = self.rng
        prioritised = self.seed % 2 == 0
        priority: dict[tuple, float] = {}
        while True:
            for g in groups:  # a core whose last instruction ran ends once its pipes drained
                if state[id(g)] == "end" and not sync.queued(g):
                    sync.finish(g)
                    g.done = True
                    state[id(g)] = "done"
            choices: list[tuple[str, Group, Any]] = []
            for g in groups:
                st = state[id(g)]
                if st == "run" or (st == "blocked" and seen[id(g)] != progress):
                    choices.append(("scalar", g, None))
                for pipe, q in g.pending.items():
                    if q and _runnable(g, q[0]):
                        choices.append(("pipe", g, pipe))
            if not choices:
                if all(state[id(g)] == "barrier" for g in groups):  # sync_all: every core arrived
                    for g in groups:
                        state[id(g)] = "run"
                    continue
                if all(state[id(g)] == "done" for g in groups):
                    self.ctx.xflags.check_end()
                    return groups
                raise _stuck(groups, state)
            if prioritised:
                for c in choices:
                    priority.setdefault((id(c[1]), c[2]), float(rng.random()))
                pick = max(choices, key=lambda c: priority[(id(c[1]), c[2])])
                if rng.random() < 0.05:  # a change point: the one that ran drops to the back
                    priority[(id(pick[1]), pick[2])] = float(rng.random()) * min(priority.values())
            else:
                pick = choices[int(rng.integers(len(choices)))]
            kind, g, pipe = pick
            progress += 1
            if kind == "pipe":
                fn, vals = g.pending[pipe].popleft()
                fn(g, vals)
                continue
            code = self._scalar(g)
            if code == BLOCKED:
                state[id(g)], seen[id(g)] = "blocked", progress
            elif code == BARRIER:
                state[id(g)] = "barrier"
            else:
                state[id(g)] = "end" if code == "end" else "run"

    @staticmethod
    def _scalar(g: Group) -> Any:
        """Run one scalar instruction of `g` (and its issue of pipe actions)."""
        code = g.dec.code
        if g.pc >= len(code):
            return "end"
        pc = g.pc
        g.counts[pc] += 1
        r = code[pc](g)
        if r is None:
            g.pc = pc + 1
        elif r >= 0:
            g.pc = r
        elif r == BARRIER:
            g.pc = pc + 1
            return BARRIER
        else:
            g.counts[pc] -= 1
            return BLOCKED
        return "end" if g.pc >= len(code) else None


def _runnable(g: Group, head: tuple) -> bool:
    fn, vals = head
    if fn is sync.do_wait:
        return g.flags.get(vals[0], 0) > 0
    return True


def _stuck(groups: list[Group], state: dict) -> DeadlockError:
    waiting = [g for g in groups if state[id(g)] != "done"]
    g = waiting[0]
    pc = min(g.pc, len(g.dec.texts) - 1)
    return DeadlockError(
        f"core {int(g.cores[0])} ({g.core_type.upper()}): deadlock in a randomly ordered run: no core can issue "
        f"and no pipe can run (stopped at instruction #{pc} `{g.dec.texts[pc]}`)",
        int(g.cores[0]), ({"pipe": "S", "instruction": pc, "text": g.dec.texts[pc]},),
    )
