"""Pass manager: enable rule, subgraphs, verify-after-change, fixpoint groups, stage hooks."""
from __future__ import annotations

import pytest

from pyasc.ge import (
    FunctionPass,
    PassContext,
    PassFailure,
    PassGroup,
    PassInstrument,
    PassManager,
    PassRecord,
    PassVerificationError,
    StageCapture,
    VerifyInstrument,
)
from pyasc.ir import Graph, TensorType

F32 = TensorType((4, 8), "float32")


def small_graph() -> Graph:
    g = Graph("main")
    x = g.add_input(F32, "x")
    y = g.add("relu", [x]).out()
    g.set_outputs([g.add("add", [y, x]).out()])
    return g


def graph_with_if() -> Graph:
    def branch(name: str, op: str) -> Graph:
        b = Graph(name)
        x = b.add_input(F32, "x")
        b.set_outputs([b.add(op, [x]).out()])
        return b

    g = Graph("main")
    cond = g.add_input(TensorType((), "bool"), "c")
    x = g.add_input(F32, "x")
    node = g.add("If", [cond, x], {"then_branch": branch("then", "relu"), "else_branch": branch("else", "exp")})
    g.set_outputs([node.out()])
    return g


def recorder(name: str, opt_level: int = 1, changes: bool = False, root_only: bool = False):
    calls: list[str] = []

    def fn(graph: Graph, ctx: PassContext) -> bool:
        calls.append(graph.name)
        return changes

    return FunctionPass(name, fn, opt_level=opt_level, root_only=root_only), calls


# ---- enable rule ---------------------------------------------------------------------


@pytest.mark.parametrize("level, runs", [(0, False), (1, False), (2, True), (3, True)])
def test_pass_runs_iff_opt_level_reaches_its_level(level, runs):
    p, calls = recorder("p", opt_level=2)
    PassManager([p]).run(small_graph(), PassContext(opt_level=level))
    assert bool(calls) == runs


def test_disabled_pass_is_skipped_even_at_opt_level_3():
    p, calls = recorder("p", opt_level=0)
    ctx = PassContext(opt_level=3, disabled_passes=frozenset({"p"}))
    PassManager([p]).run(small_graph(), ctx)
    assert calls == []
    assert ctx.log[-1].name == "p" and ctx.log[-1].skipped == "disabled"


def test_required_pass_runs_below_its_opt_level():
    p, calls = recorder("p", opt_level=3)
    PassManager([p]).run(small_graph(), PassContext(opt_level=0, required_passes=frozenset({"p"})))
    assert calls == ["main"]


def test_disabled_wins_over_required():
    p, calls = recorder("p", opt_level=0)
    ctx = PassContext(disabled_passes=frozenset({"p"}), required_passes=frozenset({"p"}))
    PassManager([p]).run(small_graph(), ctx)
    assert calls == []


def test_skipped_pass_is_logged_with_reason():
    p, _ = recorder("p", opt_level=3)
    ctx = PassContext(opt_level=1)
    PassManager([p]).run(small_graph(), ctx)
    assert ctx.log[0].skipped == "opt_level 1 < 3"


def test_disabling_a_group_skips_its_members():
    p, calls = recorder("p", opt_level=0)
    group = PassGroup("g", [p])
    PassManager([group]).run(small_graph(), PassContext(disabled_passes=frozenset({"g"})))
    assert calls == []


# ---- subgraphs -------------------------------------------------------------------------


def test_pass_runs_on_root_and_every_subgraph_parent_first():
    p, calls = recorder("p", opt_level=0)
    PassManager([p]).run(graph_with_if(), PassContext())
    assert calls == ["main", "else", "then"]  # branches in attribute-name order


def test_root_only_pass_runs_once():
    p, calls = recorder("p", opt_level=0, root_only=True)
    PassManager([p]).run(graph_with_if(), PassContext())
    assert calls == ["main"]


def test_change_in_a_subgraph_counts_as_change():
    def fn(graph, ctx):
        return graph.name == "then"

    ctx = PassContext()
    changed = PassManager([FunctionPass("p", fn, opt_level=0)]).run(graph_with_if(), ctx)
    assert changed and ctx.log[-1].changed


# ---- verify after change --------------------------------------------------------------------


def corrupt(graph: Graph, ctx: PassContext) -> bool:
    graph.nodes.reverse()  # uses before definitions
    return True


def test_verifier_error_names_the_pass_and_the_passes_before_it():
    first, _ = recorder("first", opt_level=0)
    second, _ = recorder("second", opt_level=0, changes=False)
    bad = FunctionPass("corrupting_pass", corrupt, opt_level=0)
    with pytest.raises(PassVerificationError) as info:
        PassManager([first, second, bad]).run(small_graph(), PassContext())
    err = info.value
    assert err.pass_name == "corrupting_pass"
    assert err.passes_before == ["first", "second"]
    text = str(err)
    assert "'corrupting_pass'" in text and "first, second" in text and "topological" in text


