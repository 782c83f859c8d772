"""Simplify group: constant folding, algebraic simplification, CSE, DCE (before/after, no-fire, equivalence)."""
from __future__ import annotations

import numpy as np
import pytest
from ge_equiv import check_equivalent, count, ops_of, run_passes

from pyasc.ge.simplify import CSE, DCE, AlgebraicSimplify, ConstantFolding, simplify_group
from pyasc.ir import Graph, TensorType

F32 = TensorType((4, 8), "float32")
F16 = TensorType((4, 8), "float16")
I32 = TensorType((4, 8), "int32")


def graph(*types: TensorType) -> tuple[Graph, list]:
    g = Graph("main")
    return g, [g.add_input(t, f"x{i}") for i, t in enumerate(types)]


def op(g: Graph, name: str, *inputs, **attrs):
    return g.add(name, list(inputs), attrs).out()


# ---- constant folding ------------------------------------------------------------------------


def fold_chain() -> Graph:
    g, (x,) = graph(TensorType((3,), "float32"))
    c = g.const(np.array([1.0, 2.0, 3.0], np.float32))
    two = g.const(np.float32(2.0))
    g.set_outputs([op(g, "add", x, op(g, "exp", op(g, "mul", c, two)))])
    return g


def test_fold_replaces_a_constant_chain_by_one_const():
    g, changed = check_equivalent(fold_chain, [ConstantFolding(), DCE()])
    assert changed
    assert ops_of(g) == ["Const", "add"]
    folded = g.nodes[1].attrs["value"]
    np.testing.assert_allclose(folded, np.exp(np.array([2.0, 4.0, 6.0], np.float32)), rtol=1e-6)
    assert folded.dtype == np.float32 and not folded.flags.writeable


def test_fold_casts_to_the_inferred_dtype():
    # int32 / int32 is float64 in numpy; the node (like the chip) says float32
    g, (x,) = graph(TensorType((2,), "float32"))
    q = op(g, "div", g.const(np.array([1, 3], np.int32)), g.const(np.int32(2)))
    g.set_outputs([op(g, "add", x, q)])
    run_passes(g, [ConstantFolding(), DCE()])
    value = g.nodes[1].attrs["value"]
    assert value.dtype == np.float32 and value.tolist() == [0.5, 1.5]


def test_fold_full_without_inputs():
    g, (x,) = graph(F32)
    g.set_outputs([op(g, "add", x, op(g, "full", shape=(4, 8), fill_value=1.5, dtype="float32"))])
    run_passes(g, [ConstantFolding()])
    assert ops_of(g) == ["Const", "add"]


def test_fold_does_not_fire_on_graph_inputs():
    g, (x,) = graph(F32)
    g.set_outputs([op(g, "exp", op(g, "mul", x, g.const(np.float32(2.0))))])
    changed, _ = run_passes(g, [ConstantFolding()])
    assert not changed and ops_of(g) == ["Const", "mul", "exp"]


def test_fold_respects_the_size_cap():
    g, (x,) = graph(TensorType((100, 100), "float32"))
    big = op(g, "full", shape=(100, 100), fill_value=2.0, dtype="float32")
    g.set_outputs([op(g, "mul", x, big)])
    changed, _ = run_passes(g, [ConstantFolding()], knobs={"fold_max_elements": 9999})
    assert not changed and ops_of(g) == ["full", "mul"]
    changed, _ = run_passes(g, [ConstantFolding()], knobs={"fold_max_elements": 10000})
    assert changed and ops_of(g) == ["Const", "mul"]


def if_graph(cond_value=None) -> Graph:
    def branch(name: str, unary: str) -> Graph:
        b = Graph(name)
        x = b.add_input(F32, "x")
        b.set_outputs([op(b, "mul", op(b, unary, x), b.const(np.float32(3.0)))])
        return b

    g, ins = graph(*(([TensorType((), "bool")] if cond_value is None else []) + [F32]))
    cond = ins[0] if cond_value is None else g.const(np.bool_(cond_value))
    x = ins[-1]
    node = g.add("If", [cond, x], {"then_branch": branch("then", "exp"), "else_branch": branch("else", "neg")})
    g.set_outputs([op(g, "add", node.out(), x)])
    return g


