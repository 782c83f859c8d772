"""The disk cache: compiled artifacts shared by processes, never stale, never executed when read.

Layout under the root (`PYASC_CACHE_DIR`, else the platform's user cache dir):

    entries/<components digest[:24]>/<full key[:24]>/   one entry (a variant: see keys.py)
        manifest.json    format + version, key and its components, the guards, the
                         kernel, signature and chip, created, per-section size and sha256
        graph.json ...   the sections (runtime/sections.py)
        hits             one byte appended per disk hit: its size is the hit count,
                         its modification time the last use (LRU order)
    locks/<components digest>.lock   one compile at a time per components digest, across processes
    tmp/  trash/         entries being written / being deleted
    stats.json (.lock)   hits, disk hits and misses per kernel (cachestats.py)
    tuning/              autotuning winners (tunestore.py)

An entry is written completely under tmp/ and renamed into place, so a
reader never sees half of one; a reader checks the format version and each
section's size and checksum, and an entry that fails is discarded with a
one-line `CacheWarning` and compiled again. Deleting is a rename into trash/
first, so a reader finds an entry whole or not at all. After each publish
the cache is pruned to `PYASC_CACHE_MAX_SIZE` (default 1 GiB; "500M", "2G"),
least recently used first, and lock files nobody holds whose entries are
gone are deleted. `PYASC_CACHE=0` turns the disk cache off (nothing is
written to the folder then).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from .keys import CACHE_FORMAT

FORMAT = "pyasc.cache-entry"
DEFAULT_MAX_SIZE = 1 << 30
LOCK_TIMEOUT_S = 120.0  # a compile holding the lock longer is presumed stuck; compile anyway
_STALE_TMP_S = 3600.0
_STALE_LOCK_S = 60.0  # a lock file younger than this may be about to be taken: prune keeps it
#: folders of generated files older pyasc versions wrote into the cache folder (the torch frontend's
#: kernel sources): nothing reads them any more, so prune (when stale) and clear delete them
_GENERATED = ("fx_kernels",)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


class CacheWarning(UserWarning):
    """A cache entry was discarded, or the cache could not be written (the call still succeeds)."""


def warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=4)


def parse_size(text: str) -> int:
    """Bytes from "1073741824", "500M", "2G", "1.5GiB" (powers of 1024)."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size; write a number of bytes or e.g. 500M, 2G")
    unit = m.group(2).lower()
    scale = 1024 ** ("kmgt".index(unit) + 1) if unit else 1
    return int(float(m.group(1)) * scale)


def _env_off() -> bool:
    return os.environ.get("PYASC_CACHE", "").strip().lower() in ("0", "false", "no", "off")


