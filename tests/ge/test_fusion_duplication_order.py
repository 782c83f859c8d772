"""Regression family of the one crash the differential fuzzer found (issue 7, part 8).

A cheap first op `c` feeds two consumers, one of which (`u`) is read both
directly and through a data-movement op or a keepdims reduction. `c` is
duplicated into its two consumer kernels; merging `c` into the first one
before moving the other consumer's edges to its copy reordered the kernels
by an edge about to vanish, so a later cycle check looked in the wrong
window and fusion built a cycle between kernels ("fusion produced a cycle").
"""
from __future__ import annotations

import numpy as np
import pytest

import pyasc
from pyasc.ge import DecisionKind, PassContext
from pyasc.ge.fusion import FusionPass
from pyasc.ir import Graph, TensorType, verify
from simulator import chips


def view_slice(u):
    return u[0]


def view_transpose(u):
    return u.T


def view_reshape(u):
    return u.reshape(4)


def view_expand_dims(u):
    return pyasc.expand_dims(u[0], 0)


def view_keepdims_max(u):
    return u.max(keepdims=True)


# Each view with an input shape where `n + view(u) + u` broadcasts and the view's kernel refuses `u`, so
# `u` tries the final kernel as an extra output: a data-movement view (an expand_dims is a broadcast, which
# fuses, so it follows a slice here), or a reduction whose rows do not fit the UB with `u` in it.
VIEWS = {
    "slice": (view_slice, (2,)),
    "T": (view_transpose, (2, 2)),
    "reshape": (view_reshape, (1, 4)),
    "expand_dims": (view_expand_dims, (2, 2)),
    "keepdims_reduce": (view_keepdims_max, (1024, 8)),
}
FIRST_OPS = {"abs": pyasc.abs, "relu": pyasc.relu, "floor": pyasc.floor, "ceil": pyasc.ceil, "sign": pyasc.sign}


def make_kernel(first, view, **options):
    def kern(x):
        c = first(x)
        n = c + 1.0
        u = c * 2.0
        return n + view(u) + u

    return pyasc.kernel(**options)(kern)


def sample(shape) -> np.ndarray:
    return np.linspace(-1.75, 1.5, int(np.prod(shape))).astype(np.float32).reshape(shape)


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("first", sorted(FIRST_OPS))
@pytest.mark.parametrize("opt_level, chip", [(1, "tiny"), (3, "910b")])
def test_the_family_compiles_and_agrees_with_numpy(first, view, opt_level, chip):
    fn, shape = VIEWS[view]
    k = make_kernel(FIRST_OPS[first], fn, opt_level=opt_level, chip=chip)
    x = sample(shape)
    np.testing.assert_allclose(k(x), k.py_func(x), rtol=1e-6)


def test_the_reported_kernel():
    k = make_kernel(pyasc.abs, view_slice, opt_level=1)
    x = np.array([-0.5, 1.25], np.float32)
    np.testing.assert_array_equal(k(x), np.array([3.5, 5.75], np.float32))


def test_the_duplicated_producer_leaves_a_topological_kernel_order():
    g = Graph("kern")
    x = g.add_input(TensorType((2,), "float32"), "x")
    c = g.add("abs", [x]).out()
    n = g.add("add", [c, g.const(1.0, "float32")]).out()
    u = g.add("mul", [c, g.const(2.0, "float32")]).out()
    s = g.add("squeeze", [g.add("slice", [u], {"starts": (0,), "stops": (1,), "steps": (1,)}).out()],
              {"axis": (0,)}).out()
    g.set_outputs([g.add("add", [g.add("add", [n, s]).out(), u]).out()])
    ctx = PassContext(opt_level=1, chip=chips.get("910b"))
    FusionPass().run(g, ctx)
    verify(g)
    duplicated = [d for d in ctx.state.fusion_decisions if d.kind is DecisionKind.DUPLICATED]
    assert [(d.producer, d.consumers) for d in duplicated] == [("abs %0", 2)]
    ready = {v for node in g.nodes if node.op in ("Data", "Const") for v in node.values}
    for k in ctx.state.kernels:  # every kernel reads only what earlier kernels produced
        assert all(v in ready for v in k.inputs), k.describe()
        ready.update(v for node in k.nodes for v in node.values)
    assert [k.ops for k in ctx.state.kernels] == [["abs", "mul"], ["slice"], ["squeeze"], ["abs", "add", "add", "add"]]
