"""Autotuning: run the cost model's top tiling candidates of each device kernel on the emulator, keep the fastest.

`kernel.tune(*args)` and `pyasc tune FILE::KERNEL --arg ...`:

1. The call is compiled as the cost model alone would (no stored decision):
   the baseline. Each device kernel's tiling report holds the chosen
   candidate and the scored runners-up, cheapest predicted first.
2. For every device kernel with runners-up, its `top_k` candidates (the
   chosen one and the next `top_k - 1`) are compiled, each with a
   `TilingDecision` for that kernel alone: the other kernels keep the cost
   model's choice. Candidates differ in tile sizes, buffer_num (single or
   double buffering) and how the work splits over the cores (tiles per core,
   a column reduction's cores per task), as the templates enumerate them.
   Mixed versus separate cube and vector launches is not a candidate yet.
3. Compiling happens here (fast); emulating, the slow part, goes to the
   workers as portable jobs (tunejob.py) on a local process pool or a Ray
   cluster (executors.py). The inputs are the call's own arrays.
4. Per kernel, the candidate with the fewest simulated cycles whose outputs
   agree with the baseline's (dtype-aware tolerances) wins; a candidate
   that disagrees is reported as wrong and never wins. The launches of a
   call run one after the other, so the call's cycles are the sum over its
   kernels and the winners together are the fastest combination of the
   candidates measured (up to what one launch leaves in L2 for the next:
   when two or more kernels change, the combination is run once more and its
   cycles are the ones reported).
5. The winners are stored as a tuning record (tunestore.py) keyed by kernel,
   code, argument shapes, options and chip, and every later compile of that
   specialisation follows them: in this process, in a fresh one, or on
   another machine that shares the cache folder. With the disk cache off
   (PYASC_CACHE=0) they last for this process only.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..codegen.tiling import TilingDecision
from . import executors, keys, tunestore
from .artifact import CompiledKernel
from .diskcache import DiskCache
from .errors import ArgumentValueError
from .specialize import BoundCall
from .tunejob import JobResult, TuneJob, make_job, run_job


@dataclass
class CandidateResult:
    """One measured candidate of one device kernel."""

    label: str                   # the device kernel (as in `compile(...).kernels[i].name`)
    template: str
    rank: int                    # 0: the cost model's choice; 1, 2, ...: its runners-up, by predicted cycles
    tiling: str                  # the candidate, readable
    decision: TilingDecision
    predicted: float             # the cost model's cycles for one launch
    simulated: float | None = None   # the emulator's cycles per launch of this kernel (None: not run)
    call_cycles: int | None = None   # the whole call's simulated cycles with this candidate
    status: str = "pending"      # "ok", "wrong" (outputs differ from the baseline's) or "failed: <why>"
    winner: bool = False
    job: int = -1                # the job that measured it

    @property
    def error(self) -> float | None:
        """(predicted - simulated) / simulated: the cost model's relative error for this candidate."""
        if self.simulated is None or self.simulated <= 0:
            return None
        return (self.predicted - self.simulated) / self.simulated

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.label, "template": self.template, "rank": self.rank, "tiling": self.tiling,
                "decision": self.decision.to_json(), "predicted_cycles": self.predicted,
                "simulated_cycles": self.simulated, "call_cycles": self.call_cycles, "error": self.error,
                "status": self.status, "winner": self.winner}


@dataclass
class TuneResult:
    """What `kernel.tune` returns: every candidate measured, the winners, the call's cycles before and after."""

    kernel: str
    signature: str
    chip: str
    candidates: list[CandidateResult]
    decisions: tuple[TilingDecision, ...]
    baseline_cycles: int
    tuned_cycles: int
    executor: str
    jobs: int
    seconds: float
    stored: str | None = None    # the tuning record's path (None: the disk cache is off)
    notes: list[str] = field(default_factory=list)
    compile_seconds: float = 0.0     # wall time compiling the candidates here (serial)
    emulator_seconds: float = 0.0    # wall time the workers spent emulating, summed over the runs

    @property
    def speedup(self) -> float:
        return self.baseline_cycles / self.tuned_cycles if self.tuned_cycles else 1.0

    def table(self) -> str:
        header = ("kernel", "rank", "candidate", "predicted", "simulated", "error", "status")
        rows = [header]
        for c in self.candidates:
            rows.append((c.label, str(c.rank), c.tiling, f"{c.predicted:,.0f}",
                         f"{c.simulated:,.0f}" if c.simulated is not None else "-",
                         f"{c.error:+.1%}" if c.error is not None else "-",
                         c.status + ("  <- winner" if c.winner else "")))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        right = {1, 3, 4, 5}
        lines = ["  ".join(v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths)))
                 .rstrip() for r in rows]
        lines.append("(cycles per launch of that kernel; rank 0 is the cost model's choice; error = predicted vs "
                     "simulated)")
        lines.append(f"{self.kernel}({self.signature}) on {self.chip}: {self.baseline_cycles:,} cycles with the "
                     f"cost model's choices, {self.tuned_cycles:,} tuned ({self.speedup:.3f}x); {self.jobs} runs on "
                     f"{self.executor} in {self.seconds:.1f} s")
        lines.extend(self.notes)
        if self.stored:
            lines.append(f"stored in {self.stored}: later compiles of these shapes on this chip use it")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "signature": self.signature, "chip": self.chip,
                "candidates": [c.to_json() for c in self.candidates],
                "decisions": [d.to_json() for d in self.decisions], "baseline_cycles": self.baseline_cycles,
                "tuned_cycles": self.tuned_cycles, "speedup": self.speedup, "executor": self.executor,
                "jobs": self.jobs, "seconds": self.seconds, "compile_seconds": self.compile_seconds,
                "emulator_seconds": self.emulator_seconds, "stored": self.stored, "notes": self.notes}


