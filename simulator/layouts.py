"""Fractal layouts used by the cube path (all functions act on a leading batch axis of cores).

A fractal is r0 rows x c0 columns: r0 is the chip's cube block (16) and c0 =
fractal row bytes / itemsize (16 for fp16, 8 for fp32, 32 for int8); L0C
fractals are r0 x r0 of 4-byte values.

- NZ (L1, L0C): matrix (R, C) padded to (R', C') (multiples of r0, c0) stored
  as (C'/c0, R', c0): column panels of width c0, each panel row-major.
- ZZ (L0A): A (M, K) stored as (M/r0, K/c0, r0, c0): fractals row-major,
  each fractal row-major.
- ZN (L0B): B (K, N) stored as (K/c0, N/r0, r0, c0): fractals row-major,
  each fractal column-major (r0 columns of c0 values).
"""
from __future__ import annotations

import numpy as np


def ceil_to(x: int, a: int) -> int:
    return -(-x // a) * a


def nd_to_nz(x: np.ndarray, r0: int, c0: int) -> np.ndarray:
    """(b, R, C) -> (b, C'/c0, R', c0) with zero padding to R' = ceil_r0(R), C' = ceil_c0(C)."""
    b, r, c = x.shape
    rp, cp = ceil_to(r, r0), ceil_to(c, c0)
    if (rp, cp) != (r, c):
        padded = np.zeros((b, rp, cp), dtype=x.dtype)
        padded[:, :r, :c] = x
        x = padded
    return np.ascontiguousarray(x.reshape(b, rp, cp // c0, c0).transpose(0, 2, 1, 3))


def nz_to_nd(nz: np.ndarray, rows_p: int, cols_p: int, c0: int) -> np.ndarray:
    """Flat NZ image (b, rows_p*cols_p) -> (b, rows_p, cols_p)."""
    b = nz.shape[0]
    return nz.reshape(b, cols_p // c0, rows_p, c0).transpose(0, 2, 1, 3).reshape(b, rows_p, cols_p)


def to_zz(a: np.ndarray, r0: int, c0: int) -> np.ndarray:
    """(b, M, K) with M % r0 == 0 and K % c0 == 0 -> flat ZZ image (b, M*K)."""
    b, m, k = a.shape
    return np.ascontiguousarray(a.reshape(b, m // r0, r0, k // c0, c0).transpose(0, 1, 3, 2, 4)).reshape(b, -1)


def from_zz(flat: np.ndarray, m: int, k: int, r0: int, c0: int) -> np.ndarray:
    b = flat.shape[0]
    return zz_view(flat, m, k, r0, c0).reshape(b, m, k)


def zz_view(flat: np.ndarray, m: int, k: int, r0: int, c0: int) -> np.ndarray:
    """`from_zz` as a view: (b, M/r0, r0, K/c0, c0), whose C-order copy reshapes to (b, M, K) for free."""
    b = flat.shape[0]
    return flat.reshape(b, m // r0, k // c0, r0, c0).transpose(0, 1, 3, 2, 4)


def to_zn(bm: np.ndarray, r0: int, c0: int) -> np.ndarray:
    """(b, K, N) with K % c0 == 0 and N % r0 == 0 -> flat ZN image (b, K*N)."""
    b, k, n = bm.shape
    return np.ascontiguousarray(bm.reshape(b, k // c0, c0, n // r0, r0).transpose(0, 1, 3, 4, 2)).reshape(b, -1)


def from_zn(flat: np.ndarray, k: int, n: int, r0: int, c0: int) -> np.ndarray:
    b = flat.shape[0]
    return zn_view(flat, k, n, r0, c0).reshape(b, k, n)


def zn_view(flat: np.ndarray, k: int, n: int, r0: int, c0: int) -> np.ndarray:
    """`from_zn` as a view: (b, K/c0, c0, N/r0, r0), whose C-order copy reshapes to (b, K, N) for free."""
    b = flat.shape[0]
    return flat.reshape(b, k // c0, n // r0, r0, c0).transpose(0, 1, 4, 2, 3)


def nz_view(x: np.ndarray, c0: int) -> np.ndarray:
    """(b, R, C) with C % c0 == 0 as a view in the NZ order: (b, C/c0, R, c0), what `nd_to_nz` copies out."""
    b, r, c = x.shape
    return x.reshape(b, r, c // c0, c0).transpose(0, 2, 1, 3)
