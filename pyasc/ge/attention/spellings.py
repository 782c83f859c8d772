"""The spellings of attention's pieces the pass recognises: small recognisers, kept in tables.

Each recogniser looks at one node and answers with what it found, a `Refusal` (it is the piece, but written
in a way that is not attention: a softmax over the wrong axis, a fill that is not -inf), or None (not this
spelling). The pattern (match.py) tries the tables in order.

- SOFTMAX: `pyasc.softmax` / `np`-style softmax ops over the last axis (the registry's softmax, scipy's when
  registered); `e / e.sum(-1, keepdims=True)` and `e * reciprocal(sum)` with `e = exp(x - x.max(-1,
  keepdims=True))` or `e = exp(x)` (a reduction without keepdims put back by expand_dims / reshape counts;
  `e * (1 / sum)` too);
- LAYERS between the softmax and q @ k^T, outermost first: float casts, batch reshapes (torch's bmm views the
  batch (B, H) as B*H and back; match.py checks they all agree), a scalar scale (`* c`, `c *`, `/ c`,
  `-`), an additive mask (`+ m`, `m +`, `- m`), a where-mask (`where(keep, s, -inf)`, `where(drop, -inf, s)`
  with -inf or a number <= -1e9);
- KEY_TRANSPOSES: how k^T is written: `k.T` (2-D), `k.swapaxes(-1, -2)`, `np.transpose(k, (0, 1, 3, 2))`,
  any transpose swapping the last two axes;
- PRODUCTS: how the two products are written: `a @ b` (matmul, its transpose flags) and `np.einsum` with two
  operands that is a batched matmul (`"hqd,hkd->hqk"`: b transposed; `"hqk,hkd->hqd"`).
Which operand of a layer continues the pattern (the "spine") is the one from which a matmul is reachable
through layers; the other is the scale or the mask.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ... import dtypes, ops
from ...errors import InferError
from ...ir import Node, Value
from ...ops.common import normalize_axis
from ...ops.einsum import parse
from ..pattern import swaps_last_two
from .constants import constant_scalar
from .masks import is_masking

#: softmax ops: registry name -> how users write it (an op not registered, like scipy's without numpy2, is skipped)
SOFTMAX_OPS = {"softmax": "pyasc.softmax", "special_softmax": "scipy.special.softmax"}


@dataclass(frozen=True)
class Refusal:
    """The piece is there but written in a way that is not attention (the reason, in words)."""

    reason: str


@dataclass(frozen=True)
class Softmax:
    logits: Value              # what it normalises
    nodes: tuple[Node, ...]    # its nodes
    spelling: str              # how it was written


@dataclass(frozen=True)
class Mask:
    """One mask layer on the scores: additive (`value`, times `factor`: the scales applied after it) or a
    where-mask (`condition`; the score is kept where it equals `keep`, else replaced by `fill`)."""

    value: Value | None = None
    factor: float = 1.0
    condition: Value | None = None
    keep: bool = True
    fill: float = 0.0


@dataclass(frozen=True)
class Layer:
    spine: Value                # the operand that continues towards q @ k^T
    scale: float = 1.0          # a scale this layer multiplies the spine by
    mask: Mask | None = None    # the mask this layer applies
    spelling: str = ""


def label(v: Value, names: dict[Node, str]) -> str:
    """"exp %3": the producing op and its dump name (as the fusion log names ops); "%q" for an input; a node the
    pass made is shown as its op applied to its first operand ("transpose(%k)")."""
    name = names.get(v.node)
    suffix = f"#{v.index}" if len(v.node.outputs) > 1 else ""
    if name is None:
        return f"{v.node.op}({label(v.node.inputs[0], names)})" if v.node.inputs else f"a new {v.node.op}"
    return f"%{name}" if v.node.op == "Data" else f"{v.node.op} %{name}{suffix}"


def is_float_cast(n: Node) -> bool:
    return n.op == "cast" and dtypes.is_float(n.inputs[0].type.dtype) and dtypes.is_float(n.outputs[0].dtype)


def is_batch_reshape(n: Node) -> bool:
    """A reshape that only regroups the leading (batch) dims, the last two kept: torch's bmm views (B, H, T, D)
    as (B*H, T, D) and the result back."""
    if n.op != "reshape":
        return False
    src, dst = tuple(n.inputs[0].type.shape), tuple(n.outputs[0].shape)
    return len(src) >= 2 and len(dst) >= 2 and src[-2:] == dst[-2:]


def is_widening_cast(n: Node) -> bool:
    """A float cast that loses nothing (float16 -> float32)."""
    return is_float_cast(n) and dtypes.itemsize(n.outputs[0].dtype) > dtypes.itemsize(n.inputs[0].type.dtype)


# ---- softmax -------------------------------------------------------------------------------------


def _last_axis_only(axes: tuple[int, ...], ndim: int) -> bool:
    return axes == (ndim - 1,)


def _softmax_op(n: Node) -> Softmax | Refusal | None:
    if n.op not in SOFTMAX_OPS or not ops.exists(n.op):
        return None
    ndim = n.inputs[0].type.ndim
    op = ops.get(n.op)
    axes = op.reduced_axes(n.attrs, ndim) if op.is_reduction else normalize_axis(n.attrs.get("axis"), ndim)
    if not _last_axis_only(axes, ndim):
        return Refusal(f"{SOFTMAX_OPS[n.op]} over axis {_axes_text(axes)}, not the keys (the last axis, {ndim - 1})")
    return Softmax(n.inputs[0], (n,), SOFTMAX_OPS[n.op])


def _keepdims_reduction(v: Value, op: str) -> tuple[Node, tuple[Node, ...]] | None:
    """The `op` reduction whose keepdims result `v` is (itself, or without keepdims put back by a reshape or
    expand_dims), and the nodes between."""
    n, extra = v.node, ()
    if n.op in ("reshape", "expand_dims") and n.inputs[0].node.op == op:
        n, extra = n.inputs[0].node, (n,)
    if n.op != op:
        return None
    x = n.inputs[0]
    axes = ops.get(op).reduced_axes(n.attrs, x.type.ndim)
    keep = tuple(1 if i in axes else d for i, d in enumerate(x.type.shape))
    return (n, extra) if tuple(v.type.shape) == keep else None


def _reduced_axes(n: Node) -> tuple[int, ...]:
    return ops.get(n.op).reduced_axes(n.attrs, n.inputs[0].type.ndim)


def _exp_over_sum(n: Node) -> Softmax | Refusal | None:
    if n.op == "div":
        e, s, extra = n.inputs[0], n.inputs[1], ()
    elif n.op == "mul":
        recips = [(a, b) for a, b in (tuple(n.inputs), tuple(reversed(n.inputs))) if _reciprocal_of(b) is not None]
        if not recips:
            return None
        e, r = recips[0]
        s, extra = _reciprocal_of(r), (r.node,)
    else:
        return None
    if e.node.op != "exp":
        return None
    total = _keepdims_reduction(s, "sum")
    if total is None or total[0].inputs[0] != e:
        return None
    ndim = e.type.ndim
    if not _last_axis_only(_reduced_axes(total[0]), ndim):
        return Refusal(f"the softmax sums over axis {_axes_text(_reduced_axes(total[0]))}, not the keys "
                       f"(the last axis, {ndim - 1})")
    nodes = (n, e.node, total[0]) + total[1] + extra
    inner = e.node.inputs[0]
    if inner.node.op == "sub":
        x, m = inner.node.inputs
        peak = _keepdims_reduction(m, "max")
        if peak is not None and peak[0].inputs[0] == x:
            if not _last_axis_only(_reduced_axes(peak[0]), ndim):
                return Refusal(f"the softmax subtracts the max over axis {_axes_text(_reduced_axes(peak[0]))}, "
                               f"not over the keys (the last axis, {ndim - 1})")
            return Softmax(x, nodes + (inner.node, peak[0]) + peak[1], "exp(x - max) / sum")
    return Softmax(inner, nodes, "exp(x) / sum")


def _reciprocal_of(v: Value) -> Value | None:
    """x when `v` is 1 / x (`reciprocal(x)` or `1.0 / x`), else None."""
    n = v.node
    if n.op == "reciprocal":
        return n.inputs[0]
    if n.op == "div" and constant_scalar(n.inputs[0]) == 1.0:
        return n.inputs[1]
    return None


#: softmax spellings, tried in order on the node that produces the attention weights
SOFTMAX: tuple[Callable[[Node], Softmax | Refusal | None], ...] = (_softmax_op, _exp_over_sum)


def _axes_text(axes: tuple[int, ...]) -> str:
    return str(axes[0]) if len(axes) == 1 else str(axes)


# ---- layers between the softmax and q @ k^T -------------------------------------------------------


def reaches_matmul(v: Value, depth: int = 12) -> bool:
    """Whether a product is reachable from `v` through layer ops (the operand that continues the pattern)."""
    n = v.node
    if product_of(n) is not None:
        return True
    if depth == 0 or n.op not in LAYERS:
        return False
    return any(reaches_matmul(i, depth - 1) for i in n.inputs)


def _spine_and_other(n: Node) -> tuple[Value, Value, int] | None:
    """(the operand that continues the pattern, the other, the spine's position), for a binary layer."""
    for i, (a, b) in enumerate(((n.inputs[0], n.inputs[1]), (n.inputs[1], n.inputs[0]))):
        if reaches_matmul(a):
            return a, b, i
    return None


def _cast_layer(n: Node) -> Layer | Refusal:
    if not is_float_cast(n):
        return Refusal(f"the scores are cast to {n.outputs[0].dtype} before the softmax")
    return Layer(n.inputs[0], spelling="cast")


def _reshape_layer(n: Node) -> Layer | Refusal:
    if not is_batch_reshape(n):
        return Refusal(f"the scores are reshaped from {tuple(n.inputs[0].type.shape)} to {tuple(n.outputs[0].shape)}, "
                       "not only in their batch dims")
    return Layer(n.inputs[0], spelling="batch reshape")


def _neg_layer(n: Node) -> Layer:
    return Layer(n.inputs[0], scale=-1.0, spelling="-")


def _scale_layer(n: Node) -> Layer | Refusal | None:
    found = _spine_and_other(n)
    if found is None:
        return None
    spine, other, pos = found
    c = constant_scalar(other)
    if c is None:
        return Refusal(f"the scores are multiplied by {_what(other)}, not by a compile-time scalar")
    if n.op == "div":
        if pos != 0:
            return Refusal("a number is divided by the scores")
        if c == 0:
            return Refusal("the scores are divided by 0")
        return Layer(spine, scale=1.0 / c, spelling=f"/ {c:g}")
    return Layer(spine, scale=c, spelling=f"* {c:g}")


def _add_layer(n: Node) -> Layer | Refusal | None:
    found = _spine_and_other(n)
    if found is None:
        return None
    spine, other, pos = found
    if n.op == "sub" and pos != 0:
        return Refusal("the scores are subtracted from another tensor")
    if not dtypes.is_float(other.type.dtype):
        return Refusal(f"the mask added to the scores is {other.type.dtype}, not a float mask")
    return Layer(spine, mask=Mask(value=other, factor=-1.0 if n.op == "sub" else 1.0),
                 spelling="- mask" if n.op == "sub" else "+ mask")


def _where_layer(n: Node) -> Layer | Refusal | None:
    cond, a, b = n.inputs
    if reaches_matmul(a):
        spine, fill_v, keep = a, b, True
    elif reaches_matmul(b):
        spine, fill_v, keep = b, a, False
    else:
        return None
    if cond.type.dtype != "bool":
        return Refusal(f"np.where's condition is {cond.type.dtype}, not bool")
    fill = constant_scalar(fill_v)
    if fill is None:
        return Refusal(f"np.where puts {_what(fill_v)} where it masks, not -inf")
    if not is_masking(fill):
        return Refusal(f"np.where fills {fill:g}, not -inf or a number <= -1e9: not a mask")
    return Layer(spine, mask=Mask(condition=cond, keep=keep, fill=fill), spelling=f"where(.., {fill:g})")


def _what(v: Value) -> str:
    return f"a {v.node.op} of shape {tuple(v.type.shape)}" if v.node.op != "Data" else f"an input of shape " \
                                                                                       f"{tuple(v.type.shape)}"


#: layer ops between the softmax and q @ k^T: op name -> recogniser (None from one: not a layer of the pattern)
LAYERS: dict[str, Callable[[Node], Layer | Refusal | None]] = {
    "cast": _cast_layer,
    "reshape": _reshape_layer,
    "neg": _neg_layer,
    "mul": _scale_layer,
    "div": _scale_layer,
    "add": _add_layer,
    "sub": _add_layer,
    "where": _where_layer,
}


# ---- the products --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Product:
    """A batched matrix product a @ b, each operand possibly read transposed (its last two axes swapped)."""

    a: Value
    b: Value
    transpose_a: bool
    transpose_b: bool
    spelling: str


def _matmul_product(n: Node) -> Product | None:
    if n.op != "matmul":
        return None
    return Product(n.inputs[0], n.inputs[1], bool(n.attrs.get("transpose_a", False)),
                   bool(n.attrs.get("transpose_b", False)), "@")


def _einsum_product(n: Node) -> Product | None:
    """An einsum of two operands that is a batched matmul: labels (batch.., i, j), (batch.., j, l) -> (batch.., i,
    l), either operand's last two swapped, each operand's batch labels a right-aligned part of the output's (the
    broadcast matmul does)."""
    if n.op != "einsum" or len(n.inputs) != 2:
        return None
    subscripts = n.attrs.get("subscripts", "")
    try:
        (la, lb), lo = parse(subscripts, [x.type.ndim for x in n.inputs])
    except InferError:
        return None
    if min(len(la), len(lb), len(lo)) < 2:
        return None
    batch, i, l_ = lo[:-2], lo[-2], lo[-1]
    if not (batch.endswith(la[:-2]) and batch.endswith(lb[:-2])):
        return None
    if la[-2] == i:
        j, ta = la[-1], False
    elif la[-1] == i:
        j, ta = la[-2], True
    else:
        return None
    if j in batch or j in (i, l_) or lb[-2:] not in (j + l_, l_ + j):
        return None
    return Product(n.inputs[0], n.inputs[1], ta, lb[-2:] == l_ + j, f"einsum {subscripts!r}")


#: how a product is written: recognisers of a node computing a @ b
PRODUCTS: tuple[Callable[[Node], Product | None], ...] = (_matmul_product, _einsum_product)

#: the ops some PRODUCTS recogniser may take (what the pass offers its rule)
PRODUCT_OPS = frozenset({"matmul", "einsum"})


def product_of(n: Node) -> Product | None:
    """`n` as a batched product, in any spelling of PRODUCTS, else None."""
    if n.op not in PRODUCT_OPS:
        return None
    for recognise in PRODUCTS:
        found = recognise(n)
        if found is not None:
            return found
    return None


# ---- k^T ------------------------------------------------------------------------------------------


def _transpose_swap(n: Node) -> Value | None:
    return n.inputs[0] if swaps_last_two(n) else None


def _swapaxes_swap(n: Node) -> Value | None:
    if n.op != "swapaxes":
        return None
    nd = n.inputs[0].type.ndim
    try:
        axes = {normalize_axis(n.attrs["axis1"], nd)[0], normalize_axis(n.attrs["axis2"], nd)[0]}
    except Exception:  # malformed axes: not a swap of the last two
        return None
    return n.inputs[0] if nd >= 2 and axes == {nd - 1, nd - 2} else None


#: how k^T is written: recognisers returning k for a node computing k^T
KEY_TRANSPOSES: tuple[Callable[[Node], Value | None], ...] = (_transpose_swap, _swapaxes_swap)


def untransposed(v: Value) -> Value | None:
    """k when `v` is k with its last two axes swapped (any spelling in KEY_TRANSPOSES), else None."""
    for recognise in KEY_TRANSPOSES:
        k = recognise(v.node)
        if k is not None:
            return k
    return None
