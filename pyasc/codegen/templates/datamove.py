"""The data-movement template: transposes, slices, broadcasts and copies as strided moves on AIV cores.

A kernel whose single op moves data (`access.ACCESS`) reads its input through
a strided access; after collapsing, the output's last dim is the tile's
column dim and the kind of move follows from its source stride:

- "copy" (stride 1 or -1): rows of the tile come from source rows `S_row` apart:
  one MTE2 burst per row (nburst rows, src_stride), one MTE3 store. A
  negative row stride (a reversed axis) loads the rows in source order and
  reverses them in UB with one vcopy per row; a stride of -1 (a reversed last
  axis) loads each row in source order and reverses the tile's columns: a
  vtranspose makes them rows, one vcopy per column reverses them, a second
  vtranspose turns the tile back (a reversed vector is folded into rows first
  when its length has a divisor near its square root; a prime length stays
  one row, one vcopy per element: vector start-up + 1 cycle, plus the scalar
  unit's address arithmetic, per element);
- "bcast_rows" (stride 1, rows stride 0): one row loaded, vbroadcast over the
  tile's rows; when every tile holds the same data it is built once before
  the tile loop and the loop only stores ("load once, repeated stores");
- "bcast_cols" (stride 0): one value per row (contiguous, or gathered as
  below), vbroadcast along the row;
- "transpose" (stride > 1 and another dim has stride 1): a 2-D tile of that
  dim (rows) by the column dim, loaded as `cols` bursts of `rows` elements,
  turned with vtranspose in UB (row strides whole 32-byte blocks), stored as
  rows; the other dims are loops over tiles;
- "gather" (no dim has stride 1: a step on the last axis): per row, one DMA
  of `cols` one-element bursts lands each element at the start of its own
  32-byte block, and a vtranspose of that column (cols=1) packs them. It
  reads only the bytes it needs, costs 32 B of UB per element in flight and
  one DMA per row of the tile (about 210 cycles of start-up each); a negative
  step packs the rows in source order and reverses the columns as above.

Tiles are numbered row-major over (outer dims..., row tiles, column tiles)
and split over the cores (`tiles`); rotating buffers have buffer_num slots.
Tile sizes are candidates scored by the cost model (`tiling.choose`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...target import Chip
from ... import symbolic as sy
from ...ir import Node
from ...symbolic import IntLike
from .. import tileops as T
from ..domain import UnsupportedDomain
from ..kernel_graph import KernelGraph
from ..schedule import GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule
from ..template import Job, Template, free_symbols
from ..tiling import scoring_dims
from .access import ACCESS, access_of, collapse, contiguous_range
from .moves import MoveKernel, MoveTiling, align, analyze, buffers, resident, stride_sign, tilings
from .tiles import FieldSet, UnsupportedMove, clamp_extent, decompose, split_over_cores
from .vector_kernel import in_param, out_param

F = sy.sym

#: registry ops this template lowers when a kernel holds only that op (transdata: formats.py)
OPS = frozenset(ACCESS)

__all__ = ["OPS", "TEMPLATE", "UnsupportedMove", "alias_offset", "handles", "schedule"]


# ---- entry points --------------------------------------------------------------------------


def handles(kg: KernelGraph) -> bool:
    """Whether the kernel is one data-movement op of one tensor input."""
    nodes = kg.nodes
    return (len(nodes) == 1 and nodes[0].op in OPS and len(kg.inputs) == 1
            and nodes[0].inputs[0].node.op == "Data" and len(kg.graph.outputs) == 1)


def _analyze(job: Job, chip: Chip) -> list[MoveKernel]:
    try:
        return [analyze(job.label, job.subject, chip)]
    except UnsupportedDomain as e:
        raise UnsupportedMove(str(e)) from None


def _symbols(mk: MoveKernel) -> set[str]:
    a = mk.access
    return free_symbols([*a.shape, *a.strides, a.offset])


def _tilings(mk: MoveKernel, chip: Chip, buffer_num: int, cores: int) -> list[MoveTiling]:
    """The move's candidates, sized for its dims (a symbolic one at the tiler's nominal size)."""
    nominal, _ = scoring_dims(sorted(_symbols(mk)))
    return tilings(mk, chip, buffer_num, cores, lambda e: sy.evaluate(e, nominal))


def alias_offset(node: Node) -> IntLike | None:
    """The byte offset of `node`'s output inside its input when the output is a contiguous run of it (a
    reshape, squeeze or expand_dims; a slice of whole trailing rows): it can live there, no launch needed."""
    if node.op not in ACCESS or node.inputs[0].type.format != "ND":
        return None
    try:
        a = access_of(node)
    except UnsupportedDomain:
        return None
    if not contiguous_range(a):
        return None
    return sy.mul(collapse(a).offset, node.inputs[0].type.itemsize)


# ---- the schedule ----------------------------------------------------------------------------


@dataclass
class _Tile:
    """One tile's geometry in body expressions (Let names)."""

    rows: IntLike
    cols: IntLike
    src: IntLike      # source element of the tile's first element
    dst: IntLike      # output element of the tile's first element
    slot: IntLike


