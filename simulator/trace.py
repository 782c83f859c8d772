"""Chrome-trace (Perfetto-loadable) export of a launch's schedule.

One process per core, one thread (track) per pipe, one complete ("X") slice
per instruction; the scalar unit's work between pipe instructions appears as
"scalar" slices on the S track, the launch's start-up as a "launch" slice;
each set_flag -> wait_flag pair is a flow arrow from the set's track to the
wait's track. A wait on the scalar unit (wait_flag(X, S)) spans the cycles
the scalar unit stalled.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Optional

from .isa import CORE_PIPES, PIPES
from .stream import BAR, SET, WAIT, XSET, XWAIT
from .timing import TimingGroup


def chrome_trace(groups: list[TimingGroup], clock_hz: float, issue_cycles: int, startup: float = 0.0,
                 offset_us: float = 0.0, pid_of: Optional[Callable[[str, int, int], int]] = None,
                 flow_base: int = 0) -> dict[str, Any]:
    """Trace events of one launch. To combine several launches into one trace, `offset_us` shifts it in
    time, `pid_of(core type, core index, launch-wide id)` gives each core's process id (default: the
    launch-wide id) and `flow_base` keeps flow ids apart."""
    us = 1e6 / clock_hz
    events: list[dict[str, Any]] = []
    flow_id = flow_base
    rows = sorted(((gc, c, g) for g in groups for c, gc in zip(g.cores, g.gcores)), key=lambda r: r[0])
    for gc, core, g in rows:
        ct = g.core_type
        pid = pid_of(ct, core, gc) if pid_of is not None else gc
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": f"core {core} ({ct.upper()})"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        for t, p in enumerate(PIPES):
            if p not in CORE_PIPES[ct]:
                continue  # no empty tracks for pipes this core type does not have
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": t, "args": {"name": p}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": t, "args": {"sort_index": t}})
        if startup > 0:
            events.append({"ph": "X", "name": "launch", "cat": "launch", "pid": pid, "tid": 0, "ts": offset_us,
                           "dur": startup * us, "args": {"cycles": startup}})
        texts, mnemonics = g.program.texts, g.program.mnemonics
        for j, rec in enumerate(g.stream):
            kind, pipe, scyc, idx = rec.kind, rec.pipe, rec.scalar, rec.instr
            if scyc > 0 and kind < BAR:
                end = g.issue[j] - issue_cycles
                events.append({"ph": "X", "name": "scalar", "pid": pid, "tid": 0,
                               "ts": offset_us + (end - scyc) * us, "dur": scyc * us, "args": {"cycles": scyc}})
            tid = 0 if kind >= BAR else pipe
            start, end = g.start[j], g.end[j]
            # flag slices share cat/pid/tid/ts with their flow events so that viewers bind them
            cat = "flag" if kind in (SET, WAIT, XSET, XWAIT) else "instr"
            args = {"instruction": idx, "text": texts[idx], "start_cycle": start, "end_cycle": end}
            if j in g.hit:
                args["l2_hit_fraction"] = g.hit[j]
            events.append({"ph": "X", "name": mnemonics[idx], "cat": cat, "pid": pid, "tid": tid,
                           "ts": offset_us + start * us, "dur": max(end - start, 0.0) * us, "args": args})
        for key, fires in g.fires.items():
            for (t_set, _), (t_wait, _) in zip(fires, g.consumed.get(key, [])):
                flow_id += 1
                name = f"{PIPES[key[0]]}->{PIPES[key[1]]} event {key[2]}"
                events.append({"ph": "s", "id": flow_id, "name": name, "cat": "flag", "pid": pid,
                               "tid": key[0], "ts": offset_us + t_set * us})
                events.append({"ph": "f", "id": flow_id, "name": name, "cat": "flag", "pid": pid,
                               "tid": key[1], "ts": offset_us + t_wait * us, "bp": "e"})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def save(path: str, trace: dict[str, Any]) -> None:
    with open(path, "w") as f:
        json.dump(trace, f)
