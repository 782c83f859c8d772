"""The attention template: softmax(q @ k^T * scale + mask) @ v as one mixed launch (FlashAttention).

A work item is a block of bq query rows of one batch index (heads are batch dims); groups of one AIC and its
AIVs take work items in turn (the last query blocks first: a causal item's work grows with its block). For
each, the keys are walked in blocks of bk (for a causal attention only up to the block holding the diagonal of
the item's last row):

- the AIC computes S_j = Q K_j^T on the cube (Q stays in L1 and L0A for the whole item; FixPipe applies the
  scale on the way out) and hands it to its AIVs through the workspace channel `chs`. It runs `lead` blocks ahead: its
  iteration j makes S_j and then P_{j-lead} V_{j-lead} (P from the AIVs through `chp`, in q's dtype) into `cho`,
  so the cube never waits for the round trip through the vector cores;
- each AIV owns half of the block's query rows and keeps, per row, the running maximum m and sum l of the
  online softmax and the partial output O (float32, in UB). For block j: x = S_j (+ mask; -inf above the
  diagonal), m' = max(m, rowmax(x)), alpha_j = exp(m - m'), P_j = exp(x - m'), l = alpha_j l + rowsum(P_j)
  (the row sums of P_j as the cube multiplies it, in q's dtype: l weighs exactly the P that O does).
  The P V products arrive `lead` blocks late, so O is folded behind: O = (O + P_i V_i) alpha_{i+1}, which keeps
  O relative to the max of the blocks folded so far. After the last block it stores O / l.

The recurrence gives O = sum_j exp(x_j - m) V_j and l = sum_j rowsum(exp(x_j - m)) for the final m, so O / l
is the softmax-weighted sum of v: the formula, up to rounding (`ops.attention` states it with the op). No
T x T matrix is ever whole in GM: S, P and P V live in L2-resident workspace tiles, a small ring per group and
channel (`rings`), which reach HBM once each, as any dirty L2 line does.

In one launch a group's items run as one pipeline: the lag of `lead` steps runs across item boundaries, so an
item's first S blocks overlap the last P V blocks of the item before (`attention_steps` numbers the steps; causal
items, which walk different numbers of blocks, take their P tiles in two banks by the item's parity, and a
single S and P V tile each).

The split-keys form (`AttentionOp.chunks` > 1, FlashDecoding's idea, for a decode step whose few query rows
leave most groups idle): a work item is also one of `chunks` runs of key blocks, and instead of O / l it stores
the unnormalised O of its run, its m and its l (float32 scratch); `attention_combine` rescales and sums the runs
(`decode.py` says when this form is used).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip, itemsize
from .. import tileops as T
from ..domain import dims, prod
from ..kernel_graph import KernelGraph
from ..strided import is_view
from ..schedule import CORE, GROUP, SUB, Buffer, Channel, GmParam, GmRef, Let, Loop, MixedSchedule, Ref, Stmt, TileOp, \
    TileSchedule, When
from ..template import Job, Template, Tiling, Unsupported, align_up, buffer_nums, free_symbols, ub_slot
from .attention_steps import banks, count, item_lets, key0, key_blocks, pipelined, steps_of
from .row_operands import RowOperand, operand_of, result_of

F = sy.sym
LOWEST = -3.4028234663852886e38     # the lowest finite float32
SIZES = (16, 32, 64, 128)
LEADS = (1, 2)
#: P V tiles per group: the cube makes the next while the vector cores fold one (with a single tile: 64 KiB a group
#: less in HBM, 1.86x -> 1.69x the minimum on 910b 8 x 1024 x 128 f16, but 2% slower there and 3% on tiny shapes)
O_SLOTS = 2


@dataclass(frozen=True)
class AttentionOp:
    """One attention node: q (batch, Tq, D), k (batch, Tk, D), v (batch, Tk, Dv) and the result (batch, Tq, Dv),
    each a tensor or a view of one (`rows`: q, k, v, out), an optional additive mask of (Tq, Tk) shared by the
    batch (`mask_param`), the scale and whether it is causal."""

    name: str
    batch: IntLike
    Tq: IntLike
    Tk: IntLike
    D: int
    Dv: int
    dtype: str
    out_dtype: str
    scale: float
    causal: bool
    rows: tuple[RowOperand, ...]
    mask_dtype: str | None = None
    mask_param: str = ""
    chunks: int = 1        # runs of key blocks per query block: > 1 writes partial O, m, l (the split form)


@dataclass(frozen=True)
class AttentionTiling(Tiling):
    bq: int                # query rows per work item (each AIV takes half)
    bk: int                # keys per block
    buffer_num: int
    cores: int
    lead: int = 1          # blocks the cube's S runs ahead of its P V (and the vector cores' fold lags)

    def describe(self) -> str:
        return (f"{self.bq} queries x {self.bk} keys per block, S {self.lead} block(s) ahead, "
                f"buffer_num={self.buffer_num}, cores<={self.cores}")

    @property
    def ring(self) -> int:
        """Workspace tiles per group of the S and P channels: a tile per block in flight, two when one is (the
        cube's next S waits for the vector cores' read of the one before, not for their P). With `lead` blocks
        in flight the cube's S of step g waits for the read of S_{g-lead}, done before the vector cores' P of it,
        which the cube waits for anyway (a tile more ran no faster on 910b and put 96 KiB a group more in HBM)."""
        return max(2, self.lead)


@dataclass(frozen=True)
class Ring:
    """A channel's workspace per group: its flags order `slots` tiles in flight (a write waits for the read of
    the tile `slots` transfers back), laid out as `tiles` tiles (slots, or in two banks: `attention_steps`)."""

    slots: int
    tiles: int


def rings(a: AttentionOp, t: AttentionTiling) -> dict[str, Ring]:
    """The S, P and P V channels' rings. Causal items in one pipeline (two banks) keep a single S tile and a
    single P V tile, which need no banks (the cube's next S waits for the vector cores' read of the one before,
    its next P V for their read of the one before): measured on 910b, 8 x 1024 x 128 causal, 24.4 us against
    25.1 us with rings of two in two banks, and 256 KiB of workspace a group against 640. (Not causal, single
    tiles ran 37.9 us against 36.9 us for rings of two: `AttentionTiling.ring`, `O_SLOTS`.)"""
    if banks(a, t) > 1:
        return {"chs": Ring(1, 1), "chp": Ring(t.ring, 2 * t.ring), "cho": Ring(1, 1)}
    return {"chs": Ring(t.ring, t.ring), "chp": Ring(t.ring, t.ring), "cho": Ring(O_SLOTS, O_SLOTS)}


def _padded(n: int, dtype: str, chip: Chip) -> int:
    return align_up(n, chip.ub_align // itemsize(dtype))


def _o_row(a: "AttentionOp", chip: Chip) -> int:
    """Elements per UB row of O: whole blocks both as float32 and cast to the output dtype in place."""
    return align_up(a.Dv, chip.ub_align // min(4, itemsize(a.out_dtype)))


def aic_buffers(a: AttentionOp, t: AttentionTiling, chip: Chip) -> list[Buffer]:
    r0 = chip.cube_block
    c0 = chip.fractal_c0(itemsize(a.dtype))
    size = itemsize(a.dtype)
    dp, dvp = align_up(a.D, max(r0, c0)), align_up(a.Dv, max(r0, c0))
    bqp, bkp = align_up(t.bq, r0), align_up(t.bk, max(r0, c0))
    l1 = lambda n: align_up(n, chip.l1_align)  # noqa: E731 - a local shorthand
    return [
        Buffer("q", "L1", a.dtype, l1(bqp * dp * size), 1, "Q block (NZ)"),
        Buffer("k", "L1", a.dtype, l1(bkp * dp * size), 2, "K block (NZ)"),
        Buffer("p", "L1", a.dtype, l1(bqp * bkp * size), 2, "P block (NZ)"),
        Buffer("v", "L1", a.dtype, l1(bkp * dvp * size), 2, "V block (NZ)"),
        Buffer("qa", "L0A", a.dtype, bqp * dp * size, 1, "Q"),
        Buffer("kb", "L0B", a.dtype, bkp * dp * size, 1, "K^T"),
        Buffer("pa", "L0A", a.dtype, bqp * bkp * size, 1, "P"),
        Buffer("vb", "L0B", a.dtype, bkp * dvp * size, 1, "V"),
        Buffer("s", "L0C", "float32", bqp * bkp * 4, 1, "S"),
        Buffer("o", "L0C", "float32", bqp * dvp * 4, 1, "P V"),
    ]


def _row_wise(width: int, chip: Chip) -> bool:
    """Whether rows of `width` float32 (padded) take a per-row operand in the vector unit's repeat addressing
    (`_per_row`): whole repeats per row, a row stride the stride field holds."""
    epr = chip.vector_repeat_bytes // 4
    return width % epr == 0 and width * 4 // chip.dma_block_bytes <= chip.max_vector_stride


def aiv_buffers(a: AttentionOp, t: AttentionTiling, chip: Chip) -> list[Buffer]:
    h = -(-t.bq // chip.group_aivs)
    bkp, dvp = _padded(t.bk, "float32", chip), _o_row(a, chip)
    ub = lambda n: ub_slot(n, chip)  # noqa: E731 - a local shorthand
    # the scratch tile holds a per-row value broadcast over a row of S (unless the repeat addressing reads it in
    # place), the causal cut's ramp and the mask rows (float32), and O on its way out
    wide = not _row_wise(bkp, chip) or a.causal or a.mask_dtype is not None
    pairs = t.lead + 1 if pipelined(a, t) else 1     # m and l of each item in flight (see _vector_side)
    bufs = [
        Buffer("x", "UB", "float32", ub(h * bkp * 4), t.slots(), "S rows, then exp"),
        Buffer("tile", "UB", "float32", ub(h * (max(bkp, dvp) if wide else dvp) * 4), 1,
               "a per-row value over the row; O out"),
        Buffer("rowv", "UB", "float32", ub(h * chip.dma_block_bytes), 1, "a per-row value, a UB block per row"),
        Buffer("acc", "UB", "float32", ub(h * dvp * 4), 1, "O rows (running)"),
        Buffer("part", "UB", "float32", ub(h * dvp * 4), 1, "P V rows"),
        Buffer("m", "UB", "float32", ub(h * 4), pairs, "running max"),
        Buffer("l", "UB", "float32", ub(h * 4), pairs, "running sum"),
        Buffer("mx", "UB", "float32", ub(h * 4), 1, "block max"),
        Buffer("alpha", "UB", "float32", ub(h * 4), steps_of(a, t, GROUP).alpha_slots() if pipelined(a, t) else t.lead,
               "rescale of the blocks not folded yet"),
    ]
    if a.dtype != "float32":
        bufs.append(Buffer("psum", "UB", a.dtype, ub(h * itemsize(a.dtype)), 1, "row sums of P"))
        bufs.append(Buffer("p16", "UB", a.dtype, ub(h * bkp * itemsize(a.dtype)), 1, "P rows"))
    if a.causal:
        bufs += [Buffer("cramp", "UB", "float32", ub(bkp * 4), 1, "0 .. bk-1"),
                 Buffer("rramp", "UB", "float32", ub(h * 4), 1, "0 .. h-1"),
                 Buffer("diag", "UB", "float32", ub(h * bkp * 4), 1, "c - r: a key's place right of a row's"),
                 Buffer("cut", "UB", "bool", ub(h * bkp), 1, "above the diagonal")]
    if a.mask_dtype is not None:
        bufs.append(Buffer("mask", "UB", a.mask_dtype, ub(h * _padded(t.bk, a.mask_dtype, chip) *
                                                          itemsize(a.mask_dtype)), t.slots(), "mask rows"))
    return bufs


def handles(kg: KernelGraph) -> bool:
    """One attention node, alone or with views of its operands and of its result (see row_operands)."""
    found = [n for n in kg.nodes if n.op == "attention"]
    return len(found) == 1 and all(n is found[0] or is_view(n) for n in kg.nodes)


def analyze(job: Job, chip: Chip) -> list[AttentionOp]:
    """The attention node of the job's kernel graph, for the cube and vector sides (see AttentionOp); with
    `chunks` > 1 in the job's options, the split form (its results: partial O, m and l, see `partials`)."""
    kg: KernelGraph = job.subject
    node = next(n for n in kg.nodes if n.op == "attention")
    q, k, v = node.inputs[:3]
    mask = node.inputs[3] if len(node.inputs) > 3 else None
    sq, sk, sv = (dims(x.type.shape) for x in (q, k, v))
    if len(sq) < 2 or sk[:-2] != sq[:-2] or sv[:-2] != sq[:-2] or sv[-2] != sk[-2] or sk[-1] != sq[-1]:
        raise Unsupported(f"q {tuple(sq)}, k {tuple(sk)}, v {tuple(sv)}: the fused attention takes equal batch "
                          "dims (heads broadcast by np.broadcast_to are)")
    if mask is not None:
        if mask.node.op != "Data":
            raise Unsupported("the mask is a view: the fused attention reads a mask tensor of its own")
        sm = dims(mask.type.shape)
        if tuple(d for d in sm[:-2] if d != 1) or tuple(sm[-2:]) != (sq[-2], sk[-2]):
            raise Unsupported(f"a mask of shape {tuple(sm)}: the fused attention takes one (Tq, Tk) mask")
    D, Dv = sq[-1], sv[-1]
    if not isinstance(D, int) or not isinstance(Dv, int):
        raise Unsupported("the head dims must be known when compiling")
    chunks = int(job.options.get("chunks", 1))
    batch = prod(sq[:-2])
    result = result_of(kg, node.out()) if chunks == 1 else partials(batch, chunks, sq[-2], Dv)[0]
    rows = tuple(operand_of(x, what) for x, what in zip((q, k, v), "qkv")) + (result,)
    a = AttentionOp(job.label, batch, sq[-2], sk[-2], D, Dv, q.type.dtype, node.out().type.dtype,
                    float(node.attrs.get("scale") or 1.0 / math.sqrt(D)), bool(node.attrs.get("causal", False)),
                    rows, mask.type.dtype if mask is not None else None,
                    f"in{mask.node.attrs['index']}" if mask is not None else "", chunks)
    if a.dtype not in ("float16", "float32") or len({q.type.dtype, k.type.dtype, v.type.dtype}) != 1:
        raise Unsupported(f"the fused attention multiplies float16 or float32 on the cube, not {q.type.dtype}, "
                          f"{k.type.dtype}, {v.type.dtype}")
    if a.dtype == "float32" and (a.D % chip.cube_block or a.Dv % chip.cube_block):
        raise Unsupported(f"float32 head dims {a.D} / {a.Dv}: the fused attention takes multiples of "
                          f"{chip.cube_block} (whole L0B fractals)")
    if max(a.D, a.Dv) > 256:
        raise Unsupported(f"head dims {a.D} / {a.Dv} exceed the 256 one L0 step holds")
    return [a]


