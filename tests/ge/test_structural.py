"""Structural pass tests: each pass on a small graph leaves exactly the expected graph (canonical printouts).

Next to the numerical-equivalence tests of each pass, these build the graph a
pass must produce and compare `format_graph(after) == format_graph(expected)`,
the way TVM's pass tests compare structures. A pass only rewrites: nodes it
made dead stay until DCE, so the expected graphs keep them too.
"""
from __future__ import annotations

import numpy as np
import pytest
from ge_equiv import run_passes

from pyasc.ge.attention import AttentionPass
from pyasc.ge.conv import BlockedLayout, ConvBatchNormFold, ConvEpilogueFusion, ConvGroupSplit
from pyasc.ge.conv_edges import ConvEdgeFold
from pyasc.ge.fusion import FusionPass
from pyasc.ge.integer_matmul import VectorIntegerMatmul
from pyasc.ge.layout import LayoutAssign, TransdataElimination, TransposeSinking
from pyasc.ge.memory import MemoryPlanningPass
from pyasc.ge.mixed import MixedKernelsPass
from pyasc.ge.prologue import MatmulProloguePass
from pyasc.ge.horizontal import HorizontalFusionPass
from pyasc.ge.reshape_sinking import ReshapeSinking
from pyasc.ge.pattern import DecomposeComposites, MatmulEpilogueFusion, MatmulTransposeFold, SplitReductions
from pyasc.ge.simplify import CSE, DCE, AlgebraicSimplify, ConstantFolding
from pyasc.ir import Graph, TensorType, format_graph

F32 = "float32"


def t(*shape: int, fmt: str = "ND") -> TensorType:
    return TensorType(shape, F32, fmt)


def op(g: Graph, name: str, *inputs, **attrs):
    return g.add(name, list(inputs), attrs).out()


def c(g: Graph, value: float):
    return g.const(np.float32(value))


def after(build, *passes, opt_level: int = 3) -> str:
    g = build()
    run_passes(g, list(passes), opt_level=opt_level)
    return format_graph(g)


# ---- each case: (passes, graph before, graph the passes must leave) ----------------------------------


def silu_before():
    g = Graph()
    x = g.add_input(t(4, 8), "x")
    g.set_outputs([op(g, "silu", x)])
    return g


def silu_expected():
    g = Graph()
    x = g.add_input(t(4, 8), "x")
    g.set_outputs([op(g, "mul", x, op(g, "sigmoid", x))])
    return g


def fold_before():
    g = Graph()
    x = g.add_input(t(4), "x")
    g.set_outputs([op(g, "add", x, op(g, "mul", c(g, 2.0), c(g, 3.0)))])
    return g


def fold_expected():
    g = Graph()
    x = g.add_input(t(4), "x")
    c(g, 2.0), c(g, 3.0)  # dead now: DCE's job
    g.set_outputs([op(g, "add", x, c(g, 6.0))])
    return g


def algebra_before():
    g = Graph()
    x = g.add_input(t(4), "x")
    g.set_outputs([op(g, "relu", op(g, "mul", x, c(g, 1.0))), op(g, "pow", x, c(g, 2.0))])
    return g


def algebra_expected():
    g = Graph()
    x = g.add_input(t(4), "x")
    c(g, 1.0)
    r = op(g, "relu", x)
    c(g, 2.0)
    g.set_outputs([r, op(g, "mul", x, x)])
    return g


def cse_before():
    g = Graph()
    x = g.add_input(t(4), "x")
    g.set_outputs([op(g, "add", op(g, "exp", x), op(g, "exp", x))])
    return g


def cse_expected():
    g = Graph()
    x = g.add_input(t(4), "x")
    e = op(g, "exp", x)
    g.set_outputs([op(g, "add", e, e)])
    return g


def dce_before():
    g = Graph()
    x = g.add_input(t(4), "x")
    op(g, "exp", x)
    g.set_outputs([op(g, "relu", x)])
    return g


def dce_expected():
    g = Graph()
    g.set_outputs([op(g, "relu", g.add_input(t(4), "x"))])
    return g


def flags_before():
    g = Graph()
    a, b = g.add_input(t(8, 4), "a"), g.add_input(t(8, 16), "b")
    g.set_outputs([op(g, "matmul", op(g, "transpose", a, axes=(1, 0)), b)])
    return g


def flags_expected():
    g = Graph()
    a, b = g.add_input(t(8, 4), "a"), g.add_input(t(8, 16), "b")
    op(g, "transpose", a, axes=(1, 0))
    g.set_outputs([op(g, "matmul", a, b, transpose_a=True)])
    return g


def epilogue_before():
    g = Graph()
    a, b, bias = g.add_input(t(4, 8), "a"), g.add_input(t(8, 16), "b"), g.add_input(t(16), "bias")
    g.set_outputs([op(g, "relu", op(g, "add", op(g, "matmul", a, b), bias))])
    return g


