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

A conv at an edge of its NC1HWC0 region (GE's `conv_edge_fold`, templates/conv_edges.py) converts there too:
an ND feature map goes into the workspace `wsx` on the vector cores next to the weights, before the barrier;
an ND result is written by the cube into the workspace `wsy`, and after a second all-core barrier the vector
cores convert it into the output (adding an ND residual and applying the ReLU on the way). Their schedules'
names are prefixed (`xi_`, `yo_`) so the three share the vector side's body.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from ... import symbolic as sy
from ...target import Chip, itemsize
from .. import tileops as T
from ..schedule import BLOCKS, CORE, GmParam, GmRef, Loop, MixedSchedule, Stmt, TileOp, TileSchedule, When
from ..template import Job, Template, Tiling
from . import conv, conv_edges, conv_weights
from .conv import ConvTiling, CubeConv
from .conv_edges import ConvEdge
from .conv_weights import ConvWeights
from .mixed_prologue import prefixed
from .moves import MoveTiling

WEIGHTS, BIAS, MAP, RESULT = "wsw", "wsb", "wsx", "wsy"
WORKSPACES = (WEIGHTS, BIAS, MAP, RESULT)


@dataclass(frozen=True)
class ConvLaunch:
    """The job's subject: the conversion, the conv, and which launch input each of their inputs is."""

    name: str
    weights: ConvWeights
    cube: CubeConv
    weight_inputs: tuple[int, ...]      # launch input index of conv_weights' in0, in1, ...
    cube_inputs: tuple[int | str, ...]  # launch input index (or workspace tensor) of conv's in0, in1, ...
    edge_in: ConvEdge | None = None     # the ND feature map (launch input `edge_in_input`) into `MAP`
    edge_in_input: int | None = None
    edge_out: ConvEdge | None = None    # `RESULT` [+ a residual] into the output
    edge_out_inputs: tuple[int | str, ...] = ()


@dataclass(frozen=True)
class ConvLaunchTiling(Tiling):
    conv: ConvTiling
    weights: MoveTiling
    buffer_num: int
    cores: int
    edge_in: MoveTiling | None = None
    edge_out: MoveTiling | None = None
    weight_cores: int = 0   # with edge_in: the vector cores converting the weights (the others convert the map)
    bias: MoveTiling | None = None   # the float32 bias on the last of the weight cores, apart from the weights

    def describe(self) -> str:
        edges = "".join(f"; {what} on the vector cores: {t.describe()}" for what, t in
                        (("the map into NC1HWC0", self.edge_in), ("the result into ND", self.edge_out)) if t)
        bias = f"; the bias on a vector core of its own: {self.bias.describe()}" if self.bias else ""
        return f"{self.conv.describe()}; weights on the vector cores: {self.weights.describe()}{bias}{edges}"


def analyze(job: Job, chip: Chip) -> list[ConvLaunch]:
    a: ConvLaunch = job.subject
    return [replace(a, weights=a.weights.for_chip(chip), cube=a.cube.for_chip(chip))]


def _groups(cv: CubeConv, t: ConvTiling, chip: Chip) -> int:
    total = cv.g.n * -(-cv.g.o // t.tn) * -(-cv.m // t.tm)
    return -(-total // -(-total // max(1, min(t.cores, chip.aic_cores))))


def tilings(a: ConvLaunch, chip: Chip, buffer_num: int, cores: int) -> list[ConvLaunchTiling]:
    """Each conv tiling with the conversion spread over its groups' vector cores (an even share of the rows,
    or fewer where the edges' tiles need the UB) and the edges' tiles."""
    out = []
    vector_side: dict[tuple[int, int], tuple | None] = {}
    # the vector side's phases draw on one set of event ids: a double-buffered tail with a residual (two loads
    # per tile) may leave the weights' too few, so it comes single-buffered too (the sync planner refuses what
    # does not fit, the cost model picks among the rest)
    edge_bns = (buffer_num, 1) if a.edge_out is not None and a.edge_out.residual and buffer_num > 1 else (buffer_num,)
    for ct in conv.tilings(a.cube, chip, buffer_num, cores):
        aivs = _groups(a.cube, ct, chip) * chip.group_aivs
        for bn in edge_bns:
            if (aivs, bn) not in vector_side:
                vector_side[aivs, bn] = _vector_side(a, chip, bn, aivs)
            found = vector_side[aivs, bn]
            if found is not None:
                out.append(ConvLaunchTiling(ct, found[0], ct.buffer_num, ct.cores, *found[1:]))
    return out


def weight_cores(a: ConvLaunch, aivs: int) -> int:
    """Vector cores converting the weights: all of them, or, when the map is converted too, three quarters
    (the others convert the map at the same time: a weight tile is a chain of short dependent moves, the map
    a stream, so a few cores take it in about the weights' time); two thirds when the bias runs apart (the
    weights' chain is then two parameter moves shorter: ResNet block 64x56x56 on 910b, 30 weight cores of 44
    7,841 cycles, 33 of them 8,135)."""
    if a.edge_in is None or aivs < 2:
        return aivs
    share = 3 if a.weights.emits_bias and aivs >= 3 else 4
    return aivs - max(1, aivs // share)


def split_bias(a: ConvLaunch, kw: int) -> bool:
    """Whether the last of the `kw` weight cores computes the float32 bias alone: every per-channel parameter
    is a move of its own, mostly start-up, so the weight cores then read only the scale's (a folded norm's var
    and gamma) and the bias's chain runs beside theirs."""
    return a.weights.emits_bias and kw >= 2


def parts(a: ConvLaunch, kw: int) -> tuple[ConvWeights, ConvWeights | None, int]:
    """(the weights' conversion, the bias's apart or None, the cores converting the weights)."""
    if not split_bias(a, kw):
        return a.weights, None, kw
    return replace(a.weights, part="weights"), replace(a.weights, part="bias"), kw - 1


def _vector_side(a: ConvLaunch, chip: Chip, buffer_num: int, aivs: int
                 ) -> tuple[MoveTiling, MoveTiling | None, MoveTiling | None, int, MoveTiling | None] | None:
    """The weights' tile and the edges' over `aivs` vector cores: the evenest share of the weight rows (the
    vector cores work while the cube cores wait at the barrier), single-buffered (a core converts one tile, or
    few, and each parameter load would take two event ids), halved until the edges' tiles fit next to it (the
    phases' buffers are all in one UB layout); the bias's tile apart (`split_bias`: all its rows on one core
    when they fit); None when nothing fits."""
    kw = weight_cores(a, aivs)
    cw, cb, wcores = parts(a, kw)
    bias = None
    if cb is not None:
        bias = max(conv_weights.tilings(cb, chip, 1, 1), key=lambda b: b.rows, default=None)
        if bias is None:
            cw, cb, wcores = a.weights, None, kw
    even = min(conv_weights.tilings(cw, chip, 1, wcores), key=lambda w: w.rows, default=None)
    rows = even.rows if even is not None else 0
    while rows >= 1:
        pick = MoveTiling(rows, even.cols, 1, even.cores)
        rows //= 2
        if not conv_weights.fits(cw, pick, chip):
            continue
        left = chip.ub_bytes - sum(b.nbytes for b in conv_weights.buffers(cw, pick, chip))
        if cb is not None:
            left -= sum(b.nbytes for b in conv_weights.buffers(cb, bias, chip))
        first = _edge_tiling(a.edge_in, chip, buffer_num, max(1, aivs - kw), left)
        if a.edge_in is not None:
            if first is None:
                continue
            left -= conv_edges.need(a.edge_in, first)
        second = _edge_tiling(a.edge_out, chip, buffer_num, aivs, left)
        if a.edge_out is not None and second is None:
            continue
        return pick, first, second, kw, bias
    return None


def _edge_tiling(e: ConvEdge | None, chip: Chip, buffer_num: int, cores: int, ub_bytes: int) -> MoveTiling | None:
    """The edge's tile that the busiest core gets through soonest within `ub_bytes`."""
    if e is None or ub_bytes <= 0:
        return None
    found = conv_edges.tilings(e, chip, buffer_num, cores, ub_bytes)
    return min(found, key=lambda t: (conv_edges.per_core_cycles(e, t, cores, chip), -t.rows), default=None)


def schedule(a: ConvLaunch, t: ConvLaunchTiling, chip: Chip) -> MixedSchedule:
    # the cube cores wait for the weights at the barrier; a feature map no vector core writes first (a launch
    # input, not the edge conversion's workspace) starts loading before it
    cube = conv.schedule(a.cube, t.conv, chip, T.sync_all(note="wait for the weights"), map_ready=a.edge_in is None)
    weights, bias_part, wcores = parts(a, t.weight_cores) if t.bias is not None else (a.weights, None, 0)
    prep = conv_weights.schedule(weights, t.weights, chip)
    groups = cube.blocks
    cw, cv = a.weights, a.cube
    scratch = {WEIGHTS: cw.rows * cw.k * itemsize(cw.dtype)}
    prep_names = {f"in{i}": _name(v) for i, v in enumerate(a.weight_inputs)}
    prep_names.update({"out0": WEIGHTS, "out1": BIAS})
    cube_names = {f"in{i}": _name(v) for i, v in enumerate(a.cube_inputs)}
    if a.edge_out is not None:
        cube_names["out0"] = RESULT
    if cw.emits_bias:
        scratch[BIAS] = cw.o * 4
    aiv = _renamed(prep, prep_names)
    notes = [f"{cw.o} output channels' weights converted on the vector cores, handed to the cube cores through "
             f"the workspace at an all-core barrier (one launch)"]
    params = {WEIGHTS: cw.dtype, BIAS: "float32"}
    core = sy.sym(CORE)
    if bias_part is not None and t.bias is not None:  # the weights on the first wcores cores, the bias on the next
        aiv = prefixed(aiv, "w_", {}, WORKSPACES, {BLOCKS: wcores})
        aiv.body = [When(sy.lt(core, wcores), aiv.body)]
        b = prefixed(conv_weights.schedule(bias_part, t.bias, chip), "b_", prep_names, WORKSPACES,
                     {CORE: sy.add(core, -wcores), BLOCKS: 1})
        b.body = [When(sy.eq(core, wcores), b.body)]
        aiv = _joined(aiv, b)
        notes.append(f"the weights on {wcores} vector cores, the float32 bias on one of its own")
    if a.edge_in is not None and t.edge_in is not None:
        aivs, kw = sy.mul(groups, chip.group_aivs), t.weight_cores
        x_in = prefixed(conv_edges.schedule(a.edge_in, t.edge_in, chip), "xi_",
                        {"in0": _name(a.edge_in_input), "out0": MAP}, WORKSPACES,
                        {CORE: sy.add(core, -kw), BLOCKS: sy.add(aivs, -kw)})
        if isinstance(aivs, int) and kw < aivs:  # the weights on the first kw cores, the map on the others
            if bias_part is None:
                aiv = prefixed(aiv, "w_", {}, WORKSPACES, {BLOCKS: kw})
                aiv.body = [When(sy.lt(core, kw), aiv.body)]
            x_in.body = [When(sy.lt(kw - 1, core), x_in.body)]
            notes.append(f"the weights on {kw} vector cores, the map on the others" if bias_part is None else
                         "the map on the vector cores after them")
        aiv = _joined(x_in, aiv)
        scratch[MAP] = _blocked_bytes(a.edge_in)
        params[MAP] = a.edge_in.cv.dtype
        notes.append("the ND feature map converted into NC1HWC0 on the vector cores before the barrier (no "
                     "transdata launch)")
    aiv.body = aiv.body + [T.sync_all(note="the weights are in the workspace: the cube cores may read them")]
    aiv.blocks = sy.mul(groups, chip.group_aivs)
    aic = _renamed(cube, cube_names)
    if a.edge_out is not None and t.edge_out is not None:
        names = {f"in{i}": _name(v) for i, v in enumerate(a.edge_out_inputs)}
        y_out = prefixed(conv_edges.schedule(a.edge_out, t.edge_out, chip), "yo_", names, WORKSPACES)
        aic.body = aic.body + [T.sync_all(note="the result is in the workspace: the vector cores convert it")]
        aiv.body = aiv.body + [T.sync_all(note="wait for the cube's result")]
        aiv = _joined(aiv, y_out)
        scratch[RESULT] = _blocked_bytes(a.edge_out)
        params[RESULT] = a.edge_out.src_dtype
        notes.append("the result converted to ND on the vector cores after a second barrier"
                     + (", the residual added and the ReLU applied on the way" if a.edge_out.residual else "")
                     + " (no transdata launch)")
    aic.params += [GmParam(name, params[name], "scratch") for name in scratch]
    aic.scratch.update(scratch)
    return MixedSchedule(cv.name, aic, aiv, [], groups, notes)


def _blocked_bytes(e: ConvEdge) -> int:
    """Bytes of an edge's NC1HWC0 side."""
    cv = e.cv
    return cv.batch * cv.blocks_of_cols * cv.rows * cv.c0 * itemsize(e.src_dtype)


def _joined(first: TileSchedule, then: TileSchedule) -> TileSchedule:
    """One vector-side schedule running `first`, then `then` (names already apart); `first`'s block count."""
    params = list(first.params) + [p for p in then.params if p.name not in {q.name for q in first.params}]
    return replace(first, params=params, fields={**first.fields, **then.fields},
                   buffers=list(first.buffers) + list(then.buffers), body=list(first.body) + list(then.body),
                   notes=list(first.notes) + list(then.notes), scratch={**first.scratch, **then.scratch})


def _name(v: int | str) -> str:
    return v if isinstance(v, str) else f"in{v}"


def _renamed(s: TileSchedule, names: Mapping[str, str]) -> TileSchedule:
    """`s` with its GM parameters renamed (a parameter missing from `names` keeps its name)."""
    params = [GmParam(names.get(p.name, p.name), p.dtype, "scratch" if names.get(p.name) in WORKSPACES
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
