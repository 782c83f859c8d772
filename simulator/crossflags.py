"""Cross-core flags: who waits for whom, and the counters of the functional run.

Cores have launch-wide ids: in a mixed launch of G groups the AIC of group g
is core g and its AIVs are G + g*group_aivs + s (s = 0 .. group_aivs-1); in a
one-type launch the ids are the core indices. Per mode, a wait of core c
listens to a set of source cores S(c), and the k-th wait of flag f on c
returns once every source has made its k-th set of f in that mode:

- "all": every core of c's type in the launch (a barrier among them);
- "group_aivs": the AIVs of c's group, c included (a barrier among them);
- "group": an AIV listens to its AIC, an AIC to each of its AIVs.

A source may run at most `cross_flag_limit` sets ahead of a waiting core: the
hardware counter would overflow.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .errors import DeadlockError, FlagLeftSetError, FlagOverflowError


class Layout:
    """Where each core of a launch is: its type, index and group."""

    def __init__(self, counts: dict[str, int], groups: Optional[int], group_aivs: int):
        self.counts = counts
        self.mixed = groups is not None
        self.groups = groups
        self.group_aivs = group_aivs
        self.gbase = {"aic": 0, "aiv": groups} if self.mixed else {t: 0 for t in counts}
        self.total = sum(counts.values())

    def of(self, gcore: int) -> tuple[str, int]:
        if self.mixed and gcore >= self.groups:
            return "aiv", gcore - self.groups
        return ("aic" if self.mixed else next(iter(self.counts))), gcore

    def label(self, gcore: int) -> str:
        ct, c = self.of(gcore)
        return f"{ct.upper()} core {c}" if self.mixed else f"core {c}"

    def sources(self, mode: str, gcore: int) -> list[int]:
        """The cores whose sets a wait of `gcore` in `mode` needs."""
        ct, c = self.of(gcore)
        base = self.gbase[ct]
        if mode == "all":
            return list(range(base, base + self.counts[ct]))
        if ct == "aiv":
            grp = c // self.group_aivs
            if mode == "group_aivs":
                return [base + grp * self.group_aivs + s for s in range(self.group_aivs)]
            return [grp]  # "group": the AIC of the group
        return [self.groups + c * self.group_aivs + s for s in range(self.group_aivs)]  # an AIC: its AIVs

    def targets(self, mode: str, gcore: int) -> list[int]:
        """The cores whose waits count the sets of `gcore` in `mode`."""
        ct, c = self.of(gcore)
        if mode in ("all", "group_aivs"):
            return self.sources(mode, gcore)
        if ct == "aic":
            return self.sources(mode, gcore)
        return [c // self.group_aivs]


class CrossFlags:
    """The set and wait counts of every cross-core flag of a launch (functional run)."""

    def __init__(self, layout: Layout, limit: int):
        self.layout = layout
        self.limit = limit
        self.sets: dict[tuple, np.ndarray] = {}   # (mode, flag) -> sets made, per launch-wide core
        self.waits: dict[tuple, np.ndarray] = {}  # (mode, flag) -> waits passed, per launch-wide core
        self.last_set: dict[tuple, tuple] = {}    # (mode, flag, core) -> (instruction index, text)
        self.version = 0                          # bumped by every set: a blocked wait may pass now

    def _counts(self, table: dict, key: tuple) -> np.ndarray:
        arr = table.get(key)
        if arr is None:
            arr = table[key] = np.zeros(self.layout.total, np.int64)
        return arr

    def set(self, key: tuple, gcores: np.ndarray, where: tuple) -> None:
        sets = self._counts(self.sets, key)
        waits = self._counts(self.waits, key)
        sets[gcores] += 1
        self.version += 1
        mode = key[0]
        for s in gcores.tolist():
            self.last_set[key + (s,)] = where
            for t in self.layout.targets(mode, s):
                if sets[s] - waits[t] > self.limit:
                    raise FlagOverflowError(
                        f"{self.layout.label(s)}: cross-core flag {key[1]} ({mode}) is set {sets[s] - waits[t]} "
                        f"times ahead of {self.layout.label(t)}'s waits at instruction #{where[0]} `{where[1]}`; the "
                        f"hardware counter holds at most {self.limit} pending sets (sync back before setting again)",
                        s, ({"pipe": "S", "instruction": where[0], "text": where[1]},),
                    )

    def ready(self, key: tuple, gcores: np.ndarray) -> np.ndarray:
        """For each core: whether its next wait of `key` can pass now."""
        sets = self._counts(self.sets, key)
        waits = self._counts(self.waits, key)
        mode = key[0]
        return np.array([all(sets[s] > waits[c] for s in self.layout.sources(mode, c)) for c in gcores.tolist()])

    def passed(self, key: tuple, gcores: np.ndarray) -> None:
        self._counts(self.waits, key)[gcores] += 1

    def sources(self, key: tuple, gcore: int) -> list[int]:
        return self.layout.sources(key[0], gcore)

    def check_end(self) -> None:
        """At the end of the kernel no cross-core flag may hold sets nobody waited for."""
        for key, sets in sorted(self.sets.items()):
            waits = self._counts(self.waits, key)
            for s in range(self.layout.total):
                for t in self.layout.targets(key[0], s):
                    if sets[s] > waits[t]:
                        idx, text = self.last_set[key + (s,)]
                        raise FlagLeftSetError(
                            f"{self.layout.label(s)}: cross-core flag {key[1]} ({key[0]}) still holds "
                            f"{sets[s] - waits[t]} set(s) for {self.layout.label(t)} when the kernel ends (last set "
                            f"by instruction #{idx} `{text}`): a later kernel's wait would pass wrongly",
                            s, ({"pipe": "S", "instruction": idx, "text": text},),
                        )

    def deadlock(self, blocked: list) -> DeadlockError:
        """The error for groups whose scalar units wait on cross-core flags that nothing left will set."""
        lines = []
        first = None
        for g in blocked:
            key, idx = g.xwait
            gc = g.cores + self.layout.gbase[g.core_type]
            for c in gc.tolist():
                missing = [s for s in self.layout.sources(key[0], c)
                           if self._counts(self.sets, key)[s] <= self._counts(self.waits, key)[c]]
                if missing:
                    first = first or (c, idx, g.dec.texts[idx])
                    who = ", ".join(self.layout.label(s) for s in missing[:4]) + (" ..." if len(missing) > 4 else "")
                    lines.append(f"{self.layout.label(c)} waits at instruction #{idx} `{g.dec.texts[idx]}` for "
                                 f"{who}")
        c, idx, text = first
        return DeadlockError(
            f"deadlock: cross-core waits that can never be satisfied (every core still running waits): "
            + "; ".join(lines[:6]) + (f"; ... ({len(lines)} waits)" if len(lines) > 6 else ""),
            c, ({"pipe": "S", "instruction": idx, "text": text},),
        )
