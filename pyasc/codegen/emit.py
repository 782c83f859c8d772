"""Emission: a tile schedule plus its sync plan becomes a `simulator.Program`.

- buffers get their base address in their space (`layout_buffers`), slot k
  of a buffer is at base + k * slot_bytes;
- integer expressions become scalar instructions: each distinct expression
  is computed once per scope, and before a loop every sub-expression that
  does not depend on the loop's variable is computed outside it (so a loop
  body holds only the address arithmetic that changes per iteration);
- a vector instruction over more than the chip's repeat limit is split into
  several (static sizes) or a loop of chunks (sizes known at launch), so a
  schedule never has to know the limit;
- the sync plan's flags go before and after the statements it names;
- every GM parameter gets a tiling field `b_<param>`, its byte offset inside the buffer the launch binds it
  to, added to each of its addresses (the workspace holds many values).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .. import symbolic as sy
from ..symbolic import Expr, IntLike
from ..target import Chip, Mem, Program, Reg, VRepeat, itemsize, repeats
from .cross_sync import CrossKind, CrossOp, SideCross
from .launch import base_field
from .scalar_exprs import scalar_table
from .schedule import BLOCKS, CORE, GROUP, SUB, GmRef, Let, Loop, Ref, Stmt, TileOp, TileSchedule, When
from .sync import SyncKind, SyncOp, SyncPlan


class CapacityError(Exception):
    """The schedule's buffers do not fit a memory of the chip (the tiler rejects the candidate)."""


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def layout_buffers(schedule: TileSchedule, chip: Chip) -> dict[str, int]:
    """Base byte address of every buffer, packed per space in declaration order; raises CapacityError."""
    used: dict[str, int] = {}
    bases: dict[str, int] = {}
    for b in schedule.buffers:
        align = chip.space_align(b.space)
        if b.slot_bytes % align:
            raise CapacityError(f"buffer {b.name}: slot of {b.slot_bytes} B is not a multiple of the {b.space} "
                                f"alignment ({align} B)")
        base = _align(used.get(b.space, 0), align)
        bases[b.name] = base
        used[b.space] = base + b.nbytes
    for space, n in used.items():
        cap = chip.space_bytes(space)
        if n > cap:
            raise CapacityError(f"buffers need {n} B of {space}, the chip has {cap} B")
    return bases


def space_usage(schedule: TileSchedule, chip: Chip) -> dict[str, int]:
    """Bytes of each space the schedule's buffers occupy (after alignment)."""
    bases = layout_buffers(schedule, chip)
    out: dict[str, int] = {}
    for b in schedule.buffers:
        out[b.space] = max(out.get(b.space, 0), bases[b.name] + b.nbytes)
    return out


