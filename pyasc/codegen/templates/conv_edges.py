"""A conv's region edges on the vector cores: its ND input into NC1HWC0, its NC1HWC0 result back to ND (AIV).

GE's `conv_edge_fold` gives a conv an ND feature map (`x` ND, the result NC1HWC0) or an ND result
(`out_format="ND"`); its launch (templates/conv_launch.py) then converts on the vector cores, around the cube:

- in (`ConvEdge` with `to_nd=False`): x ND -> NC1HWC0 into a workspace the cube reads after the all-core
  barrier; exactly the transdata template's schedule (templates/formats.py).
- out (`to_nd=True`): the cube's NC1HWC0 result (a workspace, written before a second all-core barrier) ->
  ND, and on the way the residual (`residual`: an ND tensor of the result's shape, in1) added and the ReLU
  (`relu`) applied. With a residual the cube writes its accumulator's float32 (`src_dtype`), the residual is
  brought into NC1HWC0 (a vtranspose), cast and added in float32, and the sum rounded once to the result's
  dtype: the numerics of `fused_conv2d` (one rounding after the residual, as the cube's L0C add had).

The same schedules run as launches of their own when the conv's launch cannot take them (codegen's
`conv_jobs`: the mixed launch refused, or mixed kernels are disabled).
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip, itemsize
from .. import tileops as T
from ..schedule import Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from ..template import Template, buffer_nums
from ..tiling import largest_fitting
from . import formats
from .formats import Conversion
from .moves import MoveTiling
from .tiles import FieldSet, clamp_extent, decompose, split_over_cores
from .vector_kernel import in_param, out_param

F = sy.sym


@dataclass(frozen=True)
class ConvEdge:
    """One edge conversion of a conv's region (see the module docstring)."""

    cv: Conversion
    src_dtype: str           # what in0 holds: the conversion's dtype, or float32 (the cube's sum) with a residual
    residual: bool = False   # to ND: add in1 (ND, the result's dtype) in src_dtype
    relu: bool = False       # to ND: then the ReLU

    @property
    def name(self) -> str:
        return self.cv.name

    @property
    def plain(self) -> bool:
        """Only a conversion: the transdata template's own schedule."""
        return not (self.residual or self.relu) and self.src_dtype == self.cv.dtype


def buffers(e: ConvEdge, t: MoveTiling) -> list[Buffer]:
    cv = e.cv
    if e.plain:
        return formats.buffers(cv, t)
    bn, c0, size = t.slots(), cv.c0, cv.itemsize
    chw = c0 * cv.padded(t.rows) * size
    # the tile's two loads (the cube's result, the residual's channel rows) share one buffer: one event per
    # slot hands both to the vector unit (the phases of a conv launch share the vector cores' event ids)
    loaded = _acc_bytes(e, t) + (chw if e.residual else 0)
    out = [Buffer("tin", "UB", e.src_dtype, loaded, bn, "the cube's result, pixels x c0"
                  + (" | the residual's channel rows" if e.residual else "")),
           Buffer("chw", "UB", cv.dtype, chw, bn, "channel rows")]
    if e.src_dtype != cv.dtype:
        out.append(Buffer("hwc", "UB", cv.dtype, t.rows * c0 * size, bn, f"the result in {cv.dtype}, pixels x c0"))
    if e.residual:
        out.append(Buffer("rhwc", "UB", cv.dtype, t.rows * c0 * size, bn, "residual, pixels x c0"))
        if e.src_dtype != cv.dtype:
            out.append(Buffer("rwide", "UB", e.src_dtype, t.rows * c0 * itemsize(e.src_dtype), bn,
                              f"residual in {e.src_dtype}"))
    return out


def _acc_bytes(e: ConvEdge, t: MoveTiling) -> int:
    return t.rows * e.cv.c0 * itemsize(e.src_dtype)


def need(e: ConvEdge, t: MoveTiling) -> int:
    return sum(b.nbytes for b in buffers(e, t))


