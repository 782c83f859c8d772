"""The mixed template: a cube product and the elementwise work on its result, in one launch.

Groups of one AIC and its AIVs (`chip.group_aivs`, 2 on the 910B) walk the same output blocks. The AIC runs
the cube template's block loop (`matmul.schedule`) but FixPipe writes each block into a GM workspace
channel instead of the output: per group `slots` tiles of tm x tnp accumulator values (tnp: tn padded to a UB
block), which stay in L2. Each AIV takes its share of the block's rows: it loads them from the channel, loads
the epilogue's other inputs for those rows and columns (a residual, a bias row, per-row values, scalars), runs
the epilogue's vector ops (the vector template's analysis and op translation, `placement.translate_vop`) and
stores the result. The cross-core flags between the two (the block is in the channel; the AIVs have read it)
come from `cross_sync`, each side's own from `sync`.

A block may cross over in column chunks (`MixedTiling.chunks`): FixPipe writes L0C's 16-column panels a chunk at
a time, each chunk into a slot of its own (2 per chunk of a block), and the vector cores take, compute and store
chunk by chunk, so they start on a block before the cube has written all of it and finish sooner after its
last one. Loads of the epilogue's other inputs come before the wait for the cube's tile. The cost model weighs
the chunk counts (more flags, FixPipes and vector ops against a shorter drain); chunks narrower than 64 columns
or shares under 64 rows are not offered (measured slower than their estimates).

The epilogue must be elementwise over the product's (batch..., M, N) output with N as its row (rows M, the
batch outer or folded into the rows); anything else is `Unsupported` and the router falls back to separate
launches.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip, data_path, itemsize
from .. import tileops as T
from ..domain import same_dim
from ..cost import Estimate, estimate, gm_bandwidth, launch_cycles
from ..kernel_graph import KernelGraph
from ..schedule import CORE, GROUP, SUB, Buffer, Channel, GmParam, GmRef, Let, Loop, MixedSchedule, Ref, Stmt, \
    TileSchedule, When, addresses
from ..template import Job, Template, Tiling, Unsupported, align_up, free_symbols, ub_slot
from ..tiling import scoring_dims
from ..vector_ops import Geometry, Space
from . import matmul, mixed_prologue, vector_kernel
from .matmul import CubeMatmul, in_param as cube_in
from .matmul_bound import Sink, cube_bound, cube_floor, extents, output_sink
from .matmul_tiling import MatmulTiling, same_score
from .placement import Placement, decompose
from .mixed_chunks import Chunk, chunk, chunk_counts, chunked
from .mixed_prologue import Prologue
from .vector_kernel import VectorKernel, VectorTiling, in_param, out_param, stride_field, stride_fields

F = sy.sym
CHANNEL = "ws"
SLOTS = 2            # workspace tiles per chunk of a block (double buffering)


@dataclass(frozen=True)
class MixedMatmul:
    """A cube product whose epilogue (a kernel graph: input 0 is the product) runs on the vector cores."""

    name: str
    cube: CubeMatmul
    epilogue: KernelGraph
    keep_product: bool = False  # the product is a result too: FixPipe also writes it out (the launch's out0)
    prologue: Prologue | None = None  # the kernel computing A, run on the vector cores first (mixed_prologue.py)


@dataclass(frozen=True)
class MixedAnalysis:
    mk: CubeMatmul
    vk: VectorKernel
    batch_outer: bool          # the epilogue's outer dims are the product's batch (else folded into its rows)
    keep_product: bool
    pro: VectorKernel | None = None   # the prologue's analysis (mixed_prologue.py)
    # the prologue's schedule per (its tiling, the group count): the same for every cube tiling sharing them
    memo: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class MixedTiling(Tiling):
    cube: MatmulTiling
    buffer_num: int            # slots of the vector side's rotating buffers
    cores: int
    prologue: VectorTiling | None = None
    chunks: int = 1            # column chunks a block crosses over in (`tn` a multiple of 16 * chunks)

    @property
    def chunk_cols(self) -> int:
        return self.cube.tn // self.chunks

    def describe(self) -> str:
        pro = "" if self.prologue is None else f"; A's prologue on the vector cores first: {self.prologue.describe()}"
        split = "" if self.chunks == 1 else f" in {self.chunks} column chunks of {self.chunk_cols}"
        return f"{self.cube.describe()}; epilogue on the vector cores{split}, buffer_num={self.buffer_num}{pro}"


def analyze(job: Job, chip: Chip) -> list[MixedAnalysis]:
    mm: MixedMatmul = job.subject
    mk = mm.cube.for_chip(chip)
    vk = vector_kernel.analyze(job.label, mm.epilogue, None, 0, "chunks", chip.ub_align, rows_of_last_axis=True)
    d = vk.domain
    if vk.reduces or any(s != Space.FULL for s in vk.out_spaces):
        raise Unsupported("the epilogue is not elementwise over the product")
    if not same_dim(d.C, mk.N):
        raise Unsupported(f"the epilogue's rows are {d.C} long, not the product's N = {mk.N}")
    if len(d.outer) == len(mk.batch) and same_dim(d.R, mk.M):
        batch_outer = True
    elif not d.outer and same_dim(d.R, sy.mul(mk.M, mk.batch_count)):
        batch_outer = False
    else:
        raise Unsupported(f"the epilogue's domain {d.shape} does not follow the product's blocks")
    first = next((u for u in vk.per_tile if u.index == 0), None)
    if first is None or first.space != Space.FULL:   # (a one-row product reads as a row vector: the same tile)
        raise Unsupported("the epilogue does not read the whole product")
    pro = None if mm.prologue is None else mixed_prologue.analyze(job.label, mm.prologue, mk.dtype, chip)
    return [MixedAnalysis(mk, vk, batch_outer, mm.keep_product, pro)]


def _symbols(a: MixedAnalysis) -> set[str]:
    return free_symbols([a.mk.M, a.mk.N, a.mk.K, a.mk.batch_count])


def _tnp(vk: VectorKernel, tn: int, chip: Chip) -> int:
    """A block row padded to whole UB blocks of the narrowest dtype (every buffer row starts on a block)."""
    return align_up(tn, chip.ub_align // vk.min_itemsize)


def _rows_per_aiv(tm: int, chip: Chip) -> int:
    return -(-tm // chip.group_aivs)


def epilogue_buffers(vk: VectorKernel, tm: int, tn: int, t: Tiling, chip: Chip) -> list[Buffer]:
    """The vector side's UB buffers for tm x tn cube blocks (its share of the rows, rows padded to tnp)."""
    h, tnp = _rows_per_aiv(tm, chip), _tnp(vk, tn, chip)
    out = []
    for p in vk.alloc.buffers:
        n = {Space.FULL: h * tnp, Space.ROW: h, Space.SCALAR: 1}[p.space]
        dtype = {1: "uint8", 2: "float16", 4: "float32"}[p.itemsize]
        out.append(Buffer(p.name, "UB", dtype, ub_slot(n * p.itemsize, chip), t.slots(p.rotating), p.kind))
    for use in vk.per_tile:
        if vk.layouts[use.buf.id].cls == "rowvec":
            size = itemsize(use.buf.dtype)
            out.append(Buffer(f"rv{use.buf.id}", "UB", use.buf.dtype, ub_slot(tnp * size, chip), t.slots(),
                              "bias row staging"))
    return out