@pytest.mark.parametrize("value, kept", [(True, "exp"), (False, "neg")])
def test_fold_inlines_the_branch_an_if_with_a_constant_condition_takes(value, kept):
    g, changed = check_equivalent(lambda: if_graph(value), [ConstantFolding(), DCE()])
    assert changed and count(g, "If") == 0
    assert ops_of(g) == [kept, "Const", "mul", "add"]
    assert all(n.graph is g for n in g.nodes)


def test_fold_keeps_an_if_with_a_tensor_condition():
    g = if_graph(None)
    changed, _ = run_passes(g, [ConstantFolding()])
    assert not changed and count(g, "If") == 1


# ---- algebraic simplification ------------------------------------------------------------------


def identity_case(kind: str) -> Graph:
    g, (x,) = graph(F32)
    one, zero = g.const(np.float32(1.0)), g.const(np.float32(0.0))
    y = {
        "x*1": lambda: op(g, "mul", x, one),
        "1*x": lambda: op(g, "mul", one, x),
        "x+0": lambda: op(g, "add", x, zero),
        "0+x": lambda: op(g, "add", zero, x),
        "x-0": lambda: op(g, "sub", x, zero),
        "x/1": lambda: op(g, "div", x, one),
        "x**1": lambda: op(g, "pow", x, one),
        "--x": lambda: op(g, "neg", op(g, "neg", x)),
        "cast same": lambda: op(g, "cast", x, dtype="float32"),
        "x*ones": lambda: op(g, "mul", x, g.const(np.ones((4, 8), np.float32))),
        "x*full(1)": lambda: op(g, "mul", x, op(g, "full", shape=(1, 8), fill_value=1.0, dtype="float32")),
        "x+broadcast 0": lambda: op(g, "add", x, op(g, "broadcast_to", zero, shape=(4, 8))),
        "transpose inverse": lambda: op(g, "transpose", op(g, "transpose", x, axes=(1, 0)), axes=(1, 0)),
        "reshape same": lambda: op(g, "reshape", x, shape=(4, -1)),
    }[kind]()
    g.set_outputs([op(g, "exp", y)])
    return g


@pytest.mark.parametrize("kind", ["x*1", "1*x", "x+0", "0+x", "x-0", "x/1", "x**1", "--x", "cast same",
                                  "x*ones", "x*full(1)", "x+broadcast 0", "transpose inverse", "reshape same"])
def test_algebraic_identity_becomes_the_operand(kind):
    g, changed = check_equivalent(lambda: identity_case(kind), [AlgebraicSimplify(), DCE()])
    assert changed
    assert ops_of(g) == ["exp"]
    assert g.nodes[-1].inputs[0].node.op == "Data"


def test_lossless_cast_round_trip_is_removed():
    def build():
        g, (x,) = graph(F16)
        g.set_outputs([op(g, "exp", op(g, "cast", op(g, "cast", x, dtype="float32"), dtype="float16"))])
        return g

    g, changed = check_equivalent(build, [AlgebraicSimplify(), DCE()])
    assert changed and ops_of(g) == ["exp"]


def test_lossy_cast_round_trip_is_kept():
    g, (x,) = graph(F32)
    g.set_outputs([op(g, "cast", op(g, "cast", x, dtype="float16"), dtype="float32")])
    changed, _ = run_passes(g, [AlgebraicSimplify()])
    assert not changed and ops_of(g) == ["cast", "cast"]


def test_square_becomes_a_multiply():
    def build():
        g, (x,) = graph(F32)
        g.set_outputs([op(g, "pow", x, g.const(np.float32(2.0)))])
        return g

    g, changed = check_equivalent(build, [AlgebraicSimplify(), DCE()])
    assert changed and ops_of(g) == ["mul"]
    mul = g.nodes[-1]
    assert mul.inputs[0] == mul.inputs[1] and mul.inputs[0].node.op == "Data"


