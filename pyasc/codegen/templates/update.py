"""The slice-update template: `out = x` with a static strided region replaced by `v`, as strided moves.

The output is seen as rows: the leading axes up to the *row axis* `q`
(the first axis whose region is not the whole axis, or the one before it
when that is the last axis) flattened, each row the contiguous rest of the
tensor (`R` elements). Rows are split over the AIV cores. A core

1. copies its rows of `x` to `out` (one contiguous range, in chunks: one
   MTE2 load, one MTE3 store each), then,
2. for each region row (v row j lands in output row `o*dq + start + jq*step`)
   that is one of its rows (a `When` on integer expressions), loads that
   part of `v` (contiguous) and stores it into the row with strided bursts: the region inside a row collapses (like
   `access.collapse`) to rows of `W` contiguous elements `Srow` apart, and
   any dims outside those are loops.

Both writes of a row are MTE3 stores issued by one core in order, and no
two cores write the same row, so no cross-core ordering is needed.

Symbolic dims (`dynamic=True`) stay expressions: row counts, region starts
and sizes become loop bounds and field values the host computes at launch,
and tile sizes are capped by the budget alone where a dim is not known.
Steps are always static (they are literals of the subscript).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ... import symbolic as sy
from ...ir import Node
from ...symbolic import IntLike
from .. import tileops as T
from ..kernel_graph import KernelGraph
from ..schedule import Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from ..template import Template, Tiling, free_symbols
from ..domain import dim, dims
from .access import StridedAccess, collapse, row_major
from .moves import align
from .tiles import FieldSet, UnsupportedMove, split_over_cores
from .vector_kernel import in_param, out_param

F = sy.sym

OPS = frozenset({"slice_update"})

#: elements per UB buffer slot the candidates try (the chip's UB capacity rejects the large ones)
_BUDGETS = (512, 2048, 8192, 32768)


def handles(kg: KernelGraph) -> bool:
    nodes = kg.nodes
    return len(nodes) == 1 and nodes[0].op in OPS and len(kg.graph.outputs) == 1


@dataclass(frozen=True)
class UpdateKernel:
    """The analysed update: rows of the output, the region inside a row, v's layout."""

    name: str
    dtype: str
    itemsize: int
    rows: IntLike                 # output rows (axes 0..q flattened)
    row_len: IntLike              # elements of one row
    dq: IntLike                   # size of the row axis q
    q_start: IntLike              # region along q: start, step, count
    q_step: int
    q_count: IntLike
    inner: StridedAccess          # the region inside one row (collapsed; last dim stride 1), in out elements
    v_row: IntLike                # elements of v per region row
    v_const: Any = None           # v's value when it is a one-element constant (an immediate, not in GM)


@dataclass(frozen=True)
class UpdateTiling(Tiling):
    chunk: int                    # elements of x copied per move
    tile_rows: int                # rows of a v tile (of the inner region's 2-D block)
    tile_cols: int                # columns of a v tile
    buffer_num: int
    cores: int

    def describe(self) -> str:
        return (f"copy chunk {self.chunk}, v tile {self.tile_rows}x{self.tile_cols}, "
                f"buffer_num {self.buffer_num}, cores {self.cores}")


def _cap(v: IntLike, cap: int) -> int:
    """min(v, cap) for a tile size: a dim only known at launch is capped by the budget alone."""
    return min(int(v), cap) if sy.is_static(v) else cap


def _is(v: IntLike, k: int) -> bool:
    """Whether v is the constant k (a symbolic v never is, whatever it evaluates to at launch)."""
    return sy.is_static(v) and int(v) == k