def aiv_buffers(a: MixedAnalysis, t: MixedTiling, chip: Chip) -> list[Buffer]:
    out = epilogue_buffers(a.vk, t.cube.tm, t.chunk_cols, t, chip)
    if a.pro is not None and t.prologue is not None:
        out += mixed_prologue.buffer_names(vector_kernel.buffers_for(a.pro, t.prologue, chip))
    return out


def need(a: MixedAnalysis, t: MixedTiling, chip: Chip) -> int:
    return sum(b.nbytes for b in aiv_buffers(a, t, chip))


def tilings(a: MixedAnalysis, chip: Chip, buffer_num: int, cores: int) -> list[MixedTiling]:
    """The cube template's tilings whose vector side fits the UB, each with the column chunks it may hand over
    in (finer chunks: the vector cores start sooner and finish sooner after the cube's last block, for more
    cross-core flags, FixPipes and vector ops; the cost model weighs them)."""
    dims, _ = scoring_dims(sorted(_symbols(a)))
    out = []
    pro: dict[int, list] = {}   # the prologue's candidates per vector core count
    # the vector side's buffers depend on the block's rows, the chunk's columns and the slots alone: many cube
    # tilings share them (memos of what they ask, per key, for this call)
    prologues: dict[tuple, VectorTiling | None] = {}
    fitting: dict[tuple, bool] = {}
    for ct, chunks in ((ct, n) for ct in matmul.tilings(a.mk, chip, buffer_num, min(cores, chip.aic_cores), dims)
                       for n in chunk_counts(ct.tn, _rows_per_aiv(ct.tm, chip), chip)):
        t = MixedTiling(ct, min(2, buffer_num), ct.cores, chunks=chunks)
        if a.pro is not None:
            aivs = ct.cores * chip.group_aivs
            key = (ct.tm, t.chunk_cols, aivs)
            if key not in prologues:
                left = chip.ub_bytes - sum(b.nbytes for b in aiv_buffers(a, t, chip))
                if aivs not in pro:
                    pro[aivs] = mixed_prologue.candidates(a.pro, chip, buffer_num, aivs, dims)
                prologues[key] = mixed_prologue.tiling(pro[aivs], left)
            pt = prologues[key]
            if pt is None:
                continue
            t = MixedTiling(ct, t.buffer_num, t.cores, pt, chunks)
        key = (ct.tm, t.chunk_cols, t.prologue)
        if key not in fitting:
            bufs = aiv_buffers(a, t, chip)
            fitting[key] = sum(b.nbytes for b in bufs) <= chip.ub_bytes and \
                all(b.slot_bytes <= chip.max_repeats * chip.vector_repeat_bytes for b in bufs)
        if fitting[key]:
            out.append(t)
    return out


