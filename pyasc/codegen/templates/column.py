"""Column reductions: a reduction over leading or middle axes, with its elementwise prologue, on AIV cores.

The domain is (outer kept dims, R reduced rows, C kept columns). A task is
one outer index and a chunk of `tw` columns; its rows are streamed in tiles
of `tr` rows (a power of two). Each tile's prologue runs on the whole tile,
the rows a tail tile lacks are filled with the reduction's identity, and a
tree of vector ops folds the tile's rows pairwise (log2(tr) instructions, each
over contiguous rows), then into the task's accumulator.

With fewer tasks than cores, each task's rows are split over g cores: every
core writes its partial accumulator to a GM scratch area, the cores meet at
`sync_all`, and the first core of each task folds the g partials and stores
the result. Otherwise the cores take the tasks in contiguous runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...target import Chip, itemsize

from ... import symbolic as sy
from ...ir import Value
from ...symbolic import IntLike
from .. import tileops as T
from ..alignment import placements
from ..domain import Domain, InputLayout, UnsupportedDomain, column_domain, dims, input_layout
from ..kernel_graph import KernelGraph, kernel_symbols
from ..schedule import BLOCKS, CORE, Buffer, GmParam, GmRef, Let, Loop, Ref, Stmt, TileSchedule, When
from ..template import Job, Template, Tiling, align_up, buffer_nums, free_symbols, ub_slot
from ..ub_alloc import Assignment, assign
from ..vector_ops import build_vector_plan, Geometry, InputUse, is_input_view, Space, VKind, VOp
from .multipass import _COMBINE, _identity
from .placement import decompose, translate_vop
from .vector_kernel import in_param, out_param, read_shapes

F = sy.sym
SCRATCH = "part"


@dataclass
class ColumnKernel:
    name: str
    kg: KernelGraph
    domain: Domain
    ops: list[VOp]                  # prologue ops, then the reduction (and a mean's division)
    reduce: VOp
    after: list[VOp]                # ops on the accumulator after all rows (mean's division)
    inputs: list[InputUse]
    layouts: dict[int, InputLayout]
    alloc: Assignment
    out_buf: Any
    min_itemsize: int


@dataclass(frozen=True)
class ColumnTiling(Tiling):
    rows: int          # tr: rows per tile (a power of two)
    width: int         # tw: columns per task
    split: int         # g: cores per task (1: cores take whole tasks)
    buffer_num: int
    cores: int

    @property
    def mode(self) -> str:
        return "column"

    def describe(self) -> str:
        split = f", rows split over {self.split} cores per task" if self.split > 1 else ""
        return f"column tiles of {self.rows} rows x {self.width} columns{split}, buffer_num={self.buffer_num}"


def analyze(name: str, kg: KernelGraph, shape: Any, reduced: tuple[int, ...]) -> ColumnKernel:
    placed = placements(kg)  # where the prologue's values sit in the domain (inputs are read accordingly)
    in_shapes = read_shapes(kg, placed)
    shape = dims(shape)
    domain = column_domain(shape, reduced, [s for s in in_shapes if len(s) <= len(shape)])

    def space_of(v: Value, read_as: Any = None) -> Space:
        t = v.type
        if v.node.op in ("Data", "Const") and t.numel == 1 and t.is_static:
            return Space.SCALAR
        if v.node.op == "Data" or is_input_view(v):  # an expand_dims of an input is read like the input
            cls = input_layout(domain, dims(t.shape) if read_as is None else tuple(read_as)).cls
            return {"full": Space.FULL, "rowvec": Space.FULL, "col": Space.ROW, "scalar": Space.SCALAR}[cls]
        return Space.ROW if v.node.op in ("sum", "max", "min", "mean") else Space.FULL

    plan = build_vector_plan(kg, kg.nodes, space_of, name, placed=placed)
    reds = [op for op in plan.ops if op.kind is VKind.REDUCE]
    if len(reds) != 1 or len(plan.outputs) != 1:
        raise UnsupportedDomain("a column-reduction kernel holds one reduction and one output")
    red = reds[0]
    at = plan.ops.index(red)
    ops, after = plan.ops[:at + 1], plan.ops[at + 1:]
    if any(op.kind is not VKind.FINALIZE_MEAN for op in after):
        raise UnsupportedDomain("a column reduction takes no epilogue")
    layouts = {}
    for use in plan.inputs:
        if use.view is not None:  # fusion offers views to elementwise and row kernels only (ge/fusion/views.py)
            raise UnsupportedDomain("a column reduction reads its inputs whole, not through views")
        lay = input_layout(domain, dims(use.shape))
        if lay.cls == "col" and lay.r_stride != 1:
            raise UnsupportedDomain(f"input of shape {use.value.type.shape}: per-row values are not contiguous")
        layouts[use.buf.id] = lay
    out_buf = plan.outputs[0][1]
    resident = [u.buf for u in plan.inputs if layouts[u.buf.id].cls == "scalar"]
    loaded = [u.buf for u in plan.inputs if layouts[u.buf.id].cls != "scalar"]
    # the accumulator lives across the row loop (initialised before it): its own buffer, never a reloaded one
    alloc = assign(ops + after, loaded, resident + [red.dst], [out_buf], loops=[(0, len(ops))])
    sizes = [itemsize(b.dtype) for b in plan.buffers] or [4]
    return ColumnKernel(name, kg, domain, ops, red, after, list(plan.inputs), layouts, alloc, out_buf, min(sizes))


def _align(vk: ColumnKernel, n: int, chip: Chip) -> int:
    """`n` columns rounded up to whole UB blocks of the narrowest dtype (every row starts on a block)."""
    return align_up(n, chip.ub_align // vk.min_itemsize)


def _buffers(vk: ColumnKernel, t: ColumnTiling, chip: Chip) -> list[Buffer]:
    twp = _align(vk, t.width, chip)
    out = []
    for p in vk.alloc.buffers:
        n = {Space.FULL: t.rows * twp, Space.ROW: max(t.rows, twp), Space.SCALAR: 1}[p.space]
        out.append(Buffer(p.name, "UB", {1: "uint8", 2: "float16", 4: "float32"}[p.itemsize],
                          ub_slot(n * p.itemsize, chip), t.slots(p.rotating), p.kind))
    for use in vk.inputs:
        if vk.layouts[use.buf.id].cls == "rowvec":
            size = itemsize(use.buf.dtype)
            out.append(Buffer(f"rv{use.buf.id}", "UB", use.buf.dtype, ub_slot(twp * size, chip), t.slots(),
                              "rowvec staging"))
    if t.split > 1:
        size = itemsize(vk.reduce.dtype)
        out.append(Buffer("gather", "UB", vk.reduce.dtype, ub_slot(t.split * twp * size, chip), 1, "partials"))
    return out


def schedule(vk: ColumnKernel, t: ColumnTiling, chip: Chip) -> TileSchedule:
    d = vk.domain
    twp = _align(vk, t.width, chip)
    fields: dict[str, IntLike] = {"R": d.R, "C": d.C, "tr": t.rows, "tw": t.width, "twp": twp,
                                  "NRB": sy.ceildiv(d.R, t.rows), "NI": sy.ceildiv(d.C, t.width)}
    for j, o in enumerate(d.outer):
        fields[f"O{j}"] = o
    tasks = sy.mul(d.outer_count, sy.ceildiv(d.C, t.width))
    fields["T"] = tasks
    for use in vk.inputs:
        lay = vk.layouts[use.buf.id]
        for j, s in enumerate(lay.o_strides):
            if s != 0:
                fields[f"s{use.buf.id}_{j}"] = s
        if lay.r_stride not in (0, 1):
            fields[f"s{use.buf.id}_r"] = lay.r_stride
    params = [GmParam(in_param(i), v.type.dtype, "in") for i, v in enumerate(vk.kg.inputs)]
    params.append(GmParam(out_param(0), vk.kg.outputs[0].type.dtype, "out"))
    scratch: dict[str, IntLike] = {}
    cores = min(t.cores, chip.aiv_cores)
    b = _Body(vk, t)
    if t.split > 1:
        blocks: IntLike = sy.mul(tasks, t.split)
        params.append(GmParam(SCRATCH, vk.reduce.dtype, "scratch"))
        scratch[SCRATCH] = sy.mul(tasks, t.split * twp * itemsize(vk.reduce.dtype))
        body = b.split_body()
    else:
        blocks = sy.ceildiv(tasks, sy.max_(1, sy.ceildiv(tasks, cores)))
        body = b.task_body()
    notes = [f"column domain {tuple(d.shape)} -> outer {tuple(d.outer)}, rows R={d.R}, columns C={d.C}",
             f"tiling: {t.describe()}"]
    return TileSchedule(vk.name, "aiv", params, fields, blocks, _buffers(vk, t, chip), body, notes, scratch)


class _Body:
    def __init__(self, vk: ColumnKernel, t: ColumnTiling):
        self.vk, self.t = vk, t

    def ref(self, buf: Any, slot: IntLike = 0) -> Ref:
        p = self.vk.alloc.of[buf.id]
        return Ref(p.name, slot if p.rotating else 0)

    def task_lets(self, task: IntLike) -> list[Stmt]:
        d = self.vk.domain
        lets: list[Stmt] = [Let("task", task), Let("ib", sy.mod(F("task"), F("NI")))]
        lets.append(Let("c0", sy.mul(F("ib"), F("tw"))))
        lets.append(Let("cols", sy.min_(F("tw"), sy.add(F("C"), sy.mul(-1, F("c0"))))))
        if d.outer:
            lets.append(Let("o", sy.floordiv(F("task"), F("NI"))))
            lets += [Let(f"o{j}", e) for j, e in enumerate(decompose(F("o"), len(d.outer)))]
        return lets

    def gm_in(self, use: InputUse, row: IntLike, col: IntLike) -> GmRef:
        lay = self.vk.layouts[use.buf.id]
        off: IntLike = 0
        for j, s in enumerate(lay.o_strides):
            if s != 0:
                off = sy.add(off, sy.mul(F(f"o{j}"), F(f"s{use.buf.id}_{j}")))
        rs = lay.r_stride if lay.r_stride in (0, 1) else F(f"s{use.buf.id}_r")
        off = sy.add(off, sy.mul(row, rs), col)
        return GmRef(in_param(use.index), sy.mul(off, itemsize(use.buf.dtype)))

    def rows_loop(self, var: str, lo: IntLike, hi: IntLike) -> list[Stmt]:
        """Accumulate row blocks [lo, hi) of the current task into the accumulator."""
        vk, t = self.vk, self.t
        red = vk.reduce
        acc = self.ref(red.dst)
        src = red.srcs[0]
        dt = red.dtype
        size = itemsize(dt)
        slot = t.slot(var)
        body: list[Stmt] = [Let(f"{var}_r0", sy.mul(F(var), F("tr"))),
                            Let(f"{var}_rows", sy.min_(F("tr"), sy.add(F("R"), sy.mul(-1, F(f"{var}_r0")))))]
        r0, rows = F(f"{var}_r0"), F(f"{var}_rows")
        geom = Geometry(full=sy.mul(rows, F("twp")), row=rows, rows=rows, cols=F("cols"), stride=F("twp"))
        for use in vk.inputs:
            lay = vk.layouts[use.buf.id]
            dst = self.ref(use.buf, slot)
            if lay.cls == "full":
                body.append(T.load(dst, self.gm_in(use, r0, F("c0")), use.buf.dtype, F("cols"), rows,
                                   src_stride=lay.r_stride if lay.r_stride in (0, 1) else F(f"s{use.buf.id}_r"),
                                   dst_stride=F("twp"), note=use.buf.what))
            elif lay.cls == "rowvec":
                stage = Ref(f"rv{use.buf.id}", slot)
                body.append(T.load(stage, self.gm_in(use, 0, F("c0")), use.buf.dtype, F("cols"), note=use.buf.what))
                body.append(T.vbroadcast(dst, stage, rows, F("cols"), use.buf.dtype, axis=0, dst_row_stride=F("twp"),
                                         note=f"{use.buf.what} over the rows"))
            elif lay.cls == "col":
                body.append(T.load(dst, self.gm_in(use, r0, 0), use.buf.dtype, rows, note=f"{use.buf.what} per row"))
        for op in vk.ops[:-1]:
            body += translate_vop(op, geom, lambda buf: self.ref(buf, slot))
        tile = self.ref(src, slot)
        body.append(When(sy.lt(rows, F("tr")), [T.vdup(tile.at(sy.mul(sy.mul(rows, F("twp")), size)),
                                                       _identity(red.fn, dt),
                                                       sy.mul(sy.add(F("tr"), sy.mul(-1, rows)), F("twp")), dt,
                                                       note="identity in the rows a tail tile lacks")]))
        h = t.rows // 2
        fn = _COMBINE[red.fn]
        while h >= 1:
            body.append(T.vbinary(fn, tile, tile, tile.at(sy.mul(h, sy.mul(F("twp"), size))),
                                  sy.mul(h, F("twp")), dt, note=f"fold {2 * h} rows to {h}"))
            h //= 2
        body.append(T.vbinary(fn, acc, acc, tile, F("twp"), dt, note=f"{red.note}: into the accumulator"))
        return [Loop(var, lo, hi, 1, body, note="row tiles of this task")]

    def finish(self) -> list[Stmt]:
        """The mean's division and the store of the task's result."""
        vk = self.vk
        out: list[Stmt] = []
        for op in vk.after:
            out.append(T.vscalar("div", self.ref(op.dst), self.ref(op.srcs[0]), F("R"), F("twp"), op.dtype,
                                 note="mean: divide by the reduced count"))
        v = vk.kg.outputs[0]
        size = itemsize(v.type.dtype)
        o_off: IntLike = 0
        for j in range(len(vk.domain.outer)):
            o_off = sy.add(sy.mul(o_off, F(f"O{j}")), F(f"o{j}"))
        off = sy.add(sy.mul(o_off, F("C")), F("c0"))
        out.append(T.store(GmRef(out_param(0), sy.mul(off, size)), self.ref(vk.out_buf), v.type.dtype, F("cols"),
                           note="out0"))
        return out

    def init_acc(self) -> list[Stmt]:
        red = self.vk.reduce
        return [T.vdup(self.ref(red.dst), _identity(red.fn, red.dtype), F("twp"), red.dtype, note="identity")]

    def pad_init(self) -> list[Stmt]:
        """Zero every slot of the tile buffers loads fill: rows shorter than the padded row leave bytes the
        prologue reads (and never stores)."""
        out: list[Stmt] = []
        for use in self.vk.inputs:
            p = self.vk.alloc.of[use.buf.id]
            if p.space == Space.FULL and self.vk.layouts[use.buf.id].cls in ("full", "rowvec"):
                for slot in range(self.t.slots(p.rotating)):
                    out.append(T.vdup(Ref(p.name, slot), 0, sy.mul(F("tr"), F("twp")), use.buf.dtype,
                                      note="zero the row padding"))
        return out

    def scalars(self) -> list[Stmt]:
        out = self.pad_init()
        for use in self.vk.inputs:
            lay = self.vk.layouts[use.buf.id]
            if lay.cls == "scalar" and not lay.outer_dependent:
                out.append(T.load(self.ref(use.buf), GmRef(in_param(use.index), 0), use.buf.dtype, 1, note=use.buf.what))
        return out

    def task_scalars(self) -> list[Stmt]:
        """Inputs that are one value per outer index (a (4, 1, 1) operand of a (4, R, C) domain): loaded per task."""
        out: list[Stmt] = []
        for use in self.vk.inputs:
            lay = self.vk.layouts[use.buf.id]
            if lay.cls == "scalar" and lay.outer_dependent:
                out.append(T.load(self.ref(use.buf), self.gm_in(use, 0, 0), use.buf.dtype, 1,
                                  note=f"{use.buf.what} of this task"))
        return out

    def task_body(self) -> list[Stmt]:
        per = sy.ceildiv(F("T"), F(BLOCKS))
        begin = sy.mul(F(CORE), per)
        count = sy.max_(0, sy.min_(per, sy.add(F("T"), sy.mul(-1, begin))))
        body = self.task_lets(sy.add(begin, F("i"))) + self.task_scalars() + self.init_acc()
        body += self.rows_loop("rb", 0, F("NRB"))
        body += self.finish()
        return self.scalars() + [Loop("i", 0, count, 1, body, note="tasks of this core")]

    def split_body(self) -> list[Stmt]:
        vk, g = self.vk, self.t.split
        red = vk.reduce
        dt = red.dtype
        size = itemsize(dt)
        per = sy.ceildiv(F("NRB"), g)
        part = sy.mod(F(CORE), g)
        lo = sy.mul(F("part_i"), per)
        hi = sy.min_(F("NRB"), sy.add(F("part_lo"), per))
        body: list[Stmt] = self.scalars() + self.task_lets(sy.floordiv(F(CORE), g))
        body += [Let("part_i", part), Let("part_lo", lo)] + self.task_scalars()
        body += self.init_acc() + self.rows_loop("rb", F("part_lo"), hi)
        twp_bytes = sy.mul(F("twp"), size)
        body.append(T.store(GmRef(SCRATCH, sy.mul(F(CORE), twp_bytes)), self.ref(red.dst), dt, F("twp"),
                            note="this core's partial"))
        body.append(T.sync_all("all partials are in GM"))
        gather = Ref("gather")
        fold: list[Stmt] = [T.load(gather, GmRef(SCRATCH, sy.mul(sy.mul(F("task"), g), twp_bytes)), dt,
                                   sy.mul(g, F("twp")), note="the task's partials")]
        for j in range(1, g):
            fold.append(T.vbinary(_COMBINE[red.fn], self.ref(red.dst), gather if j == 1 else self.ref(red.dst),
                                  gather.at(sy.mul(j, twp_bytes)), F("twp"), dt, note=f"fold partial {j}"))
        if g == 1:
            fold.append(T.vcopy(self.ref(red.dst), gather, F("twp"), dt))
        fold += self.finish()
        body.append(When(sy.eq(part, 0), fold))
        return body


def tilings(vk: ColumnKernel, chip: Chip, buffer_num: int, cores: int) -> list[ColumnTiling]:
    cores = max(1, min(cores, chip.aiv_cores))
    d = vk.domain
    C = d.C if isinstance(d.C, int) else 4096
    R = d.R if isinstance(d.R, int) else 4096
    outer = d.outer_count if isinstance(d.outer_count, int) else 1
    cap = chip.max_repeats * chip.vector_repeat_bytes
    out = []
    quantum = max(1, chip.gm_peak_align // vk.min_itemsize)  # task widths start on the GM peak boundary
    for bn in buffer_nums(buffer_num):
        widths = {min(C, w) for w in (C, 128, 256, 512, 1024, 2048) if w <= max(C, 1)} | {C}
        for w in sorted(widths):
            w = w if w >= C or w < quantum else w // quantum * quantum
            best = 0
            tr = 1
            while tr <= max(1, 2 * R):
                t = ColumnTiling(tr, w, 1, bn, cores)
                bufs = _buffers(vk, t, chip)
                if all(x.slot_bytes <= cap for x in bufs) and sum(x.nbytes for x in bufs) <= chip.ub_bytes:
                    best = tr
                    tr *= 2
                else:
                    break
            if best < 1:
                continue
            tasks = outer * -(-C // w)
            for tr in {best, max(1, best // 4)}:
                out.append(ColumnTiling(tr, w, 1, bn, cores))
                g = cores // tasks if tasks < cores else 1
                # a split launches tasks x g blocks: only when the task count is known now (a symbolic
                # one could exceed the cores at launch; whole tasks per core scale with any count)
                if g > 1 and isinstance(d.C, int) and isinstance(d.outer_count, int):
                    split = ColumnTiling(tr, w, min(g, -(-R // tr)), bn, cores)
                    if split.split > 1 and _fits(vk, split, chip, cap):
                        out.append(split)
    return out


def ub_bytes(vk: ColumnKernel, t: ColumnTiling, chip: Chip) -> int:
    return sum(b.nbytes for b in _buffers(vk, t, chip))


def _fits(vk: ColumnKernel, t: ColumnTiling, chip: Chip, cap: int) -> bool:
    bufs = _buffers(vk, t, chip)
    return all(x.slot_bytes <= cap for x in bufs) and sum(x.nbytes for x in bufs) <= chip.ub_bytes


def _analyze(job: Job, chip: Chip) -> list[ColumnKernel]:
    """`job.options`: "rows", the reduction's input shape; "reduced", the axes it reduces."""
    return [analyze(job.label, job.subject, job.options["rows"], tuple(job.options["reduced"]))]


def _symbols(vk: ColumnKernel) -> set[str]:
    return free_symbols(list(vk.domain.shape)) | kernel_symbols(vk.kg)


TEMPLATE = Template("column", "aiv", ColumnTiling, _analyze, tilings, schedule, _symbols, need=ub_bytes)
