"""The iteration domain of a vector kernel and how each input maps onto it.

A vector kernel's tiles cover its domain (the shape of its full-size
values). Dims where every operand agrees on being present or broadcast are
collapsed (XLA's and TVM's dim collapsing), leaving `outer` dims, a row
count `R` and a row length `C`: a tile is some rows of one outer index (or a
chunk of one row). For a row reduction the reduced trailing axes collapse
into `C` and the kept leading axes into `outer` and `R`.

Each input then has a class relative to (R, C) — "full" (rows of C
contiguous elements), "rowvec" (one row broadcast over R), "col" (one value
per row) or "scalar" (one value) — and element strides over the outer dims
(0 where it broadcasts). An input read through a view (a slice, a transpose, ... of it that fusion put
into the kernel, `strided.view_read`) has the view's strides and a first-element offset instead of its own
row-major ones; dims the view does not lay out contiguously never collapse together (`view_cuts`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .. import symbolic as sy
from ..ir import Sym
from ..symbolic import IntLike
from .template import Unsupported


class UnsupportedDomain(Unsupported):
    """The kernel's shapes do not fit the vector templates (the capacity check says no, with this reason)."""


def dim(d: object) -> IntLike:
    """An IR dim as an integer expression (a Sym already is one: the IR and the tiler share the algebra)."""
    if isinstance(d, int):
        return d
    if isinstance(d, Sym):
        return d.e
    if isinstance(d, sy.Expr):
        return d
    raise UnsupportedDomain(f"unknown dim {d!r}")


def dims(shape: Sequence[object]) -> tuple[IntLike, ...]:
    return tuple(dim(d) for d in shape)


def prod(values: Sequence[IntLike]) -> IntLike:
    return sy.mul(1, *values)


@dataclass(frozen=True)
class Domain:
    shape: tuple[IntLike, ...]          # the full-size shape
    lead: int                           # leading dims that are rows (the rest is the row)
    outer: tuple[IntLike, ...]          # collapsed outer dims
    R: IntLike                          # rows per outer index
    C: IntLike                          # elements per row
    groups: tuple[tuple[int, ...], ...]  # domain dims of each collapsed dim: outer..., R, C
    # R is not the last collapsed dim before C (`longest_rows`): outputs are stored by their strides, not as
    # R * C blocks one after the other
    reordered: bool = False

    @property
    def outer_count(self) -> IntLike:
        return prod(self.outer)

    @property
    def rows_shape(self) -> tuple[IntLike, ...]:
        return self.shape[: self.lead]


@dataclass(frozen=True)
class InputLayout:
    cls: str                        # "full" | "rowvec" | "col" | "scalar"
    o_strides: tuple[IntLike, ...]  # elements per step of each outer dim (0: broadcast)
    r_stride: IntLike               # elements between rows (0: broadcast)
    offset: IntLike = 0             # elements before the first one read (a view's start)

    @property
    def outer_dependent(self) -> bool:
        return any(s != 0 for s in self.o_strides)


def _strides(shape: Sequence[IntLike]) -> list[IntLike]:
    out: list[IntLike] = []
    acc: IntLike = 1
    for d in reversed(shape):
        out.append(acc)
        acc = sy.mul(acc, d)
    return out[::-1]


def same_dim(a: IntLike, b: IntLike) -> bool:
    """Two dims the graph treats as one size: equal, or symbolic where it paired them by broadcasting
    (dynamic=True assumes two names that meet agree, and checks it at launch)."""
    return a == b or (a != 1 and b != 1 and (not isinstance(a, int) or not isinstance(b, int)))


def _masks(shape: Sequence[IntLike], operand: Sequence[IntLike]) -> list[int]:
    """Per domain dim: 1 where `operand` (right-aligned) has it, 0 where it broadcasts."""
    off = len(shape) - len(operand)
    if off < 0:
        raise UnsupportedDomain(f"an operand of shape {tuple(operand)} has more dims than the domain {tuple(shape)}")
    out = []
    for i, d in enumerate(shape):
        j = i - off
        od = operand[j] if j >= 0 else 1
        if od == 1 and d != 1:
            out.append(0)
        elif same_dim(od, d):
            out.append(1)
        else:
            raise UnsupportedDomain(f"an operand of shape {tuple(operand)} does not broadcast to {tuple(shape)}")
    return out


