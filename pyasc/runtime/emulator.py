"""The emulator backend: run a compiled graph's device kernels on a `simulator.Device`.

One Device per compiled artifact (created on first use; constant tensors
uploaded once). Each call writes the inputs into GM, sizes the outputs and
the workspace with the host module, lets the host module drive the launches
(each one through `launch`, each If condition through `read_cond`), and
reads the results back. With a profile, every launch's result is recorded.
"""
from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from simulator import Device

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
        self._sizes: dict[str, int] = {}
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

    def _run(self, arrays: Sequence[np.ndarray], prof: Profile | None) -> list[np.ndarray]:
        plan = self.module.launch
        env = self.dims(arrays)
        ws_bytes, out_bytes = self.host.sizes(env)
        self._check_sizes(arrays, ws_bytes, out_bytes)
        for loc, arr in zip(plan.inputs, arrays):
            self._buffer(loc.buffer, arr.nbytes)
            self.device.write(loc.buffer, np.ascontiguousarray(arr))
        for loc, n in zip(plan.outputs, out_bytes):
            if loc is not None:
                self._buffer(loc.buffer, n)
        self._buffer(WORKSPACE, ws_bytes)
        self._prof = prof
        try:
            with self.device.call():  # the call's launches share the L2 (an intermediate may still be there)
                self.host.run(env, self.launch, self.read_cond)
        finally:
            self._prof = None
        return self._results(arrays, env)

    def _check_sizes(self, arrays: Sequence[np.ndarray], ws_bytes: int, out_bytes: Sequence[int]) -> None:
        """The call's GM buffers fit the chip (and this machine), before any is allocated."""
        outs = [int(n) for loc, n in zip(self.module.launch.outputs, out_bytes) if loc is not None]
        total = sum(a.nbytes for a in arrays) + sum(outs) + ws_bytes
        if total <= self.device.chip.gm_bytes and total + sum(outs) < HOST_CHECK_BYTES:
            return  # (the common case, without building the report)
        parts = [(f"input {i}", int(a.nbytes)) for i, a in enumerate(arrays)]
        parts += [(f"result {i}", n) for i, n in enumerate(outs)] + [("workspace", int(ws_bytes))]
        limit = MemoryLimit(self.device.chip.gm_bytes, getattr(self.device.chip, "name", "?"))
        check_launch(self.name, parts, sum(outs), limit)

    def launch(self, site: LaunchSite, blocks: int, fields: list[int]) -> None:
        k = self.module.kernels[site.kernel]
        res = self.device.launch(k.program, blocks, site.args, dict(zip(site.fields, fields)), sanitize=self.sanitize)
        if self._prof is not None:
            self._prof.per_launch.append(LaunchProfile(site.kernel, k.name, blocks, res, site.loops))

    def read_cond(self, site: CondSite, offset: int) -> Any:
        if site.kind is CondKind.TICK:  # a runtime loop starts an iteration: nothing to read
            if self._prof is not None:
                self._prof.count_iteration(site.loop)
            return 0
        value = self.device.read(site.buffer, site.dtype, (1,), offset=offset)[0]
        return int(value) if site.kind is CondKind.INT else bool(value)  # a trip count, or an If/while condition

    def _results(self, arrays: Sequence[np.ndarray], env: dict[str, int]) -> list[np.ndarray]:
        out = []
        for src, shape, dtype in zip(self.module.launch.output_sources, self.module.output_shapes,
                                     self.module.output_dtypes):
            what = src.value
            if src.kind is SourceKind.INPUT:
                out.append(np.array(arrays[what], copy=True))
            elif src.kind is SourceKind.CONST:
                out.append(np.array(what, copy=True))
            else:
                real = tuple(sy.evaluate(d, env) for d in shape)
                out.append(self.device.read(what.buffer, dtype, real, offset=sy.evaluate(what.offset, env)))
        return out
