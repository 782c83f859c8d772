"""Scalar-unit, control-flow and synchronisation instructions."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ProgramError
from .spec import InstrSpec, R, W
from .base import (
    ALU_FNS, CAST_ROUNDING, CORE_PIPES, Instr, Mem, Operand, Reg, ScalarValue, _check_dtype, _check_ops,
    _check_scalar, _fmt, _req,
)


# --------------------------------------------------------------------------- scalar


@dataclass(frozen=True)
class CoreIdx(Instr):
    """dst = index of this core in the launch (0 .. block_dim-1)."""

    dst: Reg
    OP: ClassVar[str] = "core_idx"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def text(self) -> str:
        return f"{self.dst} = core_idx"


@dataclass(frozen=True)
class CoreNum(Instr):
    """dst = block_dim of the launch."""

    dst: Reg
    OP: ClassVar[str] = "core_num"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def text(self) -> str:
        return f"{self.dst} = core_num"


@dataclass(frozen=True)
class Tiling(Instr):
    """dst = the tiling-data field `field` passed at launch."""

    dst: Reg
    field: str
    OP: ClassVar[str] = "tiling"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def text(self) -> str:
        return f"{self.dst} = tiling {self.field}"


@dataclass(frozen=True)
class Mov(Instr):
    dst: Reg
    src: Operand
    OP: ClassVar[str] = "mov"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_ops(self, "src")

    def text(self) -> str:
        return f"{self.dst} = {self.src}"


@dataclass(frozen=True)
class Alu(Instr):
    """dst = fn(a, b) on 64-bit integers; div/mod floor, cdiv is ceiling division, comparisons give 0/1."""

    fn: str
    dst: Reg
    a: Operand
    b: Operand
    OP: ClassVar[str] = "alu"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _req(self, self.fn in ALU_FNS, f"unknown scalar function {self.fn!r}; known: {', '.join(ALU_FNS)}")
        _check_ops(self, "a", "b")

    def text(self) -> str:
        return f"{self.dst} = {self.fn} {self.a}, {self.b}"


@dataclass(frozen=True)
class Loop(Instr):
    """for var in range(start, stop, step): ... EndLoop. The trip count is evaluated once."""

    var: Reg
    start: Operand
    stop: Operand
    step: Operand = 1
    OP: ClassVar[str] = "loop"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="control")
    WRITES: ClassVar[tuple[str, ...]] = ("var",)

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_ops(self, "start", "stop", "step")
        _req(self, not (isinstance(self.step, int) and self.step == 0), "step must not be 0")

    def text(self) -> str:
        return f"loop {self.var} = {self.start} .. {self.stop} step {self.step}"


@dataclass(frozen=True)
class EndLoop(Instr):
    OP: ClassVar[str] = "end_loop"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="control")

    def text(self) -> str:
        return "end_loop"


@dataclass(frozen=True)
class If(Instr):
    """Run the following block when cond != 0 (optional Else block), up to EndIf."""

    cond: Operand
    OP: ClassVar[str] = "if"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="control")

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_ops(self, "cond")

    def text(self) -> str:
        return f"if {self.cond}"


@dataclass(frozen=True)
class Else(Instr):
    OP: ClassVar[str] = "else"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="control")

    def text(self) -> str:
        return "else"


@dataclass(frozen=True)
class EndIf(Instr):
    OP: ClassVar[str] = "end_if"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="control")

    def text(self) -> str:
        return "end_if"


# --------------------------------------------------------------------------- synchronisation


def _check_pipe_pair(instr: Instr, core_type: str) -> None:
    pipes = CORE_PIPES[core_type]
    for n in ("src", "dst"):
        p = getattr(instr, n)
        _req(instr, p in pipes, f"{n} pipe {p!r} is not a pipe of an {core_type.upper()} core ({', '.join(pipes)})")
    _req(instr, instr.src != instr.dst, f"source and destination pipe are both {instr.src}; use pipe_barrier")
    _check_ops(instr, "event")


@dataclass(frozen=True)
class SetFlag(Instr):
    """Queued on pipe `src`: sets event (src->dst, event) once src's earlier work is done."""

    src: str
    dst: str
    event: Operand
    OP: ClassVar[str] = "set_flag"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="sync")

    @property
    def pipe(self) -> str:
        return self.src

    def check(self, core_type: str) -> None:
        _check_pipe_pair(self, core_type)

    def text(self) -> str:
        return f"set_flag {self.src}->{self.dst} event={self.event}"


