"""Multi-output launches: independent kernels of one template, one after the other in one launch (GE's
`horizontal_fusion`: products of one A; the same vector kernel on several inputs).

Every part is what its base template (the cube's `matmul`, the `vector` template) would launch alone, all with
the same tiling: the parts have the same shapes, so the same tiling fits each and their schedules differ only in
the GM parameters they name. The launch runs their bodies in turn on the same cores, buffers and fields; part p's
GM parameters are renamed to the launch's (`Horizontal.params`: an operand the parts share, such as the products'
A, is one parameter read by each; after the first part it comes from L2). The flags between the parts come from
the sync analysis over the whole body, like any other schedule's; the tiling is chosen by the cost model's score
of the whole launch.

`MIXED_GROUP`: plain products of one A and, last, a mixed launch (a product of the same shape and its epilogue)
whose epilogue reads their results (SwiGLU: silu(x @ Wg) * (x @ Wu)). The cube cores run the plain products'
block loops with the mixed part's cube tiling, every core meets at an all-core barrier (their results are in GM,
in workspace scratch when nothing else reads them), then the mixed part runs as it would alone. With A's producer
(a prologue) the vector cores compute A first and the plain products run after its barrier too.

`PROLOGUE_GROUP`: plain products of one A and A's producer: the vector cores compute A into the launch's
workspace, every core meets at an all-core barrier, then the cube cores run the products reading A there
(phases, as templates/conv_launch.py runs a conv's weight conversion).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ... import symbolic as sy
from ...target import Chip, itemsize
from .. import tileops as T
from ..schedule import GmParam, GmRef, Loop, MixedSchedule, Stmt, TileOp, TileSchedule, When
from ..template import Job, Template, Tiling, Unsupported
from ..tiling import scoring_dims
from . import matmul, mixed, mixed_prologue, vector
from .matmul import CubeMatmul
from .matmul_tiling import MatmulTiling
from .mixed import MixedAnalysis, MixedTiling
from .mixed_prologue import WSA, Prologue
from .vector_kernel import VectorTiling


@dataclass(frozen=True)
class Horizontal:
    """The launch's parts, in order: each one's job as it would launch alone, and its GM parameter -> the
    launch's (every parameter of its schedule)."""

    name: str
    parts: tuple[Job, ...]
    params: tuple[Mapping[str, str], ...]


@dataclass(frozen=True)
class HorizontalAnalysis:
    group: Horizontal
    analyses: tuple[Any, ...]        # each part's analysis in the same mode


def _analyze(base: Template, job: Job, chip: Chip) -> list[HorizontalAnalysis]:
    g: Horizontal = job.subject
    if len(g.parts) < 2:
        raise Unsupported("a multi-output launch needs two parts or more")
    per_part = [base.analyze(part, chip) for part in g.parts]
    if len({len(a) for a in per_part}) != 1:
        raise Unsupported("the parts of a multi-output launch lower in different modes")
    out = []
    for mode in zip(*per_part):
        for a in mode:
            why = base.admits(a, chip) if base.admits is not None else ""
            if why:
                raise Unsupported(why)
        ha = HorizontalAnalysis(g, tuple(mode))
        tilings = base.tilings(mode[0], chip, 1, 1)
        if tilings:
            _check_alike([base.schedule(a, tilings[0], chip) for a in mode])
        out.append(ha)
    return out


def _check_alike(scheds: Sequence[TileSchedule]) -> None:
    """The parts' schedules may share one launch: the same fields, blocks and buffers, no workspace."""
    first = scheds[0]
    for s in scheds:
        if s.fields != first.fields or s.blocks != first.blocks or s.buffers != first.buffers:
            raise Unsupported("the parts' schedules differ in their fields, blocks or buffers")
        if s.scratch or s.l2_resident is not None:
            raise Unsupported("a part has a GM workspace of its own")