def schedule(mk: MoveKernel, t: MoveTiling, chip: Chip) -> TileSchedule:
    a = mk.access
    fs = FieldSet()
    shape = [fs(f"D{k}", d) for k, d in enumerate(a.shape)]
    strides = [fs(f"S{k}", s) for k, s in enumerate(a.strides)]
    outs = [fs(f"Q{k}", q) for k, q in enumerate(a.out_strides())]
    offset = fs("OFF", a.offset)
    raw_rows = 1 if mk.row is None else sy.ceildiv(a.shape[mk.row], t.rows)
    raw_cols = sy.ceildiv(a.shape[mk.col], t.cols)
    total = sy.mul(raw_rows, raw_cols, *[a.shape[d] for d in mk.outer])
    if total == 0:  # a zero-size tensor: nothing to launch
        return TileSchedule(mk.name, "aiv", _params(mk.dtype), {}, 0, [], [], mk.notes + ["zero-size: no launch"])
    blocks, begin, count = split_over_cores(fs, total, min(t.cores, chip.aiv_cores))
    n_rows = 1 if mk.row is None else fs("NR", raw_rows)
    n_cols = fs("NC", raw_cols)
    grid = [(f"o{d}", shape[d]) for d in mk.outer] + [("rb", n_rows), ("cb", n_cols)]
    lets: list[Stmt] = [Let("t", sy.add(begin, F("i")))] + decompose(F("t"), grid)
    r0 = sy.mul(F("rb"), t.rows)
    c0 = sy.mul(F("cb"), t.cols)
    rows = 1 if mk.row is None else clamp_extent(t.rows, shape[mk.row], r0)
    lets += [Let("rows", rows), Let("cols", clamp_extent(t.cols, shape[mk.col], c0))]
    src = sy.add(offset, *[sy.mul(F(f"o{d}"), strides[d]) for d in mk.outer], sy.mul(c0, strides[mk.col]),
                 sy.mul(r0, strides[mk.row]) if mk.row is not None else 0)
    dst = sy.add(*[sy.mul(F(f"o{d}"), outs[d]) for d in mk.outer], sy.mul(c0, outs[mk.col]),
                 sy.mul(r0, outs[mk.row]) if mk.row is not None else 0)
    lets += [Let("src", src), Let("dst", dst)]
    slot = t.slot("i")
    tile = _Tile(F("rows") if mk.row is not None else 1, F("cols"), F("src"), F("dst"), slot)
    body = _Body(mk, t, strides, outs, shape)
    pre, per_tile = _KINDS[mk.kind](body, tile)
    loop = Loop("i", 0, count, 1, lets + per_tile, note="tiles of this core")
    notes = mk.notes + [f"tiling: {t.describe()}"]
    return TileSchedule(mk.name, "aiv", _params(mk.dtype), fs.fields, blocks, buffers(mk, t), pre + [loop], notes)


def _params(dtype: str) -> list[GmParam]:
    return [GmParam(in_param(0), dtype, "in"), GmParam(out_param(0), dtype, "out")]