@dataclass(frozen=True)
class WaitFlag(Instr):
    """Queued on pipe `dst`: blocks dst until event (src->dst, event) is set, then clears it."""

    src: str
    dst: str
    event: Operand
    OP: ClassVar[str] = "wait_flag"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="sync")

    @property
    def pipe(self) -> str:
        return self.dst

    def check(self, core_type: str) -> None:
        _check_pipe_pair(self, core_type)

    def text(self) -> str:
        return f"wait_flag {self.src}->{self.dst} event={self.event}"


@dataclass(frozen=True)
class PipeBarrier(Instr):
    """`pipe`: orders that pipe's queue (always true in this model); "ALL": the scalar unit waits for every pipe."""

    pipe_name: str
    OP: ClassVar[str] = "pipe_barrier"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="sync")

    @property
    def pipe(self) -> str:
        return "S" if self.pipe_name == "ALL" else self.pipe_name

    def check(self, core_type: str) -> None:
        ok = self.pipe_name == "ALL" or self.pipe_name in CORE_PIPES[core_type]
        _req(self, ok, f"pipe must be ALL or one of {', '.join(CORE_PIPES[core_type])}, got {self.pipe_name!r}")

    def text(self) -> str:
        return f"pipe_barrier {self.pipe_name}"


@dataclass(frozen=True)
class SyncAll(Instr):
    """All-core barrier: waits until this core's pipes drain and every core of the launch arrives."""

    OP: ClassVar[str] = "sync_all"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="sync")

    def text(self) -> str:
        return "sync_all"


# --------------------------------------------------------------------------- mixed launches: groups, cross-core flags

CROSS_MODES: dict[str, int] = {"all": 0, "group_aivs": 1, "group": 2}  # name -> the hardware's mode number


def cross_mode(mode: Any) -> str:
    """Canonical name of a cross-core flag mode (a name, or the hardware's number 0, 1, 2)."""
    for name, num in CROSS_MODES.items():
        if mode == name or (isinstance(mode, int) and not isinstance(mode, bool) and mode == num):
            return name
    raise ProgramError(f"cross-core flag mode must be one of {', '.join(CROSS_MODES)} (or 0, 1, 2), got {mode!r}")


@dataclass(frozen=True)
class GroupIdx(Instr):
    """dst = the core's group in a mixed launch (its AIC's index); in a one-type launch, its core index."""

    dst: Reg
    OP: ClassVar[str] = "group_idx"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def text(self) -> str:
        return f"{self.dst} = group_idx"


@dataclass(frozen=True)
class SubIdx(Instr):
    """dst = an AIV's index inside its group in a mixed launch (0 .. group_aivs-1); 0 otherwise."""

    dst: Reg
    OP: ClassVar[str] = "sub_idx"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def text(self) -> str:
        return f"{self.dst} = sub_idx"


@dataclass(frozen=True)
class CrossSet(Instr):
    """Queued on `pipe_name`: once that pipe's earlier work is done, signals cross-core flag `flag` in `mode`."""

    mode: str
    flag: Operand
    pipe_name: str
    OP: ClassVar[str] = "cross_set"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="sync")

    @property
    def pipe(self) -> str:
        return self.pipe_name

    def check(self, core_type: str) -> None:
        _req(self, self.mode in CROSS_MODES, f"mode must be one of {', '.join(CROSS_MODES)}, got {self.mode!r}")
        _req(self, self.pipe_name in CORE_PIPES[core_type],
             f"pipe {self.pipe_name!r} is not a pipe of an {core_type.upper()} core ({', '.join(CORE_PIPES[core_type])})")
        _req(self, not (self.mode == "group_aivs" and core_type != "aiv"), "mode group_aivs syncs the AIVs of a group")
        _check_ops(self, "flag")

    def text(self) -> str:
        return f"cross_set {self.mode} flag={self.flag} on {self.pipe_name}"


