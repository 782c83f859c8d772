"""Format conversions (`transdata`): ND <-> FRACTAL_NZ and ND <-> NC1HWC0 as strided moves on AIV cores.

Storage layouts (ir/types.py `storage_shape`; c0 = 32 bytes / itemsize for
1-byte types, else 16):
- FRACTAL_NZ of a (..., M, N) tensor is (..., N1, M1, 16, N0) with N0 = c0:
  column strips of N0 columns, each strip the M rows padded to 16, zeros in
  the padding. A tile is `rows` consecutive (padded) rows of one strip of
  one batch: contiguous in NZ, `rows` bursts of the strip's width N apart in
  ND. ND -> NZ zeroes a tile that holds padding, then loads the valid rows
  and columns into it; NZ -> ND stores only the valid columns.
- NC1HWC0 of an (N, C, H, W) tensor is (N, C1, H, W, C0): channel blocks of
  C0. A tile is `rows` consecutive pixels of one channel block: C0 source
  rows of HW apart in ND, one contiguous run of rows x C0 in NC1HWC0; a
  vtranspose in UB turns one into the other, zero channels pad the last block.

A conversion between two non-ND formats is not lowered (the optimiser
merges NZ -> ND -> NC1HWC0 into one transdata only when both ends are
needed in those formats); the error says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...target import Chip
from ... import symbolic as sy
from ...symbolic import IntLike
from .. import tileops as T
from ..kernel_graph import KernelGraph
from ...ir import TensorType
from ..schedule import Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from .moves import MoveTiling
from .tiles import FieldSet, UnsupportedMove, clamp_extent, decompose, split_over_cores
from ..tiling import largest_fitting
from ..template import Template, buffer_nums
from .vector_kernel import in_param, out_param

F = sy.sym


@dataclass
class Conversion:
    name: str
    src_format: str
    dst_format: str
    dtype: str
    itemsize: int
    batch: int             # NZ: product of the leading dims; NC1HWC0: N
    rows: int              # NZ: M; NC1HWC0: H * W
    cols: int              # NZ: N; NC1HWC0: C
    c0: int                # NZ: N0 (columns of a fractal); NC1HWC0: C0 (channels of a block)
    fractal_rows: int      # NZ: M0 (rows of a fractal); NC1HWC0: 1
    block: int             # bytes of one UB block (row strides are whole blocks)
    notes: list[str] = field(default_factory=list)

    @property
    def nz(self) -> bool:
        return "FRACTAL_NZ" in (self.src_format, self.dst_format)

    @property
    def to_nd(self) -> bool:
        return self.dst_format == "ND"

    def padded(self, rows: int) -> int:
        """Elements of `rows` elements rounded up to whole UB blocks."""
        per = self.block // self.itemsize
        return -(-rows // per) * per

    @property
    def blocks_of_cols(self) -> int:
        """NZ: column strips; NC1HWC0: channel blocks."""
        return -(-self.cols // self.c0)

    @property
    def padded_rows(self) -> int:
        """Rows of one NZ strip (M padded to 16); NC1HWC0 rows are not padded."""
        return -(-self.rows // self.fractal_rows) * self.fractal_rows


def analyze(name: str, kg: KernelGraph, chip: Chip) -> Conversion:
    node = kg.nodes[0]
    src = node.inputs[0].type
    s_fmt, d_fmt = node.attrs.get("src_format", "ND"), node.attrs.get("dst_format", "ND")
    if "ND" not in (s_fmt, d_fmt):
        raise UnsupportedMove(f"{s_fmt} -> {d_fmt} converts between two blocked formats; convert through ND "
                              f"(two transdata nodes)")
    if not src.is_static:
        raise UnsupportedMove(f"a {s_fmt} -> {d_fmt} conversion of {src} needs static dims")
    shape = tuple(int(d) for d in src.shape)
    # the storage layout is the IR type's fact: its last storage dim is c0 (and NZ's M0 precedes it)
    storage = (src if s_fmt != "ND" else node.outputs[0]).storage_shape
    block = chip.space_align("UB")
    if "FRACTAL_NZ" in (s_fmt, d_fmt):
        *batch, m, n = shape if len(shape) >= 2 else (1, *shape)
        b = 1
        for d in batch:
            b *= d
        conv = Conversion(name, s_fmt, d_fmt, src.dtype, src.itemsize, b, m, n, storage[-1], storage[-2], block)
    else:
        n_, c, h, w = shape
        conv = Conversion(name, s_fmt, d_fmt, src.dtype, src.itemsize, n_, h * w, c, storage[-1], 1, block)
    conv.notes.append(f"transdata {s_fmt} -> {d_fmt} of {src}: batch {conv.batch}, rows {conv.rows}, "
                      f"cols {conv.cols}, c0 {conv.c0}")
    return conv


def nc1hwc0_conversion(name: str, t: TensorType, to_nd: bool, chip: Chip) -> Conversion:
    """The conversion of an (N, C, H, W) tensor of type `t` (its shape and dtype) to NC1HWC0, or back (`to_nd`):
    what a conv launch does at the edges of its region (templates/conv_edges.py)."""
    n, c, h, w = (int(d) for d in t.shape)
    blocked = TensorType(t.shape, t.dtype, "NC1HWC0")
    src, dst = ("NC1HWC0", "ND") if to_nd else ("ND", "NC1HWC0")
    conv = Conversion(name, src, dst, t.dtype, blocked.itemsize, n, h * w, c, blocked.storage_shape[-1], 1,
                      chip.space_align("UB"))
    conv.notes.append(f"transdata {src} -> {dst} of {t.dtype}[{n},{c},{h},{w}]: batch {n}, rows {h * w}, cols {c}, "
                      f"c0 {conv.c0}")
    return conv


def buffers(cv: Conversion, t: MoveTiling) -> list[Buffer]:
    size, bn, c0 = cv.itemsize, t.slots(), cv.c0
    if cv.nz:
        return [Buffer("tile", "UB", cv.dtype, t.rows * c0 * size, bn, "rows of one strip")]
    return [Buffer("chw", "UB", cv.dtype, c0 * cv.padded(t.rows) * size, bn, "channel rows"),
            Buffer("hwc", "UB", cv.dtype, t.rows * c0 * size, bn, "pixels x c0")]


def fits(cv: Conversion, t: MoveTiling, chip: Chip) -> bool:
    if sum(b.nbytes for b in buffers(cv, t)) > chip.ub_bytes or t.rows > chip.max_nburst:
        return False
    rep = chip.vector_repeat_bytes
    return cv.nz or -(-t.rows * cv.c0 * cv.itemsize // rep) <= chip.max_repeats


def tilings(cv: Conversion, chip: Chip, buffer_num: int, cores: int) -> list[MoveTiling]:
    cores = max(1, min(cores, chip.aiv_cores))
    total = max(1, cv.padded_rows)
    quantum = cv.fractal_rows
    out: set[MoveTiling] = set()
    for bn in buffer_nums(buffer_num):
        tall = largest_fitting(lambda r: fits(cv, MoveTiling(r, cv.c0, bn, cores), chip), total)
        if tall < 1:
            continue
        if tall < total:
            tall = max(1, tall // quantum * quantum)
        sizes = {tall}
        strips = max(1, cv.batch * cv.blocks_of_cols)
        for k in (1, 2, 4, 8):
            want = -(-cores * k // strips)
            r = -(-total // want)
            sizes.add(max(1, min(tall, -(-r // quantum) * quantum)))
        out.update(MoveTiling(r, cv.c0, bn, cores) for r in sizes)
    return sorted(out, key=lambda t: (-t.buffer_num, -t.rows))


def schedule(cv: Conversion, t: MoveTiling, chip: Chip) -> TileSchedule:
    fs = FieldSet()
    n_rows = -(-(cv.padded_rows if not cv.to_nd else cv.rows) // t.rows)
    total = cv.batch * cv.blocks_of_cols * n_rows
    blocks, begin, count = split_over_cores(fs, total, min(t.cores, chip.aiv_cores))
    lets: list[Stmt] = [Let("t", sy.add(begin, F("i")))]
    lets += decompose(F("t"), [("b", cv.batch), ("s", cv.blocks_of_cols), ("rb", n_rows)])
    r0 = sy.mul(F("rb"), t.rows)
    extent = cv.rows if cv.to_nd else cv.padded_rows
    lets += [Let("r0", r0), Let("rows", clamp_extent(t.rows, extent, F("r0"))),
             Let("vcols", sy.min_(cv.c0, sy.add(cv.cols, sy.mul(-1, sy.mul(F("s"), cv.c0)))))]
    slot = t.slot("i")
    body = _NZ if cv.nz else _NC1HWC0
    per_tile = body[cv.to_nd](cv, t, slot)
    params = [GmParam(in_param(0), cv.dtype, "in"), GmParam(out_param(0), cv.dtype, "out")]
    loop = Loop("i", 0, count, 1, lets + per_tile, note="tiles of this core")
    return TileSchedule(cv.name, "aiv", params, fs.fields, blocks, buffers(cv, t), [loop],
                        cv.notes + [f"tiling: {t.describe()}"])


def _gm(param: str, cv: Conversion, elem: IntLike) -> GmRef:
    return GmRef(param, sy.mul(elem, cv.itemsize))


# ---- FRACTAL_NZ ------------------------------------------------------------------------------


def _nz_offsets(cv: Conversion) -> tuple[IntLike, IntLike]:
    """(ND element, NZ element) of the tile's first row (row r0 of strip s of batch b)."""
    b, s, r0 = F("b"), F("s"), F("r0")
    nd = sy.add(sy.mul(b, cv.rows * cv.cols), sy.mul(r0, cv.cols), sy.mul(s, cv.c0))
    strip = sy.add(sy.mul(b, cv.blocks_of_cols), s)
    nz = sy.mul(sy.add(sy.mul(strip, cv.padded_rows), r0), cv.c0)
    return nd, nz


