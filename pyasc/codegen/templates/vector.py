"""The vector template: pointwise chains and row reductions (with prologue and epilogue) on AIV cores.

Analysis (`analyze`, independent of tile sizes): the kernel's domain, each
value's space (full tile / per row / scalar), the per-tile vector ops
(`vector_ops`) and their physical buffers (`ub_alloc`).

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
from typing import Any, Sequence

from simulator import isa

from ... import symbolic as sy
from ...ir import Value
from ...symbolic import IntLike
from .. import tileops as T
from ..domain import Domain, InputLayout, UnsupportedDomain, dims, input_layout, make_domain, pointwise_domain
from ..kernel_graph import KernelGraph
from ..schedule import BLOCKS, CORE, Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule
from ..ub_alloc import Assignment, PhysBuf, assign
from ..vector_ops import Geometry, InputUse, Space, VBuf, VectorPlan, VOp, build_vector_plan

F = sy.sym   # tiling fields and loop variables are symbols of the kernel body


@dataclass
class VectorKernel:
    """What the vector template learned about one kernel (see the module docstring)."""

    name: str
    kg: KernelGraph
    domain: Domain
    plan: VectorPlan
    layouts: dict[int, InputLayout]          # input vbuf id -> its layout
    resident: list[InputUse]
    per_tile: list[InputUse]
    prologue: list[VOp]                      # expansions of resident inputs (before the tile loop)
    body: list[VOp]                          # the per-tile ops
    alloc: Assignment
    out_spaces: list[Space]
    min_itemsize: int
    reduces: bool
    mode: str

    @property
    def buffer_counts(self) -> dict[tuple, int]:
        counts: dict[tuple, int] = {}
        for p in self.alloc.buffers:
            counts[(p.space, p.itemsize, p.rotating)] = counts.get((p.space, p.itemsize, p.rotating), 0) + 1
        return counts


@dataclass(frozen=True)
class VectorTiling:
    mode: str              # "rows" | "chunks"
    rows: int              # rows per tile (rows mode), else 1
    width: int             # elements per chunk (chunks mode), else 0
    buffer_num: int
    cores: int             # cores available (the launch uses min(cores, tiles))

    def describe(self) -> str:
        what = f"{self.rows} rows" if self.mode == "rows" else f"chunks of {self.width}"
        return f"{what} per tile, buffer_num={self.buffer_num}, cores<={self.cores}"


# ---- analysis --------------------------------------------------------------------------------


def analyze(name: str, kg: KernelGraph, reduce_rows: Sequence[Any] | None, k: int, mode: str) -> VectorKernel:
    """`reduce_rows`: the row reduction's input shape (None for a pointwise kernel); k: axes it reduces;
    mode: "rows" or "chunks" (a row broadcast over all rows is resident only in rows mode)."""
    graph_inputs = [n.out() for n in kg.graph.nodes if n.op == "Data"]
    in_shapes = [dims(v.type.shape) for v in graph_inputs if v.type.numel != 1]
    if reduce_rows is None:
        shape = _domain_shape(kg)
        domain = pointwise_domain(shape, [s for s in in_shapes if _broadcastable(s, shape)])
        reduces = False
    else:
        shape = dims(reduce_rows)
        full_inputs = [s for s in in_shapes if _broadcastable(s, shape)]
        domain = make_domain(shape, len(shape) - k, full_inputs)
        reduces = True

    def space_of(v: Value) -> Space:
        t = v.type
        if v.node.op in ("Data", "Const") and t.numel == 1 and t.is_static:
            return Space.SCALAR
        shp = dims(t.shape)
        if v.node.op == "Data":
            if not _broadcastable(shp, domain.shape):
                return Space.ROW
            cls = input_layout(domain, shp).cls
            return {"full": Space.FULL, "rowvec": Space.FULL, "col": Space.ROW, "scalar": Space.SCALAR}[cls]
        if not reduces:
            return Space.FULL
        k_row = len(domain.shape) - domain.lead
        row_part = shp[len(shp) - k_row:] if len(shp) >= len(domain.shape) else ()
        full_row = tuple(domain.shape[domain.lead:])
        return Space.FULL if row_part == full_row and any(d != 1 for d in row_part) else Space.ROW

    plan = build_vector_plan(kg, kg.nodes, space_of, name)
    layouts: dict[int, InputLayout] = {}
    resident: list[InputUse] = []
    per_tile: list[InputUse] = []
    for use in plan.inputs:
        shp = dims(use.value.type.shape)
        lay = input_layout(domain, shp, per_row=use.space == Space.ROW)
        if use.space == Space.ROW and lay.cls not in ("col", "scalar"):
            raise UnsupportedDomain(f"input of shape {tuple(shp)} is read per row but is not one value per row")
        if lay.cls == "col" and lay.r_stride != 1:
            raise UnsupportedDomain(f"input of shape {tuple(shp)}: its per-row values are not contiguous")
        layouts[use.buf.id] = lay
        (resident if _is_resident(use, lay, mode) else per_tile).append(use)
    out_spaces = []
    for i, buf in plan.outputs:
        v = kg.graph.outputs[i]
        if buf.space == Space.SCALAR or (buf.space == Space.FULL and tuple(dims(v.type.shape)) != tuple(domain.shape)):
            raise UnsupportedDomain(f"output {i} of shape {v.type.shape} is not a full tile of the domain "
                                    f"{domain.shape} nor one value per row")
        out_spaces.append(buf.space)
    # ops that only expand resident inputs run once, before the tile loop
    res_ids = {u.buf.id for u in resident}
    prologue, body = [], []
    for op in plan.ops:
        if op.kind in ("expand", "cast") and all(s.id in res_ids for s in op.reads):
            prologue.append(op)
            res_ids.add(op.dst.id)
        else:
            body.append(op)
    out_bufs = [b for _, b in plan.outputs]
    alloc = assign(body, [u.buf for u in per_tile], [u.buf for u in resident], out_bufs, prologue)
    sizes = [isa.itemsize(b.dtype) for b in plan.buffers] or [4]
    return VectorKernel(name, kg, domain, plan, layouts, resident, per_tile, prologue, body, alloc, out_spaces,
                        min(sizes), reduces, mode)


def _domain_shape(kg: KernelGraph) -> tuple[IntLike, ...]:
    shapes = [dims(v.type.shape) for v in kg.graph.outputs]
    shapes += [dims(n.outputs[0].shape) for n in kg.nodes]
    best: tuple[IntLike, ...] = ()
    for s in shapes:
        if len(s) > len(best) or (len(s) == len(best) and _numel_known(s) > _numel_known(best)):
            best = s
    return best


def _numel_known(s: Sequence[IntLike]) -> int:
    n = 1
    for d in s:
        n *= d if isinstance(d, int) else 1 << 20
    return n


def _broadcastable(s: Sequence[IntLike], shape: Sequence[IntLike]) -> bool:
    if len(s) > len(shape):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(s), reversed(shape)))


def _is_resident(use: InputUse, lay: InputLayout, mode: str) -> bool:
    if lay.outer_dependent:
        return False
    return lay.cls == "scalar" or (lay.cls == "rowvec" and mode == "rows" and use.space == Space.FULL)


# ---- tile geometry ------------------------------------------------------------------------------


def row_align(vk: VectorKernel) -> int:
    """Elements per 32-byte block of the narrowest dtype: rows of every buffer start on a block."""
    return 32 // vk.min_itemsize


def padded_row(vk: VectorKernel) -> IntLike:
    return sy.align_up(vk.domain.C, row_align(vk))


def ub_bytes(vk: VectorKernel, tiling: VectorTiling, chip: Any) -> int:
    """UB the kernel's buffers take with this tiling (static shapes; symbolic rows count as their bound)."""
    return sum(b.nbytes for b in _buffers(vk, tiling, chip))


