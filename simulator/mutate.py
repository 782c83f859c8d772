"""Mutation testing of the sanitizer: break a correct program's synchronisation, see whether it is caught.

Mutants of a program: a wait dropped, a set dropped, a pipe instruction moved
across the neighbouring flag of its pipe, the event ids of a pipe pair
collapsed to one, and (given tilings that do it) buffers made to overlap. A
mutant is *harmful* when some legal schedule shows it: its lockstep run or
one of several randomly ordered runs (fuzz.py) raises, or ends with other
outputs than the original program. It is *caught* when a sanitized launch
raises. The catch rate is caught harmful mutants over harmful mutants;
caught harmless ones are reported as false alarms.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import numpy as np

from . import chips, isa
from .device import Device
from .examples import gemm, matmul, matmul_epilogue, softmax, vector_add
from .errors import SimulatorError
from .mixed import MixedKernel
from .program import Program

Kernel = Union[Program, MixedKernel]


@dataclass
class Case:
    """A correct kernel and how to launch it: GM inputs, output buffer sizes, tiling, buffer-overlap tilings."""

    name: str
    kernel: Kernel
    block_dim: int
    inputs: dict[str, np.ndarray]
    outputs: dict[str, int]
    tiling: dict[str, int]
    overlaps: list[dict[str, int]] = field(default_factory=list)
    chip: str = "tiny"


@dataclass
class Mutant:
    kind: str
    where: str
    kernel: Kernel
    tiling: dict[str, int]


@dataclass
class Verdict:
    case: str
    mutant: Mutant
    caught: bool
    harmful: bool
    finding: str = ""
    evidence: str = ""


def _flag(i: isa.Instr) -> bool:
    return isinstance(i, (isa.SetFlag, isa.WaitFlag, isa.CrossSet, isa.CrossWait))


def _program_mutants(p: Program) -> list[tuple[str, str, Program]]:
    """(kind, where, mutated program) for one program; mutants that break the program's structure are skipped."""
    ins = p.instructions
    out: list[tuple[str, str, list]] = []
    for k, i in enumerate(ins):
        if isinstance(i, (isa.WaitFlag, isa.CrossWait)):
            out.append(("drop a wait", f"{p.name} #{k} {i.text()}", ins[:k] + ins[k + 1:]))
        elif isinstance(i, (isa.SetFlag, isa.CrossSet)):
            out.append(("drop a set", f"{p.name} #{k} {i.text()}", ins[:k] + ins[k + 1:]))
    for k, i in enumerate(ins):  # move the pipe instruction next to a flag across it
        if not _flag(i) or i.pipe == "S":
            continue
        for j in (k - 1, k + 1):
            if 0 <= j < len(ins) and ins[j].pipe == i.pipe and not _flag(ins[j]) and ins[j].OP not in (
                    "loop", "end_loop", "if", "else", "end_if"):
                body = list(ins)
                body[j], body[k] = body[k], body[j]
                out.append(("move across a flag", f"{p.name} #{j} {ins[j].text()} <-> #{k} {i.text()}", body))
    pairs = sorted({(i.src, i.dst) for i in ins if isinstance(i, (isa.SetFlag, isa.WaitFlag))})
    for src, dst in pairs:
        ids = {i.event for i in ins if isinstance(i, (isa.SetFlag, isa.WaitFlag)) and (i.src, i.dst) == (src, dst)}
        if ids == {0}:
            continue
        body = [type(i)(i.src, i.dst, 0) if isinstance(i, (isa.SetFlag, isa.WaitFlag)) and (i.src, i.dst) == (src, dst)
                else i for i in ins]
        out.append(("collapse event ids", f"{p.name} {src}->{dst} ids {sorted(map(str, ids))} -> 0", body))
    result = []
    for kind, where, body in out:
        try:
            result.append((kind, where, p.with_instructions(body)))
        except SimulatorError:
            continue
    return result


def mutants(case: Case) -> list[Mutant]:
    k = case.kernel
    out: list[Mutant] = []
    if isinstance(k, MixedKernel):
        out += [Mutant(kind, w, MixedKernel(m, k.aiv, k.name), case.tiling) for kind, w, m in _program_mutants(k.aic)]
        out += [Mutant(kind, w, MixedKernel(k.aic, m, k.name), case.tiling) for kind, w, m in _program_mutants(k.aiv)]
    else:
        out += [Mutant(kind, w, m, case.tiling) for kind, w, m in _program_mutants(k)]
    for t in case.overlaps:
        changed = ", ".join(f"{f}={v}" for f, v in t.items() if case.tiling.get(f) != v)
        out.append(Mutant("overlap buffers", f"{case.name} tiling {changed}", k, t))
    return out


def _run(case: Case, kernel: Kernel, tiling: dict, **launch: Any) -> dict[str, bytes]:
    dev = Device(case.chip)
    for name, arr in case.inputs.items():
        dev.upload(name, arr)
    for name, nbytes in case.outputs.items():
        dev.alloc(name, nbytes)
    dev.launch(kernel, case.block_dim, {p: p for p in kernel.params}, tiling, **launch)
    return {name: dev.read(name, "uint8").tobytes() for name in case.outputs}


