"""`pyasc cache warm`: compile a module's listed kernels and signatures in worker processes."""
from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path

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
        kernel = load_kernel(f"{file}::{name}")
        compiled = kernel.compile(*parse_args(specs))
    except Exception as e:  # a failure is reported in the table, the other signatures still compile
        first = str(e).splitlines()[0] if str(e) else ""
        return WarmResult(name, specs, "failed", time.perf_counter() - t0, f"{type(e).__name__}: {first}")
    status = "cached" if compiled.origin == "disk" else "compiled"
    return WarmResult(name, specs, status, time.perf_counter() - t0)


def run_jobs(file: Path, work: list[tuple[str, tuple[str, ...]]], jobs: int | None) -> list[WarmResult]:
    workers = min(jobs or os.cpu_count() or 1, len(work))
    context = multiprocessing.get_context("spawn")  # a fresh interpreter per worker, the same on every OS
    results: list[WarmResult] = []
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(warm_one, str(file.resolve()), name, specs) for name, specs in work]
        with click.progressbar(concurrent.futures.as_completed(futures), length=len(futures),
                               label=f"compiling {len(futures)} signatures in {workers} processes",
                               file=click.get_text_stream("stderr")) as bar:
            for future in bar:
                results.append(future.result())
    order = {w: i for i, w in enumerate(work)}
    return sorted(results, key=lambda r: order[(r.kernel, r.specs)])
