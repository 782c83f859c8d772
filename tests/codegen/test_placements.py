"""Regression: a value computed in a vector kernel and given a size-1 axis that is not a leading one
(`expand_dims(sel, 2)` of a computed one-hot mask, `np.stack([...], axis=-1)` of computed halves as the llama
RoPE builds) sits in the kernel's domain where the inserted axis puts it, not where its own shape's trailing
alignment says; so do the inputs it was computed from. The vector templates read every input by its own shape,
a silent wrong result or a read past a GM buffer. Fusion used to stop short of such kernels only by accident
(the smaller candidate on the way failed the capacity check); since fusion checks capacity lazily
(5d4edf1) it reaches them. `codegen/alignment.py` now gives each input the placement its reader needs.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from conftest import assert_close
from pyasc.codegen.alignment import align, placements
from pyasc.codegen.domain import UnsupportedDomain
from pyasc.codegen.kernel_graph import KernelGraph
from pyasc.ir import Graph, TensorType


# ---- the analysis -------------------------------------------------------------------------------------


def test_align_moves_each_real_axis_with_its_axis_of_the_output():
    assert align((4, 1), (4, 4), (4, 4, 1)) == (4, 1, 1)
    assert align((4,), (4, 4), (4, 4, 1)) == (1, 4, 1)
    assert align((3,), (2, 3), (2, 1, 3)) == (1, 1, 3)
    assert align((2, 1), (2, 3), (2, 1, 3)) == (2, 1, 1)


def test_a_kernel_where_nothing_moves_reads_every_input_at_its_own_shape():
    g = Graph()
    a = g.add_input(TensorType((4,), "float32"))
    x = g.add_input(TensorType((3, 4), "float32"))
    s = g.add("add", [x, a])
    t = g.add("mul", [a, a])
    g.set_outputs([s.out(), t.out()])
    p = placements(KernelGraph(g, [a, x], [s.out(), t.out()]))
    assert p.trivial and not p.moved()
    assert p.operand_shape(s, a) == p.operand_shape(t, a) == (4,)  # one load of `a` serves both readers


def _one_hot_graph():
    g = Graph()
    a = g.add_input(TensorType((4, 1), "int32"))
    c = g.add_input(TensorType((1, 4), "int32"))
    x = g.add_input(TensorType((4, 3), "float32"))
    eq = g.add("eq", [a, c]).out()
    sel = g.add("expand_dims", [eq], {"axis": 2}).out()
    xs = g.add("expand_dims", [x], {"axis": 1}).out()
    w = g.add("where", [sel, xs, g.const(0.0, "float32")])
    g.set_outputs([w.out()])
    return KernelGraph(g, [a, c, x], [w.out()]), eq, w


def test_a_value_expanded_inside_the_kernel_and_its_operands_are_placed_by_the_expansion():
    kg, eq, where = _one_hot_graph()
    p = placements(kg)
    assert p.shape(eq) == (4, 4, 1)
    a, c = eq.node.inputs
    assert p.operand_shape(eq.node, a) == (4, 1, 1)   # one value per outer index, not per row
    assert p.operand_shape(eq.node, c) == (1, 4, 1)
    assert p.operand_shape(where, where.inputs[1]) == (4, 1, 3)  # the view of x: its own shape
    assert p.moved()


def test_a_value_needed_in_two_placements_is_refused_with_its_shapes():
    g = Graph()
    a = g.add_input(TensorType((4,), "float32"))
    b = g.add_input(TensorType((4,), "float32"))
    y = g.add("mul", [a, b]).out()
    d = g.add("sub", [g.add("expand_dims", [y], {"axis": 1}).out(), g.add("expand_dims", [y], {"axis": 0}).out()])
    g.set_outputs([d.out()])
    with pytest.raises(UnsupportedDomain, match=r"mul of shape \(4,\) is read in two placements \(\(4, 1\) and "
                                                r"\(4,\)\): a vector kernel computes a value once"):
        placements(KernelGraph(g, [a, b], [d.out()]))


def test_an_operand_of_a_per_row_epilogue_is_placed_per_row():
    g = Graph()
    x = g.add_input(TensorType((4, 4), "float32"))
    b = g.add_input(TensorType((4,), "float32"))
    s = g.add("sum", [x], {"axis": (1,), "keepdims": False}).out()
    t = g.add("tanh", [b]).out()
    m = g.add("maximum", [s, t])
    g.set_outputs([m.out()])
    kg = KernelGraph(g, [x, b], [m.out()])
    assert placements(kg, rank=2).shape(t) == (4, 1)    # one value per row of the (4, 4) rows
    assert placements(kg).shape(t) == (4,)              # no rows given: its own shape


def test_an_input_read_by_a_per_row_epilogue_is_placed_in_the_rows_coordinates():
    """A (4, 1) input times the (4, 4) row sums of a (4, 4, 4) x varies along the domain's first axis; aligned
    by its own shape with the domain's trailing axes it would vary along the second."""
    g = Graph()
    x = g.add_input(TensorType((4, 4, 4), "float32"))
    c = g.add_input(TensorType((4, 1), "float32"))
    s = g.add("sum", [x], {"axis": (2,), "keepdims": False}).out()
    m = g.add("mul", [s, c])
    g.set_outputs([m.out()])
    kg = KernelGraph(g, [x, c], [m.out()])
    assert placements(kg, rank=3).operand_shape(m, c) == (4, 1, 1)
    assert placements(kg).operand_shape(m, c) == (4, 1)  # no rows given: its own shape