def default_root() -> Path:
    configured = os.environ.get("PYASC_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    import platformdirs  # only when no folder is configured

    return Path(platformdirs.user_cache_dir("pyasc", appauthor=False))


def max_size_from_env() -> int:
    text = os.environ.get("PYASC_CACHE_MAX_SIZE")
    if not text:
        return DEFAULT_MAX_SIZE
    try:
        return parse_size(text)
    except ValueError as e:
        raise ValueError(f"environment variable PYASC_CACHE_MAX_SIZE: {e}") from None


@dataclass
class EntryInfo:
    """One entry as `pyasc cache list` shows it."""

    path: Path
    key: str
    kernel: str
    signature: str
    chip: str
    size: int
    created: float
    last_used: float
    hits: int
    manifest: dict


class EntryError(Exception):
    """An entry that is corrupt, truncated or of another format version (the reason is the message)."""


class DiskCache:
    def __init__(self, root: Path, max_size: int = DEFAULT_MAX_SIZE):
        self.root = Path(root)
        self.max_size = max_size

    @classmethod
    def from_env(cls) -> "DiskCache | None":
        """The cache the environment configures, or None when PYASC_CACHE=0."""
        if _env_off():
            return None
        return cls(default_root(), max_size_from_env())

    # ---- layout ----------------------------------------------------------------------------
    @property
    def entries(self) -> Path:
        return self.root / "entries"

    def group(self, components_digest: str) -> Path:
        return self.entries / components_digest[:24]

    def entry_path(self, components_digest: str, key: str) -> Path:
        return self.group(components_digest) / key[:24]

    def lock(self, components_digest: str) -> Any:
        """A cross-process lock for compiling one components digest (a context manager)."""
        import filelock  # only on the compile path: a disk hit takes no lock

        folder = self.root / "locks"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return contextlib.nullcontext()  # an unusable cache folder: publishing will say so
        return _Lock(filelock.FileLock(str(folder / f"{components_digest[:24]}.lock"), timeout=LOCK_TIMEOUT_S))

    # ---- reading ----------------------------------------------------------------------------
    def load(self, components_digest: str, select: Callable[[dict], Any],
             build: Callable[[dict, dict[str, bytes], Any], Any]) -> Any:
        """The first entry of the group whose manifest `select` accepts (returning what `build` gets),
        built by `build(manifest, files, selected)`; None on a miss. Bad entries are discarded."""
        folder = self.group(components_digest)
        try:
            names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
        except OSError:
            return None
        for name in names:
            path = folder / name
            try:
                manifest = read_manifest(path)
                selected = select(manifest)
                if selected is None:
                    continue
                artifact = build(manifest, read_sections(path, manifest), selected)
            except FileNotFoundError:
                continue  # removed by another process while we looked: a miss, not a fault
            except EntryError as e:
                self.discard(path, str(e))
                continue
            except (ValueError, KeyError, TypeError, IndexError) as e:
                self.discard(path, f"unreadable entry ({type(e).__name__}: {e})")
                continue
            self._count_hit(path)
            return artifact
        return None

    def _count_hit(self, path: Path) -> None:
        try:
            fd = os.open(path / "hits", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, b".")
            finally:
                os.close(fd)
        except OSError:
            pass  # a read-only cache still serves hits

    # ---- writing ----------------------------------------------------------------------------
    def publish(self, components_digest: str, key: str, manifest: dict, files: dict[str, bytes]) -> Path | None:
        """Write an entry atomically; None (with a CacheWarning) if the cache folder is not writable.
        An entry another process published first is kept (the same key is the same artifact)."""
        target = self.entry_path(components_digest, key)
        if target.is_dir():
            return target
        staging = None
        try:
            tmp_root = self.root / "tmp"
            tmp_root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix="entry.", dir=tmp_root))
            sections = {}
            for filename, data in files.items():
                (staging / filename).write_bytes(data)
                sections[filename] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            now = time.time()
            doc = {"format": FORMAT, "version": CACHE_FORMAT, **manifest, "created": now, "last_used": now,
                   "sections": sections, "size": sum(len(d) for d in files.values())}
            (staging / "manifest.json").write_text(json.dumps(doc, indent=1, allow_nan=False), encoding="utf-8")
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(staging, target)
                staging = None
            except OSError:
                if not target.is_dir():
                    raise
        except OSError as e:
            warn(f"pyasc: cannot write the disk cache at {self.root} ({e}); the kernel runs, uncached "
                 "(set PYASC_CACHE_DIR to a writable folder, or PYASC_CACHE=0)")
            return None
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
        self.prune(self.max_size)
        return target

    def discard(self, path: Path, reason: str) -> None:
        """Remove a bad entry, with a one-line warning."""
        if self.remove(path):
            warn(f"pyasc: discarded cache entry {path} ({reason}); compiling again")

    def remove(self, path: Path) -> bool:
        """Delete an entry (rename into trash/, then delete); False if it was already gone."""
        trash = self.root / "trash"
        try:
            trash.mkdir(parents=True, exist_ok=True)
            grave = Path(tempfile.mkdtemp(prefix="entry.", dir=trash))
            os.rename(path, grave / "entry")
        except FileNotFoundError:
            return False
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
            return not path.exists()
        shutil.rmtree(grave, ignore_errors=True)
        return True

    # ---- maintenance (also the CLI's) ------------------------------------------------------
    def iter_entries(self) -> Iterator[Path]:
        try:
            groups = sorted(os.scandir(self.entries), key=lambda e: e.name)
        except OSError:
            return
        for group in groups:
            if not group.is_dir() or group.name.startswith("."):
                continue
            try:
                variants = sorted(os.scandir(group.path), key=lambda e: e.name)
            except OSError:
                continue
            for v in variants:
                if v.is_dir() and not v.name.startswith("."):
                    yield Path(v.path)

    def info(self, path: Path) -> EntryInfo:
        """What `cache list` shows of an entry (raises EntryError for a bad manifest)."""
        manifest = read_manifest(path)
        hits_file = path / "hits"
        try:
            st = hits_file.stat()
            hits, last = st.st_size, st.st_mtime
        except OSError:
            hits, last = 0, float(manifest.get("last_used", 0.0))
        return EntryInfo(path, str(manifest.get("key", "")), str(manifest.get("kernel", "?")),
                         str(manifest.get("signature", "?")), str(manifest.get("chip", "?")),
                         _folder_size(path), float(manifest.get("created", 0.0)), last, hits, manifest)

    def list(self) -> list[EntryInfo]:
        out = []
        for path in self.iter_entries():
            try:
                out.append(self.info(path))
            except (EntryError, OSError):
                continue
        return out

    def find(self, key_prefix: str) -> list[EntryInfo]:
        return [e for e in self.list() if e.key.startswith(key_prefix)]

    def verify(self, path: Path) -> str | None:
        """Why an entry is bad, or None when its manifest and every checksum are right."""
        try:
            read_sections(path, read_manifest(path))
        except EntryError as e:
            return str(e)
        except OSError as e:
            return f"unreadable ({e})"
        return None

    def total_size(self) -> int:
        return sum(_folder_size(p) for p in self.iter_entries())

    def prune(self, max_size: int) -> list[Path]:
        """Delete least recently used entries until the cache holds at most `max_size` bytes
        (and leftovers of interrupted writes). Returns the entries removed."""
        self._sweep_leftovers()
        infos = []
        for path in self.iter_entries():
            try:
                infos.append(self.info(path))
            except (EntryError, OSError):
                infos.append(EntryInfo(path, "", "?", "?", "?", _folder_size(path), 0.0, 0.0, 0, {}))
        total = sum(i.size for i in infos)
        removed = []
        for info in sorted(infos, key=lambda i: i.last_used):
            if total <= max_size:
                break
            if self.remove(info.path):
                removed.append(info.path)
            total -= info.size
        for group in {p.parent for p in removed}:
            try:
                group.rmdir()  # only when empty
            except OSError:
                pass
        return removed

    def clear(self) -> int:
        """Delete every entry, the lock files nobody holds and generated files; returns how many entries
        there were (statistics and tuning records are kept)."""
        count = 0
        for path in list(self.iter_entries()):
            count += self.remove(path)
        for sub in ("entries", "tmp", "trash", *_GENERATED):
            shutil.rmtree(self.root / sub, ignore_errors=True)
        self.sweep_locks(everything=True)
        return count

    def sweep_locks(self, everything: bool = False) -> int:
        """Delete lock files no process holds: all of them, or (prune) those older than a minute whose
        components have no entry left. Returns how many were deleted."""
        import filelock  # the lock files are filelock's

        folder = self.root / "locks"
        try:
            names = [n for n in os.listdir(folder) if n.endswith(".lock")]
        except OSError:
            return 0
        now, removed = time.time(), 0
        for name in names:
            path = folder / name
            digest = name[: -len(".lock")]
            if not everything:
                try:
                    young = now - path.stat().st_mtime < _STALE_LOCK_S
                except OSError:
                    continue
                if young or (self.entries / digest).is_dir() or len(digest) != 24:
                    continue  # in use soon, or its entries are there, or not a compile lock
            lock = filelock.FileLock(str(path), timeout=0)
            try:
                with lock:  # nobody holds it: delete it while holding it
                    path.unlink()
                    removed += 1
            except (filelock.Timeout, OSError):
                continue
        return removed

    def _sweep_leftovers(self) -> None:
        now = time.time()
        self.sweep_locks()
        for sub, min_age in (("trash", 0.0), ("tmp", _STALE_TMP_S), *((g, _STALE_TMP_S) for g in _GENERATED)):
            try:
                items = list(os.scandir(self.root / sub))
            except OSError:
                continue
            for item in items:
                try:
                    old_enough = now - item.stat().st_mtime >= min_age
                except OSError:
                    continue
                if old_enough:
                    if item.is_dir(follow_symlinks=False):
                        shutil.rmtree(item.path, ignore_errors=True)
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(item.path)