def renamed(body: Sequence[Stmt], names: Mapping[str, str]) -> list[Stmt]:
    """A copy of `body` whose GM operands name `names[param]` (every GM parameter it names must be mapped)."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Loop):
            out.append(Loop(s.var, s.start, s.stop, s.step, renamed(s.body, names), s.note))
        elif isinstance(s, When):
            out.append(When(s.cond, renamed(s.body, names)))
        elif isinstance(s, TileOp):
            args = {k: GmRef(names[v.param], v.offset) if isinstance(v, GmRef) else v for k, v in s.args.items()}
            out.append(replace(s, args=args))
        else:
            out.append(s)
    return out


def _schedule(base: Template, ha: HorizontalAnalysis, t: Tiling, chip: Chip) -> TileSchedule:
    g = ha.group
    parts = [base.schedule(a, t, chip) for a in ha.analyses]
    first = parts[0]
    body: list[Stmt] = []
    params: dict[str, GmParam] = {}
    for s, names in zip(parts, g.params):
        body += renamed(s.body, names)
        for p in s.params:
            params.setdefault(names[p.name], GmParam(names[p.name], p.dtype, p.role))
    ordered = sorted(params.values(), key=_param_order)
    notes = [f"{len(parts)} parts in one launch, one after the other on the same cores and buffers", *first.notes]
    sched = TileSchedule(g.name, first.core_type, ordered, dict(first.fields), first.blocks, list(first.buffers), body,
                         notes)
    sched.l2_miss = first.l2_miss
    return sched


def _param_order(p: GmParam) -> tuple:
    """Inputs, then outputs, by number; then any other parameter (a workspace) by name."""
    digits = p.name.lstrip("inout")
    if p.role in ("in", "out") and digits.isdigit():
        return (p.role != "in", int(digits), "")
    return (2, 0, p.name)


def group_template(name: str, base: Template) -> Template:
    """The multi-output template over `base`: bounds and needs are one part's (the launch does at least one
    part's work on the same buffers, so they stay a lower bound and the need)."""
    def first(fn: Any) -> Any:
        return None if fn is None else lambda ha, *rest: fn(ha.analyses[0], *rest)

    return Template(name, base.core_type, base.tiling_type, lambda job, chip: _analyze(base, job, chip),
                    lambda ha, *rest: base.tilings(ha.analyses[0], *rest),
                    lambda ha, t, chip: _schedule(base, ha, t, chip),
                    lambda ha: set().union(*(base.symbols(a) for a in ha.analyses)),
                    need=first(base.need), bound=first(base.bound), floor=first(base.floor))


MATMUL_GROUP = group_template("matmul_group", matmul.TEMPLATE)
VECTOR_GROUP = group_template("vector_group", vector.TEMPLATE)
#: base template name -> its multi-output template
GROUPS: dict[str, Template] = {"matmul": MATMUL_GROUP, "vector": VECTOR_GROUP}


# ---- products of one A whose last one's epilogue reads the others (SwiGLU: silu(x @ Wg) * (x @ Wu)) ----------


@dataclass(frozen=True)
class MixedGroupAnalysis:
    group: Horizontal              # parts: the plain products' cube jobs, then the mixed job reading their results
    cubes: tuple[CubeMatmul, ...]
    mixed: MixedAnalysis


def _mixed_group_analyze(job: Job, chip: Chip) -> list[MixedGroupAnalysis]:
    """The last part is a mixed launch (its cube product and epilogue); the others plain products of its shape,
    whose results its epilogue reads."""
    g: Horizontal = job.subject
    cubes = tuple(matmul.TEMPLATE.analyze(p, chip)[0] for p in g.parts[:-1])
    out = []
    for ma in mixed.TEMPLATE.analyze(g.parts[-1], chip):
        if ma.keep_product:
            raise Unsupported("the mixed part writes its product out")
        if any(replace(mk, name=ma.mk.name) != ma.mk for mk in cubes):
            raise Unsupported("the plain products differ from the mixed part's in shape, dtype or flags")
        out.append(MixedGroupAnalysis(g, cubes, ma))
    return out


