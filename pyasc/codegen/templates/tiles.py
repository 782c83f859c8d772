"""Tile grids of the data-movement templates: tiling fields, the split over cores, per-dim tile indices.

A data-movement kernel covers its output with a row-major grid of tiles. The
flat tile index runs over the cores in contiguous runs balanced within one
tile (core c takes tiles [c * per, (c + 1) * per)); inside a core's loop the
flat index is decomposed into one index per grid dim with `Let`s.

A value the body needs (an extent, a stride) that is static stays an int, so
the emitter folds it; a symbolic one (dynamic=True) becomes a tiling field,
an expression over the dims that the host evaluates at launch.
"""
from __future__ import annotations

from typing import Sequence

from ... import symbolic as sy
from ...symbolic import IntLike
from ..schedule import BLOCKS, CORE, Let
from ..template import Unsupported


class UnsupportedMove(Unsupported):
    """A data move the templates cannot lower (the message says why; codegen makes it a CompileError)."""


class FieldSet:
    """The tiling fields of one schedule (name -> expression over the dims)."""

    def __init__(self) -> None:
        self.fields: dict[str, IntLike] = {}

    def __call__(self, name: str, raw: IntLike) -> IntLike:
        """`raw` (over dims) as the body sees it: the int itself, or the symbol of a new field."""
        if isinstance(raw, int):
            return raw
        self.fields[name] = raw
        return sy.sym(name)


def split_over_cores(fs: FieldSet, total: IntLike, cores: int) -> tuple[IntLike, IntLike, IntLike]:
    """(blocks over dims, this core's first tile, its tile count) for `total` tiles (over dims).

    Zero tiles launch zero blocks: the host then launches nothing."""
    blocks = sy.ceildiv(total, sy.max_(1, sy.ceildiv(total, max(1, cores))))
    n = fs("T", total)
    per = sy.ceildiv(n, sy.sym(BLOCKS))
    begin = sy.mul(sy.sym(CORE), per)
    count = sy.max_(0, sy.min_(per, sy.add(n, sy.mul(-1, begin))))
    return blocks, begin, count


def decompose(flat: IntLike, grid: Sequence[tuple[str, IntLike]]) -> list[Let]:
    """Lets naming each grid dim's index (grid: (name, count), outermost first) of a flat tile index.

    A dim of one tile gets index 0 without arithmetic."""
    lets: list[Let] = []
    rest = flat
    inner_first = list(reversed(grid))
    for k, (name, count) in enumerate(inner_first):
        if count == 1:
            lets.append(Let(name, 0))
            continue
        last = all(c == 1 for _, c in inner_first[k + 1:])
        lets.append(Let(name, rest if last else sy.mod(rest, count)))
        if last:
            break
        rest = sy.floordiv(rest, count)
    named = {let.var for let in lets}
    lets += [Let(name, 0) for name, _ in grid if name not in named]
    return lets


def clamp_extent(tile: int, extent: IntLike, start: IntLike) -> IntLike:
    """Elements of a tile of `tile` that start at `start` of a dim of `extent` (the tail is shorter)."""
    return sy.min_(tile, sy.add(extent, sy.mul(-1, start)))