def test_values_computed_from_a_reduction_keep_their_own_shape():
    """sum without keepdims and its axis put back: the row templates place those per row, as before."""
    g = Graph()
    x = g.add_input(TensorType((4, 6), "float32"))
    s = g.add("sum", [x], {"axis": (1,), "keepdims": False}).out()
    back = g.add("expand_dims", [s], {"axis": 1}).out()
    d = g.add("sub", [x, back])
    g.set_outputs([d.out()])
    p = placements(KernelGraph(g, [x], [d.out()]))
    assert p.shape(s) == (4,) and not p.moved()


# ---- kernels ---------------------------------------------------------------------------------------------


def _moved_in_one_kernel(compiled) -> bool:
    """Whether a kernel of the compiled graph computes a value and inserts a non-leading axis into it."""
    for n in compiled.graph.nodes:
        if n.op != "expand_dims" or "fusion_group" not in n.attrs:
            continue
        src = n.inputs[0].node
        axes = n.attrs["axis"] if isinstance(n.attrs["axis"], tuple) else (n.attrs["axis"],)
        leading = all(ax % n.outputs[0].ndim < len(axes) for ax in axes)
        if src.attrs.get("fusion_group") == n.attrs["fusion_group"] and not leading:
            return True
    return False


def one_hot_select(a, m, x):
    sel = (a.reshape(4, 1) == np.arange(4, dtype=np.int32).reshape(1, 4)) & m.reshape(4, 1)
    return np.where(np.expand_dims(sel, 2), np.expand_dims(x, 1), np.float32(0))


@pytest.mark.parametrize("chip", ["tiny", "910b"])
@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_one_hot_select_of_rows(opt_level, chip):
    """The reported repro: wrong at opt_level >= 1 (the mask was read per row instead of per outer index)."""
    a = np.array([0, 2, 2, 2], np.int32)
    m = np.array([True, False, True, True])
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    k = pyasc.kernel(one_hot_select, opt_level=opt_level, chip=chip)
    assert_close(k(a, m, x), k.py_func(a, m, x))
    if opt_level:
        assert _moved_in_one_kernel(k.compile(a, m, x))


def interleave(x, c, s):
    xr, xi = x[..., 0], x[..., 1]
    return np.stack([xr * c - xi * s, xr * s + xi * c], axis=-1)


@pytest.mark.parametrize("dynamic", [False, True])
def test_halves_computed_and_stacked_on_a_new_last_axis(dynamic):
    """The RoPE shape of the llama corpus cases: stack(axis=-1) is expand_dims(-1) of each computed half."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 2)).astype(np.float32)
    c = rng.standard_normal((5,)).astype(np.float32)
    s = rng.standard_normal((3, 5)).astype(np.float32)
    k = pyasc.kernel(interleave, chip="tiny", dynamic=dynamic)
    assert_close(k(x, c, s), k.py_func(x, c, s))
    assert _moved_in_one_kernel(k.compile(x, c, s))


def masked_row_sum(x, a, b):
    m = ((a > b) & (a > np.float32(0.1))) | (b < np.float32(-1))
    return np.sum(np.where(np.expand_dims(m, 1), x, np.float32(0)), axis=1)


A = np.array([1.0, -1.0, 2.0, 0.05], np.float32)   # a mask of both values: rows 0 and 3 kept
B = np.array([0.0, -2.0, 3.0, -1.5], np.float32)


def test_a_mask_computed_per_row_before_a_row_reduction():
    """A square x: the mask's own shape (4,) broadcasts to it by trailing alignment, so the whole kernel was
    formed and the mask read per column, a silent wrong result on main."""
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    k = pyasc.kernel(masked_row_sum, chip="tiny")
    assert_close(k(x, A, B), k.py_func(x, A, B))
    assert _moved_in_one_kernel(k.compile(x, A, B))
    x6 = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)
    assert_close(k(x6, A, B), k.py_func(x6, A, B))  # fusion's rule "not_row_shaped" splits this one


def masked_column_sum(x, a, b):
    m = ((a > b) & (a > np.float32(0.1))) | (b < np.float32(-1))
    return np.sum(np.where(np.expand_dims(m, 1), x, np.float32(0)), axis=0)


@pytest.mark.parametrize("cols", [4, 6])
def test_a_mask_computed_per_row_before_a_column_reduction(cols):
    """The column template reads the mask's inputs one value per reduced row (wrong on main for a square x)."""
    x = np.random.default_rng(5).standard_normal((4, cols)).astype(np.float32)
    k = pyasc.kernel(masked_column_sum, chip="tiny")
    assert_close(k(x, A, B), k.py_func(x, A, B))
    assert _moved_in_one_kernel(k.compile(x, A, B))