def judge(case: Case, m: Mutant, seeds: int, reference: Optional[dict] = None) -> Verdict:
    ref = reference if reference is not None else _run(case, case.kernel, case.tiling)
    harmful, evidence = False, ""
    for seed in [None] + list(range(seeds)):
        try:
            got = _run(case, m.kernel, m.tiling, **({} if seed is None else {"schedule_seed": seed}))
        except SimulatorError as e:
            harmful, evidence = True, f"{'lockstep' if seed is None else f'seed {seed}'}: {type(e).__name__}"
            break
        if got != ref:
            harmful, evidence = True, f"{'lockstep' if seed is None else f'seed {seed}'}: wrong output"
            break
    try:
        _run(case, m.kernel, m.tiling, sanitize=True)
        caught, finding = False, ""
    except SimulatorError as e:
        caught, finding = True, f"{type(e).__name__}: {str(e)[:160]}"
    return Verdict(case.name, m, caught, harmful, finding, evidence)


def run_cases(cases: list[Case], seeds: int = 4, progress: Optional[Callable[[Verdict], None]] = None) -> dict:
    """Every mutant of every case, judged; returns counts, the catch rate and the misses."""
    verdicts = []
    for case in cases:
        ref = _run(case, case.kernel, case.tiling)
        for m in mutants(case):
            v = judge(case, m, seeds, ref)
            verdicts.append(v)
            if progress is not None:
                progress(v)
    harmful = [v for v in verdicts if v.harmful]
    caught = [v for v in harmful if v.caught]
    return {
        "mutants": len(verdicts), "harmful": len(harmful), "caught": len(caught),
        "catch_rate": len(caught) / len(harmful) if harmful else 1.0,
        "harmless": len(verdicts) - len(harmful),
        "false_alarms": [f"{v.case}: {v.mutant.kind}: {v.mutant.where} ({v.finding})"
                         for v in verdicts if v.caught and not v.harmful],
        "missed": [f"{v.case}: {v.mutant.kind}: {v.mutant.where} ({v.evidence})" for v in harmful if not v.caught],
        "by_kind": {k: {"harmful": sum(1 for v in harmful if v.mutant.kind == k),
                        "caught": sum(1 for v in caught if v.mutant.kind == k)}
                    for k in sorted({v.mutant.kind for v in verdicts})},
    }


def example_cases(rng: np.random.Generator) -> list[Case]:
    """The reference programs of simulator/examples at small sizes on the tiny chip."""
    tiny = chips.get("tiny")
    cases = []
    x = rng.standard_normal(1300).astype(np.float32)
    for bn in (1, 2):
        t = vector_add.tiling(x.size, tiny, 3, buffer_num=bn, tile=256)
        cases.append(Case(f"vector_add x{bn}", vector_add.build(buffer_num=bn), 3, {"x": x, "y": x[::-1].copy()},
                          {"z": x.nbytes}, t, [dict(t, slot=t["slot"] - 32)]))
    s = rng.standard_normal((12, 40)).astype(np.float32)
    t = softmax.tiling(12, 40, tiny, 2)
    t["tile_rows"] = 2
    cases.append(Case("softmax", softmax.build(), 2, {"x": s}, {"y": s.nbytes}, t,
                      [dict(t, t_off=t["t_off"] - 32)]))
    a = rng.standard_normal((40, 48)).astype(np.float16)
    b = rng.standard_normal((48, 40)).astype(np.float16)
    bias = rng.standard_normal(40).astype(np.float32)
    t = matmul.tiling(40, 40, 48, tiny)
    t.update(tm=16, tn=32, tk=16)
    cases.append(Case("matmul", matmul.build(), 2, {"a": a, "b": b, "bias": bias}, {"c": 40 * 40 * 4}, t,
                      [dict(t, l1_b=t["l1_b"] - 32)]))
    ga = rng.standard_normal((64, 128)).astype(np.float16)
    gb = rng.standard_normal((64, 128)).astype(np.float16)
    t = gemm.tiling(64, 64, 128, tiny, (2, 1), 32, 64, 32, 2)
    cases.append(Case("gemm", gemm.build(32, 64, 32, 2), 2, {"a": ga, "b": gb}, {"c": 64 * 64 * 4}, t,
                      [dict(t, l1_b=t["l1_b"] - 32)]))
    ea = rng.standard_normal((128, 64)).astype(np.float16)
    eb = rng.standard_normal((64, 64)).astype(np.float16)
    t = matmul_epilogue.tiling(128, 64, 64, tiny)
    cases.append(Case("matmul_epilogue", matmul_epilogue.build(), 1, {"a": ea, "b": eb},
                      {"ws": 2 * 64 * 64 * 4, "c": 128 * 64 * 4}, t, [dict(t, l1_b=t["l1_b"] - 32)]))
    return cases
