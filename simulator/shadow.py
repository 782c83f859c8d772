"""Shadow state of the sanitizer: who last wrote and read each piece of memory.

GM: per buffer, one int32 writer and one int32 reader entry per `GRANULE`
(4) bytes: 2 bytes of shadow per GM byte touched. An entry is an access
record id (one row per core per access, in `Records`), or a set id for
several unordered readers (or atomic writers) of the same bytes, or NEVER /
EARLIER (written by the host or a finished kernel). A granule that an access
covers only in part (1- and 2-byte elements) keeps per-byte entries in a
side table.

On-chip: per lockstep group and space, per block of min(space alignment,
DMA block) bytes (every on-chip access row starts on such a block): the
writing pipe, its stamp (a pipe's own clock, the same on every core of a
group) and instruction, and per pipe the stamp and instruction of its last
read; plus a written bit per byte.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .isa import PIPES

NP = len(PIPES)
GRANULE = 16
NONE = -1      # reader entry: nobody read it in this launch
NEVER = -1     # writer entry: nothing ever wrote it
EARLIER = -2   # writer entry: the host or an earlier kernel wrote it
MIXED = -3     # the granule keeps per-byte entries
SET0 = -10     # entries <= SET0 name a set of record ids: set index = SET0 - entry


class Records:
    """Growable columns, one row per core per GM access: launch-wide core, pipe, stamp, instruction, kind
    (read, write or the atomic kind), program (index into the sanitizer's program texts), byte range."""

    def __init__(self):
        self.n = 0
        self._cap = 0
        self.gcore = self.pipe = self.stamp = self.instr = self.kind = self.prog = np.empty(0, np.int32)
        self.lo = self.hi = np.empty(0, np.int64)
        self._grow(1024)

    def _grow(self, cap: int) -> None:
        for name, dt in (("gcore", np.int32), ("pipe", np.int32), ("stamp", np.int32), ("instr", np.int32),
                         ("kind", np.int32), ("prog", np.int32), ("lo", np.int64), ("hi", np.int64)):
            new = np.empty(cap, dt)
            new[:self.n] = getattr(self, name)[:self.n]
            setattr(self, name, new)
        self._cap = cap

    def add(self, gcores: np.ndarray, pipe: int, stamp: int, instr: int, lo: np.ndarray, hi: np.ndarray,
            kind: int, prog: int) -> np.ndarray:
        m = len(gcores)
        if self.n + m > self._cap:
            self._grow(max(2 * self._cap, self.n + m))
        s = slice(self.n, self.n + m)
        self.gcore[s], self.pipe[s], self.stamp[s], self.instr[s], self.kind[s] = gcores, pipe, stamp, instr, kind
        self.prog[s] = prog
        self.lo[s], self.hi[s] = lo, hi
        ids = np.arange(self.n, self.n + m, dtype=np.int32)
        self.n += m
        return ids

    @property
    def nbytes(self) -> int:
        return self._cap * (6 * 4 + 2 * 8)


class Sets:
    """Interned sets of record ids (several unordered readers, or atomic writers, of the same bytes)."""

    def __init__(self):
        self.members: list[tuple[int, ...]] = []
        self._ids: dict[tuple[int, ...], int] = {}

    def entry(self, members: tuple[int, ...]) -> int:
        """The shadow entry for this set (a single member is its own record id)."""
        if len(members) == 1:
            return members[0]
        key = tuple(sorted(members))
        k = self._ids.get(key)
        if k is None:
            k = self._ids[key] = len(self.members)
            self.members.append(key)
        return SET0 - k

    def of(self, entry: int) -> tuple[int, ...]:
        if entry >= 0:
            return (entry,)
        if entry <= SET0:
            return self.members[SET0 - entry]
        return ()


class GmShadow:
    """Writer and reader entries of one GM buffer, per granule (per byte where a granule is mixed)."""

    def __init__(self, buf: Any):
        n = -(-buf.nbytes // GRANULE)
        self.w = np.full(n, NEVER, np.int32)
        self.r = np.full(n, NONE, np.int32)
        self.wb: dict[int, np.ndarray] = {}   # mixed granule -> per-byte writer entries
        self.rb: dict[int, np.ndarray] = {}   # mixed granule -> per-byte reader entries
        for a, b in buf.written:
            self.set_bytes(a, b, EARLIER, None)

    @property
    def nbytes(self) -> int:
        return self.w.nbytes + self.r.nbytes + 2 * 4 * GRANULE * len(self.wb)

    def _mixed(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        if self.w[g] != MIXED:
            self.wb[g] = np.full(GRANULE, self.w[g], np.int32)
            self.rb[g] = np.full(GRANULE, self.r[g], np.int32)
            self.w[g] = self.r[g] = MIXED
        return self.wb[g], self.rb[g]

    def set_bytes(self, a: int, b: int, writer: Optional[int], reader: Optional[int]) -> None:
        """Set the writer (and/or reader) entry of bytes [a, b), granule-wise where whole."""
        if b <= a:
            return
        g0, g1 = -(-a // GRANULE), b // GRANULE
        if g0 < g1:
            if writer is not None:
                self.w[g0:g1] = writer
                for g in [g for g in self.wb if g0 <= g < g1]:
                    del self.wb[g], self.rb[g]
                if reader is None:
                    self.r[g0:g1] = NONE
            if reader is not None:
                self.r[g0:g1] = reader
        for lo, hi in ((a, min(b, g0 * GRANULE)), (max(a, g1 * GRANULE), b)) if g0 < g1 else ((a, b),):
            if hi <= lo:
                continue
            g = lo // GRANULE
            wb, rb = self._mixed(g)
            if writer is not None:
                wb[lo - g * GRANULE:hi - g * GRANULE] = writer
                if reader is None:
                    rb[lo - g * GRANULE:hi - g * GRANULE] = NONE
            if reader is not None:
                rb[lo - g * GRANULE:hi - g * GRANULE] = reader

    def byte_entries(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Per-byte (writer, reader) entries of bytes [a, b) (for the rare partial granules)."""
        g0, g1 = a // GRANULE, (b - 1) // GRANULE + 1
        w = np.repeat(self.w[g0:g1], GRANULE)
        r = np.repeat(self.r[g0:g1], GRANULE)
        for g in range(g0, g1):
            if g in self.wb:
                k = (g - g0) * GRANULE
                w[k:k + GRANULE] = self.wb[g]
                r[k:k + GRANULE] = self.rb[g]
        s = a - g0 * GRANULE
        return w[s:s + b - a], r[s:s + b - a]


class OnChipShadow:
    """Writer and readers of each block of one on-chip space of a lockstep group's cores."""

    def __init__(self, nbytes: int, block: int):
        self.block = block
        n = -(-nbytes // block)
        self.w_pipe = np.full(n, -1, np.int8)
        self.w_stamp = np.zeros(n, np.int32)
        self.w_idx = np.zeros(n, np.int32)
        self.r_stamp = np.zeros((NP, n), np.int32)
        self.r_idx = np.zeros((NP, n), np.int32)
        self.written = np.zeros(nbytes, bool)

    def copy(self) -> "OnChipShadow":
        new = OnChipShadow.__new__(OnChipShadow)
        new.block = self.block
        for f in ("w_pipe", "w_stamp", "w_idx", "r_stamp", "r_idx", "written"):
            setattr(new, f, getattr(self, f).copy())
        return new

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in ("w_pipe", "w_stamp", "w_idx", "r_stamp", "r_idx", "written"))