def schedule(a: MixedAnalysis, t: MixedTiling, chip: Chip) -> MixedSchedule:
    mk, ct = a.mk, t.cube
    ncp = _tnp(a.vk, t.chunk_cols, chip)
    ws_dtype = mk.out_dtype
    slot_bytes = ct.tm * ncp * itemsize(ws_dtype)
    slots = _slots(t)
    if a.keep_product:
        aic = matmul.schedule(mk, ct, chip,
                              sink=lambda blk: matmul.to_output(blk) + _to_channel(blk, t, ncp, slot_bytes, chip))
    else:
        aic = matmul.schedule(mk, ct, chip, sink=lambda blk: _to_channel(blk, t, ncp, slot_bytes, chip))
        aic.params = [p for p in aic.params if p.role != "out"]
    groups = aic.blocks
    aic.params.append(GmParam(CHANNEL, ws_dtype, "scratch"))
    aic.scratch[CHANNEL] = sy.mul(groups, slots * slot_bytes)
    aiv = _shared_vector_side(a, t, chip, ncp, slot_bytes, groups)
    ch = Channel(CHANNEL, "aic", slot_bytes, slots)
    split = "" if t.chunks == 1 else f" in {t.chunks} column chunks of {t.chunk_cols}"
    notes = [f"the cube's {ct.tm}x{ct.tn} blocks reach the vector cores{split} through {slots} workspace tiles per "
             f"group ({slot_bytes} B each, L2-resident)"]
    pro = None
    if a.pro is not None and t.prologue is not None:
        aic, aiv, pro = _with_prologue(a, t, chip, aic, aiv)
    steps = sy.mul(sy.ceildiv(aic.fields["T"], groups), t.chunks)
    # the channel stays in L2: the vector cores' reads of a tile just written hit, and of the cube's writes only
    # the first of each slot dirties lines (an HBM write-back); the later ones rewrite lines already dirty
    aic.l2_resident = lambda f, blocks: {CHANNEL: _fresh_writes(f["T"], blocks, t.chunks, slots)}
    return MixedSchedule(mk.name, aic, aiv, [ch], groups, notes, steps=steps, prologue=pro, chunks=t.chunks)


def _channel_hits(fields: Mapping[str, int], blocks: int) -> dict[str, float]:
    return {CHANNEL: 0.0}


def _slots(t: MixedTiling) -> int:
    """The channel's workspace tiles per group."""
    return SLOTS * t.chunks


