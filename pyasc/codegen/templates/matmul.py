"""The matmul template: (batched) A @ B on the cube cores (AIC), with bias, ReLU and the output cast.

What one kernel computes (`CubeMatmul`, from `matmul_plan`): out[b] = act(A[b] @ B[b] + bias) for every
output batch index b (numpy's broadcasting of the batch dims: an operand's batch stride is 0 where it
broadcasts), A[b] (M x K) and B[b] (K x N) read from GM row-major (or stored transposed: transpose_a / _b),
operands already in the cube dtype (float16, float32 or int8), the bias float32, accumulation in L0C in
float32 (int32 for int8), then FixPipe writes the block row-major with ReLU and the cast on the way out.

The output is cut into tm x tn blocks, numbered batch-major then row-major; each core takes a contiguous
run of blocks (balanced within one block). Per block, K is walked in chunks of tk:

  MTE2  GM -> L1, ND -> NZ (copy_nd2nz; the bias chunk once per block)
  MTE1  L1 -> L0A / L0B (load_l0; the bias L1 -> bias table once per block)
  M     mmad into L0C (the first chunk starts from the bias, later ones accumulate)
  FIX   L0C -> GM after the last chunk

L1 and L0A/L0B chunks rotate over `buffers` slots with the chunk index, so the loads of chunk k+1 overlap
the mmad of chunk k; L0C rotates over `l0c_slots` with the block counter, so FixPipe of block i overlaps
the mmads of block i+1. Flags come from the sync analysis.

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

from dataclasses import dataclass, replace
from typing import Any, Sequence

from simulator import isa

from ... import symbolic as sy
from ...symbolic import IntLike
from .. import tileops as T
from ..schedule import BLOCKS, CORE, Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileOp, TileSchedule, When

F = sy.sym

#: what FixPipe converts an accumulator to on the way out
FIXPIPE_CASTS = {"float32": ("float32", "float16"), "int32": ("int32", "float32", "float16")}
CUBE_DTYPES = ("float16", "float32", "int8")
#: base block sizes the tiler tries (multiples of the 16-row fractal)
BASE_SIZES = (16, 32, 64, 128, 256)


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
    fractal_row_bytes: int = 0  # the chip's (ChipConfig.fractal_row_bytes); set by `for_chip`

    def for_chip(self, chip: Any) -> "CubeMatmul":
        return replace(self, fractal_row_bytes=chip.fractal_row_bytes)

    @property
    def acc_dtype(self) -> str:
        return isa.CUBE_DTYPES[self.dtype]

    @property
    def c0(self) -> int:
        """Columns of one fractal row (16 for fp16, 8 for fp32, 32 for int8 on this chip class)."""
        if not self.fractal_row_bytes:
            raise AssertionError("CubeMatmul.for_chip(chip) was not applied")
        return self.fractal_row_bytes // isa.itemsize(self.dtype)

    @property
    def k_quantum(self) -> int:
        """tk is a multiple of this: whole fractals on both the A side (c0) and the B side (16 rows)."""
        return max(16, self.c0)

    @property
    def batch_count(self) -> IntLike:
        return sy.mul(1, *(d.size for d in self.batch))


@dataclass(frozen=True)
class MatmulTiling:
    tm: int
    tn: int
    tk: int
    buffers: int        # slots of the L1 and L0A/L0B chunk buffers (1 or 2)
    l0c_slots: int      # slots of the L0C block buffer (1 or 2)
    cores: int          # cores available (the launch uses min(cores, blocks))

    def describe(self) -> str:
        return (f"base {self.tm}x{self.tn}x{self.tk}, L1/L0 slots={self.buffers}, L0C slots={self.l0c_slots}, "
                f"cores<={self.cores}")


def in_param(i: int) -> str:
    return f"in{i}"


def out_param(j: int) -> str:
    return f"out{j}"


def _ceil(x: int, a: int) -> int:
    return -(-x // a) * a


# ---- on-chip footprint (static: tile sizes are ints) -------------------------------------------------


def _l1_a_bytes(mk: CubeMatmul, t: MatmulTiling) -> int:
    size = isa.itemsize(mk.dtype)
    if mk.transpose_a:  # the NZ image of the stored (tk x tm) chunk
        return _ceil(t.tk, 16) * _ceil(t.tm, mk.c0) * size
    return _ceil(t.tm, 16) * _ceil(t.tk, mk.c0) * size


def _l1_b_bytes(mk: CubeMatmul, t: MatmulTiling) -> int:
    size = isa.itemsize(mk.dtype)
    if mk.transpose_b:  # the NZ image of the stored (tn x tk) chunk
        return _ceil(t.tn, 16) * _ceil(t.tk, mk.c0) * size
    return _ceil(t.tk, mk.k_quantum) * _ceil(t.tn, 16) * size


def _l0a_bytes(mk: CubeMatmul, t: MatmulTiling) -> int:
    return _ceil(t.tm, 16) * _ceil(t.tk, mk.c0) * isa.itemsize(mk.dtype)


def _l0b_bytes(mk: CubeMatmul, t: MatmulTiling) -> int:
    return _ceil(t.tk, mk.k_quantum) * _ceil(t.tn, 16) * isa.itemsize(mk.dtype)


def buffers(mk: CubeMatmul, t: MatmulTiling) -> list[Buffer]:
    out = [
        Buffer("l1a", "L1", mk.dtype, _ceil(_l1_a_bytes(mk, t), 32), t.buffers, "A chunk (NZ)"),
        Buffer("l1b", "L1", mk.dtype, _ceil(_l1_b_bytes(mk, t), 32), t.buffers, "B chunk (NZ)"),
        Buffer("l0a", "L0A", mk.dtype, _l0a_bytes(mk, t), t.buffers, "A chunk (ZZ)"),
        Buffer("l0b", "L0B", mk.dtype, _l0b_bytes(mk, t), t.buffers, "B chunk (ZN)"),
        Buffer("l0c", "L0C", mk.acc_dtype, t.tm * t.tn * 4, t.l0c_slots, "accumulator"),
    ]
    if mk.bias:
        out += [Buffer("l1bias", "L1", "float32", _ceil(t.tn * 4, 32), 1, "bias chunk"),
                Buffer("bt", "BT", "float32", _ceil(t.tn * 4, 64), 1, "bias table")]
    return out


def fits(mk: CubeMatmul, t: MatmulTiling, chip: Any) -> bool:
    used: dict[str, int] = {}
    for b in buffers(mk, t):
        used[b.space] = used.get(b.space, 0) + _ceil(b.nbytes, chip.space_align(b.space))
    return all(n <= chip.space_bytes(space) for space, n in used.items())


# ---- candidates ---------------------------------------------------------------------------------------


def tilings(mk: CubeMatmul, chip: Any, buffer_num: int, cores: int, dims: dict[str, int]) -> list[MatmulTiling]:
    """Base sizes worth scoring: for every (tm, tn) up to the padded output, the largest tk that fits (and
    half of it), single and double buffered (buffer_num is the cap). `dims` binds symbolic dims to the
    sizes the tiler scores (the real ones are read at launch)."""
    cores = max(1, min(cores, chip.aic_cores))
    M, N, K = (sy.evaluate(x, dims) for x in (mk.M, mk.N, mk.K))
    k_cap = _ceil(max(K, 1), mk.k_quantum)
    out = _candidates(mk, chip, buffer_num, cores, _base_sizes(M, cores), _base_sizes(N, cores), k_cap)
    # a small chip may fit none of the few large blocks a large (or nominal) extent asks for
    return out or _candidates(mk, chip, buffer_num, cores, _base_sizes(M, 0), _base_sizes(N, 0), k_cap)


def _candidates(mk: CubeMatmul, chip: Any, buffer_num: int, cores: int, ms: list[int], ns: list[int],
                k_cap: int) -> list[MatmulTiling]:
    q = mk.k_quantum
    out: list[MatmulTiling] = []
    for bn in sorted({1, min(2, buffer_num)}):
        for l0c in sorted({1, min(2, buffer_num)}):
            for tm in ms:
                for tn in ns:
                    tk = _largest_tk(mk, tm, tn, bn, l0c, cores, k_cap, chip)
                    if tk == 0:
                        continue
                    for k in sorted({tk, max(q, tk // 2 // q * q)}, reverse=True):
                        out.append(MatmulTiling(tm, tn, k, bn, l0c, cores))
    return out


def _base_sizes(extent: int, cores: int) -> list[int]:
    """Block sizes along one output dim: every base size below the padded extent that does not cut it into
    more than 4 blocks per core (smaller ones only add start-up costs; cores=0: no such limit), and the one
    covering it."""
    padded = _ceil(max(extent, 1), 16)
    out = [s for s in BASE_SIZES if s < padded and (not cores or -(-extent // s) <= 4 * cores)]
    return sorted(set(out + [min(padded, BASE_SIZES[-1])]))


def _largest_tk(mk: CubeMatmul, tm: int, tn: int, bn: int, l0c: int, cores: int, cap: int, chip: Any) -> int:
    q = mk.k_quantum
    best = 0
    tk = q
    while tk <= cap:
        if not fits(mk, MatmulTiling(tm, tn, tk, bn, l0c, cores), chip):
            break
        best = tk
        tk = tk * 2 if tk * 2 <= cap else (cap if tk < cap else cap + 1)
    return best


# ---- the schedule -------------------------------------------------------------------------------------


def schedule(mk: CubeMatmul, t: MatmulTiling, chip: Any) -> TileSchedule:
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
    fields["nK"] = sy.ceildiv(mk.K, t.tk)
    blocks = sy.ceildiv(total, sy.max_(1, sy.ceildiv(total, t.cores)))
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
    m0, mm, n0, nn = F("m0"), F("mm"), F("n0"), F("nn")

    size, osize = isa.itemsize(mk.dtype), isa.itemsize(mk.out_dtype)
    slot = sy.mod(F("kk"), t.buffers) if t.buffers > 1 else 0
    acc_slot = sy.mod(F("i"), t.l0c_slots) if t.l0c_slots > 1 else 0
    block: list[Stmt] = list(lets)
    bias_ref = None
    if mk.bias:
        block.append(T.load(Ref("l1bias"), GmRef(in_param(2), sy.mul(n0, 4)), "float32", nn, space="L1",
                            note="bias chunk"))
        block.append(T.load_bias(Ref("bt"), Ref("l1bias"), nn, note="bias -> bias table"))
        bias_ref = Ref("bt")
    k_body: list[Stmt] = [Let("k0", sy.mul(F("kk"), tk)), Let("kc", sy.min_(tk, sy.add(K, sy.mul(-1, F("k0")))))]
    k0, kc = F("k0"), F("kc")
    # B first: the load of A then finishes last on MTE2, so one flag tells MTE1 both chunks are in
    k_body += _load_b(mk, Ref("l1b", slot), F("bbase"), k0, kc, n0, nn, size)
    k_body += _load_a(mk, Ref("l1a", slot), F("abase"), k0, kc, m0, mm)
    k_body += _load_l0(mk, slot, kc, mm, nn)
    k_body.append(T.mmad(Ref("l0c", acc_slot), Ref("l0a", slot), Ref("l0b", slot), mm, kc, nn, mk.dtype,
                         accumulate=sy.lt(0, F("kk")), bias=bias_ref, note="accumulate in L0C"))
    block.append(Loop("kk", 0, F("nK"), 1, k_body, note="K chunks"))
    out_off = sy.mul(sy.add(sy.mul(F("bi"), M, N), sy.mul(m0, N), n0), osize)
    block.append(T.fixpipe(GmRef(out_param(0), out_off), Ref("l0c", acc_slot), mm, nn, mk.out_dtype,
                           mk.acc_dtype, relu=mk.relu, dst_row_stride=N, note="L0C -> GM"))
    body: list[Stmt] = [Loop("i", 0, count, 1, block, note="output blocks of this core")]
    params = [GmParam(in_param(0), mk.dtype, "in"), GmParam(in_param(1), mk.dtype, "in")]
    if mk.bias:
        params.append(GmParam(in_param(2), "float32", "in"))
    params.append(GmParam(out_param(0), mk.out_dtype, "out"))
    notes = [f"C[{'x'.join(str(d.size) for d in mk.batch) or '1'}] = A({mk.M}x{mk.K}{'.T' if mk.transpose_a else ''})"
             f" @ B({mk.K}x{mk.N}{'.T' if mk.transpose_b else ''}) {mk.dtype} -> {mk.acc_dtype} -> {mk.out_dtype}"
             + (" + bias" if mk.bias else "") + (" relu" if mk.relu else ""),
             f"tiling: {t.describe()}"]
    return TileSchedule(mk.name, "aic", params, fields, blocks, buffers(mk, t), body, notes)


def _chunk(param: str, dst: Ref, dtype: str, base: IntLike, row0: IntLike, col0: IntLike, rows: IntLike,
           cols: IntLike, stride: IntLike, note: str) -> TileOp:
    """rows x cols elements at (row0, col0) of a row-major matrix (rows `stride` apart) -> L1 in NZ."""
    off = sy.mul(sy.add(base, sy.mul(row0, stride), col0), isa.itemsize(dtype))
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
        return _load_b_int8(dst, src, kc, nn)
    out: list[Stmt] = [T.copy_nd2nz(dst, src, mk.dtype, kc, nn, src_row_stride=N, note="B chunk")]
    if mk.dtype == "float32":
        # L0B needs 16 columns; copy_nd2nz pads to 8: fill the second 8-column panel
        real = sy.align_up(nn, mk.c0)
        panel = sy.mul(sy.align_up(kc, 16), mk.c0, size)
        out.append(When(sy.ne(real, sy.align_up(nn, 16)),
                        [T.copy_nd2nz(dst.at(sy.mul(sy.floordiv(real, mk.c0), panel)), src, mk.dtype, kc, 1,
                                      src_row_stride=N, note="fill the 16-column fractal")]))
    return out


def _load_b_int8(dst: Ref, src: GmRef, kc: IntLike, nn: IntLike) -> list[Stmt]:
    """int8 L0B fractals are 32 rows: a K tail of at most 16 rows is loaded panel by panel (32 x 32 each),
    the lower 16 rows of each panel filled by a second copy."""
    N = F("N")
    short = sy.ne(sy.align_up(kc, 16), sy.align_up(kc, 32))
    whole = [T.copy_nd2nz(dst, src, "int8", kc, nn, src_row_stride=N, note="B chunk")]
    cols = sy.min_(32, sy.add(nn, sy.mul(-32, F("p"))))
    panel_src = src.at(sy.mul(32, F("p")))
    panel = dst.at(sy.mul(sy.align_up(kc, 32), 32, F("p")))
    per_panel = Loop("p", 0, sy.ceildiv(nn, 32), 1, [
        T.copy_nd2nz(panel, panel_src, "int8", kc, cols, src_row_stride=N, note="B panel"),
        T.copy_nd2nz(panel.at(sy.mul(sy.align_up(kc, 16), 32)), panel_src, "int8", 1, cols, src_row_stride=N,
                     note="fill the last 16 rows"),
    ], note="B panels of a short K chunk")
    return [When(sy.eq(short, 0), whole), When(short, [per_panel])]


def _load_l0(mk: CubeMatmul, slot: IntLike, kc: IntLike, mm: IntLike, nn: IntLike) -> list[Stmt]:
    a_src, b_src = Ref("l1a", slot), Ref("l1b", slot)
    a_dst, b_dst = Ref("l0a", slot), Ref("l0b", slot)
    if mk.transpose_a:
        load_a = T.load_l0(a_dst, a_src, mk.dtype, kc, mm, transpose=True, note="A^T -> L0A")
    else:
        load_a = T.load_l0(a_dst, a_src, mk.dtype, mm, kc, note="A -> L0A")
    if mk.transpose_b:
        if mk.dtype == "float16":
            load_b = T.load_l0(b_dst, b_src, "float16", nn, kc, transpose=True, note="B^T -> L0B")
        else:
            # the same bytes as a float16 matrix: its transpose is the wider type's L0B image
            halves = sy.floordiv(sy.align_up(kc, mk.c0) * isa.itemsize(mk.dtype), 2)
            load_b = T.load_l0(b_dst, b_src, "float16", nn, halves, transpose=True,
                               note=f"B^T -> L0B ({mk.dtype} as 16-bit pairs)")
    elif mk.dtype == "float32":
        load_b = T.load_l0(b_dst, b_src, mk.dtype, kc, sy.align_up(nn, 16), note="B -> L0B")
    elif mk.dtype == "int8":
        load_b = T.load_l0(b_dst, b_src, mk.dtype, sy.align_up(kc, 32), nn, note="B -> L0B")
    else:
        load_b = T.load_l0(b_dst, b_src, mk.dtype, kc, nn, note="B -> L0B")
    return [load_a, load_b]


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