def _collapse(dims_idx: list[int], masks: list[list[int]], cuts: frozenset[int] = frozenset()) -> list[list[int]]:
    """Runs of dims every operand treats alike; a dim in `cuts` starts a new run (a view strides it apart)."""
    groups: list[list[int]] = []
    for i in dims_idx:
        col = [m[i] for m in masks]
        if groups and i not in cuts and [m[groups[-1][-1]] for m in masks] == col:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def make_domain(shape: Sequence[IntLike], lead: int, operands: Sequence[Sequence[IntLike]],
                cuts: frozenset[int] = frozenset()) -> Domain:
    """Collapse `shape` (rows = its first `lead` dims) by the broadcast patterns of `operands`, never joining a
    dim in `cuts` to the one before it.

    lead == len(shape) - 1 with no reduction means "pointwise": then rows and row may collapse together.
    """
    shape = tuple(shape)
    masks = [_masks(shape, op) for op in operands]
    keep = [i for i, d in enumerate(shape) if d != 1]
    lead_dims = [i for i in keep if i < lead]
    row_dims = [i for i in keep if i >= lead]
    lead_groups = _collapse(lead_dims, masks, cuts)
    row_groups = _collapse(row_dims, masks, cuts)
    if len(row_groups) > 1:
        raise UnsupportedDomain(f"operands broadcast (or a view strides) differently inside the reduced axes of "
                                f"{shape}")
    c_group = row_groups[0] if row_groups else []
    r_group = lead_groups[-1] if lead_groups else []
    outer_groups = lead_groups[:-1]
    size = lambda g: prod([shape[i] for i in g])  # noqa: E731 - a local shorthand
    return Domain(shape, lead, tuple(size(g) for g in outer_groups), size(r_group), size(c_group),
                  tuple(tuple(g) for g in (*outer_groups, r_group, c_group)))


def pointwise_domain(shape: Sequence[IntLike], operands: Sequence[Sequence[IntLike]],
                     cuts: frozenset[int] = frozenset()) -> Domain:
    """A domain without a reduction: the last collapsed dim is the row, the one before it the rows."""
    shape = tuple(shape)
    masks = [_masks(shape, op) for op in operands]
    keep = [i for i, d in enumerate(shape) if d != 1]
    groups = _collapse(keep, masks, cuts)
    if not groups:
        return Domain(shape, len(shape), (), 1, 1, ((), ()))
    c_group = groups[-1]
    lead = c_group[0]
    return longest_rows(make_domain(shape, lead, operands, cuts), operands)


#: a pointwise domain whose rows of one outer index hold fewer elements than this takes its longest outer dim
#: as the rows instead (`longest_rows`)
SHORT_ROWS = 2048


def longest_rows(d: Domain, operands: Sequence[Sequence[IntLike]] = ()) -> Domain:
    """`d` with its longest collapsed outer dim as the rows when its rows of one outer index are few and short
    (fewer than SHORT_ROWS elements): a tile is rows of one outer index, so a domain like (12, 256, 2, 32), whose
    size-2 axis a broadcast keeps apart (a concatenate's stacked pieces), would otherwise move 64 elements a
    tile. Each input and output is then read and written by its strides over the new rows; static shapes
    only. Not when an operand holds one value per row of the new rows (broadcast along the row): those
    values would not be contiguous."""
    *outer_groups, r_group, c_group = d.groups
    sizes = list(d.outer)
    if not outer_groups or not all(isinstance(x, int) for x in (*sizes, d.R, d.C)) or d.R * d.C >= SHORT_ROWS:
        return d
    best = max(range(len(sizes)), key=lambda j: sizes[j])
    if sizes[best] <= d.R:
        return d
    masks = [_masks(d.shape, op) for op in operands]
    if any(not any(m[i] for i in c_group) and any(m[i] for i in outer_groups[best]) for m in masks):
        return d
    rest = sorted([g for j, g in enumerate(outer_groups) if j != best] + [r_group], key=lambda g: g[0] if g else -1)
    size = lambda g: prod([d.shape[i] for i in g])  # noqa: E731 - a local shorthand
    return Domain(d.shape, d.lead, tuple(size(g) for g in rest), sizes[best], d.C,
                  (*map(tuple, rest), tuple(outer_groups[best]), tuple(c_group)), reordered=True)


def view_cuts(shape: Sequence[IntLike], operand: Sequence[IntLike], strides: Sequence[IntLike]) -> set[int]:
    """Dims of domain `shape` that may not collapse into the dim before them for an operand read by `strides`
    (aligned with the domain's trailing axes): the operand steps over both, but not as one block of memory."""
    off = len(shape) - len(operand)
    present = [i for i in range(len(shape)) if shape[i] != 1 and i >= off and operand[i - off] != 1]
    return {b for a, b in zip(present, present[1:])
            if strides[a - off] != sy.mul(strides[b - off], operand[b - off])}


