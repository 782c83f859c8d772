"""The conv weights in the cube's layout: OIHW -> the weight matrix the conv template reads (AIV cores).

The matrix B^T is (O, K): row o holds w[o, c, i, j] at column ((b * kh + i) * kw + j) * c0 + c % c0 for
channel block b = c // c0 (c0: the cube's fractal width, 16 for float16, 8 for float32; `blocks` of them,
the last padded with zero channels), the column order of the img2col matrix Load3D cuts out of an NC1HWC0
map. It is stored in fractals (FRACTAL_Z): K / c0 panels of c0 columns, each the O rows padded to a
multiple of 16 with zero rows, c0 values per row: the NZ image the cube wants in L1, so the conv loads any
run of panels for any block of output channels as one strided copy of whole rows. On the way the values
are cast to the cube's dtype.

With a folded batch norm (`bn`) the same launch computes, per output channel and in float32,
s = gamma / sqrt(var + eps) and the bias (bias - mean) * s + beta (out1, what the bias table gets), and
multiplies the weights by s before rounding them to w's dtype (exactly `ops.conv.fold_batch_norm`). A bias
of another dtype than float32 is cast to float32 here too (out1), so the conv needs no launch of its own
for it.

A tile is `rows` output channels (of the rows padded to 16: the padding rows are zeros): their channel rows
(one per input channel, the taps padded to whole blocks) are loaded into UB, the padding channels zeroed,
cast and scaled, each c0 x taps block transposed to taps x c0 into its panels, and the tile stored with
one strided copy (its rows of every panel).

A `part` of the work: "all" of it, or (conv_launch puts them on different vector cores side by side, since
every per-channel parameter is a short move of its own, mostly start-up) the "weights" alone, which read of
the parameters only the norm's var and gamma (the scale), or the "bias" alone (every parameter, out1).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...target import Chip, itemsize
from ... import symbolic as sy
from .. import tileops as T
from ..schedule import Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from ..template import Template, buffer_nums, ub_slot
from .moves import MoveTiling
from .tiles import FieldSet, clamp_extent, split_over_cores
from ..tiling import largest_fitting

F = sy.sym


def padded_channels(c: int) -> int:
    """Channels of an NC1HWC0 map of c channels (whole 16-channel blocks): what the weight rows cover."""
    return -(-c // 16) * 16


@dataclass(frozen=True)
class ConvWeights:
    name: str
    o: int
    c: int                 # input channels of one output channel (C / groups)
    kh: int
    kw: int
    src_dtype: str         # w's dtype
    dtype: str             # the cube's dtype (the result's)
    bias_dtype: str | None = None     # the conv's bias (None: no bias)
    bn: tuple[str, ...] = ()          # a folded batch norm: the dtypes of mean, var, gamma, beta
    bn_eps: float = 1e-5
    c0: int = 0            # the cube's fractal width for dtype (set by `for_chip`)
    part: str = "all"      # "all", "weights" (out0 alone) or "bias" (out1 alone): see the module docstring

    def for_chip(self, chip: Chip) -> "ConvWeights":
        return replace(self, c0=chip.fractal_c0(itemsize(self.dtype)))

    @property
    def blocks(self) -> int:
        """Channel blocks of c0 in the result: the channels padded to NC1HWC0's 16-channel blocks."""
        return padded_channels(self.c) // self.c0

    @property
    def taps(self) -> int:
        return self.kh * self.kw

    @property
    def tp(self) -> int:
        """UB row of one channel's taps: whole 32-byte blocks for 2- and 4-byte types."""
        return -(-self.taps // 16) * 16

    @property
    def k(self) -> int:
        return padded_channels(self.c) * self.taps

    @property
    def rows(self) -> int:
        """Rows of every panel: the output channels padded to whole fractals."""
        return padded_channels(self.o)

    @property
    def panels(self) -> int:
        return self.k // self.c0

    @property
    def padded(self) -> bool:
        return self.c < self.blocks * self.c0

    @property
    def scale(self) -> bool:
        return bool(self.bn)

    @property
    def params(self) -> list[tuple[str, str]]:
        """(name, dtype) of the per-channel inputs this launch reads, in1.. in order."""
        out = list(zip(("mean", "var", "gamma", "beta"), self.bn))
        return out + ([("bias", self.bias_dtype)] if self.bias_dtype is not None else [])

    @property
    def emits_bias(self) -> bool:
        """Whether the conversion (all its parts) writes the conv's float32 bias (out1): a folded norm's, or a
        bias cast to float32."""
        return bool(self.bn) or self.bias_dtype not in (None, "float32")

    @property
    def writes_weights(self) -> bool:
        return self.part != "bias"

    @property
    def writes_bias(self) -> bool:
        return self.emits_bias and self.part != "weights"

    @property
    def loaded(self) -> list[tuple[int, str, str]]:
        """(index in `params`, name, dtype) of the per-channel inputs this part reads: all of them for the bias,
        only the scale's (var, gamma) for the weights alone."""
        if not (self.writes_bias or self.scale and self.writes_weights):
            return []
        keep = None if self.writes_bias else ("var", "gamma")
        return [(i, n, d) for i, (n, d) in enumerate(self.params) if keep is None or n in keep]

    @property
    def stages(self) -> list[str]:
        """The dtypes a tile's channel rows pass through: w's, float32 to scale, back to w's, the cube's."""
        out = [self.src_dtype]
        if self.scale:
            out += ["float32", self.src_dtype]
        out.append(self.dtype)
        return [d for i, d in enumerate(out) if i == 0 or d != out[i - 1]]


def buffers(cw: ConvWeights, t: MoveTiling, chip: Chip) -> list[Buffer]:
    rows = t.rows * cw.blocks * cw.c0 * cw.tp
    bn = t.slots()
    out = [Buffer(f"s{i}", "UB", d, ub_slot(rows * itemsize(d), chip), bn, "channel rows")
           for i, d in enumerate(cw.stages if cw.writes_weights else ())]
    for i, name, dtype in cw.loaded:
        out.append(Buffer(f"p{i}", "UB", dtype, ub_slot(t.rows * itemsize(dtype), chip), bn, name))
        if dtype != "float32":
            out.append(Buffer(f"q{i}", "UB", "float32", ub_slot(t.rows * 4, chip), bn, f"{name} (float32)"))
    if cw.scale:
        out.append(Buffer("sc", "UB", "float32", ub_slot(t.rows * 4, chip), bn, "scales"))
    if cw.scale and cw.writes_weights:
        out.append(Buffer("scb", "UB", "float32", ub_slot(rows * 4, chip), bn, "scales per element"))
    if cw.writes_bias:
        out.append(Buffer("bo", "UB", "float32", ub_slot(t.rows * 4, chip), bn, "bias (float32)"))
    if cw.writes_weights:
        out.append(Buffer("res", "UB", cw.dtype, ub_slot(t.rows * cw.k * itemsize(cw.dtype), chip), bn,
                          "result rows"))
    return out


def fits(cw: ConvWeights, t: MoveTiling, chip: Chip) -> bool:
    return sum(b.nbytes for b in buffers(cw, t, chip)) <= chip.ub_bytes and \
        (not cw.writes_weights or t.rows * cw.c <= chip.max_nburst)


def tilings(cw: ConvWeights, chip: Chip, buffer_num: int, cores: int) -> list[MoveTiling]:
    cores = max(1, min(cores, chip.aiv_cores))
    out: set[MoveTiling] = set()
    for bn in buffer_nums(buffer_num):
        most = largest_fitting(lambda r: fits(cw, MoveTiling(r, cw.k, bn, cores), chip), cw.rows)
        if most == 0:
            continue
        sizes = {most, max(1, min(most, -(-cw.rows // cores)))}
        out.update(MoveTiling(r, cw.k, bn, cores) for r in sizes)
    return sorted(out, key=lambda t: (-t.buffer_num, -t.rows))


def schedule(cw: ConvWeights, t: MoveTiling, chip: Chip) -> TileSchedule:
    fs = FieldSet()
    tiles = -(-cw.rows // t.rows)
    blocks, begin, count = split_over_cores(fs, tiles, min(t.cores, chip.aiv_cores))
    slot = t.slot("i")
    bufs = [Ref(f"s{i}", slot) for i in range(len(cw.stages))]
    row = cw.blocks * cw.c0 * cw.tp                      # UB elements of one output channel's rows
    body: list[Stmt] = [Let("o0", sy.mul(sy.add(begin, F("i")), t.rows)),
                        Let("ro", clamp_extent(t.rows, cw.rows, F("o0"))),          # rows of the tile
                        Let("rv", sy.max_(0, clamp_extent(t.rows, cw.o, F("o0"))))]  # of them, output channels
    loads, rest = _weight_rows(cw, t, bufs, row, slot) if cw.writes_weights else ([], [])
    body += loads
    if cw.loaded:
        body.append(When(sy.lt(0, F("rv")), _channel_params(cw, slot)))
    body += rest
    params = [GmParam("in0", cw.src_dtype, "in")] if cw.writes_weights else []
    params += [GmParam(f"in{i + 1}", d, "in") for i, _, d in cw.loaded]
    if cw.writes_weights:
        params.append(GmParam("out0", cw.dtype, "out"))
    if cw.writes_bias:
        params.append(GmParam("out1", "float32", "out"))
    what = {"all": "", "weights": " (the weights alone)", "bias": " (the bias alone)"}[cw.part]
    notes = [f"conv weights {cw.o}x{cw.c}x{cw.kh}x{cw.kw} {cw.src_dtype} -> {cw.panels} panels of {cw.rows} x "
             f"{cw.c0} {cw.dtype} ({cw.blocks} channel blocks of {cw.c0})" + (" x a folded batch norm's scale" if cw.scale else "")
             + (", the bias in float32" if cw.emits_bias else "") + what, f"tiling: {t.describe()}"]
    loop = Loop("i", 0, count, 1, body, note="tiles of output channels")
    return TileSchedule(cw.name, "aiv", params, fs.fields, blocks, buffers(cw, t, chip), [loop], notes)


def _weight_rows(cw: ConvWeights, t: MoveTiling, bufs: list[Ref], row: int, slot: object
                 ) -> tuple[list[Stmt], list[Stmt]]:
    """The tile's channel rows: loaded (the first list), then cast, scaled, transposed into their panels and
    stored (out0; the second)."""
    stages = cw.stages
    ssize = itemsize(cw.src_dtype)
    body: list[Stmt] = []
    zero = T.vdup(bufs[0], 0, sy.mul(F("ro"), row), cw.src_dtype, note="zero the padding channels and rows")
    body.append(zero if cw.padded else When(sy.lt(F("rv"), F("ro")), [zero]))
    src = GmRef("in0", sy.mul(F("o0"), cw.c * cw.taps * ssize))
    if cw.padded:
        body.append(Loop("r", 0, F("rv"), 1, [T.load(
            bufs[0].at(sy.mul(F("r"), row * ssize)), src.at(sy.mul(F("r"), cw.c * cw.taps * ssize)), cw.src_dtype,
            cw.taps, cw.c, src_stride=cw.taps, dst_stride=cw.tp, note="channel rows of one output channel")],
            note="output channels of the tile"))
    else:
        body.append(When(sy.lt(0, F("rv")), [T.load(bufs[0], src, cw.src_dtype, cw.taps, sy.mul(F("rv"), cw.c),
                                                    src_stride=cw.taps, dst_stride=cw.tp, note="channel rows")]))
    loads, body = body, []
    count_all = sy.mul(F("ro"), row)
    for cur in range(len(stages)):
        if cur:
            body.append(T.vcast(bufs[cur], bufs[cur - 1], count_all, stages[cur - 1], stages[cur], round="rint",
                                note=f"{stages[cur - 1]} -> {stages[cur]}"))
        if cw.scale and stages[cur] == "float32" and "float32" not in stages[:cur]:
            body.append(When(sy.lt(0, F("rv")), [
                T.vbroadcast(Ref("scb", slot), Ref("sc", slot), F("rv"), row, "float32", axis=1,
                             note="one scale per output channel"),
                T.vbinary("mul", bufs[cur], bufs[cur], Ref("scb", slot), sy.mul(F("rv"), row), "float32",
                          note="w * scale")]))
    cur = len(stages) - 1
    last, dsize = bufs[cur], itemsize(cw.dtype)
    res = Ref("res", slot)
    # row r's taps x c0 block b goes to panels b * taps.. (rows of a panel t.rows apart in UB)
    body.append(Loop("r", 0, F("ro"), 1, [Loop("b", 0, cw.blocks, 1, [T.vtranspose(
        res.at(sy.mul(sy.add(sy.mul(F("b"), cw.taps * t.rows), F("r")), cw.c0 * dsize)),
        last.at(sy.mul(sy.add(sy.mul(F("r"), row), sy.mul(F("b"), cw.c0 * cw.tp)), dsize)),
        cw.c0, cw.taps, cw.dtype, src_row_stride=cw.tp, dst_row_stride=t.rows * cw.c0,
        note="c0 x taps -> taps rows of c0, one per panel")], note="channel blocks")], note="rows of the tile"))
    body.append(T.store(GmRef("out0", sy.mul(F("o0"), cw.c0 * dsize)), res, cw.dtype, sy.mul(F("ro"), cw.c0),
                        cw.panels, src_stride=t.rows * cw.c0, dst_stride=cw.rows * cw.c0,
                        note="the tile's rows of every panel"))
    return loads, body


def _channel_params(cw: ConvWeights, slot: object) -> list[Stmt]:
    """The tile's per-channel values in float32: the batch norm's scale (sc) and the conv's bias (bo, out1), of
    them what this part needs."""
    out: list[Stmt] = []
    vals: dict[str, Ref] = {}
    ro = F("rv")  # the tile's output channels (its padding rows have no parameters)
    # every load first, then the casts from the last load back: the vector unit's first wait, for the last
    # load, covers the earlier ones (one event id, not one per parameter)
    for i, name, dtype in cw.loaded:
        out.append(T.load(Ref(f"p{i}", slot), GmRef(f"in{i + 1}", sy.mul(F("o0"), itemsize(dtype))), dtype, ro,
                          note=name))
    for i, name, dtype in reversed(cw.loaded):
        raw = Ref(f"p{i}", slot)
        if dtype != "float32":
            out.append(T.vcast(Ref(f"q{i}", slot), raw, ro, dtype, "float32", note=f"{name} to float32"))
            raw = Ref(f"q{i}", slot)
        vals[name] = raw
    sc, bo = Ref("sc", slot), Ref("bo", slot)
    if cw.scale:  # s = gamma / sqrt(var + eps); bias = (bias - mean) * s + beta
        out += [T.vscalar("add", sc, vals["var"], cw.bn_eps, ro, "float32", note="var + eps"),
                T.vunary("rsqrt", sc, sc, ro, "float32", note="1 / sqrt(var + eps)"),
                T.vbinary("mul", sc, sc, vals["gamma"], ro, "float32", note="s = gamma / sqrt(var + eps)")]
        if not cw.writes_bias:
            return out
        if "bias" in vals:
            out.append(T.vbinary("sub", bo, vals["bias"], vals["mean"], ro, "float32", note="bias - mean"))
        else:
            out.append(T.vscalar("mul", bo, vals["mean"], -1.0, ro, "float32", note="-mean"))
        out += [T.vbinary("mul", bo, bo, sc, ro, "float32", note="(bias - mean) * s"),
                T.vbinary("add", bo, bo, vals["beta"], ro, "float32", note="+ beta")]
    else:
        out.append(T.vcopy(bo, vals["bias"], ro, "float32", note="the bias in float32"))
    out.append(T.store(GmRef("out1", sy.mul(F("o0"), 4)), bo, "float32", ro, note="the conv's bias"))
    return out


TEMPLATE = Template("conv_weights", "aiv", MoveTiling, lambda job, chip: [job.subject.for_chip(chip)], tilings, schedule,
                    lambda cw: set())
