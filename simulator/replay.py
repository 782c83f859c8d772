"""Replaying a launch that was run before with the same program, cores, tiling and buffers.

Without data-dependent scalar reads, everything but the data of a launch is a
function of (program, block_dim, tiling, GM buffers): the control flow, the
memory actions and their order, the instruction streams and therefore the
schedule. The first such launch records its memory actions in the order they
ran; a repeat replays them (the same numpy operations on the new data) and
reuses the groups, so only the timing is redone when the L2 may hold data
from earlier launches of the same kernel call. Sanitized launches never
replay.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Optional


@dataclass
class Replay:
    """A recorded launch: its memory actions in order (exe, group, vals), final groups and result."""

    actions: list
    groups: list
    ctx: Any
    result: Any

    def run(self, args: dict[str, Any]) -> None:
        """Replay with `args` (buffers at the recorded addresses and sizes, maybe new objects)."""
        self.ctx.args.update(args)  # the dict every recorded group reads its buffers from
        for exe, g, vals in self.actions:
            exe(g, vals)
        for buf, off, nrows, stride, width in self.ctx.gm_writes:
            buf.note_store(off, nrows, stride, width)
        self.ctx.gm_writes.clear()


class ReplayCache:
    """The last few recorded launches of a device, keyed by what determines everything but the data."""

    def __init__(self, size: int = 16):
        self.size = size
        self._entries: OrderedDict[tuple, Replay] = OrderedDict()

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

    def forget(self, buf: Any) -> None:
        """Let go of a buffer being freed (a replay binds the buffers of its own launch)."""
        for r in self._entries.values():
            for p, b in r.ctx.args.items():
                if b is buf:
                    r.ctx.args[p] = None
