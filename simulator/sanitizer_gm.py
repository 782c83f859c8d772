"""The GM half of the sanitizer: every GM access of a lockstep group checked and recorded at once.

A read must be ordered after the last write of each byte (and must not read
bytes nobody wrote); a write after the last write and after every read since
(unless both are atomic updates of the same kind, which commute). Cores of
one group touching the same bytes in one instruction are unordered with each
other. Entries live per 4-byte granule (shadow.py); a row that covers a
granule only in part is checked byte by byte in that granule.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .errors import RaceError, UninitializedReadError
from .isa import PIPES
from .shadow import EARLIER, GRANULE, MIXED, NEVER, NONE, NP, SET0, GmShadow

READ, WRITE = 0, 1
ATOMIC_KINDS = {"add": 2, "max": 3, "min": 4}
G = GRANULE


class GmAccesses:
    """Mixed into the Sanitizer: uses its records, sets, GM shadows, clocks and labels."""

    def gm(self, g: Any, pipe: int, idx: int, buf: Any, p: tuple, write: bool, atomic: Optional[str] = None) -> None:
        """Check and record one GM access of every core of group `g`: rows of `p` = (start (int or one per
        core), rows, row stride, row bytes) of `buf`."""
        sh = self.gm_shadows.get(id(buf))
        if sh is None:
            sh = self.gm_shadows[id(buf)] = GmShadow(buf)
            self._keep.append(buf)
        stamp = self.tick(g, pipe)
        off, nrows, stride, width = p
        m = g.m
        offs = np.broadcast_to(np.asarray(off, dtype=np.int64), (m,))
        starts = offs[:, None] + np.arange(nrows, dtype=np.int64)[None, :] * stride
        kind = READ if not write else (WRITE if atomic is None else ATOMIC_KINDS[atomic])
        ids = self.records.add(g.sg.gcores, pipe, stamp, idx, starts[:, 0], starts[:, -1] + width, kind,
                               self._program(g))
        a = starts.ravel()
        b = a + width
        row_core = np.repeat(np.arange(m), nrows)
        ga, gb = -(-a // G), b // G
        lengths = np.maximum(gb - ga, 0)
        if (lengths == lengths[0]).all():
            n0 = int(lengths[0])
            gi = (ga[:, None] + np.arange(n0)[None, :]).ravel()
            cj = np.repeat(row_core, n0)
        else:
            gi = np.repeat(ga - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
            cj = np.repeat(row_core, lengths)
        edges = []
        part = np.flatnonzero((a % G != 0) | (b % G != 0))
        for r in part.tolist():
            ar, br, j = int(a[r]), int(b[r]), int(row_core[r])
            if ga[r] > gb[r]:
                edges.append((j, ar, br))
                continue
            if ar < ga[r] * G:
                edges.append((j, ar, int(ga[r]) * G))
            if gb[r] * G < br:
                edges.append((j, int(gb[r]) * G, br))
        acc = (g, sh, buf, pipe, idx, ids, kind, starts)
        w = sh.w[gi]
        mixed = w == MIXED
        if mixed.any():
            for k in np.flatnonzero(mixed).tolist():
                edges.append((int(cj[k]), int(gi[k]) * G, int(gi[k]) * G + G))
            keep = ~mixed
            gi, cj, w = gi[keep], cj[keep], w[keep]
        if gi.size:
            self._whole(acc, gi, cj, w)
        for j, lo, hi in edges:
            self._edge(acc, j, lo, hi)

    # ------------------------------------------------------------------ whole granules, vectorised

    def _whole(self, acc: tuple, gi: np.ndarray, cj: np.ndarray, w: np.ndarray) -> None:
        g, sh, buf, pipe, idx, ids, kind, starts = acc
        rec = self.records
        if kind == READ and (w == NEVER).any():
            k = int(np.argmax(w == NEVER))
            self._uninit(acc, int(cj[k]), int(gi[k]) * G)
        self._check_entries(acc, gi, cj, w)
        if kind != READ:
            self._check_entries(acc, gi, cj, sh.r[gi])
        shared = g.m > 1 and _overlaps(starts, int(self.records.hi[ids[0]] - starts[0, -1]))
        if kind == READ:
            self._new_entries(sh.r, acc, gi, cj, shared, prune_old=True)
            return
        if shared:
            u, first, cnt = np.unique(gi, return_index=True, return_counts=True)
            if (cnt > 1).any() and kind == WRITE:
                k = int(np.flatnonzero(cnt > 1)[0])
                dup = np.flatnonzero(gi == u[k])
                j1, j2 = int(cj[dup[0]]), int(cj[dup[1]])
                self._gm_race(acc, j2, int(u[k]) * G, int(ids[j1]))
        if kind == WRITE:
            sh.w[gi] = ids[cj]
        else:
            self._new_entries(sh.w, acc, gi, cj, shared, prune_old=True, keep_old=self._commutes_entry)
        sh.r[gi] = NONE

    def _new_entries(self, table: np.ndarray, acc: tuple, gi: np.ndarray, cj: np.ndarray, shared: bool,
                     prune_old: bool, keep_old: Any = None) -> None:
        """table[gi] := (the old entry's members not ordered before the new access) + this access's records.

        `keep_old(entry)`: whether old writer entries stay (atomic updates of one kind); readers always do."""
        g, sh, buf, pipe, idx, ids, kind, starts = acc
        old = table[gi]
        new = ids[cj]
        fresh = old == NONE if keep_old is None else (old < 0) & (old > SET0)
        if not shared:
            if keep_old is None:
                single = old >= 0
                if single.any():
                    ordered = self._ordered(g, cj[single], old[single], pipe)
                    fresh[np.flatnonzero(single)[ordered]] = True
            if fresh.all():
                table[gi] = new
                return
            table[gi[fresh]] = new[fresh]
            gi, cj, old, new = gi[~fresh], cj[~fresh], old[~fresh], new[~fresh]
        # the slow path: several cores at once, or old entries that stay; one merge per distinct combination
        order = np.lexsort((cj, gi))
        gi, cj, old = gi[order], cj[order], old[order]
        heads = np.flatnonzero(np.r_[True, gi[1:] != gi[:-1]])
        bits = np.bitwise_or.reduceat(np.left_shift(np.uint64(1), cj.astype(np.uint64)), heads)
        ug, uold = gi[heads], old[heads]
        combos = {}
        for k, (e, sig) in enumerate(zip(uold.tolist(), bits.tolist())):
            combos.setdefault((e, sig), []).append(k)
        for (e, sig), ks in combos.items():
            cores = [j for j in range(g.m) if sig >> j & 1]
            members = [int(ids[j]) for j in cores]
            if e >= 0 or e <= SET0:
                stay = keep_old is None or keep_old(e)
                if stay:
                    for r in self.sets.of(e):
                        if not all(self._ordered(g, np.array([j]), np.array([r]), pipe)[0] for j in cores):
                            members.append(r)
            table[ug[ks]] = self.sets.entry(tuple(members))

    # ------------------------------------------------------------------ partial granules, byte by byte

    def _edge(self, acc: tuple, j: int, lo: int, hi: int) -> None:
        g, sh, buf, pipe, idx, ids, kind, starts = acc
        gr = lo // G
        wb, rb = sh._mixed(gr)
        s = slice(lo - gr * G, hi - gr * G)
        jj = np.array([j])
        for e in np.unique(wb[s]).tolist():
            if e == NEVER and kind == READ:
                self._uninit(acc, j, lo + int(np.argmax(wb[s] == NEVER)))
            members = self.sets.of(e)
            for r in members:
                if not (self._ordered(g, jj, np.array([r]), pipe)[0] or self._commutes(np.array([r]), kind)[0]):
                    self._gm_race(acc, j, lo, r)
        if kind != READ:
            for e in np.unique(rb[s]).tolist():
                for r in self.sets.of(e):
                    if not self._ordered(g, jj, np.array([r]), pipe)[0]:
                        self._gm_race(acc, j, lo, r)
        me = int(ids[j])
        if kind == READ:
            for e in np.unique(rb[s]).tolist():
                keep = [r for r in self.sets.of(e) if not self._ordered(g, jj, np.array([r]), pipe)[0]]
                sel = np.flatnonzero(rb[s] == e) + s.start
                rb[sel] = self.sets.entry(tuple(keep + [me]))
            return
        if kind == WRITE:
            wb[s] = me
        else:
            for e in np.unique(wb[s]).tolist():
                keep = [r for r in self.sets.of(e) if self._commutes(np.array([r]), kind)[0]]
                sel = np.flatnonzero(wb[s] == e) + s.start
                wb[sel] = self.sets.entry(tuple(keep + [me]))
        rb[s] = NONE

    # ------------------------------------------------------------------ ordering and reports

    def _ordered(self, g: Any, cj: np.ndarray, recs: np.ndarray, pipe: int) -> np.ndarray:
        """Whether each record happened before the access of pipe `pipe` on core cj (program order on one pipe)."""
        rec = self.records
        gc, rp, st = rec.gcore[recs], rec.pipe[recs], rec.stamp[recs]
        known = g.sg.vc[cj, pipe, gc.astype(np.int64) * NP + rp]
        return (known >= st) | ((gc == g.sg.gcores[cj]) & (rp == pipe))

    def _commutes(self, recs: np.ndarray, kind: int) -> np.ndarray:
        """Atomic updates of one kind need no order among themselves."""
        return (kind >= 2) & (self.records.kind[recs] == kind)

    def _commutes_entry(self, entry: int) -> bool:
        members = self.sets.of(entry)
        return bool(members) and all(self.records.kind[r] >= 2 for r in members)

    def _check_entries(self, acc: tuple, gi: np.ndarray, cj: np.ndarray, entries: np.ndarray) -> None:
        """Every record the entries of granules gi name must be ordered before the access (or commute with it)."""
        g, pipe, kind = acc[0], acc[3], acc[6]
        single = entries >= 0
        if single.any():
            es, js = entries[single], cj[single]
            ok = self._ordered(g, js, es, pipe) | self._commutes(es, kind)
            if not ok.all():
                k = int(np.argmax(~ok))
                self._gm_race(acc, int(js[k]), int(gi[single][k]) * G, int(es[k]))
        for e in np.unique(entries[entries <= SET0]).tolist():
            sel = entries == e
            self._check_members(acc, cj[sel], gi[sel], self.sets.of(e))

    def _check_members(self, acc: tuple, cj: np.ndarray, gi: np.ndarray, members: tuple) -> None:
        g, pipe, kind = acc[0], acc[3], acc[6]
        for r in members:
            rr = np.full(cj.shape, r)
            ok = self._ordered(g, cj, rr, pipe) | self._commutes(rr, kind)
            if not ok.all():
                k = int(np.argmax(~ok))
                self._gm_race(acc, int(cj[k]), int(gi[k]) * G, r)

    def _uninit(self, acc: tuple, j: int, byte: int) -> None:
        g, sh, buf, pipe, idx, ids, kind, starts = acc
        lo, hi = int(self.records.lo[ids[j]]), int(self.records.hi[ids[j]])
        raise UninitializedReadError(
            f"{self.label(g, j)}: {self._describe(g, pipe, idx)} reads byte {byte:#x} of GM buffer {buf.name!r} "
            f"that neither the host nor a kernel wrote (access covers [{lo:#x}, {hi:#x}))",
            int(g.cores[j]), ({"pipe": PIPES[pipe], "instruction": idx, "text": g.dec.texts[idx], "space": "GM",
                               "start": lo, "end": hi},),
        )

    def _gm_race(self, acc: tuple, j: int, byte: int, other: int) -> None:
        g, sh, buf, pipe, idx, ids, kind, starts = acc
        rec = self.records
        lo, hi = int(rec.lo[ids[j]]), int(rec.hi[ids[j]])
        byte = max(byte, lo, int(rec.lo[other]))
        ocore, opipe, oidx = int(rec.gcore[other]), int(rec.pipe[other]), int(rec.instr[other])
        otext = self.programs[int(rec.prog[other])][oidx]
        overb = "reads" if rec.kind[other] == READ else "writes"
        same = ocore == int(g.sg.gcores[j])
        who = "" if same else self._label_gcore(ocore) + " "
        how = (f"no set_flag/wait_flag chain orders {PIPES[opipe]} before {PIPES[pipe]}" if same
               else "no sync_all or cross-core flag orders the two cores")
        raise RaceError(
            f"{self.label(g, j)}: race on byte {byte:#x} of GM buffer {buf.name!r}: {self._describe(g, pipe, idx)} "
            f"{'reads' if kind == READ else 'writes'} [{lo:#x}, {hi:#x}) while {who}{PIPES[opipe]} instruction "
            f"#{oidx} `{otext}` {overb} it, and {how}",
            int(g.cores[j]),
            ({"pipe": PIPES[pipe], "instruction": idx, "text": g.dec.texts[idx], "space": "GM", "start": lo, "end": hi},
             {"pipe": PIPES[opipe], "instruction": oidx, "text": otext, "space": "GM", "start": byte,
              "end": byte + 1, "core": self._core_of(ocore)}),
        )


def _overlaps(starts: np.ndarray, width: int) -> bool:
    """Whether the byte spans of different cores intersect (then the exact slow path runs)."""
    lo = starts[:, 0]
    order = np.argsort(lo, kind="stable")
    lo = lo[order]
    hi = np.maximum.accumulate(starts[order, -1] + width)
    return bool((lo[1:] < hi[:-1]).any())
