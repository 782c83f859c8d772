"""Layout: transdata only where formats disagree, conversion and transpose elimination, transpose sinking."""
from __future__ import annotations

import numpy as np
import pytest
from ge_equiv import check_equivalent, count, ops_of, run_passes

from pyasc.ge.layout import LayoutAssign, TransdataElimination, TransposeSinking, accepted_formats, layout_passes
from pyasc.ge.simplify import DCE
from pyasc.ir import Graph, TensorType


def graph(*types: TensorType) -> tuple[Graph, list]:
    g = Graph("main")
    return g, [g.add_input(t, f"x{i}") for i, t in enumerate(types)]


def op(g: Graph, name: str, *inputs, **attrs):
    return g.add(name, list(inputs), attrs).out()


def t(shape, fmt="ND", dtype="float32") -> TensorType:
    return TensorType(shape, dtype, fmt)


def td(g: Graph, x, src: str, dst: str):
    return op(g, "transdata", x, src_format=src, dst_format=dst)


# ---- layout_assign -----------------------------------------------------------------------------


def plain_graph() -> Graph:
    g, (a, b, bias) = graph(t((16, 32)), t((32, 16)), t((16,)))
    y = op(g, "relu", op(g, "add", op(g, "matmul", a, b), bias))
    g.set_outputs([op(g, "sum", op(g, "exp", y), axis=-1)])
    return g


def test_a_plain_nd_graph_shows_zero_conversions():
    g, changed = check_equivalent(plain_graph, layout_passes())
    assert not changed and count(g, "transdata") == 0
    assert all(n.outputs[0].format == "ND" for n in g.nodes)


def test_layout_log_says_how_matmul_operands_reach_the_cube():
    _, ctx = run_passes(plain_graph(), [LayoutAssign()])
    routes = ctx.state.cube_routes
    assert [(r.op, r.operand, r.converted) for r in routes] == [("matmul", "a", True), ("matmul", "b", True)]
    assert routes[0].render() == "main: matmul operand a f32[16,32] in GM -> FRACTAL_NZ in L1 (converted ND->NZ by " \
                                 "the GM->L1 move)"


def nz_input_graph() -> Graph:
    g, (x, w) = graph(t((16, 32), "FRACTAL_NZ"), t((32, 16), "FRACTAL_NZ"))
    y = op(g, "matmul", x, w)          # the cube takes NZ as it is
    z = op(g, "add", op(g, "exp", x), x)  # two ND readers of the NZ input
    g.set_outputs([y, z, w])           # w leaves the graph: results are ND
    return g


def test_transdata_only_where_producer_and_reader_disagree():
    g, changed = check_equivalent(nz_input_graph, [LayoutAssign()])
    assert changed
    convs = [n for n in g.nodes if n.op == "transdata"]
    assert len(convs) == 2  # one for x, shared by exp and add; one for the output w
    assert {(n.inputs[0].node.name, n.attrs["src_format"], n.attrs["dst_format"]) for n in convs} == {
        ("x0", "FRACTAL_NZ", "ND"), ("x1", "FRACTAL_NZ", "ND")}
    mm = next(n for n in g.nodes if n.op == "matmul")
    assert all(v.node.op == "Data" for v in mm.inputs)
    assert all(v.type.format == "ND" for v in g.outputs)


def test_if_operands_pass_their_format_to_the_branch():
    def branch(name):
        b = Graph(name)
        x = b.add_input(t((16, 32), "FRACTAL_NZ"), "x")
        b.set_outputs([op(b, "exp", x)])
        return b

    g, (c, x) = graph(TensorType((), "bool"), t((16, 32), "FRACTAL_NZ"))
    node = g.add("If", [c, x], {"then_branch": branch("then"), "else_branch": branch("else")})
    g.set_outputs([node.out()])
    run_passes(g, [LayoutAssign()])
    assert node.inputs[1].node.op == "Data"  # no conversion at the If
    for key in ("then_branch", "else_branch"):
        assert count(node.attrs[key], "transdata") == 1  # inside, before the exp
    assert accepted_formats(node, 1) >= {"FRACTAL_NZ", "ND"}


# ---- transdata_elimination -----------------------------------------------------------------------


def test_inverse_conversion_pair_disappears():
    def build():
        g, (x,) = graph(t((16, 32)))
        g.set_outputs([op(g, "exp", td(g, td(g, x, "ND", "FRACTAL_NZ"), "FRACTAL_NZ", "ND"))])
        return g

    g, changed = check_equivalent(build, [TransdataElimination(), DCE()])
    assert changed and ops_of(g) == ["exp"]


def test_non_inverse_pair_becomes_one_conversion():
    def build():
        g, (x,) = graph(t((2, 32, 4, 4), "FRACTAL_NZ"))
        g.set_outputs([td(g, td(g, x, "FRACTAL_NZ", "ND"), "ND", "NC1HWC0")])
        return g

    g, changed = check_equivalent(build, [TransdataElimination(), DCE()])
    assert changed and ops_of(g) == ["transdata"]
    assert (g.nodes[-1].attrs["src_format"], g.nodes[-1].attrs["dst_format"]) == ("FRACTAL_NZ", "NC1HWC0")


def test_identity_conversion_disappears():
    g, (x,) = graph(t((16, 32)))
    g.set_outputs([op(g, "exp", td(g, x, "ND", "ND"))])
    changed, _ = run_passes(g, [TransdataElimination(), DCE()])
    assert changed and ops_of(g) == ["exp"]


