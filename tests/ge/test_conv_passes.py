"""GE's conv passes (ge/conv.py): batch-norm folding, grouped convs, the FixPipe epilogue and the NC1HWC0
region; each shown on the graph before and after, and checked to compute the same results."""
from __future__ import annotations

import pytest
from ge_equiv import check_equivalent, count, ops_of, run_passes

from pyasc.errors import InferError
from pyasc.ge import optimize
from pyasc.ge.conv import BlockedLayout, ConvBatchNormFold, ConvEpilogueFusion, ConvGroupSplit
from pyasc.ge.conv_edges import ConvEdgeFold
from pyasc.ge.layout import layout_passes
from pyasc.ge.simplify import DCE
from pyasc.ir import Graph, TensorType, format_graph
from pyasc.ops import infer


def T(*shape, dtype="float32", fmt="ND") -> TensorType:
    return TensorType(shape, dtype, fmt)


def op(g: Graph, name: str, *inputs, **attrs):
    return g.add(name, list(inputs), attrs).out()


def conv(g, x, w, *more, **attrs):
    return op(g, "conv2d", x, w, *more, has_bias=bool(more), **attrs)


def bn(g, y, c, prefix, dtype="float32"):
    m, v, ga, be = (g.add_input(T(c, dtype=dtype), f"{prefix}{n}") for n in ("m", "v", "g", "b"))
    return op(g, "batch_norm", y, m, v, ga, be, eps=1e-5, has_weight=True, has_bias=True)


def body(g: Graph) -> list[str]:
    """The graph's node lines without the Data inputs (what the structural assertions compare)."""
    return [ln.strip() for ln in format_graph(g).splitlines()
            if ("=" in ln or "return" in ln) and "Data" not in ln]


# ---- batch-norm folding -------------------------------------------------------------------------


def conv_bn() -> Graph:
    g = Graph("main")
    x, w, b = g.add_input(T(1, 4, 6, 6), "x"), g.add_input(T(5, 4, 3, 3), "w"), g.add_input(T(5), "bias")
    g.set_outputs([op(g, "relu", bn(g, conv(g, x, w, b, padding=1), 5, "bn"))])
    return g


def test_batch_norm_folds_into_the_conv_before_it():
    before = body(conv_bn())
    assert before == [
        "%0 = conv2d(%x, %w, %bias) {has_bias=True, padding=1} : f32[1,5,6,6]",
        "%1 = batch_norm(%0, %bnm, %bnv, %bng, %bnb) {eps=1e-05, has_bias=True, has_weight=True} : f32[1,5,6,6]",
        "%2 = relu(%1) : f32[1,5,6,6]",
        "return (%2)",
    ]
    g, changed = check_equivalent(conv_bn, [ConvBatchNormFold(), DCE()])
    assert changed
    after = body(g)
    # one conv carrying the norm: the conversion of w into the cube's layout scales it and computes the bias
    # (ops.conv.fold_batch_norm), in its own launch; no op over w or the parameters is left in the graph
    assert after == [
        "%0 = fused_conv2d(%x, %w, %bias, %bnm, %bnv, %bng, %bnb) {activation=None, bn_eps=1e-05, has_bias=True, "
        "has_bn=True, out_dtype='float32', padding=1} : f32[1,5,6,6]",
        "%1 = relu(%0) : f32[1,5,6,6]",
        "return (%1)",
    ]


def test_a_batch_norm_without_affine_parameters_folds_with_constant_ones_and_zeros():
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 4, 6, 6), "x"), g.add_input(T(4, 4, 1, 1), "w")
        m, v = g.add_input(T(4), "m"), g.add_input(T(4), "v")
        g.set_outputs([op(g, "batch_norm", conv(g, x, w), m, v, eps=1e-3, has_weight=False, has_bias=False)])
        return g

    g, changed = check_equivalent(build, [ConvBatchNormFold(), DCE()])
    assert changed and ops_of(g) == ["Const", "Const", "fused_conv2d"]


def test_batch_norm_stays_when_the_conv_result_has_another_reader():
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 4, 6, 6), "x"), g.add_input(T(4, 4, 1, 1), "w")
        y = conv(g, x, w)
        g.set_outputs([bn(g, y, 4, "bn"), y])
        return g

    g, changed = check_equivalent(build, [ConvBatchNormFold(), DCE()])
    assert not changed and count(g, "batch_norm") == 1


