"""Loops unrolled at compile time, as statements of the function builder (a mixin of builder.FunctionBuilder):
`for` over compile-time items, `while` on compile-time values, and `break` / `continue` in them.

Each iteration runs the body again in the same scope (`_iteration`); the loops being unrolled are recorded
(`_loops`, `_unrolled`) so an early `return` under a tensor condition can take the rest of the function,
remaining iterations included (builder.rest_tails / run_rest). A `break` or `continue` reached by compile-time
control flow unwinds the body with `LoopExitSignal`; one under a tensor `if` ends that branch like a `return`
(branches.LoopExit) and the `if` takes the rest of the function. Long static loops whose body keeps its shapes
become runtime loops instead (loops.py decides); every unrolled iteration counts against the unroll budget.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Sequence

from ..tensor_type import Sym
from . import branches, conditions, loops
from .values import describe, is_tensor


class LoopExitSignal(Exception):
    """A `break` or `continue` reached by compile-time control flow: unwinds the body to its unrolled loop."""

    def __init__(self, stmt: ast.stmt):
        super().__init__()
        self.stmt = stmt


@dataclass
class Unrolled:
    """A `for` being unrolled: its frame (the body's index in the frame stack), depth in `_loops`, items,
    and the index of the item after the one being run (an early return's rest runs those)."""

    loop: ast.For
    body_frame: int
    loop_depth: int
    items: list
    next: int = 0
    with_else: bool = True  # False when re-run for an early return's rest, whose list holds the `else`


class UnrolledLoops:
    """The loop statements of builder.FunctionBuilder (which holds `_loops`, `_unrolled`, `_frames`, `_floor`,
    `state` and the evaluation methods they use)."""

    def _rerun(self, loop: ast.For, items: list) -> None:
        """The remaining iterations of an unrolled loop, as `_s_For` runs them (without its `else`)."""
        self.count_unroll(len(items), loop)
        self._loops.append(loop)
        unrolled = Unrolled(loop, len(self._frames), len(self._loops), items, with_else=False)
        self._unrolled.append(unrolled)
        try:
            self._run_items(loop, unrolled)
        finally:
            self._loops.pop()
            self._unrolled.pop()

    def _run_items(self, loop: ast.For, unrolled: Unrolled) -> bool:
        """The loop's body once per item left; whether every item ran (no `break`, no `return`)."""
        for k, item in enumerate(unrolled.items):
            unrolled.next = k + 1
            self.assign(loop.target, item)
            if self._iteration(loop.body) or self.returned:
                return False
        return True

    def _s_For(self, s: ast.For) -> None:
        it = self.eval(s.iter)
        runtime, note = loops.wants_runtime_loop(self, it, s)
        if runtime == "try" and note is not None:  # a long static loop whose body keeps its shapes: a Loop node
            if loops.try_runtime_for(self, s, it, note):
                return
        elif runtime:  # a launch-time trip count, runtime_range, or past the unroll budget: a Loop node
            loops.runtime_for(self, s, it, note)
            return
        forced = isinstance(it, loops.RangeSpec)  # pyasc.static_range: unrolled whatever the budget
        items = list(it.static_range()) if forced else self.iterate(it, s.iter)
        if not forced:
            self.count_unroll(len(items), s)
        self._loops.append(s)
        unrolled = Unrolled(s, len(self._frames), len(self._loops), items)
        self._unrolled.append(unrolled)
        try:
            if not self._run_items(s, unrolled):
                return
            unrolled.next = len(items)
            self.exec_block(s.orelse)
        finally:
            self._loops.pop()
            self._unrolled.pop()

    def _iteration(self, body: Sequence[ast.stmt]) -> bool:
        """One unrolled iteration of a loop's body; whether a `break` ended the loop."""
        try:
            self.exec_block(body)
        except LoopExitSignal as e:
            return isinstance(e.stmt, ast.Break)
        return False

    def _s_Break(self, s: ast.Break) -> None:
        self._loop_exit(s)

    def _s_Continue(self, s: ast.Continue) -> None:
        self._loop_exit(s)

    def _loop_exit(self, s: ast.stmt) -> None:
        word = "break" if isinstance(s, ast.Break) else "continue"
        unrolled = self._loops and any(u.loop is self._loops[-1] for u in self._unrolled)
        if unrolled and self._floor[1] < len(self._loops):
            raise LoopExitSignal(s)  # compile-time control flow reached it: the loop is unrolled up to here
        if unrolled:  # under a tensor `if` inside the loop: that `if` takes the rest of the function (branches.py)
            self.returned, self.return_value, self.return_node = True, branches.LoopExit(self._loops[-1], s), s
            return
        raise self.error(f"`{word}` in a loop that runs at launch (a Loop node) is not supported; put the exit in "
                         "the `while` condition", s)

    def _s_While(self, s: ast.While) -> None:
        cond = conditions.test_value(self, s.test)
        if is_tensor(cond) or isinstance(cond, Sym):
            loops.runtime_while(self, s, cond)  # a tensor condition: a Loop node the host runs
            return
        # a compile-time condition: run at compile time like an unrolled `for`, one iteration at a time
        self._loops.append(s)
        self._unrolled.append(Unrolled(s, len(self._frames), len(self._loops), [], with_else=False))
        try:
            while self.truth(cond, s.test):
                self.count_unroll(1, s)
                if self._iteration(s.body) or self.returned:
                    return
                cond = conditions.test_value(self, s.test)
                if is_tensor(cond) or isinstance(cond, Sym):
                    raise self.error(f"the `while` condition `{self.text(s.test)}` was known at compile time "
                                     f"and is now {describe(cond)}, known only at run time: make it a tensor "
                                     "before the loop (then the loop runs at launch)", s.test)
        finally:
            self._loops.pop()
            self._unrolled.pop()
        self.exec_block(s.orelse)

    def count_unroll(self, n: int, loop: ast.AST) -> None:
        total = self.state.unrolled + n
        if total > self.state.unroll_budget and isinstance(loop, ast.While):
            raise self.error(
                f"`while {self.text(loop.test)}` is known at compile time and still true after "
                f"{self.state.unroll_budget} iterations unrolled in total (the unroll budget): a loop that never "
                "ends, or one to run at launch: make its condition a tensor, or raise the budget with "
                "`@pyasc.kernel(unroll_budget=...)`", loop.test)
        if total > self.state.unroll_budget:
            if isinstance(loop, ast.For):
                header = f"for {ast.unparse(loop.target)} in {self.text(loop.iter)}"
                at: ast.AST = loop.iter
            else:
                header, at = self.text(loop), loop
            raise self.error(
                f"unrolling `{header}` ({n} iterations) would exceed the unroll budget of "
                f"{self.state.unroll_budget} iterations in total ({self.state.unrolled} unrolled before it); "
                "loops are unrolled at compile time: use fewer iterations, or raise the budget with "
                "`@pyasc.kernel(unroll_budget=...)`"
                + (f"; the {self.state.loop_exits} `break`/`continue` under tensor conditions so far each copy the "
                   "rest of the function into both branches of an If (a `while` loop with the exit in its test "
                   "runs at launch instead)" if self.state.loop_exits else ""),
                at,
            )
        self.state.unrolled = total
