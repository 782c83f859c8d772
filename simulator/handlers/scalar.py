"""Handlers of the scalar unit, control flow and synchronisation."""
from __future__ import annotations

import operator
from typing import Any, Callable, Optional

import numpy as np

from .. import isa, stream, sync, vector_math
from ..isa import DTYPES, PIPE_ID
from ..lockstep import BARRIER, BLOCKED, Group, ProgramInfo, Split
from ..stream import StreamRecord
from .common import (
    get_value, get_uniform, Checker,
)


# --------------------------------------------------------------------------- scalar


_PY_CMP = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge, "eq": operator.eq,
           "ne": operator.ne}
_PY_ALU = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.floordiv,
    "mod": operator.mod, "cdiv": lambda a, b: -((-a) // b), "min": min, "max": max,
    "shl": operator.lshift, "shr": operator.rshift, "and": operator.and_, "or": operator.or_,
    "xor": operator.xor,
}
_NP_CMP = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
           "ne": np.not_equal}
_NP_ALU = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.floor_divide, "mod": np.mod,
    "cdiv": lambda a, b: -np.floor_divide(-a, b), "min": np.minimum, "max": np.maximum,
    "shl": np.left_shift, "shr": np.right_shift, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def _py_alu(fn: str) -> Callable[[int, int], int]:
    # (module tables: a program decodes one handler per ALU instruction)
    if fn in _PY_CMP:
        f = _PY_CMP[fn]
        return lambda a, b: int(f(a, b))
    return _PY_ALU[fn]