def test_batch_norm_after_a_relu_does_not_fold():
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 4, 6, 6), "x"), g.add_input(T(4, 4, 1, 1), "w")
        g.set_outputs([bn(g, op(g, "relu", conv(g, x, w)), 4, "bn")])
        return g

    g, changed = check_equivalent(build, [ConvBatchNormFold(), ConvEpilogueFusion(), ConvBatchNormFold(), DCE()])
    assert count(g, "batch_norm") == 1 and ops_of(g)[-2:] == ["fused_conv2d", "batch_norm"]


def test_folding_keeps_float16_results_float16():
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 4, 6, 6, dtype="float16"), "x"), g.add_input(T(4, 4, 3, 3, dtype="float16"), "w")
        m, v, ga, be = (g.add_input(T(4, dtype="float16"), n) for n in "mvgb")
        g.set_outputs([op(g, "batch_norm", conv(g, x, w), m, v, ga, be, eps=1e-3, has_weight=True, has_bias=True)])
        return g

    g, _ = check_equivalent(build, [ConvBatchNormFold(), DCE()])
    (fused,) = [n for n in g.nodes if n.op == "fused_conv2d"]
    assert fused.attrs["out_dtype"] == "float16" and fused.attrs["has_bn"] and fused.attrs["bn_eps"] == 1e-3


# ---- grouped convs and the epilogue --------------------------------------------------------------


def test_a_grouped_conv_becomes_one_conv_per_group():
    def build() -> Graph:
        g = Graph("main")
        x, w, b = g.add_input(T(1, 6, 5, 5), "x"), g.add_input(T(4, 3, 3, 3), "w"), g.add_input(T(4), "b")
        g.set_outputs([conv(g, x, w, b, groups=2, padding=1)])
        return g

    g, changed = check_equivalent(build, [ConvGroupSplit(), DCE()])
    assert changed and count(g, "fused_conv2d") == 2 and count(g, "concat") == 1 and count(g, "conv2d") == 0
    assert all(n.attrs["groups"] == 1 for n in g.nodes if n.op == "fused_conv2d")


def test_relu_and_a_float_cast_fuse_into_the_conv():
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 4, 6, 6), "x"), g.add_input(T(4, 4, 3, 3), "w")
        g.set_outputs([op(g, "relu", op(g, "cast", conv(g, x, w), dtype="float16"))])
        return g

    g, changed = check_equivalent(build, [ConvEpilogueFusion(), DCE()])
    assert changed and ops_of(g) == ["fused_conv2d"]
    n = g.nodes[-1]
    assert (n.attrs["activation"], n.attrs["out_dtype"]) == ("relu", "float16")


def test_a_widening_cast_of_a_float16_conv_stays_a_cast():
    """conv in float16 rounds its result to float16; FixPipe would write the float32 accumulator instead."""
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 4, 6, 6, dtype="float16"), "x"), g.add_input(T(4, 4, 3, 3, dtype="float16"), "w")
        g.set_outputs([op(g, "cast", op(g, "relu", conv(g, x, w)), dtype="float32")])
        return g

    g, changed = check_equivalent(build, [ConvEpilogueFusion(), DCE()])
    assert changed and ops_of(g) == ["fused_conv2d", "cast"] and g.nodes[-2].attrs["activation"] == "relu"


# ---- the NC1HWC0 region ------------------------------------------------------------------------


def two_conv_block() -> Graph:
    """conv3x3 -> relu -> conv3x3, odd channels (the channel padding is computed, not assumed)."""
    g = Graph("main")
    x = g.add_input(T(1, 20, 9, 9, dtype="float16"), "x")
    w1, w2 = g.add_input(T(20, 20, 3, 3, dtype="float16"), "w1"), g.add_input(T(20, 20, 3, 3, dtype="float16"), "w2")
    g.set_outputs([conv(g, op(g, "relu", conv(g, x, w1, padding=1)), w2, padding=1)])
    return g


def transdatas(g: Graph) -> list[str]:
    return [ln for ln in body(g) if "transdata" in ln]


def test_a_two_conv_block_converts_only_at_its_edges():
    g = two_conv_block()
    optimize(g, dots=False, disabled_passes=["conv_edge_fold"])  # (the conversions as nodes of their own)
    text = body(g)
    assert [ln.split(" = ")[1].split(" {")[0] for ln in text if "(" in ln and "return" not in ln] == [
        "transdata(%x)", "fused_conv2d(%0, %w1)", "conv2d(%1, %w2)", "transdata(%2)"]
    assert transdatas(g) == [
        "%0 = transdata(%x) {dst_format='NC1HWC0', fusion_group=0, src_format='ND'} : f16[1,20,9,9]{NC1HWC0}",
        "%3 = transdata(%2) {dst_format='ND', fusion_group=3, src_format='NC1HWC0'} : f16[1,20,9,9]"]
    # the convs read and write NC1HWC0; every conversion reads a graph input or gives the graph output
    assert all(n.outputs[0].format == "NC1HWC0" for n in g.nodes if "conv2d" in n.op)
    outputs = set(g.outputs)
    for n in g.nodes:
        if n.op == "transdata":
            assert n.inputs[0].node.op == "Data" or n.out() in outputs