@dataclass
class TuneTarget:
    """What the tuner needs of a Kernel and one call of it (built by `Kernel.tune`)."""

    name: str
    options: Any                                              # KernelOptions
    call: BoundCall
    components: keys.KeyComponents                            # without tuning: the tuning key's source
    compile: Callable[..., CompiledKernel]    # (decisions, runners_up=0): the call with these decisions only
    hidden: Callable[[CompiledKernel], list[np.ndarray]]      # the lifted arrays a compiled call takes now
    remember: Callable[[tuple[TilingDecision, ...]], None]    # this process compiles the call with them


Progress = Callable[[CandidateResult, int, int], None]


def tune(target: TuneTarget, top_k: int = 8, executor: str = "process", workers: int | None = None,
         address: str | None = None, verbose: bool = True, progress: Progress | None = None) -> TuneResult:
    """Tune one call (see the module docstring). `progress(candidate, done, total)` is called as runs finish;
    `verbose` prints each to stderr and the table at the end."""
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise ValueError(f"top_k must be a positive int, got {top_k!r}")
    if target.options.backend != "emulator":
        raise ArgumentValueError(f"{target.name}.tune() measures candidates on the emulator; this kernel has "
                                 f"backend={target.options.backend!r} (the option, or PYASC_BACKEND)")
    t0 = time.perf_counter()
    pool = executors.make_executor(executor, workers, address)  # a bad executor fails before any compile
    try:
        compiler = keys.compiler_digest(None)
        t1 = time.perf_counter()
        baseline = target.compile((), SEARCH_DEPTH * top_k - 1)  # runners-up enough to look SEARCH_DEPTH deep
        arrays = list(target.call.arrays) + target.hidden(baseline)
        compile_seconds = [time.perf_counter() - t1]
        candidates: list[CandidateResult] = []
        jobs = _jobs(target, baseline, top_k, compiler, candidates, compile_seconds)
        where = pool.describe()
        total = _planned_runs(baseline, top_k)
        if verbose:
            print(f"tune {target.name}({baseline.signature}): up to {top_k} candidates of each device kernel, "
                  f"about {total} emulator runs on {where}", file=sys.stderr, flush=True)
        results: dict[int, JobResult] = {}
        reported: set[int] = set()

        def report(c: CandidateResult) -> None:
            reported.add(id(c))
            if verbose:
                print(f"  [{len(results)}/{total}] {c.label} {c.tiling}: predicted {c.predicted:,.0f}, "
                      + (f"simulated {c.simulated:,.0f} cycles" if c.simulated is not None else c.status),
                      file=sys.stderr, flush=True)
            if progress is not None:
                progress(c, len(results), total)

        def on_done(i: int, result: JobResult) -> None:
            results[i] = result
            for c in [c for c in candidates if c.job == i]:
                _measure(c, result, None)
                report(c)

        pool.map(run_job, jobs, on_done, shared=arrays)
        for c in candidates:  # the cost model's choice of a kernel listed after its run (job 0) finished
            if c.job >= 0 and id(c) not in reported:
                _measure(c, results[c.job], None)
                report(c)
        base_run = results[0]
        if base_run.error:
            raise RuntimeError(f"{target.name}: the cost model's own tiling failed on the emulator: {base_run.error}")
        for c in candidates:
            if c.job >= 0:
                _measure(c, results[c.job], base_run.outputs)
        decisions = _winners(candidates)
        changed = [c for c in candidates if c.winner and c.rank > 0]
        notes = [] if candidates else ["nothing to tune: every device kernel of this call has one legal tiling"]
        if any(c.status.startswith("not legal") for c in candidates):
            notes.append("not legal: scored by the cost model, but code generation refuses it (e.g. its flags do "
                         "not fit the chip's event ids); the next candidate down the list was measured instead")
        if len(changed) >= 2:  # the winners together were never run: run the combination once
            tuned = target.compile(decisions)
            combined = pool.map(run_job, [make_job(0, tuned, compiler)], shared=arrays)[0]
            if combined.error:
                raise RuntimeError(f"{target.name}: the tuned tilings together failed on the emulator: "
                                   f"{combined.error}")
            tuned_cycles = combined.cycles
            results[len(results)] = combined
        else:
            tuned_cycles = changed[0].call_cycles if changed else base_run.cycles
        assert tuned_cycles is not None
    finally:
        executors.close(pool)
    stored = _store(target, baseline, decisions, candidates, notes) if candidates else None
    target.remember(decisions)
    result = TuneResult(target.name, baseline.signature, target.options.chip_name, candidates, decisions,
                        base_run.cycles, tuned_cycles, where, len(results), time.perf_counter() - t0, stored, notes,
                        compile_seconds[0], sum(r.seconds for r in results.values()))
    if verbose:
        print(result.table(), file=sys.stderr, flush=True)
    return result