def _mixed_group_schedule(ga: MixedGroupAnalysis, t: MixedTiling, chip: Chip) -> MixedSchedule:
    """The cube cores run the plain products' block loops first (with the mixed part's cube tiling: the same
    blocks per group as its epilogue walks), every core meets at an all-core barrier (the plain results are in
    GM), then the mixed part runs as it would alone."""
    g = ga.group
    ms = mixed.TEMPLATE.schedule(ga.mixed, t, chip)
    body: list[Stmt] = []
    aic_params: dict[str, GmParam] = {}
    for s, names in zip((matmul.schedule(mk, t.cube, chip) for mk in ga.cubes), g.params):
        body += renamed(s.body, names)
        aic_params.update({names[p.name]: replace(p, name=names[p.name]) for p in s.params})
    last = {**{p.name: p.name for side in ms.sides for p in side.params if p.role == "scratch"}, **g.params[-1]}
    aic_params.update({last[p.name]: replace(p, name=last[p.name]) for p in ms.aic.params})
    # with a prologue (the vector cores compute A, every core meets at a barrier, the cube reads A from the
    # workspace) the plain products run after that barrier, reading A there too (their names say so); the
    # mixed part's loads ahead of the barrier (its first B chunk, into the L1 slot the plain products use too)
    # move behind them, ahead of the second barrier
    aic_body, aiv_body = renamed(ms.aic.body, last), renamed(ms.aiv.body, last)
    i, j = (_after_barrier(b) if ms.prologue is not None else 0 for b in (aic_body, aiv_body))
    ahead, barrier = aic_body[:max(0, i - 1)], aic_body[max(0, i - 1):i]
    aic = replace(ms.aic, params=list(aic_params.values()), notes=list(ms.aic.notes),
                  body=barrier + body + ahead + [T.sync_all(note="the plain products are in GM: the epilogue may "
                                                                 "read them")] + aic_body[i:])
    aiv = replace(ms.aiv, params=[replace(p, name=last[p.name]) for p in ms.aiv.params], notes=list(ms.aiv.notes),
                  body=aiv_body[:j] + [T.sync_all(note="wait for the plain products")] + aiv_body[j:])
    # the cost model prices the cube's work ahead of the barrier in front of the pipeline when the launch has a
    # prologue (`schedules.score`): without one the vector cores have nothing to do first, an empty schedule
    # says so (with one, the plain products count in the cube's side of the pipeline: an estimate a little low)
    idle = ms.prologue or TileSchedule(f"{g.name}_idle", "aiv", [], {}, ms.aiv.blocks, [], [])
    notes = [f"{len(ga.cubes)} plain product(s) of the same A first on the cube cores, an all-core barrier, then "
             "the mixed launch whose epilogue reads them", *ms.notes]
    return replace(ms, aic=aic, aiv=aiv, prologue=idle, notes=notes)


def _after_barrier(body: Sequence[Stmt]) -> int:
    """The position after a side's first all-core barrier (the prologue's)."""
    return next(i for i, st in enumerate(body) if isinstance(st, TileOp) and st.instr == "sync_all") + 1


def _mixed_first(fn: Any) -> Any:
    return None if fn is None else lambda ga, *rest: fn(ga.mixed, *rest)


#: the mixed part's bounds stay lower bounds of the launch (it does more), its UB need is the launch's (its
#: coarse bound: the finer one follows the score of a launch without a prologue, which this one is not)
MIXED_GROUP = Template("mixed_group", "mix", MixedTiling, _mixed_group_analyze,
                       lambda ga, *rest: mixed.TEMPLATE.tilings(ga.mixed, *rest), _mixed_group_schedule,
                       lambda ga: mixed.TEMPLATE.symbols(ga.mixed), need=_mixed_first(mixed.TEMPLATE.need),
                       bound=_mixed_first(mixed.coarse_bound), floor=_mixed_first(mixed.floor))


# ---- plain products of one A and A's producer (RMSNorm before q/k/v): the vector cores first, then the cube --


