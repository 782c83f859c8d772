"""Sharing the chip's bandwidth: GM transfers in flight get max-min fair rates under two resources.

Every transfer is capped by its path's per-core rate (times the cores of its
timing group); every byte passes the L2 (`l2_bytes_per_cycle`), and the bytes
that miss in L2, and every store, also pass HBM (`gm_bytes_per_cycle`).
"""
from __future__ import annotations

from typing import Any


class Transfer:
    """A GM transfer in flight: group g's record j on pipe p, `rem` bytes left, capped at `cap` bytes per
    cycle per core for its `m` cores; `rate` is what it gets now."""

    __slots__ = ("g", "p", "j", "rem", "cap", "m", "rate", "hbm")

    def __init__(self, g: Any, p: int, j: int, nbytes: float, cap: float, hbm: float):
        self.g, self.p, self.j, self.rem, self.cap, self.m, self.rate = g, p, j, float(nbytes), cap, g.m, 0.0
        self.hbm = hbm  # share of the bytes that come from (or go to) HBM


def fair_rates(active: list, hbm_capacity: float, l2_capacity: float) -> None:
    """Max-min fair rates: every transfer rises at the same rate until it reaches its cap or a resource
    it uses (HBM for its missing share, L2 for all of it) is full."""
    if len(active) == 1:
        tr = active[0]
        rate = min(tr.cap, l2_capacity / tr.m)
        if tr.hbm > 0:
            rate = min(rate, hbm_capacity / (tr.m * tr.hbm))
        tr.rate = rate
        return
    live = sorted(active, key=lambda tr: tr.cap)
    level = 0.0
    room_h, room_l = hbm_capacity, l2_capacity
    while live:
        w_h = sum(tr.m * tr.hbm for tr in live)
        w_l = sum(tr.m for tr in live)
        d = live[0].cap - level
        full_h = w_h > 0 and room_h / w_h <= d
        if full_h:
            d = room_h / w_h
        full_l = room_l / w_l <= d
        if full_l:
            d = room_l / w_l
        level += d
        room_h -= d * w_h
        room_l -= d * w_l
        if full_l:
            for tr in live:
                tr.rate = level
            return
        keep = []
        for tr in live:
            if (full_h and tr.hbm > 0) or tr.cap <= level + 1e-12:
                tr.rate = min(level, tr.cap)
            else:
                keep.append(tr)
        live = keep
