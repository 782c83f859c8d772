"""Accuracy of the fused attention kernel: float16 results against numpy's float64, beside the unfused path.

    python benchmarks/attention_accuracy.py [--chips tiny 910b] [--t 1 7 128 1000 2048] [--d 64 128] [--heads 2]

Attention written in plain numpy (float16 q, k, v) is compiled twice: as GE's attention pass finds it (one
fused launch: the online softmax in float32, P rounded to float16 for the cube) and with the pass off (the
graph as written: the scores and the softmax in float16). Both run on the emulator with the sanitizer on and
are compared with the same attention in float64. Sizes this large stay out of the test suite
(tests/codegen/test_attention_kernel.py checks odd sizes on both presets with the same tolerance).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import pyasc
from _report import RESULTS, write_json


def attention(q, k, v):
    s = q @ k.transpose(0, 2, 1) * np.float16(1 / np.sqrt(q.shape[-1]))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


def causal_attention(q, k, v):
    t = q.shape[-2]
    s = q @ k.transpose(0, 2, 1) * np.float16(1 / np.sqrt(q.shape[-1]))
    s = np.where(np.tri(t, dtype=bool), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v


def _errors(out: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    diff = np.abs(out.astype(np.float64) - want)
    return float(diff.max()), float((diff / (np.abs(want) + 1e-3)).max())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chips", nargs="+", default=["tiny", "910b"])
    parser.add_argument("--t", nargs="+", type=int, default=[1, 7, 128, 1000, 2048])
    parser.add_argument("--d", nargs="+", type=int, default=[64, 128])
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "attention_accuracy.json"))
    args = parser.parse_args(argv)
    os.environ["PYASC_CACHE"] = "0"
    rng = np.random.default_rng(0)
    rows = []
    print(f"{'chip':<6} {'T':>5} {'D':>4} {'causal':>6} {'launches':>8} {'fused max|err|':>15} {'rel':>9} "
          f"{'unfused max|err|':>17} {'rel':>9}")
    for chip in args.chips:
        for t in args.t:
            for d in args.d:
                q, k, v = ((rng.standard_normal((args.heads, t, d)) * 0.8).astype(np.float16) for _ in range(3))
                for fn in (attention, causal_attention):
                    want = fn(*(a.astype(np.float64) for a in (q, k, v)))
                    fused = pyasc.kernel(fn, chip=chip, sanitize=True)
                    launches = [kk.template for kk in fused.compile(q, k, v).kernels]
                    unfused = pyasc.kernel(fn, chip=chip, sanitize=True, disable_passes=["attention"])
                    fe, fr = _errors(fused(q, k, v), want)
                    ue, ur = _errors(unfused(q, k, v), want)
                    causal = fn is causal_attention
                    print(f"{chip:<6} {t:>5} {d:>4} {str(causal):>6} {len(launches):>8} {fe:>15.2e} {fr:>9.2e} "
                          f"{ue:>17.2e} {ur:>9.2e}", flush=True)
                    rows.append({"chip": chip, "t": t, "d": d, "causal": causal, "kernels": launches,
                                 "fused_max_abs": fe, "fused_max_rel": fr, "unfused_max_abs": ue,
                                 "unfused_max_rel": ur})
    write_json(args.out, "attention_accuracy", {"pyasc_version": pyasc.__version__, "heads": args.heads}, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
