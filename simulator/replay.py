"""Replaying a launch that was run before with the same program, cores, tiling and buffers.

Without data-dependent scalar reads, everything but the data of a launch is a
function of (program, block_dim, tiling, GM buffers): the control flow, the
memory actions and their order, the instruction streams and therefore the
schedule. The first such launch records its memory actions in the order they
ran; a repeat replays them (the same numpy operations on the new data) and
reuses the groups, so only the timing is redone when the L2 may hold data
from earlier launches of the same kernel call, and nothing at all when no
timing is wanted. Sanitized launches never replay.

Replaying does no decoding and no bookkeeping nobody reads: each recorded
action is bound once (on the first replay: a launch run once never pays for
it) into a step whose on-chip operands are fixed views
(on-chip memory lives as long as the device) and whose GM operands are
views made from the buffer's current bytes (a buffer may be given new bytes
between launches: `Device.attach`); an action whose handler cannot bind it
runs as recorded. The GM ranges the launch stores are coalesced once, per
kernel argument, and noted on the buffers only when they changed since. On
the first replay, vector steps that load, compute and store whole tiles are
forwarded (forward.py): they read and write GM themselves.
"""
from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Optional

import numpy as np

from .forward import forward
from .memory import coalesce, store_ranges
from .tripcount import LoopMarks, at_trip


@dataclass
class Replay:
    """A recorded launch: its memory actions in order (exe, group, vals), final groups and result."""

    actions: list
    groups: list
    ctx: Any
    result: Any
    steps: list[Callable[[], None]] = field(default_factory=list, repr=False)
    writes: list[tuple[str, list]] = field(default_factory=list, repr=False)  # (param, coalesced ranges)
    _marked: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)  # param -> (id(buf), version)
    _forwarded: bool = field(default=False, repr=False)
    _addrs: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)
    # the args dict `run` last took its buffers from, in a box shared by the replays of one `ctx` (at_trip)
    _args_from: list = field(default_factory=lambda: [None], repr=False)
    _stores: list[tuple[str, list]] = field(default_factory=list, repr=False)  # (param, the recorded stores)
    marks: Optional[LoopMarks] = field(default=None, repr=False)  # where the runs of a trip-count loop sat
    timed: bool = True  # False: made by `at_trip`, its groups are the recording's (timing runs the full model)
    _bound: Optional[list] = field(default=None, repr=False)  # one step per action, before forwarding

    def __post_init__(self) -> None:
        by_buf: dict[int, list] = {}
        for buf, off, nrows, stride, width in self.ctx.gm_writes:
            by_buf.setdefault(id(buf), []).append((off, nrows, stride, width))
        self.ctx.gm_writes.clear()
        params = {id(b): p for p, b in self.ctx.args.items()}
        self._addrs = {p: (b.addr, b.nbytes) for p, b in self.ctx.args.items()}  # the same for every replay
        self._stores = [(params[k], stores) for k, stores in by_buf.items()]

    def run(self, args: dict[str, Any]) -> None:
        """Replay with `args` (buffers at the recorded addresses and sizes, maybe new objects)."""
        if not self._forwarded:  # on the first replay: a launch run once never pays for binding or the analysis
            self._forwarded = True
            self.steps = self._bound_steps()
            if self.marks is None:
                self._bound = None  # (kept only to make replays at other trip counts)
            self.writes = [(p, coalesce(*store_ranges(stores))) for p, stores in self._stores]
            ub = self.ctx.mems.get("aiv", {}).get("UB")
            if ub is not None:
                self.steps = forward(self.steps, ub, self.ctx.args, self._addrs)
        box = self._args_from
        if args is not box[0]:  # (a prepared launch passes the same dict, of the same buffers, each run)
            self.ctx.args.update(args)  # the dict every recorded group and bound step reads its buffers from
            box[0] = args
        _run_steps(self.steps)
        self.ctx.gm_writes.clear()  # actions run as recorded note their stores: `writes` has them all
        marked = self._marked
        for p, ranges in self.writes:
            buf = args[p]
            if marked.get(p) != (id(buf), buf.version):
                buf.add_written(ranges)
                marked[p] = (id(buf), buf.version)


    def _bound_steps(self) -> list[Callable[[], None]]:
        if self._bound is None:
            self._bound = _bind_all(self.actions)
        return self._bound

    def at_trip(self, trip: int) -> Optional["Replay"]:
        """This recorded launch's replay at trip count `trip` of its trip-count loop (tripcount.py), for untimed
        runs only; None where it cannot be made (then the launch runs in full)."""
        if self.marks is None or not self.timed:
            return None
        steps = at_trip(self.marks, self.actions, self._bound_steps(), trip)
        if steps is None:
            return None
        rep = copy.copy(self)  # the same ctx, buffers, stores and args box
        rep.actions, rep.result, rep.marks, rep.timed = [], None, None, False
        rep._bound, rep.steps, rep._forwarded, rep._marked = steps, [], False, {}
        return rep


