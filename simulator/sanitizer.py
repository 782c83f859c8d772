"""Opt-in detection of races, uninitialised reads and event sets not ordered after their previous wait.

Ordering is tracked with vector clocks, one per pipe of each core: an access
ticks its pipe's clock; set_flag snapshots the source pipe's clock and the
matching wait_flag joins it into the destination pipe (and ticks it, so that
the next set of the event can be checked to come after it); a wait on the
scalar unit reaches every pipe's later instructions; pipe_barrier(ALL) and
sync_all join every pipe. Two accesses are ordered when the later one's clock
covers the earlier one's tick. Cores are ordered only by sync_all (epochs).

Shadow state: on-chip memories per block of min(space alignment, DMA block)
bytes (every on-chip access row starts on such a boundary, so block overlap
is byte overlap) plus a written bit per byte; GM per byte (GM accesses need
only element alignment).
"""
from __future__ import annotations

from collections import deque
from typing import Optional

import numpy as np

from .chips import ChipConfig
from .errors import DoubleSetError, RaceError, UninitializedReadError
from .isa import PIPES
from .lockstep import Group
from .memory import GmBuffer

NP = len(PIPES)

# an access pattern: (start, nburst, stride, length) in bytes
Pattern = tuple[int, int, int, int]


def _byte_index(p: Pattern):
    start, nb, stride, length = p
    if nb == 1 or stride == length:
        return slice(start, start + (nb - 1) * stride + length)
    return (start + np.arange(nb)[:, None] * stride + np.arange(length)[None, :]).ravel()