def _nd_to_nz(cv: Conversion, t: MoveTiling, slot: IntLike) -> list[Stmt]:
    nd, nz = _nz_offsets(cv)
    c0, tile = cv.c0, Ref("tile", slot)
    valid_rows = sy.max_(0, sy.min_(F("rows"), sy.add(cv.rows, sy.mul(-1, F("r0")))))
    padded = sy.add(sy.lt(valid_rows, F("rows")), sy.lt(F("vcols"), c0))
    return [
        Let("vrows", valid_rows),
        When(padded, [T.vdup(tile, 0, sy.mul(F("rows"), c0), cv.dtype, note="zero the fractal padding")]),
        When(sy.lt(0, F("vrows")), [T.load(tile, _gm(in_param(0), cv, nd), cv.dtype, F("vcols"), F("vrows"),
                                           src_stride=cv.cols, dst_stride=c0, note="rows of the strip")]),
        T.store(_gm(out_param(0), cv, nz), tile, cv.dtype, sy.mul(F("rows"), c0), note="NZ rows"),
    ]


def _nz_to_nd(cv: Conversion, t: MoveTiling, slot: IntLike) -> list[Stmt]:
    nd, nz = _nz_offsets(cv)
    c0, tile = cv.c0, Ref("tile", slot)
    return [
        T.load(tile, _gm(in_param(0), cv, nz), cv.dtype, sy.mul(F("rows"), c0), note="NZ rows"),
        T.store(_gm(out_param(0), cv, nd), tile, cv.dtype, F("vcols"), F("rows"), src_stride=c0,
                dst_stride=cv.cols, note="the strip's valid columns"),
    ]