def test_transposes_compose_into_one():
    def build():
        g, (x,) = graph(TensorType((2, 3, 4), "float32"))
        t = op(g, "transpose", op(g, "transpose", x, axes=(1, 0, 2)), axes=(0, 2, 1))
        g.set_outputs([t])
        return g

    g, changed = check_equivalent(build, [AlgebraicSimplify(), DCE()])
    assert changed and ops_of(g) == ["transpose"]
    assert tuple(g.nodes[-1].attrs["axes"]) == (1, 2, 0) and g.nodes[-1].inputs[0].node.op == "Data"


def test_reshapes_merge():
    def build():
        g, (x,) = graph(TensorType((2, 3, 4), "float32"))
        g.set_outputs([op(g, "reshape", op(g, "reshape", x, shape=(6, 4)), shape=(4, 6))])
        return g

    g, changed = check_equivalent(build, [AlgebraicSimplify(), DCE()])
    assert changed and ops_of(g) == ["reshape"] and g.nodes[-1].inputs[0].node.op == "Data"


def test_integer_times_zero_becomes_zeros():
    def build():
        g, (x,) = graph(I32)
        g.set_outputs([op(g, "sub", op(g, "mul", x, g.const(np.int32(0))), x)])
        return g

    g, changed = check_equivalent(build, [AlgebraicSimplify(), DCE()])
    assert changed and ops_of(g) == ["full", "sub"]


def no_fire_case(kind: str) -> Graph:
    g, (x,) = graph(F32)
    zero, one = g.const(np.float32(0.0)), g.const(np.float32(1.0))
    y = {
        "float x*0": lambda: op(g, "mul", x, zero),
        "broadcasting x+0": lambda: op(g, "add", op(g, "sum", x, axis=0), g.const(np.zeros((4, 8), np.float32))),
        # f16 * (f32 tensor 1) is f32: replacing it by the f16 operand would change the dtype
        "promoting x*1": lambda: op(g, "mul", op(g, "cast", x, dtype="float16"), one),
        "x*2": lambda: op(g, "mul", x, g.const(np.float32(2.0))),
        "0-x": lambda: op(g, "sub", zero, x),
        "x*nonuniform": lambda: op(g, "mul", x, g.const(np.array([1.0] * 7 + [2.0], np.float32))),
        "transpose pair not inverse": lambda: op(g, "transpose", op(g, "exp", op(g, "transpose", x)),
                                                 axes=(0, 1)),
        "neg of another unary": lambda: op(g, "neg", op(g, "abs", x)),
        # f16 ** (f32 2) is f32: x*x on the f16 operand would be f16
        "promoting x**2": lambda: op(g, "pow", op(g, "cast", x, dtype="float16"), g.const(np.float32(2.0))),
    }[kind]()
    g.set_outputs([y])
    return g


@pytest.mark.parametrize("kind", ["float x*0", "broadcasting x+0", "promoting x*1", "x*2", "0-x", "x*nonuniform",
                                  "neg of another unary", "promoting x**2"])
def test_algebraic_does_not_fire(kind):
    g = no_fire_case(kind)
    before = ops_of(g)
    changed, _ = run_passes(g, [AlgebraicSimplify()])
    assert not changed and ops_of(g) == before


def test_identity_transpose_is_removed_but_a_real_one_is_kept():
    g = no_fire_case("transpose pair not inverse")
    run_passes(g, [AlgebraicSimplify(), DCE()])
    assert ops_of(g) == ["transpose", "exp"]  # the (0, 1) transpose went, the real one stayed


# ---- CSE ----------------------------------------------------------------------------------------


def cse_graph() -> Graph:
    g, (x, y) = graph(F32, F32)
    a1 = op(g, "add", op(g, "exp", x), g.const(np.float32(1.0)))
    a2 = op(g, "add", op(g, "exp", x), g.const(np.float32(1.0)))
    d1, d2 = op(g, "sub", x, y), op(g, "sub", y, x)
    s0, s1 = op(g, "sum", x, axis=0, keepdims=True), op(g, "sum", x, axis=1, keepdims=True)
    g.set_outputs([op(g, "mul", a1, a2), op(g, "mul", d1, d2), op(g, "add", s0, s1)])
    return g


