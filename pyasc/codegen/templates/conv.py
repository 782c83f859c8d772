"""The conv template: conv2d on the cube cores (AIC), img2col by Load3D from an NC1HWC0 feature map in L1.

What one kernel computes (`CubeConv`, from `conv_plan`): y = act(conv(x, w) + bias [+ residual]) for an
NC1HWC0 feature map x (N, C1, H, W, C0) and the weights prepared as the (O, K) matrix B^T in fractals
(`conv_weights`: row o holds w[o, c, i, j] at column ((c1 * kh + i) * kw + j) * c0 + c % c0, c1 = c // c0,
zeros for padding channels, c0 the cube's fractal width: 16 for float16, 8 for float32; stored as K / c0
panels of c0 columns over the rows padded to 16, the NZ image L1 wants), bias float32 through the bias
table, a residual added into L0C through an identity product, ReLU and the cast on FixPipe, which writes y
in NC1HWC0 (N, O1, Ho, Wo, 16) directly: L0C's 16-column panels are exactly its channel blocks (`nz` with
rows Ho * Wo apart).

As a matrix product, out[m, o] = sum_k A[m, k] * B[k, o] with m = oh * Wo + ow and k = (c1, i, j, c0):
A is the img2col matrix Load3D cuts out of the map in L1 (MTE1, into L0A, a window of m rows and k
columns per instruction), B the weight matrix (copied into L1 as the NZ image of B^T, N x K, and loaded
transposed into L0B).

The output is cut into blocks of tm positions of one image x tn channels, numbered image, channel block,
position block (positions fastest); each core takes a contiguous run. A block of positions needs a band
of input rows: Load3D's padding is fixed per instruction, so every band is addressed in the same padded
view: a band starts `skip` output rows before the block (so the view's virtual top padding is never read
for the block's own rows, and the band starts on a stride boundary), its height is what the block's
windows read, clipped to the map (the view's virtual bottom padding then is the real one); m_start picks
the block's rows out of the view. The band is walked in chunks of channel blocks (one L1 chunk: the band
of `c1_chunk` blocks, and in "streamed" mode the weights of those channels), each cut into L0 steps of tk
columns:

  MTE2  GM -> L1: the band chunk (float32: two copies per block, its 16 channels as two 8-wide blocks);
        the weights (FRACTAL_Z in GM: one strided copy gives the NZ image), per chunk or, "resident", once
        per channel block of the output
  MTE1  L1 -> L0A: Load3D; L1 -> L0B: the weights' step, transposed
  M     mmad into L0C (the first step from the bias table)
  FIX   L0C -> GM in NC1HWC0

L1 chunks rotate over `buffer_num` slots with a counter running across blocks (the next block's band
loads while this one computes), L0A / L0B steps likewise, L0C over `l0c_slots` with the block. Flags come
from the sync analysis.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ...target import Chip, accumulator_dtype, itemsize
from ... import symbolic as sy
from ...symbolic import IntLike
from .. import tileops as T
from ..schedule import Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from ..template import Template, Tiling, align_up, buffer_nums, fits_memories
from .tiles import FieldSet, decompose, split_over_cores
from .vector_kernel import in_param, out_param
from ...ops.conv import ConvGeometry
from .conv_weights import padded_channels

F = sy.sym

#: FixPipe's conversions of a float32 accumulator the conv writes (NC1HWC0 with 16-channel blocks)
CONV_OUT_DTYPES = ("float32", "float16")
#: the operand dtypes the conv multiplies on the cube
CONV_DTYPES = ("float16", "float32")
#: position-block sizes the tiler tries (multiples of the 16-row fractal)
POSITION_BLOCKS = (16, 32, 64, 128, 256, 512)
CHANNEL_BLOCKS = (16, 32, 64, 128, 256)


@dataclass(frozen=True)
class CubeConv:
    """One cube conv kernel's computation (see the module docstring); static sizes only."""

    name: str
    g: ConvGeometry                  # the sizes, stride, dilation, padding (ops.conv)
    dtype: str                       # what the cube multiplies (x and the prepared weights)
    out_dtype: str                   # what FixPipe writes
    bias: bool = False               # a float32 bias of O values through the bias table
    relu: bool = False
    residual: bool = False           # an NC1HWC0 tensor of the result's shape added into L0C (and the identity)
    # the chip's fractal and alignments; set by `for_chip`
    r0: int = 0
    c0: int = 0                      # the cube's fractal width for dtype (Load3D's c0)
    l1_align: int = 0
    bias_align: int = 0
    l2_bytes: int = 0

    def for_chip(self, chip: Chip) -> "CubeConv":
        return replace(self, r0=chip.cube_block, c0=chip.fractal_c0(itemsize(self.dtype)), l1_align=chip.l1_align,
                       bias_align=chip.bias_table_align, l2_bytes=chip.l2_bytes)

    # the storage: NC1HWC0 blocks of `block` channels (16 for 2- and 4-byte types)
    @property
    def block(self) -> int:
        return 16

    @property
    def split(self) -> int:
        """Cube channel blocks per stored channel block (2 for float32: 16 stored channels, 8 per fractal)."""
        return self.block // self.c0

    @property
    def c1s(self) -> int:
        """Stored channel blocks of x."""
        return -(-self.g.c // self.block)

    @property
    def taps(self) -> int:
        return self.g.kh * self.g.kw

    @property
    def k(self) -> int:
        """Columns of the img2col matrix (and of the prepared weights): every channel block x tap x c0."""
        return self.c1s * self.split * self.taps * self.c0

    @property
    def m(self) -> int:
        return self.g.ho * self.g.wo

    @property
    def o1(self) -> int:
        return -(-self.g.o // self.block)

    @property
    def acc_dtype(self) -> str:
        return accumulator_dtype(self.dtype)

    @property
    def skip_rows(self) -> int:
        """Output rows a band starts before its block so the view's top padding is not read: ceil(pt / sh)."""
        return -(-self.g.pad[0] // self.g.stride[0])

    def band(self, m0: IntLike, mm: IntLike) -> tuple[IntLike, IntLike, IntLike]:
        """(first input row, rows, m_start in the band's view) of the block of mm positions from m0."""
        sh, pt, dh = self.g.stride[0], self.g.pad[0], self.g.dilation[0]
        oh0 = sy.floordiv(m0, self.g.wo)
        last = sy.floordiv(sy.add(m0, mm, -1), self.g.wo)
        skip = sy.max_(sy.min_(self.skip_rows, oh0), sy.add(oh0, -((self.g.h - 1) // sh)))
        top = sy.add(oh0, sy.mul(-1, skip))
        first = sy.mul(top, sh)
        reach = sy.add(sy.mul(sy.add(last, sy.mul(-1, oh0), skip), sh), -pt + (self.g.kh - 1) * dh + 1)
        rows = sy.max_(1, sy.min_(sy.add(self.g.h, sy.mul(-1, first)), reach))
        return first, rows, sy.add(m0, sy.mul(-1, sy.mul(top, self.g.wo)))

    def band_rows(self, tm: int) -> int:
        """The most input rows a block of tm positions reads."""
        most = 1
        for m0 in range(0, self.m, tm):
            _, rows, _ = self.band(m0, min(tm, self.m - m0))
            most = max(most, int(rows))
        return most


@dataclass(frozen=True)
class ConvTiling(Tiling):
    tm: int             # output positions per block
    tn: int             # output channels per block
    tk: int             # img2col columns per L0 step
    chunk: int          # stored channel blocks per L1 chunk
    buffer_num: int     # slots of the L1 chunks and the L0A / L0B steps
    l0c_slots: int
    cores: int
    resident: bool      # the weights of a channel block stay in L1 across the blocks of positions

    def describe(self) -> str:
        w = "weights resident" if self.resident else "weights streamed"
        return (f"blocks {self.tm} positions x {self.tn} channels, L0 step {self.tk}, L1 chunk {self.chunk} channel "
                f"blocks, {w}, L1/L0 slots={self.buffer_num}, L0C slots={self.l0c_slots}, cores<={self.cores}")


# ---- footprint -------------------------------------------------------------------------------------


def chunk_columns(cv: CubeConv, chunk: int) -> int:
    return chunk * cv.split * cv.taps * cv.c0


def footprint(cv: CubeConv, t: ConvTiling) -> list[tuple[str, str, str, int, int, str]]:
    """(name, space, dtype, bytes per slot, slots, role) of every on-chip buffer."""
    size = itemsize(cv.dtype)
    band = t.chunk * cv.block * cv.band_rows(t.tm) * cv.g.w * size
    cols = chunk_columns(cv, t.chunk)
    out = [
        ("fm", "L1", cv.dtype, align_up(band, cv.l1_align), t.buffer_num, "feature-map band chunk"),
        ("wb", "L1", cv.dtype, align_up(align_up(t.tn, cv.r0) * cols * size, cv.l1_align),
         -(-cv.c1s // t.chunk) if t.resident else t.buffer_num, "weights (NZ): a chunk's per slot"),
        ("l0a", "L0A", cv.dtype, align_up(t.tm, cv.r0) * t.tk * size, t.buffer_num, "img2col step (ZZ)"),
        ("l0b", "L0B", cv.dtype, t.tk * align_up(t.tn, cv.r0) * size, t.buffer_num, "weight step (ZN)"),
        ("l0c", "L0C", cv.acc_dtype, t.tm * t.tn * 4, t.l0c_slots, "accumulator"),
    ]
    if cv.bias:  # one slot per accumulator: the next block's bias loads while this block's mmads read its own
        out += [("l1bias", "L1", "float32", align_up(t.tn * 4, cv.l1_align), t.l0c_slots, "bias chunk"),
                ("bt", "BT", "float32", align_up(t.tn * 4, cv.bias_align), t.l0c_slots, "bias table")]
    if cv.residual:
        eye = cv.r0 * cv.block * size
        out += [("rb", "L1", cv.dtype, align_up(align_up(t.tn, cv.block) * t.tm * size, cv.l1_align), 1, "residual block"),
                ("eyel1", "L1", cv.dtype, align_up(eye, cv.l1_align), 1, "identity"),
                ("eye", "L0B", cv.dtype, eye, 1, "identity (ZN)"),
                ("ra", "L0A", cv.dtype, align_up(t.tm, cv.r0) * cv.block * size, t.buffer_num, "residual panel (ZZ)")]
    return out


def fits(cv: CubeConv, t: ConvTiling, chip: Chip) -> bool:
    return fits_memories(footprint(cv, t), chip)


# ---- candidates ------------------------------------------------------------------------------------


def tilings(cv: CubeConv, chip: Chip, buffer_num: int, cores: int) -> list[ConvTiling]:
    """For every block shape worth scoring: the deepest L1 chunk and L0 step that fit, weights resident or
    streamed, double-buffered where the cap allows (and single-buffered); blocks of all the output channels
    (up to 256) when the blocks of positions alone occupy the cores."""
    cores = max(1, min(cores, chip.aic_cores))
    op = align_up(cv.g.o, 16)
    widest = min(op, CHANNEL_BLOCKS[-1])
    narrower = sorted(s for s in CHANNEL_BLOCKS if s < op)
    # every block of tn channels cuts its own img2col out of the map (Load3D, MTE1): narrower blocks multiply
    # that work by O / tn, worth it only when the blocks of positions alone cannot occupy the cores
    if cv.g.n * -(-cv.m // POSITION_BLOCKS[0]) >= cores:
        out = _candidates(cv, chip, buffer_num, cores, [widest])
        if out:
            return out
    return _candidates(cv, chip, buffer_num, cores, narrower + [widest])


def _candidates(cv: CubeConv, chip: Chip, buffer_num: int, cores: int, tns: list[int]) -> list[ConvTiling]:
    out: list[ConvTiling] = []
    for bn in buffer_nums(buffer_num, most=2):
        for tn in tns:
            for tm in _position_blocks(cv, tn, cores):
                for resident in (True, False):
                    out += _chunkings(cv, chip, tm, tn, bn, cores, resident)
    return out


def _chunkings(cv: CubeConv, chip: Chip, tm: int, tn: int, bn: int, cores: int, resident: bool) -> list[ConvTiling]:
    """The deepest L1 chunk that fits (fewest moves) and its halvings down to one channel block per chunk (the
    first mmad waits for the least data: the band streams in while the cube works), each with the deepest L0
    step."""
    deepest = _deepest(cv, chip, tm, tn, bn, cores, resident, range(cv.c1s, 0, -1))
    if deepest is None:
        return []
    out = [deepest]
    # halvings down to one block: a middle depth pays the moves' start-up less often than one block per chunk
    # and still lets the second chunk load while the cube works on the first
    size = deepest.chunk // 2
    while size >= 1:
        found = _deepest(cv, chip, tm, tn, bn, cores, resident, (size,))
        if found is not None:
            out.append(found)
        size //= 2
    return out


def _position_blocks(cv: CubeConv, tn: int, cores: int) -> list[int]:
    """Block sizes along the positions: the base sizes below the padded extent, the one covering it, and the
    sizes that give every core one to four blocks (block counts that do not divide evenly leave cores idle)."""
    mp = align_up(cv.m, 16)
    out = {s for s in POSITION_BLOCKS if s < mp} | {min(mp, POSITION_BLOCKS[-1])}
    others = cv.g.n * -(-cv.g.o // tn)        # blocks per position block: images x channel blocks
    for per_core in (1, 2, 3, 4):
        along = -(-cores * per_core // others)
        size = align_up(-(-cv.m // max(1, along)), 16)
        if 16 <= size <= POSITION_BLOCKS[-1]:
            out.add(size)
    return sorted(out)


def _deepest(cv: CubeConv, chip: Chip, tm: int, tn: int, bn: int, cores: int, resident: bool,
             chunks: "range | tuple[int, ...]") -> ConvTiling | None:
    """The tiling of this block shape with the first chunk size of `chunks` that fits, with the deepest L0
    step."""
    for chunk in chunks:
        cols = chunk_columns(cv, chunk)
        tk = align_up(min(cols, 512), 16)
        while tk >= 16:
            t = ConvTiling(tm, tn, tk, chunk, bn, bn, cores, resident)
            if fits(cv, t, chip):
                return t
            tk -= 16
    return None


# ---- the schedule ----------------------------------------------------------------------------------


def schedule(cv: CubeConv, t: ConvTiling, chip: Chip, barrier: Stmt | None = None, map_ready: bool = False
             ) -> TileSchedule:
    """The cube kernel; `barrier` (a launch's all-core barrier before which the vector cores write the prepared
    weights and bias) goes in front, or, with `map_ready` (nothing ahead of it writes the feature map), after
    the first band chunk's load: every core has at least one block, so it meets the barrier once, with its
    first band already on the way."""
    size, osize = itemsize(cv.dtype), itemsize(cv.out_dtype)
    fs = FieldSet()
    nmb, nnb = -(-cv.m // t.tm), -(-cv.g.o // t.tn)
    n_chunks = -(-cv.c1s // t.chunk)
    steps_per_chunk = -(-chunk_columns(cv, t.chunk) // t.tk)
    blocks, begin, count = split_over_cores(fs, cv.g.n * nnb * nmb, min(t.cores, chip.aic_cores))
    i = F("i")
    lets: list[Stmt] = [Let("t", sy.add(begin, i))]
    lets += decompose(F("t"), [("img", cv.g.n), ("nb", nnb), ("mb", nmb)])
    lets += [Let("m0", sy.mul(F("mb"), t.tm)), Let("mm", sy.min_(t.tm, sy.add(cv.m, sy.mul(-1, F("m0"))))),
             Let("n0", sy.mul(F("nb"), t.tn)), Let("nn", sy.min_(t.tn, sy.add(cv.g.o, sy.mul(-1, F("n0")))))]
    first, rows, m_start = cv.band(F("m0"), F("mm"))
    lets += [Let("hs", first), Let("hb", rows), Let("ms", m_start)]
    block: list[Stmt] = list(lets)
    acc = sy.mod(i, t.l0c_slots) if t.l0c_slots > 1 else 0
    bias_ref = None
    bias: list[Stmt] = []
    if cv.bias:
        bias = [T.load(Ref("l1bias", acc), GmRef(in_param(2), sy.mul(F("n0"), 4)), "float32", F("nn"),
                       note="bias chunk"),
                T.load_bias(Ref("bt", acc), Ref("l1bias", acc), F("nn"), note="bias -> bias table")]
        bias_ref = Ref("bt", acc)
    early = barrier is not None and map_ready
    if not early:
        block += bias
    # resident weights: a new channel block starts at this core's first block or where the position blocks
    # wrap around; its weights come in chunk by chunk next to the band chunks, so the first mmad waits for
    # one chunk's weights, not all of them, and the rest load while the cube works
    new = sy.add(sy.lt(i, 1), sy.lt(F("mb"), 1)) if t.resident else 0
    chunk_no = sy.add(sy.mul(i, n_chunks), F("kk"))
    slot1 = t.slot(chunk_no)
    fm = Ref("fm", slot1)
    body: list[Stmt] = [Let("cs", sy.mul(F("kk"), t.chunk)),
                        Let("cc", sy.min_(t.chunk, sy.add(cv.c1s, sy.mul(-1, F("cs"))))),
                        Let("kl", sy.mul(F("cc"), cv.split * cv.taps * cv.c0))]
    body += _load_band(cv, fm, size)
    if early:  # the barrier after the first band chunk's load, then the block's bias (in the workspace)
        body.append(When(sy.lt(sy.add(i, F("kk")), 1), [barrier]))
        if bias:
            body.append(When(sy.lt(F("kk"), 1), bias))
    if t.resident:  # one slot per chunk: loading a chunk's weights never waits for the cube to read another's
        wsrc = Ref("wb", sy.mod(F("kk"), n_chunks) if n_chunks > 1 else 0)
        body.append(When(new, [_load_weights(cv, wsrc, sy.mul(F("cs"), cv.split * cv.taps * cv.c0), F("kl"), size,
                                             "the chunk's weights of the channel block (kept for its blocks)")]))
    else:
        wsrc = Ref("wb", slot1)
        body.append(_load_weights(cv, wsrc, sy.mul(F("cs"), cv.split * cv.taps * cv.c0), F("kl"), size,
                                  "weights of the chunk"))
    slot0 = t.slot(sy.add(sy.mul(chunk_no, steps_per_chunk), F("ks")))
    step: list[Stmt] = [Let("ko", sy.mul(F("ks"), t.tk)), Let("kc", sy.min_(t.tk, sy.add(F("kl"), sy.mul(-1, F("ko")))))]
    g = cv.g
    step.append(T.load3d(Ref("l0a", slot0), fm, cv.dtype, sy.mul(F("cc"), cv.split), F("hb"), g.w, g.kh, g.kw,
                         g.stride, g.pad, g.dilation, m_start=F("ms"), m_len=F("mm"), k_start=F("ko"), k_len=F("kc"),
                         note="img2col step -> L0A"))
    step.append(_load_weights_l0(cv, Ref("l0b", slot0), wsrc.at(sy.mul(F("ko"), sy.align_up(F("nn"), cv.r0), size))))
    step.append(T.mmad(Ref("l0c", acc), Ref("l0a", slot0), Ref("l0b", slot0), F("mm"), F("kc"), F("nn"), cv.dtype,
                       accumulate=sy.lt(0, sy.add(F("kk"), F("ks"))), bias=bias_ref, note="accumulate in L0C"))
    body.append(Loop("ks", 0, sy.ceildiv(F("kl"), t.tk), 1, step, note="L0 steps of the chunk"))
    block.append(Loop("kk", 0, n_chunks, 1, body, note="channel chunks (L1)"))
    if cv.residual:
        block += _add_residual(cv, t, Ref("l0c", acc), size)
    out_off = sy.mul(sy.add(sy.mul(sy.add(sy.mul(F("img"), cv.o1), sy.mul(F("nb"), t.tn // cv.block)), cv.m),
                            F("m0")), cv.block * osize)
    block.append(T.fixpipe(GmRef(out_param(0), out_off), Ref("l0c", acc), F("mm"), F("nn"), cv.out_dtype,
                           cv.acc_dtype, relu=cv.relu, dst_row_stride=cv.m, nz=True, note="L0C -> GM (NC1HWC0)"))
    params = [GmParam(in_param(0), cv.dtype, "in"), GmParam(in_param(1), cv.dtype, "in")]
    if cv.bias:
        params.append(GmParam(in_param(2), "float32", "in"))
    if cv.residual:
        params += [GmParam(_residual_param(cv), cv.dtype, "in"), GmParam(_eye_param(cv), cv.dtype, "in")]
    params.append(GmParam(out_param(0), cv.out_dtype, "out"))
    notes = [f"conv {g.n}x{g.c}x{g.h}x{g.w} * {g.o}x{g.c}x{g.kh}x{g.kw} stride {g.stride} pad {g.pad} "
             f"dilation {g.dilation} -> {g.n}x{g.o}x{g.ho}x{g.wo}: img2col {cv.m} x {cv.k} @ {cv.k} x {g.o} "
             f"{cv.dtype} -> {cv.acc_dtype} -> {cv.out_dtype}" + (" + bias" if cv.bias else "")
             + (" relu" if cv.relu else ""), f"tiling: {t.describe()}"]
    buffers = [Buffer(*b) for b in footprint(cv, t)]
    loop = Loop("i", 0, count, 1, block, note="output blocks of this core")
    setup: list[Stmt] = []
    if cv.residual:  # the identity the residual is multiplied by, once per core
        setup = [T.copy_nd2nz(Ref("eyel1"), GmRef(_eye_param(cv)), cv.dtype, cv.r0, cv.block, note="identity"),
                 T.load_l0(Ref("eye"), Ref("eyel1"), cv.dtype, cv.block, cv.r0, note="identity -> L0B")]
    front = [barrier] if barrier is not None and not early else []
    sched = TileSchedule(cv.name, "aic", params, fs.fields, blocks, buffers, front + setup + [loop], notes)
    sched.l2_miss = lambda fields, cores: l2_miss(cv, t, cores)
    return sched


def l2_miss(cv: CubeConv, t: ConvTiling, cores: int) -> float:
    """The fraction of the kernel's reads that come from HBM: each byte of x and of the weights once (the
    bands' overlapping rows and the weights every core reads again hit in L2, which holds them all when they
    fit), everything when they do not."""
    size = itemsize(cv.dtype)
    x_bytes = cv.g.n * cv.c1s * cv.block * cv.g.h * cv.g.w * size
    w_bytes = cv.g.o * cv.k * size
    if x_bytes + w_bytes > cv.l2_bytes // 2:
        return 1.0
    nmb, nnb = -(-cv.m // t.tm), -(-cv.g.o // t.tn)
    total = cv.g.n * nnb * nmb
    per = -(-total // max(1, cores))
    reads = 0
    for b in range(total):
        mb, nb = b % nmb, (b // nmb) % nnb
        m0 = mb * t.tm
        _, rows, _ = cv.band(m0, min(t.tm, cv.m - m0))
        reads += cv.c1s * cv.block * int(rows) * cv.g.w * size
        nn = min(t.tn, cv.g.o - nb * t.tn)
        if not t.resident or b % per == 0 or mb == 0:
            reads += nn * cv.k * size
    return min(1.0, (x_bytes + w_bytes) / reads) if reads else 1.0


def _load_weights(cv: CubeConv, dst: Ref, k0: IntLike, kl: IntLike, size: int, note: str) -> Stmt:
    """GM -> L1: columns k0.. k0+kl of the channel block's weight rows, as the NZ image load_l0 reads: the
    prepared weights are FRACTAL_Z (panels of c0 columns over the output channels padded to 16), so it is
    one strided copy of the block's rows of each panel (rows padded to 16: the next block's rows, or the
    zero rows after the last channel)."""
    rows = padded_channels(cv.g.o)
    nnp = sy.align_up(F("nn"), cv.r0)
    src = GmRef(in_param(1), sy.mul(sy.add(sy.mul(sy.floordiv(k0, cv.c0), rows), F("n0")), cv.c0, size))
    return T.load(dst, src, cv.dtype, sy.mul(nnp, cv.c0), sy.floordiv(kl, cv.c0), src_stride=rows * cv.c0,
                  dst_stride=sy.mul(nnp, cv.c0), pad=False, note=note)


def _load_band(cv: CubeConv, fm: Ref, size: int) -> list[Stmt]:
    """GM -> L1: rows hs.. hs+hb of the chunk's channel blocks, as cube blocks of c0 channels."""
    plane = cv.g.h * cv.g.w * cv.block                        # elements of one stored channel block of one image
    start = sy.add(sy.mul(sy.add(sy.mul(F("img"), cv.c1s), F("cs")), plane), sy.mul(F("hs"), cv.g.w * cv.block))
    band = sy.mul(F("hb"), cv.g.w * cv.block)               # elements of one block's band
    if cv.split == 1:
        return [T.load(fm, GmRef(in_param(0), sy.mul(start, size)), cv.dtype, band, F("cc"), src_stride=plane,
                       dst_stride=band, pad=False, note="feature-map band")]
    # float32: each stored block of 16 channels becomes `split` cube blocks of c0 channels (c0 of every pixel)
    pixels = sy.mul(F("hb"), cv.g.w)
    copies: list[Stmt] = []
    for half in range(cv.split):
        src = GmRef(in_param(0), sy.mul(sy.add(start, sy.mul(F("cb"), plane), half * cv.c0), size))
        dst = fm.at(sy.mul(sy.add(sy.mul(F("cb"), cv.split), half), pixels, cv.c0, size))
        copies.append(T.load(dst, src, cv.dtype, cv.c0, pixels, src_stride=cv.block, dst_stride=cv.c0, pad=False,
                             note=f"feature-map band, channels {half * cv.c0}.. of each block"))
    return [Loop("cb", 0, F("cc"), 1, copies, note="stored channel blocks of the chunk")]


def _residual_param(cv: CubeConv) -> str:
    return in_param(3 if cv.bias else 2)


def _eye_param(cv: CubeConv) -> str:
    return in_param(4 if cv.bias else 3)


def _add_residual(cv: CubeConv, t: ConvTiling, acc: Ref, size: int) -> list[Stmt]:
    """L0C += R @ I for the block's residual R (mm positions x nn channels), one 16-channel panel at a time:
    the panel is Load3D's 1x1 img2col of the residual's rows in L1 (zero rows pad it to whole fractals)."""
    plane = cv.m * cv.block                      # elements of one channel block of one image of the residual
    first = sy.add(sy.mul(sy.add(sy.mul(F("img"), cv.o1), sy.mul(F("nb"), t.tn // cv.block)), plane),
                   sy.mul(F("m0"), cv.block))
    panels = sy.ceildiv(F("nn"), cv.block)
    rows = sy.mul(F("mm"), cv.block)
    rb = Ref("rb")
    out: list[Stmt] = []
    if cv.split == 1:
        out.append(T.load(rb, GmRef(_residual_param(cv), sy.mul(first, size)), cv.dtype, rows, panels,
                          src_stride=plane, dst_stride=rows, pad=False, note="the block's residual"))
    else:  # float32: each stored block of 16 channels as `split` cube blocks of c0
        copies = [T.load(rb.at(sy.mul(sy.add(sy.mul(F("rp"), cv.split), half), F("mm"), cv.c0, size)),
                         GmRef(_residual_param(cv), sy.mul(sy.add(first, sy.mul(F("rp"), plane), half * cv.c0), size)),
                         cv.dtype, cv.c0, F("mm"), src_stride=cv.block, dst_stride=cv.c0, pad=False,
                         note=f"the block's residual, channels {half * cv.c0}.. of each block")
                  for half in range(cv.split)]
        out.append(Loop("rp", 0, panels, 1, copies, note="channel blocks of the residual"))
    slot = t.slot("rj")
    panel = sy.mul(sy.align_up(F("mm"), cv.r0), cv.r0, 4)   # bytes of one 16-column panel of L0C
    step = [T.load3d(Ref("ra", slot), rb, cv.dtype, sy.mul(panels, cv.split), 1, F("mm"), 1, 1,
                     m_len=F("mm"), k_start=sy.mul(F("rj"), cv.block), k_len=cv.block, note="residual panel -> L0A"),
            T.mmad(acc.at(sy.mul(F("rj"), panel)), Ref("ra", slot), Ref("eye"), F("mm"), cv.block, cv.r0, cv.dtype,
                   accumulate=1, note="L0C += residual @ I")]
    out.append(Loop("rj", 0, panels, 1, step, note="16-channel panels of the block"))
    return out


def _load_weights_l0(cv: CubeConv, dst: Ref, src: Ref) -> Stmt:
    """The step's kc columns of the stored (nn x K) weights, transposed into L0B as B (kc x nn)."""
    if cv.dtype == "float16":
        return T.load_l0(dst, src, "float16", F("nn"), F("kc"), transpose=True, note="weights^T -> L0B")
    # the same bytes as a float16 matrix: its transpose is the wider type's L0B image
    halves = sy.floordiv(sy.mul(sy.align_up(F("kc"), cv.c0), itemsize(cv.dtype)), 2)
    return T.load_l0(dst, src, "float16", F("nn"), halves, transpose=True,
                     note=f"weights^T -> L0B ({cv.dtype} as 16-bit pairs)")


def _analyze(job, chip: Chip) -> list[CubeConv]:  # noqa: ANN001 - a Job
    return [job.subject.for_chip(chip)]


TEMPLATE = Template("conv", "aic", ConvTiling, _analyze, tilings, schedule, lambda cv: set(),
                    ops=frozenset({"conv2d", "fused_conv2d"}))
