"""PYASC_DUMP_DIR: write every stage of a compile to disk, readable and diffable.

Layout: `<dir>/<kernel name>-<key hash>/`, one file per entry of the
artifact's ordered `stages` mapping, numbered in that (pipeline) order:
`00_source.py`, `01_graph.txt` + `01_graph.dot`, `02_inferred.txt`,
`03_ge.01.<pass>.txt` + `.dot`, ..., `NN_fusion_log.txt`,
`NN_memory_plan.txt`; a stage that code generation adds (tiling, tile
programs, host IR) is one more numbered file, with no change here. Beside
them, unnumbered: `pass_log.txt` (every pass: changed, unchanged or
skipped) and `specialization.txt` (which call this folder is for: kernel,
signature, options, full key).

A dump is written from the artifact, so a cache hit (memory or disk) writes
the same files as the compile did. A folder is written completely under a
temporary name and then renamed, so a reader (or a second process) never
sees half a dump.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from .artifact import CompiledKernel

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: stage name -> file extension, for the stages that are not plain text
_EXTENSIONS = {"source": ".py", "host": ".ll"}
_STAGE_FILE = re.compile(r"^(\d+)_(.+?)(\.dot)?\.(?:txt|py|ll|json)$")


def dump_path(root: str | os.PathLike, compiled: CompiledKernel) -> Path:
    name = _UNSAFE.sub("_", compiled.name).strip("_") or "kernel"
    return Path(root) / f"{name}-{compiled.key_hash}"


def stage_files(compiled: CompiledKernel) -> dict[str, str]:
    """File name -> contents for one artifact (no I/O; also what the tests check)."""
    files: dict[str, str] = {}
    for i, (stage, text) in enumerate(compiled.stages.items()):
        stem = f"{i:02d}_{_UNSAFE.sub('_', stage)}"
        files[stem + _EXTENSIONS.get(stage, ".txt")] = _ensure_newline(text)
        dot = compiled.dots.get(stage)
        if dot:
            files[stem + ".dot"] = _ensure_newline(dot)
    if compiled.pass_log:
        files["pass_log.txt"] = _ensure_newline(compiled.pass_log)
    files["specialization.txt"] = (f"kernel: {compiled.name}\nsignature: {compiled.signature}\n"
                                   f"options: {compiled.options.describe()}\nkey: {compiled.full_key}\n")
    return files


def stage_of(filename: str) -> tuple[str, str] | None:
    """(stage name, "text" or "dot") for a numbered dump file, None for the others (diffing dumps)."""
    m = _STAGE_FILE.match(filename)
    if m is None:
        return None
    return m.group(2), "dot" if m.group(3) else "text"


def write_dump(root: str | os.PathLike, compiled: CompiledKernel) -> Path:
    """Write the artifact's stages under `root` unless that folder already exists; returns the folder."""
    target = dump_path(root, compiled)
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for filename, text in stage_files(compiled).items():
            (staging / filename).write_text(text, encoding="utf-8")
        try:
            os.rename(staging, target)
        except OSError:
            if not target.is_dir():  # not a lost race with another writer: a real failure
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _ensure_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"