def epilogue_expected():
    g = Graph()
    a, b, bias = g.add_input(t(4, 8), "a"), g.add_input(t(8, 16), "b"), g.add_input(t(16), "bias")
    g.set_outputs([op(g, "fused_matmul", a, b, bias, transpose_a=False, transpose_b=False, has_bias=True,
                      activation="relu", out_dtype=None)])
    return g


def layout_before():
    g = Graph()
    x = g.add_input(t(16, 32, fmt="FRACTAL_NZ"), "x")
    g.set_outputs([op(g, "exp", x)])
    return g


def layout_expected():
    g = Graph()
    x = g.add_input(t(16, 32, fmt="FRACTAL_NZ"), "x")
    g.set_outputs([op(g, "exp", op(g, "transdata", x, src_format="FRACTAL_NZ", dst_format="ND"))])
    return g


def transdata_before():
    g = Graph()
    x = g.add_input(t(16, 32), "x")
    nz = op(g, "transdata", x, src_format="ND", dst_format="FRACTAL_NZ")
    g.set_outputs([op(g, "relu", op(g, "transdata", nz, src_format="FRACTAL_NZ", dst_format="ND"))])
    return g


def transdata_expected():
    g = Graph()
    x = g.add_input(t(16, 32), "x")
    op(g, "transdata", x, src_format="ND", dst_format="FRACTAL_NZ")
    g.set_outputs([op(g, "relu", x)])
    return g


def sinking_before():
    g = Graph()
    x = g.add_input(t(4, 8), "x")
    y = op(g, "mul", op(g, "relu", op(g, "transpose", x, axes=(1, 0))), c(g, 2.0))
    g.set_outputs([op(g, "transpose", y, axes=(1, 0))])
    return g


def sinking_expected():
    g = Graph()
    x = g.add_input(t(4, 8), "x")
    two = c(g, 2.0)
    g.set_outputs([op(g, "mul", op(g, "relu", x), two)])
    return g


def reshape_sinking_before():
    g = Graph()
    x = g.add_input(t(4, 6), "x")
    b = g.add_input(t(24), "b")
    g.set_outputs([op(g, "add", op(g, "reshape", op(g, "mul", x, c(g, 2.0)), shape=(24,)), b)])
    return g


def reshape_sinking_expected():
    # the add computed in (4, 6), b reshaped to match, the reshape after it (the old one dead until DCE)
    g = Graph()
    x = g.add_input(t(4, 6), "x")
    b = g.add_input(t(24), "b")
    m = op(g, "mul", x, c(g, 2.0))
    op(g, "reshape", m, shape=(24,))
    g.set_outputs([op(g, "reshape", op(g, "add", m, op(g, "reshape", b, shape=(4, 6))), shape=(24,))])
    return g


def split_before():
    g = Graph()
    x = g.add_input(t(2, 3, 4), "x")
    g.set_outputs([op(g, "mean", x, axis=(0, 2), keepdims=False)])
    return g


def split_expected():
    # the last block first, so axis 0 still names the first axis: mean(mean(x, (2,)), (0,))
    g = Graph()
    x = g.add_input(t(2, 3, 4), "x")
    inner = op(g, "mean", x, axis=(2,), keepdims=False)
    g.set_outputs([op(g, "mean", inner, axis=(0,), keepdims=False)])
    return g


def int_matmul_before():
    g = Graph()
    a = g.add_input(TensorType((3, 4), "int16"), "a")
    b = g.add_input(TensorType((4, 5), "int16"), "b")
    g.set_outputs([op(g, "matmul", a, b)])
    return g


def int_matmul_expected():
    # int16 has no cube route: reshape (views), cast to the int32 accumulator, multiply, sum over K
    g = Graph()
    a = g.add_input(TensorType((3, 4), "int16"), "a")
    b = g.add_input(TensorType((4, 5), "int16"), "b")
    a3, b3 = op(g, "reshape", a, shape=(3, 4, 1)), op(g, "reshape", b, shape=(1, 4, 5))
    a3, b3 = op(g, "cast", a3, dtype="int32"), op(g, "cast", b3, dtype="int32")
    g.set_outputs([op(g, "sum", op(g, "mul", a3, b3), axis=-2, keepdims=False)])
    return g


def softmax_axis0_before():
    g = Graph()
    x = g.add_input(t(4, 8), "x")
    g.set_outputs([op(g, "softmax", x, axis=0)])
    return g


def attention_before():
    g = Graph()
    q, k, v = (g.add_input(t(2, 8, 16), n) for n in "qkv")
    scores = op(g, "mul", op(g, "matmul", q, op(g, "transpose", k, axes=(0, 2, 1))), c(g, 0.25))
    g.set_outputs([op(g, "matmul", op(g, "softmax", scores, axis=-1), v)])
    return g