class _Lock:
    """A file lock that gives up (and lets the caller compile anyway) after LOCK_TIMEOUT_S."""

    def __init__(self, lock: Any):
        self._lock = lock
        self._held = False

    def __enter__(self) -> "_Lock":
        import filelock  # the module of the lock object: its Timeout

        try:
            self._lock.acquire()
            self._held = True
        except filelock.Timeout:
            warn(f"pyasc: waited {LOCK_TIMEOUT_S:.0f} s for {self._lock.lock_file}; compiling without it")
        except OSError as e:
            warn(f"pyasc: cannot lock {self._lock.lock_file} ({e}); compiling without the lock")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._held:
            self._lock.release()


def _folder_size(path: Path) -> int:
    try:
        return sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
    except OSError:
        return 0


def read_manifest(path: Path) -> dict:
    """An entry's manifest; EntryError if it is missing, corrupt or of another format version."""
    try:
        text = (path / "manifest.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        if path.is_dir():
            raise EntryError("no manifest.json") from None
        raise
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise EntryError(f"corrupt or truncated manifest.json: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise EntryError("manifest.json is not a pyasc cache manifest")
    if doc.get("version") != CACHE_FORMAT:
        raise EntryError(f"written by another pyasc (cache format {doc.get('version')!r}, this one reads "
                         f"{CACHE_FORMAT})")
    if not isinstance(doc.get("sections"), dict):
        raise EntryError("manifest.json lists no sections")
    return doc


def read_sections(path: Path, manifest: dict) -> dict[str, bytes]:
    """Every section file, each checked against the size and sha256 the manifest lists."""
    files = {}
    for filename, meta in manifest["sections"].items():
        if "/" in filename or filename.startswith("."):
            raise EntryError(f"manifest names an unsafe file {filename!r}")
        try:
            data = (path / filename).read_bytes()
        except FileNotFoundError:
            if not path.is_dir():
                raise
            raise EntryError(f"{filename} is missing") from None
        if len(data) != meta.get("size"):
            raise EntryError(f"{filename} is truncated ({len(data)} of {meta.get('size')} bytes)")
        if hashlib.sha256(data).hexdigest() != meta.get("sha256"):
            raise EntryError(f"{filename} does not match its checksum")
        files[filename] = data
    return files
