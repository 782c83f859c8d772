"""Tile programs: an instruction list plus a builder API, a readable listing and a JSON form.

A program is per-core code for one core type ("aiv" vector cores or "aic"
cube cores). It names its GM kernel arguments (`params`) and the tiling-data
fields it reads (`tiling`); both are bound at launch. Loops and branches are
instructions, so a program's size does not depend on the tensor sizes.

    p = Program("scale", core_type="aiv", params=["x", "y"], tiling=["n"])
    n = p.tiling("n")
    p.copy(UB(0), p.gm("x"), "float32", burst=n, pad=True)
    ...
"""
from __future__ import annotations

import json
import math
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from . import isa
from .errors import ProgramError
from .isa import (
    Alu, Copy, CopyNd2Nz, CoreIdx, Cvt, FAlu, Load3D, LoadL0Fractals, ScalarLoad, ScalarStore, VGather, CoreNum, CrossSet, CrossWait, Else, GroupIdx, SubIdx, EndIf, EndLoop, FixPipe, If, Instr, LoadBias, LoadL0,
    Loop, Mem, Mmad, Mov, Operand, PipeBarrier, Reg, ScalarValue, SetFlag, SyncAll, Tiling, VBinary,
    VBroadcast, VCast, VCompare, VCopy, VDup, VReduce, VRepeat, VScalar, VSelect, VTranspose, VUnary, WaitFlag,
)

JSON_FORMAT = "simulator-program"
JSON_VERSION = 1


@dataclass(frozen=True)
class Structure:
    """Matching block indices computed by validation: loop<->end_loop, if->else/end_if."""

    match: dict[int, int]        # loop -> end_loop, end_loop -> loop, if -> end_if, else -> end_if
    else_of: dict[int, int]      # if -> else (only when there is an else)
    depth: tuple[int, ...]       # block nesting depth of each instruction (for the listing)


