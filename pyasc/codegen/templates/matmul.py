"""The matmul template: (batched) A @ B on the cube cores (AIC), with bias, ReLU and the output cast.

What one kernel computes (`CubeMatmul`, from `matmul_plan`): out[b] = act(A[b] @ B[b] + bias) for every
output batch index b (numpy's broadcasting of the batch dims: an operand's batch stride is 0 where it
broadcasts), A[b] (M x K) and B[b] (K x N) read from GM row-major (or stored transposed: transpose_a / _b),
operands already in the cube dtype (float16, float32 or int8), the bias float32, accumulation in L0C in
float32 (int32 for int8), then FixPipe writes the block row-major with ReLU and the cast on the way out.

The output is cut into tm x tn blocks, numbered batch-major then row-major; each core takes a contiguous
run of blocks (balanced within one block). Per block, K is walked in L1 chunks of steps * tk, each cut
into L0 steps of tk (`matmul_tiling` says how a step is cut out of a chunk):

  MTE2  GM -> L1, ND -> NZ, one chunk (copy_nd2nz; the bias chunk once per block)
  MTE1  L1 -> L0A / L0B, one step (load_l0 or LoadData2D; the bias L1 -> bias table once per block)
  M     mmad into L0C (the first step starts from the bias, later ones accumulate)
  FIX   L0C -> GM after the last step

L1 chunks rotate over `buffers` slots with the chunk index and L0A/L0B steps with the step count, so the
GM move of chunk c+1 overlaps the steps of chunk c and the L1 -> L0 move of step s+1 the mmad of step s;
L0C rotates over `l0c_slots` with the block counter, so FixPipe of block i overlaps the mmads of block
i+1. One GM move per chunk pays the DMA start-up once for `steps` mmads: with deep chunks the cube, not
MTE2, is the busiest pipe. Flags come from the sync analysis.

A resident A panel (`MatmulTiling.a_resident`, K static, A stored M x K): a core's run of blocks walks a row
panel of A along N, so the panel's chunks are loaded in the first block of the run and at each new panel (a
guarded load, `pf`) and stay in L1 (chunk kk in slot kk); the other blocks move only B from GM, its chunks
rotating with a count running across the blocks (`_chunk_count`).

Operands the cube cannot take as they are:
- a transposed B (stored N x K) is copied into L1 as its NZ image and loaded with load_l0's transpose.
  That instruction moves 16-bit elements only; for float32 and int8 the same bytes are loaded as a
  float16 matrix (pairs of int8 / halves of float32 stay adjacent along K, exactly the L0B layout of the
  wider type). A transposed A works the same way for float16 only (its pairs would have to be adjacent
  along K in L0A, which a 16-bit transpose cannot do): `matmul_plan` transposes such an A first.
- L0B takes whole fractals, and copy_nd2nz pads to 16 rows and c0 columns only. Where a tail leaves a
  B chunk short of that (a float32 column tail of at most 8 columns: 16 are needed; an int8 K tail of at
  most 16 rows: 32 are needed) a second copy fills the missing fractal with initialised data. What it
  holds is only ever multiplied into output columns FixPipe does not write (float32) or by A's zero
  padding along K (int8).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ...target import Chip, accumulator_dtype, itemsize
from ... import symbolic as sy
from ...symbolic import IntLike
from .. import tileops as T
from ..schedule import BLOCKS, CORE, Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileOp, TileSchedule, When
from ..template import Template, free_symbols
from ..tiling import scoring_dims
from .matmul_bound import b_by_panels, bound, floor
from .matmul_tiling import MatmulTiling, a_mode, b_mode, footprint, l1_b_piece_bytes, l2_miss, same_score, \
    tilings

F = sy.sym

#: what FixPipe converts an accumulator to on the way out
FIXPIPE_CASTS = {"float32": ("float32", "float16"), "int32": ("int32", "float32", "float16")}
#: the operand dtypes this template multiplies
CUBE_DTYPES = ("float16", "float32", "int8")


@dataclass(frozen=True)
class BatchDim:
    """One (collapsed) output batch dim and each operand's element stride along it (0: broadcast)."""

    size: IntLike
    a_stride: IntLike
    b_stride: IntLike


