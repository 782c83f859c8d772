"""Where the kernel's dtype rules knowingly differ from numpy's (the chip has no 64-bit types).

The README's "Dtype rules" section lists every difference and its reason;
this module holds the two the frontend applies before numpy's own rules:

- a compile-time numpy float64 scalar (`np.sqrt(2 / np.pi)`, `np.pi * 2`,
  an element of a float64 global) is *weak* like a Python float: numpy 2
  would make `float16_tensor * np.float64(c)` a float64 array, which the
  chip cannot hold, and narrowing that to float32 silently changed a float16
  kernel's dtype. So the constant takes the tensor's dtype, as `* c` with a
  Python float does.
- the Python types `int` and `float` as a dtype (`x.astype(int)`,
  `np.zeros(n, dtype=float)`) mean int32 and float32, the widest types the
  chip has, instead of numpy's int64 and float64. `np.int64`/`np.float64`
  spelled out stay errors: asking for 64 bits by name is asking for
  something the chip cannot do.
"""
from __future__ import annotations

from typing import Any

import numpy as np

#: Python types used as dtypes -> the chip's type they mean
PYTHON_DTYPES = {int: np.int32, float: np.float32}


def is_weak_numpy_scalar(v: Any) -> bool:
    """A numpy float64 scalar, which takes part in promotion like a Python float."""
    return isinstance(v, np.float64)


def python_dtypes(args: list[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """Op call arguments with `int`/`float` used as dtypes replaced by int32/float32 (types are never tensors or
    shapes, so a bare `int` or `float` argument can only be a dtype)."""
    def swap(v: Any) -> Any:
        return PYTHON_DTYPES.get(v, v) if isinstance(v, type) else v

    return [swap(a) for a in args], {k: swap(v) for k, v in kwargs.items()}
