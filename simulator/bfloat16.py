"""bfloat16: the upper half of a float32, stored as uint16 bits (numpy has no bfloat16 dtype).

GM and on-chip memories hold the bits; the vector and cube units compute in
float32 and round to nearest even on the way back (NaNs stay NaNs).

    dev.upload("x", simulator.bfloat16.from_float32(x))   # host -> bits
    y = dev.read("y", "bfloat16")                           # bits -> float32 values
"""
from __future__ import annotations

import numpy as np

F32 = np.dtype(np.float32)
BITS = np.dtype(np.uint16)


def to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits -> the float32 values they stand for (exact)."""
    b = np.asarray(bits).view(BITS) if np.asarray(bits).dtype != BITS else np.asarray(bits)
    return (b.astype(np.uint32) << 16).view(F32)


def from_float32(x: np.ndarray) -> np.ndarray:
    """float32 values -> bfloat16 bits, rounding to nearest even; NaN stays a (quiet) NaN."""
    f = np.ascontiguousarray(np.asarray(x, dtype=F32))
    u = f.view(np.uint32)
    rounded = u + (np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1)))
    out = (rounded >> 16).astype(BITS)
    nan = np.isnan(f)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | np.uint32(0x0040)).astype(BITS)
    return out


def round_float32(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (as float32)."""
    return to_float32(from_float32(x))