def test_without_elimination_each_conv_converts_its_own_map():
    g, changed = check_equivalent(two_conv_block, [BlockedLayout(), DCE()])
    assert changed and count(g, "transdata") == 4  # in and out of each conv: transdata_elimination's job
    g, _ = check_equivalent(two_conv_block, [BlockedLayout(), *layout_passes(), DCE()])
    assert count(g, "transdata") == 2


def basic_block() -> Graph:
    g = Graph("main")
    x = g.add_input(T(1, 20, 9, 9, dtype="float16"), "x")
    w1, w2 = g.add_input(T(20, 20, 3, 3, dtype="float16"), "w1"), g.add_input(T(20, 20, 3, 3, dtype="float16"), "w2")
    y = op(g, "relu", bn(g, conv(g, x, w1, padding=1), 20, "a", "float16"))
    y = bn(g, conv(g, y, w2, padding=1), 20, "b", "float16")
    g.set_outputs([op(g, "relu", op(g, "add", y, x))])
    return g


def test_the_residual_add_and_relu_join_the_second_conv_reading_the_shared_conversion_of_x():
    g = basic_block()
    optimize(g, dots=False, disabled_passes=["conv_edge_fold"])
    (x_in,) = [n for n in g.nodes if n.op == "transdata" and n.inputs[0].node.op == "Data"]
    first, second = [n for n in g.nodes if n.op == "fused_conv2d"]
    assert first.inputs[0] == x_in.out() and second.inputs[2] == x_in.out()   # x once in NC1HWC0, for both
    assert second.attrs["has_residual"] and second.attrs["activation"] == "relu" and second.attrs["has_bn"]
    assert [n.op for n in g.nodes if n.op not in ("Data", "Const")] == [
        "transdata", "fused_conv2d", "fused_conv2d", "transdata"]


def test_the_edge_conversions_move_into_the_convs():
    g, changed = check_equivalent(two_conv_block, [BlockedLayout(), *layout_passes(), ConvEdgeFold(), DCE()])
    assert changed and count(g, "transdata") == 0
    first, second = [n for n in g.nodes if n.op == "fused_conv2d"]
    # the first reads x as it is and keeps its result in the region, the second gives the ND result
    assert first.inputs[0].node.op == "Data" and first.outputs[0].format == "NC1HWC0"
    assert first.attrs["out_format"] == "NC1HWC0"
    assert second.inputs[0].node.inputs[0] == first.out()   # through the relu, in NC1HWC0
    assert second.attrs["out_format"] == "ND" and second.outputs[0].format == "ND"


def test_the_block_reads_x_in_nd_for_its_map_and_its_residual():
    g = basic_block()
    result = optimize(g, dots=False)
    first, second = [n for n in g.nodes if n.op == "fused_conv2d"]
    x = first.inputs[0]
    assert count(g, "transdata") == 0 and x.node.op == "Data" and second.inputs[2] == x   # the residual
    assert second.attrs["has_residual"] and second.attrs["activation"] == "relu" and second.outputs[0].format == "ND"
    log = "\n".join(result.fusion_log)
    assert "conv_edge_fold: found load_map_nd" in log and "conv_edge_fold: found store_result_nd" in log
    assert "the residual is added there" in log


@pytest.mark.parametrize("disabled", ["conv_edge_fold", "mixed_kernels"])
def test_the_edge_conversions_stay_when_the_fold_or_mixed_launches_are_off(disabled):
    g = basic_block()
    optimize(g, dots=False, disabled_passes=[disabled])
    assert count(g, "transdata") == 2 and not any(n.attrs.get("out_format") for n in g.nodes)


def test_a_conversion_another_op_reads_too_stays_a_node():
    def build() -> Graph:  # x's conversion is read by the conv and by a pool: folding it would convert twice
        g = Graph("main")
        x, w = g.add_input(T(1, 4, 6, 6), "x"), g.add_input(T(4, 4, 3, 3), "w")
        g.set_outputs([conv(g, x, w, padding=1), op(g, "max_pool2d", x, kernel_size=2)])
        return g

    g, _ = check_equivalent(build, [BlockedLayout(), *layout_passes(), ConvEdgeFold(), DCE()])
    (into,) = [n for n in g.nodes if n.op == "transdata" and n.inputs[0].node.op == "Data"]
    (cv,) = [n for n in g.nodes if n.op == "fused_conv2d"]
    assert cv.inputs[0] == into.out() and cv.attrs["out_format"] == "ND"   # its result still folds