def test_verifier_runs_only_after_a_change():
    def corrupt_silently(graph, ctx):
        graph.nodes.reverse()
        return False  # lies: the manager trusts it, so nothing is verified

    PassManager([FunctionPass("quiet", corrupt_silently, opt_level=0)]).run(small_graph(), PassContext())


def test_verification_can_be_switched_off():
    PassManager([FunctionPass("bad", corrupt, opt_level=0)]).run(small_graph(), PassContext(verify=False))


def test_verifier_error_inside_a_subgraph_is_caught():
    def corrupt_then(graph, ctx):
        if graph.name == "then":
            graph.outputs = []  # the If's results no longer match its branch
            return True
        return False

    with pytest.raises(PassVerificationError, match="corrupt_then"):
        PassManager([FunctionPass("corrupt_then", corrupt_then, opt_level=0)]).run(graph_with_if(), PassContext())


# ---- fixpoint groups ---------------------------------------------------------------------------


def test_fixpoint_group_repeats_until_nothing_changes():
    remaining = [3]

    def shrinking(graph, ctx):
        remaining[0] -= 1
        return remaining[0] >= 0

    p = FunctionPass("shrink", shrinking, opt_level=0)
    ctx = PassContext(verify=False)
    changed = PassManager([PassGroup("fix", [p], fixpoint=True, max_steps=10)]).run(small_graph(), ctx)
    assert changed
    runs = [r for r in ctx.log if r.name == "shrink"]
    assert len(runs) == 4 and [r.changed for r in runs] == [True, True, True, False]


def test_fixpoint_group_stops_at_the_step_cap_and_notes_it():
    p, calls = recorder("always", opt_level=0, changes=True)
    ctx = PassContext(verify=False)
    PassManager([PassGroup("fix", [p], fixpoint=True, max_steps=5)]).run(small_graph(), ctx)
    assert len(calls) == 5
    assert any(r.name == "fix" and "step cap" in r.note for r in ctx.log)


def test_fixpoint_cap_comes_from_the_knob_when_not_given():
    p, calls = recorder("always", opt_level=0, changes=True)
    ctx = PassContext(verify=False, knobs={"max_fixpoint_steps": 3})
    PassManager([PassGroup("fix", [p], fixpoint=True)]).run(small_graph(), ctx)
    assert len(calls) == 3


def test_plain_group_runs_once():
    p, calls = recorder("always", opt_level=0, changes=True)
    PassManager([PassGroup("once", [p])]).run(small_graph(), PassContext(verify=False))
    assert len(calls) == 1


def test_group_rejects_a_step_cap_below_one():
    with pytest.raises(ValueError, match="max_steps >= 1, got 0"):
        PassGroup("g", [], fixpoint=True, max_steps=0)


# ---- stage hooks ----------------------------------------------------------------------------------


def test_stage_hook_called_only_for_passes_that_changed_the_graph():
    seen: list[str] = []
    quiet, _ = recorder("quiet", opt_level=0, changes=False)
    loud, _ = recorder("loud", opt_level=0, changes=True)
    ctx = PassContext(on_stage=lambda name, g: seen.append(name))
    PassManager([quiet, loud, quiet, loud]).run(small_graph(), ctx)
    assert seen == ["loud", "loud.2"]  # unique stage names for repeated changes
    assert [r.stage for r in ctx.log] == [None, "loud", None, "loud.2"]


def test_stage_hook_gets_the_root_graph_for_a_subgraph_change():
    seen: list[str] = []

    def fn(graph, ctx):
        return graph.name == "else"

    ctx = PassContext(on_stage=lambda name, g: seen.append(g.name))
    PassManager([FunctionPass("p", fn, opt_level=0)]).run(graph_with_if(), ctx)
    assert seen == ["main"]


def test_pass_times_are_recorded_per_pass():
    p, _ = recorder("p", opt_level=0)
    ctx = PassContext()
    PassManager([p, p]).run(small_graph(), ctx)
    assert set(ctx.pass_times) == {"p"} and ctx.pass_times["p"] >= 0.0
    assert ctx.passes_run() == ["p", "p"]


def test_base_pass_without_run_says_so():
    from pyasc.ge import Pass

    class Empty(Pass):
        name = "empty"
        opt_level = 0

    with pytest.raises(PassFailure, match="pass 'empty' failed") as info:
        PassManager([Empty()]).run(small_graph(), PassContext())
    assert isinstance(info.value.__cause__, NotImplementedError)
    assert "'empty' does not implement run" in str(info.value.__cause__)


