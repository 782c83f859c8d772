"""Swap the last two axes of a tensor on the vector cores: (batch, R, C) -> (batch, C, R).

The matmul plan needs it for a transposed left operand the cube cannot transpose on the way in (32-bit
and 8-bit types: load_l0 transposes 16-bit fractals only). Tiles of tr x tc elements: MTE2 loads tr rows
of tc elements into UB (rows on 32-byte blocks), V transposes them (vtranspose), MTE3 stores tc rows of
tr elements. Tiles are numbered batch-major, split over the cores in contiguous runs, and rotate over
`buffer_num` slots.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip, itemsize
from .. import tileops as T
from ..schedule import BLOCKS, CORE, Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule
from ..template import Template, Tiling, align_up, buffer_nums, free_symbols

F = sy.sym
SIZES = (16, 32, 64, 128, 256)


@dataclass(frozen=True)
class Transpose2D:
    name: str
    batch: IntLike
    R: IntLike
    C: IntLike
    dtype: str


@dataclass(frozen=True)
class TransposeTiling(Tiling):
    tr: int
    tc: int
    buffer_num: int
    cores: int

    def describe(self) -> str:
        return f"{self.tr}x{self.tc} tiles, buffer_num={self.buffer_num}, cores<={self.cores}"


def _row(n: int, dtype: str, chip: Chip) -> int:
    """`n` elements rounded up to whole UB blocks (rows of a vtranspose start on a block)."""
    return align_up(n, chip.ub_align // itemsize(dtype))


def tile_bytes(tk: Transpose2D, t: TransposeTiling, chip: Chip) -> tuple[int, int]:
    size = itemsize(tk.dtype)
    return t.tr * _row(t.tc, tk.dtype, chip) * size, t.tc * _row(t.tr, tk.dtype, chip) * size


def tilings(tk: Transpose2D, chip: Chip, buffer_num: int, cores: int) -> list[TransposeTiling]:
    out = []
    limit = chip.max_repeats * chip.vector_repeat_bytes   # one vtranspose per tile
    cores = max(1, min(cores, chip.aiv_cores))
    for bn in buffer_nums(buffer_num):
        for tr in SIZES:
            for tc in SIZES:
                t = TransposeTiling(tr, tc, bn, cores)
                a, b = tile_bytes(tk, t, chip)
                if max(a, b) <= limit and (a + b) * bn <= chip.ub_bytes:
                    out.append(t)
    return out


def schedule(tk: Transpose2D, t: TransposeTiling, chip: Chip) -> TileSchedule:
    fields: dict[str, IntLike] = {"R": tk.R, "C": tk.C, "tr": t.tr, "tc": t.tc}
    nrb, ncb = sy.ceildiv(F("R"), t.tr), sy.ceildiv(F("C"), t.tc)
    total = sy.mul(tk.batch, sy.ceildiv(tk.R, t.tr), sy.ceildiv(tk.C, t.tc))
    fields["T"] = total
    blocks = sy.ceildiv(total, sy.max_(1, sy.ceildiv(total, t.cores)))
    per = sy.ceildiv(F("T"), F(BLOCKS))
    begin = sy.mul(F(CORE), per)
    count = sy.max_(0, sy.min_(per, sy.add(F("T"), sy.mul(-1, begin))))
    R, C = F("R"), F("C")
    lets: list[Stmt] = [
        Let("t", sy.add(begin, F("i"))), Let("cb", sy.mod(F("t"), ncb)), Let("q", sy.floordiv(F("t"), ncb)),
        Let("rb", sy.mod(F("q"), nrb)), Let("bi", sy.floordiv(F("q"), nrb)),
        Let("r0", sy.mul(F("rb"), t.tr)), Let("rr", sy.min_(t.tr, sy.add(R, sy.mul(-1, F("r0"))))),
        Let("c0", sy.mul(F("cb"), t.tc)), Let("cc", sy.min_(t.tc, sy.add(C, sy.mul(-1, F("c0"))))),
    ]
    size = itemsize(tk.dtype)
    slot = t.slot("i")
    src_row, dst_row = _row(t.tc, tk.dtype, chip), _row(t.tr, tk.dtype, chip)
    base = sy.mul(F("bi"), R, C)
    src = GmRef("in0", sy.mul(sy.add(base, sy.mul(F("r0"), C), F("c0")), size))
    dst = GmRef("out0", sy.mul(sy.add(base, sy.mul(F("c0"), R), F("r0")), size))
    body = lets + [
        T.load(Ref("x", slot), src, tk.dtype, F("cc"), F("rr"), src_stride=C, dst_stride=src_row, note="rows in"),
        T.vtranspose(Ref("y", slot), Ref("x", slot), F("rr"), F("cc"), tk.dtype, src_row_stride=src_row,
                     dst_row_stride=dst_row, note="transpose"),
        T.store(dst, Ref("y", slot), tk.dtype, F("rr"), F("cc"), src_stride=dst_row, dst_stride=R, note="rows out"),
    ]
    a, b = tile_bytes(tk, t, chip)
    buffers = [Buffer("x", "UB", tk.dtype, a, t.buffer_num, "in tile"),
               Buffer("y", "UB", tk.dtype, b, t.buffer_num, "out tile")]
    params = [GmParam("in0", tk.dtype, "in"), GmParam("out0", tk.dtype, "out")]
    notes = [f"({tk.batch}, {tk.R}, {tk.C}) -> ({tk.batch}, {tk.C}, {tk.R})", f"tiling: {t.describe()}"]
    return TileSchedule(tk.name, "aiv", params, fields, blocks,
                        buffers, [Loop("i", 0, count, 1, body, note="tiles of this core")], notes)


TEMPLATE = Template("transpose", "aiv", TransposeTiling, lambda job, chip: [job.subject], tilings, schedule,
                    lambda tk: free_symbols([tk.batch, tk.R, tk.C]))
