"""The FX frontend's entries for sorting (merged into aten_table.TABLE): sort, sort.stable and topk.

pyasc's sort / argsort ops sort ascending and stably (ties keep their order, NaN last). torch's order:
- ascending: that order (torch.sort(stable=True) gives the same; its default sort promises no order of ties);
- descending (and topk's largest): NaN first, then the values from the largest, ties in index order, as
  torch's stable descending sort. That is the ascending stable sort of the reversed axis, reversed: the
  reversal puts ties in index order again; the indices are mapped back (n - 1 - i).
The values are the sort op's alone when nothing reads the indices, else the input gathered at the indices
(one ranking). topk is the first k of that order (sorted=False returns them sorted too, one order torch
allows). The work is n * n per row (ranks): rows of up to a few hundred elements.
"""
from __future__ import annotations

import operator
from typing import Any

import torch

from ..ir.graph import Value
from .fx_graph import Entry, Lowering

aten = torch.ops.aten


def _indices_used(cx: Lowering) -> bool:
    return any(u.target is operator.getitem and u.args[1] == 1 for u in cx.node.users)


def _sorted(cx: Lowering, x: Any, axis: int, descending: bool) -> tuple[Value, Value | None]:
    """(values, indices or None when nothing reads them) of x sorted along `axis`."""
    v = cx.value(x)
    if not _indices_used(cx):
        if not descending:
            return cx.op("sort", v, axis=axis), None
        return cx.op("flip", cx.op("sort", v, axis=axis), axis=(axis,)), None
    if descending:
        n = cx.shape(x)[axis]
        back = cx.op("flip", cx.op("argsort", cx.op("flip", v, axis=(axis,)), axis=axis), axis=(axis,))
        idx = cx.op("sub", cx.value(n - 1, "int32"), back)
    else:
        idx = cx.op("argsort", v, axis=axis)
    return cx.op("take_along_axis", v, idx, axis=axis), idx


def _sort(cx: Lowering) -> list[Any]:
    """sort(x, dim=-1, descending=False) / sort.stable(x, *, stable, dim=-1, descending=False)."""
    x = cx.arg(0)
    stable_form = cx.node.target is aten.sort.stable
    dim = cx.node.kwargs.get("dim", -1) if stable_form else cx.arg(1, "dim", -1)
    descending = cx.node.kwargs.get("descending", False) if stable_form else cx.arg(2, "descending", False)
    return list(_sorted(cx, x, cx.axis(dim, x), bool(descending)))


def _topk(cx: Lowering) -> list[Any]:
    """topk(x, k, dim=-1, largest=True, sorted=True)."""
    x = cx.arg(0)
    k, axis, largest = int(cx.arg(1)), cx.axis(cx.arg(2, "dim", -1), x), bool(cx.arg(3, "largest", True))
    shape = cx.shape(x)
    values, idx = _sorted(cx, x, axis, largest)

    def first_k(v: Value | None) -> Value | None:
        if v is None or k == shape[axis]:
            return v
        stops = tuple(k if i == axis else d for i, d in enumerate(shape))
        return cx.op("slice", v, starts=(0,) * len(shape), stops=stops, steps=(1,) * len(shape))
    return [first_k(values), first_k(idx)]


TABLE: dict[Any, Entry] = {
    aten.sort.default: _sort, aten.sort.stable: _sort, aten.topk.default: _topk,
}
