"""Pattern fusion: matmul epilogues, transpose flags, composite decomposition."""
from __future__ import annotations

import numpy as np
import pytest
from ge_equiv import check_equivalent, count, ops_of, run_passes

from pyasc.ge.pattern import DecomposeComposites, MatmulEpilogueFusion, MatmulTransposeFold, SplitReductions
from pyasc.ge.edit import would_create_cycle
from pyasc.ge.simplify import DCE
from pyasc.ir import Graph, TensorType


def graph(*types: TensorType) -> tuple[Graph, list]:
    g = Graph("main")
    return g, [g.add_input(t, f"x{i}") for i, t in enumerate(types)]


def op(g: Graph, name: str, *inputs, **attrs):
    return g.add(name, list(inputs), attrs).out()


def t(shape, dtype="float32") -> TensorType:
    return TensorType(shape, dtype)


# ---- composite decomposition ----------------------------------------------------------------


def composite_graph(name: str, dtype: str = "float32") -> Graph:
    g, (x, w, b) = graph(t((4, 16), dtype), t((16,), dtype), t((16,), dtype))
    if name == "layer_norm":
        y = op(g, "layer_norm", x, w, b, eps=1e-5, has_weight=True, has_bias=True)
    elif name == "rms_norm":
        y = op(g, "rms_norm", x, w, eps=1e-6, has_weight=True)
    else:
        y = op(g, name, x)
    g.set_outputs([y])
    return g


