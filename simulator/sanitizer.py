"""Opt-in detection of races, uninitialised reads and event sets not ordered after their previous wait.

Ordering is tracked with vector clocks over every (core, pipe) of the launch:
an access ticks its pipe's own clock; set_flag snapshots the source pipe's
clock and the matching wait_flag joins it into the destination pipe (and
ticks it, so the next set of the event can be checked to come after it); a
wait on the scalar unit reaches every pipe's later instructions;
pipe_barrier(ALL) joins the core's pipes; sync_all joins everything; a
cross-core wait joins the clocks of the sets it waited for. Two accesses are
ordered when the later one's clock covers the earlier one's tick.

The sanitizer runs in lockstep like a plain launch: a group's state holds one
clock per core and pipe, and every check covers all cores of the group at
once. Shadow memory: shadow.py.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Optional

import numpy as np

from .errors import DoubleSetError, RaceError, UninitializedReadError
from .isa import PIPES
from .lockstep import Group
from .sanitizer_gm import GmAccesses
from .shadow import NP, GmShadow, OnChipShadow, Records, Sets

# an on-chip access pattern: (start, rows, row stride, row bytes)
Pattern = tuple


class SanGroup:
    """A lockstep group's sanitizer state: a vector clock per core and pipe, pending flag snapshots,
    on-chip shadows (identical for all cores of the group)."""

    __slots__ = ("vc", "own", "gcores", "flags", "last_wait", "shadows")

    def __init__(self, vc: np.ndarray, own: np.ndarray, gcores: np.ndarray):
        self.vc = vc              # (cores, NP, launch cores * NP)
        self.own = own            # first clock column of each core
        self.gcores = gcores      # launch-wide core ids
        self.flags: dict[tuple, deque] = {}      # event -> (snapshot per core, set instruction) not yet waited
        self.last_wait: dict[tuple, tuple] = {}  # event -> (wait's stamp on its pipe, wait idx, set idx)
        self.shadows: dict[str, OnChipShadow] = {}

    def subset(self, mask: np.ndarray) -> "SanGroup":
        new = SanGroup(self.vc[mask].copy(), self.own[mask], self.gcores[mask])
        new.flags = {k: deque((s[mask], i) for s, i in q) for k, q in self.flags.items()}
        new.last_wait = dict(self.last_wait)
        new.shadows = {k: v.copy() for k, v in self.shadows.items()}
        return new


class Sanitizer(GmAccesses):
    """Tracks every access and flag of a launch; raises RaceError / UninitializedReadError /
    DoubleSetError on the first finding."""

    def __init__(self, core_counts: dict[str, int], gbase: dict[str, int], space_bytes: dict[str, dict[str, int]],
                 space_blocks: dict[str, dict[str, int]], mixed: bool = False):
        self.core_counts = core_counts
        self.gbase = gbase
        self.width = sum(core_counts.values()) * NP
        self.space_bytes = space_bytes
        self.space_blocks = space_blocks
        self.mixed = mixed
        self.records = Records()
        self.sets = Sets()
        self.gm_shadows: dict[int, GmShadow] = {}
        self.groups: list[Group] = []
        self.xsets: dict[tuple, list] = {}    # (mode, flag, launch-wide core) -> [(clock, set idx)]
        self.xwaits: dict[tuple, int] = {}    # (mode, flag, launch-wide core) -> waits done
        self.programs: list[list[str]] = []   # listing texts of each program, by the index records keep
        self._program_ids: dict[int, int] = {}
        self._keep: list = []                 # buffers whose ids key gm_shadows stay alive

    # ------------------------------------------------------------------ groups and clocks

    def attach(self, g: Group) -> None:
        """Give a new group of the launch its state (every clock at zero)."""
        gc = g.cores + self.gbase[g.core_type]
        g.sg = SanGroup(np.zeros((g.m, NP, self.width), np.int32), gc * NP, gc)
        self.groups.append(g)

    def tick(self, g: Group, pipe: int) -> int:
        sg = g.sg
        rows = np.arange(g.m)
        sg.vc[rows, pipe, sg.own + pipe] += 1
        return int(sg.vc[0, pipe, sg.own[0] + pipe])

    def clock(self, g: Group, pipe: int) -> np.ndarray:
        """What `pipe` of each core of the group knows of every (core, pipe)."""
        return g.sg.vc[:, pipe, :].copy()

    def join(self, g: Group, pipe: int, snapshot: np.ndarray) -> None:
        vc = g.sg.vc[:, pipe, :]
        np.maximum(vc, snapshot, out=vc)

    def join_all(self, g: Group) -> None:
        vc = g.sg.vc
        vc[:] = vc.max(axis=1, keepdims=True)

    def sync_all(self) -> None:
        """An all-core barrier: afterwards every pipe of every core knows everything before it."""
        live = [g for g in self.groups if g.sg is not None]
        top = np.max([g.sg.vc.max(axis=(0, 1)) for g in live], axis=0)
        for g in live:
            g.sg.vc[:] = np.maximum(g.sg.vc, top)

    def _program(self, g: Group) -> int:
        k = self._program_ids.get(id(g.dec))
        if k is None:
            k = self._program_ids[id(g.dec)] = len(self.programs)
            self.programs.append(g.dec.texts)
        return k

    def _core_of(self, gcore: int) -> int:
        """The index within its core type of a launch-wide core id."""
        return gcore - max(b for b in self.gbase.values() if b <= gcore)

    def label(self, g: Group, j: int = 0) -> str:
        c = int(g.cores[j])
        return f"{g.core_type.upper()} core {c}" if self.mixed else f"core {c}"

    def _label_gcore(self, gcore: int) -> str:
        ct = max((b, t) for t, b in self.gbase.items() if b <= gcore)[1]
        c = gcore - self.gbase[ct]
        return f"{ct.upper()} core {c}" if self.mixed else f"core {c}"

    @staticmethod
    def _describe(g: Group, pipe: int, idx: int) -> str:
        return f"{PIPES[pipe]} instruction #{idx} `{g.dec.texts[idx]}`"

    # ------------------------------------------------------------------ intra-core flags

    def set_flag(self, g: Group, key: tuple, idx: int) -> None:
        """A set must follow (in happens-before order) the wait that consumed the previous set.

        Otherwise some timing lets it fire while the previous set is still pending: the
        binary event is set twice and one set is lost.
        """
        sg = g.sg
        src, dst, ev = key
        lw = sg.last_wait.get(key)
        if lw is not None:
            known = sg.vc[np.arange(g.m), src, sg.own + dst]
            if int(known.min()) < lw[0]:
                j = int(np.argmin(known))
                w, s1 = lw[1], lw[2]
                texts = g.dec.texts
                raise DoubleSetError(
                    f"{self.label(g, j)}: set_flag {PIPES[src]}->{PIPES[dst]} event {ev} may be set twice without "
                    f"a wait: {self._describe(g, src, idx)} sets it again after {self._describe(g, src, s1)} and no "
                    f"set_flag/wait_flag chain orders it after {self._describe(g, dst, w)}, which consumed the "
                    f"previous set; on hardware the second set can fire while the first is still pending, the event "
                    f"is lost and a later wait hangs (order the set after that wait with a flag back from "
                    f"{PIPES[dst]} to {PIPES[src]}, or use another event id)",
                    int(g.cores[j]),
                    ({"pipe": PIPES[src], "instruction": s1, "text": texts[s1]},
                     {"pipe": PIPES[src], "instruction": idx, "text": texts[idx]},
                     {"pipe": PIPES[dst], "instruction": w, "text": texts[w]}),
                )
        sg.flags.setdefault(key, deque()).append((sg.vc[:, src, :].copy(), idx))

    def wait_flag(self, g: Group, key: tuple, idx: int) -> None:
        sg = g.sg
        snap, set_idx = sg.flags[key].popleft()
        dst = key[1]
        self.join(g, dst, snap)
        stamp = self.tick(g, dst)  # the wait is an event on its pipe: a later set must be ordered after it
        sg.last_wait[key] = (stamp, idx, set_idx)

    # ------------------------------------------------------------------ cross-core flags

    def cross_set(self, g: Group, pipe: int, key: tuple, idx: int) -> None:
        mode, flag = key
        snap = g.sg.vc[:, pipe, :]
        for j, gc in enumerate(g.sg.gcores.tolist()):
            self.xsets.setdefault((mode, flag, gc), []).append((snap[j].copy(), idx))

    def cross_wait(self, g: Group, key: tuple, sources: Callable[[tuple, int], list[int]]) -> None:
        """The scalar unit of each core of the group passed a cross-core wait: it joins the sets it waited for."""
        mode, flag = key
        vc = g.sg.vc
        for j, gc in enumerate(g.sg.gcores.tolist()):
            k = self.xwaits.get((mode, flag, gc), 0)
            self.xwaits[(mode, flag, gc)] = k + 1
            for s in sources(key, gc):
                np.maximum(vc[j, 0], self.xsets[(mode, flag, s)][k][0], out=vc[j, 0])

    # ------------------------------------------------------------------ on-chip accesses

    def onchip(self, g: Group, pipe: int, idx: int, space: str, p: Pattern, write: bool) -> None:
        sg = g.sg
        sh = sg.shadows.get(space)
        if sh is None:
            ct = g.core_type
            sh = sg.shadows[space] = OnChipShadow(self.space_bytes[ct][space], self.space_blocks[ct][space])
        stamp = self.tick(g, pipe)
        blk, byt = _indices(p, sh.block)
        lo, hi = _extent(p)
        if not write:
            w = sh.written[byt]
            if not w.all():
                b0 = _first(~w, byt)
                b1 = b0
                while b1 < hi and not sh.written[b1]:
                    b1 += 1
                raise UninitializedReadError(
                    f"{self.label(g)}: {self._describe(g, pipe, idx)} reads {space} bytes [{b0:#x}, {b1:#x}) "
                    f"that nothing wrote before (access covers [{lo:#x}, {hi:#x}))",
                    int(g.cores[0]), ({"pipe": PIPES[pipe], "instruction": idx, "text": g.dec.texts[idx],
                                       "space": space, "start": b0, "end": b1},),
                )
        # what this pipe knows of each pipe of its own core, on the core that knows least
        known = sg.vc[np.arange(g.m)[:, None], pipe, sg.own[:, None] + np.arange(NP)]
        kmin = known.min(axis=0)
        wp = sh.w_pipe[blk].astype(np.intp)
        bad = (wp >= 0) & (wp != pipe) & (sh.w_stamp[blk] > kmin[np.maximum(wp, 0)])
        if bad.any():
            k = _first(bad, blk)
            q = int(sh.w_pipe[k])
            self._race(g, space, pipe, idx, "reads" if not write else "writes", lo, hi, k * sh.block, sh.block,
                       q, int(sh.w_idx[k]), "writes", int(np.argmin(known[:, q])))
        if write:
            for q in range(NP):
                if q == pipe:
                    continue
                bad = sh.r_stamp[q, blk] > kmin[q]
                if bad.any():
                    k = _first(bad, blk)
                    self._race(g, space, pipe, idx, "writes", lo, hi, k * sh.block, sh.block, q,
                               int(sh.r_idx[q, k]), "reads", int(np.argmin(known[:, q])))
            sh.w_pipe[blk] = pipe
            sh.w_stamp[blk] = stamp
            sh.w_idx[blk] = idx
            sh.written[byt] = True
        else:
            sh.r_stamp[pipe, blk] = stamp
            sh.r_idx[pipe, blk] = idx

    def _race(self, g: Group, space: str, pipe: int, idx: int, verb: str, lo: int, hi: int, blk_start: int,
              block: int, other_pipe: int, other_idx: int, other_verb: str, j: int) -> None:
        b0, b1 = max(lo, blk_start), min(hi, blk_start + block)
        texts = g.dec.texts
        raise RaceError(
            f"{self.label(g, j)}: race on {space} bytes [{b0:#x}, {b1:#x}): {self._describe(g, pipe, idx)} {verb} "
            f"[{lo:#x}, {hi:#x}) while {self._describe(g, other_pipe, other_idx)} {other_verb} them, and no "
            f"set_flag/wait_flag chain orders {PIPES[other_pipe]} before {PIPES[pipe]}",
            int(g.cores[j]),
            ({"pipe": PIPES[pipe], "instruction": idx, "text": texts[idx], "space": space, "start": lo, "end": hi},
             {"pipe": PIPES[other_pipe], "instruction": other_idx, "text": texts[other_idx], "space": space,
              "start": b0, "end": b1}),
        )

    @property
    def shadow_bytes(self) -> dict[str, int]:
        """Bytes of shadow state: GM (per buffer touched), on-chip (per group) and the access records."""
        return {"gm": sum(sh.nbytes for sh in self.gm_shadows.values()),
                "onchip": sum(s.nbytes for g in self.groups if g.sg is not None for s in g.sg.shadows.values()),
                "records": self.records.nbytes}


def _indices(p: Pattern, block: int) -> tuple[Any, Any]:
    """(block index, byte index) of an on-chip access pattern: slices when contiguous. A pattern is
    (start, rows, row stride, row bytes), or (row starts, row bytes) for rows at arbitrary places."""
    if len(p) == 2:
        starts, length = p
        byt = (starts[:, None] + np.arange(length)[None, :]).ravel()
        return np.unique(byt // block), byt
    start, nb, stride, length = p
    if nb == 1 or stride == length:
        end = start + (nb - 1) * stride + length
        return slice(start // block, (end - 1) // block + 1), slice(start, end)
    rows = start + np.arange(nb) * stride
    byt = (rows[:, None] + np.arange(length)[None, :]).ravel()
    firsts, lasts = rows // block, (rows + length - 1) // block
    span = int((lasts - firsts).max()) + 1
    idx = firsts[:, None] + np.arange(span)[None, :]
    return np.unique(idx[idx <= lasts[:, None]]), byt


def _first(mask: np.ndarray, index: Any) -> int:
    """Position (in the indexed space) of the first True of `mask`."""
    k = int(np.argmax(mask))
    if isinstance(index, slice):
        return index.start + k
    return int(index[k])


def _extent(p: Pattern) -> tuple[int, int]:
    if len(p) == 2:
        return int(p[0].min()), int(p[0].max()) + p[1]
    start, nb, stride, length = p
    return start, start + (nb - 1) * stride + length


def make(chip: Any, parts: dict[str, tuple[tuple[str, ...], int, int]], enabled: bool) -> Optional[Sanitizer]:
    """The sanitizer for one launch on `chip` (None when not enabled); parts: core type -> (on-chip spaces,
    cores launched, launch-wide id of the first)."""
    if not enabled:
        return None
    return Sanitizer({ct: n for ct, (_, n, _) in parts.items()}, {ct: b for ct, (_, _, b) in parts.items()},
                     {ct: {s: chip.space_bytes(s) for s in sp} for ct, (sp, _, _) in parts.items()},
                     {ct: {s: min(chip.space_align(s), chip.dma_block_bytes) for s in sp}
                      for ct, (sp, _, _) in parts.items()}, mixed=len(parts) > 1)
