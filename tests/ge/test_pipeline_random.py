"""The whole pipeline: `optimize` entry point, and random graphs equivalent at every opt_level."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from ge_equiv import assert_same_results, count, random_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyasc.ge import DecisionKind, PassVerificationError, optimize, pass_names
from pyasc.ge.pipeline import build_pipeline
from pyasc.ir import Graph, TensorType, interpret, verify


def op(g: Graph, name: str, *inputs, **attrs):
    return g.add(name, list(inputs), attrs).out()


# ---- the entry point -------------------------------------------------------------------------


def example_graph() -> Graph:
    """matmul + bias + relu, a CSE opportunity, x*1, dead code and a softmax."""
    g = Graph("main")
    x = g.add_input(TensorType((8, 16), "float32"), "x")
    w = g.add_input(TensorType((16, 8), "float32"), "w")
    b = g.add_input(TensorType((8,), "float32"), "b")
    h = op(g, "relu", op(g, "add", op(g, "matmul", x, w), b))
    e1, e2 = op(g, "tanh", h), op(g, "tanh", h)
    op(g, "exp", x)  # dead
    s = op(g, "softmax", op(g, "mul", op(g, "add", e1, e2), g.const(np.float32(1.0))), axis=-1)
    g.set_outputs([s])
    return g


def test_pass_names_in_pipeline_order():
    assert pass_names() == [
        "attention", "conv_batchnorm_fold", "conv_group_split",
        "decompose_composites", "vector_integer_matmul", "split_reductions", "simplify", "constant_folding", "algebraic_simplify", "cse", "dce",
        "pattern_fusion", "matmul_transpose_fold", "matmul_epilogue_fusion", "conv_epilogue_fusion",
        "layout", "blocked_layout", "layout_assign", "transdata_elimination", "transpose_sinking", "conv_edge_fold", "reshape_sinking",
        "fusion", "horizontal_fusion", "matmul_prologue", "mixed_kernels", "memory_planning",
    ]


def test_optimize_result_reports_what_happened():
    g = example_graph()
    xs = random_inputs(g, np.random.default_rng(1))
    before = interpret(g, xs)
    result = optimize(g)
    assert result.graph is g
    assert_same_results(before, interpret(g, xs))
    ops = [n.op for n in g.nodes if n.op not in ("Data", "Const")]
    assert ops == ["fused_matmul", "tanh", "add", "softmax"]
    names = [name for name, _ in result.stages]
    assert len(names) == len(set(names))
    for expected in ("algebraic_simplify", "cse", "dce", "matmul_epilogue_fusion", "fusion"):
        assert expected in names
    assert "layout_assign" not in names  # nothing to convert: no stage
    assert [name for name, _ in result.dots] == names
    assert all(text.startswith("graph main {") for _, text in result.stages)
    assert all("digraph" in dot for _, dot in result.dots)
    assert result.kernels and all(n.attrs.get("fusion_group") is not None for k in result.kernels for n in k.nodes)
    assert result.memory_plan is not None and result.fusion_log
    assert set(result.pass_times) >= {"constant_folding", "fusion", "memory_planning"}
    assert result.nodes_before > result.nodes_after
    ran = [r.name for r in result.pass_log if r.skipped is None]
    assert ran.index("fusion") < ran.index("memory_planning") == len(ran) - 1


def test_opt_level_0_changes_nothing_but_kernel_annotations():
    g = example_graph()
    result = optimize(g, opt_level=0)
    assert [name for name, _ in result.stages] == ["fusion"]
    assert count(g, "tanh") == 2 and count(g, "matmul") == 1 and count(g, "exp") == 1
    assert len(result.kernels) == sum(1 for n in g.nodes if n.op not in ("Data", "Const"))


@pytest.mark.parametrize("disabled, kept", [
    ({"cse"}, ("tanh", 2)),
    ({"dce"}, ("exp", 1)),
    ({"matmul_epilogue_fusion"}, ("matmul", 1)),
    ({"pattern_fusion"}, ("relu", 1)),
    ({"simplify"}, ("exp", 1)),
    ({"decompose_composites"}, ("silu", 1)),
])
def test_disabled_passes_really_disable(disabled, kept):
    def build():
        g = example_graph()
        out = g.outputs[0]
        g.set_outputs([out, op(g, "silu", g.inputs[0].out())])
        return g

    g = build()
    optimize(g, disabled_passes=disabled)
    assert count(g, kept[0]) == kept[1]
    g2 = build()
    optimize(g2)
    assert count(g2, kept[0]) != kept[1]  # the same graph without the switch: the pass does fire


@pytest.mark.parametrize("disabled", [{"fusion"}, {"fusion", "memory_planning"}])
def test_disabled_fusion_still_plans_one_kernel_per_op(disabled):
    # codegen needs a schedule: without fusion it is one kernel per op, the one the memory plan uses
    g = example_graph()
    result = optimize(g, disabled_passes=disabled)
    compute = [n for n in g.nodes if n.op not in ("Data", "Const")]
    assert [k.nodes for k in result.kernels] == [[n] for n in compute]
    assert all("fusion_group" not in n.attrs for n in compute) and "fusion" not in [s for s, _ in result.stages]
    assert [d.rule for d in result.fusion_decisions if d.kind is DecisionKind.NOTE] == ["unfused"]
    assert "fusion did not run (disabled)" in result.fusion_log[-1]
    if "memory_planning" not in disabled:
        assert result.memory_plan.steps == len(result.kernels)


def test_pass_report_notes_unchanged_and_skipped_passes():
    result = optimize(example_graph(), disabled_passes={"transpose_sinking"})
    lines = result.pass_report().splitlines()
    assert len(lines) == len(result.pass_log)
    assert "cse: changed -> stage cse  [" in lines[8]
    assert lines[0].startswith("attention: unchanged (no stage)")
    assert lines[1].startswith("conv_batchnorm_fold: unchanged (no stage)")
    assert lines[2].startswith("conv_group_split: unchanged (no stage)")
    assert lines[3].startswith("decompose_composites: unchanged (no stage)")
    assert lines[4].startswith("vector_integer_matmul: unchanged (no stage)")
    assert lines[5].startswith("split_reductions: unchanged (no stage)")
    assert "transpose_sinking: skipped (disabled)" in lines
    assert lines[-1].startswith("memory_planning: unchanged")


def test_required_pass_runs_at_opt_level_0():
    g = example_graph()
    result = optimize(g, opt_level=0, required_passes={"cse"})
    assert count(g, "tanh") == 1 and "cse" in [name for name, _ in result.stages]


def test_unknown_pass_name_is_rejected_with_the_known_names():
    with pytest.raises(ValueError, match=r"unknown pass name\(s\) in disabled_passes: 'fold'; known passes are "
                                         r"attention, conv_batchnorm_fold, conv_group_split, decompose_composites, "
                                         r"vector_integer_matmul, split_reductions, simplify"):
        optimize(example_graph(), disabled_passes={"fold"})


def test_a_pass_both_disabled_and_required_is_rejected():
    with pytest.raises(ValueError, match="both disabled and required: cse"):
        optimize(example_graph(), disabled_passes={"cse"}, required_passes={"cse"})


@pytest.mark.parametrize("level", [-1, 4, 1.5, True, "3"])
def test_bad_opt_level_is_rejected(level):
    with pytest.raises(ValueError, match=r"opt_level must be one of 0, 1, 2, 3, got"):
        optimize(example_graph(), opt_level=level)


def test_an_invalid_input_graph_is_reported_before_any_pass():
    g = example_graph()
    g.nodes.reverse()
    with pytest.raises(PassVerificationError, match="input graph, before any pass"):
        optimize(g)


def test_on_stage_hook_sees_every_stage():
    seen: list[str] = []
    result = optimize(example_graph(), on_stage=lambda name, g: seen.append(name), dots=False)
    assert seen == [name for name, _ in result.stages] and result.dots == []


def test_chip_defaults_to_the_910b_preset():
    from pyasc.ge.pipeline import resolve_chip

    chip = resolve_chip(None)
    assert chip is not None and chip.ub_bytes == 192 * 1024
    assert resolve_chip("tiny").ub_bytes < chip.ub_bytes
    marker = object()
    assert resolve_chip(marker) is marker


def test_pipeline_is_built_fresh_each_time():
    assert build_pipeline()[0] is not build_pipeline()[0]


# ---- random graphs ------------------------------------------------------------------------------------

UNARY = ("neg", "relu", "tanh", "sigmoid", "abs", "sin", "gelu", "silu")
BINARY = ("add", "sub", "mul", "maximum", "minimum")
REDUCE = ("sum", "max", "mean")
KINDS = 12


@dataclass(frozen=True)
class Recipe:
    m: int
    n: int
    dtype: str
    steps: tuple[tuple[int, int, int], ...]
    extra_outputs: tuple[int, ...]


recipes = st.builds(
    Recipe,
    m=st.sampled_from([1, 2, 3, 4]),
    n=st.sampled_from([1, 3, 4, 8]),
    dtype=st.sampled_from(["float32", "float32", "float16"]),
    steps=st.lists(st.tuples(st.integers(0, KINDS - 1), st.integers(0, 999), st.integers(0, 999)),
                   min_size=2, max_size=12).map(tuple),
    extra_outputs=st.lists(st.integers(0, 999), max_size=2).map(tuple),
)


def build(recipe: Recipe) -> Graph:
    """A graph from a recipe: every step appends values to a pool; outputs are the last two and a few more."""
    m, n, dt = recipe.m, recipe.n, recipe.dtype
    g = Graph("main")
    x = g.add_input(TensorType((m, n), dt), "x")
    y = g.add_input(TensorType((m, n), dt), "y")
    row = g.add_input(TensorType((n,), dt), "row")
    w = g.add_input(TensorType((n, n), dt), "w")
    g.add_input(TensorType((m, n), dt), "unused")
    pool = [x, y, row]

    def full(i):
        """A pool value of the full (m, n) shape (x if none)."""
        fulls = [v for v in pool if tuple(v.type.shape) == (m, n)]
        return fulls[i % len(fulls)]

    def const(value, dtype=None):
        return g.const(np.asarray(value, dtype=dtype or dt))

    for kind, i, j in recipe.steps:
        a, b = pool[i % len(pool)], pool[j % len(pool)]
        if kind == 0:
            v = op(g, UNARY[j % len(UNARY)], a)
        elif kind == 1:
            v = op(g, BINARY[j % len(BINARY)], a, b)
        elif kind == 2:  # algebraic identities and a folding opportunity
            v = [lambda: op(g, "mul", a, const(1.0)), lambda: op(g, "add", const(0.0), a),
                 lambda: op(g, "pow", a, const(2.0)), lambda: op(g, "sub", a, op(g, "mul", const(0.5), const(0.0))),
                 lambda: op(g, "div", a, const(1.0)), lambda: op(g, "neg", op(g, "neg", a))][j % 6]()
        elif kind == 3:  # reductions that keep a broadcastable shape
            axis, keep = [(-1, True), (0, True), (None, False)][j % 3]
            v = op(g, REDUCE[j % len(REDUCE)], full(i), axis=axis, keepdims=keep)
        elif kind == 4:  # matmul with an optional bias and relu
            v = op(g, "matmul", full(i), w)
            if j % 2:
                v = op(g, "add", v, row)
            if j % 3:
                v = op(g, "relu", v)
        elif kind == 5:  # transposed operands: cancelling pairs and matmul flags
            v = [lambda: op(g, "matmul", op(g, "transpose", op(g, "transpose", full(i))), w),
                 lambda: op(g, "matmul", full(i), op(g, "transpose", w)),
                 lambda: op(g, "transpose", op(g, "matmul", op(g, "transpose", w), op(g, "transpose", full(i)))),
                 lambda: op(g, "reshape", op(g, "matmul", op(g, "reshape", full(i), shape=(1, m, n)),
                                             op(g, "transpose", op(g, "reshape", w, shape=(1, n, n)), axes=(0, 2, 1))),
                            shape=(m, n)),
                 ][j % 4]()
        elif kind == 6:  # casts: a lossless round trip and a lossy one
            other = "float16" if dt == "float32" else "float32"
            v = op(g, "cast", op(g, "cast", a, dtype=other), dtype=dt)
        elif kind == 7:  # transpose - elementwise - transpose (cancelling in 2-D, composing in 3-D)
            if j % 2:
                t = op(g, "transpose", op(g, "reshape", full(i), shape=(m, n, 1)), axes=(1, 2, 0))  # (n, 1, m)
                u = op(g, "transpose", op(g, UNARY[j % 6], t), axes=(2, 1, 0))                       # (m, 1, n)
                v = op(g, "reshape", u, shape=(m, n))
            else:
                t = op(g, "transpose", full(i))
                v = op(g, "transpose", op(g, "mul", op(g, UNARY[j % 6], t), const(2.0)))
        elif kind == 8:  # a duplicate of an earlier computation (CSE)
            v = op(g, "add", op(g, "tanh", a), op(g, "tanh", a))
        elif kind == 9:
            v = if_node(g, full(i), row, j)
        elif kind == 10:  # composites, kept whole or decomposed
            v = op(g, ["softmax", "log_softmax", "rms_norm", "layer_norm"][j % 4], full(i))
        else:  # a broadcast constant and a where
            v = op(g, "where", op(g, "gt", a, const(0.0)), a, op(g, "broadcast_to", const(0.0), shape=(m, n)))
        pool.append(v)
    # the last two results and a few random ones leave the graph; the rest may be dead code
    outs = pool[-2:] + [pool[k % len(pool)] for k in recipe.extra_outputs]
    g.set_outputs(outs)
    return g


def if_node(g: Graph, a, row, j: int):
    """If sum(a) > 0: two results from each branch (the second is sometimes unused), one operand maybe unread."""
    def branch(name: str, unary: str, use_row: bool) -> Graph:
        br = Graph(name)
        xa = br.add_input(a.type, "a")
        xr = br.add_input(row.type, "r")
        first = op(br, "mul", op(br, unary, xa), br.const(np.asarray(1.0, a.type.dtype)))
        second = op(br, "add", xa, xr) if use_row else op(br, "neg", xa)
        br.set_outputs([first, second])
        return br

    if j % 5 == 4:  # a constant operand (copied into the branches by constant folding)
        row = g.const(np.linspace(-1.0, 1.0, row.type.shape[0]).astype(row.type.dtype))
    cond = op(g, "gt", op(g, "sum", a), g.const(np.asarray(0.0, a.type.dtype)))
    node = g.add("If", [cond, a, row], {"then_branch": branch("then", "tanh", j % 2 == 0),
                                       "else_branch": branch("else", "relu", False)})
    return node.out(0) if j % 3 else op(g, "add", node.out(0), node.out(1))


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(recipe=recipes, seed=st.integers(0, 2**16))
def test_random_graphs_are_equivalent_at_every_opt_level(recipe, seed):
    reference = build(recipe)
    verify(reference)
    xs = random_inputs(reference, np.random.default_rng(seed))
    expected = interpret(reference, xs)
    for level in (0, 1, 2, 3):
        g = build(recipe)
        result = optimize(g, opt_level=level, dots=False)
        verify(g)
        assert_same_results(expected, interpret(g, xs))
        assert result.kernels or not any(n.op not in ("Data", "Const") for n in g.nodes)
        grouped = {n.attrs.get("fusion_group") for k in result.kernels for n in k.nodes}
        assert None not in grouped
