"""pyasc: compile numpy-style Python functions into kernels for an Ascend-like NPU.

Every op in the registry is exported here as an eager numpy function, so a
kernel body is also valid numpy code (`kernel.py_func` is the golden reference).
"""
from __future__ import annotations

from . import dtypes, ops
from .dtypes import bool_, float16, float32, int8, int16, int32, uint8  # noqa: F401
from .errors import CompileError  # noqa: F401


class constexpr:
    """Annotation marking a parameter as a compile-time constant (part of the specialisation key)."""


def _export_ops() -> list[str]:
    exported = []
    for name in ops.names():
        op = ops.get(name)
        if op.api is not None:
            globals()[name] = ops.public(op)
            exported.append(name)
    return exported


_OP_EXPORTS = _export_ops()

try:  # the runtime arrives with the kernel object; the ops and IR work without it
    from .runtime import kernel  # noqa: F401
except ImportError:  # pragma: no cover - only while the runtime package is being built
    pass

__version__ = "0.1.0"