@dataclass(frozen=True)
class CubeMatmul:
    """One cube kernel's computation (see the module docstring)."""

    name: str
    M: IntLike
    N: IntLike
    K: IntLike
    batch: tuple[BatchDim, ...]
    dtype: str                 # cube input dtype
    out_dtype: str             # what FixPipe writes
    transpose_a: bool = False
    transpose_b: bool = False
    bias: bool = False         # a float32 bias of N values through the bias table
    relu: bool = False
    # the chip's fractal: r0 rows (cube_block) of fractal_row_bytes; set by `for_chip`, as are the L1 and bias
    # table alignments of its buffers
    fractal_row_bytes: int = 0
    r0: int = 0
    l1_align: int = 0
    bias_align: int = 0

    def for_chip(self, chip: Chip) -> "CubeMatmul":
        return replace(self, fractal_row_bytes=chip.fractal_row_bytes, r0=chip.cube_block, l1_align=chip.l1_align,
                       bias_align=chip.bias_table_align)

    @property
    def acc_dtype(self) -> str:
        return accumulator_dtype(self.dtype)

    @functools.cached_property   # (asked for by every footprint of every candidate tiling)
    def c0(self) -> int:
        """Columns of one fractal row (16 for fp16, 8 for fp32, 32 for int8 on this chip class)."""
        if not self.fractal_row_bytes:
            raise AssertionError("CubeMatmul.for_chip(chip) was not applied")
        return self.fractal_row_bytes // itemsize(self.dtype)

    @functools.cached_property
    def k_quantum(self) -> int:
        """tk is a multiple of this: whole fractals on both the A side (c0) and the B side (r0 rows)."""
        return max(self.r0, self.c0)

    @functools.cached_property
    def batch_count(self) -> IntLike:
        return sy.mul(1, *(d.size for d in self.batch))


def in_param(i: int) -> str:
    return f"in{i}"


def out_param(j: int) -> str:
    return f"out{j}"


