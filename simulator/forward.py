"""Forwarding in a replay: vector work reads its inputs from GM and writes its result to GM directly.

A streaming vector kernel loads a tile into UB, computes on it and stores the
result, tile after tile: three copies of every byte besides the arithmetic. When
a replay's steps (replay.py) all say exactly which UB bytes they read and write
(the records below), this pass finds, for an elementwise step that is a plain
ufunc, the loads that produced its UB operands and the store that takes its
result, and lets the step read those GM bytes and write that GM result itself:
the load and the store are dropped, and the step's own UB result too.

Only writes that a later step overwrites completely are dropped, so UB ends the
launch holding exactly what the recorded launch left there (the last tiles stay
as they were). A load is dropped only when every step that reads its bytes
reads them as a whole operand and can take them from GM; its GM buffer must not
be stored to in the launch (so reading it later reads the same bytes). A store
is dropped only when the result is read by it alone, its buffer is not loaded
from in the launch and no other store of the launch meets its bytes (so writing
earlier changes nothing). Buffers count as the same memory when their GM
address ranges meet. The flow of UB bytes is followed core by core (a lockstep
group may split, e.g. at a tail), and a step is forwarded only together with
steps of exactly its cores; a step without a record keeps the launch as it is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

import numpy as np

Range = tuple[int, int]  # (UB byte address, bytes)

#: forwarding drops only loads and stores, and its analysis follows every step: a launch whose loads and stores
#: are under 1/MOVES_WORTH_IT of its steps (a device loop: many iterations on tiles loaded once) is left as it is
MOVES_WORTH_IT = 8


@dataclass(frozen=True)
class UbMove:
    """GM -> UB (`load`) or UB -> GM, one row per core: `spec` = (shape, offset, strides) of the GM bytes
    (see gm_view_spec), `ub` the UB bytes."""

    cores: tuple[int, ...]
    arg: str
    spec: tuple
    ub: Range
    load: bool


def _is_load(info: Any) -> bool:
    return isinstance(info, UbMove) and info.load


def _is_store(info: Any) -> bool:
    return isinstance(info, UbMove) and not info.load


@dataclass(frozen=True)
class UbUfunc:
    """out = ufunc(*operands) on (cores, n) views: each operand a UB range with its dtype, or a scalar."""

    cores: tuple[int, ...]
    ufunc: np.ufunc
    operands: tuple                   # (Range, dtype) or ("scalar", value)
    out: tuple                        # (Range, dtype)


@dataclass(frozen=True)
class UbTouch:
    """Any other step, with the exact UB ranges it reads and writes and the GM it touches (arg, spec)."""

    cores: tuple[int, ...]
    reads: tuple[Range, ...] = ()
    writes: tuple[Range, ...] = ()
    gm_reads: tuple[str, ...] = ()
    gm_writes: tuple[tuple[str, tuple], ...] = ()


Info = Union[UbMove, UbUfunc, UbTouch]


def forward(steps: list[Callable[[], None]], ub: np.ndarray, args: dict[str, Any],
            addrs: dict[str, tuple[int, int]]) -> list[Callable[[], None]]:
    """The steps with forwarding applied (or the same list when the records do not allow it). `ub` is the
    stacked UB array, `args` the launch's buffers by param (read when a step runs), `addrs` param -> GM
    (address, bytes) at recording."""
    infos: list[Optional[Info]] = [getattr(s, "info", None) for s in steps]
    if not infos or any(i is None for i in infos) or not any(isinstance(i, UbUfunc) for i in infos):
        return steps
    if sum(1 for i in infos if isinstance(i, UbMove)) * MOVES_WORTH_IT < len(infos):
        return steps  # few moves among many UB steps (a loop on chip): little to drop, a long flow to follow
    per_core: dict[int, list[int]] = {}
    for k, i in enumerate(infos):
        for c in i.cores:
            per_core.setdefault(c, []).append(k)
    classes = {tuple(ks) for ks in per_core.values()}  # cores running the same steps share one flow
    same = _aliases(addrs)
    loaded = {a for i in infos for a in _gm_reads(i)}
    stored = [(a, spec) for i in infos for a, spec in _gm_writes(i)]
    stored_args = {a for a, _ in stored}
    flow = _Flow(ub.shape[1], infos, [list(ks) for ks in classes])

    drop: set[int] = set()
    from_gm: dict[tuple[int, int], UbMove] = {}   # (ufunc step, operand) -> the load it reads through
    to_gm: dict[int, UbMove] = {}                 # ufunc step -> the store it writes through
    for j, info in enumerate(infos):
        if not _is_load(info) or not flow.dead(j) or same[info.arg] & stored_args:
            continue
        uses = flow.readers[j]
        if uses and all(isinstance(infos[k], UbUfunc) and infos[k].cores == info.cores
                        and _operand(infos[k], info.ub) is not None for k in uses):
            drop.add(j)
            for k in uses:
                for p in _operands(infos[k], info.ub):
                    from_gm[(k, p)] = info
    for i, info in enumerate(infos):
        if not isinstance(info, UbUfunc) or not flow.dead(i):
            continue
        uses = flow.readers[i]
        if len(uses) != 1 or not _is_store(infos[uses[0]]):
            continue
        t = infos[uses[0]]
        if t.ub != info.out[0] or t.cores != info.cores or same[t.arg] & loaded or not _alone(t, stored, same):
            continue
        drop.add(uses[0])
        to_gm[i] = t
    if not drop:
        return steps
    out = []
    for i, (step, info) in enumerate(zip(steps, infos)):
        if i in drop:
            continue
        if isinstance(info, UbUfunc) and (i in to_gm or any((i, p) in from_gm for p in range(len(info.operands)))):
            out.append(_fused(info, [from_gm.get((i, p)) for p in range(len(info.operands))], to_gm.get(i), ub,
                              args))
        else:
            out.append(step)
    return out


class _Flow:
    """Who reads each step's UB writes, and whether each write is completely overwritten later."""

    def __init__(self, size: int, infos: list[Info], classes: list[list[int]]):
        self.live = [0] * len(infos)     # bytes of each step's writes not yet overwritten, on some core
        readers: list[set[int]] = [set() for _ in infos]
        for steps in classes:  # the steps one core runs, in order (cores running the same steps: once)
            live = self._follow(size, infos, steps, readers)
            for j, n in live.items():
                self.live[j] += n
        self.readers = [sorted(r) for r in readers]

    @staticmethod
    def _follow(size: int, infos: list[Info], steps: list[int], readers: list[set[int]]) -> dict[int, int]:
        last = np.full(size, -1, np.int64)            # the step that last wrote each UB byte
        live: dict[int, int] = {}
        for k in steps:
            info = infos[k]
            for a, n in _ub_reads(info):
                for j, _ in _pieces(last[a:a + n]):
                    if j >= 0:
                        readers[j].add(k)
            for a, n in _ub_writes(info):
                for j, c in _pieces(last[a:a + n]):
                    if j >= 0:
                        live[j] -= c
                last[a:a + n] = k
                live[k] = live.get(k, 0) + n
        return live

    def dead(self, j: int) -> bool:
        return self.live[j] == 0