def partials(batch: IntLike, chunks: int, Tq: IntLike, Dv: int,
             params: tuple[str, str, str] = ("out0", "out1", "out2")) -> tuple[RowOperand, RowOperand, RowOperand]:
    """Where the split form's partial results lie (the split launch writes them, the combine reads them from
    `params`): row q of run c of batch index b is row q of batch index b * chunks + c of O (batch, chunks, Tq,
    Dv), m and l (batch, chunks, Tq), all float32."""
    n = sy.mul(batch, chunks)
    return (RowOperand(params[0], (n,), (sy.mul(Tq, Dv),), Dv), RowOperand(params[1], (n,), (Tq,), 1),
            RowOperand(params[2], (n,), (Tq,), 1))


def tilings(a: AttentionOp, chip: Chip, buffer_num: int, cores: int) -> list[AttentionTiling]:
    out = []
    # query blocks past the smallest that holds every query row do the same work in more memory (a decode
    # step's one row: one block size, not four)
    whole = min((s for s in SIZES if s >= a.Tq), default=max(SIZES)) if isinstance(a.Tq, int) else max(SIZES)
    for bn in buffer_nums(buffer_num, most=2):
        for bq in (s for s in SIZES if s <= whole):
            for bk in SIZES:
                for lead in LEADS:
                    t = AttentionTiling(bq, bk, bn, max(1, min(cores, chip.aic_cores)), lead)
                    if _fits(a, t, chip):
                        out.append(t)
    return out


