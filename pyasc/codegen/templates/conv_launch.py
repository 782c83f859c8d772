"""A conv and its weight conversion in one mixed launch: the vector cores prepare, the cube cores convolve.

The weight conversion (`conv_weights`: the weights in FRACTAL_Z, the batch norm folded, the float32 bias)
and the cube kernel (`conv`) are two schedules of their own. Run as one mixed launch, each vector core
converts its share of the output channels into a GM workspace, then every core of the launch meets at an
all-core barrier (`sync_all`, which orders the hand-over through GM) and the cube cores convolve, reading the
prepared weights from the workspace (they stay in L2). Every cube core needs every channel block's weights it
computes, and they come from all the vector cores, not only its group's: the barrier, not the per-group
cross-core flags, is the hand-over. The launch saves the second launch's start-up; the vector work does not
overlap the cube's.

The two schedules are the templates' own, with their GM parameters renamed into one set: the launch's
inputs in the job's order (x, w, the batch norm's parameters, the bias, the residual, the identity) and
its output, and the workspace tensors `wsw` (the weights) and `wsb` (the float32 bias).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ... import symbolic as sy
from ...target import Chip, itemsize
from .. import tileops as T
from ..schedule import GmParam, GmRef, Loop, MixedSchedule, Stmt, TileOp, TileSchedule, When
from ..template import Job, Template, Tiling
from . import conv, conv_weights
from .conv import ConvTiling, CubeConv
from .conv_weights import ConvWeights
from .moves import MoveTiling

WEIGHTS, BIAS = "wsw", "wsb"


@dataclass(frozen=True)
class ConvLaunch:
    """The job's subject: the conversion, the conv, and which launch input each of their inputs is."""

    name: str
    weights: ConvWeights
    cube: CubeConv
    weight_inputs: tuple[int, ...]      # launch input index of conv_weights' in0, in1, ...
    cube_inputs: tuple[int | str, ...]  # launch input index (or workspace tensor) of conv's in0, in1, ...


@dataclass(frozen=True)
class ConvLaunchTiling(Tiling):
    conv: ConvTiling
    weights: MoveTiling
    buffer_num: int
    cores: int

    def describe(self) -> str:
        return f"{self.conv.describe()}; weights on the vector cores: {self.weights.describe()}"


def analyze(job: Job, chip: Chip) -> list[ConvLaunch]:
    a: ConvLaunch = job.subject
    return [replace(a, weights=a.weights.for_chip(chip), cube=a.cube.for_chip(chip))]


def _groups(cv: CubeConv, t: ConvTiling, chip: Chip) -> int:
    total = cv.g.n * -(-cv.g.o // t.tn) * -(-cv.m // t.tm)
    return -(-total // -(-total // max(1, min(t.cores, chip.aic_cores))))


def tilings(a: ConvLaunch, chip: Chip, buffer_num: int, cores: int) -> list[ConvLaunchTiling]:
    """Each conv tiling with the conversion spread over its groups' vector cores (the most rows a core can
    take, or an even share)."""
    out = []
    for ct in conv.tilings(a.cube, chip, buffer_num, cores):
        aivs = _groups(a.cube, ct, chip) * chip.group_aivs
        # the evenest share of the rows (the vector cores work while the cube cores wait at the barrier),
        # single-buffered: a core converts one tile, or few (and each parameter load would take two event ids)
        pick = min(conv_weights.tilings(a.weights, chip, 1, aivs), key=lambda w: w.rows, default=None)
        if pick is not None:
            out.append(ConvLaunchTiling(ct, pick, ct.buffer_num, ct.cores))
    return out


def schedule(a: ConvLaunch, t: ConvLaunchTiling, chip: Chip) -> MixedSchedule:
    cube = conv.schedule(a.cube, t.conv, chip)
    prep = conv_weights.schedule(a.weights, t.weights, chip)
    groups = cube.blocks
    cw, cv = a.weights, a.cube
    scratch = {WEIGHTS: cw.rows * cw.k * itemsize(cw.dtype)}
    prep_names = {f"in{i}": _name(v) for i, v in enumerate(a.weight_inputs)}
    prep_names.update({"out0": WEIGHTS, "out1": BIAS})
    cube_names = {f"in{i}": _name(v) for i, v in enumerate(a.cube_inputs)}
    if cw.emits_bias:
        scratch[BIAS] = cw.o * 4
    aiv = _renamed(prep, prep_names)
    aiv.body = aiv.body + [T.sync_all(note="the weights are in the workspace: the cube cores may read them")]
    aiv.blocks = sy.mul(groups, chip.group_aivs)
    aic = _renamed(cube, cube_names)
    aic.body = [T.sync_all(note="wait for the weights")] + aic.body
    aic.params += [GmParam(name, cw.dtype if name == WEIGHTS else "float32", "scratch") for name in scratch]
    aic.scratch.update(scratch)
    notes = [f"{cw.o} output channels' weights converted on the vector cores, handed to the cube cores through "
             f"the workspace at an all-core barrier (one launch)"]
    return MixedSchedule(cv.name, aic, aiv, [], groups, notes)


def _name(v: int | str) -> str:
    return v if isinstance(v, str) else f"in{v}"


def _renamed(s: TileSchedule, names: Mapping[str, str]) -> TileSchedule:
    """`s` with its GM parameters renamed (a parameter missing from `names` keeps its name)."""
    params = [GmParam(names.get(p.name, p.name), p.dtype, "scratch" if names.get(p.name) in (WEIGHTS, BIAS)
                      else p.role) for p in s.params]
    return replace(s, params=params, body=_rename_body(s.body, names), scratch=dict(s.scratch))


def _rename_body(body: Sequence[Stmt], names: Mapping[str, str]) -> list[Stmt]:
    out: list[Stmt] = []
    for s in body:
        if isinstance(s, TileOp):
            args = {k: GmRef(names.get(v.param, v.param), v.offset) if isinstance(v, GmRef) else v
                    for k, v in s.args.items()}
            out.append(replace(s, args=args))
        elif isinstance(s, Loop):
            out.append(replace(s, body=_rename_body(s.body, names)))
        elif isinstance(s, When):
            out.append(replace(s, body=_rename_body(s.body, names)))
        else:
            out.append(s)
    return out


TEMPLATE = Template("conv_launch", "mix", ConvLaunchTiling, analyze, tilings, schedule, lambda a: set())