def _ceil(x: int, a: int) -> int:
    return -(-x // a) * a


# ---- the schedule -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One output block as the block loop holds it: where a sink finds it (the L0C slot) and where it goes."""

    mk: CubeMatmul
    acc: Ref
    bi: IntLike            # the (collapsed) batch index
    m0: IntLike
    n0: IntLike
    mm: IntLike
    nn: IntLike


def to_output(blk: Block) -> list[Stmt]:
    """FixPipe of the block into the output (ReLU and the cast on the way)."""
    mk = blk.mk
    M, N = F("M"), F("N")
    off = sy.mul(sy.add(sy.mul(blk.bi, M, N), sy.mul(blk.m0, N), blk.n0), itemsize(mk.out_dtype))
    return [T.fixpipe(GmRef(out_param(0), off), blk.acc, blk.mm, blk.nn, mk.out_dtype, mk.acc_dtype, relu=mk.relu,
                      dst_row_stride=N, note="L0C -> GM")]


def schedule(mk: CubeMatmul, t: MatmulTiling, chip: Chip,
             sink: Callable[[Block], list[Stmt]] = to_output) -> TileSchedule:
    """The cube's block loop; `sink` writes each finished block out (to the output, or a mixed launch's
    workspace channel)."""
    fields: dict[str, IntLike] = {"M": mk.M, "N": mk.N, "K": mk.K, "tm": t.tm, "tn": t.tn, "tk": t.tk}
    for j, d in enumerate(mk.batch):
        fields[f"O{j}"] = d.size
        if d.a_stride != 0:
            fields[f"sa{j}"] = d.a_stride
        if d.b_stride != 0:
            fields[f"sb{j}"] = d.b_stride
    M, N, K, tm, tn, tk = (F(x) for x in ("M", "N", "K", "tm", "tn", "tk"))
    nmb, nnb = sy.ceildiv(M, tm), sy.ceildiv(N, tn)
    total = sy.mul(mk.batch_count, sy.ceildiv(mk.M, t.tm), sy.ceildiv(mk.N, t.tn))
    fields["T"] = total
    fields["nK"] = sy.ceildiv(mk.K, t.kl1)
    if t.steps > 1:
        fields["kl1"] = t.kl1
    blocks = schedule_blocks(mk, t)
    per = sy.ceildiv(F("T"), F(BLOCKS))
    begin = sy.mul(F(CORE), per)
    count = sy.max_(0, sy.min_(per, sy.add(F("T"), sy.mul(-1, begin))))

    lets: list[Stmt] = [Let("t", sy.add(begin, F("i"))), Let("nb", sy.mod(F("t"), nnb))]
    lets += [Let("r", sy.floordiv(F("t"), nnb)), Let("mb", sy.mod(F("r"), nmb)), Let("bi", sy.floordiv(F("r"), nmb))]
    a_batch: IntLike = 0
    b_batch: IntLike = 0
    rest: IntLike = F("bi")
    for j in reversed(range(len(mk.batch))):
        idx = sy.mod(rest, F(f"O{j}")) if j else rest
        rest = sy.floordiv(rest, F(f"O{j}"))
        lets.append(Let(f"o{j}", idx))
        if mk.batch[j].a_stride != 0:
            a_batch = sy.add(a_batch, sy.mul(F(f"o{j}"), F(f"sa{j}")))
        if mk.batch[j].b_stride != 0:
            b_batch = sy.add(b_batch, sy.mul(F(f"o{j}"), F(f"sb{j}")))
    lets += [Let("m0", sy.mul(F("mb"), tm)), Let("mm", sy.min_(tm, sy.add(M, sy.mul(-1, F("m0"))))),
             Let("n0", sy.mul(F("nb"), tn)), Let("nn", sy.min_(tn, sy.add(N, sy.mul(-1, F("n0"))))),
             Let("abase", a_batch), Let("bbase", b_batch)]
    if t.a_resident:  # the core's first block, or the first of a row panel: A's panel is loaded (again)
        lets.append(Let("pf", sy.max_(sy.eq(F("i"), 0), sy.eq(F("nb"), 0))))
    m0, mm, n0, nn = F("m0"), F("mm"), F("n0"), F("nn")

    acc_slot = sy.mod(F("i"), t.l0c_slots) if t.l0c_slots > 1 else 0
    block: list[Stmt] = list(lets)
    bias_ref = None
    if mk.bias:
        block.append(T.load(Ref("l1bias"), GmRef(in_param(2), sy.mul(n0, 4)), "float32", nn, note="bias chunk"))
        block.append(T.load_bias(Ref("bt"), Ref("l1bias"), nn, note="bias -> bias table"))
        bias_ref = Ref("bt")
    block.append(_k_loop(mk, t, mm, nn, m0, n0, acc_slot, bias_ref))
    block += sink(Block(mk, Ref("l0c", acc_slot), F("bi"), m0, n0, mm, nn))
    body: list[Stmt] = [Loop("i", 0, count, 1, block, note="output blocks of this core")]
    params = [GmParam(in_param(0), mk.dtype, "in"), GmParam(in_param(1), mk.dtype, "in")]
    if mk.bias:
        params.append(GmParam(in_param(2), "float32", "in"))
    params.append(GmParam(out_param(0), mk.out_dtype, "out"))
    notes = [f"C[{'x'.join(str(d.size) for d in mk.batch) or '1'}] = A({mk.M}x{mk.K}{'.T' if mk.transpose_a else ''})"
             f" @ B({mk.K}x{mk.N}{'.T' if mk.transpose_b else ''}) {mk.dtype} -> {mk.acc_dtype} -> {mk.out_dtype}"
             + (" + bias" if mk.bias else "") + (" relu" if mk.relu else ""),
             f"tiling: {t.describe()}"]
    sched = TileSchedule(mk.name, "aic", params, fields, blocks, buffers(mk, t), body, notes)
    sched.l2_miss = lambda f, cores: l2_miss(mk, t, f, cores, chip)
    return sched


def schedule_blocks(mk: CubeMatmul, t: MatmulTiling) -> IntLike:
    """The cores the block loop runs on (over dims): each takes a contiguous run of the output blocks."""
    total = sy.mul(mk.batch_count, sy.ceildiv(mk.M, t.tm), sy.ceildiv(mk.N, t.tn))
    return sy.ceildiv(total, sy.max_(1, sy.ceildiv(total, t.cores)))


def buffers(mk: CubeMatmul, t: MatmulTiling) -> list[Buffer]:
    return [Buffer(*b) for b in footprint(mk, t)]


def _k_loop(mk: CubeMatmul, t: MatmulTiling, mm: IntLike, nn: IntLike, m0: IntLike, n0: IntLike,
            acc_slot: IntLike, bias_ref: Ref | None) -> Loop:
    """The K walk of one output block: L1 chunks (loop kk), each cut into `steps` L0 steps (loop ks)."""
    size = itemsize(mk.dtype)
    K, tk = F("K"), F("tk")
    slot1 = t.slot(_chunk_count(mk, t))
    l1a, l1b = Ref("l1a", F("kk") if t.a_resident else slot1), Ref("l1b", slot1)
    if t.steps == 1:
        # one L0 step per chunk: the chunk is the step (k0, kc), the L0 slot the L1 slot
        body: list[Stmt] = [Let("k0", sy.mul(F("kk"), tk)), Let("kc", sy.min_(tk, sy.add(K, sy.mul(-1, F("k0")))))]
        k0, kc = F("k0"), F("kc")
        # B first: the load of A then finishes last on MTE2, so one flag tells MTE1 both chunks are in
        body += _load_b(mk, l1b, F("bbase"), k0, kc, n0, nn, size)
        body += _guarded_a(mk, t, _load_a(mk, l1a, F("abase"), k0, kc, m0, mm))
        body += _load_l0(mk, slot1, l1a, l1b, kc, mm, nn)
        body.append(T.mmad(Ref("l0c", acc_slot), Ref("l0a", slot1), Ref("l0b", slot1), mm, kc, nn, mk.dtype,
                           accumulate=sy.lt(0, F("kk")), bias=bias_ref, note="accumulate in L0C"))
        return Loop("kk", 0, F("nK"), 1, body, note="K chunks")
    kl1 = F("kl1")
    body = [Let("k1", sy.mul(F("kk"), kl1)), Let("kl", sy.min_(kl1, sy.add(K, sy.mul(-1, F("k1")))))]
    k1, kl = F("k1"), F("kl")
    if b_mode(mk, t) == "pieces":
        piece = l1_b_piece_bytes(mk, t)
        at = sy.mul(F("kp"), tk)
        body.append(Loop("kp", 0, sy.ceildiv(kl, tk), 1,
                         _load_b(mk, l1b.at(sy.mul(F("kp"), piece)), F("bbase"), sy.add(k1, at),
                                 sy.min_(tk, sy.add(kl, sy.mul(-1, at))), n0, nn, size),
                         note="B chunk, one NZ image per L0 step"))
    else:
        body += _load_b(mk, l1b, F("bbase"), k1, kl, n0, nn, size)
    body += _guarded_a(mk, t, _load_a(mk, l1a, F("abase"), k1, kl, m0, mm))
    slot0 = t.slot(sy.add(sy.mul(F("kk"), t.steps), F("ks")))
    step: list[Stmt] = [Let("ko", sy.mul(F("ks"), tk)), Let("kc", sy.min_(tk, sy.add(kl, sy.mul(-1, F("ko")))))]
    ko, kc = F("ko"), F("kc")
    step += _step_l0(mk, t, slot0, l1a, l1b, ko, kc, kl, mm, nn)
    step.append(T.mmad(Ref("l0c", acc_slot), Ref("l0a", slot0), Ref("l0b", slot0), mm, kc, nn, mk.dtype,
                       accumulate=sy.lt(0, sy.add(F("kk"), F("ks"))), bias=bias_ref, note="accumulate in L0C"))
    body.append(Loop("ks", 0, sy.ceildiv(kl, tk), 1, step, note="L0 steps of the chunk"))
    return Loop("kk", 0, F("nK"), 1, body, note="K chunks (L1)")


def _chunk_count(mk: CubeMatmul, t: MatmulTiling) -> IntLike:
    """What B's L1 chunk slots rotate with. With a resident A panel: a count running on across the core's blocks
    (i * nK + kk), so that with an odd count of chunks per block the next block's first B chunk takes the slot
    the last one does not hold and its move overlaps the last chunk's steps (the blocks after a panel's first
    move B alone: nothing else would start them early). Otherwise kk: the same would help there, but the
    estimates of the small MTE2- and MTE1-bound blocks it then speeds up run short of the emulator and pick
    them over faster ones (910b, a 512^3 product with a float32 bias: 64x64 blocks scored 8,835 and ran 9,369
    cycles; 128x128 ones scored 9,020 and ran 8,645)."""
    if t.a_resident:
        return sy.add(sy.mul(F("i"), -(-mk.K // t.kl1)), F("kk"))   # (K is static: a resident panel's size)
    return F("kk")


def _guarded_a(mk: CubeMatmul, t: MatmulTiling, load: list[Stmt]) -> list[Stmt]:
    """The A chunk's load; with a resident panel only in the blocks that start a panel (`pf`)."""
    return [When(F("pf"), load)] if t.a_resident else load


def _step_l0(mk: CubeMatmul, t: MatmulTiling, slot: IntLike, l1a: Ref, l1b: Ref, ko: IntLike, kc: IntLike,
             kl: IntLike, mm: IntLike, nn: IntLike) -> list[Stmt]:
    """L1 -> L0A / L0B of the L0 step at depth `ko` (kc deep) of the chunk (kl deep) in l1a / l1b."""
    size = itemsize(mk.dtype)
    out: list[Stmt] = []
    r0 = mk.r0
    frac = r0 * mk.fractal_row_bytes
    rows16 = sy.ceildiv(kc, r0)
    if a_mode(mk, t) == "fractals":
        # stored K x M: the step is fractal rows ko/r0.. of every r0-column panel; ZZ wants them per m block
        out.append(Loop("fa", 0, rows16, 1, [T.load_l0_2d(
            Ref("l0a", slot, sy.mul(F("fa"), frac)), l1a, mk.dtype, sy.add(sy.floordiv(ko, r0), F("fa")),
            sy.ceildiv(mm, r0), sy.ceildiv(kl, r0), sy.add(rows16, -1), transpose=True,
            note="A^T step -> L0A")], note="fractal rows of the A step"))
    else:
        out.append(_load_a_l0(mk, Ref("l0a", slot), l1a.at(sy.mul(ko, sy.align_up(mm, r0), size)), kc, mm))
    mode = b_mode(mk, t)
    if mode == "fractals" and b_by_panels(t):
        # stored K x N, a column panel at a time: its kc/r0 fractals of the step are contiguous in L1 and go to
        # every ceil(nn/r0)-th fractal of L0B (ZN order: fractal row by fractal row)
        panels = sy.ceildiv(nn, r0)
        out.append(Loop("pb", 0, panels, 1, [T.load_l0_2d(
            Ref("l0b", slot, sy.mul(F("pb"), frac)), l1b, mk.dtype,
            sy.add(sy.mul(F("pb"), sy.ceildiv(kl, r0)), sy.floordiv(ko, r0)), rows16, 1, sy.add(panels, -1),
            transpose=True, note="B step -> L0B, a column panel")], note="column panels of the B step"))
    elif mode == "fractals":
        # stored K x N: fractal row r of the step is fractal r of every column panel, in ZN order
        out.append(Loop("fb", 0, rows16, 1, [T.load_l0_2d(
            Ref("l0b", slot, sy.mul(F("fb"), sy.ceildiv(nn, r0), frac)), l1b, mk.dtype,
            sy.add(sy.floordiv(ko, r0), F("fb")), sy.ceildiv(nn, r0), sy.ceildiv(kl, r0), transpose=True,
            note="B step -> L0B")], note="fractal rows of the B step"))
    elif mode == "pieces":
        out.append(_load_b_l0(mk, Ref("l0b", slot), l1b.at(sy.mul(sy.floordiv(ko, F("tk")),
                                                                   l1_b_piece_bytes(mk, t))), kc, nn))
    else:  # stored N x K: the step is whole column panels
        out.append(_load_b_l0(mk, Ref("l0b", slot), l1b.at(sy.mul(ko, sy.align_up(nn, 16), size)), kc, nn))
    return out


def _chunk(param: str, dst: Ref, dtype: str, base: IntLike, row0: IntLike, col0: IntLike, rows: IntLike,
           cols: IntLike, stride: IntLike, note: str) -> TileOp:
    """rows x cols elements at (row0, col0) of a row-major matrix (rows `stride` apart) -> L1 in NZ."""
    off = sy.mul(sy.add(base, sy.mul(row0, stride), col0), itemsize(dtype))
    return T.copy_nd2nz(dst, GmRef(param, off), dtype, rows, cols, src_row_stride=stride, note=note)


def _load_a(mk: CubeMatmul, dst: Ref, base: IntLike, k0: IntLike, kc: IntLike, m0: IntLike,
            mm: IntLike) -> list[Stmt]:
    if mk.transpose_a:  # stored K x M
        return [_chunk(in_param(0), dst, mk.dtype, base, k0, m0, kc, mm, F("M"), "A chunk (stored transposed)")]
    return [_chunk(in_param(0), dst, mk.dtype, base, m0, k0, mm, kc, F("K"), "A chunk")]


def _load_b(mk: CubeMatmul, dst: Ref, base: IntLike, k0: IntLike, kc: IntLike, n0: IntLike, nn: IntLike,
            size: int) -> list[Stmt]:
    N = F("N")
    if mk.transpose_b:  # stored N x K
        return [_chunk(in_param(1), dst, mk.dtype, base, n0, k0, nn, kc, F("K"), "B chunk (stored transposed)")]
    src = GmRef(in_param(1), sy.mul(sy.add(base, sy.mul(k0, N), n0), size))
    if mk.dtype == "int8":
        return _load_b_int8(mk, dst, src, kc, nn)
    out: list[Stmt] = [T.copy_nd2nz(dst, src, mk.dtype, kc, nn, src_row_stride=N, note="B chunk")]
    if mk.dtype == "float32":
        # L0B needs r0 columns; copy_nd2nz pads to c0: fill the second c0-column panel
        real = sy.align_up(nn, mk.c0)
        panel = sy.mul(sy.align_up(kc, mk.r0), mk.c0, size)
        out.append(When(sy.ne(real, sy.align_up(nn, mk.r0)),
                        [T.copy_nd2nz(dst.at(sy.mul(sy.floordiv(real, mk.c0), panel)), src, mk.dtype, kc, 1,
                                      src_row_stride=N, note="fill the 16-column fractal")]))
    return out


def _load_b_int8(mk: CubeMatmul, dst: Ref, src: GmRef, kc: IntLike, nn: IntLike) -> list[Stmt]:
    """int8 L0B fractals are k_quantum (c0 = 32 on this chip class) rows: a K tail of at most r0 rows is loaded
    panel by panel (k_quantum x c0 each), the lower rows of each panel filled by a second copy."""
    N = F("N")
    rows, c0 = mk.k_quantum, mk.c0
    short = sy.ne(sy.align_up(kc, mk.r0), sy.align_up(kc, rows))
    whole = [T.copy_nd2nz(dst, src, "int8", kc, nn, src_row_stride=N, note="B chunk")]
    cols = sy.min_(c0, sy.add(nn, sy.mul(-c0, F("p"))))
    panel_src = src.at(sy.mul(c0, F("p")))
    panel = dst.at(sy.mul(sy.align_up(kc, rows), c0, F("p")))
    per_panel = Loop("p", 0, sy.ceildiv(nn, c0), 1, [
        T.copy_nd2nz(panel, panel_src, "int8", kc, cols, src_row_stride=N, note="B panel"),
        T.copy_nd2nz(panel.at(sy.mul(sy.align_up(kc, mk.r0), c0)), panel_src, "int8", 1, cols, src_row_stride=N,
                     note="fill the last rows"),
    ], note="B panels of a short K chunk")
    return [When(sy.eq(short, 0), whole), When(short, [per_panel])]


def _load_l0(mk: CubeMatmul, slot: IntLike, a_src: Ref, b_src: Ref, kc: IntLike, mm: IntLike,
             nn: IntLike) -> list[Stmt]:
    return [_load_a_l0(mk, Ref("l0a", slot), a_src, kc, mm), _load_b_l0(mk, Ref("l0b", slot), b_src, kc, nn)]


def _load_a_l0(mk: CubeMatmul, a_dst: Ref, a_src: Ref, kc: IntLike, mm: IntLike) -> TileOp:
    if mk.transpose_a:
        return T.load_l0(a_dst, a_src, mk.dtype, kc, mm, transpose=True, note="A^T -> L0A")
    return T.load_l0(a_dst, a_src, mk.dtype, mm, kc, note="A -> L0A")


def _load_b_l0(mk: CubeMatmul, b_dst: Ref, b_src: Ref, kc: IntLike, nn: IntLike) -> TileOp:
    if mk.transpose_b:
        if mk.dtype == "float16":
            load_b = T.load_l0(b_dst, b_src, "float16", nn, kc, transpose=True, note="B^T -> L0B")
        else:
            # the same bytes as a float16 matrix: its transpose is the wider type's L0B image
            halves = sy.floordiv(sy.align_up(kc, mk.c0) * itemsize(mk.dtype), 2)
            load_b = T.load_l0(b_dst, b_src, "float16", nn, halves, transpose=True,
                               note=f"B^T -> L0B ({mk.dtype} as 16-bit pairs)")
    elif mk.dtype == "float32":
        load_b = T.load_l0(b_dst, b_src, mk.dtype, kc, sy.align_up(nn, mk.r0), note="B -> L0B")
    elif mk.dtype == "int8":
        load_b = T.load_l0(b_dst, b_src, mk.dtype, sy.align_up(kc, mk.k_quantum), nn, note="B -> L0B")
    else:
        load_b = T.load_l0(b_dst, b_src, mk.dtype, kc, nn, note="B -> L0B")
    return load_b


def batch_dims(out_batch: Sequence[IntLike], a_batch: Sequence[IntLike], b_batch: Sequence[IntLike],
               a_matrix: IntLike, b_matrix: IntLike) -> tuple[BatchDim, ...]:
    """The output batch dims collapsed where both operands agree on being present or broadcast, with
    each operand's element stride (`*_matrix`: elements of one operand matrix)."""
    n = len(out_batch)
    a = (1,) * (n - len(a_batch)) + tuple(a_batch)
    b = (1,) * (n - len(b_batch)) + tuple(b_batch)
    a_strides = _strides(a, a_matrix)
    b_strides = _strides(b, b_matrix)
    out: list[BatchDim] = []
    prev: tuple[bool, bool] | None = None
    for d in range(n):
        if out_batch[d] == 1:
            continue
        pa, pb = a[d] != 1, b[d] != 1
        sa, sb = (a_strides[d] if pa else 0), (b_strides[d] if pb else 0)
        if prev == (pa, pb):
            last = out[-1]
            # the collapsed dim steps like its inner part: strides of the inner dim, sizes multiply
            out[-1] = BatchDim(sy.mul(last.size, out_batch[d]), sa, sb)
        else:
            out.append(BatchDim(out_batch[d], sa, sb))
        prev = (pa, pb)
    return tuple(out)


def _strides(shape: Sequence[IntLike], inner: IntLike) -> list[IntLike]:
    out: list[IntLike] = []
    acc = inner
    for d in reversed(shape):
        out.append(acc)
        acc = sy.mul(acc, d)
    return out[::-1]


def _symbols(mk: CubeMatmul) -> set[str]:
    return free_symbols([mk.M, mk.N, mk.K, mk.batch_count])


def _tilings(mk: CubeMatmul, chip: Chip, buffer_num: int, cores: int) -> list[MatmulTiling]:
    """Candidates sized for the product's dims (a symbolic one at the tiler's nominal size)."""
    dims, _ = scoring_dims(sorted(_symbols(mk)))
    return tilings(mk, chip, buffer_num, cores, dims)


TEMPLATE = Template("matmul", "aic", MatmulTiling, lambda job, chip: [job.subject.for_chip(chip)], _tilings,
                    schedule, _symbols, ops=frozenset({"matmul", "fused_matmul"}), bound=bound, floor=floor,
                    same=lambda mk, t, chip, dims: same_score(mk, t, dims))
