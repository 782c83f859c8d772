"""One disk cache entry on disk: its manifest and section files, written with MACs and read only if they verify.

    manifest.json   {"format", "version", ...the caller's fields..., "sections": {file: {"size", "sha256",
                    "mac"}}, "size", "mac"}
    <section>       the bytes of one section

A section's MAC is HMAC-SHA256(secret, "section", entry key, file name, bytes);
the manifest's is over its canonical JSON without the "mac" field (so it
covers every section MAC). Reading checks the manifest's MAC before looking
at any other field, then each section's size and MAC; any failure is an
`EntryError` whose message says what failed. Files are read through
`privatefiles.read_regular_file` (no links, no pipes, never past the size).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .cachesecret import CacheSecret
from .privatefiles import NotARegularFile, read_regular_file, write_new_file

FORMAT = "pyasc.cache-entry"
MANIFEST = "manifest.json"
MANIFEST_LIMIT = 64 << 20   # a manifest holds guards and stage names: far below this
_SECTION_PURPOSE = "pyasc.cache.section"
_MANIFEST_PURPOSE = "pyasc.cache.manifest"


class EntryError(Exception):
    """An entry that is not authentic, corrupt, truncated or of another format version (the message says which)."""


def canonical(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def section_mac(secret: CacheSecret, key: str, filename: str, data: bytes) -> str:
    return secret.mac(_SECTION_PURPOSE, key.encode("utf-8"), filename.encode("utf-8"), data)


def write_entry(folder: Path, manifest: dict, files: dict[str, bytes], secret: CacheSecret,
                version: int) -> dict:
    """Write the sections and the signed manifest into a new, empty folder; returns the manifest written."""
    key = str(manifest["key"])
    sections = {}
    for filename, data in files.items():
        write_new_file(folder / filename, data, secret.modes)
        sections[filename] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                              "mac": section_mac(secret, key, filename, data)}
    doc = {"format": FORMAT, "version": version, **manifest, "sections": sections,
           "size": sum(len(d) for d in files.values())}
    doc = json.loads(json.dumps(doc, allow_nan=False))  # signed as it will be read (tuples as lists, keys as text)
    doc["mac"] = secret.mac(_MANIFEST_PURPOSE, canonical(doc))
    write_new_file(folder / MANIFEST, json.dumps(doc, indent=1, allow_nan=False).encode("utf-8"), secret.modes)
    return doc


def read_manifest(path: Path, secret: CacheSecret, version: int) -> dict:
    """An entry's manifest, authenticated; EntryError if it is missing, not authentic, corrupt or of another
    format version. FileNotFoundError when the entry folder itself is gone (removed meanwhile)."""
    try:
        data = read_regular_file(path / MANIFEST, MANIFEST_LIMIT)
    except FileNotFoundError:
        if path.is_dir():
            raise EntryError(f"no {MANIFEST}") from None
        raise
    except (NotARegularFile, ValueError) as e:
        raise EntryError(f"{MANIFEST}: {e}") from None
    try:
        doc = json.loads(data.decode("utf-8"))
    except ValueError as e:
        raise EntryError(f"corrupt or truncated {MANIFEST}: {e}") from None
    if not isinstance(doc, dict):
        raise EntryError(f"{MANIFEST} is not a pyasc cache manifest")
    body = {k: v for k, v in doc.items() if k != "mac"}
    if "mac" not in doc:
        raise EntryError(f"not authenticated: {MANIFEST} has no MAC (written by an older pyasc, or not by pyasc)")
    try:
        signed = canonical(body)
    except ValueError:
        signed = b""
    if not secret.verify(doc["mac"], _MANIFEST_PURPOSE, signed):
        raise EntryError(f"fails authentication: {MANIFEST} was not written with this cache's key "
                         f"({secret.origin}), or was altered since")
    if doc.get("format") != FORMAT:
        raise EntryError(f"{MANIFEST} is not a pyasc cache manifest")
    if doc.get("version") != version:
        raise EntryError(f"written by another pyasc (cache format {doc.get('version')!r}, this one reads {version})")
    _check_shape(doc)
    return doc


def _check_shape(doc: dict) -> None:
    """The fields pyasc's own reading relies on have their types (an authentic manifest of another build could
    still differ): a malformed one is an EntryError, never a crash further on."""
    sections = doc.get("sections")
    if not isinstance(sections, dict):
        raise EntryError(f"{MANIFEST} lists no sections")
    for filename, meta in sections.items():
        if not isinstance(meta, dict) or not isinstance(meta.get("size"), int) or isinstance(meta.get("size"), bool) \
                or not isinstance(meta.get("mac"), str):
            raise EntryError(f"{MANIFEST}: malformed entry for section {filename!r}")
        if "/" in filename or "\\" in filename or filename.startswith(".") or filename == MANIFEST:
            raise EntryError(f"{MANIFEST} names an unsafe file {filename!r}")
    for name in ("key", "components_digest", "signature"):
        if not isinstance(doc.get(name), str):
            raise EntryError(f"{MANIFEST}: field {name!r} is {type(doc.get(name)).__name__}, not text")


def read_sections(path: Path, manifest: dict, secret: CacheSecret) -> dict[str, bytes]:
    """Every section file the (authenticated) manifest lists, each checked against its size and MAC."""
    key = manifest["key"]
    files = {}
    for filename, meta in manifest["sections"].items():
        size = meta["size"]
        try:
            data = read_regular_file(path / filename, size)
        except FileNotFoundError:
            if not path.is_dir():
                raise
            raise EntryError(f"{filename} is missing") from None
        except NotARegularFile as e:
            raise EntryError(str(e)) from None
        except ValueError:
            raise EntryError(f"{filename} is longer than the {size} bytes the manifest lists") from None
        if len(data) != size:
            raise EntryError(f"{filename} is truncated ({len(data)} of {size} bytes)")
        if not secret.verify(meta["mac"], _SECTION_PURPOSE, key.encode("utf-8"), filename.encode("utf-8"), data):
            raise EntryError(f"{filename} fails authentication (altered since it was written)")
        files[filename] = data
    return files
