"""torch tensors <-> numpy arrays without copies where dtype and layout allow, and the dtype names."""
from __future__ import annotations

import numpy as np
import torch

from .. import dtypes

#: torch dtype -> pyasc's canonical dtype name (the dtypes the chip has)
_TO_PYASC: dict[torch.dtype, str] = {
    torch.float16: "float16", torch.float32: "float32", torch.int8: "int8", torch.int16: "int16",
    torch.int32: "int32", torch.uint8: "uint8", torch.bool: "bool",
}
_TO_TORCH: dict[str, torch.dtype] = {v: k for k, v in _TO_PYASC.items()}
SUPPORTED_TORCH_DTYPES: tuple[torch.dtype, ...] = tuple(_TO_PYASC)
SUPPORTED_TEXT = ", ".join(str(d) for d in SUPPORTED_TORCH_DTYPES)


#: torch dtypes the chip lacks that a captured graph computes in a narrower one (int64 token ids, labels and
#: indices as int32): a graph input's values are checked to fit when the pyasc kernel is called
#: (backend.PyascSubgraph), an output is widened back, constants are narrowed when they fit
NARROWED: dict[torch.dtype, torch.dtype] = {torch.int64: torch.int32}


def pyasc_dtype(dt: torch.dtype) -> str | None:
    return _TO_PYASC.get(dt)


def graph_dtype(dt: torch.dtype) -> str | None:
    """The dtype a captured graph computes torch's `dt` in: its own, or its NARROWED one (None: neither)."""
    return _TO_PYASC.get(NARROWED.get(dt, dt))


def narrow_fits(t: torch.Tensor) -> bool:
    """Whether the values of a tensor of a NARROWED dtype fit the narrower one (min and max: one pass each)."""
    narrow = NARROWED[t.dtype]
    if t.numel() == 0:
        return True
    info = torch.iinfo(narrow)
    return bool(t.min() >= info.min) and bool(t.max() <= info.max)


def torch_dtype(name: str) -> torch.dtype:
    return _TO_TORCH[dtypes.normalize(name)]


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A numpy view of a CPU tensor's memory (no copy; pyasc copies a non-contiguous one itself)."""
    return t.detach().numpy()


def from_numpy(a: np.ndarray) -> torch.Tensor:
    """A tensor sharing `a`'s memory when numpy allows it (a writable array), else a copy."""
    a = np.asarray(a)
    if not a.flags.writeable:
        a = a.copy()  # torch tensors are writable: sharing a read-only buffer would let torch write it
    return torch.from_numpy(a)
