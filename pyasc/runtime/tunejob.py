"""One autotuning candidate as a portable job: compiled here, emulated in a worker (a process or a Ray task).

A job carries the compiled call as data — the final graph, the device
kernels (tile programs, launch plan) and the host module's LLVM IR, in the
disk cache's JSON forms — and the kernel options; the input arrays go once
per worker (executors' `shared`). The worker rebuilds the device module,
compiles the host IR for its own CPU (object code is never shipped: another
machine's CPU may differ), runs the call with the profiler and returns each
launch's simulated cycles and the outputs. It needs neither the kernel's
source file nor a compiler run, so a worker on another machine needs only the
same pyasc installed; a worker running another pyasc says so instead of
running.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .. import ir
from ..codegen.host import HostProgram
from . import records
from .artifact import CompiledKernel
from .emulator import EmulatorRunner
from .options import KernelOptions
from .profile import Profile


@dataclass
class TuneJob:
    index: int
    program: dict[str, Any]      # {"graph": text, "device": doc, "host": doc}
    options: KernelOptions
    compiler: str                # keys.compiler_digest of the pyasc that compiled it


@dataclass
class JobResult:
    index: int
    launches: list[tuple[str, int]] = field(default_factory=list)   # (device kernel label, simulated cycles)
    outputs: list[np.ndarray] = field(default_factory=list)
    seconds: float = 0.0         # wall time of the emulation
    error: str = ""

    @property
    def cycles(self) -> int:
        return sum(c for _, c in self.launches)

    def cycles_of(self, label: str) -> tuple[int, int]:
        """(simulated cycles summed over the launches of device kernel `label`, how many launches)."""
        mine = [c for name, c in self.launches if name == label]
        return sum(mine), len(mine)


def make_job(index: int, compiled: CompiledKernel, compiler: str) -> TuneJob:
    """The job for a compiled call (emulator backend)."""
    assert compiled.device is not None and compiled.host is not None
    index_ = records.GraphIndex(compiled.graph)
    program = {"graph": ir.to_json(compiled.graph), "device": records.encode(compiled.device, index_),
               "host": records.encode(compiled.host.source, index_)}
    return TuneJob(index, program, compiled.options, compiler)


def run_job(job: TuneJob, arrays: Sequence[np.ndarray]) -> JobResult:
    """In a worker: rebuild the call and run it on the emulator with the profiler. Failures are returned."""
    try:
        _same_compiler(job.compiler)
        graph = ir.from_json(job.program["graph"])
        index = records.GraphIndex(graph)
        device = records.decode(job.program["device"], index)
        host = HostProgram.load(records.decode(job.program["host"], index))
        chip = job.options.chip_config
        runner = EmulatorRunner(device, host, chip, job.options.sanitize, graph)
        prof = Profile(chip.clock_hz, chip.gm_bytes_per_second)
        t0 = time.perf_counter()
        outputs = runner.run(list(arrays), prof)
        seconds = time.perf_counter() - t0
    except Exception as e:  # reported in the table: the other candidates still run
        first = str(e).splitlines()[0] if str(e) else ""
        return JobResult(job.index, error=f"{type(e).__name__}: {first}")
    return JobResult(job.index, [(p.name, p.cycles) for p in prof.per_launch], outputs, seconds)


def _same_compiler(expected: str) -> None:
    from . import keys  # the digest of this worker's own pyasc (once per process)

    mine = keys.compiler_digest(None)
    if mine != expected:
        import pyasc  # the package object: where this worker's pyasc is

        raise RuntimeError(f"this worker runs another pyasc ({pyasc.__file__}, version {pyasc.__version__}, "
                           f"sources {mine[:12]}) than the one that compiled the job (sources {expected[:12]}); "
                           "install the same pyasc on every worker")
