"""The combine of split-keys attention: the runs' partial results into the attention's result, on AIV cores.

The split form of the attention template (`attention.py`, `chunks` > 1) leaves, for every query row and run c
of its keys, the run's running max m_c, its sum l_c and its unnormalised output O_c (float32 scratch, laid out
as `attention.partials` says). With M = max_c m_c and w_c = exp(m_c - M):

    out = sum_c w_c O_c / sum_c w_c l_c

which is the online softmax's last step taken over the runs instead of the blocks (each O_c, l_c is relative
to m_c; multiplying by w_c makes it relative to M). A run that saw no visible key has m_c = the lowest float32
(the attention kernel's start value, never -inf), l_c = 0, O_c = 0: its w_c is 0, or 1 when no run saw a key,
so no exp(-inf + inf) appears and a row with no visible key ends as 0 / 0 = NaN, as the op states.

A work item is a block of up to `rows` query rows of one batch index: the m and l of every run (runs as UB
rows, query rows as columns), then O_c run by run (rotating over `buffer_num` slots) scaled by w_c and summed.
Items are split over the cores in contiguous runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import symbolic as sy
from ...symbolic import IntLike
from ...target import Chip, itemsize
from .. import tileops as T
from ..domain import dims, prod
from ..kernel_graph import KernelGraph
from ..schedule import BLOCKS, CORE, Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule
from ..template import Job, Template, Tiling, Unsupported, align_up, buffer_nums, free_symbols, ub_slot
from .attention import partials
from .row_operands import RowOperand, result_of

F = sy.sym
SIZES = (8, 16, 32, 64)


@dataclass(frozen=True)
class CombineOp:
    """`chunks` runs of partial results of a (batch, Tq, Dv) attention, combined into `out` (its rows, in
    `out_dtype`)."""

    name: str
    batch: IntLike
    Tq: IntLike
    Dv: int
    chunks: int
    out_dtype: str
    out: RowOperand


@dataclass(frozen=True)
class CombineTiling(Tiling):
    rows: int            # query rows per work item
    buffer_num: int
    cores: int
    whole: bool = False  # every run's O rows of an item in one load (rows of whole UB blocks: no padding)

    def describe(self) -> str:
        how = ", every run's O in one load" if self.whole else ""
        return f"{self.rows} query rows per item{how}, buffer_num={self.buffer_num}, cores<={self.cores}"


def analyze(job: Job, chip: Chip) -> list[CombineOp]:
    """The attention node of the job's kernel graph and the number of runs its split form wrote (`chunks`)."""
    kg: KernelGraph = job.subject
    node = next(n for n in kg.nodes if n.op == "attention")
    chunks = int(job.options.get("chunks", 0))
    if chunks < 2:
        raise Unsupported(f"a combine of {chunks} run(s): the split form writes two or more")
    sq, sv = dims(node.inputs[0].type.shape), dims(node.inputs[2].type.shape)
    return [CombineOp(job.label, prod(sq[:-2]), sq[-2], int(sv[-1]), chunks, node.out().type.dtype,
                      result_of(kg, node.out()))]


