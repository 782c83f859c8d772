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
import inspect
from dataclasses import MISSING, dataclass, fields
from typing import Any, Iterator, Optional, Sequence, Union

from . import isa
from .errors import ProgramError
from .isa.build import as_operand, as_scalar
from .isa import (
    Alu, CoreIdx, CoreNum, CrossSet, CrossWait, Cvt, Else, EndIf, EndLoop, FAlu, GroupIdx, If, Instr, Loop, Mem, Mov,
    PipeBarrier, Reg, ScalarLoad, ScalarStore, SetFlag, SubIdx, SyncAll, Tiling, VRepeat, WaitFlag,
)

JSON_FORMAT = "simulator-program"
JSON_VERSION = 1


@dataclass(frozen=True)
class Structure:
    """Matching block indices computed by validation: loop<->end_loop, if->else/end_if."""

    match: dict[int, int]        # loop -> end_loop, end_loop -> loop, if -> end_if, else -> end_if
    else_of: dict[int, int]      # if -> else (only when there is an else)
    depth: tuple[int, ...]       # block nesting depth of each instruction (for the listing)


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
        return Mem("GM", as_operand(offset, "GM offset"), arg)

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
        self.emit(Mov(d, as_operand(src, "mov source")))
        return d

    def alu(self, fn: str, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        """dst = fn(a, b); fn in isa.ALU_FNS (add sub mul div mod cdiv min max shl shr and or xor lt le gt ge eq ne)."""
        d = self._dst(dst)
        self.emit(Alu(fn, d, as_operand(a, f"{fn} operand"), as_operand(b, f"{fn} operand")))
        return d

    def add(self, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        return self.alu("add", a, b, dst)

    def falu(self, fn: str, a: Any, b: Any, dst: Optional[Reg] = None) -> Reg:
        """dst = fn(a, b) on float registers or immediates (fn in isa.FALU_FNS; div is true division)."""
        d = self._dst(dst)
        self.emit(FAlu(fn, d, as_scalar(a, f"f{fn} operand"), as_scalar(b, f"f{fn} operand")))
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
        self.emit(ScalarStore(dst, as_scalar(value, "stored value"), isa.normalize_dtype(dtype)))

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
        self.emit(Loop(v, as_operand(start, "loop start"), as_operand(stop, "loop stop"), as_operand(step, "loop step")))
        self._open.append(("loop", len(self.instructions) - 1))
        try:
            yield v
        finally:
            self._close("loop")
            self.emit(EndLoop())

    @contextmanager
    def if_(self, cond: Any) -> Iterator[None]:
        """`with p.if_(cond):` runs the block when cond != 0. May be followed by `with p.else_():`."""
        self.emit(If(as_operand(cond, "if condition")))
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
        self.emit(SetFlag(src, dst, as_operand(event, "event id")))

    def wait_flag(self, src: str, dst: str, event: Any) -> None:
        self.emit(WaitFlag(src, dst, as_operand(event, "event id")))

    def pipe_barrier(self, pipe: str = "ALL") -> None:
        self.emit(PipeBarrier(pipe))

    def sync_all(self) -> None:
        self.emit(SyncAll())

    def cross_set(self, pipe: str, flag: Any, mode: Any = "group") -> None:
        """Cross-core flag `flag` (0..cross_flag_ids-1), set once pipe `pipe`'s earlier work is done.

        mode "all" (0): for every core of this type in the launch; "group_aivs" (1): for the AIVs of
        this core's group; "group" (2): between the AIC and the AIVs of this core's group."""
        self.emit(CrossSet(isa.cross_mode(mode), as_operand(flag, "cross-core flag id"), pipe))

    def cross_wait(self, flag: Any, mode: Any = "group") -> None:
        """The scalar unit waits until every core this one listens to in `mode` made its matching cross_set:
        "all": every core of this type; "group_aivs": both AIVs of the group; "group": an AIV waits for its
        AIC, an AIC for each of its AIVs."""
        self.emit(CrossWait(isa.cross_mode(mode), as_operand(flag, "cross-core flag id")))

    # pipe work: data moves, the cube, the vector unit ------------------------

    def instr(self, op: str, *args: Any, **kwargs: Any) -> None:
        """Append instruction `op` (a name in `isa.INSTRUCTIONS`) from its operands, positional in the
        instruction's field order or by name, each normalised by its field's type (isa.make). Every pipe
        instruction also has a builder method of its own name (`p.copy(...)`, `p.vadd`...), made from this."""
        cls = isa.INSTRUCTIONS.get(op)
        if cls is None:
            raise ProgramError(f"unknown instruction {op!r}; known: {', '.join(sorted(isa.INSTRUCTIONS))}")
        self.emit(isa.make(cls, *args, **kwargs))

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
            if isinstance(instr, (EndLoop, Else, EndIf)):
                if not stack:
                    raise ProgramError(f"{_where(self.name, i, instr)}: no open block to close")
                kind, j = stack[-1]
                if isinstance(instr, EndLoop):
                    if kind != "loop":
                        raise ProgramError(f"{_where(self.name, i, instr)}: end_loop closes an {kind} block opened at #{j}")
                    stack.pop()
                    loop_vars.pop()
                    match[j], match[i] = i, j
                elif isinstance(instr, Else):
                    if kind != "if":
                        raise ProgramError(f"{_where(self.name, i, instr)}: else without a matching if (open block: {kind} at #{j})")
                    stack[-1] = ("else", j)
                    else_of[j] = i
                else:
                    if kind not in ("if", "else"):
                        raise ProgramError(f"{_where(self.name, i, instr)}: end_if closes a {kind} block opened at #{j}")
                    stack.pop()
                    match[j] = i
                    if j in else_of:
                        match[else_of[j]] = i
            depth.append(len(stack))
            for r in instr.regs_read():
                if r.name not in written:
                    raise ProgramError(f"{_where(self.name, i, instr)}: reads register {r.name} before any instruction writes it")
            for r in instr.regs_written():
                if r.name in loop_vars:
                    raise ProgramError(f"{_where(self.name, i, instr)}: writes loop counter {r.name} inside its loop")
                written.add(r.name)
            if isinstance(instr, Tiling) and instr.field not in self.tiling_fields:
                raise ProgramError(f"{_where(self.name, i, instr)}: tiling field {instr.field!r} is not declared")
            for m in instr.mems():
                if m.space == "GM" and m.arg not in self.params:
                    raise ProgramError(f"{_where(self.name, i, instr)}: GM argument {m.arg!r} is not a declared parameter")
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


def _builder(cls: type) -> Any:
    """The builder method of a pipe instruction: its operands are the instruction's fields (isa.make)."""
    def build(self: Program, *args: Any, **kwargs: Any) -> None:
        self.emit(isa.make(cls, *args, **kwargs))

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                 default=inspect.Parameter.empty if f.default is MISSING else f.default)
               for f in fields(cls)]
    build.__name__ = build.__qualname__ = cls.OP
    build.__doc__ = cls.__doc__
    build.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return build


for _cls in isa.INSTRUCTIONS.values():
    if _cls.SPEC.is_pipe_work():
        setattr(Program, _cls.OP, _builder(_cls))


def _where(program: str, i: int, instr: Any) -> str:
    """Where a structure error is, for its message (formatting every instruction up front costs more than the
    checks themselves)."""
    return f"program {program!r} instruction #{i} ({instr.text()})"
