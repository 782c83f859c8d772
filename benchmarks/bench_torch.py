"""PyTorch integration figures: a registered torch op's call overhead, and a torch.compile'd transformer block.

    python benchmarks/bench_torch.py [--number 200] [--repeat 5] [--chip 910b] [--out benchmarks/results/torch.json]

1. overhead: on a small input (bias + GELU on an 8x64 float32 tensor), the warm-call time of
   `torch.ops.bench::bias_gelu(x, b)` (torch dispatch, checks, zero-copy conversion, the kernel call, wrapping
   the result) against `k(x_np, b_np)` (the direct pyasc kernel call on numpy arrays), both running the
   kernel on the emulator; the median over --repeat rounds of the mean time of --number calls.
   Reported as the ratio measured in this run.
2. transformer block (LayerNorm, one-head softmax attention, LayerNorm, Linear-GELU-Linear; d=32, batch 2 x 8
   tokens) under torch.compile(backend="pyasc"): device kernel launches, simulated time on the chip, and the
   max abs error against eager PyTorch.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402

import pyasc  # noqa: E402
import pyasc.torch as pt  # noqa: E402
from _report import RESULTS, write_json  # noqa: E402
from pyasc.examples import BY_NAME  # noqa: E402


def bias_gelu(x, b):
    return pyasc.gelu(x + b)


class Block(torch.nn.Module):
    def __init__(self, d=32):
        super().__init__()
        torch.manual_seed(0)
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) * (x.shape[-1] ** -0.5), dim=-1)
        x = x + self.proj(att @ v)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def median_us(fn, number: int, repeat: int) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--chip", default="910b")
    ap.add_argument("--out", default=str(RESULTS / "torch.json"))
    a = ap.parse_args()
    assert BY_NAME  # the shared examples import cleanly next to torch

    k = pyasc.kernel(bias_gelu, chip=a.chip)
    op = pt.custom_op("bench::bias_gelu", k)
    x, b = torch.randn(8, 64), torch.randn(64)
    xn, bn = x.numpy(), b.numpy()
    op(x, b), k(xn, bn)  # compile once, warm both paths
    direct = median_us(lambda: k(xn, bn), a.number, a.repeat)
    via_op = median_us(lambda: op(x, b), a.number, a.repeat)

    model, tokens = Block(), torch.randn(2, 8, 32)
    compiled = torch.compile(model, backend="pyasc", options={"chip": a.chip})
    with torch.no_grad():
        compiled(tokens)  # compile
        with pt.profile() as rec:
            got = compiled(tokens)
        want = model(tokens)
    err = float((got - want).abs().max())

    rows = [("direct kernel call, us", f"{direct:.1f}"), ("torch op call, us", f"{via_op:.1f}"),
            ("torch op / direct", f"{via_op / direct:.2f}x"),
            ("block: pyasc graphs", str(len(rec.calls))), ("block: device kernel launches", str(rec.launches)),
            ("block: simulated us", f"{rec.time_s * 1e6:.2f}"), ("block: max abs err vs eager", f"{err:.2e}")]
    w = max(len(r[0]) for r in rows)
    print(f"chip={a.chip}, torch {torch.__version__}")
    for name, val in rows:
        print(f"{name:<{w}}  {val}")
    write_json(a.out, "torch", {"chip": a.chip, "number": a.number, "repeat": a.repeat}, {
        "direct_us": direct, "torch_op_us": via_op, "overhead_ratio": via_op / direct,
        "block": {"graphs": len(rec.calls), "launches": rec.launches, "simulated_us": rec.time_s * 1e6,
                  "max_abs_err": err}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
