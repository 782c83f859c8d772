"""Reference program: a double-buffered GEMM c = a @ b.T on the cube cores that lives off the L2.

a is M x K, b is N x K (both float16, row-major), c is M x N float32. The
cores form a grid of `grid_m` x `grid_n`; core (i, j) computes the block of
rows i * M/grid_m and columns j * N/grid_n, tile by tile (base_m x base_n,
the whole of L0C), walking K in chunks of step_k * base_k:
  MTE2  GM -> L1, ND -> NZ: a's chunk (base_m x step_k*base_k) and b's
        (base_n x step_k*base_k), into one of two L1 buffers
  MTE1  L1 -> L0A / L0B: one base_k slice of each (b transposed on the way),
        into one of two L0 buffers; a slice of an NZ chunk is whole panels
  M     mmad, accumulating the tile in L0C
  FIX   the finished tile L0C -> GM
With grid cores sharing each row panel of a and column panel of b, every
panel is fetched from HBM about once and then read from L2: a core's panels
come back within a few tiles, long before the L2 would evict them. This is
the structure of the public 6144^3 reference kernel (24 cores as 4 x 6,
base 128 x 256 x 64, four base_k slices per L1 chunk).

Flags (event = buffer index): MTE2->MTE1 (L1 chunk loaded), MTE1->MTE2 (L1
buffer free, pre-set), MTE1->M (L0 slice loaded), M->MTE1 (L0 buffer free,
pre-set), M->FIX (tile done), FIX->M (L0C free, pre-set).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import chips
from ..chips import ChipConfig
from ..device import Device
from ..isa import L0A, L0B, L0C, L1
from ..program import Program
from ..result import LaunchResult

FP16 = 2


def build(base_m: int = 128, base_n: int = 256, base_k: int = 64, step_k: int = 4) -> Program:
    """Tiling fields: M, N, K, grid_n (cores per grid row), tiles_m and tiles_n (tiles per core), l1_half
    (bytes of one L1 buffer), l1_b (offset of b's chunk in it)."""
    chunk = base_k * step_k
    p = Program(f"gemm_{base_m}x{base_n}x{base_k}x{step_k}", "aic", params=["a", "b", "c"],
                tiling=["M", "N", "K", "grid_n", "tiles_m", "tiles_n", "l1_half", "l1_b"])
    M, N, K, grid_n, tiles_m, tiles_n, l1_half, l1_b = (p.tiling(f) for f in p.tiling_fields)
    core = p.core_idx()
    row0 = p.mul(p.div(core, grid_n), p.mul(tiles_m, base_m))
    col0 = p.mul(p.mod(core, grid_n), p.mul(tiles_n, base_n))
    nchunks = p.div(K, chunk)
    a_slice = base_m * base_k * FP16          # bytes of one K slice of a's NZ chunk (base_k / 16 panels)
    b_slice = base_n * base_k * FP16
    for e in (0, 1):
        p.set_flag("MTE1", "MTE2", e)
        p.set_flag("M", "MTE1", e)
    p.set_flag("FIX", "M", 0)
    t = p.mov(0)                               # chunks loaded so far: the L1 buffer is t % 2
    with p.loop(tiles_m) as mi:
        m0 = p.add(row0, p.mul(mi, base_m))
        with p.loop(tiles_n) as ni:
            n0 = p.add(col0, p.mul(ni, base_n))
            with p.loop(nchunks) as kc:
                buf = p.mod(t, 2)
                l1 = p.mul(buf, l1_half)
                l1b = p.add(l1, l1_b)
                k0 = p.mul(kc, chunk)
                p.wait_flag("MTE1", "MTE2", buf)
                p.copy_nd2nz(L1(l1), p.gm("a", p.mul(p.add(p.mul(m0, K), k0), FP16)), "float16", base_m, chunk,
                             src_row_stride=K)
                p.copy_nd2nz(L1(l1b), p.gm("b", p.mul(p.add(p.mul(n0, K), k0), FP16)), "float16",
                             base_n, chunk, src_row_stride=K)
                p.set_flag("MTE2", "MTE1", buf)
                p.wait_flag("MTE2", "MTE1", buf)
                first_chunk = p.alu("eq", kc, 0)
                for kk in range(step_k):       # slices of the chunk, unrolled: L0 buffer kk % 2
                    e = kk % 2
                    p.wait_flag("M", "MTE1", e)
                    p.load_l0(L0A(e * a_slice), L1(p.add(l1, kk * a_slice)), "float16", base_m, base_k)
                    p.load_l0(L0B(e * b_slice), L1(p.add(l1b, kk * b_slice)), "float16", base_n, base_k,
                              transpose=True)
                    p.set_flag("MTE1", "M", e)
                    if kk == step_k - 1:
                        p.set_flag("MTE1", "MTE2", buf)   # the chunk is in L0 now: its L1 buffer is free
                    p.wait_flag("MTE1", "M", e)
                    if kk == 0:
                        with p.if_(first_chunk):
                            p.wait_flag("FIX", "M", 0)    # the previous tile has left L0C
                        acc = p.alu("ne", kc, 0)
                    else:
                        acc = 1
                    p.mmad(L0C(0), L0A(e * a_slice), L0B(e * b_slice), base_m, base_k, base_n, "float16",
                           accumulate=acc)
                    p.set_flag("M", "MTE1", e)
                p.add(t, 1, dst=t)
            p.set_flag("M", "FIX", 0)
            p.wait_flag("M", "FIX", 0)
            p.fixpipe(p.gm("c", p.mul(p.add(p.mul(m0, N), n0), 4)), L0C(0), base_m, base_n, "float32",
                      dst_row_stride=N)
            p.set_flag("FIX", "M", 0)
    for e in (0, 1):
        p.wait_flag("MTE1", "MTE2", e)
        p.wait_flag("M", "MTE1", e)
    p.wait_flag("FIX", "M", 0)
    return p


def tiling(M: int, N: int, K: int, chip: ChipConfig, grid: tuple[int, int], base_m: int = 128, base_n: int = 256,
           base_k: int = 64, step_k: int = 4) -> dict[str, int]:
    """The tiling data for `grid` = (cores down M, cores across N); checks that everything fits and divides."""
    gm_, gn_ = grid
    chunk = base_k * step_k
    if M % (gm_ * base_m) or N % (gn_ * base_n) or K % chunk:
        raise ValueError(f"this example needs M % {gm_ * base_m} == N % {gn_ * base_n} == K % {chunk} == 0")
    a_chunk, b_chunk = base_m * chunk * FP16, base_n * chunk * FP16
    half = -(-(a_chunk + b_chunk) // chip.l1_align) * chip.l1_align
    need = {"L1": 2 * half, "L0A": 2 * base_m * base_k * FP16, "L0B": 2 * base_n * base_k * FP16,
            "L0C": base_m * base_n * 4}
    for space, n in need.items():
        if n > chip.space_bytes(space):
            raise ValueError(f"{space} needs {n} bytes for these base sizes; chip {chip.name} has "
                             f"{chip.space_bytes(space)}")
    return {"M": M, "N": N, "K": K, "grid_n": gn_, "tiles_m": M // gm_ // base_m, "tiles_n": N // gn_ // base_n,
            "l1_half": half, "l1_b": a_chunk}


def run(a: np.ndarray, bt: np.ndarray, chip: "str | ChipConfig" = "tiny", grid: tuple[int, int] = (1, 2),
        base: tuple[int, int, int, int] = (32, 64, 32, 2), sanitize: bool = True,
        device: Optional[Device] = None) -> tuple[np.ndarray, LaunchResult]:
    """c = a @ bt.T on a fresh (or given) device; `base` = (base_m, base_n, base_k, step_k)."""
    cfg = chips.get(chip)
    dev = device or Device(cfg)
    M, K = a.shape
    N = bt.shape[0]
    for name in ("a", "b", "c"):
        if name in dev.gm:
            dev.free(name)
    dev.upload("a", a.astype(np.float16))
    dev.upload("b", bt.astype(np.float16))
    dev.alloc("c", M * N * 4)
    res = dev.launch(build(*base), grid[0] * grid[1], ["a", "b", "c"], tiling(M, N, K, cfg, grid, *base),
                     sanitize=sanitize)
    return dev.read("c", np.float32, (M, N)), res


def reference(a: np.ndarray, bt: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) @ bt.astype(np.float32).T
