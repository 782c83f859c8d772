"""Handlers of the data moves between GM and a core: copies and ND -> NZ."""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from .. import forward, isa, layouts, vector_math
from ..lockstep import Group, ProgramInfo
from ..isa import DTYPES
from .common import (
    get_value, get_uniform, get_optional, ceil_to, PipeSetup, flat, gm_view, gm_view_spec, chip_view, core_views,
    gm_read, disjoint, index_map, strided_source, U8,
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
    kind = ins.atomic

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
            if kind is None:
                gv[...] = cv
            else:
                gv[...] = vector_math.atomic(kind, gv.view(dt), cv.view(dt), ins.dtype).view(U8)
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
                st.sanitize(g, (space, (a, nb, cs, blb), False), (buf, (off, nb, gs, blb), True, kind))
        if not load:
            g.ctx.gm_writes.append((buf, off, nb, gs, blb))
        gv = gm_view(g, buf.data, off, nb, gs, blb)
        cv = chip_view(g, arr, a, nb, cs, width)
        if gv is not None and cv is not None and (load or g.m == 1 or disjoint(off, (nb - 1) * gs + blb)):
            move(gv, cv, blb, pbl)
            return
        for j in range(g.m):
            gv, cv = core_views(g, j, buf.data, off, arr, a, nb, gs, cs, blb, width)
            move(gv, cv, blb, pbl)

    def bind(g: Group, vals: tuple) -> Optional[Callable[[], None]]:
        """The action as a step of a replay (replay.py): the on-chip view made once, the GM view per run."""
        off, a, nb, blb, gs, cs, pbl = vals
        width = pbl if load else blb
        spec = gm_view_spec(g, off, nb, gs, blb)
        cv = chip_view(g, g.mem[space], a, nb, cs, width)
        if g.san is not None or kind is not None or spec is None or cv is None:
            return None
        if not (load or g.m == 1 or disjoint(off, (nb - 1) * gs + blb)):
            return None
        shape, goff, strides = spec
        args, new = g.args, np.ndarray
        cores = tuple(g.cores.tolist())
        rows = tuple((a + r * cs, width) for r in range(nb))  # the UB bytes it moves, row by row
        if not load:
            def store_step() -> None:
                new(shape, U8, args[arg].data, goff, strides)[...] = cv
            store_step.info = (forward.UbMove(cores, arg, spec, rows[0], False) if nb == 1 and space == "UB" else  # type: ignore[attr-defined]
                               forward.UbTouch(cores, reads=rows, gm_writes=((arg, spec),)) if space == "UB" else None)
            return store_step
        if pbl == blb:
            def load_step() -> None:
                cv[...] = new(shape, U8, args[arg].data, goff, strides)
            load_step.info = (forward.UbMove(cores, arg, spec, rows[0], True) if nb == 1 and space == "UB" else  # type: ignore[attr-defined]
                              forward.UbTouch(cores, writes=rows, gm_reads=(arg,)) if space == "UB" else None)
            return load_step
        head, tail = cv[:, :, :blb], cv[:, :, blb:]
        fill = np.frombuffer(pad_unit * ((pbl - blb) // size), U8)

        def padded_load_step() -> None:
            head[...] = new(shape, U8, args[arg].data, goff, strides)
            tail[...] = fill
        padded_load_step.info = (forward.UbTouch(cores, writes=rows, gm_reads=(arg,))  # type: ignore[attr-defined]
                                 if space == "UB" else None)
        return padded_load_step

    exe.bind = bind  # type: ignore[attr-defined]
    return h


def _c_copy_nd2nz(rt: ProgramInfo, idx: int, ins: isa.CopyNd2Nz) -> Callable:
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    r0, c0 = rt.chip.cube_block, rt.chip.fractal_c0(size)
    arg = ins.src.arg
    st = PipeSetup(rt, idx, ins.pipe, ins.path)
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
        if g.sel.__class__ is slice and ext == rows * cols * size:
            # no padding: the fractals go straight into L1 (a view of the cores' bytes), one copy fewer
            dst = arr[g.sel, a:a + ext].view(dt).reshape(g.m, cols // c0, rows, c0)
            dst[...] = x.reshape(g.m, rows, cols // c0, c0).transpose(0, 2, 1, 3)
            return
        nz = layouts.nd_to_nz(x, r0, c0)
        arr[g.sel, a:a + ext] = nz.reshape(g.m, -1).view(U8)

    def bind(g: Group, vals: tuple) -> Optional[Callable[[], None]]:
        off, a, rows, cols, rs, ext = vals
        spec = gm_view_spec(g, off, rows, rs * size, cols * size)
        if g.san is not None or g.sel.__class__ is not slice or spec is None:
            return None
        dst = g.mem["L1"][g.sel, a:a + ext].view(dt)
        if ext != rows * cols * size:  # zero padding to whole fractals: as recorded
            return None
        # L1 in the order of the GM rows' elements (the inverse of the NZ layout): one strided copy
        nz_order = strided_source(dst, np.argsort(index_map(
            lambda x: layouts.nd_to_nz(x.reshape(1, rows, cols), r0, c0), rows * cols)))
        if nz_order is None:
            return None
        shape, goff, strides = spec
        args, new, rows_shape = g.args, np.ndarray, nz_order.shape

        def step() -> None:
            np.copyto(nz_order, new(shape, U8, args[arg].data, goff, strides).view(dt).reshape(rows_shape))
        return step

    exe.bind = bind  # type: ignore[attr-defined]
    return h