def test_cse_merges_identical_pure_nodes_transitively():
    g, changed = check_equivalent(cse_graph, [CSE(), DCE()])
    assert changed
    assert count(g, "exp") == 1 and count(g, "Const") == 1
    assert ops_of(g).count("add") == 2  # exp + 1 once, and s0 + s1
    first_mul = g.outputs[0].node
    assert first_mul.inputs[0] == first_mul.inputs[1]


def test_cse_keeps_different_operand_order_and_attrs():
    g = cse_graph()
    run_passes(g, [CSE(), DCE()])
    assert count(g, "sub") == 2  # x - y and y - x
    assert count(g, "sum") == 2  # axis 0 and axis 1


def test_cse_merges_commuted_operands_of_commutative_ops():
    def build():
        g, (x, y) = graph(F32, F32)
        g.set_outputs([op(g, "sub", op(g, "add", x, y), op(g, "add", y, x))])
        return g

    g, changed = check_equivalent(build, [CSE(), DCE()])
    assert changed and count(g, "add") == 1


def test_cse_does_not_fire_without_duplicates():
    g, (x,) = graph(F32)
    g.set_outputs([op(g, "exp", x), op(g, "log", x)])
    changed, _ = run_passes(g, [CSE()])
    assert not changed


def test_cse_and_dce_leave_impure_ops_alone(monkeypatch):
    # every registered op is pure today; an impure one (a random draw, a store) must neither be merged
    # with its twin nor dropped when unused
    import pyasc.ge.simplify as simplify

    monkeypatch.setattr(simplify, "is_pure", lambda node: node.op != "exp")
    g, (x,) = graph(F32)
    g.set_outputs([op(g, "add", op(g, "exp", x), op(g, "exp", x))])
    op(g, "exp", x)  # unused
    changed, _ = run_passes(g, [CSE(), DCE()])
    assert not changed and count(g, "exp") == 3
    # an If is as pure as its branches: one with an exp inside stays even when its result is unused
    g = if_graph(None)
    g.set_outputs([op(g, "relu", g.inputs[1].out())])
    changed, _ = run_passes(g, [DCE()])
    assert count(g, "If") == 1


def test_cse_does_not_merge_across_subgraphs():
    def branch(name: str) -> Graph:
        b = Graph(name)
        x = b.add_input(F32, "x")
        b.set_outputs([op(b, "exp", x)])
        return b

    g, (c, x) = graph(TensorType((), "bool"), F32)
    node = g.add("If", [c, x], {"then_branch": branch("then"), "else_branch": branch("else")})
    g.set_outputs([op(g, "add", node.out(), op(g, "exp", x))])
    changed, _ = run_passes(g, [CSE()])
    assert not changed and count(g, "exp") == 3


# ---- DCE ------------------------------------------------------------------------------------------


def test_dce_removes_unused_pure_nodes_and_keeps_unused_inputs():
    def build():
        g, (x, unused) = graph(F32, F32)
        op(g, "exp", op(g, "mul", x, x))  # dead
        g.set_outputs([op(g, "relu", x)])
        return g

    g, changed = check_equivalent(build, [DCE()])
    assert changed and ops_of(g) == ["relu"] and len(g.inputs) == 2


def test_dce_does_not_fire_on_a_live_graph():
    g, (x,) = graph(F32)
    g.set_outputs([op(g, "relu", op(g, "exp", x))])
    changed, _ = run_passes(g, [DCE()])
    assert not changed


def test_dce_removes_an_if_whose_results_are_unused():
    g = if_graph(None)
    x = g.inputs[1].out()
    g.set_outputs([op(g, "relu", x)])
    changed, _ = run_passes(g, [DCE()])
    assert changed and count(g, "If") == 0 and ops_of(g) == ["relu"]