def attention_expected():
    # the pass removes what it replaced (nothing else reads it); the attention op computes the same in float32
    g = Graph()
    q, k, v = (g.add_input(t(2, 8, 16), n) for n in "qkv")
    g.set_outputs([op(g, "attention", q, k, v, scale=0.25, causal=False, has_mask=False)])
    return g


def fusion_before():
    g = Graph()
    x = g.add_input(t(4, 8), "x")
    r = op(g, "relu", x)
    g.set_outputs([op(g, "exp", r), op(g, "neg", r), op(g, "transpose", r, axes=(1, 0))])
    return g


def fusion_expected():
    # relu has three consumer kernels, one of them a transpose (never fused): relu is not duplicated, it goes
    # with exp as an extra output and the others read it from GM; every compute node is annotated
    g = Graph()
    x = g.add_input(t(4, 8), "x")
    r = op(g, "relu", x, fusion_group=0)
    g.set_outputs([op(g, "exp", r, fusion_group=0), op(g, "neg", r, fusion_group=1),
                   op(g, "transpose", r, axes=(1, 0), fusion_group=2)])
    return g


def prologue_before():
    g = Graph()
    x, w = g.add_input(t(4, 8), "x"), g.add_input(t(8, 6), "w")
    g.set_outputs([op(g, "exp", op(g, "matmul", op(g, "relu", x), w))])
    return g


def prologue_expected():
    # fusion keeps relu apart (a matmul takes no prologue there); matmul_prologue merges it into the matmul's
    # kernel (A's only producer and reader): all three in group 1
    g = Graph()
    x, w = g.add_input(t(4, 8), "x"), g.add_input(t(8, 6), "w")
    g.set_outputs([op(g, "exp", op(g, "matmul", op(g, "relu", x, fusion_group=1), w, fusion_group=1),
                      fusion_group=1)])
    return g


def horizontal_before():
    g = Graph()
    x, w1, w2 = g.add_input(t(4, 8), "x"), g.add_input(t(8, 6), "w1"), g.add_input(t(8, 6), "w2")
    g.set_outputs([op(g, "matmul", x, w1), op(g, "matmul", x, w2)])
    return g


def horizontal_expected():
    # fusion makes a kernel per product (groups 0 and 1); horizontal_fusion puts both in the first's launch
    g = Graph()
    x, w1, w2 = g.add_input(t(4, 8), "x"), g.add_input(t(8, 6), "w1"), g.add_input(t(8, 6), "w2")
    g.set_outputs([op(g, "matmul", x, w1, fusion_group=0), op(g, "matmul", x, w2, fusion_group=0)])
    return g


