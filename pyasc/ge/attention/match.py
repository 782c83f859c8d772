"""The attention pattern on a graph: softmax(scale * q @ k^T + masks) @ v, found from its last matmul.

`match_attention(mm, uses, names, live)` looks at a product `P @ V` (a matmul or an einsum:
spellings.PRODUCTS) and walks up: casts, a softmax (any spelling in spellings.SOFTMAX), casts, the layers
(scale, masks, casts, batch reshapes; spellings.LAYERS), and the product q @ k^T (k^T in any spelling of
spellings.KEY_TRANSPOSES, or read transposed by the product itself). Scalar factors on q or k count
towards the scale; float16 -> float32 casts of q, k and v are dropped (the attention op computes in float32
anyway), as are casts between the steps (the op rounds less, never more). A float cast right after the
matmul is part of the pattern (it gives the result's dtype).

It answers
- None: `P` is not a softmax (this matmul is not attention-like: nothing to report);
- `Miss(reason)`: a softmax feeds the matmul but a piece stops the pattern (the reason names it);
- `Found`: q, k, v as the graph has them (and whether k or v must be read transposed), the scale, the masks
  and the nodes the attention op replaces. Every value inside the pattern must be read only inside it and
  not be a result of the graph: the pattern is replaced whole or not at all.
This module only analyses; rules.py builds the attention node from a `Found`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import math

from ... import dtypes
from ...errors import InferError
from ...ir import Node, TensorType, UseIndex, Value
from ...ops.common import broadcast_shapes
from .constants import constant_scalar
from .spellings import (LAYERS, SOFTMAX, Mask, Refusal, is_batch_reshape, is_float_cast, is_widening_cast, label,
                        product_of, untransposed)


@dataclass(frozen=True)
class Miss:
    reason: str


@dataclass
class Found:
    anchor: Node                    # the matmul P @ V
    last: Node                      # the node whose output the attention replaces (the matmul or a cast after it)
    q: Value
    k: Value
    v: Value
    k_transposed: bool              # the graph has k^T (not k): the attention reads it transposed
    v_transposed: bool              # P @ v^T (transpose_b): the attention reads v transposed
    scale: float
    masks: list[Mask]
    interior: list[Node]            # the nodes the attention replaces
    spellings: list[str] = field(default_factory=list)

    @property
    def replaces(self) -> TensorType:
        """The type of the value the attention op replaces."""
        return self.last.outputs[0]

    @property
    def out_dtype(self) -> str:
        return self.replaces.dtype


def match_attention(mm: Node, uses: UseIndex, names: dict[Node, str], live: set[Node]) -> Found | Miss | None:
    """See the module docstring; `mm` is a product (spellings.PRODUCTS), `live` the nodes the graph's results
    need (a reader outside them does not count)."""
    pv = product_of(mm)
    if pv is None or pv.transpose_a:
        return None
    interior: list[Node] = [mm]
    spellings: list[str] = [] if pv.spelling == "@" else [pv.spelling]
    reshapes: list[Node] = []
    weights = _through_casts(pv.a, interior, reshapes)
    soft = None
    for recognise in SOFTMAX:
        soft = recognise(weights.node)
        if soft is not None:
            break
    if soft is None:
        return None
    if isinstance(soft, Refusal):
        return Miss(soft.reason)
    interior.extend(soft.nodes)
    spellings.append(soft.spelling)
    scores = _through_casts(soft.logits, interior, reshapes)
    scale, masks = 1.0, []
    while product_of(scores.node) is None:
        recognise = LAYERS.get(scores.node.op)
        layer = recognise(scores.node) if recognise is not None else None
        if layer is None:
            return Miss(f"the softmax input is not computed from q @ k^T: it goes through {label(scores, names)}, "
                        "not a scale, a mask or a cast")
        if isinstance(layer, Refusal):
            return Miss(layer.reason)
        if layer.mask is not None:
            if scale <= 0:
                return Miss("a mask under a negative scale is not a mask")
            m = layer.mask
            masks.append(Mask(m.value, m.factor * scale, m.condition, m.keep, m.fill * scale) if m.value is None
                         else Mask(m.value, m.factor * scale))
        scale *= layer.scale
        interior.append(scores.node)
        if scores.node.op == "reshape":
            reshapes.append(scores.node)
        spellings.append(layer.spelling)
        scores = layer.spine
    qk = product_of(scores.node)
    interior.append(scores.node)
    if qk.spelling != "@":
        spellings.append(qk.spelling)
    if qk.transpose_a:
        return Miss(f"the scores are q^T @ k ({label(scores, names)} transposes its first operand)")
    q, q_scale = _through_scalars(_through_batch_reshapes(qk.a, reshapes))
    kt = _through_batch_reshapes(qk.b, reshapes)
    if qk.transpose_b:
        k, k_transposed = kt, False
    else:
        k_of = untransposed(kt)
        k, k_transposed = (k_of, False) if k_of is not None else (kt, True)
    k, k_scale = _through_scalars(_through_batch_reshapes(k, reshapes))
    if k_transposed and (k_scale != 1.0):
        return Miss("k^T is scaled after the transpose and given transposed")
    scale *= q_scale * k_scale
    k = widened_from(k)
    v = widened_from(_through_batch_reshapes(pv.b, reshapes))
    for role, x in (("q", q), ("k", k), ("v", v)):
        if x.type.ndim < 2:
            return Miss(f"{role} is {x.type.ndim}-D; attention needs (..., T, D)")
        if not dtypes.is_float(x.type.dtype):
            return Miss(f"{role} is {x.type.dtype}; attention takes float16 or float32")
    flattened = _inconsistent_batch_reshape(reshapes, (q, k, v), names)
    if flattened:
        return Miss(flattened)
    last = _trailing_cast(mm, uses)
    if last is not mm:
        interior.append(last)
    leak = _leak(interior, last, uses, names, live)
    if leak:
        return Miss(leak)
    return Found(mm, last, q, k, v, k_transposed, pv.transpose_b, scale, masks, interior, spellings)


def _through_casts(v: Value, interior: list[Node], reshapes: list[Node]) -> Value:
    """`v` before the float casts and batch reshapes that produce it (they join the interior)."""
    while is_float_cast(v.node) or is_batch_reshape(v.node):
        interior.append(v.node)
        if v.node.op == "reshape":
            reshapes.append(v.node)
        v = v.node.inputs[0]
    return v


def _through_batch_reshapes(v: Value, reshapes: list[Node]) -> Value:
    """`v` before the batch reshapes that produce it (torch's bmm: (B, H, T, D) viewed as (B*H, T, D))."""
    while is_batch_reshape(v.node):
        reshapes.append(v.node)
        v = v.node.inputs[0]
    return v


def _inconsistent_batch_reshape(reshapes: list[Node], operands: tuple[Value, ...], names: dict[Node, str]) -> str:
    """Why the batch reshapes the pattern went through do not all view one batch (B, H, ...) as (B*H,): each
    must go between the batch of q, k, v (broadcast) and its flattening, else the heads would be paired wrongly."""
    if not reshapes:
        return ""
    try:
        batch = tuple(broadcast_shapes(*(tuple(x.type.shape[:-2]) for x in operands)))
    except InferError:
        return "q, k and v have batch dims that do not broadcast"
    flat = (math.prod(batch),) if all(isinstance(d, int) for d in batch) else None
    allowed = {batch, flat}
    for r in reshapes:
        ends = {tuple(r.inputs[0].type.shape[:-2]), tuple(r.outputs[0].shape[:-2])}
        if not ends <= allowed:
            return f"{label(r.out(), names)} reshapes the batch dims {' to '.join(map(str, ends))}, not between " \
                   f"the batch {batch} of q, k, v and its flattening"
    return ""


def _through_scalars(v: Value) -> tuple[Value, float]:
    """(x, c) for v = x * c, c * x or x / c with c a compile-time scalar (repeatedly), else (v, 1)."""
    scale = 1.0
    while v.node.op in ("mul", "div"):
        a, b = v.node.inputs
        cb = constant_scalar(b)
        ca = constant_scalar(a) if v.node.op == "mul" else None
        if cb is not None and cb != 0 and v.type.shape == a.type.shape:
            scale *= cb if v.node.op == "mul" else 1.0 / cb
            v = a
        elif ca is not None and v.type.shape == b.type.shape:
            scale *= ca
            v = b
        else:
            break
    return v, scale


def widened_from(v: Value) -> Value:
    """`v` before a lossless float16 -> float32 cast (the attention op computes in float32 anyway)."""
    while is_widening_cast(v.node):
        v = v.node.inputs[0]
    return v


def _trailing_cast(mm: Node, uses: UseIndex) -> Node:
    """A float cast that is the only reader of the product (it gives the result's dtype), else the matmul."""
    reader = uses.sole_reader(mm.out())
    return reader if reader is not None and is_float_cast(reader) else mm


def _leak(interior: list[Node], last: Node, uses: UseIndex, names: dict[Node, str], live: set[Node]) -> str:
    """Why the pattern cannot be replaced whole: a value inside it read outside it (by a node the results need),
    or returned; else ""."""
    inside = set(interior)
    for n in interior:
        if n is last:
            continue
        for v in n.values:
            if uses.is_output(v):
                return f"{label(v, names)} inside the pattern is a result of the kernel (the weights or scores " \
                       "are returned)"
            outside = [r for r in uses.readers(v) if r not in inside and r in live]
            if outside:
                return f"{label(v, names)} inside the pattern is also read by {label(outside[0].out(), names)}"
    return ""