class Emitter:
    def __init__(self, schedule: TileSchedule, plan: SyncPlan, chip: Chip, cross: SideCross | None = None):
        self.s = schedule
        self.plan = plan
        self.cross = cross or SideCross()   # a mixed launch side's cross-core flags
        self.chip = chip
        self.bases = layout_buffers(schedule, chip)
        self.buffers = {b.name: b for b in schedule.buffers}
        self.p = Program(schedule.name, schedule.core_type, [g.name for g in schedule.params],
                         list(schedule.fields))
        # integer expressions become scalar instructions, each computed once per scope (symbolic.Renderer);
        # `defined`: the symbols each open scope binds (what hoisting may compute before a loop)
        self.render = sy.Renderer(scalar_table(self.p), const=lambda n: n, symbol=self._unbound)
        self.defined: list[set[str]] = []
        # a field whose value is known when compiling (static shapes) is folded into the program
        self.static = {f: v for f, v in schedule.fields.items() if isinstance(v, int)}
        self._folded: dict[Expr, IntLike] = {}

    def fold(self, e: IntLike) -> IntLike:
        if isinstance(e, int) or not self.static:
            return e
        out = self._folded.get(e)
        if out is None:
            out = self._folded[e] = sy.substitute(e, self.static)
        return out

    def fold_args(self, args: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for k, v in args.items():
            if isinstance(v, Expr):
                v = self.fold(v)
            elif isinstance(v, Ref):
                v = Ref(v.buffer, self.fold(v.slot), self.fold(v.offset))
            elif isinstance(v, GmRef):
                v = GmRef(v.param, self.fold(v.offset))
            out[k] = v
        return out

    # ---- expressions ----------------------------------------------------------------------
    def value(self, e: IntLike) -> int | Reg:
        """An operand for `e`: the int itself, or a register holding it."""
        if isinstance(e, int):
            return e
        e = self.fold(e)
        if isinstance(e, int):
            return e
        return self.render(e)

    def _unbound(self, name: str) -> Reg:
        raise KeyError(f"schedule {self.s.name!r} uses symbol {name} outside the scope that defines it")

    @contextmanager
    def scope(self, var: str | None = None, reg: Reg | None = None) -> Iterator[None]:
        """A block's scope (binding `var` to `reg`, a loop variable): what it computes is not reused after it."""
        self.render.push()
        self.defined.append({var} if var else set())
        if var is not None:
            self.render.bind(sy.sym(var), reg)
        try:
            yield
        finally:
            self.render.pop()
            self.defined.pop()

    def _hoist(self, stmts: Sequence[Stmt]) -> None:
        """Compute now every loop-invariant sub-expression the statements use (up to the first Let, whose
        name later expressions may use)."""
        defined = set().union(*self.defined)
        for e in _exprs(stmts, self._addr):
            self._hoist_expr(e, defined)

    def _hoist_expr(self, e: IntLike, defined: set[str]) -> None:
        if isinstance(e, int):
            return
        if sy.free_symbols(e) <= defined:
            self.value(e)
        elif e.op != "sym":
            for a in e.args:
                self._hoist_expr(a, defined)

    # ---- operands ---------------------------------------------------------------------------
    def _addr(self, ref: Ref | GmRef) -> IntLike:
        """The byte address of an on-chip operand, or the offset of a GM one inside its buffer (the
        expressions hoisting and emission share)."""
        if isinstance(ref, GmRef):
            return sy.add(sy.sym(base_field(ref.param)), ref.offset)
        return sy.add(self.bases[ref.buffer], sy.mul(ref.slot, self.buffers[ref.buffer].slot_bytes), ref.offset)

    def mem(self, ref: Ref) -> Mem:
        return Mem(self.buffers[ref.buffer].space, self.value(self._addr(ref)))

    def operand(self, v: Any) -> Any:
        if isinstance(v, Ref):
            return self.mem(v)
        if isinstance(v, GmRef):
            return self.p.gm(v.param, self.value(self._addr(v)))
        if isinstance(v, Expr):
            return self.value(v)
        if isinstance(v, (bool, np.bool_)):
            return int(v)  # a bool constant (`mask[0] = False`): the byte the instruction writes
        return v

    # ---- statements ------------------------------------------------------------------------
    def run(self) -> Program:
        p = self.p
        bases = [base_field(g.name) for g in self.s.params]
        self.defined.append({CORE, BLOCKS, *self.s.fields, *bases})
        self.render.bind(sy.sym(CORE), p.core_idx())
        self.render.bind(sy.sym(BLOCKS), p.core_num())
        if self.cross.before or self.cross.after:  # a side of a mixed launch knows its group
            self.defined[-1] |= {GROUP, SUB}
            self.render.bind(sy.sym(GROUP), p.group_idx())
            self.render.bind(sy.sym(SUB), p.sub_idx())
        for f in [*self.s.fields, *bases]:
            self.render.bind(sy.sym(f), p.tiling(f))
        self.block(self.s.body)
        p.validate()
        return p

    def block(self, stmts: Sequence[Stmt]) -> None:
        for s in stmts:
            for x in self.cross.before.get(id(s), ()):
                self.cross_op(x)
            for op in self.plan.before.get(id(s), ()):
                self.sync(op)
            if isinstance(s, Loop):
                self.loop(s)
            elif isinstance(s, Let):
                self.let(s)
            elif isinstance(s, When):
                self._hoist(s.body)
                cond = self.value(s.cond)
                with self.p.if_(cond), self.scope():
                    self.block(s.body)
            else:
                self.op(s)
            for op in self.plan.after.get(id(s), ()):
                self.sync(op)
            for x in self.cross.after.get(id(s), ()):
                self.cross_op(x)

    def let(self, s: Let) -> None:
        v = self.value(s.value)
        reg = v if isinstance(v, Reg) else self.p.mov(v)
        self.render.bind(sy.sym(s.var), reg)
        self.defined[-1].add(s.var)

    def loop(self, lp: Loop) -> None:
        self._hoist([lp])
        start, stop, step = (self.value(x) for x in (lp.start, lp.stop, lp.step))
        with self.p.loop(start, stop, step) as var, self.scope(lp.var, var):
            self._hoist(lp.body)
            self.block(lp.body)

    def cross_op(self, op: CrossOp) -> None:
        if op.kind is CrossKind.SET:
            self.p.cross_set(op.pipe, op.flag, "group")
        else:
            self.p.cross_wait(op.flag, "group")

    def sync(self, op: SyncOp) -> None:
        if op.when is not None:
            cond = op.when
            with self.p.if_(self.value(cond)), self.scope():
                self.sync(SyncOp(op.kind, op.src, op.dst, op.event))
            return
        if op.kind is SyncKind.BARRIER:
            self.p.pipe_barrier("ALL")
        elif op.kind is SyncKind.SET:
            self.p.set_flag(op.src, op.dst, self.value(op.event))
        else:
            self.p.wait_flag(op.src, op.dst, self.value(op.event))

    def op(self, t: TileOp) -> None:
        t = replace(t, args=self.fold_args(t.args))
        shape = t.spec.shape  # vector work over more than the repeat limit is split by its shape
        if "rep_strides" in t.args:
            self._call_repeated(t)
        elif shape == "elementwise":
            self._split_elementwise(t)
        elif shape == "rows":
            self._split_rows(t)
        elif shape == "transpose":
            self._split_transpose(t)
        else:
            self._call(t.instr, t.args)

    def _call(self, instr: str, args: dict[str, Any]) -> None:
        self.p.instr(instr, **{k: self.operand(v) for k, v in args.items()})

    def _call_repeated(self, t: TileOp) -> None:
        """An elementwise instruction in the hardware's repeat addressing (`tileops.vrepeated`): `rep_count`
        repeats at the (block stride, repeat stride) pairs `rep_strides` (destination first), `rep_mask` the
        elements of each repeat computed; `count` only sizes the work for the cost model."""
        a = dict(t.args)
        reps, strides, mask = a.pop("rep_count"), a.pop("rep_strides"), a.pop("rep_mask")
        a["count"], a["rep"] = None, VRepeat(self.value(reps), strides[0], strides[1:], mask)
        self._call(t.instr, a)

    # ---- the repeat limit -------------------------------------------------------------------
    def _max_elems(self, t: TileOp) -> int:
        """Elements one instruction may cover: the repeat limit over its widest operand."""
        sizes = _operand_sizes(t).values()
        return self.chip.max_repeats * self.chip.vector_repeat_bytes // max(sizes)

    def _split_elementwise(self, t: TileOp) -> None:
        limit = self._max_elems(t)
        count = t.args["count"]
        bound = count if isinstance(count, int) else self._bound(t)
        if bound <= limit:
            self._call(t.instr, t.args)
            return
        sizes = _operand_sizes(t)
        if isinstance(count, int):
            for start in range(0, count, limit):
                self._call(t.instr, _shift(t.args, sizes, start, min(limit, count - start)))
            return
        chunks = sy.ceildiv(count, limit)
        var = f"_split{id(t)}"
        j = sy.sym(var)
        with self.p.loop(self.value(chunks)) as reg, self.scope(var, reg):
            start = sy.mul(j, limit)
            self._call(t.instr, _shift(t.args, sizes, start, sy.min_(limit, sy.add(count, sy.mul(-1, start)))))

    def _bound(self, t: TileOp) -> int:
        """An upper bound of a symbolic element count: what the destination slot can hold."""
        b = self.buffers[t.args["dst"].buffer]
        return b.slot_bytes // _operand_sizes(t)["dst"]

    def _split_rows(self, t: TileOp) -> None:
        a = t.args
        cols, rows = a["cols"], a["rows"]
        size = itemsize(a["dtype"])
        stride_key = f"{_rows_operand(t)}_row_stride"
        if not isinstance(cols, int):
            self._split_rows_at_launch(t, size, a.get(stride_key) if a.get(stride_key) is not None else cols)
            return
        per_row = repeats(cols * size, self.chip.vector_repeat_bytes)
        rows_per = self._rows_per_instruction(per_row, size)
        if not isinstance(rows, int) or rows <= rows_per:
            if isinstance(rows, int) or rows_per >= self._row_bound(t):
                self._call(t.instr, a)
                return
        stride = a.get(stride_key) if a.get(stride_key) is not None else cols
        if isinstance(rows, int):
            for r0 in range(0, rows, rows_per):
                self._call(t.instr, _shift_rows(t, r0, min(rows_per, rows - r0), stride, size))
            return
        var = f"_rows{id(t)}"
        j = sy.sym(var)
        with self.p.loop(self.value(sy.ceildiv(rows, rows_per))) as reg, self.scope(var, reg):
            r0 = sy.mul(j, rows_per)
            self._call(t.instr, _shift_rows(t, r0, sy.min_(rows_per, sy.add(rows, sy.mul(-1, r0))), stride, size))

    def _split_transpose(self, t: TileOp) -> None:
        """A transpose over more than the repeat limit (the hardware pads both dims to whole blocks) in chunks
        of source rows: chunk k writes destination columns [r0, r0 + n), so r0 stays on a UB block."""
        a = t.args
        size = itemsize(a["dtype"])
        blk = self.chip.transpose_block
        rows, cols = a["rows"], a["cols"]
        pad_cols = sy.align_up(cols, blk)
        limit = self.chip.max_repeats * self.chip.vector_repeat_bytes
        step = max(blk, self.chip.ub_align // size)
        if isinstance(rows, int) and isinstance(cols, int):
            if -(-rows // blk) * blk * pad_cols * size <= limit:
                self._call(t.instr, a)
                return
            rows_per: IntLike = max(step, limit // (pad_cols * size) // step * step)
        else:
            rows_per = sy.max_(step, sy.mul(sy.floordiv(sy.floordiv(limit, sy.mul(pad_cols, size)), step), step))
        src_stride = a.get("src_row_stride") if a.get("src_row_stride") is not None else cols
        dst_stride = a.get("dst_row_stride") if a.get("dst_row_stride") is not None else rows
        var = f"_tr{id(t)}"
        j = sy.sym(var)
        with self.p.loop(self.value(sy.ceildiv(rows, rows_per))) as reg, self.scope(var, reg):
            r0 = sy.mul(j, rows_per)
            chunk = dict(a)
            chunk["rows"] = sy.min_(rows_per, sy.add(rows, sy.mul(-1, r0)))
            chunk["src"] = a["src"].at(sy.mul(sy.mul(r0, src_stride), size))
            chunk["dst"] = a["dst"].at(sy.mul(r0, size))
            chunk["src_row_stride"], chunk["dst_row_stride"] = src_stride, dst_stride
            self._call(t.instr, chunk)

    def _rows_per_instruction(self, per_row: int, size: int) -> int:
        """Rows one instruction may cover: within the repeat limit and, when split, a whole number of UB
        blocks of per-row values (the next chunk's per-row operand starts on a block)."""
        fit = max(1, self.chip.max_repeats // per_row)
        block = self.chip.ub_align // size
        return fit if fit < block else fit // block * block

    def _split_rows_at_launch(self, t: TileOp, size: int, stride: IntLike) -> None:
        """Rows of a length known only at launch: as many rows per instruction as the repeat limit allows,
        computed on the scalar unit."""
        a = t.args
        per_row = sy.ceildiv(sy.mul(a["cols"], size), self.chip.vector_repeat_bytes)
        block = self.chip.ub_align // size
        rows_per = sy.max_(block, sy.mul(sy.floordiv(sy.floordiv(self.chip.max_repeats, per_row), block), block))
        var = f"_rows{id(t)}"
        j = sy.sym(var)
        with self.p.loop(self.value(sy.ceildiv(a["rows"], rows_per))) as reg, self.scope(var, reg):
            r0 = sy.mul(j, rows_per)
            self._call(t.instr, _shift_rows(t, r0, sy.min_(rows_per, sy.add(a["rows"], sy.mul(-1, r0))), stride,
                                            size))

    def _row_bound(self, t: TileOp) -> int:
        b = self.buffers[t.args["dst"].buffer]
        size = itemsize(t.args["dtype"])
        if _rows_operand(t) != "dst":  # the destination holds one value per row
            return b.slot_bytes // size
        stride = t.args.get("dst_row_stride") or t.args["cols"]
        return b.slot_bytes // (size * stride) if isinstance(stride, int) else b.slot_bytes


def _operand_sizes(t: TileOp) -> dict[str, int]:
    """Element size in bytes of each on-chip operand of a vector op (its spec's element type)."""
    return {m.name: itemsize(t.args.get(m.elem, m.elem)) for m in t.spec.mems if isinstance(t.args.get(m.name), Ref)}


def _rows_operand(t: TileOp) -> str:
    """Of a rows x cols instruction, the operand laid out as rows (the other holds a value per row)."""
    return next(m.name for m in t.spec.mems if m.rows)


def _shift(args: dict[str, Any], sizes: dict[str, int], start: IntLike, count: IntLike) -> dict[str, Any]:
    out = dict(args)
    for k, size in sizes.items():
        out[k] = args[k].at(sy.mul(start, size))
    out["count"] = count
    return out


def _shift_rows(t: TileOp, r0: IntLike, rows: IntLike, stride: IntLike, size: int) -> dict[str, Any]:
    """The operands of rows r0 .. r0 + rows of a rows x cols instruction."""
    a = dict(t.args)
    a["rows"] = rows
    strided = _rows_operand(t)
    for m in t.spec.mems:
        if m.name == strided:
            a[m.name] = a[m.name].at(sy.mul(sy.mul(r0, stride), size))
        elif a.get("axis", 1) == 1:  # one value per row (a broadcast along axis 0 reads per-column values)
            a[m.name] = a[m.name].at(sy.mul(r0, size))
    return a


def _exprs(stmts: Sequence[Stmt], addr: Callable[[Ref | GmRef], IntLike]) -> list[IntLike]:
    """Every integer expression a list of statements uses (loop bounds, guards, op operands; an on-chip
    operand as its whole address, so the loop-invariant part of it is hoisted too)."""
    out: list[IntLike] = []
    for s in stmts:
        if isinstance(s, Let):
            out.append(s.value)
        elif isinstance(s, Loop):
            out.extend((s.start, s.stop, s.step))
            out.extend(_exprs(s.body, addr))
        elif isinstance(s, When):
            out.append(s.cond)
            out.extend(_exprs(s.body, addr))
        else:
            for v in s.args.values():
                if isinstance(v, (Ref, GmRef)):
                    out.append(addr(v))
                elif isinstance(v, Expr):
                    out.append(v)
    return [e for e in out if isinstance(e, Expr)]


def emit(schedule: TileSchedule, plan: SyncPlan, chip: Chip, cross: SideCross | None = None) -> Program:
    """The simulator program of a schedule (raises CapacityError when its buffers do not fit); `cross`: its
    cross-core flags when it is one side of a mixed launch."""
    return Emitter(schedule, plan, chip, cross).run()
