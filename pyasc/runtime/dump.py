"""PYASC_DUMP_DIR: write every stage of a compile to disk, readable and diffable.

Layout: `<dir>/<kernel name>/<key hash>/`, one file per stage numbered in
stage order (`00_source.py`, `01_graph.txt` + `01_graph.dot`,
`02_inferred.txt`, `03_ge.01.<pass>.txt` + `.dot`, ...), plus `pass_log.txt`
(every pass: changed, unchanged or skipped), `fusion_log.txt` and
`memory_plan.txt` when the optimiser produced them and
`specialization.txt` saying which call this folder is for.

A folder is written completely under a temporary name and then renamed,
so a reader (or a second process) never sees half a dump.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from .artifact import CompiledKernel

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def dump_path(root: str | os.PathLike, compiled: CompiledKernel) -> Path:
    name = _UNSAFE.sub("_", compiled.name).strip("_") or "kernel"
    return Path(root) / name / compiled.key_hash


def stage_files(compiled: CompiledKernel) -> dict[str, str]:
    """File name -> contents for one artifact (no I/O; also what the tests check)."""
    files: dict[str, str] = {}
    for i, (stage, text) in enumerate(compiled.stages.items()):
        stem = f"{i:02d}_{_UNSAFE.sub('_', stage)}"
        files[stem + (".py" if stage == "source" else ".txt")] = _ensure_newline(text)
        dot = compiled.dots.get(stage)
        if dot:
            files[stem + ".dot"] = _ensure_newline(dot)
    if compiled.pass_log:
        files["pass_log.txt"] = _ensure_newline(compiled.pass_log)
    if compiled.fusion_log:
        files["fusion_log.txt"] = "\n".join(compiled.fusion_log) + "\n"
    if compiled.memory_plan is not None:
        files["memory_plan.txt"] = _ensure_newline(compiled.memory_plan.table())
    files["specialization.txt"] = (f"kernel: {compiled.name}\nsignature: {compiled.signature}\n"
                                   f"options: {compiled.options.describe()}\nkey hash: {compiled.key_hash}\n")
    return files


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
