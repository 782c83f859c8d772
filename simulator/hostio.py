"""A host's repeated kernel calls on one device, with its GM buffers looked up and checked once.

A runtime calling one kernel again and again does the same host I/O each time: the caller's input arrays
become their GM buffers' memory (read in place, no copy), the result buffers get fresh zeroed bytes (so the
results of an earlier call, handed out as views, stay as they were), and after the launches the inputs are
let go and the results read. `Device.attach`, `detach` and `read` do each of these for a buffer named at
each call, with every argument checked; `CallIO` looks its buffers up and checks what cannot change between
calls (buffer sizes, result dtypes and ranges) when it is made, so a call does the assignments and the
checks of the arrays themselves. It is made again after an alloc or a free (`stale`).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import bfloat16, isa
from .errors import LaunchError, MemoryRuleError

U8 = np.dtype(np.uint8)


class CallIO:
    """Host I/O of one kernel call shape on `device`: `begin` before `Device.begin_call`, `release` after
    `Device.end_call`, then `results`.

    inputs: (buffer, may be read in place) per input array, in the order `begin` takes the arrays; an input
    that may not (a kernel stores to it), is empty or is not C-contiguous is copied in with `Device.write`.
    fresh: buffers given new zeroed bytes, never written, at every `begin` (results handed out as views).
    results: (buffer, dtype, shape, byte offset, as a view) per result `results` returns.
    """

    def __init__(self, device: Any, inputs: Sequence[tuple[str, bool]], fresh: Sequence[str],
                 results: Sequence[tuple[str, Any, tuple[int, ...], int, bool]]):
        self.device = device
        self.generation = device.generation
        self._inputs = [(device.buffer(name), in_place) for name, in_place in inputs]
        self._fresh = [device.buffer(name) for name in fresh]
        self._results = []
        for name, dtype, shape, offset, view in results:
            buf = device.buffer(name)
            dt_name = isa.normalize_dtype(dtype)
            dt = np.dtype(np.bool_) if dt_name == "bool" else np.dtype(isa.DTYPES[dt_name])
            shape = tuple(int(s) for s in shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            if offset < 0 or offset + nbytes > buf.nbytes:
                raise MemoryRuleError(
                    f"host read of {nbytes} bytes at offset {offset} does not fit GM buffer {buf.name!r} "
                    f"({buf.nbytes} bytes)", space="GM", start=offset, end=offset + nbytes,
                    rule="GM accesses stay inside their buffer")
            self._results.append((buf, dt, shape, int(offset), offset + nbytes, view, dt_name == "bfloat16"))
        self._attached: list[Any] = []
        # the bytes an input buffer holds between calls: zeros, read-only (only read by kernels; a host write
        # gives the buffer its own bytes again), made once per buffer
        self._idle = {id(buf): _zeros(buf.nbytes) for buf, in_place in self._inputs if in_place}

    @property
    def stale(self) -> bool:
        """A buffer was allocated or freed since this was made: make it again."""
        return self.device.generation != self.generation

    def begin(self, arrays: Sequence[np.ndarray]) -> None:
        """Put the call's inputs into GM and give the fresh buffers new bytes (as `Device.attach`/`write` do)."""
        dev, attached = self.device, self._attached
        if dev.in_call:  # (an attach inside a kernel call would have to invalidate the L2)
            raise LaunchError("CallIO.begin inside a kernel call: put the inputs into GM before Device.begin_call")
        for (buf, in_place), arr in zip(self._inputs, arrays):
            if in_place and arr.nbytes == buf.nbytes and arr.nbytes and arr.flags.c_contiguous:
                buf.data = arr.reshape(-1).view(U8)  # read in place: no copy
                buf.mark_all_written()
                attached.append(buf)
            else:
                dev.write(buf, np.ascontiguousarray(arr))
        for buf in self._fresh:
            buf.data = np.zeros(buf.nbytes, U8)
            buf.mark_unwritten()

    def release(self) -> None:
        """Let the attached inputs go (the caller's arrays are not kept alive by the device), as `Device.detach`."""
        idle = self._idle
        for buf in self._attached:
            buf.data = idle[id(buf)]
            buf.mark_unwritten()
        self._attached.clear()

    def results(self) -> list[np.ndarray]:
        """The results, as `Device.read` gives them (a view where `results` said so)."""
        out = []
        for buf, dt, shape, start, stop, view, bf16 in self._results:
            data = buf.data[start:stop].view(dt).reshape(shape)
            out.append(bfloat16.to_float32(data) if bf16 else data if view else data.copy())
        return out


def _zeros(nbytes: int) -> np.ndarray:
    out = np.zeros(nbytes, U8)  # calloc: pages are only touched when written (never, here)
    out.setflags(write=False)
    return out
