"""Autotuning winners in the cache folder: `tuning/<key>.json`, one per kernel specialisation.

A record holds one `TilingDecision` per device kernel (which candidate the
emulator found fastest) and the measured table. Its key is what a winner is
a winner for: the kernel (name and code), its argument types and shapes,
its options and the whole chip config. It leaves out the compiler version,
Python, LLVM and the host CPU, so a winner found on one machine is used on
another that shares the cache folder; a decision that no longer names a
legal candidate (the compiler changed its candidates) is ignored by code
generation, which says so in the tiling stage.

A record is data, read back strictly (`TilingDecision.from_json`): nothing
in it is imported or run, and all it can do is pick one of the candidates
code generation already considers legal. Like a cache entry it carries an
HMAC under the cache's secret (diskcache.py's trust model), so a record
someone else planted is not used either. A file that does not parse or
authenticate is ignored with a `CacheWarning`.
"""
from __future__ import annotations

import hashlib
import json
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..codegen.tiling import TilingDecision
from .cachesecret import SecretUnavailable, load_secret
from .diskcache import CacheWarning
from .entryfiles import canonical
from .keys import KeyComponents
from .privatefiles import NotARegularFile, make_folders, read_regular_file, replace_file

FOLDER = "tuning"
_PURPOSE = "pyasc.tuning"
_LIMIT = 16 << 20  # a record's table of measurements is far smaller
FORMAT = "pyasc.tuning"
VERSION = 1
#: the key components a winner depends on (see the module docstring)
KEYED = ("kernel", "kernel_code", "args", "options", "chip")


def tuning_key(components: KeyComponents) -> str:
    doc = components.to_json()
    text = json.dumps({k: doc[k] for k in KEYED}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class TuningRecord:
    key: str
    kernel: str
    signature: str
    chip: str
    decisions: tuple[TilingDecision, ...]
    table: list[dict[str, Any]] = field(default_factory=list)   # the measured candidates (TuneResult rows)
    created: float = 0.0
    pyasc_version: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "key": self.key, "kernel": self.kernel,
                "signature": self.signature, "chip": self.chip,
                "decisions": [d.to_json() for d in self.decisions], "table": self.table,
                "created": self.created, "pyasc_version": self.pyasc_version}

    @classmethod
    def from_json(cls, doc: Any) -> "TuningRecord":
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ValueError("not a pyasc tuning record of this version")
        return cls(str(doc["key"]), str(doc["kernel"]), str(doc["signature"]), str(doc["chip"]),
                   tuple(TilingDecision.from_json(d) for d in doc["decisions"]), list(doc.get("table", [])),
                   float(doc.get("created", 0.0)), str(doc.get("pyasc_version", "")))


def path_of(root: Path, key: str) -> Path:
    return Path(root) / FOLDER / f"{key[:32]}.json"


def load(root: Path, key: str) -> TuningRecord | None:
    """The record for `key`, or None (none stored, or one that does not parse or authenticate: warned about)."""
    path = path_of(root, key)
    try:
        data = read_regular_file(path, _LIMIT)
    except (NotARegularFile, ValueError) as e:  # a link, a folder, a pipe, or too long: not one we wrote
        data, problem = b"", str(e)
    except OSError:
        return None  # none stored, or an unusable cache folder (writing says so)
    else:
        problem = ""
    try:
        if problem:
            raise ValueError(problem)
        doc = json.loads(data.decode("utf-8"))
        if not isinstance(doc, dict) or not load_secret().verify(doc.get("mac"), _PURPOSE, canonical(
                {k: v for k, v in doc.items() if k != "mac"})):
            raise ValueError("not authenticated: not written with this cache's key, or altered since")
        record = TuningRecord.from_json(doc)
        if record.key != key:
            raise ValueError("it is the record of another key")
    except (ValueError, KeyError, TypeError, SecretUnavailable) as e:
        warnings.warn(f"pyasc: ignoring the tuning record {path} ({e}); `kernel.tune` writes a new one",
                      CacheWarning, stacklevel=3)
        return None
    return record


def save(root: Path, record: TuningRecord) -> Path:
    """Write (atomically replace) the record, signed; raises OSError when the folder is not writable (or there
    is no secret to sign it with)."""
    path = path_of(root, record.key)
    record.created = record.created or time.time()
    try:
        secret = load_secret()
    except SecretUnavailable as e:
        raise OSError(str(e)) from None
    doc = json.loads(json.dumps(record.to_json()))  # signed as it will be read
    doc["mac"] = secret.mac(_PURPOSE, canonical(doc))
    make_folders(path.parent, secret.modes)
    replace_file(path, json.dumps(doc, indent=1).encode("utf-8"), secret.modes)
    return path


def remove_all(root: Path) -> int:
    """Delete every tuning record (`pyasc cache clear --tuning`); returns how many there were."""
    folder = Path(root) / FOLDER
    count = 0
    for p in folder.glob("*.json"):
        try:
            p.unlink()
            count += 1
        except OSError:
            pass
    return count