def _pieces(seg: np.ndarray) -> list[tuple[int, int]]:
    """(value, length) of the runs of equal values in `seg` (writes set whole ranges, so runs are few)."""
    if seg.size == 0:
        return []
    cuts = np.flatnonzero(seg[1:] != seg[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [seg.size]))
    return list(zip(seg[starts].tolist(), (ends - starts).tolist()))


def _ub_reads(info: Info) -> list[Range]:
    if _is_store(info):
        return [info.ub]
    if isinstance(info, UbUfunc):
        return [op[0] for op in info.operands if op[0] != "scalar"]
    if isinstance(info, UbTouch):
        return list(info.reads)
    return []


def _ub_writes(info: Info) -> list[Range]:
    if _is_load(info):
        return [info.ub]
    if isinstance(info, UbUfunc):
        return [info.out[0]]
    if isinstance(info, UbTouch):
        return list(info.writes)
    return []


def _gm_reads(info: Info) -> tuple[str, ...]:
    return (info.arg,) if _is_load(info) else info.gm_reads if isinstance(info, UbTouch) else ()


def _gm_writes(info: Info) -> tuple[tuple[str, tuple], ...]:
    if _is_store(info):
        return ((info.arg, info.spec),)
    return info.gm_writes if isinstance(info, UbTouch) else ()


