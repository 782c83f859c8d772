"""The rewrite driver (pyasc/ge/rewrite.py): rules as data, one sweep at a time to a fixpoint, fire counts."""
from __future__ import annotations

import pytest

from pyasc.ge import optimize
from pyasc.ge.edit import build_node
from pyasc.ge.rewrite import Replacement, RewriteRule, apply_rules
from pyasc.ge.simplify import remove_dead
from pyasc.ir import Graph, TensorType, format_graph, verify

F32 = TensorType((4, 8), "float32")


def chain(*ops: str) -> tuple[Graph, list]:
    g = Graph()
    v = g.add_input(F32, "x")
    values = [v]
    for op in ops:
        v = g.add(op, [v]).out()
        values.append(v)
    g.set_outputs([v])
    return g, values


def expected(*ops: str) -> str:
    return format_graph(chain(*ops)[0])


def drop(op: str) -> RewriteRule:
    """op(x) -> x"""
    return RewriteRule(f"drop_{op}", op, lambda node, rw: node.inputs[0])


def test_rules_fire_until_nothing_changes_and_are_counted():
    g, _ = chain("neg", "relu", "neg", "exp")
    # relu -> abs (a new node), abs(neg(y)) -> abs(y): the second rule sees the first one's node in the next sweep
    rules = [
        RewriteRule("relu_to_abs", "relu", lambda node, rw: build_node("abs", node.inputs)),
        RewriteRule("abs_of_neg", "abs",
                    lambda node, rw: build_node("abs", node.inputs[0].node.inputs)
                    if node.inputs[0].node.op == "neg" else None),
    ]
    stats = apply_rules(g, rules)
    verify(g)
    remove_dead(g)  # the driver rewrites; dead nodes are DCE's
    assert format_graph(g) == expected("abs", "neg", "exp")
    assert dict(stats) == {"relu_to_abs": 1, "abs_of_neg": 1} and stats.changed
    assert not apply_rules(g, rules).changed  # at the fixpoint nothing fires


def test_a_sweep_redirects_later_readers_and_graph_outputs():
    g, _ = chain("neg", "neg", "relu", "relu")
    stats = apply_rules(g, [drop("relu"), drop("neg")])
    assert format_graph(g) == expected() and stats == {"drop_relu": 2, "drop_neg": 2}


def test_rules_are_offered_in_order_and_the_first_result_wins():
    g, _ = chain("relu")
    seen: list[str] = []

    def no(node, rw):
        seen.append("no")
        return None

    stats = apply_rules(g, [RewriteRule("no", "relu", no), drop("relu"), RewriteRule("never", "relu", no)])
    assert seen == ["no"] and stats == {"drop_relu": 1}


def test_a_rule_matches_by_a_registry_predicate():
    g, _ = chain("exp", "relu", "tanh")
    apply_rules(g, [RewriteRule("drop_expensive", lambda op: op.expensive, lambda node, rw: node.inputs[0])])
    assert format_graph(g) == expected("relu")


def test_an_in_place_rule_keeps_the_node_and_counts_once_per_change():
    g, values = chain("relu", "exp")
    x = values[0]

    def skip_relu(node, rw):
        if node.inputs[0].node.op != "relu":
            return None
        node.inputs = [node.inputs[0].node.inputs[0]]
        return True

    stats = apply_rules(g, [RewriteRule("skip_relu", "exp", skip_relu)])
    assert stats == {"skip_relu": 1} and g.nodes[-1].inputs == [x]


def test_a_replacement_of_another_type_is_not_applied():
    g, _ = chain("relu")
    bad = RewriteRule("to_f16", "relu", lambda node, rw: build_node("cast", node.inputs, {"dtype": "float16"}))
    before = format_graph(g)
    assert not apply_rules(g, [bad]).changed and format_graph(g) == before


def test_a_chain_rule_replaces_the_chain_end_and_removes_the_chain():
    g, values = chain("neg", "relu", "exp", "tanh")

    def neg_to_exp(node, rw):
        # neg -> relu -> exp becomes one sigmoid placed where exp was; uses are read from the index
        relu = rw.uses.sole_reader(node.out())
        exp = rw.uses.sole_reader(relu.out()) if relu is not None else None
        if relu is None or relu.op != "relu" or exp is None or exp.op != "exp":
            return None
        new = build_node("sigmoid", node.inputs)
        return Replacement(new.values, [new], at=exp, removed=[node, relu])

    stats = apply_rules(g, [RewriteRule("neg_relu_exp", "neg", neg_to_exp)])
    verify(g)
    assert format_graph(g) == expected("sigmoid", "tanh") and stats == {"neg_relu_exp": 1}


def test_max_sweeps_bounds_a_rule_that_never_settles():
    g, _ = chain("relu")
    flip = RewriteRule("flip", None, lambda node, rw: build_node("abs" if node.op == "relu" else "relu", node.inputs)
                       if node.op in ("relu", "abs") else None)
    assert apply_rules(g, [flip], max_sweeps=3) == {"flip": 3}
    with pytest.raises(ValueError, match="apply_rules needs max_sweeps >= 1, got 0"):
        apply_rules(g, [flip], max_sweeps=0)


def test_rule_counts_appear_in_the_pass_log():
    g, values = chain("relu")
    x = values[0]
    one = g.const(1.0, "float32")
    g.set_outputs([g.add("mul", [g.add("mul", [values[-1], one]).out(), one]).out(), g.add("add", [x, x]).out(),
                   g.add("add", [x, x]).out()])
    result = optimize(g, opt_level=1)
    log = result.pass_report(times=False).splitlines()
    assert "algebraic_simplify: changed -> stage algebraic_simplify  stats: mul_identity=2" in log
    assert "cse: changed -> stage cse  stats: cse=1" in log
    record = next(r for r in result.pass_log if r.name == "cse")
    assert record.stats == {"cse": 1}
