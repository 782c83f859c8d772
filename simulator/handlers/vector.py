"""Handlers of the vector unit."""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from .. import forward, isa, vector_math
from ..lockstep import Group, ProgramInfo
from ..isa import DTYPES
from .common import (
    get_uniform, get_optional, get_scalar, PipeSetup, chip_view, flat, region, out_view, store, rows_read, rows_write,
    U8,
)


# --------------------------------------------------------------------------- vector


class VectorSetup(PipeSetup):
    """Shared setup of a vector instruction: UB array, cost, checker."""

    def __init__(self, rt: ProgramInfo, idx: int, ins: isa.Instr, passes: Optional[tuple] = None):
        super().__init__(rt, idx, "V")
        c = rt.chip
        per = {"simple": c.vector_simple_cycles, "binary": c.vector_binary_cycles,
               "complex": c.vector_complex_cycles, "composite": c.vector_composite_cycles}
        # (cycles per repeat, element width) of each hardware instruction this one costs
        self.passes = [(per[p.cls], p.width) for p in (passes or isa.costs.passes(ins))]
        self.startup = c.vector_startup_cycles
        self.rb = c.vector_repeat_bytes

    def record(self, g: Group, reps: int, vals: Any, exe: Callable, elems: int = 0) -> None:
        """Charge `reps` repeats (of the instruction's own operands; a pass of another element width
        repeats over `elems` elements of that width), then issue `exe`."""
        self.chk.repeats(g, reps)
        cycles = 0
        for per, width in self.passes:
            cycles += self.startup + (reps if width == 0 else self.reps(elems * width)) * per
        self.op(g, cycles, vals, exe)

    def reps(self, nbytes: int) -> int:
        return max(1, -(-nbytes // self.rb))

    def check(self, g: Group, dst: tuple[int, int], *srcs: tuple[int, int]) -> None:
        for a, n in (dst,) + srcs:
            self.chk.onchip(g, "UB", a, n, "operand")
        for s in srcs:
            self.chk.no_partial_overlap(g, dst, s)

    def sanitize_ub(self, g: Group, reads: list, writes: list) -> None:
        if g.san is None:
            return
        self.sanitize(g, *[("UB", p, False) for p in reads], *[("UB", p, True) for p in writes])


# --------------------------------------------------------------------------- elementwise


def _elementwise(rt: ProgramInfo, idx: int, ins: isa.Instr, dst_dtype: str, ub_srcs: tuple = (), mixed: tuple = (),
                 compute: Optional[Callable] = None, write: Optional[Callable] = None,
                 ufunc: Optional[np.ufunc] = None, bind_write: Optional[Callable] = None) -> Callable:
    """Handler of an instruction that makes dst[i] from the sources' element i, for i < count.

    `ub_srcs`: (UB operand, dtype name) pairs; `mixed`: (operand, dtype name) pairs where the
    operand is a UB operand or a scalar (register or immediate, converted to the compute dtype
    of `ins.dtype`). Operands resolve in the order dst, ub_srcs, count, mixed: a register that
    differs across cores splits the group at the first such operand.

    The action is `store(compute(out, *values))`, where values are (cores, count) views of the UB
    sources and the converted scalars, and `out` a view of dst (None for an irregular core set,
    then the result is stored); or, given `write(g, dst, count, operands)`, that function with the
    sources' UB addresses and scalars. Repeats cover count elements of the widest operand.

    For replays (replay.py) the action binds to a step over views made once: `ufunc(*values, out=dst)` when
    that is all `compute` does (`ufunc`), else `compute(dst, *values)`; with `write`, `bind_write(g, dst,
    count, operands)` gives the step (or None: the action runs as recorded).
    """
    if getattr(ins, "rep", None) is not None:
        return _repeated(rt, idx, ins, dst_dtype, ub_srcs, mixed, compute)
    v = VectorSetup(rt, idx, ins)
    chk, ddt = v.chk, DTYPES[dst_dtype]
    dsize = ddt.itemsize
    gd, gn = get_uniform(ins.dst.offset), get_uniform(ins.count)
    early = tuple(get_uniform(m.offset) for m, _ in ub_srcs)
    late = tuple(get_uniform(x.offset) if isinstance(x, isa.Mem) else _scalar_getter(x, ins.dtype) for x, _ in mixed)
    # (position, itemsize, dtype) of the sources in UB; the widest operand sets the repeats
    in_ub = tuple((i, DTYPES[name].itemsize, DTYPES[name]) for i, (x, name) in enumerate(ub_srcs + mixed)
                  if isinstance(x, isa.Mem))
    wsize = max([dsize] + [DTYPES[name].itemsize for _, name in ub_srcs + mixed])
    in_ub_size = {i: s for i, s, _ in in_ub}
    checked: set = set()  # UB operands (d, n, addresses) already checked: a loop reruns an instruction on them

    # plain loops, not comprehensions: this is the lockstep executor's per-instruction path
    def h(g: Group) -> None:
        d = gd(g)
        ops = []
        for get in early:
            ops.append(get(g))
        n = gn(g)
        for get in late:
            ops.append(get(g))
        # the checks are a function of the destination, the count and the UB sources' addresses alone
        key = (d, n) + tuple(ops[i] for i, _, _ in in_ub)
        if key not in checked:
            chk.positive(g, count=n)
            srcs = []
            for i, s, _ in in_ub:
                srcs.append((ops[i], n * s))
            v.check(g, (d, n * dsize), *srcs)
            checked.add(key)
        v.record(g, v.reps(n * wsize), (d, n, tuple(ops)), exe, n)

    def exe(g: Group, vals: tuple) -> None:
        d, n, ops = vals
        ub = g.mem["UB"]
        if g.san is not None:
            v.sanitize_ub(g, [flat(ops[i], n * s) for i, s, _ in in_ub], [flat(d, n * dsize)])
        if write is not None:
            write(g, d, n, ops)
            return
        out = out_view(g, ub, d, n * dsize, ddt)
        args = list(ops)
        for i, s, dt in in_ub:
            args[i] = region(g, ub, ops[i], n * s, dt)
        store(g, ub, d, compute(out, *args), out)

    def bind(g: Group, vals: tuple) -> Optional[Callable[[], None]]:
        """The action as a step of a replay (replay.py): its UB operands are views made once."""
        if g.san is not None or g.sel.__class__ is not slice:
            return None
        d, n, ops = vals
        cores = tuple(g.cores.tolist())
        reads = tuple((ops[i], n * s) for i, s, _ in in_ub)
        if write is not None:
            step = bind_write(g, d, n, ops) if bind_write is not None else None
            if step is not None:
                step.info = forward.UbTouch(cores, reads, ((d, n * dsize),))
            return step
        ub = g.mem["UB"]
        out = out_view(g, ub, d, n * dsize, ddt)
        args = list(ops)
        for i, s, dt in in_ub:
            args[i] = region(g, ub, ops[i], n * s, dt)
        if ufunc is not None:
            step = partial(ufunc, *args, out=out, casting="unsafe")
            types = {i: dt for i, _, dt in in_ub}
            operands = tuple(((ops[i], n * in_ub_size[i]), types[i]) if i in types else ("scalar", x)
                             for i, x in enumerate(ops))
            step.info = forward.UbUfunc(cores, ufunc, operands, ((d, n * dsize), ddt))
            return step
        step = partial(compute, out, *args)
        step.info = forward.UbTouch(cores, reads, ((d, n * dsize),))
        return step

    exe.bind = bind  # type: ignore[attr-defined]
    exe.shareable = True  # type: ignore[attr-defined]  # on UB alone: its bound step is the action (replay.py)
    return h


def _repeated(rt: ProgramInfo, idx: int, ins: isa.Instr, dst_dtype: str, ub_srcs: tuple, mixed: tuple,
              compute: Optional[Callable]) -> Callable:
    """The `rep` form of an elementwise instruction: repeats of 8 blocks per operand at their block and
    repeat strides, only the elements of the mask computed (see isa.VRepeat)."""
    v = VectorSetup(rt, idx, ins)
    chip, chk, rep = rt.chip, v.chk, ins.rep
    dt = DTYPES[dst_dtype]
    size = dt.itemsize
    blk = chip.dma_block_bytes
    bpr, epb = chip.vector_repeat_bytes // blk, blk // size
    epr = bpr * epb
    srcs = tuple(x for x, _ in ub_srcs + mixed if isinstance(x, isa.Mem))
    strides = rep.src_strides(len(srcs))
    gd, gr = get_uniform(ins.dst.offset), get_uniform(rep.repeats)
    g_src = tuple(get_uniform(m.offset) for m in srcs)
    scalars = tuple(_scalar_getter(x, ins.dtype) for x, _ in mixed if not isinstance(x, isa.Mem))
    kinds = tuple(isinstance(x, isa.Mem) for x, _ in ub_srcs + mixed)
    mask = rep.mask if rep.mask is not None else (1 << epr) - 1
    active = np.array([e for e in range(epr) if mask >> e & 1], dtype=np.int64)
    mask_fits = not mask >> epr
    blocks = np.arange(bpr, dtype=np.int64)

    def layout(a: int, reps: int, pair: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(element index into the UB row, for the active elements of each repeat; start of each block)."""
        bs, rs = pair
        starts = a + (np.arange(reps, dtype=np.int64)[:, None] * rs + blocks[None, :] * bs) * blk
        elems = starts[:, active // epb] // size + (active % epb)[None, :]
        return elems.ravel(), starts.ravel()

    limit = chip.max_vector_stride
    too_far = [pair for pair in (rep.dst,) + tuple(strides) if max(pair) > limit]

    def h(g: Group) -> None:
        if not mask_fits:
            chk.bad(g, f"mask {rep.mask:#x} has bits beyond the {epr} {dst_dtype} elements of a repeat")
        if too_far:
            chk.bad(g, f"stride pair {too_far[0]} exceeds the {limit} blocks a stride field holds")
        d, reps = gd(g), gr(g)
        chk.positive(g, repeats=reps)
        addrs = [get(g) for get in g_src]
        vals = [get(g) for get in scalars]
        ops = [(d, rep.dst)] + list(zip(addrs, strides))
        for a, (bs, rs) in ops:
            last = a + ((reps - 1) * rs + (bpr - 1) * bs) * blk
            chk.onchip(g, "UB", a, last + blk - a, "operand")
        if reps > 1 and rep.dst[1] * blk < (bpr - 1) * rep.dst[0] * blk + blk:
            chk.bad(g, f"destination repeats overlap: a repeat stride of {rep.dst[1]} blocks is shorter than the "
                       f"{(bpr - 1) * rep.dst[0] + 1} blocks one repeat covers")
        v.record(g, reps, (d, reps, addrs, vals), exe, reps * epr)

    def exe(g: Group, vals_: tuple) -> None:
        d, reps, addrs, vals = vals_
        ub = g.mem["UB"]
        d_elems, d_blocks = layout(d, reps, rep.dst)
        src_layouts = [layout(a, reps, pair) for a, pair in zip(addrs, strides)]
        if g.san is not None:
            v.sanitize_ub(g, [(b, blk) for _, b in src_layouts], [(d_blocks, blk)])
        rows = ub[g.sel]
        typed = rows.view(dt)
        it_src, it_val = iter(src_layouts), iter(vals)
        args = [typed[:, next(it_src)[0]] if k else next(it_val) for k in kinds]
        if compute is not None:
            res = compute(None, *args)
        elif kinds[0]:        # a copy: the source's stored bits
            res = args[0]
        else:                 # a dup: the value in the destination's storage form
            res = vector_math.storage(np.broadcast_to(args[0], (g.m, d_elems.size)), dst_dtype)
        typed[:, d_elems] = res
        if g.sel.__class__ is not slice:
            ub[g.sel] = rows
    return h


def _scalar_getter(x: Any, dtype: str) -> Callable[[Group], Any]:
    if not isinstance(x, isa.Reg):  # an immediate: converted once, the same (read-only) operand every run
        value = vector_math.scalar_value(x, dtype)
        value.flags.writeable = False
        return lambda g: value
    get = get_scalar(x)
    return lambda g: vector_math.scalar_value(get(g), dtype)


def _c_vbinary(rt: ProgramInfo, idx: int, ins: isa.VBinary) -> Callable:
    fn, dtype = ins.fn, ins.dtype
    return _elementwise(rt, idx, ins, dtype, ((ins.a, dtype), (ins.b, dtype)),
                        compute=lambda out, a, b: vector_math.binary(fn, a, b, dtype, out),
                        ufunc=vector_math.binary_ufunc(fn, dtype))


def _c_vscalar(rt: ProgramInfo, idx: int, ins: isa.VScalar) -> Callable:
    fn, dtype = ins.fn, ins.dtype
    if ins.reverse:
        def compute(out: Any, x: np.ndarray, sv: Any) -> np.ndarray:
            return vector_math.binary(fn, sv, x, dtype, out)
    else:
        def compute(out: Any, x: np.ndarray, sv: Any) -> np.ndarray:
            return vector_math.binary(fn, x, sv, dtype, out)
    return _elementwise(rt, idx, ins, dtype, ((ins.src, dtype),), ((ins.scalar, dtype),), compute,
                        ufunc=None if ins.reverse else vector_math.binary_ufunc(fn, dtype))


def _c_vunary(rt: ProgramInfo, idx: int, ins: isa.VUnary) -> Callable:
    fn, dtype = ins.fn, ins.dtype
    return _elementwise(rt, idx, ins, dtype, ((ins.src, dtype),),
                        compute=lambda out, x: vector_math.unary(fn, x, dtype, out),
                        ufunc=vector_math.unary_ufunc(fn, dtype))


def _c_vcompare(rt: ProgramInfo, idx: int, ins: isa.VCompare) -> Callable:
    fn, dtype = ins.fn, ins.dtype
    return _elementwise(rt, idx, ins, "bool", ((ins.a, dtype),), ((ins.b, dtype),),
                        lambda out, a, b: vector_math.compare(fn, a, b, dtype, out))


def _c_vselect(rt: ProgramInfo, idx: int, ins: isa.VSelect) -> Callable:
    dtype = ins.dtype
    return _elementwise(rt, idx, ins, dtype, ((ins.mask, "bool"),), ((ins.a, dtype), (ins.b, dtype)),
                        lambda out, mask, a, b: vector_math.select(mask, a, b, dtype, out))


def _c_vcast(rt: ProgramInfo, idx: int, ins: isa.VCast) -> Callable:
    src, dst, rounding = ins.src_dtype, ins.dst_dtype, ins.round
    return _elementwise(rt, idx, ins, dst, ((ins.src, src),),
                        compute=lambda out, x: vector_math.cast(x, src, dst, rounding, out))


def _c_vdup(rt: ProgramInfo, idx: int, ins: isa.VDup) -> Callable:
    dt = DTYPES[ins.dtype]
    size = dt.itemsize

    def write(g: Group, d: int, n: int, ops: tuple) -> None:
        ub = g.mem["UB"]
        val = vector_math.storage(ops[0], ins.dtype)
        out = out_view(g, ub, d, n * size, dt)
        if out is not None:
            out[...] = val
        else:
            store(g, ub, d, np.full((g.m, n), val, dt), None)

    def bind_write(g: Group, d: int, n: int, ops: tuple) -> Callable[[], None]:
        out, val = out_view(g, g.mem["UB"], d, n * size, dt), vector_math.storage(ops[0], ins.dtype)
        return partial(np.copyto, out, val)
    return _elementwise(rt, idx, ins, ins.dtype, (), ((ins.value, ins.dtype),), write=write, bind_write=bind_write)


def _c_vcopy(rt: ProgramInfo, idx: int, ins: isa.VCopy) -> Callable:
    size = DTYPES[ins.dtype].itemsize

    def write(g: Group, d: int, n: int, ops: tuple) -> None:
        ub = g.mem["UB"]
        s, nb = ops[0], n * size
        ub[g.sel, d:d + nb] = ub[g.sel, s:s + nb]

    def bind_write(g: Group, d: int, n: int, ops: tuple) -> Callable[[], None]:
        ub, s, nb = g.mem["UB"], ops[0], n * size
        return partial(np.copyto, ub[g.sel, d:d + nb], ub[g.sel, s:s + nb])
    return _elementwise(rt, idx, ins, ins.dtype, ((ins.src, ins.dtype),), write=write, bind_write=bind_write)


# --------------------------------------------------------------------------- matrices


def _strided_rows(v: VectorSetup, ins: isa.Instr, stride_name: str, what: str) -> Callable[[Group], tuple]:
    """Operands (dst, src, rows, cols, row stride) of a matrix instruction whose `what` side has its
    rows `stride_name` elements apart (default cols), checked: positive sizes, each row fits its
    stride, rows after the first start on whole blocks."""
    size = DTYPES[ins.dtype].itemsize
    gd, gs = get_uniform(ins.dst.offset), get_uniform(ins.src.offset)
    gr, gc, grs = get_uniform(ins.rows), get_uniform(ins.cols), get_optional(getattr(ins, stride_name))
    chk = v.chk

    def resolve(g: Group) -> tuple:
        d, s, rows, cols = gd(g), gs(g), gr(g), gc(g)
        rs = grs(g) if grs is not None else cols
        chk.positive(g, rows=rows, cols=cols)
        chk.row_stride(g, stride_name, rs, cols)
        if rows > 1:
            chk.stride(g, "UB", rs * size, what)
        return d, s, rows, cols, rs
    return resolve


def _c_vreduce(rt: ProgramInfo, idx: int, ins: isa.VReduce) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    resolve = _strided_rows(v, ins, "src_row_stride", "source")
    fn, dtype = ins.fn, ins.dtype

    def h(g: Group) -> None:
        d, s, rows, cols, rs = resolve(g)
        src_n = ((rows - 1) * rs + cols) * size
        v.check(g, (d, rows * size), (s, src_n))
        v.record(g, rows * v.reps(cols * size), (d, s, rows, cols, rs), exe, rows * cols)

    def exe(g: Group, vals: tuple) -> None:
        ub = g.mem["UB"]
        d, s, rows, cols, rs = vals
        v.sanitize_ub(g, [(s, rows, rs * size, cols * size)], [flat(d, rows * size)])
        x = rows_read(g, ub, s, rows, rs * size, cols * size).view(dt)
        res = vector_math.reduce(fn, x, dtype)
        out = out_view(g, ub, d, rows * size, dt)
        if out is not None:
            out[...] = res
        else:
            store(g, ub, d, res, None)

    def bind(g: Group, vals: tuple) -> Optional[Callable[[], None]]:
        if g.san is not None or g.sel.__class__ is not slice:
            return None
        d, s, rows, cols, rs = vals
        ub = g.mem["UB"]
        x = chip_view(g, ub, s, rows, rs * size, cols * size).view(dt)
        out = out_view(g, ub, d, rows * size, dt)

        def step() -> None:
            np.copyto(out, vector_math.reduce(fn, x, dtype))
        step.info = forward.UbTouch(tuple(g.cores.tolist()), tuple((s + r * rs * size, cols * size)  # type: ignore[attr-defined]
                                                                   for r in range(rows)), ((d, rows * size),))
        return step

    exe.bind = bind  # type: ignore[attr-defined]
    return h


def _c_vbroadcast(rt: ProgramInfo, idx: int, ins: isa.VBroadcast) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    resolve = _strided_rows(v, ins, "dst_row_stride", "destination")
    axis = ins.axis

    def h(g: Group) -> None:
        d, s, rows, cols, rs = resolve(g)
        src_n = (rows if axis == 1 else cols) * size
        v.check(g, (d, ((rows - 1) * rs + cols) * size), (s, src_n))
        v.record(g, rows * v.reps(cols * size), (d, s, rows, cols, rs, src_n), exe)

    def exe(g: Group, vals: tuple) -> None:
        ub = g.mem["UB"]
        d, s, rows, cols, rs, src_n = vals
        v.sanitize_ub(g, [flat(s, src_n)], [(d, rows, rs * size, cols * size)])
        src = region(g, ub, s, src_n, dt)
        full = src[:, :, None] if axis == 1 else src[:, None, :]
        data = np.ascontiguousarray(np.broadcast_to(full, (g.m, rows, cols))).view(U8)
        rows_write(g, ub, d, rows, rs * size, data)

    def bind(g: Group, vals: tuple) -> Optional[Callable[[], None]]:
        if g.san is not None or g.sel.__class__ is not slice:
            return None
        d, s, rows, cols, rs, src_n = vals
        ub = g.mem["UB"]
        src = region(g, ub, s, src_n, dt)
        full = np.broadcast_to(src[:, :, None] if axis == 1 else src[:, None, :], (g.m, rows, cols))
        step = partial(np.copyto, chip_view(g, ub, d, rows, rs * size, cols * size).view(dt), full)
        step.info = forward.UbTouch(tuple(g.cores.tolist()), ((s, src_n),),  # type: ignore[attr-defined]
                                    tuple((d + r * rs * size, cols * size) for r in range(rows)))
        return step

    exe.bind = bind  # type: ignore[attr-defined]
    return h


def _c_vtranspose(rt: ProgramInfo, idx: int, ins: isa.VTranspose) -> Callable:
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    v = VectorSetup(rt, idx, ins, isa.costs.transpose_passes(size, rt.chip.transpose_itemsize))
    blk = rt.chip.transpose_block
    gd, gs = get_uniform(ins.dst.offset), get_uniform(ins.src.offset)
    gr, gc = get_uniform(ins.rows), get_uniform(ins.cols)
    gss, gds = get_optional(ins.src_row_stride), get_optional(ins.dst_row_stride)

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
        # the hardware transposes whole 16 x 16 blocks: padded dims set the cost
        padded = -(-rows // blk) * blk * (-(-cols // blk) * blk)
        v.record(g, v.reps(padded * size), (d, s, rows, cols, ss, ds), exe, padded)

    def exe(g: Group, vals: tuple) -> None:
        ub = g.mem["UB"]
        d, s, rows, cols, ss, ds = vals
        v.sanitize_ub(g, [(s, rows, ss * size, cols * size)], [(d, cols, ds * size, rows * size)])
        x = rows_read(g, ub, s, rows, ss * size, cols * size).view(dt)
        data = np.ascontiguousarray(x.transpose(0, 2, 1)).view(U8)
        rows_write(g, ub, d, cols, ds * size, data)
    return h


def _c_vgather(rt: ProgramInfo, idx: int, ins: isa.VGather) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size, i32 = dt.itemsize, np.dtype(np.int32)
    gd, gs, go, gn = (get_uniform(x) for x in (ins.dst.offset, ins.src.offset, ins.offsets.offset, ins.count))
    ub_bytes = rt.chip.ub_bytes

    def h(g: Group) -> None:
        d, s, o, n = gd(g), gs(g), go(g), gn(g)
        v.chk.positive(g, count=n)
        v.check(g, (d, n * size), (o, n * 4))
        v.chk.onchip(g, "UB", s, size, "gather base")
        v.record(g, v.reps(n * size), (d, s, o, n), exe, n)

    def exe(g: Group, vals: tuple) -> None:
        d, s, o, n = vals
        ub = g.mem["UB"]
        addrs = s + region(g, ub, o, n * 4, i32).astype(np.int64)
        bad = (addrs % size != 0) | (addrs < 0) | (addrs + size > ub_bytes)
        if bad.any():
            j, k = (int(x[0]) for x in np.nonzero(bad))
            a = int(addrs[j, k])
            v.chk.fail(g, f"gathers element {k} from UB address {a:#x}, off its {size}-byte element or outside the "
                       f"{ub_bytes}-byte UB", "gathered elements are aligned and inside UB", "UB", a, a + size,
                       core=int(g.cores[j]))
        if g.san is not None:
            v.sanitize_ub(g, [flat(o, n * 4), (np.unique(addrs), size)], [flat(d, n * size)])
        got = np.take_along_axis(ub[g.sel].view(dt), addrs // size, axis=1)
        out = out_view(g, ub, d, n * size, dt)
        if out is not None:
            out[...] = got
        else:
            store(g, ub, d, got, None)
    return h


# --------------------------------------------------------------------------- sorting


def _sort_key(values: np.ndarray) -> np.ndarray:
    """A key whose ascending order is the descending order of `values`, NaN first (the largest)."""
    v = values.astype(np.float64)
    return np.where(np.isnan(v), -np.inf, -v)


def _pairs(values: np.ndarray, index: np.ndarray, dt: np.dtype) -> np.ndarray:
    """(cores, n) values and int32 indices as (cores, n * 8) bytes of (value, index) pairs."""
    m, n = values.shape
    out = np.zeros((m, n, isa.SORT_PAIR_BYTES), U8)
    out[:, :, :dt.itemsize] = values.astype(dt).reshape(m, n, 1).view(U8)
    out[:, :, 4:] = index.astype(np.int32).reshape(m, n, 1).view(U8)
    return out.reshape(m, n * isa.SORT_PAIR_BYTES)


def _unpair(raw: np.ndarray, dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    m = raw.shape[0]
    p = raw.reshape(m, -1, isa.SORT_PAIR_BYTES)
    values = np.ascontiguousarray(p[:, :, :dt.itemsize]).view(dt).reshape(m, -1)
    index = np.ascontiguousarray(p[:, :, 4:]).view(np.int32).reshape(m, -1)
    return values, index


def _c_vsort32(rt: ProgramInfo, idx: int, ins: isa.VSort32) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    size = dt.itemsize
    gd, gs, gi, gn = (get_uniform(x) for x in (ins.dst.offset, ins.src.offset, ins.idx.offset, ins.count))

    def h(g: Group) -> None:
        d, s, i, n = gd(g), gs(g), gi(g), gn(g)
        v.chk.positive(g, count=n)
        if n % isa.SORT_GROUP:
            v.chk.fail(g, f"sorts {n} elements, not a multiple of {isa.SORT_GROUP}",
                       f"vsort32 sorts whole groups of {isa.SORT_GROUP}", "UB", s, s + n * size)
        v.check(g, (d, n * isa.SORT_PAIR_BYTES), (s, n * size), (i, n * 4))
        v.record(g, n // isa.SORT_GROUP, (d, s, i, n), exe, n)  # one repeat sorts one group

    def exe(g: Group, vals: tuple) -> None:
        d, s, i, n = vals
        ub = g.mem["UB"]
        v.sanitize_ub(g, [flat(s, n * size), flat(i, n * 4)], [flat(d, n * isa.SORT_PAIR_BYTES)])
        values = region(g, ub, s, n * size, dt).reshape(-1, n // isa.SORT_GROUP, isa.SORT_GROUP)
        index = region(g, ub, i, n * 4, np.dtype(np.int32)).reshape(values.shape)
        order = np.argsort(_sort_key(values), axis=-1, kind="stable")
        sv = np.take_along_axis(values, order, axis=-1).reshape(values.shape[0], n)
        si = np.take_along_axis(index, order, axis=-1).reshape(values.shape[0], n)
        store(g, ub, d, _pairs(sv, si, dt), None)
    return h


def _c_vmrgsort4(rt: ProgramInfo, idx: int, ins: isa.VMrgSort4) -> Callable:
    v = VectorSetup(rt, idx, ins)
    dt = DTYPES[ins.dtype]
    gd, gs = get_uniform(ins.dst.offset), get_uniform(ins.src.offset)
    gl = tuple(get_uniform(x) for x in (ins.len0, ins.len1, ins.len2, ins.len3))
    pair = isa.SORT_PAIR_BYTES

    def h(g: Group) -> None:
        d, s = gd(g), gs(g)
        lens = tuple(f(g) for f in gl)
        total = sum(lens)
        if any(n < 0 for n in lens) or total == 0:
            v.chk.fail(g, f"merges lists of lengths {lens}", "lengths are non-negative and not all zero", "UB", s, s)
        v.check(g, (d, total * pair), (s, total * pair))
        if d < s + total * pair and s < d + total * pair:
            v.chk.fail(g, "a merge cannot work in place: source and destination overlap",
                       "merge operands are disjoint", "UB", d, d + total * pair)
        v.record(g, v.reps(total * pair), (d, s, lens), exe, total)

    def exe(g: Group, vals: tuple) -> None:
        d, s, lens = vals
        total = sum(lens)
        ub = g.mem["UB"]
        v.sanitize_ub(g, [flat(s, total * pair)], [flat(d, total * pair)])
        values, index = _unpair(region(g, ub, s, total * pair, U8), dt)
        key, start = _sort_key(values), 0
        for n in lens:  # the hardware merges sorted lists: one that is not sorted is the program's bug
            if n > 1 and (np.diff(key[:, start:start + n], axis=-1) < 0).any():
                v.chk.fail(g, f"merges a list of {n} pairs at UB {s + start * pair:#x} that is not sorted in "
                           "descending order", "vmrgsort4 merges lists vsort32 (or an earlier merge) sorted", "UB",
                           s + start * pair, s + (start + n) * pair)
            start += n
        # list order breaks ties: a stable sort of the concatenated sorted lists by the descending key is the merge
        order = np.argsort(_sort_key(values), axis=-1, kind="stable")
        store(g, ub, d, _pairs(np.take_along_axis(values, order, axis=-1),
                               np.take_along_axis(index, order, axis=-1), dt), None)
    return h
