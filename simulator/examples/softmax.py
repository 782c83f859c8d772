"""Reference program: softmax over the last axis of a (rows, cols) matrix, float32 or float16.

Each core takes `block_rows` rows, in tiles of `tile_rows` rows. A tile is
loaded with one padded multi-burst copy (one burst per row; each UB row is
`row_stride` elements, a whole number of 32-byte blocks, the padding filled
with 0), then on V (in float32; float16 input is cast on the way in and out):
    m = rowmax(x); x = exp(x - m); s = rowsum(x); x = x / s
and stored with a multi-burst copy that writes only the `cols` real elements
of each row. Single buffered: MTE2 -> V -> MTE3, and the next load waits for
the store (flag MTE3->MTE2) because they share the input buffer.
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


def build(dtype: str = "float32") -> Program:
    """Tiling fields: rows, cols, row_stride (UB row length, elements), block_rows, tile_rows, and the UB
    byte offsets of the broadcast scratch, the row values and the float16 staging buffer (t_off, rv_off,
    xin_off)."""
    dtype = isa.normalize_dtype(dtype)
    if dtype not in ("float32", "float16"):
        raise ValueError(f"softmax example supports float32 and float16, got {dtype}")
    size = isa.itemsize(dtype)
    half = dtype == "float16"
    p = Program(f"softmax_{dtype}", "aiv", params=["x", "y"],
                tiling=["rows", "cols", "row_stride", "block_rows", "tile_rows", "t_off", "rv_off", "xin_off"])
    core = p.core_idx()
    rows, cols, cp, block_rows, tile_rows, t, rv, xin_off = (p.tiling(f) for f in p.tiling_fields)
    r0 = p.mul(core, block_rows)
    my_rows = p.max(p.min(block_rows, p.sub(rows, r0)), 0)
    ntiles = p.cdiv(my_rows, tile_rows)
    # UB layout: x32 | t (broadcast scratch) | rv (one value per row) | xin (float16 staging)
    x32 = 0
    xin = xin_off if half else x32
    p.set_flag("MTE3", "MTE2", 0)
    with p.loop(ntiles) as i:
        first = p.mul(i, tile_rows)
        rr = p.min(tile_rows, p.sub(my_rows, first))
        goff = p.mul(p.mul(p.add(r0, first), cols), size)
        n = p.mul(rr, cp)
        p.wait_flag("MTE3", "MTE2", 0)
        p.copy(UB(xin), p.gm("x", goff), dtype, burst=cols, nburst=rr, src_stride=cols, dst_stride=cp,
               pad=True, pad_value=0.0)
        p.set_flag("MTE2", "V", 0)
        p.wait_flag("MTE2", "V", 0)
        if half:
            p.vcast(UB(x32), UB(xin), n, "float16", "float32")
        p.vreduce("max", UB(rv), UB(x32), rr, cols, "float32", src_row_stride=cp)
        p.vbroadcast(UB(t), UB(rv), rr, cp, "float32", axis=1)
        p.vbinary("sub", UB(x32), UB(x32), UB(t), n, "float32")
        p.vunary("exp", UB(x32), UB(x32), n, "float32")
        p.vreduce("sum", UB(rv), UB(x32), rr, cols, "float32", src_row_stride=cp)
        p.vbroadcast(UB(t), UB(rv), rr, cp, "float32", axis=1)
        p.vbinary("div", UB(x32), UB(x32), UB(t), n, "float32")
        if half:
            p.vcast(UB(xin), UB(x32), n, "float32", "float16", round="rint")
        p.set_flag("V", "MTE3", 0)
        p.wait_flag("V", "MTE3", 0)
        p.copy(p.gm("y", goff), UB(xin), dtype, burst=cols, nburst=rr, src_stride=cp, dst_stride=cols, pad=True)
        p.set_flag("MTE3", "MTE2", 0)
    p.wait_flag("MTE3", "MTE2", 0)
    return p


def tiling(rows: int, cols: int, chip: ChipConfig, block_dim: int, dtype: str = "float32") -> dict[str, int]:
    """Rows per core and per tile so that a tile fits the UB and every instruction's repeat limit."""
    dtype = isa.normalize_dtype(dtype)
    size = isa.itemsize(dtype)
    blk, align = chip.dma_block_bytes, chip.ub_align
    cp = -(-cols * size // blk) * blk // size  # UB row: whole blocks of the input dtype

    def up(n: int) -> int:
        return -(-n // align) * align

    def layout(tile_rows: int) -> tuple[int, int, int, int]:
        """UB offsets of t, rv and xin, and the bytes used, for tiles of `tile_rows` rows."""
        t_off = up(tile_rows * cp * 4)
        rv_off = t_off + up(tile_rows * cp * 4)
        xin_off = rv_off + up(tile_rows * 4)
        used = xin_off + (tile_rows * cp * size if dtype == "float16" else 0)
        return t_off, rv_off, xin_off, used

    rb = chip.vector_repeat_bytes
    row32 = cp * 4
    tile_rows = min(chip.max_repeats * rb // row32,      # elementwise ops over the tile
                    chip.max_repeats // -(-row32 // rb))  # reduce / broadcast: repeats per row
    while tile_rows >= 1 and layout(tile_rows)[3] > chip.ub_bytes:
        tile_rows -= 1
    if tile_rows < 1:
        raise ValueError(f"a row of {cols} {dtype} does not fit the UB of chip {chip.name} in this example")
    block_rows = -(-rows // block_dim)
    tile_rows = min(tile_rows, block_rows)
    t_off, rv_off, xin_off, _ = layout(tile_rows)
    return {"rows": rows, "cols": cols, "row_stride": cp, "block_rows": block_rows, "tile_rows": tile_rows,
            "t_off": t_off, "rv_off": rv_off, "xin_off": xin_off}


def reference(x: np.ndarray) -> np.ndarray:
    x32 = x.astype(np.float32)
    e = np.exp(x32 - x32.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def run(x: np.ndarray, chip: "str | ChipConfig" = "tiny", block_dim: Optional[int] = None, sanitize: bool = True,
        device: Optional[Device] = None) -> tuple[np.ndarray, LaunchResult]:
    cfg = chips.get(chip)
    dev = device or Device(cfg)
    rows, cols = x.shape
    dtype = isa.normalize_dtype(x.dtype)
    block_dim = block_dim or min(cfg.aiv_cores, rows)
    for name in ("x", "y"):
        if name in dev.gm:
            dev.free(name)
    dev.upload("x", x)
    dev.alloc("y", x.nbytes)
    res = dev.launch(build(dtype), block_dim, ["x", "y"], tiling(rows, cols, cfg, block_dim, dtype),
                     sanitize=sanitize)
    return dev.read("y", dtype, x.shape), res