#: how far down the cost model's list to look for top_k legal candidates (in multiples of top_k)
SEARCH_DEPTH = 3


def _options(baseline: CompiledKernel) -> Iterator[tuple[Any, list[tuple[Any, Any]]]]:
    """(device kernel, its candidates (tiling record, score), the cost model's choice first) for every kernel
    with a choice to make, once each (a kernel launched again, in a branch or a loop body, is the same)."""
    seen: set[str] = set()
    for dk in baseline.kernels:
        report = dk.tiling
        options = [(report.params, report.score)] + [(o.params, o.score) for o in report.others]
        if len(options) >= 2 and dk.name not in seen:
            seen.add(dk.name)
            yield dk, options


def _planned_runs(baseline: CompiledKernel, top_k: int) -> int:
    """The emulator runs a tuning makes at most: the baseline and every kernel's runners-up."""
    return 1 + sum(min(top_k, len(options)) - 1 for _, options in _options(baseline))


def _jobs(target: TuneTarget, baseline: CompiledKernel, top_k: int, compiler: str,
          out: list[CandidateResult], compile_seconds: list[float]) -> Iterator[TuneJob]:
    """The jobs that measure every device kernel's top_k legal candidates (job 0: the baseline), made one by one
    (each runner-up is compiled here while the workers run the jobs before it); `out` receives the candidates.

    A runner-up is scored before its flags are planned, so code generation may still refuse it (its flags
    do not fit the chip's event ids): such a one is listed as not legal, measures nothing, and the next one
    down the list is tried."""
    count = 1
    yield make_job(0, baseline, compiler)
    for dk, options in _options(baseline):
        measured = 0
        for rank, (params, score) in enumerate(options[:SEARCH_DEPTH * top_k]):
            if measured == top_k:
                break
            decision = TilingDecision.of(dk.name, params)
            what = params.describe() if hasattr(params, "describe") else str(params)
            cand = CandidateResult(dk.name, dk.template, rank, what, decision, float(score.cycles))
            out.append(cand)
            measured += 1
            if rank == 0:
                cand.job = 0
                continue
            t0 = time.perf_counter()
            compiled = target.compile((decision,))
            compile_seconds[0] += time.perf_counter() - t0
            mine = next(k for k in compiled.kernels if k.name == dk.name)
            if mine.tiling.source != "tuned":
                cand.status = f"not legal: {mine.tiling.note}"
                measured -= 1
                continue
            cand.job = count
            count += 1
            yield make_job(cand.job, compiled, compiler)


def _measure(c: CandidateResult, result: JobResult, reference: list[np.ndarray] | None) -> None:
    if result.error:
        c.status = f"failed: {result.error}"
        return
    cycles, launches = result.cycles_of(c.label)
    c.simulated = cycles / launches if launches else None
    c.call_cycles = result.cycles
    c.status = "ok"
    if reference is not None and c.rank > 0 and not _agree(result.outputs, reference):
        c.status = "wrong"


def _agree(outputs: list[np.ndarray], reference: list[np.ndarray]) -> bool:
    from ..testing import assert_close  # dtype-aware tolerances, as the test suite compares

    try:
        for got, want in zip(outputs, reference, strict=True):
            assert_close(got, want)
    except (AssertionError, ValueError):
        return False
    return True


def _winners(candidates: list[CandidateResult]) -> tuple[TilingDecision, ...]:
    """Per kernel, the measured candidate with the fewest simulated cycles (the cost model's choice on a tie)."""
    decisions = []
    for label in dict.fromkeys(c.label for c in candidates):
        mine = [c for c in candidates if c.label == label and c.status == "ok" and c.simulated is not None]
        if not mine:
            continue
        best = min(mine, key=lambda c: (c.simulated, c.rank))
        best.winner = True
        decisions.append(best.decision)
    return tuple(decisions)


def _store(target: TuneTarget, baseline: CompiledKernel, decisions: tuple[TilingDecision, ...],
           candidates: list[CandidateResult], notes: list[str]) -> str | None:
    from .. import __version__  # the package's own version, recorded with the winners

    store = DiskCache.from_env()
    if store is None:
        notes.append("the disk cache is off (PYASC_CACHE=0): the tuned tilings last for this process only")
        return None
    record = tunestore.TuningRecord(tunestore.tuning_key(target.components), target.name, baseline.signature,
                                    target.options.chip_name, decisions, [c.to_json() for c in candidates],
                                    pyasc_version=__version__)
    try:
        return str(tunestore.save(Path(store.root), record))
    except OSError as e:
        notes.append(f"cannot write the tuning record into {store.root} ({e}): the tuned tilings last for this "
                     "process only")
        return None