@np.errstate(all="ignore")  # as every vector instruction does (IEEE results, no warnings); the decorator's
def _run_steps(steps: list[Callable[[], None]]) -> None:  # form costs less per call than a `with` block
    for step in steps:
        step()


class Recording(list):
    """A launch's memory actions as they run, (exe, group, vals) each, for its replay. An action whose handler
    marks it `shareable` (a vector action on UB alone) runs as the step it binds to, and an action repeating
    the values of an earlier one of the same group (a loop over the same tiles: a device loop's iterations)
    runs that one's step: no decoding of its operands again, and its replay binds nothing more."""

    def __init__(self, marks: Optional[LoopMarks] = None) -> None:
        super().__init__()
        self.steps: list[Optional[Callable[[], None]]] = []    # per action: the step it ran as, or None
        self._shared: dict[tuple, Optional[Callable[[], None]]] = {}
        self.marks = marks  # the runs of a trip-count loop, noted by its loop and end_loop handlers

    def run(self, exe: Callable, g: Any, vals: Any) -> None:
        self.append((exe, g, vals))
        step = None
        if getattr(exe, "shareable", False):
            try:
                key = (exe, id(g), _frozen(vals))
            except TypeError:  # values that are not hashable (per-core arrays): bound on their own
                key = None
            step = self._shared.get(key, False) if key is not None else None
            if step is False:
                step = self._shared[key] = bind_action(exe, g, vals, run_as_recorded=False)
        self.steps.append(step)
        if step is None:
            exe(g, vals)
        else:
            step()  # (a recording runs under errstate(ignore), as a replay does: `Device._run`)


def _bind_all(actions: list) -> list[Callable[[], None]]:
    """The steps of the recorded actions: those it ran as (`Recording`), the others bound now."""
    ran = actions.steps if isinstance(actions, Recording) else [None] * len(actions)
    return [step if step is not None else bind_action(exe, g, vals) for (exe, g, vals), step in zip(actions, ran)]


def _frozen(vals: Any) -> Any:
    """Recorded values as a dict key: tuples of ints and scalars, a float or 0-d array (a scalar operand) by its
    bytes (-0.0 and 0.0, equal as keys, differ); any other array raises TypeError (its action is not shared)."""
    if vals.__class__ is not tuple:
        return _frozen_leaf(vals)
    return tuple([v if v.__class__ is int else _frozen(v) if v.__class__ is tuple else _frozen_leaf(v) for v in vals])


def _frozen_leaf(v: Any) -> Any:
    if v.__class__ is np.ndarray or isinstance(v, np.generic):
        if v.ndim:
            raise TypeError("an array operand")
        return ("0d", v.dtype.str, v.tobytes())
    if v.__class__ is float:
        return ("f", v.hex())
    hash(v)
    return v


def bind_action(exe: Callable, g: Any, vals: Any, run_as_recorded: bool = True) -> Optional[Callable[[], None]]:
    """A step running one recorded action: the handler's bound form when it has one (`exe.bind(g, vals)`
    returns a step or None), else the action as recorded (or None, without `run_as_recorded`)."""
    bind = getattr(exe, "bind", None)
    step: Optional[Callable[[], None]] = bind(g, vals) if bind is not None else None
    return step if step is not None or not run_as_recorded else partial(exe, g, vals)


class ReplayCache:
    """The last few recorded launches of a device, keyed by what determines everything but the data."""

    def __init__(self, size: int = 16):
        self.size = size
        self._entries: OrderedDict[tuple, Replay] = OrderedDict()
        # recordings with a trip-count loop, keyed as above without that field: the source of replays at other
        # trip counts (Replay.at_trip)
        self._by_trip: OrderedDict[tuple, Replay] = OrderedDict()

    @staticmethod
    def key(decs: tuple, block_dim: int, tiling: dict[str, int], args: dict[str, Any]) -> tuple:
        """Buffers count by address and size: a new buffer where a freed one was replays the same way."""
        return (tuple(id(d) for d in decs), block_dim, tuple(tiling.items()),
                tuple((p, b.addr, b.nbytes) for p, b in args.items()))

    def get(self, key: tuple) -> Optional[Replay]:
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
        return hit

    def put(self, key: tuple, replay: Replay) -> None:
        self._entries[key] = replay
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def put_trip(self, key: tuple, replay: Replay) -> None:
        """Keep a recording that has trip-count loop marks, under its key without the trip-count field."""
        self._by_trip[key] = replay
        self._by_trip.move_to_end(key)
        while len(self._by_trip) > self.size:
            self._by_trip.popitem(last=False)

    def at_trip(self, key: tuple, trip: int) -> Optional[Replay]:
        """A replay at trip count `trip` made from the recording kept under `key` (put_trip), or None."""
        source = self._by_trip.get(key)
        return source.at_trip(trip) if source is not None else None

    def forget(self, buf: Any) -> None:
        """Let go of a buffer being freed (a replay binds the buffers of its own launch)."""
        for r in [*self._entries.values(), *self._by_trip.values()]:
            for p, b in r.ctx.args.items():
                if b is buf:
                    r.ctx.args[p] = None
                    r._args_from[0] = None
