"""What a data-movement kernel does: its kind of move, its tile shapes, the UB buffers a tile needs.

After collapsing (access.py), the output's last dim is a tile's column dim
and the kind of move follows from its source stride (see datamove.py for
how each kind is lowered): "copy" (stride 1 or -1), "bcast_rows" (stride 1,
rows stride 0), "bcast_cols" (stride 0), "transpose" (stride > 1 and another
dim has stride 1: that dim is the tile's row dim) and "gather" (no dim has
stride 1 or -1). The other dims are loops over tiles. Tile shapes are
candidates for the cost model: the most rows of whole rows (or the widest
chunk) that fit, row counts that balance the tiles over the cores, and for
transposes and reversed last axes narrower, squarer tiles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from ...target import Chip
from ... import symbolic as sy
from ...symbolic import IntLike
from ..kernel_graph import KernelGraph
from ..schedule import Buffer
from .access import StridedAccess, access_of, collapse
from .tiles import UnsupportedMove
from ..template import Tiling, buffer_nums
from ..tiling import largest_fitting


def stride_sign(e: IntLike) -> int:
    """The sign of a stride: an int, or a coefficient times dims (positive when the dims are)."""
    v = e if isinstance(e, int) else sy.evaluate(e, {s: 2 for s in sy.free_symbols(e)})
    return (v > 0) - (v < 0)


@dataclass
class MoveKernel:
    name: str
    op: str
    dtype: str
    itemsize: int
    access: StridedAccess            # collapsed, at least one dim
    kind: str                        # see the module docstring
    row: int | None                  # the tile's row dim (None: a tile is one row)
    col: int                         # the tile's column dim
    outer: tuple[int, ...]           # the other dims, outermost first (loops over tiles)
    block: int                       # bytes of one UB block (addresses and row strides are whole blocks)
    notes: list[str] = field(default_factory=list)

    @property
    def per_block(self) -> int:
        """Elements in one UB block."""
        return self.block // self.itemsize

    def extent(self, dim: int | None) -> IntLike:
        return 1 if dim is None else self.access.shape[dim]

    def stride(self, dim: int | None) -> IntLike:
        return 0 if dim is None else self.access.strides[dim]

    def reversed_rows(self) -> bool:
        return self.kind in ("copy", "gather") and self.row is not None and stride_sign(self.stride(self.row)) < 0

    def flipped(self) -> bool:
        """The last axis is read backwards (a negative step): tiles are loaded in source order and their
        columns reversed in UB."""
        return self.kind in ("copy", "gather") and stride_sign(self.stride(self.col)) < 0


@dataclass(frozen=True)
class MoveTiling(Tiling):
    rows: int              # tile extent along the row dim
    cols: int              # tile extent along the column dim
    buffer_num: int
    cores: int

    def describe(self) -> str:
        return f"{self.rows} x {self.cols} tiles, buffer_num={self.buffer_num}, cores<={self.cores}"


def analyze(name: str, kg: KernelGraph, chip: Chip) -> MoveKernel:
    """The move a single-op data-movement kernel makes (raises UnsupportedMove)."""
    node = kg.nodes[0]
    src = node.inputs[0].type
    a = collapse(access_of(node))
    if not a.shape:
        a = StridedAccess((1,), (1,), a.offset)
    last = len(a.shape) - 1
    s_col = a.strides[last]
    row: int | None = last - 1 if last >= 1 else None
    if row is None and s_col == -1 and isinstance(a.shape[0], int) and _divisor(a.shape[0]) > 1:
        a, row, last = _fold(a), 0, 1    # a reversed vector as rows: its columns reverse many rows at once
    if s_col in (1, -1):
        kind = "bcast_rows" if s_col == 1 and row is not None and a.strides[row] == 0 else "copy"
    elif s_col == 0:
        kind = "bcast_cols"
        if row is not None and stride_sign(a.strides[row]) < 0:
            raise UnsupportedMove(f"a broadcast along {a.describe()} reads its rows backwards")
    else:
        unit = [k for k in range(last) if a.strides[k] == 1]
        if unit and stride_sign(s_col) > 0:
            kind, row = "transpose", unit[0]
        elif unit:
            raise UnsupportedMove(f"a transposed read with a reversed last axis: {a.describe()}")
        else:
            kind = "gather"
    outer = tuple(k for k in range(last) if k != row)
    mk = MoveKernel(name, node.op, src.dtype, src.itemsize, a, kind, row, last, outer, chip.space_align("UB"))
    mk.notes.append(f"{node.op}: {a.describe()} -> {kind}")
    return mk


def _divisor(n: int) -> int:
    """The largest divisor of n up to sqrt(n) (1 for a prime)."""
    return max((d for d in range(1, math.isqrt(n) + 1) if n % d == 0), default=1)


def _fold(a: StridedAccess) -> StridedAccess:
    """A 1-D access of n elements as (n / b, b) rows, b = `_divisor(n)`: reversing the columns of many rows
    at once costs one vcopy per column instead of one per element (a prime n stays one row)."""
    (n,), (s,) = a.shape, a.strides
    b = _divisor(n)
    return StridedAccess((n // b, b), (s * b, s), a.offset)


# ---- buffers -------------------------------------------------------------------------------


def align(n: int, a: int) -> int:
    return -(-n // a) * a


def resident(mk: MoveKernel, t: MoveTiling) -> bool:
    """Every tile holds the same data (a broadcast whose tile covers all that varies): build it once."""
    if any(stride_sign(mk.stride(d)) != 0 for d in mk.outer):
        return False
    if mk.kind == "bcast_rows":
        return isinstance(mk.extent(mk.col), int) and t.cols >= mk.extent(mk.col)
    if mk.kind == "bcast_cols":
        return mk.row is None or (isinstance(mk.extent(mk.row), int) and t.rows >= mk.extent(mk.row))
    return False


def buffers(mk: MoveKernel, t: MoveTiling) -> list[Buffer]:
    size, bn, blk = mk.itemsize, t.slots(), mk.block
    wp = align(t.cols, mk.per_block) * size          # bytes of one tile row in UB
    tile = t.rows * wp
    dt = mk.dtype
    if mk.kind in ("bcast_rows", "bcast_cols"):
        slots = t.slots(not resident(mk, t))
        if mk.kind == "bcast_rows":
            src = [Buffer("row", "UB", dt, wp, slots, "the row")]
        else:
            src = [Buffer("col", "UB", dt, align(t.rows * size, blk), slots, "one value per row")]
            if mk.row is not None and mk.stride(mk.row) != 1:
                src.append(Buffer("gat", "UB", dt, t.rows * blk, slots, "values, one per block"))
        return src + [Buffer("tile", "UB", dt, tile, slots, "broadcast rows")]
    if mk.kind == "transpose":
        hp = align(t.rows, mk.per_block) * size
        return [Buffer("src", "UB", dt, t.cols * hp, bn, "source rows"),
                Buffer("tile", "UB", dt, tile, bn, "transposed")]
    out = [Buffer("tile", "UB", dt, tile, bn, "rows")]
    if mk.kind == "gather":
        out.append(Buffer("gat", "UB", dt, t.rows * t.cols * blk, bn, "elements, one per block"))
    # vector-only scratch needs one slot: the vector pipe runs in order
    if mk.reversed_rows() and mk.kind == "copy" and t.rows > 1:
        out.append(Buffer("rev", "UB", dt, tile, 1, "rows reversed"))
    if mk.flipped():
        turned = t.cols * align(t.rows, mk.per_block) * size
        out += [Buffer("tp", "UB", dt, turned, 1, "columns as rows"), Buffer("tp2", "UB", dt, turned, 1, "reversed")]
    return out


def fits(mk: MoveKernel, t: MoveTiling, chip: Chip) -> bool:
    """UB capacity and the per-instruction limits (bursts per DMA, repeats of the unsplit vector ops)."""
    if sum(b.nbytes for b in buffers(mk, t)) > chip.ub_bytes:
        return False
    size, rb, reps = mk.itemsize, chip.vector_repeat_bytes, chip.max_repeats
    bursts = {"copy": t.rows, "bcast_rows": t.rows, "bcast_cols": t.rows, "transpose": max(t.rows, t.cols),
              "gather": max(t.rows, t.cols)}[mk.kind]
    if bursts > chip.max_nburst:
        return False
    if mk.kind in ("bcast_rows", "bcast_cols") and t.rows * -(-t.cols * size // rb) > reps:
        return False
    tb = chip.transpose_block  # vtranspose works on whole blocks: both dims padded set its repeats
    if (mk.kind == "transpose" or mk.flipped()) and -(-align(t.rows, tb) * align(t.cols, tb) * size // rb) > reps:
        return False
    if mk.kind in ("gather", "bcast_cols") and -(-max(t.cols, t.rows) * size // rb) > reps:
        return False
    return True


# ---- candidates ------------------------------------------------------------------------------


def tilings(mk: MoveKernel, chip: Chip, buffer_num: int, cores: int, hint: Callable[[IntLike], int]) -> list[MoveTiling]:
    """Tile shapes worth scoring: whole rows (or the widest chunk) with the most rows that fit, and row
    counts that balance the tiles over the cores; transposes and reversed rows also try narrower tiles.
    `hint` gives a symbolic extent a nominal size (the tiling fields still use the real one)."""
    cores = max(1, min(cores, chip.aiv_cores))
    rows_total = max(1, hint(mk.extent(mk.row)))
    cols_total = max(1, hint(mk.extent(mk.col)))
    outer = 1
    for d in mk.outer:
        outer *= max(1, hint(mk.extent(d)))
    out: set[MoveTiling] = set()
    for bn in buffer_nums(buffer_num):
        widest = largest_fitting(lambda w: fits(mk, MoveTiling(1, w, bn, cores), chip), cols_total)
        if widest < 1:
            continue
        if widest < cols_total:
            widest = max(1, widest // mk.per_block * mk.per_block)
        widths = {widest}
        if mk.kind == "transpose" or mk.flipped():  # square-ish tiles: each turn in UB moves more
            w = mk.per_block
            while w < widest:
                widths.add(w)
                w *= 4
        for w in widths:
            tall = largest_fitting(lambda r: fits(mk, MoveTiling(r, w, bn, cores), chip), rows_total)
            if tall < 1:
                continue
            sizes = {tall}
            per_row_tiles = outer * -(-cols_total // w)
            for k in (1, 2, 4, 8):
                want = -(-cores * k // per_row_tiles)
                sizes.add(max(1, min(tall, -(-rows_total // want))))
            if mk.reversed_rows():
                sizes.add(1)
            out.update(MoveTiling(r, w, bn, cores) for r in sizes)
    if mk.kind == "transpose" and out:
        out = _coalesced(out, rows_total, cols_total, chip.gm_peak_align // mk.itemsize)
    return sorted(out, key=lambda t: (-t.buffer_num, -t.rows * t.cols, -t.cols))


def _coalesced(cands: set[MoveTiling], rows_total: int, cols_total: int, peak: int) -> set[MoveTiling]:
    """A transpose's GM bursts are `rows` elements on the way in and `cols` on the way out: keep the tiles
    whose shorter burst is at least half the best any tile gets (a dim shorter than a peak-bandwidth row
    counts as whole), so the cost model chooses among coalesced tiles only ("where the shape allows")."""
    def quality(t: MoveTiling) -> float:
        return min(t.rows / min(rows_total, peak), t.cols / min(cols_total, peak))
    best = max(quality(t) for t in cands)
    return {t for t in cands if quality(t) >= best / 2}
