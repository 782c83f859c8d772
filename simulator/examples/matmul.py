"""Reference program: c = relu(a @ b + bias) on the cube cores (AIC), float16 in, float32 accumulate.

The output is cut into (tm x tn) blocks; core k takes blocks k, k+block_dim,
... For each block it walks K in chunks of tk:
  MTE2  GM -> L1, ND -> NZ (A chunk mm x kc, B chunk kc x nn; bias on chunk 0)
  MTE1  L1 -> L0A / L0B (whole fractals; bias L1 -> bias table on chunk 0)
  M     mmad into L0C (chunk 0 starts from the bias, later chunks accumulate)
and then FIX writes the block L0C -> GM with ReLU and the cast to the
output dtype, converting NZ back to row-major.

Flags: forward MTE2->MTE1 (L1 loaded), MTE1->M (L0 loaded), M->FIX (block
done); backward MTE1->MTE2 (L1 free), M->MTE1 (L0 and bias table free),
FIX->M (L0C free), each pre-set once and waited for once at the end.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import chips, isa
from ..chips import ChipConfig
from ..device import Device
from ..isa import BT, L0A, L0B, L0C, L1
from ..program import Program
from ..result import LaunchResult


def build(out_dtype: str = "float32", relu: bool = True) -> Program:
    """Params a, b, bias, c. Tiling fields: M, N, K, tm, tn, tk, l1_b, l1_bias (L1 byte offsets)."""
    out_dtype = isa.normalize_dtype(out_dtype)
    osize = isa.itemsize(out_dtype)
    p = Program(f"matmul_bias_relu_{out_dtype}", "aic", params=["a", "b", "bias", "c"],
                tiling=["M", "N", "K", "tm", "tn", "tk", "l1_b", "l1_bias"])
    core, ncores = p.core_idx(), p.core_num()
    M, N, K, tm, tn, tk, l1_b, l1_bias = (p.tiling(f) for f in p.tiling_fields)
    nbn = p.cdiv(N, tn)
    nblocks = p.mul(p.cdiv(M, tm), nbn)
    nk = p.cdiv(K, tk)
    p.set_flag("MTE1", "MTE2", 0)
    p.set_flag("M", "MTE1", 0)
    p.set_flag("FIX", "M", 0)
    with p.loop(core, nblocks, ncores) as blk:
        m0 = p.mul(p.div(blk, nbn), tm)
        n0 = p.mul(p.mod(blk, nbn), tn)
        mm = p.min(tm, p.sub(M, m0))
        nn = p.min(tn, p.sub(N, n0))
        with p.loop(nk) as kk:
            k0 = p.mul(kk, tk)
            kc = p.min(tk, p.sub(K, k0))
            first = p.alu("eq", kk, 0)
            p.wait_flag("MTE1", "MTE2", 0)
            p.copy_nd2nz(L1(0), p.gm("a", p.mul(p.add(p.mul(m0, K), k0), 2)), "float16", mm, kc, src_row_stride=K)
            p.copy_nd2nz(L1(l1_b), p.gm("b", p.mul(p.add(p.mul(k0, N), n0), 2)), "float16", kc, nn,
                         src_row_stride=N)
            with p.if_(first):
                p.copy(L1(l1_bias), p.gm("bias", p.mul(n0, 4)), "float32", burst=nn, pad=True)
            p.set_flag("MTE2", "MTE1", 0)
            p.wait_flag("MTE2", "MTE1", 0)
            p.wait_flag("M", "MTE1", 0)
            p.load_l0(L0A(0), L1(0), "float16", mm, kc)
            p.load_l0(L0B(0), L1(l1_b), "float16", kc, nn)
            with p.if_(first):
                p.load_bias(BT(0), L1(l1_bias), nn)
            p.set_flag("MTE1", "MTE2", 0)
            p.set_flag("MTE1", "M", 0)
            p.wait_flag("MTE1", "M", 0)
            with p.if_(first):
                p.wait_flag("FIX", "M", 0)
            p.mmad(L0C(0), L0A(0), L0B(0), mm, kc, nn, "float16", accumulate=p.alu("gt", kk, 0), bias=BT(0))
            p.set_flag("M", "MTE1", 0)
        p.set_flag("M", "FIX", 0)
        p.wait_flag("M", "FIX", 0)
        p.fixpipe(p.gm("c", p.mul(p.add(p.mul(m0, N), n0), osize)), L0C(0), mm, nn, out_dtype, relu=relu,
                  dst_row_stride=N)
        p.set_flag("FIX", "M", 0)
    p.wait_flag("MTE1", "MTE2", 0)
    p.wait_flag("M", "MTE1", 0)
    p.wait_flag("FIX", "M", 0)
    return p


def tiling(M: int, N: int, K: int, chip: ChipConfig) -> dict[str, int]:
    """Largest power-of-two multiples of the cube block (16) that fit L0A, L0B, L0C and L1."""
    def fits(tm: int, tn: int, tk: int) -> bool:
        l1 = tm * tk * 2 + tk * tn * 2 + tn * 4
        return (tm * tk * 2 <= chip.l0a_bytes and tk * tn * 2 <= chip.l0b_bytes and tm * tn * 4 <= chip.l0c_bytes
                and l1 <= chip.l1_bytes and tn * 4 <= chip.bias_table_bytes)

    r0, align = chip.cube_block, chip.l1_align
    tm = tn = tk = r0
    grown = True
    while grown:
        grown = False
        for which in ("tk", "tm", "tn"):
            cand = {"tm": tm, "tn": tn, "tk": tk}
            cand[which] *= 2
            limit = {"tm": M, "tn": N, "tk": K}[which]
            if cand[which] <= max(r0, -(-limit // r0) * r0) and fits(cand["tm"], cand["tn"], cand["tk"]):
                tm, tn, tk = cand["tm"], cand["tn"], cand["tk"]
                grown = True
    l1_b = -(-tm * tk * 2 // align) * align
    l1_bias = l1_b + -(-tk * tn * 2 // align) * align
    return {"M": M, "N": N, "K": K, "tm": tm, "tn": tn, "tk": tk, "l1_b": l1_b, "l1_bias": l1_bias}


def reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray, out_dtype: str = "float32",
              relu: bool = True) -> np.ndarray:
    c = a.astype(np.float32) @ b.astype(np.float32) + bias.astype(np.float32)
    if relu:
        c = np.maximum(c, 0)
    return c.astype(out_dtype)


def run(a: np.ndarray, b: np.ndarray, bias: np.ndarray, chip: "str | ChipConfig" = "tiny",
        block_dim: Optional[int] = None, out_dtype: str = "float32", relu: bool = True, sanitize: bool = True,
        device: Optional[Device] = None) -> tuple[np.ndarray, LaunchResult]:
    cfg = chips.get(chip)
    dev = device or Device(cfg)
    M, K = a.shape
    N = b.shape[1]
    for name in ("a", "b", "bias", "c"):
        if name in dev.gm:
            dev.free(name)
    dev.upload("a", a.astype(np.float16))
    dev.upload("b", b.astype(np.float16))
    dev.upload("bias", bias.astype(np.float32))
    dev.alloc("c", shape=(M, N), dtype=out_dtype)
    block_dim = block_dim or cfg.aic_cores
    res = dev.launch(build(out_dtype, relu), block_dim, ["a", "b", "bias", "c"], tiling(M, N, K, cfg),
                     sanitize=sanitize)
    return dev.read("c", out_dtype, (M, N)), res
