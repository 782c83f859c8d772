"""The vector template: pointwise chains and row reductions (with prologue and epilogue) on AIV cores.

The analysis (independent of tile sizes) is `vector_kernel.analyze`; the
tile ops of one tile come from `placement.Placement`.

Schedule (`schedule`, for one `VectorTiling`): tiles are `tr` whole rows of
one outer index ("rows" mode) or, when a row is too long for one tile, a
chunk of `tw` elements of one row ("chunks" mode; pointwise only: a row
reduction over rows longer than a tile is the multi-pass template). Tiles
are numbered in row-major order and split over the cores in contiguous
runs, balanced within one tile. Per tile: MTE2 loads of the per-tile inputs,
the vector ops, MTE3 stores of the outputs; rotating buffers have
`buffer_num` slots (slot = tile counter mod buffer_num), so loads of tile
i+1, compute on tile i and stores of tile i-1 overlap. Resident inputs (a
row broadcast over all rows, a scalar) are loaded and expanded once before
the tile loop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip, data_path, itemsize
from ..cost import launch_cycles
from ..domain import UnsupportedDomain
from ..kernel_graph import kernel_symbols
from ..schedule import BLOCKS, CORE, GmParam, Let, Loop, Stmt, TileSchedule
from ..template import Job, Template, Unsupported, buffer_nums, free_symbols
from ..tiling import largest_fitting
from ..vector_ops import Geometry
from . import multipass, vector_kernel
from .placement import Placement, decompose
from .vector_kernel import VectorKernel, VectorTiling, buffers_for, in_param, out_param, padded_row, stride_fields

F = sy.sym


@dataclass
class _Ctx:
    vk: VectorKernel
    tiling: VectorTiling
    fields: dict[str, IntLike] = field(default_factory=dict)
    params: list[GmParam] = field(default_factory=list)


def schedule(vk: VectorKernel, tiling: VectorTiling, chip: Chip) -> TileSchedule:
    d = vk.domain
    ctx = _Ctx(vk, tiling)
    fields = ctx.fields
    rows_mode = tiling.mode == "rows"
    fields["R"] = d.R
    fields["C"] = d.C
    for j, o in enumerate(d.outer):
        fields[f"O{j}"] = o
    fields["tr"] = tiling.rows
    if rows_mode:
        fields["Cp"] = padded_row(vk)
    else:
        fields["tw"] = tiling.width
    total, blocks = launch_shape(vk, tiling, chip)
    fields["T"] = total
    # the expressions of the body, over fields, the core index, loop variables and named values (Let)
    R, C, tr, Tn = F("R"), F("C"), F("tr"), F("T")
    per = sy.ceildiv(Tn, F(BLOCKS))
    begin = sy.mul(F(CORE), per)
    count = sy.max_(0, sy.min_(per, sy.add(Tn, sy.mul(-1, begin))))
    lets: list[Stmt] = [Let("t", sy.add(begin, F("i")))]
    if rows_mode:
        ntr_f = sy.ceildiv(R, tr)
        lets.append(Let("rb", sy.mod(F("t"), ntr_f)))
        rest = sy.floordiv(F("t"), ntr_f)
        c0: IntLike = 0
        cols: IntLike = C
    else:
        ntc_f = sy.ceildiv(C, F("tw"))
        lets += [Let("cb", sy.mod(F("t"), ntc_f)), Let("row", sy.floordiv(F("t"), ntc_f))]
        lets += [Let("rb", sy.mod(F("row"), sy.ceildiv(R, tr)))]
        rest = sy.floordiv(F("row"), sy.ceildiv(R, tr))
        lets += [Let("c0", sy.mul(F("cb"), F("tw"))), Let("cols", sy.min_(F("tw"), sy.add(C, sy.mul(-1, F("c0")))))]
        c0, cols = F("c0"), F("cols")
    o_index: list[IntLike] = []
    if d.outer:
        lets.append(Let("o", rest))
        for j, e in enumerate(decompose(F("o"), len(d.outer))):
            lets.append(Let(f"o{j}", e))
            o_index.append(F(f"o{j}"))
    lets.append(Let("r0", sy.mul(F("rb"), tr)))
    r0 = F("r0")
    if rows_mode:
        lets.append(Let("rows", sy.min_(tr, sy.add(R, sy.mul(-1, r0)))))
        rows: IntLike = F("rows")
    else:
        rows = 1
    stride = F("Cp") if rows_mode else cols
    full_count = sy.mul(rows, F("Cp")) if rows_mode else cols
    geom = Geometry(full=full_count, row=rows, rows=rows, cols=cols, stride=stride)
    slot = sy.mod(F("i"), tiling.buffer_num) if tiling.buffer_num > 1 else 0
    place = Placement(vk, tiling, geom, slot, r0, c0, o_index, rows_mode)
    for i, use in enumerate(vk.kg.inputs):
        ctx.params.append(GmParam(in_param(i), use.type.dtype, "in"))
    for i, v in enumerate(vk.kg.outputs):
        ctx.params.append(GmParam(out_param(i), v.type.dtype, "out"))
    fields.update(stride_fields(vk))
    pre: list[Stmt] = place.prologue()
    work = place.compute(vk.body) if vk.repeat is None else vk.repeat.tile_work(place)
    tile: list[Stmt] = lets + place.loads() + work + place.stores()
    loop = Loop("i", 0, count, 1, tile, note="tiles of this core")
    buffers = buffers_for(vk, tiling, chip)
    notes = [f"domain {tuple(d.shape)} -> outer {tuple(d.outer)}, R={d.R}, C={d.C}", f"tiling: {tiling.describe()}"]
    return TileSchedule(vk.name, "aiv", ctx.params, fields, blocks, buffers, pre + [loop], notes)


def launch_shape(vk: VectorKernel, tiling: VectorTiling, chip: Chip) -> tuple[IntLike, IntLike]:
    """(tiles, cores launched) over the dims: tiles in row-major order split over the cores in contiguous runs."""
    d = vk.domain
    n_ct: IntLike = 1 if tiling.mode == "rows" else sy.ceildiv(d.C, tiling.width)
    total = sy.mul(d.outer_count, sy.ceildiv(d.R, tiling.rows), n_ct)
    cores = min(tiling.cores, chip.aiv_cores)
    return total, sy.ceildiv(total, sy.max_(1, sy.ceildiv(total, cores)))


# ---- a lower bound on the score -----------------------------------------------------------------------


def bound(vk: VectorKernel, tiling: VectorTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """A lower bound on `cost.estimate(schedule(vk, tiling, chip), dims, chip)` from the launch shape alone.

    What `schedule` certainly does: core 0 (the largest share) runs n tiles, each loading every per-tile input
    once and storing every output once (plain moves, whatever the body between), after one load per resident
    input. The cost walker charges a GM move at least its path's start-up, a loop of n iterations at least
    n - 1 times an iteration's busiest pipe plus its last iteration's span (the sum of its ops), a block the
    sum of its statements; the launch its start-up for the cores. Everything else (bytes over bandwidth,
    vector work, the GM time of the whole launch) only adds. Multi-pass tilings get 0: no bound."""
    if tiling.mode not in ("rows", "chunks"):
        return 0.0
    total, blocks = launch_shape(vk, tiling, chip)
    t, b = sy.evaluate(total, dims), sy.evaluate(blocks, dims)
    if b <= 0:
        return 0.0
    n = max(0, min(-(-t // b), t))
    load = getattr(chip, data_path("GM", "UB").cost).startup
    store = getattr(chip, data_path("UB", "GM").cost).startup
    loads, stores = len(vk.per_tile) * load, len(vk.plan.outputs) * store
    tiles = (n - 1) * max(loads, stores) + loads + stores if n else 0
    return launch_cycles(chip, b) + len(vk.resident) * load + tiles


# ---- candidates ---------------------------------------------------------------------------------------


def tilings(vk: VectorKernel, chip: Chip, buffer_num: int, cores: int) -> list[VectorTiling]:
    """Tile sizes worth scoring: the largest that fits UB, and sizes that balance the tiles over the cores."""
    cores = max(1, min(cores, chip.aiv_cores))
    out: list[VectorTiling] = []
    d = vk.domain
    slot_cap = chip.max_repeats * chip.vector_repeat_bytes
    for bn in buffer_nums(buffer_num):
        if vk.mode == "rows":
            cp = padded_row(vk)
            if not isinstance(cp, int):
                continue
            rows_total = d.R if isinstance(d.R, int) else None
            biggest = largest_fitting(lambda tr: _fits(vk, VectorTiling("rows", tr, 0, bn, cores), chip, slot_cap),
                               rows_total or (slot_cap // max(1, cp)))
            if biggest < 1:
                continue
            sizes = {biggest}
            outer = d.outer_count if isinstance(d.outer_count, int) else 1
            if rows_total:
                for k in (1, 2, 3, 4, 8):
                    per_outer = -(-cores * k // max(1, outer))
                    sizes.add(max(1, min(biggest, -(-rows_total // per_outer))))
            out += [VectorTiling("rows", tr, 0, bn, cores) for tr in sorted(sizes, reverse=True)]
        else:
            quantum = max(1, chip.gm_peak_align // vk.min_itemsize)  # chunks start on the GM peak boundary
            total = d.C if isinstance(d.C, int) else None
            limit = total if total else slot_cap
            biggest = largest_fitting(lambda w: _fits(vk, VectorTiling("chunks", 1, w, bn, cores), chip, slot_cap), limit)
            if biggest < 1:
                continue
            sizes = {biggest if biggest < quantum or (total and biggest == total) else biggest // quantum * quantum}
            rows = (d.R if isinstance(d.R, int) else 1) * (d.outer_count if isinstance(d.outer_count, int) else 1)
            if total:
                for k in (1, 2, 3, 4, 8):
                    per_row = -(-cores * k // max(1, rows))
                    w = -(-total // per_row)
                    w = -(-w // quantum) * quantum if w > quantum else w
                    sizes.add(max(1, min(biggest, w)))
            out += [VectorTiling("chunks", 1, w, bn, cores) for w in sorted(sizes, reverse=True)]
    return out


def _fits(vk: VectorKernel, tiling: VectorTiling, chip: Chip, slot_cap: int) -> bool:
    if tiling.mode == "rows" and vk.reduces and not _rows_split_aligned(vk, tiling, chip):
        return False
    bufs = buffers_for(vk, tiling, chip)
    return all(b.slot_bytes <= slot_cap for b in bufs) and sum(b.nbytes for b in bufs) <= chip.ub_bytes


def _rows_split_aligned(vk: VectorKernel, tiling: VectorTiling, chip: Chip) -> bool:
    """A reduction over rows too long for 255 repeats in blocks of rows must still split on whole UB blocks
    of its per-row results: either one instruction covers every row of a tile, or a block of rows fits."""
    cp = padded_row(vk)
    worst = max(itemsize(b.dtype) for b in vk.plan.buffers)
    per_row = -(-cp * worst // chip.vector_repeat_bytes)
    if per_row == 0:
        return True  # empty rows: nothing to reduce per instruction
    fit = chip.max_repeats // per_row
    return tiling.rows <= fit or fit >= chip.ub_align // vk.min_itemsize


# ---- the template -------------------------------------------------------------------------------------


def _analyze(job: Job, chip: Chip) -> list[VectorKernel]:
    """One analysis per mode that can lower the kernel: rows and chunks for a pointwise kernel, rows and
    multi-pass for a row reduction (`job.options["rows"]`: its input shape, "k": the axes it reduces)."""
    rows = job.options.get("rows")
    modes = ("rows", "multipass") if rows is not None else ("rows", "chunks")
    try:
        return vector_kernel.analyze_modes(job.label, job.subject, rows, job.options.get("k", 0), modes,
                                           chip.ub_align)
    except UnsupportedDomain as e:   # the reason is the same in every mode
        raise Unsupported(str(e)) from None


def _tilings(vk: VectorKernel, chip: Chip, buffer_num: int, cores: int) -> list[VectorTiling]:
    return (multipass.tilings if vk.mode == "multipass" else tilings)(vk, chip, buffer_num, cores)


def _schedule(vk: VectorKernel, t: VectorTiling, chip: Chip) -> TileSchedule:
    return (multipass.schedule if t.mode == "multipass" else schedule)(vk, t, chip)


def _need(vk: VectorKernel, t: VectorTiling, chip: Chip) -> int:
    return (multipass.ub_bytes if vk.mode == "multipass" else vector_kernel.ub_bytes)(vk, t, chip)


def _admits(vk: VectorKernel, chip: Chip) -> str:
    """Each input load of a tile is waited for by its own MTE2->V flag: more inputs than event ids never tile."""
    loads = len(vk.per_tile) + len(vk.resident)
    if loads > chip.event_ids:
        return (f"its {loads} input loads per tile need more than the chip's {chip.event_ids} event ids for "
                f"MTE2->V flags")
    return ""


def _symbols(vk: VectorKernel) -> set[str]:
    return free_symbols(list(vk.domain.shape)) | kernel_symbols(vk.kg)


TEMPLATE = Template("vector", "aiv", VectorTiling, _analyze, _tilings, _schedule, _symbols, need=_need,
                    bound=bound, admits=_admits)
