"""max_pool2d / avg_pool2d on an NC1HWC0 map (AIV cores): a pool is elementwise max / sum over rows.

In NC1HWC0 a pixel is C0 contiguous channels, a map row W pixels, so the window tap (i, j) of every
output pixel of a row is one contiguous run of the input row: with the horizontal stride taken out, output
row oh of plane (n, c1) is op over the taps of in_row[oh * sh - ph + i][x + j] for x in [0, Wfull) (Wfull =
(Wo - 1) * sw + 1 pixels of padded coordinates, C0 lanes each: a vector op of Wfull * C0 elements per tap),
and the stride is applied on the way out: the store to GM takes every sw-th pixel (a strided DMA).

A tile is `rows` output rows of one plane. Its input band (the rows its windows read) is loaded into a UB
buffer holding each row padded to Wp pixels, pre-filled with the padding value (-inf for max; 0 for avg),
the map's rows at their place. avg sums in float32 and multiplies by 1 / divisor: the divisor of output
(oh, ow) is rows(oh) * cols(ow) (the window's extent inside the padded map, or inside the map without
count_include_pad: `ops.conv.pool_divisors`), so a per-column factor row (built once per core, a vdup per
distinct value) and a per-row scalar (kh's reciprocal, other values for the few border rows) apply it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...target import Chip, itemsize
from ... import symbolic as sy
from ...symbolic import IntLike
from .. import tileops as T
from ..kernel_graph import KernelGraph
from ..schedule import Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from ..template import Template, Unsupported, buffer_nums, ub_slot
from .moves import MoveTiling
from .tiles import FieldSet, decompose, split_over_cores
from ..tiling import largest_fitting
from ...ops.conv import BLOCKED, PoolGeometry, pool_divisors, pool_geometry

F = sy.sym
POOL_DTYPES = ("float16", "float32")


@dataclass(frozen=True)
class Pool:
    name: str
    kind: str                  # "max" or "avg"
    dtype: str
    planes: int                # N * C1
    g: PoolGeometry            # the sizes, window, stride, padding (ops.conv)
    row_factors: tuple[float, ...] = ()    # avg: 1 / rows(oh)
    col_factors: tuple[float, ...] = ()    # avg: 1 / cols(ow)
    c0: int = 16

    @property
    def work(self) -> str:
        """The dtype the window op runs in: float32 sums for avg, the input's dtype for max."""
        return "float32" if self.kind == "avg" else self.dtype

    @property
    def wfull(self) -> int:
        """Pixels of padded coordinates one output row spans (every sw-th is an output)."""
        return (self.g.wo - 1) * self.g.stride[1] + 1

    @property
    def wp(self) -> int:
        """Pixels of one padded input row in UB: the map, its padding and what the last window overhangs;
        whole output rows of sw pixels so that a strided store can walk several rows at once."""
        need = max(self.g.w + 2 * self.g.padding[1], self.wfull + self.g.kernel[1] - 1)
        return max(need, self.g.wo * self.g.stride[1])

    def band(self, rows: int) -> int:
        """Input rows the windows of `rows` consecutive output rows read."""
        return (rows - 1) * self.g.stride[0] + self.g.kernel[0]

    @property
    def fill(self) -> float:
        return float("-inf") if self.kind == "max" else 0.0


def analyze(name: str, kg: KernelGraph) -> Pool:
    node = kg.nodes[0]
    x = node.inputs[0].type
    if x.format != BLOCKED:
        raise Unsupported(f"{node.op} reads its map in {BLOCKED}, got {x.format} (GE's blocked_layout pass "
                          f"converts it; was it disabled?)")
    if x.dtype not in POOL_DTYPES:
        raise Unsupported(f"{node.op} on the vector cores takes {', '.join(POOL_DTYPES)}, not {x.dtype}")
    attrs = {k: v for k, v in node.attrs.items() if not k.startswith("_") and k != "fusion_group"}
    g = pool_geometry(x, attrs, node.op)
    kind = "max" if node.op == "max_pool2d" else "avg"
    rows_f: tuple[float, ...] = ()
    cols_f: tuple[float, ...] = ()
    if kind == "avg":
        rows, cols = pool_divisors(g, bool(attrs.get("count_include_pad", True)))
        rows_f = tuple(float(np.float32(1) / np.float32(r)) for r in rows)
        cols_f = tuple(float(np.float32(1) / np.float32(c)) for c in cols)
    c1 = x.storage_shape[1]
    return Pool(name, kind, x.dtype, g.n * c1, g, rows_f, cols_f, x.storage_shape[-1])


