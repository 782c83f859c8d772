"""Row reductions over rows longer than one tile: several passes over each row, one chunk at a time.

The kernel's reductions are ordered by level (a reduction whose input
depends on another's result is one level higher: softmax's sum after its
max). Pass l streams the row's chunks, recomputes the full-size values the
level-l reductions need, reduces each chunk into a partial and folds it into
an accumulator (initialised to the reduction's identity); after the pass the
per-row values that depend only on finished reductions are computed. A final
pass streams the chunks once more to compute and store the full-size
outputs. Every value is computed from the inputs and finished per-row
results, so the result is the single-pass one (softmax still subtracts the
row max before exponentiating: numerically stable).

Rows are split over the cores. A kernel with a single row (a full
reduction, axis=None) splits the row's chunks over the cores instead: each
core accumulates its chunks, writes its partials to a GM scratch area, all
cores meet at `sync_all`, and each core folds all partials (the same result
on every core); the final pass is split the same way and core 0 stores the
per-row results.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ...target import Chip, DTYPES, itemsize

from ... import symbolic as sy
from ...symbolic import IntLike
from .. import tileops as T
from ..schedule import BLOCKS, CORE, Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from ..template import buffer_nums, ub_slot
from ..tiling import largest_fitting
from ..ub_alloc import assign
from ..vector_ops import Geometry, Space, VKind, VOp
from .placement import Placement, decompose
from .vector_kernel import VectorKernel, VectorTiling, in_param, out_param, stride_fields

F = sy.sym
SCRATCH = "part"         # the GM scratch parameter of a split (single-row) kernel

_COMBINE = {"sum": "add", "max": "max", "min": "min"}


@dataclass
class Pass:
    level: int
    loop_ops: list[VOp] = field(default_factory=list)    # full-size ops and the level's reductions, per chunk
    after: list[VOp] = field(default_factory=list)       # per-row ops once the level's reductions are done


@dataclass
class PassPlan:
    before: list[VOp]          # per-row ops that need no reduction
    passes: list[Pass]
    final: list[VOp]           # full-size ops of the outputs, per chunk

    def linear(self) -> tuple[list[VOp], list[tuple[int, int]]]:
        """All ops in program order, and the ranges that repeat (one per chunk loop)."""
        ops, loops = list(self.before), []
        for p in self.passes:
            start = len(ops)
            ops += p.loop_ops
            loops.append((start, len(ops)))
            ops += p.after
        start = len(ops)
        ops += self.final
        loops.append((start, len(ops)))
        return ops, loops


def _levels(vk: VectorKernel) -> dict[int, int]:
    """vbuf id -> level: 0 for values that need no reduction, else 1 + the deepest reduction they need."""
    level: dict[int, int] = {}
    for op in vk.plan.ops:
        dep = max((level.get(s.id, 0) for s in op.reads), default=0)
        level[op.dst.id] = dep + 1 if op.kind is VKind.REDUCE else dep
    return level


def plan_passes(vk: VectorKernel) -> PassPlan:
    ops = [op for op in vk.plan.ops if op not in vk.prologue]
    level = _levels(vk)
    producer = {op.dst.id: op for op in ops}
    reduces = [op for op in ops if op.kind is VKind.REDUCE]
    top = max((level[r.dst.id] for r in reduces), default=0)

    def full_ancestors(targets: list[VOp]) -> set[int]:
        """ids of the full-size ops the targets need within one chunk (stopping at per-row values)."""
        seen: set[int] = set()
        stack = [s for t in targets for s in t.reads]
        while stack:
            b = stack.pop()
            op = producer.get(b.id)
            if op is None or b.space != Space.FULL or id(op) in seen:
                continue
            seen.add(id(op))
            stack.extend(op.reads)
        return seen

    passes = []
    for lvl in range(1, top + 1):
        mine = [r for r in reduces if level[r.dst.id] == lvl]
        need = full_ancestors(mine)
        loop_ops = [op for op in ops if id(op) in need] + mine
        after = [op for op in ops if op.kind is not VKind.REDUCE and op.dst.space != Space.FULL and level[op.dst.id] == lvl]
        passes.append(Pass(lvl, loop_ops, after))
    before = [op for op in ops if op.kind is not VKind.REDUCE and op.dst.space != Space.FULL and level[op.dst.id] == 0]
    full_outputs = [VOp(VKind.COPY, b, (b,)) for (_, b), sp in zip(vk.plan.outputs, vk.out_spaces) if sp == Space.FULL]
    need = full_ancestors(full_outputs)
    final = [op for op in ops if id(op) in need]
    return PassPlan(before, passes, final)


def _identity(fn: str, dtype: str) -> Any:
    if fn == "sum":
        return 0.0 if dtype.startswith("float") else 0
    if dtype.startswith("float"):
        return float("-inf") if fn == "max" else float("inf")
    if dtype == "bool":
        return 0 if fn == "max" else 1
    info = np.iinfo(DTYPES[dtype])
    return int(info.min) if fn == "max" else int(info.max)


class _Builder:
    def __init__(self, vk: VectorKernel, tiling: VectorTiling, chip: Chip, split: bool):
        self.vk, self.tiling, self.chip, self.split = vk, tiling, chip, split
        self.pp = plan_passes(vk)
        ops, loops = self.pp.linear()
        per_chunk = [u for u in vk.per_tile if u.space == Space.FULL]
        per_row = [u for u in vk.per_tile if u.space != Space.FULL]
        # full-size outputs are stored per chunk (they rotate); per-row outputs once per row: they live in
        # their own buffer for the whole row, like the per-row inputs
        full_out = [b for (_, b), sp in zip(vk.plan.outputs, vk.out_spaces) if sp == Space.FULL]
        row_out = [b for (_, b), sp in zip(vk.plan.outputs, vk.out_spaces) if sp != Space.FULL]
        self.alloc = assign(ops, [u.buf for u in per_chunk], [u.buf for u in vk.resident + per_row] + row_out,
                            full_out, vk.prologue, loops)
        self.per_chunk, self.per_row = per_chunk, per_row
        vk_view = _with_alloc(vk, self.alloc)
        self.vk_alloc = vk_view
        self.reduces = [op for p in self.pp.passes for op in p.loop_ops if op.kind is VKind.REDUCE]

    def buffers(self, tiling: VectorTiling | None = None) -> list[Buffer]:
        """The UB buffers for this builder's tiling, or for another of the same kernel (the pass plan and the
        buffer assignment do not depend on the chunk width or the slots: the tiler sizes chunks with one)."""
        tiling = tiling or self.tiling
        tw = tiling.width
        out = []
        chip = self.chip
        for p in self.alloc.buffers:
            n = tw if p.space == Space.FULL else 1
            out.append(Buffer(p.name, "UB", _dtype_of_size(p.itemsize), ub_slot(n * p.itemsize, chip),
                              tiling.slots(p.rotating), p.kind))
        out.append(Buffer("partial", "UB", "float32", ub_slot(4, chip), 1, "chunk partial"))
        if self.split:
            n = max(1, chip.aiv_cores)
            out.append(Buffer("gather", "UB", "float32", ub_slot(n * 4, chip), 1, "partials of all cores"))
        return out


def _dtype_of_size(size: int) -> str:
    return {1: "uint8", 2: "float16", 4: "float32"}[size]


def _with_alloc(vk: VectorKernel, alloc: Any) -> VectorKernel:
    """The kernel with the multi-pass buffer assignment (a shallow copy)."""
    return replace(vk, alloc=alloc)


def schedule(vk: VectorKernel, tiling: VectorTiling, chip: Chip) -> TileSchedule:
    rows_total = sy.mul(vk.domain.outer_count, vk.domain.R)
    split = rows_total == 1
    b = _Builder(vk, tiling, chip, split)
    d = vk.domain
    fields: dict[str, IntLike] = {"R": d.R, "C": d.C, "tw": tiling.width, "NC": sy.ceildiv(d.C, tiling.width)}
    for j, o in enumerate(d.outer):
        fields[f"O{j}"] = o
    fields["NR"] = rows_total
    fields.update(stride_fields(vk))
    cores = min(tiling.cores, chip.aiv_cores)
    params = [GmParam(in_param(i), v.type.dtype, "in") for i, v in enumerate(vk.kg.inputs)]
    params += [GmParam(out_param(i), v.type.dtype, "out") for i, v in enumerate(vk.kg.outputs)]
    scratch: dict[str, IntLike] = {}
    if split:
        blocks: IntLike = sy.min_(cores, sy.ceildiv(d.C, tiling.width))
        params.append(GmParam(SCRATCH, "float32", "scratch"))
        scratch[SCRATCH] = max(1, len(b.reduces)) * chip.aiv_cores * 4
        body = _split_body(b)
    else:
        blocks = sy.ceildiv(rows_total, sy.max_(1, sy.ceildiv(rows_total, cores)))
        body = _rows_body(b)
    notes = [f"domain {tuple(d.shape)} -> outer {tuple(d.outer)}, R={d.R}, C={d.C}",
             f"multi-pass: {len(b.pp.passes)} reduction pass(es) + 1 output pass over chunks of {tiling.width}"
             + (", chunks split over the cores (one row)" if split else ", rows split over the cores")]
    return TileSchedule(vk.name, "aiv", params, fields, blocks, b.buffers(), body, notes, scratch)


def _row_place(b: _Builder, row: IntLike, c0: IntLike, cols: IntLike, slot: IntLike) -> Placement:
    d = b.vk.domain
    o_index: list[IntLike] = []
    if d.outer:
        o_index = [F(f"o{j}") for j in range(len(d.outer))]
    geom = Geometry(full=cols, row=1, rows=1, cols=cols, stride=cols)
    return Placement(b.vk_alloc, b.tiling, geom, slot, F("r"), c0, o_index, False)


def _row_lets(b: _Builder, row: IntLike) -> list[Stmt]:
    d = b.vk.domain
    lets: list[Stmt] = [Let("row", row)]
    if d.outer:
        lets += [Let("r", sy.mod(F("row"), F("R"))), Let("o", sy.floordiv(F("row"), F("R")))]
        lets += [Let(f"o{j}", e) for j, e in enumerate(decompose(F("o"), len(d.outer)))]
    else:
        lets.append(Let("r", F("row")))
    return lets


def _chunk_loop(b: _Builder, var: str, ops: list[VOp], start: IntLike, stop: IntLike, final: bool) -> Loop:
    c0 = sy.mul(F(var), F("tw"))
    lets: list[Stmt] = [Let(f"{var}_c0", c0), Let(f"{var}_cols", sy.min_(F("tw"), sy.add(F("C"), sy.mul(-1, F(f"{var}_c0")))))]
    slot = b.tiling.slot(var)
    place = _row_place(b, F("r"), F(f"{var}_c0"), F(f"{var}_cols"), slot)
    needed = {s.id for op in ops for s in op.reads} | {op.dst.id for op in ops}
    body: list[Stmt] = list(lets)
    loads = [st for use, st in zip(b.per_chunk, _loads(place, b.per_chunk)) if use.buf.id in needed]
    body += loads
    for op in ops:
        if op.kind is VKind.REDUCE:
            body += _reduce_chunk(place, op)
        else:
            body += place.vop(op)
    if final:
        body += _full_stores(place, b)
    return Loop(var, start, stop, 1, body, note="chunks of the row")


def _loads(place: Placement, uses: list) -> list[Stmt]:
    out = []
    for use in uses:
        dst = place.ref(use.buf)
        src = place._gm_in(use, place.c0, place.r0, True)
        out.append(T.load(dst, src, use.buf.dtype, place.geom.cols, note=use.buf.what))
    return out


def _reduce_chunk(place: Placement, op: VOp) -> list[Stmt]:
    acc = place.ref(op.dst)
    part = Ref("partial")
    src = place.ref(op.srcs[0])
    return [T.vreduce(op.fn, part, src, 1, place.geom.cols, op.dtype, note=f"{op.note} (chunk)"),
            T.vbinary(_COMBINE[op.fn], acc, acc, part, 1, op.dtype, note=f"{op.note} (fold)")]


def _full_stores(place: Placement, b: _Builder) -> list[Stmt]:
    out = []
    for (i, buf), space in zip(b.vk.plan.outputs, b.vk.out_spaces):
        if space != Space.FULL:
            continue
        v = b.vk.kg.graph.outputs[i]
        size = itemsize(v.type.dtype)
        off = sy.add(sy.mul(F("row"), F("C")), place.c0)
        out.append(T.store(GmRef(out_param(i), sy.mul(off, size)), place.ref(buf), v.type.dtype, place.geom.cols,
                           note=f"out{i}"))
    return out


def _row_stores(place: Placement, b: _Builder) -> list[Stmt]:
    out = []
    for (i, buf), space in zip(b.vk.plan.outputs, b.vk.out_spaces):
        if space == Space.FULL:
            continue
        v = b.vk.kg.graph.outputs[i]
        size = itemsize(v.type.dtype)
        out.append(T.store(GmRef(out_param(i), sy.mul(F("row"), size)), place.ref(buf, tile_slot=False),
                           v.type.dtype, 1, note=f"out{i} (per row)"))
    return out


def _init_accs(place: Placement, ops: list[VOp]) -> list[Stmt]:
    return [T.vdup(place.ref(op.dst, tile_slot=False), _identity(op.fn, op.dtype), 1, op.dtype,
                   note=f"{op.note}: identity") for op in ops if op.kind is VKind.REDUCE]


def _row_ops(place: Placement, ops: list[VOp]) -> list[Stmt]:
    out: list[Stmt] = []
    for op in ops:
        out += place.vop(op, resident=False)
    return out


def _prologue(b: _Builder) -> list[Stmt]:
    place = _row_place(b, 0, 0, F("tw"), 0)
    return place.prologue()


def _per_row_loads(place: Placement, b: _Builder) -> list[Stmt]:
    out = []
    for use in b.per_row:
        dst = place.ref(use.buf, tile_slot=False)
        src = place._gm_in(use, 0, place.r0, True)
        out.append(T.load(dst, src, use.buf.dtype, 1, note=f"{use.buf.what} (this row)"))
    return out


def _rows_body(b: _Builder) -> list[Stmt]:
    per = sy.ceildiv(F("NR"), F(BLOCKS))
    begin = sy.mul(F(CORE), per)
    count = sy.max_(0, sy.min_(per, sy.add(F("NR"), sy.mul(-1, begin))))
    place = _row_place(b, F("r"), 0, 1, 0)
    body: list[Stmt] = _row_lets(b, sy.add(begin, F("i")))
    body += _per_row_loads(place, b) + _row_ops(place, b.pp.before)
    for n, p in enumerate(b.pp.passes):
        body += _init_accs(place, p.loop_ops)
        body.append(_chunk_loop(b, f"j{n}", p.loop_ops, 0, F("NC"), False))
        body += _row_ops(place, p.after)
    body.append(_chunk_loop(b, "jf", b.pp.final, 0, F("NC"), True))
    body += _row_stores(place, b)
    return _prologue(b) + [Loop("i", 0, count, 1, body, note="rows of this core")]


def _split_body(b: _Builder) -> list[Stmt]:
    per = sy.ceildiv(F("NC"), F(BLOCKS))
    lo = sy.mul(F(CORE), per)
    hi = sy.min_(F("NC"), sy.add(lo, per))
    place = _row_place(b, F("r"), 0, 1, 0)
    body: list[Stmt] = [Let("row", 0), Let("r", 0)] + [Let(f"o{j}", 0) for j in range(len(b.vk.domain.outer))]
    body += _per_row_loads(place, b) + _row_ops(place, b.pp.before)
    k = 0
    for n, p in enumerate(b.pp.passes):
        body += _init_accs(place, p.loop_ops)
        body.append(_chunk_loop(b, f"j{n}", p.loop_ops, lo, hi, False))
        for op in p.loop_ops:
            if op.kind is not VKind.REDUCE:
                continue
            body += _exchange(place, b, op, k)
            k += 1
        body += _row_ops(place, p.after)
    body.append(_chunk_loop(b, "jf", b.pp.final, lo, hi, True))
    body.append(When(sy.eq(F(CORE), 0), _row_stores(place, b)))
    return _prologue(b) + body


def _exchange(place: Placement, b: _Builder, op: VOp, k: int) -> list[Stmt]:
    """Every core's partial to GM, all cores meet, each folds all partials (the same on every core)."""
    acc = place.ref(op.dst, tile_slot=False)
    size = itemsize(op.dtype)
    base = k * b.chip.aiv_cores * 4  # each exchange has its own 4 bytes per core (the scratch's size), whatever
    # its dtype: sized by this one's, a float16 exchange after a float32 one wrote into the previous region
    return [
        T.store(GmRef(SCRATCH, sy.add(base, sy.mul(F(CORE), size))), acc, op.dtype, 1,
                note=f"{op.note}: this core's partial"),
        T.sync_all("all cores' partials are in GM"),
        T.load(Ref("gather"), GmRef(SCRATCH, base), op.dtype, F(BLOCKS), note=f"{op.note}: every core's partial"),
        T.vreduce(op.fn, acc, Ref("gather"), 1, F(BLOCKS), op.dtype, note=f"{op.note}: fold the cores"),
    ]


