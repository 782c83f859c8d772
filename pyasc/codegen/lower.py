"""The one driver: a `Job` becomes a device kernel through named stages run by the GE's pass manager.

The stages are passes over a `JobState` (so the pass manager's instruments apply: timing, verification after
each stage, statistics, stage capture for dumps):

    analyze   the job's template analyses its subject (one analysis per mode it can lower it with)
    tile      each analysis's tiling records ranked by the cost model's score of their schedules (built and
              scored only as far as the template's lower bound cannot rule them out)
    sync      flags for the cheapest candidate whose flags fit the chip's event ids: the tiling choice
    emit      the simulator program of the chosen schedule and its flags

`verify_state` checks what each stage leaves (every candidate scheduled and scored, every schedule's tile
ops naming its buffers on pipes its core has, a choice with flags within the event ids, a valid program).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import CompileError
from ..ge.passes import Pass, PassContext, PassManager
from ..target import CORE_PIPES, Chip, MixedKernel, Program
from .device import CodegenOptions
from . import schedules
from .lowering import no_lowering
from .schedule import Ref, TileSchedule
from .template import Job, Template, Unsupported, template_floors
from .templates import TEMPLATES
from .tiling import NoLegalTiling, Ranking, TilingChoice, pick, scoring_dims


@dataclass
class JobState:
    """What the stages know about one job so far."""

    job: Job
    template: Template
    chip: Chip
    options: CodegenOptions
    analyses: list[Any] = field(default_factory=list)
    owner: dict[Any, Any] = field(default_factory=dict)        # tiling record -> the analysis it tiles
    ranking: Ranking | None = None                              # the candidates in the cost model's order
    dims: dict[str, int] = field(default_factory=dict)          # the dims the scores are for
    nominal: bool = False
    choice: TilingChoice | None = None
    program: Program | MixedKernel | None = None

    def fail(self, why: str) -> CompileError:
        """The located error for a job no tiling lowers (the op and line the router recorded)."""
        return no_lowering(self.job.op, self.job.label, self.job.loc, why)

    def text(self) -> str:
        """The state as a readable stage (what a dump shows after each stage)."""
        lines = [f"{self.job.label} [{self.template.name}]"]
        if self.choice is not None:
            lines += ["  " + x for x in self.choice.text().splitlines()]
        elif self.ranking is not None:
            lines += [f"  candidate: {c.line()}" for c in self.ranking.known()[:5]]
        if self.program is not None:
            lines.append(f"  program: {len(self.program)} instructions")
        return "\n".join(lines)


class Analyze(Pass):
    name, opt_level = "analyze", 0

    def run(self, st: JobState, ctx: PassContext) -> bool:
        checked = st.job.checked
        if checked is not None and checked.chip is st.chip:   # the router analysed it already
            st.analyses = list(checked.analyses)
            ctx.stats["analyses"] += len(st.analyses)
            return True
        try:
            st.analyses = list(st.template.analyze(st.job, st.chip))
        except Unsupported as e:
            raise st.fail(str(e)) from None
        ctx.stats["analyses"] += len(st.analyses)
        return True


class Tile(Pass):
    name, opt_level = "tile", 0

    def run(self, st: JobState, ctx: PassContext) -> bool:
        t, chip = st.template, st.chip
        cores = st.options.core_cap(chip.cores_of(t.core_type))
        params = []
        checked = st.job.checked
        for a in st.analyses:
            made = None if checked is None else checked.tilings_of(a, chip, st.options.buffer_num, cores)
            for tiling in made if made is not None else t.tilings(a, chip, st.options.buffer_num, cores):
                st.owner.setdefault(tiling, a)
                params.append(tiling)
        if not params:
            raise st.fail(f"no tile of this kernel fits the chip's memories ({chip.name})")
        symbols = set().union(*(t.symbols(a) for a in st.analyses))
        st.dims, st.nominal = scoring_dims(sorted(symbols))
        bound, floors = None, []
        if t.bound is not None:
            bound = _on_owner(t.bound, st)
            floors = [_on_owner(f, st) for f in template_floors(t)]
        same = _on_owner(t.same, st) if t.same is not None else None
        st.ranking = Ranking(params, lambda p: t.schedule(st.owner[p], p, chip), chip, st.dims, bound, floors,
                             same=same)
        ctx.stats["candidates"] += len(params)
        return True


def _on_owner(f: Callable[[Any, Any, Chip, Mapping[str, int]], Any], st: JobState) -> Callable[[Any], Any]:
    """A template's bound (or floor, or `same`) of a tiling, on the analysis that made it and the dims scored."""
    return lambda p: f(st.owner[p], p, st.chip, st.dims)