def buffers(p: Pool, t: MoveTiling, chip: Chip) -> list[Buffer]:
    size, wsize = itemsize(p.dtype), itemsize(p.work)
    bn = t.slots()
    band = p.band(t.rows) * p.wp * p.c0
    acc = t.rows * p.wp * p.c0
    out = [Buffer("band", "UB", p.dtype, ub_slot(band * size, chip), bn, "input rows")]
    if p.work != p.dtype:
        out.append(Buffer("band32", "UB", p.work, ub_slot(band * wsize, chip), bn, "input rows (float32)"))
        out.append(Buffer("res", "UB", p.dtype, ub_slot(acc * size, chip), bn, "output rows"))
    out.append(Buffer("acc", "UB", p.work, ub_slot(acc * wsize, chip), bn, "window op, full resolution"))
    if p.kind == "avg":
        out.append(Buffer("fac", "UB", "float32", ub_slot(p.wfull * p.c0 * 4, chip), 1, "1 / column extent"))
    return out


def fits(p: Pool, t: MoveTiling, chip: Chip) -> bool:
    return sum(b.nbytes for b in buffers(p, t, chip)) <= chip.ub_bytes and t.rows * p.g.wo <= chip.max_nburst


def tilings(p: Pool, chip: Chip, buffer_num: int, cores: int) -> list[MoveTiling]:
    cores = max(1, min(cores, chip.aiv_cores))
    out: set[MoveTiling] = set()
    for bn in buffer_nums(buffer_num):
        most = largest_fitting(lambda r: fits(p, MoveTiling(r, p.c0, bn, cores), chip), p.g.ho)
        if most == 0:
            continue
        sizes = {most}
        for per_core in (1, 2, 4):
            want = -(-cores * per_core // p.planes)
            sizes.add(max(1, min(most, -(-p.g.ho // want))))
        out.update(MoveTiling(r, p.c0, bn, cores) for r in sizes)
    return sorted(out, key=lambda t: (-t.buffer_num, -t.rows))


def schedule(p: Pool, t: MoveTiling, chip: Chip) -> TileSchedule:
    fs = FieldSet()
    (kh, kw), (sh, sw), (ph, pw) = p.g.kernel, p.g.stride, p.g.padding
    size, c0 = itemsize(p.dtype), p.c0
    nrb = -(-p.g.ho // t.rows)
    blocks, begin, count = split_over_cores(fs, p.planes * nrb, min(t.cores, chip.aiv_cores))
    slot = t.slot("i")
    band, acc = Ref("band", slot), Ref("acc", slot)
    work = Ref("band32", slot) if p.work != p.dtype else band
    row = p.wp * c0                                        # UB elements of one padded input row
    body: list[Stmt] = [Let("t", sy.add(begin, F("i")))]
    body += decompose(F("t"), [("pl", p.planes), ("rb", nrb)])
    body += [Let("r0", sy.mul(F("rb"), t.rows)), Let("rows", sy.min_(t.rows, sy.add(p.g.ho, sy.mul(-1, F("r0"))))),
             Let("lo", sy.add(sy.mul(F("r0"), sh), -ph)),           # the band's first row (may be padding)
             Let("v0", sy.max_(0, F("lo"))),
             Let("v1", sy.min_(p.g.h, sy.add(F("lo"), sy.mul(sy.add(F("rows"), -1), sh), kh))),
             Let("nb", sy.add(sy.mul(sy.add(F("rows"), -1), sh), kh))]
    body.append(T.vdup(band, p.fill, sy.mul(F("nb"), row), p.dtype, note="padding value"))
    src = GmRef("in0", sy.mul(sy.add(sy.mul(F("pl"), p.g.h * p.g.w), sy.mul(F("v0"), p.g.w)), c0 * size))
    dst = band.at(sy.mul(sy.add(sy.mul(sy.add(F("v0"), sy.mul(-1, F("lo"))), p.wp), pw), c0 * size))
    body.append(When(sy.lt(F("v0"), F("v1")), [T.load(
        dst, src, p.dtype, p.g.w * c0, sy.add(F("v1"), sy.mul(-1, F("v0"))), src_stride=p.g.w * c0, dst_stride=row,
        pad=False, note="the map's rows of the band")]))
    if p.work != p.dtype:
        body.append(T.vcast(work, band, sy.mul(F("nb"), row), p.dtype, p.work, note="to float32"))
    wsize = itemsize(p.work)
    span = p.wfull * c0
    out_row = acc.at(sy.mul(F("j"), row * wsize))
    taps: list[Stmt] = []
    first = True
    for i in range(kh):
        for jj in range(kw):
            tap = work.at(sy.mul(sy.add(sy.mul(sy.add(sy.mul(F("j"), sh), i), p.wp), jj), c0 * wsize))
            if first:
                taps.append(T.vcopy(out_row, tap, span, p.work, note="first tap"))
                first = False
            else:
                taps.append(T.vbinary("max" if p.kind == "max" else "add", out_row, out_row, tap, span, p.work,
                                      note=f"tap ({i}, {jj})"))
    if p.kind == "avg":
        taps.append(T.vbinary("mul", out_row, out_row, Ref("fac"), span, "float32", note="1 / column extent"))
        taps += _row_factor(p, out_row, span)
    result = acc
    if p.work != p.dtype:
        result = Ref("res", slot)
        taps.append(T.vcast(result.at(sy.mul(F("j"), row * size)), out_row, span, p.work, p.dtype, round="rint",
                            note="to the output dtype"))
    body.append(Loop("j", 0, F("rows"), 1, taps, note="output rows of the tile"))
    out = GmRef("out0", sy.mul(sy.add(sy.mul(F("pl"), p.g.ho * p.g.wo), sy.mul(F("r0"), p.g.wo)), c0 * size))
    if sw == 1 and p.wp == p.g.wo:
        body.append(T.store(out, result, p.dtype, sy.mul(F("rows"), p.g.wo * c0), note="output rows"))
    else:
        # every sw-th pixel of each row (rows wp pixels apart in UB, a multiple of sw)
        body.append(Loop("j", 0, F("rows"), 1, [T.store(
            out.at(sy.mul(F("j"), p.g.wo * c0 * size)), result.at(sy.mul(F("j"), row * size)), p.dtype, c0, p.g.wo,
            src_stride=sw * c0, dst_stride=c0, note="every stride-th pixel of the row")], note="output rows"))
    setup: list[Stmt] = []
    if p.kind == "avg":
        setup = _column_factors(p)
    params = [GmParam("in0", p.dtype, "in"), GmParam("out0", p.dtype, "out")]
    notes = [f"{p.kind}_pool {p.g.kernel} stride {p.g.stride} padding {p.g.padding}: {p.planes} planes of "
             f"{p.g.h}x{p.g.w} -> {p.g.ho}x{p.g.wo} ({p.dtype}, NC1HWC0)", f"tiling: {t.describe()}"]
    loop = Loop("i", 0, count, 1, body, note="tiles of this core")
    return TileSchedule(p.name, "aiv", params, fs.fields, blocks, buffers(p, t, chip), setup + [loop], notes)


def _runs(values: tuple[float, ...]) -> list[tuple[int, int, float]]:
    """(start, length, value) of the runs of equal values."""
    out: list[tuple[int, int, float]] = []
    for i, v in enumerate(values):
        if out and out[-1][2] == v and out[-1][0] + out[-1][1] == i:
            out[-1] = (out[-1][0], out[-1][1] + 1, v)
        else:
            out.append((i, 1, v))
    return out


def _column_factors(p: Pool) -> list[Stmt]:
    """The factor row over Wfull pixels: output ow's factor at pixel ow * sw (the pixels between are not
    stored; they get the next output's factor)."""
    sw, c0 = p.g.stride[1], p.c0
    per_pixel = [p.col_factors[min(x // sw + (x % sw > 0), p.g.wo - 1)] for x in range(p.wfull)]
    return [T.vdup(Ref("fac").at(start * c0 * 4), value, n * c0, "float32", note="1 / column extent")
            for start, n, value in _runs(tuple(per_pixel))]


def _row_factor(p: Pool, out_row: Ref, span: int) -> list[Stmt]:
    """Multiply output row oh = r0 + j by 1 / rows(oh): the common value, or a border row's own."""
    runs = _runs(p.row_factors)
    common = max(runs, key=lambda r: r[1])[2]
    oh = sy.add(F("r0"), F("j"))
    out: list[Stmt] = [T.vscalar("mul", out_row, out_row, common, span, "float32", note="1 / row extent")]
    for start, n, value in runs:
        if value == common:
            continue
        inside = sy.mul(sy.lt(sy.add(start, -1), oh), sy.lt(oh, start + n))
        out.append(When(inside, [T.vscalar("mul", out_row, out_row, value / common, span, "float32",
                                           note="a border row's extent")]))
    return out


def handles(kg: KernelGraph) -> bool:
    return len(kg.nodes) == 1 and kg.nodes[0].op in ("max_pool2d", "avg_pool2d")


TEMPLATE = Template("pool", "aiv", MoveTiling, lambda job, chip: [analyze(job.label, job.subject)], tilings,
                    schedule, lambda p: set(), ops=frozenset({"max_pool2d", "avg_pool2d"}), handles=handles)