def scatter_sum(idx, vals):
    hit = idx.reshape(5, 1) == np.arange(3, dtype=np.int32).reshape(1, 3)
    return np.sum(np.where(np.expand_dims(hit, 2), np.expand_dims(vals, 1), np.float32(0)), axis=0)


def test_a_one_hot_selection_summed_over_its_leading_axis():
    """The scatter-rows shape (ops/scatter.py): the selection is one kernel with its mask; the column
    reduction after it is another (its kept axes broadcast differently, which the column template refuses)."""
    idx = np.array([2, 0, 2, 1, 0], np.int32)
    vals = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    k = pyasc.kernel(scatter_sum, chip="tiny")
    assert_close(k(idx, vals), k.py_func(idx, vals))
    assert _moved_in_one_kernel(k.compile(idx, vals))


def scaled_row_sums(x, b):
    return np.sum(x, -1) * (b + np.float32(1)), np.maximum(np.sum(x, -1), np.tanh(b))


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_value_computed_before_a_row_reduction_for_its_epilogue_is_per_row(dynamic):
    """`b + 1` is read by the reduction's epilogue, in the rows' coordinates: one value per row. With a
    square x its own shape also broadcasts as a row, and the template made it a full tile the per-row epilogue
    could not read (an internal KeyError since before uncapped fusion; found by the fuzzer)."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    k = pyasc.kernel(scaled_row_sums, chip="tiny", dynamic=dynamic)
    for got, want in zip(k(x, b), k.py_func(x, b)):
        assert_close(got, want)


def row_sums_scaled_per_outer_row(x, c):
    return np.sum(x, -1) * c


@pytest.mark.parametrize("c_shape", [(4, 1), (4,), (1, 4)])
def test_an_input_of_lower_rank_scales_the_row_sums_as_numpy_broadcasts_it(c_shape):
    """Wrong on main for a (4, 1) c (it was read one value per second-axis index)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 4, 4)).astype(np.float32)
    c = rng.standard_normal(c_shape).astype(np.float32)
    k = pyasc.kernel(row_sums_scaled_per_outer_row, chip="tiny")
    assert_close(k(x, c), k.py_func(x, c))
    assert len(k.compile(x, c).kernels) == 1  # the product is the reduction's epilogue


def pairwise(a, b):
    y = a * b
    return y[:, None] - y[None, :]


def test_a_value_wanted_in_two_placements_is_still_right():
    a, b = np.random.default_rng(4).standard_normal((2, 6)).astype(np.float32)
    k = pyasc.kernel(pairwise, chip="tiny")
    assert_close(k(a, b), k.py_func(a, b))


def scaled_middle_sum(x, s):
    return np.sum(x * s, axis=1)


@pytest.mark.parametrize("chip,shape", [("tiny", (4, 5, 4)), ("910b", (2, 512, 8))])
def test_an_input_of_one_value_per_outer_index_of_a_column_reduction(chip, shape):
    """A (N, 1, 1) operand of a reduction over the middle axis is one value per task (it was loaded once, the
    first task's value used for all: wrong on main; 910b splits each task's rows over cores)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal(shape).astype(np.float32)
    s = rng.standard_normal((shape[0], 1, 1)).astype(np.float32)
    k = pyasc.kernel(scaled_middle_sum, chip=chip)
    assert_close(k(x, s), k.py_func(x, s), rtol=1e-4, atol=1e-4)
    assert len(k.compile(x, s).kernels) == 1


def one_hot_gather(idx, table):
    hit = idx == np.arange(5, dtype=np.int32).reshape(1, 5)
    return np.sum(np.where(np.expand_dims(hit, 2), np.expand_dims(table, 0), np.int32(0)), axis=1, dtype=np.int32)


def test_a_one_hot_gather_summed_over_its_middle_axis():
    """np.take of an integer table (ops/search.py) in one column kernel: the mask's index operand, (4, 1) by its
    own shape, is placed at (4, 1, 1): one value per outer index."""
    idx = np.array([[4], [0], [4], [2]], np.int32)
    table = np.random.default_rng(9).integers(-9, 9, (5, 4)).astype(np.int32)
    k = pyasc.kernel(one_hot_gather, chip="tiny")
    assert_close(k(idx, table), k.py_func(idx, table))
    assert _moved_in_one_kernel(k.compile(idx, table))