# ---- NC1HWC0 ---------------------------------------------------------------------------------


def nc_offsets(cv: Conversion) -> tuple[IntLike, IntLike]:
    """(NCHW element, NC1HWC0 element) of the tile's first pixel (pixel r0 of channel block s of image b)."""
    b, s, r0 = F("b"), F("s"), F("r0")
    nchw = sy.add(sy.mul(b, cv.cols * cv.rows), sy.mul(s, cv.c0 * cv.rows), r0)
    blocked = sy.mul(sy.add(sy.mul(sy.add(sy.mul(b, cv.blocks_of_cols), s), cv.rows), r0), cv.c0)
    return nchw, blocked


def _nd_to_nc1hwc0(cv: Conversion, t: MoveTiling, slot: IntLike) -> list[Stmt]:
    nchw, blocked = nc_offsets(cv)
    c0, size = cv.c0, cv.itemsize
    hp = cv.padded(t.rows)
    chw, hwc = Ref("chw", slot), Ref("hwc", slot)
    pad = sy.add(c0, sy.mul(-1, F("vcols")))
    return [
        When(sy.lt(0, pad), [T.vdup(chw.at(sy.mul(F("vcols"), hp * size)), 0, sy.mul(pad, hp), cv.dtype,
                                    note="zero the padding channels")]),
        T.load(chw, _gm(in_param(0), cv, nchw), cv.dtype, F("rows"), F("vcols"), src_stride=cv.rows, dst_stride=hp,
               note="channel rows"),
        T.vtranspose(hwc, chw, c0, F("rows"), cv.dtype, src_row_stride=hp, dst_row_stride=c0,
                     note="pixels x c0"),
        T.store(_gm(out_param(0), cv, blocked), hwc, cv.dtype, sy.mul(F("rows"), c0), note="NC1HWC0 rows"),
    ]


def _nc1hwc0_to_nd(cv: Conversion, t: MoveTiling, slot: IntLike) -> list[Stmt]:
    nchw, blocked = nc_offsets(cv)
    c0 = cv.c0
    hp = cv.padded(t.rows)
    chw, hwc = Ref("chw", slot), Ref("hwc", slot)
    return [
        T.load(hwc, _gm(in_param(0), cv, blocked), cv.dtype, sy.mul(F("rows"), c0), note="NC1HWC0 rows"),
        T.vtranspose(chw, hwc, F("rows"), c0, cv.dtype, src_row_stride=c0, dst_row_stride=hp, note="channel rows"),
        T.store(_gm(out_param(0), cv, nchw), chw, cv.dtype, F("rows"), F("vcols"), src_stride=hp,
                dst_stride=cv.rows, note="the valid channels"),
    ]


_NZ: dict[bool, Callable[[Conversion, MoveTiling, IntLike], list[Stmt]]] = {
    False: _nd_to_nz, True: _nz_to_nd}
_NC1HWC0: dict[bool, Callable[[Conversion, MoveTiling, IntLike], list[Stmt]]] = {
    False: _nd_to_nc1hwc0, True: _nc1hwc0_to_nd}


def handles(kg: KernelGraph) -> bool:
    """One format conversion of one tensor input."""
    nodes = kg.nodes
    return (len(nodes) == 1 and nodes[0].op == "transdata" and len(kg.inputs) == 1
            and nodes[0].inputs[0].node.op == "Data" and len(kg.graph.outputs) == 1)


TEMPLATE = Template("transdata", "aiv", MoveTiling, lambda job, chip: [analyze(job.label, job.subject, chip)],
                    tilings, schedule, lambda cv: set(), ops=frozenset({"transdata"}), handles=handles)