def analyze(label: str, kg: KernelGraph, chip: Any) -> UpdateKernel:
    node: Node = kg.nodes[0]
    x = node.inputs[0].type
    shape: list[IntLike] = list(dims(x.shape))
    starts: list[IntLike] = [dim(s) if s is not None else 0 for s in node.attrs["starts"]]
    steps = [int(s) for s in node.attrs["steps"]]
    counts: list[IntLike] = list(dims(node.inputs[1].type.shape))
    if len(shape) == 0:
        shape, starts, steps, counts = [1], [0], [1], [1]
    if len(shape) == 1:  # one row of the whole vector
        shape, starts, steps, counts = [1] + shape, [0] + starts, [1] + steps, [1] + counts
    full = [_is(st, 0) and sp == 1 and n == d for d, st, sp, n in zip(shape, starts, steps, counts)]
    p = next((k for k, f in enumerate(full) if not f), len(shape) - 1)
    q = p if p < len(shape) - 1 else p - 1
    rows = sy.mul(1, *shape[:q + 1])
    st = row_major(shape)
    inner_shape = tuple(counts[q + 1:])
    inner_strides = tuple(sy.mul(st[k], steps[k]) for k in range(q + 1, len(shape)))
    offset = sy.add(0, *(sy.mul(starts[k], st[k]) for k in range(q + 1, len(shape))))
    inner = collapse(StridedAccess(inner_shape, inner_strides, offset))
    v_row = sy.mul(1, *inner_shape)
    itemsize = node.inputs[0].type.itemsize
    vnode = node.inputs[1].node
    v_const = vnode.attrs["value"].reshape(-1)[0].item() if vnode.op == "Const" else None
    if vnode.op != "Const" and len(kg.inputs) != 2:
        raise UnsupportedMove("a slice update whose operands are not two GM tensors")
    return UpdateKernel(label, x.dtype, itemsize, rows, st[q], shape[q], starts[q], steps[q],
                        counts[q], inner, v_row, v_const)


def _block_dims(uk: UpdateKernel) -> tuple[list[tuple[IntLike, IntLike]], IntLike, IntLike, IntLike]:
    """The inner region as (loop dims (extent, out stride)), block rows, block row stride, block cols (their
    stride is `col_stride(uk)`)."""
    shape, strides = list(uk.inner.shape), list(uk.inner.strides)
    if not shape:
        return [], 1, 0, 1
    cols = shape[-1]
    if len(shape) == 1:
        return [], 1, 0, cols
    return list(zip(shape[:-2], strides[:-2])), shape[-2], strides[-2], cols


def col_stride(uk: UpdateKernel) -> IntLike:
    """Output elements between neighbouring columns of the region (1: contiguous runs)."""
    return uk.inner.strides[-1] if uk.inner.shape else 1


def _batched(uk: UpdateKernel) -> bool:
    """Region rows that are consecutive output rows, each one contiguous run: moved several at a time."""
    loops, brows, _, _ = _block_dims(uk)
    return not loops and _is(brows, 1) and _is(col_stride(uk), 1) and uk.v_const is None and uk.q_step == 1 \
        and not _is(uk.q_count, 0)


