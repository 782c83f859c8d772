"""How much memory one call may use, checked from shapes before anything is allocated.

Two limits. The emulated chip's GM (`gm_bytes` of its config): a tensor, or a
launch's tensors together, that do not fit are a user error naming the
sizes, as on the real chip. And this machine's memory: the emulator keeps GM
in host memory, so a tensor to materialise (a broadcast view, a strided
slice) or a launch larger than the memory available is refused too, instead
of being allocated and the process killed by the operating system.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from .. import dtypes
from ..errors import CompileError
from ..ir import Graph
from .errors import ArgumentValueError

#: tensors smaller than this are never compared with the host's memory (that reads /proc/meminfo)
HOST_CHECK_BYTES = 64 << 20


@dataclass(frozen=True)
class MemoryLimit:
    """The GM of the chip a kernel runs on."""

    gm_bytes: int
    chip: str


def human(nbytes: int) -> str:
    """`8.0 GiB`; with the exact count when the rounding shows a whole number it is not (`64.0 GiB (68719476740 B)`)."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            value = nbytes / size
            text = f"{value:.1f} {unit}"
            hidden = nbytes % size and round(value, 1) == round(value)  # 64.0 GiB, but not exactly
            return f"{text} ({nbytes} B)" if hidden else text
    return f"{nbytes} B"


def host_available() -> int | None:
    """Bytes of memory this process can still take: MemAvailable, capped by what an address-space limit leaves
    (the limit less the address space in use); None where neither is known."""
    found = _meminfo("/proc/meminfo", b"MemAvailable:")
    try:
        import resource  # POSIX only

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return found
    if soft != resource.RLIM_INFINITY:
        left = soft - (_meminfo("/proc/self/status", b"VmSize:") or 0)
        found = left if found is None else min(found, left)
    return found


def _meminfo(path: str, field: bytes) -> int | None:
    """A `name: N kB` line of a /proc file, in bytes."""
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def tensor_bytes(shape: Sequence[int], itemsize: int) -> int:
    return math.prod(int(d) for d in shape) * itemsize


def check_argument(kernel: str, name: str, shape: Sequence[int], dtype: str, itemsize: int,
                   limit: MemoryLimit | None, materialise: bool) -> None:
    """An argument of `shape` fits the chip's GM and, when it is about to be materialised (`materialise`),
    this machine's memory: else ArgumentValueError naming the sizes."""
    if limit is None:
        return
    nbytes = tensor_bytes(shape, itemsize)
    what = f"{kernel}() argument {name!r} is {dtype}{list(shape)} ({human(nbytes)})"
    if nbytes > limit.gm_bytes:
        raise ArgumentValueError(f"{what}: larger than the {human(limit.gm_bytes)} of GM of the emulated chip "
                                 f"{limit.chip!r}")
    if materialise and nbytes >= HOST_CHECK_BYTES:
        available = host_available()
        if available is not None and 2 * nbytes > available:  # the contiguous copy, then its copy in GM
            raise ArgumentValueError(f"{what}, to be copied into a contiguous array and then into the emulated GM "
                                     f"({human(2 * nbytes)}): this machine has {human(available)} of memory "
                                     "available (the emulator keeps GM in it)")


def check_launch(kernel: str, parts: Sequence[tuple[str, int]], need: int, limit: MemoryLimit) -> None:
    """A launch's GM buffers (`parts`: what, bytes) fit the chip's GM, and the host memory the emulator allocates
    for it (`need` bytes) fits this machine's: else ArgumentValueError naming the largest."""
    total = sum(n for _, n in parts)
    largest = ", ".join(f"{what} {human(n)}" for what, n in sorted(parts, key=lambda p: -p[1])[:3])
    if total > limit.gm_bytes:
        raise ArgumentValueError(f"{kernel}() needs {human(total)} of GM for this call ({largest}), more than the "
                                 f"{human(limit.gm_bytes)} of the emulated chip {limit.chip!r}")
    if need >= HOST_CHECK_BYTES:
        available = host_available()
        if available is not None and need > available:
            raise ArgumentValueError(f"{kernel}() needs {human(need)} of memory to emulate this call ({largest}); "
                                     f"this machine has {human(available)} available (the emulator keeps GM in it)")


def check_graph(graph: Graph, limit: MemoryLimit) -> None:
    """Every static input and result of a kernel's graph fits the chip's GM: else a CompileError at the
    expression that makes the largest result (an input too large is the caller's: checked at the call)."""
    for value in graph.outputs:
        t = value.type
        if not t.is_static:
            continue
        nbytes = tensor_bytes(t.shape, dtypes.itemsize(t.dtype))
        if nbytes > limit.gm_bytes:
            raise CompileError(f"this result is {t.dtype}{list(t.shape)} ({human(nbytes)}), larger than the "
                               f"{human(limit.gm_bytes)} of GM of the emulated chip {limit.chip!r}", value.node.loc)
