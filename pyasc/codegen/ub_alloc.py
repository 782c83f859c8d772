"""Assign the virtual buffers of one tile's vector ops to physical UB buffers (linear scan by liveness).

Kinds of physical buffer:
- "in": loaded by MTE2 every tile (rotating: buffer_num slots);
- "res": resident for the whole kernel (loaded or expanded once, before the tile loop);
- "out": read by MTE3 after the tile's vector ops (rotating);
- "tmp": vector-only scratch (one slot).
A value may take over the buffer of an operand that dies at the op producing
it (in place: the simulator allows a destination identical to a source),
except resident buffers, and only a rotating buffer may hold a kernel output.
Buffers whose values are dead return to a pool and are reused by later values
of the same space and element size. The assignment is the same for every tile,
so it is independent of the tile size.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..target import itemsize

from .vector_ops import Space, VBuf, VKind, VOp

_PREFIX = {"in": "ld", "out": "st"}

#: ops whose destination must not overlap their source on this chip (broadcasts, reductions, resizing casts)
_NOT_IN_PLACE = {VKind.EXPAND, VKind.REDUCE}


@dataclass
class PhysBuf:
    name: str
    kind: str                 # "in" | "res" | "out" | "tmp"
    space: Space
    itemsize: int
    rotating: bool
    holds: list[str] = field(default_factory=list)   # readable: which values live here

    @property
    def key(self) -> tuple:
        return (self.space, self.itemsize, self.rotating)


@dataclass
class Assignment:
    buffers: list[PhysBuf]
    of: dict[int, PhysBuf]    # vbuf id -> physical buffer


def assign(ops: Sequence[VOp], loaded: Sequence[VBuf], resident: Sequence[VBuf], outputs: Sequence[VBuf],
           prologue: Sequence[VOp] = (), loops: Sequence[tuple[int, int]] = ()) -> Assignment:
    """Physical buffers for a tile: `loaded` come from MTE2 per tile, `resident` exist before the loop
    (with `prologue` ops computing resident values), `outputs` are stored after the tile's ops.

    `loops`: [start, end) ranges of `ops` that repeat (chunk loops of a multi-pass kernel); a value read
    inside one stays alive to its end, since the next iteration reads it again."""
    bufs: list[PhysBuf] = []
    of: dict[int, PhysBuf] = {}
    pool: dict[tuple, list[PhysBuf]] = {}
    out_ids = {b.id for b in outputs}
    holders: dict[int, list[int]] = {}   # id(physical buffer) -> the values assigned to it (of, inverted)

    def put(v_id: int, p: PhysBuf) -> None:
        of[v_id] = p
        holders.setdefault(id(p), []).append(v_id)

    def new(kind: str, v: VBuf, rotating: bool) -> PhysBuf:
        # named by role ("ld": MTE2 fills it, "st": MTE3 drains it), never like the GM parameters in0/out0
        p = PhysBuf(f"{_PREFIX.get(kind, kind)}{len(bufs)}", kind, v.space, itemsize(v.dtype), rotating)
        bufs.append(p)
        return p

    for v in resident:
        put(v.id, new("res", v, False))
    for op in prologue:
        if op.dst.id not in of:
            put(op.dst.id, new("res", op.dst, False))
    for v in loaded:
        put(v.id, new("in", v, True))
    last = _last_uses(ops, out_ids, loops)
    for i, op in enumerate(ops):
        dst = op.dst
        if dst.id in of:
            continue
        want_rot = dst.id in out_ids
        size = itemsize(dst.dtype)
        chosen = None
        if op.kind not in _NOT_IN_PLACE:
            for s in op.reads:
                p = of.get(s.id)
                if (p is not None and p.kind != "res" and last.get(s.id) == i and p.space == dst.space
                        and p.itemsize == size and (p.rotating or not want_rot)
                        and not _read_later_in_op(op, s, p, of)):
                    chosen = p
                    break
        if chosen is None:
            free = pool.get((dst.space, size, True), []) if want_rot else (
                pool.get((dst.space, size, False), []) or pool.get((dst.space, size, True), []))
            if free:
                chosen = free.pop()
        if chosen is None:
            chosen = new("out" if want_rot else "tmp", dst, want_rot)
        put(dst.id, chosen)
        # operands that die here (and were not taken over) go back to the pool
        # (an op may read one value twice, `x * x`: the buffer is released once)
        for s in {s.id: s for s in op.reads}.values():
            p = of.get(s.id)
            if p is not None and p is not chosen and p.kind != "res" and last.get(s.id) == i \
                    and not _still_held(holders[id(p)], last, i) and all(q is not p for q in pool.get(p.key, [])):
                pool.setdefault(p.key, []).append(p)
    for v_id, p in of.items():
        p.holds.append(str(v_id))
    return Assignment(bufs, of)


def _last_uses(ops: Sequence[VOp], outputs: set[int], loops: Sequence[tuple[int, int]] = ()) -> dict[int, int]:
    """Index of the last op reading each value. Inside a repeating range, a value defined before the range
    (not reloaded in it) is read again by the next iteration: it lives to the range's end; an accumulator
    (a reduction's destination in a repeating range) too."""
    defined = {op.dst.id: i for i, op in enumerate(ops)}
    last: dict[int, int] = {}
    for i, op in enumerate(ops):
        for lo, hi in loops:
            if lo <= i < hi and op.kind is VKind.REDUCE:
                last[op.dst.id] = max(last.get(op.dst.id, -1), hi - 1)
        for s in op.reads:
            end = i
            for lo, hi in loops:
                if lo <= i < hi and s.id in defined and defined[s.id] < lo:
                    end = max(end, hi - 1)
            last[s.id] = max(last.get(s.id, -1), end)
    for o in outputs:
        last[o] = len(ops)  # stored after the tile's ops
    return last


def _read_later_in_op(op: VOp, s: VBuf, p: PhysBuf, of: dict[int, PhysBuf]) -> bool:
    """Another operand of the same op sharing the buffer would be clobbered... only if it is a different value."""
    return any(o is not s and of.get(o.id) is p for o in op.reads)


def _still_held(held: Sequence[int], last: dict[int, int], i: int) -> bool:
    """Whether some value still alive after op i lives in the buffer that `held` (its values) were given."""
    return any(last.get(v_id, -1) > i for v_id in held)