def _slot_bytes(space: Space, itemsize: int, full_elems: int, row_elems: int) -> int:
    n = {Space.FULL: full_elems, Space.ROW: row_elems, Space.SCALAR: 1}[space]
    return -(-max(1, n) * itemsize // 32) * 32


def _full_elems(vk: VectorKernel, tiling: VectorTiling) -> int:
    if tiling.mode == "chunks":
        return tiling.width
    cp = padded_row(vk)
    if not isinstance(cp, int):
        raise UnsupportedDomain("a symbolic row length needs the chunks mode")
    return tiling.rows * cp


def _buffers(vk: VectorKernel, tiling: VectorTiling, chip: Any) -> list[Buffer]:
    full = _full_elems(vk, tiling)
    row = tiling.rows
    out = []
    for p in vk.alloc.buffers:
        slots = tiling.buffer_num if p.rotating else 1
        out.append(Buffer(p.name, "UB", _dtype_of_size(p.itemsize), _slot_bytes(p.space, p.itemsize, full, row),
                          slots, p.kind))
    for use in vk.resident + vk.per_tile:
        lay = vk.layouts[use.buf.id]
        if lay.cls == "rowvec" and tiling.mode == "rows":
            size = isa.itemsize(use.buf.dtype)
            c = vk.domain.C if isinstance(vk.domain.C, int) else full
            slots = 1 if use in vk.resident else tiling.buffer_num
            out.append(Buffer(f"rv{use.buf.id}", "UB", use.buf.dtype, _slot_bytes(Space.FULL, size, c, 1), slots,
                              "rowvec staging"))
    return out


def _dtype_of_size(size: int) -> str:
    return {1: "uint8", 2: "float16", 4: "float32"}[size]


# ---- the schedule ---------------------------------------------------------------------------------


@dataclass
class _Ctx:
    vk: VectorKernel
    tiling: VectorTiling
    fields: dict[str, IntLike] = field(default_factory=dict)
    params: list[GmParam] = field(default_factory=list)


def in_param(i: int) -> str:
    return f"in{i}"


def out_param(i: int) -> str:
    return f"out{i}"


def schedule(vk: VectorKernel, tiling: VectorTiling, chip: Any) -> TileSchedule:
    d = vk.domain
    ctx = _Ctx(vk, tiling)
    fields = ctx.fields
    rows_mode = tiling.mode == "rows"
    fields["R"] = d.R
    fields["C"] = d.C
    for j, o in enumerate(d.outer):
        fields[f"O{j}"] = o
    fields["tr"] = tiling.rows
    n_rt = sy.ceildiv(d.R, tiling.rows)
    if rows_mode:
        fields["Cp"] = padded_row(vk)
        n_ct: IntLike = 1
    else:
        fields["tw"] = tiling.width
        n_ct = sy.ceildiv(d.C, tiling.width)
    total = sy.mul(d.outer_count, n_rt, n_ct)
    fields["T"] = total
    cores = min(tiling.cores, chip.aiv_cores)
    blocks = sy.ceildiv(total, sy.max_(1, sy.ceildiv(total, cores)))
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
        for j, e in enumerate(_decompose(F("o"), len(d.outer))):
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
    place = _Placement(vk, tiling, geom, slot, r0, c0, o_index, rows_mode)
    for i, use in enumerate(vk.kg.inputs):
        ctx.params.append(GmParam(in_param(i), use.type.dtype, "in"))
    for i, v in enumerate(vk.kg.outputs):
        ctx.params.append(GmParam(out_param(i), v.type.dtype, "out"))
    for j, o in enumerate(d.outer):
        for use in vk.resident + vk.per_tile:
            s = vk.layouts[use.buf.id].o_strides[j]
            if s != 0:
                fields[f"s{use.buf.id}_{j}"] = s
    pre: list[Stmt] = place.prologue()
    tile: list[Stmt] = lets + place.loads() + place.compute(vk.body) + place.stores()
    loop = Loop("i", 0, count, 1, tile, note="tiles of this core")
    buffers = _buffers(vk, tiling, chip)
    notes = [f"domain {tuple(d.shape)} -> outer {tuple(d.outer)}, R={d.R}, C={d.C}", f"tiling: {tiling.describe()}"]
    return TileSchedule(vk.name, "aiv", ctx.params, fields, blocks, buffers, pre + [loop], notes)


def _decompose(index: IntLike, n: int) -> list[IntLike]:
    """Outer multi-index (row-major over fields O0..O{n-1}) of a flat outer index."""
    out: list[IntLike] = []
    rest = index
    for j in reversed(range(n)):
        size = F(f"O{j}")
        out.append(sy.mod(rest, size) if j else rest)
        rest = sy.floordiv(rest, size)
    return out[::-1]


class _Placement:
    """Turns the kernel's VOps and inputs/outputs into tile ops for one geometry."""

    def __init__(self, vk: VectorKernel, tiling: VectorTiling, geom: Geometry, slot: IntLike, r0: IntLike,
                 c0: IntLike, o_index: list[IntLike], rows_mode: bool):
        self.vk, self.tiling, self.geom, self.slot = vk, tiling, geom, slot
        self.r0, self.c0, self.o_index, self.rows_mode = r0, c0, o_index, rows_mode

    def ref(self, buf: VBuf, tile_slot: bool = True) -> Ref:
        p = self.vk.alloc.of[buf.id]
        return Ref(p.name, self.slot if (p.rotating and tile_slot) else 0)

    def _gm_in(self, use: InputUse, col: IntLike, row: IntLike, per_tile: bool) -> GmRef:
        lay = self.vk.layouts[use.buf.id]
        off: IntLike = 0
        if per_tile:
            for j, idx in enumerate(self.o_index):
                if lay.o_strides[j] != 0:
                    off = sy.add(off, sy.mul(idx, F(f"s{use.buf.id}_{j}")))
            off = sy.add(off, sy.mul(row, lay.r_stride), col)
        return GmRef(in_param(use.index), sy.mul(off, isa.itemsize(use.buf.dtype)))

    # -- before the loop: resident inputs and pad initialisation -----------------------------
    def prologue(self) -> list[Stmt]:
        """Loads of the resident inputs first, then their expansions: one flag orders all of them."""
        vk, loads, out = self.vk, [], []
        for use in vk.resident:
            lay = vk.layouts[use.buf.id]
            dt = use.buf.dtype
            dst = self.ref(use.buf, tile_slot=False)
            if lay.cls == "scalar":
                loads.append(T.load(dst, self._gm_in(use, 0, 0, False), dt, 1, note=f"{use.buf.what} (scalar)"))
            elif lay.cls == "rowvec" and self.rows_mode:
                stage = Ref(f"rv{use.buf.id}")
                loads.append(T.load(stage, self._gm_in(use, 0, 0, False), dt, F("C"), note=f"{use.buf.what} (row)"))
                out.append(T.vdup(dst, 0, sy.mul(F("tr"), F("Cp")), dt, note="zero the row padding"))
                out.append(T.vbroadcast(dst, stage, F("tr"), F("C"), dt, axis=0, dst_row_stride=F("Cp"),
                                        note=f"{use.buf.what} over the rows"))
        for op in vk.prologue:
            out.extend(self.vop(op, resident=True))
        if self.rows_mode and self._needs_pad_init():
            for use in vk.per_tile:
                if use.space == Space.FULL:
                    p = vk.alloc.of[use.buf.id]
                    for s in range(self.tiling.buffer_num if p.rotating else 1):
                        out.append(T.vdup(Ref(p.name, s), 0, sy.mul(F("tr"), F("Cp")), use.buf.dtype,
                                          note="zero the row padding"))
        return loads + out

    def _needs_pad_init(self) -> bool:
        c = self.vk.domain.C
        if not isinstance(c, int):
            return True
        cp = padded_row(self.vk)
        return any(-(-c * isa.itemsize(u.buf.dtype) // 32) * 32 < cp * isa.itemsize(u.buf.dtype)
                   for u in self.vk.per_tile if u.space == Space.FULL)

    # -- per tile -------------------------------------------------------------------------------------
    def loads(self) -> list[Stmt]:
        g, out = self.geom, []
        for use in self.vk.per_tile:
            lay = self.vk.layouts[use.buf.id]
            dt = use.buf.dtype
            dst = self.ref(use.buf)
            if use.space == Space.ROW or lay.cls == "col":
                out.append(T.load(dst, self._gm_in(use, 0, self.r0, True), dt, g.rows, note=f"{use.buf.what} per row"))
            elif lay.cls == "scalar":
                out.append(T.load(dst, self._gm_in(use, 0, 0, True), dt, 1, note=use.buf.what))
            elif lay.cls == "rowvec":
                if self.rows_mode:
                    stage = Ref(f"rv{use.buf.id}", self.slot)
                    out.append(T.load(stage, self._gm_in(use, 0, 0, True), dt, F("C"), note=f"{use.buf.what} (row)"))
                    out.append(T.vbroadcast(dst, stage, g.rows, F("C"), dt, axis=0, dst_row_stride=F("Cp"),
                                            note=f"{use.buf.what} over the rows"))
                else:
                    out.append(T.load(dst, self._gm_in(use, self.c0, 0, True), dt, g.cols, note=use.buf.what))
            else:
                out.append(self._load_full(use, dst, dt))
        return out

    def _load_full(self, use: InputUse, dst: Ref, dt: str) -> Stmt:
        g = self.geom
        src = self._gm_in(use, self.c0, self.r0, True)
        if not self.rows_mode:
            return T.load(dst, src, dt, g.cols, note=use.buf.what)
        if self._contiguous_rows():
            return T.load(dst, src, dt, sy.mul(g.rows, F("C")), note=use.buf.what)
        return T.load(dst, src, dt, F("C"), g.rows, src_stride=F("C"), dst_stride=F("Cp"), note=use.buf.what)

    def _contiguous_rows(self) -> bool:
        c = self.vk.domain.C
        return isinstance(c, int) and padded_row(self.vk) == c

    def compute(self, ops: Sequence[VOp]) -> list[Stmt]:
        out: list[Stmt] = []
        for op in ops:
            out.extend(self.vop(op))
        return out

    def stores(self) -> list[Stmt]:
        g, out = self.geom, []
        for (i, buf), space in zip(self.vk.plan.outputs, self.vk.out_spaces):
            v = self.vk.kg.graph.outputs[i]
            dt = v.type.dtype
            src = self.ref(buf)
            size = isa.itemsize(dt)
            o_off: IntLike = 0
            if space == Space.ROW:
                # per-row outputs are laid out over the rows of the domain: outer-major, then R
                for j, idx in enumerate(self.o_index):
                    o_off = sy.add(sy.mul(o_off, F(f"O{j}")), idx)
                off = sy.add(sy.mul(o_off, F("R")), self.r0)
                out.append(T.store(GmRef(out_param(i), sy.mul(off, size)), src, dt, g.rows, note=f"out{i} per row"))
                continue
            for j, idx in enumerate(self.o_index):
                o_off = sy.add(sy.mul(o_off, F(f"O{j}")), idx)
            off = sy.add(sy.mul(sy.add(sy.mul(o_off, F("R")), self.r0), F("C")), self.c0)
            dst = GmRef(out_param(i), sy.mul(off, size))
            if not self.rows_mode:
                out.append(T.store(dst, src, dt, g.cols, note=f"out{i}"))
            elif self._contiguous_rows():
                out.append(T.store(dst, src, dt, sy.mul(g.rows, F("C")), note=f"out{i}"))
            else:
                out.append(T.store(dst, src, dt, F("C"), g.rows, src_stride=F("Cp"), dst_stride=F("C"),
                                   note=f"out{i}"))
        return out

    # -- one vector op ----------------------------------------------------------------------------
    def vop(self, op: VOp, resident: bool = False) -> list[Stmt]:
        g = self.geom
        if resident:
            g = Geometry(full=sy.mul(F("tr"), F("Cp")) if self.rows_mode else F("tw"), row=F("tr"), rows=F("tr"),
                         cols=F("C") if self.rows_mode else F("tw"), stride=F("Cp") if self.rows_mode else F("tw"))
        ref = (lambda b: self.ref(b, tile_slot=False)) if resident else self.ref
        n = g.count(op.dst.space) if op.dst.space != Space.SCALAR else 1
        dst = ref(op.dst)
        s = [ref(x) if isinstance(x, VBuf) else x for x in op.srcs]
        k = op.kind
        if k == "binary":
            return [T.vbinary(op.fn, dst, s[0], s[1], n, op.dtype, note=op.note)]
        if k == "scalar":
            return [T.vscalar(op.fn, dst, s[0], s[1], n, op.dtype, reverse=op.reverse, note=op.note)]
        if k == "unary":
            return [T.vunary(op.fn, dst, s[0], n, op.dtype, note=op.note)]
        if k == "compare":
            return [T.vcompare(op.fn, dst, s[0], s[1], n, op.dtype, note=op.note)]
        if k == "select":
            return [T.vselect(dst, s[0], s[1], s[2], n, op.dtype, note=op.note)]
        if k == "cast":
            return [T.vcast(dst, s[0], n, op.dtype, op.dst.dtype, note=op.note)]
        if k == "dup":
            return [T.vdup(dst, s[0], n, op.dst.dtype, note=op.note)]
        if k == "copy":
            return [T.vcopy(dst, s[0], n, op.dtype, note=op.note)]
        if k == "reduce":
            return [T.vreduce(op.fn, dst, s[0], g.rows, g.cols, op.dtype, src_row_stride=g.stride, note=op.note)]
        if k == "finalize_mean":
            return [T.vscalar("div", dst, s[0], F("C"), n, op.dtype, note=op.note)]
        if k == "expand":
            src_space = op.srcs[0].space
            if src_space == Space.SCALAR:
                return [T.vbroadcast(dst, s[0], 1, n, op.dtype, axis=1, note=op.note)]
            return [T.vbroadcast(dst, s[0], g.rows, g.stride, op.dtype, axis=1, dst_row_stride=g.stride,
                                 note=op.note)]
        raise AssertionError(f"unknown vector op kind {k!r}")


# ---- candidates ---------------------------------------------------------------------------------------


def tilings(vk: VectorKernel, chip: Any, buffer_num: int, cores: int) -> list[VectorTiling]:
    """Tile sizes worth scoring: the largest that fits UB, and sizes that balance the tiles over the cores."""
    cores = max(1, min(cores, chip.aiv_cores))
    out: list[VectorTiling] = []
    d = vk.domain
    slot_cap = chip.max_repeats * chip.vector_repeat_bytes
    for bn in sorted({1, buffer_num}):
        if vk.mode == "rows":
            cp = padded_row(vk)
            if not isinstance(cp, int):
                continue
            rows_total = d.R if isinstance(d.R, int) else None
            biggest = _largest(lambda tr: _fits(vk, VectorTiling("rows", tr, 0, bn, cores), chip, slot_cap),
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
            quantum = max(1, 512 // vk.min_itemsize)
            total = d.C if isinstance(d.C, int) else None
            limit = total if total else slot_cap
            biggest = _largest(lambda w: _fits(vk, VectorTiling("chunks", 1, w, bn, cores), chip, slot_cap), limit)
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


def _fits(vk: VectorKernel, tiling: VectorTiling, chip: Any, slot_cap: int) -> bool:
    bufs = _buffers(vk, tiling, chip)
    return all(b.slot_bytes <= slot_cap for b in bufs) and sum(b.nbytes for b in bufs) <= chip.ub_bytes


def _largest(fits: Any, upper: int) -> int:
    """The largest n in [1, upper] with fits(n) (fits is monotone), or 0."""
    if upper < 1 or not fits(1):
        return 0
    lo, hi = 1, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
