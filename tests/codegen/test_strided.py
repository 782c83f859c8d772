"""codegen/strided.py: where a chain of view ops puts each element, checked against numpy's own views."""
import numpy as np
import pytest

from pyasc.codegen.kernel_graph import build_kernel_graph
from pyasc import ops
from pyasc.codegen.strided import VIEW_RULES, Layout, operand_layout, reshaped, result_layout
from pyasc.ir import Graph, TensorType


def _elements(base: np.ndarray, lay: Layout) -> np.ndarray:
    """The view `lay` describes, read from `base` (row-major) by its strides."""
    flat = base.ravel()
    idx = np.full(lay.shape, lay.offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(lay.shape, lay.strides)):
        shape = [1] * len(lay.shape)
        shape[axis] = n
        idx = idx + (np.arange(n) * s).reshape(shape)
    return flat[idx]


CHAINS = [
    # (base shape, [(op, attrs)], what numpy does)
    ((8, 24), [("slice", dict(starts=(0, 8), stops=(8, 16), steps=(1, 1))), ("reshape", dict(shape=(8, 2, 4))),
               ("transpose", dict(axes=(1, 0, 2)))],
     lambda a: a[:, 8:16].reshape(8, 2, 4).transpose(1, 0, 2)),
    ((2, 6, 8), [("reshape", dict(shape=(2, 6, 2, 4))), ("transpose", dict(axes=(0, 2, 1, 3)))],
     lambda a: a.reshape(2, 6, 2, 4).transpose(0, 2, 1, 3)),
    ((6, 10), [("slice", dict(starts=(1, 0), stops=(6, 10), steps=(2, 3)))], lambda a: a[1::2, ::3]),
    ((4, 6), [("transpose", dict(axes=None))], lambda a: a.T),
    ((3, 5), [("expand_dims", dict(axis=0)), ("broadcast_to", dict(shape=(2, 3, 5)))],
     lambda a: np.broadcast_to(a[None], (2, 3, 5))),
    ((1, 4, 1, 6), [("squeeze", dict(axis=None)), ("reshape", dict(shape=(24,)))], lambda a: a.reshape(24)),
]


def _chain(base_shape, steps):
    g = Graph("views")
    v = g.add_input(TensorType(base_shape, "float32"), name="x")
    x = v
    for op, attrs in steps:
        v = g.add(op, [v], attrs).out()
    return g, x, v


@pytest.mark.parametrize("base_shape, steps, numpy_view", CHAINS)
def test_a_chain_of_views_lays_out_what_numpy_views(base_shape, steps, numpy_view):
    g, x, v = _chain(base_shape, steps)
    g.set_outputs([v])
    kg = build_kernel_graph("k", [n for n in g.nodes if n.op != "Data"], [x], [v])
    found = operand_layout(kg.graph.outputs[0])
    assert not isinstance(found, str), found
    data, lay = found
    base = np.arange(np.prod(base_shape), dtype=np.float32).reshape(base_shape)
    np.testing.assert_array_equal(_elements(base, lay), numpy_view(base))


def test_a_reshape_numpy_would_copy_is_no_layout():
    # the columns 8:16 of each row are not one block: merging the rows needs a copy (numpy's reshape copies too)
    lay = Layout((8, 8), (24, 1), 8)
    assert reshaped(lay, (64,)) is None
    assert reshaped(lay, (8, 2, 4)) == Layout((8, 2, 4), (24, 4, 1), 8)
    g, x, v = _chain((8, 24), [("slice", dict(starts=(0, 8), stops=(8, 16), steps=(1, 1))),
                            ("reshape", dict(shape=(64,)))])
    g.set_outputs([v])
    kg = build_kernel_graph("k", [n for n in g.nodes if n.op != "Data"], [x], [v])
    assert "strides cannot express" in operand_layout(kg.graph.outputs[0])


def test_a_result_written_through_a_transpose_and_a_reshape():
    """o (H, T, D) -> transpose (T, H, D) -> reshape (T, H*D): o's element (h, t, d) is at t*H*D + h*D + d."""
    g = Graph("out")
    o = g.add_input(TensorType((2, 3, 4), "float32"), name="o")
    t = g.add("transpose", [o], dict(axes=(1, 0, 2))).out()
    r = g.add("reshape", [t], dict(shape=(3, 8))).out()
    g.set_outputs([r])
    kg = build_kernel_graph("k", [n for n in g.nodes if n.op != "Data"], [o], [r])
    index, lay = result_layout(kg, kg.graph.nodes[1].inputs[0])
    want = np.arange(24).reshape(2, 3, 4).transpose(1, 0, 2).reshape(3, 8)     # element values = o's flat index
    placed = np.empty(24, dtype=np.int64)
    placed[_elements(np.arange(24), lay).ravel()] = np.arange(24)
    assert index == 0 and (placed.reshape(3, 8) == want).all()



def test_every_op_the_registry_calls_a_view_has_a_layout_rule():
    """Fusion proposes the ops the registry marks strided_view; codegen must know how each moves a layout."""
    assert {n for n in ops.names() if ops.get(n).strided_view} == set(VIEW_RULES)


def test_a_vector_kernel_reads_a_view_in_its_placement():
    """view_read: the view placed with a size-1 axis inserted, its broadcast axes as size 1 (numpy broadcasts
    them), and no layout when the strides are the input's own (the input is read as it is)."""
    from pyasc.codegen.strided import is_input_view, view_read
    g, x, v = _chain((6, 8), [("slice", dict(starts=(1, 4), stops=(6, 8), steps=(1, 1))),
                              ("broadcast_to", dict(shape=(3, 5, 4)))])
    assert is_input_view(v)
    read = view_read(v, (3, 5, 1, 4))
    assert read.root is x and read.shape == (1, 5, 1, 4)
    assert (read.layout.strides[1], read.layout.strides[3], read.layout.offset) == (8, 1, 12)
    base = np.arange(48.0).reshape(6, 8)
    assert np.array_equal(_elements(base, read.layout)[0, :, 0, :], base[1:, 4:])
    g, x, v = _chain((6, 8), [("slice", dict(starts=(2, 0), stops=(6, 8), steps=(1, 1)))])
    assert view_read(v, (4, 8)).layout is not None              # starts two rows in
    g, x, v = _chain((6, 8), [("reshape", dict(shape=(3, 2, 8)))])
    assert view_read(v, (3, 2, 8)).layout is None               # the input's bytes in order
    g, x, v = _chain((6, 8), [("broadcast_to", dict(shape=(2, 6, 8)))])
    assert not is_input_view(v)                                 # broadcasts alone stay computed


def test_dims_a_view_strides_apart_never_collapse():
    from pyasc.codegen.domain import input_layout, pointwise_domain, view_cuts
    # x (5, 21) read as x.reshape(5, 3, 7).transpose(1, 0, 2): strides (7, 21, 1)
    cuts = view_cuts((3, 5, 7), (3, 5, 7), (7, 21, 1))
    assert cuts == {1, 2}
    d = pointwise_domain((3, 5, 7), [(3, 5, 7)], frozenset(cuts))
    assert (d.outer, d.R, d.C) == ((3,), 5, 7)
    lay = input_layout(d, (3, 5, 7), view=((7, 21, 1), 0))
    assert (lay.cls, lay.o_strides, lay.r_stride) == ("full", (7,), 21)
