"""A recorded launch replayed at another trip count of one loop, without running it again (untimed replays).

A device loop's program (a runtime loop run inside one kernel) repeats a loop body a number of times given by
a tiling field, and a launch at a new trip count would otherwise be run and recorded afresh, every iteration
through the full model. When the program guarantees that its memory actions at trip count n are those before
the loop, n copies of one iteration's, and those after, a recording at one trip count gives the replay at
any other: `trip_loop` is that analysis (static, on the program), `Recording` notes where each run of the
loop began and ended (`LoopMarks`), and `at_trip` builds the steps of the replay at a new count from them.

What the analysis asks of a tiling field and its loop (anything else: no such replay, a full run):
- the field is read once, by a `tiling` instruction whose register nothing else writes, and that register is
  read only as the stop of one `loop` that starts at 0 with step 1;
- the loop's variable is read nowhere, and its body writes no register and holds no control flow (no loop,
  if, barrier or cross-core wait): every iteration runs the same instructions on the same registers, and
  nothing after the loop sees how many iterations ran.
Each run of the loop must also have run at least once, in one group (cores in lockstep) with no other
group's actions in between (`at_trip` checks the marks); the new trip count must be at least 1 (so the
stores of the body reach the same GM bytes). Only the memory actions carry over: a replay that asks for
timing at a trip count it was not recorded at runs the full model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from . import isa

_NO_BODY = (isa.Loop, isa.EndLoop, isa.If, isa.Else, isa.EndIf, isa.SyncAll, isa.CrossWait, isa.ScalarLoad)


@dataclass(frozen=True)
class TripLoop:
    """The loop whose trip count is tiling field `field`: its `loop` instruction's index."""

    field: str
    loop: int


def trip_loop(program: Any, structure: Any) -> Optional[TripLoop]:
    """The one tiling field of `program` a recording may be replayed at another value of (see the module
    docstring), or None."""
    instrs = program.instructions
    found: list[TripLoop] = []
    written: dict[str, int] = {}
    readers: dict[str, list[int]] = {}
    for k, ins in enumerate(instrs):
        for r in ins.regs_written():
            written[r.name] = written.get(r.name, 0) + 1
        for r in ins.regs_read():
            readers.setdefault(r.name, []).append(k)
    by_field: dict[str, list[int]] = {}
    for k, ins in enumerate(instrs):
        if isinstance(ins, isa.Tiling):
            by_field.setdefault(ins.field, []).append(k)
    for name, sites in by_field.items():
        if len(sites) != 1:
            continue
        reg = instrs[sites[0]].dst.name
        uses = readers.get(reg, [])
        if written.get(reg) != 1 or len(uses) != 1:
            continue
        k = uses[0]
        loop = instrs[k]
        if not isinstance(loop, isa.Loop) or not isinstance(loop.stop, isa.Reg) or loop.stop.name != reg:
            continue
        if loop.start != 0 or loop.step != 1 or readers.get(loop.var.name) or written.get(loop.var.name) != 1:
            continue
        body = instrs[k + 1:structure.match[k]]
        if any(isinstance(i, _NO_BODY) or i.regs_written() for i in body):
            continue
        found.append(TripLoop(name, k))
    return found[0] if len(found) == 1 else None


@dataclass
class LoopMarks:
    """Where each run of the marked loop sat in a recording: (group, first action, actions after the first
    iteration, actions at its end, trip count) per run, in the order they ran."""

    loop: int
    runs: list[list] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        """Every run of the loop ran at least once and ended (a source for `at_trip`)."""
        return bool(self.runs) and all(r[4] >= 1 and r[3] is not None for r in self.runs)

    def begin(self, g: Any, at: int, trip: int) -> None:
        self.runs.append([g, at, None, None, trip])

    def next(self, at: int) -> None:
        run = self.runs[-1]
        if run[2] is None:
            run[2] = at

    def end(self, at: int) -> None:
        run = self.runs[-1]
        if run[2] is None:
            run[2] = at
        run[3] = at


def at_trip(marks: LoopMarks, actions: list, steps: list, trip: int) -> Optional[list]:
    """The steps of the recorded launch at trip count `trip` (one per action it would record), or None where
    the marks do not show the shape the analysis promised (then the launch runs in full)."""
    if trip < 1 or not marks.runs:
        return None
    out: list = []
    done = 0
    for g, begin, first, end, recorded in marks.runs:
        if first is None or end is None or recorded < 1 or begin < done:
            return None
        one = first - begin
        if end - begin != one * recorded:
            return None
        if any(actions[j][1] is not g for j in range(begin, end)):  # another group's actions in between
            return None
        out.extend(steps[done:begin])
        out.extend(steps[begin:first] * trip)
        done = end
    out.extend(steps[done:])
    return out
