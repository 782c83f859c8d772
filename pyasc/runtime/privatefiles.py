"""Files and folders only their owner (or, for a team cache, its group) can touch, whatever the umask.

The disk cache and its secret are written with these: a folder pyasc creates
gets `Modes.folder` (0700, or 0770 for a team cache), a file `Modes.file`
(0600 / 0660), set with chmod after creation because the umask only ever
removes bits. Reading refuses symbolic links and anything but a regular file
(a planted FIFO or /dev/zero would block or exhaust memory), and never reads
more than the caller's limit.
"""
from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class Modes:
    """Permission bits for what pyasc creates: private to the user, or shared with the folder's group."""

    folder: int = 0o700
    file: int = 0o600


PRIVATE = Modes()
TEAM = Modes(0o770, 0o660)


class NotARegularFile(OSError):
    """A path that is a symbolic link, a folder, a device or a pipe where a file was expected."""


def make_folders(path: Path, modes: Modes = PRIVATE) -> None:
    """`mkdir -p`, each folder created here getting `modes.folder` (folders that exist are left alone)."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, modes.folder)
        except FileExistsError:
            continue  # another process made it first
        os.chmod(folder, modes.folder)


def make_temp_folder(parent: Path, prefix: str, modes: Modes = PRIVATE) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(folder, modes.folder)
    return folder


def write_new_file(path: Path, data: bytes, modes: Modes = PRIVATE) -> None:
    """Create `path` (it must not exist: no link or file planted there is followed) holding `data`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _BINARY, modes.file)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, modes.file)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, modes: Modes = PRIVATE) -> None:
    """Write `data` to `path` atomically (a new file beside it, renamed over it)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{Path(path).name}.", dir=Path(path).parent)
    try:
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), modes.file)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of a regular file, not through a symbolic link; NotARegularFile otherwise, ValueError if it
    holds more than `limit` bytes (only `limit + 1` are ever read)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _BINARY)
    except OSError as e:
        if _NOFOLLOW and os.path.islink(path):
            raise NotARegularFile(f"{path} is a symbolic link") from None
        if os.path.isdir(path):
            raise NotARegularFile(f"{path} is a folder") from None
        raise e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotARegularFile(f"{path} is not a regular file")
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise ValueError(f"{path} holds more than {limit} bytes")
    return data
