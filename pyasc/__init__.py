"""pyasc: compile numpy-style Python functions into kernels for an Ascend-like NPU.

Every op in the registry is exported here as an eager numpy function, so a
kernel body is also valid numpy code (`kernel.py_func` is the golden reference).
"""
from __future__ import annotations

from . import dtypes, ops
from .dtypes import bool_, float16, float32, int8, int16, int32, uint8  # noqa: F401
from .errors import CompileError, InternalCompilerError  # noqa: F401
from .markers import constexpr, runtime_range, static_range  # noqa: F401
from .runtime import CompiledKernel, Kernel, kernel  # noqa: F401
from .runtime.differentiate import grad, value_and_grad, vjp  # noqa: F401


def _export_ops() -> list[str]:
    # one public function per op with a signature, plus sugar (zeros, ones, astype)
    exported = []
    for name, fn in ops.public_functions().items():
        globals()[name] = fn
        exported.append(name)
    return exported


_OP_EXPORTS = _export_ops()


__version__ = "0.1.0"


def __getattr__(name: str):  # noqa: ANN202 - module-level lazy attribute (PEP 562)
    if name == "torch":
        # the PyTorch integration imports torch: load it only when a user asks for pyasc.torch
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'pyasc' has no attribute {name!r}")