@dataclass(frozen=True)
class CrossWait(Instr):
    """The scalar unit stops until every core this one waits on in `mode` made its matching cross_set of `flag`."""

    mode: str
    flag: Operand
    OP: ClassVar[str] = "cross_wait"
    SPEC: ClassVar[InstrSpec] = InstrSpec(unit="sync")

    def check(self, core_type: str) -> None:
        _req(self, self.mode in CROSS_MODES, f"mode must be one of {', '.join(CROSS_MODES)}, got {self.mode!r}")
        _req(self, not (self.mode == "group_aivs" and core_type != "aiv"), "mode group_aivs syncs the AIVs of a group")
        _check_ops(self, "flag")

    def text(self) -> str:
        return f"cross_wait {self.mode} flag={self.flag}"


# --------------------------------------------------------------------------- scalar access to data

FALU_FNS = ("add", "sub", "mul", "div", "min", "max", "lt", "le", "gt", "ge", "eq", "ne")
CVT_TARGETS = ("int", "float")


@dataclass(frozen=True)
class ScalarLoad(Instr):
    """dst = the `dtype` element at UB address `src` (an integer register for integer dtypes, a float one for
    float dtypes). The scalar unit reads UB directly: order it after the pipe that wrote the value
    (e.g. wait_flag(MTE2, S))."""

    dst: Reg
    src: Mem
    dtype: str
    OP: ClassVar[str] = "ld"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)
    SPEC: ClassVar[InstrSpec] = InstrSpec(mems=(R("src", "UB"),))

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_dtype(self, "dtype")

    def text(self) -> str:
        return f"{self.dst} = ld {self.src} {self.dtype}"


@dataclass(frozen=True)
class ScalarStore(Instr):
    """The `dtype` element at UB address `dst` = `src` (a register or an immediate), converted to dtype."""

    dst: Mem
    src: ScalarValue
    dtype: str
    OP: ClassVar[str] = "st"
    SPEC: ClassVar[InstrSpec] = InstrSpec(mems=(W("dst", "UB"),))

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _check_dtype(self, "dtype")
        _check_scalar(self.src, f"{self.OP}: src")

    def text(self) -> str:
        return f"st {self.dst} <- {_fmt(self.src)} {self.dtype}"


@dataclass(frozen=True)
class FAlu(Instr):
    """dst = fn(a, b) on float registers (or immediates); div is true division; comparisons give int 0/1."""

    fn: str
    dst: Reg
    a: ScalarValue
    b: ScalarValue
    OP: ClassVar[str] = "falu"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _req(self, self.fn in FALU_FNS, f"unknown float scalar function {self.fn!r}; known: {', '.join(FALU_FNS)}")
        _check_scalar(self.a, f"{self.OP}: a")
        _check_scalar(self.b, f"{self.OP}: b")

    def text(self) -> str:
        return f"{self.dst} = f{self.fn} {_fmt(self.a)}, {_fmt(self.b)}"


@dataclass(frozen=True)
class Cvt(Instr):
    """dst = src converted to an integer register (rounding `round`) or a float register."""

    dst: Reg
    src: Reg
    to: str
    round: str = "trunc"
    OP: ClassVar[str] = "cvt"
    WRITES: ClassVar[tuple[str, ...]] = ("dst",)

    def check(self, core_type: str) -> None:
        super().check(core_type)
        _req(self, self.to in CVT_TARGETS, f"to must be one of {', '.join(CVT_TARGETS)}, got {self.to!r}")
        _req(self, self.round in CAST_ROUNDING, f"round must be one of {', '.join(CAST_ROUNDING)}, got {self.round!r}")

    def text(self) -> str:
        r = f" round={self.round}" if self.to == "int" and self.round != "trunc" else ""
        return f"{self.dst} = cvt.{self.to} {self.src}{r}"
