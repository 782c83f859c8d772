"""Handlers of the vector unit."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import isa, vector_math
from ..executor import Group, Runner
from ..isa import DTYPES, PIPE_ID
from ..timing import K_OP
from .common import (
    get_uniform, get_optional, get_scalar, Checker, region, out_view, store, rows_read, rows_write, U8,
)


# --------------------------------------------------------------------------- vector


class VectorSetup:
    """Shared setup of a vector instruction: UB array, cost, checker."""

    def __init__(self, rt: Runner, idx: int, ins: isa.Instr):
        self.rt, self.idx, self.chip = rt, idx, rt.chip
        self.ub = rt.onchip["UB"]
        self.P = PIPE_ID["V"]
        self.chk = Checker(rt, idx)
        self.san = rt.san
        cls = isa.vector_cost_class(ins)
        c = rt.chip
        self.per_repeat = {"simple": c.vector_simple_cycles, "binary": c.vector_binary_cycles,
                           "complex": c.vector_complex_cycles, "composite": c.vector_composite_cycles}[cls]
        self.startup = c.vector_startup_cycles
        self.rb = c.vector_repeat_bytes

    def record(self, g: Group, reps: int, vals: Any, exe: Callable) -> None:
        self.chk.repeats(g, reps)
        g.stream.append((K_OP, self.P, self.startup + reps * self.per_repeat, 0, 0, g.scyc, self.idx))
        g.scyc = 0
        self.rt.issue(g, self.P, exe, vals)

    def reps(self, nbytes: int) -> int:
        return max(1, -(-nbytes // self.rb))

    def check(self, g: Group, dst: tuple[int, int], *srcs: tuple[int, int]) -> None:
        for a, n in (dst,) + srcs:
            self.chk.onchip(g, "UB", a, n, "operand")
        for s in srcs:
            self.chk.no_partial_overlap(g, dst, s)

    def sanitize(self, g: Group, reads: list, writes: list) -> None:
        if self.san is None:
            return
        core = int(g.cores[0])
        for p in reads:
            self.san.onchip(core, self.P, self.idx, "UB", p, False)
        for p in writes:
            self.san.onchip(core, self.P, self.idx, "UB", p, True)


def flat(a: int, n: int) -> tuple:
    return (a, 1, n, n)


def _c_vbinary(rt: Runner, idx: int, ins: isa.VBinary) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, ga, gb, gn = get_uniform(ins.dst.offset), get_uniform(ins.a.offset), get_uniform(ins.b.offset), get_uniform(ins.count)
    ub, fn, dtype = v.ub, ins.fn, ins.dtype

    def h(g: Group) -> None:
        d, a, b, n = gd(g), ga(g), gb(g), gn(g)
        v.chk.positive(g, count=n)
        nb = n * size
        v.check(g, (d, nb), (a, nb), (b, nb))
        v.record(g, v.reps(nb), (d, a, b, nb), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, a, b, nb = vals
        v.sanitize(g, [flat(a, nb), flat(b, nb)], [flat(d, nb)])
        out = out_view(g, ub, d, nb, dt)
        res = vector_math.binary(fn, region(g, ub, a, nb, dt), region(g, ub, b, nb, dt), dtype, out)
        store(g, ub, d, res, out)
    return h


def _c_vscalar(rt: Runner, idx: int, ins: isa.VScalar) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, gs, gn, gv = get_uniform(ins.dst.offset), get_uniform(ins.src.offset), get_uniform(ins.count), get_scalar(ins.scalar)
    ub, fn, dtype, rev = v.ub, ins.fn, ins.dtype, ins.reverse

    def h(g: Group) -> None:
        d, s, n = gd(g), gs(g), gn(g)
        sv = vector_math.scalar_value(gv(g), dtype)
        v.chk.positive(g, count=n)
        nb = n * size
        v.check(g, (d, nb), (s, nb))
        v.record(g, v.reps(nb), (d, s, nb, sv), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, s, nb, sv = vals
        v.sanitize(g, [flat(s, nb)], [flat(d, nb)])
        out = out_view(g, ub, d, nb, dt)
        x = region(g, ub, s, nb, dt)
        res = vector_math.binary(fn, sv, x, dtype, out) if rev else vector_math.binary(fn, x, sv, dtype, out)
        store(g, ub, d, res, out)
    return h


def _c_vunary(rt: Runner, idx: int, ins: isa.VUnary) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, gs, gn = get_uniform(ins.dst.offset), get_uniform(ins.src.offset), get_uniform(ins.count)
    ub, fn, dtype = v.ub, ins.fn, ins.dtype

    def h(g: Group) -> None:
        d, s, n = gd(g), gs(g), gn(g)
        v.chk.positive(g, count=n)
        nb = n * size
        v.check(g, (d, nb), (s, nb))
        v.record(g, v.reps(nb), (d, s, nb), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, s, nb = vals
        v.sanitize(g, [flat(s, nb)], [flat(d, nb)])
        out = out_view(g, ub, d, nb, dt)
        res = vector_math.unary(fn, region(g, ub, s, nb, dt), dtype, out)
        store(g, ub, d, res, out)
    return h


def _c_vcompare(rt: Runner, idx: int, ins: isa.VCompare) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    mem_b = isinstance(ins.b, isa.Mem)
    gd, ga, gn = get_uniform(ins.dst.offset), get_uniform(ins.a.offset), get_uniform(ins.count)
    gb = get_uniform(ins.b.offset) if mem_b else get_scalar(ins.b)
    ub, fn, dtype = v.ub, ins.fn, ins.dtype

    def h(g: Group) -> None:
        d, a, n = gd(g), ga(g), gn(g)
        b = gb(g) if mem_b else vector_math.scalar_value(gb(g), dtype)
        v.chk.positive(g, count=n)
        nb = n * size
        srcs = [(a, nb)] + ([(b, nb)] if mem_b else [])
        v.check(g, (d, n), *srcs)
        v.record(g, v.reps(nb), (d, a, b, n, nb), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, a, b, n, nb = vals
        v.sanitize(g, [flat(a, nb)] + ([flat(b, nb)] if mem_b else []), [flat(d, n)])
        out = out_view(g, ub, d, n, U8)
        bb = region(g, ub, b, nb, dt) if mem_b else b
        res = vector_math.compare(fn, region(g, ub, a, nb, dt), bb, dtype, out)
        store(g, ub, d, res, out)
    return h


def _c_vselect(rt: Runner, idx: int, ins: isa.VSelect) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    ma, mb = isinstance(ins.a, isa.Mem), isinstance(ins.b, isa.Mem)
    gd, gm, gn = get_uniform(ins.dst.offset), get_uniform(ins.mask.offset), get_uniform(ins.count)
    ga = get_uniform(ins.a.offset) if ma else get_scalar(ins.a)
    gb = get_uniform(ins.b.offset) if mb else get_scalar(ins.b)
    ub, dtype = v.ub, ins.dtype

    def h(g: Group) -> None:
        d, mk, n = gd(g), gm(g), gn(g)
        a = ga(g) if ma else vector_math.scalar_value(ga(g), dtype)
        b = gb(g) if mb else vector_math.scalar_value(gb(g), dtype)
        v.chk.positive(g, count=n)
        nb = n * size
        srcs = [(mk, n)] + ([(a, nb)] if ma else []) + ([(b, nb)] if mb else [])
        v.check(g, (d, nb), *srcs)
        v.record(g, v.reps(nb), (d, mk, a, b, n, nb), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, mk, a, b, n, nb = vals
        reads = [flat(mk, n)] + ([flat(a, nb)] if ma else []) + ([flat(b, nb)] if mb else [])
        v.sanitize(g, reads, [flat(d, nb)])
        out = out_view(g, ub, d, nb, dt)
        av = region(g, ub, a, nb, dt) if ma else a
        bv = region(g, ub, b, nb, dt) if mb else b
        res = vector_math.select(region(g, ub, mk, n, U8), av, bv, dtype, out)
        store(g, ub, d, res, out)
    return h


def _c_vcast(rt: Runner, idx: int, ins: isa.VCast) -> Callable:
    v = VectorSetup(rt, idx, ins)
    sdt, ddt = DTYPES[ins.src_dtype], DTYPES[ins.dst_dtype]
    gd, gs, gn = get_uniform(ins.dst.offset), get_uniform(ins.src.offset), get_uniform(ins.count)
    ub = v.ub

    def h(g: Group) -> None:
        d, s, n = gd(g), gs(g), gn(g)
        v.chk.positive(g, count=n)
        snb, dnb = n * sdt.itemsize, n * ddt.itemsize
        v.check(g, (d, dnb), (s, snb))
        v.record(g, v.reps(max(snb, dnb)), (d, s, snb, dnb), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, s, snb, dnb = vals
        v.sanitize(g, [flat(s, snb)], [flat(d, dnb)])
        out = out_view(g, ub, d, dnb, ddt)
        res = vector_math.cast(region(g, ub, s, snb, sdt), ins.src_dtype, ins.dst_dtype, ins.round, out)
        store(g, ub, d, res, out)
    return h


def _c_vdup(rt: Runner, idx: int, ins: isa.VDup) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, gn, gv = get_uniform(ins.dst.offset), get_uniform(ins.count), get_scalar(ins.value)
    ub, dtype = v.ub, ins.dtype

    def h(g: Group) -> None:
        d, n = gd(g), gn(g)
        val = np.asarray(vector_math.scalar_value(gv(g), dtype)).astype(dt)
        v.chk.positive(g, count=n)
        nb = n * size
        v.check(g, (d, nb))
        v.record(g, v.reps(nb), (d, nb, val), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, nb, val = vals
        v.sanitize(g, [], [flat(d, nb)])
        out = out_view(g, ub, d, nb, dt)
        if out is not None:
            out[...] = val
        else:
            store(g, ub, d, np.full((g.m, nb // size), val, dt), None)
    return h


def _c_vcopy(rt: Runner, idx: int, ins: isa.VCopy) -> Callable:
    v = VectorSetup(rt, idx, ins)
    size = DTYPES[ins.dtype].itemsize
    gd, gs, gn = get_uniform(ins.dst.offset), get_uniform(ins.src.offset), get_uniform(ins.count)
    ub = v.ub

    def h(g: Group) -> None:
        d, s, n = gd(g), gs(g), gn(g)
        v.chk.positive(g, count=n)
        nb = n * size
        v.check(g, (d, nb), (s, nb))
        v.record(g, v.reps(nb), (d, s, nb), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, s, nb = vals
        v.sanitize(g, [flat(s, nb)], [flat(d, nb)])
        ub[g.sel, d:d + nb] = ub[g.sel, s:s + nb]
    return h


def _c_vreduce(rt: Runner, idx: int, ins: isa.VReduce) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, gs = get_uniform(ins.dst.offset), get_uniform(ins.src.offset)
    gr, gc, grs = get_uniform(ins.rows), get_uniform(ins.cols), get_optional(ins.src_row_stride)
    ub, fn, dtype = v.ub, ins.fn, ins.dtype

    def h(g: Group) -> None:
        d, s, rows, cols = gd(g), gs(g), gr(g), gc(g)
        rs = grs(g) if grs is not None else cols
        v.chk.positive(g, rows=rows, cols=cols)
        if rs < cols:
            v.chk.bad(g, f"src_row_stride {rs} is shorter than a row of {cols} elements")
        if rows > 1:
            v.chk.stride(g, "UB", rs * size, "source")
        src_n = ((rows - 1) * rs + cols) * size
        v.check(g, (d, rows * size), (s, src_n))
        v.record(g, rows * v.reps(cols * size), (d, s, rows, cols, rs), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, s, rows, cols, rs = vals
        v.sanitize(g, [(s, rows, rs * size, cols * size)], [flat(d, rows * size)])
        x = rows_read(g, ub, s, rows, rs * size, cols * size).view(dt)
        res = vector_math.reduce(fn, x, dtype)
        out = out_view(g, ub, d, rows * size, dt)
        if out is not None:
            out[...] = res
        else:
            store(g, ub, d, res, None)
    return h


def _c_vbroadcast(rt: Runner, idx: int, ins: isa.VBroadcast) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, gs = get_uniform(ins.dst.offset), get_uniform(ins.src.offset)
    gr, gc, grs = get_uniform(ins.rows), get_uniform(ins.cols), get_optional(ins.dst_row_stride)
    ub, axis = v.ub, ins.axis

    def h(g: Group) -> None:
        d, s, rows, cols = gd(g), gs(g), gr(g), gc(g)
        rs = grs(g) if grs is not None else cols
        v.chk.positive(g, rows=rows, cols=cols)
        if rs < cols:
            v.chk.bad(g, f"dst_row_stride {rs} is shorter than a row of {cols} elements")
        if rows > 1:
            v.chk.stride(g, "UB", rs * size, "destination")
        src_n = (rows if axis == 1 else cols) * size
        v.check(g, (d, ((rows - 1) * rs + cols) * size), (s, src_n))
        v.record(g, rows * v.reps(cols * size), (d, s, rows, cols, rs, src_n), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, s, rows, cols, rs, src_n = vals
        v.sanitize(g, [flat(s, src_n)], [(d, rows, rs * size, cols * size)])
        src = region(g, ub, s, src_n, dt)
        full = src[:, :, None] if axis == 1 else src[:, None, :]
        data = np.ascontiguousarray(np.broadcast_to(full, (g.m, rows, cols))).view(U8)
        rows_write(g, ub, d, rows, rs * size, data)
    return h


def _c_vtranspose(rt: Runner, idx: int, ins: isa.VTranspose) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, gs = get_uniform(ins.dst.offset), get_uniform(ins.src.offset)
    gr, gc = get_uniform(ins.rows), get_uniform(ins.cols)
    gss, gds = get_optional(ins.src_row_stride), get_optional(ins.dst_row_stride)
    ub = v.ub

    def h(g: Group) -> None:
        d, s, rows, cols = gd(g), gs(g), gr(g), gc(g)
        ss = gss(g) if gss is not None else cols
        ds = gds(g) if gds is not None else rows
        v.chk.positive(g, rows=rows, cols=cols)
        if ss < cols or ds < rows:
            v.chk.bad(g, f"row strides (src {ss}, dst {ds}) are shorter than the rows they hold ({cols}, {rows})")
        if rows > 1:
            v.chk.stride(g, "UB", ss * size, "source")
        if cols > 1:
            v.chk.stride(g, "UB", ds * size, "destination")
        src_n, dst_n = ((rows - 1) * ss + cols) * size, ((cols - 1) * ds + rows) * size
        v.chk.onchip(g, "UB", d, dst_n, "operand")
        v.chk.onchip(g, "UB", s, src_n, "operand")
        if d < s + src_n and s < d + dst_n:
            v.chk.fail(g, "a transpose cannot work in place: source and destination overlap",
                       "transpose operands are disjoint", "UB", d, d + dst_n)
        v.record(g, v.reps(rows * cols * size), (d, s, rows, cols, ss, ds), exe)

    def exe(g: Group, vals: tuple) -> None:
        d, s, rows, cols, ss, ds = vals
        v.sanitize(g, [(s, rows, ss * size, cols * size)], [(d, cols, ds * size, rows * size)])
        x = rows_read(g, ub, s, rows, ss * size, cols * size).view(dt)
        data = np.ascontiguousarray(x.transpose(0, 2, 1)).view(U8)
        rows_write(g, ub, d, cols, ds * size, data)
    return h