def _fresh_writes(tiles: int, groups: int, chunks: int, slots: int) -> float:
    """The fraction of a group's hand-overs (its blocks' chunks) that write a channel slot the first time."""
    handed = -(-tiles // max(1, groups)) * chunks
    return min(1.0, slots / handed) if handed > 0 else 1.0


def _shared_vector_side(a: MixedAnalysis, t: MixedTiling, chip: Chip, tnp: int, slot_bytes: int,
                        groups: IntLike) -> TileSchedule:
    """The vector side: one schedule for the candidates that share the block shape, chunks, slots and groups
    (they differ only on the cube side), so that it is built once and the tiler estimates it once. A launch
    with a prologue rewrites its vector side (`_with_prologue`): a schedule of its own each."""
    if a.pro is not None:
        return _vector_side(a, t, chip, tnp, slot_bytes, groups)
    key = ("vector side", t.cube.tm, t.cube.tn, t.chunks, t.buffer_num, t.cores, groups)
    if key not in a.memo:
        a.memo[key] = _vector_side(a, t, chip, tnp, slot_bytes, groups)
    return a.memo[key]


def _with_prologue(a: MixedAnalysis, t: MixedTiling, chip: Chip, aic: TileSchedule, aiv: TileSchedule
                   ) -> tuple[TileSchedule, TileSchedule, TileSchedule]:
    """Both sides with the prologue in front: the vector cores compute A into the workspace, every core meets
    at the barrier, then the cube reads A from there (mixed_prologue.py)."""
    assert a.pro is not None and t.prologue is not None
    mk = a.mk
    pro = _prologue(a, t, chip, aic.blocks)
    aic = mixed_prologue.reading_workspace(aic, {cube_in(0): mixed_prologue.WSA})
    aic.body = [T.sync_all(note="wait for A from the vector cores")] + aic.body
    aic = mixed_prologue.prefetched(aic, cube_in(1))   # B does not wait for the prologue
    aic.scratch[mixed_prologue.WSA] = sy.mul(mk.batch_count, mk.M, mk.K, itemsize(mk.dtype))
    aiv.body = pro.body + [T.sync_all(note="A is in the workspace: the cube cores may read it")] + aiv.body
    aiv.fields.update(pro.fields)
    known = {p.name for p in aiv.params}
    aiv.params += [p for p in pro.params if p.name not in known]
    return aic, aiv, pro


def _to_channel(blk: matmul.Block, t: MixedTiling, ncp: int, slot_bytes: int, chip: Chip) -> list[Stmt]:
    """FixPipe of one output block into this group's channel slots, a column chunk at a time (the AIC's core
    index is its group). L0C holds the block as 16-column panels of ceil16(mm) rows: chunk c starts c * nc
    columns in."""
    mk, slots = blk.mk, _slots(t)
    rows16 = sy.mul(sy.ceildiv(blk.mm, chip.cube_block), chip.cube_block)

    def fix(c: int) -> list[Stmt]:
        ch = chunk(t.chunks, t.chunk_cols, c)
        off = sy.mul(sy.add(sy.mul(F(CORE), slots), sy.mod(ch.k, slots)), slot_bytes)
        src = blk.acc.at(sy.mul(c * t.chunk_cols, rows16, itemsize(mk.acc_dtype))) if c else blk.acc
        note = "L0C -> workspace tile" + (f" (chunk {c})" if t.chunks > 1 else "")
        return ch.lets + [T.fixpipe(GmRef(CHANNEL, off), src, blk.mm, ch.nn, mk.out_dtype, mk.acc_dtype,
                                    relu=mk.relu, dst_row_stride=ncp, note=note)]

    # unrolled, the later chunks only where the block reaches them: the FixPipes queue back to back on FIX
    # (the cost model estimates a loop as a serial unit)
    out = fix(0)
    for c in range(1, t.chunks):
        out.append(When(sy.lt(c * t.chunk_cols, blk.nn), fix(c)))
    return out


def _vector_side(a: MixedAnalysis, t: MixedTiling, chip: Chip, tnp: int, slot_bytes: int,
                 groups: IntLike) -> TileSchedule:
    mk, ct, vk = a.mk, t.cube, a.vk
    fields: dict[str, IntLike] = {"M": mk.M, "N": mk.N, "tm": ct.tm, "tn": ct.tn, "G": groups,
                                  "R": vk.domain.R, "C": vk.domain.C}
    for j, o in enumerate(vk.domain.outer):
        fields[f"O{j}"] = o
    fields.update(stride_fields(vk))
    M, N = F("M"), F("N")
    nmb, nnb = sy.ceildiv(M, F("tm")), sy.ceildiv(N, F("tn"))
    fields["T"] = sy.mul(mk.batch_count, sy.ceildiv(mk.M, ct.tm), sy.ceildiv(mk.N, ct.tn))
    per = sy.ceildiv(F("T"), F("G"))
    begin = sy.mul(F(GROUP), per)
    count = sy.max_(0, sy.min_(per, sy.add(F("T"), sy.mul(-1, begin))))
    h = _rows_per_aiv(ct.tm, chip)
    lets: list[Stmt] = [Let("t", sy.add(begin, F("i"))), Let("nb", sy.mod(F("t"), nnb)),
                        Let("r", sy.floordiv(F("t"), nnb)), Let("mb", sy.mod(F("r"), nmb)),
                        Let("bi", sy.floordiv(F("r"), nmb)),
                        Let("m0", sy.mul(F("mb"), F("tm"))), Let("mm", sy.min_(F("tm"), sy.add(M, sy.mul(-1, F("m0"))))),
                        Let("n0", sy.mul(F("nb"), F("tn"))), Let("nn", sy.min_(F("tn"), sy.add(N, sy.mul(-1, F("n0"))))),
                        Let("per", sy.ceildiv(F("mm"), chip.group_aivs)), Let("rs", sy.mul(F(SUB), F("per"))),
                        Let("rows", sy.max_(0, sy.min_(F("per"), sy.add(F("mm"), sy.mul(-1, F("rs"))))))]
    if a.batch_outer:
        lets += [Let(f"o{j}", e) for j, e in enumerate(decompose(F("bi"), len(vk.domain.outer)))]
        row0 = sy.add(F("m0"), F("rs"))
        o_index = [F(f"o{j}") for j in range(len(vk.domain.outer))]
    else:
        row0 = sy.add(sy.mul(F("bi"), M), F("m0"), F("rs"))
        o_index = []
    lets.append(Let("row0", row0))
    ch = chunk(t.chunks, t.chunk_cols, F("c"))
    geom = Geometry(full=sy.mul(F("rows"), tnp), row=F("rows"), rows=F("rows"), cols=ch.nn, stride=tnp)
    tiling = VectorTiling("chunks", h, tnp, t.buffer_num, t.cores)
    ncube = 3 if mk.bias else 2   # the cube reads in0 (A), in1 (B)[, in2 (bias)]; the epilogue's inputs follow
    # UB slots rotate with the chunks; the sync analysis reads a slot's rotation off the loop variables
    tile = F("i") if t.chunks == 1 else sy.add(sy.mul(F("i"), t.chunks), F("c"))
    place = Placement(vk, tiling, geom, t.slot(tile), F("row0"), ch.n0, o_index, False,
                      lambda j: in_param(ncube + j - 1))
    first = next(u for u in vk.per_tile if u.index == 0)
    slots = _slots(t)
    ws_src = GmRef(CHANNEL, sy.add(sy.mul(sy.add(sy.mul(F(GROUP), slots), sy.mod(ch.k, slots)), slot_bytes),
                                   sy.mul(F("rs"), tnp * itemsize(first.buf.dtype))))
    take = T.load(place.ref(first.buf), ws_src, first.buf.dtype, ch.nn, F("rows"), src_stride=tnp, dst_stride=tnp,
                  note="rows of the cube's block")
    first_out = 1 if a.keep_product else 0   # out0 is the product the cube writes
    # the epilogue's other inputs do not wait for the cube: their loads go first, under the wait for its block
    others = _loads(place, vk, tnp, ch)
    work = place.compute(vk.body) + _stores(place, vk, tnp, first_out, ch)
    has_rows = sy.lt(0, F("rows"))
    body_of_chunk = ch.lets + ([When(has_rows, others)] if others else []) + [When(has_rows, [take]),
                                                                            When(has_rows, work)]
    body = lets + chunked(t.chunks, t.chunk_cols, body_of_chunk,
                          "column chunks of the block, as the cube hands them over")
    pre = _zero_padding(vk, t, h, tnp) + place.prologue()
    params = [GmParam(CHANNEL, first.buf.dtype, "scratch")]
    params += [GmParam(place.in_name(u.index), u.buf.dtype, "in") for u in vk.resident + vk.per_tile if u.index != 0]
    params += [GmParam(out_param(first_out + i), v.type.dtype, "out") for i, v in enumerate(vk.kg.outputs)]
    notes = [f"epilogue rows split over the {chip.group_aivs} vector cores of a group, {h} rows each at most"]
    side = TileSchedule(f"{mk.name}_epilogue", "aiv", params, fields, sy.mul(groups, chip.group_aivs),
                        aiv_buffers(a, t, chip), pre + [Loop("i", 0, count, 1, body, note="the group's blocks")],
                        notes)
    side.l2_resident = _channel_hits
    return side


def _zero_padding(vk: VectorKernel, t: MixedTiling, h: int, tnp: int) -> list[Stmt]:
    """Rows are padded to tnp: zero every slot of the tile-sized inputs once, so the vector ops never read
    bytes no load wrote (a block narrower than tn leaves the rest of each row alone)."""
    out: list[Stmt] = []
    for use in vk.per_tile:
        p = vk.alloc.of[use.buf.id]
        if p.space == Space.FULL:
            for s in range(t.slots(p.rotating)):
                out.append(T.vdup(Ref(p.name, s), 0, h * tnp, use.buf.dtype, note="zero the row padding"))
    return out


def _loads(place: Placement, vk: VectorKernel, tnp: int, ch: Chunk) -> list[Stmt]:
    out: list[Stmt] = []
    rows, nn = F("rows"), ch.nn
    for use in vk.per_tile:
        if use.index == 0:
            continue
        lay, dt, dst = vk.layouts[use.buf.id], use.buf.dtype, place.ref(use.buf)
        if use.space == Space.ROW or lay.cls == "col":
            out.append(T.load(dst, place._gm_in(use, 0, F("row0"), True), dt, rows, note=f"{use.buf.what} per row"))
        elif lay.cls == "scalar":
            out.append(T.load(dst, place._gm_in(use, 0, 0, True), dt, 1, note=use.buf.what))
        elif lay.cls == "rowvec":
            stage = Ref(f"rv{use.buf.id}", place.slot)
            out.append(T.load(stage, place._gm_in(use, ch.n0, 0, True), dt, nn, note=f"{use.buf.what} (columns)"))
            out.append(T.vbroadcast(dst, stage, rows, nn, dt, axis=0, dst_row_stride=tnp,
                                    note=f"{use.buf.what} over the rows"))
        else:
            r = lay.r_stride
            stride = r if r in (0, 1) else F(stride_field(use.buf.id, "r"))
            out.append(T.load(dst, place._gm_in(use, ch.n0, F("row0"), True), dt, nn, rows, src_stride=stride,
                              dst_stride=tnp, note=use.buf.what))
    return out


def _stores(place: Placement, vk: VectorKernel, tnp: int, first_out: int, ch: Chunk) -> list[Stmt]:
    out: list[Stmt] = []
    for (i, buf), _ in zip(vk.plan.outputs, vk.out_spaces):
        dt = vk.kg.graph.outputs[i].type.dtype
        o_off: IntLike = 0
        for j, idx in enumerate(place.o_index):
            o_off = sy.add(sy.mul(o_off, F(f"O{j}")), idx)
        off = sy.add(sy.mul(sy.add(sy.mul(o_off, F("R")), F("row0")), F("C")), ch.n0)
        out.append(T.store(GmRef(out_param(first_out + i), sy.mul(off, itemsize(dt))), place.ref(buf), dt, ch.nn,
                           F("rows"),
                           src_stride=tnp, dst_stride=F("C"), note=f"out{i}"))
    return out


def bound(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """A lower bound on the launch's score (`schedules.score`), never below `coarse_bound`: without a prologue, the
    vector side's own estimate and drain (the score's: one schedule, estimated once, for the candidates that
    share its block shape, chunks and groups) with the cube side's bound. When the cube side's bound is at least
    the vector side's estimate the cube is the slower side, and the launch ends with the drain after its last
    hand-over; else the least of that and the cube's share of one hand-over (the fill when the vector side is
    the slower)."""
    coarse = coarse_bound(a, t, chip, dims)
    if a.pro is not None:   # (a prologue rewrites the vector side: a schedule of its own per candidate)
        return coarse
    memo = _bounds_memo(a, dims)
    aic, groups, steps = _cube_side(a, t, chip, dims, cube_bound, memo)
    if not groups:
        return coarse
    v = _vector_estimate(a, t, chip, dims, memo)
    aiv = v.cycles - launch_cycles(chip, v.blocks)
    # (the sums in the score's order: each term never above the score's, so neither is the total)
    core = aic + chip.cross_flag_cycles + v.tail
    if aic < aiv:
        core = min(aiv + chip.cross_flag_cycles + v.tail, aiv + aic / max(1, steps * t.chunks))
    return max(coarse, core + launch_cycles(chip, groups + v.blocks))


def coarse_bound(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """A cheaper lower bound on the launch's score from the cube side's (`matmul_bound`, its
    FixPipes with the channel's share of first writes reaching HBM, `_fresh_writes`) and the vector side's (`_vector_floor`), both never above the estimates the score combines: the slower side, plus
    the least of the drain after the cube's last tile and the cube's share of one hand-over (the fill when the
    vector side is the slower)."""
    return _bound(a, t, chip, dims, cube_bound)


def floor(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """A cheaper lower bound, never above `coarse_bound`: the cube side's `cube_floor`, no prologue. It reads the
    block shape, the cores, the slots, the chunks and whether A's panel is resident (and, to take off the loads
    ahead of a prologue's barrier, the L1 chunk): many candidates share it, computed once."""
    memo = _bounds_memo(a, dims)
    ahead = (t.cube.kl1, t.cube.steps) if a.pro is not None and t.prologue is not None else ()
    key = ("floor", t.cube.tm, t.cube.tn, t.cube.cores, t.cube.buffer_num, t.cube.a_resident, t.chunks, ahead)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _bound(a, t, chip, dims, cube_floor, prologue=False)
    return hit


def _bounds_memo(a: MixedAnalysis, dims: Mapping[str, int]) -> dict:
    """What the bounds of one analysis share, per dims (the dims a ranking asks them for: one mapping, asked for
    each of its candidates, looked up by identity first)."""
    last = a.memo.get("bounds of")
    if last is not None and last[0] is dims:
        return last[1]
    memo = a.memo.setdefault(("bounds", tuple(sorted(dims.items()))), {})
    a.memo["bounds of"] = (dims, memo)   # (holds the dims: no other mapping takes its identity meanwhile)
    return memo


def _cube_side(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int],
               cube: Callable[..., tuple[float, int]], memo: dict) -> tuple[float, int, int]:
    """(a lower bound on the cube side's estimate without its start-up, its cores (the groups), the blocks per
    group)."""
    ct = t.cube
    key = ("cube side", ct.tm, ct.tn, ct.cores, t.chunks)
    shape = memo.get(key)
    if shape is None:   # (the same for every candidate of this block shape, cores and chunks)
        M, N, _, batch = extents(a.mk, dims, memo)
        blocks = batch * -(-M // ct.tm) * -(-N // ct.tn)
        groups = -(-blocks // max(1, -(-blocks // ct.cores)))   # (matmul.schedule_blocks, evaluated)
        # (with the product kept too, both FixPipes at the channel's share: lower than the output's, still a bound)
        shape = memo[key] = (blocks, _fresh_writes(blocks, groups, t.chunks, _slots(t)), _sinks(a, t, chip, dims))
    blocks, fresh, sinks = shape
    aic, groups = cube(a.mk, ct, chip, dims, sinks, memo, fresh)
    return aic, groups, (-(-blocks // groups) if groups else 0)


def _vector_estimate(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int], memo: dict) -> Estimate:
    """The estimate `schedules.score` makes of the launch's vector side (no prologue), with its drain's tail."""
    ncp = _tnp(a.vk, t.chunk_cols, chip)
    groups = matmul.schedule_blocks(a.mk, t.cube)
    side = _shared_vector_side(a, t, chip, ncp, t.cube.tm * ncp * itemsize(a.mk.out_dtype), groups)
    key = ("vector estimate", id(side))
    hit = memo.get(key)
    if hit is None or hit[0] is not side:   # (the memo holds the side: its id names no other object meanwhile)
        hit = memo[key] = (side, estimate(side, dims, chip, tail_from=addresses({CHANNEL})))
    return hit[1]


def _bound(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int],
           cube: Callable[..., tuple[float, int]], prologue: bool = True) -> float:
    memo = _bounds_memo(a, dims)
    aic, groups, steps = _cube_side(a, t, chip, dims, cube, memo)
    if not groups:
        return 0.0
    if a.pro is not None and t.prologue is not None:
        aic = max(0.0, aic - _ahead_ceiling(a, t, chip, groups, steps))
    key = ("vector floor", t.cube.tm, t.cube.tn, t.chunks, groups, steps)
    if key not in memo:   # the same for every candidate sharing the block shape, chunks and group count
        memo[key] = _vector_floor(a, t, chip, dims, groups, steps)
    aiv, drain = memo[key]
    ends = min(drain, aic / max(1, steps * t.chunks))
    start = launch_cycles(chip, groups * (1 + chip.group_aivs))
    return (_prologue_floor(a, t, chip, dims) if prologue else 0.0) + max(aic, aiv) + ends + start


def _sinks(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int]) -> tuple[Sink, ...]:
    """Where the cube's blocks go (`schedule`): the channel, a chunk at a time, its rows a padded chunk apart;
    the output first when the product is kept too."""
    ncp = _tnp(a.vk, t.chunk_cols, chip)
    channel = Sink(t.chunk_cols if t.chunks > 1 else 0, ncp * itemsize(a.mk.out_dtype))
    return (output_sink(a.mk, dims), channel) if a.keep_product else (channel,)


def _ahead_ceiling(a: MixedAnalysis, t: MixedTiling, chip: Chip, groups: int, steps: int) -> float:
    """At most what the score takes off the cube side for its loads ahead of the barrier
    (`mixed_prologue.prefetched`): the first block's first chunk of B, its copies at the slowest rate the walk
    charges (HBM's share for every byte, off the 512-byte boundary), as often as the walk's mean of a core's
    first two blocks counts the first one."""
    path = getattr(chip, data_path("GM", "L1").cost)
    nbytes = t.cube.kl1 * t.cube.tn * itemsize(a.mk.dtype)
    once = (max(1, t.cube.steps) + 1) * path.startup + \
        nbytes / (gm_bandwidth(path, chip, groups, 1.0) * chip.gm_unaligned_factor)
    return once * max(1.0, (steps - 1) / 2)


def _prologue(a: MixedAnalysis, t: MixedTiling, chip: Chip, groups: IntLike) -> TileSchedule:
    """The prologue's renamed schedule on the launch's vector cores (its statements are shared by the
    candidates that share its tiling and group count: a schedule never holds one statement twice)."""
    assert a.pro is not None and t.prologue is not None
    key = (t.prologue, groups)
    if key not in a.memo:
        first_other = (3 if a.mk.bias else 2) + len(a.vk.kg.inputs) - 1   # after the cube's and the epilogue's
        pro = mixed_prologue.schedule(a.pro, t.prologue, chip, first_other)
        a.memo[key] = replace(pro, blocks=sy.mul(groups, chip.group_aivs))
    return a.memo[key]


def _prologue_floor(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """The prologue's estimate before the barrier (`schedules.score` puts it in front of the pipeline), or 0."""
    if a.pro is None or t.prologue is None:
        return 0.0
    groups = matmul.schedule_blocks(a.mk, t.cube)
    key = ("floor", t.prologue, groups, tuple(sorted(dims.items())))
    if key not in a.memo:
        p = estimate(_prologue(a, t, chip, groups), dims, chip)
        a.memo[key] = p.cycles - launch_cycles(chip, p.blocks) + chip.sync_all_cycles
    return a.memo[key]


def _vector_floor(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int], groups: int,
                  steps: int) -> tuple[float, float]:
    """Lower bounds on the vector side's estimate without its start-up, and on the drain after the cube's last
    hand-over (`schedules.score`: a cross-core flag, then the load of the last chunk of the group's last block
    and its stores): what the first AIV of group 0 moves.
    Per block it loads its rows of the cube's tile and at least one burst of each other input (MTE2) and
    stores its rows of each result (MTE3); the walker charges its block loop at least the busier of the two
    per block but the last, whose span holds both (rotating or not; the first two blocks averaged when there
    are more). Moves at the aligned rate, reads with L2's share alone (the cube's tiles hit in L2), stores with
    HBM's too."""
    mk, ct, vk = a.mk, t.cube, a.vk
    M, N = sy.evaluate(mk.M, dims), sy.evaluate(mk.N, dims)
    nmb, nnb = -(-M // ct.tm), -(-N // ct.tn)
    load, store = data_path("GM", "UB"), data_path("UB", "GM")
    load_path, store_path = getattr(chip, load.cost), getattr(chip, store.cost)
    vblocks = groups * chip.group_aivs
    rbw, wbw = gm_bandwidth(load_path, chip, vblocks, 0.0), gm_bandwidth(store_path, chip, vblocks)
    tile = itemsize(next(u for u in vk.per_tile if u.index == 0).buf.dtype)
    others = sum(1 for u in vk.per_tile if u.index != 0)
    results = [itemsize(v.type.dtype) for v in vk.kg.outputs]

    def shape(i: int) -> tuple[int, int]:   # block i's rows for the first AIV, and its columns
        nb, mb = i % nnb, (i // nnb) % nmb
        mm, nn = min(ct.tm, M - mb * ct.tm), min(ct.tn, N - nb * ct.tn)
        return min(-(-mm // chip.group_aivs), mm), nn

    def moves(i: int) -> tuple[float, float]:
        rows, nn = shape(i)
        mte2 = (1 + others) * load_path.startup + rows * nn * tile / rbw
        mte3 = sum(store_path.startup + rows * nn * size / wbw for size in results)
        return mte2, mte3

    first = moves(0)
    if steps > 2:
        first = tuple((x + y) / 2 for x, y in zip(first, moves(1)))
    last = moves(steps - 1)
    rows, nn = shape(steps - 1)
    width = nn - (-(-nn // t.chunk_cols) - 1) * t.chunk_cols   # the block's last chunk
    drain = chip.cross_flag_cycles + load_path.startup + rows * width * tile / rbw + \
        sum(store_path.startup + rows * width * size / wbw for size in results)
    # a block in column chunks: its moves pipeline within the chunk loop, the last block's too
    return (steps - 1) * max(first) + (sum(last) if t.chunks == 1 else max(last)), drain


def same(a: MixedAnalysis, t: MixedTiling, chip: Chip, dims: Mapping[str, int]) -> MixedTiling | None:
    """The candidate with one L0C slot whose score this one's is known to equal (`matmul_tiling.same_score`: the
    cube side's estimate is; the vector side is the same schedule). None with a prologue (it rewrites the cube
    side) or where that is not known."""
    twin = same_score(a.mk, t.cube, dims) if a.pro is None else None
    return None if twin is None else replace(t, cube=twin)


TEMPLATE = Template("mixed", "mix", MixedTiling, analyze, tilings, schedule, _symbols, need=need, bound=bound,
                    floor=(floor, coarse_bound), same=same)