def _row_pad(c: CombineOp, chip: Chip) -> int:
    """Elements per UB row of O: whole blocks both as float32 and cast to the output dtype in place."""
    return align_up(c.Dv, chip.ub_align // min(4, itemsize(c.out_dtype)))


def buffers(c: CombineOp, t: CombineTiling, chip: Chip) -> list[Buffer]:
    ub = lambda n: ub_slot(n, chip)  # noqa: E731 - a local shorthand
    rp, dvp = align_up(t.rows, chip.ub_align // 4), _row_pad(c, chip)
    grid = ub(c.chunks * rp * 4)
    out = [Buffer("m", "UB", "float32", grid, 1, "m of every run (runs as rows)"),
           Buffer("l", "UB", "float32", grid, 1, "l of every run, then w l"),
           Buffer("w", "UB", "float32", grid, 1, "M over the runs, then w = exp(m - M)"),
           Buffer("mx", "UB", "float32", ub(rp * 4), 1, "M, then sum_c w l"),
           Buffer("o", "UB", "float32", ub(t.rows * dvp * 4 * (c.chunks if t.whole else 1)),
                  1 if t.whole else t.slots(), "O of every run" if t.whole else "O of one run"),
           Buffer("acc", "UB", "float32", ub(t.rows * dvp * 4), 1, "sum_c w O"),
           Buffer("tile", "UB", "float32", ub(t.rows * dvp * 4), 1, "a per-row value over the row")]
    if c.out_dtype != "float32":
        out.append(Buffer("y", "UB", c.out_dtype, ub(t.rows * dvp * itemsize(c.out_dtype)), 1, "out rows"))
    return out


def tilings(c: CombineOp, chip: Chip, buffer_num: int, cores: int) -> list[CombineTiling]:
    limit = chip.max_repeats * chip.vector_repeat_bytes      # one instruction per tile
    most = max(SIZES[0], align_up(c.Tq, SIZES[0])) if isinstance(c.Tq, int) else SIZES[-1]
    out = []
    kinds = [(bn, False) for bn in buffer_nums(buffer_num, most=2)]
    if _row_pad(c, chip) == c.Dv:    # a run's rows are one run of GM and of UB: all runs in one load
        kinds.append((1, True))
    for bn, whole in kinds:
        for rows in SIZES:
            t = CombineTiling(rows, bn, max(1, min(cores, chip.aiv_cores)), whole)
            bufs = buffers(c, t, chip)
            if rows <= most and sum(b.nbytes for b in bufs) <= chip.ub_bytes and \
                    all(b.slot_bytes <= limit for b in bufs if b.name != "o" or not whole):
                out.append(t)
    return out


def schedule(c: CombineOp, t: CombineTiling, chip: Chip) -> TileSchedule:
    nqb = sy.ceildiv(c.Tq, t.rows)
    fields: dict[str, IntLike] = {"Tq": c.Tq, "NQB": nqb, "T": sy.mul(c.batch, nqb)}
    blocks = sy.ceildiv(fields["T"], sy.max_(1, sy.ceildiv(fields["T"], t.cores)))
    per = sy.ceildiv(F("T"), F(BLOCKS))
    begin = sy.mul(F(CORE), per)
    count = sy.max_(0, sy.min_(per, sy.add(F("T"), sy.mul(-1, begin))))
    rp, dvp = align_up(t.rows, chip.ub_align // 4), _row_pad(c, chip)
    C, rn = c.chunks, F("rn")
    po, pm, pl = partials(c.batch, C, F("Tq"), c.Dv, ("in0", "in1", "in2"))
    # run k's rows from r0 on: the batch index bi * C + k of the partial results (as bytes)
    at = lambda r, k: GmRef(r.param, sy.mul(r.start(sy.add(sy.mul(F("bi"), C), k), F("r0")), 4))  # noqa: E731
    row = lambda buf, k: Ref(buf, 0, sy.mul(k, rp * 4))     # noqa: E731 - run k's row of a (runs, rows) grid
    grid = C * rp
    pre: list[Stmt] = [T.vdup(Ref(b), 0.0, grid, "float32", note="zero the row padding") for b in ("m", "l")]
    if not t.whole:
        pre += [T.vdup(Ref("o", s), 0.0, t.rows * dvp, "float32", note="zero the row padding")
                for s in range(t.slots())]
    lets: list[Stmt] = [Let("t", sy.add(begin, F("i"))), Let("bi", sy.floordiv(F("t"), F("NQB"))),
                        Let("r0", sy.mul(sy.mod(F("t"), F("NQB")), t.rows)),
                        Let("rn", sy.min_(t.rows, sy.add(F("Tq"), sy.mul(-1, F("r0")))))]
    weights: list[Stmt] = [
        T.load(Ref("m"), at(pm, 0), "float32", rn, C, src_stride=pm.batch_strides[0], dst_stride=rp,
               note="m of every run"),
        T.load(Ref("l"), at(pl, 0), "float32", rn, C, src_stride=pl.batch_strides[0], dst_stride=rp,
               note="l of every run"),
        T.vcopy(Ref("mx"), Ref("m"), rp, "float32"),
        Loop("k", 1, C, 1, [T.vbinary("max", Ref("mx"), Ref("mx"), row("m", F("k")), rp, "float32")],
             note="M = max over the runs"),
        T.vbroadcast(Ref("w"), Ref("mx"), C, rp, "float32", axis=0, dst_row_stride=rp),
        T.vbinary("sub", Ref("w"), Ref("m"), Ref("w"), grid, "float32"),
        T.vunary("exp", Ref("w"), Ref("w"), grid, "float32", note="w = exp(m - M)"),
        T.vbinary("mul", Ref("l"), Ref("l"), Ref("w"), grid, "float32"),
        T.vcopy(Ref("mx"), Ref("l"), rp, "float32"),
        Loop("k", 1, C, 1, [T.vbinary("add", Ref("mx"), Ref("mx"), row("l", F("k")), rp, "float32")],
             note="sum_c w l"),
        T.vdup(Ref("acc"), 0.0, sy.mul(rn, dvp), "float32", note="O = 0")]
    tile, cells = Ref("tile"), sy.mul(rn, dvp)
    if t.whole:
        o = Ref("o", 0, sy.mul(F("k"), t.rows * dvp * 4))
        weights.insert(2, T.load(Ref("o"), at(po, 0), "float32", sy.mul(rn, c.Dv), C, src_stride=po.batch_strides[0],
                                 dst_stride=t.rows * dvp, note="O rows of every run"))
        load: list[Stmt] = []
    else:
        o = Ref("o", t.slot("k"))
        load = [T.load(o, at(po, F("k")), "float32", c.Dv, rn, src_stride=po.row, dst_stride=dvp,
                       note="O rows of run k")]
    runs = Loop("k", 0, C, 1, load + [
        T.vbroadcast(tile, row("w", F("k")), rn, dvp, "float32", axis=1, dst_row_stride=dvp),
        T.vbinary("mul", tile, tile, o, cells, "float32"),
        T.vbinary("add", Ref("acc"), Ref("acc"), tile, cells, "float32", note="O += w O_k")], note="the runs")
    y = Ref("y") if c.out_dtype != "float32" else Ref("acc")
    size = itemsize(c.out_dtype)
    finish: list[Stmt] = [
        T.vunary("reciprocal", Ref("mx"), Ref("mx"), rp, "float32"),
        T.vbroadcast(tile, Ref("mx"), rn, dvp, "float32", axis=1, dst_row_stride=dvp),
        T.vbinary("mul", Ref("acc"), Ref("acc"), tile, cells, "float32", note="O / sum_c w l")]
    if c.out_dtype != "float32":
        finish.append(T.vcast(y, Ref("acc"), cells, "float32", c.out_dtype, round="rint"))
    finish.append(T.store(GmRef(c.out.param, sy.mul(c.out.start(F("bi"), F("r0")), size)), y, c.out_dtype, c.Dv,
                          rn, src_stride=dvp, dst_stride=c.out.row, note="out rows"))
    params = [GmParam(r.param, "float32", "in") for r in (po, pm, pl)] + [GmParam(c.out.param, c.out_dtype, "out")]
    notes = [f"combine {C} runs of split-keys attention ({c.batch} x {c.Tq} queries, Dv={c.Dv})",
             f"tiling: {t.describe()}"]
    body = pre + [Loop("i", 0, count, 1, lets + weights + [runs] + finish, note="items of this core")]
    return TileSchedule(c.name, "aiv", params, fields, blocks, buffers(c, t, chip), body, notes)


def need(c: CombineOp, t: CombineTiling, chip: Chip) -> int:
    return sum(b.nbytes for b in buffers(c, t, chip))


TEMPLATE = Template("attention_combine", "aiv", CombineTiling, analyze, tilings, schedule,
                    lambda c: free_symbols([c.batch, c.Tq]), need=need)