def test_a_group_run_on_its_own_still_iterates_to_its_fixpoint():
    remaining = [2]

    def shrinking(graph, ctx):
        remaining[0] -= 1
        return remaining[0] >= 0

    group = PassGroup("fix", [FunctionPass("shrink", shrinking, opt_level=0)], fixpoint=True)
    ctx = PassContext(verify=False)
    assert group.run(small_graph(), ctx)
    assert [r.changed for r in ctx.log if r.name == "shrink"] == [True, True, False]


# ---- failures and instruments ---------------------------------------------------------------------


def test_an_exception_in_a_pass_names_the_pass_and_the_passes_before_it():
    first, _ = recorder("first", opt_level=0)
    skipped, _ = recorder("skipped", opt_level=3)

    def explode(graph, ctx):
        return {}["missing"]

    ctx = PassContext(opt_level=1)
    with pytest.raises(PassFailure) as info:
        PassManager([first, skipped, FunctionPass("exploding", explode, opt_level=0)]).run(small_graph(), ctx)
    err = info.value
    assert err.pass_name == "exploding" and err.passes_before == ["first"]
    assert isinstance(err.error, KeyError) and err.__cause__ is err.error
    assert str(err) == "pass 'exploding' failed (passes run before it, in order: first): KeyError: 'missing'"
    assert ctx.log[-1].name == "exploding" and ctx.log[-1].error == "KeyError: 'missing'"


class Recording(PassInstrument):
    def __init__(self):
        self.events: list[str] = []

    def enter(self, ctx):
        self.events.append("enter")

    def exit(self, ctx):
        self.events.append("exit")

    def before_pass(self, p, unit, ctx):
        self.events.append(f"before {p.name}")

    def after_pass(self, p, unit, ctx, record):
        self.events.append(f"after {p.name} changed={record.changed} stage={record.stage}")


def test_instruments_see_the_run_and_every_pass_in_order():
    quiet, _ = recorder("quiet", opt_level=0)
    loud, _ = recorder("loud", opt_level=0, changes=True)
    skipped, _ = recorder("skipped", opt_level=3)
    inst = Recording()
    PassManager([quiet, skipped, loud]).run(small_graph(), PassContext(opt_level=0, verify=False, instruments=[inst]))
    assert inst.events == ["enter", "before quiet", "after quiet changed=False stage=None",
                           "before loud", "after loud changed=True stage=loud", "exit"]


def test_instruments_exit_even_when_a_pass_fails():
    inst = Recording()
    boom = FunctionPass("boom", lambda g, ctx: 1 / 0, opt_level=0)
    with pytest.raises(PassFailure):
        PassManager([boom]).run(small_graph(), PassContext(instruments=[inst]))
    assert inst.events == ["enter", "before boom", "exit"]


def test_passes_over_a_unit_that_is_not_a_graph():
    # what code generation does: its stages are passes over its own state, captured by its own printer
    state = {"tiles": [], "synced": False}

    def tile(unit, ctx):
        unit["tiles"].append(4)
        return True

    def sync(unit, ctx):
        unit["synced"] = True
        return True

    capture = StageCapture(lambda unit: f"tiles={unit['tiles']} synced={unit['synced']}")
    seen = []
    ctx = PassContext(opt_level=0, instruments=[capture], on_stage=lambda name, unit: seen.append(unit is state))
    manager = PassManager([FunctionPass("tiling", tile, opt_level=0), FunctionPass("sync", sync, opt_level=0)],
                          verifier=lambda unit: None if unit["tiles"] else "no tiles")
    assert manager.run(state, ctx)
    assert capture.stages == [("tiling", "tiles=[4] synced=False"), ("sync", "tiles=[4] synced=True")]
    assert seen == [True, True] and ctx.passes_run() == ["tiling", "sync"]


def test_a_custom_verifier_rejecting_a_unit_names_the_pass():
    ctx = PassContext(opt_level=0, instruments=[])
    with pytest.raises(PassVerificationError, match="after pass 'clear'.*: no tiles"):
        PassManager([FunctionPass("clear", lambda unit, c: True, opt_level=0)],
                    verifier=lambda unit: None if unit["tiles"] else "no tiles").run({"tiles": []}, ctx)
    # the default verifier checks graphs only: another unit passes through it untouched
    VerifyInstrument().after_pass(FunctionPass("x", lambda u, c: True), {"tiles": []}, ctx,
                                  PassRecord("x", changed=True))


def test_stage_capture_renders_graph_stages_with_dot():
    from pyasc.ir import format_graph, to_dot

    capture = StageCapture(format_graph, to_dot)
    loud, _ = recorder("loud", opt_level=0, changes=True)
    g = small_graph()
    PassManager([loud, loud]).run(g, PassContext(instruments=[capture]))
    assert [name for name, _ in capture.stages] == ["loud", "loud.2"] == [name for name, _ in capture.dots]
    assert capture.stages[0][1] == format_graph(g) and capture.dots[0][1].startswith("digraph")