def tilings(uk: UpdateKernel, chip: Any, buffer_num: int, cores: int) -> list[UpdateTiling]:
    per_block = max(1, chip.ub_align // uk.itemsize)
    _, brows, _, bcols = _block_dims(uk)
    out = []
    for budget in _BUDGETS:
        chunk = _cap(sy.mul(uk.rows, uk.row_len), budget)
        # (a strided column store spreads each element over its own 32-byte block first)
        tc = _cap(bcols, min(budget if _is(col_stride(uk), 1) else max(1, budget // per_block), chip.max_nburst))
        if not _is(col_stride(uk), 1):  # one vtranspose per v row: at most one instruction's repeats of padded blocks
            blk = chip.transpose_block
            tc = min(tc, max(blk, chip.max_repeats * chip.vector_repeat_bytes // (blk * uk.itemsize) // blk * blk))
        tr = max(1, _cap(brows, budget // align(tc, per_block)))
        if _batched(uk) and tc == bcols:  # a tile holds several region rows (consecutive output rows)
            tr = max(1, _cap(uk.q_count, min(budget // align(tc, per_block), chip.max_nburst)))
        for bn in sorted({1, max(1, min(2, buffer_num))}):
            t = UpdateTiling(chunk, tr, tc, bn, max(1, min(cores, chip.aiv_cores)))
            if t not in out:
                out.append(t)
    return out


def _batched_write(uk: UpdateKernel, t: UpdateTiling, begin: IntLike, count: IntLike, wp: int, bn: int,
                   gm: Any) -> Stmt:
    """Groups of `tile_rows` region rows of one outer index: the part of a group in this core's rows is one
    2-D load of v and one 2-D store (rows `row_len` apart)."""
    dt, g_rows, n, cols = uk.dtype, t.tile_rows, uk.q_count, _block_dims(uk)[3]
    ngroups = sy.ceildiv(n, g_rows)
    o, g = F("o"), F("g")
    slot = 0  # one slot: a group's load waits for the previous group's store (the groups are few and large)
    r0 = sy.add(sy.mul(o, uk.dq), uk.q_start, sy.mul(g, g_rows))
    lo = sy.max_(F("r0"), begin)
    hi = sy.min_(sy.add(F("r0"), F("k")), sy.add(begin, count))
    v_row = sy.add(sy.mul(o, n), sy.mul(g, g_rows), F("lo"), sy.mul(-1, F("r0")))
    move = [
        Let("lo", lo), Let("kk", sy.add(hi, sy.mul(-1, F("lo")))),
        T.load(Ref("vt", slot), gm(in_param(1), sy.mul(v_row, cols)), dt, cols, F("kk"), src_stride=cols,
               dst_stride=wp, note="v rows"),
        T.store(gm(out_param(0), sy.add(sy.mul(F("lo"), uk.row_len), uk.inner.offset)), Ref("vt", slot), dt, cols,
                F("kk"), src_stride=wp, dst_stride=uk.row_len, note="v rows into the region"),
    ]
    outer = sy.floordiv(uk.rows, uk.dq)
    group = [Let("o", 0 if _is(outer, 1) else sy.floordiv(F("q"), ngroups)),
             Let("g", F("q") if _is(outer, 1) else sy.mod(F("q"), ngroups)),
             Let("r0", r0), Let("k", sy.min_(g_rows, sy.add(n, sy.mul(-1, sy.mul(g, g_rows))))),
             When(sy.max_(sy.add(sy.min_(sy.add(F("r0"), F("k")), sy.add(begin, count)),
                                 sy.mul(-1, sy.max_(F("r0"), begin))), 0),
                  move)]
    # (one flat loop over (outer index, group): the sync plan then sees one loop around the guarded moves)
    return Loop("q", 0, sy.mul(outer, ngroups), 1, group, note="groups of region rows")


def _as_fields(uk: UpdateKernel, fs: FieldSet) -> UpdateKernel:
    """uk with each symbolic size replaced by a tiling field (the host computes it at launch; the body
    reads the field)."""
    inner = StridedAccess(tuple(fs(f"IS{k}", d) for k, d in enumerate(uk.inner.shape)),
                          tuple(fs(f"IT{k}", d) for k, d in enumerate(uk.inner.strides)), fs("IOFF", uk.inner.offset))
    return replace(uk, rows=fs("ROWS", uk.rows), row_len=fs("RL", uk.row_len), dq=fs("DQ", uk.dq),
                   q_start=fs("QA", uk.q_start), q_count=fs("QN", uk.q_count), inner=inner, v_row=fs("VR", uk.v_row))


def schedule(uk: UpdateKernel, t: UpdateTiling, chip: Any) -> TileSchedule:
    fs = FieldSet()
    size, dt = uk.itemsize, uk.dtype
    per_block = max(1, chip.ub_align // size)
    params = [GmParam(in_param(0), dt, "in"), GmParam(in_param(1), dt, "in"), GmParam(out_param(0), dt, "out")]
    if uk.v_const is not None:
        del params[1]
    if _is(sy.mul(uk.rows, uk.row_len), 0):
        return TileSchedule(uk.name, "aiv", params, {}, 0, [], [], ["zero-size: no launch"])
    blocks, begin, count = split_over_cores(fs, uk.rows, t.cores)
    uk = _as_fields(uk, fs)
    bn = t.buffer_num

    def gm(param: str, elem: IntLike) -> GmRef:
        return GmRef(param, sy.mul(elem, size))

    # 1. this core's rows of x, one contiguous range, in chunks
    total = sy.mul(count, uk.row_len)
    c = F("c")
    cslot = sy.mod(c, bn) if bn > 1 else 0
    at = sy.add(sy.mul(begin, uk.row_len), sy.mul(c, t.chunk))
    copy = Loop("c", 0, sy.ceildiv(total, t.chunk), 1, [
        Let("n", sy.min_(t.chunk, sy.add(total, sy.mul(-1, sy.mul(c, t.chunk))))),
        T.load(Ref("cp", cslot), gm(in_param(0), at), dt, F("n"), note="rows of x"),
        T.store(gm(out_param(0), at), Ref("cp", cslot), dt, F("n"), note="rows of x"),
    ], note="copy this core's rows")

    # 2. the region's part of the row, when the row is in it
    loops, brows, bstride, bcols = _block_dims(uk)
    wp = align(t.tile_cols, per_block)
    tb, ub = F("tb"), F("ub")
    vslot = sy.mod(sy.add(tb, ub), bn) if bn > 1 else 0
    v_at: IntLike = sy.mul(F("j"), uk.v_row)
    o_at: IntLike = sy.add(sy.mul(F("r"), uk.row_len), uk.inner.offset)
    v_strides = row_major([d for d, _ in loops] + [brows, bcols])
    for k, (_, ostride) in enumerate(loops):
        v_at = sy.add(v_at, sy.mul(F(f"e{k}"), v_strides[k]))
        o_at = sy.add(o_at, sy.mul(F(f"e{k}"), ostride))
    v_tile = sy.add(v_at, sy.mul(tb, t.tile_rows * bcols), sy.mul(ub, t.tile_cols))
    o_tile = sy.add(o_at, sy.mul(tb, t.tile_rows * bstride), sy.mul(ub, t.tile_cols * col_stride(uk)))
    rows_e = F("tr")
    cols_e = F("tc")
    if uk.v_const is not None:  # one element: written into UB by the vector unit, then stored
        load = T.vdup(Ref("vt", vslot), uk.v_const, per_block, dt, note="the value")
        store = T.store(gm(out_param(0), o_tile), Ref("vt", vslot), dt, cols_e, note="the value into the region")
    elif not _is(col_stride(uk), 1):  # one element per block in UB, then one burst per element
        load = T.load(Ref("vt", vslot), gm(in_param(1), v_tile), dt, cols_e, rows_e, src_stride=bcols,
                      dst_stride=wp, note="v rows")
        rr = F("rr")
        row_at = sy.add(o_tile, sy.mul(rr, bstride))
        if not sy.is_static(col_stride(uk)) or int(col_stride(uk)) > 0:
            put: Stmt = T.store(gm(out_param(0), row_at), Ref("sp", vslot), dt, 1, cols_e, src_stride=per_block,
                                dst_stride=col_stride(uk), note="v elements into the region")
        else:  # a reversed last axis: GM strides cannot be negative, so one burst per element
            kk = F("kk")
            put = Loop("kk", 0, cols_e, 1, [
                T.store(gm(out_param(0), sy.add(row_at, sy.mul(kk, col_stride(uk)))),
                        Ref("sp", vslot, sy.mul(kk, per_block * size)), dt, 1, note="one v element")],
                note="elements, last first")
        store = Loop("rr", 0, rows_e, 1, [
            T.vtranspose(Ref("sp", vslot), Ref("vt", vslot, sy.mul(rr, wp * size)), 1, cols_e, dt,
                         src_row_stride=wp, dst_row_stride=per_block, note="one element per block"),
            put,
        ], note="rows of the v tile")
    elif t.tile_rows == 1 or _is(brows, 1):
        load = T.load(Ref("vt", vslot), gm(in_param(1), v_tile), dt, cols_e, note="v")
        store = T.store(gm(out_param(0), o_tile), Ref("vt", vslot), dt, cols_e, note="v into the region")
    else:
        load = T.load(Ref("vt", vslot), gm(in_param(1), v_tile), dt, cols_e, rows_e, src_stride=bcols,
                      dst_stride=wp, note="v rows")
        store = T.store(gm(out_param(0), o_tile), Ref("vt", vslot), dt, cols_e, rows_e, src_stride=wp,
                        dst_stride=bstride, note="v rows into the region")
    tile: list[Stmt] = [Let("tc", sy.min_(t.tile_cols, sy.add(bcols, sy.mul(-1, sy.mul(ub, t.tile_cols))))),
                        load, store]
    body: list[Stmt] = [Loop("tb", 0, sy.ceildiv(brows, t.tile_rows), 1, [
        Let("tr", sy.min_(t.tile_rows, sy.add(brows, sy.mul(-1, sy.mul(tb, t.tile_rows))))),
        Loop("ub", 0, sy.ceildiv(bcols, t.tile_cols), 1, tile, note="column tiles")], note="row tiles")]
    for k in reversed(range(len(loops))):
        body = [Loop(f"e{k}", 0, loops[k][0], 1, body, note="outer dims of the region")]

    # each region row (v row j) lands in output row r; the core owning r writes it, after its copy
    s, a, n = uk.q_step, uk.q_start, uk.q_count
    outer = sy.floordiv(uk.rows, uk.dq)
    jr = F("j")
    o = 0 if _is(outer, 1) else sy.floordiv(jr, n)
    jq = jr if _is(outer, 1) else sy.mod(jr, n)
    r = sy.add(sy.mul(o, uk.dq), a, sy.mul(jq, s))
    mine = sy.min_(sy.max_(sy.add(F("r"), 1, sy.mul(-1, begin)), 0),
                   sy.max_(sy.add(begin, count, sy.mul(-1, F("r"))), 0))
    write: Stmt = Loop("j", 0, sy.mul(outer, n), 1, [Let("r", r), When(mine, body)], note="region rows")
    if _batched(uk) and t.tile_cols == bcols:
        write = _batched_write(uk, t, begin, count, wp, bn, gm)
    loop_body: list[Stmt] = [copy, write]
    bufs = [Buffer("cp", "UB", dt, align(t.chunk * size, chip.ub_align), bn, "x chunk"),
            Buffer("vt", "UB", dt, align(t.tile_rows * wp * size, chip.ub_align), bn, "v tile")]
    if not _is(col_stride(uk), 1) and uk.v_const is None:
        bufs.append(Buffer("sp", "UB", dt, t.tile_cols * per_block * size, bn, "v row, one element per block"))
    notes = [f"rows {uk.rows} x {uk.row_len}, region rows {a}:{a + n * s}:{s} of {uk.dq}, inside a row "
             f"{uk.inner.describe()}", f"tiling: {t.describe()}"]
    return TileSchedule(uk.name, "aiv", params, fs.fields, blocks, bufs, loop_body, notes)


def symbols(uk: UpdateKernel) -> set[str]:
    return free_symbols([uk.rows, uk.row_len, uk.dq, uk.q_start, uk.q_count, uk.v_row, *uk.inner.shape,
                         *uk.inner.strides, uk.inner.offset])


TEMPLATE = Template("update", "aiv", UpdateTiling, lambda job, chip: [analyze(job.label, job.subject, chip)],
                    tilings, schedule, symbols, ops=OPS, handles=handles)