def input_layout(domain: Domain, operand: Sequence[IntLike], per_row: bool = False,
                 view: tuple[Sequence[IntLike], IntLike] | None = None) -> InputLayout:
    """How an input of shape `operand` maps onto the domain.

    `per_row`: the input is read by per-row values, so it aligns with the row dims (keepdims shapes
    end in ones; dropped shapes are the rows shape itself). `view`: (strides, offset) of a read through a
    view (`strided.view_read`), where the input's own row-major strides would be wrong.
    """
    operand = tuple(operand)
    start = 0 if view is None else view[1]
    if math.prod(d for d in operand if isinstance(d, int)) == 1 and all(isinstance(d, int) for d in operand):
        return InputLayout("scalar", tuple(0 for _ in domain.outer), 0, start)
    if per_row:
        # numpy's alignment first (a keepdims shape [R, 1] broadcasts as one value per row); a shape that
        # only makes sense per row (the rows shape itself, beside a reduction without keepdims) aligns with
        # the row dims instead
        try:
            lay = input_layout(domain, operand, view=view)
            if lay.cls in ("col", "scalar"):
                return lay
        except UnsupportedDomain:
            pass
        if view is not None:
            raise UnsupportedDomain(f"a view of shape {operand} read one value per row by the rows' alignment")
        target = domain.shape[: domain.lead]
        off = len(target) - len(operand)
        if off < 0:
            raise UnsupportedDomain(f"per-row operand {operand} does not match the rows {target}")
        aligned: list[IntLike | None] = [None] * off + list(operand) + [None] * (len(domain.shape) - domain.lead)
    else:
        off = len(domain.shape) - len(operand)
        aligned = [None] * off + list(operand)
    present = [i for i, d in enumerate(aligned) if d is not None]
    own = _strides([aligned[i] for i in present]) if view is None else list(view[0])
    stride_of = {i: s for i, s in zip(present, own)}
    for i, d in enumerate(aligned):
        if d is not None and d != 1 and not same_dim(d, domain.shape[i]):
            raise UnsupportedDomain(f"operand {operand} does not broadcast to {domain.shape}")

    def group_stride(g: tuple[int, ...]) -> IntLike:
        if not g:
            return 0
        inner = g[-1]
        d = aligned[inner]
        if d is None or d == 1:
            if any(aligned[i] not in (None, 1) for i in g):
                raise UnsupportedDomain(f"operand {operand} broadcasts part of a collapsed dim of {domain.shape}")
            return 0
        if any(aligned[i] in (None, 1) and not same_dim(domain.shape[i], 1) for i in g):
            # its inner dim varies but an outer one of the group is broadcast: no one stride walks the group
            raise UnsupportedDomain(f"operand {operand} broadcasts part of a collapsed dim of {domain.shape}")
        real = [i for i in g if aligned[i] not in (None, 1)]
        if view is not None and any(stride_of[a] != sy.mul(stride_of[b], aligned[b]) for a, b in zip(real, real[1:])):
            raise UnsupportedDomain(f"a view of shape {operand} does not lay out a collapsed dim of {domain.shape} "
                                    "as one block")
        return stride_of[inner]

    *outer_groups, r_group, c_group = domain.groups
    o_strides = tuple(group_stride(g) for g in outer_groups)
    r_stride = group_stride(r_group)
    c_stride = group_stride(c_group)
    if c_stride not in (0, 1):
        raise UnsupportedDomain(f"operand {operand}: its row elements are not contiguous"
                                + (f" (a view strides them {c_stride} apart)" if view is not None else ""))
    if c_stride == 1:
        cls = "full" if r_stride != 0 else "rowvec"
    else:
        cls = "col" if r_stride != 0 else "scalar"
    return InputLayout(cls, o_strides, r_stride, start)


def column_domain(shape: Sequence[IntLike], reduced: Sequence[int], operands: Sequence[Sequence[IntLike]]) -> Domain:
    """The domain of a column reduction: kept leading dims (outer), the reduced dims (R), kept trailing dims
    (C, the columns). The reduced axes must be one contiguous block followed by at least one kept axis."""
    shape = tuple(shape)
    red = sorted(set(reduced))
    if not red or red != list(range(red[0], red[-1] + 1)) or red[-1] == len(shape) - 1:
        raise UnsupportedDomain(f"a reduction over axes {tuple(red)} of {shape} is not one block of leading or "
                                "middle axes")
    masks = [_masks(shape, op) for op in operands]
    keep = [i for i, d in enumerate(shape) if d != 1]
    outer_groups = _collapse([i for i in keep if i < red[0]], masks)
    r_groups = _collapse([i for i in keep if red[0] <= i <= red[-1]], masks)
    c_groups = _collapse([i for i in keep if i > red[-1]], masks)
    if len(r_groups) > 1 or len(c_groups) > 1:
        raise UnsupportedDomain(f"operands broadcast differently inside the reduced or kept axes of {shape}")
    r_group = r_groups[0] if r_groups else []
    c_group = c_groups[0] if c_groups else []
    size = lambda g: prod([shape[i] for i in g])  # noqa: E731 - a local shorthand
    return Domain(shape, red[-1] + 1, tuple(size(g) for g in outer_groups), size(r_group), size(c_group),
                  tuple(tuple(g) for g in (*outer_groups, r_group, c_group)))
