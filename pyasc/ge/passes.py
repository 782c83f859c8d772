"""Pass manager: passes, pass context, groups iterated to a fixpoint, instruments, failures that name the pass.

Rules (after TVM's `PassContext` / `PassInstrument`, GE's `PassManager`,
MLIR's `--verify-each` and torch.fx's pass infra; see
reference/graph-optimizer-references.md §2):

- enable rule: a pass named in `disabled_passes` is skipped; one named in
  `required_passes` runs; otherwise it runs iff `ctx.opt_level >= pass.opt_level`.
  A group is a pass too: disabling a group skips everything in it.
- a pass runs over a *unit*: an `ir.Graph` (the optimiser) or any other state
  object (code generation's stages). On a graph it runs on the root and then
  on every subgraph (If branches), parents before children, unless it is
  `root_only`; any other unit it gets once.
- each run reports whether it changed anything; the manager records it
  (`PassRecord`) and names the change a stage: unique within one context, the
  first change by pass `p` is stage "p", later ones "p.2", ...
- instruments (ge/instruments.py) do everything around a pass: timing, the
  verifier after each change (`ctx.verify`), stage capture, the
  `ctx.on_stage(stage_name, root_unit)` hook, and whatever `ctx.instruments` adds;
- an exception from a pass becomes a `PassFailure` naming the pass and every
  pass that ran before it (chained to the original); a verifier rejection a
  `PassVerificationError`, likewise; a `CompileError` (the user's mistake, located
  at their line) passes through unchanged;
- a `PassGroup(fixpoint=True)` repeats its passes until a round changes
  nothing, at most `max_steps` rounds (then it stops and notes it in the log).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..target import Chip
from ..errors import CompileError
from ..ir import Graph
from .capacity import CapacityFn
from .instruments import PassError, PassFailure, PassInstrument, StageHook, TimingInstrument, VerifyInstrument
from .state import OptimizerState

DEFAULT_MAX_FIXPOINT_STEPS = 8


@dataclass
class PassRecord:
    """One entry of the pass log: a pass that ran (or was skipped, with the reason)."""

    name: str
    changed: bool = False
    seconds: float = 0.0
    skipped: str | None = None      # "disabled" / "opt_level N < M" / None when it ran
    stage: str | None = None        # the stage name when it changed the graph
    note: str = ""                  # a remark about a group, e.g. "stopped at the step cap" (not a run)
    stats: dict[str, int] = field(default_factory=dict)  # what the pass counted: rule name -> times fired, ...
    error: str | None = None        # the exception that made it fail, when it did


@dataclass
class PassContext:
    opt_level: int = 3
    disabled_passes: frozenset[str] = frozenset()
    required_passes: frozenset[str] = frozenset()
    chip: Chip | None = None               # a simulator ChipConfig (None: the default preset); hardware numbers come from it
    knobs: dict[str, Any] = field(default_factory=dict)
    state: OptimizerState = field(default_factory=OptimizerState)  # what passes hand to later passes
    on_stage: Callable[[str, Any], None] | None = None      # called after each pass that changed the unit
    verify: bool = True            # run the verifier after every pass that changed the unit
    instruments: list[PassInstrument] = field(default_factory=list)  # more instruments (stage capture, ...)
    capacity: CapacityFn | None = None  # what fits on the chip (None: ge.capacity's estimate for `chip`)
    log: list[PassRecord] = field(default_factory=list)     # every pass considered, in order
    pass_times: dict[str, float] = field(default_factory=dict)  # seconds per pass name (summed over runs)
    stats: Counter = field(default_factory=Counter)  # the running pass's statistics (MLIR's pass statistics)

    def __post_init__(self) -> None:
        self.disabled_passes = frozenset(self.disabled_passes)
        self.required_passes = frozenset(self.required_passes)

    def knob(self, name: str, default: Any) -> Any:
        return self.knobs.get(name, default)

    def enabled(self, p: "Pass") -> tuple[bool, str | None]:
        """TVM's rule; returns (runs?, reason when it does not)."""
        if p.name in self.disabled_passes:
            return False, "disabled"
        if p.name in self.required_passes:
            return True, None
        if self.opt_level >= p.opt_level:
            return True, None
        return False, f"opt_level {self.opt_level} < {p.opt_level}"

    def passes_run(self) -> list[str]:
        return [r.name for r in self.log if r.skipped is None and not r.note]


class Pass:
    name: str = "pass"
    opt_level: int = 1             # runs when ctx.opt_level >= opt_level (unless disabled/required)
    root_only: bool = False        # True: runs once on the root graph instead of on every subgraph

    def run(self, unit: Any, ctx: PassContext) -> bool:
        """Transform `unit` (a graph, or another pass unit) in place; return whether anything changed."""
        raise NotImplementedError(f"pass {self.name!r} does not implement run()")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, opt_level={self.opt_level})"


class FunctionPass(Pass):
    """A pass made from a function `fn(unit, ctx) -> changed` (handy for small passes and tests)."""

    def __init__(self, name: str, fn: Callable[[Any, PassContext], bool], opt_level: int = 1,
                 root_only: bool = False):
        self.name = name
        self.fn = fn
        self.opt_level = opt_level
        self.root_only = root_only

    def run(self, unit: Any, ctx: PassContext) -> bool:
        return bool(self.fn(unit, ctx))