@dataclass(frozen=True)
class PrologueGroup:
    """A's producer (its inputs are the launch's in0 and in(1 + parts + j)), then `group`'s products reading A
    from the launch's workspace (`WSA`)."""

    name: str
    prologue: Prologue
    group: Horizontal


@dataclass(frozen=True)
class PrologueGroupAnalysis:
    subject: PrologueGroup
    cubes: HorizontalAnalysis
    pro: Any                      # the prologue's VectorKernel


@dataclass(frozen=True)
class PhasedTiling(Tiling):
    cube: MatmulTiling
    prologue: VectorTiling
    buffer_num: int
    cores: int

    def describe(self) -> str:
        return f"{self.cube.describe()}; A's producer on the vector cores first: {self.prologue.describe()}"


def _prologue_group_analyze(job: Job, chip: Chip) -> list[PrologueGroupAnalysis]:
    pg: PrologueGroup = job.subject
    inner = replace(job, template=MATMUL_GROUP.name, subject=pg.group, checked=None)
    cubes = MATMUL_GROUP.analyze(inner, chip)
    pro = mixed_prologue.analyze(pg.name, pg.prologue, cubes[0].analyses[0].dtype, chip)
    return [PrologueGroupAnalysis(pg, c, pro) for c in cubes]


def _prologue_group_tilings(pa: PrologueGroupAnalysis, chip: Chip, buffer_num: int, cores: int
                            ) -> list[PhasedTiling]:
    """The products' tilings, each with the prologue's best tiling over the launch's vector cores (the whole
    UB is the prologue's: the cube's phase uses none)."""
    dims, _ = scoring_dims(sorted(_prologue_group_symbols(pa)))
    found: dict[int, VectorTiling | None] = {}
    out = []
    for ct in MATMUL_GROUP.tilings(pa.cubes, chip, buffer_num, min(cores, chip.aic_cores)):
        aivs = ct.cores * chip.group_aivs
        if aivs not in found:
            found[aivs] = mixed_prologue.tiling(mixed_prologue.candidates(pa.pro, chip, buffer_num, aivs, dims),
                                                chip.ub_bytes)
        if found[aivs] is not None:
            out.append(PhasedTiling(ct, found[aivs], ct.buffer_num, ct.cores))
    return out


def _prologue_group_schedule(pa: PrologueGroupAnalysis, t: PhasedTiling, chip: Chip) -> MixedSchedule:
    """The vector cores compute A into the workspace, every core meets at an all-core barrier (the cube cores
    need every row of A, from all the vector cores), then the cube cores run the products reading A there.
    Phases, not a pipeline: the launch saves the producer's start-up and its HBM round trip."""
    pg = pa.subject
    aic = MATMUL_GROUP.schedule(pa.cubes, t.cube, chip)
    groups = aic.blocks
    mk = pa.cubes.analyses[0]
    aic = replace(aic, params=[replace(p, role="scratch") if p.name == WSA else p for p in aic.params],
                  body=[T.sync_all(note="wait for A from the vector cores")] + aic.body)
    aic.scratch = {WSA: sy.mul(mk.M, mk.K, itemsize(mk.dtype))}
    pro = mixed_prologue.schedule(pa.pro, t.prologue, chip, 1 + len(pg.group.parts))
    aiv = replace(pro, blocks=sy.mul(groups, chip.group_aivs),
                  body=pro.body + [T.sync_all(note="A is in the workspace: the cube cores may read it")])
    notes = [f"{len(pg.group.parts)} products of A on the cube cores after the barrier"]
    return MixedSchedule(pg.name, aic, aiv, [], groups, notes)


def _prologue_group_symbols(pa: PrologueGroupAnalysis) -> set[str]:
    return MATMUL_GROUP.symbols(pa.cubes)


PROLOGUE_GROUP = Template("prologue_group", "mix", PhasedTiling, _prologue_group_analyze, _prologue_group_tilings,
                          _prologue_group_schedule, _prologue_group_symbols)
