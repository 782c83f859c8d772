"""Sample graphs shared by the tests/test_ir_*.py modules (built with the seed ops only).

`build_sample()` covers what the printer/DOT/JSON/verifier/interpreter must
handle: named and unnamed inputs, a non-ND format, a short and a long
constant, a fusion-group annotation, an If with two outputs, reductions.
"""
from __future__ import annotations

import numpy as np

from pyasc.errors import SourceLoc
from pyasc.ir import Graph, Sym, TensorType, verify

F32_4x8 = TensorType((4, 8), "float32")


def build_branches() -> tuple[Graph, Graph]:
    then_g = Graph("then")
    a = then_g.add_input(F32_4x8, name="a")
    b = then_g.add_input(TensorType((8,), "float32"), name="b")
    then_g.set_outputs([then_g.add("add", [a, b]).out(), then_g.add("relu", [a]).out()])

    else_g = Graph("else")
    a = else_g.add_input(F32_4x8)
    else_g.add_input(TensorType((8,), "float32"))
    else_g.set_outputs([else_g.add("relu", [a]).out(), else_g.add("mul", [a, a]).out()])
    return then_g, else_g


def build_sample(filename: str = "/src/kernels/sample.py") -> Graph:
    g = Graph("main")
    x = g.add_input(F32_4x8, name="x", loc=SourceLoc(filename, 3, 11, 3, 12))
    c = g.add_input(TensorType((), "bool"), name="c")
    z = g.add_input(TensorType((16, 16), "float16", "FRACTAL_NZ"))
    w = g.const(np.arange(8, dtype=np.float32) / 2, name="w")
    two = g.const(2.0)
    k = g.const(np.array([[1], [2], [3], [-4]], dtype=np.float32))
    y = g.add("mul", [x, two], name="y", loc=SourceLoc(filename, 4, 8, 4, 13))
    y.attrs["fusion_group"] = 0
    e = g.add("exp", [y.out()], name="e")
    e.attrs["fusion_group"] = 0
    then_g, else_g = build_branches()
    branch = g.add("If", [c, y.out(), w], {"then_branch": then_g, "else_branch": else_g})
    r = g.add("sum", [branch.out(0)], {"axis": 1, "keepdims": False})
    q = g.add("add", [branch.out(1), e.out()])
    q2 = g.add("add", [q.out(), k])
    rz = g.add("relu", [z])
    g.set_outputs([r.out(), q2.out(), rz.out()])
    return g


def sample_inputs(cond: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [
        rng.standard_normal((4, 8)).astype(np.float32),
        np.array(cond),
        rng.standard_normal((16, 16)).astype(np.float16),
    ]


def sample_expected(x: np.ndarray, cond: np.ndarray, z: np.ndarray) -> list[np.ndarray]:
    """What build_sample() computes, written directly in numpy."""
    w = np.arange(8, dtype=np.float32) / 2
    y = x * np.float32(2.0)
    e = np.exp(y)
    if cond:
        o0, o1 = y + w, np.maximum(y, 0)
    else:
        o0, o1 = np.maximum(y, 0), y * y
    k = np.array([[1], [2], [3], [-4]], dtype=np.float32)
    return [o0.sum(axis=1, dtype=np.float32), o1 + e + k, np.maximum(z, np.float16(0))]


def build_dynamic() -> Graph:
    """Symbolic dims: x is (N, 8), v is (N,) and an expression dim in a branch-free graph."""
    g = Graph("dyn")
    n = Sym("N")
    x = g.add_input(TensorType((n, 8), "float32"), name="x")
    v = g.add_input(TensorType((n, 1), "float32"), name="v")
    s = g.add("add", [x, v])
    g.set_outputs([g.add("sum", [s.out()], {"axis": 0, "keepdims": True}).out(), s.out()])
    return g


def _single_branch(op: str, with_cond: bool) -> Graph:
    g = Graph(op)
    if with_cond:
        g.add_input(TensorType((1,), "bool"))
    x = g.add_input(TensorType((4,), "float32"))
    g.set_outputs([g.add(op, [x, x] if op == "mul" else [x]).out()])
    return g


def nested_if_graph() -> Graph:
    """outer ? (inner ? exp(x) : relu(x)) : x * x, with one-element conditions."""
    outer_then = Graph("outer_then")
    inner_c = outer_then.add_input(TensorType((1,), "bool"))
    x = outer_then.add_input(TensorType((4,), "float32"))
    inner = outer_then.add("If", [inner_c, x], {"then_branch": _single_branch("exp", False),
                                                 "else_branch": _single_branch("relu", False)})
    outer_then.set_outputs([inner.out()])
    g = Graph("nested")
    outer_c = g.add_input(TensorType((1,), "bool"), name="outer")
    inner_c = g.add_input(TensorType((1,), "bool"), name="inner")
    x = g.add_input(TensorType((4,), "float32"), name="x")
    node = g.add("If", [outer_c, inner_c, x], {"then_branch": outer_then,
                                               "else_branch": _single_branch("mul", True)})
    g.set_outputs([node.out()])
    return g


def test_samples_are_valid_graphs():
    verify(build_sample())
    verify(build_dynamic())
    verify(nested_if_graph())
    for branch in build_branches():
        verify(branch)
