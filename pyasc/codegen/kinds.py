"""What a kernel graph computes, for choosing its template: pointwise, a row reduction, a column reduction.

(The optimiser's plans will say this directly; until then it is read off the kernel graph's reductions.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ops.common import normalize_axis
from .kernel_graph import KernelGraph
from .lowering import REDUCE


@dataclass(frozen=True)
class KernelShape:
    kind: str                        # "pointwise" | "row" | "column"
    reduce_rows: tuple[Any, ...] | None = None   # the reductions' input shape
    k: int = 0                       # trailing axes reduced (row)
    axes: tuple[int, ...] = ()       # reduced axes (column)


def classify(kg: KernelGraph) -> KernelShape:
    reds = [n for n in kg.nodes if n.op in REDUCE]
    if not reds:
        return KernelShape("pointwise")
    shapes = {tuple(n.inputs[0].type.shape) for n in reds}
    axes = {normalize_axis(n.attrs.get("axis"), n.inputs[0].type.ndim) for n in reds}
    if len(shapes) != 1 or len(axes) != 1:
        return KernelShape("mixed")
    shape, ax = shapes.pop(), axes.pop()
    ndim = len(shape)
    if ax == tuple(range(ndim - len(ax), ndim)):
        return KernelShape("row", shape, len(ax), ax)
    return KernelShape("column", shape, 0, ax)
