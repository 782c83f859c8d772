"""VJP rules of reductions (reduce.py), layout ops (shape.py), slice_update (update.py) and matmul.

- sum/mean: the cotangent broadcast back over the reduced axes (mean divides by the count);
- max/min: to the elements equal to the result, split evenly among ties;
- transpose: the inverse permutation; reshape/squeeze/expand_dims: a reshape back; broadcast_to: the
  sum over the broadcast axes;
- slice: written into zeros of the input's shape (slice_update); slice_update: the region cut out of
  the cotangent for the value, the rest (the region zeroed) for the tensor written into;
- matmul: da = g @ b^T and db = a^T @ g, on the operands as the product sees them (transpose flags
  applied, a 1-D operand as a row or column), then summed over broadcast batch dims and put back into
  the operand's own layout. The transposes are separate nodes that the optimiser folds into the
  products' transpose flags (matmul_transpose_fold), so no data moves for them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .shape import permutation
from .vjp_common import VjpContext, count, expand_reduced, fit, reduced_axes, sum_to, vjp, zeros


# ---- reductions -----------------------------------------------------------------------------------


def _reduction_parts(c: VjpContext, op: str) -> tuple[tuple[int, ...], bool]:
    x = c.x[0]
    return reduced_axes(op, c.attrs, len(c.b.shape(x))), bool(c.attr("keepdims", False))


@vjp("sum")
def _sum(c: VjpContext) -> list[Any]:
    axes, keep = _reduction_parts(c, "sum")
    return [fit(c.b, expand_reduced(c.b, c.g[0], c.x[0], axes, keep), c.x[0])]


@vjp("mean")
def _mean(c: VjpContext) -> list[Any]:
    b, g, x = c.b, c.g[0], c.x[0]
    axes, keep = _reduction_parts(c, "mean")
    scaled = b.op("div", g, count(b, x, axes, g))
    return [fit(b, expand_reduced(b, scaled, x, axes, keep), x)]


def _extreme(op: str):
    def rule(c: VjpContext) -> list[Any]:
        b, g, x, y = c.b, c.g[0], c.x[0], c.y[0]
        if not c.wants[0]:
            return [None]
        axes, keep = _reduction_parts(c, op)
        hit = b.cast(b.op("eq", x, expand_reduced(b, y, x, axes, keep)), b.dtype(g))
        ties = b.op("sum", hit, axis=axes, keepdims=True)
        share = b.op("div", expand_reduced(b, g, x, axes, keep), ties)
        return [fit(b, b.op("mul", hit, share), x)]

    vjp(op)(rule)


_extreme("max")
_extreme("min")


# ---- layout -----------------------------------------------------------------------------------------


@vjp("transpose")
def _transpose(c: VjpContext) -> list[Any]:
    x = c.x[0]
    perm = permutation(c.attr("axes"), len(c.b.shape(x)))
    inverse = tuple(int(i) for i in np.argsort(perm))
    return [fit(c.b, c.b.op("transpose", c.g[0], axes=inverse), x)]


@vjp("reshape", "squeeze", "expand_dims")
def _reshape(c: VjpContext) -> list[Any]:
    x = c.x[0]
    return [fit(c.b, c.b.op("reshape", c.g[0], shape=tuple(c.b.shape(x))), x)]


@vjp("broadcast_to")
def _broadcast_to(c: VjpContext) -> list[Any]:
    return [fit(c.b, c.g[0], c.x[0])]


def _region(c: VjpContext) -> dict[str, Any]:
    return {k: tuple(c.attrs[k]) for k in ("starts", "stops", "steps")}


@vjp("slice")
def _slice(c: VjpContext) -> list[Any]:
    b, g, x = c.b, c.g[0], c.x[0]
    if not c.wants[0]:
        return [None]
    return [fit(b, b.op("slice_update", zeros(b, b.shape(x), b.dtype(g)), g, **_region(c)), x)]


@vjp("slice_update")
def _slice_update(c: VjpContext) -> list[Any]:
    b, g, (x, v) = c.b, c.g[0], c.x
    region = _region(c)
    dx = dv = None
    if c.wants[0]:
        dx = fit(b, b.op("slice_update", g, zeros(b, b.shape(v), b.dtype(g)), **region), x)
    if c.wants[1]:
        dv = fit(b, b.op("slice", g, **region), v)
    return [dx, dv]


# ---- matmul -------------------------------------------------------------------------------------------


def _swap_last(b: Any, v: Any) -> Any:
    n = len(b.shape(v))
    return b.op("transpose", v, axes=tuple(range(n - 2)) + (n - 1, n - 2))


@vjp("matmul")
def _matmul(c: VjpContext) -> list[Any]:
    b, g, (a, w) = c.b, c.g[0], c.x
    ta, tw = bool(c.attr("transpose_a", False)), bool(c.attr("transpose_b", False))
    sa, sw = tuple(b.shape(a)), tuple(b.shape(w))
    # the operands as the product sees them: flags applied, a 1-D a as a row (1, K), a 1-D b as a column
    a2 = _swap_last(b, a) if ta and len(sa) >= 2 else a
    w2 = _swap_last(b, w) if tw and len(sw) >= 2 else w
    if len(sa) == 1:
        a2 = b.op("reshape", a2, shape=(1,) + sa)
    if len(sw) == 1:
        w2 = b.op("reshape", w2, shape=sw + (1,))
    a2s, w2s = tuple(b.shape(a2)), tuple(b.shape(w2))
    gshape = tuple(b.shape(g))
    batch = gshape[:len(gshape) - (len(sa) >= 2) - (len(sw) >= 2)]
    g2 = b.op("reshape", g, shape=batch + (a2s[-2], w2s[-1])) if len(sa) == 1 or len(sw) == 1 else g
    da = _operand(b, b.op("matmul", g2, w2, transpose_b=True), a2s, a, ta) if c.wants[0] else None  # (.., M, K)
    dw = _operand(b, b.op("matmul", a2, g2, transpose_a=True), w2s, w, tw) if c.wants[1] else None  # (.., K, N)
    return [da, dw]


def _operand(b: Any, d: Any, seen: tuple, operand: Any, transposed: bool) -> Any:
    """A product's cotangent with respect to an operand as the product saw it (shape `seen`), put back into
    the operand's own layout: summed over broadcast batch dims, a 1-D operand's added dim removed, a
    transpose flag undone."""
    shape = tuple(b.shape(operand))
    d = sum_to(b, d, seen)
    if len(shape) == 1:
        d = b.op("reshape", d, shape=shape)
    elif transposed:
        d = _swap_last(b, d)
    return fit(b, d, operand)
