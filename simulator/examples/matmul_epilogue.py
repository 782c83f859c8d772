"""Reference program: c = gelu(a @ b) in one mixed launch: matmul on each group's AIC, GELU on its two AIVs.

There is no L0C -> UB path on this chip class, so each tile travels through
a GM workspace, double buffered per group: ws[group][t % 2]. Per tile t
(tiles go round robin over the groups; buffer u = t % 2):
  AIC  K loop into L0C (as in matmul.py), then cross_wait(1 + u) (the AIVs are
       done with ws[u]), FixPipe L0C -> ws[u], cross_set(FIX, 0 + u)
  AIV  cross_wait(0 + u) (the tile is in ws[u]), copy its half of the tile's
       rows to UB, cross_set(MTE2, 1 + u) (ws[u] may be overwritten), GELU on
       V, store to c
Each AIV pre-sets flags 1 and 2 once and the AIC waits for both once more at
the end, so every set has its wait.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import chips, isa
from ..chips import ChipConfig
from ..device import Device
from ..isa import L0A, L0B, L0C, L1, UB
from ..mixed import MixedKernel
from ..program import Program
from ..result import LaunchResult

FIELDS = ["M", "N", "K", "tm", "tn", "tk", "l1_b"]


def _tile_origin(p: Program, t, nbn, tm, tn) -> tuple:
    return p.mul(p.div(t, nbn), tm), p.mul(p.mod(t, nbn), tn)


def build_cube() -> Program:
    p = Program("matmul_to_ws", "aic", params=["a", "b", "ws"], tiling=FIELDS)
    M, N, K, tm, tn, tk, l1_b = (p.tiling(f) for f in FIELDS)
    grp, groups = p.group_idx(), p.core_num()
    nbn = p.cdiv(N, tn)
    ntiles = p.mul(p.cdiv(M, tm), nbn)
    nk = p.cdiv(K, tk)
    tile_bytes = p.mul(p.mul(tm, tn), 4)
    ws0 = p.mul(p.mul(grp, 2), tile_bytes)
    p.set_flag("MTE1", "MTE2", 0)
    p.set_flag("M", "MTE1", 0)
    p.set_flag("FIX", "M", 0)
    with p.loop(grp, ntiles, groups) as t:
        u = p.mod(p.div(t, groups), 2)          # this group's tiles alternate between its two buffers
        m0, n0 = _tile_origin(p, t, nbn, tm, tn)
        with p.loop(nk) as kk:
            k0 = p.mul(kk, tk)
            p.wait_flag("MTE1", "MTE2", 0)
            p.copy_nd2nz(L1(0), p.gm("a", p.mul(p.add(p.mul(m0, K), k0), 2)), "float16", tm, tk, src_row_stride=K)
            p.copy_nd2nz(L1(l1_b), p.gm("b", p.mul(p.add(p.mul(k0, N), n0), 2)), "float16", tk, tn,
                         src_row_stride=N)
            p.set_flag("MTE2", "MTE1", 0)
            p.wait_flag("MTE2", "MTE1", 0)
            p.wait_flag("M", "MTE1", 0)
            p.load_l0(L0A(0), L1(0), "float16", tm, tk)
            p.load_l0(L0B(0), L1(l1_b), "float16", tk, tn)
            p.set_flag("MTE1", "MTE2", 0)
            p.set_flag("MTE1", "M", 0)
            p.wait_flag("MTE1", "M", 0)
            with p.if_(p.alu("eq", kk, 0)):
                p.wait_flag("FIX", "M", 0)
            p.mmad(L0C(0), L0A(0), L0B(0), tm, tk, tn, "float16", accumulate=p.alu("gt", kk, 0))
            p.set_flag("M", "MTE1", 0)
        p.set_flag("M", "FIX", 0)
        p.wait_flag("M", "FIX", 0)
        p.cross_wait(p.add(u, 1))               # both AIVs are done with ws[u]
        p.fixpipe(p.gm("ws", p.add(ws0, p.mul(u, tile_bytes))), L0C(0), tm, tn, "float32")
        p.cross_set("FIX", u)                   # ws[u] holds the tile once FIX is done
        p.set_flag("FIX", "M", 0)
    p.cross_wait(1)
    p.cross_wait(2)
    p.wait_flag("MTE1", "MTE2", 0)
    p.wait_flag("M", "MTE1", 0)
    p.wait_flag("FIX", "M", 0)
    return p


def build_vector() -> Program:
    p = Program("gelu_from_ws", "aiv", params=["ws", "c"], tiling=FIELDS)
    M, N, K, tm, tn, tk, l1_b = (p.tiling(f) for f in FIELDS)
    grp, sub = p.group_idx(), p.sub_idx()
    groups = p.div(p.core_num(), 2)
    nbn = p.cdiv(N, tn)
    ntiles = p.mul(p.cdiv(M, tm), nbn)
    half = p.div(tm, 2)
    tile_bytes = p.mul(p.mul(tm, tn), 4)
    rows_bytes = p.mul(p.mul(half, tn), 4)
    ws0 = p.add(p.mul(p.mul(grp, 2), tile_bytes), p.mul(sub, rows_bytes))
    n = p.mul(half, tn)
    p.cross_set("S", 1)                         # both workspace buffers start free
    p.cross_set("S", 2)
    p.set_flag("MTE3", "V", 0)
    p.set_flag("V", "MTE2", 0)
    with p.loop(grp, ntiles, groups) as t:
        u = p.mod(p.div(t, groups), 2)
        m0, n0 = _tile_origin(p, t, nbn, tm, tn)
        r0 = p.add(m0, p.mul(sub, half))        # this AIV's rows of the tile
        p.cross_wait(u)
        p.wait_flag("V", "MTE2", 0)             # the previous tile's rows have left UB[0]
        p.copy(UB(0), p.gm("ws", p.add(ws0, p.mul(u, tile_bytes))), "float32", burst=n)
        p.cross_set("MTE2", p.add(u, 1))        # read: the AIC may overwrite ws[u]
        p.set_flag("MTE2", "V", 0)
        p.wait_flag("MTE2", "V", 0)
        p.wait_flag("MTE3", "V", 0)
        p.vunary("gelu", UB(rows_bytes), UB(0), n, "float32")
        p.set_flag("V", "MTE2", 0)
        p.set_flag("V", "MTE3", 0)
        p.wait_flag("V", "MTE3", 0)
        p.copy(p.gm("c", p.mul(p.add(p.mul(r0, N), n0), 4)), UB(rows_bytes), "float32", burst=tn, nburst=half,
               src_stride=tn, dst_stride=N)
        p.set_flag("MTE3", "V", 0)
    p.wait_flag("MTE3", "V", 0)
    p.wait_flag("V", "MTE2", 0)
    return p


def build() -> MixedKernel:
    return MixedKernel(build_cube(), build_vector(), name="matmul_gelu")


def tiling(M: int, N: int, K: int, chip: ChipConfig, tm: int = 64, tn: int = 64, tk: int = 64) -> dict[str, int]:
    """Whole tiles only (M % tm == N % tn == K % tk == 0, tm even) that fit L0A/L0B/L0C and half a tile per UB."""
    if M % tm or N % tn or K % tk or tm % (2 * chip.cube_block):
        raise ValueError(f"this example needs whole tiles: M % {tm}, N % {tn}, K % {tk} == 0")
    if (tm * tk * 2 > chip.l0a_bytes or tk * tn * 2 > chip.l0b_bytes or tm * tn * 4 > chip.l0c_bytes
            or tm * tn * 4 > chip.ub_bytes):
        raise ValueError(f"tiles {tm}x{tn}x{tk} do not fit chip {chip.name}")
    return {"M": M, "N": N, "K": K, "tm": tm, "tn": tn, "tk": tk,
            "l1_b": -(-tm * tk * 2 // chip.l1_align) * chip.l1_align}


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    import math
    c = a.astype(np.float32) @ b.astype(np.float32)
    erf = np.vectorize(math.erf)
    return (0.5 * c * (1 + erf(c / np.float32(math.sqrt(2.0))))).astype(np.float32)


def run(a: np.ndarray, b: np.ndarray, chip: "str | ChipConfig" = "tiny", groups: Optional[int] = None,
        sanitize: bool = True, device: Optional[Device] = None) -> tuple[np.ndarray, LaunchResult]:
    cfg = chips.get(chip)
    dev = device or Device(cfg)
    M, K = a.shape
    N = b.shape[1]
    groups = groups or cfg.aic_cores
    t = tiling(M, N, K, cfg)
    for name in ("a", "b", "ws", "c"):
        if name in dev.gm:
            dev.free(name)
    dev.upload("a", a.astype(np.float16))
    dev.upload("b", b.astype(np.float16))
    dev.alloc("ws", groups * 2 * t["tm"] * t["tn"] * 4)
    dev.alloc("c", M * N * 4)
    res = dev.launch(build(), groups, {"a": "a", "b": "b", "ws": "ws", "c": "c"}, t, sanitize=sanitize)
    return dev.read("c", isa.normalize_dtype("float32"), (M, N)), res
