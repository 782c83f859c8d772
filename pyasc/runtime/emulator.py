"""The emulator backend: run a compiled graph's device kernels on a `simulator.Device`.

One Device per compiled artifact (created on first use; constant tensors
uploaded once). Each call puts the inputs into GM, sizes the outputs and
the workspace with the host module, lets the host module drive the launches
(each one through `launch`, each If condition through `read_cond`), and
reads the results back. With a profile, every launch's result is recorded.

A call without a profile does only what its outputs need: launches run
untimed (a repeat replays its recorded memory actions and nothing else), a
C-contiguous input that no kernel stores to becomes its GM buffer's memory
without a copy (detached again after the call, so the caller's array is not
kept), every other input is copied once, and each output buffer gets fresh
zeroed memory per call, so the results come back as views of it (an earlier
call's results are never overwritten).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from simulator import Device
from simulator.hostio import CallIO

from .. import symbolic as sy
from ..codegen.device import DeviceModule
from ..codegen.host import CondKind, CondSite, HostProgram, LaunchSite
from ..codegen.launch import WORKSPACE, SourceKind
from ..ir import Graph, Sym
from .limits import HOST_CHECK_BYTES, MemoryLimit, check_launch
from .profile import LaunchProfile, Profile


def dim_bindings(graph: Graph) -> list[tuple[int, int, str]]:
    """(input index, axis, symbol) for every symbolic dim of the graph's inputs (dynamic=True)."""
    out = []
    for n in graph.inputs:
        for axis, d in enumerate(n.outputs[0].shape):
            if isinstance(d, Sym) and d.expr.isidentifier():
                out.append((n.attrs["index"], axis, d.expr))
    return out


@dataclass
class CallShape:
    """What a call needs that depends only on its dims (computed once per dims): buffer sizes, the results'
    places, and, for host code without Ifs and Loops, the launches it makes."""

    workspace: int
    outputs: list[int]                          # bytes per output buffer (plan.outputs order)
    results: list[tuple]                        # per result: (kind, what, dtype, shape, offset, as a view)
    fresh: list[str]                            # output buffers given new zeroed memory per call
    launches: list[tuple[LaunchSite, list[int], Any]] | None = None  # (site, tiling, the prepared launch)
    io: CallIO | None = None                    # the host I/O, its buffers looked up once (made on first use)


