"""PyTorch integration (the `torch` extra of the checkout): kernels as torch custom operators, and a
`torch.compile` backend that sends captured FX graphs through pyasc's optimiser, codegen and emulator.

Core pyasc never imports torch; this package does, when it is imported (`import pyasc.torch`).
"""
from __future__ import annotations

try:
    import torch as _torch  # noqa: F401 - fail here, with a message, when the extra is not installed
except ImportError as e:  # pragma: no cover - exercised only without torch
    raise ImportError("pyasc.torch needs PyTorch: pip install -e '.[torch]' in the pyasc checkout "
                      "(or pip install torch)") from e

from .convert import SUPPORTED_TORCH_DTYPES, from_numpy, to_numpy  # noqa: E402
from .custom_op import DERIVED, PyascOp, custom_op  # noqa: E402

__all__ = ["custom_op", "PyascOp", "DERIVED", "to_numpy", "from_numpy", "SUPPORTED_TORCH_DTYPES"]

from .backend import PyascGraphBreak, ProfileRecord, last_graphs, profile, pyasc_backend, register as _register  # noqa: E402,E501

_register()
__all__ += ["pyasc_backend", "PyascGraphBreak", "ProfileRecord", "profile", "last_graphs"]