def _operands(info: UbUfunc, rng: Range) -> list[int]:
    return [p for p, op in enumerate(info.operands) if op[0] == rng]


def _operand(info: UbUfunc, rng: Range) -> Optional[int]:
    """The first operand that is exactly `rng`, when every read of `rng`'s bytes by the step is such an operand."""
    a, n = rng
    hit = None
    for p, op in enumerate(info.operands):
        if op[0] == "scalar":
            continue
        b, m = op[0]
        if op[0] == rng:
            hit = p if hit is None else hit
        elif b < a + n and a < b + m:
            return None  # reads part of the loaded bytes as another operand
    return hit


def _aliases(addrs: dict[str, tuple[int, int]]) -> dict[str, set[str]]:
    """param -> the params whose buffers share GM bytes with it (itself included)."""
    out = {}
    for p, (a, n) in addrs.items():
        out[p] = {q for q, (b, m) in addrs.items() if a < b + m and b < a + n}
    return out


def _spans(spec: tuple) -> list[Range]:
    (cores, rows, width), off, (dc, dr, _) = spec
    return [(off + c * dc + r * dr, width) for c in range(cores) for r in range(rows)]


def _alone(t: UbMove, stored: list[tuple[str, tuple]], same: dict[str, set[str]]) -> bool:
    """No byte of the store is written by any other store of the launch, nor by another core of it."""
    mine = _spans(t.spec)
    for a, n in mine:
        if sum(1 for b, m in mine if a < b + m and b < a + n) > 1:
            return False
    seen_self = False
    for arg, spec in stored:
        if arg not in same[t.arg]:
            continue
        if arg == t.arg and spec == t.spec and not seen_self:
            seen_self = True
            continue
        for b, m in _spans(spec):
            if any(a < b + m and b < a + n for a, n in mine):
                return False
    return True


def _typed(spec: tuple, dtype: np.dtype) -> tuple:
    """(shape, offset, strides) of a one-row-per-core GM spec as (cores, elements) of `dtype`."""
    (cores, _, width), off, (dc, _, _) = spec
    return (cores, width // dtype.itemsize), off, (dc, dtype.itemsize)


def _fused(info: UbUfunc, loads: list[Optional[UbMove]], store: Optional[UbMove], ub: np.ndarray,
           args: dict[str, Any]) -> Callable[[], None]:
    """The ufunc step reading forwarded operands from GM and writing a forwarded result to GM."""
    sel = slice(info.cores[0], info.cores[-1] + 1, info.cores[1] - info.cores[0]) if len(info.cores) > 1 else \
        slice(info.cores[0], info.cores[0] + 1)
    fixed: list[Any] = []
    gm: list[tuple[int, str, tuple, np.dtype]] = []  # (position, param, typed spec, dtype) made per run
    for p, (op, load) in enumerate(zip(info.operands, loads)):
        if op[0] == "scalar":
            fixed.append(op[1])
        elif load is not None:
            fixed.append(None)
            gm.append((p, load.arg, _typed(load.spec, op[1]), op[1]))
        else:
            (a, n), dt = op
            fixed.append(ub[sel, a:a + n].view(dt))
    (a, n), odt = info.out
    out_fixed = None if store is not None else ub[sel, a:a + n].view(odt)
    out_spec = (store.arg, _typed(store.spec, odt)) if store is not None else None
    f, new = info.ufunc, np.ndarray

    def step() -> None:
        ops = list(fixed)
        for p, arg, (shape, off, strides), dt in gm:
            ops[p] = new(shape, dt, args[arg].data, off, strides)
        if out_spec is None:
            out = out_fixed
        else:
            shape, off, strides = out_spec[1]
            out = new(shape, odt, args[out_spec[0]].data, off, strides)
        f(*ops, out=out, casting="unsafe")
    return step