def test_identical_sibling_conversions_merge():
    def build():
        g, (x,) = graph(t((16, 32), "FRACTAL_NZ"))
        g.set_outputs([op(g, "sub", td(g, x, "FRACTAL_NZ", "ND"), op(g, "exp", td(g, x, "FRACTAL_NZ", "ND")))])
        return g

    g, changed = check_equivalent(build, [TransdataElimination()])
    assert changed and count(g, "transdata") == 1


def test_conversion_a_matmul_does_not_need_is_bypassed():
    def build():
        g, (x, w) = graph(t((16, 32), "FRACTAL_NZ"), t((32, 8)))
        g.set_outputs([op(g, "matmul", td(g, x, "FRACTAL_NZ", "ND"), w)])
        return g

    g, changed = check_equivalent(build, [TransdataElimination(), DCE()])
    assert changed and ops_of(g) == ["matmul"] and g.nodes[-1].inputs[0].type.format == "FRACTAL_NZ"


def test_back_to_back_transposes_cancel_in_layout():
    def build():
        g, (x,) = graph(t((4, 8)))
        g.set_outputs([op(g, "exp", op(g, "transpose", op(g, "transpose", x)))])
        return g

    g, changed = check_equivalent(build, [TransdataElimination(), DCE()])
    assert changed and ops_of(g) == ["exp"]


def test_transdata_elimination_does_not_fire_on_needed_conversions():
    g, (x,) = graph(t((16, 32), "FRACTAL_NZ"))
    g.set_outputs([op(g, "exp", td(g, x, "FRACTAL_NZ", "ND"))])
    changed, _ = run_passes(g, [TransdataElimination()])
    assert not changed and count(g, "transdata") == 1


# ---- transpose_sinking -------------------------------------------------------------------------------


def sink_case(perm2=(1, 0), extra_reader=False, blocker="neg", shape=(4, 8)) -> Graph:
    g, (x,) = graph(t(shape))
    perm1 = tuple(reversed(range(len(shape))))
    a = op(g, "transpose", x, axes=perm1)
    e = op(g, "exp", a)
    if blocker == "sum":
        m = op(g, "sum", e, axis=-1, keepdims=True)
    elif blocker == "mul tensor":
        m = op(g, "mul", e, op(g, "exp", a))
    else:
        m = op(g, "mul", op(g, blocker, e), g.const(np.float32(0.5)))
    y = op(g, "transpose", m, axes=perm2)
    g.set_outputs([y] + ([op(g, "relu", e)] if extra_reader else []))
    return g


def test_transpose_sinks_through_elementwise_ops_and_cancels():
    g, changed = check_equivalent(sink_case, [TransposeSinking()])
    assert changed and count(g, "transpose") == 0
    assert ops_of(g) == ["exp", "neg", "Const", "mul"] or ops_of(g) == ["Const", "exp", "neg", "mul"]
    assert g.nodes[[n.op for n in g.nodes].index("exp")].inputs[0].node.op == "Data"


def test_transpose_sinking_composes_permutations():
    g, changed = check_equivalent(lambda: sink_case(perm2=(1, 0, 2), shape=(2, 3, 4)), [TransposeSinking()])
    assert changed and count(g, "transpose") == 1
    last = g.outputs[0].node
    assert last.op == "transpose" and tuple(last.attrs["axes"]) == (1, 2, 0)


@pytest.mark.parametrize("kw", [{"extra_reader": True}, {"blocker": "sum"}, {"blocker": "mul tensor"}])
def test_transpose_sinking_does_not_fire(kw):
    g = sink_case(**kw)
    before = ops_of(g)
    changed, _ = run_passes(g, [TransposeSinking()])
    assert not changed and ops_of(g) == before


def test_transpose_sinking_does_not_move_a_binary_op_with_a_full_operand():
    # T(x) * y, then T: moving the mul before the first transpose would need y transposed too. With square
    # shapes x * y still type-checks, so only the operand rule (0-d operands only) keeps the rewrite out.
    def build():
        g, (x, y) = graph(t((4, 4)), t((4, 4)))
        g.set_outputs([op(g, "transpose", op(g, "mul", op(g, "exp", op(g, "transpose", x)), y))])
        return g

    g, changed = check_equivalent(build, [TransposeSinking()])
    assert not changed and count(g, "transpose") == 2


def test_transpose_sinking_needs_opt_level_3():
    g = sink_case()
    changed, _ = run_passes(g, [TransposeSinking()], opt_level=2)
    assert not changed and count(g, "transpose") == 2


def test_transpose_sinking_handles_consecutive_chains_in_one_run():
    def build():
        g, (x,) = graph(t((4, 8)))
        v = x
        for unary in ("exp", "neg", "tanh"):  # T exp T neg T tanh T: the middle transposes end two chains each
            v = op(g, unary, op(g, "transpose", v))
        g.set_outputs([op(g, "transpose", v)])
        return g

    g, changed = check_equivalent(build, [TransposeSinking()])
    # T1 exp T2 cancels (T2 is removed while still ahead in the loop, and skipped), then T3 tanh T4
    assert changed and count(g, "transpose") == 0 and ops_of(g) == ["exp", "neg", "tanh"]
