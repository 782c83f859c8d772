"""Pass instruments: what the pass manager does around every pass, as pluggable objects (TVM's PassInstrument).

An instrument sees the manager's run start and end (`enter`, `exit`) and
every pass run (`before_pass`, `after_pass`, the latter with the pass's
`PassRecord`: whether it changed the unit, its stage name, its statistics).
The manager runs, in this order: `TimingInstrument` (always), a
`VerifyInstrument` (when `ctx.verify`), the context's own `ctx.instruments`
(e.g. a `StageCapture`), and last a `StageHook` calling `ctx.on_stage`.

The unit a pass runs over is usually an `ir.Graph`, but need not be: code
generation runs its stages (tiling, sync insertion, emission, host code) as
passes over its own state object, with its own verifier and a `StageCapture`
whose `render` turns that state into text.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from ..ir import Graph, verify

if TYPE_CHECKING:  # pragma: no cover
    from .passes import Pass, PassContext, PassRecord


class PassInstrument:
    """Hooks around a pass manager's run and each pass in it; every hook does nothing by default."""

    def enter(self, ctx: "PassContext") -> None:
        """The manager starts running its passes."""

    def exit(self, ctx: "PassContext") -> None:
        """The manager is done (also when a pass failed)."""

    def before_pass(self, p: "Pass", unit: Any, ctx: "PassContext") -> None:
        """`p` is about to run on `unit` (it passed the enable rule)."""

    def after_pass(self, p: "Pass", unit: Any, ctx: "PassContext", record: "PassRecord") -> None:
        """`p` ran; `record.changed` / `record.stage` / `record.stats` say what it did."""


class PassError(RuntimeError):
    """A pass failed (`PassFailure`) or left an invalid unit behind (`PassVerificationError`): a compiler bug.

    `pass_name` names it and `passes_before` every pass that ran before it, in order.
    """

    def __init__(self, pass_name: str, passes_before: list[str], message: str):
        self.pass_name = pass_name
        self.passes_before = list(passes_before)
        super().__init__(message)


class PassFailure(PassError):
    """A pass raised an exception; `error` is that exception (also the `__cause__`)."""

    def __init__(self, pass_name: str, passes_before: list[str], error: BaseException):
        self.error = error
        super().__init__(pass_name, passes_before, f"pass {pass_name!r} failed (passes run before it, in order: "
                         f"{', '.join(passes_before) if passes_before else 'none'}): {type(error).__name__}: {error}")

    def __reduce__(self):
        return (PassFailure, (self.pass_name, self.passes_before, self.error))


class PassVerificationError(PassError):
    """The verifier rejected the unit right after a pass changed it."""

    def __init__(self, pass_name: str, passes_before: list[str], problem: BaseException | str):
        self.problem = problem
        before = ", ".join(passes_before) if passes_before else "none"
        super().__init__(pass_name, passes_before,
                         f"the graph is invalid after pass {pass_name!r} (passes run before it, in order: "
                         f"{before}): {problem}")

    def __reduce__(self):
        return (PassVerificationError, (self.pass_name, self.passes_before, self.problem))


class TimingInstrument(PassInstrument):
    """Wall time of every pass run: `record.seconds`, summed per pass name in `ctx.pass_times`."""

    def __init__(self) -> None:
        self._start: list[float] = []

    def before_pass(self, p: "Pass", unit: Any, ctx: "PassContext") -> None:
        self._start.append(time.perf_counter())

    def after_pass(self, p: "Pass", unit: Any, ctx: "PassContext", record: "PassRecord") -> None:
        record.seconds = time.perf_counter() - self._start.pop()
        ctx.pass_times[p.name] = ctx.pass_times.get(p.name, 0.0) + record.seconds


def _verify_graph(unit: Any) -> Any:
    return verify(unit) if isinstance(unit, Graph) else None


class VerifyInstrument(PassInstrument):
    """After a pass that changed the unit, run `verifier(unit)` (default: the IR verifier, for graphs).

    A verifier raises, or returns a description of the problem; either becomes
    a `PassVerificationError` naming the pass and the passes before it.
    """

    def __init__(self, verifier: Callable[[Any], Any] | None = None):
        self.verifier = verifier or _verify_graph

    def after_pass(self, p: "Pass", unit: Any, ctx: "PassContext", record: "PassRecord") -> None:
        if not record.changed:
            return
        before = ctx.passes_run()[:-1]
        try:
            problem = self.verifier(unit)
        except Exception as e:  # the verifier's own error type; wrapped so the pass is named
            raise PassVerificationError(p.name, before, e) from e
        if problem:
            raise PassVerificationError(p.name, before, str(problem))


class StageCapture(PassInstrument):
    """Snapshots of the unit after every pass that changed it: `stages` [(stage, render(unit))], `dots` likewise.

    `render` makes the text (`ir.format_graph` for graphs, the codegen's own
    printer for its state); `dot` (optional) a Graphviz view.
    """

    def __init__(self, render: Callable[[Any], str], dot: Callable[[Any], str] | None = None):
        self.render = render
        self.dot = dot
        self.stages: list[tuple[str, str]] = []
        self.dots: list[tuple[str, str]] = []

    def after_pass(self, p: "Pass", unit: Any, ctx: "PassContext", record: "PassRecord") -> None:
        if record.stage is None:
            return
        self.stages.append((record.stage, self.render(unit)))
        if self.dot is not None:
            self.dots.append((record.stage, self.dot(unit)))


class StageHook(PassInstrument):
    """Calls `fn(stage, unit)` after every pass that changed the unit (the root unit, for a subgraph change)."""

    def __init__(self, fn: Callable[[str, Any], None]):
        self.fn = fn

    def after_pass(self, p: "Pass", unit: Any, ctx: "PassContext", record: "PassRecord") -> None:
        if record.stage is not None:
            self.fn(record.stage, unit)
