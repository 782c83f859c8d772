"""Global memory (an allocator of named buffers) and the per-core on-chip memories.

GM is a 64 GiB address space on the 910b preset, so it is never backed by
one array: each allocation owns a numpy byte array and a virtual address
(aligned to `gm_alloc_align`). On-chip memories of one kind are stacked, one
row per core, so an instruction can act on many cores at once.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .chips import ChipConfig
from .errors import MemoryRuleError


@dataclass(eq=False)
class GmBuffer:
    """One named GM allocation: `addr` is its virtual GM address, `data` its bytes.

    `written` lists the sorted, disjoint byte ranges written by the host or by a finished
    kernel (the sanitizer treats the rest as never written, so a kernel may read what an
    earlier kernel produced). Kernel stores are noted cheaply and folded in when read;
    `version` changes whenever `written` may have, so a replay that marked its ranges
    before knows it need not do it again.
    """

    name: str
    addr: int
    nbytes: int
    data: np.ndarray = field(repr=False)
    _written: list[tuple[int, int]] = field(default_factory=list, repr=False)
    _stores: list[tuple] = field(default_factory=list, repr=False)
    version: int = field(default=0, repr=False)

    @property
    def end(self) -> int:
        return self.addr + self.nbytes

    @property
    def written(self) -> list[tuple[int, int]]:
        if self._stores:
            self._fold_stores()
        return self._written

    @property
    def fully_written(self) -> bool:
        """Every byte was written (then later stores change nothing and cost nothing to note)."""
        w = self._written
        return len(w) == 1 and w[0] == (0, self.nbytes)

    def note_store(self, off, nrows: int, stride: int, width: int) -> None:
        """A kernel stored `nrows` rows of `width` bytes, `stride` apart, from byte `off` (an int or one per core)."""
        if self.fully_written:
            return
        self.version += 1
        self._stores.append((off, nrows, stride, width))
        if len(self._stores) > 256:  # keep the backlog small for buffers nobody sanitizes
            self._fold_stores()

    def _fold_stores(self) -> None:
        starts, ends = store_ranges(self._stores)
        self._stores = []
        self.mark_written(starts, ends)

    def mark_all_written(self) -> None:
        """The host wrote the whole buffer (no range arithmetic needed)."""
        self._written = [(0, self.nbytes)]
        self._stores = []
        self.version += 1

    def mark_unwritten(self) -> None:
        """New bytes nobody wrote yet (the buffer was given fresh memory)."""
        self._written = []
        self._stores = []
        self.version += 1

    def add_written(self, ranges: list[tuple[int, int]]) -> None:
        """Add sorted, disjoint byte ranges (a replay's stores, coalesced when it was recorded)."""
        if self.fully_written or not ranges:
            return
        if not self._stores and _covers(self._written, ranges):
            return
        self.version += 1
        if not self._written and not self._stores:
            self._written = list(ranges)
            return
        arr = np.array(ranges, dtype=np.int64).reshape(-1, 2)
        self.mark_written(arr[:, 0], arr[:, 1])

    def mark_written(self, starts: np.ndarray, ends: np.ndarray) -> None:
        """Add byte ranges [starts[i], ends[i]) to `written`, keeping it sorted and coalesced."""
        self.version += 1
        if self.fully_written:
            self._stores = []
            return
        if self._written:
            old = np.array(self._written, dtype=np.int64).reshape(-1, 2)
            starts = np.concatenate([old[:, 0], np.asarray(starts, np.int64).ravel()])
            ends = np.concatenate([old[:, 1], np.asarray(ends, np.int64).ravel()])
        self._written = coalesce(starts, ends)


def _covers(written: list[tuple[int, int]], ranges: list[tuple[int, int]]) -> bool:
    """Whether sorted disjoint `written` already holds every range (a cheap check for short lists only)."""
    if not written or len(ranges) > 16 or len(written) > 256:
        return False
    starts = [a for a, _ in written]
    for a, b in ranges:
        i = bisect.bisect_right(starts, a) - 1
        if i < 0 or written[i][1] < b:
            return False
    return True


def store_ranges(stores: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the byte ranges of stores (offset (an int or one per core), rows, row stride, row bytes)."""
    starts, ends = [], []
    for off, nrows, stride, width in stores:
        offs = np.atleast_1d(np.asarray(off, dtype=np.int64))
        if nrows == 1 or stride == width:
            starts.append(offs)
            ends.append(offs + (nrows - 1) * stride + width)
        else:
            row = (offs[:, None] + np.arange(nrows, dtype=np.int64)[None, :] * stride).ravel()
            starts.append(row)
            ends.append(row + width)
    if not starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(starts), np.concatenate(ends)


def coalesce(starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    """Byte ranges [starts[i], ends[i]) as a sorted list of disjoint, non-touching ranges."""
    starts = np.asarray(starts, np.int64).ravel()
    ends = np.asarray(ends, np.int64).ravel()
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if starts.size == 0:
        return []
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    # a new range begins where a start lies beyond every earlier end
    new = np.ones(starts.size, dtype=bool)
    new[1:] = starts[1:] > ends[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, starts.size - 1)
    return [(int(a), int(b)) for a, b in zip(starts[first], ends[last])]


def _round_up(x: int, a: int) -> int:
    return -(-x // a) * a


class GlobalMemory:
    """First-fit allocator over the chip's GM address space, with named buffers."""

    def __init__(self, chip: ChipConfig):
        self.chip = chip
        self._buffers: dict[str, GmBuffer] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._buffers

    def __iter__(self):
        return iter(sorted(self._buffers.values(), key=lambda b: b.addr))

    @property
    def used_bytes(self) -> int:
        return sum(_round_up(b.nbytes, self.chip.gm_alloc_align) for b in self._buffers.values())

    def get(self, name: str) -> GmBuffer:
        try:
            return self._buffers[name]
        except KeyError:
            known = ", ".join(sorted(self._buffers)) or "none"
            raise MemoryRuleError(f"no GM buffer named {name!r} (allocated: {known})",
                                  space="GM", rule="unknown buffer") from None

    def alloc(self, name: str, nbytes: int) -> GmBuffer:
        if not isinstance(name, str) or not name:
            raise MemoryRuleError(f"GM buffer name must be a non-empty string, got {name!r}", space="GM",
                                  rule="buffer name")
        if name in self._buffers:
            raise MemoryRuleError(f"a GM buffer named {name!r} already exists; free it first", space="GM",
                                  rule="unique buffer names")
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise MemoryRuleError(f"GM buffer {name!r}: size must be a positive number of bytes, got {nbytes!r}",
                                  space="GM", rule="positive size")
        nbytes = int(nbytes)
        align = self.chip.gm_alloc_align
        need = _round_up(nbytes, align)
        addr = self._find_gap(need)
        if addr is None:
            raise MemoryRuleError(
                f"GM capacity: cannot allocate {nbytes} bytes for {name!r}: {self.used_bytes} of "
                f"{self.chip.gm_bytes} bytes of chip {self.chip.name} GM are in use",
                space="GM", start=0, end=nbytes, rule="GM capacity",
            )
        buf = GmBuffer(name, addr, nbytes, np.zeros(nbytes, dtype=np.uint8))
        self._buffers[name] = buf
        return buf

    def _find_gap(self, need: int) -> Optional[int]:
        cursor = 0
        for b in sorted(self._buffers.values(), key=lambda b: b.addr):
            if b.addr - cursor >= need:
                return cursor
            cursor = _round_up(b.end, self.chip.gm_alloc_align)
        return cursor if self.chip.gm_bytes - cursor >= need else None

    def free(self, name: str) -> None:
        self.get(name)
        del self._buffers[name]


class OnChipMemory:
    """Stacked per-core memories of one core type: space -> (cores, bytes) uint8 array.

    Arrays are created on first use and kept between launches (like real
    hardware, a kernel finds whatever the previous one left behind).
    """

    def __init__(self, chip: ChipConfig, core_type: str, spaces: tuple[str, ...]):
        self.chip = chip
        self.cores = chip.cores_of(core_type)
        self.spaces = tuple(s for s in spaces if s != "GM")
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, space: str) -> np.ndarray:
        arr = self._arrays.get(space)
        if arr is None:
            arr = np.zeros((self.cores, self.chip.space_bytes(space)), dtype=np.uint8)
            self._arrays[space] = arr
        return arr