def _np_alu(fn: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if fn in _NP_CMP:
        f = _NP_CMP[fn]
        return lambda a, b: f(a, b).astype(np.int64)
    return _NP_ALU[fn]


def _c_core_idx(rt: ProgramInfo, idx: int, ins: isa.CoreIdx) -> Callable:
    d, sc = ins.dst.name, rt.chip.scalar_cycles

    def h(g: Group) -> None:
        g.regs[d] = g.core_value()
        g.scyc += sc
    return h


def _c_core_num(rt: ProgramInfo, idx: int, ins: isa.CoreNum) -> Callable:
    d, sc, ct = ins.dst.name, rt.chip.scalar_cycles, rt.core_type

    def h(g: Group) -> None:
        g.regs[d] = g.ctx.counts[ct]
        g.scyc += sc
    return h


def _c_tiling(rt: ProgramInfo, idx: int, ins: isa.Tiling) -> Callable:
    d, sc, field = ins.dst.name, rt.chip.scalar_cycles, ins.field

    def h(g: Group) -> None:
        g.regs[d] = g.ctx.tiling[field]
        g.scyc += sc
    return h


def _c_mov(rt: ProgramInfo, idx: int, ins: isa.Mov) -> Callable:
    d, sc, get = ins.dst.name, rt.chip.scalar_cycles, get_value(ins.src)

    def h(g: Group) -> None:
        g.regs[d] = get(g)
        g.scyc += sc
    return h


def _c_alu(rt: ProgramInfo, idx: int, ins: isa.Alu) -> Callable:
    d, sc = ins.dst.name, rt.chip.scalar_cycles
    ga, gb = get_value(ins.a), get_value(ins.b)
    py, npf = _py_alu(ins.fn), _np_alu(ins.fn)
    divides = ins.fn in ("div", "mod", "cdiv")
    chk = Checker(rt, idx)

    def h(g: Group) -> None:
        a, b = ga(g), gb(g)
        if a.__class__ is int and b.__class__ is int:
            if divides and b == 0:
                chk.bad(g, f"scalar {ins.fn} by zero")
            g.regs[d] = py(a, b)
        else:
            if _is_float(a) or _is_float(b):
                chk.bad(g, f"{ins.fn} works on integer registers; use falu for float registers")
            if divides and (np.asarray(b) == 0).any():
                chk.bad(g, f"scalar {ins.fn} by zero")
            g.regs[d] = np.asarray(npf(np.asarray(a, np.int64), np.asarray(b, np.int64)), np.int64)
        g.scyc += sc
    return h


def _is_float(v: Any) -> bool:
    return v.__class__ is float or (isinstance(v, np.ndarray) and v.dtype.kind == "f")


def _c_loop(rt: ProgramInfo, idx: int, ins: isa.Loop) -> Callable:
    end = rt.structure.match[idx]
    var, sc = ins.var.name, rt.chip.scalar_cycles
    gs, ge, gst = get_value(ins.start), get_value(ins.stop), get_value(ins.step)
    chk = Checker(rt, idx)

    def h(g: Group) -> Optional[int]:
        start, stop, step = gs(g), ge(g), gst(g)
        if start.__class__ is int and stop.__class__ is int and step.__class__ is int:
            if step == 0:
                chk.bad(g, "loop step is 0")
            trip = max(0, -((start - stop) // step))
        else:
            s = np.asarray(step, np.int64)
            if (s == 0).any():
                chk.bad(g, "loop step is 0")
            trips = np.maximum(0, -((np.asarray(start, np.int64) - stop) // s))
            trips = np.broadcast_to(trips, (g.m,))
            trip = g.uniform(None, trips)
        g.scyc += sc  # after a possible split, which re-runs this instruction
        marks = getattr(g.ctx.record, "marks", None)
        if marks is not None and marks.loop == idx:  # a trip-count loop of a recorded launch (tripcount.py)
            marks.begin(g, len(g.ctx.record), trip)
            if trip <= 0:
                marks.end(len(g.ctx.record))
        if trip <= 0:
            return end + 1
        g.regs[var] = start
        g.loops.append([trip - 1, step, var])
        return None
    return h


def _c_end_loop(rt: ProgramInfo, idx: int, ins: isa.EndLoop) -> Callable:
    begin = rt.structure.match[idx]
    sc = rt.chip.scalar_cycles

    def h(g: Group) -> Optional[int]:
        top = g.loops[-1]
        g.scyc += sc
        rec = g.ctx.record
        if rec is not None:
            marks = getattr(rec, "marks", None)
            if marks is not None and marks.loop == begin:  # the end of an iteration of a trip-count loop
                if top[0] > 0:
                    marks.next(len(rec))
                else:
                    marks.end(len(rec))
        if top[0] > 0:
            top[0] -= 1
            g.regs[top[2]] = g.regs[top[2]] + top[1]
            return begin + 1
        g.loops.pop()
        return None
    return h


def _c_if(rt: ProgramInfo, idx: int, ins: isa.If) -> Callable:
    end = rt.structure.match[idx]
    els = rt.structure.else_of.get(idx)
    target = (els if els is not None else end) + 1
    get, sc = get_value(ins.cond), rt.chip.scalar_cycles

    def h(g: Group) -> Optional[int]:
        c = get(g)
        g.scyc += sc
        if c.__class__ is not int:
            t = np.asarray(c) != 0
            if t.all():
                c = 1
            elif not t.any():
                c = 0
            else:
                g.scyc -= sc
                raise Split(t.astype(np.int64))
        return None if c else target
    return h


def _c_else(rt: ProgramInfo, idx: int, ins: isa.Else) -> Callable:
    end = rt.structure.match[idx]
    return lambda g: end + 1


def _c_end_if(rt: ProgramInfo, idx: int, ins: isa.EndIf) -> Callable:
    return lambda g: None


# --------------------------------------------------------------------------- synchronisation


def _c_flag(rt: ProgramInfo, idx: int, ins: Any) -> Callable:
    src, dst = PIPE_ID[ins.src], PIPE_ID[ins.dst]
    is_set = isinstance(ins, isa.SetFlag)
    pipe = src if is_set else dst
    kind = stream.SET if is_set else stream.WAIT
    # a wait on the scalar unit stops issue altogether (a pipe wait only holds back its own queue)
    action = sync.do_set if is_set else (sync.do_scalar_wait if pipe == PIPE_ID["S"] else sync.do_wait)
    gev = get_uniform(ins.event)
    n_ev = rt.chip.event_ids
    chk = Checker(rt, idx)

    scalar_wait = not is_set and pipe == PIPE_ID["S"]

    def h(g: Group) -> Optional[int]:
        ev = gev(g)
        if not 0 <= ev < n_ev:
            chk.bad(g, f"event id {ev} is outside 0..{n_ev - 1} (chip {rt.chip.name} has {n_ev} ids per pipe pair)")
        key = (src, dst, ev)
        if scalar_wait and g.ctx.fuzz is not None and g.flags.get(key, 0) <= 0:
            return BLOCKED  # a randomly ordered run: the set is still queued on its pipe
        g.stream.append(StreamRecord(kind, pipe, 0, 0, 0, g.scyc, idx, key))
        g.scyc = 0
        sync.issue(g, pipe, action, (key, idx))
        return None
    return h


def _c_pipe_barrier(rt: ProgramInfo, idx: int, ins: isa.PipeBarrier) -> Callable:
    if ins.pipe_name != "ALL":
        p = PIPE_ID[ins.pipe_name]

        def h1(g: Group) -> None:
            # each pipe completes in order in this model: a single-pipe barrier orders nothing new
            g.stream.append(StreamRecord(stream.OP, p, 0, 0, 0, g.scyc, idx))
            g.scyc = 0
        return h1

    def h(g: Group) -> Optional[int]:
        if g.ctx.fuzz is not None and sync.queued(g):
            return BLOCKED  # a randomly ordered run: the scalar unit waits until its pipes drain
        sync.check_no_blocked(g, f"at pipe_barrier(ALL) #{idx}")
        g.stream.append(StreamRecord(stream.BAR, 0, 0, 0, 0, g.scyc, idx))
        g.scyc = 0
        if g.san is not None:
            g.san.join_all(g)
        return None
    return h


def _c_sync_all(rt: ProgramInfo, idx: int, ins: isa.SyncAll) -> Callable:
    def h(g: Group) -> int:
        if g.ctx.fuzz is not None and sync.queued(g):
            return BLOCKED
        sync.check_no_blocked(g, f"at sync_all #{idx}")
        g.stream.append(StreamRecord(stream.SYNC, 0, 0, 0, 0, g.scyc, idx))
        g.scyc = 0
        return BARRIER
    return h


# --------------------------------------------------------------------------- mixed launches


def _c_group_idx(rt: ProgramInfo, idx: int, ins: isa.GroupIdx) -> Callable:
    d, sc, per = ins.dst.name, rt.chip.scalar_cycles, rt.chip.group_aivs
    aiv = rt.core_type == "aiv"

    def h(g: Group) -> None:
        v = g.core_value()
        g.regs[d] = v // per if aiv and g.ctx.xflags.layout.mixed else v
        g.scyc += sc
    return h


def _c_sub_idx(rt: ProgramInfo, idx: int, ins: isa.SubIdx) -> Callable:
    d, sc, per = ins.dst.name, rt.chip.scalar_cycles, rt.chip.group_aivs
    aiv = rt.core_type == "aiv"

    def h(g: Group) -> None:
        v = g.core_value()
        g.regs[d] = v % per if aiv and g.ctx.xflags.layout.mixed else v * 0
        g.scyc += sc
    return h


def _cross_key(rt: ProgramInfo, idx: int, ins: Any) -> Callable[[Group], tuple]:
    gflag, n = get_uniform(ins.flag), rt.chip.cross_flag_ids
    chk = Checker(rt, idx)
    mode = ins.mode

    def key(g: Group) -> tuple:
        f = gflag(g)
        if not 0 <= f < n:
            chk.bad(g, f"cross-core flag id {f} is outside 0..{n - 1} (chip {rt.chip.name} has {n})")
        if mode != "all" and not g.ctx.xflags.layout.mixed:
            chk.bad(g, f"cross-core flag mode {mode!r} needs a mixed launch (groups of one AIC and its AIVs)")
        return (mode, f)
    return key


def _c_cross_set(rt: ProgramInfo, idx: int, ins: isa.CrossSet) -> Callable:
    pipe = PIPE_ID[ins.pipe_name]
    key_of = _cross_key(rt, idx, ins)
    text = rt.texts[idx]

    def action(g: Group, key: tuple) -> None:
        g.ctx.xflags.set(key, g.cores + g.ctx.xflags.layout.gbase[g.core_type], (idx, text))
        if g.san is not None:
            g.san.cross_set(g, pipe, key, idx)

    def h(g: Group) -> None:
        key = key_of(g)
        g.stream.append(StreamRecord(stream.XSET, pipe, 0, 0, 0, g.scyc, idx, key))
        g.scyc = 0
        sync.issue(g, pipe, action, key)
    return h


def _c_cross_wait(rt: ProgramInfo, idx: int, ins: isa.CrossWait) -> Callable:
    key_of = _cross_key(rt, idx, ins)

    def h(g: Group) -> Optional[int]:
        key = key_of(g)
        xf = g.ctx.xflags
        gc = g.cores + xf.layout.gbase[g.core_type]
        ok = xf.ready(key, gc)
        if not ok.all():
            if ok.any():
                raise Split(ok.astype(np.int64))
            g.xwait = (key, idx)
            return BLOCKED
        g.xwait = None
        xf.passed(key, gc)
        g.stream.append(StreamRecord(stream.XWAIT, 0, 0, 0, 0, g.scyc, idx, key))
        g.scyc = 0
        if g.san is not None:
            g.san.cross_wait(g, key, xf.sources)
            sync.scalar_reaches_all(g)
        return None
    return h


# --------------------------------------------------------------------------- scalar access to data


def _c_ld(rt: ProgramInfo, idx: int, ins: isa.ScalarLoad) -> Callable:
    dt = DTYPES[ins.dtype]
    size, d = dt.itemsize, ins.dst.name
    g_a = get_uniform(ins.src.offset)
    chk, cost, S = Checker(rt, idx), rt.chip.scalar_ub_cycles, PIPE_ID["S"]
    floats = ins.dtype in isa.FLOAT_DTYPES

    def h(g: Group) -> None:
        a = g_a(g)
        _ub_element(g, chk, a, size, "ld")
        if g.san is not None:
            g.san.onchip(g, S, idx, "UB", (a, 1, size, size), False)
        raw = vector_math.widen(g.mem["UB"][g.sel, a:a + size].view(dt)[:, 0], ins.dtype)
        vals = raw.astype(np.float64) if floats else raw.astype(np.int64)
        g.regs[d] = vals[0].item() if g.m == 1 or (vals == vals[0]).all() else vals
        g.scyc += cost
    return h


def _c_st(rt: ProgramInfo, idx: int, ins: isa.ScalarStore) -> Callable:
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    g_a, g_v = get_uniform(ins.dst.offset), get_value(ins.src)
    chk, cost, S = Checker(rt, idx), rt.chip.scalar_ub_cycles, PIPE_ID["S"]

    def h(g: Group) -> None:
        a = g_a(g)
        _ub_element(g, chk, a, size, "st")
        if g.san is not None:
            g.san.onchip(g, S, idx, "UB", (a, 1, size, size), True)
        v = np.broadcast_to(np.asarray(g_v(g)), (g.m,))
        with np.errstate(all="ignore"):
            g.mem["UB"][g.sel, a:a + size] = vector_math.storage(v, ins.dtype).reshape(g.m, 1).view(np.uint8)
        g.scyc += cost
    return h


def _ub_element(g: Group, chk: Checker, a: int, size: int, what: str) -> None:
    """One element of UB: aligned to its size (the scalar unit needs no 32-byte block), inside UB."""
    if a % size:
        chk.fail(g, f"{what} address {a:#x} is not aligned to its {size}-byte element", "UB elements are aligned",
                 "UB", a, a + size)
    ub = chk.chip.ub_bytes
    if a < 0 or a + size > ub:
        chk.fail(g, f"{what} element at {a:#x} is outside the {ub}-byte UB of chip {chk.chip.name}",
                 f"UB capacity {ub} bytes", "UB", a, a + size)


_FALU = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "min": min, "max": max}


def _c_falu(rt: ProgramInfo, idx: int, ins: isa.FAlu) -> Callable:
    d, sc = ins.dst.name, rt.chip.scalar_cycles
    ga, gb = get_value(ins.a), get_value(ins.b)
    fn = ins.fn
    npf = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "min": np.minimum,
           "max": np.maximum, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
           "eq": np.equal, "ne": np.not_equal}[fn]

    def h(g: Group) -> None:
        a, b = np.asarray(ga(g), np.float64), np.asarray(gb(g), np.float64)
        with np.errstate(all="ignore"):
            r = npf(a, b)
        r = r.astype(np.int64) if r.dtype == bool else r
        g.regs[d] = r.item() if r.ndim == 0 else r
        g.scyc += sc
    return h


def _c_cvt(rt: ProgramInfo, idx: int, ins: isa.Cvt) -> Callable:
    d, sc, s = ins.dst.name, rt.chip.scalar_cycles, ins.src.name
    rounding = {"trunc": np.trunc, "rint": np.rint, "floor": np.floor, "ceil": np.ceil}[ins.round]
    to_int = ins.to == "int"

    def h(g: Group) -> None:
        v = np.asarray(g.regs[s], np.float64)
        r = rounding(v).astype(np.int64) if to_int else v
        g.regs[d] = r.item() if r.ndim == 0 else r
        g.scyc += sc
    return h