def test_dce_reports_dead_code_it_removes_inside_a_branch():
    # the branch is pruned while DCE visits its parent; the pass must still say it changed the graph
    # (so the verifier runs and a stage is dumped), even though no If operand or result goes away
    g = if_graph(None)
    then = next(n for n in g.nodes if n.op == "If").attrs["then_branch"]
    op(then, "tanh", then.inputs[0].out())  # dead
    stages: list[str] = []
    changed, _ = run_passes(g, [DCE()], on_stage=lambda name, _g: stages.append(name))
    assert changed and stages == ["dce"] and count(g, "tanh") == 0
    changed, _ = run_passes(g, [DCE()])
    assert not changed


def two_output_if() -> Graph:
    def branch(name: str, first: str) -> Graph:
        b = Graph(name)
        x = b.add_input(F32, "x")
        y = b.add_input(F32, "y")
        b.set_outputs([op(b, first, x), op(b, "tanh", x), op(b, "sin", y)])
        return b

    g, (c, x, y) = graph(TensorType((), "bool"), F32, F32)
    node = g.add("If", [c, x, op(g, "exp", y)], {"then_branch": branch("then", "relu"),
                                                "else_branch": branch("else", "neg")})
    g.set_outputs([op(g, "add", node.out(0), x)])
    return g


def test_dce_prunes_unused_if_results_and_operands():
    g, changed = check_equivalent(two_output_if, [DCE()])
    assert changed
    node = next(n for n in g.nodes if n.op == "If")
    assert len(node.outputs) == 1 and len(node.inputs) == 2  # cond and x; the exp(y) operand is gone
    assert count(g, "tanh") == 0 and count(g, "sin") == 0 and count(g, "exp") == 0
    for key in ("then_branch", "else_branch"):
        assert [n.attrs["index"] for n in node.attrs[key].inputs] == [0]


# ---- the group ------------------------------------------------------------------------------------


def messy_graph() -> Graph:
    g, (x, y) = graph(F32, F32)
    one = op(g, "add", g.const(np.float32(0.5)), g.const(np.float32(0.5)))  # folds to 1
    a = op(g, "mul", op(g, "exp", x), one)                                   # exp(x) * 1
    b = op(g, "add", op(g, "exp", x), op(g, "sub", one, one))                 # exp(x) + 0 (after folding)
    op(g, "tanh", y)                                                         # dead
    g.set_outputs([op(g, "add", a, b)])
    return g


def test_simplify_group_reaches_a_fixpoint():
    g, changed = check_equivalent(messy_graph, [simplify_group()])
    assert changed
    assert ops_of(g) == ["exp", "add"]
    add = g.nodes[-1]
    assert add.inputs[0] == add.inputs[1]


def test_simplify_group_stages_name_each_changing_pass():
    stages: list[str] = []
    run_passes(messy_graph(), [simplify_group()], on_stage=lambda name, g: stages.append(name))
    assert stages[0] == "constant_folding" and "dce" in stages
    assert len(stages) == len(set(stages))


def test_simplify_group_does_nothing_below_opt_level_1():
    g = messy_graph()
    changed, _ = run_passes(g, [simplify_group()], opt_level=0)
    assert not changed and count(g, "tanh") == 1


def test_constant_if_operands_are_folded_into_the_branches():
    def build():
        def branch(name: str, unary: str) -> Graph:
            b = Graph(name)
            x = b.add_input(F32, "x")
            k = b.add_input(TensorType((), "float32"), "k")
            b.set_outputs([op(b, "mul", op(b, unary, x), op(b, "add", k, k))])
            return b

        g, (c, x) = graph(TensorType((), "bool"), F32)
        node = g.add("If", [c, x, g.const(np.float32(1.5))],
                     {"then_branch": branch("then", "exp"), "else_branch": branch("else", "neg")})
        g.set_outputs([node.out()])
        return g

    g, changed = check_equivalent(build, [simplify_group()])
    node = next(n for n in g.nodes if n.op == "If")
    assert changed and len(node.inputs) == 2  # the constant operand is gone
    for key in ("then_branch", "else_branch"):
        b = node.attrs[key]
        assert sorted(n.op for n in b.nodes if n.op != "Data") == sorted(
            ["Const", "exp" if key == "then_branch" else "neg", "mul"])
        assert b.nodes[[n.op for n in b.nodes].index("Const")].attrs["value"] == np.float32(3.0)
