"""Handlers of the data moves and the cube unit."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import isa, layouts
from ..lockstep import Group, ProgramInfo
from ..isa import DTYPES
from .common import (
    get_value, get_uniform, get_optional, ceil_to, PipeSetup, flat, gm_view, chip_view, core_views, region,
    gm_read, gm_write, U8,
)


# --------------------------------------------------------------------------- data moves


def _c_copy(rt: ProgramInfo, idx: int, ins: isa.Copy) -> Callable:
    chip = rt.chip
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    load = ins.src.space == "GM"
    gm_mem, chip_mem = (ins.src, ins.dst) if load else (ins.dst, ins.src)
    space, arg = chip_mem.space, gm_mem.arg
    st = PipeSetup(rt, idx, ins.pipe, ins.path)
    blk = chip.dma_block_bytes
    g_gm, g_chip = get_value(gm_mem.offset), get_uniform(chip_mem.offset)
    g_burst, g_nb = get_uniform(ins.burst), get_uniform(ins.nburst)
    g_gs = get_optional(ins.src_stride if load else ins.dst_stride)
    g_cs = get_optional(ins.dst_stride if load else ins.src_stride)
    pad = ins.pad
    pad_unit = np.asarray(ins.pad_value).astype(dt).tobytes() if (pad and load) else b""
    max_burst = chip.max_pad_burst_bytes if pad else chip.max_burst_blocks * blk
    max_nburst = chip.max_nburst
    chk = st.chk
    pad_cache: dict[int, np.ndarray] = {}

    def h(g: Group) -> None:
        buf = g.args[arg]
        a, bl, nb = g_chip(g), g_burst(g), g_nb(g)
        off = g_gm(g)
        chk.positive(g, burst=bl, nburst=nb)
        if nb > max_nburst:
            chk.bad(g, f"nburst {nb} exceeds the {max_nburst} bursts of one data move")
        blb = bl * size
        if not pad and blb % blk:
            chk.fail(g, f"a burst of {bl} {ins.dtype} is {blb} bytes, not a whole number of {blk}-byte blocks "
                     f"(hardware would silently drop the last {blb % blk} bytes); use pad=True",
                     f"data moves without pad are whole {blk}-byte blocks", space, a, a + blb)
        if blb > max_burst:
            chk.bad(g, f"a burst of {blb} bytes exceeds the {max_burst}-byte limit of one burst")
        pbl = ceil_to(blb, blk)
        cs = g_cs(g) * size if g_cs is not None else pbl
        gs = g_gs(g) * size if g_gs is not None else blb
        width = pbl if load else blb
        if nb > 1:
            chk.stride(g, space, cs, "on-chip")
            if cs < pbl:
                chk.fail(g, f"on-chip burst stride {cs} bytes is shorter than a (padded) burst of {pbl} bytes",
                         "bursts do not overlap", space, a, a + pbl)
            if gs < 0:
                chk.bad(g, f"GM stride must not be negative, got {gs // size} elements")
        chk.onchip(g, space, a, (nb - 1) * cs + width, "on-chip")
        chk.gm(g, buf, off, (nb - 1) * gs + blb, size, f"GM.{gm_mem.arg}")
        st.dma(g, buf, arg, off, nb, gs, blb, not load, (off, a, nb, blb, gs, cs, pbl), exe)

    def move(gv: np.ndarray, cv: np.ndarray, blb: int, pbl: int) -> None:
        if not load:
            gv[...] = cv
        elif pbl == blb:
            cv[...] = gv
        else:
            cv[:, :, :blb] = gv
            fill = pad_cache.get(pbl - blb)
            if fill is None:
                fill = pad_cache[pbl - blb] = np.frombuffer(pad_unit * ((pbl - blb) // size), U8)
            cv[:, :, blb:] = fill

    def exe(g: Group, vals: tuple) -> None:
        off, a, nb, blb, gs, cs, pbl = vals
        buf, arr = g.args[arg], g.mem[space]
        width = pbl if load else blb
        if g.san is not None:
            if load:
                st.sanitize(g, (buf, (off, nb, gs, blb), False), (space, (a, nb, cs, pbl), True))
            else:
                st.sanitize(g, (space, (a, nb, cs, blb), False), (buf, (off, nb, gs, blb), True))
        if not load:
            g.ctx.gm_writes.append((buf, off, nb, gs, blb))
        gv = gm_view(g, buf.data, off, nb, gs, blb)
        cv = chip_view(g, arr, a, nb, cs, width)
        if gv is not None and cv is not None and (load or off.__class__ is not int or g.m == 1):
            move(gv, cv, blb, pbl)
            return
        for j in range(g.m):
            gv, cv = core_views(g, j, buf.data, off, arr, a, nb, gs, cs, blb, width)
            move(gv, cv, blb, pbl)
    return h


def _c_copy_nd2nz(rt: ProgramInfo, idx: int, ins: isa.CopyNd2Nz) -> Callable:
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    r0, c0 = rt.chip.cube_block, rt.chip.fractal_c0(size)
    arg = ins.src.arg
    st = PipeSetup(rt, idx, "MTE2", "gm_to_l1")
    g_gm, g_a = get_value(ins.src.offset), get_uniform(ins.dst.offset)
    g_rows, g_cols, g_rs = get_uniform(ins.rows), get_uniform(ins.cols), get_optional(ins.src_row_stride)
    chk = st.chk

    def h(g: Group) -> None:
        buf = g.args[arg]
        a, rows, cols = g_a(g), g_rows(g), g_cols(g)
        rs = g_rs(g) if g_rs is not None else cols
        off = g_gm(g)
        chk.positive(g, rows=rows, cols=cols)
        chk.row_stride(g, "src_row_stride", rs, cols)
        ext = layouts.ceil_to(rows, r0) * layouts.ceil_to(cols, c0) * size
        chk.onchip(g, "L1", a, ext, "L1 destination")
        chk.gm(g, buf, off, ((rows - 1) * rs + cols) * size, size, f"GM.{ins.src.arg}")
        st.dma(g, buf, arg, off, rows, rs * size, cols * size, False, (off, a, rows, cols, rs, ext), exe)

    def exe(g: Group, vals: tuple) -> None:
        off, a, rows, cols, rs, ext = vals
        buf, arr = g.args[arg], g.mem["L1"]
        st.sanitize(g, (buf, (off, rows, rs * size, cols * size), False), ("L1", flat(a, ext), True))
        x = gm_read(g, buf, off, rows, rs * size, cols * size).view(dt)
        nz = layouts.nd_to_nz(x, r0, c0)
        arr[g.sel, a:a + ext] = nz.reshape(g.m, -1).view(U8)
    return h


def _c_load_l0(rt: ProgramInfo, idx: int, ins: isa.LoadL0) -> Callable:
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    r0, c0 = rt.chip.cube_block, rt.chip.fractal_c0(size)
    to_a = ins.dst.space == "L0A"
    dst_space = ins.dst.space
    st = PipeSetup(rt, idx, "MTE1", "l1_to_l0a" if to_a else "l1_to_l0b")
    g_src, g_dst, g_rows, g_cols = get_uniform(ins.src.offset), get_uniform(ins.dst.offset), get_uniform(ins.rows), get_uniform(ins.cols)
    chk = st.chk

    def h(g: Group) -> None:
        s, d, rows, cols = g_src(g), g_dst(g), g_rows(g), g_cols(g)
        chk.positive(g, rows=rows, cols=cols)
        rp, cp = layouts.ceil_to(rows, r0), layouts.ceil_to(cols, c0)
        mr, mc = (cp, rp) if ins.transpose else (rp, cp)
        need_r, need_c = (r0, c0) if to_a else (c0, r0)
        if mr % need_r or mc % need_c:
            chk.fail(g, f"the {ins.dtype} matrix loaded into {ins.dst.space} is {mr}x{mc}, which is not made of "
                     f"whole {need_r}x{need_c} fractals (pad the L1 matrix: rows to a multiple of {need_r}, "
                     f"cols to a multiple of {need_c})", "L1->L0 moves whole fractals", "L1", s, s + rp * cp * size)
        # B's columns are in r0-wide fractals in L0B, so mmad finds a row of fractals every
        # ceil_r0(n) columns; an int8 L1 matrix padded to 32 columns drops its last empty fractal
        dc = mc if to_a else layouts.ceil_to(rows if ins.transpose else cols, r0)
        src_ext, ext = rp * cp * size, mr * dc * size
        chk.onchip(g, "L1", s, src_ext, "L1 source")
        chk.onchip(g, ins.dst.space, d, ext, f"{ins.dst.space} destination")
        st.op(g, st.path.cycles(ext), (s, d, rp, cp, dc, src_ext, ext), exe, ext)

    def exe(g: Group, vals: tuple) -> None:
        s, d, rp, cp, dc, src_ext, ext = vals
        src_arr, dst_arr = g.mem["L1"], g.mem[dst_space]
        st.sanitize(g, ("L1", flat(s, src_ext), False), (ins.dst.space, flat(d, ext), True))
        x = layouts.nz_to_nd(region(g, src_arr, s, src_ext, dt), rp, cp, c0)
        if ins.transpose:
            x = x.transpose(0, 2, 1)
        img = layouts.to_zz(x, r0, c0) if to_a else layouts.to_zn(np.ascontiguousarray(x[:, :, :dc]), r0, c0)
        dst_arr[g.sel, d:d + ext] = img.view(U8)
    return h


def _c_load_bias(rt: ProgramInfo, idx: int, ins: isa.LoadBias) -> Callable:
    st = PipeSetup(rt, idx, "MTE1", "l1_to_bt")
    g_src, g_dst, g_n = get_uniform(ins.src.offset), get_uniform(ins.dst.offset), get_uniform(ins.count)
    chk = st.chk

    def h(g: Group) -> None:
        s, d, n = g_src(g), g_dst(g), g_n(g)
        chk.positive(g, count=n)
        ext = n * 4
        chk.onchip(g, "L1", s, ext, "L1 source")
        chk.onchip(g, "BT", d, ext, "bias table destination")
        st.op(g, st.path.cycles(ext), (s, d, ext), exe, ext)

    def exe(g: Group, vals: tuple) -> None:
        s, d, ext = vals
        st.sanitize(g, ("L1", flat(s, ext), False), ("BT", flat(d, ext), True))
        g.mem["BT"][g.sel, d:d + ext] = g.mem["L1"][g.sel, s:s + ext]
    return h


def _c_mmad(rt: ProgramInfo, idx: int, ins: isa.Mmad) -> Callable:
    chip = rt.chip
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    r0, c0 = chip.cube_block, chip.fractal_c0(size)
    acc_name = isa.CUBE_DTYPES[ins.dtype]
    acc_dt = DTYPES[acc_name]
    block_cycles = {"float16": chip.cube_fp16_block_cycles, "int8": chip.cube_int8_block_cycles,
                    "float32": chip.cube_fp32_block_cycles}[ins.dtype]
    st = PipeSetup(rt, idx, "M")
    g_a, g_b, g_c = get_uniform(ins.a.offset), get_uniform(ins.b.offset), get_uniform(ins.dst.offset)
    g_bias = get_uniform(ins.bias.offset) if ins.bias is not None else None
    g_m, g_k, g_n, g_acc = get_uniform(ins.m), get_uniform(ins.k), get_uniform(ins.n), get_uniform(ins.accumulate)
    chk = st.chk

    def h(g: Group) -> None:
        a, b, c = g_a(g), g_b(g), g_c(g)
        m, k, n, acc = g_m(g), g_k(g), g_n(g), g_acc(g)
        chk.positive(g, m=m, k=k, n=n)
        mp, kp, np_ = layouts.ceil_to(m, r0), layouts.ceil_to(k, c0), layouts.ceil_to(n, r0)
        ext_a, ext_b, ext_c = mp * kp * size, kp * np_ * size, mp * np_ * acc_dt.itemsize
        chk.onchip(g, "L0A", a, ext_a, "A operand")
        chk.onchip(g, "L0B", b, ext_b, "B operand")
        chk.onchip(g, "L0C", c, ext_c, "accumulator")
        bias = None
        if g_bias is not None and not acc:
            if acc_name != "float32":
                chk.bad(g, "a bias needs a float32 accumulator (float16 or float32 inputs)")
            bias = g_bias(g)
            chk.onchip(g, "BT", bias, n * 4, "bias")
        blocks = (mp // r0) * (kp // c0) * (np_ // r0)
        vals = (a, b, c, bias, acc, m, n, mp, kp, np_, ext_a, ext_b, ext_c)
        st.op(g, chip.cube_startup_cycles + blocks * block_cycles, vals, exe)

    def exe(g: Group, vals: tuple) -> None:
        a, b, c, bias, acc, m, n, mp, kp, np_, ext_a, ext_b, ext_c = vals
        mem = g.mem
        la, lb, lc, bt = mem["L0A"], mem["L0B"], mem["L0C"], mem["BT"]
        if g.san is not None:
            reads = [("L0A", flat(a, ext_a), False), ("L0B", flat(b, ext_b), False)]
            if acc:
                reads.append(("L0C", flat(c, ext_c), False))
            if bias is not None:
                reads.append(("BT", flat(bias, n * 4), False))
            st.sanitize(g, *reads, ("L0C", flat(c, ext_c), True))
        work = np.float32 if acc_name == "float32" else np.int64
        A = layouts.from_zz(region(g, la, a, ext_a, dt), mp, kp, r0, c0).astype(work)
        B = layouts.from_zn(region(g, lb, b, ext_b, dt), kp, np_, r0, c0).astype(work)
        C = np.matmul(A, B)
        if acc:
            C = C + layouts.nz_to_nd(region(g, lc, c, ext_c, acc_dt), mp, np_, r0)
        elif bias is not None:
            bv = np.zeros((g.m, np_), np.float32)
            bv[:, :n] = region(g, bt, bias, n * 4, np.dtype(np.float32))
            C = C + bv[:, None, :]
        out = layouts.nd_to_nz(C.astype(acc_dt), r0, r0)
        lc[g.sel, c:c + ext_c] = out.reshape(g.m, -1).view(U8)
    return h


def _c_fixpipe(rt: ProgramInfo, idx: int, ins: isa.FixPipe) -> Callable:
    sdt, odt = DTYPES[ins.src_dtype], DTYPES[ins.dst_dtype]
    osize = odt.itemsize
    r0 = rt.chip.cube_block
    arg = ins.dst.arg
    st = PipeSetup(rt, idx, "FIX", "l0c_to_gm")
    g_src, g_off = get_uniform(ins.src.offset), get_value(ins.dst.offset)
    g_m, g_n, g_rs = get_uniform(ins.m), get_uniform(ins.n), get_optional(ins.dst_row_stride)
    chk = st.chk

    def h(g: Group) -> None:
        buf = g.args[arg]
        s, m, n = g_src(g), g_m(g), g_n(g)
        rs = g_rs(g) if g_rs is not None else n
        off = g_off(g)
        chk.positive(g, m=m, n=n)
        chk.row_stride(g, "dst_row_stride", rs, n)
        mp, np_ = layouts.ceil_to(m, r0), layouts.ceil_to(n, r0)
        ext = mp * np_ * sdt.itemsize
        chk.onchip(g, "L0C", s, ext, "L0C source")
        chk.gm(g, buf, off, ((m - 1) * rs + n) * osize, osize, f"GM.{ins.dst.arg}")
        st.dma(g, buf, arg, off, m, rs * osize, n * osize, True, (s, off, m, n, rs, mp, np_, ext), exe)

    def exe(g: Group, vals: tuple) -> None:
        s, off, m, n, rs, mp, np_, ext = vals
        buf, lc = g.args[arg], g.mem["L0C"]
        st.sanitize(g, ("L0C", flat(s, ext), False), (buf, (off, m, rs * osize, n * osize), True))
        C = layouts.nz_to_nd(region(g, lc, s, ext, sdt), mp, np_, r0)[:, :m, :n]
        if ins.relu:
            C = np.maximum(C, 0)
        with np.errstate(over="ignore"):  # out-of-range values become inf, like an IEEE conversion
            out = np.ascontiguousarray(C.astype(odt)).view(U8)
        g.ctx.gm_writes.append((buf, off, m, rs * osize, n * osize))
        gm_write(g, buf, off, m, rs * osize, out)
    return h
