"""`vector_integer_matmul` (opt_level 0, a legalisation): integer products the cube cannot take run on the vector unit.

The cube multiplies float16, bfloat16, float32 and int8 (`pyasc.target.CUBE_DTYPES`). An integer
product whose operands promote to anything else (int16, uint8, int32, int8 @ uint8 -> int16) has no cube
route, and casting it to a float type would round once sums pass 2**24. So it is rewritten into the
exact vector form XLA's dot decomposition uses for types without a dot unit:

    a @ b  ==  sum(reshape(a, (..., M, K, 1)).astype(int32) * reshape(b, (..., 1, K, N)).astype(int32), axis=-2)

then the 1-D operands' added axes are dropped. Every step wraps modulo 2**32 like numpy's int32 matmul,
and int16 / uint8 products accumulate in int32 (`ops.matmul.accumulate_dtype`), so results are exact.
The reshapes are views and the casts and the multiply fuse into the reduction: one vector kernel that
never writes the (M, K, N) product to GM. `fused_matmul` (bias, ReLU, cast) is expanded the same way,
followed by its epilogue ops.
"""
from __future__ import annotations

from typing import Sequence

from .. import dtypes
from ..ir import Node, Value
from ..target import CUBE_DTYPES
from ..tensor_type import Sym
from .edit import build_node
from .passes import PassContext
from .rewrite import Replacement, RewriteRule, Rewriter, RulePass


def needs_vector_route(a_dtype: str, b_dtype: str) -> bool:
    promoted = dtypes.promote(a_dtype, b_dtype)
    return dtypes.is_int(promoted) and promoted not in CUBE_DTYPES


class _Builder:
    """Collects the replacement's nodes; any step the registry rejects aborts the rewrite (None)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.added: list[Node] = []

    def op(self, name: str, inputs: Sequence[Value], **attrs) -> Value:
        n = build_node(name, list(inputs), attrs, loc=self.node.loc)
        if n is None:
            raise _Abort(name)
        self.added.append(n)
        return n.out()


class _Abort(Exception):
    pass


def _swap_last(b: _Builder, v: Value) -> Value:
    nd = v.type.ndim
    return b.op("transpose", [v], axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _product(b: _Builder, a: Value, w: Value, transpose_a: bool, transpose_b: bool) -> Value:
    if transpose_a and a.type.ndim >= 2:
        a = _swap_last(b, a)
    if transpose_b and w.type.ndim >= 2:
        w = _swap_last(b, w)
    acc = "int32"
    sa, sw = tuple(a.type.shape), tuple(w.type.shape)
    a_vec, w_vec = len(sa) == 1, len(sw) == 1
    a4 = b.op("reshape", [a], shape=(sa if not a_vec else (1,) + sa) + (1,))
    w4 = b.op("reshape", [w], shape=sw[:-2] + (1,) + sw[-2:] if not w_vec else (1,) + sw + (1,))
    # the casts come after the reshapes: a cast of the reshaped view fuses into the multiply
    if a4.type.dtype != acc:
        a4 = b.op("cast", [a4], dtype=acc)
    if w4.type.dtype != acc:
        w4 = b.op("cast", [w4], dtype=acc)
    out = b.op("sum", [b.op("mul", [a4, w4])], axis=-2, keepdims=False)
    return out


def _matmul_value(b: _Builder, node: Node) -> Value:
    a, w = node.inputs[0], node.inputs[1]
    y = _product(b, a, w, bool(node.attrs.get("transpose_a", False)), bool(node.attrs.get("transpose_b", False)))
    if node.op == "fused_matmul":
        if node.attrs.get("has_bias", False):
            y = b.op("add", [y, node.inputs[2]])
        if node.attrs.get("activation") == "relu":
            y = b.op("relu", [y])
    target = node.out().type
    if tuple(y.type.shape) != tuple(target.shape):   # the 1-D operands' unit axes
        y = b.op("reshape", [y], shape=tuple(target.shape))
    if y.type.dtype != target.dtype:
        y = b.op("cast", [y], dtype=target.dtype)
    return y


class VectorIntegerMatmul(RulePass):
    name = "vector_integer_matmul"
    opt_level = 0

    def rules(self, ctx: PassContext) -> list[RewriteRule]:
        def rewrite(node: Node, rw: Rewriter) -> Replacement | None:
            a, w = node.inputs[0], node.inputs[1]
            if not needs_vector_route(a.type.dtype, w.type.dtype):
                return None
            if any(isinstance(d, Sym) for v in (a, w) for d in v.type.shape):
                return None   # a symbolic product has no static reshape: codegen reports it
            b = _Builder(node)
            try:
                y = _matmul_value(b, node)
            except _Abort:
                return None
            return Replacement([y], b.added)

        return [RewriteRule("integer_matmul", lambda op: op.name in ("matmul", "fused_matmul"), rewrite)]