def test_without_the_epilogue_fusion_the_residual_add_computes_in_nc1hwc0():
    g = basic_block()
    optimize(g, dots=False, disabled_passes=["conv_epilogue_fusion"])
    (x_in,) = [n for n in g.nodes if n.op == "transdata" and n.inputs[0].node.op == "Data"]
    (add,) = [n for n in g.nodes if n.op == "add" and n.outputs[0].ndim == 4]
    assert add.outputs[0].format == "NC1HWC0" and x_in.out() in add.inputs
    assert count(g, "transdata") == 2 and count(g, "batch_norm") == 0
    relu = [n for n in g.nodes if n.op == "relu"]
    assert [r.outputs[0].format for r in relu] == ["NC1HWC0", "NC1HWC0"]


def test_a_residual_add_fuses_into_the_conv_with_the_identity_it_is_added_with():
    def build() -> Graph:
        g = Graph("main")
        x, w, r = g.add_input(T(1, 4, 6, 6), "x"), g.add_input(T(4, 4, 3, 3), "w"), g.add_input(T(1, 4, 6, 6), "r")
        g.set_outputs([op(g, "relu", op(g, "add", r, conv(g, x, w, padding=1)))])
        return g

    g, changed = check_equivalent(build, [ConvEpilogueFusion(), DCE()])
    assert changed and body(g) == [
        "%0 = Const {value=f32[16,16] [1.0, 0.0, 0.0, ..., 0.0, 0.0, 1.0] #b028c8d7} : f32[16,16]",
        "%1 = fused_conv2d(%x, %w, %r, %0) {activation='relu', has_bias=False, has_residual=True, out_dtype=None, "
        "padding=1} : f32[1,4,6,6]",
        "return (%1)"]


def test_an_op_that_does_not_keep_zero_padding_stays_outside_the_region():
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 20, 5, 5, dtype="float16"), "x"), g.add_input(T(20, 20, 1, 1, dtype="float16"), "w")
        y = op(g, "exp", conv(g, x, w))                 # exp(0) = 1: the padding channels would not stay zero
        g.set_outputs([conv(g, y, w)])
        return g

    g, _ = check_equivalent(build, [BlockedLayout(), *layout_passes(), DCE()])
    (e,) = [n for n in g.nodes if n.op == "exp"]
    assert e.outputs[0].format == "ND" and count(g, "transdata") == 4


def test_conv_pool_conv_stays_blocked():
    def build() -> Graph:
        g = Graph("main")
        x, w = g.add_input(T(1, 16, 8, 8), "x"), g.add_input(T(16, 16, 3, 3), "w")
        y = op(g, "max_pool2d", conv(g, x, w, padding=1), kernel_size=2, stride=None, padding=0, ceil_mode=False)
        g.set_outputs([conv(g, y, w, padding=1)])
        return g

    g, _ = check_equivalent(build, [BlockedLayout(), *layout_passes(), DCE()])
    assert ops_of(g) == ["transdata", "conv2d", "max_pool2d", "conv2d", "transdata"]


# ---- the elementwise format rule ------------------------------------------------------------------


def test_elementwise_ops_compute_in_nc1hwc0_only_with_every_operand_in_it():
    nc = T(1, 20, 4, 4, fmt="NC1HWC0")
    assert infer("add", [nc, nc], {})[0] == nc
    assert infer("mul", [nc, T()], {})[0] == nc                     # a scalar operand broadcasts the same
    assert infer("relu", [nc], {})[0] == nc
    with pytest.raises(InferError, match="every operand must be NC1HWC0 of the result's shape or a single element"):
        infer("add", [nc, T(1, 20, 4, 4)], {})
    with pytest.raises(InferError, match="different channel blocks"):
        infer("cast", [T(1, 20, 4, 4, dtype="float16", fmt="NC1HWC0")], {"dtype": "int8"})


def test_conv_plans_are_marked_for_one_launch_with_their_weight_conversion():
    g = two_conv_block()
    result = optimize(g, dots=False)
    convs = [k for k in result.kernels if "conv2d" in k.anchor]
    assert len(convs) == 2 and all(k.mixed for k in convs)
    assert sum("its weight conversion" in line for line in result.fusion_log) == 2
    off = optimize(two_conv_block(), dots=False, disabled_passes=["mixed_kernels"])
    assert not any(k.mixed for k in off.kernels)
