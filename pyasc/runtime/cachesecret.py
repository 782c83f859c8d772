"""The disk cache's secret, and the MACs (HMAC-SHA256) that authenticate what the cache wrote.

Two kinds of secret (the trust model is in diskcache.py's docstring):
- a per-user secret: 32 random bytes in `<user config folder>/pyasc/cache-key`
  (platformdirs; `$XDG_CONFIG_HOME/pyasc` on Linux), created on first use
  with mode 0600 in a 0700 folder. A key file another user owns or can read
  is refused (the cache is then not used, with a warning): anyone who knows
  the secret can write entries this user will run;
- a team key: `PYASC_CACHE_KEY` (at least 16 characters), for a cache folder
  shared on purpose by people who trust each other's compiles. The HMAC key
  is derived from it; files and folders are then created group-readable and
  -writable (0660 / 0770) so the team can share them.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

from .privatefiles import PRIVATE, TEAM, Modes, make_folders, read_regular_file, write_new_file

KEY_ENV = "PYASC_CACHE_KEY"
KEY_FILE = "cache-key"
MIN_TEAM_KEY_CHARS = 16
_SECRET_BYTES = 32


class SecretUnavailable(Exception):
    """No usable secret (the message says why): the disk cache is not used in this process."""


@dataclass(frozen=True)
class CacheSecret:
    """An HMAC-SHA256 key and where it came from."""

    key: bytes
    origin: str      # the key file's path, or the environment variable's name
    team: bool       # a team key: files are shared with the group

    @property
    def modes(self) -> Modes:
        return TEAM if self.team else PRIVATE

    def mac(self, purpose: str, *parts: bytes) -> str:
        """HMAC-SHA256 of `purpose` and the parts, each length-prefixed (no two part lists sign alike)."""
        h = hmac.new(self.key, purpose.encode("utf-8"), hashlib.sha256)
        for part in parts:
            h.update(len(part).to_bytes(8, "big"))
            h.update(part)
        return h.hexdigest()

    def verify(self, mac: object, purpose: str, *parts: bytes) -> bool:
        """Whether `mac` is the MAC of these parts (a constant-time comparison)."""
        return isinstance(mac, str) and hmac.compare_digest(mac, self.mac(purpose, *parts))


def env_modes() -> Modes:
    """The permissions of what pyasc creates in the cache folder: the group's too with a team key."""
    return TEAM if os.environ.get(KEY_ENV) else PRIVATE


def team_key_problem(value: str) -> str | None:
    """Why a PYASC_CACHE_KEY value cannot be used, or None."""
    if len(value) < MIN_TEAM_KEY_CHARS:
        return (f"environment variable {KEY_ENV} must be at least {MIN_TEAM_KEY_CHARS} characters (make one with "
                "`python -c \"import secrets; print(secrets.token_hex(32))\"` and share it with your team only)")
    return None


def config_folder() -> Path:
    import platformdirs  # only when a per-user secret is needed

    return Path(platformdirs.user_config_dir("pyasc", appauthor=False))


_memo: dict[tuple, "CacheSecret | SecretUnavailable"] = {}
_lock = threading.Lock()


def load_secret() -> CacheSecret:
    """The secret the environment selects (PYASC_CACHE_KEY, else the per-user one), once per process and
    configuration. Raises SecretUnavailable when there is none that can be trusted."""
    team = os.environ.get(KEY_ENV)
    ident = ("team", hashlib.sha256(team.encode()).hexdigest()) if team else ("user", str(config_folder()))
    with _lock:
        found = _memo.get(ident)
        if found is None:
            try:
                found = _team_secret(team) if team else _user_secret(config_folder())
            except SecretUnavailable as e:
                found = e
            _memo[ident] = found
    if isinstance(found, SecretUnavailable):
        raise found
    return found


def _team_secret(value: str) -> CacheSecret:
    problem = team_key_problem(value)
    if problem is not None:
        raise SecretUnavailable(problem)
    key = hashlib.sha256(b"pyasc.cache-team-key\0" + value.encode("utf-8")).digest()
    return CacheSecret(key, KEY_ENV, True)


def _user_secret(folder: Path) -> CacheSecret:
    path = folder / KEY_FILE
    try:
        return _read_key_file(path)
    except FileNotFoundError:
        pass
    try:
        make_folders(folder, PRIVATE)
        tmp = folder / f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        write_new_file(tmp, secrets.token_hex(_SECRET_BYTES).encode("ascii") + b"\n", PRIVATE)
        try:
            os.link(tmp, path)  # atomic and exclusive: racing first uses all end up with the one that won
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        return _read_key_file(path)
    except (OSError, ValueError) as e:
        raise SecretUnavailable(f"cannot create the disk cache's secret {path} ({e}); set {KEY_ENV}, or "
                                "PYASC_CACHE=0") from None


def _read_key_file(path: Path) -> CacheSecret:
    try:
        data = read_regular_file(path, 256)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as e:
        raise SecretUnavailable(f"cannot read the disk cache's secret {path} ({e})") from None
    if os.name != "nt":
        st = path.stat()
        if st.st_uid != os.geteuid():
            raise SecretUnavailable(f"the disk cache's secret {path} belongs to another user; delete it to make a "
                                    "new one")
        if st.st_mode & 0o077:
            raise SecretUnavailable(f"the disk cache's secret {path} can be read or written by other users (mode "
                                    f"{st.st_mode & 0o777:o}); delete it to make a new one (every cached kernel is "
                                    "then compiled again)")
    text = data.decode("ascii", errors="replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != _SECRET_BYTES:
        raise SecretUnavailable(f"the disk cache's secret {path} is corrupt; delete it to make a new one")
    return CacheSecret(key, str(path), False)
