"""Helpers shared by the simulator tests: tiny programs around one instruction."""
from __future__ import annotations

from simulator import UB, Device, Program, isa


def ub_roundtrip(build_body, inputs: dict, out_dtype: str, out_count: int, chip: str = "tiny",
                 sanitize: bool = True, block_dim: int = 1):
    """Load each input GM buffer into UB (32-byte aligned slots), run `build_body(p, addr)`, store 'out'.

    `inputs`: name -> 1-D array (identical on every core). `build_body(p, addr)` emits vector
    instructions; addr maps input names and 'out' to UB byte offsets. Returns (out array, result).
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
        p.copy(UB(addr[name]), p.gm(name), isa.normalize_dtype(arr.dtype), burst=arr.size, pad=True)
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
