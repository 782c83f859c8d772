"""The L2 cache between the cores and HBM: which GM bytes a transfer finds in L2.

An LRU cache of `l2_bytes` at `l2_line_bytes` granularity, modelled exactly by
stack distance: a line is a hit when fewer than `capacity` distinct lines were
touched since its last use. Every access batch (one transfer of all the cores
of a timing group) gets one stamp; each line remembers the stamp of its last
use, and a Fenwick tree counts, per stamp, the lines whose last use it is, so
the distinct lines touched since stamp s are a suffix sum.

Reads allocate on a miss; writes allocate too (a later read of them hits)
and leave the line dirty. The L2 writes back: a dirty line reaches HBM once,
when it is evicted or at the end of its life, and that write-back is charged
to the store that dirtied it. So a store costs HBM bandwidth unless its line
is resident and already dirty (a workspace tile rewritten while it stays in
L2, the exchange of a mixed launch, costs only L2 bandwidth), and a streaming
kernel, which writes every line once, stays HBM-bound. Contents live as long as the device says a
kernel call lasts (Device.begin_call flushes them); a host write invalidates
what it overwrites. Accesses are decided in the order the timing model starts
the transfers, so the same schedule gives the same hits, with or without the
sanitizer.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from .chips import ChipConfig


class GmTouch(NamedTuple):
    """The GM bytes one record of a lockstep group moves: rows of `width` bytes, `stride` apart, from
    byte `off` (an int, or one per core of the group) of kernel argument `arg`."""

    arg: str
    off: Any
    nrows: int
    stride: int
    width: int
    write: bool


class _Fenwick:
    """Counts per stamp (1-based) with prefix sums, in a plain list: a handful of updates per transfer."""

    def __init__(self, size: int = 64):
        self.tree = [0] * (size + 1)
        self.total = 0

    def _grow(self, need: int) -> None:
        counts = [self.prefix(i) - self.prefix(i - 1) for i in range(1, len(self.tree))]
        size = len(self.tree) - 1
        while size < need:
            size *= 2
        self.tree = [0] * (size + 1)
        self.total = 0
        for i, c in enumerate(counts, 1):
            if c:
                self.add(i, c)

    def add(self, i: int, delta: int) -> None:
        tree = self.tree
        n = len(tree)
        if i >= n:
            self._grow(i)
            tree = self.tree
            n = len(tree)
        self.total += delta
        while i < n:
            tree[i] += delta
            i += i & -i

    def prefix(self, i: int) -> int:
        tree = self.tree
        if i >= len(tree):
            i = len(tree) - 1
        acc = 0
        while i > 0:
            acc += tree[i]
            i &= i - 1
        return acc


class L2Cache:
    """LRU contents of the L2; `access` tells a transfer how many of its lines hit."""

    def __init__(self, chip: ChipConfig):
        self.line = chip.l2_line_bytes
        self.capacity = chip.l2_bytes // chip.l2_line_bytes
        self.flush()

    def flush(self) -> None:
        """Forget everything (the start of a kernel call)."""
        if getattr(self, "_clock", None) == 0:
            return  # already empty
        self._stamps: dict[int, np.ndarray] = {}  # id(buffer) -> last-use stamp of each of its lines (0 never)
        self._dirty: dict[int, np.ndarray] = {}   # id(buffer) -> lines written since they were last fetched
        self._bufs: dict[int, Any] = {}
        self._tree = _Fenwick()
        self._clock = 0
        self.hit_lines = 0
        self.miss_lines = 0

    def invalidate(self, buf: Any, start: int, end: int) -> None:
        """A host write replaced bytes [start, end) of `buf`: their lines are no longer cached."""
        st = self._stamps.get(id(buf))
        if st is None or end <= start:
            return
        base = buf.addr // self.line
        lo, hi = (buf.addr + start) // self.line - base, (buf.addr + end - 1) // self.line - base + 1
        old = st[lo:hi]
        live = old[old > 0]
        if live.size:
            u, c = np.unique(live, return_counts=True)
            for stamp, n in zip(u.tolist(), c.tolist()):
                self._tree.add(stamp, -n)
        st[lo:hi] = 0

    def forget(self, buf: Any) -> None:
        """A freed buffer's lines leave the cache."""
        self.invalidate(buf, 0, buf.nbytes)
        self._stamps.pop(id(buf), None)
        self._dirty.pop(id(buf), None)
        self._bufs.pop(id(buf), None)

    def _lines(self, t: GmTouch, buf: Any) -> np.ndarray:
        """Line indices (relative to the buffer's first line) the touch covers, once per core that touches them."""
        line = self.line
        base = buf.addr // line
        contiguous = t.nrows == 1 or t.stride == t.width
        if contiguous and t.off.__class__ is int:
            a = buf.addr + t.off
            return np.arange(a // line - base, (a + (t.nrows - 1) * t.stride + t.width - 1) // line - base + 1)
        offs = np.atleast_1d(np.asarray(t.off, dtype=np.int64)) + buf.addr
        if contiguous:
            first = offs // line
            last = (offs + (t.nrows - 1) * t.stride + t.width - 1) // line
        else:
            rows = (offs[:, None] + np.arange(t.nrows, dtype=np.int64)[None, :] * t.stride).ravel()
            first = rows // line
            last = (rows + t.width - 1) // line
        spans = last - first
        span = int(spans.max()) + 1
        keep = None
        if span == 1:
            lines = first
        else:
            grid = first[:, None] + np.arange(span, dtype=np.int64)[None, :]
            if int(spans.min()) + 1 == span:
                lines = grid.ravel()
            else:
                keep = grid <= last[:, None]
                lines = grid[keep]
        if not contiguous:  # neighbouring rows may share a line: count each line once per core
            core = np.repeat(np.arange(offs.size, dtype=np.int64), t.nrows * (span if keep is None and span > 1
                                                                             else 1))
            if keep is not None:
                core = np.repeat(np.arange(offs.size, dtype=np.int64), t.nrows)
                core = np.broadcast_to(core[:, None], keep.shape)[keep]
            n = int(lines.max()) + 1
            lines = np.unique(core * n + lines) % n
        return lines - base

    def access(self, touches: Sequence[GmTouch], args: dict[str, Any]) -> float:
        """Touch the lines of one record (all cores of its timing group) in the launch's GM arguments `args`;
        returns the fraction of them that hit.

        A write hits only a resident dirty line (its write-back is already paid for); it leaves its lines
        cached and dirty.
        """
        self._clock += 1
        stamp = self._clock
        hits = total = 0
        line = self.line
        for t in touches:
            buf = args[t.arg]
            key = id(buf)
            st = self._stamps.get(key)
            if st is None:
                st = self._stamps[key] = np.zeros(-(-(buf.addr % line + buf.nbytes) // line), dtype=np.int64)
                self._dirty[key] = np.zeros(st.size, dtype=bool)
                self._bufs[key] = buf  # keep it alive while its id is a key
            dirty = self._dirty[key]
            if t.off.__class__ is int and (t.nrows == 1 or t.stride == t.width):
                # one core, one contiguous range: a slice, no index arrays
                a = buf.addr + t.off
                base = buf.addr // line
                lo, hi = a // line - base, (a + (t.nrows - 1) * t.stride + t.width - 1) // line - base + 1
                total += hi - lo
                view = st[lo:hi]
                hits += self._touch(view, dirty[lo:hi], t.write)
                view[:] = stamp
                self._tree.add(stamp, hi - lo)
                continue
            every = self._lines(t, buf)
            total += every.size
            lines = every if _distinct(every) else np.unique(every)
            if not t.write:
                hits += every.size - lines.size  # cores of one batch reading the same line: one fetch serves all
            d = dirty[lines]
            hits += self._touch(st[lines], d, t.write)
            dirty[lines] = d
            st[lines] = stamp
            self._tree.add(stamp, lines.size)
        self.hit_lines += hits
        self.miss_lines += total - hits
        return hits / total if total else 0.0

    def _touch(self, old: np.ndarray, dirty: np.ndarray, write: bool) -> int:
        """Lines of one touch that hit, given their last-use stamps `old` (0: never used); updates `dirty` in place
        (a write dirties its lines; a line fetched again after its eviction is clean) and takes the lines' old
        stamps out of the tree."""
        resident = np.zeros(old.shape, dtype=bool)
        if old.any():
            u, inv, cnt = np.unique(old, return_inverse=True, return_counts=True)
            tree = self._tree
            # distinct lines touched after stamp s: the lines whose last use is later than s
            live = np.array([s > 0 and tree.total - tree.prefix(s) < self.capacity for s in u.tolist()])
            resident = live[inv.reshape(old.shape)]
            for s_old, n in zip(u.tolist(), cnt.tolist()):
                if s_old > 0:
                    tree.add(s_old, -n)
        if write:
            hits = int(np.count_nonzero(resident & dirty))
            dirty[...] = True
            return hits
        dirty[~resident] = False
        return int(np.count_nonzero(resident))


def _distinct(lines: np.ndarray) -> bool:
    """Cheap proof that no line repeats: the list is strictly increasing (cores with disjoint, ordered rows)."""
    return lines.size < 2 or bool((lines[1:] > lines[:-1]).all())
