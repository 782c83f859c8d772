"""`pyasc compile`'s report: what the pipeline did to one kernel, section by section.

`compile_report(compiled)` joins the sections of `REPORT_SECTIONS` in
order; a section function returns its lines, or None when the artifact has
nothing for it (so "tiling" and "simulated profile" appear once code
generation fills `KernelPlan.tiling` and a profile is passed). A new section
is one more `(title, function)` entry.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from .artifact import CompiledKernel

FUSION_LOG_LINES = 20


def _stages(ck: CompiledKernel, profile: Any) -> list[str]:
    """Every stage in order; graph stages with their op histogram and what changed since the last one."""
    lines = []
    previous: dict[str, int] | None = None
    width = max(len(name) for name in ck.stages)
    for i, name in enumerate(ck.stages):
        ops = ck.stage_ops.get(name)
        if ops is None:
            lines.append(f"{i:02d} {name}")
            continue
        parts = []
        for op in sorted(set(ops) | set(previous or {}), key=lambda o: (-ops.get(o, 0), o)):
            now, before = ops.get(op, 0), (previous or {}).get(op, 0)
            delta = "" if previous is None or now == before else f" ({now - before:+d})"
            parts.append(f"{op} {now}{delta}")
        lines.append(f"{i:02d} {name.ljust(width)}  {sum(ops.values()):3d} ops: {', '.join(parts) or '-'}")
        previous = ops
    return lines


def _kernels(ck: CompiledKernel, profile: Any) -> list[str]:
    by_category: dict[str, int] = {}
    for k in ck.plans:
        by_category[k.category.name] = by_category.get(k.category.name, 0) + 1
    lines = [f"{len(ck.plans)} planned: " + ", ".join(f"{n} {c}" for c, n in by_category.items())]
    lines += [k.describe() for k in ck.plans]
    for k in ck.kernels:   # each with its notes: which form a plan took and why (a mixed launch, split keys)
        lines.append(f"launched: k{k.index} {k.name} [{k.template}] {k.core_type.upper()} x {k.blocks}")
        lines += [f"  note: {n}" for n in k.notes]
    return lines


def _fusion(ck: CompiledKernel, profile: Any) -> list[str] | None:
    log = ck.fusion_log  # rendered from the decisions on each read
    if not log:
        return None
    shown = log[:FUSION_LOG_LINES]
    extra = len(log) - len(shown)
    return shown + ([f"... {extra} more lines (the fusion_log stage has them all)"] if extra > 0 else [])


def _memory(ck: CompiledKernel, profile: Any) -> list[str] | None:
    return ck.memory_plan.table().splitlines()[:1] if ck.memory_plan is not None else None


def _tiling(ck: CompiledKernel, profile: Any) -> list[str] | None:
    lines = []
    for k in ck.kernels:
        lines.append(f"k{k.index} {k.name}:")
        lines += ["  " + line for line in k.tiling.text().splitlines()]
    return lines or None


def _profile(ck: CompiledKernel, profile: Any) -> list[str] | None:
    return profile.summary().splitlines() if profile is not None else None


def _compile_times(ck: CompiledKernel, profile: Any) -> list[str]:
    times = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in ck.timings.items())
    return [f"{times} (this artifact: {'loaded from the disk cache' if ck.origin == 'disk' else 'compiled now'})"]


Section = Callable[[CompiledKernel, Any], Optional[list[str]]]

REPORT_SECTIONS: list[tuple[str, Section]] = [
    ("stages", _stages),
    ("device kernels", _kernels),
    ("fusion log", _fusion),
    ("memory plan", _memory),
    ("tiling", _tiling),
    ("simulated profile", _profile),
    ("compile time", _compile_times),
]


def compile_report(compiled: CompiledKernel, profile: Any = None) -> str:
    """The report `pyasc compile` prints (see the module docstring)."""
    out = [f"{compiled.name}({compiled.signature})  [{compiled.options.describe()}]  key {compiled.key_hash}"]
    for title, section in REPORT_SECTIONS:
        lines = section(compiled, profile)
        if lines is None:
            continue
        out.append(f"\n{title}:")
        out.extend("  " + line for line in lines)
    return "\n".join(out)
