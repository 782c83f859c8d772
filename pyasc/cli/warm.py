"""`pyasc cache warm`: compile a module's listed kernels and signatures in worker processes."""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from .targets import load_kernel, load_module, parse_args

WARM_LIST = "PYASC_WARM"


@dataclass
class WarmResult:
    kernel: str
    specs: tuple[str, ...]
    status: str          # "compiled", "cached" (a disk hit) or "failed"
    seconds: float
    error: str = ""


def jobs_of(file: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(kernel name, argument specs) for every signature the module's PYASC_WARM lists."""
    module = load_module(file)
    listing = getattr(module, WARM_LIST, None)
    if not isinstance(listing, dict) or not listing:
        raise click.BadParameter(f"{file} has no {WARM_LIST} dict; add e.g. "
                                 f"{WARM_LIST} = {{\"my_kernel\": [[\"f32[64,128]\"]]}}", param_hint="FILE")
    work = []
    for name, signatures in listing.items():
        if not isinstance(signatures, (list, tuple)) or not all(isinstance(s, (list, tuple)) for s in signatures):
            raise click.BadParameter(f"{WARM_LIST}[{name!r}] must be a list of signatures, each a list of "
                                     "argument specs", param_hint="FILE")
        work += [(name, tuple(map(str, specs))) for specs in signatures]
    return work


def warm_one(file: str, name: str, specs: tuple[str, ...]) -> WarmResult:
    """In a worker process: import the file and compile one signature (through the disk cache)."""
    t0 = time.perf_counter()
    try:
        kernel = load_kernel(f"{file}::{name}", quiet=True)  # the command said so once, before the workers
        compiled = kernel.compile(*parse_args(specs))
    except Exception as e:  # a failure is reported in the table, the other signatures still compile
        first = str(e).splitlines()[0] if str(e) else ""
        return WarmResult(name, specs, "failed", time.perf_counter() - t0, f"{type(e).__name__}: {first}")
    status = "cached" if compiled.origin == "disk" else "compiled"
    return WarmResult(name, specs, status, time.perf_counter() - t0)


def warm_job(job: tuple[str, str, tuple[str, ...], dict[str, str]]) -> WarmResult:
    """A worker's entry point (a process or a Ray task): the submitting process's PYASC_* settings, then
    `warm_one`."""
    from ..runtime.executors import apply_env  # (in the worker)

    file, name, specs, env = job
    apply_env(env)
    return warm_one(file, name, specs)


def run_jobs(file: Path, work: list[tuple[str, tuple[str, ...]]], executor: Any) -> list[WarmResult]:
    from ..runtime.executors import forwarded_env  # the runtime loads when a command runs, not for --help

    env = forwarded_env()
    jobs = [(str(file.resolve()), name, specs, env) for name, specs in work]
    with click.progressbar(length=len(jobs), label=f"compiling {len(jobs)} signatures on {executor.describe()}",
                           file=sys.stderr) as bar:
        return executor.map(warm_job, jobs, lambda i, result: bar.update(1))
