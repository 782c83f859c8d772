"""The records a launch's functional run shares between the executor and the instruction handlers.

A `Group` is a set of cores executing the same instruction together (numpy
over their stacked memories); `Split` is raised by a handler whose per-core
value must be uniform but is not; `Launch` holds what one launch binds (GM
arguments, tiling data, on-chip arrays, the sanitizer). Handlers return the
next pc, None (fall through) or one of the control codes below.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Optional, Protocol

import numpy as np

BARRIER = -1    # the group stops at an all-core barrier (sync_all)
BLOCKED = -2    # the group's scalar unit waits for a cross-core flag set by another group


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


class Launch:
    """What one launch binds, shared by all of its groups.

    args: param -> GmBuffer; tiling: field -> int; mems: core type -> {space: stacked
    (cores, bytes) array}; counts: core type -> cores launched; san: the sanitizer or None;
    gm_writes: GM stores that ran, as (buffer, offset (int or per core), rows, row stride,
    row bytes), so the device can remember what a kernel wrote; record: the memory actions as
    they run, when the launch is recorded for a replay (replay.py).
    """

    __slots__ = ("args", "tiling", "mems", "counts", "groups", "san", "gm_writes", "xflags", "record", "fuzz")

    def __init__(self, args: dict, tiling: dict[str, int], mems: dict[str, dict[str, np.ndarray]],
                 counts: dict[str, int], groups: int, san: Any):
        self.args = args
        self.tiling = tiling
        self.mems = mems
        self.counts = counts
        self.groups = groups
        self.san = san
        self.gm_writes: list[tuple] = []
        self.xflags: Any = None
        self.record: Optional[list] = None  # when recording for a replay: (exe, group, vals) as they run
        self.fuzz: Any = None               # the random generator of a randomly ordered run (fuzz.py)


class Group:
    """Cores executing the same instruction together, with their registers and sync state.

    `dec` is the decoded program they run, `ctx` the launch; `mem` (space -> stacked array),
    `args` and `san` are copied from them because every handler reads them.
    """

    __slots__ = ("cores", "m", "sel", "regs", "pc", "loops", "stream", "scyc", "flags", "last_set",
                 "blocked", "pending", "counts", "bytes", "done", "dec", "ctx", "mem", "args", "san",
                 "core_type", "xwait", "touches", "sg")

    def __init__(self, cores: np.ndarray, dec: Any, ctx: Launch):
        self.cores = cores
        self.m = len(cores)
        self.sel = selector(cores)
        self.regs: dict[str, Any] = {}
        self.pc = 0
        self.loops: list[list] = []          # [remaining iterations, step, var name]
        self.stream: list = []               # StreamRecords
        self.scyc = 0                        # scalar cycles since the last record
        self.flags: dict[tuple, int] = {}    # (src, dst, event) -> 1 while set and not yet consumed
        self.last_set: dict[tuple, int] = {}
        self.blocked: dict[int, tuple] = {}  # pipe -> (key, wait instruction) it waits on
        self.pending: dict[int, deque] = {}  # pipe -> actions held back behind a blocked wait
        self.counts = [0] * len(dec.code)
        self.bytes: dict[str, int] = {}      # per-core bytes moved, by path
        self.done = False
        self.dec = dec
        self.ctx = ctx
        self.core_type = dec.core_type
        self.mem = ctx.mems[dec.core_type]
        self.args = ctx.args
        self.san = ctx.san
        self.xwait: Optional[tuple] = None   # the cross-core wait the scalar unit is stopped at
        self.touches: dict[int, Any] = {}    # stream index -> GmTouch of that DMA record (for the L2)
        self.sg: Any = None                  # the sanitizer's state of these cores (sanitizer.SanGroup)

    def core_value(self) -> Any:
        return int(self.cores[0]) if self.m == 1 else self.cores.copy()

    def uniform(self, name: Optional[str], v: np.ndarray) -> Any:
        first = v[0]
        if (v == first).all():
            iv = first.item()
            if name is not None:
                self.regs[name] = iv
            return iv
        raise Split(v)

    def subset(self, mask: np.ndarray) -> "Group":
        g = Group(self.cores[mask], self.dec, self.ctx)
        m = self.m

        def cut(v: Any) -> Any:
            if isinstance(v, np.ndarray) and v.ndim == 1 and len(v) == m:
                s = v[mask]
                return s[0].item() if (s == s[0]).all() else s
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
        g.xwait = self.xwait
        g.touches = {j: _cut_touch(t, cut) for j, t in self.touches.items()}
        if self.sg is not None:
            g.sg = self.sg.subset(mask)
            self.san.groups.append(g)
        return g


class ProgramInfo(Protocol):
    """What a handler reads from its decoded program while it is being compiled (see decode.Decoded)."""

    chip: Any
    core_type: str
    structure: Any
    texts: list[str]
    pipes: list[str]


def _cut_touch(t: Any, cut: Any) -> Any:
    """The touch of a subset of the group's cores (per-core offsets are cut like registers)."""
    off = cut(t.off)
    return t if off is t.off else t._replace(off=off)
