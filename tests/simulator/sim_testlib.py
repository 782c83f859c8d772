"""Helpers shared by the simulator tests: tiny programs around one instruction."""
from __future__ import annotations

import numpy as np

from simulator import UB, Device, Program, isa


def ub_roundtrip(build_body, inputs: dict, out_dtype: str, out_count: int, chip: str = "tiny",
                 sanitize: bool = True, block_dim: int = 1, dtypes: dict | None = None):
    """Load each input GM buffer into UB (32-byte aligned slots), run `build_body(p, addr)`, store 'out'.

    `inputs`: name -> 1-D array (identical on every core); `dtypes`: name -> simulator dtype where the
    array's own dtype is not it (bfloat16 bits). `build_body(p, addr)` emits vector instructions; addr
    maps input names and 'out' to UB byte offsets. Returns (out array, result).
    """
    dev = Device(chip)
    p = Program("unit", "aiv", params=list(inputs) + ["out"])
    addr = {}
    cursor = 0
    for name, arr in inputs.items():
        addr[name] = cursor
        cursor += -(-arr.nbytes // 32) * 32
        dev.upload(name, arr)
    addr["out"] = cursor
    osize = isa.itemsize(out_dtype)
    dev.alloc("out", out_count * osize)
    for name, arr in inputs.items():
        dt = (dtypes or {}).get(name) or isa.normalize_dtype(arr.dtype)
        p.copy(UB(addr[name]), p.gm(name), dt, burst=arr.size, pad=True)
    p.set_flag("MTE2", "V", 0)
    p.wait_flag("MTE2", "V", 0)
    build_body(p, addr)
    p.set_flag("V", "MTE3", 0)
    p.wait_flag("V", "MTE3", 0)
    p.copy(p.gm("out"), UB(addr["out"]), out_dtype, burst=out_count, pad=True)
    res = dev.launch(p, block_dim, {n: n for n in p.params}, sanitize=sanitize)
    out = dev.read("out", out_dtype, (out_count,))
    if out_dtype == "bool":
        out = out.astype(bool)
    return out, res


def cube_run(a, b, build_tail, out_shape, out_dtype, dtype="float16", chip="tiny", extra=None, sanitize=True,
             block_dim=1, load=None):
    """a (M x K) @ b (K x N) through L1 / L0A / L0B / mmad on one AIC; `build_tail(p)` emits the FixPipe (and
    anything else) from L0C(0) to GM 'out'. `extra`: more GM inputs {name: array}, loaded by the tail itself.
    `load(p)` replaces the L1 -> L0 loads. Returns (out, result)."""
    from simulator import L0A, L0B, L0C, L1
    m, k = a.shape
    n = b.shape[1]
    dev = Device(chip)
    dev.upload("a", a)
    dev.upload("b", b)
    for name, arr in (extra or {}).items():
        dev.upload(name, arr)
    dev.alloc("out", int(np.prod(out_shape)) * isa.itemsize(isa.normalize_dtype(out_dtype)))
    p = Program("cube_unit", "aic", params=["a", "b", *(extra or {}), "out"])
    p.copy_nd2nz(L1(0), p.gm("a"), dtype, m, k)
    p.copy_nd2nz(L1(32768), p.gm("b"), dtype, k, n)
    p.set_flag("MTE2", "MTE1", 0)
    p.wait_flag("MTE2", "MTE1", 0)
    if load is None:
        p.load_l0(L0A(0), L1(0), dtype, m, k)
        p.load_l0(L0B(0), L1(32768), dtype, k, n)
    else:
        load(p)
    p.set_flag("MTE1", "M", 0)
    p.wait_flag("MTE1", "M", 0)
    p.mmad(L0C(0), L0A(0), L0B(0), m, k, n, dtype)
    p.set_flag("M", "FIX", 0)
    p.wait_flag("M", "FIX", 0)
    build_tail(p)
    res = dev.launch(p, block_dim, {x: x for x in p.params}, sanitize=sanitize)
    return dev.read("out", out_dtype, out_shape), res