def conv_graph(*ops_after_conv: str, groups: int = 1, norm: bool = False):
    """x, w (and a batch norm's mean, var, gamma, beta) -> conv2d -> [batch_norm] -> the named unary ops."""
    g = Graph()
    x, w = g.add_input(t(1, 4, 5, 5), "x"), g.add_input(t(4, 4 // groups, 3, 3), "w")
    stats = [g.add_input(t(4), n) for n in ("m", "v", "g", "b")] if norm else []
    y = op(g, "conv2d", x, w, has_bias=False, padding=1, groups=groups)
    if norm:
        y = op(g, "batch_norm", y, *stats, eps=1e-5, has_weight=True, has_bias=True)
    for name in ops_after_conv:
        y = op(g, name, y)
    g.set_outputs([y])
    return g, x, w, stats


def bn_fold_expected():
    g = Graph()
    x, w = g.add_input(t(1, 4, 5, 5), "x"), g.add_input(t(4, 4, 3, 3), "w")
    stats = [g.add_input(t(4), n) for n in ("m", "v", "g", "b")]
    op(g, "conv2d", x, w, has_bias=False, padding=1, groups=1)  # the conv the batch norm read stays until DCE
    g.set_outputs([op(g, "fused_conv2d", x, w, *stats, padding=1, groups=1, has_bias=False, activation=None,
                      out_dtype="float32", has_bn=True, bn_eps=1e-5)])
    return g


def group_split_expected():
    g = Graph()
    x, w = g.add_input(t(1, 4, 5, 5), "x"), g.add_input(t(4, 2, 3, 3), "w")
    parts = []
    for lo in (0, 2):
        xs = op(g, "slice", x, starts=(0, lo, 0, 0), stops=(1, lo + 2, 5, 5), steps=(1, 1, 1, 1))
        ws = op(g, "slice", w, starts=(lo, 0, 0, 0), stops=(lo + 2, 2, 3, 3), steps=(1, 1, 1, 1))
        parts.append(op(g, "fused_conv2d", xs, ws, padding=1, groups=1, has_bias=False, activation=None,
                        out_dtype=None))
    g.set_outputs([op(g, "concat", *parts, axis=1)])
    return g


def conv_epilogue_expected():
    g = Graph()
    x, w = g.add_input(t(1, 4, 5, 5), "x"), g.add_input(t(4, 4, 3, 3), "w")
    g.set_outputs([op(g, "fused_conv2d", x, w, padding=1, groups=1, has_bias=False, activation="relu",
                      out_dtype=None)])
    return g


def blocked_layout_expected():
    g = Graph()
    x, w = g.add_input(t(1, 4, 5, 5), "x"), g.add_input(t(4, 4, 3, 3), "w")
    xb = op(g, "transdata", x, src_format="ND", dst_format="NC1HWC0")
    y = op(g, "conv2d", xb, w, has_bias=False, padding=1, groups=1)
    g.set_outputs([op(g, "transdata", y, src_format="NC1HWC0", dst_format="ND")])
    return g


def conv_edge_expected():  # both edge conversions in the conv's launch: it reads and gives ND
    g = Graph()
    x, w = g.add_input(t(1, 4, 5, 5), "x"), g.add_input(t(4, 4, 3, 3), "w")
    g.set_outputs([op(g, "fused_conv2d", x, w, activation=None, groups=1, has_bias=False, out_dtype=None,
                      out_format="ND", padding=1)])
    return g


CASES = {
    "attention": ([AttentionPass()], attention_before, attention_expected),
    "conv_batchnorm_fold": ([ConvBatchNormFold()], lambda: conv_graph(norm=True)[0], bn_fold_expected),
    "conv_group_split": ([ConvGroupSplit()], lambda: conv_graph(groups=2)[0], group_split_expected),
    "conv_epilogue_fusion": ([ConvEpilogueFusion()], lambda: conv_graph("relu")[0], conv_epilogue_expected),
    "blocked_layout": ([BlockedLayout()], lambda: conv_graph()[0], blocked_layout_expected),
    "conv_edge_fold": ([ConvEdgeFold(), DCE()], blocked_layout_expected, conv_edge_expected),
    "decompose_composites": ([DecomposeComposites()], silu_before, silu_expected),
    "split_reductions": ([SplitReductions()], split_before, split_expected),
    "vector_integer_matmul": ([VectorIntegerMatmul()], int_matmul_before, int_matmul_expected),
    "constant_folding": ([ConstantFolding()], fold_before, fold_expected),
    "algebraic_simplify": ([AlgebraicSimplify()], algebra_before, algebra_expected),
    "cse": ([CSE()], cse_before, cse_expected),
    "dce": ([DCE()], dce_before, dce_expected),
    "matmul_transpose_fold": ([MatmulTransposeFold()], flags_before, flags_expected),
    "matmul_epilogue_fusion": ([MatmulEpilogueFusion()], epilogue_before, epilogue_expected),
    "layout_assign": ([LayoutAssign()], layout_before, layout_expected),
    "transdata_elimination": ([TransdataElimination()], transdata_before, transdata_expected),
    "transpose_sinking": ([TransposeSinking()], sinking_before, sinking_expected),
    "reshape_sinking": ([ReshapeSinking()], reshape_sinking_before, reshape_sinking_expected),
    "fusion": ([FusionPass()], fusion_before, fusion_expected),
    "memory_planning": ([FusionPass(), MemoryPlanningPass()], fusion_before, fusion_expected),  # analysis only
    "mixed_kernels": ([FusionPass(), MixedKernelsPass()], fusion_before, fusion_expected),  # marks kernel plans only
    "matmul_prologue": ([FusionPass(), MatmulProloguePass()], prologue_before, prologue_expected),
    "horizontal_fusion": ([FusionPass(), HorizontalFusionPass()], horizontal_before, horizontal_expected),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_pass_leaves_exactly_the_expected_graph(name):
    passes, before, expected = CASES[name]
    assert after(before, *passes) == format_graph(expected())


def test_every_pipeline_pass_has_a_structural_case():
    from pyasc.ge.passes import PassGroup, walk_passes
    from pyasc.ge.pipeline import build_pipeline

    names = {p.name for p in walk_passes(build_pipeline()) if not isinstance(p, PassGroup)}
    assert names == set(CASES)


def test_a_dedicated_lowering_is_kept_only_over_the_last_axis():
    # softmax over axis 0 is not a row kernel: it is decomposed (into reductions over axis 0)
    text = after(softmax_axis0_before, DecomposeComposites())
    assert "softmax" not in text and "max(" in text and "axis=0" in text
    kept = Graph()
    x = kept.add_input(t(4, 8), "x")
    kept.set_outputs([op(kept, "softmax", x, axis=-1)])
    assert "softmax(" in after(lambda: kept, DecomposeComposites())