def _fits(a: AttentionOp, t: AttentionTiling, chip: Chip) -> bool:
    used: dict[str, int] = {}
    for b in aic_buffers(a, t, chip) + aiv_buffers(a, t, chip):
        used[b.space] = used.get(b.space, 0) + align_up(b.nbytes, chip.space_align(b.space))
    limit = chip.max_repeats * chip.vector_repeat_bytes
    return all(n <= chip.space_bytes(s) for s, n in used.items()) and \
        all(b.slot_bytes <= limit for b in aiv_buffers(a, t, chip))


def need(a: AttentionOp, t: AttentionTiling, chip: Chip) -> int:
    return sum(b.nbytes for b in aiv_buffers(a, t, chip))


def _symbols(a: AttentionOp) -> set[str]:
    return free_symbols([a.batch, a.Tq, a.Tk])


def _fields(a: AttentionOp, t: AttentionTiling) -> dict[str, IntLike]:
    nqb = sy.ceildiv(a.Tq, t.bq)
    fields = {"Tq": a.Tq, "Tk": a.Tk, "W": sy.mul(a.batch, nqb, a.chunks), "NQB": nqb, "B": a.batch}
    if pipelined(a, t):     # key blocks per item
        fields["NKB"] = sy.ceildiv(a.Tk, t.bk)
    if a.chunks > 1:     # key blocks per run
        fields["BPC"] = sy.ceildiv(sy.ceildiv(a.Tk, t.bk), a.chunks)
    return fields


