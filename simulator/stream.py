"""Timing records: what the functional run hands the timing model, one per pipe instruction executed.

A lockstep group appends one `StreamRecord` per pipe instruction (and per
barrier or flag) it executes, in issue order; the timing model schedules the
stream of each distinct set of identical cores (timing.py), and the trace
export draws it (trace.py).
"""
from __future__ import annotations

from typing import Any, NamedTuple

# record kinds; the order matters: kinds >= BAR are the scalar unit's own waits
OP, DMA, SET, WAIT, XSET, BAR, SYNC, XWAIT = range(8)
KIND_NAMES = ("op", "dma", "set_flag", "wait_flag", "cross_set", "pipe_barrier", "sync_all", "cross_wait")


class StreamRecord(NamedTuple):
    """One executed pipe instruction, barrier or flag, as the timing model needs it.

    kind: one of the constants above. pipe: PIPE_ID of the pipe it is queued on.
    cycles: busy cycles (OP) or start-up cycles before the data moves (DMA).
    nbytes: bytes the bus carries (DMA, after the per-burst rule). rate: the
    per-core bandwidth cap of the path in bytes per cycle (DMA).
    scalar: scalar-unit cycles spent since the previous record (address maths,
    loops). instr: index of the instruction in its program. key: the flag
    (SET/WAIT: (src pipe, dst pipe, event); XSET/XWAIT: a cross-core flag key).
    """

    kind: int
    pipe: int
    cycles: float
    nbytes: float
    rate: float
    scalar: float
    instr: int
    key: Any = None


def op(pipe: int, cycles: float, scalar: float, instr: int) -> StreamRecord:
    return StreamRecord(OP, pipe, cycles, 0, 0, scalar, instr)


def flag(kind: int, pipe: int, key: Any, scalar: float, instr: int) -> StreamRecord:
    return StreamRecord(kind, pipe, 0, 0, 0, scalar, instr, key)