def ub_bytes(vk: VectorKernel, tiling: VectorTiling, chip: Chip) -> int:
    return sum(b.nbytes for b in _Builder(vk, tiling, chip, False).buffers())


def tilings(vk: VectorKernel, chip: Chip, buffer_num: int, cores: int) -> list[VectorTiling]:
    cores = max(1, min(cores, chip.aiv_cores))
    out: list[VectorTiling] = []
    cap = chip.max_repeats * chip.vector_repeat_bytes
    c = vk.domain.C if isinstance(vk.domain.C, int) else None
    plan = _Builder(vk, VectorTiling("multipass", 1, 1, 1, cores), chip, False)
    for bn in buffer_nums(buffer_num):
        def fits(w: int) -> bool:
            bufs = plan.buffers(VectorTiling("multipass", 1, w, bn, cores))
            return all(x.slot_bytes <= cap for x in bufs) and sum(x.nbytes for x in bufs) <= chip.ub_bytes
        best = largest_fitting(fits, c if c else cap)
        if best < 1:
            continue
        quantum = max(1, chip.gm_peak_align // vk.min_itemsize)  # chunks start on the GM peak boundary
        widths = {best if best < quantum else best // quantum * quantum}
        if c:
            for k in (2, 4):
                w = -(-c // k)
                w = -(-w // quantum) * quantum if w > quantum else w
                widths.add(max(1, min(best, w)))
        out += [VectorTiling("multipass", 1, w, bn, cores) for w in sorted(widths, reverse=True)]
    return out