def schedule(a: AttentionOp, t: AttentionTiling, chip: Chip) -> MixedSchedule:
    fields = _fields(a, t)
    groups = sy.ceildiv(fields["W"], sy.max_(1, sy.ceildiv(fields["W"], t.cores)))
    fields["G"] = groups
    bkp32, dvp32 = _padded(t.bk, "float32", chip), _o_row(a, chip)
    bkp16 = _padded(t.bk, a.dtype, chip)
    s_bytes, p_bytes, o_bytes = t.bq * bkp32 * 4, t.bq * bkp16 * itemsize(a.dtype), t.bq * dvp32 * 4
    ring = rings(a, t)    # a Channel's slot is a tile in flight: its bytes cover the banks' copies of it
    chans = [Channel(name, side, tile * ring[name].tiles // ring[name].slots, ring[name].slots)
             for name, side, tile in (("chs", "aic", s_bytes), ("chp", "aiv", p_bytes), ("cho", "aic", o_bytes))]
    aic = _cube_side(a, t, chip, dict(fields), groups, (bkp32, bkp16, dvp32), (s_bytes, p_bytes, o_bytes))
    aiv = _vector_side(a, t, chip, dict(fields), groups, (bkp32, bkp16, dvp32), (s_bytes, p_bytes, o_bytes))
    for c in chans:
        aic.scratch[c.param] = sy.mul(groups, c.slots * c.slot_bytes)
    notes = [f"attention over {a.batch} x {a.Tq} queries x {a.Tk} keys (D={a.D}, Dv={a.Dv}), "
             f"{'causal, ' if a.causal else ''}scale {a.scale:g}; S and P in L2-resident workspace tiles"]
    if pipelined(a, t):
        notes.append(f"one pipeline over each group's items: P V {t.lead} step(s) behind S across the items")
    # per group: its work items' key blocks (a causal item walks about half of them on average)
    if a.chunks > 1:
        notes.append(f"split keys: {a.chunks} runs of {fields['BPC']} key blocks per query block, partial O, m "
                     "and l to scratch (attention_combine finishes)")
    nkb = fields["BPC"] if a.chunks > 1 else sy.ceildiv(a.Tk, t.bk)
    steps = sy.mul(sy.ceildiv(fields["W"], groups), sy.ceildiv(sy.add(nkb, 1), 2) if a.causal else nkb)
    return MixedSchedule(a.name, aic, aiv, chans, groups, notes, steps=steps, round_trip=t.lead)


def _slot_ref(param: str, who: str, block: IntLike, slots: int, slot_bytes: int, extra: IntLike = 0) -> GmRef:
    """Block `block`'s tile of a channel of `slots` tiles per group (`who`: the group's index)."""
    return GmRef(param, sy.add(sy.mul(sy.add(sy.mul(F(who), slots), sy.mod(block, slots)), slot_bytes), extra))


def _load_kt(a: AttentionOp, dst: Ref, src: Ref, kn: IntLike, chip: Chip) -> TileOp:
    """K^T into L0B from K's NZ image in L1 with load_l0's transpose, which moves 16-bit elements: float32 keys
    go as float16 pairs (the halves of a float32 stay adjacent along D, the wider type's L0B layout)."""
    if a.dtype == "float16":
        return T.load_l0(dst, src, a.dtype, kn, a.D, transpose=True, note="K^T -> L0B")
    halves = align_up(a.D, chip.fractal_c0(itemsize(a.dtype))) * itemsize(a.dtype) // 2
    return T.load_l0(dst, src, "float16", kn, halves, transpose=True, note="K^T -> L0B (float32 as 16-bit pairs)")


def _cube_side(a: AttentionOp, t: AttentionTiling, chip: Chip, fields: dict, groups: IntLike, pads: tuple,
               sizes: tuple) -> TileSchedule:
    bkp32, bkp16, dvp32 = pads
    s_bytes, p_bytes, o_bytes = sizes
    dt, size = a.dtype, itemsize(a.dtype)
    tiles = {name: r.tiles for name, r in rings(a, t).items()}
    qrows, krows, vrows = a.rows[:3]
    qoff = sy.mul(qrows.start(F("bi"), F("q0")), size)

    def keys(j: IntLike, who: str) -> list[Stmt]:
        """The key block j: its first key `<who>0` and its length `<who>n` (one name each for the S and the
        P V blocks of a loop body, which walk different blocks)."""
        return [Let(f"{who}0", key0(a, t, j)),
                Let(f"{who}n", sy.min_(t.bk, sy.add(F("Tk"), sy.mul(-1, F(f"{who}0")))))]

    def s_block(j: IntLike, step: IntLike) -> list[Stmt]:
        """S of key block j, the group's tile `step` of the S channel."""
        slot = sy.mod(step, 2)
        koff = sy.mul(krows.start(F("bi"), F("ks0")), size)
        kn = F("ksn")
        return keys(j, "ks") + [
            T.copy_nd2nz(Ref("k", slot), GmRef(krows.param, koff), dt, kn, a.D, src_row_stride=krows.row,
                         note="K block"),
            _load_kt(a, Ref("kb"), Ref("k", slot), kn, chip),
            T.mmad(Ref("s"), Ref("qa"), Ref("kb"), F("qm"), a.D, kn, dt, note="S = Q K^T"),
            T.fixpipe(_slot_ref("chs", CORE, step, tiles["chs"], s_bytes), Ref("s"), F("qm"), kn, "float32",
                      dst_row_stride=bkp32, scale=a.scale, note="S * scale -> workspace")]

    def pv_block(j: IntLike, step: IntLike, sfx: str = "") -> list[Stmt]:
        """P V of key block j of the item named with `sfx`, the group's tile `step` of the P and P V channels."""
        slot = sy.mod(step, 2)
        voff = sy.mul(vrows.start(F(f"bi{sfx}"), F("kv0")), size)
        kn, qm = F("kvn"), F(f"qm{sfx}")
        # V first: its loads do not wait for the vector cores, so they are queued before the wait for P
        return keys(j, "kv") + [
            T.copy_nd2nz(Ref("v", slot), GmRef(vrows.param, voff), dt, kn, a.Dv, src_row_stride=vrows.row,
                         note="V block"),
            T.load_l0(Ref("vb"), Ref("v", slot), dt, kn, a.Dv if dt == "float16" else align_up(a.Dv, chip.cube_block),
                      note="V -> L0B"),
            T.copy_nd2nz(Ref("p", slot), _slot_ref("chp", CORE, step, tiles["chp"], p_bytes), dt, qm, kn,
                         src_row_stride=bkp16, note="P block"),
            T.load_l0(Ref("pa"), Ref("p", slot), dt, qm, kn, note="P -> L0A"),
            T.mmad(Ref("o"), Ref("pa"), Ref("vb"), qm, kn, a.Dv, dt, note="P V"),
            T.fixpipe(_slot_ref("cho", CORE, step, tiles["cho"], o_bytes), Ref("o"), qm, a.Dv, "float32",
                      dst_row_stride=dvp32, note="P V -> workspace")]

    # Q stays in L0A for the whole item (P goes through a buffer of its own)
    q_l0a = T.load_l0(Ref("qa"), Ref("q"), dt, F("qm"), a.D, note="Q -> L0A")
    load_q = T.copy_nd2nz(Ref("q"), GmRef(qrows.param, qoff), dt, F("qm"), a.D, src_row_stride=qrows.row,
                          note="Q block")
    # S runs `lead` steps ahead of P V: iteration j computes S_j and P_{j-lead} V_{j-lead}, so the cube works
    # on S while the vector cores turn earlier S blocks into P (the round trip through them is long)
    if pipelined(a, t):
        # one pipeline over all the group's items (attention_steps): P V runs `lead` steps behind S across the
        # items, so the S of an item's first blocks overlaps the P V of the item before (no fill and drain per
        # item); a step's channel tiles are numbered by `Steps.tile`
        st = steps_of(a, t, CORE)

        def behind(cond: IntLike, lets: list[Stmt]) -> list[Stmt]:
            """P V of the step `lets` name (block jb of item wb), when there is one (`cond`)."""
            return [When(cond, lets + pv_block(F("jb"), st.tile(F("wb"), F("jb")), "b"))]

        j = F("j")
        steps = Loop("j", 0, st.blocks(), 1, s_block(j, st.tile(F("w"), j)) + behind(*st.behind(F("w"), j)),
                     note=f"key blocks, S {t.lead} ahead of P V")
        body: list[Stmt] = [
            Loop("w", 0, count(CORE), 1, item_lets(t, CORE) + st.before(F("w")) + [load_q, q_l0a, steps],
                 note="work items of this group"),
            Loop("d", 0, t.lead, 1, st.before(count(CORE)) + behind(*st.behind(count(CORE), F("d"))),
                 note="the last steps' P V")]
    else:
        nkb, j = F("nkb"), F("j")
        prev = sy.add(j, -t.lead)
        item: list[Stmt] = item_lets(t, CORE, a.chunks) + [Let("nkb", key_blocks(a, t)), load_q, q_l0a]
        item.append(Loop("j", 0, sy.add(nkb, t.lead), 1, [
            When(sy.lt(j, nkb), s_block(j, j)),
            When(sy.lt(t.lead - 1, j), pv_block(prev, prev))], note=f"key blocks, S {t.lead} ahead"))
        body = [Loop("w", 0, count(CORE), 1, item, note="work items of this group")]
    params = [GmParam(n, dt, "in") for n in dict.fromkeys(r.param for r in a.rows[:3])]   # heads of one tensor: one
    params += [GmParam("chs", "float32", "scratch"), GmParam("chp", dt, "scratch"), GmParam("cho", "float32", "scratch")]
    return TileSchedule(f"{a.name}_cube", "aic", params, fields, groups, aic_buffers(a, t, chip), body,
                        [f"tiling: {t.describe()}"])


def _ramp(buf: str, n: int, chip: Chip) -> list[Stmt]:
    """0, 1, ..., n-1 (float32) into `buf`: a block's worth by the scalar unit, then doubled by vector adds
    (a scalar store costs the scalar unit as much as a vector instruction: 128 of them were a tenth of a
    causal launch)."""
    first = min(n, chip.ub_align // 4)
    out: list[Stmt] = [Loop("i", 0, first, 1, [T.tile("st", "ramp", dst=Ref(buf, 0, sy.mul(F("i"), 4)), src=F("i"),
                                                       dtype="float32")])]
    done = first
    while done < n:
        out.append(T.vscalar("add", Ref(buf, 0, done * 4), Ref(buf), done, min(done, n - done), "float32",
                             note="ramp: the next stretch"))
        done *= 2
    return out


def _vector_side(a: AttentionOp, t: AttentionTiling, chip: Chip, fields: dict, groups: IntLike, pads: tuple,
                 sizes: tuple) -> TileSchedule:
    bkp32, bkp16, dvp32 = pads
    s_bytes, p_bytes, o_bytes = sizes
    h = -(-t.bq // chip.group_aivs)
    rows, kn = F("rows"), F("kn")
    flat = pipelined(a, t)
    st = steps_of(a, t, GROUP)
    tiles = {name: r.tiles for name, r in rings(a, t).items()}
    # the current S block's tile of the channels: its block's index in its item, or (one pipeline) the group's
    # step; alpha rotates with it over `lead` slots, the vector core's own buffers with the block
    step = st.tile(F("w"), F("j")) if flat else F("j")
    slot = t.slot("j")

    def alpha_of(at: IntLike) -> Ref:
        """alpha of the block of tile `at`."""
        return Ref("alpha", st.alpha_slot(at) if flat else sy.mod(at, t.lead) if t.lead > 1 else 0)

    alpha = alpha_of(step)
    # m and l of an item: one pair, or (one pipeline) a pair per item in flight: the S of `lead` steps on is
    # softmaxed (maybe of the next items) before an item's last P V is folded and it is divided by l
    ml = sy.mod(F("w"), t.lead + 1) if flat else 0
    m, l = Ref("m", ml), Ref("l", ml)
    x, tile, p16 = Ref("x", slot), Ref("tile"), Ref("p16")
    grid = sy.mul(rows, bkp32)            # a block of rows in UB: rows of bkp32 floats
    pre: list[Stmt] = [T.vdup(Ref("x", s), 0.0, h * bkp32, "float32", note="zero the row padding")
                       for s in range(t.slots())]
    pre.append(T.vdup(Ref("part"), 0.0, h * dvp32, "float32", note="zero the row padding"))
    if a.causal:   # diag[r, c] = c - r, once: a block's causal cut is then one compare with a number
        pre += _ramp("cramp", t.bk, chip) + _ramp("rramp", h, chip) + [
                T.vbroadcast(Ref("diag"), Ref("cramp"), h, bkp32, "float32", axis=0, dst_row_stride=bkp32),
                T.vbroadcast(tile, Ref("rramp"), h, bkp32, "float32", axis=1, dst_row_stride=bkp32),
                T.vbinary("sub", Ref("diag"), Ref("diag"), tile, h * bkp32, "float32", note="diag = c - r")]
    def rows_lets(sfx: str = "") -> list[Stmt]:
        """This vector core's rows of the item named with `sfx`: `rows` of them from its row `rs`."""
        per, rs = F(f"per{sfx}"), F(f"rs{sfx}")
        return [Let(f"per{sfx}", sy.ceildiv(F(f"qm{sfx}"), chip.group_aivs)), Let(f"rs{sfx}", sy.mul(F(SUB), per)),
                Let(f"rows{sfx}", sy.max_(0, sy.min_(per, sy.add(F(f"qm{sfx}"), sy.mul(-1, rs)))))]

    # m starts at the lowest finite float32, not -inf: while every key a row has seen is masked (-inf), its P is
    # exp(-inf - lowest) = 0 and its alpha exp(lowest - m') a number, never exp(-inf + inf) (a NaN that would
    # stay); a row that sees no key at all ends as 0 / 0, the NaN the op states
    init = [T.vdup(m, LOWEST, h, "float32", note="m = lowest"), T.vdup(l, 0.0, h, "float32", note="l = 0")]
    take = T.load(x, _slot_ref("chs", GROUP, step, tiles["chs"], s_bytes, sy.mul(F("rs"), bkp32 * 4)), "float32",
                  kn, rows, src_stride=bkp32, dst_stride=bkp32, note="S rows")
    soft: list[Stmt] = []      # x = S * scale: FixPipe scaled it on the way out of L0C
    if a.mask_dtype is not None:
        moff = sy.mul(sy.add(sy.mul(sy.add(F("q0"), F("rs")), F("Tk")), F("k0")), itemsize(a.mask_dtype))
        mrow = _padded(t.bk, a.mask_dtype, chip)
        soft += [T.load(Ref("mask", slot), GmRef(a.mask_param, moff), a.mask_dtype, kn, rows, src_stride=F("Tk"),
                        dst_stride=mrow, note="mask rows")]
        if a.mask_dtype != "float32":
            soft += [T.vcast(tile, Ref("mask", slot), sy.mul(rows, bkp32), a.mask_dtype, "float32", note="mask")]
            soft += [T.vbinary("add", x, x, tile, grid, "float32", note="x += mask")]
        else:
            soft += [T.vbinary("add", x, x, Ref("mask", slot), grid, "float32", note="x += mask")]
    if a.causal:
        off = sy.add(F("q0"), F("rs"), F("Tk"), sy.mul(-1, F("Tq")))   # key index row 0 of this AIV may see
        crosses = sy.lt(sy.add(off, 1), sy.add(F("k0"), kn))        # some key of the block is above a diagonal
        # key k0 + c is above row r's diagonal when k0 + c > off + r, that is c - r > off - k0
        soft.append(When(crosses, [
            T.vcompare("gt", Ref("cut"), Ref("diag"), sy.add(off, sy.mul(-1, F("k0"))), grid, "float32",
                       note="above the diagonal"),
            T.vselect(x, Ref("cut"), float("-inf"), x, grid, "float32", note="causal: -inf above the diagonal")]))
    soft += [
        T.vreduce("max", Ref("mx"), x, rows, kn, "float32", src_row_stride=bkp32, note="row max"),
        T.vbinary("max", Ref("mx"), Ref("mx"), m, rows, "float32", note="m' = max(m, row max)"),
        T.vbinary("sub", alpha, m, Ref("mx"), rows, "float32"),
        T.vunary("exp", alpha, alpha, rows, "float32", note="alpha = exp(m - m')"),
        T.vcopy(m, Ref("mx"), rows, "float32", note="m = m'"),
        *_per_row("sub", x, Ref("mx"), rows, bkp32, chip, note="x - m'"),
        T.vunary("exp", x, x, grid, "float32", note="P = exp(x - m')"),
    ]
    if a.dtype != "float32":
        # the row sums of P as the cube multiplies it, in its dtype: half the repeats of float32 rows (float16
        # values summed in float32, the sum rounded once to float16)
        soft += [T.vcast(p16, x, grid, "float32", a.dtype, round="rint", note="P in the cube's dtype"),
                 T.vreduce("sum", Ref("psum"), p16, rows, kn, a.dtype, src_row_stride=bkp32, note="row sum"),
                 T.vcast(Ref("mx"), Ref("psum"), rows, a.dtype, "float32")]
    else:
        soft.append(T.vreduce("sum", Ref("mx"), x, rows, kn, "float32", src_row_stride=bkp32, note="row sum"))
    soft += [T.vbinary("mul", l, l, alpha, rows, "float32"),
             T.vbinary("add", l, l, Ref("mx"), rows, "float32", note="l = alpha l + row sum")]
    prow = sy.mul(F("rs"), bkp16 * itemsize(a.dtype))
    soft.append(T.store(_slot_ref("chp", GROUP, step, tiles["chp"], p_bytes, prow),
                        p16 if a.dtype != "float32" else x, a.dtype, kn, rows, src_stride=bkp32, dst_stride=bkp16,
                        note="P rows"))

    def fold(at: IntLike, nxt: Ref, rescale: IntLike, first: IntLike = 0, sfx: str = "") -> list[Stmt]:
        """O += tile `at` of the P V channel (from the cube; O = it when `first`), then (when `rescale`) O *= `nxt`,
        the alpha of the block after: O follows the running max of the blocks softmaxed so far while the cube
        multiplies the earlier ones by V. The rows are those of the item named with `sfx`."""
        n, rs = F(f"rows{sfx}"), F(f"rs{sfx}")
        dv = sy.mul(n, dvp32)
        add = T.vbinary("add", Ref("acc"), Ref("acc"), Ref("part"), dv, "float32", note="O += P V")
        src = _slot_ref("cho", GROUP, at, tiles["cho"], o_bytes, sy.mul(rs, dvp32 * 4))
        out: list[Stmt] = [T.load(Ref("part"), src, "float32", a.Dv, n, src_stride=dvp32, dst_stride=dvp32,
                                  note="P V rows")]
        if first == 0:
            out.append(add)
        else:
            out += [When(first, [T.vcopy(Ref("acc"), Ref("part"), dv, "float32", note="O = P V")]),
                    When(sy.eq(first, 0), [add])]
        return out + [When(rescale, _per_row("mul", Ref("acc"), nxt, n, dvp32, chip, note="O *= alpha"))]

    has = sy.lt(0, rows)
    block = [Let("k0", key0(a, t, F("j"))), Let("kn", sy.min_(t.bk, sy.add(F("Tk"), sy.mul(-1, F("k0"))))),
             When(has, [take]), When(has, soft)]
    if flat:
        # one pipeline over the group's items (see the cube side): step (w, j) softmaxes block j of item w, then
        # folds the P V of the step `lead` before (block jb of item wb), finishing item wb after its last block
        def behind(cond: IntLike, lets: list[Stmt]) -> list[Stmt]:
            wb, jb, last = F("wb"), F("jb"), sy.add(st.blocks("b"), -1)
            has_b = sy.lt(0, F("rowsb"))
            lb = Ref("l", sy.mod(wb, t.lead + 1))
            return [When(cond, lets + rows_lets("b") + [
                When(has_b, fold(st.tile(wb, jb), alpha_of(st.tile(wb, sy.add(jb, 1))), sy.lt(jb, last),
                                 sy.eq(jb, 0), "b")),
                When(sy.eq(jb, last), [When(has_b, _store_result(a, dvp32, chip, lb, "b"))])])]

        steps = Loop("j", 0, st.blocks(), 1, block + behind(*st.behind(F("w"), F("j"))),
                     note=f"key blocks, folding P V {t.lead} behind")
        body = [Loop("w", 0, count(GROUP), 1, item_lets(t, GROUP) + st.before(F("w")) + rows_lets() + init + [steps],
                     note="work items of this group"),
                Loop("d", 0, t.lead, 1, st.before(count(GROUP)) + behind(*st.behind(count(GROUP), F("d"))),
                     note="the last steps' P V")]
    else:
        lag = sy.add(F("j"), -t.lead)
        blocks = Loop("j", 0, F("nkb"), 1, block + [When(sy.lt(t.lead - 1, F("j")),
                                                          [When(has, fold(lag, alpha_of(sy.add(lag, 1)), 1))])],
                      note=f"key blocks, folding P V {t.lead} behind")
        # the last `lead` blocks' P V (fewer when the item has fewer blocks)
        i = F("i")
        drain = Loop("i", sy.max_(0, sy.add(F("nkb"), -t.lead)), F("nkb"), 1,
                     [When(has, fold(i, alpha_of(sy.add(i, 1)), sy.lt(i, sy.add(F("nkb"), -1))))],
                     note="the blocks still to fold")
        finish = When(has, _store_partials(a, dvp32) if a.chunks > 1 else _store_result(a, dvp32, chip, l))
        zero = T.vdup(Ref("acc"), 0.0, h * dvp32, "float32", note="O = 0")
        item = item_lets(t, GROUP, a.chunks) + [Let("nkb", key_blocks(a, t))] + rows_lets() + init + [
            zero, blocks, drain, finish]
        body = [Loop("w", 0, count(GROUP), 1, item, note="work items of this group")]
    params = [GmParam("chs", "float32", "scratch"), GmParam("chp", a.dtype, "scratch"),
              GmParam("cho", "float32", "scratch")]
    if a.chunks > 1:
        params += [GmParam(r.param, "float32", "out") for r in partials(a.batch, a.chunks, a.Tq, a.Dv)]
    else:
        params.append(GmParam(a.rows[3].param, a.out_dtype, "out"))
    if a.mask_dtype is not None:
        params.append(GmParam(a.mask_param, a.mask_dtype, "in"))
    return TileSchedule(f"{a.name}_softmax", "aiv", params, fields, sy.mul(groups, chip.group_aivs),
                        aiv_buffers(a, t, chip), pre + body, [f"{h} query rows per vector core at most"])


def _per_row(fn: str, dst: Ref, vals: Ref, rows: IntLike, width: int, chip: Chip, note: str = "") -> list[Stmt]:
    """dst[r, :] = fn(dst[r, :], vals[r]) over `rows` rows of `width` float32 (padded): each row's value copied
    over one UB block (`rowv`), then one instruction per 256-byte column of the rows, a repeat per row, its value
    read with a block stride of 0 (the hardware's broadcast operand: no row-wide scratch copy). Rows the repeat
    addressing cannot step through (`_row_wise`) take the broadcast tile instead."""
    if not _row_wise(width, chip):
        return [T.vbroadcast(Ref("tile"), vals, rows, width, "float32", axis=1, dst_row_stride=width),
                T.vbinary(fn, dst, dst, Ref("tile"), sy.mul(rows, width), "float32", note=note)]
    blk = chip.dma_block_bytes // 4
    epr = chip.vector_repeat_bytes // 4
    step = ((1, width // blk), (1, width // blk), (0, 1))
    return [T.vbroadcast(Ref("rowv"), vals, rows, blk, "float32", axis=1, dst_row_stride=blk)] + \
        [T.vrepeated(fn, dst.at(c * epr * 4), dst.at(c * epr * 4), Ref("rowv"), rows, step, "float32",
                     elems_per_repeat=epr, note=note) for c in range(width // epr)]


def _store_result(a: AttentionOp, dvp32: int, chip: Chip, l: Ref, sfx: str = "") -> list[Stmt]:
    """The end of an item (its names with `sfx`): its rows of O / l, in the result's dtype."""
    rows, tile, osize, orows = F(f"rows{sfx}"), Ref("tile"), itemsize(a.out_dtype), a.rows[3]
    ooff = sy.mul(orows.start(F(f"bi{sfx}"), sy.add(F(f"q0{sfx}"), F(f"rs{sfx}"))), osize)
    grid_o = sy.mul(rows, dvp32)
    out = tile if a.out_dtype != "float32" else Ref("acc")
    return [T.vunary("reciprocal", l, l, rows, "float32"),
            *_per_row("mul", Ref("acc"), l, rows, dvp32, chip, note="O / l")] \
        + ([T.vcast(out, Ref("acc"), grid_o, "float32", a.out_dtype, round="rint")] if out is tile else []) \
        + [T.store(GmRef(orows.param, ooff), out, a.out_dtype, a.Dv, rows, src_stride=dvp32, dst_stride=orows.row,
                   note="out rows")]


def _store_partials(a: AttentionOp, dvp32: int) -> list[Stmt]:
    """The split form's end of an item: its rows' unnormalised O, m and l, as they stand."""
    o, m, l = partials(a.batch, a.chunks, a.Tq, a.Dv)
    run, row = sy.add(sy.mul(F("bi"), a.chunks), F("c")), sy.add(F("q0"), F("rs"))
    at = lambda r: GmRef(r.param, sy.mul(r.start(run, row), 4))  # noqa: E731 - a local shorthand
    return [T.store(at(o), Ref("acc"), "float32", a.Dv, F("rows"), src_stride=dvp32, dst_stride=o.row,
                    note="partial O rows"),
            T.store(at(m), Ref("m"), "float32", F("rows"), note="partial m"),
            T.store(at(l), Ref("l"), "float32", F("rows"), note="partial l")]


TEMPLATE = Template("attention", "mix", AttentionTiling, analyze, tilings, schedule, _symbols, need=need,
                    ops=frozenset({"attention"}), handles=handles)
