"""Heads written as a Python loop: H attention ops on slices of one tensor, joined by one concatenate.

picoGPT splits the fused qkv projection (`np.split(x, 3, axis=-1)`, then `np.split(t, n_head, axis=-1)`),
runs one attention per head and joins the results (`np.hstack(out_heads)`). Once the loop is unrolled and
each head's pattern is an `attention` op (match.py), `match_heads(join, ...)` sees a join whose pieces are H
attention results and asks whether their operands are the heads of one tensor each:

- each head's q (likewise k, v) is a `HeadView` of a base tensor: a slice of width D of its last axis at
  offset start + h * D (`np.split` pieces, `x[:, a:b]` slices, nested), or an index h of one of its leading
  axes (`q[h]`), or the same tensor for every head (one k and v shared by all heads: multi-query attention);
- the heads agree on the scale, on causal, and on the mask (one tensor, or none);
- the join is a concatenate / hstack / vstack / stack of the H results, in head order.

Then one batched attention does the work: its q is a view of the base with the heads as a batch axis just
before the rows (a column slice: `transpose(reshape(slice(x), (..., T, H, D)), (.., H, T, D))`; an index:
the base sliced to the H heads, that axis moved there), and its result goes back into the join's layout by a
transpose and a reshape. The views are slice / reshape / transpose / expand_dims only, directly between the
graph value and the attention op, so a kernel can read them as strided GM accesses. This module only
analyses; rules.py builds the nodes.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import Node, TensorType, UseIndex, Value
from ...ops.common import normalize_axis
from .constants import constant_array
from .match import Miss
from .spellings import label


@dataclass(frozen=True)
class HeadView:
    """One head's operand as a view of `base`: its axis `axis` sliced to [start, start + width), that axis dropped
    when `squeezed` (an index); `shared`: the base itself, the same for every head."""

    base: Value
    axis: int = -1
    start: int = 0
    width: int = 0
    squeezed: bool = False
    shared: bool = False


@dataclass
class HeadsFound:
    join: Node                          # the concatenate of the heads' results
    heads: list[Node]                   # the attention ops, in head order
    views: dict[str, list[HeadView]]    # "q" / "k" / "v" -> one view per head
    axis: int                           # the join's axis on the pieces (stack: on the stacked result)
    stacked: bool                       # a stack (new axis) rather than a concatenate
    mask: Value | None

    @property
    def replaces(self) -> TensorType:
        """The type of the value the batched attention replaces (the join's)."""
        return self.join.outputs[0]


def match_heads(join: Node, uses: UseIndex, names: dict[Node, str], live: set[Node]) -> HeadsFound | Miss | None:
    """None when no piece of the join is an attention result; a Miss naming what differs; else the heads.
    (`live`: the nodes the graph's results need; a dead reader of a head's result does not count.)"""
    if join.op != "concat":
        return None
    pieces = list(join.inputs)
    heads = [v.node for v in pieces]
    n_att = sum(1 for n in heads if n.op == "attention")
    if n_att == 0 or len(pieces) < 2:
        return None
    if n_att < len(pieces):
        other = next(v for v in pieces if v.node.op != "attention")
        return Miss(f"{n_att} of the {len(pieces)} pieces are attention results, {label(other, names)} is not")
    if len(set(heads)) < len(heads):
        return Miss("one attention result is joined more than once")
    for n in heads:
        if uses.is_output(n.out()) or len([r for r in uses.readers(n.out()) if r in live or r is join]) != 1:
            return Miss("a head's result is also used outside the join")
    first = heads[0]
    for n in heads[1:]:
        for attr in ("scale", "causal", "has_mask"):
            if n.attrs.get(attr) != first.attrs.get(attr):
                return Miss(f"the heads differ in {attr} ({first.attrs.get(attr)!r} vs {n.attrs.get(attr)!r})")
    mask = first.inputs[3] if first.attrs.get("has_mask") else None
    if mask is not None and any(not _same_mask(n.inputs[3], mask) for n in heads):
        return Miss("the heads have different masks")
    placed = _join_axis(join, pieces[0].type.ndim)
    if placed is None:
        return Miss(f"the join is a {join.attrs.get('kind')} with axis={join.attrs.get('axis')!r} (a flattening "
                    "join): the heads' results are not kept apart")
    views: dict[str, list[HeadView]] = {}
    for i, role in enumerate("qkv"):
        operands = [n.inputs[i] for n in heads]
        found = _consecutive_views(operands)
        if isinstance(found, str):
            return Miss(f"the heads' {role} are not the heads of one tensor: {found}")
        views[role] = found
    return HeadsFound(join, heads, views, placed[0], placed[1], mask)


def _same_mask(a: Value, b: Value) -> bool:
    """One mask: the same value, or constants holding the same array (the frontend makes a Const per use of a
    compile-time array, and CSE has not run yet)."""
    if a == b:
        return True
    if a.type != b.type:
        return False
    x, y = constant_array(a), constant_array(b)
    return x is not None and y is not None and np.array_equal(x, y, equal_nan=True)


def _join_axis(join: Node, ndim: int) -> tuple[int, bool] | None:
    """(axis, stacked) of a concat node on pieces of rank `ndim` (>= 2), or None for a flattening one."""
    kind, axis = join.attrs.get("kind", "concatenate"), join.attrs.get("axis")
    if kind == "hstack":
        return 1, False
    if kind == "vstack":
        return 0, False
    if axis is None:
        return None
    if kind == "stack":
        return normalize_axis(axis, ndim + 1)[0], True
    return normalize_axis(axis, ndim)[0], False


def _consecutive_views(operands: list[Value]) -> list[HeadView] | str:
    """One view per head, all of one base, consecutive; or why not."""
    if all(v == operands[0] for v in operands):
        return [HeadView(operands[0], shared=True)] * len(operands)
    views = [head_view(v) for v in operands]
    if any(w is None for w in views):
        return "one of them is not a slice or an index of a tensor"
    first = views[0]
    for h, w in enumerate(views):
        if w.base != first.base:
            return "they slice different tensors"
        if (w.axis, w.width, w.squeezed) != (first.axis, first.width, first.squeezed):
            return "they are sliced differently"
        if w.start != first.start + h * first.width:
            return f"head {h} starts at {w.start}, not {first.start + h * first.width}"
    if not first.squeezed and first.axis != first.base.type.ndim - 1:
        return f"they are slices of axis {first.axis}, not of the last axis"
    if first.squeezed and first.axis > first.base.type.ndim - 3:
        return f"they index axis {first.axis}, one of the last two"
    return views


def head_view(v: Value) -> HeadView | None:
    """`v` as a slice (or index) of one axis of a tensor, through nested splits and slices; None if it is not."""
    n = v.node
    dropped = _dropped_axis(n)
    if dropped is not None:
        inner = _sliced(n.inputs[0], dropped)
        if inner is not None and inner.width == 1:
            return HeadView(inner.base, inner.axis, inner.start, 1, squeezed=True)
        return None
    return _sliced(v, None)


def _dropped_axis(n: Node) -> int | None:
    """The axis a squeeze (or a reshape that only drops one size-1 axis) removes, else None."""
    if n.op not in ("squeeze", "reshape"):
        return None
    src, dst = tuple(n.inputs[0].type.shape), tuple(n.outputs[0].shape)
    if len(src) != len(dst) + 1:
        return None
    for a in range(len(src)):
        if src[a] == 1 and src[:a] + src[a + 1:] == dst:
            return a
    return None


def _sliced(v: Value, axis: int | None) -> HeadView | None:
    """`v` as base[..., start:start + width, ...] on one axis (`axis`, or whichever one the slices cut)."""
    start, base = 0, v
    while True:
        cut = _cut(base)
        if cut is None:
            break
        src, a, offset = cut
        if axis is not None and a != axis:
            break
        axis, start, base = a, start + offset, src
    width = v.type.shape[axis] if axis is not None else None
    if base == v or not isinstance(width, int):
        return None  # not sliced, or sliced to a width only the launch knows
    return HeadView(base, axis, start, width)


def _cut(v: Value) -> tuple[Value, int, int] | None:
    """(source, axis, offset) when `v` is a piece of one axis of its source (a split output or a slice)."""
    n = v.node
    src = n.inputs[0] if n.inputs else None
    if n.op == "split":
        axis = normalize_axis(n.attrs.get("axis", 0), src.type.ndim)[0]
        sizes = [t.shape[axis] for t in n.outputs[: v.index]]
        if not all(isinstance(s, int) for s in sizes):
            return None
        return src, axis, sum(sizes)
    if n.op != "slice":
        return None
    cut = None
    for a, (dim, lo, hi, step) in enumerate(zip(src.type.shape, n.attrs["starts"], n.attrs["stops"], n.attrs["steps"])):
        whole = step == 1 and lo in (0, None) and (hi is None or hi == dim)
        if whole:
            continue
        if cut is not None or step != 1 or not isinstance(lo, int) or lo < 0:
            return None
        cut = (src, a, lo)
    return cut
