"""The device-loop template: a runtime `for` loop whose body is one vector kernel, run inside that kernel.

The body's kernel is analysed as the vector template does (`vector_kernel.analyze`, rows or chunks mode:
every tile holds whole rows, or is a chunk of a pointwise kernel), then repeated per tile:

    per tile:  load the tile of every carried value and loop-invariant input (MTE2)
               reset the iteration counter (when the body reads the loop index)
               for it in range(N):            # N: the trip count, the tiling field over `launch.TRIP`
                   the body's vector ops
                   copy each new carried value into its carried buffer; counter += step
               store the carried buffers (MTE3): the final values (the initial ones when N = 0)

The carried values and invariant inputs stay in UB for the whole tile (`ub_alloc.assign` keeps them live to
the end, so no op of an iteration overwrites one); the new values are computed into buffers of their own and
copied at the end of the iteration, so an op still reading an old carried value never sees a new one. All
of an iteration runs on the vector pipe, so the sync analysis (`sync.py`) orders the repeated work by the
pipe's own order and puts the load/compute/store flags around the loop, as for one body.

The job's `carry` option (a `LoopCarry`) says which kernel input each carried value is loaded from and which
kernel output is its next value; kernel output i is stored from carried input i's buffer.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ... import symbolic as sy
from ..domain import dims, same_dim
from ..launch import TRIP
from ..schedule import Loop, Stmt, TileSchedule
from ..template import Job, Template, Unsupported
from ..ub_alloc import assign
from ..vector_ops import Space, VBuf, VKind, VOp
from . import vector
from .vector_kernel import VectorKernel, VectorTiling

#: the tiling field holding the trip count, and the loop variable of the iterations
TRIP_FIELD = "N"
ITER_VAR = "it"


@dataclass(frozen=True)
class LoopCarry:
    """The loop as the body's kernel sees it (decided by `codegen.device_loop`)."""

    pairs: tuple[tuple[int, int], ...]        # per carried value: (kernel input it is loaded from, kernel output)
    counter: tuple[int, int, int] | None = None   # the loop index the kernel reads: (kernel input, start, step)


@dataclass(frozen=True)
class Repeat:
    """What a tile runs between its loads and its stores (the hook `vector.schedule` calls)."""

    reset: tuple[VOp, ...]      # once per tile, before the iterations (the counter back to its start)

    def tile_work(self, place: Any) -> list[Stmt]:
        iterations = Loop(ITER_VAR, 0, sy.sym(TRIP_FIELD), 1, place.compute(place.vk.body),
                          note="the runtime loop's iterations")
        return place.compute(self.reset) + [iterations]


def _same_dims(a: Any, b: Any) -> bool:
    """Whether a value read with shape `a` covers the domain `b` element for element (no broadcast)."""
    a, b = dims(a), dims(b)
    return len(a) == len(b) and all(map(same_dim, a, b))


def _counter_ops(vk: VectorKernel, ctr: VBuf) -> tuple[list[VOp], list[VOp]]:
    """The prologue split: ops that (through others) read the counter run every iteration, the rest once."""
    tainted, moved, kept = {ctr.id}, [], []
    for op in vk.prologue:
        if any(s.id in tainted for s in op.reads):
            tainted.add(op.dst.id)
            moved.append(op)
        else:
            kept.append(op)
    return moved, kept


def _allocate(vk: VectorKernel, ops: list[VOp], step: list[VOp], prologue: list[VOp],
              nexts: list[tuple[int, VBuf, VBuf]]) -> tuple[list[VOp], Any]:
    """The iteration's ops and their buffers. First try: a carried value's buffer is free once the iteration
    no longer reads it, so the ops may compute in place and the new value may land in it (then it needs no
    copy); that holds when no new value sits in another carried value's buffer (a copy into that buffer would
    overwrite it before it is copied). Else every loaded value lives to the end and each new value is copied."""
    loaded, resident = [u.buf for u in vk.per_tile], [u.buf for u in vk.resident]
    carried = {x.id for _, x, _ in nexts}
    invariant = [b for b in loaded if b.id not in carried]
    alloc = assign(ops + step, loaded, resident, invariant + [y for _, _, y in nexts], prologue)
    at = alloc.of
    if all(at[y.id] is at[x.id] or all(at[y.id] is not at[x2.id] for _, x2, _ in nexts) for _, x, y in nexts):
        copies = [_copy(j, x, y) for j, x, y in nexts if at[y.id] is not at[x.id]]
        return ops + copies + step, alloc
    copies = [_copy(j, x, y) for j, x, y in nexts]
    body = ops + copies + step
    return body, assign(body, loaded, resident, loaded, prologue)


