"""Reference program: z = x + y, multi-core with a tail, single or double buffered.

Each core takes `block` elements starting at core_idx * block (the last core
gets what is left, possibly a partial block), and walks them in tiles of
`tile` elements. With buffer_num=2 the UB holds two copies of each of the x,
y and z tiles ("ping-pong"): while V adds tile i, MTE2 loads tile i+1 and
MTE3 stores tile i-1.

Flags (event id = buffer index):
  MTE2->V   x and y of the buffer are loaded          (forward)
  V->MTE3   z of the buffer is computed               (forward)
  V->MTE2   x and y of the buffer may be overwritten  (backward, pre-set once)
  MTE3->V   z of the buffer may be overwritten        (backward, pre-set once)
Every backward flag is pre-set before the loop and waited for once after it,
so no flag is left set when the kernel ends.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import chips, isa
from ..chips import ChipConfig
from ..device import Device
from ..isa import UB
from ..program import Program
from ..result import LaunchResult


def build(dtype: str = "float32", buffer_num: int = 2, ub_base: int = 0, name: Optional[str] = None) -> Program:
    """The add program. Tiling fields: total, block, tile (elements) and slot (bytes per UB buffer)."""
    if buffer_num not in (1, 2):
        raise ValueError(f"buffer_num must be 1 or 2, got {buffer_num!r}")
    dtype = isa.normalize_dtype(dtype)
    size = isa.itemsize(dtype)
    p = Program(name or f"vector_add_{dtype}_x{buffer_num}", "aiv", params=["x", "y", "z"],
                tiling=["total", "block", "tile", "slot"])
    core = p.core_idx()
    total, block, tile, slot = (p.tiling(f) for f in ("total", "block", "tile", "slot"))
    start = p.mul(core, block)
    length = p.max(p.min(block, p.sub(total, start)), 0)
    ntiles = p.cdiv(length, tile)
    gbase = p.mul(start, size)
    for b in range(buffer_num):
        p.set_flag("V", "MTE2", b)
        p.set_flag("MTE3", "V", b)
    with p.loop(ntiles) as i:
        buf = p.mod(i, buffer_num) if buffer_num > 1 else 0
        off = p.mul(i, tile)
        n = p.min(tile, p.sub(length, off))
        goff = p.add(gbase, p.mul(off, size))
        xa = p.add(p.mul(buf, slot), ub_base) if buffer_num > 1 else p.mov(ub_base)
        ya = p.add(xa, p.mul(slot, buffer_num))
        za = p.add(ya, p.mul(slot, buffer_num))
        p.wait_flag("V", "MTE2", buf)
        p.copy(UB(xa), p.gm("x", goff), dtype, burst=n, pad=True)
        p.copy(UB(ya), p.gm("y", goff), dtype, burst=n, pad=True)
        p.set_flag("MTE2", "V", buf)
        p.wait_flag("MTE2", "V", buf)
        p.wait_flag("MTE3", "V", buf)
        p.vbinary("add", UB(za), UB(xa), UB(ya), n, dtype)
        p.set_flag("V", "MTE2", buf)
        p.set_flag("V", "MTE3", buf)
        p.wait_flag("V", "MTE3", buf)
        p.copy(p.gm("z", goff), UB(za), dtype, burst=n, pad=True)
        p.set_flag("MTE3", "V", buf)
    for b in range(buffer_num):
        p.wait_flag("V", "MTE2", b)
        p.wait_flag("MTE3", "V", b)
    return p


def tiling(total: int, chip: ChipConfig, block_dim: int, dtype: str = "float32", buffer_num: int = 2,
           tile: Optional[int] = None) -> dict[str, int]:
    """Split `total` elements over `block_dim` cores; blocks are 512-byte multiples, tiles fill the UB."""
    size = isa.itemsize(isa.normalize_dtype(dtype))
    per_512 = chip.gm_peak_align // size
    block = -(-total // block_dim)
    block = -(-block // per_512) * per_512
    if tile is None:
        # 3 tensors x buffer_num slots, each slot UB-aligned; stay within one vector instruction
        slot_bytes = chip.ub_bytes // (3 * buffer_num) // chip.ub_align * chip.ub_align
        slot_bytes = min(slot_bytes, chip.max_repeats * chip.vector_repeat_bytes)
        tile = slot_bytes // size
    tile = max(1, min(tile, block))
    slot = -(-tile * size // chip.ub_align) * chip.ub_align
    return {"total": total, "block": block, "tile": tile, "slot": slot}


def run(x: np.ndarray, y: np.ndarray, chip: "str | ChipConfig" = "tiny", block_dim: Optional[int] = None,
        buffer_num: int = 2, sanitize: bool = True, tile: Optional[int] = None,
        device: Optional[Device] = None) -> tuple[np.ndarray, LaunchResult]:
    """Run the program on a fresh (or given) device; returns (z, launch result)."""
    cfg = chips.get(chip)
    dev = device or Device(cfg)
    dtype = isa.normalize_dtype(x.dtype)
    block_dim = block_dim or cfg.aiv_cores
    t = tiling(x.size, cfg, block_dim, dtype, buffer_num, tile)
    for name in ("x", "y", "z"):
        if name in dev.gm:
            dev.free(name)
    dev.upload("x", x)
    dev.upload("y", y)
    dev.alloc("z", x.nbytes)
    res = dev.launch(build(dtype, buffer_num), block_dim, {"x": "x", "y": "y", "z": "z"}, t, sanitize=sanitize)
    return dev.read("z", dtype, x.shape), res
