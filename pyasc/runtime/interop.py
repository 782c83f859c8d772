"""Arrays from other libraries (DLPack): in without a copy where possible, results back in their library.

A tensor argument that is not a numpy array but has `__dlpack__` (a torch tensor, a CuPy or JAX
array on the host, ...) is read through DLPack, which shares its memory. When a call had such an
argument, its results are handed back through the same protocol, using the `from_dlpack` of the
first such argument's top-level module (`torch.from_dlpack` for torch tensors), so a torch user
gets torch tensors, sharing the kernel's output buffers. pyasc imports none of these libraries:
it finds the module an argument already came from.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np


def from_dlpack(value: Any) -> np.ndarray:
    """A numpy view of a DLPack-exporting object's memory (falls back to `__array__` if DLPack refuses)."""
    try:
        return np.from_dlpack(value)
    except (BufferError, TypeError, RuntimeError) as dlpack_error:
        if hasattr(value, "__array__"):  # e.g. a device the numpy importer does not take, but __array__ copies
            return np.asarray(value)
        raise dlpack_error


def is_foreign(value: Any) -> bool:
    """A non-numpy array pyasc reads through DLPack."""
    return type(value) is not np.ndarray and not isinstance(value, (np.ndarray, np.generic)) \
        and hasattr(value, "__dlpack__")


def result_converter(value: Any) -> Callable[[np.ndarray], Any] | None:
    """`from_dlpack` of the library `value` belongs to, if it has one."""
    module = sys.modules.get(type(value).__module__.split(".")[0])
    fn = getattr(module, "from_dlpack", None)
    return fn if callable(fn) else None


def convert_results(result: Any, like: Any) -> Any:
    """`result` (an array or a tuple of arrays) in the library of `like`; unchanged if it has no importer."""
    convert = result_converter(like)
    if convert is None:
        return result
    if isinstance(result, tuple):
        return tuple(convert(r) for r in result)
    return convert(result)