def _block_index(p: Pattern, block: int):
    start, nb, stride, length = p
    if nb == 1 or stride == length:
        return slice(start // block, (start + (nb - 1) * stride + length - 1) // block + 1)
    firsts = (start + np.arange(nb) * stride) // block
    lasts = (start + np.arange(nb) * stride + length - 1) // block
    span = int((lasts - firsts).max()) + 1
    idx = (firsts[:, None] + np.arange(span)[None, :])
    idx = idx[idx <= lasts[:, None]]
    return np.unique(idx)


def _first(mask: np.ndarray, index) -> int:
    """Position (in the indexed space) of the first True of `mask`."""
    k = int(np.argmax(mask))
    if isinstance(index, slice):
        return index.start + k
    return int(index[k])


def _extent(p: Pattern) -> tuple[int, int]:
    start, nb, stride, length = p
    return start, start + (nb - 1) * stride + length


class _OnChipShadow:
    def __init__(self, nbytes: int, block: int):
        self.block = block
        nblk = -(-nbytes // block)
        self.w_pipe = np.full(nblk, -1, dtype=np.int8)
        self.w_cnt = np.zeros(nblk, dtype=np.int64)
        self.w_idx = np.zeros(nblk, dtype=np.int32)
        self.r_cnt = np.zeros((NP, nblk), dtype=np.int64)
        self.r_idx = np.zeros((NP, nblk), dtype=np.int32)
        self.written = np.zeros(nbytes, dtype=bool)


class _GmShadow:
    EARLIER = -2  # written by the host or by an earlier kernel
    NONE = -1
    MULTI = -3

    def __init__(self, buf: GmBuffer):
        n = buf.nbytes
        self.w_core = np.full(n, self.NONE, dtype=np.int32)
        for a, b in buf.written:
            self.w_core[a:b] = self.EARLIER
        self.w_ep = np.zeros(n, dtype=np.int32)
        self.w_pipe = np.zeros(n, dtype=np.int8)
        self.w_cnt = np.zeros(n, dtype=np.int64)
        self.w_idx = np.zeros(n, dtype=np.int32)
        self.r_core = np.full(n, self.NONE, dtype=np.int32)
        self.r_ep = np.zeros(n, dtype=np.int32)
        self.r_pipe = np.zeros(n, dtype=np.int8)
        self.r_cnt = np.zeros(n, dtype=np.int64)
        self.r_idx = np.zeros(n, dtype=np.int32)


class _CoreState:
    def __init__(self):
        self.vc = np.zeros((NP, NP), dtype=np.int64)
        self.flags: dict[tuple, deque] = {}       # event -> (clock snapshot, set instruction) not yet waited
        self.last_wait: dict[tuple, tuple] = {}   # event -> (wait's stamp on its pipe, wait idx, set idx)
        self.shadows: dict[str, _OnChipShadow] = {}


class Sanitizer:
    """Tracks every access and flag of a launch; raises RaceError / UninitializedReadError /
    DoubleSetError on the first finding."""

    def __init__(self, space_bytes: dict[str, int], texts: list[str], space_blocks: dict[str, int]):
        """space_blocks: per on-chip space, a power of two every access row starts on."""
        self.space_bytes = space_bytes
        self.space_blocks = space_blocks
        self.texts = texts
        self.epoch = 0
        self.cores: dict[int, _CoreState] = {}
        self.gm_shadows: dict[int, _GmShadow] = {}

    def _core(self, core: int) -> _CoreState:
        st = self.cores.get(core)
        if st is None:
            st = self.cores[core] = _CoreState()
        return st

    def _describe(self, pipe: int, idx: int) -> str:
        return f"{PIPES[pipe]} instruction #{idx} `{self.texts[idx]}`"

    # ------------------------------------------------------------------ sync

    def set_flag(self, g: Group, key: tuple, idx: int) -> None:
        """A set must follow (in happens-before order) the wait that consumed the previous set.

        Otherwise some timing lets it fire while the previous set is still pending: the
        binary event is set twice and one set is lost.
        """
        core = int(g.cores[0])
        st = self._core(core)
        src, dst, ev = key
        q = st.flags.setdefault(key, deque())
        prev = None
        if q:
            prev = (q[0][1], None)
        else:
            lw = st.last_wait.get(key)
            if lw is not None and st.vc[src][dst] < lw[0]:
                prev = (lw[2], lw[1])
        if prev is not None:
            s1, w = prev
            if w is None:
                why = "before any wait consumed the previous set"
            else:
                why = (f"and no set_flag/wait_flag chain orders it after {self._describe(dst, w)}, which consumed "
                       f"the previous set")
            accesses = [{"pipe": PIPES[src], "instruction": s1, "text": self.texts[s1]},
                        {"pipe": PIPES[src], "instruction": idx, "text": self.texts[idx]}]
            if w is not None:
                accesses.append({"pipe": PIPES[dst], "instruction": w, "text": self.texts[w]})
            raise DoubleSetError(
                f"core {core}: set_flag {PIPES[src]}->{PIPES[dst]} event {ev} may be set twice without a wait: "
                f"{self._describe(src, idx)} sets it again after {self._describe(src, s1)} {why}; on hardware "
                f"the second set can fire while the first is still pending, the event is lost and a later wait hangs "
                f"(order the set after that wait with a flag back from {PIPES[dst]} to {PIPES[src]}, or use another "
                f"event id)",
                core, tuple(accesses),
            )
        q.append((st.vc[src].copy(), idx))

    def wait_flag(self, g: Group, key: tuple, idx: int) -> None:
        st = self._core(int(g.cores[0]))
        snap, set_idx = st.flags[key].popleft()
        vc = st.vc[key[1]]
        np.maximum(vc, snap, out=vc)
        vc[key[1]] += 1  # the wait is an event on its pipe: a later set must be ordered after it
        st.last_wait[key] = (int(vc[key[1]]), idx, set_idx)

    def clock(self, g: Group, pipe: int) -> np.ndarray:
        """A copy of what `pipe` of the group's core knows of every pipe (its vector clock)."""
        return self._core(int(g.cores[0])).vc[pipe].copy()

    def join(self, g: Group, pipe: int, snapshot: np.ndarray) -> None:
        vc = self._core(int(g.cores[0])).vc[pipe]
        np.maximum(vc, snapshot, out=vc)

    def join_all(self, g: Group) -> None:
        st = self._core(int(g.cores[0]))
        st.vc[:] = st.vc.max(axis=0)

    def sync_all(self) -> None:
        self.epoch += 1
        for st in self.cores.values():
            st.vc[:] = st.vc.max(axis=0)

    # ------------------------------------------------------------------ accesses

    def onchip(self, g: Group, pipe: int, idx: int, space: str, p: Pattern, write: bool) -> None:
        core = int(g.cores[0])
        st = self._core(core)
        sh = st.shadows.get(space)
        if sh is None:
            sh = st.shadows[space] = _OnChipShadow(self.space_bytes[space], self.space_blocks[space])
        vc = st.vc[pipe]
        vc[pipe] += 1
        stamp = vc[pipe]
        blk = _block_index(p, sh.block)
        lo, hi = _extent(p)
        if not write:
            byt = _byte_index(p)
            w = sh.written[byt]
            if not w.all():
                b0 = _first(~w, byt)
                b1 = b0
                while b1 < hi and not sh.written[b1]:
                    b1 += 1
                raise UninitializedReadError(
                    f"core {core}: {self._describe(pipe, idx)} reads {space} bytes [{b0:#x}, {b1:#x}) "
                    f"that nothing wrote before (access covers [{lo:#x}, {hi:#x}))",
                    core, ({"pipe": PIPES[pipe], "instruction": idx, "text": self.texts[idx], "space": space,
                            "start": b0, "end": b1},),
                )
        wp = sh.w_pipe[blk]
        has = wp >= 0
        if has.any():
            wpi = np.where(has, wp, 0).astype(np.intp)
            bad = has & (sh.w_cnt[blk] > vc[wpi]) & (wpi != pipe)
            if bad.any():
                k = _first(bad, blk)
                other_pipe = int(sh.w_pipe[k])
                self._race(core, space, pipe, idx, "reads" if not write else "writes", lo, hi, k * sh.block,
                           sh.block, other_pipe, int(sh.w_idx[k]), "writes")
        if write:
            for q in range(NP):
                if q == pipe:
                    continue
                rc = sh.r_cnt[q, blk]
                bad = rc > vc[q]
                if bad.any():
                    k = _first(bad, blk)
                    self._race(core, space, pipe, idx, "writes", lo, hi, k * sh.block, sh.block, q,
                               int(sh.r_idx[q, k]), "reads")
            sh.w_pipe[blk] = pipe
            sh.w_cnt[blk] = stamp
            sh.w_idx[blk] = idx
            sh.written[_byte_index(p)] = True
        else:
            sh.r_cnt[pipe, blk] = stamp
            sh.r_idx[pipe, blk] = idx

    def _race(self, core: int, space: str, pipe: int, idx: int, verb: str, lo: int, hi: int, blk_start: int,
              block: int, other_pipe: int, other_idx: int, other_verb: str) -> None:
        b0, b1 = max(lo, blk_start), min(hi, blk_start + block)
        raise RaceError(
            f"core {core}: race on {space} bytes [{b0:#x}, {b1:#x}): {self._describe(pipe, idx)} {verb} "
            f"[{lo:#x}, {hi:#x}) while {self._describe(other_pipe, other_idx)} {other_verb} them, and no "
            f"set_flag/wait_flag chain orders {PIPES[other_pipe]} before {PIPES[pipe]}",
            core,
            ({"pipe": PIPES[pipe], "instruction": idx, "text": self.texts[idx], "space": space,
              "start": lo, "end": hi},
             {"pipe": PIPES[other_pipe], "instruction": other_idx, "text": self.texts[other_idx], "space": space,
              "start": b0, "end": b1}),
        )

    def gm(self, g: Group, pipe: int, idx: int, buf: GmBuffer, p: Pattern, write: bool) -> None:
        core = int(g.cores[0])
        st = self._core(core)
        sh = self.gm_shadows.get(id(buf))
        if sh is None:
            sh = self.gm_shadows[id(buf)] = _GmShadow(buf)
        vc = st.vc[pipe]
        vc[pipe] += 1
        stamp = vc[pipe]
        ep = self.epoch
        byt = _byte_index(p)
        lo, hi = _extent(p)
        where = f"GM buffer {buf.name!r}"
        wc = sh.w_core[byt]
        if not write and (wc == _GmShadow.NONE).any():
            b0 = _first(wc == _GmShadow.NONE, byt)
            raise UninitializedReadError(
                f"core {core}: {self._describe(pipe, idx)} reads byte {b0:#x} of {where} that neither the host "
                f"nor a kernel wrote (access covers [{lo:#x}, {hi:#x}))",
                core, ({"pipe": PIPES[pipe], "instruction": idx, "text": self.texts[idx], "space": "GM",
                        "start": lo, "end": hi},),
            )
        wpi = sh.w_pipe[byt].astype(np.intp)
        same = wc == core
        bad = ((wc >= 0) & ~same & (sh.w_ep[byt] == ep)) | (same & (sh.w_cnt[byt] > vc[wpi]) & (wpi != pipe))
        if bad.any():
            k = _first(bad, byt)
            self._gm_race(core, pipe, idx, write, lo, hi, where, k, int(sh.w_core[k]), int(sh.w_pipe[k]),
                          int(sh.w_idx[k]), "writes")
        rc = sh.r_core[byt]
        if write:
            rpi = sh.r_pipe[byt].astype(np.intp)
            cur = sh.r_ep[byt] == ep
            rsame = rc == core
            bad = (cur & ((rc == _GmShadow.MULTI) | ((rc >= 0) & ~rsame))) | (
                rsame & (sh.r_cnt[byt] > vc[rpi]) & (rpi != pipe))
            if bad.any():
                k = _first(bad, byt)
                self._gm_race(core, pipe, idx, write, lo, hi, where, k, int(sh.r_core[k]), int(sh.r_pipe[k]),
                              int(sh.r_idx[k]), "reads")
            sh.w_core[byt] = core
            sh.w_ep[byt] = ep
            sh.w_pipe[byt] = pipe
            sh.w_cnt[byt] = stamp
            sh.w_idx[byt] = idx
        else:
            other = (rc >= 0) & (rc != core) & (sh.r_ep[byt] == ep)
            multi = other | ((rc == _GmShadow.MULTI) & (sh.r_ep[byt] == ep))
            sh.r_core[byt] = np.where(multi, _GmShadow.MULTI, core)
            sh.r_ep[byt] = ep
            sh.r_pipe[byt] = pipe
            sh.r_cnt[byt] = stamp
            sh.r_idx[byt] = idx

    def _gm_race(self, core: int, pipe: int, idx: int, write: bool, lo: int, hi: int, where: str, byte: int,
                 other_core: int, other_pipe: int, other_idx: int, other_verb: str) -> None:
        who = f"core {other_core}" if other_core >= 0 else "another core"
        how = ("no sync_all separates the two cores" if other_core != core
               else f"no set_flag/wait_flag chain orders {PIPES[other_pipe]} before {PIPES[pipe]}")
        raise RaceError(
            f"core {core}: race on byte {byte:#x} of {where}: {self._describe(pipe, idx)} "
            f"{'writes' if write else 'reads'} [{lo:#x}, {hi:#x}) while {who} {self._describe(other_pipe, other_idx)} "
            f"{other_verb} it, and {how}",
            core,
            ({"pipe": PIPES[pipe], "instruction": idx, "text": self.texts[idx], "space": "GM", "start": lo, "end": hi},
             {"pipe": PIPES[other_pipe], "instruction": other_idx, "text": self.texts[other_idx], "space": "GM",
              "start": byte, "end": byte + 1, "core": other_core}),
        )


def make(chip: ChipConfig, spaces: tuple[str, ...], texts: list[str], enabled: bool) -> Optional[Sanitizer]:
    """The sanitizer for one launch on `chip` (None when not enabled)."""
    if not enabled:
        return None
    return Sanitizer({s: chip.space_bytes(s) for s in spaces}, texts,
                     {s: min(chip.space_align(s), chip.dma_block_bytes) for s in spaces})
