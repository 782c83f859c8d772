"""Functional execution of a launch: cores run in lockstep groups.

All cores of a launch start as one group that executes each instruction once
for all of its cores (numpy over the stacked per-core memories; per-core GM
offsets become strided views). A value that must be the same on every core of
a group (a loop trip count, a branch condition, an on-chip address, a size)
but is not splits the group by that value; the parts continue separately.
With the sanitizer on, every core is its own group.

Order of execution inside a core: instructions run in issue (program) order,
except that a pipe whose wait_flag is not yet satisfied holds back its later
instructions until the matching set_flag runs. That order is a valid
linearisation of what the hardware would do, so race-free programs get the
hardware's result; the sanitizer reports programs that are not race-free.

Each group records its stream of pipe instructions with their costs; the
timing model (timing.py) schedules one stream per set of identical cores.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Optional

import numpy as np

from . import isa
from .chips import ChipConfig
from .errors import DeadlockError, FlagLeftSetError, ProgramError
from .isa import PIPES
from .memory import GmBuffer
from .program import Program
from .sanitizer import Sanitizer

BARRIER = -1


class Split(Exception):
    """Raised by an instruction whose per-core value must be uniform but is not."""

    def __init__(self, key: np.ndarray):
        super().__init__("split")
        self.key = key


def selector(cores: np.ndarray) -> Any:
    """A slice over the stacked core axis when the cores are evenly spaced, else the index array."""
    if len(cores) == 1:
        c = int(cores[0])
        return slice(c, c + 1, 1)
    d = np.diff(cores)
    step = int(d[0])
    if step > 0 and (d == step).all():
        return slice(int(cores[0]), int(cores[-1]) + 1, step)
    return cores


class Group:
    """Cores executing the same instruction together, with their registers and sync state."""

    __slots__ = ("cores", "m", "sel", "regs", "pc", "loops", "stream", "scyc", "flags", "last_set",
                 "blocked", "pending", "counts", "bytes", "done")

    def __init__(self, cores: np.ndarray, n_instr: int):
        self.cores = cores
        self.m = len(cores)
        self.sel = selector(cores)
        self.regs: dict[str, Any] = {}
        self.pc = 0
        self.loops: list[list] = []          # [remaining iterations, step, var name]
        self.stream: list[tuple] = []        # timing records
        self.scyc = 0                        # scalar cycles since the last record
        self.flags: dict[tuple, int] = {}    # (src, dst, event) -> sets not yet consumed
        self.last_set: dict[tuple, int] = {}
        self.blocked: dict[int, tuple] = {}  # pipe -> (key, wait instruction) it waits on
        self.pending: dict[int, deque] = {}  # pipe -> actions held back behind a blocked wait
        self.counts = [0] * n_instr
        self.bytes: dict[str, int] = {}      # per-core bytes moved, by path
        self.done = False

    def core_value(self) -> Any:
        return int(self.cores[0]) if self.m == 1 else self.cores.copy()

    def uniform(self, name: Optional[str], v: np.ndarray) -> int:
        first = v[0]
        if (v == first).all():
            iv = int(first)
            if name is not None:
                self.regs[name] = iv
            return iv
        raise Split(v)

    def subset(self, mask: np.ndarray) -> "Group":
        g = Group(self.cores[mask], len(self.counts))
        m = self.m

        def cut(v: Any) -> Any:
            if isinstance(v, np.ndarray) and v.ndim == 1 and len(v) == m:
                s = v[mask]
                return int(s[0]) if (s == s[0]).all() else s
            if isinstance(v, tuple):
                return tuple(cut(x) for x in v)
            return v

        g.regs = {k: cut(v) for k, v in self.regs.items()}
        g.pc = self.pc
        g.loops = [[r, cut(step), var] for r, step, var in self.loops]
        g.stream = list(self.stream)
        g.scyc = self.scyc
        g.flags = dict(self.flags)
        g.last_set = dict(self.last_set)
        g.blocked = dict(self.blocked)
        g.pending = {p: deque((fn, cut(vals)) for fn, vals in q) for p, q in self.pending.items()}
        g.counts = list(self.counts)
        g.bytes = dict(self.bytes)
        return g


class Runner:
    """One launch's functional execution. `run()` returns the final groups."""

    def __init__(self, chip: ChipConfig, program: Program, block_dim: int, tiling: dict[str, int],
                 args: dict[str, GmBuffer], onchip: dict[str, np.ndarray], sanitizer: Optional[Sanitizer]):
        self.chip = chip
        self.program = program
        self.structure = program.validate()
        self.block_dim = block_dim
        self.tiling = tiling
        self.args = args
        self.onchip = onchip
        self.san = sanitizer
        self.instrs = program.instructions
        self.texts = [i.text() for i in self.instrs]
        self.pipes = [i.pipe for i in self.instrs]
        # GM stores that ran: (buffer, offset (int or per core), rows, row stride, row bytes)
        self.gm_writes: list[tuple] = []
        from .handlers import compile_instruction  # local import: handlers needs this module's names
        self.code: list[Callable] = [compile_instruction(self, k, instr) for k, instr in enumerate(self.instrs)]

    # ------------------------------------------------------------------ flags

    def issue(self, g: Group, pipe: int, fn: Callable, vals: Any) -> None:
        """Run `fn(g, vals)` now, or hold it back if `pipe` waits on a flag."""
        if g.blocked and pipe in g.blocked:
            g.pending.setdefault(pipe, deque()).append((fn, vals))
        else:
            fn(g, vals)

    def do_set(self, g: Group, vals: tuple) -> None:
        key, idx = vals
        if self.san is not None:
            self.san.set_flag(int(g.cores[0]), key, idx)
        g.flags[key] = g.flags.get(key, 0) + 1
        g.last_set[key] = idx
        dst = key[1]
        b = g.blocked.get(dst)
        if b is not None and b[0] == key:
            del g.blocked[dst]
            self._consume(g, key, b[1])
            q = g.pending.get(dst)
            while q and dst not in g.blocked:
                fn, v = q.popleft()
                fn(g, v)

    def do_wait(self, g: Group, vals: tuple) -> None:
        key, idx = vals
        if g.flags.get(key, 0) > 0:
            self._consume(g, key, idx)
        else:
            g.blocked[key[1]] = (key, idx)

    def do_scalar_wait(self, g: Group, vals: tuple) -> None:
        """wait_flag(X, S): the scalar unit stops issuing until the event is set.

        Everything issued before the wait has already run or is held behind a blocked
        wait, so an event not set by now can only be set by an instruction after the
        wait, which the stopped scalar unit never issues: a deadlock.
        """
        key, idx = vals
        if g.flags.get(key, 0) <= 0:
            src = key[0]
            why = "no instruction issued before it sets the event"
            b = g.blocked.get(src)
            if b is not None:
                why = (f"pipe {PIPES[src]} is itself blocked at instruction #{b[1]} `{self.texts[b[1]]}` "
                       f"before it could set it")
            raise DeadlockError(
                f"core {int(g.cores[0])}: deadlock: the scalar unit waits at instruction #{idx} `{self.texts[idx]}` "
                f"for a set_flag {PIPES[src]}->S event {key[2]}, but {why}; the scalar unit cannot issue anything "
                f"after the wait, so the event is never set",
                int(g.cores[0]), ({"pipe": "S", "instruction": idx, "text": self.texts[idx]},),
            )
        self._consume(g, key, idx)
        if self.san is not None:
            # what the scalar unit now knows, every instruction it issues later knows too
            snap = self.san.clock(int(g.cores[0]), 0)
            for p in range(1, len(PIPES)):
                self.issue(g, p, self._join_scalar, (p, [snap]))

    def _join_scalar(self, g: Group, vals: tuple) -> None:
        p, (snap,) = vals
        self.san.join(int(g.cores[0]), p, snap)

    def _consume(self, g: Group, key: tuple, idx: int) -> None:
        g.flags[key] -= 1
        if self.san is not None:
            self.san.wait_flag(int(g.cores[0]), key, idx)

    def check_no_blocked(self, g: Group, where: str) -> None:
        """At a point where the scalar unit waits for the pipes (end, barrier), a blocked pipe never runs again."""
        if not g.blocked:
            return
        lines = []
        for pipe, (key, idx) in sorted(g.blocked.items()):
            src = key[0]
            why = ("whose own queue is blocked too" if src in g.blocked
                   else "which has nothing left that sets it")
            lines.append(
                f"pipe {PIPES[pipe]} waits at instruction #{idx} `{self.texts[idx]}` for a set_flag "
                f"{PIPES[src]}->{PIPES[key[1]]} event {key[2]} from {PIPES[src]}, {why}"
            )
        cycle = self._wait_cycle(g)
        text = f" (cycle of waits: {cycle})" if cycle else ""
        accesses = tuple({"pipe": PIPES[p], "instruction": idx, "text": self.texts[idx]}
                         for p, (_, idx) in sorted(g.blocked.items()))
        raise DeadlockError(
            f"core {int(g.cores[0])}: deadlock {where}{text}: " + "; ".join(lines), int(g.cores[0]), accesses
        )

    def _wait_cycle(self, g: Group) -> str:
        for p0 in g.blocked:
            seen = [p0]
            p = p0
            while True:
                src = g.blocked[p][0][0]
                if src not in g.blocked:
                    break
                if src in seen:
                    loop = seen[seen.index(src):] + [src]
                    return " -> ".join(PIPES[x] for x in loop)
                seen.append(src)
                p = src
        return ""

    def finish(self, g: Group) -> None:
        self.check_no_blocked(g, "at the end of the kernel")
        left = [(k, n) for k, n in g.flags.items() if n > 0]
        if left:
            key, n = sorted(left)[0]
            idx = g.last_set[key]
            raise FlagLeftSetError(
                f"core {int(g.cores[0])}: flag {PIPES[key[0]]}->{PIPES[key[1]]} event {key[2]} is still set "
                f"when the kernel ends (last set by instruction #{idx} `{self.texts[idx]}`, {n} set(s) never "
                f"waited for): on hardware the next kernel's wait on it would pass wrongly or a later set hang",
                int(g.cores[0]),
                ({"pipe": PIPES[key[0]], "instruction": idx, "text": self.texts[idx]},),
            )

    # ------------------------------------------------------------------ running

    def _run_group(self, g: Group) -> Any:
        code = self.code
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
            return self._split(g, s.key)
        except KeyError as e:
            raise ProgramError(
                f"core {int(g.cores[0])}: instruction #{pc} `{self.texts[pc]}` reads register {e.args[0]} "
                f"that this core never wrote"
            ) from None
        g.pc = n
        self.finish(g)
        g.done = True
        return None

    def _split(self, g: Group, key: np.ndarray) -> list[Group]:
        _, inv = np.unique(key, return_inverse=True)
        return [g.subset(inv == u) for u in range(int(inv.max()) + 1)]

    def initial_groups(self) -> list[Group]:
        cores = np.arange(self.block_dim, dtype=np.int64)
        if self.san is not None:
            return [Group(cores[i:i + 1], len(self.code)) for i in range(self.block_dim)]
        return [Group(cores, len(self.code))]

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
                raise DeadlockError(
                    f"sync_all: cores {_short(wait_cores)} wait at instruction #{idx} `{self.texts[idx]}` but cores "
                    f"{_short(done_cores)} ended without reaching it; the all-core barrier never opens",
                    wait_cores[0], ({"pipe": "S", "instruction": idx, "text": self.texts[idx]},),
                )
            if self.san is not None:
                self.san.sync_all()
            work = waiting[::-1]
            waiting = []


def _short(cores: list[int]) -> str:
    return str(cores) if len(cores) <= 8 else f"[{', '.join(map(str, cores[:8]))}, ... ({len(cores)} cores)]"


def mnemonic(instr: isa.Instr) -> str:
    """Name used in instruction counts: the op, refined by function or path."""
    fn = getattr(instr, "fn", None)
    if fn is not None:
        return f"{instr.OP}.{fn}"
    if isinstance(instr, isa.Copy):
        return f"copy.{instr.path}"
    if isinstance(instr, isa.LoadL0):
        return f"load_l0.{instr.dst.space.lower()}"
    return instr.OP