def _copy(j: int, x: VBuf, y: VBuf) -> VOp:
    return VOp(VKind.COPY, x, (y,), dtype=x.dtype, note=f"carried value {j} for the next iteration")


def repeat(vk: VectorKernel, carry: LoopCarry) -> VectorKernel:
    """The body's vector kernel turned into the loop's (see the module docstring); Unsupported says why not."""
    outs = dict(vk.plan.outputs)
    if sorted(outs) != sorted(o for _, o in carry.pairs):
        raise Unsupported("the body's kernel writes values the loop does not carry")
    per_tile = {u.buf.id for u in vk.per_tile}
    stored, nexts = [], []
    for j, (i_in, i_out) in enumerate(carry.pairs):
        uses = [u for u in vk.plan.inputs if u.index == i_in]
        x = uses[0].buf if len(uses) == 1 else None
        if x is None or x.id not in per_tile or uses[0].space != Space.FULL or uses[0].view is not None or \
                not _same_dims(uses[0].shape, vk.domain.shape):
            raise Unsupported(f"carried value {j} is not read tile by tile at its own positions (it is broadcast, "
                              "read per row, through a view or twice)")
        y = outs[i_out]
        if y.space != Space.FULL or y.dtype != x.dtype:
            raise Unsupported(f"carried value {j} is not computed as a full {x.dtype} tile")
        stored.append((i_out, x))
        nexts.append((j, x, y))
    moved, prologue, reset, step = [], list(vk.prologue), [], []
    if carry.counter is not None:
        c_in, start, inc = carry.counter
        uses = [u for u in vk.resident if u.index == c_in and vk.layouts[u.buf.id].cls == "scalar"]
        if len(uses) != 1 or len([u for u in vk.plan.inputs if u.index == c_in]) != 1:
            raise Unsupported("the loop index is not read as one scalar")
        ctr = uses[0].buf
        moved, prologue = _counter_ops(vk, ctr)
        reset = [VOp(VKind.DUP, ctr, (start,), dtype=ctr.dtype, note="the loop index starts")]
        step = [VOp(VKind.SCALAR, ctr, (ctr, inc), fn="add", dtype=ctr.dtype, note="the loop index steps")]
    body, alloc = _allocate(vk, moved + list(vk.body), step, prologue, nexts)
    plan = replace(vk.plan, outputs=stored)
    return replace(vk, plan=plan, prologue=prologue, body=body, alloc=alloc, out_spaces=[Space.FULL] * len(stored),
                   repeat=Repeat(tuple(reset)))


def _analyze(job: Job, chip: Any) -> list[VectorKernel]:
    carry: LoopCarry = job.options["carry"]
    out, errors = [], []
    for vk in vector.TEMPLATE.analyze(job, chip):
        if vk.mode not in ("rows", "chunks"):
            errors.append("a row longer than a tile takes several passes over it")
            continue
        try:
            out.append(repeat(vk, carry))
        except Unsupported as e:
            errors.append(str(e))
    if not out:
        raise Unsupported("; ".join(dict.fromkeys(errors)))
    return out


def _schedule(vk: VectorKernel, t: VectorTiling, chip: Any) -> TileSchedule:
    s = vector.schedule(vk, t, chip)
    s.fields[TRIP_FIELD] = sy.sym(TRIP)
    s.notes.append(f"the runtime loop runs inside each tile ({TRIP_FIELD} iterations); carried values stay in UB")
    return s


def _symbols(vk: VectorKernel) -> set[str]:
    return vector.TEMPLATE.symbols(vk) | {TRIP}


TEMPLATE = Template("device_loop", "aiv", VectorTiling, _analyze, vector.tilings, _schedule, _symbols,
                    need=vector.TEMPLATE.need, admits=vector.TEMPLATE.admits)
