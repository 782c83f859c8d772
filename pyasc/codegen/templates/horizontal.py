"""The multi-output cube template: products of one A with same-shaped B, in one launch (GE's `horizontal_matmul`).

Every part is the cube template's product (`matmul.schedule`) with the same tiling; the launch runs their block
loops one after the other on the same cores, buffers and fields (the parts have the same M, N, K and dtypes, so
the same tiling fits each and their schedules differ only in the GM parameters they name). A is the launch's in0
(read by every part; after the first part it comes from L2), part p's B is in(1 + p) and its result out(p).
The flags between the parts come from the sync analysis over the whole body, like any other schedule's. The
tiling is chosen by the cost model's score of the whole launch.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ...target import Chip
from ..schedule import GmParam, GmRef, Loop, Stmt, TileOp, TileSchedule, When
from ..template import Job, Template, Unsupported
from . import matmul
from .matmul import CubeMatmul, in_param, out_param
from .matmul_bound import bound as cube_bound, floor as cube_floor
from .matmul_tiling import MatmulTiling


@dataclass(frozen=True)
class MatmulGroup:
    """The launch's products, in order: part p computes in0 @ in(1 + p) into out(p)."""

    name: str
    parts: tuple[CubeMatmul, ...]


def _analyze(job: Job, chip: Chip) -> list[MatmulGroup]:
    g: MatmulGroup = job.subject
    parts = tuple(mk.for_chip(chip) for mk in g.parts)
    if len(parts) < 2:
        raise Unsupported("a multi-output launch needs two products or more")
    first = parts[0]
    for mk in parts[1:]:
        if replace(mk, name=first.name) != first:
            raise Unsupported("the products of a multi-output launch must have the same shapes, dtypes and flags")
    if first.bias or first.batch:
        raise Unsupported("a multi-output launch takes plain 2-D products (no bias table, no batch)")
    return [MatmulGroup(g.name, parts)]


def _tilings(g: MatmulGroup, chip: Chip, buffer_num: int, cores: int) -> list[MatmulTiling]:
    return matmul.TEMPLATE.tilings(g.parts[0], chip, buffer_num, cores)


def part_params(p: int) -> dict[str, str]:
    """The cube template's GM parameters -> part p's in the launch."""
    return {in_param(0): in_param(0), in_param(1): in_param(1 + p), out_param(0): out_param(p)}


def renamed(body: Sequence[Stmt], names: Mapping[str, str]) -> list[Stmt]:
    """A copy of `body` whose GM operands name `names[param]` (every GM parameter it names must be mapped)."""
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, Loop):
            out.append(Loop(s.var, s.start, s.stop, s.step, renamed(s.body, names), s.note))
        elif isinstance(s, When):
            out.append(When(s.cond, renamed(s.body, names)))
        elif isinstance(s, TileOp):
            args = {k: GmRef(names[v.param], v.offset) if isinstance(v, GmRef) else v for k, v in s.args.items()}
            out.append(replace(s, args=args))
        else:
            out.append(s)
    return out


def schedule(g: MatmulGroup, t: MatmulTiling, chip: Chip) -> TileSchedule:
    parts = [matmul.schedule(mk, t, chip) for mk in g.parts]
    first = parts[0]
    body: list[Stmt] = []
    for p, s in enumerate(parts):
        body += renamed(s.body, part_params(p))
    n = len(parts)
    params = [GmParam(in_param(i), first.params[min(i, 1)].dtype, "in") for i in range(1 + n)]
    params += [GmParam(out_param(p), first.params[-1].dtype, "out") for p in range(n)]
    notes = [f"{n} products of one A in one launch, one after the other on the same cores and buffers: "
             f"{first.notes[0]}", *first.notes[1:]]
    sched = TileSchedule(g.name, "aic", params, dict(first.fields), first.blocks, list(first.buffers), body, notes)
    sched.l2_miss = first.l2_miss
    return sched


def _symbols(g: MatmulGroup) -> set[str]:
    return matmul.TEMPLATE.symbols(g.parts[0])


def _bound(g: MatmulGroup, t: MatmulTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    """One part's bound: the launch does at least one part's work (a lower bound, as the tiler needs)."""
    return cube_bound(g.parts[0], t, chip, dims)


def _floor(g: MatmulGroup, t: MatmulTiling, chip: Chip, dims: Mapping[str, int]) -> float:
    return cube_floor(g.parts[0], t, chip, dims)


TEMPLATE = Template("matmul_group", "aic", MatmulTiling, _analyze, _tilings, schedule, _symbols,
                    bound=_bound, floor=_floor)

