"""What code generation produces: the device kernels (program, tiling, how each is launched) and the module.

Plain data the disk cache stores and restores (`runtime/records.py`); `CodegenOptions` are the knobs
the kernel options give code generation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import Value
from ..target import Program
from .launch import Loc, LaunchPlan
from .schedule import TileSchedule
from .tiling import TilingDecision, TilingReport


@dataclass(frozen=True)
class CodegenOptions:
    buffer_num: int = 2          # a cap: 1 forces serial tiles
    cores: int | None = None     # cap on cores used
    sync: str = "flags"          # "flags" or "barrier" (debug)
    decisions: tuple[TilingDecision, ...] = ()   # tilings chosen by autotuning, per device kernel label
    runners_up: int = 0          # candidates ranked exactly after each choice at least (the tuner asks for more)

    def decision(self, label: str) -> TilingDecision | None:
        return next((d for d in self.decisions if d.label == label), None)

    def core_cap(self, available: int) -> int:
        """The cores a kernel may use on a chip with `available` cores of its type."""
        return max(1, min(self.cores or available, available))


@dataclass
class DeviceKernel:
    """One launched device kernel: what it computes, how it was tiled, its program and how it is launched.

    Plain data (the disk cache stores and restores it): the program, the tiling fields and block count as
    expressions over the dims, the readable schedule and sync summary, the tiling report. `schedule` is the
    full `TileSchedule` in the process that generated it (None when loaded from the disk cache).
    """

    index: int
    name: str
    template: str
    core_type: str
    program: Program
    fields: dict[str, Any]       # tiling field -> expression over dims
    blocks: Any                  # cores to launch, over dims
    tiling: TilingReport
    schedule_text: str
    sync_summary: str
    notes: list[str]
    inputs: list[Value]          # graph values bound to in<i>
    outputs: list[Value]         # graph values bound to out<j>
    plan: Any = None             # the optimiser's KernelPlan (None for a copy the launch plan added)
    scratch: dict[str, Loc] = field(default_factory=dict)   # GM scratch parameter -> its workspace area
    stages: str = ""             # what its codegen stages did (their statistics), one line
    schedule: TileSchedule | None = field(default=None, repr=False, compare=False, metadata={"persist": False})

    def listing(self) -> str:
        return self.program.listing()


@dataclass
class DeviceModule:
    kernels: list[DeviceKernel]
    launch: LaunchPlan
    output_shapes: list[tuple[Any, ...]]
    output_dtypes: list[str]
    notes: list[str] = field(default_factory=list)
    stage_times: dict[str, float] = field(default_factory=dict)   # seconds per codegen stage, all kernels

    def tiling_text(self) -> str:
        out = []
        for k in self.kernels:
            out.append(f"k{k.index} {k.name} [{k.template}]")
            out.extend("  " + line for line in k.tiling.text().splitlines())
            out.extend("  " + line for line in k.schedule_text.splitlines())
            out.append("  " + k.sync_summary)
            if k.stages:
                out.append("  stages: " + k.stages)
        return "\n".join(out)