class _Body:
    """The tile ops of each kind of move (see the module docstring)."""

    def __init__(self, mk: MoveKernel, t: MoveTiling, strides: list[IntLike], outs: list[IntLike],
                 shape: list[IntLike]):
        self.mk, self.t, self.size = mk, t, mk.itemsize
        self.strides, self.outs, self.shape = strides, outs, shape
        self.wp = align(t.cols, mk.per_block)          # elements of one tile row in UB

    def gm_in(self, elem: IntLike) -> GmRef:
        return GmRef(in_param(0), sy.mul(elem, self.size))

    def gm_out(self, elem: IntLike) -> GmRef:
        return GmRef(out_param(0), sy.mul(elem, self.size))

    def row_stride(self) -> IntLike:
        return self.strides[self.mk.row] if self.mk.row is not None else 0

    def store_rows(self, tl: _Tile, buf: str, slot: IntLike, dst_row_stride: IntLike) -> Stmt:
        """The tile's rows (UB rows wp apart) to the output rows `dst_row_stride` apart."""
        mk, dt = self.mk, self.mk.dtype
        if mk.row is None or self.t.rows == 1:
            return T.store(self.gm_out(tl.dst), Ref(buf, slot), dt, tl.cols, note="out")
        packed = isinstance(dst_row_stride, int) and dst_row_stride == self.wp and self.t.cols >= dst_row_stride
        if packed:  # whole rows of a row-major output with block-aligned rows: one burst
            return T.store(self.gm_out(tl.dst), Ref(buf, slot), dt, sy.mul(tl.rows, self.wp), note="out")
        return T.store(self.gm_out(tl.dst), Ref(buf, slot), dt, tl.cols, tl.rows, src_stride=self.wp,
                       dst_stride=dst_row_stride, note="out")

    def load_rows(self, tl: _Tile, buf: str, slot: IntLike) -> Stmt:
        """The tile's source rows in source order, each from its lowest address (a reversed axis: the rows
        from the tile's last one up, a row's elements from its last one on)."""
        dt, s = self.mk.dtype, self.row_stride()
        first = tl.src
        if self.mk.flipped():
            first = sy.add(first, sy.mul(sy.add(tl.cols, -1), self.strides[self.mk.col]))
        if self.mk.row is None or self.t.rows == 1:
            return T.load(Ref(buf, slot), self.gm_in(first), dt, tl.cols, note="rows")
        if stride_sign(s) < 0:
            first = sy.add(first, sy.mul(sy.add(tl.rows, -1), s))
            return T.load(Ref(buf, slot), self.gm_in(first), dt, tl.cols, tl.rows, src_stride=sy.mul(-1, s),
                          dst_stride=self.wp, note="rows, last first")
        return T.load(Ref(buf, slot), self.gm_in(first), dt, tl.cols, tl.rows, src_stride=s, dst_stride=self.wp,
                      note="rows")

    def flip_columns(self, tl: _Tile, src: Ref) -> list[Stmt]:
        """The tile's rows (in `src`, each in source order) reversed into "tile": turned so the columns are
        rows, one vcopy per column reverses them, turned back."""
        rp = align(self.t.rows, self.mk.per_block)
        dt = self.mk.dtype
        return [T.vtranspose(Ref("tp"), src, tl.rows, tl.cols, dt, src_row_stride=self.wp, dst_row_stride=rp,
                             note="columns as rows"),
                self.reverse_blocks(Ref("tp2"), Ref("tp"), tl.cols, rp * self.size, tl.rows),
                T.vtranspose(Ref("tile", tl.slot), Ref("tp2"), tl.cols, tl.rows, dt, src_row_stride=rp,
                             dst_row_stride=self.wp, note="back to rows")]

    def reverse_blocks(self, dst: Ref, src: Ref, n: IntLike, row_bytes: int, count: IntLike) -> Stmt:
        """UB row k of `src` -> row n-1-k of `dst` (rows `row_bytes` apart), one vcopy per row."""
        k = F("k")
        back = sy.add(n, -1, sy.mul(-1, k))
        return Loop("k", 0, n, 1, [T.vcopy(dst.at(sy.mul(back, row_bytes)), src.at(sy.mul(k, row_bytes)), count,
                                           self.mk.dtype, note="reverse")], note="reverse the order")

    # -- the kinds -------------------------------------------------------------------------
    def copy(self, tl: _Tile) -> tuple[list[Stmt], list[Stmt]]:
        ops = [self.load_rows(tl, "tile", tl.slot)]
        src = Ref("tile", tl.slot)
        if self.mk.reversed_rows() and self.t.rows > 1:
            ops.append(self.reverse_blocks(Ref("rev"), src, tl.rows, self.wp * self.size, tl.cols))
            src = Ref("rev")
        if self.mk.flipped():
            ops += self.flip_columns(tl, src)
            src = Ref("tile", tl.slot)
        ops.append(self.store_rows(tl, src.buffer, src.slot, self.outs[self.mk.row] if self.mk.row is not None else 0))
        return [], ops

    def bcast_rows(self, tl: _Tile) -> tuple[list[Stmt], list[Stmt]]:
        mk, dt = self.mk, self.mk.dtype
        once = resident(mk, self.t)
        slot = 0 if once else tl.slot
        rows = sy.min_(self.t.rows, self.shape[mk.row]) if once else tl.rows
        cols = self.shape[mk.col] if once else tl.cols
        src = self.gm_in(self._offset() if once else tl.src)
        build = [T.load(Ref("row", slot), src, dt, cols, note="the row"),
                 T.vbroadcast(Ref("tile", slot), Ref("row", slot), rows, cols, dt, axis=0, dst_row_stride=self.wp,
                              note="over the rows")]
        store = self.store_rows(tl, "tile", slot, self.outs[mk.row])
        return (build, [store]) if once else ([], build + [store])

    def bcast_cols(self, tl: _Tile) -> tuple[list[Stmt], list[Stmt]]:
        mk, dt = self.mk, self.mk.dtype
        once = resident(mk, self.t)
        slot = 0 if once else tl.slot
        rows = (sy.min_(self.t.rows, self.shape[mk.row]) if mk.row is not None else 1) if once else tl.rows
        cols = sy.min_(self.t.cols, self.shape[mk.col]) if once else tl.cols
        src = self.gm_in(self._offset() if once else tl.src)
        s = self.row_stride()
        if mk.row is None or s == 1:
            build: list[Stmt] = [T.load(Ref("col", slot), src, dt, rows, note="one value per row")]
        else:
            build = [T.load(Ref("gat", slot), src, dt, 1, rows, src_stride=s, dst_stride=mk.per_block,
                            note="one value per block"),
                     T.vtranspose(Ref("col", slot), Ref("gat", slot), rows, 1, dt, src_row_stride=mk.per_block,
                                  note="pack the values")]
        build.append(T.vbroadcast(Ref("tile", slot), Ref("col", slot), rows, cols, dt, axis=1,
                                  dst_row_stride=self.wp, note="along the rows"))
        store = self.store_rows(tl, "tile", slot, self.outs[mk.row] if mk.row is not None else 0)
        return (build, [store]) if once else ([], build + [store])

    def _offset(self) -> IntLike:
        """The source offset all tiles of a resident broadcast share."""
        return F("OFF") if not isinstance(self.mk.access.offset, int) else self.mk.access.offset

    def transpose(self, tl: _Tile) -> tuple[list[Stmt], list[Stmt]]:
        mk, dt = self.mk, self.mk.dtype
        hp = align(self.t.rows, mk.per_block)
        load = T.load(Ref("src", tl.slot), self.gm_in(tl.src), dt, tl.rows, tl.cols,
                      src_stride=self.strides[mk.col], dst_stride=hp, note="source rows (the column dim)")
        turn = T.vtranspose(Ref("tile", tl.slot), Ref("src", tl.slot), tl.cols, tl.rows, dt, src_row_stride=hp,
                            dst_row_stride=self.wp, note="transpose in UB")
        return [], [load, turn, self.store_rows(tl, "tile", tl.slot, self.outs[mk.row])]

    def gather(self, tl: _Tile) -> tuple[list[Stmt], list[Stmt]]:
        mk, dt = self.mk, self.mk.dtype
        s = self.strides[mk.col]
        group = self.t.cols * mk.block                   # bytes of one row's elements, one per block
        r = F("r")
        row_src = sy.add(tl.src, sy.mul(r, self.row_stride()))
        if mk.flipped():
            row_src = sy.add(row_src, sy.mul(sy.add(tl.cols, -1), s))
        load = T.load(Ref("gat", tl.slot, sy.mul(r, group)), self.gm_in(row_src), dt, 1, tl.cols,
                      src_stride=sy.mul(-1, s) if mk.flipped() else s, dst_stride=mk.per_block,
                      note="one element per block")
        pack = T.vtranspose(Ref("tile", tl.slot, sy.mul(r, self.wp * self.size)), Ref("gat", tl.slot, sy.mul(r, group)),
                            tl.cols, 1, dt, src_row_stride=mk.per_block, note="pack the row")
        ops: list[Stmt] = [Loop("r", 0, tl.rows, 1, [load], note="rows of the tile"),
                           Loop("r", 0, tl.rows, 1, [pack], note="rows of the tile")]
        if mk.flipped():
            ops += self.flip_columns(tl, Ref("tile", tl.slot))
        ops.append(self.store_rows(tl, "tile", tl.slot, self.outs[mk.row] if mk.row is not None else 0))
        return [], ops


_KINDS: dict[str, Callable[[_Body, _Tile], tuple[list[Stmt], list[Stmt]]]] = {
    "copy": _Body.copy, "bcast_rows": _Body.bcast_rows, "bcast_cols": _Body.bcast_cols,
    "transpose": _Body.transpose, "gather": _Body.gather,
}


TEMPLATE = Template("datamove", "aiv", MoveTiling, _analyze, _tilings, schedule, _symbols,
                    ops=frozenset(ACCESS), handles=handles)
