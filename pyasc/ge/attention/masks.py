"""Masks on attention scores: what counts as "masked", and when a constant mask is the causal triangle.

A score is masked by adding -inf or a large negative number to it, or by `where` picking such a number in
its place. "Large" is at most MASKED (-1e9): exp(s - 1e9 - m) is 0 in float32 unless a score exceeds the row
max by about 1e9, so such an entry contributes exactly what -inf does, except in a row where every key is
masked (-inf gives NaN there, a finite number a uniform row).

A constant mask is the causal one when, on every (Tq, Tk) slice, it keeps exactly the entries j <= i + (Tk -
Tq) (`ops.attention.causal_keep`) and masks the others. The attention op's causal=True masks with -inf; a mask
of finite numbers equals it only when no row is masked whole, i.e. Tq <= Tk.
"""
from __future__ import annotations

import numpy as np

from ...ops.attention import causal_keep

MASKED = -1e9


def is_masking(fill: float) -> bool:
    """Whether adding (or putting) `fill` masks a score."""
    return fill <= MASKED


def additive_is_causal(mask: np.ndarray, tq: int, tk: int) -> bool:
    """An additive mask (broadcastable to (..., tq, tk)) that is 0 on the causal triangle and masks the rest."""
    full = _as_scores(mask, tq, tk)
    if full is None:
        return False
    keep = causal_keep(tq, tk)
    kept, masked = full[..., keep], full[..., ~keep]
    if not np.all(kept == 0) or not np.all(masked <= MASKED):
        return False
    return tq <= tk or bool(np.all(np.isneginf(masked)))


def where_is_causal(keep_mask: np.ndarray, tq: int, tk: int, fill: float) -> bool:
    """A where-condition (True where the score is kept) that is the causal triangle, filled with `fill`."""
    full = _as_scores(np.asarray(keep_mask, dtype=bool), tq, tk)
    if full is None or not np.array_equal(full, np.broadcast_to(causal_keep(tq, tk), full.shape)):
        return False
    return tq <= tk or np.isneginf(fill)


def additive_of_where(keep_mask: np.ndarray, fill: float) -> np.ndarray:
    """The additive float32 mask `where(keep, 0, fill)` computes the same scores as a where-mask."""
    return np.where(keep_mask, np.float32(0), np.float32(fill)).astype(np.float32)


def _as_scores(mask: np.ndarray, tq: int, tk: int) -> np.ndarray | None:
    """The mask as (n, tq, tk) slices, all equal, or None (it varies over the batch, or does not broadcast)."""
    if mask.ndim < 2:
        return None
    try:
        full = np.broadcast_to(mask, mask.shape[:-2] + (tq, tk)).reshape(-1, tq, tk)
    except ValueError:
        return None
    if not np.all(full == full[:1]):
        return None
    return full[0]