class Sync(Pass):
    name, opt_level = "sync", 0

    def run(self, st: JobState, ctx: PassContext) -> bool:
        try:
            assert st.ranking is not None
            st.choice = pick(st.ranking, st.chip, st.dims, st.options.sync, st.nominal,
                             st.options.decision(st.job.label), st.options.runners_up)
        except NoLegalTiling as e:
            raise st.fail(str(e)) from None
        assert st.choice.chosen.sync is not None
        ctx.stats["flags"] += st.choice.chosen.sync.flags
        ctx.stats["scored"] += len(st.ranking.scored)
        ctx.stats["rejected"] += len(st.choice.rejected)
        return True


class Emit(Pass):
    name, opt_level = "emit", 0

    def run(self, st: JobState, ctx: PassContext) -> bool:
        assert st.choice is not None and st.choice.chosen.schedule is not None and st.choice.chosen.sync is not None
        st.program = schedules.build(st.choice.chosen.schedule, st.choice.chosen.sync, st.chip)
        ctx.stats["instructions"] += len(st.program)
        return True


STAGES: tuple[type[Pass], ...] = (Analyze, Tile, Sync, Emit)


def stage_names() -> list[str]:
    return [p.name for p in STAGES]


def verify_state(st: JobState) -> str | None:
    """What the stages must leave behind; a description of the first problem, or None."""
    for c in st.ranking.scored if st.ranking is not None else ():
        if c.schedule is None or c.score is None:
            return f"candidate {c.line()} has no schedule or score"
        for side in schedules.sides(c.schedule):
            problem = verify_schedule(side, st.chip)
            if problem:
                return problem
    if st.choice is not None:
        sync = st.choice.chosen.sync
        if sync is None:
            return "the chosen tiling has no sync plan"
        over = {pair: n for pair, n in sync.ids_used.items() if n > st.chip.event_ids}
        if over:
            return f"flags use more event ids than the chip's {st.chip.event_ids}: {over}"
    if st.program is not None:
        st.program.validate()
    return None


def verify_schedule(s: TileSchedule, chip: Chip) -> str | None:
    """Every tile op names declared buffers and runs on a pipe of the schedule's core type."""
    names = {b.name for b in s.buffers}
    pipes = CORE_PIPES[s.core_type]
    for op in s.ops():
        if op.pipe not in pipes:
            return f"schedule {s.name}: {op.instr} runs on pipe {op.pipe}, which an {s.core_type} core lacks"
        for r in (*op.reads, *op.writes):
            if isinstance(r, Ref) and r.buffer not in names:
                return f"schedule {s.name}: {op.instr} uses buffer {r.buffer!r}, which it does not declare"
    return None


def lower(job: Job, chip: Chip, options: CodegenOptions, instruments: list | None = None) -> tuple[JobState,
                                                                                                   PassContext]:
    """Run the stages on `job`: its final state (with its tiling choice and program) and the stages' context
    (their log, times and statistics)."""
    st = JobState(job, TEMPLATES[job.template], chip, options)
    ctx = PassContext(opt_level=0, chip=chip, instruments=list(instruments or []))
    PassManager([p() for p in STAGES], verifier=verify_state).run(st, ctx)
    return st, ctx