class EmulatorRunner:
    def __init__(self, module: DeviceModule, host: HostProgram, chip: Any, sanitize: bool, graph: Graph):
        self.module = module
        self.host = host
        self.device = Device(chip)
        self.sanitize = sanitize
        self.bindings = dim_bindings(graph)
        self.name = graph.name
        for name, arr in module.launch.consts.items():
            self.device.upload(name, arr)
        stored = set()
        for site in host.source.sites:  # buffers some kernel stores to are never the caller's own memory
            stored |= {site.args[p] for p in self.device.stored_params(module.kernels[site.kernel].program)}
        self._stored = frozenset(stored)
        # per input: its GM buffer, and whether a C-contiguous array may be that buffer's memory (no kernel stores
        # to it, so the caller's array is only read)
        self._inputs = [(loc.buffer, loc.buffer not in self._stored) for loc in module.launch.inputs]
        self._sizes: dict[str, int] = {}
        self._sized: tuple | None = None  # the dims the buffers were last sized for
        self._shapes: dict[tuple, CallShape] = {}
        self._prepared: dict[tuple, Any] = {}  # (launch site, blocks, tiling) -> the device's prepared launch
        # without Ifs and Loops the host code makes the same launches for the same dims: record them once
        self._straight = not host.source.conds
        self._prof: Profile | None = None
        # one device per artifact, like one NPU stream: calls from several threads queue here
        # instead of overwriting each other's GM buffers mid-launch
        self._lock = threading.Lock()

    def _buffer(self, name: str, nbytes: int) -> None:
        nbytes = max(int(nbytes), 1)
        if self._sizes.get(name) != nbytes:
            if name in self._sizes:
                self.device.free(name)
            self.device.alloc(name, nbytes)
            self._sizes[name] = nbytes

    def dims(self, arrays: Sequence[np.ndarray]) -> dict[str, int]:
        return {sym: int(arrays[i].shape[axis]) for i, axis, sym in self.bindings}

    def run(self, arrays: Sequence[np.ndarray], prof: Profile | None = None) -> list[np.ndarray]:
        with self._lock:
            return self._run(arrays, prof)

    def _shape(self, env: dict[str, int], key: tuple) -> CallShape:
        shape = self._shapes.get(key)
        if shape is None:
            if len(self._shapes) >= 256:  # bounded: a dynamic kernel called with many shapes
                self._shapes.clear()
            ws, outs = self.host.sizes(env)
            fresh = {loc.buffer for loc in self.module.launch.outputs if loc is not None}
            results, handed = [], set()
            for src, dims, dtype in zip(self.module.launch.output_sources, self.module.output_shapes,
                                        self.module.output_dtypes):
                kind, what = src.kind, src.value
                if kind is not SourceKind.BUFFER:
                    results.append((kind, what, None, None, 0, False))
                    continue
                # a view of bytes given new this call, once per buffer (a second result from it is a copy)
                view = what.buffer in fresh and what.buffer not in handed
                handed.add(what.buffer)
                results.append((kind, what.buffer, dtype, tuple(sy.evaluate(d, env) for d in dims),
                                sy.evaluate(what.offset, env), view))
            fresh = [loc.buffer for loc in self.module.launch.outputs if loc is not None]
            shape = self._shapes[key] = CallShape(ws, outs, results, fresh)
        return shape

    def _run(self, arrays: Sequence[np.ndarray], prof: Profile | None) -> list[np.ndarray]:
        if self.bindings:
            env = self.dims(arrays)
            key = tuple(env.values())
        else:  # static shapes: one call shape
            env, key = {}, ()
        shape = self._shape(env, key)
        dev = self.device
        if key != self._sized:  # the buffers' sizes are those of the last call's dims otherwise
            plan = self.module.launch
            self._check_sizes(arrays, shape.workspace, shape.outputs)
            for loc, arr in zip(plan.inputs, arrays):
                self._buffer(loc.buffer, arr.nbytes)
            for loc, n in zip(plan.outputs, shape.outputs):
                if loc is not None:
                    self._buffer(loc.buffer, n)
            self._buffer(WORKSPACE, shape.workspace)
            self._sized = key
        io = shape.io
        if io is None or io.stale:
            reads = [(what, dtype, dims, offset, view) for kind, what, dtype, dims, offset, view in shape.results
                     if kind is SourceKind.BUFFER]
            io = shape.io = CallIO(dev, self._inputs, shape.fresh, reads)
        # inputs read in place where they may be, and fresh bytes for the results: the results of the last call
        # (views of the old ones) stay as they are
        io.begin(arrays)
        self._prof = prof
        dev.begin_call()  # the call's launches share the L2 (an intermediate may still be there)
        try:
            if shape.launches is not None:
                if prof is None:  # untimed: a repeat replays its memory actions
                    for _, _, pl in shape.launches:
                        pl(self.sanitize, True, None, False)
                else:
                    for site, fields, pl in shape.launches:
                        self._fire(site, fields, pl)
            elif self._straight:
                shape.launches = self._recorded_run(env)
            else:
                self.host.run(env, self.launch, self.read_cond)
        finally:
            dev.end_call()
            self._prof = None
            io.release()  # the caller's arrays are not kept alive by the device
        read = io.results()
        if len(read) == len(shape.results):
            return read
        it = iter(read)
        out = []
        for kind, what, *_ in shape.results:
            if kind is SourceKind.INPUT:
                out.append(np.array(arrays[what], copy=True))
            elif kind is SourceKind.CONST:
                out.append(np.array(what, copy=True))
            else:
                out.append(next(it))
        return out

    def _recorded_run(self, env: dict[str, int]) -> list[tuple[LaunchSite, list[int], Any]]:
        """Run the host code and return the launches it made (host code without Ifs and Loops only)."""
        made: list[tuple[LaunchSite, list[int], Any]] = []

        def recording(site: LaunchSite, blocks: int, fields: list[int]) -> None:
            pl = self._prepared_launch(site, blocks, fields)
            made.append((site, fields, pl))
            self._fire(site, fields, pl)

        self.host.run(env, recording, self.read_cond)
        return made

    def _check_sizes(self, arrays: Sequence[np.ndarray], ws_bytes: int, out_bytes: Sequence[int]) -> None:
        """The call's GM buffers fit the chip (and this machine), before any is allocated."""
        outs = [int(n) for loc, n in zip(self.module.launch.outputs, out_bytes) if loc is not None]
        total = sum(a.nbytes for a in arrays) + sum(outs) + ws_bytes
        host = 2 * sum(outs) + ws_bytes  # inputs are read in place; results are allocated, then copied out
        if total <= self.device.chip.gm_bytes and host < HOST_CHECK_BYTES:
            return  # (the common case, without building the report)
        parts = [(f"input {i}", int(a.nbytes)) for i, a in enumerate(arrays)]
        parts += [(f"result {i}", n) for i, n in enumerate(outs)] + [("workspace", int(ws_bytes))]
        limit = MemoryLimit(self.device.chip.gm_bytes, getattr(self.device.chip, "name", "?"))
        check_launch(self.name, parts, host, limit)

    def launch(self, site: LaunchSite, blocks: int, fields: list[int]) -> None:
        """One launch the host code makes."""
        self._fire(site, fields, self._prepared_launch(site, blocks, fields))

    def _prepared_launch(self, site: LaunchSite, blocks: int, fields: list[int]) -> Any:
        key = (site.index, blocks, tuple(fields))
        pl = self._prepared.get(key)
        if pl is None:
            if len(self._prepared) >= 1024:  # bounded, like the call shapes
                self._prepared.clear()
            pl = self._prepared[key] = self.device.prepare(self.module.kernels[site.kernel].program, blocks,
                                                            site.args, dict(zip(site.fields, fields)))
        return pl

    def _fire(self, site: LaunchSite, fields: list[int], pl: Any) -> None:
        prof = self._prof
        res = pl(self.sanitize, True, None, prof is not None)
        if prof is not None:
            prof.per_launch.append(LaunchProfile(site.kernel, self.module.kernels[site.kernel].name, pl.block_dim,
                                                 res, site.loops))
            if site.trip >= 0:  # a loop that ran inside this launch
                prof.count_iteration(site.loops[-1], fields[site.trip], device=True)

    def read_cond(self, site: CondSite, offset: int) -> Any:
        if site.kind is CondKind.TICK:  # a runtime loop starts an iteration: nothing to read
            if self._prof is not None:
                self._prof.count_iteration(site.loop)
            return 0
        value = self.device.read(site.buffer, site.dtype, (1,), offset=offset)[0]
        return int(value) if site.kind is CondKind.INT else bool(value)  # a trip count, or an If/while condition