class PassGroup(Pass):
    """A named sequence of passes, optionally repeated until a round changes nothing.

    The group's own opt_level gates the whole group (default 0: each member
    decides for itself). The step cap is `max_steps`, or the knob
    "max_fixpoint_steps", or DEFAULT_MAX_FIXPOINT_STEPS.
    """

    def __init__(self, name: str, passes: Sequence[Pass], *, fixpoint: bool = False,
                 max_steps: int | None = None, opt_level: int = 0):
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"a pass group needs max_steps >= 1, got {max_steps}")
        self.name = name
        self.passes = list(passes)
        self.fixpoint = fixpoint
        self.max_steps = max_steps
        self.opt_level = opt_level

    def run(self, unit: Any, ctx: PassContext) -> bool:
        """Standalone use: the same as running a PassManager holding just this group."""
        return PassManager([self]).run(unit, ctx)


class PassManager:
    """Runs a list of passes (and groups) over a unit, with the context's instruments around each pass.

    `verifier`: what the verify instrument checks a changed unit with (default:
    the IR verifier for graphs; code generation passes its own).
    """

    def __init__(self, passes: Sequence[Pass], *, verifier: Callable[[Any], Any] | None = None):
        self.passes = list(passes)
        self.verifier = verifier

    def run(self, unit: Any, ctx: PassContext) -> bool:
        instruments = self._instruments(ctx)
        for inst in instruments:
            inst.enter(ctx)
        try:
            changed = False
            for p in self.passes:
                changed |= self._run(p, unit, ctx, instruments)
            return changed
        finally:
            for inst in instruments:
                inst.exit(ctx)

    def _instruments(self, ctx: PassContext) -> list[PassInstrument]:
        out: list[PassInstrument] = [TimingInstrument()]
        if ctx.verify:
            out.append(VerifyInstrument(self.verifier))
        out.extend(ctx.instruments)
        if ctx.on_stage is not None:
            out.append(StageHook(ctx.on_stage))
        return out

    # -- one pass or group ----------------------------------------------------
    def _run(self, p: Pass, unit: Any, ctx: PassContext, instruments: list[PassInstrument]) -> bool:
        runs, reason = ctx.enabled(p)
        if not runs:
            ctx.log.append(PassRecord(p.name, skipped=reason))
            return False
        if isinstance(p, PassGroup):
            return self._run_group(p, unit, ctx, instruments)
        before = ctx.passes_run()
        record = PassRecord(p.name)
        ctx.log.append(record)
        ctx.stats = Counter()
        for inst in instruments:
            inst.before_pass(p, unit, ctx)
        try:
            changed = bool(_run_everywhere(p, unit, ctx) if isinstance(unit, Graph) and not p.root_only
                           else p.run(unit, ctx))
        except (PassError, CompileError):
            raise  # a pass manager inside named the failing pass; a user's mistake is reported at their line
        except Exception as e:
            record.error = f"{type(e).__name__}: {e}"
            raise PassFailure(p.name, before, e) from e
        record.changed = changed
        record.stats = dict(sorted(ctx.stats.items()))
        if changed:
            record.stage = _stage_name(p.name, ctx)
        for inst in instruments:
            inst.after_pass(p, unit, ctx, record)
        return changed

    def _run_group(self, group: PassGroup, unit: Any, ctx: PassContext, instruments: list[PassInstrument]) -> bool:
        cap = group.max_steps or int(ctx.knob("max_fixpoint_steps", DEFAULT_MAX_FIXPOINT_STEPS))
        rounds = cap if group.fixpoint else 1
        changed_any = False
        for step in range(rounds):
            changed = False
            for p in group.passes:
                changed |= self._run(p, unit, ctx, instruments)
            changed_any |= changed
            if not changed:
                break
            if group.fixpoint and step == rounds - 1:
                ctx.log.append(PassRecord(group.name, note=f"stopped at the step cap ({cap} rounds) "
                                                            "while its passes still changed the graph"))
        return changed_any


def _run_everywhere(p: Pass, graph: Graph, ctx: PassContext) -> bool:
    """Run `p` on `graph`, then on the subgraphs that still exist afterwards (parents first)."""
    changed = bool(p.run(graph, ctx))
    for node in list(graph.nodes):
        for key in sorted(node.subgraphs):
            changed |= _run_everywhere(p, node.attrs[key], ctx)
    return changed


def _stage_name(name: str, ctx: PassContext) -> str:
    count = sum(1 for r in ctx.log if r.name == name and r.stage is not None) + 1
    return name if count == 1 else f"{name}.{count}"


def walk_passes(passes: Iterable[Pass]) -> list[Pass]:
    """Every pass and group in `passes`, groups before their members, in order."""
    out: list[Pass] = []
    for p in passes:
        out.append(p)
        if isinstance(p, PassGroup):
            out.extend(walk_passes(p.passes))
    return out
