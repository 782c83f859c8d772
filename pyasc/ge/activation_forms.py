"""Activation forms: the tanh GELU in the form the vector unit computes fastest.

`0.5 * x * (1 + tanh(z))` (GELU's tanh approximation, as picoGPT writes it and as `pyasc.gelu` decomposes)
equals `x * sigmoid(2 z)` = `x / (1 + exp(-2 z))`, the form vendor GELU kernels evaluate. On the vector unit
tanh is a composite function (the slowest cost class) while exp and div are single instructions: per element
the rewrite spends exp + add + div instead of tanh + add + two muls (910b, float16: 9 cycles a repeat instead
of 16), and a mixed launch's epilogue tail (the last block's vector work after the cube is done) shrinks with
it. `z` is usually `c * y` (c = sqrt(2/pi)); the -2 folds into that constant exactly (a power of two scales
the product without another rounding).

The results differ from the literal form by rounding only, within float16 tolerance (the literal form loses
precision in `1 + tanh(z)` near -1, the rewrite in the division). The rule is one of `algebraic_simplify`'s
(ge/simplify.py `ALGEBRAIC_RULES`): `disable_passes=["algebraic_simplify"]` keeps the literal form.
"""
from __future__ import annotations

from .. import dtypes
from ..ir import Node, Value
from .edit import build_node, const_node, uniform_scalar
from .rewrite import Replacement, Rewriter


def _read_once(v: Value, rw: Rewriter) -> bool:
    """Only the pattern reads `v` (one reader, not a graph output): the rewrite leaves nothing of it behind."""
    return len(rw.uses.readers(v)) == 1 and v not in rw.graph.outputs


def _scaled(v: Value, rw: Rewriter) -> tuple[float, Value] | None:
    """(c, y) when `v` is `c * y` (either order) with a scalar constant c and v read once, else None."""
    n = v.node
    if n.op != "mul" or not _read_once(v, rw):
        return None
    for k in (0, 1):
        c = uniform_scalar(n.inputs[k])
        y = n.inputs[1 - k]
        if c is not None and not isinstance(c, bool) and y.type == v.type:
            return float(c), y
    return None


def _one_plus_tanh(v: Value, rw: Rewriter) -> Value | None:
    """z when `v` is `1 + tanh(z)` (either order) and both v and tanh(z) are read once, else None."""
    n = v.node
    if n.op != "add" or not _read_once(v, rw):
        return None
    for k in (0, 1):
        t = n.inputs[1 - k]
        if uniform_scalar(n.inputs[k]) == 1 and t.node.op == "tanh" and _read_once(t, rw) and t.type == v.type:
            return t.node.inputs[0]
    return None


def _add_const(nodes: list[Node], value: float, dtype: str, at: Node) -> Value:
    nodes.append(const_node(value, dtype, loc=at.loc))
    return nodes[-1].out()


def _add_node(nodes: list[Node], op: str, *inputs: Value | None, at: Node, name: str | None = None
              ) -> Value | None:
    """Append `op(*inputs)` to `nodes` and return its value (None when an input is None or inference rejects it)."""
    if any(v is None for v in inputs):
        return None
    n = build_node(op, inputs, loc=at.loc, name=name)
    if n is None:
        return None
    nodes.append(n)
    return n.out()


def gelu_tanh_as_sigmoid(node: Node, rw: Rewriter | None) -> Replacement | None:
    """`(0.5 * x) * (1 + tanh(z))` (either order) -> `x / (1 + exp(-2 z))`, for a float result whose operands all
    have its type, when nothing else reads the pattern's intermediate values."""
    out = node.outputs[0]
    if rw is None or not dtypes.is_float(out.dtype):   # (`simplify.rewrite_node` offers nodes without a graph)
        return None
    for k in (0, 1):
        half = _scaled(node.inputs[k], rw)
        z = _one_plus_tanh(node.inputs[1 - k], rw)
        if half is None or z is None or half[0] != 0.5 or z.type != out:
            continue
        inner = _scaled(z, rw)
        scale, base = (-2.0 * inner[0], inner[1]) if inner is not None else (-2.0, z)
        nodes: list[Node] = []
        minus_two_z = _add_node(nodes, "mul", base, _add_const(nodes, scale, out.dtype, node), at=node)
        e = _add_node(nodes, "exp", minus_two_z, at=node)
        denominator = _add_node(nodes, "add", e, _add_const(nodes, 1.0, out.dtype, node), at=node)
        result = _add_node(nodes, "div", half[1], denominator, at=node, name=node.name)
        return None if result is None else Replacement([result], nodes)
    return None
