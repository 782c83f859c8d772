"""The disk cache: compiled artifacts shared by processes, never stale, authenticated before anything is used.

Trust model. An entry holds host object code that is linked and run, and data
(graphs, constants, tilings) that decide what a kernel computes, so the cache
trusts nothing it did not write itself:
- Every entry is authenticated with HMAC-SHA256 under this cache's secret
  (cachesecret.py): a per-user secret created on first use in the user's
  config folder (mode 0600), or a team key in `PYASC_CACHE_KEY` for a cache
  shared on purpose. Each section file's MAC covers the entry's key, the
  file's name and its bytes; the manifest's MAC covers all its fields (the
  section MACs included), and the entry must sit where its key puts it.
- An entry that fails (no MAC, a wrong one, a missing, altered, truncated or
  swapped file, a folder or link in place of a file) is never used: its code
  is not loaded, its data not read, its guards not evaluated. It is
  discarded with one `CacheWarning` and the kernel compiled again; `pyasc
  cache verify` reports it. So is an authentic entry that cannot be decoded.
- Nothing named inside an entry is imported or called: record types come
  from a fixed registry, and the class of a NamedTuple/dataclass result from
  the live kernel (persist.py).
- Folders are created 0700 and files 0600 (0770 / 0660 with a team key, for
  the team's group), whatever the umask; files are read without following
  links and never past their recorded size.
Whoever can write the cache folder without knowing the secret can delete
entries or fill the disk (slower calls, a warning), never make pyasc run
their code or return their data. Whoever knows the secret (the user; with a
team key, everyone holding it) is trusted like the compiler itself.

Layout under the root (`PYASC_CACHE_DIR`, else the platform's user cache dir):

    entries/<components digest[:24]>/<full key[:24]>/   one entry (a variant: see keys.py)
        manifest.json    format + version, key and its components, the guards, the
                         kernel, signature and chip, created, per-section size, sha256 and MAC, its MAC
        graph.json ...   the sections (runtime/sections.py; files: entryfiles.py)
        hits             one byte appended per disk hit: its size is the hit count,
                         its modification time the last use (LRU order; not authenticated: it only orders pruning)
    locks/<components digest>.lock   one compile at a time per components digest, across processes
    tmp/  trash/         entries being written / being deleted
    stats.json (.lock)   hits, disk hits and misses per kernel (cachestats.py)
    tuning/              autotuning winners (tunestore.py)

An entry is written completely under tmp/ and renamed into place, so a
reader never sees half of one. Deleting is a rename into trash/ first, so a
reader finds an entry whole or not at all. The cache is kept under
`PYASC_CACHE_MAX_SIZE` (default 1 GiB; "500M", "2G"): a publish adds its
entry's size to the `usage` file (the total of the last full scan, then one
line per entry published since), and when that says the limit may be passed,
or after `_RESCAN_EVERY` publishes, a full scan prunes the least recently used
entries (entries that fail authentication first of all) and deletes lock files
nobody holds whose entries are gone. An estimate that is too high only makes
the scan come sooner; one that lost a concurrent line is corrected by the next
scan. `PYASC_CACHE=0`
turns the disk cache off (nothing is written to the folder then).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from .cachesecret import KEY_ENV, CacheSecret, SecretUnavailable, env_modes, load_secret, team_key_problem
from .entryfiles import EntryError, read_manifest, read_sections, write_entry
from .keys import CACHE_FORMAT
from .privatefiles import Modes, make_folders, make_temp_folder, replace_file

DEFAULT_MAX_SIZE = 1 << 30
LOCK_TIMEOUT_S = 120.0  # a compile holding the lock longer is presumed stuck; compile anyway
_STALE_TMP_S = 3600.0
_STALE_LOCK_S = 60.0  # a lock file younger than this may be about to be taken: prune keeps it
#: folders of generated files older pyasc versions wrote into the cache folder (the torch frontend's
#: kernel sources): nothing reads them any more, so prune (when stale) and clear delete them
_GENERATED = ("fx_kernels",)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_USAGE = "usage"
_RESCAN_EVERY = 256  # publishes between full scans even when the usage file says there is room


class CacheWarning(UserWarning):
    """A cache entry was discarded, or the cache could not be used or written (the call still succeeds)."""


def warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=4)


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(message: str) -> None:
    """A warning about the cache as a whole (no usable secret): once per process, not on every call."""
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    warn(message)


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


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


class DiskCache:
    def __init__(self, root: Path, max_size: int = DEFAULT_MAX_SIZE, secret: CacheSecret | None = None):
        self.root = Path(root)
        self.max_size = max_size
        self._secret = secret

    @classmethod
    def from_env(cls) -> "DiskCache | None":
        """The cache the environment configures, or None when PYASC_CACHE=0. A malformed PYASC_CACHE_MAX_SIZE
        or PYASC_CACHE_KEY is a ValueError."""
        if _env_off():
            return None
        team = os.environ.get(KEY_ENV)
        problem = team_key_problem(team) if team else None
        if problem is not None:
            raise ValueError(problem)
        return cls(default_root(), max_size_from_env())

    @property
    def secret(self) -> CacheSecret:
        """The key entries are authenticated with (SecretUnavailable when there is none to trust)."""
        if self._secret is None:
            self._secret = load_secret()
        return self._secret

    def usable_secret(self) -> CacheSecret | None:
        """The secret, or None with a one-time warning (the cache is then not used: the call compiles)."""
        try:
            return self.secret
        except SecretUnavailable as e:
            warn_once(f"pyasc: the disk cache is not used: {e}")
            return None

    @property
    def modes(self) -> Modes:
        return self._secret.modes if self._secret is not None else env_modes()

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
            if self.usable_secret() is None:
                return contextlib.nullcontext()
            make_folders(folder, self.modes)
        except OSError:
            return contextlib.nullcontext()  # an unusable cache folder: publishing will say so
        return _Lock(filelock.FileLock(str(folder / f"{components_digest[:24]}.lock"), timeout=LOCK_TIMEOUT_S,
                                       mode=self.modes.file))

    # ---- reading ----------------------------------------------------------------------------
    def read_manifest(self, path: Path) -> dict:
        """An entry's authenticated manifest (EntryError when it is not one, see entryfiles.read_manifest),
        checked to sit where its key puts it."""
        if path.is_symlink() or path.parent.is_symlink():
            raise EntryError("a symbolic link in place of an entry folder")
        manifest = read_manifest(path, self.secret, CACHE_FORMAT)
        if path.name != manifest["key"][:24] or path.parent.name != manifest["components_digest"][:24]:
            raise EntryError("an authentic entry in another entry's place (moved or copied there)")
        return manifest

    def read_files(self, path: Path, manifest: dict) -> dict[str, bytes]:
        return read_sections(path, manifest, self.secret)

    def load(self, components_digest: str, select: Callable[[dict], Any],
             build: Callable[[dict, dict[str, bytes], Any], Any]) -> Any:
        """The first entry of the group whose authenticated manifest `select` accepts (returning what `build`
        gets), built by `build(manifest, files, selected)`; None on a miss. An entry that fails
        authentication, or that `select` or `build` cannot read (any exception), is discarded with a warning."""
        folder = self.group(components_digest)
        try:
            names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
        except OSError:
            return None
        if names and self.usable_secret() is None:
            return None
        for name in names:
            path = folder / name
            try:
                manifest = self.read_manifest(path)
                selected = select(manifest)
                if selected is None:
                    continue
                artifact = build(manifest, self.read_files(path, manifest), selected)
            except FileNotFoundError:
                if path.exists():
                    self.discard(path, "a file it lists is gone")
                continue  # else removed by another process while we looked: a miss, not a fault
            except EntryError as e:
                self.discard(path, str(e))
                continue
            except Exception as e:  # an authentic entry this pyasc cannot decode (or run): compile instead
                self.discard(path, f"unreadable entry ({type(e).__name__}: {e})")
                continue
            self._count_hit(path)
            return artifact
        return None

    def _count_hit(self, path: Path) -> None:
        try:
            fd = os.open(path / "hits", os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, self.modes.file)
            try:
                os.write(fd, b".")
            finally:
                os.close(fd)
        except OSError:
            pass  # a read-only cache still serves hits

    # ---- writing ----------------------------------------------------------------------------
    def publish(self, components_digest: str, key: str, manifest: dict, files: dict[str, bytes]) -> Path | None:
        """Write an entry atomically; None (with a CacheWarning) if the cache folder is not writable or there
        is no secret. An entry another process published first is kept (the same key is the same artifact)."""
        secret = self.usable_secret()
        if secret is None:
            return None
        target = self.entry_path(components_digest, key)
        if target.is_dir():
            return target
        staging = None
        try:
            tmp_root = self.root / "tmp"
            make_folders(tmp_root, self.modes)
            staging = make_temp_folder(tmp_root, "entry.", self.modes)
            now = time.time()
            write_entry(staging, {**manifest, "created": now, "last_used": now}, files, secret, CACHE_FORMAT)
            make_folders(target.parent, self.modes)
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
        if self._over_limit(_folder_size(target)):
            self.prune(self.max_size)
        return target

    def _over_limit(self, added: int) -> bool:
        """Record `added` bytes in the usage file; whether a full scan is due (see the module docstring).

        A scan authenticates every manifest and stats every file: with a few thousand entries that took
        seconds, which every compile paid when each publish scanned."""
        path = self.root / _USAGE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | _NOFOLLOW)
        except OSError:
            return True  # no usage file yet (or an unreadable one): scan, which writes it
        try:
            os.write(fd, f"{added}\n".encode())
        finally:
            os.close(fd)
        try:
            head, *lines = path.read_text().splitlines()
            total = int(head.removeprefix("scanned ")) + sum(int(x) for x in lines)
        except (OSError, ValueError):
            return True
        return not head.startswith("scanned ") or total > self.max_size or len(lines) > _RESCAN_EVERY

    def _write_usage(self, total: int) -> None:
        try:
            replace_file(self.root / _USAGE, f"scanned {total}\n".encode(), self.modes)
        except OSError:
            pass  # a read-only cache: every publish scans, as before

    def discard(self, path: Path, reason: str) -> None:
        """Remove a bad entry, with a one-line warning (also when it cannot be removed)."""
        removed = self.remove(path)
        if removed or path.exists():
            note = "" if removed else " (it could not be removed)"
            warn(f"pyasc: discarded cache entry {path} ({reason}){note}; compiling again")

    def remove(self, path: Path) -> bool:
        """Delete an entry (rename into trash/, then delete); False if it was already gone or cannot be."""
        trash = self.root / "trash"
        try:
            make_folders(trash, self.modes)
            grave = make_temp_folder(trash, "entry.", self.modes)
            os.rename(path, grave / "entry")
        except FileNotFoundError:
            return False
        except OSError:
            if path.is_symlink():
                try:
                    path.unlink()
                except OSError:
                    return False
                return True
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
            if not group.is_dir(follow_symlinks=False) or group.name.startswith("."):
                continue
            try:
                variants = sorted(os.scandir(group.path), key=lambda e: e.name)
            except OSError:
                continue
            for v in variants:
                if not v.name.startswith(".") and (v.is_dir(follow_symlinks=False) or v.is_symlink()):
                    yield Path(v.path)

    def info(self, path: Path) -> EntryInfo:
        """What `cache list` shows of an entry (raises EntryError for a manifest that fails, SecretUnavailable
        without a secret)."""
        manifest = self.read_manifest(path)
        hits_file = path / "hits"
        try:
            st = hits_file.stat()
            hits, last = st.st_size, st.st_mtime
        except OSError:
            hits, last = 0, _number(manifest.get("last_used"))
        return EntryInfo(path, str(manifest.get("key", "")), str(manifest.get("kernel", "?")),
                         str(manifest.get("signature", "?")), str(manifest.get("chip", "?")),
                         _folder_size(path), _number(manifest.get("created")), last, hits, manifest)

    def list(self) -> list[EntryInfo]:
        """The entries that authenticate (the others: `verify`)."""
        out = []
        for path in self.iter_entries():
            try:
                out.append(self.info(path))
            except (EntryError, OSError, SecretUnavailable):
                continue
        return out

    def find(self, key_prefix: str) -> list[EntryInfo]:
        return [e for e in self.list() if e.key.startswith(key_prefix)]

    def verify(self, path: Path, check: Callable[[dict, dict[str, bytes]], None] | None = None) -> str | None:
        """Why an entry is bad, or None when its manifest and every section authenticate (and `check`, given
        the manifest and the files, raises nothing). Never raises for a bad entry."""
        try:
            manifest = self.read_manifest(path)
            files = self.read_files(path, manifest)
            if check is not None:
                check(manifest, files)
        except EntryError as e:
            return str(e)
        except OSError as e:
            return f"unreadable ({e})"
        except SecretUnavailable:
            raise
        except Exception as e:  # an authentic entry this pyasc cannot decode
            return f"cannot be decoded ({type(e).__name__}: {e})"
        return None

    def total_size(self) -> int:
        return sum(_folder_size(p) for p in self.iter_entries())

    def prune(self, max_size: int) -> list[Path]:
        """Delete least recently used entries until the cache holds at most `max_size` bytes
        (and leftovers of interrupted writes). Returns the entries removed."""
        self._sweep_leftovers()
        paths = list(self.iter_entries())
        total = sum(_folder_size(p) for p in paths)
        if total <= max_size:  # nothing to order: the manifests need not be read
            self._write_usage(total)
            return []
        infos = []
        for path in paths:
            try:
                infos.append(self.info(path))
            except (EntryError, OSError, SecretUnavailable):  # not authentic: first to go
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
        self._write_usage(total)
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
                    old_enough = now - item.stat(follow_symlinks=False).st_mtime >= min_age
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
        if path.is_symlink():
            return 0
        return sum(e.stat(follow_symlinks=False).st_size for e in os.scandir(path) if e.is_file(follow_symlinks=False))
    except OSError:
        return 0