def _operand(v: Any, what: str) -> Operand:
    if isinstance(v, Reg):
        return v
    if isinstance(v, (bool, np.bool_)):
        raise ProgramError(f"{what} must be an int or a Reg, got bool {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    raise ProgramError(f"{what} must be an int or a Reg, got {type(v).__name__} {v!r}")


def _count(v: Any) -> Optional[Operand]:
    return None if v is None else _operand(v, "count")


def _scalar(v: Any, what: str) -> ScalarValue:
    if isinstance(v, Reg):
        return v
    if isinstance(v, (bool, np.bool_)):
        raise ProgramError(f"{what} must be a number or a Reg, got bool {v!r}")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    raise ProgramError(f"{what} must be a number or a Reg, got {type(v).__name__} {v!r}")


class Program:
    """A tile program and its builder.

    Builder methods append one instruction each; scalar ones return the
    destination register (a fresh one unless `dst` is given).
    """

    def __init__(self, name: str, core_type: str = "aiv", params: Sequence[str] = (),
                 tiling: Sequence[str] = ()):
        if not isinstance(name, str) or not name:
            raise ProgramError(f"program name must be a non-empty string, got {name!r}")
        if core_type not in isa.CORE_TYPES:
            raise ProgramError(f"core_type must be one of {', '.join(isa.CORE_TYPES)}, got {core_type!r}")
        self.name = name
        self.core_type = core_type
        self.params: list[str] = []
        self.tiling_fields: list[str] = []
        self.instructions: list[Instr] = []
        self._next_reg = 0
        self._open: list[tuple[str, int]] = []  # open blocks while building
        self._rev = 0  # bumped by every change, so cached checks and decodings know when to redo
        self._structure: Optional[tuple[tuple[int, int], Structure]] = None
        self._decoded: dict[int, tuple] = {}  # id(chip) -> (revision, decoded program), see decode.py
        for p in params:
            self.param(p)
        for t in tiling:
            self.declare_tiling(t)

    # ------------------------------------------------------------------ declarations

    def param(self, name: str) -> str:
        """Declare a GM kernel argument (idempotent); returns its name."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ProgramError(f"parameter name must be an identifier, got {name!r}")
        if name not in self.params:
            self.params.append(name)
        return name

    def declare_tiling(self, name: str) -> str:
        """Declare a tiling-data field (idempotent); returns its name."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ProgramError(f"tiling field name must be an identifier, got {name!r}")
        if name not in self.tiling_fields:
            self.tiling_fields.append(name)
        return name

    def reg(self, name: Optional[str] = None) -> Reg:
        """A register: the named one, or a fresh `r<N>`."""
        if name is not None:
            return Reg(name)
        r = Reg(f"r{self._next_reg}")
        self._next_reg += 1
        return r

    def gm(self, arg: str, offset: Any = 0) -> Mem:
        """A GM operand at byte `offset` inside kernel argument `arg` (declared if new)."""
        self.param(arg)
        return Mem("GM", _operand(offset, "GM offset"), arg)

    # ------------------------------------------------------------------ emission

    def emit(self, instr: Instr) -> Instr:
        """Append one instruction after checking its static rules against this program's core type."""
        if not isinstance(instr, Instr):
            raise ProgramError(f"emit() takes an instruction, got {type(instr).__name__}")
        instr.check(self.core_type)
        for m in instr.mems():
            if m.space == "GM" and m.arg not in self.params:
                raise ProgramError(
                    f"{instr.OP}: GM argument {m.arg!r} is not a declared parameter "
                    f"(params: {', '.join(self.params) or 'none'})"
                )
        if isinstance(instr, Tiling):
            self.declare_tiling(instr.field)
        self.instructions.append(instr)
        self._rev += 1
        return instr

    def revision(self) -> tuple[int, int]:
        """Changes with every builder call (and with the instruction count, if the list is edited directly)."""
        return (self._rev, len(self.instructions))

    def _dst(self, dst: Optional[Reg]) -> Reg:
        if dst is None:
            return self.reg()
        if not isinstance(dst, Reg):
            raise ProgramError(f"dst must be a Reg, got {dst!r}")
        return dst

    # scalar unit ---------------------------------------------------------

    def core_idx(self, dst: Optional[Reg] = None) -> Reg:
        d = self._dst(dst)
        self.emit(CoreIdx(d))
        return d

    def core_num(self, dst: Optional[Reg] = None) -> Reg:
        d = self._dst(dst)
        self.emit(CoreNum(d))
        return d

    def group_idx(self, dst: Optional[Reg] = None) -> Reg:
        """The core's group in a mixed launch (its AIC's index); in a one-type launch, the core index."""
        d = self._dst(dst)
        self.emit(GroupIdx(d))
        return d

    def sub_idx(self, dst: Optional[Reg] = None) -> Reg:
        """An AIV's index inside its group in a mixed launch (0 or 1 on the 910B); 0 otherwise."""
        d = self._dst(dst)
        self.emit(SubIdx(d))
        return d

    def tiling(self, field: str, dst: Optional[Reg] = None) -> Reg:
        """Load tiling-data field `field` (declared if new) into a register."""
        self.declare_tiling(field)
        d = self._dst(dst)
        self.emit(Tiling(d, field))
        return d

    def mov(self, src: Any, dst: Optional[Reg] = None) -> Reg:
        d = self._dst(dst)
        self.emit(Mov(d, _operand(src, "mov source")))
        return d

    def alu(self, fn: str, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        """dst = fn(a, b); fn in isa.ALU_FNS (add sub mul div mod cdiv min max shl shr and or xor lt le gt ge eq ne)."""
        d = self._dst(dst)
        self.emit(Alu(fn, d, _operand(a, f"{fn} operand"), _operand(b, f"{fn} operand")))
        return d

    def add(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        return self.alu("add", a, b, dst)

    def falu(self, fn: str, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        """dst = fn(a, b) on float registers or immediates (fn in isa.FALU_FNS; div is true division)."""
        d = self._dst(dst)
        self.emit(FAlu(fn, d, _scalar(a, f"f{fn} operand"), _scalar(b, f"f{fn} operand")))
        return d

    def cvt(self, src: Reg, to: str, round: str = "trunc", dst: Optional[Reg] = None) -> Reg:
        """A register converted to an integer ("int", rounding `round`) or a float ("float") register."""
        d = self._dst(dst)
        self.emit(Cvt(d, src, to, round))
        return d

    def ld(self, src: Mem, dtype: Any, dst: Optional[Reg] = None) -> Reg:
        """Read one `dtype` element of UB into a register (integer or float by dtype)."""
        d = self._dst(dst)
        self.emit(ScalarLoad(d, src, isa.normalize_dtype(dtype)))
        return d

    def st(self, dst: Mem, value: Any, dtype: Any) -> None:
        """Write one `dtype` element of UB from a register or an immediate."""
        self.emit(ScalarStore(dst, _scalar(value, "stored value"), isa.normalize_dtype(dtype)))

    def sub(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        return self.alu("sub", a, b, dst)

    def mul(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        return self.alu("mul", a, b, dst)

    def div(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        """Floor division."""
        return self.alu("div", a, b, dst)

    def mod(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        return self.alu("mod", a, b, dst)

    def cdiv(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        """Ceiling division."""
        return self.alu("cdiv", a, b, dst)

    def min(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        return self.alu("min", a, b, dst)

    def max(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        return self.alu("max", a, b, dst)

    # control flow -------------------------------------------------------

    @contextmanager
    def loop(self, start: Any, stop: Any = None, step: Any = 1, var: Optional[Reg] = None) -> Iterator[Reg]:
        """`with p.loop(n) as i:` or `p.loop(start, stop, step)`: like range(); yields the counter register.

        The trip count is computed once on entry; the body must not write the counter.
        """
        if stop is None:
            start, stop = 0, start
        v = self._dst(var)
        self.emit(Loop(v, _operand(start, "loop start"), _operand(stop, "loop stop"), _operand(step, "loop step")))
        self._open.append(("loop", len(self.instructions) - 1))
        try:
            yield v
        finally:
            self._close("loop")
            self.emit(EndLoop())

    @contextmanager
    def if_(self, cond: Any) -> Iterator[None]:
        """`with p.if_(cond):` runs the block when cond != 0. May be followed by `with p.else_():`."""
        self.emit(If(_operand(cond, "if condition")))
        self._open.append(("if", len(self.instructions) - 1))
        try:
            yield
        finally:
            self._close("if")
            self.emit(EndIf())

    @contextmanager
    def else_(self) -> Iterator[None]:
        """The else block of the `if_` block that was just closed."""
        if not self.instructions or not isinstance(self.instructions[-1], EndIf):
            raise ProgramError("else_() must directly follow an if_() block")
        depth = 0
        for instr in reversed(self.instructions[:-1]):
            if isinstance(instr, EndIf):
                depth += 1
            elif isinstance(instr, If):
                if depth == 0:
                    break
                depth -= 1
            elif isinstance(instr, Else) and depth == 0:
                raise ProgramError("this if_() block already has an else_()")
        self.instructions[-1] = Else()
        self._rev += 1
        self._open.append(("else", len(self.instructions) - 1))
        try:
            yield
        finally:
            self._close("else")
            self.emit(EndIf())

    def _close(self, kind: str) -> None:
        if not self._open or self._open[-1][0] != kind:
            raise ProgramError(f"unbalanced blocks: closing {kind} while {self._open[-1:] or 'nothing'} is open")
        self._open.pop()

    # synchronisation ----------------------------------------------------

    def set_flag(self, src: str, dst: str, event: Any) -> None:
        self.emit(SetFlag(src, dst, _operand(event, "event id")))

    def wait_flag(self, src: str, dst: str, event: Any) -> None:
        self.emit(WaitFlag(src, dst, _operand(event, "event id")))

    def pipe_barrier(self, pipe: str = "ALL") -> None:
        self.emit(PipeBarrier(pipe))

    def sync_all(self) -> None:
        self.emit(SyncAll())

    def cross_set(self, pipe: str, flag: Any, mode: Any = "group") -> None:
        """Cross-core flag `flag` (0..cross_flag_ids-1), set once pipe `pipe`'s earlier work is done.

        mode "all" (0): for every core of this type in the launch; "group_aivs" (1): for the AIVs of
        this core's group; "group" (2): between the AIC and the AIVs of this core's group."""
        self.emit(CrossSet(isa.cross_mode(mode), _operand(flag, "cross-core flag id"), pipe))

    def cross_wait(self, flag: Any, mode: Any = "group") -> None:
        """The scalar unit waits until every core this one listens to in `mode` made its matching cross_set:
        "all": every core of this type; "group_aivs": both AIVs of the group; "group": an AIV waits for its
        AIC, an AIC for each of its AIVs."""
        self.emit(CrossWait(isa.cross_mode(mode), _operand(flag, "cross-core flag id")))

    # data moves -----------------------------------------------------------

    def copy(self, dst: Mem, src: Mem, dtype: Any, burst: Any, nburst: Any = 1, src_stride: Any = None,
             dst_stride: Any = None, pad: bool = False, pad_value: float = 0.0, atomic: Optional[str] = None) -> None:
        """GM->UB, UB->GM or GM->L1: `nburst` bursts of `burst` elements (strides: elements between starts).

        atomic ("add", "max", "min"; UB->GM only): combine with what GM holds instead of overwriting."""
        self.emit(Copy(
            dst, src, isa.normalize_dtype(dtype), _operand(burst, "burst"), _operand(nburst, "nburst"),
            None if src_stride is None else _operand(src_stride, "src_stride"),
            None if dst_stride is None else _operand(dst_stride, "dst_stride"),
            bool(pad), float(pad_value), atomic,
        ))

    def copy_nd2nz(self, dst: Mem, src: Mem, dtype: Any, rows: Any, cols: Any, src_row_stride: Any = None) -> None:
        self.emit(CopyNd2Nz(
            dst, src, isa.normalize_dtype(dtype), _operand(rows, "rows"), _operand(cols, "cols"),
            None if src_row_stride is None else _operand(src_row_stride, "src_row_stride"),
        ))

    def load_l0(self, dst: Mem, src: Mem, dtype: Any, rows: Any, cols: Any, transpose: bool = False) -> None:
        self.emit(LoadL0(dst, src, isa.normalize_dtype(dtype), _operand(rows, "rows"), _operand(cols, "cols"),
                         bool(transpose)))

    def load_l0_2d(self, dst: Mem, src: Mem, dtype: Any, start: Any, repeat: Any, src_stride: Any = 1,
                   dst_gap: Any = 0, transpose: bool = False) -> None:
        """`repeat` fractals from L1 fractal `start` on (`src_stride` apart) into L0A / L0B (LoadData2D)."""
        self.emit(LoadL0Fractals(dst, src, isa.normalize_dtype(dtype), _operand(start, "start"),
                                 _operand(repeat, "repeat"), _operand(src_stride, "src_stride"),
                                 _operand(dst_gap, "dst_gap"), bool(transpose)))

    def load3d(self, dst: Mem, src: Mem, dtype: Any, c1: Any, h: Any, w: Any, kh: int, kw: int,
               stride: Sequence[int] = (1, 1), pad: Sequence[int] = (0, 0, 0, 0), dilation: Sequence[int] = (1, 1),
               m_start: Any = 0, m_len: Any = None, k_start: Any = 0, k_len: Any = None) -> None:
        """img2col of an NC1HWC0 feature map in L1 straight into L0A (as A) or L0B (as A^T) (LoadData3D)."""
        self.emit(Load3D(dst, src, isa.normalize_dtype(dtype), _operand(c1, "c1"), _operand(h, "h"),
                         _operand(w, "w"), kh, kw, tuple(stride), tuple(pad), tuple(dilation),
                         _operand(m_start, "m_start"), None if m_len is None else _operand(m_len, "m_len"),
                         _operand(k_start, "k_start"), None if k_len is None else _operand(k_len, "k_len")))

    def load_bias(self, dst: Mem, src: Mem, count: Any) -> None:
        self.emit(LoadBias(dst, src, _operand(count, "count")))

    def mmad(self, dst: Mem, a: Mem, b: Mem, m: Any, k: Any, n: Any, dtype: Any, accumulate: Any = 0,
             bias: Optional[Mem] = None) -> None:
        self.emit(Mmad(dst, a, b, _operand(m, "m"), _operand(k, "k"), _operand(n, "n"),
                       isa.normalize_dtype(dtype), _operand(accumulate, "accumulate"), bias))

    def fixpipe(self, dst: Mem, src: Mem, m: Any, n: Any, dst_dtype: Any, src_dtype: Any = "float32",
                relu: bool = False, dst_row_stride: Any = None, scale: Any = None, scale_l1: Optional[Mem] = None,
                nz: bool = False, atomic: Optional[str] = None) -> None:
        """L0C -> GM with optional quantisation (scale: a number; scale_l1: n per-channel float32 scales in
        L1), ReLU, cast, NZ output (`nz`) and atomic accumulation (`atomic="add"` / "max" / "min")."""
        self.emit(FixPipe(dst, src, _operand(m, "m"), _operand(n, "n"), isa.normalize_dtype(dst_dtype),
                          isa.normalize_dtype(src_dtype), bool(relu),
                          None if dst_row_stride is None else _operand(dst_row_stride, "dst_row_stride"),
                          None if scale is None else _scalar(scale, "scale"), scale_l1, bool(nz), atomic))

    # vector unit ------------------------------------------------------------

    def vbinary(self, fn: str, dst: Mem, a: Mem, b: Mem, count: Any, dtype: Any,
                rep: Optional[VRepeat] = None) -> None:
        """dst = fn(a, b) over `count` elements, or over the repeats, strides and mask of `rep` (count None)."""
        self.emit(VBinary(fn, dst, a, b, _count(count), isa.normalize_dtype(dtype), rep))

    def vscalar(self, fn: str, dst: Mem, src: Mem, scalar: Any, count: Any, dtype: Any, reverse: bool = False,
                rep: Optional[VRepeat] = None) -> None:
        self.emit(VScalar(fn, dst, src, _scalar(scalar, "scalar"), _count(count), isa.normalize_dtype(dtype),
                          bool(reverse), rep))

    def vunary(self, fn: str, dst: Mem, src: Mem, count: Any, dtype: Any, rep: Optional[VRepeat] = None) -> None:
        self.emit(VUnary(fn, dst, src, _count(count), isa.normalize_dtype(dtype), rep))

    def vcompare(self, fn: str, dst: Mem, a: Mem, b: Any, count: Any, dtype: Any) -> None:
        bb = b if isinstance(b, Mem) else _scalar(b, "compare operand")
        self.emit(VCompare(fn, dst, a, bb, _operand(count, "count"), isa.normalize_dtype(dtype)))

    def vselect(self, dst: Mem, mask: Mem, a: Any, b: Any, count: Any, dtype: Any) -> None:
        aa = a if isinstance(a, Mem) else _scalar(a, "select operand a")
        bb = b if isinstance(b, Mem) else _scalar(b, "select operand b")
        self.emit(VSelect(dst, mask, aa, bb, _operand(count, "count"), isa.normalize_dtype(dtype)))

    def vcast(self, dst: Mem, src: Mem, count: Any, src_dtype: Any, dst_dtype: Any, round: str = "trunc") -> None:
        self.emit(VCast(dst, src, _operand(count, "count"), isa.normalize_dtype(src_dtype),
                        isa.normalize_dtype(dst_dtype), round))

    def vdup(self, dst: Mem, value: Any, count: Any, dtype: Any, rep: Optional[VRepeat] = None) -> None:
        self.emit(VDup(dst, _scalar(value, "value"), _count(count), isa.normalize_dtype(dtype), rep))

    def vcopy(self, dst: Mem, src: Mem, count: Any, dtype: Any, rep: Optional[VRepeat] = None) -> None:
        self.emit(VCopy(dst, src, _count(count), isa.normalize_dtype(dtype), rep))

    def vgather(self, dst: Mem, src: Mem, offsets: Mem, count: Any, dtype: Any) -> None:
        """dst[i] = UB[src + offsets[i]] (offsets: int32 byte offsets in UB) for i < count."""
        self.emit(VGather(dst, src, offsets, _operand(count, "count"), isa.normalize_dtype(dtype)))

    def vreduce(self, fn: str, dst: Mem, src: Mem, rows: Any, cols: Any, dtype: Any,
                src_row_stride: Any = None) -> None:
        self.emit(VReduce(fn, dst, src, _operand(rows, "rows"), _operand(cols, "cols"), isa.normalize_dtype(dtype),
                          None if src_row_stride is None else _operand(src_row_stride, "src_row_stride")))

    def vbroadcast(self, dst: Mem, src: Mem, rows: Any, cols: Any, dtype: Any, axis: int = 1,
                   dst_row_stride: Any = None) -> None:
        self.emit(VBroadcast(dst, src, _operand(rows, "rows"), _operand(cols, "cols"), isa.normalize_dtype(dtype),
                             axis, None if dst_row_stride is None else _operand(dst_row_stride, "dst_row_stride")))

    def vtranspose(self, dst: Mem, src: Mem, rows: Any, cols: Any, dtype: Any, src_row_stride: Any = None,
                   dst_row_stride: Any = None) -> None:
        """dst[c, r] = src[r, c]: a rows x cols block becomes cols x rows (row strides whole 32-byte blocks)."""
        self.emit(VTranspose(dst, src, _operand(rows, "rows"), _operand(cols, "cols"), isa.normalize_dtype(dtype),
                             None if src_row_stride is None else _operand(src_row_stride, "src_row_stride"),
                             None if dst_row_stride is None else _operand(dst_row_stride, "dst_row_stride")))

    # ------------------------------------------------------------------ inspection

    def __len__(self) -> int:
        return len(self.instructions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Program):
            return NotImplemented
        return (self.name, self.core_type, self.params, self.tiling_fields, self.instructions) == (
            other.name, other.core_type, other.params, other.tiling_fields, other.instructions)

    __hash__ = None  # mutable builder

    def with_instructions(self, instructions: Sequence[Instr]) -> "Program":
        """A validated copy of this program with another instruction list (same name, params, tiling)."""
        p = Program(self.name, self.core_type, self.params, self.tiling_fields)
        for instr in instructions:
            p.emit(instr)
        p.validate()
        return p

    def validate(self) -> Structure:
        """Check block structure and register use; returns the matching block indices."""
        if self._open:
            raise ProgramError(f"program {self.name!r} has unclosed blocks: {', '.join(k for k, _ in self._open)}")
        rev = self.revision()
        if self._structure is not None and self._structure[0] == rev:
            return self._structure[1]
        st = self._check_structure()
        self._structure = (rev, st)
        return st

    def _check_structure(self) -> Structure:
        match: dict[int, int] = {}
        else_of: dict[int, int] = {}
        depth: list[int] = []
        stack: list[tuple[str, int]] = []
        written: set[str] = set()
        loop_vars: list[str] = []
        for i, instr in enumerate(self.instructions):
            where = f"program {self.name!r} instruction #{i} ({instr.text()})"
            if isinstance(instr, (EndLoop, Else, EndIf)):
                if not stack:
                    raise ProgramError(f"{where}: no open block to close")
                kind, j = stack[-1]
                if isinstance(instr, EndLoop):
                    if kind != "loop":
                        raise ProgramError(f"{where}: end_loop closes an {kind} block opened at #{j}")
                    stack.pop()
                    loop_vars.pop()
                    match[j], match[i] = i, j
                elif isinstance(instr, Else):
                    if kind != "if":
                        raise ProgramError(f"{where}: else without a matching if (open block: {kind} at #{j})")
                    stack[-1] = ("else", j)
                    else_of[j] = i
                else:
                    if kind not in ("if", "else"):
                        raise ProgramError(f"{where}: end_if closes a {kind} block opened at #{j}")
                    stack.pop()
                    match[j] = i
                    if j in else_of:
                        match[else_of[j]] = i
            depth.append(len(stack))
            for r in instr.regs_read():
                if r.name not in written:
                    raise ProgramError(f"{where}: reads register {r.name} before any instruction writes it")
            for r in instr.regs_written():
                if r.name in loop_vars:
                    raise ProgramError(f"{where}: writes loop counter {r.name} inside its loop")
                written.add(r.name)
            if isinstance(instr, Tiling) and instr.field not in self.tiling_fields:
                raise ProgramError(f"{where}: tiling field {instr.field!r} is not declared")
            for m in instr.mems():
                if m.space == "GM" and m.arg not in self.params:
                    raise ProgramError(f"{where}: GM argument {m.arg!r} is not a declared parameter")
            if isinstance(instr, Loop):
                stack.append(("loop", i))
                loop_vars.append(instr.var.name)
            elif isinstance(instr, If):
                stack.append(("if", i))
        if stack:
            kind, j = stack[-1]
            raise ProgramError(f"program {self.name!r}: {kind} block opened at #{j} is never closed")
        return Structure(match, else_of, tuple(depth))

    def listing(self) -> str:
        """A readable listing: one numbered line per instruction, with its pipe, indented by block."""
        st = self.validate() if not self._open else None
        head = (f"program {self.name} ({self.core_type})  params: {', '.join(self.params) or '-'}  "
                f"tiling: {', '.join(self.tiling_fields) or '-'}  [{len(self.instructions)} instructions]")
        lines = [head]
        width = len(str(max(len(self.instructions) - 1, 0)))
        for i, instr in enumerate(self.instructions):
            d = st.depth[i] if st else 0
            if isinstance(instr, (Else,)):
                d -= 1
            lines.append(f"  {i:>{width}}  {instr.pipe:<4}  {'  ' * d}{instr.text()}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.listing()

    def __repr__(self) -> str:
        return f"Program({self.name!r}, core_type={self.core_type!r}, {len(self.instructions)} instructions)"

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict:
        self.validate()
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "name": self.name,
            "core_type": self.core_type,
            "params": list(self.params),
            "tiling": list(self.tiling_fields),
            "instructions": [_encode_instr(i) for i in self.instructions],
        }

    def to_json(self, indent: Optional[int] = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict) -> "Program":
        if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
            raise ProgramError(f"not a {JSON_FORMAT} document (missing or wrong 'format')")
        if data.get("version") != JSON_VERSION:
            raise ProgramError(f"unsupported {JSON_FORMAT} version {data.get('version')!r}; expected {JSON_VERSION}")
        try:
            p = cls(data["name"], data["core_type"], data.get("params", ()), data.get("tiling", ()))
            instrs = data["instructions"]
        except KeyError as e:
            raise ProgramError(f"program document lacks field {e.args[0]!r}") from None
        for k, d in enumerate(instrs):
            p.emit(_decode_instr(d, k))
        p.validate()
        return p

    @classmethod
    def from_json(cls, text: str) -> "Program":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ProgramError(f"program JSON does not parse: {e}") from None
        return cls.from_dict(data)


def _encode(v: Any) -> Any:
    if isinstance(v, Reg):
        return {"reg": v.name}
    if isinstance(v, VRepeat):
        return {"vrepeat": {"repeats": _encode(v.repeats), "dst": list(v.dst), "srcs": [list(x) for x in v.srcs],
                            "mask": v.mask}}
    if isinstance(v, Mem):
        d = {"space": v.space, "offset": _encode(v.offset)}
        if v.arg is not None:
            d["arg"] = v.arg
        return d
    if isinstance(v, float) and not math.isfinite(v):
        return {"float": repr(v)}
    return v


def _decode(v: Any) -> Any:
    if isinstance(v, dict):
        if set(v) == {"reg"}:
            return Reg(v["reg"])
        if "space" in v:
            return Mem(v["space"], _decode(v.get("offset", 0)), v.get("arg"))
        if set(v) == {"float"}:
            return float(v["float"])
        if set(v) == {"vrepeat"}:
            r = v["vrepeat"]
            return VRepeat(_decode(r["repeats"]), tuple(r["dst"]), tuple(tuple(x) for x in r["srcs"]), r["mask"])
        raise ProgramError(f"cannot decode operand {v!r}")
    return v


def _encode_instr(instr: Instr) -> dict:
    d: dict[str, Any] = {"op": instr.OP}
    for f in fields(instr):
        d[f.name] = _encode(getattr(instr, f.name))
    return d


def _decode_instr(d: Any, k: int) -> Instr:
    if not isinstance(d, dict) or "op" not in d:
        raise ProgramError(f"instruction #{k} is not an object with an 'op': {d!r}")
    cls = isa.INSTRUCTIONS.get(d["op"])
    if cls is None:
        raise ProgramError(f"instruction #{k}: unknown op {d['op']!r}")
    names = {f.name for f in fields(cls)}
    extra = set(d) - names - {"op"}
    if extra:
        raise ProgramError(f"instruction #{k} ({d['op']}): unknown field(s) {', '.join(sorted(extra))}")
    try:
        return cls(**{n: _decode(v) for n, v in d.items() if n != "op"})
    except TypeError as e:
        raise ProgramError(f"instruction #{k} ({d['op']}): {e}") from None


ProgramLike = Union[Program, str, dict]