@pytest.mark.parametrize("name", ["gelu", "silu", "log_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_composites_without_a_dedicated_lowering_are_decomposed(name, dtype):
    g, changed = check_equivalent(lambda: composite_graph(name, dtype), [DecomposeComposites()])
    assert changed and count(g, name) == 0
    assert all(not op_def_composite(n.op) for n in g.nodes)


def op_def_composite(name: str) -> bool:
    from pyasc import ops

    return ops.get(name).composite


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_norm"])
def test_dedicated_composites_are_kept_whole(name):
    g = composite_graph(name)
    changed, _ = run_passes(g, [DecomposeComposites()])
    assert not changed and count(g, name) == 1


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_norm"])
def test_dedicated_composites_decompose_when_the_knob_says_no_lowering(name):
    g, changed = check_equivalent(lambda: composite_graph(name), [DecomposeComposites()],
                                  knobs={"dedicated_lowerings": set()})
    assert changed and count(g, name) == 0


def test_decomposition_runs_at_opt_level_0_and_keeps_order():
    g = composite_graph("gelu")
    run_passes(g, [DecomposeComposites()], opt_level=0)
    assert count(g, "gelu") == 0 and g.outputs[0].node is g.nodes[-1]


def test_decomposition_does_not_fire_without_composites():
    g, (x,) = graph(t((4, 8)))
    g.set_outputs([op(g, "exp", x)])
    changed, _ = run_passes(g, [DecomposeComposites()])
    assert not changed


# ---- transpose flags ---------------------------------------------------------------------------


def transposed_matmul(batched: bool = False, extra_user: bool = False, flag: bool = False) -> Graph:
    """matmul(a.T, b.T) with a (…, 8, 4) and b (…, 6, 8); `flag`: a.T written as transpose(transpose(a)).T."""
    pre = (2,) if batched else ()
    n = len(pre) + 2
    swap = tuple(range(n - 2)) + (n - 1, n - 2)
    g, (a, b) = graph(t(pre + (8, 4)), t(pre + (6, 8)))
    lhs, rhs = op(g, "transpose", a, axes=swap), op(g, "transpose", b, axes=swap)
    if flag:
        y = op(g, "matmul", op(g, "transpose", lhs, axes=swap), rhs, transpose_a=True)
    else:
        y = op(g, "matmul", lhs, rhs)
    outs = [y]
    if extra_user:
        outs.append(op(g, "exp", rhs))
    g.set_outputs(outs)
    return g


@pytest.mark.parametrize("batched", [False, True])
def test_transposes_become_matmul_flags(batched):
    g, changed = check_equivalent(lambda: transposed_matmul(batched), [MatmulTransposeFold(), DCE()])
    assert changed and count(g, "transpose") == 0
    mm = g.outputs[0].node
    assert mm.attrs["transpose_a"] is True and mm.attrs["transpose_b"] is True
    assert all(v.node.op == "Data" for v in mm.inputs)


def test_nested_transposes_toggle_the_flag_each_time():
    g, changed = check_equivalent(lambda: transposed_matmul(flag=True), [MatmulTransposeFold(), DCE()])
    mm = g.outputs[0].node
    # matmul(T(T(a)), T(b), transpose_a=True): two swaps toggle the flag twice
    assert changed and mm.attrs["transpose_a"] is True and mm.attrs["transpose_b"] is True
    assert count(g, "transpose") == 0 and all(v.node.op == "Data" for v in mm.inputs)


def test_transpose_with_other_users_stays_for_them():
    g, changed = check_equivalent(lambda: transposed_matmul(extra_user=True), [MatmulTransposeFold(), DCE()])
    assert changed and count(g, "transpose") == 1
    assert g.outputs[0].node.inputs[1].node.op == "Data"


def test_transpose_flag_does_not_fire_for_other_permutations():
    g, (a, b) = graph(t((2, 8, 4)), t((8, 4, 6)))
    g.set_outputs([op(g, "matmul", op(g, "transpose", a, axes=(1, 0, 2)), b)])  # (8, 2, 4) @ (8, 4, 6)
    changed, _ = run_passes(g, [MatmulTransposeFold()])
    assert not changed and count(g, "transpose") == 1


def test_transpose_flag_needs_a_swap_of_the_last_two_axes_even_when_shapes_agree():
    # on a cube of equal dims every permutation keeps the shape: only the permutation check can refuse
    g, changed = check_equivalent(lambda: _cube_transpose_matmul((1, 0, 2)), [MatmulTransposeFold()])
    assert not changed and count(g, "transpose") == 1
    g, changed = check_equivalent(lambda: _cube_transpose_matmul((0, 2, 1)), [MatmulTransposeFold(), DCE()])
    assert changed and count(g, "transpose") == 0 and g.outputs[0].node.attrs["transpose_a"] is True


def _cube_transpose_matmul(axes) -> Graph:
    g, (a, b) = graph(t((4, 4, 4)), t((4, 4, 4)))
    g.set_outputs([op(g, "matmul", op(g, "transpose", a, axes=axes), b)])
    return g


# ---- matmul epilogue ---------------------------------------------------------------------------------


def epilogue(bias_shape=(6,), relu=True, cast=None, dtype="float32", bias_left=False, mm_extra=False,
             bias_extra=False, relu_extra=False) -> Graph:
    g, ins = graph(t((4, 8), dtype), t((8, 6), dtype), *([t(bias_shape, dtype)] if bias_shape else []))
    y = mm = op(g, "matmul", ins[0], ins[1])
    outs = []
    if bias_shape:
        y = op(g, "add", ins[2], y) if bias_left else op(g, "add", y, ins[2])
        if bias_extra:
            outs.append(op(g, "exp", y))
    if relu:
        y = op(g, "relu", y)
        if relu_extra:
            outs.append(op(g, "exp", y))
    if cast:
        y = op(g, "cast", y, dtype=cast)
    if mm_extra:
        outs.append(op(g, "neg", mm))
    g.set_outputs([y] + outs)
    return g


@pytest.mark.parametrize("kw, attrs", [
    ({}, {"has_bias": True, "activation": "relu", "out_dtype": None}),
    ({"bias_shape": (1, 6)}, {"has_bias": True, "activation": "relu", "out_dtype": None}),
    ({"bias_left": True}, {"has_bias": True, "activation": "relu", "out_dtype": None}),
    ({"relu": False}, {"has_bias": True, "activation": None, "out_dtype": None}),
    ({"bias_shape": None}, {"has_bias": False, "activation": "relu", "out_dtype": None}),
    ({"cast": "float16"}, {"has_bias": True, "activation": "relu", "out_dtype": "float16"}),
    ({"dtype": "float16", "cast": "float32"}, {"has_bias": True, "activation": "relu", "out_dtype": "float32"}),
    ({"bias_shape": None, "relu": False, "cast": "float16"},
     {"has_bias": False, "activation": None, "out_dtype": "float16"}),
])
def test_matmul_epilogue_becomes_one_fused_matmul(kw, attrs):
    g, changed = check_equivalent(lambda: epilogue(**kw), [MatmulEpilogueFusion()])
    assert changed and ops_of(g) == ["fused_matmul"]
    fused = g.nodes[-1]
    assert {k: fused.attrs[k] for k in attrs} == attrs
    assert len(fused.inputs) == (3 if attrs["has_bias"] else 2)
    assert fused.attrs["transpose_a"] is False and fused.attrs["transpose_b"] is False


def test_epilogue_stops_where_an_intermediate_has_another_reader():
    g, changed = check_equivalent(lambda: epilogue(bias_extra=True), [MatmulEpilogueFusion()])
    assert changed and ops_of(g) == ["fused_matmul", "exp", "relu"]
    assert g.nodes[-3].attrs["activation"] is None and g.nodes[-3].attrs["has_bias"] is True


def test_the_last_node_of_the_pattern_may_have_many_readers():
    g, changed = check_equivalent(lambda: epilogue(relu_extra=True), [MatmulEpilogueFusion()])
    assert changed and ops_of(g) == ["fused_matmul", "exp"] and g.nodes[-2].attrs["activation"] == "relu"


@pytest.mark.parametrize("kw", [
    {"mm_extra": True},                          # the product itself is read elsewhere: not self-contained
    {"bias_shape": (4, 1), "relu": False},       # a column, not a row: not a bias
    {"bias_shape": (4, 6), "relu": False},       # a full matrix: not a bias
    {"bias_shape": None, "relu": False, "cast": "int8"},  # FixPipe casts to floats only
])
def test_epilogue_does_not_fire(kw):
    g = epilogue(**kw)
    before = ops_of(g)
    changed, _ = run_passes(g, [MatmulEpilogueFusion()])
    assert not changed and ops_of(g) == before


def test_epilogue_does_not_fire_when_the_bias_add_promotes():
    g, (a, b, bias) = graph(t((4, 8), "float16"), t((8, 6), "float16"), t((6,), "float32"))
    g.set_outputs([op(g, "add", op(g, "matmul", a, b), bias)])  # f16 product + f32 bias is f32
    changed, _ = run_passes(g, [MatmulEpilogueFusion()])
    assert not changed


def test_epilogue_extends_an_existing_fused_matmul():
    def build():
        g, (a, b, bias) = graph(t((4, 8)), t((8, 6)), t((6,)))
        fused = op(g, "fused_matmul", a, b, bias, has_bias=True, activation=None, out_dtype=None,
                   transpose_a=False, transpose_b=False)
        g.set_outputs([op(g, "relu", fused)])
        return g

    g, changed = check_equivalent(build, [MatmulEpilogueFusion()])
    assert changed and ops_of(g) == ["fused_matmul"] and g.nodes[-1].attrs["activation"] == "relu"


def test_transposed_operands_and_epilogue_fuse_together():
    def build():
        g, (a, b, bias) = graph(t((8, 4)), t((8, 6)), t((6,)))
        y = op(g, "relu", op(g, "add", op(g, "matmul", op(g, "transpose", a, axes=(1, 0)), b), bias))
        g.set_outputs([y])
        return g

    g, changed = check_equivalent(build, [MatmulTransposeFold(), MatmulEpilogueFusion(), DCE()])
    assert changed and ops_of(g) == ["fused_matmul"]
    assert g.nodes[-1].attrs["transpose_a"] is True


def test_cycle_check_sees_an_input_computed_from_the_pattern():
    g, (a, b) = graph(t((4, 8)), t((8, 6)))
    mm = g.add("matmul", [a, b])
    derived = op(g, "exp", mm.out())
    add = g.add("add", [mm.out(), derived])
    assert would_create_cycle([a, b, derived], [mm, add])
    assert not would_create_cycle([a, b], [mm, add])


def test_a_bias_computed_from_the_product_is_not_fused():
    # relu(mm + sum(mm, axis=0)): the "bias" row depends on the product, so the pattern is not
    # self-contained (and folding it into the matmul would make the fused node read its own result)
    def build():
        g, (a, b) = graph(t((4, 8)), t((8, 6)))
        mm = op(g, "matmul", a, b)
        g.set_outputs([op(g, "relu", op(g, "add", mm, op(g, "sum", mm, axis=0)))])
        return g

    g, changed = check_equivalent(build, [MatmulEpilogueFusion()])
    assert not changed and count(g, "fused_matmul") == 0


def test_a_decomposition_of_the_wrong_type_is_reported(monkeypatch):
    import dataclasses

    from pyasc.ops import registry

    def wrong(graph, inputs, attrs, loc=None):
        return [graph.add("cast", [inputs[0]], {"dtype": "float16"}, loc).out()]

    monkeypatch.setitem(registry._REGISTRY, "silu", dataclasses.replace(registry.get("silu"), decompose=wrong))
    g, (x,) = graph(t((4, 8)))
    g.set_outputs([op(g, "silu", x)])
    with pytest.raises(RuntimeError, match=r"the decomposition of silu returns f16\[4,8\] where the op infers f32\[4,8\]"):
        run_passes(g, [DecomposeComposites()])


# ---- results that read nothing ------------------------------------------------------------------


def empty_operand_graph(name: str) -> Graph:
    if name == "matmul":
        g, (x, w, y) = graph(t((2, 0)), t((0, 3)), t((2, 3)))
        r = op(g, "matmul", x, w)
    else:
        g, (x, y) = graph(t((2, 0, 5)), t((2, 5)))
        r = op(g, name, x, axis=(1,), keepdims=False)
    g.set_outputs([op(g, "add", r, y)])
    return g


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's mean of nothing, interpreting the graph before
@pytest.mark.parametrize("name, fill", [("sum", 0.0), ("mean", "nan"), ("matmul", 0.0)])
def test_a_reduction_or_matmul_over_nothing_is_a_fill_at_opt_level_0(name, fill):
    """Fused with `+ y`, the empty operand once stood for the kernel's only input: y was dropped."""
    g, changed = check_equivalent(lambda: empty_operand_graph(name), [SplitReductions(), DCE()], opt_level=0)
    assert changed and count(g, name) == 0 and ops_of(g) == ["full", "add"]
    full = next(n for n in g.nodes if n.op == "full")
    assert str(full.attrs["fill_value"]) == str(fill) and full.outputs[0] == g.nodes[-1].inputs[0].type


def accumulator_epilogue(cast="float32", floor=0.0, bias_dtype="float32") -> Graph:
    """relu-like max(cast(a @ b) + bias, floor): the product cast before its bias (numpy's `.astype` first)."""
    g, (a, b, bias) = graph(t((4, 8), "float16"), t((8, 6), "float16"), t((6,), bias_dtype))
    y = op(g, "add", op(g, "cast", op(g, "matmul", a, b), dtype=cast), bias)
    g.set_outputs([op(g, "maximum", y, g.const(np.array(floor, dtype=y.type.dtype)))])
    return g


def test_a_bias_and_relu_after_a_cast_to_float32_stay_on_the_cube():
    g, changed = check_equivalent(accumulator_epilogue, [MatmulEpilogueFusion()])
    assert changed and [o for o in ops_of(g) if o != "Const"] == ["fused_matmul"]
    fused = next(n for n in g.nodes if n.op == "fused_matmul")
    assert {k: fused.attrs[k] for k in ("has_bias", "activation", "out_dtype")} == \
        {"has_bias": True, "activation": "relu", "out_dtype": "float32"}


@pytest.mark.parametrize("kw, left", [
    ({"cast": "float16", "bias_dtype": "float16"}, ["add", "maximum"]),   # a rounding cast ends the chain
    ({"floor": 1.0}, ["maximum"]),                                          # max(x, 1) is not a ReLU
])
def test_steps_after_a_cast_stay_apart_unless_it_keeps_the_accumulator(kw, left):
    g, changed = check_equivalent(lambda: accumulator_epilogue(**kw), [MatmulEpilogueFusion()])
    assert changed and [o for o in ops_of(g) if o != "Const"] == ["fused_matmul"] + left