def fits(e: ConvEdge, t: MoveTiling, chip: Chip, ub_bytes: int) -> bool:
    if need(e, t) > ub_bytes or t.rows > chip.max_nburst:
        return False
    widest = max(itemsize(e.src_dtype), e.cv.itemsize)
    return -(-t.rows * e.cv.c0 * widest // chip.vector_repeat_bytes) <= chip.max_repeats


def tilings(e: ConvEdge, chip: Chip, buffer_num: int, cores: int, ub_bytes: int | None = None) -> list[MoveTiling]:
    """The tallest tile that fits `ub_bytes` (default: the UB) and the sizes giving every core 1, 2, 4 or 8
    tiles; double-buffered where `buffer_num` allows."""
    ub = chip.ub_bytes if ub_bytes is None else ub_bytes
    cv = e.cv
    cores = max(1, min(cores, chip.aiv_cores))
    total = max(1, cv.rows)
    out: set[MoveTiling] = set()
    for bn in buffer_nums(buffer_num):
        tall = largest_fitting(lambda r: fits(e, MoveTiling(r, cv.c0, bn, cores), chip, ub), total)
        if tall < 1:
            continue
        sizes = {tall}
        strips = max(1, cv.batch * cv.blocks_of_cols)
        for k in (1, 2, 4, 8):
            r = -(-total // -(-cores * k // strips))
            sizes.add(max(1, min(tall, r)))
        out.update(MoveTiling(r, cv.c0, bn, cores) for r in sizes)
    return sorted(out, key=lambda t: (-t.buffer_num, -t.rows))


def per_core_cycles(e: ConvEdge, t: MoveTiling, cores: int, chip: Chip) -> float:
    """A rough time of the busiest core (what the cube waits for, or the launch's end), to rank tiles: its
    tiles' moves (each with its start-up), one after the other single-buffered, overlapped double-buffered
    (the slower direction's pace after the first tile)."""
    cv = e.cv
    tiles = -(-(cv.batch * cv.blocks_of_cols * -(-cv.rows // t.rows)) // max(1, cores))
    pixels = t.rows * cv.c0
    inward = chip.gm_to_ub.cycles(pixels * itemsize(e.src_dtype))
    if e.residual:
        inward += chip.gm_to_ub.cycles(pixels * cv.itemsize)
    outward = chip.ub_to_gm.cycles(pixels * cv.itemsize)
    if t.buffer_num > 1:
        return inward + outward + (tiles - 1) * max(inward, outward)
    return tiles * (inward + outward)


def schedule(e: ConvEdge, t: MoveTiling, chip: Chip) -> TileSchedule:
    if e.plain:
        return formats.schedule(e.cv, t, chip)
    cv = e.cv
    fs = FieldSet()
    total = cv.batch * cv.blocks_of_cols * -(-cv.rows // t.rows)
    blocks, begin, count = split_over_cores(fs, total, min(t.cores, chip.aiv_cores))
    lets: list[Stmt] = [Let("t", sy.add(begin, F("i")))]
    lets += decompose(F("t"), [("b", cv.batch), ("s", cv.blocks_of_cols), ("rb", -(-cv.rows // t.rows))])
    lets += [Let("r0", sy.mul(F("rb"), t.rows)), Let("rows", clamp_extent(t.rows, cv.rows, F("r0"))),
             Let("vcols", sy.min_(cv.c0, sy.add(cv.cols, sy.mul(-1, sy.mul(F("s"), cv.c0)))))]
    params = [GmParam(in_param(0), e.src_dtype, "in")]
    if e.residual:
        params.append(GmParam(in_param(1), cv.dtype, "in"))
    params.append(GmParam(out_param(0), cv.dtype, "out"))
    loop = Loop("i", 0, count, 1, lets + _to_nd(e, t, t.slot("i")), note="tiles of this core")
    what = " + residual" if e.residual else ""
    notes = cv.notes + [f"on the way: {e.src_dtype}{what}{' relu' if e.relu else ''} -> {cv.dtype}",
                        f"tiling: {t.describe()}"]
    return TileSchedule(cv.name, "aiv", params, fs.fields, blocks, buffers(e, t), [loop], notes)


def _to_nd(e: ConvEdge, t: MoveTiling, slot: IntLike) -> list[Stmt]:
    cv = e.cv
    nchw, blocked = formats.nc_offsets(cv)
    c0, hp = cv.c0, cv.padded(t.rows)
    wide = e.src_dtype
    acc, hwc, chw = Ref("tin", slot), Ref("hwc", slot), Ref("chw", slot)
    n = sy.mul(F("rows"), c0)
    out: list[Stmt] = [T.load(acc, GmRef(in_param(0), sy.mul(blocked, itemsize(wide))), wide, n,
                              note="the cube's NC1HWC0 rows")]
    if e.residual:
        rchw, rhwc = Ref("tin", slot).at(_acc_bytes(e, t)), Ref("rhwc", slot)
        pad = sy.add(c0, sy.mul(-1, F("vcols")))
        out += [When(sy.lt(0, pad), [T.vdup(rchw.at(sy.mul(F("vcols"), hp * cv.itemsize)), 0, sy.mul(pad, hp),
                                            cv.dtype, note="zero the padding channels")]),
                T.load(rchw, GmRef(in_param(1), sy.mul(nchw, cv.itemsize)), cv.dtype, F("rows"), F("vcols"),
                       src_stride=cv.rows, dst_stride=hp, note="residual channel rows"),
                T.vtranspose(rhwc, rchw, c0, F("rows"), cv.dtype, src_row_stride=hp, dst_row_stride=c0,
                             note="residual, pixels x c0")]
        r = rhwc
        if wide != cv.dtype:
            r = Ref("rwide", slot)
            out.append(T.vcast(r, rhwc, n, cv.dtype, wide, note=f"residual to {wide}"))
        out.append(T.vbinary("add", acc, acc, r, n, wide, note="+ residual"))
    if e.relu:
        out.append(T.vunary("relu", acc, acc, n, wide, note="relu"))
    src = acc
    if wide != cv.dtype:
        out.append(T.vcast(hwc, acc, n, wide, cv.dtype, round="rint", note=f"round to {cv.dtype} once"))
        src = hwc
    out += [T.vtranspose(chw, src, F("rows"), c0, cv.dtype, src_row_stride=c0, dst_row_stride=hp,
                         note="channel rows"),
            T.store(GmRef(out_param(0), sy.mul(nchw, cv.itemsize)), chw, cv.dtype, F("rows"), F("vcols"),
                    src_stride=hp, dst_stride=cv.rows, note="the valid channels")]
    return out


def _tilings(e: ConvEdge, chip: Chip, buffer_num: int, cores: int) -> list[MoveTiling]:
    if e.plain:
        return formats.tilings(e.cv, chip, buffer_num, cores)
    return tilings(e, chip, buffer_num, cores)


TEMPLATE = Template("conv_edge", "aiv", MoveTiling, lambda job, chip: [job.subject], _tilings, schedule,
                    lambda e: set())
