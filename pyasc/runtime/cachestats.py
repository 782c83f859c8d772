"""Cache statistics kept in the cache folder, across processes (`pyasc cache stats`, like `ccache -s`).

Every Kernel counts its calls as in-memory hits, disk hits and misses (real
compiles) for `cache_info()`. The same counts, per kernel, are added here to
a process-wide tally and from there into `<cache root>/stats.json`:

- a miss or a disk hit writes the tally out at once (the call already
  compiled or read an entry, so one small locked write more costs little);
- an in-memory hit only counts in the tally (it is the fast path of a call and
  must not touch a file); the tally goes out with the next miss or disk hit,
  when the process exits, and before `pyasc cache stats` reads the file.

A process that dies without exiting loses its pending in-memory hits, never
a miss. `stats.json` is replaced atomically under a file lock, so concurrent
processes add up; a corrupt or foreign file is started afresh.
"""
from __future__ import annotations

import atexit
import json
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cachesecret import env_modes
from .privatefiles import make_folders

STATS_FILE = "stats.json"
FORMAT = "pyasc.cache-stats"
VERSION = 1
KINDS = ("hits", "disk_hits", "misses")
LOCK_TIMEOUT_S = 10.0  # statistics are worth less than a blocked call: give up and keep the counts pending


@dataclass
class KernelStats:
    """One kernel's counts (or the total), with what the cache holds of it."""

    kernel: str
    hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    entries: int = 0
    size: int = 0

    @property
    def calls(self) -> int:
        return self.hits + self.disk_hits + self.misses

    @property
    def hit_rate(self) -> float:
        """Calls served without compiling (in memory or from disk) over all calls; 0.0 with no calls."""
        return (self.hits + self.disk_hits) / self.calls if self.calls else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "hits": self.hits, "disk_hits": self.disk_hits, "misses": self.misses,
                "hit_rate": self.hit_rate, "entries": self.entries, "size": self.size}


@dataclass
class StatsReport:
    """What `pyasc cache stats` shows: per kernel and in total, since `since` (a time stamp, or None)."""

    root: str
    since: float | None
    kernels: list[KernelStats] = field(default_factory=list)

    @property
    def total(self) -> KernelStats:
        t = KernelStats("(total)")
        for k in self.kernels:
            t.hits += k.hits
            t.disk_hits += k.disk_hits
            t.misses += k.misses
            t.entries += k.entries
            t.size += k.size
        return t

    def to_json(self) -> dict[str, Any]:
        return {"cache_dir": self.root, "since": self.since, "kernels": [k.to_json() for k in self.kernels],
                "total": self.total.to_json()}


class _Tally:
    """Counts not yet written, per cache root and kernel."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, dict[str, list[int]]] = {}

    def add(self, root: Path, kernel: str, kind: str) -> None:
        with self._lock:
            counts = self._pending.setdefault(str(root), {}).setdefault(kernel, [0, 0, 0])
            counts[KINDS.index(kind)] += 1

    def take(self, root: str | None = None) -> dict[str, dict[str, list[int]]]:
        with self._lock:
            if root is None:
                taken, self._pending = self._pending, {}
            else:
                taken = {root: self._pending.pop(root)} if root in self._pending else {}
        return taken

    def give_back(self, root: str, counts: dict[str, list[int]]) -> None:
        with self._lock:
            mine = self._pending.setdefault(root, {})
            for kernel, c in counts.items():
                old = mine.setdefault(kernel, [0, 0, 0])
                for i in range(len(KINDS)):
                    old[i] += c[i]


_TALLY = _Tally()


def count(root: Path | None, kernel: str, kind: str) -> None:
    """One call of `kernel` was a `kind` ("hits", "disk_hits", "misses"); root None: the disk cache is off."""
    if root is not None:
        _TALLY.add(root, kernel, kind)


def flush(root: Path | None = None) -> None:
    """Add the pending counts (of one cache root, or all) into their stats files; failures keep them pending."""
    for where, counts in _TALLY.take(None if root is None else str(root)).items():
        if not _add(Path(where), counts):
            _TALLY.give_back(where, counts)


atexit.register(flush)


def _lock(root: Path) -> Any:
    import filelock  # only when statistics are written or read

    modes = env_modes()
    make_folders(root, modes)  # (0700 whatever the umask: see diskcache.py's trust model)
    return filelock.FileLock(str(root / "stats.lock"), timeout=LOCK_TIMEOUT_S, mode=modes.file)


def _add(root: Path, counts: dict[str, list[int]]) -> bool:
    import filelock  # the module of the lock object: its Timeout

    try:
        with _lock(root):
            doc = read(root)
            for kernel, c in counts.items():
                mine = doc["kernels"].setdefault(kernel, dict.fromkeys(KINDS, 0))
                for kind, n in zip(KINDS, c):
                    mine[kind] = int(mine.get(kind, 0)) + n
            _write(root, doc)
    except (OSError, filelock.Timeout):
        return False
    return True


def read(root: Path) -> dict[str, Any]:
    """The stats document (a fresh one when the file is missing, corrupt or of another format)."""
    try:
        doc = json.loads((root / STATS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = None
    if (not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION
            or not isinstance(doc.get("kernels"), dict)
            or not all(isinstance(c, dict) and all(type(c.get(k, 0)) is int for k in KINDS)
                       for c in doc["kernels"].values())):
        return {"format": FORMAT, "version": VERSION, "since": time.time(), "kernels": {}}
    return doc


def _write(root: Path, doc: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{STATS_FILE}.", dir=root)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, env_modes().file)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, root / STATS_FILE)
    except OSError:
        os.unlink(tmp)
        raise


def zero(root: Path) -> None:
    """Start the counts afresh (the entries are kept)."""
    flush(root)
    with _lock(root):
        _write(root, {"format": FORMAT, "version": VERSION, "since": time.time(), "kernels": {}})


def report(root: Path, entries: list[Any]) -> StatsReport:
    """Counts per kernel (this process's pending ones included) with the entries each kernel has, sorted by
    kernel name. `entries`: the cache's EntryInfo list (its manifest names the kernel's qualified name)."""
    flush(root)
    doc = read(root)
    by_kernel: dict[str, KernelStats] = {}
    for name, c in doc["kernels"].items():
        by_kernel[name] = KernelStats(name, *(int(c.get(kind, 0)) for kind in KINDS))
    for e in entries:
        name = str(e.manifest.get("qualname") or e.kernel)
        k = by_kernel.setdefault(name, KernelStats(name))
        k.entries += 1
        k.size += e.size
    since = doc.get("since") if (root / STATS_FILE).exists() else None
    return StatsReport(str(root), since, [by_kernel[n] for n in sorted(by_kernel)])
